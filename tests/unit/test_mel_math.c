/* Known answers for the feature math: frame counts of every preset at the sizes that break
 * framing code (0, 1, a frame minus/plus one, hop multiples), the reflect-padding map against a
 * literal transcription of numpy.pad's algorithm, filterbank entries taken from librosa and
 * torchaudio, window values, f16/bf16 rounding (every half, ties, subnormals, NaN), config
 * validation, agreement between the batched and single-frame FFT paths of fc_mel_compute, the
 * half-length complex FFT + split and the r2c path against a DFT in double, the vectorised log
 * (fc_logf_poly) against log() in double, and reproducible bits (clones, a new plan, fallbacks).
 * On failure each check prints got/expected and what to look at. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featcache/fc_mel.h"
#include "kernels/fc_math.h"

#include "tests/check.h"

/* ---- frame counts ---------------------------------------------------------------------------- */

/* Each reference's own frame count, written the way that reference gets it. */
static uint64_t expected_frames(const char *preset, uint64_t n) {
  if (n == 0) return 0; /* no samples, no features (every reference rejects empty input) */
  if (!strcmp(preset, "hifigan")) return n / 256; /* uncentred over n + 768 */
  if (!strcmp(preset, "tacotron2")) return 1 + n / 256; /* centred */
  if (!strcmp(preset, "librosa")) return 1 + n / 512; /* centred */
  if (!strcmp(preset, "whisper")) return n / 160; /* centred, last dropped */
  if (!strcmp(preset, "kaldi")) return n < 400 ? 0 : 1 + (n - 400) / 160; /* snip edges */
  return (uint64_t)-1;
}

static void test_frame_counts(void) {
  for (const char *const *name = fc_mel_preset_names(); *name; name++) {
    fc_mel_config c;
    CHECK(fc_mel_preset(*name, &c) == 0, "preset %s not found", *name);
    uint64_t nf = c.n_fft, h = c.hop_length, w = c.win_length;
    uint64_t sizes[] = {0,
                        1,
                        2,
                        h - 1,
                        h,
                        h + 1,
                        w - 1,
                        w,
                        w + 1,
                        nf - 1,
                        nf,
                        nf + 1,
                        2 * h,
                        10 * h,
                        10 * h + 1,
                        10 * h - 1,
                        384,
                        385,
                        512,
                        513,
                        c.sample_rate,
                        7 * c.sample_rate + 3};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
      uint64_t got = fc_mel_num_frames(&c, sizes[i]), want = expected_frames(*name, sizes[i]);
      CHECK(got == want, "%s: frames for %llu samples: got %llu, expected %llu", *name,
            (unsigned long long)sizes[i], (unsigned long long)got, (unsigned long long)want);
    }
  }
  /* Uncentred with a pad: HiFi-GAN needs n + 2*384 >= 1024. */
  fc_mel_config c;
  fc_mel_preset("hifigan", &c);
  CHECK(fc_mel_num_frames(&c, 255) == 0 && fc_mel_num_frames(&c, 256) == 1,
        "hifigan: 255 samples → 0 frames, 256 → 1");
}

static void test_resampled_length(void) {
  struct {
    uint64_t n;
    uint32_t in, out;
    uint64_t want;
  } cases[] = {
      {0, 22050, 16000, 0},
      {1, 22050, 16000, 1},
      {22050, 22050, 16000, 16000},
      {22051, 22050, 16000, 16001},
      {1000, 44100, 16000, 363},
      {146874, 22050, 16000, 106576},
      {5, 16000, 16000, 5},
      {3, 8000, 48000, 18},
      {1ull << 40, 44100, 16000, 398915783321ull},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uint64_t got = fc_resampled_length(cases[i].n, cases[i].in, cases[i].out);
    CHECK(got == cases[i].want, "resampled length of %llu %u→%u: got %llu, expected %llu",
          (unsigned long long)cases[i].n, cases[i].in, cases[i].out, (unsigned long long)got,
          (unsigned long long)cases[i].want);
  }
}

/* ---- padding ----------------------------------------------------------------------------------- */

/* numpy.lib.arraypad._set_reflect_both transcribed: pad the left and right in chunks, each chunk a
 * reflection of what is already there, the chunk limited to whole periods of the original. */
static void numpy_reflect_pad(const int *x, int n, int pad, int *out) {
  int len = n + 2 * pad;
  for (int i = 0; i < len; i++) out[i] = -1;
  for (int i = 0; i < n; i++) out[pad + i] = x[i];
  if (n == 1) {
    for (int i = 0; i < len; i++) out[i] = x[0]; /* numpy: a single sample pads with itself */
    return;
  }
  int left = pad, right = pad;
  while (left > 0 || right > 0) {
    int old_len = len - left - right;
    old_len = (old_len - 1) / (n - 1) * (n - 1) + 1;
    old_len -= 1;
    if (left > 0) {
      int chunk = old_len < left ? old_len : left;
      for (int j = 0; j < chunk; j++) out[left - 1 - j] = out[left + 1 + j];
      left -= chunk;
    }
    if (right > 0) {
      int chunk = old_len < right ? old_len : right;
      int edge = len - right - 1; /* last filled sample */
      for (int j = 0; j < chunk; j++) out[edge + 1 + j] = out[edge - 1 - j];
      right -= chunk;
    }
  }
}

