/* Step profiler: self times with nesting (no double counting), statistics on known series, the
 * periodicity estimator, verdict bands, error states, the Chrome trace (parsed back with jansson)
 * and the overhead of a begin/end pair with the real clock (printed, loosely bounded). */
#include "featcache/fc_profiler.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/check.h"

#define NEAR(got, want, tol)                                                                    \
  do {                                                                                          \
    double g_ = (got), w_ = (want);                                                             \
    if (!(fabs(g_ - w_) <= (tol))) {                                                            \
      fprintf(stderr, "%s:%d: %s = %.12g, expected %.12g\n", __FILE__, __LINE__, #got, g_, w_); \
      failures++;                                                                               \
    }                                                                                           \
  } while (0)

/* A fake clock the test moves by hand (ns). */
static int64_t fake_now;
static int64_t fake_clock(void *ctx) {
  (void)ctx;
  return fake_now;
}
static void at_ms(double ms) { fake_now = (int64_t)llround(ms * 1e6); }

static int index_of(fc_profiler *p, const char *name) {
  for (int i = 0; i < fc_profiler_num_phases(p); i++)
    if (strcmp(fc_profiler_phase_name(p, i), name) == 0) return i;
  return -100;
}

static void test_nesting(void) {
  fc_profiler *p;
  CHECK(fc_profiler_create(FC_PROF_TRACE, NULL, &p) == 0);
  fc_profiler_set_clock(p, fake_clock, NULL);
  for (int step = 0; step < 2; step++) {
    double b = step * 100.0;
    at_ms(b + 0);
    CHECK(fc_profiler_step_begin(p) == 0);
    at_ms(b + 1);
    CHECK(fc_profiler_phase_begin(p, "compute") == 0);
    at_ms(b + 2);
    CHECK(fc_profiler_phase_begin(p, "forward") == 0);
    at_ms(b + 5);
    CHECK(fc_profiler_phase_end(p) == 0);
    CHECK(fc_profiler_phase_begin(p, "backward") == 0);
    at_ms(b + 9);
    CHECK(fc_profiler_phase_end(p) == 0);
    at_ms(b + 10);
    CHECK(fc_profiler_phase_end(p) == 0); /* compute: 9 wall, 7 in children → 2 self */
    CHECK(fc_profiler_phase_begin(p, "data") == 0);
    at_ms(b + 12);
    CHECK(fc_profiler_phase_end(p) == 0);
    if (step == 1) { /* a second visit to data in the same step adds up */
      CHECK(fc_profiler_phase_begin(p, "data") == 0);
      at_ms(b + 12.5);
      CHECK(fc_profiler_phase_end(p) == 0);
    }
    at_ms(b + 13);
    CHECK(fc_profiler_step_end(p) == 0);
  }
  CHECK(fc_profiler_steps(p) == 2);
  const double *compute = fc_profiler_series(p, index_of(p, "compute"));
  const double *fwd = fc_profiler_series(p, index_of(p, "forward"));
  const double *bwd = fc_profiler_series(p, index_of(p, "backward"));
  const double *data = fc_profiler_series(p, index_of(p, "data"));
  const double *other = fc_profiler_series(p, -2), *step = fc_profiler_series(p, -1);
  CHECK(compute && fwd && bwd && data && other && step);
  if (!(compute && fwd && bwd && data && other && step)) return;
  NEAR(compute[0], 2, 1e-9);
  NEAR(fwd[0], 3, 1e-9);
  NEAR(bwd[0], 4, 1e-9);
  NEAR(data[0], 2, 1e-9);
  NEAR(data[1], 2.5, 1e-9);
  NEAR(step[0], 13, 1e-9);
  NEAR(other[0], 2, 1e-9); /* 0..1 and 12..13 */
  NEAR(other[1], 1.5, 1e-9);
  /* phases + other = step, exactly: nothing counted twice, nothing lost */
  for (int k = 0; k < 2; k++)
    NEAR(compute[k] + fwd[k] + bwd[k] + data[k] + other[k], step[k], 1e-9);
  double share;
  fc_prof_stats st;
  CHECK(fc_profiler_stats(p, index_of(p, "data"), &st, &share) == 0);
  NEAR(share, 4.5 / 26, 1e-12);
  NEAR(st.mean, 2.25, 1e-12);

  /* the trace: valid JSON, every step and every phase occurrence, nested inside its step */
  long n = fc_profiler_report(p, FC_PROF_TRACE_JSON, NULL, 0);
  CHECK(n > 0);
  char *buf = malloc((size_t)n + 1);
  CHECK(fc_profiler_report(p, FC_PROF_TRACE_JSON, buf, (size_t)n + 1) == n);
  json_error_t jerr;
  json_t *root = json_loads(buf, 0, &jerr);
  CHECK(root != NULL);
  if (!root) fprintf(stderr, "trace JSON: %s at line %d\n%s\n", jerr.text, jerr.line, buf);
  json_t *evs = json_object_get(root, "traceEvents");
  CHECK(json_is_array(evs));
  int steps_seen[2] = {0, 0}, phases = 0;
  size_t i;
  json_t *e;
  json_array_foreach(evs, i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    if (!ph || strcmp(ph, "X") != 0) continue;
    const char *name = json_string_value(json_object_get(e, "name"));
    json_int_t k = json_integer_value(json_object_get(json_object_get(e, "args"), "step"));
    double ts = json_number_value(json_object_get(e, "ts"));
    double dur = json_number_value(json_object_get(e, "dur"));
    CHECK(k >= 0 && k < 2);
    if (strcmp(name, "step") == 0) {
      steps_seen[k]++;
      NEAR(ts, k * 100e3, 1e-6);
      NEAR(dur, 13e3, 1e-6);
    } else {
      phases++;
      CHECK(ts >= k * 100e3 && ts + dur <= k * 100e3 + 13e3 + 1e-6);
    }
  }
  CHECK(steps_seen[0] == 1 && steps_seen[1] == 1);
  CHECK(phases == 9); /* 4 + 5 */
  json_decref(root);
  free(buf);

  /* the JSON report parses and carries the phases */
  n = fc_profiler_report(p, FC_PROF_JSON, NULL, 0);
  buf = malloc((size_t)n + 1);
  fc_profiler_report(p, FC_PROF_JSON, buf, (size_t)n + 1);
  root = json_loads(buf, 0, &jerr);
  CHECK(root != NULL);
  CHECK(json_integer_value(json_object_get(root, "steps")) == 2);
  NEAR(json_number_value(json_object_get(root, "data_share")), 4.5 / 26, 1e-8);
  json_t *fw = json_object_get(json_object_get(root, "phases"), "forward");
  NEAR(json_number_value(json_object_get(fw, "mean")), 3, 1e-9);
  CHECK(strcmp(json_string_value(json_object_get(root, "verdict")), "moderately input-bound") == 0);
  json_decref(root);
  free(buf);
  fc_profiler_free(p);
}

static void test_errors(void) {
  fc_profiler *p;
  CHECK(fc_profiler_create(0, "", &p) == FC_ECONFIG);
  CHECK(fc_profiler_create(0, "load", &p) == 0);
  CHECK(fc_profiler_phase_begin(p, "data") == FC_EBADSTATE); /* no open step */
  CHECK(fc_profiler_step_end(p) == FC_EBADSTATE);
  CHECK(fc_profiler_step_begin(p) == 0);
  CHECK(fc_profiler_step_begin(p) == FC_EBADSTATE);
  CHECK(fc_profiler_phase_end(p) == FC_EBADSTATE);
  CHECK(fc_profiler_phase_begin(p, "") == FC_ECONFIG);
  char longname[80];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  CHECK(fc_profiler_phase_begin(p, longname) == FC_ECONFIG);
  CHECK(fc_profiler_phase_begin(p, "load") == 0);
  CHECK(fc_profiler_step_end(p) == FC_EBADSTATE); /* a phase is still open */
  CHECK(fc_profiler_phase_end(p) == 0);
  CHECK(fc_profiler_phase_add(p, "h2d", -1) == FC_ECONFIG);
  CHECK(fc_profiler_phase_add(p, "h2d", 0.25) == 0);
  CHECK(fc_profiler_step_end(p) == 0);
  CHECK(fc_profiler_series(p, index_of(p, "h2d"))[0] == 0.25);
  CHECK(fc_profiler_series(p, 7) == NULL);
  /* the data phase is the one named at create */
  double share;
  char v[64];
  fc_profiler_verdict(p, &share, v, sizeof v);
  CHECK(share > 0);
  fc_profiler_reset(p);
  CHECK(fc_profiler_steps(p) == 0);
  fc_profiler_free(p);
}

static void test_stats(void) {
  /* 1..10: mean 5.5, population std sqrt(8.25), numpy percentiles (linear) */
  double x[10];
  for (int i = 0; i < 10; i++) x[i] = i + 1;
  fc_prof_stats s;
  CHECK(fc_prof_series_stats(x, 10, &s) == 0);
  NEAR(s.mean, 5.5, 1e-12);
  NEAR(s.std, sqrt(8.25), 1e-12);
  NEAR(s.min, 1, 0);
  NEAR(s.max, 10, 0);
  NEAR(s.p50, 5.5, 1e-12);
  NEAR(s.p95, 9.55, 1e-12);
  NEAR(s.p99, 9.91, 1e-12);
  NEAR(s.variation_ratio, sqrt(8.25) / 5.5, 1e-12);
  /* empty, single and constant series */
  CHECK(fc_prof_series_stats(NULL, 0, &s) == 0 && s.n == 0 && s.acf_lag == 0);
  double one = 3;
  CHECK(fc_prof_series_stats(&one, 1, &s) == 0);
  NEAR(s.p99, 3, 0);
  CHECK(s.acf_lag == 0 && s.std == 0);
  double c[6] = {2, 2, 2, 2, 2, 2};
  CHECK(fc_prof_series_stats(c, 6, &s) == 0 && s.acf_lag == 0 && s.acf_coef == 0);

  /* periodic: 7 quick steps then one slow one (a prefetch queue running dry), 8 periods:
   * the strongest lag is the period, r(p) = 1 - p/n exactly */
  double per[64];
  for (int i = 0; i < 64; i++) per[i] = i % 8 == 7 ? 40 : 1;
  CHECK(fc_prof_series_stats(per, 64, &s) == 0);
  CHECK(s.acf_lag == 8);
  NEAR(s.acf_coef, 1 - 8.0 / 64, 1e-12);
  /* alternating: lag 2, r = 1 - 2/n */
  double alt[50];
  for (int i = 0; i < 50; i++) alt[i] = i % 2 ? 5 : 1;
  CHECK(fc_prof_series_stats(alt, 50, &s) == 0);
  CHECK(s.acf_lag == 2);
  NEAR(s.acf_coef, 1 - 2.0 / 50, 1e-12);
}

/* A cancelled step records nothing, not even the names of phases it alone ran: a peek at one batch
 * of an iterate() let go left a "data" phase of zeros behind, and a loop whose data phase is
 * another ran to "not input-bound (data share 0.0 %)" where it has no data phase. */
static void test_cancel_records_no_phase(void) {
  fc_profiler *p;
  char v[64];
  double share;
  CHECK(fc_profiler_create(0, NULL, &p) == 0);
  CHECK(fc_profiler_step_begin(p) == 0);
  CHECK(fc_profiler_phase_begin(p, "data") == 0 && fc_profiler_phase_end(p) == 0);
  CHECK(fc_profiler_device_add(p, "compute", 1.5) == 0);
  CHECK(fc_profiler_step_cancel(p) == 0);
  CHECK(fc_profiler_num_phases(p) == 0, "%d", fc_profiler_num_phases(p));
  CHECK(fc_profiler_num_device(p) == 0, "%d", fc_profiler_num_device(p));
  CHECK(fc_profiler_step_begin(p) == 0);
  CHECK(fc_profiler_phase_begin(p, "load") == 0 && fc_profiler_phase_end(p) == 0);
  CHECK(fc_profiler_step_end(p) == 0);
  fc_profiler_verdict(p, &share, v, sizeof v);
  CHECK(strcmp(v, "no data phase") == 0, "%s", v);
  /* a phase an earlier recorded step ran stays, with its series */
  CHECK(fc_profiler_step_begin(p) == 0);
  CHECK(fc_profiler_phase_begin(p, "data") == 0 && fc_profiler_phase_end(p) == 0);
  CHECK(fc_profiler_phase_begin(p, "load") == 0 && fc_profiler_phase_end(p) == 0);
  CHECK(fc_profiler_step_cancel(p) == 0);
  CHECK(fc_profiler_num_phases(p) == 1 && index_of(p, "load") == 0);
  CHECK(fc_profiler_steps(p) == 1);
  fc_profiler_free(p);
}

static void test_verdict(void) {
  char v[64];
  CHECK(fc_prof_verdict(0.0, 0, v, sizeof v) == 0 && strcmp(v, "not input-bound") == 0);
  CHECK(fc_prof_verdict(0.0499, 0.9, v, sizeof v) == 0 && strcmp(v, "not input-bound") == 0);
  CHECK(fc_prof_verdict(0.05, 0.1, v, sizeof v) == 1 && strcmp(v, "moderately input-bound") == 0);
  CHECK(fc_prof_verdict(0.20, 0.5, v, sizeof v) == 1 && strcmp(v, "moderately input-bound") == 0);
  CHECK(fc_prof_verdict(0.12, 0.51, v, sizeof v) == 1 &&
        strcmp(v, "moderately input-bound, unstable") == 0);
  CHECK(fc_prof_verdict(0.2001, 0, v, sizeof v) == 2 && strcmp(v, "highly input-bound") == 0);
  CHECK(fc_prof_verdict(0.9, 2, v, sizeof v) == 2 &&
        strcmp(v, "highly input-bound, unstable") == 0);
  /* no share to judge: not "highly input-bound" (NaN fails every comparison) */
  CHECK(fc_prof_verdict(NAN, 0, v, sizeof v) == FC_ECONFIG &&
            strcmp(v, "no verdict: data share nan is not a number >= 0") == 0,
        "%s", v);
  CHECK(fc_prof_verdict(-0.1, 0, v, sizeof v) == FC_ECONFIG && strstr(v, "-0.1 is not"), "%s", v);
  CHECK(fc_prof_verdict(INFINITY, 0, v, sizeof v) == FC_ECONFIG, "%s", v);
}

/* ns per phase begin/end pair with the real clock; printed for docs, bound only loosely (this is
 * not a timed test: sanitizer builds and a loaded machine are slower). */
static void test_overhead(void) {
  fc_profiler *p;
  CHECK(fc_profiler_create(0, NULL, &p) == 0);
  enum { STEPS = 2000, PAIRS = 50 };
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int s = 0; s < STEPS; s++) {
    fc_profiler_step_begin(p);
    for (int k = 0; k < PAIRS; k++) {
      fc_profiler_phase_begin(p, k & 1 ? "compute" : "data");
      fc_profiler_phase_end(p);
    }
    fc_profiler_step_end(p);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (STEPS * (PAIRS + 1.0));
  printf("overhead: %.1f ns per begin/end pair (%d steps x %d phases)\n", ns, STEPS, PAIRS);
  CHECK(ns < 20000);
  CHECK(fc_profiler_steps(p) == STEPS);
  fc_profiler_free(p);
}

int main(void) {
  test_nesting();
  test_errors();
  test_stats();
  test_verdict();
  test_cancel_records_no_phase();
  test_overhead();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
