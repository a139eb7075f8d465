/* Planning an epoch: order, rank sharding, batches. Deterministic in (index, options, seed, epoch)
 * so every run and every rank computes the same plan (docs/loader.md gives the algorithms).
 *
 * Random numbers: xoshiro256** whose state is four outputs of splitmix64 started at
 * seed ^ mix(epoch) (mix = one splitmix64 step of its argument); bounded draws by the
 * multiply-shift (x * n) >> 64; shuffles are Fisher-Yates from the last element down. */
#include "libcache/core/loader/loader_int.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t mix(uint64_t v) { return splitmix64(&v); }

typedef struct rng {
  uint64_t s[4];
} rng;

static void rng_seed(rng *r, uint64_t seed, uint64_t epoch) {
  uint64_t x = seed ^ mix(epoch);
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

static uint64_t rng_below(rng *r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

static void shuffle(rng *r, uint64_t *a, uint64_t n) {
  for (uint64_t i = n; i > 1; i--) {
    uint64_t j = rng_below(r, i);
    uint64_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

uint32_t ld_crop_len(const fc_loader *l, const ld_item *it) {
  uint32_t crop = l->o.pad_to ? l->o.pad_to : 0;
  if (l->o.crop_frames && (!crop || l->o.crop_frames < crop)) crop = l->o.crop_frames;
  return (crop && it->frames > crop) ? crop : it->frames;
}

uint32_t ld_crop_start(const fc_loader *l, uint64_t epoch, uint64_t item, const ld_item *it) {
  uint32_t len = ld_crop_len(l, it);
  if (len == it->frames) return 0;
  if (l->o.flags & FC_LOADER_CENTER_CROP) return (it->frames - len) / 2;
  if (!(l->o.flags & FC_LOADER_RANDOM_CROP)) return 0;
  uint64_t h = mix(l->o.seed ^ mix(epoch) ^ mix(item ^ 0xC2B2AE3D27D4EB4Full));
  return (uint32_t)(h % ((uint64_t)it->frames - len + 1));
}

uint32_t ld_padded_frames(const fc_loader *l, uint32_t longest) {
  if (l->o.pad_to) return l->o.pad_to;
  uint32_t m = l->o.pad_multiple;
  if (m > 1 && longest % m) longest += m - longest % m;
  return longest;
}

void ld_plan_free(ld_plan *p) {
  free(p->order);
  free(p->bstart);
  memset(p, 0, sizeof *p);
}

typedef struct keyed {
  uint64_t key;
  uint64_t item;
} keyed;

static int cmp_key_desc(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key > y->key ? -1 : 1;
  return (x->item > y->item) - (x->item < y->item);
}

static int cmp_key_asc(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->item > y->item) - (x->item < y->item);
}

/* Position of an item for the locality order: store first, then address in that store's map. */
static uint64_t locality_key(const fc_loader *l, uint64_t i) {
  return (uintptr_t)l->items[i].mel_rec;
}

/* Dynamic batching of the n items order[0..n): utterances are added while B x T <= max_frames
 * (an utterance longer than that alone), B capped by batch_size. Writes the starts into
 * bstart[0..nb] when bstart is given; returns nb. */
static uint64_t dynamic_batches(const fc_loader *l, const uint64_t *order, uint64_t n,
                                uint64_t *bstart) {
  const uint32_t bs = l->o.batch_size;
  uint64_t nb = 0, s = 0;
  while (s < n) {
    if (bstart) bstart[nb] = s;
    nb++;
    uint32_t longest = 0;
    uint64_t e = s;
    while (e < n) {
      uint32_t len = ld_crop_len(l, &l->items[order[e]]);
      uint32_t t = ld_padded_frames(l, len > longest ? len : longest);
      if (e > s && ((e - s + 1) * (uint64_t)t > l->o.max_frames || (bs && e - s >= bs))) break;
      if (len > longest) longest = len;
      e++;
    }
    s = e;
  }
  if (bstart) bstart[nb] = n;
  return nb;
}

/* Dynamic batching cuts each rank's share into its own number of batches; DDP steps the ranks in
 * lockstep, so a rank with more would wait for the others for good. Every rank's count is a
 * function of the epoch's global order (all[], n items; each rank takes per of them), so each
 * rank computes them all: PAD repeats this rank's first batches up to the largest count, DROP
 * cuts to the smallest. 0 or ENOMEM. */
static int equalize_batches(const fc_loader *l, const uint64_t *all, uint64_t n, uint64_t per,
                            ld_plan *out) {
  const uint64_t W = l->o.world_size, nb = out->n_batches;
  if (W == 1 || l->o.shard == FC_SHARD_UNEVEN || !nb) return 0;
  uint64_t *share = fc_malloc(per * sizeof *share);
  if (!share) return ENOMEM;
  uint64_t lo = nb, hi = nb;
  for (uint64_t r = 0; r < W; r++) {
    if (r == l->o.rank) continue;
    for (uint64_t i = 0; i < per; i++) share[i] = all[(r + i * W) % n];
    uint64_t c = dynamic_batches(l, share, per, NULL);
    if (c < lo) lo = c;
    if (c > hi) hi = c;
  }
  free(share);
  if (l->o.shard == FC_SHARD_DROP) {
    out->n_batches = lo;
    out->n_order = out->bstart[lo];
    return 0;
  }
  if (hi == nb) return 0;
  /* PAD: batches nb..hi-1 are copies of batches 0, 1, ... (cyclically) */
  uint64_t items = out->bstart[nb];
  for (uint64_t k = nb; k < hi; k++)
    items += out->bstart[(k - nb) % nb + 1] - out->bstart[(k - nb) % nb];
  uint64_t *order = fc_realloc(out->order, items * sizeof *order);
  if (!order) return ENOMEM;
  out->order = order;
  uint64_t *bstart = fc_realloc(out->bstart, (hi + 2) * sizeof *bstart);
  if (!bstart) return ENOMEM;
  out->bstart = bstart;
  for (uint64_t k = nb; k < hi; k++) {
    uint64_t b = (k - nb) % nb, m = bstart[b + 1] - bstart[b];
    memcpy(order + bstart[k], order + bstart[b], m * sizeof *order);
    bstart[k + 1] = bstart[k] + m;
  }
  out->n_batches = hi;
  out->n_order = items;
  return 0;
}

/* batch_stride: keep batches batch_offset, batch_offset + batch_stride, ... of the rank's plan
 * (moved to the front, in place: a kept batch never lies before where it moves). */
static void take_stride(const fc_loader *l, ld_plan *out) {
  const uint64_t S = l->o.batch_stride, nb = out->n_batches;
  if (S <= 1) return;
  uint64_t k = 0, pos = 0;
  for (uint64_t b = l->o.batch_offset; b < nb; b += S, k++) {
    uint64_t s = out->bstart[b], m = out->bstart[b + 1] - s;
    memmove(out->order + pos, out->order + s, m * sizeof *out->order);
    out->bstart[k] = pos;
    pos += m;
  }
  out->bstart[k] = pos;
  out->n_batches = k;
  out->n_order = pos;
}

int ld_plan_epoch(fc_loader *l, uint64_t epoch, ld_plan *out) {
  memset(out, 0, sizeof *out);
  out->epoch = epoch;
  const uint64_t n = l->n_items;
  const uint32_t bs = l->o.batch_size;
  uint64_t *all = fc_malloc((n ? n : 1) * sizeof *all);
  keyed *kv = NULL;
  int rc = ENOMEM;
  if (!all) goto fail;
  for (uint64_t i = 0; i < n; i++) all[i] = i;
  if (l->o.order == FC_ORDER_LOCALITY) ld_resolve_all(l); /* the records' addresses */
  rng r;
  rng_seed(&r, l->o.seed, epoch);

  if (l->o.order == FC_ORDER_RANDOM) {
    shuffle(&r, all, n);
  } else if (l->o.order == FC_ORDER_BUCKET) {
    shuffle(&r, all, n);
    uint64_t w = (uint64_t)l->o.bucket_batches * (bs ? bs : 32);
    if (!(kv = fc_malloc((n ? n : 1) * sizeof *kv))) goto fail;
    for (uint64_t s = 0; s < n; s += w) {
      uint64_t m = n - s < w ? n - s : w;
      for (uint64_t i = 0; i < m; i++)
        kv[i] = (keyed){ld_crop_len(l, &l->items[all[s + i]]), all[s + i]};
      qsort(kv, m, sizeof *kv, cmp_key_desc);
      for (uint64_t i = 0; i < m; i++) all[s + i] = kv[i].item;
    }
  } else if (l->o.order == FC_ORDER_LOCALITY) {
    if (!(kv = fc_malloc((n ? n : 1) * sizeof *kv))) goto fail;
    for (uint64_t i = 0; i < n; i++) kv[i] = (keyed){locality_key(l, i), i};
    /* stores are separate maps: keep them apart, ordered as given */
    for (uint64_t s = 0, e; s < n; s = e) {
      for (e = s; e < n && l->items[e].store == l->items[s].store; e++) {}
      qsort(kv + s, e - s, sizeof *kv, cmp_key_asc);
    }
    uint64_t run = l->o.locality_run, n_runs = (n + run - 1) / run;
    uint64_t *runs = fc_malloc((n_runs ? n_runs : 1) * sizeof *runs);
    if (!runs) goto fail;
    for (uint64_t i = 0; i < n_runs; i++) runs[i] = i;
    shuffle(&r, runs, n_runs);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < n_runs; i++) {
      uint64_t s = runs[i] * run, m = n - s < run ? n - s : run;
      for (uint64_t j = 0; j < m; j++) all[pos + j] = kv[s + j].item;
      shuffle(&r, all + pos, m);
      pos += m;
    }
    free(runs);
  }

  /* shard: rank r takes positions r, r + W, r + 2W, ... of the (padded or cut) global order */
  const uint64_t W = l->o.world_size, R = l->o.rank;
  uint64_t per;
  if (W == 1)
    per = n;
  else if (l->o.shard == FC_SHARD_PAD)
    per = n ? (n + W - 1) / W : 0;
  else if (l->o.shard == FC_SHARD_DROP)
    per = n / W;
  else
    per = n > R ? (n - R + W - 1) / W : 0;
  out->order = fc_malloc((per ? per : 1) * sizeof *out->order);
  if (!out->order) goto fail;
  for (uint64_t i = 0; i < per; i++) out->order[i] = all[(R + i * W) % n];
  out->n_order = per;

  /* batches */
  out->bstart = fc_malloc((per + 2) * sizeof *out->bstart);
  if (!out->bstart) goto fail;
  uint64_t nb = 0;
  if (l->o.max_frames == 0) {
    for (uint64_t s = 0; s < per; s += bs) out->bstart[nb++] = s;
    out->bstart[nb] = per;
    if (l->o.drop_last && per % bs && nb) nb--; /* bstart[nb] is now the end of the last full one */
  } else {
    nb = dynamic_batches(l, out->order, per, out->bstart);
  }
  out->n_batches = nb;

  if (l->o.order == FC_ORDER_BUCKET && nb > 1) {
    /* shuffle whole batches so lengths do not come sorted */
    uint64_t *perm = fc_malloc(nb * sizeof *perm),
             *no = fc_malloc(out->bstart[nb] * sizeof *no + 8);
    uint64_t *nbs = fc_malloc((nb + 1) * sizeof *nbs);
    if (!perm || !no || !nbs) {
      free(perm);
      free(no);
      free(nbs);
      goto fail;
    }
    for (uint64_t i = 0; i < nb; i++) perm[i] = i;
    shuffle(&r, perm, nb);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < nb; i++) {
      uint64_t b = perm[i], m = out->bstart[b + 1] - out->bstart[b];
      nbs[i] = pos;
      memcpy(no + pos, out->order + out->bstart[b], m * sizeof *no);
      pos += m;
    }
    nbs[nb] = pos;
    memcpy(out->order, no, pos * sizeof *no);
    memcpy(out->bstart, nbs, (nb + 1) * sizeof *nbs);
    free(perm);
    free(no);
    free(nbs);
  }
  if (l->o.order == FC_ORDER_LOCALITY) {
    /* each batch reads its records in address order */
    keyed *tmp = kv;
    for (uint64_t b = 0; b < nb; b++) {
      uint64_t s = out->bstart[b], m = out->bstart[b + 1] - s;
      for (uint64_t i = 0; i < m; i++)
        tmp[i] = (keyed){((uint64_t)l->items[out->order[s + i]].store << 56) ^
                             locality_key(l, out->order[s + i]),
                         out->order[s + i]};
      qsort(tmp, m, sizeof *tmp, cmp_key_asc);
      for (uint64_t i = 0; i < m; i++) out->order[s + i] = tmp[i].item;
    }
  }
  if (l->o.max_frames && (rc = equalize_batches(l, all, n, per, out))) goto fail;
  rc = ENOMEM;
  take_stride(l, out);
  nb = out->n_batches;
  for (uint64_t b = 0; b < nb; b++) {
    uint32_t longest = 0;
    for (uint64_t i = out->bstart[b]; i < out->bstart[b + 1]; i++) {
      uint32_t len = ld_crop_len(l, &l->items[out->order[i]]);
      if (len > longest) longest = len;
    }
    uint64_t bytes = (out->bstart[b + 1] - out->bstart[b]) *
                     (uint64_t)ld_padded_frames(l, longest) * l->n_mels * l->mel_dsize;
    if (bytes > out->max_batch_bytes) out->max_batch_bytes = bytes;
  }
  free(all);
  free(kv);
  return 0;
fail:
  free(all);
  free(kv);
  ld_plan_free(out);
  return rc;
}
