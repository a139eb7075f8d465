/* A staging backend on the CPU for the C tests (libcache/mel/featurize/featurize_backend.h): what the
 * CUDA ring plan does (kernels/cuda/cuda_ring.h), with the CPU kernels and a "device" thread.
 *
 * open makes `chunks` staging buffers of exactly capacity * 4 bytes (malloc: ASan sees a write past
 * one) and output buffers; launch checks the launch against the chunk's limits, takes a checksum of
 * the staging bytes it uses and queues the chunk for the device thread, which sleeps delay_us,
 * computes every utterance with fc_mel_compute (int16 samples converted by fc_cu_i16_to_f32, as the
 * GPU does), converts to the dtype, checks that nobody wrote into the staging bytes while the chunk
 * was in flight, and marks it done; finish waits for it, then poisons its staging buffer (NaN
 * bytes) so that a chunk launched again without its samples rewritten gives wrong numbers.
 *
 * Faults, CUDA-like: an utterance of broken_len samples makes its launch fail; the fail_launch-th
 * launch or the fail_finish-th finish fails; after a failure every later launch fails with
 * FC_EBADSTATE (sticky, as a CUDA plan). hold_first keeps the first chunk from completing until a
 * second one has been launched (10 s at most): with it, a pipeline that waits for a chunk before
 * launching the next is seen (max_in_flight stays 1, held_timeout set).
 *
 * grow: the ring is made as the CUDA backend makes it, chunk 0 at open and the others by
 * stage_grow (mock_backend with .stage_grow = mock_grow), each after grow_delay_us; grow_fail (>= 1) makes that chunk's
 * stage_grow fail (the ring stays at the chunks before it). A chunk made out of turn, or a staging
 * buffer asked for or a launch made on a chunk not made yet, counts as a violation.
 *
 * stage_event: each chunk's uses must go opened → sealed → released → opened ..., a chunk made
 * before it is opened, sealed only once launched after, released only after its finish; anything
 * else counts as a violation (opened, sealed, released count the events). With early (the
 * backend's early_refill) a use may be opened once the one before it is finished, before it is
 * released (early_opens counts those), but launched only after that release: the device would
 * write over the features the writers still read.
 *
 * open_hook: a test's function open calls first (a slow or failing device open). */
#ifndef FC_TESTS_STAGE_MOCK_H
#define FC_TESTS_STAGE_MOCK_H

#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "kernels/cuda/mel_kernels.h"
#include "libcache/mel/featurize/featurize_backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MOCK_MAX_CHUNKS = 8 };

typedef struct mock_chunk {
  int state; /* 0 idle, 1 queued on the device, 2 done (not yet finished), 3 failed launch */
  int life; /* stage_event: 0 free, 1 opened, 2 sealed */
  int launched; /* the use opened last was launched */
  int held; /* its output is with the writers: launched, not yet released */
  float *staging;
  void *out;
  size_t count, n16, nf;
  uint64_t *sample_off, *len;
  uint64_t frames;
  int dtype, rc;
  uint64_t sum; /* of the staging bytes in use, at launch */
} mock_chunk;

typedef struct stage_mock {
  /* set by the test before the run */
  unsigned chunks;
  size_t capacity, max_utts;
  uint64_t max_frames; /* 0: fc_mel_num_frames(capacity) + 64 */
  double launch_wait;
  unsigned delay_us;
  size_t broken_len;
  unsigned fail_launch, fail_finish;
  int hold_first;
  int grow;
  unsigned grow_fail, grow_delay_us;
  int early; /* stage_info's early_refill */
  int (*open_hook)(void); /* called first by open (on the pipeline's opener thread under a hybrid
                             start): nonzero fails the open with that error */
  /* counted during the run */
  atomic_uint launches, finishes, utts, utts16, failed_utts, in_flight, max_in_flight;
  atomic_uint violations; /* launch checks that failed, staging written while in flight */
  atomic_uint made; /* chunks made */
  atomic_uint opened, sealed, released; /* stage_event calls */
  atomic_uint early_opens; /* uses opened while the one before them was held */
  atomic_int held_timeout;
  /* internal */
  fc_mel_config cfg;
  fc_mel_plan *plan;
  mock_chunk c[MOCK_MAX_CHUNKS];
  pthread_t dev;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned queue[64], qhead, qtail; /* chunk numbers, FIFO */
  int stop, sticky;
} stage_mock;

