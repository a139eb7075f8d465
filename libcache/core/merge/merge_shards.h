/* Internal: cache-merge's check of its inputs before anything is written — the shards they
 * record form complete sets, and no token config name stands for vocabularies built per shard
 * (docs/cache-merge.md "Shards"). */
#ifndef FC_MERGE_SHARDS_H
#define FC_MERGE_SHARDS_H

#include "featcache/fc_merge.h"
#include "libcache/core/store/store_int.h"

/* The shards inputs in[0..n) record (read in their transactions txns[i]) and out (when not
 * NULL, in out_txn) holds: 0 when they form complete sets, or o->partial; FC_ECONFIG with why
 * ("incomplete set of shards: of 16 shards, 14 given: shards 3, 7 missing") otherwise. Counts
 * st->shards_missing and st->shards_twice, and calls o->on_shard_twice. Then the token configs:
 * several of one name (tokens="chars") where a store holding one lacks another are said
 * (o->on_token_configs, st->token_configs_apart) and refused with FC_ECONFIG when a store
 * involved records shards; then the mel configs (merge_configs.h). paths (the inputs) and out_dir name the stores in what is said. Or an
 * LMDB/errno code. */
int merge_check_shards(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                       MDB_txn *out_txn, const char *const *paths, const char *out_dir,
                       const fc_merge_opts *o, fc_merge_stats *st, char *why, size_t why_len);

#endif
