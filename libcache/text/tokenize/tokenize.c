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
#include "formats/common/args.h"
#include "featcache/fc_shard.h"
#include "featcache/fc_tokenize.h"
#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/stored_text.h"
#include "formats/config/config_stamp.h"

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
  int has_ph; /* phonemes: ph is espeak-ng's reading of the text (tok_phcache), made once */
  char *ph; /* malloc'd (NULL for an empty reading) */
  size_t phlen;
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
  fc_stored_text(&l->text, &l->len);
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

static const char *norm_why(int rc, const fc_tok_norm *nm, const char *s, size_t len) {
  const char *why = tok_norm_why(rc, nm, s, len);
  return why ? why : fc_strerror(rc);
}

/* Normalize and encode one line into its record (from its reading, when the vocab pass kept it:
 * the ids fc_tokenizer_encode gives, espeak-ng not asked again). */
static void tokenize_line(fc_tokenizer *t, const fc_digest *cfg, line_state *l) {
  char *norm = NULL;
  size_t nlen;
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = l->has_ph ? 0 : fc_tok_normalize(fc_tokenizer_norm(t), l->text, l->len, &norm, &nlen);
  if (rc) {
    fail_line(l, rc, "%s", norm_why(rc, fc_tokenizer_norm(t), l->text, l->len));
    return;
  }
  if (l->has_ph)
    rc = tok_tokenizer_encode_reading(t, l->ph ? l->ph : "", l->phlen, &ids, &n, &l->unknown,
                                      l->why, sizeof l->why);
  else
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

typedef struct vocab_ctx {
  fc_tokenizer *t;
  tok_map *sets; /* one per thread */
  line_state *ls; /* the batch's */
  size_t max_bytes;
  int nthreads;
  volatile const int *stop; /* the run's stop flag, checked before each batch */
  int stopped; /* it was set: the vocab is not built, nothing is stored */
  tok_phcache *cache; /* phonemes: each line's reading, kept for the ids (NULL: none kept) */
  uint32_t shard_k, shard_n; /* shard_n > 0: the readings of shard_k's lines only */
} vocab_ctx;

static int vocab_batch(const fc_item *lines, size_t m, void *ctx) {
  vocab_ctx *v = ctx;
  int rc = 0;
  if (v->stop && *v->stop) { /* a vocab pass reads the whole corpus: minutes for phonemes */
    v->stopped = 1;
    return TOK_STOP;
  }
  for (size_t i = 0; i < m; i++) check_line(&lines[i], v->max_bytes, &v->ls[i]);
#pragma omp parallel num_threads(v->nthreads)
  {
    tok_map *set = &v->sets[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 16)
    for (size_t i = 0; i < m; i++) {
      line_state *l = &v->ls[i];
      if (l->err) continue;
      char *norm;
      size_t nlen;
      int r = fc_tok_normalize(fc_tokenizer_norm(v->t), l->text, l->len, &norm, &nlen);
      if (r == ENOMEM) { /* not the line's fault: a vocab without its symbols would be another
                          * config than a rerun's (found by fault_sites.sh's resumed alloc loop) */
#pragma omp critical(fc_tok_build)
        rc = rc ? rc : ENOMEM;
        continue;
      }
      if (r) continue; /* the line fails again when it is tokenized, saying why */
      sym_ctx c = {set, 0};
      if (v->cache) { /* the reading kept: espeak-ng reads each line once (tok_phcache) */
        tok_buf b = {0};
        r = tok_tokenizer_reading(v->t, norm, nlen, &b);
        if (!r) tok_phoneme_units(b.p ? b.p : "", b.len, add_symbol, &c);
        if (!r)
          l->ph = b.p, l->phlen = b.len, l->has_ph = 1;
        else
          free(b.p);
      } else {
        r = fc_tokenizer_symbols(v->t, norm, nlen, add_symbol, &c);
      }
      free(norm);
      if (r == FC_EPHONEMIZE) continue; /* this line's failure, not the vocabulary's */
      if (r || c.rc) {
#pragma omp critical(fc_tok_build)
        rc = rc ? rc : (r ? r : c.rc);
      }
    }
  }
  /* in the lines' order; a line without a reading has an entry too, so that the run's lookups
   * keep step with lines that have no number; a cache that fails takes no more (the lines after
   * are read by espeak-ng again), and the vocab goes on */
  for (size_t i = 0; i < m; i++) {
    line_state *l = &v->ls[i];
    const char *id = lines[i].id; /* the run's shard: fc_item_list_shard's rule */
    const int in_run =
        !v->shard_n || (id ? fc_shard_of(id, strlen(id), v->shard_n) : 0) == v->shard_k;
    if (v->cache && !l->err && in_run)
      (void)tok_phcache_add(v->cache, lines[i].line, &l->digest,
                            l->has_ph ? (l->ph ? l->ph : "") : NULL, l->phlen);
    free(l->ph);
    l->ph = NULL;
    l->has_ph = 0;
  }
  return rc;
}

/* The vocabulary of every line of the run, batch lines at a time (ls: batch line states);
 * FC_EINTR when o->stop was seen between two batches or after the last. Phonemes: each line's
 * reading is left with the tokenizer for the run's ids (tok_phcache; its file, when the readings
 * pass the memory bound, in dir: the store's directory, NULL for $TMPDIR); by_shard: only the
 * readings of o's shard's lines (the run's), the vocab still every line's. */
static int build_vocab(fc_tokenizer *t, const fc_item_list *items, const fc_tokenize_run_opts *o,
                       size_t batch, size_t max_bytes, line_state *ls, int nthreads,
                       const char *dir, int by_shard) {
  vocab_ctx v = {.t = t,
                 .sets = fc_calloc((size_t)nthreads, sizeof *v.sets),
                 .ls = ls,
                 .max_bytes = max_bytes,
                 .nthreads = nthreads,
                 .stop = o->stop,
                 .shard_k = by_shard ? o->shard_k : 0,
                 .shard_n = by_shard ? o->shard_n : 0};
  if (!v.sets) return ENOMEM;
  const long long keep = tok_phcache_mem_bytes(); /* < 0: FC_PHONEME_CACHE=off */
  if (fc_tokenizer_kind(t) == FC_TOK_PHONEMES && keep >= 0 &&
      tok_phcache_open(dir, (size_t)keep, &v.cache) != 0)
    v.cache = NULL; /* out of memory already: espeak-ng reads each line twice, as it can */
  uint64_t lines;
  int rc = tok_for_each_batch(items, o, batch, vocab_batch, &v, &lines, NULL);
  /* stopped in the pass's last batch (a corpus of one batch: its only one) too: the run stops
   * here, before it stores the config or a line, rather than tokenize a whole batch first */
  if (!rc && (v.stopped || (o->stop && *o->stop))) rc = FC_EINTR;
  tok_map all = {0};
  for (int k = 0; k < nthreads && !rc; k++)
    for (size_t i = 0; i < v.sets[k].cap && !rc; i++)
      if (v.sets[k].slots[i].key &&
          tok_map_put(&all, v.sets[k].slots[i].key, v.sets[k].slots[i].len, 0, NULL) == ENOMEM)
        rc = ENOMEM;
  for (int k = 0; k < nthreads; k++) tok_map_free(&v.sets[k]);
  free(v.sets);
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
  if (!rc)
    tok_tokenizer_set_phcache(t, v.cache);
  else
    tok_phcache_free(v.cache);
  return rc;
}

/* ---- meta: config and vocab ------------------------------------------------------------------- */
/* The config (cfg/<hex>, created/<hex>, as fc_store_put_config writes them) and its vocabulary or
 * tokenizer.json (vocab/<hex>, tokenizer/<hex>) in one write transaction: a job cut short leaves
 * both or neither, never a config whose vocabulary is missing (docs/FORMAT.md "Configs"). */
static int put_meta(fc_store *s, fc_tokenizer *t, const fc_digest *cfg, const char *json,
                    size_t jlen, int require) {
  const char *vt;
  size_t vlen;
  int rc = fc_tokenizer_vocab_text(t, &vt, &vlen);
  if (rc) return rc;
  char ckey[37], skey[41], when[21], vkey[48];
  config_key(cfg, ckey);
  config_stamp(cfg, skey, when);
  int n = snprintf(vkey, sizeof vkey, "%s/%s",
                   fc_tokenizer_kind(t) == FC_TOK_BPE ? "tokenizer" : "vocab", ckey + 4);
  fc_put p[3] = {{FC_DB_META, ckey, 36, json, jlen, require ? FC_PUT_REQUIRE : FC_PUT_NOOVERWRITE},
                 {FC_DB_META, skey, 40, when, 20, FC_PUT_NOOVERWRITE},
                 {FC_DB_META, vkey, (size_t)n, vt, vlen, FC_PUT_NOOVERWRITE}};
  return fc_store_write(s, p, 3);
}

static void report(const fc_tokenize_run_opts *o, const fc_item *it, const line_state *l) {
  if (o->report) o->report(it, l->err, l->why, o->report_ud);
}

/* What a batch counts once it is committed (in bulk, once the merge is). */
typedef struct counts {
  uint64_t processed, skipped, tokens, unknown, entries;
} counts;

static void add_counts(fc_tokenize_stats *st, const counts *c) {
  st->processed += c->processed;
  st->skipped_existing += c->skipped;
  st->tokens += c->tokens;
  st->unknown += c->unknown;
  st->entries += c->entries;
}

/* One run: what its batches share. Per-line state exists for the batch in flight only. */
typedef struct run_ctx {
  fc_store *s;
  fc_tokenizer *t;
  const fc_tokenize_run_opts *o;
  fc_tokenize_stats *st;
  fc_digest cfg;
  size_t batch, max_bytes;
  int nthreads;
  line_state *ls;
  fc_put *puts; /* [2 * batch + 1]: tok puts from 0, text puts from batch; the config's guard */
  unsigned char *kept; /* [2 * batch + 1]: the puts that met their key stored (another writer's) */
  char ckey[37]; /* meta cfg/<hex>: each batch requires it there (FC_PUT_REQUIRE), not dropped */
  char (*hexkeys)[16];
  char **tvals;
  uint32_t *unknowns; /* [2 * batch]: a bulk load's aux of the tok puts (unknowns), then of the text
                       * puts (TOK_AUX_NEW with the tokens of a line that made its record) */
  tok_phcache *cache; /* phonemes: the vocab pass's readings (NULL: none) */
  const char *json; /* the config, and whether it is in the store's meta yet (put_meta) */
  size_t jlen;
  int meta_put;
  int cfg_seen; /* a lookup found a record of this config with the config there: not put again */
  int decided, bulk; /* the first batch decides whether the run is a bulk load */
  tok_spill *sp;
  counts pending; /* bulk: what the merge will commit */
  int stopped; /* by the stop flag or --strict, not by an error */
  int rc; /* the run's outcome so far */
} run_ctx;

/* The config and its vocabulary into meta before the first write that stores anything (a record
 * or an entry, which require it there): a run that stores nothing — no line, every line failed or
 * stored already — leaves no config of its own (a vocab built from no text would be one). */
static int ensure_meta(run_ctx *c) {
  if (c->meta_put) return 0;
  /* a lookup counted records of it stored: it is there, or was dropped since, and then is not
   * stored anew without them (FC_EDROPPED), as featurize's cfg_seen */
  int rc = put_meta(c->s, c->t, &c->cfg, c->json, c->jlen, c->cfg_seen);
  c->meta_put = !rc;
  return rc;
}

/* After a batch: TOK_STOP when --strict stopped the run or the stop flag is set (FC_EINTR), else 0. */
static int batch_end(run_ctx *c) {
  if (c->stopped) return TOK_STOP; /* --strict */
  if (c->o->stop && *c->o->stop) {
    c->rc = FC_EINTR;
    c->stopped = 1;
    return TOK_STOP;
  }
  return 0;
}

/* A check's batch (fc_tokenize_run_opts.check_only), its lookups made: each line failed, stored or
 * not stored, counted and reported; nothing tokenized, nothing written. */
static int check_batch(run_ctx *c, const fc_item *lines, size_t m) {
  const fc_tokenize_run_opts *o = c->o;
  fc_tokenize_stats *st = c->st;
  for (size_t i = 0; i < m; i++) {
    const line_state *l = &c->ls[i];
    if (l->err) {
      st->failed++;
      report(o, &lines[i], l);
      if (o->strict) {
        c->rc = l->err;
        c->stopped = 1;
        break;
      }
    } else if (l->need_tok || l->need_text) {
      st->not_stored++;
      if (o->report_not_stored) o->report_not_stored(&lines[i], o->report_ud);
    } else {
      st->skipped_existing++;
    }
  }
  if (o->progress) o->progress(st, o->progress_ud);
  return batch_end(c);
}

static int run_batch(const fc_item *lines, size_t m, void *ctxp) {
  run_ctx *c = ctxp;
  const fc_tokenize_run_opts *o = c->o;
  fc_tokenize_stats *st = c->st;
  line_state *ls = c->ls;
  int rc = 0;
  if (!c->decided) { /* a bulk load needs more than this batch: it is full */
    c->decided = 1;
    if (o->bulk >= 0 && m == c->batch && (rc = tok_store_is_empty(c->s, &c->bulk))) return rc;
    if (c->bulk && tok_spill_open(fc_store_path(c->s), &c->sp) != 0) c->bulk = 0; /* as a rerun */
  }
  for (size_t i = 0; i < m; i++) check_line(&lines[i], c->max_bytes, &ls[i]);
  /* 1. what is already stored (a bulk load's store holds nothing) */
  fc_rtxn *rt = NULL;
  if (!c->bulk && (rc = fc_store_read_begin(c->s, &rt))) return rc;
  for (size_t i = 0; i < m; i++) {
    line_state *l = &ls[i];
    if (l->err) continue;
    if (c->bulk) {
      l->need_tok = l->need_text = 1;
      continue;
    }
    fc_digest key;
    fc_record_key(&l->digest, &c->cfg, &key);
    const void *v;
    size_t vlen;
    const char *id = lines[i].id;
    l->need_tok = fc_rtxn_get(rt, FC_DB_TOK, key.bytes, 16, &v, &vlen) != 0;
    if (!l->need_tok && !c->cfg_seen)
      c->cfg_seen = !fc_rtxn_get(rt, FC_DB_META, c->ckey, 36, &v, &vlen);
    l->need_text = fc_rtxn_get(rt, FC_DB_TEXT, id, strlen(id), &v, &vlen) != 0 ||
                   vlen != 16 + l->len || memcmp(v, l->digest.bytes, 16) != 0;
    /* a new record comes with its entry (the same bytes when it was there): the entry's write
     * indexes the id under this config (docs/FORMAT.md "Index") */
    if (l->need_tok) l->need_text = 1;
  }
  fc_rtxn_end(rt);
  for (size_t i = 0; i < m && o->check_only; i++) { /* a run fails these before tokenizing */
    line_state *l = &ls[i];
    char *norm = NULL;
    size_t nlen;
    if (l->err || !l->need_tok) continue; /* a stored record's text normalized */
    int r = fc_tok_normalize(fc_tokenizer_norm(c->t), l->text, l->len, &norm, &nlen);
    free(norm);
    if (r == ENOMEM) return ENOMEM;
    if (r) fail_line(l, r, "%s", norm_why(r, fc_tokenizer_norm(c->t), l->text, l->len));
  }
  if (o->check_only) return check_batch(c, lines, m);
  /* a text seen earlier in the batch: one record, made by its first line; the others are
   * counted with the records already stored */
  tok_map seen = {0};
  for (size_t i = 0; i < m && !rc; i++) {
    line_state *l = &ls[i];
    int32_t first;
    if (l->err || !l->need_tok) continue;
    int r = tok_map_put(&seen, (const char *)l->digest.bytes, 16, (int32_t)i, &first);
    if (r == ENOMEM) rc = ENOMEM;
    if (r == 1) {
      l->need_tok = 0;
      l->same_as = (size_t)first + 1;
    }
  }
  tok_map_free(&seen);
  if (rc) return rc;
  /* the readings the vocab pass made of the lines to tokenize, in their order */
  for (size_t i = 0; i < m && c->cache; i++)
    if (!ls[i].err && ls[i].need_tok)
      ls[i].has_ph =
          tok_phcache_find(c->cache, lines[i].line, &ls[i].digest, &ls[i].ph, &ls[i].phlen);
      /* 2. tokenize what is missing */
#pragma omp parallel for schedule(dynamic, 8) num_threads(c->nthreads)
  for (size_t i = 0; i < m; i++)
    if (!ls[i].err && ls[i].need_tok) tokenize_line(c->t, &c->cfg, &ls[i]);
  for (size_t i = 0; i < m; i++) { /* its first line failed: so does it, for the same reason */
    line_state *l = &ls[i];
    if (l->same_as && ls[l->same_as - 1].err) {
      l->err = ls[l->same_as - 1].err;
      memcpy(l->why, ls[l->same_as - 1].why, sizeof l->why);
    }
  }
  /* test builds: FC_FAULT_STOP=tokenize_batch:N stops the run between its N-th batch's lookups
   * and its write, for another writer to store the same lines (tests/cli/tokenize_concurrent) */
  fault_stop("tokenize_batch");
  /* 3. report, then commit the batch (under strict, only the lines before the first bad one) */
  size_t end = m;
  for (size_t i = 0; i < m; i++) {
    line_state *l = &ls[i];
    if (l->err) {
      st->failed++;
      report(o, &lines[i], l);
      if (o->strict) {
        c->rc = l->err;
        c->stopped = 1;
        end = i;
        break;
      }
    }
  }
  /* counted once the batch is committed: after a failed write its lines count as failed */
  counts k = {0};
  size_t nt = 0, nx = 0; /* tok puts from puts[0], text puts from puts[batch] */
  fc_put *puts = c->puts;
  for (size_t i = 0; i < end && !rc; i++) {
    line_state *l = &ls[i];
    if (l->err) continue;
    const char *id = lines[i].id;
    if (l->need_text) {
      char *tv = fc_malloc(16 + l->len);
      if (!tv) {
        rc = ENOMEM; /* nothing of this batch is written */
        break;
      }
      memcpy(tv, l->digest.bytes, 16);
      k.entries++;
      memcpy(tv + 16, l->text, l->len);
      c->tvals[i] = tv;
      c->unknowns[c->batch + nx] =
          l->need_tok ? TOK_AUX_NEW | (uint32_t)(l->ntok < TOK_AUX_NEW ? l->ntok : TOK_AUX_NEW - 1)
                      : 0;
      puts[c->batch + nx++] = (fc_put){FC_DB_TEXT, id, strlen(id), tv, 16 + l->len, 0};
    }
    if (l->need_tok) {
      fc_digest key;
      fc_record_key(&l->digest, &c->cfg, &key);
      memcpy(c->hexkeys[i], key.bytes, 16);
      c->unknowns[nt] = (uint32_t)(l->unknown < TOK_AUX_NEW ? l->unknown : TOK_AUX_NEW - 1);
      puts[nt++] = (fc_put){FC_DB_TOK, c->hexkeys[i], 16, l->rec, l->rec_len, FC_PUT_NOOVERWRITE};
      k.processed++;
      k.tokens += l->ntok;
      k.unknown += l->unknown;
    } else {
      k.skipped++;
    }
  }
  if (!rc && c->bulk) { /* into the runs: the store sees them at the end, in key order */
    rc = tok_spill_run(c->sp, 0, puts, c->unknowns, nt);
    if (!rc) rc = tok_spill_run(c->sp, 1, puts + c->batch, c->unknowns + c->batch, nx);
  } else if (!rc && (nt || nx) && !(rc = ensure_meta(c))) { /* keys in order: pages in order */
    tok_sort_puts(puts, nt);
    tok_sort_puts(puts + c->batch, nx);
    memmove(puts + nt, puts + c->batch, nx * sizeof *puts);
    /* the config the records are stored under, written at the start: still there, or the
     * batch is not stored (a drop meanwhile: FC_EDROPPED, no record left under no config) */
    puts[nt + nx] = (fc_put){FC_DB_META, c->ckey, 36, NULL, 0, FC_PUT_REQUIRE};
    rc = fc_store_write_kept(c->s, puts, nt + nx + 1, c->kept);
    for (size_t j = 0; j < nt && !rc; j++) { /* another writer stored it since the lookups */
      if (!c->kept[j]) continue;
      const line_state *l = &ls[(const char(*)[16])puts[j].key - c->hexkeys]; /* hexkeys[line] */
      k.processed--, k.skipped++;
      k.tokens -= l->ntok;
      k.unknown -= l->unknown;
    }
  }
  if (!rc && c->bulk) {
    c->pending.processed += k.processed;
    c->pending.skipped += k.skipped;
    c->pending.entries += k.entries;
  } else if (!rc) {
    add_counts(st, &k);
  }
  for (size_t i = 0; i < m; i++) {
    free(ls[i].rec);
    ls[i].rec = NULL;
    free(ls[i].ph);
    ls[i].ph = NULL;
    free(c->tvals[i]);
    c->tvals[i] = NULL;
  }
  if (rc) { /* an error, even after --strict stopped the run */
    c->rc = rc;
    c->stopped = 0;
    return rc;
  }
  if (o->progress && !c->bulk) {
    o->progress(st, o->progress_ud);
  } else if (o->progress) { /* a bulk load: the lines written to its runs so far, which the merge
                               stores at the end (the final counts come with the merge) */
    fc_tokenize_stats shown = *st;
    add_counts(&shown, &c->pending);
    o->progress(&shown, o->progress_ud);
  }
  return batch_end(c);
}

/* fc_tokenize_run into one store; the readings a vocab pass left with t stay there (a split store's
 * next part reads them too). */
int tok_run_store(fc_store *s, fc_tokenizer *t, const fc_item_list *items,
                  const fc_tokenize_run_opts *o, fc_tokenize_stats *st, int *stopped) {
  fc_tokenize_run_opts defaults = {0};
  if (!o) o = &defaults;
  memset(st, 0, sizeof *st);
  run_ctx c = {.s = s, .t = t, .o = o, .st = st, .decided = o->check_only}; /* a check: no bulk */
  c.batch = o->batch ? o->batch : 4096;
  c.max_bytes = o->max_text_bytes ? o->max_text_bytes : 65536;
  c.nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
  c.ls = fc_calloc(c.batch, sizeof *c.ls);
  c.puts = fc_calloc(2 * c.batch + 1, sizeof *c.puts);
  c.kept = fc_calloc(2 * c.batch + 1, 1);
  c.hexkeys = fc_calloc(c.batch, sizeof *c.hexkeys);
  c.tvals = fc_calloc(c.batch, sizeof *c.tvals);
  c.unknowns = fc_calloc(2 * c.batch, sizeof *c.unknowns);
  uint64_t n = items && !o->manifest ? items->count : 0;
  st->lines = n; /* known now for a list; a manifest's at the end */
  int rc = 0, ran = 0; /* ran: the run read the manifest (and so counted its lines) */
  if (!c.ls || !c.puts || !c.kept || !c.hexkeys || !c.tvals || !c.unknowns) {
    rc = ENOMEM;
    goto out;
  }
  if (fc_tokenizer_config(t, NULL, NULL, NULL) == FC_EBADSTATE &&
      (rc =
           build_vocab(t, items, o, c.batch, c.max_bytes, c.ls, c.nthreads, fc_store_path(s), 0))) {
    c.stopped = rc == FC_EINTR; /* stopped before the vocab was built: nothing stored */
    goto out;
  }
  if ((rc = fc_tokenizer_config(t, &c.json, &c.jlen, &c.cfg))) goto out;
  config_key(&c.cfg, c.ckey);
  if ((c.cache = tok_tokenizer_phcache(t))) tok_phcache_rewind(c.cache);
  int input_err = 0; /* the manifest's own (a line with no line break): its lines read are kept */
  rc = tok_for_each_batch(items, o, c.batch, run_batch, &c, &n, &input_err);
  ran = 1;
  if (!rc) rc = c.rc; /* FC_EINTR, or strict's line error */
  if (c.bulk && (!rc || c.stopped || rc == input_err) &&
      (c.pending.entries || c.pending.processed)) {
    /* the work done so far goes in, stopped or not, or cut short by the manifest */
    tok_merged recs = {0}, ents = {0};
    const fc_put guard = {FC_DB_META, c.ckey, 36, NULL, 0, FC_PUT_REQUIRE};
    int mrc = ensure_meta(&c);
    /* test builds: FC_FAULT_STOP=tokenize_merge:1 stops a bulk load between its config and its
     * records, each batch of which requires the config (tests/unit/test_drop_writer drops it) */
    fault_stop("tokenize_merge");
    if (!mrc)
      mrc = tok_spill_merge(c.sp, s, 0, FC_DB_TOK, FC_PUT_NOOVERWRITE, &guard, c.batch, 64u << 20,
                            &recs);
    if (!mrc) mrc = tok_spill_merge(c.sp, s, 1, FC_DB_TEXT, 0, &guard, c.batch, 64u << 20, &ents);
    if (mrc) { /* the lines of the text entries committed before are stored (their records
                * went in first): counted as such, the others fail with the run */
      rc = mrc;
      c.stopped = 0;
      counts k = {ents.marked, ents.puts - ents.marked, ents.aux, 0, ents.puts};
      add_counts(st, &k);
    } else { /* a text two batches made is one record: the second line counts as stored */
      c.pending.processed -= recs.duplicates;
      c.pending.skipped += recs.duplicates;
      c.pending.tokens = recs.dim0;
      c.pending.unknown = recs.aux;
      add_counts(st, &c.pending);
      if (o->progress) o->progress(st, o->progress_ud);
    }
  }
out:
  /* Every line counted once: the lines not stored and not reported (a failed write's batch, the
   * lines never begun) failed with the run, or were not started when it was stopped on purpose.
   * A manifest the run never read (it failed or stopped before: the config's write, the vocab) is
   * read now to count them. */
  if (o->manifest && !ran) tok_for_each_batch(items, o, c.batch, tok_count_only, NULL, &n, NULL);
  st->lines = n;
  if (st->processed + st->skipped_existing + st->failed + st->not_stored < n) {
    uint64_t rest = n - st->processed - st->skipped_existing - st->failed - st->not_stored;
    if (c.stopped)
      st->not_started = rest;
    else
      st->failed += rest;
  }
  if (stopped) *stopped = c.stopped;
  if (c.ls)
    for (size_t i = 0; i < c.batch; i++) free(c.ls[i].rec), free(c.ls[i].ph);
  tok_spill_close(c.sp);
  free(c.ls);
  free(c.puts);
  free(c.kept);
  free(c.hexkeys);
  free(c.tvals);
  free(c.unknowns);
  return rc;
}

int fc_tokenize_run(fc_store *s, fc_tokenizer *t, const fc_item_list *items,
                    const fc_tokenize_run_opts *o, fc_tokenize_stats *st) {
  FC_ARGS(s, t, items);
  int rc = tok_run_store(s, t, items, o, st, NULL);
  tok_tokenizer_set_phcache(t, NULL); /* the readings were for this run */
  return rc;
}

int fc_tokenizer_build_vocab_from(fc_tokenizer *t, const fc_item_list *items,
                                  const fc_tokenize_run_opts *o) {
  FC_ARGS(t, items);
  return tok_build_vocab_from(t, items, o, NULL, 1);
}

int tok_build_vocab_from(fc_tokenizer *t, const fc_item_list *items, const fc_tokenize_run_opts *o,
                         const char *dir, int by_shard) {
  if (fc_tokenizer_config(t, NULL, NULL, NULL) != FC_EBADSTATE) return FC_ECONFIG;
  fc_tokenize_run_opts defaults = {0};
  if (!o) o = &defaults;
  size_t max_bytes = o->max_text_bytes ? o->max_text_bytes : 65536;
  int nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
  size_t batch = o->batch ? o->batch : 4096;
  line_state *ls = fc_calloc(batch, sizeof *ls);
  if (!ls) return ENOMEM;
  int rc = build_vocab(t, items, o, batch, max_bytes, ls, nthreads, dir, by_shard);
  free(ls);
  return rc;
}
