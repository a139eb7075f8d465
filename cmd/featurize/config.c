/* featurize's feature config: the preset and the options given on top of it, and its word on a
 * config it refuses (what to change to fill empty mel bands, ...). */
#include "cmd/featurize/config.h"
#include "cmd/cli.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

__attribute__((constructor)) static void name_the_tool(void) { fc_cli_tool = "featurize"; }

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

void fzc_config_hint(const fc_mel_config *cfg, const char *preset, unsigned set, double fmax_arg,
                     char *buf, size_t len) {
  buf[0] = '\0';
  fc_mel_config c = *cfg;
  c.fmax = 0; /* Nyquist */
  if (fc_mel_config_validate(&c, NULL, 0) == 0) { /* fmax alone */
    double nyquist = cfg->sample_rate / 2.0, fmax = fc_mel_config_fmax(cfg);
    if (!(set & FC_MEL_F_FMAX) && fmax > nyquist)
      snprintf(buf, len, " (%s's fmax, at --sr %u): give --fmax %g or less (--fmax 0: Nyquist)",
               preset, cfg->sample_rate, nyquist);
    else if ((set & FC_MEL_F_FMAX) && fmax_arg <= 0 && !(fmax > cfg->fmin))
      snprintf(buf, len,
               ": --fmax=%g counts down from Nyquist %g (Kaldi's --high-freq): give one above %g",
               fmax_arg, nyquist, cfg->fmin - nyquist);
    else if (!(set & FC_MEL_F_FMAX) && !(fmax > cfg->fmin))
      snprintf(buf, len, ": %s's fmax; give --fmin below %g, or --fmax above %g (up to Nyquist %g)",
               preset, fmax, cfg->fmin, nyquist);
    return;
  }
  c = *cfg;
  c.pad = 0;
  if (cfg->pad && fc_mel_config_validate(&c, NULL, 0) == 0) { /* the pad alone */
    if (cfg->no_snip_edges) {
      if (!(set & FC_MEL_F_PAD))
        snprintf(buf, len, ": %s's pad; give --pad 0 with --snip-edges false", preset);
    } else if (set & FC_MEL_F_CENTER) {
      snprintf(buf, len,
               ": --center true pads n_fft/2 each side itself; give --center true or "
               "--pad, not both");
    } else {
      snprintf(buf, len, ": %s centres its frames; give --center false with --pad", preset);
    }
    return;
  }
  c = *cfg;
  c.win_length = cfg->n_fft;
  if (cfg->win_length > cfg->n_fft && fc_mel_config_validate(&c, NULL, 0) == 0) { /* the window */
    if (!(set & FC_MEL_F_WIN_LENGTH))
      snprintf(buf, len, ": %s's window; give --win %u or less with --n-fft %u", preset, cfg->n_fft,
               cfg->n_fft);
    else if (!(set & FC_MEL_F_N_FFT))
      snprintf(buf, len, ": %s's n_fft; give --n-fft %u or more with --win %u", preset,
               cfg->win_length, cfg->win_length);
  }
}

int fzc_kaldi_banks_invalid(const fc_mel_config *cfg, char *buf, size_t len) {
  if (cfg->mel_scale != FC_MEL_KALDI) return 0;
  const uint32_t n = cfg->n_fft;
  if (n % 2) {
    char lower[32] = "";
    if (n - 1 >= cfg->win_length && n - 1 >= 2) snprintf(lower, sizeof lower, "%u or ", n - 1);
    snprintf(buf, len,
             "n_fft %u is odd: Kaldi's mel banks (mel_scale kaldi) need an even FFT size, as "
             "Kaldi's MelBanks does: give --n-fft %s%u",
             n, lower, n + 1);
    return 1;
  }
  if (cfg->n_mels < 3) {
    snprintf(buf, len,
             "n_mels %u: Kaldi's mel banks (mel_scale kaldi) need 3 bands or more, as Kaldi's "
             "MelBanks does (\"Must have at least 3 mel bins\"): give --n-mels 3 or more",
             cfg->n_mels);
    return 1;
  }
  return 0;
}

