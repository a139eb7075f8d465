/* cache-merge's engine (include/featcache/fc_merge.h): stores → one store, streamed.
 *
 * Two passes. The first walks the audio, text and meta dbs of the inputs and the output together
 * and decides every conflict (an id whose entry bytes differ) before anything is written. The
 * second walks meta, feat, tok, audio, text in key order and writes batches of puts, each batch one
 * write transaction on the output. A key greater than the last key the output's db held when the
 * pass began is appended (MDB_APPEND: no tree search, pages filled whole, as mdb_copy's compacting
 * copy does); a smaller key is looked up first, so a rerun or a resumed merge skips what is there
 * without reading the input's value. Records are verified (fc_record_verify) before they are
 * written; a damaged one is replaced by another input's copy of the same key, or left out. */
#include "featcache/fc_merge.h"
#include "formats/common/args.h"

#include "featcache/fc_format.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/why.h"
#include "formats/config/config_stamp.h"
#include "libcache/core/merge/kmerge.h"
#include "libcache/core/merge/merge_conflict.h"
#include "libcache/core/merge/merge_failed.h"
#include "libcache/core/merge/merge_pages.h"
#include "libcache/core/merge/merge_shards.h"
#include "libcache/core/merge/writeback.h"
#include "libcache/core/store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* A write transaction's dirty pages are malloc'd by LMDB, copied into the page cache at commit
 * and freed: small batches keep that memory warm in the caches and in the process (64 MiB ones
 * cost twice the CPU, measured in docs/BENCHMARKS.md "cache-merge against mdb_copy"). */
#define FC_MERGE_BATCH_BYTES (4ull << 20)

