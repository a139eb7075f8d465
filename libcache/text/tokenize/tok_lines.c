/* featcache — where the lines of a tokenize run come from: a list read whole, or a manifest handed
 * over a batch at a time as it is read (memory: one batch of lines). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "featcache/fc_tokenize.h"
#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"

/* A batch gathered from a manifest (fc_manifest_opts.on_item): copies of what tokenize needs of
 * each line (the manifest's item lives during the call only). */
typedef struct gather {
  fc_item *lines;
  size_t n, cap;
  tok_batch_fn fn;
  void *ctx;
  uint64_t seen; /* lines handed over by the manifest */
  int stopped; /* fn said TOK_STOP, or failed: lines are only counted now */
  int err; /* fn's error (or ENOMEM): the run's, returned once every line is counted */
} gather;

static void lines_clear(fc_item *l, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(l[i].id);
    free(l[i].path);
    free(l[i].text);
    free(l[i].why);
    free(l[i].id_field);
  }
}

static int gather_item(const fc_item *it, void *user) {
  gather *g = user;
  g->seen++;
  if (g->stopped) return 0;
  fc_item *d = &g->lines[g->n++];
  memset(d, 0, sizeof *d);
  d->line = it->line;
  d->err = it->err;
  int rc;
  if ((it->id && !(d->id = fc_strdup(it->id))) || (it->text && !(d->text = fc_strdup(it->text))) ||
      (it->why && !(d->why = fc_strdup(it->why))) ||
      (it->id_field && !(d->id_field = fc_strdup(it->id_field))))
    rc = ENOMEM;
  else if (g->n < g->cap)
    return 0;
  else
    rc = g->fn(g->lines, g->n, g->ctx);
  lines_clear(g->lines, g->n);
  g->n = 0;
  if (rc) { /* stopped or failed: the rest of the manifest is read to count its lines */
    g->stopped = 1;
    if (rc != TOK_STOP) g->err = rc;
  }
  return 0;
}

/* fn over every line of the run, batch lines at a time: items, or o->manifest read as it goes
 * (memory: a batch of lines). *lines: how many there were (read to the end even after a stop or
 * an error of fn, so that the lines never begun are counted). Returns 0 (TOK_STOP included), fn's
 * error, or the manifest's (ENOMEM, errno codes), then in *input_err too (may be NULL). */
int tok_for_each_batch(const fc_item_list *items, const fc_tokenize_run_opts *o, size_t batch,
                       tok_batch_fn fn, void *ctx, uint64_t *lines, int *input_err) {
  int rc = 0;
  *lines = 0;
  if (!o->manifest) {
    *lines = items->count;
    for (size_t b0 = 0; b0 < items->count && !rc; b0 += batch) {
      size_t m = items->count - b0 < batch ? items->count - b0 : batch;
      rc = fn(items->items + b0, m, ctx);
    }
    return rc == TOK_STOP ? 0 : rc;
  }
  gather g = {.cap = batch, .fn = fn, .ctx = ctx};
  if (!(g.lines = fc_calloc(batch, sizeof *g.lines))) return ENOMEM;
  fc_manifest_opts mo = {0};
  if (o->manifest_opts) mo = *o->manifest_opts;
  if (!mo.max_line_bytes) /* a line's text over the limit fails it: the rest need not be held */
    mo.max_line_bytes = (o->max_text_bytes ? o->max_text_bytes : 65536) + FC_TOKENIZE_LINE_SLACK;
  mo.on_item = gather_item;
  mo.user = &g;
  fc_item_list none;
  char why[256];
  rc = fc_manifest_read(o->manifest, &mo, &none, why, sizeof why);
  if (g.err) { /* the run's error: the manifest was only being counted since */
    rc = g.err;
  } else if (g.n && !g.stopped) { /* the last, short batch; or the lines read before the
                                   * manifest's own error (a line with no line break, a read
                                   * error), handed over all the same: what was read is kept */
    int r = fn(g.lines, g.n, ctx);
    if (rc && input_err) *input_err = rc;
    if (!rc || (r && r != TOK_STOP)) rc = r;
  } else if (rc && input_err) {
    *input_err = rc;
  }
  lines_clear(g.lines, g.n);
  free(g.lines);
  *lines = g.seen;
  return rc == TOK_STOP ? 0 : rc;
}

/* A tok_batch_fn that only lets the lines be counted. */
int tok_count_only(const fc_item *lines, size_t m, void *ctx) {
  (void)lines, (void)m, (void)ctx;
  return TOK_STOP;
}
