/* The index (docs/FORMAT.md "Index"): per config, the db index/<32 hex> that maps an utterance id
 * to the key and dim0 of its record, so that a reader learns every utterance's record and length
 * from one walk of a compact table instead of a lookup and a header read per utterance.
 *
 * The store keeps it inside the write transactions that change what it describes, so it can
 * never disagree with a committed state: a config inserted into meta gets its (empty) index in
 * the same transaction; each entry put re-derives the id's index entry of every config of its
 * kind from the records that transaction holds (set when the record is there, removed when not).
 * A record put alone indexes nothing: writers put the entry with it (featurize always does,
 * tokenize when the id is not yet indexed).
 *
 * Handles: LMDB shares a db handle across the environment once the transaction that opened it
 * commits, and forbids two transactions that open handles at once in one process. Handles are
 * opened at store open, by a short committed read transaction (store_index_refresh), or by a
 * write transaction (a new config; an index another process made), which holds dbi_mu until it
 * ends; until its commit such entries are `pending` and readers do not see them. */
#include "libcache/core/store/store_int.h"

#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX_LEN (sizeof FC_INDEX_PREFIX - 1)

/* What an index needs of its config, from the config's JSON: its kind (record db, entry db) and,
 * for a mel config, the shape and dtype its records must have. FC_EFORMAT for neither kind. */
static int kind_of(const void *json, size_t len, store_index *x) {
  json_error_t e;
  int nomem = 0;
  json_t *o = fc_json_loadb(json, len, 0, &e, &nomem);
  if (!o) return nomem ? ENOMEM : FC_EFORMAT;
  const char *k = json_string_value(json_object_get(o, "kind"));
  const char *dt = json_string_value(json_object_get(o, "dtype"));
  json_int_t nm = json_integer_value(json_object_get(o, "n_mels"));
  int rc = 0, d = dt ? fc_dtype_from_name(dt) : -1;
  if (k && strcmp(k, "mel") == 0 && d > 0 && nm > 0 && nm <= UINT32_MAX) {
    x->record_db = FC_DB_FEAT;
    x->entry_db = FC_DB_AUDIO;
    x->dtype = (uint8_t)d;
    x->n_mels = (uint32_t)nm;
  } else if (k && strcmp(k, "tokens") == 0) {
    x->record_db = FC_DB_TOK;
    x->entry_db = FC_DB_TEXT;
  } else {
    rc = FC_EFORMAT;
  }
  json_decref(o);
  return rc;
}

/* Does a record header fit the index's config (what a reader of that config checks)? A record
 * that does not is left out of the index: readers look its id up and report it. */
static int fits(const store_index *x, const fc_record_header *h) {
  if (memcmp(h->config.bytes, x->cfg.bytes, 16) != 0) return 0;
  if (x->record_db == FC_DB_TOK)
    return h->ndim == 1 &&
           (h->dtype == FC_DTYPE_I32 || h->dtype == FC_DTYPE_I16 || h->dtype == FC_DTYPE_U16);
  return h->ndim == 2 && h->dim1 == x->n_mels && h->dtype == x->dtype && h->dim0 > 0;
}

/* The name of cfg's index db, NUL-terminated: "index/" + 32 hex. */
void store_index_name(const fc_digest *cfg, char name[PREFIX_LEN + 33]) {
  memcpy(name, FC_INDEX_PREFIX, PREFIX_LEN);
  fc_digest_hex(cfg, name + PREFIX_LEN);
}

/* A main-db key naming an index db: its config digest. */
static int parse_name(const MDB_val *k, fc_digest *cfg) {
  char hex[33];
  if (k->mv_size != PREFIX_LEN + 32 || memcmp(k->mv_data, FC_INDEX_PREFIX, PREFIX_LEN) != 0)
    return FC_EFORMAT;
  memcpy(hex, (const char *)k->mv_data + PREFIX_LEN, 32);
  hex[32] = '\0';
  return fc_digest_parse(hex, cfg);
}

/* Caller holds idx_mu. */
static store_index *table_find(fc_store *s, const fc_digest *cfg) {
  for (size_t i = 0; i < s->n_idx; i++)
    if (memcmp(s->idx[i].cfg.bytes, cfg->bytes, 16) == 0) return &s->idx[i];
  return NULL;
}

static int table_add(fc_store *s, const store_index *x) {
  pthread_mutex_lock(&s->idx_mu);
  int rc = 0;
  if (table_find(s, &x->cfg)) goto out;
  if (s->n_idx == s->cap_idx) {
    size_t cap = s->cap_idx ? 2 * s->cap_idx : 8;
    store_index *p = fc_realloc(s->idx, cap * sizeof *p);
    if (!p) {
      rc = ENOMEM;
      goto out;
    }
    s->idx = p;
    s->cap_idx = cap;
  }
  s->idx[s->n_idx++] = *x;
out:
  pthread_mutex_unlock(&s->idx_mu);
  return rc;
}

