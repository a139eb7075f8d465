/* Internal: cache-merge's check, before anything is written, that every store holding utterances
 * holds each mel config the merge will hold (docs/cache-merge.md "Configs held apart"). */
#ifndef FC_MERGE_CONFIGS_H
#define FC_MERGE_CONFIGS_H

#include "featcache/fc_merge.h"
#include "libcache/core/store/store_int.h"
#include "formats/common/json.h"

/* Each config in the meta db of txn (meta cfg/<32 hex>) that parses with a "kind": fn(hex, kind,
 * its JSON parsed and as stored, ctx) returns 1 to keep o (then the caller's to json_decref), 0
 * to let it go, or an errno value (> 1) that ends the walk and is returned. Returns 0, ENOMEM,
 * fn's error or an LMDB code. */
typedef int (*merge_config_fn)(const char *hex, const char *kind, json_t *o, const void *json,
                               size_t len, void *ctx);
int merge_each_config(MDB_txn *txn, MDB_dbi meta, merge_config_fn fn, void *ctx);

/* The mel configs of inputs in[0..n) (read in txns[i]) and out (when not NULL, in out_txn): a
 * config that a store holding audio entries lacks (a shard featurized by another featcache
 * version, or with another --fmax) will hold features for some ids only. Each such is counted in
 * st->mel_configs_apart and said once through o->on_mel_configs; with o->strict the merge is
 * refused: FC_ECONFIG. paths and out_dir name the stores. Else 0, or an LMDB/errno code. */
int merge_check_mel_configs(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                            MDB_txn *out_txn, const char *const *paths, const char *out_dir,
                            const fc_merge_opts *o, fc_merge_stats *st);

/* The same of the token configs and the text entries (shards tokenized with other tokenizers: a
 * config that a store holding text entries lacks holds tokens for some ids only): counted in
 * st->token_configs_held_apart, said through o->on_token_configs_held_apart, refused with
 * o->strict. Token configs of one name built apart are check_token_configs' (merge_shards.c). */
int merge_check_token_configs_apart(fc_store *const *in, MDB_txn *const *txns, size_t n,
                                    fc_store *out, MDB_txn *out_txn, const char *const *paths,
                                    const char *out_dir, const fc_merge_opts *o,
                                    fc_merge_stats *st);

#endif
