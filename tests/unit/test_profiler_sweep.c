/* loader-bench's sweep recommendation (the smallest resources under the data-share limit: fewest
 * workers, then the smallest prefetch, then the smallest batch), the synthetic source's known
 * cost through the real training loop, and --compare's closing line. */
#include "cmd/loader-bench/loaderbench.h"

#include <stdio.h>
#include <stdlib.h>
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

/* --compare's headline for an on-the-fly data phase of `fly` ms a step and a cached one of
 * `cached` ms, in buf */
static void compare_report(double fly, double cached, int json, char *buf, size_t len) {
  lb_report_run runs[2] = {{.source = "audio", .batch = 1, .workers = 1, .prefetch = 1},
                           {.source = "cache", .batch = 1, .workers = 1, .prefetch = 1}};
  const double data[2] = {fly, cached};
  for (int i = 0; i < 2; i++) {
    CHECK(fc_profiler_create(0, NULL, &runs[i].prof) == 0);
    CHECK(fc_profiler_step_begin(runs[i].prof) == 0);
    CHECK(fc_profiler_phase_add(runs[i].prof, "data", data[i]) == 0);
    CHECK(fc_profiler_phase_add(runs[i].prof, "compute", 50) == 0);
    CHECK(fc_profiler_step_end(runs[i].prof) == 0);
  }
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  CHECK(f && lb_write_report(f, json, LB_REPORT_COMPARE, runs, 2, NULL, -1) == 0);
  fclose(f);
  const char *line = !text  ? NULL
                     : json ? strstr(text, "\"shrink_factor\":")
                            : strstr(text, "against featcache's own");
  snprintf(buf, len, "%.*s", line ? (int)strcspn(line, "\n") : 0, line ? line : "");
  free(text);
  for (int i = 0; i < 2; i++) fc_profiler_free(runs[i].prof);
}

static void compare_headline(double fly, double cached, char *buf, size_t len) {
  compare_report(fly, cached, 0, buf, len);
}

/* The headline says "cut" only when the cache's data phase is shorter: a cached phase that took
 * longer (a tiny corpus the featurizer keeps up with) is not called a cut, and one of 0 ms is
 * not a shrink of 0x. */
static void test_compare_headline(void) {
  char h[512];
  compare_headline(10, 1, h, sizeof h);
  int ok = strstr(h, "the cache cut the data phase from 10 ms to 1 ms per step (10\u00d7)") != NULL;
  CHECK(ok);
  if (!ok) fprintf(stderr, "  got: %s\n", h);
  compare_headline(0.04, 0.05, h, sizeof h);
  ok = strstr(h, " cut ") == NULL &&
       strstr(h,
              "the cache did not shorten the data phase: 0.04 ms on the fly, 0.05 ms from the "
              "cache per step (1.2\u00d7 as long)") != NULL;
  CHECK(ok);
  if (!ok) fprintf(stderr, "  got: %s\n", h);
  compare_headline(3, 0, h, sizeof h);
  ok = strstr(h, "the cache cut the data phase from 3 ms to 0 ms per step (infinitely shorter)") !=
       NULL;
  CHECK(ok);
  if (!ok) fprintf(stderr, "  got: %s\n", h);
  /* --json: the factor, or null when it is infinite (it said 0, as if the cache had not helped
   * at all), as --compare-profiles says */
  compare_report(10, 1, 1, h, sizeof h);
  ok = strncmp(h, "\"shrink_factor\":10,", 19) == 0;
  CHECK(ok);
  if (!ok) fprintf(stderr, "  got: %s\n", h);
  compare_report(3, 0, 1, h, sizeof h);
  ok = strncmp(h, "\"shrink_factor\":null,", 21) == 0;
  CHECK(ok);
  if (!ok) fprintf(stderr, "  got: %s\n", h);
}

int main(void) {
  test_recommend();
  test_synthetic_in_loop();
  test_compare_headline();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
