/* Two saved step profiles side by side (fc_prof_compare_files, loader-bench --compare-profiles):
 * what a change of data pipeline did to the user's own training loop. Reads the JSON a profiler
 * saves (fc_profiler_save FC_PROF_JSON, featcache.StepProfiler.save), prints the data share, the
 * data wait's percentiles, variation and periodicity, GPU busy, steps/s, the shrink factor and a
 * verdict. Owns nothing beyond one call; reads JSON with jansson. */
#include "featcache/fc_profiler.h"
#include "formats/common/args.h"
#include "featcache/fc_outfile.h"
#include "libcache/core/profile/profile_int.h"
#include "formats/common/json.h"
#include "formats/common/why.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct prof_view {
  const char *path, *label, *verdict, *gpu_note, *dev_name;
  double steps, steps_per_s, items_per_s, data_share;
  double mean, p50, p95, p99, vr, acf_coef, step_p50;
  double acf_lag;
  int gpu_measured, items_estimated; /* items_estimated: steps x items per step, not counted */
  double gpu_mean, gpu_p50;
  json_t *dev; /* device_phases: the device row compares a series of one name on both sides */
  json_t *root;
} prof_view;

static double num_at(json_t *o, const char *k) {
  json_t *v = o ? json_object_get(o, k) : NULL;
  return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str_at(json_t *o, const char *k) {
  json_t *v = o ? json_object_get(o, k) : NULL;
  return v && json_is_string(v) ? json_string_value(v) : NULL;
}

/* A phase name in double quotes, escaped as names are when it must be ("data", "two\nlines"). */
static const char *in_quotes(const char *name, fc_why_name_buf *q) {
  fc_why_name(name, SIZE_MAX, q);
  size_t n = strlen(q->s);
  if (q->s[0] != '"' && n + 3 <= sizeof q->s) { /* (a name quoted starts with one) */
    memmove(q->s + 1, q->s, n);
    q->s[0] = q->s[n + 1] = '"';
    q->s[n + 2] = '\0';
  }
  return q->s;
}
#define IN_QUOTES(name) in_quotes((name), &(fc_why_name_buf){{0}})

static int load(const char *path, prof_view *v, char *why, size_t why_len) {
  memset(v, 0, sizeof *v);
  v->path = path;
  json_error_t je;
  int nomem;
  json_t *r = fc_json_load_file(path, 0, &je, &nomem);
  if (nomem) {
    prof_say(why, why_len, "%s: out of memory reading the profile", FC_WHY_NAME(path));
    return ENOMEM;
  }
  if (!r) {
    FILE *f = fopen(path, "r");
    if (!f) {
      int e = errno;
      prof_say(why, why_len, "%s: %s", FC_WHY_NAME(path), strerror(e));
      return e;
    }
    int dir = fgetc(f) == EOF && ferror(f) && errno == EISDIR;
    fclose(f);
    if (dir) {
      prof_say(why, why_len, "%s: %s", FC_WHY_NAME(path), strerror(EISDIR));
      return EISDIR;
    }
    char t[4 * sizeof je.text + 8];
    prof_say(why, why_len, "%s: not JSON: line %d: %s", FC_WHY_NAME(path), je.line,
             fc_json_error_text(&je, t, sizeof t));
    return FC_EFORMAT;
  }
  v->root = r;
  if (json_object_get(r, "sources")) {
    prof_say(why, why_len,
             "%s: a loader-bench --json report, not a profile (save one with "
             "featcache.StepProfiler.save or fc_profiler_save)",
             FC_WHY_NAME(path));
    return FC_EFORMAT;
  }
  /* another version's profile (or one timed in another unit) is not read as this one's; one saved
   * before profiles named their format is */
  json_t *fmt = json_object_get(r, "format"), *unit = json_object_get(r, "unit");
  if (fmt && !(json_is_string(fmt) && !strcmp(json_string_value(fmt), "featcache-profile/1"))) {
    if (json_is_string(fmt))
      prof_say(why, why_len,
               "%s: a profile of format %s, which this loader-bench does not read (it reads "
               "featcache-profile/1)",
               FC_WHY_NAME(path), FC_WHY_NAME(json_string_value(fmt)));
    else
      prof_say(why, why_len, "%s: not a featcache profile (\"format\" is not a string)",
               FC_WHY_NAME(path));
    return FC_EFORMAT;
  }
  if (unit && !(json_is_string(unit) && !strcmp(json_string_value(unit), "ms"))) {
    prof_say(why, why_len, "%s: not a featcache profile (its times are in %s, not in ms)",
             FC_WHY_NAME(path), json_is_string(unit) ? FC_WHY_NAME(json_string_value(unit)) : "?");
    return FC_EFORMAT;
  }
  const char *dp = str_at(r, "data_phase");
  json_t *phases = json_object_get(r, "phases");
  json_t *data = dp && json_is_object(phases) ? json_object_get(phases, dp) : NULL;
  v->steps = num_at(r, "steps");
  v->data_share = num_at(r, "data_share");
  if (!dp || !json_is_object(phases) || isnan(v->steps) || isnan(v->data_share)) {
    prof_say(why, why_len,
             "%s: not a featcache profile (wants \"steps\", \"data_phase\", "
             "\"data_share\" and \"phases\")",
             FC_WHY_NAME(path));
    return FC_EFORMAT;
  }
  /* first: a loop of no step ran no data phase either; its zeros would read as a data wait of
   * 0 ms: an infinite factor */
  if (!(v->steps >= 1)) {
    prof_say(why, why_len,
             "%s: the profile has no steps (the loop it profiled ended before its first step)",
             FC_WHY_NAME(path));
    return FC_EFORMAT;
  }
  if (!data) {
    prof_say(why, why_len, "%s: the profile has no data phase %s", FC_WHY_NAME(path),
             IN_QUOTES(dp));
    return FC_EFORMAT;
  }
  if (!json_is_number(json_object_get(data, "mean"))) { /* read as 0 ms: an infinite factor */
    prof_say(why, why_len, "%s: not a featcache profile (the data phase %s has no mean)",
             FC_WHY_NAME(path), IN_QUOTES(dp));
    return FC_EFORMAT;
  }
  /* numbers no profiler writes (edited by hand, another tool's): a negative wait would read as
   * "infinitely shorter" or "-0.5× LONGER" */
  double mean = num_at(data, "mean");
  if (v->steps != floor(v->steps)) {
    prof_say(why, why_len, "%s: not a featcache profile (\"steps\" %g is not a whole number)",
             FC_WHY_NAME(path), v->steps);
    return FC_EFORMAT;
  }
  /* (a share over 1 is read, and said in the verdict: fc_profiler_phase_add's times can exceed a
   * step) */
  if (!(v->data_share >= 0)) {
    prof_say(why, why_len, "%s: not a featcache profile (data_share %g is negative)",
             FC_WHY_NAME(path), v->data_share);
    return FC_EFORMAT;
  }
  if (!(mean >= 0)) {
    prof_say(why, why_len, "%s: not a featcache profile (the data phase %s has a mean of %g ms)",
             FC_WHY_NAME(path), IN_QUOTES(dp), mean);
    return FC_EFORMAT;
  }
  v->label = str_at(r, "label");
  v->verdict = str_at(r, "verdict");
  v->steps_per_s = num_at(r, "steps_per_s");
  if (isnan(v->steps_per_s)) { /* older profiles: from the step series */
    double m = num_at(json_object_get(r, "step"), "mean");
    v->steps_per_s = m > 0 ? 1e3 / m : NAN;
  }
  v->items_per_s = num_at(r, "items_per_s");
  v->items_estimated = !json_is_true(json_object_get(r, "items_counted"));
  /* neither counted nor estimated (no items_per_step): no utterances/s, not 0 of them */
  if (v->items_estimated && !(v->items_per_s > 0)) v->items_per_s = NAN;
  v->mean = num_at(data, "mean");
  v->p50 = num_at(data, "p50");
  v->p95 = num_at(data, "p95");
  v->p99 = num_at(data, "p99");
  v->vr = num_at(data, "variation_ratio");
  json_t *ac = json_object_get(data, "autocorr");
  v->acf_lag = num_at(ac, "lag");
  v->acf_coef = num_at(ac, "coef");
  v->step_p50 = num_at(json_object_get(r, "step"), "p50");
  json_t *g = json_object_get(r, "gpu_busy");
  v->gpu_measured = g && json_is_true(json_object_get(g, "measured"));
  v->gpu_note = str_at(g, "note");
  if (v->gpu_measured) {
    v->gpu_mean = num_at(json_object_get(g, "pct"), "mean");
    v->gpu_p50 = num_at(json_object_get(g, "pct"), "p50");
  }
  json_t *dev = json_object_get(r, "device_phases");
  if (json_is_object(dev) && json_object_size(dev)) {
    v->dev = dev;
    v->dev_name = json_object_iter_key(json_object_iter(dev));
  }
  return 0;
}

static void cell(FILE *f, const char *fmt, double x) {
  char b[64];
  if (isnan(x))
    snprintf(b, sizeof b, "-");
  else
    snprintf(b, sizeof b, fmt, x);
  fprintf(f, " %18s", b);
}

static void row(FILE *f, const char *name, const char *fmt, double a, double b) {
  fprintf(f, "%-28s", name);
  cell(f, fmt, a);
  cell(f, fmt, b);
  fputc('\n', f);
}

static void json_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.9g", v);
  else
    fputs("null", f);
}

