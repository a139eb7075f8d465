/* The store's write side (fc_store.h "writing"): the puts of a batch in one write transaction,
 * with the index kept in it (index.c), map growth by replay (store.c), the sticky refusal after a
 * failed commit, and a failed write's errno explained (a full disk, a file-size limit). */
#include "libcache/core/store/store_int.h"
#include "formats/common/args.h"

#include "formats/common/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h> /* mkostemp */
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static size_t batch_bytes(const fc_put *puts, size_t n) {
  size_t b = 0;
  for (size_t i = 0; i < n; i++) b += puts[i].key_len + puts[i].val_len;
  return b;
}

/* LMDB reports a short write as EIO ("Input/output error"): a full disk, a used-up quota or a
 * file-size limit reads as a hardware fault (the write that would say why is never made). When
 * the file system holds less than the batch (plus slack for LMDB's pages) or data.mdb plus the
 * batch passes RLIMIT_FSIZE, or the batch's blocks cannot be had beside data.mdb (a quota: the
 * disk has room, this user does not), say so instead: ENOSPC, EFBIG, EDQUOT. */
int store_explain_write_error(const fc_store *s, int rc, size_t bytes) {
  if (rc != EIO && rc != ENOSPC && rc != EFBIG) return rc;
  const uint64_t need = (uint64_t)bytes + (4u << 20);
  struct statvfs fs;
  if (statvfs(s->path, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < need) return ENOSPC;
  struct rlimit lim;
  char p[4096];
  struct stat st;
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      snprintf(p, sizeof p, "%s/data.mdb", s->path) < (int)sizeof p && stat(p, &st) == 0 &&
      (uint64_t)st.st_size + need > (uint64_t)lim.rlim_cur)
    return EFBIG;
  const int room = rc == EIO ? store_room_probe(s->path, need) : 0;
  return room ? room : rc;
}

/* One put. A config new to the store gets its index in the same transaction. */
static int put_one(fc_store *s, MDB_txn *txn, const fc_put *p, unsigned char *kept) {
  if (p->flags & FC_PUT_REQUIRE) { /* a check, no write: no fault countdown either */
    MDB_val k = {p->key_len, (void *)p->key}, v;
    int rc = mdb_get(txn, s->dbi[p->db], &k, &v);
    return rc == MDB_NOTFOUND ? FC_EDROPPED : rc;
  }
  const int fill = (p->flags & FC_PUT_FILL) != 0;
  const fc_put_seen *seen = (p->flags & FC_PUT_SEEN) ? p->val : NULL;
  if (seen && fill) return EINVAL;
  const void *val = seen ? seen->val : fill ? NULL : p->val;
  MDB_val k = {p->key_len, (void *)p->key}, v = {p->val_len, (void *)val};
  int is_cfg = p->db == FC_DB_META && p->key_len == 36 && memcmp(p->key, "cfg/", 4) == 0;
  unsigned flags =
      ((p->flags & FC_PUT_NOOVERWRITE) ? MDB_NOOVERWRITE : 0) | (fill ? MDB_RESERVE : 0);
  if ((is_cfg && !(flags & MDB_NOOVERWRITE)) || (p->flags & FC_PUT_SAME_KEPT) || seen) {
    MDB_val old; /* a config overwritten is new only if not there; the same bytes are kept */
    int g = mdb_get(txn, s->dbi[p->db], &k, &old);
    if (g && g != MDB_NOTFOUND) return g;
    if (seen) seen->seen(g ? NULL : old.mv_data, g ? 0 : old.mv_size, seen->arg);
    if (!g && (p->flags & FC_PUT_SAME_KEPT) && old.mv_size == p->val_len &&
        memcmp(old.mv_data, val, p->val_len) == 0)
      return kept ? (*kept = 1, 0) : 0;
    if (g != MDB_NOTFOUND) is_cfg = 0;
  }
  int rc = fault_hit("put") ? EIO
                            : mdb_put(txn, s->dbi[p->db], &k, &v,
                                      flags | ((p->flags & FC_PUT_APPEND) ? MDB_APPEND : 0));
  if (rc == MDB_KEYEXIST && (p->flags & FC_PUT_APPEND)) { /* not after the last key: a plain put */
    v = (MDB_val){p->val_len, (void *)val};
    rc = mdb_put(txn, s->dbi[p->db], &k, &v, flags);
  }
  if (rc == 0 && fill) { /* the reserved bytes, written in place (fc_put_fill) */
    const fc_put_fill *f = p->val;
    rc = f->fill(v.mv_data, p->val_len, f->arg);
  }
  if (rc == MDB_KEYEXIST) { /* content-addressed: the stored value is the same */
    if (kept) *kept = 1;
    return 0;
  }
  if (!rc && is_cfg)
    rc = store_index_config_added(s, txn, p->key, p->key_len, v.mv_data, v.mv_size);
  return rc;
}

/* The index entries of an entry put: from the entry as stored (a NOOVERWRITE put may have met
 * another value; a FILL put's bytes are in the page). */
static int index_put(fc_store *s, MDB_txn *txn, const fc_put *p) {
  const void *val = (p->flags & FC_PUT_SEEN) ? ((const fc_put_seen *)p->val)->val : p->val;
  MDB_val k = {p->key_len, (void *)p->key}, v = {p->val_len, (void *)val};
  if (p->flags & FC_PUT_DELETE) { /* no entry: in no index */
    v = (MDB_val){0, NULL};
  } else if (p->flags & (FC_PUT_NOOVERWRITE | FC_PUT_FILL)) {
    int rc = mdb_get(txn, s->dbi[p->db], &k, &v);
    if (rc) return rc;
  }
  return store_index_entry(s, txn, p->db, p->key, p->key_len, v.mv_data, v.mv_size, NULL, NULL);
}

