/* The loader's index: the utterances of its stores, and finding their records. A store without
 * indexes is walked by its entries, each id's records looked up and their headers checked at open
 * (ld_index_store_lookups). A store read through its configs' indexes (docs/FORMAT.md "Index")
 * gives its utterances from one walk of each index at open (index_store_fast), and each item's
 * records are found and their headers checked later, when a batch (or a hint, or the locality
 * plan) first needs them (ld_resolve, under resolve_mu). The transactions are the loader's
 * (loader.c): the records and index values the items point at stay valid until close. */
#include "libcache/core/loader/loader_int.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "featcache/fc_format.h"
#include "formats/common/alloc.h"
#include "formats/common/why.h"

/* the problem of an id with a text entry and no audio entry (the failure featurize recorded for
 * it after the colon, when there is one) */
#define TEXT_ONLY "text without audio entry"

/* ---- small helpers ----------------------------------------------------------------------------- */
int ld_add_problem(fc_loader *l, uint32_t store, const char *id, size_t id_len,
                   const char *reason) {
  if (l->n_problems == l->cap_problems) {
    uint64_t cap = l->cap_problems ? l->cap_problems * 2 : 16;
    ld_problem *p = fc_realloc(l->problems, cap * sizeof *p);
    if (!p) return ENOMEM;
    l->problems = p;
    l->cap_problems = cap;
  }
  ld_problem *p = &l->problems[l->n_problems];
  p->id = fc_strndup(id, id_len);
  p->reason = fc_strdup(reason);
  p->store = store;
  if (!p->id || !p->reason) {
    free(p->id);
    free(p->reason);
    return ENOMEM;
  }
  l->n_problems++;
  return 0;
}

/* ---- the index --------------------------------------------------------------------------------- */
/* Check a record against what the loader expects. 0, or FC_EFORMAT/FC_ECHECKSUM with a reason. */
int ld_check_record(fc_loader *l, const void *val, size_t len, int tokens, const fc_digest *cfg,
                    fc_record_header *h, char *why, size_t why_len) {
  const void *payload;
  int rc = fc_record_parse(val, len, h, &payload, why, why_len);
  if (rc) return rc;
  if (memcmp(h->config.bytes, cfg->bytes, 16) != 0) {
    fc_why(why, why_len, "record carries another config digest");
    return FC_EFORMAT;
  }
  if (!tokens) {
    int want = l->mel_coded ? FC_DTYPE_MQ : l->mel_dtype;
    if (h->ndim != 2 || h->dim1 != l->n_mels || h->dtype != want) {
      fc_why(why, why_len, "record is %ux%u %s, the config says [frames][%u] %s", h->dim0, h->dim1,
             fc_dtype_name(h->dtype) ? fc_dtype_name(h->dtype) : "?", l->n_mels,
             fc_dtype_name(want));
      return FC_EFORMAT;
    }
    if (h->dim0 == 0) {
      fc_why(why, why_len, "record has 0 frames");
      return FC_EFORMAT;
    }
  } else {
    if (h->ndim != 1 ||
        (h->dtype != FC_DTYPE_I32 && h->dtype != FC_DTYPE_I16 && h->dtype != FC_DTYPE_U16)) {
      fc_why(why, why_len, "token record is not a 1-d integer array");
      return FC_EFORMAT;
    }
    if (l->tok_dtype && h->dtype != l->tok_dtype) {
      fc_why(why, why_len, "token record dtype %s differs from the others' %s",
             fc_dtype_name(h->dtype), fc_dtype_name(l->tok_dtype));
      return FC_EFORMAT;
    }
  }
  return 0;
}

/* Find id's records in store si. 0 and *it filled; FC_ENOTFOUND / FC_EFORMAT / FC_ECHECKSUM with
 * a reason; LMDB codes. The audio entry may be given (cursor walk) or looked up (aval NULL). */