static stage_mock the_mock;

static uint64_t mock_sum(const mock_chunk *c, size_t capacity) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *a = (const unsigned char *)c->staging;
  const unsigned char *b = (const unsigned char *)(c->staging + capacity - c->nf);
  for (size_t i = 0; i < 2 * c->n16; i++) h = (h ^ a[i]) * 1099511628211ull;
  for (size_t i = 0; i < 4 * c->nf; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void mock_compute(stage_mock *m, mock_chunk *c) {
  const size_t nm = m->cfg.n_mels, vsize = fc_dtype_size((fc_dtype)c->dtype);
  float *x = malloc(sizeof *x * (c->n16 + c->nf + 1));
  const int16_t *s16 = (const int16_t *)(const void *)c->staging;
  for (size_t i = 0; i < c->n16; i++) x[i] = fc_cu_i16_to_f32(s16[i]);
  memcpy(x + c->n16, c->staging + m->capacity - c->nf, sizeof *x * c->nf);
  uint64_t frame = 0;
  c->rc = 0;
  for (size_t k = 0; k < c->count && !c->rc; k++) {
    uint64_t f = fc_mel_num_frames(&m->cfg, c->len[k]);
    float *mel = malloc(sizeof *mel * f * nm);
    c->rc = fc_mel_compute(m->plan, x + c->sample_off[k], c->len[k], mel);
    fc_convert_dtype(mel, f * nm, (fc_dtype)c->dtype, (char *)c->out + frame * nm * vsize);
    free(mel);
    frame += f;
  }
  free(x);
  if (mock_sum(c, m->capacity) != c->sum) atomic_fetch_add(&m->violations, 1);
}

static void *mock_device(void *arg) {
  stage_mock *m = arg;
  pthread_mutex_lock(&m->mu);
  for (;;) {
    if (m->qhead == m->qtail) {
      if (m->stop) break;
      pthread_cond_wait(&m->cv, &m->mu);
      continue;
    }
    unsigned k = m->queue[m->qhead % 64];
    if (m->hold_first == 1) { /* the first chunk waits for a second launch */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 10;
      while (m->hold_first == 1 && atomic_load(&m->launches) < 2 && !m->stop)
        if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT) {
          atomic_store(&m->held_timeout, 1);
          break;
        }
      m->hold_first = 2;
    }
    m->qhead++;
    pthread_mutex_unlock(&m->mu);
    if (m->delay_us) usleep(m->delay_us);
    mock_compute(m, &m->c[k]);
    pthread_mutex_lock(&m->mu);
    m->c[k].state = 2;
    pthread_cond_broadcast(&m->cv);
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

static void mock_close(void *state) {
  stage_mock *m = state;
  pthread_mutex_lock(&m->mu);
  m->stop = 1;
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
  pthread_join(m->dev, NULL);
  for (unsigned i = 0; i < m->chunks; i++) {
    free(m->c[i].staging);
    free(m->c[i].out);
    free(m->c[i].sample_off);
    free(m->c[i].len);
  }
  fc_mel_plan_free(m->plan);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cv);
  m->plan = NULL;
}

static void mock_make(stage_mock *m, unsigned i) {
  mock_chunk *c = &m->c[i];
  c->staging = malloc(sizeof(float) * m->capacity);
  c->out = malloc(sizeof(float) * m->max_frames * m->cfg.n_mels);
  c->sample_off = malloc(sizeof(uint64_t) * m->max_utts);
  c->len = malloc(sizeof(uint64_t) * m->max_utts);
  memset(c->staging, 0xff, sizeof(float) * m->capacity);
  atomic_store(&m->made, i + 1);
}

static inline int mock_grow(void *state, unsigned chunk) {
  stage_mock *m = state;
  if (!m->grow || chunk != atomic_load(&m->made) || chunk >= m->chunks) {
    atomic_fetch_add(&m->violations, 1);
    return EINVAL;
  }
  if (m->grow_delay_us) usleep(m->grow_delay_us);
  if (chunk == m->grow_fail) return ENOMEM;
  mock_make(m, chunk);
  return 0;
}

static int mock_open(const fc_mel_config *cfg, const fc_device *dev, unsigned workers, void **state,
                     char *why, size_t why_len) {
  (void)dev, (void)workers;
  stage_mock *m = &the_mock;
  if (m->open_hook) {
    int rc = m->open_hook();
    if (rc) {
      snprintf(why, why_len, "the mock device cannot be opened");
      return rc;
    }
  }
  m->cfg = *cfg;
  if (!m->max_frames) m->max_frames = fc_mel_num_frames(cfg, m->capacity) + 64;
  atomic_store(&m->launches, 0);
  atomic_store(&m->finishes, 0);
  atomic_store(&m->utts, 0);
  atomic_store(&m->utts16, 0);
  atomic_store(&m->failed_utts, 0);
  atomic_store(&m->in_flight, 0);
  atomic_store(&m->max_in_flight, 0);
  atomic_store(&m->violations, 0);
  atomic_store(&m->made, 0);
  atomic_store(&m->opened, 0);
  atomic_store(&m->sealed, 0);
  atomic_store(&m->released, 0);
  atomic_store(&m->early_opens, 0);
  atomic_store(&m->held_timeout, 0);
  m->qhead = m->qtail = 0;
  m->stop = m->sticky = 0;
  memset(m->c, 0, sizeof m->c);
  if (m->chunks < 1 || m->chunks > MOCK_MAX_CHUNKS || fc_mel_plan_create(cfg, &m->plan))
    return FC_ECONFIG;
  for (unsigned i = 0; i < (m->grow ? 1 : m->chunks); i++) mock_make(m, i);
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv, NULL);
  pthread_create(&m->dev, NULL, mock_device, m);
  *state = m;
  return 0;
}

