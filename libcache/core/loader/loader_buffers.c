/* The padded-buffer pool of the loader: the loader's own buffers and the caller's
 * (fc_loader_set_buffers, fc_loader_add_buffers), taken by a batch being built and given back when
 * the batch is released (loader_batch.c calls these; they call nothing of it). */
#include "libcache/core/loader/loader_int.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

_Thread_local uint64_t ld_lookup_serial; /* loader_int.h */
_Thread_local char ld_lookup_why[512];

/* Take a buffer of at least need bytes. Called without mu held. Returns 0, ENOMEM, or EAGAIN when
 * the epoch changed (or the loader stops) while waiting for a caller buffer. */
int ld_buf_get(fc_loader *l, uint64_t gen, size_t need, ld_buf *out) {
  pthread_mutex_lock(&l->mu);
  if (l->n_caller_bufs) {
    int rc = 0;
    if (need > l->caller_buf_bytes) rc = FC_ECONFIG;
    while (!rc && l->n_free == 0) {
      if (l->gen != gen || l->stop) {
        rc = EAGAIN;
        break;
      }
      pthread_cond_wait(&l->cv_buf, &l->mu);
    }
    if (!rc) *out = l->free_bufs[--l->n_free];
    pthread_mutex_unlock(&l->mu);
    return rc;
  }
  /* own pool: the most recently given back buffer big enough (its lines are likeliest still in
   * the cache: a pool cycled in turn is as many buffers of DRAM traffic as it holds), else grow
   * one, else allocate */
  size_t want = l->plan.max_batch_bytes > need ? l->plan.max_batch_bytes : need;
  for (size_t i = l->n_free; i-- > 0;)
    if (l->free_bufs[i].cap >= need) {
      *out = l->free_bufs[i];
      out->used = need;
      if (need > out->touched) out->touched = need;
      memmove(&l->free_bufs[i], &l->free_bufs[i + 1], (l->n_free - i - 1) * sizeof *l->free_bufs);
      l->n_free--;
      pthread_mutex_unlock(&l->mu);
      return 0;
    }
  ld_buf old = {0};
  if (l->n_free) old = l->free_bufs[--l->n_free];
  pthread_mutex_unlock(&l->mu);
  free(old.p);
  size_t cap = (want + 63) & ~(size_t)63;
  out->p = fc_aligned_alloc(64, cap ? cap : 64);
  out->cap = cap;
  out->caller = 0;
  out->used = out->touched = need;
  return out->p ? 0 : ENOMEM;
}

/* An own buffer that an outlier batch filled (an hour-long utterance padded with its batch: every
 * buffer is as large as the epoch's largest batch) and that now holds one many times smaller: its
 * pages past this batch go back to the system (MADV_DONTNEED: zero pages when next written), else
 * each buffer the outlier passes through keeps them resident, epoch after epoch, up to the pool's
 * size times the outlier's. Batches of the usual spread (a few times one another) keep theirs. */
enum { LD_TRIM_RATIO = 8, LD_TRIM_MIN = 64 << 20 };
static void trim_outlier_pages(ld_buf *b) {
  if (b->caller || b->touched <= b->used + LD_TRIM_MIN || b->touched / LD_TRIM_RATIO < b->used)
    return;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)b->p + b->used + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)b->p + b->touched) & ~(page - 1);
  if (hi > lo && madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0)
    b->touched = lo - (uintptr_t)b->p;
}

/* Give a buffer back; mu held. */
void ld_buf_put_locked(fc_loader *l, ld_buf b) {
  if (!b.p) return;
  size_t keep = l->o.prefetch_depth + l->o.prefetch_threads + 2;
  if (!b.caller && (l->n_free >= keep || l->n_caller_bufs)) {
    free(b.p);
    return;
  }
  trim_outlier_pages(&b);
  if (l->n_free == l->cap_free) {
    size_t cap = l->cap_free ? l->cap_free * 2 : 8;
    ld_buf *p = fc_realloc(l->free_bufs, cap * sizeof *p);
    if (!p) {
      if (!b.caller) free(b.p);
      return;
    }
    l->free_bufs = p;
    l->cap_free = cap;
  }
  l->free_bufs[l->n_free++] = b;
  pthread_cond_broadcast(&l->cv_buf);
}

void ld_bufs_free(fc_loader *l) {
  for (size_t i = 0; i < l->n_free; i++)
    if (!l->free_bufs[i].caller) free(l->free_bufs[i].p);
  free(l->free_bufs);
  l->free_bufs = NULL;
  l->n_free = l->cap_free = 0;
}
