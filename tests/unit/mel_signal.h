/* Shared by the C tests that compare two mel backends (test_shared_math, test_cuda_parity). */
#ifndef FC_TESTS_MEL_SIGNAL_H
#define FC_TESTS_MEL_SIGNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "featcache/fc_config.h"

/* Deterministic test signal: a chirp, a tone and LCG noise, within [-0.9, 0.9]. Broadband like
 * speech: with pure tones alone, bins 100 dB below the frame's energy carry float32 FFT rounding
 * of ~1e-3 relative, and two FFT algorithms differ by that much. */
static inline void make_signal(float *x, size_t n, uint32_t seed, double sr) {
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    double noise = ((double)(s >> 8) / 16777216.0 - 0.5) * 0.4;
    double t = (double)i / sr;
    x[i] = (float)(0.4 * sin(2 * M_PI * (100.0 + 2000.0 * t) * t) +
                   0.2 * sin(2 * M_PI * 440.0 * t) + noise);
  }
}

/* An output value back in the linear (power or magnitude) domain. */
static inline double to_linear(const fc_mel_config *c, float y) {
  switch (c->log) {
  case FC_LOG_LN: return exp((double)y);
  case FC_LOG_LOG10: return pow(10.0, (double)y);
  case FC_LOG_DB: return pow(10.0, (double)y / 10.0);
  case FC_LOG_WHISPER: return pow(10.0, 4.0 * (double)y - 4.0);
  default: return fabs((double)y);
  }
}

#endif
