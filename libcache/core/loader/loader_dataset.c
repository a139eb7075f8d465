/* What the dataset is: its stores checked as a set at open (a store given twice, shards of a
 * partition missing or written twice). Runs once at open, never on the batch path. */
#include "libcache/core/loader/loader_int.h"

#include "formats/common/alloc.h"
#include "formats/common/why.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct twice_ctx {
  int said;
  uint32_t k, n;
  size_t a, b;
} twice_ctx;

static void on_twice(uint32_t k, uint32_t n, size_t a, size_t b, void *user) {
  twice_ctx *t = user;
  if (t->said++) return; /* the first is named */
  t->k = k, t->n = n, t->a = a, t->b = b;
}

int ld_check_set(fc_loader *l, char *why, size_t why_len) {
  /* the same store under two spellings (or a split store and one of its parts): one env, which
   * the registry gives both */
  for (uint32_t i = 1; i < l->n_stores; i++)
    for (uint32_t j = 0; j < i; j++)
      if (l->stores[i].s == l->stores[j].s) {
        fc_why(why, why_len, "%s: the same store as %s, given twice", l->stores[i].path,
               l->stores[j].path);
        return FC_ECONFIG;
      }
  if (l->o.flags & FC_LOADER_PARTIAL) return 0;
  shard_mark **sets = fc_calloc(l->n_stores, sizeof *sets);
  size_t *counts = fc_calloc(l->n_stores, sizeof *counts);
  int rc = sets && counts ? 0 : ENOMEM;
  size_t recording = 0;
  for (uint32_t i = 0; i < l->n_stores && !rc; i++) {
    ld_store *st = &l->stores[i];
    rc = store_shards_txn(st->txn, st->s->dbi[FC_DB_META], &sets[i], &counts[i]);
    recording += counts[i] > 0;
  }
  /* as cache-verify: one store recording its shard is a part read on purpose (a quick run on
   * shard 0); several are meant as a set */
  if (!rc && recording > 1) {
    char gap[400];
    uint64_t missing = 0;
    twice_ctx t = {0};
    rc = shard_sets_check((const shard_mark *const *)sets, counts, l->n_stores, NULL, on_twice, &t,
                          &missing, gap, sizeof gap);
    if (!rc && missing) {
      fc_why(why, why_len,
             "incomplete set of shards: %s (the dataset would lack their ids: give them too, or "
             "open with FC_LOADER_PARTIAL, partial=True)",
             gap);
      rc = FC_ECONFIG;
    } else if (!rc && t.said) {
      fc_why(why, why_len,
             "%s: holds shard %u/%u, as %s does (one shard written into two stores: give one of "
             "them, or open with FC_LOADER_PARTIAL, partial=True)",
             l->stores[t.b].path, t.k, t.n, l->stores[t.a].path);
      rc = FC_ECONFIG;
    }
  }
  for (uint32_t i = 0; sets && i < l->n_stores; i++) free(sets[i]);
  free(sets);
  free(counts);
  return rc;
}
