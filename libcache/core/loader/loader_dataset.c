/* What the dataset is: its stores checked as a set at open (a store given twice, shards of a
 * partition missing or written twice), and the digest of the view the index holds, which the
 * ranks of one training run compare (fc_loader_view_digest). Neither runs on the hot path: the
 * check once at open, the digest when asked for. */
#include "libcache/core/loader/loader_int.h"
#include "formats/common/args.h"

#include "formats/common/alloc.h"
#include "formats/common/why.h"
#include "formats/xxh3_int.h"

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
        fc_why(why, why_len, "%s: the same store as %s, given twice",
               FC_WHY_NAME(l->stores[i].path), FC_WHY_NAME(l->stores[j].path));
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
             "read it as it is: FC_LOADER_PARTIAL, partial=True, loader-bench --partial)",
             gap);
      rc = FC_ECONFIG;
    } else if (!rc && t.said) {
      fc_why(
          why, why_len,
          "%s: holds shard %u/%u, as %s does (one shard written into two stores: give one of "
          "them, or read them as they are: FC_LOADER_PARTIAL, partial=True, loader-bench --partial)",
          FC_WHY_NAME(l->stores[t.b].path), t.k, t.n, FC_WHY_NAME(l->stores[t.a].path));
      rc = FC_ECONFIG;
    }
  }
  for (uint32_t i = 0; sets && i < l->n_stores; i++) free(sets[i]);
  free(sets);
  free(counts);
  return rc;
}

/* ---- the view's digest ----------------------------------------------------------------------- */
typedef struct vbuf {
  const xxh3_impl *x;
  xxh3_stream s;
  size_t n;
  unsigned char b[8192];
} vbuf;

static void put(vbuf *v, const void *p, size_t len) {
  if (v->n + len > sizeof v->b) {
    v->x->update(&v->s, v->b, v->n);
    v->n = 0;
  }
  if (len > sizeof v->b) {
    v->x->update(&v->s, p, len);
    return;
  }
  memcpy(v->b + v->n, p, len);
  v->n += len;
}

static void put_u64(vbuf *v, uint64_t x) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(x >> (8 * i));
  put(v, b, 8);
}

int fc_loader_view_digest(const fc_loader *l, fc_digest *out) {
  FC_ARGS(l, out);
  memset(out, 0, sizeof *out);
  if (l->o.flags & FC_LOADER_LOOKUP_ONLY) return FC_EBADSTATE;
  vbuf vb, *v = &vb; /* on the stack: the stream wants 64-byte alignment, malloc's is 16 */
  v->x = xxh3_best();
  v->x->reset(&v->s);
  v->n = 0;
  put(v, "featcache-view/1", 16);
  put(v, l->stores[0].mel_cfg.bytes, 16);
  put(v, l->stores[0].tok_cfg.bytes, 16);
  put_u64(v, l->n_items);
  /* the index: each utterance in index order, the store serving it and its lengths; with the
   * locality order, which plans by where the records lie, also each record's place relative to
   * its store's first (a copy of the store laid out otherwise, mdb_copy -c, plans other epochs) */
  int where = l->o.order == FC_ORDER_LOCALITY;
  if (where) pthread_mutex_lock(&((fc_loader *)l)->resolve_mu);
  const uint8_t *first = NULL;
  for (uint64_t i = 0; i < l->n_items; i++) {
    const ld_item *it = &l->items[i];
    const char *id = l->ids + it->id_off;
    size_t len = strlen(id);
    put_u64(v, (uint64_t)it->store << 32 | len);
    put_u64(v, (uint64_t)it->frames << 32 | it->ntok);
    put(v, id, len);
    if (where) {
      if (i == 0 || it->store != l->items[i - 1].store) first = it->mel_rec;
      put_u64(v, (uint64_t)(uintptr_t)it->mel_rec - (uint64_t)(uintptr_t)first);
    }
  }
  if (where) pthread_mutex_unlock(&((fc_loader *)l)->resolve_mu);
  v->x->update(&v->s, v->b, v->n);
  uint64_t h[2];
  v->x->digest(&v->s, h);
  xxh3_put_digest(h, out);
  return 0;
}
