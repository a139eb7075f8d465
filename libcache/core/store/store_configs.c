/* A store's configs: when each was first stored (meta created/<hex>), the list of them with their
 * names and record counts, and dropping one with its records (fc_store.h, "a store's configs";
 * docs/FORMAT.md, "Configs"). Reads and writes LMDB directly: a drop deletes, which
 * fc_store_write does not do. */
#include "libcache/core/store/store_int.h"
#include "formats/common/args.h"

#include "featcache/fc_config.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/json.h"
#include "formats/config/config_stamp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The name the loader's selectors answer to (loader_config.c cfg_matches). */
static void config_name(json_t *o, const char *json, size_t len, fc_config_info *ci) {
  const char *kind = json_string_value(json_object_get(o, "kind"));
  ci->kind = !kind                     ? FC_CONFIG_OTHER
             : !strcmp(kind, "mel")    ? FC_CONFIG_MEL
             : !strcmp(kind, "tokens") ? FC_CONFIG_TOKENS
                                       : FC_CONFIG_OTHER;
  static const char *const tok_keys[] = {"tokenizer", "name", "preset", NULL};
  static const char *const mel_keys[] = {"preset", NULL};
  for (const char *const *k = ci->kind == FC_CONFIG_TOKENS ? tok_keys : mel_keys; *k; k++) {
    const char *v = json_string_value(json_object_get(o, *k));
    if (v) {
      snprintf(ci->name, sizeof ci->name, "%s", v);
      return;
    }
  }
  fc_mel_config mc; /* a preset stored in another dtype: "kaldi (mq)" */
  const char *base;
  if (ci->kind == FC_CONFIG_MEL && fc_mel_config_from_json(json, len, &mc, NULL, 0) == 0 &&
      (base = fc_mel_config_preset_of(&mc, NULL)) != NULL)
    snprintf(ci->name, sizeof ci->name, "%s (%s)", base, fc_dtype_name(mc.dtype));
}

void fc_configs_free(fc_config_info *c, size_t n) {
  for (size_t i = 0; c && i < n; i++) free(c[i].json);
  free(c);
}

/* A record key a config's index names, and that config (its place in the listing). */
typedef struct keyed {
  uint8_t key[16];
  uint32_t cfg;
} keyed;

static int keyed_cmp(const void *a, const void *b) { return memcmp(a, b, 16); }

/* The store's map advised (madvise: the kernel's read-ahead on its page faults). */
static void advise(fc_store *s, int advice) {
  const void *base;
  size_t len;
  if (fc_store_map_region(s, &base, &len) == 0 && base && len)
    (void)madvise((void *)base, len, advice);
}

/* The record keys the indexes of the configs of record db (FC_DB_FEAT) name (docs/FORMAT.md "Index": an id's
 * record under the config), sorted, each once: a record's config then comes from its key, and
 * its header — the record's first page, a read per record on a store out of the page cache — is
 * read only for a record no index names (no id's, or a config stored before indexes). */
static int indexed_keys(fc_store *s, MDB_txn *txn, int db, const fc_config_info *c, size_t n,
                        keyed **out, size_t *n_out, MDB_cursor **open) {
  keyed *ks = NULL;
  size_t m = 0, cap = 0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    store_index x;
    MDB_stat st;
    if (store_index_find(s, &c[i].digest, &x) || x.record_db != db) continue;
    if ((rc = mdb_stat(txn, x.dbi, &st)) != 0) break;
    if (m + st.ms_entries > cap) {
      const size_t nc = m + st.ms_entries + 64;
      keyed *g = fc_realloc(ks, nc * sizeof *ks);
      if (!g) {
        rc = ENOMEM;
        break;
      }
      ks = g;
      cap = nc;
    }
    if ((rc = mdb_cursor_open(txn, x.dbi, open)) != 0) break;
    MDB_val k, v;
    for (rc = mdb_cursor_get(*open, &k, &v, MDB_FIRST); rc == 0 && m < cap;
         rc = mdb_cursor_get(*open, &k, &v, MDB_NEXT)) {
      if (v.mv_size != 20) continue; /* not an index entry (cache-verify says so) */
      memcpy(ks[m].key, v.mv_data, 16);
      ks[m++].cfg = (uint32_t)i;
    }
    mdb_cursor_close(*open);
    *open = NULL;
    if (rc == MDB_NOTFOUND) rc = 0;
  }
  if (rc) {
    free(ks);
    return rc;
  }
  if (m) qsort(ks, m, sizeof *ks, keyed_cmp);
  size_t u = 0; /* ids of one audio share its record: once */
  for (size_t i = 0; i < m; i++)
    if (!u || memcmp(ks[u - 1].key, ks[i].key, 16) != 0) ks[u++] = ks[i];
  *out = ks;
  *n_out = u;
  return 0;
}