static void json_side(FILE *f, const prof_view *v) {
  fputs("{\"path\":", f);
  fc_json_write_string(f, v->path);
  fputs(",\"label\":", f);
  fc_json_write_string(f, v->label);
  fprintf(f, ",\"items_counted\":%s", v->items_estimated ? "false" : "true");
  const char *k[] =
      {"steps",       "steps_per_s", "items_per_s", "data_share",           "data_mean_ms",
       "data_p50_ms", "data_p95_ms", "data_p99_ms", "data_variation_ratio", "gpu_busy_mean_pct"};
  double x[] = {v->steps,       v->steps_per_s,
                v->items_per_s, v->data_share,
                v->mean,        v->p50,
                v->p95,         v->p99,
                v->vr,          v->gpu_measured ? v->gpu_mean : NAN};
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) {
    fprintf(f, ",\"%s\":", k[i]);
    json_num(f, x[i]);
  }
  fputc('}', f);
}

int fc_prof_compare_files(const char *before, const char *after, int json, void *stdio_file,
                          char *why, size_t why_len) {
  FC_ARGS_WHY(before, after, stdio_file);
  FILE *out = stdio_file;
  prof_view a, b;
  int rc = load(before, &a, why, why_len);
  if (!rc)
    rc = load(after, &b, why, why_len);
  else
    b.root = NULL;
  if (rc) goto done;

  /* the shrink factor: mean data wait per step, before / after */
  double shrink = b.mean > 0 ? a.mean / b.mean : (a.mean > 0 ? INFINITY : NAN); /* NaN: 0 / 0 */
  double speed = a.steps_per_s > 0 ? b.steps_per_s / a.steps_per_s : NAN;
  char verdict[1024], part[200];
  int band_b = fc_prof_verdict(b.data_share, b.vr, part, sizeof part);
  if (isnan(shrink))
    snprintf(verdict, sizeof verdict, "the data phase is unchanged (0 ms in both)");
  else if (isinf(shrink))
    snprintf(verdict, sizeof verdict, "the data phase is infinitely shorter with AFTER (0 ms)");
  else if (shrink == 0)
    snprintf(verdict, sizeof verdict,
             "the data phase is infinitely LONGER with AFTER (BEFORE waited 0 ms)");
  else if (shrink >= 1.1)
    snprintf(verdict, sizeof verdict, "the data phase is %.*f× shorter with AFTER",
             shrink >= 10 ? 0 : 1, shrink);
  else if (shrink <= 1 / 1.1)
    snprintf(verdict, sizeof verdict, "the data phase is %.1f× LONGER with AFTER", 1 / shrink);
  else
    snprintf(verdict, sizeof verdict, "the data phase is unchanged (within 10 %%)");
  size_t n = strlen(verdict);
  snprintf(verdict + n, sizeof verdict - n, "; AFTER is %s (data share %.2f %%%s)", part,
           100 * b.data_share, band_b == 0 && b.data_share < 0.01 ? ", under 1 %" : "");
  n = strlen(verdict);
  if (isfinite(speed))
    snprintf(verdict + n, sizeof verdict - n, "; steps/s %s%.1f %%", speed >= 1 ? "+" : "-",
             100 * fabs(speed - 1));
  /* a share over 100 % cannot have been measured: phase times added beyond the steps' time (C's
   * fc_profiler_phase_add takes them; Python's StepProfiler.add refuses them now) */
  for (int i = 0; i < 2; i++) {
    const prof_view *v = i ? &b : &a;
    n = strlen(verdict);
    if (v->data_share > 1)
      snprintf(verdict + n, sizeof verdict - n,
               "; %s's data share of %.0f %% is more than its steps lasted: times were added to "
               "its phases beyond them (seconds or microseconds passed as ms, or another thread's "
               "overlapping time), so its share and verdict are not measurements",
               i ? "AFTER" : "BEFORE", 100 * v->data_share);
  }

  if (json) {
    fputs("{\"before\":", out);
    json_side(out, &a);
    fputs(",\"after\":", out);
    json_side(out, &b);
    fputs(",\"shrink_factor\":", out);
    json_num(out, shrink);
    fputs(",\"steps_per_s_ratio\":", out);
    json_num(out, speed);
    fputs(",\"verdict\":", out);
    fc_json_write_string(out, verdict);
    fputs("}\n", out);
    goto done;
  }
  /* the strings a profile carries are quoted as names are: a newline in a label would split the
   * line, an escape in it reach the terminal */
  fprintf(out, "BEFORE: %s%s%s%s\n", FC_WHY_NAME(before), a.label && *a.label ? " (" : "",
          a.label ? FC_WHY_NAME(a.label) : "", a.label && *a.label ? ")" : "");
  fprintf(out, "AFTER:  %s%s%s%s\n", FC_WHY_NAME(after), b.label && *b.label ? " (" : "",
          b.label ? FC_WHY_NAME(b.label) : "", b.label && *b.label ? ")" : "");
  fprintf(out, "%-28s %18s %18s\n", "", "BEFORE", "AFTER");
  row(out, "steps", "%.0f", a.steps, b.steps);
  row(out, "steps/s", "%.3f", a.steps_per_s, b.steps_per_s);
  fprintf(out, "%-28s", "utterances/s");
  for (int i = 0; i < 2; i++) { /* "*": steps x items per step (the profile did not count) */
    const prof_view *v = i ? &b : &a;
    char c[64];
    if (!isnan(v->items_per_s))
      snprintf(c, sizeof c, "%.1f%s", v->items_per_s, v->items_estimated ? "*" : "");
    else
      snprintf(c, sizeof c, "-");
    fprintf(out, " %18s", c);
  }
  fputc('\n', out);
  row(out, "data share (%)", "%.2f", 100 * a.data_share, 100 * b.data_share);
  row(out, "data wait mean (ms)", "%.4f", a.mean, b.mean);
  row(out, "data wait p50 (ms)", "%.4f", a.p50, b.p50);
  row(out, "data wait p95 (ms)", "%.4f", a.p95, b.p95);
  row(out, "data wait p99 (ms)", "%.4f", a.p99, b.p99);
  row(out, "data wait std/mean", "%.2f", a.vr, b.vr);
  fprintf(out, "%-28s", "data periodicity (lag, r)");
  for (int i = 0; i < 2; i++) {
    const prof_view *v = i ? &b : &a;
    char c[64];
    if (v->acf_lag > 0)
      snprintf(c, sizeof c, "%.0f, %.2f", v->acf_lag, v->acf_coef);
    else
      snprintf(c, sizeof c, "none");
    fprintf(out, " %18s", c);
  }
  fputc('\n', out);
  row(out, "step p50 (ms)", "%.3f", a.step_p50, b.step_p50);
  if (a.dev_name || b.dev_name) { /* BEFORE's first device series, and AFTER's of that name */
    const char *dn = a.dev_name ? a.dev_name : b.dev_name;
    char nm[sizeof(fc_why_name_buf) + 32];
    snprintf(nm, sizeof nm, "%s on device p50 (ms)", FC_WHY_NAME(dn));
    row(out, nm, "%.3f", num_at(json_object_get(a.dev, dn), "p50"),
        num_at(json_object_get(b.dev, dn), "p50"));
  }
  fprintf(out, "%-28s", "GPU busy (mean %)");
  for (int i = 0; i < 2; i++) {
    const prof_view *v = i ? &b : &a;
    char c[64];
    if (v->gpu_measured)
      snprintf(c, sizeof c, "%.1f", v->gpu_mean);
    else
      snprintf(c, sizeof c, "not measured");
    fprintf(out, " %18s", c);
  }
  fputc('\n', out);
  for (int i = 0; i < 2; i++) {
    const prof_view *v = i ? &b : &a;
    if (!v->gpu_measured)
      fprintf(out, "  (%s: GPU busy not measured: %s)\n", i ? "AFTER" : "BEFORE",
              v->gpu_note && *v->gpu_note ? FC_WHY_NAME(v->gpu_note) : "not sampled");
  }
  if ((a.items_per_s > 0 && a.items_estimated) || (b.items_per_s > 0 && b.items_estimated))
    fprintf(out, "  (*: steps x items per step: the utterances were not counted)\n");
  fprintf(out, "profile verdicts:\n  BEFORE: %s\n  AFTER:  %s\n",
          a.verdict ? FC_WHY_NAME(a.verdict) : "-", b.verdict ? FC_WHY_NAME(b.verdict) : "-");
  if (isnan(shrink))
    fprintf(out, "shrink factor: none (data wait mean 0 ms -> 0 ms per step)\n");
  else if (isinf(shrink))
    fprintf(out, "shrink factor: infinite (data wait mean %.4g ms -> 0 ms per step)\n", a.mean);
  else
    fprintf(out, "shrink factor: %.*f× (data wait mean %.4g ms -> %.4g ms per step)\n",
            shrink >= 10 ? 0 : 2, shrink, a.mean, b.mean);
  fprintf(out, "verdict: %s\n", verdict);
done:
  json_decref(a.root);
  json_decref(b.root);
  return rc;
}
