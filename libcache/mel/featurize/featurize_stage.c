/* The staging ring of a staging backend (a GPU; featurize_backend.h, docs/featurize.md
 * "Pipeline"). Five kinds of thread share it:
 *
 *   workers (fz_stage_put): reserve room for their utterance in the chunk being filled with one
 *     compare-and-swap on the chunk's reservation word (utterances, samples, frames, and a closed
 *     bit: no lock), write its samples straight into the backend's staging buffer (int16 from the
 *     chunk's start, as they are in a 16-bit file at the config's rate; decoded floats from its
 *     end) and go on to the next file. A worker whose utterance does not fit closes the chunk
 *     (seals it) and moves to the next chunk of the ring; it waits only when that chunk is not
 *     free yet (the memory bound). The first utterance of a chunk tells the launch thread that its
 *     deadline runs, and the last write into a sealed chunk tells it the chunk is ready: two
 *     wake-ups per chunk, none per utterance;
 *   the launch thread (fz_launch_main): launches sealed chunks in ring order once their writes are
 *     done, and seals the filling chunk when the oldest of its utterances has waited the launch
 *     deadline while fewer than two chunks are in flight (the device would otherwise go idle), or
 *     when no worker is left to add to it. A launch returns at once: chunk k + 1 fills and uploads
 *     while chunk k computes;
 *   the completion thread (fz_complete_main): waits for the launched chunks in order and hands
 *     each chunk's utterances to the writers at once, their features where the device left them
 *     (the backend's output buffer, pinned memory on CUDA);
 *   the writers (featurize_sink.c): copy each utterance's features from there into the store's
 *     page, checksum them there and commit; the chunk goes back to the ring when its last
 *     utterance's record is in the store's page, before the commit writes it (fc_put_fill's done),
 *     or when it failed: chunk_release, through the jobs' hold. With the
 *     backend's early_refill its staging goes back sooner, once the completion thread handed its
 *     utterances on: the workers fill its next use while the writers read its output, and the
 *     launch thread launches that use only once they are through (out_held);
 *   the grower (fz_grow_main, a backend with stage_grow): makes chunks 1.. while chunk 0 fills,
 *     each opened as soon as it is made (a worker that reached it waits till then).
 *
 * A chunk's life: (UNMADE ->) FREE -> FILLING (reservations) -> SEALED (closed; writes may be in
 * progress) -> LAUNCHED -> WRITING (with the writers) -> FREE; with early_refill WRITING -> FILLING
 * too (its output still with the writers: out_held). fill_seq >= launch_seq >= done_seq count the
 * uses of the ring filled, launched and completed; use seq is chunk seq % ring_live (the chunks,
 * or the chunks made when the backend could not make them all: fz_grow_main). A chunk is
 * opened (its word zeroed) only for the use fill_seq, under bmu, once it is FREE (or WRITING, with
 * early_refill): by whoever seals the use before it if it is free then, else by chunk_release or
 * the completion thread.
 *
 * The device stage for a staging backend (the CPU's side is featurize_compute.c): called by the
 * source (featurize_source.c), calls down the line only: sink, job (featurize_int.h). */
#include "featcache/fc_format.h"
#include "libcache/mel/featurize/featurize_int.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"
#include "formats/common/thread_name.h"

#include <errno.h>
#include <stdlib.h>

enum { FZ_UNMADE, FZ_FREE, FZ_FILLING, FZ_SEALED, FZ_LAUNCHED, FZ_WRITING };

/* The reservation word: closed | utterances | samples | frames. A chunk's limits are clamped to
 * what the fields hold (fz_stage_init). */
#define W_FRAMES_BITS 25
#define W_SAMPLES_BITS 26
#define W_COUNT_BITS 12
#define W_FRAMES_MAX ((UINT64_C(1) << W_FRAMES_BITS) - 1)
#define W_SAMPLES_MAX ((UINT64_C(1) << W_SAMPLES_BITS) - 1)
#define W_COUNT_MAX ((UINT64_C(1) << W_COUNT_BITS) - 1)
#define W_SAMPLES_SHIFT W_FRAMES_BITS
#define W_COUNT_SHIFT (W_FRAMES_BITS + W_SAMPLES_BITS)
#define W_CLOSED (UINT64_C(1) << 63)