static void test_reflect_map(void) {
  int x[16], ref[16 + 2 * 40];
  for (int i = 0; i < 16; i++) x[i] = 100 + i;
  for (int n = 1; n <= 9; n++) {
    for (int pad = 0; pad <= 40; pad++) {
      numpy_reflect_pad(x, n, pad, ref);
      for (int q = 0; q < n + 2 * pad; q++) {
        int64_t i = fc_pad_source_index(q, (uint64_t)n, (uint64_t)pad, FC_PAD_REFLECT);
        int got = i < 0 ? -1 : x[i];
        CHECK(got == ref[q], "reflect n=%d pad=%d q=%d: got x[%lld]=%d, numpy gives %d", n, pad, q,
              (long long)i, got, ref[q]);
        int64_t z = fc_pad_source_index(q, (uint64_t)n, (uint64_t)pad, FC_PAD_CONSTANT);
        int64_t zwant = (q >= pad && q < pad + n) ? q - pad : -1;
        CHECK(z == zwant, "constant n=%d pad=%d q=%d: got %lld, expected %lld", n, pad, q,
              (long long)z, (long long)zwant);
      }
    }
  }
  /* numpy.pad(np.arange(3), 7, mode='reflect') */
  const int want[] = {1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1};
  for (int q = 0; q < 17; q++) {
    int64_t i = fc_pad_source_index(q, 3, 7, FC_PAD_REFLECT);
    CHECK(i == want[q], "np.pad(arange(3), 7, 'reflect')[%d]: got %lld, expected %d", q,
          (long long)i, want[q]);
  }
}

/* ---- windows ----------------------------------------------------------------------------------- */

static void test_windows(void) {
  const double hann4[] = {0, 0.5, 1, 0.5}, hamming4[] = {0.08, 0.54, 1, 0.54};
  for (uint32_t i = 0; i < 4; i++) {
    double h = fc_window_value(FC_WINDOW_HANN, i, 4), m = fc_window_value(FC_WINDOW_HAMMING, i, 4);
    CHECK(fabs(h - hann4[i]) < 1e-15, "periodic hann(4)[%u]: got %.17g, expected %g", i, h,
          hann4[i]);
    CHECK(fabs(m - hamming4[i]) < 1e-15, "periodic hamming(4)[%u]: got %.17g, expected %g", i, m,
          hamming4[i]);
  }
  /* povey(400): symmetric hann^0.85: 0 at both ends, 1 never reached (even length), mirror image. */
  CHECK(fc_window_value(FC_WINDOW_POVEY, 0, 400) == 0.0 &&
            fc_window_value(FC_WINDOW_POVEY, 399, 400) < 1e-30,
        "povey(400) ends: %g, %g", fc_window_value(FC_WINDOW_POVEY, 0, 400),
        fc_window_value(FC_WINDOW_POVEY, 399, 400));
  for (uint32_t i = 0; i < 400; i++) {
    double a = fc_window_value(FC_WINDOW_POVEY, i, 400),
           b = fc_window_value(FC_WINDOW_POVEY, 399 - i, 400);
    CHECK(fabs(a - b) < 1e-12, "povey(400) not symmetric at %u: %g vs %g", i, a, b);
  }
  double p100 = fc_window_value(FC_WINDOW_POVEY, 100, 400);
  double want = pow(0.5 - 0.5 * cos(2 * M_PI * 100 / 399), 0.85);
  CHECK(fabs(p100 - want) < 1e-15, "povey(400)[100]: got %.17g, expected %.17g", p100, want);

  /* The plan's window as applied: hann in the middle of n_fft for centred, povey then zeros for
   * Kaldi's left-aligned frame. */
  fc_mel_config c;
  fc_mel_plan *p;
  float w[1024];
  fc_mel_preset("kaldi", &c);
  CHECK(fc_mel_plan_create(&c, &p) == 0, "kaldi plan");
  fc_mel_window(p, w);
  CHECK(w[0] == 0.0f && w[200] == (float)fc_window_value(FC_WINDOW_POVEY, 200, 400) &&
            w[400] == 0 && w[511] == 0,
        "kaldi window: w[200]=%g, w[400]=%g, w[511]=%g", w[200], w[400], w[511]);
  fc_mel_plan_free(p);
  fc_mel_preset("hifigan", &c);
  c.win_length = 800; /* centred: (1024 - 800) / 2 = 112 zeros first */
  CHECK(fc_mel_plan_create(&c, &p) == 0, "hifigan win 800 plan");
  fc_mel_window(p, w);
  CHECK(w[111] == 0 && w[112] == 0 && w[112 + 400] == 1.0f && w[912] == 0,
        "centred window 800 in 1024: w[111]=%g w[112]=%g w[512]=%g w[912]=%g", w[111], w[112],
        w[512], w[912]);
  fc_mel_plan_free(p);
}

/* ---- filterbanks ------------------------------------------------------------------------------- */

