/* The step profiler: steps, nested named phases with self times, statistics, verdict, reports.
 * See include/featcache/fc_profiler.h for the rules (self time, shares, estimators). */
#include "featcache/fc_profiler.h"
#include "featcache/fc_outfile.h"
#include "formats/common/alloc.h"
#include "formats/common/args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct prof_event {
  int64_t t0, t1; /* ns since the profiler's origin */
  uint32_t step;
  uint16_t phase;
  uint16_t depth;
} prof_event;

typedef struct prof_frame {
  int phase;
  int64_t t0;
  int64_t child_ns; /* wall time of the phases nested directly in this one */
} prof_frame;

struct fc_profiler {
  unsigned flags;
  char data_phase[FC_PROF_NAME_MAX + 1];
  fc_prof_clock_fn clock;
  void *clock_ctx;

  int nph;
  char names[FC_PROF_MAX_PHASES][FC_PROF_NAME_MAX + 1];
  double *series[FC_PROF_MAX_PHASES]; /* self ms per step, cap entries each */
  double cur_ns[FC_PROF_MAX_PHASES]; /* self ns of the open step */

  double *step_ms, *other_ms;
  int64_t *step_t0; /* ns since origin */
  uint64_t steps, cap;

  int in_step;
  int nph_begin, ndev_begin; /* phases and device series before the open step: a cancel drops
                                those it named first */
  int64_t step_begin_ns;
  prof_frame stack[FC_PROF_MAX_DEPTH];
  int depth;

  int have_origin;
  int64_t origin_ns;

  prof_event *ev;
  size_t nev, cap_ev;

  /* device times (fc_profiler_device_add): per-step series beside the phases, not in the sums */
  int ndev;
  char dnames[FC_PROF_MAX_PHASES][FC_PROF_NAME_MAX + 1];
  double *dseries[FC_PROF_MAX_PHASES];
  double dcur[FC_PROF_MAX_PHASES];

  /* GPU utilization samples (fc_profiler_set_gpu_busy) */
  int gpu_set;
  double *gpu_pct;
  size_t n_gpu;
  double gpu_period_ms;
  char gpu_note[256];

  char label[128];
  double items_per_step;
  /* items (utterances) delivered, counted per step (fc_profiler_step_items) */
  double cur_items, items;
  int cur_counted;
  uint64_t counted_steps;
};