/* Add the records of db to the counts of the configs they are under: the config of the index
 * that names the record's key (ks, sorted), else the one its header names (bytes 32..47). *open
 * holds the cursor while it is open (closed by the caller after a jump out of the walk). */
static int count_records(MDB_txn *txn, MDB_dbi dbi, fc_config_info *c, size_t n, const keyed *ks,
                         size_t nk, MDB_cursor **open) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, dbi, &cur);
  if (rc) return rc;
  *open = cur;
  MDB_val k, v;
  size_t last = 0, at = 0; /* records of one config often come in runs: try the last one first */
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    int d = 1; /* keys in LMDB's order, memcmp's for keys of one length: the walks go in step */
    if (k.mv_size == 16)
      while (at < nk && (d = memcmp(ks[at].key, k.mv_data, 16)) < 0) at++;
    if (at < nk && d == 0) { /* LMDB gives the value's size from its node: no page of it read */
      c[ks[at].cfg].records++;
      c[ks[at].cfg].record_bytes += v.mv_size;
      continue;
    }
    if (v.mv_size < FC_RECORD_HEADER_SIZE) continue;
    const uint8_t *cfg = (const uint8_t *)v.mv_data + 32;
    if (n && memcmp(c[last].digest.bytes, cfg, 16) != 0)
      for (size_t i = 0; i < n; i++)
        if (memcmp(c[i].digest.bytes, cfg, 16) == 0) {
          last = i;
          break;
        }
    if (n && memcmp(c[last].digest.bytes, cfg, 16) == 0) {
      c[last].records++;
      c[last].record_bytes += v.mv_size;
    }
  }
  mdb_cursor_close(cur);
  *open = NULL;
  return rc == MDB_NOTFOUND ? 0 : rc;
}

typedef struct configs_walk { /* what a listing has made: the caller's, across a jump out of it */
  fc_config_info *c;
  size_t n, cap;
  MDB_cursor *cur; /* the cursor open, if any */
  keyed *ks; /* the indexed record keys being counted, if any */
} configs_walk;