static void test_filterbanks(void) {
  /* Entries of librosa.filters.mel (float32 bits) and torchaudio's Kaldi banks. */
  static const struct {
    const char *preset;
    uint32_t band, bin;
    uint32_t bits; /* 0: use value */
    double value;
  } known[] = {
      {"hifigan", 0, 2, 0x3cb98f68u, 0},        {"hifigan", 10, 19, 0x3cd906e0u, 0},
      {"hifigan", 40, 80, 0x3c740c21u, 0},      {"hifigan", 79, 358, 0x3b560a45u, 0},
      {"whisper", 0, 1, 0x3ccbaca4u, 0},        {"whisper", 40, 43, 0x3c716d72u, 0},
      {"whisper", 79, 192, 0x3b4f670eu, 0},     {"kaldi", 0, 1, 0, 0.5039816498756409},
      {"kaldi", 40, 59, 0, 0.9724243879318237}, {"kaldi", 79, 248, 0, 0.9477642178535461},
  };
  for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
    fc_mel_config c;
    fc_mel_preset(known[i].preset, &c);
    float got = fc_mel_weight(known[i].band, known[i].bin, c.n_mels, c.n_fft, c.sample_rate, c.fmin,
                              fc_mel_config_fmax(&c), c.mel_scale, c.norm);
    if (known[i].bits) {
      float want;
      memcpy(&want, &known[i].bits, 4);
      CHECK(got == want,
            "%s mel weight [%u][%u]: got %.9g, librosa %.9g (check linspace, "
            "rfftfreq and the float32 rounding order)",
            known[i].preset, known[i].band, known[i].bin, got, want);
    } else {
      /* torchaudio builds Kaldi banks in float32: its mel of a bin (~2800 mel) carries an error
       * of ~1e-4 mel against a band half-width of ~35 mel, so weights agree to ~1e-5, not bits. */
      CHECK(fabs(got - known[i].value) < 2e-5, "%s mel weight [%u][%u]: got %.9g, torchaudio %.9g",
            known[i].preset, known[i].band, known[i].bin, got, known[i].value);
    }
  }

  /* Slaney norm: each triangle has unit area in Hz, so bin sums times the bin width approach 1 as
   * the band gets wider (librosa's own banks: within 8 % for bands of a few bins, within 2 % from
   * 16 bins on). Kaldi:
   * peaks ≤ 1, the Nyquist bin unused. Every band non-empty (no band narrower than a bin). */
  for (const char *const *name = fc_mel_preset_names(); *name; name++) {
    fc_mel_config c;
    fc_mel_plan *p;
    fc_mel_preset(*name, &c);
    CHECK(fc_mel_plan_create(&c, &p) == 0, "%s plan", *name);
    uint32_t nb = c.n_fft / 2 + 1;
    float *fb = malloc(sizeof *fb * c.n_mels * nb);
    fc_mel_filterbank_dense(p, fb);
    double df = (double)c.sample_rate / c.n_fft;
    for (uint32_t m = 0; m < c.n_mels; m++) {
      double sum = 0, peak = 0;
      uint32_t width = 0;
      for (uint32_t k = 0; k < nb; k++) {
        sum += fb[m * nb + k];
        width += fb[m * nb + k] != 0;
        peak = fb[m * nb + k] > peak ? fb[m * nb + k] : peak;
        float direct = fc_mel_weight(m, k, c.n_mels, c.n_fft, c.sample_rate, c.fmin,
                                     fc_mel_config_fmax(&c), c.mel_scale, c.norm);
        if (fb[m * nb + k] != direct) {
          CHECK(0, "%s dense filterbank [%u][%u] = %g, fc_mel_weight gives %g", *name, m, k,
                fb[m * nb + k], direct);
          break;
        }
      }
      CHECK(sum > 0, "%s: mel band %u is empty", *name, m);
      if (c.norm == FC_NORM_SLANEY)
        CHECK(fabs(sum * df - 1) < (width >= 16 ? 0.02 : 0.09),
              "%s: band %u (%u bins) area %g, "
              "expected ~1",
              *name, m, width, sum * df);
      else
        CHECK(peak <= 1.0 && peak > 0.3, "%s: band %u peak %g", *name, m, peak);
      if (c.mel_scale == FC_MEL_KALDI)
        CHECK(fb[m * nb + nb - 1] == 0, "%s: Nyquist bin in band %u is %g", *name, m,
              fb[m * nb + nb - 1]);
    }
    free(fb);
    fc_mel_plan_free(p);
  }
  /* Round trips of the mel scales. */
  for (int s = FC_MEL_SLANEY; s <= FC_MEL_KALDI; s++)
    for (double f = 0; f <= 12000; f += 250) {
      double back = fc_mel_to_hz(fc_hz_to_mel(f, s), s);
      CHECK(fabs(back - f) < 1e-9 * (1 + f), "mel scale %d: %g Hz → %g Hz", s, f, back);
    }
  CHECK(fabs(fc_hz_to_mel(1000, FC_MEL_SLANEY) - 15.0) < 1e-12, "slaney mel(1000 Hz) = 15");
  CHECK(fabs(fc_hz_to_mel(700, FC_MEL_KALDI) - 1127 * log(2.0)) < 1e-9, "kaldi mel(700 Hz)");
  CHECK(fabs(fc_hz_to_mel(700, FC_MEL_HTK) - 2595 * log10(2.0)) < 1e-9, "htk mel(700 Hz)");
}

