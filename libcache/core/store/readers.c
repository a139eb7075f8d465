/* LMDB's reader table (lock.mdb): a read transaction takes one of its slots, and its process
 * frees the slot when it ends the transaction. A process that dies first (SIGKILL, a crash)
 * leaves the slot taken; LMDB resets the table only when the first process opens the store, so
 * while another keeps it open (a writer still running, a notebook's loader) the slots of killed
 * loaders add up until none is left. */
#include "libcache/core/store/store_int.h"

int store_txn_begin_read(MDB_env *env, MDB_txn **txn) {
  int rc = store_txn_begin(env, MDB_RDONLY, txn);
  if (rc != MDB_READERS_FULL) return rc;
  /* every slot taken: those of dead processes are cleared (written to lock.mdb only, as
   * cache-verify --clear-stale-readers does), and the begin tried once more */
  int dead = 0;
  if (store_reader_check(env, &dead) != 0 || dead == 0) return rc;
  return store_txn_begin(env, MDB_RDONLY, txn);
}

void store_clear_stale_readers(fc_store *s) {
  int dead = 0;
  if (!(s->flags & (FC_STORE_RDONLY | FC_STORE_NOLOCK))) (void)store_reader_check(s->env, &dead);
}