/* The fill puts' done calls (fc_put_fill): fill will not be called again for them. */
static void fills_done(const fc_put *puts, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (puts[i].flags & FC_PUT_FILL) {
      const fc_put_fill *f = puts[i].val;
      if (f->done) f->done(f->arg);
    }
}

/* Whether the map holds whatever the open write transaction's commit may still take: the pages
 * the transaction made beyond the last committed page (at most, for each put, its key and value's
 * pages and a few for its path through the tree and the index entries it makes), and the pages
 * the commit itself takes for the free list, twice over. While it does, the commit cannot fail with
 * MDB_MAP_FULL, so the batch will not be replayed. */
static int room_to_commit(fc_store *s, const fc_put *puts, size_t n) {
  MDB_envinfo ei;
  MDB_stat ms;
  if (mdb_env_info(s->env, &ei) || mdb_env_stat(s->env, &ms) || !ms.ms_psize) return 0;
  const uint64_t ps = ms.ms_psize;
  uint64_t need = 256; /* the free list's record, the db roots, the meta page */
  for (size_t i = 0; i < n; i++) need += 32 + (puts[i].key_len + puts[i].val_len) / ps + 2;
  const uint64_t pages = ei.me_mapsize / ps, used = (uint64_t)ei.me_last_pgno + 1;
  return pages > used && pages - used >= 2 * need;
}

int fc_store_write(fc_store *s, const fc_put *puts, size_t n) {
  FC_ARGS(puts || !n);
  if (!s) { /* the fill puts' done are called whatever it returns */
    fills_done(puts, n);
    FC_ARGS(s);
  }
  return fc_store_write_kept(s, puts, n, NULL);
}

int fc_store_write_kept(fc_store *s, const fc_put *puts, size_t n, unsigned char *kept) {
  FC_ARGS(puts || !n);
  if (!s) { /* the fill puts' done are called whatever it returns */
    fills_done(puts, n);
    FC_ARGS(s);
  }
  if (s->flags & FC_STORE_RDONLY) {
    fills_done(puts, n);
    return EACCES;
  }
  store_clear_stale_readers(s); /* the pages a killed reader pinned: free for this write */
  pthread_mutex_lock(&s->write_mu);
  int rc, released = 0; /* released: the fill puts' done were called (no replay after that) */
  if (s->broken) {
    rc = FC_EBADSTATE;
    goto out;
  }
  for (;;) {
    MDB_txn *txn;
    pthread_rwlock_rdlock(&s->map_lock);
    rc = store_txn_begin(s->env, 0, &txn);
    pthread_rwlock_unlock(&s->map_lock);
    if (rc == MDB_MAP_RESIZED) { /* another process grew the map: adopt its size and retry */
      if ((rc = store_adopt_map(s)) != 0) goto out;
      continue;
    }
    if (rc) goto out;
    rc = store_index_begin(s, txn);
    if (kept) memset(kept, 0, n); /* this try's (a replay after the map grew starts over) */
    for (size_t i = 0; i < n && !rc; i++) {
      const fc_put *p = &puts[i];
      if (p->db < 0 || p->db >= FC_DB_ALL || !s->dbi[p->db]) {
        rc = EINVAL;
        break;
      }
      if (p->flags & FC_PUT_DELETE) {
        MDB_val k = {p->key_len, (void *)p->key};
        rc = fault_hit("put") ? EIO : mdb_del(txn, s->dbi[p->db], &k, NULL);
        if (rc == MDB_NOTFOUND) rc = 0;
        continue;
      }
      rc = put_one(s, txn, p, kept ? &kept[i] : NULL);
    }
    /* the index follows the entries this batch wrote, now that its records are in (index.c) */
    for (size_t i = 0; i < n && !rc; i++)
      if (puts[i].db == FC_DB_AUDIO || puts[i].db == FC_DB_TEXT) rc = index_put(s, txn, &puts[i]);
    if (rc) {
      store_txn_abort(txn);
      store_index_end(s, 0);
      if (rc == MDB_MAP_FULL && !(rc = store_grow_map(s, 0))) continue;
      goto out; /* nothing half-done: the batch was aborted whole, the handle stays usable */
    }
    /* What the fills read is not needed any more unless the commit finds the map full: the
     * caller may reuse it while the commit writes the pages (fc_put_fill's done). */
    if (room_to_commit(s, puts, n)) {
      fills_done(puts, n);
      released = 1;
    }
    if (fault_hit("commit")) {
      store_txn_abort(txn);
      rc = EIO;
    } else {
      rc = store_txn_commit(txn);
    }
    store_index_end(s, rc == 0);
    if (rc == MDB_MAP_FULL && !released && !(rc = store_grow_map(s, 0))) continue;
    if (rc) {
      s->broken = 1; /* a failed commit: refuse further writes until reopened */
      rc = store_explain_write_error(s, rc, batch_bytes(puts, n));
    }
    goto out;
  }
out:
  pthread_mutex_unlock(&s->write_mu);
  if (!released) fills_done(puts, n);
  return rc;
}

int fc_store_sync(fc_store *s) {
  FC_ARGS(s);
  if (s->flags & FC_STORE_RDONLY) return 0;
  return store_explain_write_error(s, mdb_env_sync(s->env, 1), 0);
}