/* ---- f16 / bf16 -------------------------------------------------------------------------------- */

static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_half_floats(void) {
  /* Every half and bfloat16 value converts to float32 and back unchanged (NaNs stay NaN). */
  for (uint32_t h = 0; h < 65536; h++) {
    float f = fc_f16_to_f32((uint16_t)h);
    uint16_t back = fc_f32_to_f16(f);
    int nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
    CHECK(nan ? (isnan(f) && (back & 0x7c00u) == 0x7c00u && (back & 0x3ffu)) : back == h,
          "f16 0x%04x → %g → 0x%04x", h, f, back);
    float g = fc_bf16_to_f32((uint16_t)h);
    uint16_t bback = fc_f32_to_bf16(g);
    int bnan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
    CHECK(bnan ? isnan(g) && isnan(fc_bf16_to_f32(bback)) : bback == h, "bf16 0x%04x → %g → 0x%04x",
          h, g, bback);
  }
  static const struct {
    float in;
    uint16_t f16, bf16;
  } ties[] = {
      {1.0f + 0x1p-11f, 0x3c00u, 0x3f80u}, /* f16 tie → even (down) */
      {1.0f + 3 * 0x1p-11f, 0x3c02u, 0x3f80u}, /* f16 tie → even (up) */
      {1.0f + 0x1p-8f, 0x3c04u, 0x3f80u}, /* bf16 tie → even (down) */
      {1.0f + 3 * 0x1p-8f, 0x3c0cu, 0x3f82u}, /* bf16 tie → even (up) */
      {65504.0f, 0x7bffu, 0x4780u}, /* largest half; bf16 rounds up to 65536 */
      {65520.0f, 0x7c00u, 0x4780u}, /* halfway to 65536: ties to even = inf */
      {65519.99f, 0x7bffu, 0x4780u}, /* just below: f16 max; bf16 nearer 65536 */
      {0x1p-24f, 0x0001u, 0x3380u}, /* smallest subnormal half */
      {0x1p-25f, 0x0000u, 0x3300u}, /* tie with zero → even (zero) */
      {3 * 0x1p-26f, 0x0001u, 0x3340u}, /* above the tie */
      {3 * 0x1p-25f, 0x0002u, 0x33c0u}, /* 1.5 units: tie → even (2) */
      {0x1p-14f - 0x1p-25f, 0x0400u, 0x3880u}, /* rounds up into the normals */
      {-2.5f, 0xc100u, 0xc020u},
      {0.0f, 0x0000u, 0x0000u},
      {-0.0f, 0x8000u, 0x8000u},
  };
  for (size_t i = 0; i < sizeof ties / sizeof *ties; i++) {
    uint16_t h = fc_f32_to_f16(ties[i].in), b = fc_f32_to_bf16(ties[i].in);
    CHECK(h == ties[i].f16, "f16(%a): got 0x%04x, expected 0x%04x", (double)ties[i].in, h,
          ties[i].f16);
    CHECK(b == ties[i].bf16, "bf16(%a): got 0x%04x, expected 0x%04x", (double)ties[i].in, b,
          ties[i].bf16);
  }
  CHECK(fc_f32_to_f16(INFINITY) == 0x7c00u && fc_f32_to_f16(-INFINITY) == 0xfc00u, "f16(±inf)");
  CHECK(isnan(fc_f16_to_f32(fc_f32_to_f16(NAN))) && isnan(fc_bf16_to_f32(fc_f32_to_bf16(NAN))),
        "NaN must stay NaN");
  CHECK(fc_f32_to_bf16(bits_f(0x7f800001u)) != 0x7f80u, "a signalling NaN must not become inf");
#ifdef __FLT16_MAX__
  /* Compiler's _Float16 conversion (IEEE round to nearest even) as an oracle over a spread of
   * float32 bit patterns: every 251st, which visits every exponent and many mantissas. */
  for (uint64_t u = 0; u < 0x100000000ull; u += 251) {
    float f = bits_f((uint32_t)u);
    if (isnan(f)) continue;
    _Float16 o = (_Float16)f;
    uint16_t want;
    memcpy(&want, &o, 2);
    uint16_t got = fc_f32_to_f16(f);
    if (got != want) {
      CHECK(0, "f16(0x%08x = %a): got 0x%04x, compiler 0x%04x", (uint32_t)u, (double)f, got, want);
      break;
    }
  }
#endif
  /* fc_convert_dtype writes the same bits, unaligned destinations included. */
  float src[3] = {1.0f + 3 * 0x1p-11f, -2.5f, 65520.0f};
  unsigned char dst[1 + 6];
  fc_convert_dtype(src, 3, FC_DTYPE_F16, dst + 1);
  uint16_t h1;
  memcpy(&h1, dst + 1 + 4, 2);
  CHECK(h1 == 0x7c00u, "fc_convert_dtype f16[2]: got 0x%04x, expected 0x7c00", h1);
  fc_convert_dtype(src, 3, FC_DTYPE_BF16, dst + 1);
  memcpy(&h1, dst + 1 + 2, 2);
  CHECK(h1 == 0xc020u, "fc_convert_dtype bf16[1]: got 0x%04x, expected 0xc020", h1);
}

