/* Bulk loads for tokenize (tok_internal.h "bulk"): runs of key-sorted puts spilled to a temporary
 * file beside the store, merged at the end and appended to the store's tables in key order.
 *
 * Why: tok keys are content hashes, so a batch of them lands on leaf pages all over the tree; once
 * the tree has more leaves than a batch has lines, every commit rewrites a 4 KiB page per line
 * (docs/BENCHMARKS.md "A million utterances": 3.9 KB written per 140-byte record at 1M lines).
 * Merged in key order into an empty table, each page is written once, full (FC_PUT_APPEND). */
#include "libcache/text/tokenize/tok_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/common/alloc.h"

/* A run: entries [u32 key length][u32 value length][u32 aux][key][value], keys ascending (aux:
 * what the caller counts with a put, e.g. a line's unknown symbols). */
typedef struct run {
  uint64_t off, end;
} run;

struct tok_spill {
  int fd;
  uint64_t size; /* bytes written */
  run *runs[2]; /* per db slot: 0 tok, 1 text */
  size_t n_runs[2], cap_runs[2];
  uint8_t *buf; /* the run being written */
  size_t buf_len, buf_cap;
};

int tok_store_is_empty(fc_store *s, int *empty) {
  fc_rtxn *t;
  uint64_t ntext = 0, ntok = 0;
  int rc = fc_store_read_begin(s, &t);
  if (rc) return rc;
  rc = fc_rtxn_count(t, FC_DB_TEXT, &ntext);
  if (!rc) rc = fc_rtxn_count(t, FC_DB_TOK, &ntok);
  fc_rtxn_end(t);
  *empty = ntext == 0 && ntok == 0;
  return rc;
}

int tok_spill_open(const char *dir, tok_spill **out) {
  tok_spill *sp = fc_calloc(1, sizeof *sp);
  if (!sp) return ENOMEM;
  sp->fd = -1;
#ifdef O_TMPFILE
  sp->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); /* never seen, gone on exit */
#endif
  if (sp->fd < 0) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/.tokenize-spill-XXXXXX", dir) >= (int)sizeof p) {
      free(sp);
      return ENAMETOOLONG;
    }
    sp->fd = mkstemp(p);
    if (sp->fd >= 0) unlink(p);
  }
  if (sp->fd < 0) {
    int e = errno;
    free(sp);
    return e;
  }
  *out = sp;
  return 0;
}

void tok_spill_close(tok_spill *sp) {
  if (!sp) return;
  if (sp->fd >= 0) close(sp->fd);
  free(sp->runs[0]);
  free(sp->runs[1]);
  free(sp->buf);
  free(sp);
}