void fc_merge_opts_init(fc_merge_opts *o) {
  FC_ARGS_OR(, o);
  memset(o, 0, sizeof *o);
  o->batch_records = 1024;
  o->batch_bytes = FC_MERGE_BATCH_BYTES;
  o->sync_seconds = 5;
  o->writeback_bytes = 16ull << 20;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct mctx {
  const fc_merge_opts *o;
  fc_merge_stats *st;
  const char *const *paths;
  size_t n;
  fc_store **in; /* n inputs */
  fc_rtxn **rt; /* n read transactions (phase 1: plus the output's at index n) */
  MDB_txn **txns; /* raw transactions, n (+1) */
  MDB_dbi *dbis;
  fc_store *out;
  fc_writeback wb; /* the output's page cache: written back and dropped as commits go */
  int replay; /* flush: the batch is put again (the map grew): its conflicts were said */
} mctx;

/* ---- winners --------------------------------------------------------------------------------- */
/* meta keys that describe the store itself, not its contents: never merged (format; part, the
 * place of a split store's part, docs/FORMAT.md "Split stores") */
static int store_owned(const MDB_val *key) {
  return (key->mv_size == 6 && memcmp(key->mv_data, "format", 6) == 0) ||
         (key->mv_size == 4 && memcmp(key->mv_data, "part", 4) == 0);
}

static int same_val(const MDB_val *a, const MDB_val *b) {
  return a->mv_size == b->mv_size &&
         (a->mv_size == 0 || memcmp(a->mv_data, b->mv_data, a->mv_size) == 0);
}

/* Holders of one key: src[0..m) ascending, where index n stands for the output (phase 1 only).
 * Returns the position j in src of the winning value, or -1 when the inputs disagree (or disagree
 * with the output) and the policy does not say. *differ: 1 when any two holders' values differ,
 * and *a, *b the positions of the first differing pair. */
/* meta created/<hex>: when a config was first stored (RFC 3339 UTC, ordered as text). In a
 * merge the earliest holds, and two stores that made one config at different times are no
 * conflict. */
static int created_key(const MDB_val *key) {
  return key->mv_size > 8 && memcmp(key->mv_data, "created/", 8) == 0;
}

static int earlier_or_same(const MDB_val *a, const MDB_val *b) {
  size_t l = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
  int cmp = memcmp(a->mv_data, b->mv_data, l);
  return cmp < 0 || (cmp == 0 && a->mv_size <= b->mv_size);
}

static long pick_winner(const mctx *c, int db, const MDB_val *key, size_t m, const size_t *src,
                        const MDB_val *vals, int *differ, size_t *a, size_t *b) {
  *differ = 0;
  if (db == FC_DB_META && created_key(key)) {
    size_t w = 0;
    for (size_t j = 1; j < m; j++)
      if (!earlier_or_same(&vals[w], &vals[j])) w = j;
    return src[w] == c->n ? -1 : (long)w; /* the output's own is the earliest: nothing to write */
  }
  for (size_t j = 1; j < m && !*differ; j++)
    if (!same_val(&vals[0], &vals[j])) {
      *differ = 1;
      *a = 0;
      *b = j;
    }
  /* the inputs only (the output, if it holds the key, is last: index n) */
  size_t mi = (m && src[m - 1] == c->n) ? m - 1 : m;
  if (mi == 0) return -1; /* only the output holds it: nothing to write */
  if (!*differ) return 0;
  int inputs_agree = 1;
  for (size_t j = 1; j < mi; j++)
    if (!same_val(&vals[0], &vals[j])) inputs_agree = 0;
  switch (c->o->prefer) {
  case FC_MERGE_FIRST: return 0;
  case FC_MERGE_LAST: return (long)mi - 1;
  case FC_MERGE_STORE: {
    size_t lo = c->o->prefer_index, cnt = c->o->prefer_count ? c->o->prefer_count : 1;
    for (size_t j = 0; j < mi; j++)
      if (src[j] >= lo && src[j] - lo < cnt) return (long)j;
    return inputs_agree ? 0 : -1;
  }
  default: return -1;
  }
}

/* ---- phase 1: conflicts, and how many entries the merge holds when done -------------------------- */
/* The first pass reads every key of every input (a large merge: minutes from a cold disk), so it
 * reports progress too: at once, then every 0.1 s or so (the clock read every 4096 entries). */
static void first_progress(mctx *c, double *last, int force) {
  if (!c->o->on_progress) return;
  double t = now_s();
  if (!force && t - *last < 0.1) return;
  *last = t;
  c->o->on_progress(c->st, c->o->user);
}

static int find_conflicts(mctx *c, size_t parties, uint64_t *unresolved) {
  static const int dbs[] = {FC_DB_META, FC_DB_AUDIO, FC_DB_TEXT, FC_DB_FEAT, FC_DB_TOK};
  *unresolved = 0;
  c->st->total = 0;
  c->st->pass = 1;
  c->st->first_read = c->st->first_total = 0;
  for (size_t d = 0; d < sizeof dbs / sizeof dbs[0]; d++) { /* what the pass reads, for progress */
    int records = dbs[d] == FC_DB_FEAT || dbs[d] == FC_DB_TOK;
    for (size_t i = 0; i < (records ? c->n : parties); i++) {
      MDB_stat ms;
      if (mdb_stat(c->txns[i], (i < c->n ? c->in[i] : c->out)->dbi[dbs[d]], &ms) == 0)
        c->st->first_total += ms.ms_entries;
    }
  }
  double last = 0;
  first_progress(c, &last, 1);
  for (size_t d = 0; d < sizeof dbs / sizeof dbs[0]; d++) {
    int db = dbs[d];
    /* records have content keys: only counted (keys, not values), over the inputs only */
    int records = db == FC_DB_FEAT || db == FC_DB_TOK;
    size_t np = records ? c->n : parties;
    for (size_t i = 0; i < np; i++) c->dbis[i] = (i < c->n ? c->in[i] : c->out)->dbi[db];
    fc_kmerge *k;
    int rc = kmerge_open(c->txns, c->dbis, np, NULL, &k);
    if (rc) return rc;
    MDB_val key;
    size_t m;
    const size_t *src;
    const MDB_val *vals;
    uint64_t since = 0; /* entries read since the clock was last read */
    while ((rc = kmerge_next(k, &key, &m, &src, &vals)) == 0) {
      if (c->o->stop && *c->o->stop) {
        rc = FC_EINTR;
        break;
      }
      c->st->first_read += m;
      if ((since += m) >= 4096) {
        since = 0;
        first_progress(c, &last, 0);
      }
      if (db == FC_DB_META && store_owned(&key)) continue;
      if (src[0] < c->n) c->st->total++; /* an input holds it */
      if (m < 2 || records) continue;
      int differ;
      size_t a = 0, b = 0;
      long w = pick_winner(c, db, &key, m, src, vals, &differ, &a, &b);
      if (!differ) continue;
      c->st->conflicts++;
      if (w >= 0)
        c->st->resolved++;
      else
        (*unresolved)++;
      if (c->o->on_conflict) {
        char detail[768];
        merge_describe(db, &vals[b], &vals[a], detail, sizeof detail); /* b is said first */
        fc_merge_conflict cf = {db,
                                key.mv_data,
                                key.mv_size,
                                src[a] == c->n ? -1 : (long)src[a],
                                src[b] == c->n ? -1 : (long)src[b],
                                w >= 0 ? (long)src[w] : -2,
                                detail};
        c->o->on_conflict(&cf, c->o->user);
      }
    }
    kmerge_close(k);
    if (rc != MDB_NOTFOUND) return rc;
  }
  first_progress(c, &last, 1);
  c->st->pass = 2;
  return 0;
}

/* ---- phase 2: the copy ------------------------------------------------------------------------- */
typedef struct pending {
  int db;
  MDB_val key;
  size_t first, count; /* holders: hold[first .. first+count) (feat/tok: candidates in order) */
  long chosen; /* feat/tok: index into hold of the verified value; -1 not yet; -2 none */
} pending;

typedef struct batch {
  pending *p;
  size_t n, cap;
  MDB_val *hold;
  size_t *hold_src;
  size_t nh, caph;
  uint64_t bytes;
} batch;

static int batch_add(batch *b, int db, const MDB_val *key, size_t m, const size_t *src,
                     const MDB_val *vals) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    pending *p = fc_realloc(b->p, cap * sizeof *p);
    if (!p) return ENOMEM;
    b->p = p;
    b->cap = cap;
  }
  if (b->nh + m > b->caph) {
    size_t cap = b->caph ? 2 * b->caph : 256;
    while (cap < b->nh + m) cap *= 2;
    MDB_val *h = fc_realloc(b->hold, cap * sizeof *h);
    if (h) b->hold = h;
    size_t *hs = fc_realloc(b->hold_src, cap * sizeof *hs);
    if (hs) b->hold_src = hs;
    if (!h || !hs) return ENOMEM;
    b->caph = cap;
  }
  b->p[b->n++] = (pending){db, *key, b->nh, m, -1};
  for (size_t j = 0; j < m; j++) {
    b->hold[b->nh] = vals[j];
    b->hold_src[b->nh++] = src[j];
    b->bytes += vals[j].mv_size;
  }
  return 0;
}

