/* fc_mel_config_override: a preset with a user's overrides keeps the preset's own rules (hifigan's
 * pad follows (n_fft - hop) / 2, the window follows n_fft where it is centred, kaldi's frames
 * follow the sample rate in milliseconds, each log compression brings its reference's floor), the preset name goes when anything differs, and an
 * inconsistent result is refused with a reason. */
#include "featcache/fc_config.h"
#include "tests/check.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static fc_mel_config preset(const char *name) {
  fc_mel_config c;
  CHECK(fc_mel_preset(name, &c) == 0, "preset %s", name);
  return c;
}

int main(void) {
  char why[256];

  /* nothing overridden: the preset, named */
  fc_mel_config c = preset("hifigan"), ref = preset("hifigan"), ov;
  memset(&ov, 0, sizeof ov);
  CHECK(fc_mel_config_override(&c, &ov, 0, why, sizeof why) == 0, "%s", why);
  CHECK(memcmp(&c, &ref, sizeof c) == 0);
  CHECK(strcmp(c.preset, "hifigan") == 0);
  /* the same value as the preset's is no change */
  ov.n_mels = 80;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_MELS, why, sizeof why) == 0);
  CHECK(strcmp(c.preset, "hifigan") == 0, "got preset '%s'", c.preset);

  /* hifigan, n_fft 2048: win follows (hann is centred in the frame), pad (2048 - 256) / 2 */
  c = preset("hifigan");
  ov.n_fft = 2048;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT, why, sizeof why) == 0, "%s", why);
  CHECK(c.n_fft == 2048 && c.win_length == 2048, "win %u", c.win_length);
  CHECK(c.pad == 896, "pad %u, want 896", c.pad);
  CHECK(c.preset[0] == '\0', "preset '%s' kept after a change", c.preset);
  /* ... and hop 512 too: pad (2048 - 512) / 2; an explicit pad wins */
  c = preset("hifigan");
  ov.hop_length = 512;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT | FC_MEL_F_HOP_LENGTH, why, sizeof why) ==
        0);
  CHECK(c.pad == 768, "pad %u, want 768", c.pad);
  c = preset("hifigan");
  ov.pad = 100;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT | FC_MEL_F_PAD, why, sizeof why) == 0);
  CHECK(c.pad == 100, "pad %u, want 100", c.pad);
  /* n_fft below the hop: the pad HiFi-GAN takes would be negative (it crops): refused, unless a
   * pad is given or the frames are centred */
  c = preset("hifigan");
  ov.n_fft = 128;
  ov.n_mels = 10;
  why[0] = '\0';
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT | FC_MEL_F_N_MELS, why, sizeof why) ==
        FC_ECONFIG);
  CHECK(strstr(why, "n_fft 128 is below hop_length 256") && strstr(why, "crop 64 samples"),
        "why: %s", why);
  c = preset("hifigan");
  ov.pad = 0;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT | FC_MEL_F_PAD, why, sizeof why) == 0, "%s",
        why);
  CHECK(c.pad == 0, "pad %u, want 0", c.pad);
  c = preset("hifigan");
  ov.center = 1;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT | FC_MEL_F_CENTER, why, sizeof why) == 0,
        "%s", why);
  ov.center = 0;
  ov.n_mels = 80;
  ov.pad = 100;
  ov.n_fft = 2048;
  /* an explicit win is kept */
  c = preset("hifigan");
  ov.win_length = 1024;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT | FC_MEL_F_WIN_LENGTH, why, sizeof why) ==
        0);
  CHECK(c.win_length == 1024 && c.pad == 896, "win %u pad %u", c.win_length, c.pad);

  /* centring drops the pad */
  c = preset("hifigan");
  ov.center = 1;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_CENTER, why, sizeof why) == 0);
  CHECK(c.center == 1 && c.pad == 0, "center %d pad %u", c.center, c.pad);
  /* tacotron2 centres and has no pad rule: n_fft 2048 leaves pad 0 */
  c = preset("tacotron2");
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT, why, sizeof why) == 0);
  CHECK(c.pad == 0 && c.win_length == 2048, "pad %u win %u", c.pad, c.win_length);

  /* kaldi's window is left-aligned in a 512 FFT: n_fft does not move it */
  c = preset("kaldi");
  uint32_t kwin = c.win_length;
  ov.n_fft = 1024;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_N_FFT, why, sizeof why) == 0, "%s", why);
  CHECK(c.win_length == kwin && c.n_fft == 1024, "win %u want %u", c.win_length, kwin);
  /* ... but centring centres it (frame t on sample t * hop, 1 + N / hop frames, as torch.stft) */
  c = preset("kaldi");
  ov.center = 1;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_CENTER, why, sizeof why) == 0, "%s", why);
  CHECK(c.center == 1 && c.pad == 0 && c.window_align == FC_ALIGN_CENTER,
        "center %d pad %u align %d", c.center, c.pad, (int)c.window_align);
  CHECK(fc_mel_num_frames(&c, 1650) == 1 + 1650 / 160, "kaldi centred: %llu frames for 1650",
        (unsigned long long)fc_mel_num_frames(&c, 1650));
  ov.center = 0;

  /* kaldi at another rate: Kaldi's 25 ms / 10 ms frames, the FFT the power of two at least the
   * window, Nyquist as fmax (torchaudio's fbank at that sample_frequency); a given field wins;
   * 16 kHz is the preset itself, its JSON (and so its digest) as stored before: fmax 8000 */
  static const struct {
    uint32_t sr, win, hop, nfft;
  } kr[] = {{8000, 200, 80, 256},
            {22050, 551, 220, 1024},
            {44100, 1102, 441, 2048},
            {11025, 275, 110, 512},
            {16000, 400, 160, 512}};
  for (size_t k = 0; k < sizeof kr / sizeof kr[0]; k++) {
    c = preset("kaldi");
    ov.sample_rate = kr[k].sr;
    CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_SAMPLE_RATE, why, sizeof why) == 0, "%u: %s",
          kr[k].sr, why);
    CHECK(c.win_length == kr[k].win && c.hop_length == kr[k].hop && c.n_fft == kr[k].nfft &&
              fc_mel_config_fmax(&c) == kr[k].sr / 2.0,
          "kaldi at %u Hz: win %u hop %u n_fft %u fmax %g", kr[k].sr, c.win_length, c.hop_length,
          c.n_fft, fc_mel_config_fmax(&c));
    CHECK((strcmp(c.preset, "kaldi") == 0) == (kr[k].sr == 16000), "%u: preset '%s'", kr[k].sr,
          c.preset);
  }
  c = preset("kaldi");
  ov.sample_rate = 8000;
  ov.win_length = 300;
  ov.hop_length = 100;
  CHECK(fc_mel_config_override(&c, &ov,
                               FC_MEL_F_SAMPLE_RATE | FC_MEL_F_WIN_LENGTH | FC_MEL_F_HOP_LENGTH,
                               why, sizeof why) == 0,
        "%s", why);
  CHECK(c.win_length == 300 && c.hop_length == 100 && c.n_fft == 512, "win %u hop %u n_fft %u",
        c.win_length, c.hop_length, c.n_fft);
  /* kaldi with another window at its rate: the FFT follows it to the power of two at least it
   * (Kaldi's round_to_power_of_two), unless given; a window past 512 is no error */
  static const uint32_t kw[][2] = {{200, 256}, {256, 256}, {300, 512}, {600, 1024}, {1024, 1024}};
  for (size_t k = 0; k < sizeof kw / sizeof kw[0]; k++) {
    c = preset("kaldi");
    ov.win_length = kw[k][0];
    CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_WIN_LENGTH, why, sizeof why) == 0, "win %u: %s",
          kw[k][0], why);
    CHECK(c.win_length == kw[k][0] && c.n_fft == kw[k][1] && c.hop_length == 160,
          "kaldi --win %u: n_fft %u, want %u", kw[k][0], c.n_fft, kw[k][1]);
  }
  c = preset("kaldi");
  ov.win_length = 200;
  ov.n_fft = 512;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_WIN_LENGTH | FC_MEL_F_N_FFT, why, sizeof why) ==
                0 &&
            c.n_fft == 512,
        "kaldi --win 200 --n-fft 512: n_fft %u", c.n_fft);
  c = preset("hifigan");
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_WIN_LENGTH, why, sizeof why) == 0 &&
            c.n_fft == 1024,
        "hifigan --win 200: n_fft %u, want 1024 (only kaldi's FFT follows its window)", c.n_fft);
  ov.win_length = 0;
  /* a negative fmax is that far below Nyquist (Kaldi's --high-freq=-400), at whatever rate; stored
   * as its value, so the config is the one --fmax 7600 makes */
  {
    fc_mel_config a = preset("kaldi"), b = preset("kaldi");
    ov.fmax = -400;
    CHECK(fc_mel_config_override(&a, &ov, FC_MEL_F_FMAX, why, sizeof why) == 0, "%s", why);
    ov.fmax = 7600;
    CHECK(fc_mel_config_override(&b, &ov, FC_MEL_F_FMAX, why, sizeof why) == 0, "%s", why);
    fc_digest da, db;
    fc_mel_config_digest(&a, &da);
    fc_mel_config_digest(&b, &db);
    CHECK(fc_mel_config_fmax(&a) == 7600 && memcmp(&da, &db, sizeof da) == 0,
          "kaldi --fmax -400: fmax %g, or another digest than --fmax 7600", fc_mel_config_fmax(&a));
    a = preset("kaldi");
    ov.fmax = -400;
    ov.sample_rate = 8000;
    CHECK(fc_mel_config_override(&a, &ov, FC_MEL_F_FMAX | FC_MEL_F_SAMPLE_RATE, why, sizeof why) ==
                  0 &&
              fc_mel_config_fmax(&a) == 3600,
          "kaldi --sr 8000 --fmax -400: fmax %g, want 3600", fc_mel_config_fmax(&a));
    a = preset("hifigan");
    CHECK(fc_mel_config_override(&a, &ov, FC_MEL_F_FMAX, why, sizeof why) == 0 &&
              fc_mel_config_fmax(&a) == 22050 / 2.0 - 400,
          "hifigan --fmax -400: fmax %g", fc_mel_config_fmax(&a));
    ov.fmax = 0;
    ov.sample_rate = 0;
  }
  char json[1024];
  c = preset("kaldi");
  CHECK(fc_mel_config_json(&c, json, sizeof json) > 0 && strstr(json, "\"fmax\":8000,"),
        "kaldi's JSON: %s", json);
  ov.win_length = ov.hop_length = 0;

  /* kaldi --snip-edges false: Kaldi's (N + hop/2) / hop frames, at any rate; the config is no
   * longer the preset; its JSON gains "snip_edges":false (and only it: every other config's JSON,
   * so its digest, is what it was) and reads back */
  c = preset("kaldi");
  ov.no_snip_edges = 1;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_SNIP_EDGES, why, sizeof why) == 0, "%s", why);
  CHECK(c.no_snip_edges == 1 && c.preset[0] == '\0', "snip %d preset '%s'", c.no_snip_edges,
        c.preset);
  static const uint64_t ns[][2] = {{0, 0},   {1, 0},   {79, 0},    {80, 1},    {239, 1},
                                   {240, 2}, {400, 3}, {1600, 10}, {1679, 10}, {1680, 11}};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
    CHECK(fc_mel_num_frames(&c, ns[k][0]) == ns[k][1], "kaldi unsnipped: %llu frames for %llu",
          (unsigned long long)fc_mel_num_frames(&c, ns[k][0]), (unsigned long long)ns[k][0]);
  CHECK(fc_mel_config_json(&c, json, sizeof json) > 0 &&
            strstr(json, "\"sample_rate\":16000,\"snip_edges\":false,\"top_db\":0,"),
        "kaldi unsnipped JSON: %s", json);
  fc_mel_config back;
  CHECK(fc_mel_config_from_json(json, strlen(json), &back, why, sizeof why) == 0, "%s", why);
  CHECK(back.no_snip_edges == 1, "snip_edges false did not read back");
  ov.sample_rate = 44100; /* 1102 / 441: an odd hop, hop/2 = 220 */
  c = preset("kaldi");
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_SAMPLE_RATE | FC_MEL_F_SNIP_EDGES, why,
                               sizeof why) == 0,
        "%s", why);
  CHECK(fc_mel_num_frames(&c, 220) == 0 && fc_mel_num_frames(&c, 221) == 1 &&
            fc_mel_num_frames(&c, 44100) == 100,
        "kaldi unsnipped at 44.1 kHz: %llu %llu %llu",
        (unsigned long long)fc_mel_num_frames(&c, 220),
        (unsigned long long)fc_mel_num_frames(&c, 221),
        (unsigned long long)fc_mel_num_frames(&c, 44100));
  c = preset("kaldi");
  CHECK(fc_mel_config_json(&c, json, sizeof json) > 0 && !strstr(json, "snip_edges"),
        "kaldi's JSON names snip_edges: %s", json);
  /* an old JSON (no key) reads as snip edges on; "snip_edges":true too; anything else is refused */
  CHECK(fc_mel_config_from_json(json, strlen(json), &back, why, sizeof why) == 0 &&
            back.no_snip_edges == 0,
        "%s", why);
  {
    char alt[1100];
    const char *at = strstr(json, "\"top_db\"");
    int n = (int)(at - json);
    snprintf(alt, sizeof alt, "%.*s\"snip_edges\":true,%s", n, json, at);
    CHECK(fc_mel_config_from_json(alt, strlen(alt), &back, why, sizeof why) == 0 &&
              back.no_snip_edges == 0,
          "snip_edges true: %s", why);
    snprintf(alt, sizeof alt, "%.*s\"snip_edges\":0,%s", n, json, at);
    CHECK(fc_mel_config_from_json(alt, strlen(alt), &back, why, sizeof why) == FC_ECONFIG &&
              strstr(why, "snip_edges"),
          "snip_edges 0 accepted: %s", why);
  }
  /* --snip-edges true is the preset, named */
  c = preset("kaldi");
  ov.no_snip_edges = 0;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_SNIP_EDGES, why, sizeof why) == 0);
  CHECK(strcmp(c.preset, "kaldi") == 0, "kaldi --snip-edges true: preset '%s'", c.preset);
  /* two framings at once are refused, saying which */
  c = preset("kaldi");
  ov.no_snip_edges = 1;
  ov.center = 1;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_SNIP_EDGES | FC_MEL_F_CENTER, why, sizeof why) ==
                FC_ECONFIG &&
            strstr(why, "center"),
        "snip_edges false with center: '%s'", why);
  ov.center = 0;
  c = preset("hifigan");
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_SNIP_EDGES, why, sizeof why) == FC_ECONFIG &&
            strstr(why, "pad must be 0"),
        "snip_edges false with hifigan's pad: '%s'", why);
  ov.pad = 0;
  c = preset("hifigan");
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_SNIP_EDGES | FC_MEL_F_PAD, why, sizeof why) == 0,
        "%s", why);
  ov.no_snip_edges = 0;
  ov.sample_rate = 0;

  /* log compressions with their references' floors */
  c = preset("hifigan");
  ov.log = FC_LOG_DB;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_LOG, why, sizeof why) == 0);
  CHECK(c.log == FC_LOG_DB && c.log_floor == 1e-10 && c.top_db == 80, "floor %g top_db %g",
        c.log_floor, c.top_db);
  c = preset("librosa");
  ov.log = FC_LOG_LN;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_LOG, why, sizeof why) == 0);
  CHECK(c.log_floor == 1e-5 && c.top_db == 0, "floor %g top_db %g", c.log_floor, c.top_db);
  /* top_db: with log db its value (0: none, librosa's top_db=None); with another log refused (it
   * would change the digest and no value) */
  c = preset("librosa");
  ov.log = FC_LOG_DB;
  ov.top_db = 0;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_LOG | FC_MEL_F_TOP_DB, why, sizeof why) == 0, "%s",
        why);
  CHECK(c.log == FC_LOG_DB && c.top_db == 0 && c.log_floor == 1e-10 && !c.preset[0],
        "top_db %g preset '%s'", c.top_db, c.preset);
  c = preset("hifigan");
  ov.top_db = 60;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_LOG | FC_MEL_F_TOP_DB, why, sizeof why) == 0 &&
            c.top_db == 60,
        "top_db %g", c.top_db);
  c = preset("librosa"); /* log none, top_db 80 kept: --top-db 0 alone would change no value */
  ov.top_db = 0;
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_TOP_DB, why, sizeof why) == FC_ECONFIG &&
            strstr(why, "top_db 0: the clamp of a log in dB"),
        "top_db without log db: '%s'", why);
  c = preset("whisper");
  double wfloor = c.log_floor;
  ov.log = c.log; /* the preset's own: its floor stays */
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_LOG, why, sizeof why) == 0);
  CHECK(c.log_floor == wfloor && strcmp(c.preset, "whisper") == 0);

  /* inconsistent: a window longer than the FFT */
  c = preset("hifigan");
  ov.win_length = 4096;
  why[0] = '\0';
  CHECK(fc_mel_config_override(&c, &ov, FC_MEL_F_WIN_LENGTH, why, sizeof why) == FC_ECONFIG);
  CHECK(why[0] != '\0', "no reason given");
  /* a NULL config is an argument error, as for every function (tests/unit/test_null_args.c) */
  CHECK(fc_mel_config_override(NULL, &ov, 0, NULL, 0) == EINVAL);

  return fc_check_result("test_config_override");
}
