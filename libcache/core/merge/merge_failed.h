/* Internal: cache-merge's handling of featurize's failure records (docs/FORMAT.md "Failure
 * record"), called by fc_merge_run once the entries and records are copied. */
#ifndef FC_MERGE_FAILED_H
#define FC_MERGE_FAILED_H

#include "featcache/fc_merge.h"
#include "libcache/core/merge/writeback.h"
#include "libcache/core/store/store_int.h"

/* Bring the inputs' failure records into out: for each id, the latest record among the inputs
 * that hold one (offset 16, when) — never a conflict — unless some input stores the id under that
 * record's config (its audio entry there, and the feat record of that entry and config): a
 * success wins over a failure, and such an id's record already in out is deleted as well. in[i]
 * are the inputs with their read transactions txns[i]; no transaction of this process is open
 * on out. Batches of at most o->batch_records (and 1024); each commit is counted into wb (out's
 * write-back), and after each full batch o->on_progress is called and o->stop looked at.
 * Counts into st->failures_copied, st->failures_cleared and st->commits. Returns 0, FC_EINTR
 * (stopped: the batches committed stay), the error of the write-back, or an LMDB/errno code
 * (a failed commit explained as merge.c's are: ENOSPC, EFBIG for LMDB's EIO on a full disk or
 * past RLIMIT_FSIZE; the map of out grows as fc_store_write's does). */
int merge_failures(fc_store *out, fc_store *const *in, MDB_txn *const *txns, size_t n,
                   const fc_merge_opts *o, fc_writeback *wb, fc_merge_stats *st);

#endif
