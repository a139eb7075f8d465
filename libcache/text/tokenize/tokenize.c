/* featcache — the tokenize pipeline: manifest items → text entries and tok records.
 *
 * Per batch of lines: look every line up first (a line whose text entry and tok record exist is
 * skipped before any normalization or phonemization), tokenize the rest in parallel (OpenMP,
 * dynamic schedule), then commit the batch's puts in one write transaction. Memory: the items
 * (read whole by the manifest reader) plus one batch of records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "featcache/fc_format.h"
#include "featcache/fc_tokenize.h"
#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"

typedef struct line_state {
  int err;
  char why[256];
  const char *text; /* the item's text */
  size_t len;
  fc_digest digest; /* of text */
  int need_text, need_tok;
  size_t
      same_as; /* > 0: the line same_as - 1 of this batch has the same text and makes its record */
  void *rec; /* encoded record (malloc'd) */
  size_t rec_len;
  uint32_t ntok;
  size_t unknown;
} line_state;

static void fail_line(line_state *l, int err, const char *fmt, const char *arg) {
  l->err = err;
  snprintf(l->why, sizeof l->why, fmt, arg);
}

/* Checks that need no tokenizer: manifest errors, missing, overlong or invalid text. */
static void check_line(const fc_item *it, size_t max_bytes, line_state *l) {
  memset(l, 0, sizeof *l);
  if (it->err) {
    fail_line(l, it->err, "%s", it->why ? it->why : fc_strerror(it->err));
    return;
  }
  if (!it->text) {
    fail_line(l, FC_EEMPTY, "%s", "no text");
    return;
  }
  l->text = it->text;
  l->len = strlen(it->text);
  if (l->len >= 3 && memcmp(l->text, "\xEF\xBB\xBF", 3) == 0) l->text += 3, l->len -= 3;
  if (l->len && l->text[l->len - 1] == '\r') l->len--;
  if (l->len > max_bytes) {
    l->err = FC_ETOOLONG;
    snprintf(l->why, sizeof l->why, "text is %zu bytes, over the limit of %zu (--max-text-bytes)",
             l->len, max_bytes);
    return;
  }
  if (!fc_utf8_valid(l->text, l->len)) {
    fail_line(l, FC_EUTF8, "%s", "text is not valid UTF-8");
    return;
  }
  fc_digest_buffer(l->text, l->len, &l->digest);
}

static const char *norm_why(int rc) {
  return rc == FC_EEMPTY  ? "text is empty after normalization"
         : rc == FC_EUTF8 ? "text is not valid UTF-8"
                          : fc_strerror(rc);
}

/* Normalize and encode one line into its record. */
static void tokenize_line(fc_tokenizer *t, const fc_digest *cfg, line_state *l) {
  char *norm = NULL;
  size_t nlen;
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = fc_tok_normalize(fc_tokenizer_norm(t), l->text, l->len, &norm, &nlen);
  if (rc) {
    fail_line(l, rc, "%s", norm_why(rc));
    return;
  }
  rc = fc_tokenizer_encode(t, norm, nlen, &ids, &n, &l->unknown, l->why, sizeof l->why);
  free(norm);
  if (rc) {
    l->err = rc;
    if (!l->why[0]) snprintf(l->why, sizeof l->why, "%s", fc_strerror(rc));
    return;
  }
  if (n == 0 || n > UINT32_MAX) {
    free(ids);
    fail_line(l, FC_EEMPTY, "%s", n ? "too many tokens" : "text gives no tokens");
    return;
  }
  int dtype = fc_tokenizer_dtype(t);
  size_t esz = fc_dtype_size(dtype), plen = n * esz;
  void *payload = ids;
  if (esz == 2) {
    /* ids < vocab size, which the dtype was chosen to hold: narrowing is exact */
    uint16_t *p16 = (uint16_t *)ids;
    for (size_t i = 0; i < n; i++) p16[i] = (uint16_t)ids[i];
  }
  fc_record_header h = {0};
  h.dtype = (uint8_t)dtype;
  h.ndim = 1;
  h.dim0 = (uint32_t)n;
  h.dim1 = 1;
  h.config = *cfg;
  h.producer = FC_PRODUCER_CPU;
  l->rec = fc_malloc(FC_RECORD_HEADER_SIZE + plen);
  if (!l->rec) {
    free(ids);
    fail_line(l, ENOMEM, "%s", "out of memory");
    return;
  }
  rc = fc_record_encode(&h, payload, plen, l->rec);
  free(ids);
  if (rc) {
    free(l->rec);
    l->rec = NULL;
    fail_line(l, rc, "%s", fc_strerror(rc));
    return;
  }
  l->rec_len = FC_RECORD_HEADER_SIZE + plen;
  l->ntok = (uint32_t)n;
}

