/* loader-bench's sweep recommendation (the smallest resources under the data-share limit: fewest
 * workers, then the smallest prefetch, then the smallest batch) and the synthetic source's known
 * cost through the real training loop. */
#include "cmd/loader-bench/loaderbench.h"

#include <stdio.h>
#include <string.h>

#include "tests/check.h"

static void test_recommend(void) {
  /* a grid where the data share falls with workers and prefetch and rises with batch */
  lb_cell cells[18];
  size_t n = 0;
  const uint32_t batches[] = {16, 32, 64}, workers[] = {1, 2, 4}, prefetch[] = {1, 4};
  for (int b = 0; b < 3; b++)
    for (int w = 0; w < 3; w++)
      for (int p = 0; p < 2; p++) {
        double share = 0.02 * batches[b] / (workers[w] * (p ? 2.0 : 1.0));
        cells[n++] = (lb_cell){batches[b], workers[w], prefetch[p], share, 0, 0};
      }
  /* share = 0.02 batch / (workers x (prefetch 4 ? 2 : 1)): the only cell under 5 % is batch 16,
   * workers 4, prefetch 4 (0.04); batch 32 there is 0.08 */
  int r = lb_recommend(cells, n, 0.05);
  CHECK(r >= 0 && cells[r].workers == 4 && cells[r].prefetch == 4 && cells[r].batch == 16);
  /* fewer workers win over a smaller prefetch and a smaller batch */
  lb_cell c2[] = {{16, 4, 1, 0.01, 0, 0},
                  {64, 2, 8, 0.049, 0, 0},
                  {32, 2, 8, 0.03, 0, 0},
                  {16, 2, 8, 0.05, 0, 0},
                  {8, 3, 1, 0.0, 0, 0}};
  r = lb_recommend(c2, 5, 0.05);
  CHECK(r == 2); /* workers 2, prefetch 8, batch 32 (batch 16 is at 5 %, not under) */
  lb_cell c3[] = {{16, 1, 1, 0.5, 0, 0}, {16, 2, 1, 0.06, 0, 0}};
  CHECK(lb_recommend(c3, 2, 0.05) == -1);
  CHECK(lb_recommend(NULL, 0, 0.05) == -1);
}

/* The synthetic source: 20 utterances of 2 ms in batches of 8 = 16 ms of work per batch; with
 * workers 0 the whole build happens in the loop, so the data phase is >= 16 ms per step. */
static void test_synthetic_in_loop(void) {
  fc_profiler *p;
  CHECK(fc_profiler_create(0, NULL, &p) == 0);
  lb_opts o;
  lb_opts_init(&o);
  o.source = LB_SYNTH;
  o.n_items = 20;
  o.synth_item_ms = 2;
  o.batch = 8;
  o.workers = 0;
  o.warmup = 0;
  o.compute_ms = 1;
  lb_result res;
  char why[256] = "";
  CHECK(lb_run(&o, p, &res, why, sizeof why) == 0);
  CHECK(res.epoch_batches == 3 && res.steps == 3 && res.utterances == 20); /* 8 + 8 + 4 */
  const double *data = fc_profiler_series(p, 0);
  CHECK(strcmp(fc_profiler_phase_name(p, 0), "data") == 0);
  CHECK(data[0] >= 16 && data[1] >= 16 && data[2] >= 8);
  CHECK(lb_run(&(lb_opts){.source = LB_SYNTH, .batch = 0}, p, &res, why, sizeof why) == FC_ECONFIG);
  fc_profiler_free(p);
}

int main(void) {
  test_recommend();
  test_synthetic_in_loop();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
