/* The profiler's GPU parts: device series beside the phases (not in the sums), GPU utilization
 * samples and the run's label in the JSON profile, the NVML sampler and the CUDA-event timer —
 * which on a machine without the NVIDIA driver / CUDA runtime must fail cleanly with FC_ENODEVICE
 * and say why, and on one with them must sample percentages and time. Steps are driven by a fake clock, so every number is exact. */
#include "featcache/fc_profiler.h"
#include "libcache/core/profile/gpu_timer.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"

static int64_t fake_now;
static int64_t fake_clock(void *ctx) {
  (void)ctx;
  return fake_now;
}

static double num(json_t *o, const char *path) {
  /* "a.b.c" */
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  json_t *v = o;
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
    v = json_object_get(v, k);
  CHECK(v && json_is_number(v), "%s missing", path);
  return v ? json_number_value(v) : NAN;
}

int main(void) {
  fc_profiler *p;
  CHECK(fc_profiler_create(0, "data", &p) == 0);
  fc_profiler_set_clock(p, fake_clock, NULL);
  CHECK(fc_profiler_device_add(p, "compute", 1) == FC_EBADSTATE, "device_add outside a step");
  CHECK(fc_profiler_set_info(p, "featcache, device=cuda", 32) == 0);
  /* 4 steps of 10 ms: data 1 ms, compute 9 ms (host), GPU compute 8 ms (+1 ms added twice in
   * the last step) */
  for (int k = 0; k < 4; k++) {
    fake_now = k * 10000000LL;
    fc_profiler_step_begin(p);
    fc_profiler_phase_begin(p, "data");
    fake_now += 1000000;
    fc_profiler_phase_end(p);
    fc_profiler_phase_begin(p, "compute");
    fake_now += 9000000;
    fc_profiler_phase_end(p);
    CHECK(fc_profiler_device_add(p, "compute", 8.0) == 0);
    if (k == 3) CHECK(fc_profiler_device_add(p, "compute", 1.0) == 0);
    CHECK(fc_profiler_device_add(p, "bad", -1) == FC_ECONFIG, "negative device time");
    fc_profiler_step_end(p);
  }
  CHECK(fc_profiler_num_device(p) == 1 && strcmp(fc_profiler_device_name(p, 0), "compute") == 0);
  const double *ds = fc_profiler_device_series(p, 0);
  CHECK(ds[0] == 8 && ds[3] == 9, "device series %g %g", ds[0], ds[3]);
  fc_prof_stats st;
  double share;
  fc_profiler_stats(p, -2, &st, &share);
  CHECK(st.sum == 0, "device time is not in the phase sums: other %g", st.sum);

  /* not sampled → the JSON says so; samples → their statistics */
  char *buf = malloc(1 << 16);
  CHECK(fc_profiler_report(p, FC_PROF_JSON, buf, 1 << 16) > 0);
  json_error_t je;
  json_t *j = json_loads(buf, 0, &je);
  CHECK(j != NULL, "JSON: %s", je.text);
  CHECK(json_is_false(json_object_get(json_object_get(j, "gpu_busy"), "measured")));
  CHECK(strcmp(json_string_value(json_object_get(j, "label")), "featcache, device=cuda") == 0);
  CHECK(strcmp(json_string_value(json_object_get(j, "format")), "featcache-profile/1") == 0);
  CHECK(fabs(num(j, "steps_per_s") - 100) < 1e-9, "steps/s %g", num(j, "steps_per_s"));
  CHECK(fabs(num(j, "items_per_s") - 3200) < 1e-6, "items/s %g", num(j, "items_per_s"));
  CHECK(fabs(num(j, "device_phases.compute.mean") - 8.25) < 1e-12, "device mean");
  CHECK(fabs(num(j, "device_phases.compute.share") - 33.0 / 40) < 1e-12, "device share");
  CHECK(fabs(num(j, "data_share") - 0.1) < 1e-12, "data share %g", num(j, "data_share"));
  json_decref(j);

  fc_profiler_set_gpu_busy(p, NULL, 0, 0, "NVML not available: test");
  fc_profiler_report(p, FC_PROF_TABLE, buf, 1 << 16);
  CHECK(strstr(buf, "gpu busy: not measured (NVML not available: test)\n") != NULL, "%s", buf);
  CHECK(strstr(buf, "compute [device]") != NULL, "device row: %s", buf);
  const double pct[] = {90, 80, 100, 70};
  fc_profiler_set_gpu_busy(p, pct, 4, 50, "NVML GPU 0");
  fc_profiler_report(p, FC_PROF_JSON, buf, 1 << 16);
  j = json_loads(buf, 0, &je);
  CHECK(json_is_true(json_object_get(json_object_get(j, "gpu_busy"), "measured")));
  CHECK(num(j, "gpu_busy.pct.mean") == 85 && num(j, "gpu_busy.pct.p50") == 85 &&
            num(j, "gpu_busy.period_ms") == 50,
        "gpu busy stats");
  json_decref(j);
  fc_profiler_report(p, FC_PROF_TABLE, buf, 1 << 16);
  CHECK(
      strstr(buf,
             "gpu busy: mean 85.0 %, p50 85.0 %, min 70.0 % (4 samples every 50 ms; NVML GPU 0)") !=
          NULL,
      "%s", buf);
  free(buf);
  fc_profiler_free(p);

  /* the NVML sampler: absent → FC_ENODEVICE with the reason; present → percentages */
  fc_gpu_sampler *s = NULL;
  char why[512] = "";
  CHECK(fc_gpu_sampler_start(0, 0.5, &s, why, sizeof why) == FC_ECONFIG, "period checked");
  int rc = fc_gpu_sampler_start(0, 5, &s, why, sizeof why);
  if (rc == FC_ENODEVICE) {
    CHECK(s == NULL && (strstr(why, "NVML") != NULL), "why: %s", why);
    printf("NVML sampler: not available here, as expected without a driver (%s)\n", why);
  } else {
    CHECK(rc == 0, "start: %s", why);
    usleep(60000);
    fc_gpu_sampler_stop(s);
    const double *v;
    size_t n = fc_gpu_sampler_samples(s, &v);
    CHECK(n >= 3, "%zu samples in 60 ms at 5 ms", n);
    for (size_t i = 0; i < n; i++) CHECK(v[i] >= 0 && v[i] <= 100, "sample %g", v[i]);
    fc_gpu_sampler_free(s);
  }
  /* the CUDA-event timer: no runtime or no device → FC_ENODEVICE with the reason; with a GPU, a
   * stretch of nothing on the default stream takes between 0 and a second */
  fc_gpu_timer *t = NULL;
  rc = gpu_timer_create(&t, why, sizeof why);
  if (rc == FC_ENODEVICE) {
    CHECK(t == NULL && (strstr(why, "CUDA runtime") || strstr(why, "no CUDA device")), "why: %s",
          why);
    printf("CUDA-event timer: not available here (%s)\n", why);
  } else {
    CHECK(rc == 0, "timer: %s", why);
    double ms = -1;
    CHECK(gpu_timer_stop(t, NULL, &ms) == FC_EBADSTATE, "stop without start");
    CHECK(gpu_timer_start(t, NULL) == 0 && gpu_timer_stop(t, NULL, &ms) == 0);
    CHECK(ms >= 0 && ms < 1000, "elapsed %g ms", ms);
    gpu_timer_free(t);
  }
  return fc_check_result("test_profiler_gpu");
}
