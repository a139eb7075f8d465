/* Feature presets (docs/presets.md: each one's parameters and reference), config validation and
 * the frame/length rules. Each preset reproduces one reference; the comment on each says which and the choices that
 * matter for matching it. */
#include "featcache/fc_config.h"
#include "formats/common/args.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels/fc_math.h"

static const char *const preset_names[] = {"hifigan", "tacotron2", "librosa",
                                           "whisper", "kaldi",     NULL};

const char *const *fc_mel_preset_names(void) { return preset_names; }

/* Fields shared by the presets that follow librosa/torch: hann, centred window, slaney mels. */
static void base_config(fc_mel_config *c, const char *name) {
  memset(c, 0, sizeof *c);
  snprintf(c->preset, sizeof c->preset, "%s", name);
  c->mel_scale = FC_MEL_SLANEY;
  c->norm = FC_NORM_SLANEY;
  c->window = FC_WINDOW_HANN;
  c->window_align = FC_ALIGN_CENTER;
  c->pad_mode = FC_PAD_REFLECT;
  c->dtype = FC_DTYPE_F32;
}

int fc_mel_preset(const char *name, fc_mel_config *cfg) {
  FC_ARGS(name, cfg);
  fc_mel_config *c = cfg;
  if (!strcmp(name, "hifigan") || !strcmp(name, "tacotron2")) {
    /* jik876/hifi-gan meldataset.py (config_v1) and NVIDIA/tacotron2 hparams: same STFT and mels;
     * HiFi-GAN reflect-pads (n_fft - hop) / 2 itself and runs the STFT uncentred, and adds 1e-9
     * inside the magnitude's square root; Tacotron 2 centres with reflect and takes |X|. */
    int hifigan = name[0] == 'h';
    base_config(c, hifigan ? "hifigan" : "tacotron2");
    c->sample_rate = 22050;
    c->n_fft = c->win_length = 1024;
    c->hop_length = 256;
    c->n_mels = 80;
    c->fmin = 0;
    c->fmax = 8000;
    c->center = !hifigan;
    c->pad = hifigan ? (1024 - 256) / 2 : 0;
    c->power = 1;
    c->mag_eps = hifigan ? 1e-9 : 0;
    c->log = FC_LOG_LN;
    c->log_floor = 1e-5;
    return 0;
  }
  if (!strcmp(name, "librosa")) {
    /* librosa.feature.melspectrogram(y, sr=22050) with librosa >= 0.10 defaults: centre with zero
     * padding, power 2, 128 mels up to sr/2 (fmax 0 = sr/2, so --sr keeps it at Nyquist), linear
     * output. --log db selects power_to_db(ref=1, amin=1e-10, top_db=80), hence floor and top_db
     * are set here already. */
    base_config(c, "librosa");
    c->sample_rate = 22050;
    c->n_fft = c->win_length = 2048;
    c->hop_length = 512;
    c->n_mels = 128;
    c->center = 1;
    c->pad_mode = FC_PAD_CONSTANT;
    c->power = 2;
    c->log = FC_LOG_NONE;
    c->log_floor = 1e-10;
    c->top_db = 80;
    return 0;
  }
  if (!strcmp(name, "whisper")) {
    /* openai/whisper audio.log_mel_spectrogram(padding=0): torch.stft(400, 160, hann, centre
     * reflect), last frame dropped, |X|^2, librosa mel filters (80, fmax sr/2), log10 clamp 1e-10,
     * max(x, max - 8), (x + 4) / 4. */
    base_config(c, "whisper");
    c->sample_rate = 16000;
    c->n_fft = c->win_length = 400;
    c->hop_length = 160;
    c->n_mels = 80;
    c->center = 1;
    c->drop_last_frame = 1;
    c->power = 2;
    c->log = FC_LOG_WHISPER;
    c->log_floor = 1e-10;
    return 0;
  }
  if (!strcmp(name, "kaldi")) {
    /* torchaudio.compliance.kaldi.fbank(32768 * x, num_mel_bins=80, dither=0) defaults, i.e.
     * Kaldi compute-fbank-feats: 25 ms frames padded to 512, 10 ms shift, snip edges, DC removal,
     * pre-emphasis 0.97, povey window, power spectrum, Kaldi mel triangles 20 Hz - Nyquist without
     * normalisation, ln with a FLT_EPSILON floor. Kaldi sets the frames in milliseconds: another
     * --sr moves them (fc_mel_config_override), and Nyquist with it. */
    base_config(c, "kaldi");
    c->sample_rate = 16000;
    c->n_fft = 512;
    c->win_length = 400;
    c->hop_length = 160;
    c->n_mels = 80;
    c->fmin = 20;
    c->fmax = 0; /* high_freq 0: Nyquist, stored as its value (8000 here) */
    c->mel_scale = FC_MEL_KALDI;
    c->norm = FC_NORM_NONE;
    c->window = FC_WINDOW_POVEY;
    c->window_align = FC_ALIGN_LEFT;
    c->center = 0;
    c->pad = 0;
    c->power = 2;
    c->log = FC_LOG_LN;
    c->log_floor = FLT_EPSILON;
    c->int16_scale = 1;
    c->remove_dc = 1;
    c->preemph = 0.97;
    return 0;
  }
  return FC_ECONFIG;
}

