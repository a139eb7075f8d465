/* loader-bench's reports (loaderbench.h): per-run summaries, the text and JSON reports of a
 * run, a comparison and a sweep, and the store's mel config for the audio source. */
#include "cmd/loader-bench/loaderbench.h"
#include "featcache/fc_outfile.h"

#include "featcache/fc_loader.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int phase_idx(const fc_profiler *p, const char *name) {
  for (int i = 0; i < fc_profiler_num_phases(p); i++)
    if (strcmp(fc_profiler_phase_name(p, i), name) == 0) return i;
  return -100; /* no such phase: fc_profiler_stats gives zeros */
}

void lb_summarize(const fc_profiler *p, lb_summary *s) {
  memset(s, 0, sizeof *s);
  fc_profiler_stats(p, phase_idx(p, "data"), &s->data, &s->data_share);
  fc_profiler_stats(p, phase_idx(p, "compute"), &s->compute, NULL);
  fc_profiler_stats(p, -1, &s->step, NULL);
  fc_profiler_verdict(p, NULL, s->verdict, sizeof s->verdict);
}

double lb_shrink_factor(const lb_report_run *runs, size_t n) {
  if (n < 2) return 0;
  lb_summary a, b;
  lb_summarize(runs[0].prof, &a);
  lb_summarize(runs[1].prof, &b);
  return b.data.mean > 0 ? a.data.mean / b.data.mean : 0;
}

static void json_num(FILE *f, double v) { fprintf(f, "%.9g", isfinite(v) ? v : 0.0); }

static void json_ms(FILE *f, const char *key, const fc_prof_stats *s) {
  fprintf(f, "\"%s\":{\"mean\":", key);
  json_num(f, s->mean);
  fprintf(f, ",\"std\":");
  json_num(f, s->std);
  fprintf(f, ",\"min\":");
  json_num(f, s->min);
  fprintf(f, ",\"p50\":");
  json_num(f, s->p50);
  fprintf(f, ",\"p95\":");
  json_num(f, s->p95);
  fprintf(f, ",\"p99\":");
  json_num(f, s->p99);
  fprintf(f, ",\"max\":");
  json_num(f, s->max);
  fprintf(f, "}");
}

static void json_run(FILE *f, const lb_report_run *r) {
  lb_summary s;
  lb_summarize(r->prof, &s);
  /* the table's other rows: compute's share, and the time in a step but in no phase */
  fc_prof_stats other;
  double compute_share = 0, other_share = 0;
  memset(&other, 0, sizeof other);
  fc_profiler_stats(r->prof, phase_idx(r->prof, "compute"), &s.compute, &compute_share);
  fc_profiler_stats(r->prof, -2, &other, &other_share);
  fprintf(f, "{\"source\":");
  fc_json_write_string(f, r->source);
  fprintf(f, ",\"steps\":%llu,\"batch\":%u,\"workers\":%u,\"prefetch\":%u,\"utterances\":%llu,",
          (unsigned long long)r->res.steps, r->batch, r->workers, r->prefetch,
          (unsigned long long)r->res.utterances);
  json_ms(f, "data_ms", &s.data);
  fprintf(f, ",");
  json_ms(f, "compute_ms", &s.compute);
  fprintf(f, ",");
  json_ms(f, "other_ms", &other);
  fprintf(f, ",");
  json_ms(f, "step_ms", &s.step);
  fprintf(f, ",\"data_share\":");
  json_num(f, s.data_share);
  fprintf(f, ",\"compute_share\":");
  json_num(f, compute_share);
  fprintf(f, ",\"other_share\":");
  json_num(f, other_share);
  fprintf(f, ",\"variation_ratio\":");
  json_num(f, s.data.variation_ratio);
  fprintf(f, ",\"autocorr\":{\"lag\":%u,\"coef\":", s.data.acf_lag);
  json_num(f, s.data.acf_coef);
  fprintf(f, "},\"verdict\":");
  fc_json_write_string(f, s.verdict);
  fprintf(f, ",\"failed\":%llu}", (unsigned long long)r->res.failed);
}

static void write_json(FILE *f, int kind, const lb_report_run *runs, size_t n, const lb_cell *cells,
                       int rec) {
  fprintf(f, "{\"sources\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) fprintf(f, ",");
    json_run(f, &runs[i]);
  }
  fprintf(f, "]");
  if (kind == LB_REPORT_COMPARE && n >= 2) {
    fprintf(f, ",\"baseline\":\"featcache C featurizer on the fly\",\"shrink_factor\":");
    lb_summary cached;
    lb_summarize(runs[1].prof, &cached);
    if (cached.data.mean > 0)
      json_num(f, lb_shrink_factor(runs, n));
    else /* infinitely shorter (as the text says), or 0 / 0: no factor, as --compare-profiles */
      fprintf(f, "null");
    fprintf(f, ",\"same_order\":%s", runs[1].res.order_mismatch ? "false" : "true");
  }
  fprintf(f, ",\"interrupted\":%s", rec == LB_NOT_RECOMMENDED ? "true" : "false");
  if (kind == LB_REPORT_SWEEP) {
    fprintf(f, ",\"recommended\":");
    if (rec >= 0 && cells)
      fprintf(f, "{\"batch\":%u,\"workers\":%u,\"prefetch\":%u,\"data_share\":%.9g}",
              cells[rec].batch, cells[rec].workers, cells[rec].prefetch, cells[rec].data_share);
    else
      fprintf(f, "null");
    fprintf(f, ",\"failed_cell\":"); /* the cell the sweep stopped at: the grid is not whole */
    if (rec == LB_STOPPED_AT_FAILURE && cells)
      fprintf(f, "{\"batch\":%u,\"workers\":%u,\"prefetch\":%u}", cells[n].batch, cells[n].workers,
              cells[n].prefetch);
    else
      fprintf(f, "null");
  }
  fprintf(f, "}\n");
}