static inline uint64_t w_frames(uint64_t w) { return w & W_FRAMES_MAX; }
static inline uint64_t w_samples(uint64_t w) { return (w >> W_SAMPLES_SHIFT) & W_SAMPLES_MAX; }
static inline uint64_t w_count(uint64_t w) { return (w >> W_COUNT_SHIFT) & W_COUNT_MAX; }

struct fz_chunk {
  fz_run *run;
  _Atomic uint64_t word; /* the reservation word; W_CLOSED while not FILLING */
  atomic_size_t n16, nf; /* int16 and float samples placed (each region's next offset) */
  atomic_uint written; /* reservations whose samples are written */
  _Atomic double opened; /* when its first utterance was reserved (0: none yet): the deadline */
  fz_hold hold; /* its jobs, while they are with the writers */
  /* under bmu */
  int state;
  int out_held; /* its output is with the writers: of the use launched last, which may be the one
                   before the use filling it now */
  uint64_t seq; /* the use of the ring it holds */
  uint64_t sealed; /* its word when it was sealed */
  int rc; /* the launch's result */
  /* Its time on the device (from a launch until the completion thread saw it done), summed over
   * its uses, and when the use on the device now was launched: what held a worker waiting for it
   * (device_clock). */
  double on_device, launched;
  int launched_now;
  void *staging; /* the backend's, ring.capacity * 4 bytes */
  /* Per utterance, in reservation order (= launch order = output order): */
  fz_job **jobs;
  uint64_t *off; /* within its region: int16 from the start, or floats before it from the end */
  uint64_t *len;
  uint64_t *sample_off; /* in the launch's float sequence (fc_fz_launch), built at launch */
  unsigned char *i16;
};

/* The chunk of use seq, and its number for the backend. */
static unsigned chunk_index(fz_run *r, uint64_t seq) {
  return (unsigned)(seq % atomic_load(&r->ring_live));
}
static fz_chunk *chunk_at(fz_run *r, uint64_t seq) { return &r->chunks[chunk_index(r, seq)]; }

static void chunk_release(fz_hold *h);

/* Chunk c's time on the device up to `now` (under bmu): of a worker's wait for c, the difference
 * at its end and its start is the part c was on the device, whatever uses of c came and went
 * meanwhile. The rest of the wait the writers held c (its output being copied and committed; with
 * early refill, its launch waiting for them), or, at the start, the grower. */
static double device_clock(const fz_chunk *c, double now) {
  return c->on_device + (c->launched_now ? now - c->launched : 0);
}

/* The backend's stage_event, where it has one (a trace). Under bmu, or before the threads start. */
static void stage_event(fz_run *r, fz_chunk *c, int what) {
  if (r->be->stage_event) r->be->stage_event(r->be_state, (unsigned)(c - r->chunks), what);
}

int fz_stage_init(fz_run *r) {
  /* What a chunk can count (the reservation word) bounds the backend's limits. */
  if (r->ring.capacity > W_SAMPLES_MAX) r->ring.capacity = W_SAMPLES_MAX;
  if (r->ring.max_frames > W_FRAMES_MAX) r->ring.max_frames = W_FRAMES_MAX;
  if (r->ring.max_utts > W_COUNT_MAX) r->ring.max_utts = W_COUNT_MAX;
  const size_t k = r->ring.chunks, u = r->ring.max_utts;
  /* A backend that makes its chunks as the ring fills (stage_grow) has made chunk 0 only. */
  const int grow = r->be->stage_grow != NULL;
  atomic_init(&r->fill_seq, 0);
  atomic_init(&r->ring_live, r->ring.chunks);
  r->made = grow ? 1 : r->ring.chunks;
  if (!(r->chunks = fc_calloc(k, sizeof *r->chunks))) return ENOMEM;
  for (size_t i = 0; i < k; i++) {
    fz_chunk *c = &r->chunks[i];
    c->run = r;
    atomic_init(&c->word, W_CLOSED);
    atomic_init(&c->n16, 0);
    atomic_init(&c->nf, 0);
    atomic_init(&c->written, 0);
    atomic_init(&c->opened, 0.0);
    atomic_init(&c->hold.refs, 0);
    c->hold.release = chunk_release;
    c->state = i < r->made ? FZ_FREE : FZ_UNMADE;
    c->seq = i; /* its first use */
    c->staging = i < r->made ? r->be->stage_buffer(r->be_state, (unsigned)i) : NULL;
    c->jobs = fc_calloc(u, sizeof *c->jobs);
    c->off = fc_calloc(u, sizeof *c->off);
    c->len = fc_calloc(u, sizeof *c->len);
    c->sample_off = fc_calloc(u, sizeof *c->sample_off);
    c->i16 = fc_calloc(u, 1);
    if (!c->staging && i < r->made) return EINVAL;
    if (!c->jobs || !c->off || !c->len || !c->sample_off || !c->i16) return ENOMEM;
  }
  /* The first use: open before any worker starts. */
  fz_chunk *c = &r->chunks[0];
  c->state = FZ_FILLING;
  atomic_store(&c->word, 0);
  stage_event(r, c, FZ_STAGE_OPENED);
  return 0;
}

