/* The shards a store records (meta shard/K/N; store_int.h "shards", docs/FORMAT.md "Shards"), and
 * the check that the stores of a merge or a dataset hold complete sets of them. */
#include "libcache/core/store/store_int.h"

#include "formats/common/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARD_PREFIX "shard/"
#define SHARD_PREFIX_LEN 6

/* key "shard/K/N": 0 and *m, or -1 (not a shard key, or malformed: K >= N, junk, leading 0s) */
static int parse_key(const void *key, size_t len, shard_mark *m) {
  char b[40], extra;
  unsigned long k, n;
  if (len <= SHARD_PREFIX_LEN || len >= sizeof b || memcmp(key, SHARD_PREFIX, SHARD_PREFIX_LEN))
    return -1;
  memcpy(b, key, len);
  b[len] = '\0';
  if (sscanf(b + SHARD_PREFIX_LEN, "%lu/%lu%c", &k, &n, &extra) != 2 || n == 0 || k >= n ||
      n > UINT32_MAX)
    return -1;
  char canon[40]; /* one spelling only: shard/03/16 is not shard/3/16 */
  if (snprintf(canon, sizeof canon, SHARD_PREFIX "%lu/%lu", k, n) != (int)len ||
      memcmp(canon, b, len) != 0)
    return -1;
  m->k = (uint32_t)k;
  m->n = (uint32_t)n;
  return 0;
}

static int mark_cmp(const void *a, const void *b) {
  const shard_mark *x = a, *y = b;
  if (x->n != y->n) return x->n < y->n ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

int store_shards_txn(MDB_txn *txn, MDB_dbi meta, shard_mark **marks, size_t *count) {
  *marks = NULL;
  *count = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, meta, &cur);
  if (rc) return rc;
  MDB_val k = {SHARD_PREFIX_LEN, (void *)SHARD_PREFIX}, v;
  size_t cap = 0;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size < SHARD_PREFIX_LEN || memcmp(k.mv_data, SHARD_PREFIX, SHARD_PREFIX_LEN)) break;
    shard_mark m;
    if (parse_key(k.mv_data, k.mv_size, &m)) continue;
    if (*count == cap) {
      cap = cap ? 2 * cap : 16;
      shard_mark *g = fc_realloc(*marks, cap * sizeof *g);
      if (!g) {
        rc = ENOMEM;
        break;
      }
      *marks = g;
    }
    (*marks)[(*count)++] = m;
  }
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND) rc = 0;
  if (rc) {
    free(*marks);
    *marks = NULL;
    *count = 0;
    return rc;
  }
  if (*count) qsort(*marks, *count, sizeof **marks, mark_cmp);
  return 0;
}

/* ---- the check ------------------------------------------------------------------------------ */
typedef struct held {
  uint32_t n, k;
  size_t store;
} held;

static int held_cmp(const void *a, const void *b) {
  const held *x = a, *y = b;
  if (x->n != y->n) return x->n < y->n ? -1 : 1;
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  return x->store < y->store ? -1 : x->store > y->store;
}

/* Does a sorted set hold every k of some n? */
static int whole_set(const shard_mark *v, size_t c) {
  for (size_t i = 0; i < c;) {
    size_t j = i, distinct = 0;
    for (; j < c && v[j].n == v[i].n; j++)
      if (j == i || v[j].k != v[j - 1].k) distinct++;
    if (distinct == v[i].n) return 1;
    i = j;
  }
  return 0;
}

typedef struct text {
  char *p;
  size_t len, at;
} text;

static void put_text(text *t, const char *fmt, unsigned long a, unsigned long b) {
  if (!t->p || t->at >= t->len) return;
  int w = snprintf(t->p + t->at, t->len - t->at, fmt, a, b);
  if (w > 0) t->at += (size_t)w < t->len - t->at ? (size_t)w : t->len - t->at - 1;
}

/* Shard k of n holds the ids whose hash x (XXH3-64 / 2^64) is in [k/n, (k+1)/n): fc_shard_of
 * is floor(x n). So shards of several n cover the ids exactly as these intervals cover [0, 1),
 * compared as fractions (k, n < 2^32: products fit in 64 bits). */
static int start_cmp(const void *a, const void *b) {
  const shard_mark *x = a, *y = b;
  uint64_t l = (uint64_t)x->k * y->n, r = (uint64_t)y->k * x->n;
  return l < r ? -1 : l > r;
}

/* Shards lo..hi missing: "lo" or "lo-hi" after the ranges before it, the first 12 ranges named,
 * the shards of the rest counted in *left_out. Returns how many shards the range holds. */
static uint64_t put_range(text *t, uint64_t lo, uint64_t hi, unsigned *ranges, uint64_t *left_out) {
  if ((*ranges)++ < 12) {
    put_text(t, *ranges > 1 ? ", %lu" : "%lu", (unsigned long)lo, 0);
    if (hi > lo) put_text(t, "-%lu", (unsigned long)hi, 0);
  } else {
    *left_out += hi - lo + 1;
  }
  return hi - lo + 1;
}

/* The gaps of the union of v[0..c) (sorted by start) over [0, 1), as the shards of n each
 * touches, into ranges "2, 5-7" of t (after 12 ranges, "and N more"). Returns how many shards of
 * n the gaps touch. */
