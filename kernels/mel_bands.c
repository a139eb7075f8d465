/* Empty mel bands: bands of a config whose triangle holds no FFT bin (librosa.filters.mel warns
 * "Empty filters detected"; Kaldi's MelBanks refuses). Such a band is 0 before the log in every
 * frame, whatever the audio: the log floor, a feature that carries nothing. featurize refuses
 * such a config and names the smallest n_fft that gives every band a bin.
 *
 * A band's weights are positive exactly on the bins strictly inside its triangle, so a band holds
 * a bin iff one of the two bins around its centre does: if any bin is inside, the nearest bin to
 * the centre on that bin's side is inside too. The check weighs those bins (and one more each side,
 * against rounding at the edges) with fc_mel_weight, the function the filterbank is built from,
 * so it agrees with the filterbank bit for bit, at O(1) per band. */
#include "featcache/fc_mel.h"
#include "formats/common/args.h"

#include <math.h>

#include "fc_math.h"

/* Hz of band b's centre (its peak): edge b + 1 of the slaney/htk edges, or the kaldi band's mel
 * centre mapped back to Hz. */
static double band_centre_hz(uint32_t b, const fc_mel_config *c, double fmax) {
  if (c->mel_scale == FC_MEL_KALDI) {
    double lo = fc_hz_to_mel(c->fmin, c->mel_scale), hi = fc_hz_to_mel(fmax, c->mel_scale);
    return fc_mel_to_hz(lo + (double)(b + 1) * ((hi - lo) / (double)(c->n_mels + 1)), c->mel_scale);
  }
  return fc_mel_edge_hz(b + 1, c->n_mels, c->fmin, fmax, c->mel_scale);
}

/* Does band b hold a bin at FFT size n_fft? */
static int band_has_bin(uint32_t b, const fc_mel_config *c, double fmax, uint32_t n_fft) {
  const uint32_t nb = n_fft / 2 + 1;
  double k = floor(band_centre_hz(b, c, fmax) * (double)n_fft / (double)c->sample_rate);
  for (int d = -1; d <= 2; d++) {
    double kk = k + d;
    if (kk < 0 || kk >= nb) continue;
    if (fc_mel_weight(b, (uint32_t)kk, c->n_mels, n_fft, c->sample_rate, c->fmin, fmax,
                      c->mel_scale, c->norm) != 0.0f)
      return 1;
  }
  return 0;
}

uint32_t fc_mel_empty_bands(const fc_mel_config *cfg, uint32_t *n_fft_min) {
  FC_ARGS_OR(0, cfg);
  const double fmax = fc_mel_config_fmax(cfg);
  uint32_t empty = 0, first = 0;
  for (uint32_t b = cfg->n_mels; b-- > 0;)
    if (!band_has_bin(b, cfg, fmax, cfg->n_fft)) {
      empty++;
      first = b;
    }
  if (!n_fft_min || !empty) {
    if (n_fft_min) *n_fft_min = cfg->n_fft;
    return empty;
  }
  *n_fft_min = 0;
  /* The smallest n_fft that works: the band that failed the last size is tried first (the
   * narrowest bands fail longest), so most sizes cost one band. */
  uint32_t hard = first;
  for (uint32_t n = 2; n <= FC_MEL_MAX_N_FFT; n++) {
    if (!band_has_bin(hard, cfg, fmax, n)) continue;
    uint32_t b = 0;
    while (b < cfg->n_mels && band_has_bin(b, cfg, fmax, n)) b++;
    if (b == cfg->n_mels) {
      *n_fft_min = n;
      break;
    }
    hard = b;
  }
  return empty;
}
