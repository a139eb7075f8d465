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
int fc_store_wants_nolock(const char *dir, int setting);

struct fc_rtxn {
  fc_store *s;
  MDB_txn *txn;
};

#endif
