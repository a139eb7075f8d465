/* Internal: the one quantile method of every figure the tools print (p50, p95, p99): numpy's
 * default, numpy.percentile(..., method="linear"): the value at position q x (n - 1) of the sorted
 * series, interpolated linearly between the two closest ranks. The profiler (loader-bench's
 * figures, StepProfiler) and cache-bench's latencies both take it, so that their p99 of one
 * series agree. Inline, so that every component and a tool's engine have it without an export. */
#ifndef FC_QUANTILE_H
#define FC_QUANTILE_H

#include <stddef.h>

/* The q-quantile (0 <= q <= 1) of s[0..n), sorted ascending; 0 when n is 0. */
static inline double fc_quantile_sorted(const double *s, size_t n, double q) {
  if (n == 0) return 0;
  const double pos = q * (double)(n - 1);
  const size_t lo = (size_t)pos; /* floor: pos >= 0 */
  if (lo + 1 >= n) return s[n - 1];
  return s[lo] + (s[lo + 1] - s[lo]) * (pos - (double)lo);
}

#endif
