/* cache-merge: featurize's failure records (merge_failed.h). Failure records are few (the bad files
 * of a corpus), so they are written with plain puts in small batches after everything else, not
 * through the appending copy of merge.c; memory is one batch of keys and values. Like merge.c's
 * batches, each commit goes through the output's write-back (writeback.c), and the stop flag is
 * seen after each batch (and, clearing the output's records, after each round of reads, however
 * few it deletes): a stopped pass keeps what it committed, and a rerun does the rest. */
#include "libcache/core/merge/merge_failed.h"

#include "featcache/fc_format.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "libcache/core/merge/kmerge.h"
#include "libcache/core/merge/writeback.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 1024 }; /* at most; fewer when the merge's batches are smaller (batch_records) */
/* The output's records read per round of the clearing pass at most, whatever it finds to delete:
 * a round ends with the stop flag seen (batch_done), so a large `failed` db with little to delete
 * is not read through before a stop. */
enum { SCAN_BATCHES = 16 };

typedef struct fput {
  MDB_val key, val; /* point into an input's map, or (deletions) a copy owned by the batch */
  int del;
} fput;

typedef struct fbatch {
  fput p[BATCH];
  size_t n;
  void *owned[BATCH]; /* copies of keys read from out (its read transaction ended) */
  size_t n_owned;
} fbatch;

/* Does some input store id under config: its audio entry, and that entry's record for config? */
static int stored_in_inputs(fc_store *const *in, MDB_txn *const *txns, size_t n, const MDB_val *id,
                            const fc_digest *config) {
  for (size_t i = 0; i < n; i++) {
    MDB_val k = *id, v;
    fc_audio_entry e;
    if (mdb_get(txns[i], in[i]->dbi[FC_DB_AUDIO], &k, &v) != 0 ||
        fc_audio_entry_decode(v.mv_data, v.mv_size, &e) != 0)
      continue;
    fc_digest key;
    fc_record_key(&e.digest, config, &key);
    MDB_val rk = {16, key.bytes}, rv;
    if (mdb_get(txns[i], in[i]->dbi[FC_DB_FEAT], &rk, &rv) == 0) return 1;
  }
  return 0;
}

/* Write the batch in one transaction (replayed after growing the map); the bytes it put are
 * counted into the write-back as merge.c's commits are, and a failed write is explained as
 * theirs are (store_explain_write_error). */
static int flush(fc_store *out, fbatch *b, fc_writeback *wb, fc_merge_stats *st) {
  int rc = 0;
  while (b->n) {
    MDB_txn *txn;
    rc = store_txn_begin(out->env, 0, &txn);
    if (rc == MDB_MAP_RESIZED && !(rc = store_adopt_map(out))) continue;
    if (rc) break;
    uint64_t copied = 0, cleared = 0, bytes = 0;
    for (size_t i = 0; i < b->n && !rc; i++) {
      fput *p = &b->p[i];
      MDB_val have;
      int got = mdb_get(txn, out->dbi[FC_DB_FAILED], &p->key, &have);
      if (got && got != MDB_NOTFOUND) {
        rc = got;
      } else if (p->del) {
        if (got == 0 &&
            !(rc = fault_hit("put") ? EIO : mdb_del(txn, out->dbi[FC_DB_FAILED], &p->key, NULL)))
          cleared++;
      } else if (got != 0 || have.mv_size != p->val.mv_size ||
                 memcmp(have.mv_data, p->val.mv_data, have.mv_size) != 0) {
        rc = fault_hit("put") ? EIO : mdb_put(txn, out->dbi[FC_DB_FAILED], &p->key, &p->val, 0);
        if (!rc) copied++, bytes += p->key.mv_size + p->val.mv_size;
      }
    }
    if (!rc && (copied || cleared))
      rc = fault_hit("commit") ? (store_txn_abort(txn), EIO) : store_txn_commit(txn);
    else
      store_txn_abort(txn);
    if (rc == MDB_MAP_FULL) {
      if ((rc = store_grow_map(out, 0)) != 0) break;
      continue;
    }
    /* a full disk reads as EIO from LMDB: said as merge.c's commits say it (ENOSPC, EFBIG) */
    if (rc) {
      rc = store_explain_write_error(out, rc, bytes);
      break;
    }
    st->failures_copied += copied;
    st->failures_cleared += cleared;
    st->commits += (copied || cleared);
    b->n = 0;
    rc = writeback_committed(wb, bytes);
  }
  for (size_t i = 0; i < b->n_owned; i++) free(b->owned[i]);
  b->n_owned = 0;
  return rc;
}

/* The input value with the latest time (offset 16) among those that decode; -1 when none does. */
static long latest(const MDB_val *vals, size_t m) {
  long best = -1;
  int64_t when = 0;
  for (size_t j = 0; j < m; j++) {
    fc_failure f;
    if (fc_failure_decode(vals[j].mv_data, vals[j].mv_size, &f) != 0) continue;
    if (best < 0 || f.time_ns > when) best = (long)j, when = f.time_ns;
  }
  return best;
}

