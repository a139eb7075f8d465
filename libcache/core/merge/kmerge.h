/* Internal: a k-way merge of one LMDB db over several read transactions, in key order.
 * Each step yields one key and every source holding it (in source order) with its value; values
 * point into the sources' maps and stay valid until their transactions end. Memory: 3 words per
 * source. Used by cache-merge (libcache/core/merge/merge.c) and the cross-store checks of several
 * stores read as one dataset (libcache/core/verify/verify_dataset.c). */
#ifndef FC_KMERGE_H
#define FC_KMERGE_H

#include <lmdb.h>
#include <stddef.h>

typedef struct fc_kmerge fc_kmerge;

/* Open cursors on dbis[i] in txns[i] for i < n and position them at their first keys (or at the
 * first key >= *from when from is not NULL). Returns 0 or an LMDB code / ENOMEM. */
__attribute__((visibility("hidden"))) int kmerge_open(MDB_txn *const *txns, const MDB_dbi *dbis,
                                                      size_t n, const MDB_val *from,
                                                      fc_kmerge **out);

/* The next key. *m sources hold it: src[0..m) ascending, vals[j] the value in source src[j].
 * The arrays are the iterator's, valid until the next call. Returns 0, MDB_NOTFOUND at the end,
 * or an LMDB code. */
__attribute__((visibility("hidden"))) int kmerge_next(fc_kmerge *k, MDB_val *key, size_t *m,
                                                      const size_t **src, const MDB_val **vals);

__attribute__((visibility("hidden"))) void kmerge_close(fc_kmerge *k);

/* LMDB's default key order: bytes over the shorter length, then the shorter first. */
__attribute__((visibility("hidden"))) int kmerge_cmp(const MDB_val *a, const MDB_val *b);

#endif