void fz_stage_free(fz_run *r) {
  if (!r->chunks) return;
  for (unsigned i = 0; i < r->ring.chunks; i++) {
    fz_chunk *c = &r->chunks[i];
    free(c->jobs);
    free(c->off);
    free(c->len);
    free(c->sample_off);
    free(c->i16);
  }
  free(r->chunks);
  r->chunks = NULL;
}

/* Open chunk c for the use fill_seq if it is that use's chunk and free. Under bmu. */
static void open_if_free(fz_run *r, fz_chunk *c) {
  const uint64_t seq = atomic_load(&r->fill_seq);
  if (c != chunk_at(r, seq) ||
      !(c->state == FZ_FREE || (c->state == FZ_WRITING && r->ring.early_refill)))
    return;
  c->state = FZ_FILLING;
  c->seq = seq;
  c->rc = 0;
  atomic_store(&c->n16, 0);
  atomic_store(&c->nf, 0);
  atomic_store(&c->written, 0);
  atomic_store(&c->opened, 0.0);
  atomic_store(&c->word, 0); /* reservations may start */
  stage_event(r, c, FZ_STAGE_OPENED);
  pthread_cond_broadcast(&r->bcv_space);
}

/* The chunk of use seq has just been closed (its word W_CLOSED, by the caller's compare-and-swap:
 * exactly one caller per use): seal it, move filling on to the next use, open that one if it is
 * free, and tell the launch thread. Under bmu. */
static void sealed_locked(fz_run *r, fz_chunk *c, uint64_t word) {
  c->state = FZ_SEALED;
  c->sealed = word;
  stage_event(r, c, FZ_STAGE_SEALED);
  atomic_store(&r->fill_seq, c->seq + 1);
  open_if_free(r, chunk_at(r, c->seq + 1));
  pthread_cond_signal(&r->bcv_launch);
}

/* Close the chunk of use seq (word w as last seen) if nobody else has: returns 1 when this caller
 * closed it (and sealed it), 0 when the word moved (look again). Under bmu when locked. */
static int close_chunk(fz_run *r, fz_chunk *c, uint64_t w, int locked) {
  if (!atomic_compare_exchange_strong(&c->word, &w, w | W_CLOSED)) return 0;
  if (!locked) pthread_mutex_lock(&r->bmu);
  sealed_locked(r, c, w);
  if (!locked) pthread_mutex_unlock(&r->bmu);
  return 1;
}

int fz_stage_fits(const fz_run *r, size_t n) {
  return n <= r->ring.capacity && fc_mel_num_frames(r->cfg, n) <= r->ring.max_frames;
}

void fz_stage_submitter_done(fz_run *r) {
  pthread_mutex_lock(&r->bmu);
  r->submitters_left--;
  pthread_cond_signal(&r->bcv_launch); /* the filling chunk may have no one left to fill it */
  pthread_mutex_unlock(&r->bmu);
}