/* Open the index db named k in txn (whose kind the config in meta says) and add it to the
 * table; pending when txn is the write transaction in flight. An index db whose config is not in
 * meta (or of no kind with records) is left alone: nothing reads it, and it is emptied should
 * its config be stored again (store_index_config_added). */
static int open_one(fc_store *s, MDB_txn *txn, const MDB_val *k, int pending) {
  store_index x = {.pending = (uint8_t)pending};
  if (parse_name(k, &x.cfg)) return 0; /* some other name under the prefix: not ours */
  char name[PREFIX_LEN + 33], key[37];
  store_index_name(&x.cfg, name);
  memcpy(key, "cfg/", 4);
  fc_digest_hex(&x.cfg, key + 4);
  MDB_val ck = {36, key}, cv;
  int rc = mdb_get(txn, s->dbi[FC_DB_META], &ck, &cv);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  rc = kind_of(cv.mv_data, cv.mv_size, &x);
  if (rc) return rc == FC_EFORMAT ? 0 : rc;
  if ((rc = mdb_dbi_open(txn, name, 0, &x.dbi))) return rc;
  return table_add(s, &x);
}

/* Open every index db of the main db that the table does not hold. *found: how many. */
static int open_new(fc_store *s, MDB_txn *txn, int pending, size_t *found) {
  MDB_dbi main_dbi;
  MDB_cursor *c;
  *found = 0;
  int rc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
  if (rc || (rc = mdb_cursor_open(txn, main_dbi, &c))) return rc;
  MDB_val k = {PREFIX_LEN, (void *)FC_INDEX_PREFIX}, v;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (k.mv_size < PREFIX_LEN || memcmp(k.mv_data, FC_INDEX_PREFIX, PREFIX_LEN) != 0) break;
    fc_digest cfg;
    if (parse_name(&k, &cfg)) continue;
    pthread_mutex_lock(&s->idx_mu);
    int known = table_find(s, &cfg) != NULL;
    pthread_mutex_unlock(&s->idx_mu);
    if (known) continue;
    MDB_val name = k;
    if ((rc = open_one(s, txn, &name, pending))) break;
    ++*found;
  }
  mdb_cursor_close(c);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int store_index_load(fc_store *s, MDB_txn *txn) {
  size_t found;
  return open_new(s, txn, 0, &found);
}

int store_index_refresh(fc_store *s) {
  pthread_mutex_lock(&s->dbi_mu);
  MDB_txn *txn;
  pthread_rwlock_rdlock(&s->map_lock);
  int rc = store_txn_begin_read(s->env, &txn);
  pthread_rwlock_unlock(&s->map_lock);
  if (!rc) {
    size_t found;
    rc = open_new(s, txn, 0, &found);
    /* a read transaction that opened handles must commit for them to outlive it */
    if (rc)
      store_txn_abort(txn);
    else
      rc = store_txn_commit(txn);
  }
  pthread_mutex_unlock(&s->dbi_mu);
  return rc;
}

int store_index_find(fc_store *s, const fc_digest *cfg, store_index *out) {
  pthread_mutex_lock(&s->idx_mu);
  const store_index *x = table_find(s, cfg);
  int rc = (x && !x->pending) ? 0 : FC_ENOTFOUND;
  if (!rc) *out = *x;
  pthread_mutex_unlock(&s->idx_mu);
  return rc;
}

/* Hold dbi_mu for the rest of the write transaction (before its first handle is opened). */
static void hold_dbi(fc_store *s) {
  if (s->dbi_held) return;
  pthread_mutex_lock(&s->dbi_mu);
  s->dbi_held = 1;
}

int store_index_begin(fc_store *s, MDB_txn *txn) {
  /* Another process may have made an index since this one looked: a write that does not keep
   * it would leave it stale. The main db is a few entries: looking costs a page. */
  MDB_dbi main_dbi;
  MDB_cursor *c;
  int rc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
  if (rc || (rc = mdb_cursor_open(txn, main_dbi, &c))) return rc;
  MDB_val k = {PREFIX_LEN, (void *)FC_INDEX_PREFIX}, v;
  int unknown = 0;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0 && !unknown;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (k.mv_size < PREFIX_LEN || memcmp(k.mv_data, FC_INDEX_PREFIX, PREFIX_LEN) != 0) break;
    fc_digest cfg;
    if (parse_name(&k, &cfg)) continue;
    pthread_mutex_lock(&s->idx_mu);
    unknown = table_find(s, &cfg) == NULL;
    pthread_mutex_unlock(&s->idx_mu);
  }
  mdb_cursor_close(c);
  if (rc != 0 && rc != MDB_NOTFOUND) return rc;
  if (!unknown) return 0;
  hold_dbi(s);
  size_t found;
  return open_new(s, txn, 1, &found);
}

