/* A series' statistics (fc_prof_series_stats): sum, mean, spread, quantiles and the
 * autocorrelation's strongest lag; the profiler (profiler.c) takes them of its phases. */
#include "featcache/fc_profiler.h"
#include "formats/common/alloc.h"
#include "formats/common/args.h"
#include "formats/common/quantile.h" /* numpy.percentile(..., method="linear") */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The autocorrelation is taken over the last ACF_WINDOW values of longer series (with an FFT of
 * twice that: 12 MiB of scratch at most); up to ACF_DIRECT values it is summed directly. */
#define ACF_WINDOW ((size_t)1 << 18)
#define ACF_DIRECT 512

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* In-place radix-2 FFT of (re, im), L a power of two; (wr, wi)[j] = e^(-2πij/L), j < L/2;
 * inv: the inverse, unscaled. */
static void fft(double *re, double *im, size_t L, const double *wr, const double *wi, int inv) {
  for (size_t i = 1, j = 0; i < L; i++) {
    size_t bit = L >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double t = re[i];
      re[i] = re[j];
      re[j] = t;
      t = im[i];
      im[i] = im[j];
      im[j] = t;
    }
  }
  for (size_t len = 2; len <= L; len <<= 1) {
    size_t half = len / 2, step = L / len;
    for (size_t i = 0; i < L; i += len)
      for (size_t k = 0; k < half; k++) {
        double tr = wr[k * step], ti = inv ? -wi[k * step] : wi[k * step];
        double *ar = &re[i + k], *ai = &im[i + k], *br = &re[i + k + half], *bi = &im[i + k + half];
        double xr = *br * tr - *bi * ti, xi = *br * ti + *bi * tr;
        *br = *ar - xr;
        *bi = *ai - xi;
        *ar += xr;
        *ai += xi;
      }
  }
}

/* The lag 1 <= k <= m/2 of the strongest r(k) of the last m = min(n, ACF_WINDOW) values, the
 * autocovariances from the FFT of the series zero-padded to L >= 2m (no wrap-around). */
static int acf_fft(const double *x, size_t n, fc_prof_stats *out) {
  const double *w = n > ACF_WINDOW ? x + (n - ACF_WINDOW) : x;
  size_t m = n > ACF_WINDOW ? ACF_WINDOW : n, L = 1;
  while (L < 2 * m) L <<= 1;
  double *re = fc_calloc(3 * L, sizeof *re);
  if (!re) return ENOMEM;
  double *im = re + L, *wr = im + L, *wi = wr + L / 2;
  double wm = 0, c0 = 0;
  for (size_t i = 0; i < m; i++) wm += w[i];
  wm /= (double)m;
  for (size_t i = 0; i < m; i++) {
    re[i] = w[i] - wm;
    c0 += re[i] * re[i];
  }
  if (c0 > 0 && c0 > 1e-24 * (double)m * (wm * wm + 1e-300)) {
    for (size_t j = 0; j < L / 2; j++) {
      wr[j] = cos(2 * M_PI * (double)j / (double)L);
      wi[j] = -sin(2 * M_PI * (double)j / (double)L);
    }
    fft(re, im, L, wr, wi, 0);
    for (size_t i = 0; i < L; i++) {
      re[i] = re[i] * re[i] + im[i] * im[i];
      im[i] = 0;
    }
    fft(re, im, L, wr, wi, 1);
    double best = -INFINITY;
    uint32_t lag = 0;
    for (size_t k = 1; k <= m / 2; k++) {
      double r = re[k] / (double)L / c0;
      if (r > best + 1e-12) {
        best = r;
        lag = (uint32_t)k;
      }
    }
    out->acf_lag = lag;
    out->acf_coef = lag ? best : 0;
  }
  free(re);
  return 0;
}

int fc_prof_series_stats(const double *x, size_t n, fc_prof_stats *out) {
  FC_ARGS(x || !n, out);
  memset(out, 0, sizeof *out);
  out->n = n;
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) /* a nan would break the sort's order, and mean nothing */
    if (!isfinite(x[i])) return FC_ECONFIG;
  double *s = fc_malloc(n * sizeof *s);
  if (!s) return ENOMEM;
  memcpy(s, x, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += x[i];
  double mean = sum / (double)n, ss = 0;
  for (size_t i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
  out->sum = sum;
  out->mean = mean;
  out->std = sqrt(ss / (double)n);
  out->min = s[0];
  out->max = s[n - 1];
  out->p50 = fc_quantile_sorted(s, n, 0.50);
  out->p95 = fc_quantile_sorted(s, n, 0.95);
  out->p99 = fc_quantile_sorted(s, n, 0.99);
  out->variation_ratio = mean != 0 ? out->std / fabs(mean) : 0;
  free(s);

  /* Autocorrelation: summed directly for short series, through an FFT for longer ones. */
  if (n > ACF_DIRECT) return acf_fft(x, n, out);
  const double *w = x;
  size_t m = n;
  double wm = 0;
  for (size_t i = 0; i < m; i++) wm += w[i];
  wm /= (double)m;
  double c0 = 0;
  for (size_t i = 0; i < m; i++) c0 += (w[i] - wm) * (w[i] - wm);
  if (m >= 2 && c0 > 0 && c0 > 1e-24 * (double)m * (wm * wm + 1e-300)) {
    double best = -INFINITY;
    uint32_t lag = 0;
    for (size_t k = 1; k <= m / 2; k++) {
      double c = 0;
      for (size_t t = 0; t + k < m; t++) c += (w[t] - wm) * (w[t + k] - wm);
      double r = c / c0;
      if (r > best + 1e-12) {
        best = r;
        lag = (uint32_t)k;
      }
    }
    out->acf_lag = lag;
    out->acf_coef = lag ? best : 0;
  }
  return 0;
}
