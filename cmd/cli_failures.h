/* The failed inputs featurize and tokenize list in --json, for cmd/cli.h (which includes it
 * after the --max-failed helpers). Header-only, as cli.h. */
#ifndef FC_CMD_CLI_FAILURES_H
#define FC_CMD_CLI_FAILURES_H

#include "featcache/fc_outfile.h" /* fc_json_write_string */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the failures --json lists ------------------------------------------------------------- */
/* featurize and tokenize list their failed inputs in one shape (docs/featurize.md "Output"):
 * "failures":[{"id","source","line","error","reason"}],"failures_listed":N. At most
 * FC_CLI_FAILURES_LISTED are kept (the tool's "failed" counts them all); memory is theirs. */
enum { FC_CLI_FAILURES_LISTED = 10000 };
typedef struct fc_cli_failure {
  char *id, *source, *reason; /* NULL: null in the JSON */
  size_t line; /* 0: no "line" */
  int err;
} fc_cli_failure;
typedef struct fc_cli_failures {
  fc_cli_failure *v;
  size_t n, cap;
} fc_cli_failures;

static inline char *fc_cli_dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* Keep one failure (copies of the strings); past the limit, or out of memory, it is not listed. */
static inline void fc_cli_failures_add(fc_cli_failures *f, const char *id, const char *source,
                                       size_t line, int err, const char *reason) {
  if (f->n >= FC_CLI_FAILURES_LISTED) return;
  if (f->n == f->cap) {
    size_t cap = f->cap ? 2 * f->cap : 16;
    fc_cli_failure *v = realloc(f->v, cap * sizeof *v);
    if (!v) return;
    f->v = v;
    f->cap = cap;
  }
  f->v[f->n++] = (fc_cli_failure){fc_cli_dup_or_null(id), fc_cli_dup_or_null(source),
                                  fc_cli_dup_or_null(reason), line, err};
}

static inline void fc_cli_json_string_or_null(FILE *out, const char *s) {
  if (s)
    fc_json_write_string(out, s);
  else
    fputs("null", out);
}

/* `"failures":[...],"failures_listed":N` (no comma around it). */
static inline void fc_cli_failures_json(FILE *out, const fc_cli_failures *f) {
  fputs("\"failures\":[", out);
  for (size_t i = 0; i < f->n; i++) {
    const fc_cli_failure *e = &f->v[i];
    fputs(i ? ",{\"id\":" : "{\"id\":", out);
    fc_cli_json_string_or_null(out, e->id);
    fputs(",\"source\":", out);
    fc_cli_json_string_or_null(out, e->source);
    if (e->line) fprintf(out, ",\"line\":%zu", e->line);
    fputs(",\"error\":", out);
    fc_json_write_string(out, fc_strerror(e->err));
    fputs(",\"reason\":", out);
    fc_cli_json_string_or_null(out, e->reason);
    fputc('}', out);
  }
  fprintf(out, "],\"failures_listed\":%zu", f->n);
}

static inline void fc_cli_failures_free(fc_cli_failures *f) {
  for (size_t i = 0; i < f->n; i++) {
    free(f->v[i].id);
    free(f->v[i].source);
    free(f->v[i].reason);
  }
  free(f->v);
  memset(f, 0, sizeof *f);
}

#endif