void store_index_end(fc_store *s, int committed) {
  pthread_mutex_lock(&s->idx_mu);
  size_t j = 0;
  for (size_t i = 0; i < s->n_idx; i++) {
    if (s->idx[i].pending && !committed) continue; /* LMDB closed its handle */
    s->idx[i].pending = 0;
    s->idx[j++] = s->idx[i];
  }
  s->n_idx = j;
  pthread_mutex_unlock(&s->idx_mu);
  if (s->dbi_held) {
    s->dbi_held = 0;
    pthread_mutex_unlock(&s->dbi_mu);
  }
}

int store_index_clear(fc_store *s, MDB_txn *txn, const fc_digest *cfg) {
  pthread_mutex_lock(&s->idx_mu);
  const store_index *x = table_find(s, cfg);
  MDB_dbi dbi = x ? x->dbi : 0;
  pthread_mutex_unlock(&s->idx_mu);
  return x ? mdb_drop(txn, dbi, 0) : 0;
}

int store_index_config_added(fc_store *s, MDB_txn *txn, const void *key, size_t key_len,
                             const void *json, size_t json_len) {
  char hex[33];
  store_index x = {.pending = 1};
  if (key_len != 36 || memcmp(key, "cfg/", 4) != 0) return 0;
  memcpy(hex, (const char *)key + 4, 32);
  hex[32] = '\0';
  if (fc_digest_parse(hex, &x.cfg)) return 0;
  int rc = kind_of(json, json_len, &x);
  if (rc == FC_EFORMAT) return 0; /* not a config of a kind with records: nothing to index */
  if (rc) return rc;
  char name[PREFIX_LEN + 33];
  store_index_name(&x.cfg, name);
  hold_dbi(s);
  rc = mdb_dbi_open(txn, name, MDB_CREATE, &x.dbi);
  if (rc == MDB_DBS_FULL) return 0; /* no room for another db: this config goes unindexed */
  /* the config is new: so is its index (a db left by a config that was removed is emptied) */
  if (!rc) rc = mdb_drop(txn, x.dbi, 0);
  return rc ? rc : table_add(s, &x);
}

static void encode(const fc_digest *key, uint32_t dim0, uint8_t out[FC_INDEX_VALUE_SIZE]) {
  memcpy(out, key->bytes, 16);
  for (int i = 0; i < 4; i++) out[16 + i] = (uint8_t)(dim0 >> (8 * i));
}

int store_index_decode(const void *val, size_t len, store_ix *out) {
  if (len != FC_INDEX_VALUE_SIZE) return FC_EFORMAT;
  const uint8_t *p = val;
  memcpy(out->key.bytes, p, 16);
  out->dim0 =
      (uint32_t)p[16] | (uint32_t)p[17] << 8 | (uint32_t)p[18] << 16 | (uint32_t)p[19] << 24;
  return 0;
}

int store_index_entry(fc_store *s, MDB_txn *txn, int entry_db, const void *id, size_t id_len,
                      const void *entry, size_t entry_len, store_header_fn header_of, void *ud) {
  /* the table does not change during a write transaction but through it (this thread) */
  pthread_mutex_lock(&s->idx_mu);
  size_t n = s->n_idx;
  pthread_mutex_unlock(&s->idx_mu);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    pthread_mutex_lock(&s->idx_mu);
    store_index x = s->idx[i];
    pthread_mutex_unlock(&s->idx_mu);
    if (x.entry_db != entry_db) continue;
    MDB_val k = {id_len, (void *)id}, v;
    fc_record_header h;
    fc_digest key;
    int have = 0;
    if (entry && entry_len >= 16) {
      fc_digest content;
      memcpy(content.bytes, entry, 16);
      fc_record_key(&content, &x.cfg, &key);
      MDB_val rk = {16, key.bytes}, rv;
      rc = mdb_get(txn, s->dbi[x.record_db], &rk, &rv);
      if (rc == MDB_NOTFOUND) {
        rc = 0;
      } else if (rc) {
        break;
      } else if (header_of && header_of(ud, x.record_db, &key, &h) == 0) {
        have = fits(&x, &h); /* (looking the key up read the tree's pages, not the record's) */
      } else {
        const void *pl;
        /* a record whose header does not parse or fit is left out: readers look it up and
         * say why */
        have = fc_record_parse(rv.mv_data, rv.mv_size, &h, &pl, NULL, 0) == 0 && fits(&x, &h);
      }
    }
    if (have) {
      uint8_t val[FC_INDEX_VALUE_SIZE];
      encode(&key, h.dim0, val);
      v = (MDB_val){sizeof val, val};
      rc = fault_hit("put") ? EIO : mdb_put(txn, x.dbi, &k, &v, 0);
    } else {
      rc = mdb_del(txn, x.dbi, &k, NULL);
      if (rc == MDB_NOTFOUND) rc = 0;
    }
  }
  return rc;
}