/* ---- build_vocab: the distinct symbols of the whole corpus ----------------------------------- */
typedef struct sym_ctx {
  tok_map *set;
  int rc;
} sym_ctx;

static void add_symbol(const char *s, size_t len, void *ud) {
  sym_ctx *c = ud;
  if (!c->rc && tok_map_put(c->set, s, len, 0, NULL) == ENOMEM) c->rc = ENOMEM;
}

static int build_vocab(fc_tokenizer *t, const fc_item_list *items, line_state *ls, int nthreads) {
  tok_map *sets = fc_calloc((size_t)nthreads, sizeof *sets);
  if (!sets) return ENOMEM;
  int rc = 0;
#pragma omp parallel num_threads(nthreads)
  {
    tok_map *set = &sets[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 16)
    for (size_t i = 0; i < items->count; i++) {
      line_state *l = &ls[i];
      if (l->err) continue;
      char *norm;
      size_t nlen;
      int r = fc_tok_normalize(fc_tokenizer_norm(t), l->text, l->len, &norm, &nlen);
      if (r == ENOMEM) { /* not the line's fault: a vocab without its symbols would be another
                          * config than a rerun's (found by fault_sites.sh's resumed alloc loop) */
#pragma omp critical(fc_tok_build)
        rc = rc ? rc : ENOMEM;
        continue;
      }
      if (r) {
        fail_line(l, r, "%s", norm_why(r));
        continue;
      }
      sym_ctx c = {set, 0};
      r = fc_tokenizer_symbols(t, norm, nlen, add_symbol, &c);
      free(norm);
      if (r == FC_EPHONEMIZE) { /* this line's failure, not the vocabulary's */
        fail_line(l, r, "%s", fc_strerror(r));
        continue;
      }
      if (r || c.rc) {
#pragma omp critical(fc_tok_build)
        rc = rc ? rc : (r ? r : c.rc);
      }
    }
  }
  tok_map all = {0};
  for (int k = 0; k < nthreads && !rc; k++)
    for (size_t i = 0; i < sets[k].cap && !rc; i++)
      if (sets[k].slots[i].key &&
          tok_map_put(&all, sets[k].slots[i].key, sets[k].slots[i].len, 0, NULL) == ENOMEM)
        rc = ENOMEM;
  for (int k = 0; k < nthreads; k++) tok_map_free(&sets[k]);
  free(sets);
  const char **syms = rc ? NULL : fc_malloc((all.count ? all.count : 1) * sizeof *syms);
  if (!rc && !syms) rc = ENOMEM;
  if (!rc) {
    size_t n = 0;
    for (size_t i = 0; i < all.cap; i++)
      if (all.slots[i].key) syms[n++] = all.slots[i].key;
    rc = fc_tokenizer_build_vocab(t, syms, n);
  }
  free(syms);
  tok_map_free(&all);
  return rc;
}