static void write_sweep(FILE *f, const lb_report_run *runs, size_t n, const lb_cell *cells,
                        int rec) {
  fprintf(f, "%-7s %7s %8s %9s %12s %12s %8s  %s\n", "batch", "workers", "prefetch", "steps",
          "data ms", "step ms", "data %", "verdict");
  for (size_t i = 0; i < n; i++) {
    lb_summary s;
    lb_summarize(runs[i].prof, &s);
    fprintf(f, "%-7u %7u %8u %9llu %12.3f %12.3f %7.2f%%  %s\n", runs[i].batch, runs[i].workers,
            runs[i].prefetch, (unsigned long long)runs[i].res.steps, s.data.mean, s.step.mean,
            100 * s.data_share, s.verdict);
  }
  if (rec >= 0 && cells)
    fprintf(f, "recommended: batch %u, workers %u, prefetch %u (data share %.2f %%)\n",
            cells[rec].batch, cells[rec].workers, cells[rec].prefetch, 100 * cells[rec].data_share);
  else if (rec == LB_NOT_RECOMMENDED)
    fprintf(f, "recommended: none: the sweep was interrupted (a cell cut short has fewer steps)\n");
  else if (rec == LB_STOPPED_AT_FAILURE && cells)
    fprintf(f,
            "recommended: none: the sweep stopped at batch %u, workers %u, prefetch %u, which "
            "failed (its error is on stderr); the cells after it were not run\n",
            cells[n].batch, cells[n].workers, cells[n].prefetch);
  else
    fprintf(f, "recommended: none of these settings keeps the data share under 5 %%\n");
}

static void write_runs(FILE *f, int kind, const lb_report_run *runs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const lb_report_run *r = &runs[i];
    fprintf(f, "%ssource: %s%s (batch %u, workers %u, prefetch %u, %llu steps, %llu utterances)\n",
            i ? "\n" : "", r->source,
            strcmp(r->source, "audio") == 0 ? " [featcache's own C featurizer, on the fly]" : "",
            r->batch, r->workers, r->prefetch, (unsigned long long)r->res.steps,
            (unsigned long long)r->res.utterances);
    fc_profiler_write(r->prof, FC_PROF_TABLE, f);
  }
  if (kind == LB_REPORT_COMPARE && n >= 2) {
    lb_summary a, b;
    lb_summarize(runs[0].prof, &a);
    lb_summarize(runs[1].prof, &b);
    double shrink = lb_shrink_factor(runs, n);
    fprintf(f, "\nagainst featcache's own C featurizer on the fly, ");
    /* "cut" only when it is one: on a corpus the featurizer keeps up with, the cached data phase
     * can be the longer of two tiny ones */
    if (b.data.mean <= 0 && a.data.mean > 0)
      fprintf(f, "the cache cut the data phase from %.4g ms to 0 ms per step (infinitely shorter)",
              a.data.mean);
    else if (shrink >= 1)
      fprintf(f, "the cache cut the data phase from %.4g ms to %.4g ms per step (%.*f×)",
              a.data.mean, b.data.mean, shrink >= 10 ? 0 : 1, shrink);
    else if (a.data.mean > 0)
      fprintf(f,
              "the cache did not shorten the data phase: %.4g ms on the fly, %.4g ms from the "
              "cache per step (%.1f× as long)",
              a.data.mean, b.data.mean, b.data.mean / a.data.mean);
    else
      fprintf(f, "the data phase took %.4g ms on the fly and %.4g ms from the cache per step",
              a.data.mean, b.data.mean);
    fprintf(f, "; data share %.2f %% → %.2f %%\n", 100 * a.data_share, 100 * b.data_share);
    fprintf(f,
            "(that baseline is not your pipeline: profile your own training loop with "
            "featcache.StepProfiler, save a profile before and after, and compare them with "
            "loader-bench --compare-profiles)\n");
  }
}

int lb_write_report(FILE *f, int json, int kind, const lb_report_run *runs, size_t n,
                    const lb_cell *cells, int rec) {
  if (!f || (n && !runs)) return EINVAL;
  if (json)
    write_json(f, kind, runs, n, cells, rec);
  else if (kind == LB_REPORT_SWEEP)
    write_sweep(f, runs, n, cells, rec);
  else
    write_runs(f, kind, runs, n);
  return ferror(f) ? EIO : 0;
}

int lb_store_mel_config(const char *const *stores, size_t n, const char *features, int nolock,
                        fc_mel_config *out, fc_digest *digest, int *named, char *why,
                        size_t why_len) {
  fc_loader_opts lo;
  fc_loader_opts_init(&lo);
  lo.features = features;
  lo.flags = FC_LOADER_LOOKUP_ONLY | (nolock ? FC_LOADER_NOLOCK : 0);
  lo.prefetch_threads = 0;
  fc_loader *ld = NULL;
  if (why && why_len) why[0] = '\0';
  int rc = fc_loader_open(stores, n, &lo, &ld, why, why_len);
  *named = rc != 0;
  const char *js = rc ? NULL : fc_loader_config_json(ld, 0);
  if (!rc && !js) rc = FC_ENOTFOUND;
  if (!rc) rc = fc_mel_config_from_json(js, strlen(js), out, why, why_len);
  fc_loader_info info;
  if (!rc && digest && !(rc = fc_loader_info_get(ld, &info))) *digest = info.mel_config;
  fc_loader_close(ld);
  return rc;
}
