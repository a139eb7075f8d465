/* featcache — feature (log-mel) configurations, presets, canonical JSON and config digests.
 *
 * A config holds every parameter that changes the numbers. Its canonical JSON (sorted keys, no
 * spaces, "kind":"mel", "preset": name or null when overridden, "kernel_version") is stored in the
 * store's meta db under cfg/<32 hex>, and XXH3-128 of that JSON is the config digest that enters
 * every feature key. See docs/FORMAT.md. */
#ifndef FC_CONFIG_H
#define FC_CONFIG_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the numbers some config produces change: old records then stop matching. */
#define FC_KERNEL_VERSION 2

typedef enum fc_mel_scale { FC_MEL_SLANEY = 0, FC_MEL_HTK = 1, FC_MEL_KALDI = 2 } fc_mel_scale;
typedef enum fc_mel_norm { FC_NORM_NONE = 0, FC_NORM_SLANEY = 1 } fc_mel_norm;
typedef enum fc_window { FC_WINDOW_HANN = 0, FC_WINDOW_POVEY = 1, FC_WINDOW_HAMMING = 2 } fc_window;
/* Where a window shorter than n_fft sits in the FFT frame: centred (librosa/torch) or at the start
 * with the frame zero-padded at the end (Kaldi). With LEFT the frame extent is win_length. */
typedef enum fc_window_align { FC_ALIGN_CENTER = 0, FC_ALIGN_LEFT = 1 } fc_window_align;
typedef enum fc_pad_mode { FC_PAD_REFLECT = 0, FC_PAD_CONSTANT = 1 } fc_pad_mode;
typedef enum fc_log {
  FC_LOG_NONE = 0, /* linear output */
  FC_LOG_LN = 1, /* ln(max(x, log_floor)) */
  FC_LOG_LOG10 = 2, /* log10(max(x, log_floor)) */
  FC_LOG_DB = 3, /* librosa power_to_db: 10 log10(max(x, log_floor)) with ref 1, then
                         max(x, max_over_utterance - top_db) when top_db > 0 */
  FC_LOG_WHISPER = 4 /* log10(max(x, log_floor)); max(x, utterance max - 8); (x + 4) / 4 */
} fc_log;

typedef struct fc_mel_config {
  char preset[32]; /* preset name, or "" when any parameter was overridden (JSON null) */
  uint32_t sample_rate; /* audio is resampled to this rate */
  uint32_t n_fft;
  uint32_t win_length; /* <= n_fft */
  uint32_t hop_length;
  uint32_t n_mels;
  double fmin, fmax; /* Hz; fmax <= 0 means sample_rate / 2 + fmax (Kaldi's high_freq: 0 is
                        Nyquist, -400 is 400 Hz below it) */
  fc_mel_scale mel_scale;
  fc_mel_norm norm;
  fc_window window; /* hann and hamming are periodic (as librosa/torch), povey as Kaldi */
  fc_window_align window_align;
  int center; /* 1: pad n_fft/2 each side (librosa/torch centre); 0: pad `pad` */
  uint32_t pad; /* samples padded each side when !center (hifigan: (n_fft-hop)/2) */
  fc_pad_mode pad_mode;
  int drop_last_frame; /* whisper drops the last STFT frame */
  double power; /* 1 magnitude, 2 power */
  double mag_eps; /* magnitude = sqrt(re^2 + im^2 + mag_eps) when power == 1 (hifigan) */
  fc_log log;
  double log_floor; /* clamp before the log */
  double top_db; /* FC_LOG_DB only; 0 disables */
  int int16_scale; /* multiply samples by 32768 first (Kaldi reads WAV as 16-bit ints) */
  int remove_dc; /* subtract each frame's mean (Kaldi) */
  double preemph; /* pre-emphasis coefficient, 0 = off (Kaldi 0.97) */
  fc_dtype dtype; /* FC_DTYPE_F32, F16, BF16, or MQ (the codec, fc_codec.h; log only) */
  /* 1: Kaldi's --snip-edges=false (JSON "snip_edges":false, a key written only then): (N + hop/2)
   * / hop frames, window t starting at sample t*hop + hop/2 - win_length/2, samples outside the
   * signal mirrored about its ends with the end sample repeated; needs center 0 and pad 0 (pad_mode
   * plays no part). 0 (every config before it): frames only where the padded signal holds them. */
  int no_snip_edges;
} fc_mel_config;

/* Fill cfg with a named preset: "hifigan", "tacotron2", "librosa", "whisper", "kaldi".
 * Returns 0, or FC_ECONFIG for an unknown name. */
FC_API int fc_mel_preset(const char *name, fc_mel_config *cfg);
/* Names of the presets, NULL-terminated static array. */
FC_API const char *const *fc_mel_preset_names(void);

/* Upper bounds of a valid config (fc_mel_config_validate), which keep every size computation far
 * from overflow and every table small. */
#define FC_MEL_MAX_SAMPLE_RATE 768000u
#define FC_MEL_MAX_N_FFT 65536u
#define FC_MEL_MAX_N_MELS 4096u

/* Check every field for consistency (n_fft > 0, win <= n_fft, hop > 0, 0 <= fmin < fmax <= sr/2,
 * n_mels > 0, dtype a float type, ...). Returns 0 or FC_ECONFIG; writes a reason into why
 * (may be NULL) of at most why_len bytes. */
FC_API int fc_mel_config_validate(const fc_mel_config *cfg, char *why, size_t why_len);