/* ---- configs ----------------------------------------------------------------------------------- */

static void test_configs(void) {
  int n = 0;
  char why[128];
  for (const char *const *name = fc_mel_preset_names(); *name; name++, n++) {
    fc_mel_config c;
    CHECK(fc_mel_preset(*name, &c) == 0 && !strcmp(c.preset, *name), "preset %s", *name);
    CHECK(fc_mel_config_validate(&c, why, sizeof why) == 0, "preset %s invalid: %s", *name, why);
    CHECK(c.dtype == FC_DTYPE_F32, "preset %s dtype", *name);
    fc_mel_config_settle_preset(&c);
    CHECK(!strcmp(c.preset, *name), "settle cleared untouched preset %s", *name);
    c.hop_length++;
    fc_mel_config_settle_preset(&c);
    CHECK(c.preset[0] == 0, "settle kept preset %s after a change", *name);
  }
  CHECK(n == 5, "expected 5 presets, got %d", n);
  fc_mel_config c;
  CHECK(fc_mel_preset("nope", &c) == FC_ECONFIG, "unknown preset accepted");

  fc_mel_preset("librosa", &c);
  CHECK(fc_mel_config_fmax(&c) == 11025.0, "librosa fmax: got %g", fc_mel_config_fmax(&c));
  c.fmax = 11025; /* the same effective value keeps the name */
  fc_mel_config_settle_preset(&c);
  CHECK(!strcmp(c.preset, "librosa"), "explicit fmax = sr/2 cleared the librosa preset");

  static const char *const bad[] = {"win > n_fft", "hop 0",        "fmax > nyquist", "n_mels 0",
                                    "dtype i32",   "fmin >= fmax", "no log floor"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    fc_mel_preset("hifigan", &c);
    switch (i) {
    case 0: c.win_length = 2048; break;
    case 1: c.hop_length = 0; break;
    case 2: c.fmax = 12000; break;
    case 3: c.n_mels = 0; break;
    case 4: c.dtype = FC_DTYPE_I32; break;
    case 5: c.fmin = 8000; break;
    case 6: c.log_floor = 0; break;
    }
    why[0] = 0;
    CHECK(fc_mel_config_validate(&c, why, sizeof why) == FC_ECONFIG && why[0],
          "config with %s accepted", bad[i]);
    fc_mel_plan *p = (fc_mel_plan *)&c;
    CHECK(fc_mel_plan_create(&c, &p) == FC_ECONFIG && p == NULL, "plan for %s created", bad[i]);
  }
}

/* Empty bands counted by fc_mel_empty_bands (two bins per band) are the all-zero rows of the
 * filterbank a plan builds (every bin), and the smallest n_fft it names is one where no row is
 * empty while at one less some row is. librosa.filters.mel finds the same: 78 of hifigan's 80
 * bands empty at n_fft 3, 40 at 64, 19 of whisper's at 200 mels, and 297 the first n_fft that
 * fills hifigan's (checked against librosa 0.10). */
static uint32_t dense_empty_rows(const fc_mel_config *c) {
  fc_mel_plan *p;
  uint32_t nb = c->n_fft / 2 + 1, empty = 0;
  if (fc_mel_plan_create(c, &p)) return UINT32_MAX;
  float *fb = malloc(sizeof *fb * nb * c->n_mels);
  fc_mel_filterbank_dense(p, fb);
  for (uint32_t m = 0; m < c->n_mels; m++) {
    float mx = 0;
    for (uint32_t k = 0; k < nb; k++)
      mx = fb[(size_t)m * nb + k] > mx ? fb[(size_t)m * nb + k] : mx;
    empty += mx == 0;
  }
  free(fb);
  fc_mel_plan_free(p);
  return empty;
}