typedef struct delta {
  uint64_t copied[FC_DB_COUNT], present[FC_DB_COUNT], bytes, dropped, meanwhile;
  fc_digest cfg_there; /* a config found in the output in this transaction (cfg_known) */
  int cfg_known;
} delta;

/* A record goes in only while the output holds the config the meta pass put there: one dropped
 * from it meanwhile (cache-config --drop, another process) would leave the record under no
 * config — FC_EDROPPED then, the batch not written. A config its input does not hold either (an
 * orphan record there) is not asked for. */
static int config_there(mctx *c, const batch *b, const pending *p, MDB_txn *txn, delta *dl) {
  const MDB_val *v = &b->hold[p->first + (size_t)p->chosen];
  fc_digest d;
  memcpy(d.bytes, (const uint8_t *)v->mv_data + 32, 16); /* verified: a whole header */
  if (dl->cfg_known && memcmp(d.bytes, dl->cfg_there.bytes, 16) == 0) return 0;
  char key[37];
  config_key(&d, key);
  MDB_val k = {36, key}, cv;
  int rc = mdb_get(txn, c->out->dbi[FC_DB_META], &k, &cv);
  if (rc == MDB_NOTFOUND) {
    size_t src = b->hold_src[p->first + (size_t)p->chosen];
    rc = mdb_get(c->txns[src], c->in[src]->dbi[FC_DB_META], &k, &cv);
    return rc == MDB_NOTFOUND ? 0 : rc ? rc : FC_EDROPPED;
  }
  if (!rc) dl->cfg_there = d, dl->cfg_known = 1;
  return rc;
}

/* Choose the first holder whose record verifies; report the damaged ones (once). */
static void choose_record(mctx *c, batch *b, pending *p) {
  if (p->chosen != -1) return;
  p->chosen = -2;
  for (size_t j = 0; j < p->count; j++) {
    const MDB_val *v = &b->hold[p->first + j];
    char why[256];
    fc_record_header h;
    const void *payload;
    int rc =
        p->key.mv_size == 16
            ? fc_record_verify(v->mv_data, v->mv_size, &h, &payload, why, sizeof why)
            : (snprintf(why, sizeof why, "key of %zu bytes (want 16)", p->key.mv_size), FC_EFORMAT);
    if (!rc) {
      p->chosen = (long)j;
      return;
    }
    c->st->bad_records++;
    if (c->o->on_bad_record) {
      char hex[2 * 64 + 1];
      size_t kl = p->key.mv_size < 64 ? p->key.mv_size : 64;
      for (size_t i = 0; i < kl; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)p->key.mv_data)[i]);
      hex[2 * kl] = '\0';
      c->o->on_bad_record((long)b->hold_src[p->first + j], p->db, hex, why, c->o->user);
    }
  }
}