/* If cfg differs from the preset it names, clear cfg->preset (the stored preset becomes null). */
FC_API void fc_mel_config_settle_preset(fc_mel_config *cfg);

/* The preset cfg answers to by name: cfg->preset when set, else the preset whose every parameter
 * cfg has but the storage dtype (kaldi stored as mq has "preset":null in its JSON, which keeps
 * the digests of stored configs as they were, and still answers to "kaldi"). Returns a static
 * name, or NULL when cfg is no preset's. *exact (may be NULL) is 1 when cfg->preset names it. */
FC_API const char *fc_mel_config_preset_of(const fc_mel_config *cfg, int *exact);

/* The fields of an override (fc_mel_config_override), as bits. */
enum fc_mel_field {
  FC_MEL_F_SAMPLE_RATE = 1u << 0,
  FC_MEL_F_N_FFT = 1u << 1,
  FC_MEL_F_WIN_LENGTH = 1u << 2,
  FC_MEL_F_HOP_LENGTH = 1u << 3,
  FC_MEL_F_N_MELS = 1u << 4,
  FC_MEL_F_FMIN = 1u << 5,
  FC_MEL_F_FMAX = 1u << 6,
  FC_MEL_F_MEL_SCALE = 1u << 7,
  FC_MEL_F_NORM = 1u << 8,
  FC_MEL_F_CENTER = 1u << 9,
  FC_MEL_F_PAD = 1u << 10,
  FC_MEL_F_PAD_MODE = 1u << 11,
  FC_MEL_F_POWER = 1u << 12,
  FC_MEL_F_LOG = 1u << 13,
  FC_MEL_F_DTYPE = 1u << 14,
  FC_MEL_F_SNIP_EDGES = 1u << 15, /* ov->no_snip_edges */
  FC_MEL_F_TOP_DB = 1u << 16 /* log db (power_to_db) only; 0: no clamp (librosa's top_db=None) */
};

/* Change the fields of cfg (a preset) named by `fields` (FC_MEL_F_* bits) to those of ov, the
 * way a user means them (featurize's --sr ... --dtype), keeping each preset's own rules:
 *  - a new n_fft also sets win_length when the window is centred in the frame (hann, hamming) and
 *    win_length is not given;
 *  - center on sets pad 0 and centres a window shorter than n_fft in its frame (window_align
 *    center, as torch.stft: frame t centred on sample t * hop); a preset that pads
 *    (n_fft - hop) / 2 itself without centring (hifigan) keeps that rule when n_fft or hop change,
 *    unless pad is given; an n_fft below the hop, where the rule gives a negative pad (HiFi-GAN
 *    crops), is FC_ECONFIG;
 *  - a different log compression brings its reference's floor: ln 1e-5 (HiFi-GAN, Tacotron 2),
 *    log10 and whisper 1e-10 (Whisper), db 1e-10 with top_db 80 (librosa power_to_db), unless
 *    top_db is given (with any other log a top_db given is FC_ECONFIG: it would change the
 *    config's digest and not one value);
 *  - the kaldi preset at another sample rate keeps Kaldi's frames in milliseconds: win_length
 *    int(sr * 0.025), hop_length int(sr * 0.010), n_fft the power of two at least win_length
 *    (each unless given), and fmax Nyquist (high_freq 0), as torchaudio's compliance.kaldi.fbank
 *    at that sample_frequency; another win_length alone (at the preset's rate) sets n_fft the power
 *    of two at least it, as frame_length does in fbank;
 *  - snip edges off (no_snip_edges 1) is Kaldi's framing, whatever else is given: with center on
 *    or a pad it is FC_ECONFIG;
 * then clears cfg->preset when the result differs from the preset (fc_mel_config_settle_preset)
 * and validates it. Returns 0, or FC_ECONFIG with a reason in why (may be NULL); cfg is then
 * changed but not valid. */
FC_API int fc_mel_config_override(fc_mel_config *cfg, const fc_mel_config *ov, unsigned fields,
                                  char *why, size_t why_len);

/* Effective fmax (fmax <= 0 → sample_rate / 2 + fmax). Inline: no symbol. */
static inline double fc_mel_config_fmax(const fc_mel_config *cfg) {
  return cfg->fmax > 0 ? cfg->fmax : cfg->sample_rate / 2.0 + cfg->fmax;
}

/* Canonical JSON into buf (NUL-terminated). Returns the length without NUL, or a negative
 * error if buf is too small (FC_ECONFIG). 1024 bytes always suffice. */
FC_API int fc_mel_config_json(const fc_mel_config *cfg, char *buf, size_t buf_len);
/* Config digest = XXH3-128 of the canonical JSON. */
FC_API void fc_mel_config_digest(const fc_mel_config *cfg, fc_digest *out);
/* Parse a stored canonical JSON (or any JSON object with the same keys) into cfg.
 * Returns 0, FC_ECONFIG with a reason in why, or ENOMEM (out of memory: the JSON may be fine). */
FC_API int fc_mel_config_from_json(const char *json, size_t len, fc_mel_config *cfg, char *why,
                                   size_t why_len);

/* Number of frames the config gives for n samples at its sample rate (exact, as the references). */
FC_API uint64_t fc_mel_num_frames(const fc_mel_config *cfg, uint64_t n_samples);

/* Number of samples after resampling n samples from in_rate to out_rate, as librosa.load does
 * (ceil(n * out / in)); n when the rates are equal. */
FC_API uint64_t fc_resampled_length(uint64_t n, uint32_t in_rate, uint32_t out_rate);

#ifdef __cplusplus
}
#endif
#endif
