/* The staging ring of a staging backend (a GPU; featurize_backend.h, docs/featurize.md
 * "Pipeline"). Three kinds of thread share it:
 *
 *   workers (fz_stage_put): reserve room for their utterance in the chunk being filled and write
 *     its samples straight into the backend's staging buffer (int16 from the chunk's start, as they
 *     are in a 16-bit file at the config's rate; decoded floats from its end), then go on to the
 *     next file. A worker
 *     that finds the chunk too full for its utterance seals it and moves to the next chunk of the
 *     ring; it waits only when every chunk is sealed or in flight (the memory bound);
 *   the launch thread (fz_launch_main): launches sealed chunks in ring order once their writers are
 *     done, and seals the filling chunk when the oldest of its utterances has waited the launch
 *     deadline while fewer than two chunks are in flight (the device would otherwise go idle), or
 *     when no worker is left to add to it. A launch returns at once: chunk k + 1 fills and uploads
 *     while chunk k computes;
 *   the completion thread (fz_complete_main): waits for the launched chunks in order, copies each
 *     utterance's features into its record, finishes the record (header, checksum) and queues it
 *     for the writer, then gives the chunk back to the workers.
 *
 * A chunk's life: FREE -> FILLING (reservations) -> SEALED (no more; writes may be in progress) ->
 * LAUNCHING -> LAUNCHED -> FREE. fill_seq >= launch_seq >= done_seq count the chunks sealed,
 * launched and completed; chunk number seq % chunks is the seq-th use of the ring. */
#include "featcache/fc_format.h"
#include "libcache/featurize/featurize_int.h"
#include "formats/why.h"
#include "formats/alloc.h"

#include <errno.h>
#include <stdlib.h>

enum { FZ_FREE, FZ_FILLING, FZ_SEALED, FZ_LAUNCHING, FZ_LAUNCHED };

struct fz_chunk {
  int state;
  void *staging; /* the backend's, ring.capacity * 4 bytes */
  size_t count, n16, nf; /* utterances; int16 and float samples reserved */
  uint64_t frames;
  unsigned writing; /* reservations whose samples are still being written */
  double opened; /* when its first utterance was reserved (the deadline's start) */
  int rc; /* the launch's result */
  /* Per utterance, in reservation order (= launch order = output order): */
  fz_job **jobs;
  uint64_t
      *off; /* within its region: int16 index from the start, or floats before it from the end */
  uint64_t *len;
  uint64_t *sample_off; /* in the launch's float sequence (fc_fz_launch), built at launch */
  unsigned char *i16;
};

static fz_chunk *chunk_at(fz_run *r, uint64_t seq) { return &r->chunks[seq % r->ring.chunks]; }

