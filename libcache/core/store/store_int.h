/* Internal view of a store, for core-component code that reads LMDB directly (loader/, verify/).
 * The mel and text components use only the public fc_store.h: this layout is not their ABI. */
#ifndef FC_STORE_INT_H
#define FC_STORE_INT_H

#include "featcache/fc_format.h"
#include "featcache/fc_store.h"

#include <lmdb.h>
#include <pthread.h>

struct fc_store {
  MDB_env *env;
  MDB_dbi dbi[FC_DB_COUNT];
  unsigned flags;
  char *path;
  pthread_mutex_t write_mu; /* one writer at a time */
  pthread_rwlock_t map_lock; /* read txns hold it shared; map resizes take it exclusive */
  int broken; /* sticky: a commit failed, writes refused */
};

/* Open dir without a lock? setting > 0 always, < 0 never, 0 auto: read-only media, a directory or
 * lock.mdb we cannot write, or no lock.mdb at all (no process has the environment open, and
 * creating one would be a write). Readers that must never write use it: cache-verify, cache-merge's
 * inputs. */
int store_wants_nolock(const char *dir, int setting);

/* Map growth for writers that drive LMDB themselves (merge/): every resize of an fc_store's map
 * takes map_lock exclusive, as LMDB allows a resize only while the process has no transaction
 * open on the environment (fc_store_read_begin's read transactions hold map_lock shared).
 * store_grow_map: twice the map, or at_least bytes if that is more; the `grow` fault site.
 * store_adopt_map: take the size another process grew the map to (after MDB_MAP_RESIZED).
 * Both return 0 or an LMDB/errno code. The caller must hold no transaction on s itself. */
int store_grow_map(fc_store *s, uint64_t at_least);
int store_adopt_map(fc_store *s);
/* FC_FAULT_MAPSIZE in a test build (the first map of a new store, at least 16 KiB), else 0. A
 * writer that sizes its map up front (cache-merge) does not when it is set, so that a small test
 * job grows its map mid-run (tests/cli/fault_sites.sh). */
size_t store_fault_mapsize(void);

/* LMDB reports a short write as EIO: when the file system holds less than `bytes` (plus slack)
 * or data.mdb plus them passes RLIMIT_FSIZE, the error is ENOSPC or EFBIG instead; any other rc is
 * returned as it is. For writers that commit through LMDB themselves (merge/). */
int store_explain_write_error(const fc_store *s, int rc, size_t bytes);

/* Creating a store in dir (data.mdb, or a split store's marker) is decided under an exclusive
 * flock of the directory, so that two jobs never make both (libcache/store/split.c). Returns the
 * locked descriptor (>= 0) or -errno; store_create_unlock releases it. */
int store_create_lock(const char *dir);
void store_create_unlock(int fd);

struct fc_rtxn {
  fc_store *s;
  MDB_txn *txn;
};

#endif
