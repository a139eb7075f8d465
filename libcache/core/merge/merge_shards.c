/* cache-merge: do the inputs' shards form complete sets? (merge_shards.h) */
#include "libcache/core/merge/merge_shards.h"

#include "formats/common/alloc.h"
#include "formats/common/why.h"

#include <errno.h>
#include <stdlib.h>

typedef struct twice_ctx {
  const fc_merge_opts *o;
  fc_merge_stats *st;
} twice_ctx;

static void on_twice(uint32_t k, uint32_t sn, size_t a, size_t b, void *user) {
  twice_ctx *t = user;
  t->st->shards_twice++;
  if (t->o->on_shard_twice) t->o->on_shard_twice(k, sn, a, b, t->o->user);
}

int merge_check_shards(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                       MDB_txn *out_txn, const fc_merge_opts *o, fc_merge_stats *st, char *why,
                       size_t why_len) {
  size_t m = n + (out ? 1 : 0);
  fc_shard_mark **sets = fc_calloc(m, sizeof *sets);
  size_t *counts = fc_calloc(m, sizeof *counts);
  int *cover_only = fc_calloc(m, sizeof *cover_only);
  int rc = sets && counts && cover_only ? 0 : ENOMEM;
  int inputs_say = 0;
  for (size_t i = 0; i < m && !rc; i++) {
    rc = i < n ? store_shards_txn(txns[i], in[i]->dbi[FC_DB_META], &sets[i], &counts[i])
               : store_shards_txn(out_txn, out->dbi[FC_DB_META], &sets[i], &counts[i]);
    if (i < n && counts[i]) inputs_say = 1;
    if (i == n) cover_only[i] = 1;
  }
  if (!rc && inputs_say) { /* an output's own shards alone are not this merge's business */
    twice_ctx t = {o, st};
    char gap[768];
    rc = fc_shard_sets_check((const fc_shard_mark *const *)sets, counts, m, cover_only, on_twice,
                             &t, &st->shards_missing, gap, sizeof gap);
    if (!rc && st->shards_missing && !o->partial) {
      fc_why(why, why_len, "incomplete set of shards: %s", gap);
      rc = FC_ECONFIG;
    }
  }
  for (size_t i = 0; sets && i < m; i++) free(sets[i]);
  free(sets);
  free(counts);
  free(cover_only);
  return rc;
}