/* The header of record key as an input holds it (store_header_fn): the first copy whose header
 * is sound (its checksum covers it; the copy the merge wrote has this key, so these bytes). */
static int input_header(void *ud, int record_db, const fc_digest *key, fc_record_header *h) {
  mctx *c = ud;
  for (size_t i = 0; i < c->n; i++) {
    MDB_val k = {16, (void *)key->bytes}, v;
    const void *pl;
    if (mdb_get(c->txns[i], c->in[i]->dbi[record_db], &k, &v) == 0 &&
        fc_record_parse(v.mv_data, v.mv_size, h, &pl, NULL, 0) == 0)
      return 0;
  }
  return FC_ENOTFOUND;
}

/* One pending put inside txn. A key above the output's last key is appended without a lookup;
 * one at or below it is looked up first: a record already there is kept without reading the
 * input's value (content key), an entry is kept when its bytes are the winner's, else replaced. */
static int put_one(mctx *c, batch *b, pending *p, MDB_txn *txn, const MDB_val *last, delta *dl) {
  MDB_dbi dbi = c->out->dbi[p->db];
  int records = p->db == FC_DB_FEAT || p->db == FC_DB_TOK;
  int append = last == NULL || kmerge_cmp(&p->key, last) > 0;
  MDB_val have = {0, NULL}, val;
  int held = 0;
  if (!append) {
    int rc = mdb_get(txn, dbi, &p->key, &have);
    if (rc && rc != MDB_NOTFOUND) return rc;
    held = rc == 0;
  }
  if (records) {
    if (held) {
      dl->present[p->db]++;
      return 0;
    }
    choose_record(c, b, p);
    if (p->chosen < 0) {
      dl->dropped++;
      return 0;
    }
    int rc = config_there(c, b, p, txn, dl);
    if (rc) return rc;
  }
  val = b->hold[p->first + (size_t)p->chosen]; /* entries and meta: phase 1's winner */
  if (held && p->db == FC_DB_META && created_key(&p->key) && earlier_or_same(&have, &val)) {
    dl->present[p->db]++; /* the output made that config first: its time stays */
    return 0;
  }
  const int entry = p->db == FC_DB_AUDIO || p->db == FC_DB_TEXT;
  if (held && same_val(&have, &val)) {
    dl->present[p->db]++;
    /* indexed again: its records under a config new to the output may have come in */
    return entry ? store_index_entry(c->out, txn, p->db, p->key.mv_data, p->key.mv_size,
                                     have.mv_data, have.mv_size, input_header, c)
                 : 0;
  }
  if (held && entry && c->o->prefer == FC_MERGE_REFUSE) {
    /* the first pass found no conflict for this id, so another process put this entry into the
     * output since: it is kept, and said as the conflict a rerun will meet */
    dl->meanwhile++;
    if (!c->replay && c->o->on_conflict) {
      char detail[768];
      merge_describe(p->db, &have, &val, detail, sizeof detail); /* the output's said first */
      fc_merge_conflict cf = {p->db,
                              p->key.mv_data,
                              p->key.mv_size,
                              (long)b->hold_src[p->first + (size_t)p->chosen],
                              -1,
                              -1,
                              detail};
      c->o->on_conflict(&cf, c->o->user);
    }
    return 0;
  }
  char bad[256];
  if (entry && merge_entry_damaged(p->db, &val, bad, sizeof bad)) {
    /* as a damaged record with no sound copy: left out, said (cache-verify fails OUT otherwise) */
    dl->dropped++;
    if (!c->replay) {
      c->st->bad_records++;
      fc_why_name_buf q;
      if (c->o->on_bad_record)
        c->o->on_bad_record((long)b->hold_src[p->first + (size_t)p->chosen], p->db,
                            fc_why_name(p->key.mv_data, p->key.mv_size, &q), bad, c->o->user);
    }
    return 0;
  }
  MDB_val k = p->key;
  int rc = fault_hit("put") ? EIO : mdb_put(txn, dbi, &k, &val, append ? MDB_APPEND : 0);
  /* not above the last key any more: another writer (a merge into the same store beside this
   * one) committed greater keys since the pass began; looked up like any key below the last */
  if (rc == MDB_KEYEXIST && append) return put_one(c, b, p, txn, &p->key, dl);
  if (rc) return rc;
  dl->copied[p->db]++;
  dl->bytes += p->key.mv_size + val.mv_size;
  /* the index of the output (docs/FORMAT.md "Index"): a config new to it gets one; entries come
   * after the records (feat and tok are copied first), so each finds its records */
  if (p->db == FC_DB_META && !held)
    rc = store_index_config_added(c->out, txn, p->key.mv_data, p->key.mv_size, val.mv_data,
                                  val.mv_size);
  else if (entry)
    rc = store_index_entry(c->out, txn, p->db, p->key.mv_data, p->key.mv_size, val.mv_data,
                           val.mv_size, input_header, c);
  return rc;
}