void fzc_empty_bands_fix(const fc_mel_config *cfg, uint32_t n_fft_min, int refused, char *buf,
                         size_t len) {
  char mels[96] = "";
  if (cfg->mel_scale == FC_MEL_KALDI && n_fft_min % 2) { /* Kaldi's banks: an even size */
    fc_mel_config c = *cfg;
    for (c.n_fft = n_fft_min + 1; c.n_fft <= FC_MEL_MAX_N_FFT; c.n_fft += 2)
      if (!fc_mel_empty_bands(&c, NULL)) break;
    n_fft_min = c.n_fft <= FC_MEL_MAX_N_FFT ? c.n_fft : 0;
  }
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

const char *fzc_option_hint(const char *arg) {
  static char buf[192];
  /* reference spellings, lower case with '-' for '_': featurize's option, or the config key of a
   * parameter that has none */
  static const char *const names[][2] = {{"sample-rate", "--sr"},
                                         {"sampling-rate", "--sr"},
                                         {"sample-frequency", "--sr"},
                                         {"samplerate", "--sr"},
                                         {"rate", "--sr"},
                                         {"n-fft", "--n-fft"},
                                         {"nfft", "--n-fft"},
                                         {"fft-size", "--n-fft"},
                                         {"filter-length", "--n-fft"},
                                         {"win-length", "--win"},
                                         {"win-size", "--win"},
                                         {"window-length", "--win"},
                                         {"window-size", "--win"},
                                         {"hop-length", "--hop"},
                                         {"hop-size", "--hop"},
                                         {"n-mels", "--n-mels"},
                                         {"num-mels", "--n-mels"},
                                         {"num-mel-bins", "--n-mels"},
                                         {"n-mel-channels", "--n-mels"},
                                         {"nmels", "--n-mels"},
                                         {"f-min", "--fmin"},
                                         {"mel-fmin", "--fmin"},
                                         {"low-freq", "--fmin"},
                                         {"f-max", "--fmax"},
                                         {"mel-fmax", "--fmax"},
                                         {"high-freq", "--fmax"},
                                         {"pad-mode", "--pad-mode"},
                                         {"snip-edges", "--snip-edges"},
                                         {"mel-scale", "--mel-scale"},
                                         {"window", "window"},
                                         {"window-type", "window"},
                                         {"top-db", "--top-db"},
                                         {"log-floor", "log_floor"},
                                         {"amin", "log_floor"},
                                         {"preemph", "preemph"},
                                         {"preemphasis-coefficient", "preemph"},
                                         {"remove-dc", "remove_dc"},
                                         {"remove-dc-offset", "remove_dc"},
                                         {"mag-eps", "mag_eps"},
                                         {"int16-scale", "int16_scale"},
                                         {"drop-last-frame", "drop_last_frame"},
                                         {"window-align", "window_align"}};
  if (strncmp(arg, "--", 2) != 0) return NULL;
  char name[32];
  size_t n = 0;
  for (const char *p = arg + 2; *p && *p != '=' && n + 1 < sizeof name; p++)
    name[n++] = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
  name[n] = '\0';
  if (strcmp(name, "frame-length") == 0 || strcmp(name, "frame-shift") == 0) {
    int win = name[6] == 'l';
    snprintf(buf, sizeof buf,
             "featurize's is %s, in samples (Kaldi's --frame-%s=%s is %s %s at 16 kHz; the kaldi "
             "preset's frames follow --sr)",
             win ? "--win" : "--hop", win ? "length" : "shift", win ? "25" : "10",
             win ? "--win" : "--hop", win ? "400" : "160");
    return buf;
  }
  if (strcmp(name, "dither") == 0)
    return "featurize never dithers (Kaldi's --dither=0: features made with random noise could "
           "not be cached)";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strcmp(name, names[i][0]) != 0) continue;
    if (names[i][1][0] == '-')
      snprintf(buf, sizeof buf, "featurize's is %s", names[i][1]);
    else
      snprintf(buf, sizeof buf,
               "%s is the preset's, with no option (featcache-presets(7) says which parameters "
               "have one)",
               names[i][1]);
    return buf;
  }
  return NULL;
}

int fzc_pick(const char *opt, const char *s, const char *const *names, const int *values) {
  char list[160] = "";
  for (int i = 0; names[i]; i++) {
    if (strcmp(s, names[i]) == 0) return values[i];
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", names[i]);
  }
  fc_cli_usage_error("invalid value '%s' for --%s (want one of %s)", s, opt, list);
  return -1;
}

void fzc_build_config(const fzc_overrides *ov, fc_mel_config *cfg) {
  const char *name = ov->preset ? ov->preset : "hifigan";
  if (fc_mel_preset(name, cfg) != 0) {
    char list[128] = "";
    const char *const *p = fc_mel_preset_names();
    for (int i = 0; p[i]; i++) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", p[i]);
    }
    fc_cli_usage_error("unknown preset '%s' (want one of %s)", name, list);
  }
  char why[256]; /* the presets' own rules (pad follows n_fft, log floors): fc_config.h */
  int bad = fc_mel_config_override(cfg, &ov->v, ov->set, why, sizeof why) != 0;
  /* a band without an FFT bin is the log floor in every frame: a feature that carries nothing */
  uint32_t n_fft_min;
  uint32_t empty = fc_mel_empty_bands(cfg, &n_fft_min);
  /* an n_fft below the hop (hifigan's pad would be negative) that leaves bands empty too: the
   * smallest n_fft that fills every band is the fix for both when it is at least the hop */
  if (bad && !(empty && cfg->n_fft < cfg->hop_length && n_fft_min >= cfg->hop_length)) {
    char hint[160];
    fzc_config_hint(cfg, name, ov->set, ov->v.fmax, hint, sizeof hint);
    fc_cli_warn(NULL, "invalid configuration: %s%s", why, hint);
    exit(FC_EXIT_USAGE);
  }
  char kaldi[192];
  if (fzc_kaldi_banks_invalid(cfg, kaldi, sizeof kaldi)) {
    fc_cli_warn(NULL, "invalid configuration: %s", kaldi);
    exit(FC_EXIT_USAGE);
  }
  if (empty) {
    char fix[192];
    fzc_empty_bands_fix(cfg, n_fft_min, bad, fix, sizeof fix);
    fc_cli_warn(NULL,
                "invalid configuration: %u of %u mel bands hold no FFT bin at n_fft %u (empty "
                "filters): %s",
                empty, cfg->n_mels, cfg->n_fft, fix);
    exit(FC_EXIT_USAGE);
  }
}
