/* featurize's word on a feature config it refuses: what to change to fill empty mel bands. */
#include "cmd/featurize/config.h"

#include <stdio.h>

/* A count of bands that each hold a bin at cfg's n_fft: the boundary bisection finds (a band
 * narrows as the count grows), 0 when not even one band does. */
static uint32_t full_n_mels(const fc_mel_config *cfg) {
  fc_mel_config c = *cfg;
  uint32_t lo = 0, hi = cfg->n_mels; /* lo fills every band (0: none tried yet), hi does not */
  while (hi - lo > 1) {
    c.n_mels = lo + (hi - lo) / 2;
    if (fc_mel_empty_bands(&c, NULL))
      hi = c.n_mels;
    else
      lo = c.n_mels;
  }
  if (lo == 0) {
    c.n_mels = 1;
    lo = fc_mel_empty_bands(&c, NULL) ? 0 : 1;
  }
  return lo;
}

void fzc_empty_bands_fix(const fc_mel_config *cfg, uint32_t n_fft_min, int refused, char *buf,
                         size_t len) {
  char mels[96] = "";
  uint32_t full = refused ? 0 : full_n_mels(cfg);
  if (full)
    snprintf(mels, sizeof mels, ": %u fill%s every band at n_fft %u", full, full == 1 ? "s" : "",
             cfg->n_fft);
  if (n_fft_min)
    snprintf(buf, len, "--n-fft %u is the smallest that gives every band one (or fewer --n-mels%s)",
             n_fft_min, mels);
  else
    snprintf(buf, len, "no --n-fft up to %u gives every band one: fewer --n-mels%s",
             FC_MEL_MAX_N_FFT, mels);
}
