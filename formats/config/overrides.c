/* fc_mel_config_override: a preset with a user's overrides on top (fc_config.h says the rules).
 * The rules are the presets' own (the references' conventions), so they live beside presets.c and
 * not in each tool. */
#include "featcache/fc_config.h"
#include "formats/common/args.h"

#include <stdio.h>
#include <string.h>

/* Kaldi's frames, set in milliseconds (FrameExtractionOptions: frame_length 25 ms, frame_shift
 * 10 ms, round_to_power_of_two), in samples at rate sr as Kaldi and torchaudio's
 * compliance.kaldi truncate them: int(sr * ms * 0.001). */
static uint32_t kaldi_samples(uint32_t sr, double ms) {
  return (uint32_t)((double)sr * ms * 0.001);
}
static uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n && p < (1u << 31)) p <<= 1;
  return p;
}

int fc_mel_config_override(fc_mel_config *cfg, const fc_mel_config *ov, unsigned f, char *why,
                           size_t why_len) {
  FC_ARGS_WHY(cfg, ov || !f);
  fc_mel_config *c = cfg;
  /* HiFi-GAN pads (n_fft - hop) / 2 itself: keep that rule when n_fft or hop change. */
  int pad_follows = !c->center && c->pad && c->pad == (c->n_fft - c->hop_length) / 2;
  const int kaldi = !strcmp(c->preset, "kaldi");
  const int kaldi_rate = (f & FC_MEL_F_SAMPLE_RATE) && kaldi;
  if (f & FC_MEL_F_SAMPLE_RATE) c->sample_rate = ov->sample_rate;
  if (f & FC_MEL_F_N_FFT) c->n_fft = ov->n_fft;
  if (f & FC_MEL_F_WIN_LENGTH)
    c->win_length = ov->win_length;
  else if ((f & FC_MEL_F_N_FFT) && c->window_align == FC_ALIGN_CENTER)
    c->win_length = ov->n_fft;
  if (f & FC_MEL_F_HOP_LENGTH) c->hop_length = ov->hop_length;
  if (kaldi_rate) { /* Kaldi's frames are 25 and 10 ms at any rate, padded to a power of two */
    if (!(f & FC_MEL_F_WIN_LENGTH)) c->win_length = kaldi_samples(c->sample_rate, 25.0);
    if (!(f & FC_MEL_F_HOP_LENGTH)) c->hop_length = kaldi_samples(c->sample_rate, 10.0);
    if (!(f & FC_MEL_F_N_FFT)) c->n_fft = pow2_at_least(c->win_length);
  } else if (kaldi && (f & FC_MEL_F_WIN_LENGTH) && !(f & FC_MEL_F_N_FFT)) {
    /* another window: Kaldi's FFT is the power of two at least it (round_to_power_of_two) */
    c->n_fft = pow2_at_least(c->win_length);
  }
  if (f & FC_MEL_F_N_MELS) c->n_mels = ov->n_mels;
  if (f & FC_MEL_F_FMIN) c->fmin = ov->fmin;
  if (f & FC_MEL_F_FMAX) c->fmax = ov->fmax;
  if (f & FC_MEL_F_MEL_SCALE) c->mel_scale = ov->mel_scale;
  if (f & FC_MEL_F_NORM) c->norm = ov->norm;
  if (f & FC_MEL_F_CENTER) {
    c->center = ov->center;
    /* Centred frames are centred on sample t * hop: a window shorter than n_fft sits in the
     * middle of the frame, as torch.stft puts it. Kaldi's left-aligned window would put frame t's
     * window 56 samples early and count 1 + (N + n_fft - win) / hop frames. */
    if (c->center) {
      c->pad = 0;
      c->window_align = FC_ALIGN_CENTER;
    }
  }
  if (pad_follows && !c->center && !(f & FC_MEL_F_PAD) && c->n_fft < c->hop_length) {
    /* torch.nn.functional.pad with a negative reflect pad crops the signal: not a pad */
    if (why && why_len)
      snprintf(why, why_len,
               "n_fft %u is below hop_length %u: the pad %s takes, (n_fft - hop_length) / 2, would "
               "be negative (HiFi-GAN would crop %u samples each side): give n_fft %u or more, "
               "hop_length %u or less, or a pad",
               c->n_fft, c->hop_length, c->preset[0] ? c->preset : "the preset",
               (c->hop_length - c->n_fft) / 2, c->hop_length, c->n_fft);
    return FC_ECONFIG;
  }
  if (pad_follows && !c->center) c->pad = (c->n_fft - c->hop_length) / 2;
  if (f & FC_MEL_F_PAD) c->pad = ov->pad;
  if (f & FC_MEL_F_PAD_MODE) c->pad_mode = ov->pad_mode;
  if (f & FC_MEL_F_POWER) c->power = ov->power;
  if ((f & FC_MEL_F_LOG) && c->log != ov->log) {
    /* Each compression with its reference's floor: ln 1e-5 (HiFi-GAN/Tacotron 2), log10 and
     * whisper 1e-10 (Whisper), db 1e-10 with top_db 80 (librosa power_to_db). */
    c->log = ov->log;
    c->log_floor = c->log == FC_LOG_LN ? 1e-5 : 1e-10;
    c->top_db = c->log == FC_LOG_DB ? 80 : 0;
  }
  if (f & FC_MEL_F_TOP_DB) {
    if (c->log != FC_LOG_DB) { /* (the librosa preset's log none keeps its top_db 80) */
      if (why && why_len)
        snprintf(why, why_len,
                 "top_db %g: the clamp of a log in dB (log db, librosa's power_to_db), and this "
                 "config's log is another: it would change no value, only the config's digest; "
                 "give log db with it, or no top_db",
                 ov->top_db);
      return FC_ECONFIG;
    }
    c->top_db = ov->top_db;
  }
  if (f & FC_MEL_F_DTYPE) c->dtype = ov->dtype;
  if (f & FC_MEL_F_SNIP_EDGES) c->no_snip_edges = ov->no_snip_edges;
  fc_mel_config_settle_preset(c);
  return fc_mel_config_validate(c, why, why_len);
}