int ld_find_records(fc_loader *l, uint32_t si, const char *id, size_t id_len, const void *aval,
                    size_t alen, ld_item *it, char *why, size_t why_len) {
  ld_store *st = &l->stores[si];
  fc_store *s = st->s;
  MDB_val k, v;
  int rc;
  if (!aval) {
    k = (MDB_val){id_len, (void *)id};
    rc = mdb_get(st->txn, s->dbi[FC_DB_AUDIO], &k, &v);
    if (rc == MDB_NOTFOUND) {
      fc_why(why, why_len, "no audio entry");
      return FC_ENOTFOUND;
    }
    if (rc) return rc;
    aval = v.mv_data;
    alen = v.mv_size;
  }
  fc_audio_entry ae;
  if (fc_audio_entry_decode(aval, alen, &ae)) {
    fc_why(why, why_len, "corrupt audio entry");
    return FC_EFORMAT;
  }
  fc_digest key;
  fc_record_key(&ae.digest, &st->mel_cfg, &key);
  k = (MDB_val){16, key.bytes};
  rc = mdb_get(st->txn, s->dbi[FC_DB_FEAT], &k, &v);
  if (rc == MDB_NOTFOUND) {
    char hex[33];
    fc_digest_hex(&st->mel_cfg, hex);
    fc_why(why, why_len, "no features for config %s", hex);
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  fc_record_header h;
  char r[200];
  if ((rc = ld_check_record(l, v.mv_data, v.mv_size, 0, &st->mel_cfg, &h, r, sizeof r))) {
    fc_why(why, why_len, "corrupt feature record: %s", r);
    return rc;
  }
  memset(it, 0, sizeof *it);
  it->mel_rec = v.mv_data;
  it->frames = h.dim0;
  it->store = si;
  if (!l->has_tokens) return 0;
  k = (MDB_val){id_len, (void *)id};
  rc = mdb_get(st->txn, s->dbi[FC_DB_TEXT], &k, &v);
  if (rc == MDB_NOTFOUND) {
    fc_why(why, why_len, "no text entry");
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  fc_digest td;
  if (fc_text_entry_decode(v.mv_data, v.mv_size, &td, NULL, NULL)) {
    fc_why(why, why_len, "corrupt text entry");
    return FC_EFORMAT;
  }
  fc_record_key(&td, &st->tok_cfg, &key);
  k = (MDB_val){16, key.bytes};
  rc = mdb_get(st->txn, s->dbi[FC_DB_TOK], &k, &v);
  if (rc == MDB_NOTFOUND) {
    char hex[33];
    fc_digest_hex(&st->tok_cfg, hex);
    fc_why(why, why_len, "no tokens for config %s", hex);
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  if ((rc = ld_check_record(l, v.mv_data, v.mv_size, 1, &st->tok_cfg, &h, r, sizeof r))) {
    fc_why(why, why_len, "corrupt token record: %s", r);
    return rc;
  }
  it->tok_rec = v.mv_data;
  it->ntok = h.dim0;
  return 0;
}

uint32_t ld_recorded_failure(const fc_loader *l, const char *id, size_t id_len, const char *what,
                             char *r, size_t rl) {
  for (uint32_t s = 0; s < l->n_stores; s++) {
    const ld_store *st = &l->stores[s];
    MDB_dbi dbi = st->s->dbi[FC_DB_FAILED];
    MDB_val k = {id_len, (void *)id}, v;
    fc_failure f;
    if (!dbi || !st->txn || mdb_get(st->txn, dbi, &k, &v) != 0 ||
        fc_failure_decode(v.mv_data, v.mv_size, &f) != 0)
      continue;
    fc_why(r, rl, "%s: featurize failed it: %.*s", what, (int)f.reason_len, f.reason);
    return s;
  }
  return l->n_stores;
}

int ld_add_item(fc_loader *l, const ld_item *it, const char *id, size_t id_len) {
  if (l->n_items == l->cap_items) {
    uint64_t cap = l->cap_items ? l->cap_items * 2 : 1024;
    ld_item *p = fc_realloc(l->items, cap * sizeof *p);
    if (!p) return ENOMEM;
    l->items = p;
    l->cap_items = cap;
  }
  if (l->ids_len + id_len + 1 > l->ids_cap || l->ids_len + id_len + 1 > UINT32_MAX) {
    size_t cap = l->ids_cap ? l->ids_cap * 2 : 65536;
    while (cap < l->ids_len + id_len + 1) cap *= 2;
    if (l->ids_len + id_len + 1 > UINT32_MAX) return FC_ETOOLONG;
    char *p = fc_realloc(l->ids, cap);
    if (!p) return ENOMEM;
    l->ids = p;
    l->ids_cap = cap;
  }
  ld_item *dst = &l->items[l->n_items++];
  *dst = *it;
  dst->id_off = (uint32_t)l->ids_len;
  memcpy(l->ids + l->ids_len, id, id_len);
  l->ids[l->ids_len + id_len] = '\0';
  l->ids_len += id_len + 1;
  if (it->tok_rec && it->state == LD_CHECKED && !l->tok_dtype) l->tok_dtype = it->tok_rec[6];
  return 0;
}

/* An id held by several stores is one utterance of the dataset: keep the first store's item, drop
 * the later ones. Each store's items are contiguous and in id order (both walks read keys in
 * LMDB's order, which is strcmp's for ids), so one k-way merge of the stores' runs finds them. */
static int id_after(const fc_loader *l, const uint64_t *pos, uint32_t a, uint32_t b) {
  int c = strcmp(l->ids + l->items[pos[a]].id_off, l->ids + l->items[pos[b]].id_off);
  return c > 0 || (c == 0 && a > b);
}

static void sift_down(const fc_loader *l, const uint64_t *pos, uint32_t *heap, uint32_t n,
                      uint32_t i) {
  for (;;) {
    uint32_t m = i, c = 2 * i + 1;
    if (c < n && id_after(l, pos, heap[m], heap[c])) m = c;
    if (c + 1 < n && id_after(l, pos, heap[m], heap[c + 1])) m = c + 1;
    if (m == i) return;
    uint32_t t = heap[i];
    heap[i] = heap[m];
    heap[m] = t;
    i = m;
  }
}

int ld_drop_duplicates(fc_loader *l) {
  const uint32_t k = l->n_stores;
  const uint64_t n = l->n_items;
  if (k < 2) return 0;
  uint64_t *pos = fc_calloc(2 * (size_t)k, sizeof *pos), *end = pos ? pos + k : NULL;
  uint32_t *heap = fc_malloc(k * sizeof *heap);
  uint8_t *dup = fc_calloc(n ? n : 1, 1);
  if (!pos || !heap || !dup) {
    free(pos);
    free(heap);
    free(dup);
    return ENOMEM;
  }
  for (uint64_t i = n; i-- > 0;) { /* store s's items: [pos[s], end[s]) */
    uint32_t s = l->items[i].store;
    if (end[s] == 0) end[s] = i + 1;
    pos[s] = i;
  }
  uint32_t hn = 0;
  for (uint32_t s = 0; s < k; s++)
    if (pos[s] < end[s]) heap[hn++] = s;
  for (uint32_t i = hn / 2 + 1; i-- > 0;) sift_down(l, pos, heap, hn, i);
  uint64_t kept = UINT64_MAX, n_dup = 0;
  while (hn) {
    uint32_t s = heap[0];
    uint64_t i = pos[s];
    if (kept != UINT64_MAX &&
        strcmp(l->ids + l->items[kept].id_off, l->ids + l->items[i].id_off) == 0)
      dup[i] = 1, n_dup++;
    else
      kept = i;
    if (++pos[s] == end[s]) heap[0] = heap[--hn];
    sift_down(l, pos, heap, hn, 0);
  }
  if (n_dup) {
    uint64_t j = 0;
    for (uint64_t i = 0; i < n; i++)
      if (!dup[i]) l->items[j++] = l->items[i];
    l->n_items = j;
  }
  if (l->n_problems) { /* a problem of an id another store serves is no utterance skipped */
    memset(pos, 0, 2 * (size_t)k * sizeof *pos);
    for (uint64_t i = l->n_items; i-- > 0;) {
      uint32_t s = l->items[i].store;
      if (end[s] == 0) end[s] = i + 1;
      pos[s] = i;
    }
    uint64_t j = 0;
    for (uint64_t p = 0; p < l->n_problems; p++) {
      ld_problem *pr = &l->problems[p];
      int served = 0;
      for (uint32_t s = 0; s < k && !served; s++) {
        if (s == pr->store) continue;
        for (uint64_t lo = pos[s], hi = end[s]; lo < hi && !served;) {
          uint64_t mid = lo + (hi - lo) / 2;
          int c = strcmp(pr->id, l->ids + l->items[mid].id_off);
          if (c == 0)
            served = 1;
          else if (c < 0)
            hi = mid;
          else
            lo = mid + 1;
        }
      }
      if (served) {
        free(pr->id);
        free(pr->reason);
      } else {
        l->problems[j++] = *pr;
      }
    }
    l->n_problems = j;
  }
  free(pos);
  free(heap);
  free(dup);
  return 0;
}

/* A walk's arguments, for store_lmdb_guarded: its cursors are closed by the caller, whether the
 * walk returned or LMDB's assertion on a damaged page jumped out of it. */
typedef struct guarded_walk {
  fc_loader *l;
  uint32_t si;
  char *why;
  size_t why_len;
  MDB_cursor *c; /* lookups' */
  struct ld_walk *w; /* index_store_fast's */
  MDB_dbi mi, ti;
  int walk_a, walk_x;
  int (*fn)(struct guarded_walk *);
  int returned; /* fn returned (else LMDB's assertion jumped out of it) */
} guarded_walk;

static int walk_call(void *arg) {
  guarded_walk *g = arg;
  int rc = g->fn(g);
  g->returned = 1;
  return rc;
}

/* A walk with LMDB's assertions on damaged pages caught (store_lmdb_assert, which otherwise
 * aborts the process: a Python training script gone without a traceback): MDB_CORRUPTED, said. */
static int walk_guarded(int (*fn)(guarded_walk *), guarded_walk *g) {
  g->fn = fn;
  int rc = store_lmdb_guarded(walk_call, g);
  if (!g->returned)
    fc_why(g->why, g->why_len,
           "%s: damaged (LMDB stopped at a page it cannot use: %s): cache-verify says more; "
           "cache-merge -o NEW STORE copies it into a sound one",
           FC_WHY_NAME(g->l->stores[g->si].path), store_lmdb_why);
  return rc;
}

static int lookups_walk(guarded_walk *g) {
  fc_loader *l = g->l;
  const uint32_t si = g->si;
  char *why = g->why;
  const size_t why_len = g->why_len;
  ld_store *st = &l->stores[si];
  fc_store *s = st->s;
  int strict = (l->o.flags & FC_LOADER_STRICT) != 0;
  MDB_cursor *c;
  int rc = mdb_cursor_open(st->txn, s->dbi[FC_DB_AUDIO], &g->c);
  if (rc) return rc;
  c = g->c;
  MDB_val k, v;
  char r[300];
  for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (!ld_wanted(l, k.mv_data, k.mv_size)) continue;
    ld_item it;
    int e = ld_find_records(l, si, k.mv_data, k.mv_size, v.mv_data, v.mv_size, &it, r, sizeof r);
    if (e == 0) {
      if ((rc = ld_add_item(l, &it, k.mv_data, k.mv_size))) break;
      continue;
    }
    if (e != FC_ENOTFOUND && e != FC_EFORMAT && e != FC_ECHECKSUM) {
      rc = e;
      break;
    }
    if (strict) {
      fc_why(why, why_len, "%s: %s: %s", FC_WHY_NAME(st->path),
             fc_why_name(k.mv_data, k.mv_size, &(fc_why_name_buf){{0}}), r);
      rc = e;
      break;
    }
    if ((rc = ld_add_problem(l, si, k.mv_data, k.mv_size, r))) break;
  }
  mdb_cursor_close(c);
  g->c = NULL;
  if (rc != MDB_NOTFOUND) return rc;
  if (!l->has_tokens) return 0;
  /* texts whose utterance has no audio entry are missing their features */
  if ((rc = mdb_cursor_open(st->txn, s->dbi[FC_DB_TEXT], &g->c))) return rc;
  c = g->c;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (!ld_wanted(l, k.mv_data, k.mv_size)) continue;
    MDB_val k2 = k, v2;
    int e = mdb_get(st->txn, s->dbi[FC_DB_AUDIO], &k2, &v2);
    if (e == 0) continue;
    if (e != MDB_NOTFOUND) {
      rc = e;
      break;
    }
    if (ld_recorded_failure(l, k.mv_data, k.mv_size, TEXT_ONLY, r, sizeof r) == l->n_stores)
      fc_why(r, sizeof r, TEXT_ONLY);
    if (strict) {
      fc_why(why, why_len, "%s: %s: %s", FC_WHY_NAME(st->path),
             fc_why_name(k.mv_data, k.mv_size, &(fc_why_name_buf){{0}}), r);
      rc = FC_ENOTFOUND;
      break;
    }
    if ((rc = ld_add_problem(l, si, k.mv_data, k.mv_size, r))) break;
  }
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Walk store si's audio db (and with tokens its text db) and append its utterances, each looked
 * up and its records' headers checked (a store without indexes). */
int ld_index_store_lookups(fc_loader *l, uint32_t si, char *why, size_t why_len) {
  guarded_walk g = {.l = l, .si = si, .why = why, .why_len = why_len};
  int rc = walk_guarded(lookups_walk, &g);
  if (g.c) mdb_cursor_close(g.c);
  return rc;
}

/* ---- through the indexes ---------------------------------------------------------------------- */
static uint32_t ix_dim0(const uint8_t *v) {
  return (uint32_t)v[16] | (uint32_t)v[17] << 8 | (uint32_t)v[18] << 16 | (uint32_t)v[19] << 24;
}

/* The feature or token record an index entry names (key), checked, with the length the index gives
 * (want: frames or tokens). */
static int resolve_one(fc_loader *l, ld_store *st, int tokens, const void *key, uint32_t want,
                       MDB_val *v, char *why, size_t why_len) {
  const char *what = tokens ? "token" : "feature";
  MDB_val k = {16, (void *)key};
  int rc = mdb_get(st->txn, st->s->dbi[tokens ? FC_DB_TOK : FC_DB_FEAT], &k, v);
  if (rc == MDB_NOTFOUND) {
    fc_why(why, why_len, "the index names a %s record the store does not hold", what);
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  fc_record_header h;
  char r[200];
  if ((rc = ld_check_record(l, v->mv_data, v->mv_size, tokens, tokens ? &st->tok_cfg : &st->mel_cfg,
                            &h, r, sizeof r))) {
    fc_why(why, why_len, "corrupt %s record: %s", what, r);
    return rc;
  }
  if (h.dim0 != want) {
    fc_why(why, why_len, "the index says %u %s, the %s record holds %u", want,
           tokens ? "tokens" : "frames", what, h.dim0);
    return FC_EFORMAT;
  }
  return 0;
}

int ld_resolve(fc_loader *l, ld_item *it, char *why, size_t why_len) {
  if (it->state == LD_CHECKED) return 0;
  ld_store *st = &l->stores[it->store];
  MDB_val v, tv = {0, NULL};
  int rc = resolve_one(l, st, 0, it->mel_rec, it->frames, &v, why, why_len);
  if (!rc && l->has_tokens) rc = resolve_one(l, st, 1, it->tok_rec, it->ntok, &tv, why, why_len);
  if (rc) return rc;
  it->mel_rec = v.mv_data;
  it->tok_rec = tv.mv_data;
  it->state = LD_CHECKED;
  return 0;
}

int ld_locate(fc_loader *l, const ld_item *it, const uint8_t **rec, size_t *len) {
  if (it->state == LD_CHECKED) {
    *rec = it->mel_rec;
    *len = FC_RECORD_HEADER_SIZE + ld_mel_bytes(l, it);
    return 0;
  }
  ld_store *st = &l->stores[it->store];
  MDB_val k = {16, (void *)it->mel_rec}, v;
  if (mdb_get(st->txn, st->s->dbi[FC_DB_FEAT], &k, &v)) return FC_ENOTFOUND;
  *rec = v.mv_data;
  *len = v.mv_size;
  return 0;
}

void ld_resolve_all(fc_loader *l) {
  if (!l->any_indexed) return;
  char r[300];
  pthread_mutex_lock(&l->resolve_mu);
  for (uint64_t i = 0; i < l->n_items; i++)
    if (l->items[i].state == LD_INDEXED) (void)ld_resolve(l, &l->items[i], r, sizeof r);
  pthread_mutex_unlock(&l->resolve_mu);
}

/* A cursor over one db of a store walked in key order, for the merge of index_store_fast. */
typedef struct ld_walk {
  MDB_cursor *c;
  MDB_val k, v;
  int on; /* positioned on an entry */
} ld_walk;

static int walk_open(ld_walk *w, MDB_txn *txn, MDB_dbi dbi) {
  memset(w, 0, sizeof *w);
  int rc = mdb_cursor_open(txn, dbi, &w->c);
  if (rc) return rc;
  rc = mdb_cursor_get(w->c, &w->k, &w->v, MDB_FIRST);
  w->on = rc == 0;
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int walk_next(ld_walk *w) {
  int rc = mdb_cursor_get(w->c, &w->k, &w->v, MDB_NEXT);
  w->on = rc == 0;
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* LMDB's default key order: bytes, then length. */
static int key_cmp(const MDB_val *a, const MDB_val *b) {
  size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
  int c = n ? memcmp(a->mv_data, b->mv_data, n) : 0;
  if (c) return c;
  return (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
}

enum { A, M, X, T, NW }; /* the walks of index_store_fast: audio, mel index, text, token index */

/* index_store_fast's merge of its walks (g->w, opened here, closed by the caller). */
static int fast_walk(guarded_walk *g) {
  fc_loader *l = g->l;
  const uint32_t si = g->si;
  ld_store *st = &l->stores[si];
  fc_store *s = st->s;
  ld_walk *w = g->w;
  const int tokens = l->has_tokens, strict = (l->o.flags & FC_LOADER_STRICT) != 0;
  const int walk_a = g->walk_a, walk_x = g->walk_x;
  const MDB_dbi mi = g->mi, ti = g->ti;
  char *why = g->why;
  const size_t why_len = g->why_len;
  int rc;
  if ((walk_a && (rc = walk_open(&w[A], st->txn, s->dbi[FC_DB_AUDIO]))) ||
      (rc = walk_open(&w[M], st->txn, mi)) ||
      (walk_x && (rc = walk_open(&w[X], st->txn, s->dbi[FC_DB_TEXT]))) ||
      (tokens && (rc = walk_open(&w[T], st->txn, ti))))
    return rc;
  char r[300];
  for (;;) {
    const MDB_val *id = NULL;
    for (int i = 0; i < NW; i++)
      if (w[i].on && (!id || key_cmp(&w[i].k, id) < 0)) id = &w[i].k;
    if (!id) break;
    MDB_val key = *id;
    if (!ld_wanted(l, key.mv_data, key.mv_size)) goto next;
    int in[NW];
    for (int i = 0; i < NW; i++) in[i] = w[i].on && key_cmp(&w[i].k, &key) == 0;
    if (!walk_a) in[A] = in[M]; /* the index holds every audio entry's id */
    if (tokens && !walk_x) in[X] = in[T];
    const int mel_ok = in[M] && w[M].v.mv_size == FC_INDEX_VALUE_SIZE,
              tok_ok = !tokens || (in[T] && w[T].v.mv_size == FC_INDEX_VALUE_SIZE);
    int e = 0;
    ld_item it;
    r[0] = '\0';
    if (!in[A]) {
      if (tokens && in[X]) {
        e = FC_ENOTFOUND;
        if (ld_recorded_failure(l, key.mv_data, key.mv_size, TEXT_ONLY, r, sizeof r) == l->n_stores)
          fc_why(r, sizeof r, TEXT_ONLY);
      }
    } else if (mel_ok && tok_ok) {
      memset(&it, 0, sizeof it);
      it.mel_rec = w[M].v.mv_data;
      it.frames = ix_dim0(w[M].v.mv_data);
      if (tokens) {
        it.tok_rec = w[T].v.mv_data;
        it.ntok = ix_dim0(w[T].v.mv_data);
      }
      it.store = si;
      it.state = LD_INDEXED;
      if ((rc = ld_add_item(l, &it, key.mv_data, key.mv_size))) return rc;
      l->any_indexed = 1;
    } else { /* not indexed under both configs: as without an index */
      e = ld_find_records(l, si, key.mv_data, key.mv_size, NULL, 0, &it, r, sizeof r);
      if (e == 0) {
        if ((rc = ld_add_item(l, &it, key.mv_data, key.mv_size))) return rc;
      } else if (e != FC_ENOTFOUND && e != FC_EFORMAT && e != FC_ECHECKSUM) {
        rc = e;
        return rc;
      }
    }
    if (e) {
      if (strict) {
        fc_why(why, why_len, "%s: %s: %s", FC_WHY_NAME(st->path),
               fc_why_name(key.mv_data, key.mv_size, &(fc_why_name_buf){{0}}), r);
        rc = e;
        return rc;
      }
      if ((rc = ld_add_problem(l, si, key.mv_data, key.mv_size, r))) return rc;
    }
  next:
    for (int i = 0; i < NW; i++)
      if (w[i].on && key_cmp(&w[i].k, &key) == 0 && (rc = walk_next(&w[i]))) return rc;
  }
  return rc;
}

/* Store si, read through the indexes of its configs (mi: mel; ti: tokens, when the loader has
 * tokens): one walk of each index in id order, merged. Where the indexes hold as many ids as the
 * entries they index (the usual case: every utterance stored under this loader's configs), the
 * entries themselves are not read; otherwise the audio (and text) db are walked beside them and
 * each id they hold that an index lacks is looked up as without an index, so that the items and
 * the problems are the same as find_records would give. Records are not touched here. */
static int index_store_fast(fc_loader *l, uint32_t si, MDB_dbi mi, MDB_dbi ti, char *why,
                            size_t why_len) {
  ld_store *st = &l->stores[si];
  fc_store *s = st->s;
  const int tokens = l->has_tokens;
  MDB_stat sa, sm, sx = {0}, stt = {0};
  int rc;
  if ((rc = mdb_stat(st->txn, s->dbi[FC_DB_AUDIO], &sa)) || (rc = mdb_stat(st->txn, mi, &sm)))
    return rc;
  if (tokens &&
      ((rc = mdb_stat(st->txn, s->dbi[FC_DB_TEXT], &sx)) || (rc = mdb_stat(st->txn, ti, &stt))))
    return rc;
  const int walk_a = sa.ms_entries != sm.ms_entries,
            walk_x = tokens && (walk_a || sx.ms_entries != stt.ms_entries);
  /* room for every indexed item at once: no growing copies of the array */
  uint64_t want = l->n_items + sm.ms_entries;
  if (want > l->cap_items) {
    ld_item *p = fc_realloc(l->items, want * sizeof *p);
    if (!p) return ENOMEM;
    l->items = p;
    l->cap_items = want;
  }
  ld_walk w[NW];
  memset(w, 0, sizeof w);
  /* the trees the walk reads, read ahead of it when the store is not in memory */
  char mel_ix[sizeof FC_INDEX_PREFIX + 32], tok_ix[sizeof FC_INDEX_PREFIX + 32];
  MDB_dbi wd[LD_WARM_MAX_TREES];
  const char *wn[LD_WARM_MAX_TREES];
  unsigned nw = 0;
  store_index_name(&st->mel_cfg, mel_ix);
  wd[nw] = mi, wn[nw++] = mel_ix;
  if (tokens) store_index_name(&st->tok_cfg, tok_ix), wd[nw] = ti, wn[nw++] = tok_ix;
  if (walk_a) wd[nw] = s->dbi[FC_DB_AUDIO], wn[nw++] = store_db_name(FC_DB_AUDIO);
  if (walk_x) wd[nw] = s->dbi[FC_DB_TEXT], wn[nw++] = store_db_name(FC_DB_TEXT);
  ld_warm *warm = ld_warm_begin(st, wd, wn, nw);
  guarded_walk g = {.l = l,
                    .si = si,
                    .why = why,
                    .why_len = why_len,
                    .w = w,
                    .mi = mi,
                    .ti = ti,
                    .walk_a = walk_a,
                    .walk_x = walk_x};
  rc = walk_guarded(fast_walk, &g);
  for (int i = 0; i < NW; i++)
    if (w[i].c) mdb_cursor_close(w[i].c);
  ld_warm_end(warm, &l->warm);
  return rc;
}

/* The index dbs of store si for the loader's configs: 1 and *mi (*ti) when every one it needs
 * is there and this loader's transaction can read it, else 0 (read without an index). */
static int store_indexes(fc_loader *l, uint32_t si, MDB_dbi *mi, MDB_dbi *ti) {
  ld_store *st = &l->stores[si];
  store_index x;
  MDB_stat ms;
  if (store_index_find(st->s, &st->mel_cfg, &x) || mdb_stat(st->txn, x.dbi, &ms)) return 0;
  *mi = x.dbi;
  if (!l->has_tokens) return 1;
  if (store_index_find(st->s, &st->tok_cfg, &x) || mdb_stat(st->txn, x.dbi, &ms)) return 0;
  *ti = x.dbi;
  return 1;
}

int ld_index_store(fc_loader *l, uint32_t si, int *used, char *why, size_t why_len) {
  MDB_dbi mi = 0, ti = 0;
  ld_store *st = &l->stores[si];
  if (!store_indexes(l, si, &mi, &ti)) { /* read as before: every record, with read-ahead */
    if (st->map && !(l->o.flags & FC_LOADER_NORDAHEAD))
      madvise((void *)st->map, st->map_len, MADV_NORMAL);
    *used = 0;
    return 0;
  }
  *used = 1;
  uint64_t first = l->n_items;
  int rc = index_store_fast(l, si, mi, ti, why, why_len);
  /* the token dtype of a dataset read through indexes: its first good token record's */
  char r[300];
  for (uint64_t i = first; !rc && l->has_tokens && !l->tok_dtype && i < l->n_items; i++)
    if (ld_resolve(l, &l->items[i], r, sizeof r) == 0) l->tok_dtype = l->items[i].tok_rec[6];
  return rc;
}

void ld_advise_open(fc_loader *l, int random) {
  if (!random && (l->o.flags & FC_LOADER_NORDAHEAD)) return; /* RANDOM is the store's own */
  for (uint32_t i = 0; i < l->n_stores; i++)
    if (l->stores[i].map)
      madvise((void *)l->stores[i].map, l->stores[i].map_len, random ? MADV_RANDOM : MADV_NORMAL);
}

int ld_resolve_batch(fc_loader *l, const ld_plan *p, uint64_t k, char ***bad, int **bad_rc) {
  uint64_t s = p->bstart[k], m = p->bstart[k + 1] - s;
  int rc = 0;
  *bad = NULL;
  *bad_rc = NULL;
  if (!l->any_indexed) return 0;
  pthread_mutex_lock(&l->resolve_mu);
  for (uint64_t i = 0; i < m && !rc; i++) {
    ld_item *it = &l->items[p->order[s + i]];
    char r[300];
    int e = it->state == LD_INDEXED ? ld_resolve(l, it, r, sizeof r) : 0;
    if (!e) continue;
    if (!*bad &&
        (!(*bad = fc_calloc(m, sizeof **bad)) || !(*bad_rc = fc_calloc(m, sizeof **bad_rc))))
      rc = ENOMEM;
    else if (!((*bad)[i] = fc_strdup(r)))
      rc = ENOMEM;
    else
      (*bad_rc)[i] = e;
  }
  pthread_mutex_unlock(&l->resolve_mu);
  return rc;
}

void ld_bad_free(char **bad, int *bad_rc, uint64_t m) {
  if (bad)
    for (uint64_t i = 0; i < m; i++) free(bad[i]);
  free(bad);
  free(bad_rc);
}

/* madvise(WILLNEED) the records of batch k, merging adjacent ranges. Records of items not yet
 * resolved are looked up for it (under resolve_mu), not checked. */
void ld_willneed(fc_loader *l, const ld_plan *p, uint64_t k) {
  if (l->willneed) ld_hint_batch(l, p, k);
}

void ld_hint_batch(fc_loader *l, const ld_plan *p, uint64_t k) {
  if (k >= p->n_batches) return;
  static long page;
  if (!page) page = sysconf(_SC_PAGESIZE);
  uintptr_t lo = 0, hi = 0;
  if (l->any_indexed) pthread_mutex_lock(&l->resolve_mu);
  for (uint64_t i = p->bstart[k]; i <= p->bstart[k + 1]; i++) {
    uintptr_t a = 0, e = 0;
    if (i < p->bstart[k + 1]) {
      const ld_item *it = &l->items[p->order[i]];
      const uint8_t *rec;
      size_t len;
      if (ld_locate(l, it, &rec, &len)) continue;
      a = (uintptr_t)rec & ~(uintptr_t)(page - 1);
      e = (uintptr_t)rec + len;
      if (hi && a <= hi + (uintptr_t)page && e >= lo) {
        if (e > hi) hi = e;
        if (a < lo) lo = a;
        continue;
      }
    }
    if (hi) madvise((void *)lo, hi - lo, MADV_WILLNEED);
    lo = a;
    hi = e;
  }
  if (l->any_indexed) pthread_mutex_unlock(&l->resolve_mu);
}
