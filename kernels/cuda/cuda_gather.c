/* The gatherer of the CUDA backend (cuda_api.h, fc_cuda_gather_*): worker threads that each hold
 * one utterance queue it; one of them launches the queue as one cuda_compute_batch. Built on the
 * plan's public API only, so it is the same code in every build (without the backend, creating its
 * plan fails with FC_ENODEVICE). */
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_int.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct request {
  const float *x;
  size_t n;
  float *out;
  int rc, done;
} request;

struct fc_cuda_gather {
  fc_cuda_plan *plan;
  unsigned workers, wait_us;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  request **queue; /* waiting requests, oldest first */
  unsigned nq, blocked; /* queued; callers waiting for room */
  uint64_t q_samples;
  struct timespec oldest;
  int running, failed;
  char error[512]; /* the failed launch's message, for every caller it failed */
  /* The leader's copy of a launch (only one leader at a time). */
  request **taken;
  const float **xs;
  size_t *lens;
  void **outs;
};

int cuda_gather_create(const fc_mel_config *cfg, int device, size_t max_batch_samples,
                       unsigned workers, unsigned wait_us, fc_cuda_gather **out) {
  *out = NULL;
  if (!workers) workers = 1;
  fc_cuda_gather *g = fc_calloc(1, sizeof *g);
  if (!g) return cuda_set_error(ENOMEM, "out of host memory for the CUDA gatherer");
  g->workers = workers;
  g->wait_us = wait_us ? wait_us : 2000;
  g->queue = fc_calloc(workers, sizeof *g->queue);
  g->taken = fc_calloc(workers, sizeof *g->taken);
  g->xs = fc_calloc(workers, sizeof *g->xs);
  g->lens = fc_calloc(workers, sizeof *g->lens);
  g->outs = fc_calloc(workers, sizeof *g->outs);
  int rc = 0;
  if (!g->queue || !g->taken || !g->xs || !g->lens || !g->outs) {
    rc = cuda_set_error(ENOMEM, "out of host memory for the CUDA gatherer");
  } else if (!(rc = cuda_plan_create(cfg, device, max_batch_samples, &g->plan))) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    *out = g;
    return 0;
  }
  free(g->queue);
  free(g->taken);
  free(g->xs);
  free(g->lens);
  free(g->outs);
  free(g);
  return rc;
}

void cuda_gather_free(fc_cuda_gather *g) {
  if (!g) return;
  cuda_plan_free(g->plan);
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  free(g->queue);
  free(g->taken);
  free(g->xs);
  free(g->lens);
  free(g->outs);
  free(g);
}

static double since_us(const struct timespec *t0) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) * 1e6 + (double)(now.tv_nsec - t0->tv_nsec) / 1e3;
}

int cuda_gather_compute(fc_cuda_gather *g, const float *samples, size_t n, float *out) {
  const size_t max = cuda_plan_max_samples(g->plan);
  if (n > max)
    return cuda_set_error(FC_ETOOLONG, "%zu samples, more than the CUDA plan's %zu", n, max);
  if (fc_mel_num_frames(cuda_plan_config(g->plan), n) == 0)
    return cuda_set_error(FC_EEMPTY, "%zu samples give no frames", n);
  request r = {samples, n, out, 0, 0};
  pthread_mutex_lock(&g->mu);
  while (!g->failed && (g->nq >= g->workers || g->q_samples + n > max)) {
    g->blocked++;
    pthread_cond_broadcast(&g->cv); /* a full queue is launched at once */
    pthread_cond_wait(&g->cv, &g->mu);
    g->blocked--;
  }
  if (g->failed) {
    cuda_set_error(FC_EBADSTATE, "the CUDA backend failed earlier: %s", g->error);
    pthread_mutex_unlock(&g->mu);
    return FC_EBADSTATE;
  }
  if (g->nq == 0) clock_gettime(CLOCK_MONOTONIC, &g->oldest);
  g->queue[g->nq++] = &r;
  g->q_samples += n;
  pthread_cond_broadcast(&g->cv);
  while (!r.done) {
    double waited = since_us(&g->oldest);
    if (!g->running && g->nq > 0 &&
        (g->nq >= g->workers || g->blocked > 0 || waited >= (double)g->wait_us)) {
      /* Lead this launch: take the whole queue, compute it without the lock. */
      unsigned k = g->nq;
      request **taken = g->taken;
      memcpy(taken, g->queue, sizeof *taken * k);
      for (unsigned i = 0; i < k; i++) {
        g->xs[i] = taken[i]->x;
        g->lens[i] = taken[i]->n;
        g->outs[i] = taken[i]->out;
      }
      g->nq = 0;
      g->q_samples = 0;
      g->running = 1;
      pthread_cond_broadcast(&g->cv); /* room for blocked callers */
      pthread_mutex_unlock(&g->mu);
      int rc = cuda_compute_batch(g->plan, g->xs, g->lens, k, FC_DTYPE_F32, g->outs);
      pthread_mutex_lock(&g->mu);
      g->running = 0;
      if (rc) {
        g->failed = 1;
        snprintf(g->error, sizeof g->error, "%s", cuda_last_error());
      }
      for (unsigned i = 0; i < k; i++) {
        taken[i]->rc = rc;
        taken[i]->done = 1;
      }
      pthread_cond_broadcast(&g->cv);
      continue;
    }
    if (g->running || g->nq == 0) {
      pthread_cond_wait(&g->cv, &g->mu);
    } else {
      struct timespec until = g->oldest;
      long ns = until.tv_nsec + (long)g->wait_us * 1000L;
      until.tv_sec += ns / 1000000000L;
      until.tv_nsec = ns % 1000000000L;
      pthread_cond_timedwait(&g->cv, &g->mu, &until);
    }
  }
  if (r.rc) cuda_set_error(r.rc, "%s", g->error);
  pthread_mutex_unlock(&g->mu);
  return r.rc;
}