static int64_t default_clock(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ns(const fc_profiler *p) { return p->clock(p->clock_ctx); }

static int name_ok(const char *name) { return name && *name && strlen(name) <= FC_PROF_NAME_MAX; }

int fc_profiler_create(unsigned flags, const char *data_phase, fc_profiler **out) {
  FC_ARGS(out);
  *out = NULL;
  if (!data_phase) data_phase = "data";
  if (!name_ok(data_phase)) return FC_ECONFIG;
  fc_profiler *p = fc_calloc(1, sizeof *p);
  if (!p) return ENOMEM;
  p->flags = flags;
  strcpy(p->data_phase, data_phase);
  p->clock = default_clock;
  *out = p;
  return 0;
}

void fc_profiler_free(fc_profiler *p) {
  if (!p) return;
  for (int i = 0; i < p->nph; i++) free(p->series[i]);
  for (int i = 0; i < p->ndev; i++) free(p->dseries[i]);
  free(p->gpu_pct);
  free(p->step_ms);
  free(p->other_ms);
  free(p->step_t0);
  free(p->ev);
  free(p);
}

void fc_profiler_set_clock(fc_profiler *p, fc_prof_clock_fn fn, void *ctx) {
  FC_ARGS_OR(, p);
  p->clock = fn ? fn : default_clock;
  p->clock_ctx = fn ? ctx : NULL;
}

void fc_profiler_reset(fc_profiler *p) {
  FC_ARGS_OR(, p);
  p->steps = 0;
  p->in_step = 0;
  p->depth = 0;
  p->nev = 0;
  p->have_origin = 0;
  p->items = 0;
  p->counted_steps = 0;
  for (int i = 0; i < p->nph; i++) p->cur_ns[i] = 0;
  for (int i = 0; i < p->ndev; i++) p->dcur[i] = 0;
  if (p->cap) {
    for (int i = 0; i < p->nph; i++) memset(p->series[i], 0, p->cap * sizeof(double));
    for (int i = 0; i < p->ndev; i++) memset(p->dseries[i], 0, p->cap * sizeof(double));
  }
}

/* Make room for step index p->steps in every series; new entries are zero. */
static int grow_steps(fc_profiler *p) {
  if (p->steps < p->cap) return 0;
  uint64_t ncap = p->cap ? p->cap * 2 : 256;
  double *a = fc_realloc(p->step_ms, ncap * sizeof(double));
  if (!a) return ENOMEM;
  p->step_ms = a;
  a = fc_realloc(p->other_ms, ncap * sizeof(double));
  if (!a) return ENOMEM;
  p->other_ms = a;
  int64_t *t = fc_realloc(p->step_t0, ncap * sizeof(int64_t));
  if (!t) return ENOMEM;
  p->step_t0 = t;
  for (int i = 0; i < p->nph; i++) {
    a = fc_realloc(p->series[i], ncap * sizeof(double));
    if (!a) return ENOMEM;
    memset(a + p->cap, 0, (ncap - p->cap) * sizeof(double));
    p->series[i] = a;
  }
  for (int i = 0; i < p->ndev; i++) {
    a = fc_realloc(p->dseries[i], ncap * sizeof(double));
    if (!a) return ENOMEM;
    memset(a + p->cap, 0, (ncap - p->cap) * sizeof(double));
    p->dseries[i] = a;
  }
  p->cap = ncap;
  return 0;
}

/* Index of phase name in *idx, adding it when new. Returns 0, FC_ECONFIG or ENOMEM. */
static int phase_index(fc_profiler *p, const char *name, int *idx) {
  if (!name_ok(name)) return FC_ECONFIG;
  for (int i = 0; i < p->nph; i++)
    if (strcmp(p->names[i], name) == 0) return *idx = i, 0;
  if (p->nph == FC_PROF_MAX_PHASES) return FC_ECONFIG;
  double *s = fc_calloc(p->cap ? p->cap : 1, sizeof(double));
  if (!s) return ENOMEM;
  int i = p->nph++;
  strcpy(p->names[i], name);
  p->series[i] = s;
  p->cur_ns[i] = 0;
  *idx = i;
  return 0;
}

int fc_profiler_step_begin(fc_profiler *p) {
  FC_ARGS(p);
  if (p->in_step) return FC_EBADSTATE;
  int rc = grow_steps(p);
  if (rc) return rc;
  int64_t t = now_ns(p);
  if (!p->have_origin) {
    p->origin_ns = t;
    p->have_origin = 1;
  }
  p->in_step = 1;
  p->depth = 0;
  p->nph_begin = p->nph;
  p->ndev_begin = p->ndev;
  p->step_begin_ns = t;
  p->cur_items = 0;
  p->cur_counted = 0;
  for (int i = 0; i < p->nph; i++) p->cur_ns[i] = 0;
  for (int i = 0; i < p->ndev; i++) p->dcur[i] = 0;
  return 0;
}

int fc_profiler_step_end(fc_profiler *p) {
  FC_ARGS(p);
  int64_t t = now_ns(p);
  if (!p->in_step || p->depth) return FC_EBADSTATE;
  uint64_t k = p->steps;
  double step = (double)(t - p->step_begin_ns) / 1e6, sum = 0;
  for (int i = 0; i < p->nph; i++) {
    double v = p->cur_ns[i] / 1e6;
    p->series[i][k] = v;
    sum += v;
  }
  for (int i = 0; i < p->ndev; i++) p->dseries[i][k] = p->dcur[i];
  p->step_ms[k] = step;
  p->other_ms[k] = step > sum ? step - sum : 0;
  p->step_t0[k] = p->step_begin_ns - p->origin_ns;
  p->steps++;
  p->in_step = 0;
  if (p->cur_counted) {
    p->items += p->cur_items;
    p->counted_steps++;
  }
  return 0;
}

int fc_profiler_step_items(fc_profiler *p, double n) {
  FC_ARGS(p);
  if (!p->in_step) return FC_EBADSTATE;
  if (!(n >= 0) || !isfinite(n)) return FC_ECONFIG;
  p->cur_items += n;
  p->cur_counted = 1;
  return 0;
}

int fc_profiler_step_cancel(fc_profiler *p) {
  FC_ARGS(p);
  if (!p->in_step) return FC_EBADSTATE;
  while (p->nev && p->ev[p->nev - 1].step == p->steps) p->nev--; /* its trace events */
  for (; p->nph > p->nph_begin; p->nph--) free(p->series[p->nph - 1]); /* and its new names */
  for (; p->ndev > p->ndev_begin; p->ndev--) free(p->dseries[p->ndev - 1]);
  p->in_step = 0;
  p->depth = 0;
  return 0;
}

int fc_profiler_phase_begin(fc_profiler *p, const char *name) {
  FC_ARGS(p);
  if (!p->in_step || p->depth == FC_PROF_MAX_DEPTH) return FC_EBADSTATE;
  int i, rc = phase_index(p, name, &i);
  if (rc) return rc;
  prof_frame *f = &p->stack[p->depth++];
  f->phase = i;
  f->child_ns = 0;
  f->t0 = now_ns(p); /* last, so the bookkeeping above is not charged to the phase */
  return 0;
}

int fc_profiler_phase_end(fc_profiler *p) {
  FC_ARGS(p);
  int64_t t = now_ns(p);
  if (!p->in_step || !p->depth) return FC_EBADSTATE;
  prof_frame *f = &p->stack[--p->depth];
  int64_t wall = t - f->t0;
  p->cur_ns[f->phase] += (double)(wall - f->child_ns);
  if (p->depth) p->stack[p->depth - 1].child_ns += wall;
  if (p->flags & FC_PROF_TRACE) {
    if (p->nev == p->cap_ev) {
      size_t ncap = p->cap_ev ? p->cap_ev * 2 : 1024;
      prof_event *e = fc_realloc(p->ev, ncap * sizeof *e);
      if (!e) return ENOMEM;
      p->ev = e;
      p->cap_ev = ncap;
    }
    p->ev[p->nev++] = (prof_event){f->t0 - p->origin_ns, t - p->origin_ns, (uint32_t)p->steps,
                                   (uint16_t)f->phase, (uint16_t)p->depth};
  }
  return 0;
}

int fc_profiler_phase_add(fc_profiler *p, const char *name, double ms) {
  FC_ARGS(p);
  if (!p->in_step) return FC_EBADSTATE;
  if (!(ms >= 0) || !isfinite(ms)) return FC_ECONFIG;
  int i, rc = phase_index(p, name, &i);
  if (rc) return rc;
  p->cur_ns[i] += ms * 1e6;
  return 0;
}

int fc_profiler_device_add(fc_profiler *p, const char *name, double ms) {
  FC_ARGS(p);
  if (!p->in_step) return FC_EBADSTATE;
  if (!(ms >= 0) || !isfinite(ms) || !name_ok(name)) return FC_ECONFIG;
  int i = 0;
  while (i < p->ndev && strcmp(p->dnames[i], name) != 0) i++;
  if (i == p->ndev) {
    if (p->ndev == FC_PROF_MAX_PHASES) return FC_ECONFIG;
    double *s = fc_calloc(p->cap ? p->cap : 1, sizeof(double));
    if (!s) return ENOMEM;
    strcpy(p->dnames[i], name);
    p->dseries[i] = s;
    p->dcur[i] = 0;
    p->ndev++;
  }
  p->dcur[i] += ms;
  return 0;
}

int fc_profiler_num_device(const fc_profiler *p) {
  FC_ARGS_OR(0, p);
  return p->ndev;
}

const char *fc_profiler_device_name(const fc_profiler *p, int i) {
  FC_ARGS_OR(NULL, p);
  return i >= 0 && i < p->ndev ? p->dnames[i] : NULL;
}

const double *fc_profiler_device_series(const fc_profiler *p, int i) {
  FC_ARGS_OR(NULL, p);
  return i >= 0 && i < p->ndev ? p->dseries[i] : NULL;
}

int fc_profiler_set_gpu_busy(fc_profiler *p, const double *pct, size_t n, double period_ms,
                             const char *note) {
  FC_ARGS(p, pct || !n);
  double *c = NULL;
  for (size_t i = 0; i < n; i++) /* (its statistics are taken when the profile is written) */
    if (!isfinite(pct[i])) return FC_ECONFIG;
  if (n) {
    if (!(c = fc_malloc(n * sizeof *c))) return ENOMEM;
    memcpy(c, pct, n * sizeof *c);
  }
  free(p->gpu_pct);
  p->gpu_pct = c;
  p->n_gpu = n;
  p->gpu_period_ms = period_ms;
  size_t len = note ? strlen(note) : 0;
  if (len >= sizeof p->gpu_note) { /* cut between characters: the reports must stay UTF-8 */
    len = sizeof p->gpu_note - 1;
    while (len && ((unsigned char)note[len] & 0xC0) == 0x80) len--;
  }
  if (len) memcpy(p->gpu_note, note, len);
  p->gpu_note[len] = '\0';
  p->gpu_set = 1;
  return 0;
}

int fc_profiler_set_info(fc_profiler *p, const char *label, double items_per_step) {
  FC_ARGS(p);
  if (label && strlen(label) >= sizeof p->label) return FC_ECONFIG;
  snprintf(p->label, sizeof p->label, "%s", label ? label : "");
  p->items_per_step = items_per_step > 0 && isfinite(items_per_step) ? items_per_step : 0;
  return 0;
}

uint64_t fc_profiler_steps(const fc_profiler *p) {
  FC_ARGS_OR(0, p);
  return p->steps;
}
int fc_profiler_num_phases(const fc_profiler *p) {
  FC_ARGS_OR(0, p);
  return p->nph;
}

const char *fc_profiler_phase_name(const fc_profiler *p, int i) {
  FC_ARGS_OR(NULL, p);
  if (i == -1) return "step";
  if (i == -2) return "other";
  return i >= 0 && i < p->nph ? p->names[i] : NULL;
}

const double *fc_profiler_series(const fc_profiler *p, int i) {
  FC_ARGS_OR(NULL, p);
  if (i == -1) return p->step_ms;
  if (i == -2) return p->other_ms;
  return i >= 0 && i < p->nph ? p->series[i] : NULL;
}

int fc_profiler_stats(const fc_profiler *p, int i, fc_prof_stats *out, double *share) {
  FC_ARGS(p, out);
  const double *x = fc_profiler_series(p, i);
  if (!x && !(i >= -2 && i < p->nph)) return FC_ECONFIG;
  int rc = fc_prof_series_stats(x, p->steps, out);
  if (rc) return rc;
  if (share) {
    double total = 0;
    for (uint64_t k = 0; k < p->steps; k++) total += p->step_ms[k];
    *share = total > 0 ? out->sum / total : 0;
  }
  return 0;
}

int fc_prof_verdict(double share, double vr, char *buf, size_t len) {
  if (!(share >= 0) || !isfinite(share)) { /* NaN, negative, infinite: nothing to judge */
    if (buf && len) snprintf(buf, len, "no verdict: data share %g is not a number >= 0", share);
    return FC_ECONFIG;
  }
  int band = share < 0.05 ? 0 : share <= 0.20 ? 1 : 2;
  static const char *const names[] = {"not input-bound", "moderately input-bound",
                                      "highly input-bound"};
  if (buf && len) snprintf(buf, len, "%s%s", names[band], band && vr > 0.5 ? ", unstable" : "");
  return band;
}

int fc_profiler_verdict(const fc_profiler *p, double *data_share, char *buf, size_t len) {
  FC_ARGS(p);
  int i = -1;
  for (int j = 0; j < p->nph; j++)
    if (strcmp(p->names[j], p->data_phase) == 0) i = j;
  fc_prof_stats st = {0};
  double share = 0;
  if (i >= 0 && fc_profiler_stats(p, i, &st, &share) != 0) share = 0;
  if (data_share) *data_share = share;
  if (i < 0 || !p->steps) { /* a share of 0 would read "not input-bound": there is no share */
    if (buf && len) snprintf(buf, len, "%s", p->steps ? "no data phase" : "no steps");
    return 0;
  }
  return fc_prof_verdict(share, st.variation_ratio, buf, len);
}

/* ---- outputs ------------------------------------------------------------------------------------- */
/* JSON numbers: finite only. */
static void json_num(FILE *f, double v) { fprintf(f, "%.9g", isfinite(v) ? v : 0.0); }

static void json_stats(FILE *f, const fc_prof_stats *s, double share) {
  fputs("{\"mean\":", f);
  json_num(f, s->mean);
  fputs(",\"std\":", f);
  json_num(f, s->std);
  fputs(",\"min\":", f);
  json_num(f, s->min);
  fputs(",\"p50\":", f);
  json_num(f, s->p50);
  fputs(",\"p95\":", f);
  json_num(f, s->p95);
  fputs(",\"p99\":", f);
  json_num(f, s->p99);
  fputs(",\"max\":", f);
  json_num(f, s->max);
  fputs(",\"sum\":", f);
  json_num(f, s->sum);
  fputs(",\"share\":", f);
  json_num(f, share);
  fputs(",\"variation_ratio\":", f);
  json_num(f, s->variation_ratio);
  fprintf(f, ",\"autocorr\":{\"lag\":%u,\"coef\":", s->acf_lag);
  json_num(f, s->acf_coef);
  fputs("}}", f);
}

static int write_json(const fc_profiler *p, FILE *f) {
  fc_prof_stats st;
  double share;
  char verdict[64];
  double dshare;
  fc_profiler_verdict(p, &dshare, verdict, sizeof verdict);
  fprintf(f, "{\"steps\":%llu,\"data_phase\":", (unsigned long long)p->steps);
  fc_json_write_string(f, p->data_phase);
  fputs(",\"data_share\":", f);
  json_num(f, dshare);
  fputs(",\"verdict\":", f);
  fc_json_write_string(f, verdict);
  fputs(",\"unit\":\"ms\",\"step\":", f);
  int rc = fc_profiler_stats(p, -1, &st, &share);
  if (rc) return rc;
  json_stats(f, &st, share);
  fputs(",\"phases\":{", f);
  for (int i = 0; i < p->nph; i++) {
    if ((rc = fc_profiler_stats(p, i, &st, &share))) return rc;
    if (i) fputc(',', f);
    fc_json_write_string(f, p->names[i]);
    fputc(':', f);
    json_stats(f, &st, share);
  }
  fputs("},\"other\":", f);
  if ((rc = fc_profiler_stats(p, -2, &st, &share))) return rc;
  json_stats(f, &st, share);
  /* throughput, device times, GPU utilization, the run's label: what --compare-profiles reads */
  double total = 0;
  for (uint64_t k = 0; k < p->steps; k++) total += p->step_ms[k];
  double sps = total > 0 ? (double)p->steps / (total / 1e3) : 0;
  fputs(",\"format\":\"featcache-profile/1\",\"label\":", f);
  fc_json_write_string(f, p->label);
  fputs(",\"steps_per_s\":", f);
  json_num(f, sps);
  fputs(",\"items_per_step\":", f);
  json_num(f, p->items_per_step);
  /* utterances/s: the items counted (every step counted), else steps x items per step */
  int counted = p->steps && p->counted_steps == p->steps;
  fputs(",\"items\":", f);
  json_num(f, counted ? p->items : (double)p->steps * p->items_per_step);
  fprintf(f, ",\"items_counted\":%s", counted ? "true" : "false");
  fputs(",\"items_per_s\":", f);
  json_num(f, counted ? (total > 0 ? p->items / (total / 1e3) : 0) : sps * p->items_per_step);
  fputs(",\"device_phases\":{", f);
  for (int i = 0; i < p->ndev; i++) {
    if ((rc = fc_prof_series_stats(p->dseries[i], p->steps, &st))) return rc;
    if (i) fputc(',', f);
    fc_json_write_string(f, p->dnames[i]);
    fputc(':', f);
    json_stats(f, &st, total > 0 ? st.sum / total : 0);
  }
  fputs("},\"gpu_busy\":", f);
  if (p->gpu_set && p->n_gpu) {
    if ((rc = fc_prof_series_stats(p->gpu_pct, p->n_gpu, &st))) return rc;
    fputs("{\"measured\":true,\"unit\":\"percent\",\"period_ms\":", f);
    json_num(f, p->gpu_period_ms);
    fprintf(f, ",\"samples\":%zu", p->n_gpu);
    fputs(",\"note\":", f);
    fc_json_write_string(f, p->gpu_note);
    fputs(",\"pct\":", f);
    json_stats(f, &st, 0);
    fputc('}', f);
  } else {
    fputs("{\"measured\":false,\"note\":", f);
    fc_json_write_string(f, p->gpu_set ? (p->gpu_note[0] ? p->gpu_note : "no samples")
                                       : "not sampled");
    fputc('}', f);
  }
  fputs("}\n", f);
  return 0;
}

static void table_row(FILE *f, int width, const char *name, const fc_prof_stats *s, double share) {
  fprintf(f, "%-*s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %6.1f%% %6.2f  %4u %6.2f\n", width,
          name, s->mean, s->std, s->min, s->p50, s->p95, s->p99, s->max, 100 * share,
          s->variation_ratio, s->acf_lag, s->acf_coef);
}

static int write_table(const fc_profiler *p, FILE *f) {
  fc_prof_stats st;
  double share;
  int rc;
  /* the name column: 14 wide, or as wide as the longest name, so the numbers stay aligned */
  int w = 14;
  for (int i = 0; i < p->nph; i++)
    if ((int)strlen(p->names[i]) > w) w = (int)strlen(p->names[i]);
  for (int i = 0; i < p->ndev; i++)
    if ((int)strlen(p->dnames[i]) + 9 > w) w = (int)strlen(p->dnames[i]) + 9; /* " [device]" */
  fprintf(f, "steps: %llu (times in ms per step; phase time = self time)\n",
          (unsigned long long)p->steps);
  fprintf(f, "%-*s %9s %9s %9s %9s %9s %9s %9s %7s %6s  %4s %6s\n", w, "phase", "mean", "std",
          "min", "p50", "p95", "p99", "max", "share", "std/mn", "lag", "acf");
  for (int i = 0; i < p->nph; i++) {
    if ((rc = fc_profiler_stats(p, i, &st, &share))) return rc;
    table_row(f, w, p->names[i], &st, share);
  }
  if ((rc = fc_profiler_stats(p, -2, &st, &share))) return rc;
  table_row(f, w, "(other)", &st, share);
  if ((rc = fc_profiler_stats(p, -1, &st, &share))) return rc;
  table_row(f, w, "(step)", &st, share);
  double total = st.sum;
  for (int i = 0; i < p->ndev; i++) {
    char nm[FC_PROF_NAME_MAX + 16];
    snprintf(nm, sizeof nm, "%s [device]", p->dnames[i]);
    if ((rc = fc_prof_series_stats(p->dseries[i], p->steps, &st))) return rc;
    table_row(f, w, nm, &st, total > 0 ? st.sum / total : 0);
  }
  if (p->gpu_set && p->n_gpu) {
    if ((rc = fc_prof_series_stats(p->gpu_pct, p->n_gpu, &st))) return rc;
    fprintf(f, "gpu busy: mean %.1f %%, p50 %.1f %%, min %.1f %% (%zu samples every %g ms%s%s)\n",
            st.mean, st.p50, st.min, p->n_gpu, p->gpu_period_ms, p->gpu_note[0] ? "; " : "",
            p->gpu_note);
  } else if (p->gpu_set) {
    fprintf(f, "gpu busy: not measured (%s)\n", p->gpu_note[0] ? p->gpu_note : "no samples");
  }
  char verdict[64];
  double dshare;
  fc_profiler_verdict(p, &dshare, verdict, sizeof verdict);
  int ran = 0;
  for (int i = 0; i < p->nph; i++) ran |= strcmp(p->names[i], p->data_phase) == 0;
  if (!p->steps)
    fprintf(f, "verdict: none: no steps\n");
  else if (ran)
    fprintf(f, "verdict: %s (%s share %.1f %% of the step)\n", verdict, p->data_phase,
            100 * dshare);
  else
    fprintf(f,
            "verdict: none: no phase \"%s\" ran (name the phase that fetches the batch \"%s\", "
            "or pass its name as data_phase)\n",
            p->data_phase, p->data_phase);
  return 0;
}

/* One process (pid) of a trace: its name, then every step and phase occurrence. */
static void write_trace_events(const fc_profiler *p, int pid, const char *name, FILE *f) {
  fprintf(f,
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":", pid);
  fc_json_write_string(f, name);
  fputs("}}", f);
  for (uint64_t k = 0; k < p->steps; k++)
    fprintf(f,
            ",\n{\"name\":\"step\",\"cat\":\"step\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
            "\"pid\":%d,\"tid\":1,\"args\":{\"step\":%llu}}",
            (double)p->step_t0[k] / 1e3, p->step_ms[k] * 1e3, pid, (unsigned long long)k);
  for (size_t e = 0; e < p->nev; e++) {
    const prof_event *ev = &p->ev[e];
    if (ev->step >= p->steps) continue; /* a step still open */
    fputs(",\n{\"name\":", f);
    fc_json_write_string(f, p->names[ev->phase]);
    fprintf(f,
            ",\"cat\":\"phase\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":1,"
            "\"args\":{\"step\":%u,\"depth\":%u}}",
            (double)ev->t0 / 1e3, (double)(ev->t1 - ev->t0) / 1e3, pid, ev->step, ev->depth + 1u);
  }
}

int fc_profiler_write_traces(const fc_profiler *const *ps, const char *const *names, size_t n,
                             void *stdio_file) {
  FC_ARGS(ps || !n, stdio_file);
  FC_ARGS_EACH(ps, n);
  FILE *f = stdio_file;
  fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(",\n", f);
    write_trace_events(ps[i], (int)i + 1, names && names[i] ? names[i] : "featcache step profiler",
                       f);
  }
  fputs("\n]}\n", f);
  return ferror(f) ? EIO : 0;
}

