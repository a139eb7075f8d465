/* featurize's word on a feature config it refuses (cmd/featurize/config.c). */
#ifndef FC_CMD_FEATURIZE_CONFIG_H
#define FC_CMD_FEATURIZE_CONFIG_H
#include <stddef.h>

#include "featcache/fc_mel.h"

/* What to change when cfg's mel bands do not each hold an FFT bin (fc_mel_empty_bands): the
 * smallest --n-fft that fills them (n_fft_min; 0: none does), and, unless cfg's n_fft is refused
 * anyway (refused: another reason stands), a count of bands that each hold one at this n_fft —
 * for a Kaldi recipe, whose FFT is its window's power of two, fewer bands is the way out. buf. */
void fzc_empty_bands_fix(const fc_mel_config *cfg, uint32_t n_fft_min, int refused, char *buf,
                         size_t len);
/* What to change when fmax alone makes cfg invalid (cfg is valid with fmax at Nyquist): the
 * preset's own fmax above a lower --sr's Nyquist (fmax_given 0: the user gave none, so it is
 * named, with the --fmax to give), or a --fmax at or below 0 (fmax_arg, counted down from
 * Nyquist) that falls to fmin or below. "" otherwise. buf. */
void fzc_fmax_hint(const fc_mel_config *cfg, const char *preset, int fmax_given, double fmax_arg,
                   char *buf, size_t len);
#endif