static int walk_configs(fc_store *s, MDB_txn *txn, int count, configs_walk *w) {
  int rc = mdb_cursor_open(txn, s->dbi[FC_DB_META], &w->cur);
  if (rc) return rc;
  MDB_val k = {4, (void *)"cfg/"}, v;
  for (rc = mdb_cursor_get(w->cur, &k, &v, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(w->cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size < 4 || memcmp(k.mv_data, "cfg/", 4) != 0) break;
    char hex[33];
    fc_digest d;
    if (k.mv_size != 36) continue; /* not a config key (cache-verify says so) */
    memcpy(hex, (const char *)k.mv_data + 4, 32);
    hex[32] = '\0';
    if (fc_digest_parse(hex, &d)) continue;
    if (w->n == w->cap) {
      size_t nc = w->cap ? 2 * w->cap : 8;
      fc_config_info *g = fc_realloc(w->c, nc * sizeof *w->c);
      if (!g) {
        rc = ENOMEM;
        break;
      }
      w->c = g;
      w->cap = nc;
    }
    fc_config_info *ci = &w->c[w->n];
    memset(ci, 0, sizeof *ci);
    ci->digest = d;
    if (!(ci->json = fc_strndup(v.mv_data, v.mv_size))) {
      rc = ENOMEM;
      break;
    }
    w->n++;
    json_error_t je;
    int nomem;
    json_t *o = fc_json_loadb(v.mv_data, v.mv_size, 0, &je, &nomem);
    if (nomem) {
      rc = ENOMEM;
      break;
    }
    if (o) config_name(o, v.mv_data, v.mv_size, ci);
    json_decref(o);
  }
  mdb_cursor_close(w->cur);
  w->cur = NULL;
  if (rc && rc != MDB_NOTFOUND) return rc;
  rc = 0;
  for (size_t i = 0; i < w->n && !rc; i++) { /* created/<hex> */
    char key[41], ignored[21];
    config_stamp(&w->c[i].digest, key, ignored);
    MDB_val ck = {40, key}, cv;
    rc = mdb_get(txn, s->dbi[FC_DB_META], &ck, &cv);
    if (rc == MDB_NOTFOUND) {
      rc = 0;
    } else if (!rc) {
      fc_config_info *ci = &w->c[i];
      size_t l = cv.mv_size < sizeof ci->created - 1 ? cv.mv_size : sizeof ci->created - 1;
      memcpy(ci->created, cv.mv_data, l);
      ci->created[l] = '\0';
    }
  }
  if (!count) return rc;
  /* feature records by their indexes (their headers are on overflow pages: a read each), their
   * leaves among those pages read each by itself, no read-ahead; token records by their headers,
   * which the leaves hold (the walk reads the db whole: the store's own read-ahead) */
  const int own = fc_store_open_flags(s) & FC_STORE_NORDAHEAD ? MADV_RANDOM : MADV_NORMAL;
  size_t nk = 0;
  advise(s, MADV_RANDOM);
  if (!rc) rc = indexed_keys(s, txn, FC_DB_FEAT, w->c, w->n, &w->ks, &nk, &w->cur);
  if (!rc) rc = count_records(txn, s->dbi[FC_DB_FEAT], w->c, w->n, w->ks, nk, &w->cur);
  free(w->ks);
  w->ks = NULL;
  advise(s, own);
  if (!rc) rc = count_records(txn, s->dbi[FC_DB_TOK], w->c, w->n, NULL, 0, &w->cur);
  return rc;
}

/* walk_configs' arguments, for store_lmdb_guarded. */
typedef struct walk_configs_args {
  fc_store *s;
  MDB_txn *txn;
  int count;
  configs_walk *w;
} walk_configs_args;

static int walk_configs_call(void *arg) {
  walk_configs_args *a = arg;
  return walk_configs(a->s, a->txn, a->count, a->w);
}

int fc_store_configs(fc_store *s, int count, fc_config_info **out, size_t *n_out) {
  FC_ARGS(s, out, n_out);
  *out = NULL;
  *n_out = 0;
  fc_rtxn *t;
  int rc = count ? store_index_refresh(s) : 0; /* indexes another process made since the open */
  if (!rc) rc = fc_store_read_begin(s, &t);
  if (rc) return rc;
  configs_walk w = {0};
  walk_configs_args wa = {s, t->txn, count, &w};
  rc = store_lmdb_guarded(walk_configs_call, &wa); /* a damaged page: MDB_CORRUPTED */
  if (w.cur) mdb_cursor_close(w.cur); /* left open by a jump */
  free(w.ks);
  fc_rtxn_end(t);
  if (rc) {
    fc_configs_free(w.c, w.n);
    return rc;
  }
  *out = w.c;
  *n_out = w.n;
  return 0;
}

/* In txn, from key *from (no data: the first), delete up to max records of config d from db.
 * *more: stopped at max, *from then holds the key to go on from (a malloc'd copy; the caller
 * frees both it and the key it gave). */
static int del_records(fc_store *s, MDB_txn *txn, int db, const fc_digest *d, uint64_t max,
                       MDB_val *from, int *more, uint64_t *records, uint64_t *bytes) {
  *more = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->dbi[db], &cur);
  if (rc) return rc;
  MDB_val k = *from, v;
  uint64_t n = 0;
  rc = mdb_cursor_get(cur, &k, &v, from->mv_data ? MDB_SET_RANGE : MDB_FIRST);
  while (rc == 0) {
    if (v.mv_size < FC_RECORD_HEADER_SIZE ||
        memcmp((const uint8_t *)v.mv_data + 32, d->bytes, 16) != 0) {
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
      continue;
    }
    if (n == max) { /* go on from here in the next transaction */
      void *copy = fc_malloc(k.mv_size);
      if (!copy) {
        rc = ENOMEM;
        break;
      }
      memcpy(copy, k.mv_data, k.mv_size);
      from->mv_data = copy; /* the caller frees the key it gave */
      from->mv_size = k.mv_size;
      *more = 1;
      break;
    }
    size_t vl = v.mv_size;
    if ((rc = fault_hit("put") ? EIO : mdb_cursor_del(cur, 0)) != 0) break;
    n++;
    *records += 1;
    *bytes += vl;
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT); /* after a delete: the entry that followed */
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The deletes of one drop_txn transaction: the config's index emptied, then up to 4096 records of
 * d from db on from *start (final == 0), or every record of d and its meta keys (final). */
static int drop_deletes(fc_store *s, MDB_txn *txn, int db, const fc_digest *d, int final,
                        const MDB_val *from, MDB_val *start, int *more, uint64_t *nr,
                        uint64_t *nb) {
  /* the config's index (docs/FORMAT.md "Index") emptied before its first record goes, and
   * again with its meta keys: it never names a record this drop removed */
  int rc = store_index_begin(s, txn);
  if (!rc && (final || (db == FC_DB_FEAT && !from->mv_data))) rc = store_index_clear(s, txn, d);
  if (rc || !final) return rc ? rc : del_records(s, txn, db, d, 4096, start, more, nr, nb);
  MDB_val all = {0, NULL};
  int more_tok = 0;
  rc = del_records(s, txn, FC_DB_FEAT, d, UINT64_MAX, &all, more, nr, nb);
  if (!rc) rc = del_records(s, txn, FC_DB_TOK, d, UINT64_MAX, &all, &more_tok, nr, nb);
  /* the meta keys of the config: its JSON, when it was made, a token config's vocabulary or
   * tokenizer.json (docs/FORMAT.md) */
  static const char *const prefixes[] = {"created/", "vocab/", "tokenizer/", "cfg/"};
  char hex[33], key[48];
  fc_digest_hex(d, hex);
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !rc; i++) {
    MDB_val mk = {(size_t)snprintf(key, sizeof key, "%s%s", prefixes[i], hex), key};
    if ((rc = mdb_del(txn, s->dbi[FC_DB_META], &mk, NULL)) == MDB_NOTFOUND) rc = 0;
  }
  return rc;
}