/* LMDB's default key order: bytes, then length. */
static int key_cmp(const void *a, size_t al, const void *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

static int cmp_put(const void *x, const void *y) {
  const fc_put *a = x, *b = y;
  return key_cmp(a->key, a->key_len, b->key, b->key_len);
}

void tok_sort_puts(fc_put *puts, size_t n) { qsort(puts, n, sizeof *puts, cmp_put); }

static const fc_put *sort_base; /* qsort has no context argument: under spill_mu */
static int cmp_index(const void *x, const void *y) {
  return cmp_put(&sort_base[*(const size_t *)x], &sort_base[*(const size_t *)y]);
}
static pthread_mutex_t spill_mu = PTHREAD_MUTEX_INITIALIZER;

static int buf_add(tok_spill *sp, const void *p, size_t n) {
  if (sp->buf_len + n > sp->buf_cap) {
    size_t cap = sp->buf_cap ? sp->buf_cap : 1 << 16;
    while (cap < sp->buf_len + n) cap *= 2;
    uint8_t *b = fc_realloc(sp->buf, cap);
    if (!b) return ENOMEM;
    sp->buf = b;
    sp->buf_cap = cap;
  }
  memcpy(sp->buf + sp->buf_len, p, n);
  sp->buf_len += n;
  return 0;
}

static int write_all(int fd, const void *p, size_t n, uint64_t off) {
  const uint8_t *b = p;
  while (n) {
    ssize_t w = pwrite(fd, b, n, (off_t)off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    b += w;
    n -= (size_t)w;
    off += (uint64_t)w;
  }
  return 0;
}

int tok_spill_run(tok_spill *sp, int slot, const fc_put *puts, const uint32_t *aux, size_t n) {
  if (!n) return 0;
  size_t *ord = fc_malloc(n * sizeof *ord);
  if (!ord) return ENOMEM;
  for (size_t i = 0; i < n; i++) ord[i] = i;
  pthread_mutex_lock(&spill_mu);
  sort_base = puts;
  qsort(ord, n, sizeof *ord, cmp_index);
  pthread_mutex_unlock(&spill_mu);
  sp->buf_len = 0;
  int rc = 0;
  for (size_t j = 0; j < n && !rc; j++) {
    const fc_put *p = &puts[ord[j]];
    if (j && cmp_put(p, &puts[ord[j - 1]]) == 0) continue; /* one text, one record */
    uint32_t hdr[3] = {(uint32_t)p->key_len, (uint32_t)p->val_len, aux ? aux[ord[j]] : 0};
    rc = buf_add(sp, hdr, sizeof hdr);
    if (!rc) rc = buf_add(sp, p->key, p->key_len);
    if (!rc) rc = buf_add(sp, p->val, p->val_len);
  }
  free(ord);
  if (rc) return rc;
  if (sp->n_runs[slot] == sp->cap_runs[slot]) {
    size_t cap = sp->cap_runs[slot] ? 2 * sp->cap_runs[slot] : 16;
    run *r = fc_realloc(sp->runs[slot], cap * sizeof *r);
    if (!r) return ENOMEM;
    sp->runs[slot] = r;
    sp->cap_runs[slot] = cap;
  }
  rc = write_all(sp->fd, sp->buf, sp->buf_len, sp->size);
  if (rc) return rc;
  sp->runs[slot][sp->n_runs[slot]++] = (run){sp->size, sp->size + sp->buf_len};
  sp->size += sp->buf_len;
  return 0;
}

/* A cursor over one run in the mapped file. */
typedef struct rcur {
  const uint8_t *p, *end;
  const uint8_t *key, *val;
  uint32_t kl, vl, aux;
} rcur;

static int rcur_next(rcur *c) {
  if (c->p + 12 > c->end) return 0;
  memcpy(&c->kl, c->p, 4);
  memcpy(&c->vl, c->p + 4, 4);
  memcpy(&c->aux, c->p + 8, 4);
  c->key = c->p + 12;
  c->val = c->key + c->kl;
  c->p = c->val + c->vl;
  return 1;
}

/* The heap of run cursors, smallest key on top. */
static int cur_less(const rcur *a, const rcur *b) {
  return key_cmp(a->key, a->kl, b->key, b->kl) < 0;
}

static void sift_down(rcur **h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && cur_less(h[l], h[m])) m = l;
    if (r < n && cur_less(h[r], h[m])) m = r;
    if (m == i) return;
    rcur *t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

int tok_spill_merge(tok_spill *sp, fc_store *s, int slot, int db, unsigned flags,
                    const fc_put *guard, size_t batch_puts, size_t batch_bytes, tok_merged *done) {
  size_t n = sp->n_runs[slot];
  memset(done, 0, sizeof *done);
  if (!n) return 0;
  void *map = mmap(NULL, sp->size, PROT_READ, MAP_SHARED, sp->fd, 0);
  if (map == MAP_FAILED) return errno;
  (void)madvise(map, sp->size, MADV_SEQUENTIAL);
  rcur *curs = fc_calloc(n, sizeof *curs);
  rcur **heap = fc_calloc(n, sizeof *heap);
  fc_put *puts = fc_calloc(batch_puts + 1, sizeof *puts);
  uint32_t(*vals)[2] = fc_calloc(batch_puts, sizeof *vals); /* each put's aux and dim0 */
  unsigned char *kept = fc_calloc(batch_puts + 1, 1);
  int rc = (curs && heap && puts && vals && kept) ? 0 : ENOMEM;
  size_t nh = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    curs[i] = (rcur){(const uint8_t *)map + sp->runs[slot][i].off,
                     (const uint8_t *)map + sp->runs[slot][i].end,
                     NULL,
                     NULL,
                     0,
                     0,
                     0};
    if (rcur_next(&curs[i])) heap[nh++] = &curs[i];
  }
  for (size_t i = nh / 2; i-- > 0;) sift_down(heap, nh, i);
  size_t np = 0, bytes = 0;
  tok_merged part = {0}; /* of the puts not yet committed */
  const uint8_t *last = NULL;
  uint32_t last_len = 0;
  while (!rc && (nh || np)) {
    if (nh) {
      rcur *c = heap[0];
      if (!last || key_cmp(c->key, c->kl, last, last_len) != 0) { /* a key once */
        vals[np][0] = c->aux;
        vals[np][1] = 0;
        if (c->vl >= 12) memcpy(&vals[np][1], c->val + 8, 4); /* a record's dim0 (bytes 8..11) */
        puts[np++] = (fc_put){db, c->key, c->kl, c->val, c->vl, FC_PUT_APPEND | flags};
        bytes += c->kl + c->vl;
        last = c->key;
        last_len = c->kl;
      } else {
        part.duplicates++;
      }
      if (!rcur_next(c)) heap[0] = heap[--nh];
      if (nh) sift_down(heap, nh, 0);
    }
    if (np && (np == batch_puts || bytes >= batch_bytes || !nh)) {
      if (guard) puts[np] = *guard; /* written with each batch, never counted */
      rc = fc_store_write_kept(s, puts, np + (guard != NULL), kept);
      for (size_t i = 0; i < np && !rc; i++) { /* a key another writer stored first: not ours */
        if (kept[i]) {
          part.duplicates++;
        } else {
          part.puts++;
          part.aux += vals[i][0] & ~TOK_AUX_NEW;
          part.marked += vals[i][0] >> 31;
          part.dim0 += vals[i][1];
        }
      }
      if (!rc) {
        done->puts += part.puts;
        done->aux += part.aux;
        done->dim0 += part.dim0;
        done->marked += part.marked;
        done->duplicates += part.duplicates;
      }
      memset(&part, 0, sizeof part);
      np = 0;
      bytes = 0;
    }
  }
  if (!rc) done->duplicates += part.duplicates; /* of keys committed before them */
  free(puts);
  free(vals);
  free(kept);
  free(heap);
  free(curs);
  munmap(map, sp->size);
  return rc;
}
