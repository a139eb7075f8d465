/* Internal: cache-merge's check, before anything is written, that every store holding utterances
 * holds each mel config the merge will hold (docs/cache-merge.md "Configs held apart"). */
#ifndef FC_MERGE_CONFIGS_H
#define FC_MERGE_CONFIGS_H

#include "featcache/fc_merge.h"
#include "libcache/core/store/store_int.h"

/* The mel configs of inputs in[0..n) (read in txns[i]) and out (when not NULL, in out_txn): a
 * config that a store holding audio entries lacks (a shard featurized by another featcache
 * version, or with another --fmax) will hold features for some ids only. Each such is counted in
 * st->mel_configs_apart and said once through o->on_mel_configs; with o->strict the merge is
 * refused: FC_ECONFIG. paths and out_dir name the stores. Else 0, or an LMDB/errno code. */
int merge_check_mel_configs(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                            MDB_txn *out_txn, const char *const *paths, const char *out_dir,
                            const fc_merge_opts *o, fc_merge_stats *st);

#endif