static void test_empty_bands(void) {
  static const struct {
    const char *preset;
    uint32_t n_fft, n_mels, sr; /* 0: the preset's */
    uint32_t want_empty, want_min;
  } cases[] = {
      {"hifigan", 3, 0, 0, 78, 297},   {"hifigan", 64, 0, 0, 40, 297},
      {"hifigan", 296, 0, 0, 1, 297},  {"hifigan", 0, 0, 0, 0, 1024},
      {"whisper", 0, 200, 0, 19, 534}, {"whisper", 0, 128, 0, 0, 400},
      {"kaldi", 0, 0, 0, 0, 512},      {"kaldi", 64, 0, 0, 0, 0},
      {"kaldi", 256, 0, 8000, 0, 256}, {"librosa", 0, 0, 0, 0, 2048},
      {"tacotron2", 0, 0, 0, 0, 1024},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fc_mel_config c;
    fc_mel_preset(cases[i].preset, &c);
    if (cases[i].sr) c.sample_rate = cases[i].sr, c.fmax = 0;
    if (cases[i].n_fft) c.n_fft = c.win_length = cases[i].n_fft;
    if (cases[i].n_mels) c.n_mels = cases[i].n_mels;
    if (c.pad) c.pad = c.n_fft > c.hop_length ? (c.n_fft - c.hop_length) / 2 : 0;
    uint32_t min = 7, empty = fc_mel_empty_bands(&c, &min);
    uint32_t dense = dense_empty_rows(&c);
    if (cases[i].want_min == 0) { /* kaldi 64: compute the answer instead of stating it */
      CHECK(empty == dense && empty > 0 && min > 64, "kaldi n_fft 64: %u empty, dense %u, min %u",
            empty, dense, min);
      continue;
    }
    CHECK(empty == cases[i].want_empty && dense == empty && min == cases[i].want_min,
          "%s n_fft %u n_mels %u: %u empty bands (want %u; the dense filterbank has %u), smallest "
          "n_fft %u (want %u)",
          cases[i].preset, c.n_fft, c.n_mels, empty, cases[i].want_empty, dense, min,
          cases[i].want_min);
    if (!empty) continue;
    c.n_fft = c.win_length = min; /* the named size fills every band; one less does not */
    CHECK(dense_empty_rows(&c) == 0, "%s: n_fft %u leaves empty bands", cases[i].preset, min);
    c.n_fft = c.win_length = min - 1;
    CHECK(dense_empty_rows(&c) > 0, "%s: n_fft %u has no empty band", cases[i].preset, min - 1);
  }
}

/* ---- the compute paths ------------------------------------------------------------------------- */

/* Frames are computed in blocks (one batched FFT) and the tail frame by frame. A frame's value must
 * not depend on which path computed it, nor on how long the utterance is: features of a prefix
 * are a prefix of the features, except frames that reach into the right padding. Clones agree. */
static void test_compute_paths(void) {
  const char *presets[] = {"hifigan", "tacotron2", "kaldi", "librosa"};
  for (size_t pi = 0; pi < sizeof presets / sizeof *presets; pi++) {
    fc_mel_config c;
    fc_mel_preset(presets[pi], &c);
    fc_mel_plan *p, *q;
    CHECK(fc_mel_plan_create(&c, &p) == 0 && fc_mel_plan_clone(p, &q) == 0, "%s plans",
          presets[pi]);
    size_t n_long = (size_t)c.hop_length * 100 + 17;
    float *x = malloc(sizeof *x * n_long);
    uint32_t s = 12345;
    for (size_t i = 0; i < n_long; i++) {
      s = s * 1664525u + 1013904223u;
      x[i] = 0.5f * sinf(0.013f * (float)i) + 0.25f * ((float)(s >> 8) / 16777216.0f - 0.5f);
    }
    uint64_t fl = fc_mel_num_frames(&c, n_long);
    float *full = malloc(sizeof *full * fl * c.n_mels),
          *part = malloc(sizeof *part * fl * c.n_mels);
    CHECK(fc_mel_compute(p, x, n_long, full) == 0, "%s compute", presets[pi]);
    /* Prefix lengths whose frame counts straddle block boundaries. */
    size_t lens[] = {(size_t)c.hop_length * 31 + 5, (size_t)c.hop_length * 33,
                     (size_t)c.hop_length * 64 + 1};
    for (size_t li = 0; li < 3; li++) {
      uint64_t fp = fc_mel_num_frames(&c, lens[li]);
      CHECK(fc_mel_compute(q, x, lens[li], part) == 0, "%s compute prefix", presets[pi]);
      /* Frames whose extent ends before the prefix's last sample saw no padding difference. */
      uint64_t pad = fc_pad_each_side(c.center, c.n_fft, c.pad);
      uint64_t extent = c.window_align == FC_ALIGN_LEFT ? c.win_length : c.n_fft;
      double maxd = 0;
      for (uint64_t f = 0; f < fp; f++) {
        if (f * c.hop_length + extent > lens[li] + pad) break;
        for (uint32_t m = 0; m < c.n_mels; m++) {
          double d = fabs((double)part[f * c.n_mels + m] - full[f * c.n_mels + m]);
          /* relative for the linear librosa output, absolute for logs */
          if (c.log == FC_LOG_NONE) d /= fabs(full[f * c.n_mels + m]) + 1e-30;
          maxd = d > maxd ? d : maxd;
        }
      }
      CHECK(maxd <= 1e-5,
            "%s: prefix of %zu samples differs from the full run by %g (block vs "
            "single-frame FFT plans disagree?)",
            presets[pi], lens[li], maxd);
    }
    /* A run of constant zeros: centre constant pad gives exact zeros; logs give the floor. */
    memset(x, 0, sizeof *x * n_long);
    CHECK(fc_mel_compute(p, x, n_long, full) == 0, "%s silence", presets[pi]);
    /* (HiFi-GAN's sqrt(0 + 1e-9) is above its floor, so it has no single expected value.) */
    float want = fc_log_compress(0.0f, c.log, (float)c.log_floor);
    if (c.mag_eps == 0) {
      int bad = 0;
      for (uint64_t i = 0; i < fl * c.n_mels && !bad; i++) bad = full[i] != want;
      CHECK(!bad, "%s: silence should give %g everywhere", presets[pi], want);
    }
    CHECK(fc_mel_compute(p, x, 0, full) == FC_EEMPTY, "%s: 0 samples must give FC_EEMPTY",
          presets[pi]);
    free(x);
    free(full);
    free(part);
    fc_mel_plan_free(q);
    fc_mel_plan_free(p);
  }
  fc_mel_config c;
  fc_mel_plan *p;
  float x[300] = {0}, out[80];
  fc_mel_preset("kaldi", &c);
  fc_mel_plan_create(&c, &p);
  CHECK(fc_mel_compute(p, x, 300, out) == FC_EEMPTY, "kaldi: 300 samples (< 400) → FC_EEMPTY");
  fc_mel_plan_free(p);
}