/* Commit the batch as one transaction; on MDB_MAP_FULL grow the map and replay it. The map grows
 * through the store (store_grow_map: under its map lock, the `grow` fault site); no transaction
 * of this process is open on the output then (copy_db's read ended before its first batch). */
static int flush(mctx *c, batch *b, MDB_val *last_per_db) {
  if (!b->n) return 0;
  c->replay = 0;
  for (;;) {
    MDB_txn *txn;
    int rc = store_txn_begin(c->out->env, 0, &txn);
    if (rc == MDB_MAP_RESIZED && !(rc = store_adopt_map(c->out))) continue;
    if (rc) return rc;
    delta dl;
    memset(&dl, 0, sizeof dl);
    rc = store_index_begin(c->out, txn);
    for (size_t i = 0; i < b->n && !rc; i++) {
      pending *p = &b->p[i];
      MDB_val *last =
          last_per_db[p->db].mv_data || last_per_db[p->db].mv_size ? &last_per_db[p->db] : NULL;
      rc = put_one(c, b, p, txn, last, &dl);
    }
    int wrote = 0;
    for (int d = 0; d < FC_DB_COUNT; d++) wrote |= dl.copied[d] != 0;
    if (!rc && wrote && fault_hit("commit")) {
      store_txn_abort(txn);
      rc = EIO;
    } else if (!rc) { /* nothing copied may still have indexed entries already there */
      rc = store_txn_commit(txn); /* (a transaction that changed nothing writes nothing) */
    } else {
      store_txn_abort(txn);
    }
    store_index_end(c->out, rc == 0);
    if (rc == MDB_MAP_FULL) {
      if ((rc = store_grow_map(c->out, 0)) != 0) return rc;
      c->replay = 1;
      continue;
    }
    /* a full disk reads as EIO from LMDB: say what it is (ENOSPC, EFBIG) */
    if (rc) return store_explain_write_error(c->out, rc, dl.bytes);
    for (int d = 0; d < FC_DB_COUNT; d++) {
      c->st->copied[d] += dl.copied[d];
      c->st->present[d] += dl.present[d];
    }
    c->st->bytes_copied += dl.bytes;
    c->st->dropped += dl.dropped;
    c->st->changed_meanwhile += dl.meanwhile;
    if (wrote) c->st->commits++;
    /* the disk works while the merge goes on (the commit's fdatasync then waits for less), and the
     * pages it wrote are reused (writeback.c) */
    b->n = b->nh = 0;
    b->bytes = 0;
    return writeback_committed(&c->wb, dl.bytes);
  }
}