/* drop_deletes' arguments, for store_lmdb_guarded. */
typedef struct drop_deletes_args {
  fc_store *s;
  MDB_txn *txn;
  int db;
  const fc_digest *d;
  int final;
  const MDB_val *from;
  MDB_val *start;
  int *more;
  uint64_t *nr, *nb;
} drop_deletes_args;

static int drop_deletes_call(void *arg) {
  drop_deletes_args *a = arg;
  return drop_deletes(a->s, a->txn, a->db, a->d, a->final, a->from, a->start, a->more, a->nr,
                      a->nb);
}

/* One write transaction. final == 0: up to 4096 records of d from db, on from *from. final: every
 * record of d in feat and tok, and d's meta keys — atomically, so that a
 * record written under d meanwhile is not left without its config. Grows the map and replays on
 * MDB_MAP_FULL (a delete copies pages too). */
static int drop_txn(fc_store *s, int db, const fc_digest *d, int final, MDB_val *from, int *more,
                    uint64_t *records, uint64_t *bytes) {
  for (;;) {
    MDB_txn *txn;
    uint64_t nr = 0, nb = 0;
    pthread_rwlock_rdlock(&s->map_lock);
    int rc = store_txn_begin(s->env, 0, &txn);
    pthread_rwlock_unlock(&s->map_lock);
    if (rc == MDB_MAP_RESIZED && !(rc = store_adopt_map(s))) continue;
    if (rc) return rc;
    MDB_val start = *from;
    *more = 0;
    drop_deletes_args da = {s, txn, db, d, final, from, &start, more, &nr, &nb};
    /* a damaged page: MDB_CORRUPTED; the caller aborts the transaction, which frees the cursors
     * left open in it (and no key was copied: del_records copies one last) */
    rc = store_lmdb_guarded(drop_deletes_call, &da);
    if (rc) {
      store_txn_abort(txn);
      store_index_end(s, 0);
      if (start.mv_data != from->mv_data) free(start.mv_data);
      if (rc == MDB_MAP_FULL && !(rc = store_grow_map(s, 0))) continue;
      return rc;
    }
    rc = fault_hit("commit") ? (store_txn_abort(txn), EIO) : store_txn_commit(txn);
    store_index_end(s, rc == 0);
    if (rc == MDB_MAP_FULL && !(rc = store_grow_map(s, 0))) {
      if (start.mv_data != from->mv_data) free(start.mv_data);
      continue;
    }
    if (rc) {
      s->broken = 1; /* a failed commit: as fc_store_write, refuse further writes */
      if (start.mv_data != from->mv_data) free(start.mv_data);
      return store_explain_write_error(s, rc, 0); /* a full disk reads as EIO from LMDB */
    }
    if (start.mv_data != from->mv_data) { /* where the next batch goes on */
      free(from->mv_data);
      *from = start;
    }
    *records += nr;
    *bytes += nb;
    return 0;
  }
}

