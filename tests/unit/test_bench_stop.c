/* cache-bench's warm pass first reads the whole data.mdb into the page cache: minutes for a store
 * of hundreds of GB, during which an interrupt (the pass's should_stop) was not looked at, so the
 * first Ctrl-C said "stopping" and nothing stopped. Prewarming polls it between reads now, and a
 * pass asked to stop before it read a record returns at once with stopped = 3 (a signal). */
#include "cmd/cache-bench/bench.h"
#include "featcache/fc_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"

#define RECORDS 48
#define VALUE (256 * 1024) /* 12 MiB of values: three of prewarming's 4 MiB reads */

static int stop_calls;
static int stop_now(void *ctx) {
  (void)ctx;
  stop_calls++;
  return 1;
}

int main(void) {
  char dir[] = "/tmp/fc-test-bench-stop.XXXXXX", path[600];
  if (!mkdtemp(dir)) return 1;
  snprintf(path, sizeof path, "%s/s", dir);
  fc_store *s;
  CHECK(fc_store_open(path, FC_STORE_CREATE, &s) == 0, "create %s", path);
  uint8_t *val = calloc(1, VALUE);
  fc_put puts[RECORDS];
  uint8_t keys[RECORDS][16];
  for (int i = 0; i < RECORDS; i++) {
    memset(keys[i], 0, 16);
    keys[i][0] = (uint8_t)i;
    puts[i] = (fc_put){FC_DB_FEAT, keys[i], 16, val, VALUE, 0};
  }
  CHECK(val && fc_store_write(s, puts, RECORDS) == 0);
  fc_store_close(s);
  free(val);

  fc_bench *b;
  CHECK(bench_open(path, 0, &b) == 0 && bench_records(b) == RECORDS);
  double res_cold = 1, res_warm = 0, res = 1;
  CHECK(bench_evict(b, &res_cold) == 0);
  int tmpfs = !strcmp(bench_device_info(b)->kind, "tmpfs"); /* nothing leaves RAM there */
  /* asked to stop at once: nothing is read */
  CHECK(bench_prewarm(b, &res, stop_now, NULL) == 0 && stop_calls >= 1);
  CHECK(tmpfs || res <= res_cold + 0.05, "stopped prewarm: %.3f resident (evicted: %.3f)", res,
        res_cold);
  CHECK(bench_prewarm(b, &res_warm, NULL, NULL) == 0 && res_warm > 0.95, "prewarm: %.3f", res_warm);
  /* a warm pass asked to stop before it starts: no record read, stopped by the signal */
  bench_params p;
  bench_params_init(&p);
  p.state = BENCH_WARM;
  p.should_stop = stop_now;
  bench_result r;
  CHECK(bench_run(b, &p, &r) == 0 && r.records == 0 && r.stopped == 3, "records %llu stopped %d",
        (unsigned long long)r.records, r.stopped);
  bench_close(b);

  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  CHECK(system(path) == 0);
  return fc_check_result("test_bench_stop");
}