/* After a full batch was written, as merge.c's copy does: progress, then FC_EINTR when the stop
 * flag is set (what was committed stays; a rerun redoes nothing of it). */
static int batch_done(const fc_merge_opts *o, fc_merge_stats *st) {
  if (o->on_progress) o->on_progress(st, o->user);
  return o->stop && *o->stop ? FC_EINTR : 0;
}

int merge_failures(fc_store *out, fc_store *const *in, MDB_txn *const *txns, size_t n,
                   const fc_merge_opts *o, fc_writeback *wb, fc_merge_stats *st) {
  const size_t max = o->batch_records && o->batch_records < BATCH ? o->batch_records : BATCH;
  fbatch *b = fc_calloc(1, sizeof *b);
  MDB_txn **t2 = fc_calloc(n ? n : 1, sizeof *t2);
  MDB_dbi *d2 = fc_calloc(n ? n : 1, sizeof *d2);
  int rc = (b && t2 && d2) ? 0 : ENOMEM;
  if (rc || !out->dbi[FC_DB_FAILED]) goto done;

  /* 1. out's own records of ids some input now stores under their config: deleted, a batch at a
   *    time (the read transaction ends before each batch is written; the next one starts after
   *    the batch's last key) */
  MDB_val k, v;
  void *after = NULL; /* the last key seen, a copy */
  size_t after_len = 0;
  for (int more = 1; more && !rc;) {
    fc_rtxn *rt = NULL;
    MDB_cursor *cur = NULL;
    if (!(rc = fc_store_read_begin(out, &rt)))
      rc = mdb_cursor_open(rt->txn, out->dbi[FC_DB_FAILED], &cur);
    if (!rc) {
      k = (MDB_val){after_len, after};
      rc = mdb_cursor_get(cur, &k, &v, after ? MDB_SET_RANGE : MDB_FIRST);
      if (!rc && after && k.mv_size == after_len && memcmp(k.mv_data, after, after_len) == 0)
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    for (size_t seen = 0; !rc && b->n < max && seen < SCAN_BATCHES * max;
         seen++, rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      void *last = fc_malloc(k.mv_size);
      if (!last) {
        rc = ENOMEM;
        break;
      }
      memcpy(last, k.mv_data, k.mv_size);
      free(after);
      after = last;
      after_len = k.mv_size;
      fc_failure f;
      if (fc_failure_decode(v.mv_data, v.mv_size, &f) != 0 ||
          !stored_in_inputs(in, txns, n, &k, &f.config))
        continue;
      void *copy = fc_malloc(k.mv_size);
      if (!copy) {
        rc = ENOMEM;
        break;
      }
      memcpy(copy, k.mv_data, k.mv_size);
      b->owned[b->n_owned++] = copy;
      b->p[b->n++] = (fput){{k.mv_size, copy}, {0, NULL}, 1};
    }
    more = rc == 0; /* stopped at a full batch or the round's reads, not at the end */
    if (rc == MDB_NOTFOUND) rc = 0;
    if (cur) mdb_cursor_close(cur);
    fc_rtxn_end(rt); /* before the batch is written: no transaction of ours open on out */
    if (!rc) rc = flush(out, b, wb, st);
    if (!rc && more) rc = batch_done(o, st);
  }
  free(after);
  for (size_t i = 0; i < b->n_owned; i++) free(b->owned[i]);
  b->n_owned = 0;
  if (rc) goto done;

  /* 2. the inputs' records: the latest per id, unless an input stores the id */
  size_t n2 = 0;
  for (size_t i = 0; i < n; i++)
    if (in[i]->dbi[FC_DB_FAILED]) t2[n2] = txns[i], d2[n2++] = in[i]->dbi[FC_DB_FAILED];
  if (!n2) goto done;
  fc_kmerge *km;
  if ((rc = kmerge_open(t2, d2, n2, NULL, &km)) != 0) goto done;
  size_t m;
  const size_t *src;
  const MDB_val *vals;
  while ((rc = kmerge_next(km, &k, &m, &src, &vals)) == 0) {
    long w = latest(vals, m);
    fc_failure f;
    if (w < 0 || fc_failure_decode(vals[w].mv_data, vals[w].mv_size, &f) != 0) continue;
    int stored = stored_in_inputs(in, txns, n, &k, &f.config);
    b->p[b->n++] = (fput){k, vals[w], stored};
    if (b->n == max && ((rc = flush(out, b, wb, st)) != 0 || (rc = batch_done(o, st)) != 0)) break;
  }
  kmerge_close(km);
  if (rc == MDB_NOTFOUND) rc = flush(out, b, wb, st);

done:
  free(b);
  free(t2);
  free(d2);
  return rc;
}