static int invalid(char *why, size_t why_len, const char *fmt, ...) {
  if (why && why_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
  }
  return FC_ECONFIG;
}

/* Upper bounds that keep every size computation far from overflow and every table small. */
#define MAX_SAMPLE_RATE FC_MEL_MAX_SAMPLE_RATE
#define MAX_N_FFT FC_MEL_MAX_N_FFT
#define MAX_N_MELS FC_MEL_MAX_N_MELS

int fc_mel_config_validate(const fc_mel_config *cfg, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  FC_ARGS_WHY(cfg);
  const fc_mel_config *c = cfg;
  if (memchr(c->preset, '\0', sizeof c->preset) == NULL)
    return invalid(why, why_len, "preset name not terminated");
  /* [a-z0-9_-]: the canonical JSON writes the name unescaped (found by tests/fuzz/fuzz_record.c:
   * a name with a control character or a quote made JSON that did not read back) */
  for (const char *p = c->preset; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
      return invalid(why, why_len, "preset name has a character outside [a-z0-9_-]");
  if (c->sample_rate == 0 || c->sample_rate > MAX_SAMPLE_RATE)
    return invalid(why, why_len, "sample_rate %u not in 1..%u", c->sample_rate, MAX_SAMPLE_RATE);
  if (c->n_fft < 2 || c->n_fft > MAX_N_FFT)
    return invalid(why, why_len, "n_fft %u not in 2..%u", c->n_fft, MAX_N_FFT);
  if (c->win_length == 0 || c->win_length > c->n_fft)
    return invalid(why, why_len, "win_length %u not in 1..n_fft (%u)", c->win_length, c->n_fft);
  if (c->hop_length == 0 || c->hop_length > MAX_N_FFT)
    return invalid(why, why_len, "hop_length %u not in 1..%u", c->hop_length, MAX_N_FFT);
  if (c->n_mels == 0 || c->n_mels > MAX_N_MELS)
    return invalid(why, why_len, "n_mels %u not in 1..%u", c->n_mels, MAX_N_MELS);
  double fmax = fc_mel_config_fmax(c), nyquist = c->sample_rate / 2.0;
  if (!(c->fmin >= 0) || !(c->fmin < fmax))
    return invalid(why, why_len, "fmin %g not in [0, fmax %g)", c->fmin, fmax);
  if (!(fmax <= nyquist)) return invalid(why, why_len, "fmax %g above Nyquist %g", fmax, nyquist);
  if ((unsigned)c->mel_scale > FC_MEL_KALDI) return invalid(why, why_len, "unknown mel_scale");
  if ((unsigned)c->norm > FC_NORM_SLANEY) return invalid(why, why_len, "unknown norm");
  if ((unsigned)c->window > FC_WINDOW_HAMMING) return invalid(why, why_len, "unknown window");
  if ((unsigned)c->window_align > FC_ALIGN_LEFT)
    return invalid(why, why_len, "unknown window_align");
  if ((unsigned)c->pad_mode > FC_PAD_CONSTANT) return invalid(why, why_len, "unknown pad_mode");
  if ((unsigned)c->log > FC_LOG_WHISPER) return invalid(why, why_len, "unknown log");
  if (c->center != 0 && c->center != 1) return invalid(why, why_len, "center must be 0 or 1");
  if (c->center && c->pad) return invalid(why, why_len, "pad is for uncentred framing only");
  if (c->pad > MAX_N_FFT) return invalid(why, why_len, "pad %u above %u", c->pad, MAX_N_FFT);
  if (c->drop_last_frame != 0 && c->drop_last_frame != 1)
    return invalid(why, why_len, "drop_last_frame must be 0 or 1");
  if (c->int16_scale != 0 && c->int16_scale != 1)
    return invalid(why, why_len, "int16_scale must be 0 or 1");
  if (c->remove_dc != 0 && c->remove_dc != 1)
    return invalid(why, why_len, "remove_dc must be 0 or 1");
  if (c->no_snip_edges != 0 && c->no_snip_edges != 1)
    return invalid(why, why_len, "no_snip_edges must be 0 or 1");
  /* Kaldi's unsnipped frames are a framing of their own: centring or a pad would be another */
  if (c->no_snip_edges && c->center)
    return invalid(why, why_len,
                   "snip_edges false (Kaldi's framing) and center true are two framings: give one");
  if (c->no_snip_edges && c->pad)
    return invalid(why, why_len,
                   "snip_edges false (Kaldi's framing) mirrors the edges itself: pad must be 0, "
                   "not %u",
                   c->pad);
  if (!(c->power > 0 && c->power <= 4))
    return invalid(why, why_len, "power %g not in (0, 4]", c->power);
  if (!(c->mag_eps >= 0 && c->mag_eps < 1))
    return invalid(why, why_len, "mag_eps %g not in [0, 1)", c->mag_eps);
  if (c->log != FC_LOG_NONE && !(c->log_floor > 0 && c->log_floor < 1e30))
    return invalid(why, why_len, "log_floor %g must be positive for a log", c->log_floor);
  if (!(c->log_floor >= 0 && isfinite(c->log_floor)))
    return invalid(why, why_len, "log_floor %g negative or not finite", c->log_floor);
  if (!(c->top_db >= 0 && isfinite(c->top_db)))
    return invalid(why, why_len, "top_db %g negative or not finite", c->top_db);
  if (!(c->preemph >= 0 && c->preemph <= 1))
    return invalid(why, why_len, "preemph %g not in [0, 1]", c->preemph);
  if (c->dtype != FC_DTYPE_F32 && c->dtype != FC_DTYPE_F16 && c->dtype != FC_DTYPE_BF16 &&
      c->dtype != FC_DTYPE_MQ)
    return invalid(why, why_len, "dtype must be f32, f16, bf16 or mq");
  /* the codec's bound is absolute (2^-8): meaningful for log outputs, not for linear ones */
  if (c->dtype == FC_DTYPE_MQ && c->log == FC_LOG_NONE)
    return invalid(why, why_len, "the mq codec needs a log output (--log ln, log10, db, whisper)");
  return 0;
}

/* Same numbers as the named preset? Compares every parameter field (fmax by effective value, as
 * the canonical JSON stores it), so padding bytes and the name itself never matter. */
static int same_parameters(const fc_mel_config *a, const fc_mel_config *b) {
  return a->sample_rate == b->sample_rate && a->n_fft == b->n_fft &&
         a->win_length == b->win_length && a->hop_length == b->hop_length &&
         a->n_mels == b->n_mels && a->fmin == b->fmin &&
         fc_mel_config_fmax(a) == fc_mel_config_fmax(b) && a->mel_scale == b->mel_scale &&
         a->norm == b->norm && a->window == b->window && a->window_align == b->window_align &&
         a->center == b->center && a->pad == b->pad && a->pad_mode == b->pad_mode &&
         a->drop_last_frame == b->drop_last_frame && a->power == b->power &&
         a->mag_eps == b->mag_eps && a->log == b->log && a->log_floor == b->log_floor &&
         a->top_db == b->top_db && a->int16_scale == b->int16_scale &&
         a->remove_dc == b->remove_dc && a->preemph == b->preemph && a->dtype == b->dtype &&
         a->no_snip_edges == b->no_snip_edges;
}

void fc_mel_config_settle_preset(fc_mel_config *cfg) {
  FC_ARGS_OR(, cfg);
  fc_mel_config *c = cfg;
  fc_mel_config ref;
  if (!c->preset[0]) return;
  if (memchr(c->preset, '\0', sizeof c->preset) == NULL || fc_mel_preset(c->preset, &ref) != 0 ||
      !same_parameters(c, &ref))
    c->preset[0] = '\0';
}

const char *fc_mel_config_preset_of(const fc_mel_config *cfg, int *exact) {
  if (exact) *exact = 0;
  FC_ARGS_OR(NULL, cfg);
  const fc_mel_config *c = cfg;
  for (const char *const *p = preset_names; *p; p++) {
    fc_mel_config ref;
    if (fc_mel_preset(*p, &ref) != 0) continue;
    if (memchr(c->preset, '\0', sizeof c->preset) && strcmp(c->preset, *p) == 0) {
      if (exact) *exact = 1;
      return *p;
    }
    ref.dtype = c->dtype; /* the storage choice is not a parameter of the features */
    if (!c->preset[0] && same_parameters(c, &ref)) return *p;
  }
  return NULL;
}

uint64_t fc_mel_num_frames(const fc_mel_config *cfg, uint64_t n) {
  FC_ARGS_OR(0, cfg);
  const fc_mel_config *c = cfg;
  return fc_frames_for(n, c->center, c->n_fft, c->win_length, c->hop_length, c->pad,
                       c->window_align, c->drop_last_frame, c->no_snip_edges);
}

uint64_t fc_resampled_length(uint64_t n, uint32_t in_rate, uint32_t out_rate) {
  if (in_rate == out_rate || in_rate == 0) return n;
  /* ceil(n * out / in) without overflow: n = q * in + r, so n * out / in = q * out + r * out / in,
   * and r * out < 2^64 since both are below 2^32. */
  uint64_t q = n / in_rate, r = n % in_rate;
  uint64_t rem = r * out_rate;
  return q * out_rate + rem / in_rate + (rem % in_rate != 0);
}