/* The keys of the b-trees a drop of d changes (feat, tok, d's index), walked read-only in t:
 * leaf and branch pages only, no value read. LMDB's delete does not survive every damaged page —
 * on a page of zeros where its read asserts or says MDB_CORRUPTED, a delete can fault — so a drop
 * from such a store is refused with nothing changed (cache-verify says where). *open holds the
 * cursor while it is open (closed by the caller after a jump out of the walk). */
static int walk_keys(fc_store *s, MDB_txn *txn, const fc_digest *d, MDB_cursor **open) {
  store_index x;
  MDB_dbi dbis[3] = {s->dbi[FC_DB_FEAT], s->dbi[FC_DB_TOK], 0};
  const int n = store_index_find(s, d, &x) == 0 ? (dbis[2] = x.dbi, 3) : 2;
  for (int i = 0; i < n; i++) {
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, dbis[i], open);
    if (rc) return rc;
    for (rc = mdb_cursor_get(*open, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(*open, &k, &v, MDB_NEXT))
      ;
    mdb_cursor_close(*open);
    *open = NULL;
    if (rc != MDB_NOTFOUND) return rc;
  }
  return 0;
}

/* walk_keys' arguments, for store_lmdb_guarded. */
typedef struct walk_keys_args {
  fc_store *s;
  MDB_txn *txn;
  const fc_digest *d;
  MDB_cursor **open;
} walk_keys_args;

static int walk_keys_call(void *arg) {
  walk_keys_args *a = arg;
  return walk_keys(a->s, a->txn, a->d, a->open);
}

int fc_store_drop_config(fc_store *s, const fc_digest *d, const volatile sig_atomic_t *stop,
                         uint64_t *records, uint64_t *bytes) {
  FC_ARGS(s, d);
  uint64_t nr = 0, nb = 0;
  if (records) *records = 0;
  if (bytes) *bytes = 0;
  if (s->flags & FC_STORE_RDONLY) return EACCES;
  fc_rtxn *t;
  const char *json;
  size_t len;
  int rc = fc_store_read_begin(s, &t);
  if (rc) return rc;
  rc = fc_rtxn_get_config(t, d, &json, &len);
  MDB_cursor *open = NULL;
  walk_keys_args ka = {s, t->txn, d, &open};
  if (!rc) rc = store_lmdb_guarded(walk_keys_call, &ka); /* damaged: nothing dropped */
  if (open) mdb_cursor_close(open); /* left open by a jump */
  fc_rtxn_end(t);
  if (rc) return rc; /* FC_ENOTFOUND: no such config */
  pthread_mutex_lock(&s->write_mu);
  if (s->broken) {
    pthread_mutex_unlock(&s->write_mu);
    return FC_EBADSTATE;
  }
  /* the records in transactions of 4096 (dirty pages bounded), feat then tok; then the last
   * transaction: what is left of them, and the meta keys */
  static const int dbs[] = {FC_DB_FEAT, FC_DB_TOK};
  for (int i = 0; i < 2 && !rc; i++) {
    MDB_val from = {0, NULL};
    int more = 1;
    while (more && !rc) {
      if (stop && *stop) rc = FC_EINTR;
      if (!rc) rc = drop_txn(s, dbs[i], d, 0, &from, &more, &nr, &nb);
    }
    free(from.mv_data);
  }
  if (!rc) {
    MDB_val none = {0, NULL};
    int more;
    rc = drop_txn(s, 0, d, 1, &none, &more, &nr, &nb);
  }
  pthread_mutex_unlock(&s->write_mu);
  if (records) *records = nr;
  if (bytes) *bytes = nb;
  return rc;
}