static void mock_stage_info(void *state, fc_fz_stage_info *info) {
  stage_mock *m = state;
  info->chunks = m->chunks;
  info->capacity = m->capacity;
  info->max_frames = m->max_frames;
  info->max_utts = m->max_utts;
  info->launch_wait = m->launch_wait;
  info->early_refill = m->early;
}

static void *mock_stage_buffer(void *state, unsigned chunk) {
  stage_mock *m = state;
  if (chunk >= atomic_load(&m->made)) { /* never asked for before it is made */
    atomic_fetch_add(&m->violations, 1);
    return NULL;
  }
  return m->c[chunk].staging;
}

static int mock_launch(void *state, unsigned chunk, const fc_fz_launch *l) {
  stage_mock *m = state;
  unsigned n = atomic_fetch_add(&m->launches, 1) + 1;
  mock_chunk *c = &m->c[chunk];
  int bad = chunk >= atomic_load(&m->made) || c->state != 0 || l->count == 0 ||
            l->count > m->max_utts || l->n16 + l->nf > m->capacity || l->frames > m->max_frames;
  uint64_t frames = 0;
  for (size_t k = 0; !bad && k < l->count; k++) {
    bad |= l->sample_off[k] + l->len[k] > l->n16 + l->nf;
    frames += fc_mel_num_frames(&m->cfg, l->len[k]);
  }
  if (bad || frames != l->frames) {
    atomic_fetch_add(&m->violations, 1);
    return EINVAL;
  }
  int rc = 0;
  pthread_mutex_lock(&m->mu);
  if (c->held) atomic_fetch_add(&m->violations, 1); /* its output not yet released */
  c->held = c->launched = 1; /* a launch that fails too: its utterances are failed, then released */
  if (m->sticky)
    rc = FC_EBADSTATE;
  else if (n == m->fail_launch)
    rc = FC_ECUDA;
  for (size_t k = 0; !rc && k < l->count; k++)
    if (l->len[k] == m->broken_len) rc = FC_ECUDA;
  if (rc) {
    m->sticky = 1;
    atomic_fetch_add(&m->failed_utts, (unsigned)l->count);
    pthread_mutex_unlock(&m->mu);
    return rc;
  }
  c->count = l->count;
  c->n16 = l->n16;
  c->nf = l->nf;
  c->frames = l->frames;
  c->dtype = l->dtype;
  memcpy(c->sample_off, l->sample_off, sizeof *c->sample_off * l->count);
  memcpy(c->len, l->len, sizeof *c->len * l->count);
  for (size_t k = 0; k < l->count; k++) /* the int16 region holds exactly the int16 ones */
    if (l->sample_off[k] < l->n16) atomic_fetch_add(&m->utts16, 1);
  atomic_fetch_add(&m->utts, (unsigned)l->count);
  c->sum = mock_sum(c, m->capacity);
  c->state = 1;
  unsigned f = atomic_fetch_add(&m->in_flight, 1) + 1;
  unsigned mx = atomic_load(&m->max_in_flight);
  while (f > mx && !atomic_compare_exchange_weak(&m->max_in_flight, &mx, f)) {}
  m->queue[m->qtail++ % 64] = chunk;
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
  return 0;
}

