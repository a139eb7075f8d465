/* Internal: cache-merge's handling of featurize's failure records (docs/FORMAT.md "Failure
 * record"), called by fc_merge_run once the entries and records are copied. */
#ifndef FC_MERGE_FAILED_H
#define FC_MERGE_FAILED_H

#include "featcache/fc_merge.h"
#include "libcache/core/store/store_int.h"

/* Bring the inputs' failure records into out: for each id, the latest record among the inputs
 * that hold one (offset 16, when) — never a conflict — unless some input stores the id under that
 * record's config (its audio entry there, and the feat record of that entry and config): a
 * success wins over a failure, and such an id's record already in out is deleted as well. in[i]
 * are the inputs with their read transactions txns[i]; no transaction of this process is open
 * on out. Counts into st->failures_copied and st->failures_cleared. Returns 0 or an LMDB/errno
 * code (the map of out grows as fc_store_write's does). */
int merge_failures(fc_store *out, fc_store *const *in, MDB_txn *const *txns, size_t n,
                   fc_merge_stats *st);

#endif