int fz_stage_init(fz_run *r) {
  const size_t k = r->ring.chunks, u = r->ring.max_utts;
  if (!(r->chunks = fc_calloc(k, sizeof *r->chunks))) return ENOMEM;
  for (size_t i = 0; i < k; i++) {
    fz_chunk *c = &r->chunks[i];
    c->staging = r->be->stage_buffer(r->be_state, (unsigned)i);
    c->jobs = fc_calloc(u, sizeof *c->jobs);
    c->off = fc_calloc(u, sizeof *c->off);
    c->len = fc_calloc(u, sizeof *c->len);
    c->sample_off = fc_calloc(u, sizeof *c->sample_off);
    c->i16 = fc_calloc(u, 1);
    if (!c->staging) return EINVAL;
    if (!c->jobs || !c->off || !c->len || !c->sample_off || !c->i16) return ENOMEM;
  }
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

static void seal(fz_run *r, fz_chunk *c) {
  c->state = FZ_SEALED;
  r->fill_seq++;
  pthread_cond_signal(&r->bcv_launch);
}

void fz_stage_put(fz_run *r, fz_job *j, const void *x, size_t n, int i16, fz_times *tm) {
  double t0 = fz_cpu_now(), waited = 0;
  fz_chunk *c;
  pthread_mutex_lock(&r->bmu);
  for (;;) {
    c = chunk_at(r, r->fill_seq);
    if (c->state == FZ_FREE) {
      c->state = FZ_FILLING;
      c->count = c->n16 = c->nf = 0;
      c->frames = 0;
      c->rc = 0;
      c->opened = fz_now();
      pthread_cond_signal(&r->bcv_launch); /* its deadline starts */
    }
    if (c->state == FZ_FILLING) {
      if (c->count < r->ring.max_utts && c->n16 + c->nf + n <= r->ring.capacity &&
          c->frames + j->frames <= r->ring.max_frames)
        break;
      seal(r, c); /* full for this one: it goes to the next chunk */
      continue;
    }
    double tw = fz_now(); /* every chunk sealed or in flight */
    pthread_cond_wait(&r->bcv_space, &r->bmu);
    waited += fz_now() - tw;
  }
  const size_t k = c->count++;
  c->jobs[k] = j;
  c->len[k] = n;
  c->i16[k] = (unsigned char)i16;
  c->off[k] = i16 ? c->n16 : c->nf;
  if (i16)
    c->n16 += n;
  else
    c->nf += n;
  c->frames += j->frames;
  c->writing++;
  pthread_mutex_unlock(&r->bmu);

  if (i16)
    memcpy((int16_t *)c->staging + c->off[k], x, n * sizeof(int16_t));
  else
    memcpy((float *)c->staging + (r->ring.capacity - c->off[k] - n), x, n * sizeof(float));

  pthread_mutex_lock(&r->bmu);
  if (--c->writing == 0) pthread_cond_signal(&r->bcv_launch);
  pthread_mutex_unlock(&r->bmu);
  tm->queue_wait += waited;
  tm->staging += fz_cpu_now() - t0;
}

/* The launch thread. */
void *fz_launch_main(void *arg) {
  fz_run *r = arg;
  const double deadline = r->ring.launch_wait > 0 ? r->ring.launch_wait : 0.002;
  pthread_mutex_lock(&r->bmu);
  for (;;) {
    fz_chunk *c = chunk_at(r, r->launch_seq);
    if (r->launch_seq < r->fill_seq) { /* sealed: launch once its samples are written */
      if (c->writing) {
        pthread_cond_wait(&r->bcv_launch, &r->bmu);
        continue;
      }
      for (size_t k = 0; k < c->count; k++) /* int16 converted first, then the floats */
        c->sample_off[k] = c->i16[k] ? c->off[k] : c->n16 + (c->nf - c->off[k] - c->len[k]);
      fc_fz_launch l = {.count = c->count,
                        .sample_off = c->sample_off,
                        .len = c->len,
                        .n16 = c->n16,
                        .nf = c->nf,
                        .frames = c->frames,
                        .dtype = r->cfg->dtype};
      c->state = FZ_LAUNCHING;
      const unsigned index = (unsigned)(r->launch_seq % r->ring.chunks);
      r->launch_seq++;
      if (r->in_flight++ == 0) r->busy_since = fz_now();
      pthread_mutex_unlock(&r->bmu);
      int rc = r->be->launch(r->be_state, index, &l);
      pthread_mutex_lock(&r->bmu);
      c->rc = rc;
      c->state = FZ_LAUNCHED;
      pthread_cond_signal(&r->bcv_done);
      continue;
    }
    if (c->state == FZ_FILLING) { /* the chunk being filled */
      double due = c->opened + deadline;
      if (r->submitters_left == 0 || (r->in_flight < 2 && fz_now() >= due)) {
        seal(r, c);
        continue;
      }
      if (r->in_flight < 2) {
        struct timespec ts = fz_deadline(due - fz_now());
        pthread_cond_timedwait(&r->bcv_launch, &r->bmu, &ts);
      } else { /* the device has work queued: let the chunk fill until a launch completes */
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

/* A completed chunk's utterances: features into their records (rc 0) or each failed with a line;
 * the finished records are queued for the writer. Returns the seconds waited on the writer. */
static double complete(fz_run *r, fz_chunk *c, int rc, const void *out) {
  double waited = 0;
  const size_t row_bytes = r->dsize * r->cfg->n_mels;
  uint64_t frame = 0;
  for (size_t k = 0; k < c->count; k++) {
    fz_job *j = c->jobs[k];
    c->jobs[k] = NULL;
    const uint64_t frames = j->frames;
    frame += frames;
    if (rc) {
      char why[320];
      fc_why(why, sizeof why, "feature computation failed: %s", fc_strerror(rc));
      size_t index = j->index;
      fz_job_free(j);
      fz_report_failed(r, index, rc, why);
      continue;
    }
    uint8_t *pl = j->record + FC_RECORD_HEADER_SIZE;
    size_t payload = j->record_len - FC_RECORD_HEADER_SIZE;
    memcpy(pl, (const uint8_t *)out + (frame - frames) * row_bytes, payload);
    fc_record_header h = {.dtype = (uint8_t)r->cfg->dtype,
                          .ndim = 2,
                          .dim0 = (uint32_t)frames,
                          .dim1 = r->cfg->n_mels,
                          .payload_bytes = payload,
                          .payload_hash = fc_hash64(pl, payload),
                          .config = r->cfg_digest,
                          .flags = 0,
                          .producer = r->be->producer};
    fc_record_header_encode(&h, j->record);
    int qrc = fz_queue_push(r, j, &waited);
    if (qrc) {
      size_t index = j->index;
      fz_job_free(j);
      fz_report_unstored(r, index, qrc);
    }
  }
  return waited;
}

/* The completion thread: the writer's last producer. */
void *fz_complete_main(void *arg) {
  fz_run *r = arg;
  pthread_mutex_lock(&r->bmu);
  for (;;) {
    if (r->done_seq < r->launch_seq) {
      fz_chunk *c = chunk_at(r, r->done_seq);
      if (c->state != FZ_LAUNCHED) { /* its launch call has not returned yet */
        pthread_cond_wait(&r->bcv_done, &r->bmu);
        continue;
      }
      const unsigned index = (unsigned)(r->done_seq % r->ring.chunks);
      int rc = c->rc;
      pthread_mutex_unlock(&r->bmu);
      const void *out = NULL;
      if (!rc) rc = r->be->finish(r->be_state, index, &out);
      double waited = complete(r, c, rc, out);
      pthread_mutex_lock(&r->bmu);
      r->stage_wait += waited;
      r->stage_busy -= waited; /* the device stage's busy time excludes waits on the writer */
      c->state = FZ_FREE;
      c->count = 0;
      r->done_seq++;
      if (--r->in_flight == 0) r->stage_busy += fz_now() - r->busy_since;
      pthread_cond_broadcast(&r->bcv_space);
      pthread_cond_signal(&r->bcv_launch);
      continue;
    }
    if (r->launcher_done) break;
    pthread_cond_wait(&r->bcv_done, &r->bmu);
  }
  pthread_mutex_unlock(&r->bmu);
  pthread_mutex_lock(&r->mu);
  r->producers_left--;
  pthread_cond_broadcast(&r->cv_items);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}