static int mock_finish(void *state, unsigned chunk, const void **out) {
  stage_mock *m = state;
  unsigned n = atomic_fetch_add(&m->finishes, 1) + 1;
  mock_chunk *c = &m->c[chunk];
  *out = NULL;
  pthread_mutex_lock(&m->mu);
  if (c->state == 0) { /* never launched */
    atomic_fetch_add(&m->violations, 1);
    pthread_mutex_unlock(&m->mu);
    return EINVAL;
  }
  while (c->state != 2) pthread_cond_wait(&m->cv, &m->mu);
  c->state = 0;
  atomic_fetch_sub(&m->in_flight, 1);
  int rc = c->rc;
  if (!rc && n == m->fail_finish) rc = FC_ECUDA;
  if (rc) {
    m->sticky = 1;
    atomic_fetch_add(&m->failed_utts, (unsigned)c->count);
  }
  pthread_mutex_unlock(&m->mu);
  memset(c->staging, 0xff, sizeof(float) * m->capacity); /* the samples are used up */
  if (!rc) *out = c->out;
  return rc;
}

/* The ring's life as the pipeline reports it (under its ring lock). */
static void mock_stage_event(void *state, unsigned chunk, int what) {
  stage_mock *m = state;
  pthread_mutex_lock(&m->mu);
  mock_chunk *c = chunk < MOCK_MAX_CHUNKS ? &m->c[chunk] : NULL;
  int ok = c && chunk < atomic_load(&m->made);
  if (ok && what == FZ_STAGE_OPENED) {
    /* early: once the use before is finished (or its launch failed) */
    ok = c->life == 0 || (m->early && c->life == 2 && c->launched && c->state == 0);
    if (c->held) atomic_fetch_add(&m->early_opens, 1);
    c->life = 1;
    c->launched = 0;
    atomic_fetch_add(&m->opened, 1);
  } else if (ok && what == FZ_STAGE_SEALED) {
    ok = c->life == 1 && c->state == 0; /* not in flight: its previous use was finished */
    c->life = 2;
    atomic_fetch_add(&m->sealed, 1);
  } else if (ok && what == FZ_STAGE_RELEASED) {
    /* finished (a launch that failed leaves it idle too); early: perhaps opened again since */
    ok = c->held && c->state == 0 && (c->life == 2 || m->early);
    if (c->life == 2 && c->launched) c->life = 0;
    c->held = 0;
    atomic_fetch_add(&m->released, 1);
  } else {
    ok = 0;
  }
  pthread_mutex_unlock(&m->mu);
  if (!ok) atomic_fetch_add(&m->violations, 1);
}

static const fc_fz_backend mock_backend = {.name = "cpu-staging-mock",
                                           .producer = FC_PRODUCER_CUDA,
                                           .open = mock_open,
                                           .close = mock_close,
                                           .stage_info = mock_stage_info,
                                           .stage_buffer = mock_stage_buffer,
                                           .launch = mock_launch,
                                           .finish = mock_finish,
                                           .stage_event = mock_stage_event};

#endif