void *fz_stage_reserve(fz_run *r, size_t n, uint64_t frames, int i16, fz_slot *slot, fz_times *tm) {
  const uint64_t add = (UINT64_C(1) << W_COUNT_SHIFT) | ((uint64_t)n << W_SAMPLES_SHIFT) | frames;
  fz_chunk *c;
  uint64_t w;
  for (;;) {
    const uint64_t seq = atomic_load(&r->fill_seq);
    c = chunk_at(r, seq);
    w = atomic_load(&c->word);
    if (w & W_CLOSED) { /* sealed and not yet moved on, or the next use's chunk is not free (or
                           not made yet) */
      pthread_mutex_lock(&r->bmu);
      fz_chunk *b = chunk_at(r, seq);
      if (atomic_load(&r->fill_seq) == seq && (atomic_load(&b->word) & W_CLOSED)) {
        const double tw = fz_now(); /* the ring is full: every chunk sealed, in flight or writing */
        const double dw = device_clock(b, tw);
        pthread_cond_wait(&r->bcv_space, &r->bmu);
        const double now = fz_now();
        tm->queue_wait += now - tw;
        tm->device_wait += device_clock(b, now) - dw;
      }
      pthread_mutex_unlock(&r->bmu);
      continue;
    }
    if (w_count(w) + 1 > r->ring.max_utts || w_samples(w) + n > r->ring.capacity ||
        w_frames(w) + frames > r->ring.max_frames) {
      close_chunk(r, c, w, 0); /* full for this one (never empty: it fits an empty chunk) */
      continue;
    }
    if (atomic_compare_exchange_weak(&c->word, &w, w + add)) break;
  }
  const size_t k = (size_t)w_count(w);
  c->jobs[k] = NULL;
  c->len[k] = n;
  c->i16[k] = (unsigned char)i16;
  const size_t off = atomic_fetch_add(i16 ? &c->n16 : &c->nf, n);
  c->off[k] = off;
  if (k == 0) { /* the chunk's deadline starts: the launch thread may be waiting for it */
    atomic_store(&c->opened, fz_now());
    pthread_mutex_lock(&r->bmu);
    pthread_cond_signal(&r->bcv_launch);
    pthread_mutex_unlock(&r->bmu);
  }
  slot->chunk = c;
  slot->k = k;
  /* The reservation makes room for n samples in each region: n16 + nf stays within capacity, so
   * int16 from the start and floats from the end never meet. */
  if (i16) return (int16_t *)c->staging + off;
  return (float *)c->staging + (r->ring.capacity - off - n);
}

void fz_stage_commit(fz_run *r, const fz_slot *slot, fz_job *j) {
  fz_chunk *c = slot->chunk;
  c->jobs[slot->k] = j;
  const unsigned done = atomic_fetch_add(&c->written, 1) + 1;
  const uint64_t now = atomic_load(&c->word);
  if ((now & W_CLOSED) && done == w_count(now)) { /* the last write into a sealed chunk */
    pthread_mutex_lock(&r->bmu);
    pthread_cond_signal(&r->bcv_launch);
    pthread_mutex_unlock(&r->bmu);
  }
}

void fz_stage_put(fz_run *r, fz_job *j, const void *x, size_t n, int i16, fz_times *tm) {
  const double t0 = fz_cpu_now();
  fz_slot slot;
  void *dst = fz_stage_reserve(r, n, j->frames, i16, &slot, tm);
  memcpy(dst, x, n * (i16 ? sizeof(int16_t) : sizeof(float)));
  fz_stage_commit(r, &slot, j);
  tm->staging += fz_cpu_now() - t0;
}

