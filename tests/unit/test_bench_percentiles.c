/* cache-bench's latency percentiles and loader-bench's (the profiler's) are one method: numpy's
 * linear interpolation (formats/common/quantile.h). cache-bench took nearest-rank ones, so that
 * the p99 of one series read 10 ms in cache-bench and 9.91 ms in loader-bench, and its page said
 * neither. A known small sample, its numpy values, and both tools' code on it. */
#include "cmd/cache-bench/bench_int.h"
#include "featcache/fc_profiler.h"

#include <math.h>
#include <stdio.h>

#include "tests/check.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(b) + 1); }

int main(void) {
  /* 1..10 ms in seconds, out of order, with records not read (-1: a pass cut short) among them:
   * numpy.percentile([1..10], [50, 95, 99]) = 5.5, 9.55, 9.91 (nearest rank: 5, 10, 10) */
  double v[] = {0.007, -1, 0.002, 0.010, 0.001, 0.005, -1, 0.009, 0.003, 0.006, 0.008, 0.004};
  size_t n = sizeof v / sizeof v[0];
  double ms[10];
  for (size_t i = 0, k = 0; i < n; i++)
    if (v[i] >= 0) ms[k++] = v[i] * 1e3;
  bench_latency l;
  bench_percentiles(v, n, &l);
  CHECK(near(l.p50, 5.5), "p50 %.9g, want 5.5", l.p50);
  CHECK(near(l.p95, 9.55), "p95 %.9g, want 9.55", l.p95);
  CHECK(near(l.p99, 9.91), "p99 %.9g, want 9.91", l.p99);
  CHECK(near(l.max, 10), "max %.9g, want 10", l.max);
  /* loader-bench's figures (fc_profiler_stats) are fc_prof_series_stats of the phase's series */
  fc_prof_stats st;
  CHECK(fc_prof_series_stats(ms, 10, &st) == 0);
  CHECK(near(st.p50, l.p50) && near(st.p95, l.p95) && near(st.p99, l.p99) && near(st.max, l.max),
        "loader-bench %.9g %.9g %.9g %.9g, cache-bench %.9g %.9g %.9g %.9g", st.p50, st.p95, st.p99,
        st.max, l.p50, l.p95, l.p99, l.max);

  /* one value: every percentile is it; two: interpolated between them (numpy: 1.5, 1.95, 1.99) */
  double one[] = {0.004}, two[] = {0.002, 0.001};
  bench_percentiles(one, 1, &l);
  CHECK(l.p50 == 4 && l.p95 == 4 && l.p99 == 4 && l.max == 4, "%g %g %g %g", l.p50, l.p95, l.p99,
        l.max);
  bench_percentiles(two, 2, &l);
  CHECK(near(l.p50, 1.5) && near(l.p95, 1.95) && near(l.p99, 1.99) && near(l.max, 2), "%g %g %g %g",
        l.p50, l.p95, l.p99, l.max);
  /* none read: zeros */
  double none[] = {-1, -1};
  bench_percentiles(none, 2, &l);
  CHECK(l.p50 == 0 && l.p95 == 0 && l.p99 == 0 && l.max == 0);
  return fc_check_result("test_bench_percentiles");
}