/* ---- meta: config and vocab ------------------------------------------------------------------- */
static int put_meta(fc_store *s, fc_tokenizer *t, const fc_digest *cfg, const char *json,
                    size_t jlen) {
  int rc = fc_store_put_config(s, cfg, json, jlen);
  if (rc) return rc;
  const char *vt;
  size_t vlen;
  if ((rc = fc_tokenizer_vocab_text(t, &vt, &vlen))) return rc;
  char hex[33], key[48];
  fc_digest_hex(cfg, hex);
  int n = snprintf(key, sizeof key, "%s/%s",
                   fc_tokenizer_kind(t) == FC_TOK_BPE ? "tokenizer" : "vocab", hex);
  fc_put p = {FC_DB_META, key, (size_t)n, vt, vlen, FC_PUT_NOOVERWRITE};
  return fc_store_write(s, &p, 1);
}

static void report(const fc_tokenize_run_opts *o, const fc_item *it, const line_state *l) {
  if (o->report) o->report(it, l->err, l->why, o->report_ud);
}

int fc_tokenize_run(fc_store *s, fc_tokenizer *t, const fc_item_list *items,
                    const fc_tokenize_run_opts *o, fc_tokenize_stats *st) {
  fc_tokenize_run_opts defaults = {0};
  if (!o) o = &defaults;
  memset(st, 0, sizeof *st);
  size_t batch = o->batch ? o->batch : 4096;
  size_t max_bytes = o->max_text_bytes ? o->max_text_bytes : 65536;
  int nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
  size_t n = items->count;
  st->lines = n;
  line_state *ls = fc_calloc(n ? n : 1, sizeof *ls);
  fc_put *puts = fc_calloc(2 * batch, sizeof *puts);
  char(*hexkeys)[16] = fc_calloc(batch, sizeof *hexkeys);
  char **tvals = fc_calloc(batch, sizeof *tvals);
  int rc = 0, stopped = 0; /* stopped: by the stop flag or --strict, not by an error */
  if (!ls || !puts || !hexkeys || !tvals) {
    rc = ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < n; i++) check_line(&items->items[i], max_bytes, &ls[i]);

  const char *json;
  size_t jlen;
  fc_digest cfg;
  if (fc_tokenizer_config(t, NULL, NULL, NULL) == FC_EBADSTATE &&
      (rc = build_vocab(t, items, ls, nthreads)))
    goto out;
  if ((rc = fc_tokenizer_config(t, &json, &jlen, &cfg))) goto out;
  if ((rc = put_meta(s, t, &cfg, json, jlen))) goto out;

  for (size_t b0 = 0; b0 < n && !rc; b0 += batch) {
    size_t b1 = b0 + batch < n ? b0 + batch : n;
    /* 1. what is already stored */
    fc_rtxn *rt;
    if ((rc = fc_store_read_begin(s, &rt))) goto out;
    for (size_t i = b0; i < b1; i++) {
      line_state *l = &ls[i];
      if (l->err) continue;
      fc_digest key;
      fc_record_key(&l->digest, &cfg, &key);
      const void *v;
      size_t vlen;
      const char *id = items->items[i].id;
      l->need_tok = fc_rtxn_get(rt, FC_DB_TOK, key.bytes, 16, &v, &vlen) != 0;
      l->need_text = fc_rtxn_get(rt, FC_DB_TEXT, id, strlen(id), &v, &vlen) != 0 ||
                     vlen != 16 + l->len || memcmp(v, l->digest.bytes, 16) != 0;
      /* a new record comes with its entry (the same bytes when it was there): the entry's write
       * indexes the id under this config (docs/FORMAT.md "Index") */
      if (l->need_tok) l->need_text = 1;
    }
    fc_rtxn_end(rt);
    /* a text seen earlier in the batch: one record, made by its first line; the others are
     * counted with the records already stored */
    tok_map seen = {0};
    for (size_t i = b0; i < b1 && !rc; i++) {
      line_state *l = &ls[i];
      int32_t first;
      if (l->err || !l->need_tok) continue;
      int r = tok_map_put(&seen, (const char *)l->digest.bytes, 16, (int32_t)(i - b0), &first);
      if (r == ENOMEM) rc = ENOMEM;
      if (r == 1) {
        l->need_tok = 0;
        l->same_as = b0 + (size_t)first + 1;
      }
    }
    tok_map_free(&seen);
    if (rc) goto out;
      /* 2. tokenize what is missing */
#pragma omp parallel for schedule(dynamic, 8) num_threads(nthreads)
    for (size_t i = b0; i < b1; i++)
      if (!ls[i].err && ls[i].need_tok) tokenize_line(t, &cfg, &ls[i]);
    for (size_t i = b0; i < b1; i++) { /* its first line failed: so does it, for the same reason */
      line_state *l = &ls[i];
      if (l->same_as && ls[l->same_as - 1].err) {
        l->err = ls[l->same_as - 1].err;
        memcpy(l->why, ls[l->same_as - 1].why, sizeof l->why);
      }
    }
    /* 3. report, then commit the batch (under strict, only the lines before the first bad one) */
    size_t np = 0, end = b1;
    for (size_t i = b0; i < b1; i++) {
      line_state *l = &ls[i];
      if (l->err) {
        st->failed++;
        report(o, &items->items[i], l);
        if (o->strict) {
          rc = l->err;
          stopped = 1;
          end = i;
          break;
        }
      }
    }
    /* counted once the batch is committed: after a failed write its lines count as failed */
    uint64_t processed = 0, skipped = 0, tokens = 0, unknown = 0;
    int brc = 0;
    for (size_t i = b0; i < end; i++) {
      line_state *l = &ls[i];
      if (l->err) continue;
      const char *id = items->items[i].id;
      if (l->need_text) {
        char *tv = fc_malloc(16 + l->len);
        if (!tv) {
          brc = ENOMEM; /* nothing of this batch is written */
          break;
        }
        memcpy(tv, l->digest.bytes, 16);
        memcpy(tv + 16, l->text, l->len);
        tvals[i - b0] = tv;
        puts[np++] = (fc_put){FC_DB_TEXT, id, strlen(id), tv, 16 + l->len, 0};
      }
      if (l->need_tok) {
        fc_digest key;
        fc_record_key(&l->digest, &cfg, &key);
        memcpy(hexkeys[i - b0], key.bytes, 16);
        puts[np++] =
            (fc_put){FC_DB_TOK, hexkeys[i - b0], 16, l->rec, l->rec_len, FC_PUT_NOOVERWRITE};
        processed++;
        tokens += l->ntok;
        unknown += l->unknown;
      } else {
        skipped++;
      }
    }
    if (!brc && np) brc = fc_store_write(s, puts, np);
    if (brc) {
      rc = brc;
      stopped = 0; /* an error, even after --strict stopped the run */
    } else {
      st->processed += processed;
      st->skipped_existing += skipped;
      st->tokens += tokens;
      st->unknown += unknown;
    }
    for (size_t i = b0; i < b1; i++) {
      free(ls[i].rec);
      ls[i].rec = NULL;
      free(tvals[i - b0]);
      tvals[i - b0] = NULL;
    }
    if (rc) break;
    if (o->progress) o->progress(st, o->progress_ud);
    if (o->stop && *o->stop && b1 < n) {
      rc = FC_EINTR;
      stopped = 1;
    }
  }
out:
  /* Every line counted once: the lines not stored and not reported (a failed write's batch, the
   * lines never begun) failed with the run, or were not started when it was stopped on purpose. */
  if (st->processed + st->skipped_existing + st->failed < n) {
    uint64_t rest = n - st->processed - st->skipped_existing - st->failed;
    if (stopped)
      st->not_started = rest;
    else
      st->failed += rest;
  }
  if (ls)
    for (size_t i = 0; i < n; i++) free(ls[i].rec);
  free(ls);
  free(puts);
  free(hexkeys);
  free(tvals);
  return rc;
}

