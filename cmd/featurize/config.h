/* featurize's feature config: the preset and the options on top of it, and its word on a config
 * it refuses (cmd/featurize/config.c). */
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
/* What to change when one parameter alone makes cfg invalid (cfg is valid with it changed), said
 * in the options the user gave (set: FC_MEL_F_* bits; fmax_arg: --fmax as given): the preset's
 * own fmax above a lower --sr's Nyquist, or a --fmax at or below 0 (counted down from Nyquist)
 * that falls to fmin or below, or an --fmin at or above the preset's fmax; a pad beside centring (the preset's or --center true's) or
 * --snip-edges false; the preset's window above the --n-fft given, or a --win above the preset's
 * n_fft. "" otherwise: the library's reason says it. buf. */
void fzc_config_hint(const fc_mel_config *cfg, const char *preset, unsigned set, double fmax_arg,
                     char *buf, size_t len);
/* Kaldi's mel banks (mel_scale kaldi) exist for an even FFT size and 3 bands or more: Kaldi's
 * MelBanks refuses the others, as torchaudio's get_mel_banks does (and the last bin of an odd
 * size, below Nyquist, would be dropped as Kaldi drops the Nyquist bin). 1 with the reason and
 * the options to give in buf, else 0. */
int fzc_kaldi_banks_invalid(const fc_mel_config *cfg, char *buf, size_t len);
/* An unknown option that is a reference's spelling of a feature parameter (librosa's --hop-length,
 * --n_mels, torchaudio's --sample-rate, Kaldi's --frame-length): what featurize calls it, or that
 * the parameter has no option (--top-db, --window, --preemph), in a static buffer. NULL for any
 * other word. arg: the word as given ("--n_mels=128"). */
const char *fzc_option_hint(const char *arg);
/* The feature options given: the preset (NULL: hifigan) and the values on top of it. */
typedef struct fzc_overrides {
  const char *preset;
  fc_mel_config v; /* the values given */
  unsigned set; /* which: FC_MEL_F_* bits */
} fzc_overrides;
/* The value of names[i] that s is, in values[i]; else a usage error naming --opt and the names
 * (exit 2). */
int fzc_pick(const char *opt, const char *s, const char *const *names, const int *values);
/* The preset, then the overrides on top (the stored preset name becomes null when anything
 * differs): a config featurize refuses is said, with what to change, and exits 2. */
void fzc_build_config(const fzc_overrides *ov, fc_mel_config *cfg);
#endif
