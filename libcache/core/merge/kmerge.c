/* k-way merge of LMDB cursors: a binary min-heap of sources ordered by (current key, source). */
#include "libcache/core/merge/kmerge.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct source {
  MDB_cursor *cur;
  MDB_val key, val;
} source;

struct fc_kmerge {
  size_t n;
  source *s;
  size_t *heap; /* source indices; heap[0] holds the smallest (key, index) */
  size_t hn;
  size_t *out_src; /* the sources of the last key */
  MDB_val *out_val;
};

int kmerge_cmp(const MDB_val *a, const MDB_val *b) {
  size_t l = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
  int d = l ? memcmp(a->mv_data, b->mv_data, l) : 0;
  if (d) return d;
  return a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
}

static int less(const fc_kmerge *k, size_t i, size_t j) {
  int d = kmerge_cmp(&k->s[i].key, &k->s[j].key);
  return d < 0 || (d == 0 && i < j);
}

static void sift_up(fc_kmerge *k, size_t pos) {
  while (pos) {
    size_t parent = (pos - 1) / 2;
    if (!less(k, k->heap[pos], k->heap[parent])) break;
    size_t t = k->heap[pos];
    k->heap[pos] = k->heap[parent];
    k->heap[parent] = t;
    pos = parent;
  }
}

static void sift_down(fc_kmerge *k, size_t pos) {
  for (;;) {
    size_t l = 2 * pos + 1, r = l + 1, m = pos;
    if (l < k->hn && less(k, k->heap[l], k->heap[m])) m = l;
    if (r < k->hn && less(k, k->heap[r], k->heap[m])) m = r;
    if (m == pos) break;
    size_t t = k->heap[pos];
    k->heap[pos] = k->heap[m];
    k->heap[m] = t;
    pos = m;
  }
}

static void push(fc_kmerge *k, size_t i) {
  k->heap[k->hn++] = i;
  sift_up(k, k->hn - 1);
}

static size_t pop(fc_kmerge *k) {
  size_t top = k->heap[0];
  k->heap[0] = k->heap[--k->hn];
  if (k->hn) sift_down(k, 0);
  return top;
}

int kmerge_open(MDB_txn *const *txns, const MDB_dbi *dbis, size_t n, const MDB_val *from,
                fc_kmerge **out) {
  *out = NULL;
  fc_kmerge *k = fc_calloc(1, sizeof *k);
  if (!k) return ENOMEM;
  k->n = n;
  k->s = fc_calloc(n ? n : 1, sizeof *k->s);
  k->heap = fc_calloc(n ? n : 1, sizeof *k->heap);
  k->out_src = fc_calloc(n ? n : 1, sizeof *k->out_src);
  k->out_val = fc_calloc(n ? n : 1, sizeof *k->out_val);
  int rc = (k->s && k->heap && k->out_src && k->out_val) ? 0 : ENOMEM;
  for (size_t i = 0; i < n && !rc; i++) {
    rc = mdb_cursor_open(txns[i], dbis[i], &k->s[i].cur);
    if (rc) break;
    MDB_val key = from ? *from : (MDB_val){0, NULL};
    rc = mdb_cursor_get(k->s[i].cur, &key, &k->s[i].val, from ? MDB_SET_RANGE : MDB_FIRST);
    if (rc == MDB_NOTFOUND) {
      rc = 0;
      continue;
    }
    if (rc) break;
    k->s[i].key = key;
    push(k, i);
  }
  if (rc) {
    kmerge_close(k);
    return rc;
  }
  *out = k;
  return 0;
}

int kmerge_next(fc_kmerge *k, MDB_val *key, size_t *m, const size_t **src, const MDB_val **vals) {
  if (!k->hn) return MDB_NOTFOUND;
  size_t cnt = 0;
  size_t first = pop(k);
  *key = k->s[first].key;
  k->out_src[cnt] = first;
  k->out_val[cnt++] = k->s[first].val;
  while (k->hn && kmerge_cmp(&k->s[k->heap[0]].key, key) == 0) {
    size_t i = pop(k);
    k->out_src[cnt] = i;
    k->out_val[cnt++] = k->s[i].val;
  }
  /* advance every source that held the key; the yielded pointers stay valid (read-only txns) */
  for (size_t j = 0; j < cnt; j++) {
    source *s = &k->s[k->out_src[j]];
    int rc = mdb_cursor_get(s->cur, &s->key, &s->val, MDB_NEXT);
    if (rc == MDB_NOTFOUND) continue;
    if (rc) return rc;
    push(k, k->out_src[j]);
  }
  *m = cnt; /* popped in (key, index) order: already ascending by source */
  *src = k->out_src;
  *vals = k->out_val;
  return 0;
}

void kmerge_close(fc_kmerge *k) {
  if (!k) return;
  for (size_t i = 0; i < k->n && k->s; i++)
    if (k->s[i].cur) mdb_cursor_close(k->s[i].cur);
  free(k->s);
  free(k->heap);
  free(k->out_src);
  free(k->out_val);
  free(k);
}
