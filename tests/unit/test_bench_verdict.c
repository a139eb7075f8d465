/* cache-bench's verdict on a pass of known numbers. A store too slow for its step says the
 * shortest step that keeps up; printed to 0.1 ms, it must be one that does: rounded to nearest,
 * a rate whose shortest step is 80.04 ms said "steps of 80.0 ms or more keep up", and at a step
 * of 80.0 ms the same rate is too slow. It is rounded up now; and the rate of a store too slow is
 * rounded down, never printed equal to the rate needed. */
#include "cmd/cache-bench/bench.h"

#include <string.h>

#include "tests/check.h"

int main(void) {
  bench_device dev;
  memset(&dev, 0, sizeof dev);
  snprintf(dev.kind, sizeof dev.kind, "block");
  snprintf(dev.disk, sizeof dev.disk, "sdz");
  snprintf(dev.fs_type, sizeof dev.fs_type, "ext4");
  dev.rotational = 1;
  dev.read_ahead_kb = -1;
  bench_result pass;
  memset(&pass, 0, sizeof pass);
  pass.pattern = BENCH_RANDOM;
  pass.state = BENCH_COLD;
  pass.threads = 1;
  pass.batch = 32;
  pass.cold_verified = 1;
  pass.batches = 100; /* a pass that read records: one that read none is no measurement */
  pass.records = 100 * 32;
  pass.records_per_s = 32 * 1000.0 / 80.04; /* 12.4938 batches/s of 32: a step of 80.04 ms */
  bench_report r;
  memset(&r, 0, sizeof r);
  r.store = "s";
  r.device = &dev;
  r.records = 1000;
  r.payload_bytes = 1000 * 160000ull;
  r.file_bytes = r.payload_bytes;
  r.passes = &pass;
  r.n_passes = 1;
  r.gpus = 1;
  r.probe_note = "--no-probe";
  char v[4096];
  bench_verdict(&r, 50, 32, 1ull << 40, v, sizeof v);
  CHECK(strstr(v, "where 20.0/s are needed (steps of 80.1 ms or more keep up)") != NULL, "%s", v);
  /* at a step of 80 ms it is too slow, and the rate said is below the rate needed: rounded to
   * nearest it was "delivers 12.5 batches/s ... where 12.5/s are needed" */
  bench_verdict(&r, 80, 32, 1ull << 40, v, sizeof v);
  CHECK(strstr(v,
               "is too slow for 1 GPU at a 80 ms step: it delivers 12.4 batches/s of 32 (random "
               "order, cold, 1 thread) where 12.5/s are needed (steps of 80.1 ms or more") != NULL,
        "%s", v);
  /* and at that step it keeps up */
  bench_verdict(&r, 80.1, 32, 1ull << 40, v, sizeof v);
  CHECK(strstr(v, "verdict: s keeps up with 1 GPU at a 80.1 ms step") != NULL, "%s", v);
  /* a rate whose step is a whole tenth says it as it is */
  pass.records_per_s = 32 * 1000.0 / 80.0;
  bench_verdict(&r, 50, 32, 1ull << 40, v, sizeof v);
  CHECK(strstr(v, "(steps of 80.0 ms or more keep up)") != NULL, "%s", v);
  return fc_check_result("test_bench_verdict");
}