/* The launch thread. */
void *fz_launch_main(void *arg) {
  fz_run *r = arg;
  fc_thread_name("launch", -1);
  const double deadline = r->ring.launch_wait > 0 ? r->ring.launch_wait : 0.002;
  pthread_mutex_lock(&r->bmu);
  for (;;) {
    const uint64_t fill = atomic_load(&r->fill_seq);
    if (r->launch_seq < fill) { /* sealed: launch once its samples are written */
      fz_chunk *c = chunk_at(r, r->launch_seq);
      const uint64_t count = w_count(c->sealed);
      if (atomic_load(&c->written) < count || c->out_held) { /* its writes, or the writers of
                                                               its use before, not done */
        pthread_cond_wait(&r->bcv_launch, &r->bmu);
        continue;
      }
      const size_t n16 = atomic_load(&c->n16), nf = atomic_load(&c->nf);
      for (size_t k = 0; k < count; k++) /* int16 converted first, then the floats */
        c->sample_off[k] = c->i16[k] ? c->off[k] : n16 + (nf - c->off[k] - c->len[k]);
      fc_fz_launch l = {.count = count,
                        .sample_off = c->sample_off,
                        .len = c->len,
                        .n16 = n16,
                        .nf = nf,
                        .frames = w_frames(c->sealed),
                        .dtype = r->cfg->dtype};
      const unsigned index = chunk_index(r, r->launch_seq);
      c->launched = fz_now();
      c->launched_now = 1;
      if (r->in_flight++ == 0) r->busy_since = c->launched;
      c->out_held = 1; /* till chunk_release */
      pthread_mutex_unlock(&r->bmu);
      int rc = r->be->launch(r->be_state, index, &l);
      pthread_mutex_lock(&r->bmu);
      c->rc = rc;
      c->state = FZ_LAUNCHED;
      r->launch_seq++;
      pthread_cond_signal(&r->bcv_done);
      continue;
    }
    fz_chunk *c = chunk_at(r, fill);
    const uint64_t w = atomic_load(&c->word);
    if (!(w & W_CLOSED) && w_count(w) > 0) { /* the chunk being filled holds utterances */
      const double opened = atomic_load(&c->opened);
      const int due = opened > 0 && r->in_flight < 2 && fz_now() >= opened + deadline;
      if (r->submitters_left == 0 || due) {
        close_chunk(r, c, w, 1);
        continue;
      }
      if (opened > 0 && r->in_flight < 2) {
        struct timespec ts = fz_deadline(opened + deadline - fz_now());
        pthread_cond_timedwait(&r->bcv_launch, &r->bmu, &ts);
      } else { /* its first utterance is being placed, or the device has work queued: let the
                  chunk fill until told */
        pthread_cond_wait(&r->bcv_launch, &r->bmu);
      }
      continue;
    }
    if (r->submitters_left == 0) break; /* nothing filling, nobody left to fill */
    pthread_cond_wait(&r->bcv_launch, &r->bmu);
  }
  r->launcher_done = 1;
  pthread_cond_signal(&r->bcv_done);
  pthread_mutex_unlock(&r->bmu);
  return NULL;
}

/* The last job of a chunk is through the writers (or failed): the chunk goes back to the ring. */
static void chunk_release(fz_hold *h) {
  fz_chunk *c = (fz_chunk *)(void *)((char *)h - offsetof(fz_chunk, hold));
  fz_run *r = c->run;
  pthread_mutex_lock(&r->bmu);
  c->out_held = 0;
  if (c->state == FZ_WRITING) c->state = FZ_FREE; /* else being filled again, or completing */
  stage_event(r, c, FZ_STAGE_RELEASED);
  open_if_free(r, c);
  if (r->ring.early_refill) /* the launch thread may be waiting to launch the chunk's next use */
    pthread_cond_signal(&r->bcv_launch);
  pthread_mutex_unlock(&r->bmu);
}

/* A completed chunk's utterances: to the writers with their features in the backend's output
 * (rc 0), or each failed with a line. A reservation given up (no job: its worker found the record
 * stored, or could not read the file) only takes its place in the output. */
static void complete(fz_run *r, fz_chunk *c, size_t count, int rc, const void *out) {
  const size_t row_bytes = r->dsize * r->cfg->n_mels;
  size_t held = 0;
  uint64_t frame = 0;
  for (size_t k = 0; k < count; k++) {
    fz_job *j = c->jobs[k];
    if (!j) {
      frame += fc_mel_num_frames(r->cfg, c->len[k]);
      continue;
    }
    j->hold = &c->hold;
    j->feat = (const uint8_t *)out + frame * row_bytes;
    j->feat_len = (size_t)j->frames * row_bytes;
    frame += j->frames;
    c->jobs[held++] = j; /* the jobs, packed */
  }
  if (!held) { /* nothing to write: the chunk goes back to the ring now */
    chunk_release(&c->hold);
    return;
  }
  atomic_store(&c->hold.refs, (unsigned)held);
  if (!rc) {
    /* features past f16's range (a linear mel of loud audio): that input fails, with its record */
    size_t good = 0;
    for (size_t k = 0; k < held; k++) {
      fz_job *j = c->jobs[k];
      char why[320];
      const size_t nvals = (size_t)j->frames * r->cfg->n_mels;
      if (fz_f16_overflow(r->cfg, j->feat, nvals, why, sizeof why) < nvals) {
        fz_input_failed(r, j->index, ERANGE, why); /* while the job holds its item */
        fz_job_free(j); /* the last one gives the chunk back */
        continue;
      }
      c->jobs[good++] = j;
    }
    if (good) fz_queue_push_staged(r, c->jobs, good);
    return;
  }
  char why[320];
  fc_why(why, sizeof why, "feature computation failed: %s", fc_strerror(rc));
  for (size_t k = 0; k < held; k++) {
    fz_job *j = c->jobs[k];
    fz_report_failed(r, j->index, rc, why); /* while the job holds its item */
    fz_job_free(j); /* the last one gives the chunk back */
  }
}