/* ---- split stores ------------------------------------------------------------------------------ */
typedef struct split_progress {
  const fc_tokenize_run_opts *o;
  fc_tokenize_stats done; /* the parts before this one */
} split_progress;

static void add_stats(fc_tokenize_stats *a, const fc_tokenize_stats *b) {
  a->lines += b->lines;
  a->processed += b->processed;
  a->skipped_existing += b->skipped_existing;
  a->failed += b->failed;
  a->not_started += b->not_started;
  a->tokens += b->tokens;
  a->unknown += b->unknown;
}

static void on_part_progress(const fc_tokenize_stats *st, void *ud) {
  split_progress *sp = ud;
  fc_tokenize_stats all = sp->done;
  add_stats(&all, st);
  sp->o->progress(&all, sp->o->progress_ud);
}

int fc_tokenize_run_split(fc_store *const *parts, unsigned n_parts, fc_tokenizer *t,
                          const fc_item_list *items, const fc_tokenize_run_opts *o,
                          fc_tokenize_stats *st) {
  if (n_parts < 2) return fc_tokenize_run(parts[0], t, items, o, st);
  fc_tokenize_run_opts defaults = {0};
  if (!o) o = &defaults;
  memset(st, 0, sizeof *st);
  int rc = 0;
  /* The vocab of a build_vocab tokenizer comes from all the lines, so every part has one config. */
  split_progress sp = {.o = o};
  fc_item_list sub = {.items = NULL, .format = items->format};
  if (fc_tokenizer_config(t, NULL, NULL, NULL) == FC_EBADSTATE &&
      (rc = fc_tokenizer_build_vocab_from(t, items, o)))
    goto out;
  if (!(sub.items = fc_malloc((items->count ? items->count : 1) * sizeof(fc_item)))) {
    rc = ENOMEM;
    goto out;
  }
  fc_tokenize_run_opts po = *o;
  if (o->progress) {
    po.progress = on_part_progress;
    po.progress_ud = &sp;
  }
  for (unsigned k = 0; k < n_parts && !rc; k++) {
    sub.count = 0;
    for (size_t i = 0; i < items->count; i++) { /* an item without an id: part 0 (fc_shard.h) */
      const fc_item *it = &items->items[i];
      unsigned part = it->id ? fc_store_part_of_id(it->id, strlen(it->id), n_parts) : 0;
      if (part == k) sub.items[sub.count++] = *it;
    }
    fc_tokenize_stats ps;
    rc = fc_tokenize_run(parts[k], t, &sub, &po, &ps);
    add_stats(&sp.done, &ps);
  }
out:
  /* every line counted once: those of the parts never run failed with the run, or were not
   * started when it was stopped on purpose (as fc_tokenize_run counts its own) */
  sp.done.lines = items->count;
  uint64_t counted =
      sp.done.processed + sp.done.skipped_existing + sp.done.failed + sp.done.not_started;
  if (counted < items->count) {
    if (rc == FC_EINTR || (o->strict && sp.done.not_started))
      sp.done.not_started += items->count - counted;
    else
      sp.done.failed += items->count - counted;
  }
  *st = sp.done;
  free(sub.items); /* shallow copies: the strings belong to items */
  return rc;
}

int fc_tokenizer_build_vocab_from(fc_tokenizer *t, const fc_item_list *items,
                                  const fc_tokenize_run_opts *o) {
  if (fc_tokenizer_config(t, NULL, NULL, NULL) != FC_EBADSTATE) return FC_ECONFIG;
  size_t max_bytes = o && o->max_text_bytes ? o->max_text_bytes : 65536;
  int nthreads = o && o->threads > 0 ? o->threads : omp_get_max_threads();
  line_state *ls = fc_calloc(items->count ? items->count : 1, sizeof *ls);
  if (!ls) return ENOMEM;
  for (size_t i = 0; i < items->count; i++) check_line(&items->items[i], max_bytes, &ls[i]);
  int rc = build_vocab(t, items, ls, nthreads);
  free(ls);
  return rc;
}
