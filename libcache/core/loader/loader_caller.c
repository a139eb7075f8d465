/* The caller's buffers (fc_loader_set_buffers, fc_loader_add_buffers): batches built into memory
 * the caller owns (pinned memory, a tensor's storage), put into the loader's buffer pool
 * (loader_buffers.c); the batches prefetched into the loader's own buffers are dropped
 * (loader_batch.c). Nothing calls this file back. */
#include "libcache/core/loader/loader_int.h"
#include "formats/common/args.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

int fc_loader_set_buffers(fc_loader *l, void *const *bufs, size_t n, size_t bytes) {
  FC_ARGS(l, bufs);
  ld_not_lookup(l);
  if (l->pid != getpid()) return FC_EBADSTATE;
  if (n == 0 || !bufs) return EINVAL;
  pthread_mutex_lock(&l->mu);
  int rc = 0;
  if (bytes < l->plan.max_batch_bytes) {
    snprintf(l->err, sizeof l->err, "caller buffers of %zu bytes, the epoch's batches need %llu",
             bytes, (unsigned long long)l->plan.max_batch_bytes);
    rc = FC_ECONFIG;
  } else if (l->next_consume != l->base || l->held_caller) {
    snprintf(l->err, sizeof l->err, "set buffers before the first batch of an epoch");
    rc = FC_EBADSTATE;
  } else {
    /* batches prefetched into the loader's own buffers are dropped and built again */
    l->gen++;
    pthread_cond_broadcast(&l->cv_buf);
    while (l->building) pthread_cond_wait(&l->cv_idle, &l->mu);
    ld_drop_ready(l);
    l->next_build = l->next_consume;
    ld_bufs_free(l);
    for (size_t i = 0; i < n && !rc; i++) {
      l->n_caller_bufs = n;
      ld_buf b = {bufs[i], bytes, 1, (uint32_t)i, 0, 0};
      size_t before = l->n_free;
      ld_buf_put_locked(l, b);
      if (l->n_free == before) rc = ENOMEM;
    }
    l->caller_buf_bytes = bytes;
    pthread_cond_broadcast(&l->cv_space);
  }
  pthread_mutex_unlock(&l->mu);
  return rc;
}

int fc_loader_add_buffers(fc_loader *l, void *const *bufs, size_t n, size_t bytes) {
  FC_ARGS(l, bufs);
  ld_not_lookup(l);
  if (l->pid != getpid()) return FC_EBADSTATE;
  if (n == 0 || !bufs) return EINVAL;
  pthread_mutex_lock(&l->mu);
  int rc = 0;
  if (!l->n_caller_bufs) {
    snprintf(l->err, sizeof l->err, "no caller buffers to add to: fc_loader_set_buffers first");
    rc = FC_EBADSTATE;
  } else if (bytes < l->caller_buf_bytes) {
    snprintf(l->err, sizeof l->err, "added buffers of %zu bytes, the others hold %zu", bytes,
             l->caller_buf_bytes);
    rc = FC_ECONFIG;
  }
  for (size_t i = 0; i < n && !rc; i++) {
    ld_buf b = {bufs[i], bytes, 1, (uint32_t)l->n_caller_bufs, 0, 0};
    size_t before = l->n_free;
    ld_buf_put_locked(l, b);
    if (l->n_free == before)
      rc = ENOMEM;
    else
      l->n_caller_bufs++;
  }
  pthread_mutex_unlock(&l->mu);
  pthread_cond_broadcast(&l->cv_space); /* the claim window grew */
  return rc;
}