/* The completion thread: the writers' last producer. */
void *fz_complete_main(void *arg) {
  fz_run *r = arg;
  fc_thread_name("complete", -1);
  pthread_mutex_lock(&r->bmu);
  for (;;) {
    if (r->done_seq < r->launch_seq) {
      fz_chunk *c = chunk_at(r, r->done_seq);
      const unsigned index = chunk_index(r, r->done_seq);
      const size_t count = (size_t)w_count(c->sealed);
      int rc = c->rc;
      r->done_seq++;
      pthread_mutex_unlock(&r->bmu);
      const void *out = NULL;
      if (!rc) rc = r->be->finish(r->be_state, index, &out);
      pthread_mutex_lock(&r->bmu);
      const double done = fz_now();
      c->on_device += done - c->launched;
      c->launched_now = 0;
      if (--r->in_flight == 0) r->stage_busy += done - r->busy_since;
      if (r->in_flight == 1) /* down from two: the filling chunk's deadline counts again */
        pthread_cond_signal(&r->bcv_launch);
      pthread_mutex_unlock(&r->bmu);
      complete(r, c, count, rc, out);
      pthread_mutex_lock(&r->bmu);
      /* Its staging and its per-utterance arrays are used up: the next use may fill them while
       * the writers still read its output (launched only once they are through). */
      c->state = c->out_held ? FZ_WRITING : FZ_FREE;
      open_if_free(r, c);
      continue;
    }
    if (r->launcher_done) break;
    pthread_cond_wait(&r->bcv_done, &r->bmu);
  }
  pthread_mutex_unlock(&r->bmu);
  fz_queue_producer_done(r);
  return NULL;
}

/* ---- the ring made as it fills ------------------------------------------------------------------ */
int fz_stage_growing(const fz_run *r) { return r->batching && r->made < r->ring.chunks; }

/* The grower thread: chunks 1.. of a backend with stage_grow, one at a time, each opened for its
 * first use as soon as it is made (workers may be waiting for it). One the backend cannot make
 * leaves the ring at the chunks made: use k, the first on the missing chunk, goes round to chunk
 * 0 (every use before it lies on the same chunk either way, seq < k, and none after it was opened:
 * its chunk was never free), and so on. It stops when no worker is left to fill a new chunk. */
void *fz_grow_main(void *arg) {
  fz_run *r = arg;
  fc_thread_name("grow", -1);
  pthread_mutex_lock(&r->bmu);
  while (r->made < atomic_load(&r->ring_live) && r->submitters_left > 0) {
    const unsigned k = r->made;
    pthread_mutex_unlock(&r->bmu);
    const double t0 = fz_cpu_now();
    void *buf = NULL;
    if (r->be->stage_grow(r->be_state, k) == 0) buf = r->be->stage_buffer(r->be_state, k);
    const double took = fz_cpu_now() - t0;
    pthread_mutex_lock(&r->bmu);
    r->grow_seconds += took;
    if (!buf) {
      atomic_store(&r->ring_live, k);
      open_if_free(r, chunk_at(r, atomic_load(&r->fill_seq)));
      pthread_cond_broadcast(&r->bcv_space); /* waiting on the missing chunk: look again */
      break;
    }
    fz_chunk *c = &r->chunks[k];
    c->staging = buf;
    c->state = FZ_FREE;
    r->made = k + 1;
    open_if_free(r, c);
  }
  pthread_mutex_unlock(&r->bmu);
  return NULL;
}