static uint64_t say_gaps(text *t, const shard_mark *v, size_t c, uint32_t n) {
  uint64_t rn = 0, rd = 1; /* covered: [0, rn/rd) */
  uint64_t missing = 0, left_out = 0, lo = 0, hi = 0;
  int open = 0;
  unsigned ranges = 0;
  for (size_t i = 0; i <= c; i++) {
    /* the next interval's start (1 after the last) */
    uint64_t sn = i < c ? v[i].k : 1, sd = i < c ? v[i].n : 1;
    if ((unsigned __int128)sn * rd > (unsigned __int128)rn * sd) { /* a gap [r, s) */
      uint64_t klo = (uint64_t)(((unsigned __int128)rn * n) / rd);
      uint64_t khi = (uint64_t)(((unsigned __int128)sn * n + sd - 1) / sd) - 1;
      if (open && klo <= hi + 1) { /* touches the last range: one range */
        if (khi > hi) hi = khi;
      } else {
        if (open) missing += put_range(t, lo, hi, &ranges, &left_out);
        lo = klo, hi = khi, open = 1;
      }
    }
    if (i < c && (unsigned __int128)(v[i].k + 1ull) * rd > (unsigned __int128)rn * v[i].n)
      rn = v[i].k + 1ull, rd = v[i].n;
  }
  if (open) missing += put_range(t, lo, hi, &ranges, &left_out);
  if (left_out) put_text(t, " and %lu more", (unsigned long)left_out, 0);
  return missing;
}

int shard_sets_check(const shard_mark *const *sets, const size_t *counts, size_t m,
                     const int *cover_only, shard_twice_fn twice, void *user, uint64_t *missing,
                     char *why, size_t why_len) {
  *missing = 0;
  if (why && why_len) why[0] = '\0';
  size_t total = 0;
  for (size_t i = 0; i < m; i++) total += counts[i];
  if (!total) return 0;
  held *h = fc_malloc(total * sizeof *h);
  uint8_t *whole = fc_calloc(m, 1);
  if (!h || !whole) {
    free(h);
    free(whole);
    return ENOMEM;
  }
  size_t c = 0;
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < counts[i]; j++) h[c++] = (held){sets[i][j].n, sets[i][j].k, i};
    /* sets come sorted from store_shards_txn; a caller's may not: whole_set needs them so */
    int sorted = 1;
    for (size_t j = 1; j < counts[i] && sorted; j++)
      sorted = mark_cmp(&sets[i][j - 1], &sets[i][j]) <= 0;
    if (sorted) {
      whole[i] = (uint8_t)whole_set(sets[i], counts[i]);
    } else {
      shard_mark *cp = fc_malloc(counts[i] * sizeof *cp);
      if (!cp) {
        free(h);
        free(whole);
        return ENOMEM;
      }
      memcpy(cp, sets[i], counts[i] * sizeof *cp);
      qsort(cp, counts[i], sizeof *cp, mark_cmp);
      whole[i] = (uint8_t)whole_set(cp, counts[i]);
      free(cp);
    }
  }
  qsort(h, c, sizeof *h, held_cmp);
  /* the distinct shards, and the n of each partition met */
  shard_mark *v = fc_malloc(c * sizeof *v);
  if (!v) {
    free(h);
    free(whole);
    return ENOMEM;
  }
  size_t nv = 0, partitions = 0;
  uint32_t nmax = 0;
  for (size_t i = 0; i < c; i++)
    if (i == 0 || h[i].n != h[i - 1].n || h[i].k != h[i - 1].k) {
      if (i == 0 || h[i].n != h[i - 1].n) partitions++;
      v[nv++] = (shard_mark){h[i].k, h[i].n};
      if (h[i].n > nmax) nmax = h[i].n;
    }
  qsort(v, nv, sizeof *v, start_cmp);
  text t = {why, why_len, 0};
  char probe[8];
  text none = {probe, sizeof probe, 0};
  uint64_t gaps = say_gaps(&none, v, nv, nmax);
  if (gaps) {
    if (partitions == 1) {
      put_text(&t, "of %lu shards, %lu given: ", (unsigned long)nmax, (unsigned long)nv);
    } else { /* the n met, ascending: "shards of 2 and 4 given" */
      put_text(&t, "shards of ", 0, 0);
      size_t said = 0;
      for (size_t i = 0; i < c; i++)
        if (i == 0 || h[i].n != h[i - 1].n) {
          said++;
          put_text(&t,
                   said == 1            ? "%lu"
                   : said == partitions ? " and %lu"
                                        : ", %lu",
                   (unsigned long)h[i].n, 0);
        }
      put_text(&t, " given (the shards of several runs?): the ids of ", 0, 0);
    }
    if (partitions == 1) put_text(&t, gaps == 1 ? "shard " : "shards ", 0, 0);
    *missing = say_gaps(&t, v, nv, nmax);
    put_text(&t, partitions == 1 ? " missing" : " of %lu in none", (unsigned long)nmax, 0);
  }
  free(v);
  /* a shard two of the stores record: said unless both hold whole sets */
  for (size_t a = 0; a < c && twice;) {
    size_t b = a;
    while (b < c && h[b].n == h[a].n && h[b].k == h[a].k) b++;
    size_t first = SIZE_MAX, second = SIZE_MAX;
    for (size_t x = a; x < b && second == SIZE_MAX; x++) {
      size_t s = h[x].store;
      if (cover_only && cover_only[s]) continue;
      if (first == SIZE_MAX)
        first = s;
      else if (s != first && !(whole[first] && whole[s]))
        second = s;
    }
    if (second != SIZE_MAX) twice(h[a].k, h[a].n, first, second, user);
    a = b;
  }
  free(h);
  free(whole);
  return 0;
}