/* ---- the vectorised log ------------------------------------------------------------------- */

/* fc_logf_poly against log() in double over a spread of positive normal floats (every 613th bit
 * pattern, all exponents, 3.5 M values; the exhaustive run over all 2^31 measured 0.995 ulp), exact
 * values where ln is exact, and its domain test. */
static void test_logf_poly(void) {
  double worst = 0;
  float worst_x = 0;
  for (uint32_t u = 0x00800000u; u < 0x7f800000u; u += 613) {
    float x = bits_f(u), got = fc_logf_poly(x);
    double ref = log((double)x);
    float r = (float)ref;
    double ulp = fabs((double)nextafterf(r, INFINITY) - (double)r);
    if (r == 0.0f) ulp = FLT_TRUE_MIN;
    double e = fabs((double)got - ref) / ulp;
    if (e > worst) {
      worst = e;
      worst_x = x;
    }
  }
  CHECK(worst < 1.0, "fc_logf_poly: %.3f ulp at %a (must stay below 1 ulp)", worst, worst_x);
  CHECK(fc_logf_poly(1.0f) == 0.0f, "fc_logf_poly(1) = %a, expected 0", fc_logf_poly(1.0f));
  CHECK(fc_logf_poly(2.0f) == logf(2.0f) && fc_logf_poly(0.5f) == -logf(2.0f),
        "fc_logf_poly(2), (0.5): %a %a, expected ±%a", fc_logf_poly(2.0f), fc_logf_poly(0.5f),
        logf(2.0f));
  const float in[] = {FLT_MIN, 1e-5f, 1.0f, FLT_MAX};
  const float out[] = {0.0f, -0.0f, FLT_TRUE_MIN, FLT_MIN / 2, -1.0f, INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < sizeof in / sizeof *in; i++)
    CHECK(fc_logf_poly_domain(in[i]), "fc_logf_poly_domain(%a) should be 1", in[i]);
  for (size_t i = 0; i < sizeof out / sizeof *out; i++)
    CHECK(!fc_logf_poly_domain(out[i]), "fc_logf_poly_domain(%a) should be 0", out[i]);
}

/* ---- the FFT paths against a DFT in double ------------------------------------------------ */

/* Even n_fft runs a half-length complex FFT and the split step; odd n_fft FFTW's r2c. Both, at
 * sizes from the degenerate (2, 3 points) to the presets', must give the power mel spectrum of a
 * direct DFT in double through the plan's own dense filterbank: per frame, relative to the
 * frame's largest value, within 1e-5. */
static void test_fft_paths(void) {
  const uint32_t sizes[] = {2, 3, 4, 15, 16, 400, 401, 512, 1023, 1024};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    fc_mel_config c;
    fc_mel_preset("librosa", &c); /* power 2, linear output, centred constant padding */
    uint32_t nfft = sizes[si];
    c.n_fft = c.win_length = nfft;
    c.hop_length = nfft / 2 + 1;
    c.n_mels = nfft < 16 ? 2 : 40;
    c.fmax = 0;
    c.preset[0] = '\0';
    fc_mel_plan *p;
    int rc = fc_mel_plan_create(&c, &p);
    CHECK(rc == 0, "n_fft %u: plan: %d", nfft, rc);
    if (rc) continue;
    const uint32_t nb = nfft / 2 + 1, nm = c.n_mels;
    size_t n = (size_t)c.hop_length * 70 + 3; /* > 2 blocks of frames, and a tail */
    float *x = malloc(sizeof *x * n), *win = malloc(sizeof *win * nfft);
    float *fb = malloc(sizeof *fb * nm * nb);
    uint64_t frames = fc_mel_num_frames(&c, n);
    float *got = malloc(sizeof *got * frames * nm);
    double *spec = malloc(sizeof *spec * nb);
    double *cs = malloc(sizeof *cs * nfft), *sn = malloc(sizeof *sn * nfft);
    for (uint32_t t = 0; t < nfft; t++) {
      cs[t] = cos(2.0 * FC_PI * (double)t / (double)nfft);
      sn[t] = sin(2.0 * FC_PI * (double)t / (double)nfft);
    }
    uint32_t s = 777;
    for (size_t i = 0; i < n; i++) {
      s = s * 1664525u + 1013904223u;
      x[i] = 0.6f * sinf(0.05f * (float)i) + 0.3f * ((float)(s >> 8) / 16777216.0f - 0.5f);
    }
    fc_mel_window(p, win);
    fc_mel_filterbank_dense(p, fb);
    CHECK(fc_mel_compute(p, x, n, got) == 0, "n_fft %u: compute", nfft);
    double worst = 0;
    for (uint64_t f = 0; f < frames; f++) {
      for (uint32_t k = 0; k < nb; k++) {
        double re = 0, im = 0;
        for (uint32_t j = 0; j < nfft; j++) {
          int64_t q = (int64_t)(f * c.hop_length + j) - (int64_t)(nfft / 2);
          double v = q >= 0 && (uint64_t)q < n ? (double)x[q] * win[j] : 0.0;
          size_t t = (size_t)k * j % nfft;
          re += v * cs[t];
          im -= v * sn[t];
        }
        spec[k] = re * re + im * im;
      }
      double mx = 0, md = 0;
      for (uint32_t m = 0; m < nm; m++) {
        double want = 0;
        for (uint32_t k = 0; k < nb; k++) want += (double)fb[(size_t)m * nb + k] * spec[k];
        mx = want > mx ? want : mx;
        double d = fabs(want - (double)got[f * nm + m]);
        md = d > md ? d : md;
      }
      double rel = mx > 0 ? md / mx : md;
      worst = rel > worst ? rel : worst;
    }
    CHECK(worst <= 1e-5,
          "n_fft %u (%s path): max per-frame relative error %.3g against a DFT in "
          "double",
          nfft, nfft % 2 ? "r2c" : "half-length complex + split", worst);
    free(x);
    free(win);
    free(fb);
    free(got);
    free(spec);
    free(cs);
    free(sn);
    fc_mel_plan_free(p);
  }
}