static int copy_db(mctx *c, int db, batch *b, double *last_sync) {
  /* the output's last key in this db, when it has one: keys above it are appended */
  fc_rtxn *rt;
  int rc = fc_store_read_begin(c->out, &rt);
  if (rc) return rc;
  MDB_cursor *cur;
  MDB_val lastk = {0, NULL}, v;
  uint8_t *lastbuf = NULL;
  rc = mdb_cursor_open(rt->txn, c->out->dbi[db], &cur);
  if (!rc) {
    rc = mdb_cursor_get(cur, &lastk, &v, MDB_LAST);
    if (rc == MDB_NOTFOUND) {
      lastk = (MDB_val){0, NULL};
      rc = 0;
    } else if (!rc) { /* copy it: the read transaction ends now */
      lastbuf = fc_malloc(lastk.mv_size ? lastk.mv_size : 1);
      if (!lastbuf)
        rc = ENOMEM;
      else
        memcpy(lastbuf, lastk.mv_data, lastk.mv_size);
      lastk.mv_data = lastbuf;
    }
    mdb_cursor_close(cur);
  }
  fc_rtxn_end(rt);
  if (rc) {
    free(lastbuf);
    return rc;
  }
  MDB_val last[FC_DB_COUNT];
  memset(last, 0, sizeof last);
  /* an empty db has no last key: every key is appended (a zero-length key cannot be stored) */
  if (lastbuf) last[db] = lastk;

  for (size_t i = 0; i < c->n; i++) c->dbis[i] = c->in[i]->dbi[db];
  fc_kmerge *k;
  if ((rc = kmerge_open(c->txns, c->dbis, c->n, NULL, &k)) != 0) {
    free(lastbuf);
    return rc;
  }
  MDB_val key;
  size_t m;
  const size_t *src;
  const MDB_val *vals;
  uint32_t max_rec = c->o->batch_records ? c->o->batch_records : 1024;
  uint64_t max_bytes = c->o->batch_bytes ? c->o->batch_bytes : FC_MERGE_BATCH_BYTES;
  double sync_s = c->o->sync_seconds > 0 ? c->o->sync_seconds : 5;
  while ((rc = kmerge_next(k, &key, &m, &src, &vals)) == 0) {
    if (db == FC_DB_META && store_owned(&key)) continue;
    for (size_t j = 0; j < m; j++) c->st->bytes_in += vals[j].mv_size;
    if (m > 1) c->st->duplicates[db]++;
    int records = db == FC_DB_FEAT || db == FC_DB_TOK;
    if (records) {
      rc = batch_add(b, db, &key, m, src, vals);
    } else {
      int differ;
      size_t a, bb;
      long w = pick_winner(c, db, &key, m, src, vals, &differ, &a, &bb);
      if (w < 0) continue; /* refused conflicts were caught in phase 1; nothing to do */
      rc = batch_add(b, db, &key, 1, &src[w], &vals[w]);
      if (!rc) b->p[b->n - 1].chosen = 0;
    }
    if (rc) break;
    /* meta goes in one transaction: a config, its created/ and its vocabulary or tokenizer.json
     * land together (their keys are apart: cfg/, created/, tokenizer/, vocab/), and a merge cut
     * short leaves no config without them; meta is small beside the records, and held by
     * pointer until the commit */
    if (db != FC_DB_META && (b->n >= max_rec || b->bytes >= max_bytes)) {
      if ((rc = flush(c, b, last)) != 0) break;
      if (c->o->on_progress) c->o->on_progress(c->st, c->o->user);
      double t = now_s();
      if ((c->out->flags & FC_STORE_NOSYNC) && t - *last_sync >= sync_s) {
        if ((rc = store_explain_write_error(c->out, mdb_env_sync(c->out->env, 1), 0)) != 0) break;
        *last_sync = t;
      }
      if (c->o->stop && *c->o->stop) {
        rc = FC_EINTR;
        break;
      }
    }
  }
  if (rc == MDB_NOTFOUND) rc = flush(c, b, last);
  kmerge_close(k);
  free(lastbuf);
  return rc;
}

/* ---- the run ----------------------------------------------------------------------------------- */
typedef struct dir_id {
  dev_t dev;
  ino_t ino;
  size_t i;
} dir_id;

static int dir_id_cmp(const void *a, const void *b) {
  const dir_id *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* An input that is the output, or the same directory as an earlier input (another spelling, a
 * link): 0, or EINVAL with why naming the first such input. One stat per input and a sort, not a
 * stat pair per pair of inputs: thousands of shards took 19 s (3,000) before the merge began. */
static int check_dirs(const char *out_dir, const char *const *inputs, size_t n, char *why,
                      size_t why_len) {
  struct stat so, st;
  int have_out = stat(out_dir, &so) == 0;
  dir_id *v = fc_malloc((n ? n : 1) * sizeof *v);
  if (!v) return ENOMEM;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (stat(inputs[i], &st) != 0) continue; /* said when it is opened */
    if (have_out && st.st_dev == so.st_dev && st.st_ino == so.st_ino) {
      fc_why_name_buf q;
      fc_why(why, why_len, "%s: the output cannot be one of the inputs",
             fc_why_name(inputs[i], SIZE_MAX, &q));
      free(v);
      return EINVAL;
    }
    v[m++] = (dir_id){st.st_dev, st.st_ino, i};
  }
  qsort(v, m, sizeof *v, dir_id_cmp);
  size_t bi = 0, bj = SIZE_MAX; /* the earliest repeat, and the input it repeats */
  for (size_t a = 1; a < m; a++)
    if (v[a].dev == v[a - 1].dev && v[a].ino == v[a - 1].ino &&
        (a < 2 || v[a - 2].dev != v[a].dev || v[a - 2].ino != v[a].ino) && v[a].i < bj)
      bi = v[a - 1].i, bj = v[a].i;
  free(v);
  if (bj == SIZE_MAX) return 0;
  fc_why_name_buf qj, qi;
  fc_why(why, why_len, "%s: given twice (also as %s)", fc_why_name(inputs[bj], SIZE_MAX, &qj),
         fc_why_name(inputs[bi], SIZE_MAX, &qi));
  return EINVAL;
}