static int write_trace(const fc_profiler *p, FILE *f) {
  return fc_profiler_write_traces(&p, NULL, 1, f);
}

int fc_profiler_write(const fc_profiler *p, int format, void *stdio_file) {
  FC_ARGS(p, stdio_file);
  FILE *f = stdio_file;
  int rc;
  switch (format) {
  case FC_PROF_TABLE: rc = write_table(p, f); break;
  case FC_PROF_JSON: rc = write_json(p, f); break;
  case FC_PROF_TRACE_JSON: rc = write_trace(p, f); break;
  default: return FC_ECONFIG;
  }
  if (rc) return rc;
  return ferror(f) ? EIO : 0;
}

long fc_profiler_report(const fc_profiler *p, int format, char *buf, size_t len) {
  FC_ARGS_OR(FC_ECONFIG, p, buf || !len);
  char *mem = NULL;
  size_t mlen = 0;
  FILE *f = fc_alloc_fails() ? NULL : open_memstream(&mem, &mlen);
  if (!f) return -(long)ENOMEM;
  int rc = fc_profiler_write(p, format, f);
  if (fclose(f) != 0 && !rc) rc = ENOMEM;
  if (rc) {
    free(mem);
    return rc < 0 ? rc : -(long)rc;
  }
  if (buf && len) {
    size_t c = mlen < len - 1 ? mlen : len - 1;
    memcpy(buf, mem, c);
    buf[c] = '\0';
  }
  free(mem);
  return (long)mlen;
}

int fc_profiler_save(const fc_profiler *p, int format, const char *path) {
  FC_ARGS(p);
  fc_outfile *o;
  int rc = fc_outfile_open(path, &o);
  if (rc) return rc;
  if ((rc = fc_profiler_write(p, format, fc_outfile_stream(o)))) {
    fc_outfile_abort(o);
    return rc;
  }
  return fc_outfile_commit(o);
}