/* ---- reproducible bytes ------------------------------------------------------------------- */

/* The same input and config give the same bits: from one plan twice, from a clone, and from a
 * plan made after the first was freed (what another process would make: FFTW_ESTIMATE plans are
 * chosen without timing). Also the log stage's fallback lanes: a subnormal floor goes through
 * libm's logf and must give exactly logf(floor) on silence. */
static void test_reproducible(void) {
  for (const char *const *name = fc_mel_preset_names(); *name; name++) {
    fc_mel_config c;
    fc_mel_preset(*name, &c);
    size_t n = (size_t)c.sample_rate * 2 + 77;
    float *x = malloc(sizeof *x * n);
    uint32_t s = 99;
    for (size_t i = 0; i < n; i++) {
      s = s * 1664525u + 1013904223u;
      x[i] = 0.4f * sinf(0.021f * (float)i) * ((float)(s >> 8) / 16777216.0f);
    }
    uint64_t frames = fc_mel_num_frames(&c, n);
    size_t bytes = sizeof(float) * frames * c.n_mels;
    float *a = malloc(bytes), *b = malloc(bytes), *d = malloc(bytes), *e = malloc(bytes);
    fc_mel_plan *p, *q, *r;
    CHECK(fc_mel_plan_create(&c, &p) == 0 && fc_mel_plan_clone(p, &q) == 0, "%s: plans", *name);
    fc_mel_compute(p, x, n, a);
    fc_mel_compute(q, x, n, b);
    fc_mel_compute(p, x, n, d);
    fc_mel_plan_free(q);
    fc_mel_plan_free(p);
    CHECK(fc_mel_plan_create(&c, &r) == 0, "%s: plan again", *name);
    fc_mel_compute(r, x, n, e);
    fc_mel_plan_free(r);
    CHECK(!memcmp(a, b, bytes), "%s: a clone gives other bits", *name);
    CHECK(!memcmp(a, d, bytes), "%s: a second call gives other bits", *name);
    CHECK(!memcmp(a, e, bytes), "%s: a new plan gives other bits", *name);
    free(x);
    free(a);
    free(b);
    free(d);
    free(e);
  }
  fc_mel_config c;
  fc_mel_preset("tacotron2", &c); /* mag_eps 0: silence is exactly 0 before the log */
  c.log_floor = 1e-40; /* subnormal as a float */
  c.preset[0] = '\0';
  fc_mel_plan *p;
  CHECK(fc_mel_plan_create(&c, &p) == 0, "tacotron2 with a subnormal floor: plan");
  float x[4096] = {0}, out[17 * 80];
  CHECK(fc_mel_num_frames(&c, 4096) == 17, "tacotron2: 4096 samples give 17 frames");
  fc_mel_compute(p, x, 4096, out);
  float want = logf((float)1e-40);
  int bad = 0;
  for (size_t i = 0; i < 17 * 80; i++) bad += out[i] != want;
  CHECK(!bad, "subnormal floor: %d values differ from logf(%a) = %a", bad, (float)1e-40, want);
  fc_mel_plan_free(p);
}

int main(void) {
  test_frame_counts();
  test_resampled_length();
  test_reflect_map();
  test_windows();
  test_filterbanks();
  test_empty_bands();
  test_half_floats();
  test_configs();
  test_compute_paths();
  test_logf_poly();
  test_fft_paths();
  test_reproducible();
  if (failures) {
    fprintf(stderr, "test_mel_math: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_mel_math: ok\n");
  return 0;
}