int fc_merge_run(const char *out_dir, const char *const *inputs, size_t n, const fc_merge_opts *o,
                 fc_merge_stats *stats, char *why, size_t why_len) {
  FC_ARGS_WHY(out_dir, inputs || !n);
  fc_merge_opts defaults;
  if (!o) {
    fc_merge_opts_init(&defaults);
    o = &defaults;
  }
  fc_merge_stats local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  stats->inputs = n;
  if (why && why_len) why[0] = '\0';
  FC_ARGS_EACH_WHY(inputs, n); /* not an open's "(null): cannot open the store: ..." */
  double t0 = now_s();
  if (!out_dir || !*out_dir) {
    fc_why(why, why_len, "no output store");
    return EINVAL;
  }
  if (!n) {
    fc_why(why, why_len, "no input stores");
    return EINVAL;
  }
  if (o->prefer == FC_MERGE_STORE &&
      (o->prefer_index >= n || (o->prefer_count && o->prefer_count > n - o->prefer_index))) {
    fc_why(why, why_len, "the preferred store is not one of the inputs");
    return EINVAL;
  }
  int rc0 = check_dirs(out_dir, inputs, n, why, why_len);
  if (rc0) return rc0;
  /* a split store cannot be written as one (its writers route each id to its part): said before
   * the inputs are read, not when the output is created after them */
  unsigned out_parts = 0;
  if (fc_store_split_count(out_dir, &out_parts) == 0 && out_parts > 1) {
    fc_why_name_buf q;
    fc_why(why, why_len,
           "%s: cannot open the output store: FC_ESPLIT: a split store of %u parts; merge into a "
           "plain store",
           fc_why_name(out_dir, SIZE_MAX, &q), out_parts);
    return FC_ESPLIT;
  }
  /* the stores' pages, before LMDB reads one (merge_pages.c) */
  if ((rc0 = merge_check_pages(out_dir, inputs, n, o, stats, why, why_len)) != 0) return rc0;
  stats->pass = 1; /* then the first pass: the stores opened, their shards, configs, conflicts */
  mctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.st = stats;
  c.paths = inputs;
  c.n = n;
  c.in = fc_calloc(n, sizeof *c.in);
  c.rt = fc_calloc(n + 1, sizeof *c.rt);
  c.txns = fc_calloc(n + 1, sizeof *c.txns);
  c.dbis = fc_calloc(n + 1, sizeof *c.dbis);
  batch b;
  memset(&b, 0, sizeof b);
  int rc = (c.in && c.rt && c.txns && c.dbis) ? 0 : ENOMEM;
  uint64_t total_used = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    unsigned fl =
        FC_STORE_RDONLY | (store_wants_nolock(inputs[i], o->nolock) ? FC_STORE_NOLOCK : 0);
    rc = fc_store_open(inputs[i], fl, &c.in[i]);
    if (rc) {
      fc_why_name_buf q;
      fc_why(why, why_len, "%s: cannot open the store: %s", fc_why_name(inputs[i], SIZE_MAX, &q),
             fc_strerror(rc));
      break;
    }
    fc_store_info info;
    if ((rc = fc_store_info_get(c.in[i], &info)) != 0) break;
    total_used += info.map_used;
    if ((rc = fc_store_read_begin(c.in[i], &c.rt[i])) != 0) break;
    c.txns[i] = c.rt[i]->txn;
  }
  /* An existing output takes part in the conflict check; a new one is created only after it. */
  char dm[4096];
  struct stat dst;
  int out_exists =
      snprintf(dm, sizeof dm, "%s/data.mdb", out_dir) < (int)sizeof dm && stat(dm, &dst) == 0;
  if (!rc && out_exists &&
      (rc = fc_store_open(out_dir, FC_STORE_CREATE | FC_STORE_NOMETASYNC, &c.out)) != 0) {
    fc_why_name_buf q;
    if (rc == FC_EINTR) /* a signal while the open waited for cache-prune's writer lock */
      fc_why(why, why_len, "%s: interrupted while waiting for cache-prune to finish",
             fc_why_name(out_dir, SIZE_MAX, &q));
    else
      fc_why(why, why_len, "%s: cannot open the output store: %s",
             fc_why_name(out_dir, SIZE_MAX, &q), fc_strerror(rc));
  }
  unsigned part_k, part_n;
  if (!rc && c.out && fc_store_part_of_store(c.out, &part_k, &part_n) == 0 && part_n > 1) {
    /* a part holds only the ids routed to it (docs/FORMAT.md "Split stores"): the inputs' other
     * ids would sit where no writer of the split store looks for them */
    rc = FC_ECONFIG;
    fc_why(why, why_len,
           "%s: cannot open the output store: it is part %u of a split store of %u parts, which "
           "holds only the ids routed to it; merge into a plain store",
           FC_WHY_NAME(out_dir), part_k, part_n);
  }
  if (rc) goto done;

  /* phase 1: every conflict, before anything is written */
  size_t parties = n;
  if (c.out) {
    if ((rc = fc_store_read_begin(c.out, &c.rt[n])) != 0) goto done;
    c.txns[n] = c.rt[n]->txn;
    parties = n + 1;
  }
  /* the shards the inputs record form complete sets (merge_shards.c), before anything else */
  rc = merge_check_shards(c.in, c.txns, n, c.out, c.out ? c.txns[n] : NULL, inputs, out_dir, o,
                          stats, why, why_len);
  if (rc) goto done;
  uint64_t unresolved;
  rc = find_conflicts(&c, parties, &unresolved);
  fc_rtxn_end(c.rt[n]);
  c.rt[n] = NULL;
  if (rc == FC_EINTR) stats->total = 0; /* cut short: the keys walked so far are no total */
  if (rc) goto done;
  if (unresolved) {
    fc_why(why, why_len, "%llu id%s with differing entries; nothing merged",
           (unsigned long long)unresolved, unresolved == 1 ? "" : "s");
    rc = FC_ECONFLICT;
    goto done;
  }
  if (!c.out && (rc = fc_store_open(out_dir, FC_STORE_CREATE | FC_STORE_NOMETASYNC, &c.out)) != 0) {
    fc_why_name_buf q;
    fc_why(why, why_len, "%s: cannot create the output store: %s",
           fc_why_name(out_dir, SIZE_MAX, &q), fc_strerror(rc));
    goto done;
  }

  writeback_init(&c.wb, c.out->env, o->writeback_bytes);

  /* Room for everything at once, so that the map rarely has to grow mid-run. It still may: the
   * inputs' pages may be fuller than the output's (a compacted input, mdb_copy -c, merged into
   * an existing output whose keys interleave with its own: those puts split pages half full),
   * and then flush grows it. A test build given FC_FAULT_MAPSIZE skips this, so that its small
   * merges grow mid-run (tests/cli/fault_sites.sh). */
  fc_store_info oi;
  if ((rc = fc_store_info_get(c.out, &oi)) != 0) goto done;
  uint64_t want = oi.map_used + total_used + total_used / 4 + (64ull << 20);
  if (want > oi.map_size && !store_fault_mapsize() && (rc = store_grow_map(c.out, want)) != 0)
    goto done;

  fault_stop("merge_copy"); /* test builds: FC_FAULT_STOP=merge_copy:1 (cli/merge_meanwhile) */
  static const int order[] = {FC_DB_META, FC_DB_FEAT, FC_DB_TOK, FC_DB_AUDIO, FC_DB_TEXT};
  double last_sync = now_s();
  for (size_t d = 0; d < sizeof order / sizeof order[0] && !rc; d++) {
    rc = copy_db(&c, order[d], &b, &last_sync);
    if (!rc && o->on_progress) o->on_progress(stats, o->user);
    if (!rc && o->stop && *o->stop) rc = FC_EINTR;
  }
  if (!rc) rc = merge_failures(c.out, c.in, c.txns, n, o, &c.wb, stats); /* merge_failed.c */
  int wrc = store_explain_write_error(c.out, writeback_end(&c.wb), 0);
  if (!rc) rc = wrc;
  int src = store_explain_write_error(c.out, mdb_env_sync(c.out->env, 1), 0);
  if (!rc) rc = src;
  if (!rc && o->on_progress) o->on_progress(stats, o->user);
  if (rc && rc != FC_EINTR && why && why_len && !why[0]) {
    fc_why_name_buf q;
    fc_why(why, why_len, "%s: %s", fc_why_name(out_dir, SIZE_MAX, &q), fc_strerror(rc));
  }

done:
  writeback_end(&c.wb); /* before the output's file is closed */
  for (size_t i = 0; i <= n && c.rt; i++) fc_rtxn_end(c.rt[i]);
  for (size_t i = 0; i < n && c.in; i++) fc_store_close(c.in[i]);
  fc_store_close(c.out);
  free(c.in);
  free(c.rt);
  free(c.txns);
  free(c.dbis);
  free(b.p);
  free(b.hold);
  free(b.hold_src);
  stats->wall_seconds = now_s() - t0;
  return rc;
}
