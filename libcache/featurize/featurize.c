/* The featurize pipeline (fc_featurize.h, docs/featurize.md).
 *
 *   workers (jobs threads): take the next item, read the file once, hash it, look the key and the
 *     id's audio entry up in a short read transaction, decode + mono + resample, compute on the
 *     backend (one plan per worker), convert to the dtype straight into the record buffer;
 *   a bounded queue (queue_records / queue_bytes): workers block when it is full;
 *   the writer (the calling thread): takes records from the queue into a batch and commits it
 *     when it reaches batch_records or batch_bytes or is batch_seconds old, or the work is done.
 *     Each utterance's feat record and audio entry are in the same transaction, and so is
 *     meta cfg/<hex> (NOOVERWRITE: a no-op once stored), so no record exists without its config.
 *
 * Why workers do both decode and compute: the CPU backend's cost per utterance is dominated by
 * the FFTs, and a worker that keeps its samples in cache from decode to mel is faster than a
 * hand-off; a batching backend (CUDA) gathers calls from the workers itself.
 *
 * Read transactions are short (begin, two gets, end) and never held across a blocking call: a
 * writer that must grow the map waits for readers of this process to finish theirs. */
#include "featcache/fc_featurize.h"

#include "featcache/fc_audio.h"
#include "featcache/fc_format.h"
#include "kernels/cuda/mel_kernels.h"
#include "libcache/featurize/featurize_backend.h"
#include "formats/why.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct timespec deadline(double seconds_from_now) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double whole = (double)(long)seconds_from_now;
  ts.tv_sec += (time_t)whole;
  ts.tv_nsec += (long)((seconds_from_now - whole) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* A user-facing reason for an error without a more specific one. */
static const char *plain_reason(int err) {
  switch (err) {
  case FC_EEMPTY: return "empty file";
  case FC_ETOOLONG: return "longer than the limit";
  case FC_EDECODE: return "cannot decode";
  default: break;
  }
  if (err > 0) return strerror(err);
  return fc_strerror(err);
}

/* ---- one file → one float mel ------------------------------------------------------------------ */
int fc_featurize_memory(fc_mel_plan *plan, const void *bytes, size_t len, double max_seconds,
                        float **mel, uint64_t *frames, char *why, size_t why_len) {
  *mel = NULL;
  *frames = 0;
  if (why && why_len) why[0] = '\0';
  const fc_mel_config *cfg = fc_mel_plan_config(plan);
  float *x = NULL;
  size_t n = 0;
  fc_audio_info info;
  memset(&info, 0, sizeof info);
  int rc = fc_audio_decode(bytes, len, cfg->sample_rate, max_seconds, &x, &n, &info, why, why_len);
  if (rc) {
    if (why && why_len && !why[0]) fc_why(why, why_len, "%s", plain_reason(rc));
    return rc;
  }
  uint64_t nf = fc_mel_num_frames(cfg, n);
  if (nf == 0) {
    free(x);
    fc_why(why, why_len, "too short: %zu samples give no frames", n);
    return FC_EEMPTY;
  }
  if (nf > SIZE_MAX / sizeof(float) / cfg->n_mels) {
    free(x);
    fc_why(why, why_len, "too long for this machine");
    return ENOMEM;
  }
  float *out = malloc((size_t)nf * cfg->n_mels * sizeof *out);
  if (!out) {
    free(x);
    fc_why(why, why_len, "out of memory");
    return ENOMEM;
  }
  rc = fc_mel_compute(plan, x, n, out);
  free(x);
  if (rc) {
    free(out);
    fc_why(why, why_len, "%s", plain_reason(rc));
    return rc;
  }
  *mel = out;
  *frames = nf;
  return 0;
}

int fc_featurize_file(fc_mel_plan *plan, const char *path, double max_seconds, float **mel,
                      uint64_t *frames, char *why, size_t why_len) {
  *mel = NULL;
  *frames = 0;
  void *bytes = NULL;
  size_t len = 0;
  fc_audio_info info;
  int rc = fc_audio_read_file(path, 0, &bytes, &len, &info);
  if (rc) {
    fc_why(why, why_len, "%s", plain_reason(rc));
    return rc;
  }
  rc = fc_featurize_memory(plan, bytes, len, max_seconds, mel, frames, why, why_len);
  free(bytes);
  return rc;
}

/* ---- the pipeline ------------------------------------------------------------------------------ */
void fc_featurize_opts_init(fc_featurize_opts *o) {
  memset(o, 0, sizeof *o);
  o->jobs = 1;
  o->device.kind = FC_DEVICE_AUTO;
}

typedef struct fz_job {
  struct fz_job *next;
  size_t index;
  fc_digest key;
  uint8_t *record; /* NULL: the record is stored already, only the audio entry is new */
  size_t record_len;
  uint8_t *entry;
  size_t entry_len;
  uint64_t frames;
  double seconds;
  /* Waiting for the compute stage (batching backends): the samples (owned; x, or x16 when they
   * are exactly 16-bit PCM), when submitted. */
  float *x;
  int16_t *x16;
  size_t n;
  double submitted;
} fz_job;

static size_t job_bytes(const fz_job *j) { return j->record_len + j->entry_len + sizeof *j; }

static void job_free(fz_job *j) {
  if (!j) return;
  free(j->x);
  free(j->x16);
  free(j->record);
  free(j->entry);
  free(j);
}

typedef struct fz_run {
  fc_store *s;
  const fc_mel_config *cfg;
  fc_digest cfg_digest;
  char cfg_key[37];
  char cfg_json[1024];
  size_t cfg_json_len;
  const fc_item *items;
  size_t n;
  fc_featurize_opts o;
  const fc_fz_backend *be;
  void *be_state;
  size_t dsize;

  atomic_size_t next;     /* next item to take */
  atomic_int halt;        /* stop taking items: strict failure or a failed commit */
  atomic_int interrupted; /* a worker saw *stop set with items left */

  pthread_mutex_t mu; /* queue */
  pthread_cond_t cv_space, cv_items;
  fz_job *head, *tail;
  size_t q_count;
  uint64_t q_bytes;
  unsigned producers_left;
  int fatal; /* a commit failed: workers drop what they would queue */

  pthread_mutex_t ev_mu; /* events, stats, progress */
  fc_featurize_stats st;
  int strict_err;
  double t0;
  fc_device_kind device;
  double write_busy, writer_wait; /* the writer's stage times (its own thread) */

  /* The compute stage of a batching backend (be->compute_batch): jobs decoded by the workers wait
   * in `pending` (bounded by pending_max samples; a worker blocks only when it is full) until the
   * stage thread launches them. */
  int batching;
  size_t chunk_samples;    /* be->max_samples: a launch's worth */
  uint64_t pending_max;    /* samples allowed to wait: two launches' worth */
  double launch_wait;      /* seconds the oldest pending job waits for a fuller launch */
  pthread_mutex_t bmu;
  pthread_cond_t bcv_work, bcv_space;
  fz_job *phead, *ptail;
  size_t p_count;
  uint64_t p_samples;
  unsigned submitters_left; /* workers still running */
  double stage_busy;        /* the stage thread's compute time */
  double stage_wait;        /* the stage thread blocked on the writer's full queue */
} fz_run;

/* Busy seconds of one worker's stages (its own: no lock), summed into the stats at the end. */
typedef struct fz_times {
  double read, hash, decode, compute, queue_wait;
} fz_times;

typedef struct fz_worker {
  fz_run *r;
  unsigned index;
  pthread_t thread;
  fz_times t;
  /* CPU plan for utterances the backend refuses as too long (a GPU's staging buffer), made on
   * the first such utterance. */
  fc_mel_plan *fallback;
} fz_worker;

static int stop_requested(const fz_run *r) { return r->o.stop && *r->o.stop; }

static void emit(fz_run *r, fc_featurize_event *ev) {
  const fc_item *it = &r->items[ev->index];
  ev->id = it->id;
  ev->path = it->path;
  ev->line = it->line;
  if (r->o.on_event) r->o.on_event(ev, r->o.user);
}

static void report_failed(fz_run *r, size_t i, int err, const char *reason) {
  fc_featurize_event ev = {.status = FC_ITEM_FAILED, .index = i, .err = err ? err : FC_EDECODE};
  ev.reason = reason && *reason ? reason : plain_reason(ev.err);
  pthread_mutex_lock(&r->ev_mu);
  r->st.failed++;
  emit(r, &ev);
  if (r->o.strict && !r->strict_err) {
    r->strict_err = ev.err;
    atomic_store(&r->halt, 1);
  }
  pthread_mutex_unlock(&r->ev_mu);
}

static void report_skipped(fz_run *r, size_t i) {
  fc_featurize_event ev = {.status = FC_ITEM_SKIPPED, .index = i};
  pthread_mutex_lock(&r->ev_mu);
  r->st.skipped_existing++;
  emit(r, &ev);
  pthread_mutex_unlock(&r->ev_mu);
}

/* Is the record stored, and does the id's audio entry hold this digest? */
static int lookup(fz_run *r, const char *id, const fc_digest *key, const fc_digest *audio,
                  int *have_feat, int *have_entry) {
  *have_feat = *have_entry = 0;
  fc_rtxn *t;
  int rc = fc_store_read_begin(r->s, &t);
  if (rc) return rc;
  rc = fc_rtxn_get(t, FC_DB_FEAT, key->bytes, sizeof key->bytes, NULL, NULL);
  if (rc == 0) *have_feat = 1;
  if (rc == FC_ENOTFOUND) rc = 0;
  if (!rc) {
    const void *v;
    size_t vlen;
    int grc = fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vlen);
    fc_audio_entry e;
    if (grc == 0 && fc_audio_entry_decode(v, vlen, &e) == 0 &&
        memcmp(e.digest.bytes, audio->bytes, sizeof audio->bytes) == 0)
      *have_entry = 1;
    else if (grc != 0 && grc != FC_ENOTFOUND)
      rc = grc;
  }
  fc_rtxn_end(t);
  return rc;
}

/* Hand a job to the writer; blocks while the queue is full (the time goes to *waited). Returns 0,
 * or the writer's error when a commit failed: the job is not queued (the caller reports it). */
static int queue_push(fz_run *r, fz_job *j, double *waited) {
  size_t b = job_bytes(j);
  pthread_mutex_lock(&r->mu);
  if (!r->fatal && r->q_count > 0 &&
      (r->q_count >= r->o.queue_records || r->q_bytes + b > r->o.queue_bytes)) {
    double t = now_s();
    while (!r->fatal && r->q_count > 0 &&
           (r->q_count >= r->o.queue_records || r->q_bytes + b > r->o.queue_bytes))
      pthread_cond_wait(&r->cv_space, &r->mu);
    *waited += now_s() - t;
  }
  if (r->fatal) {
    int rc = r->fatal;
    pthread_mutex_unlock(&r->mu);
    return rc;
  }
  if (r->tail) r->tail->next = j;
  else r->head = j;
  r->tail = j;
  r->q_count++;
  r->q_bytes += b;
  pthread_cond_signal(&r->cv_items);
  pthread_mutex_unlock(&r->mu);
  return 0;
}

/* The reason given for an item computed but never committed because a commit failed. */
static void report_unstored(fz_run *r, size_t i, int err) {
  char why[200];
  fc_why(why, sizeof why, "not stored: a write to the store failed (%s)", fc_strerror(err));
  report_failed(r, i, err, why);
}

/* Features of x on the backend; an utterance the backend refuses as too long for it (the CUDA
 * staging buffer) is computed on the CPU instead, never failed. *producer says which did it. */
static int compute_features(fz_run *r, fz_worker *w, const float *x, size_t n, float *mel,
                            uint32_t *producer) {
  *producer = r->be->producer;
  int rc = r->be->compute ? r->be->compute(r->be_state, w->index, x, n, mel) : FC_ETOOLONG;
  if (rc != FC_ETOOLONG || r->be->producer == FC_PRODUCER_CPU) return rc;
  if (!w->fallback && (rc = fc_mel_plan_create(r->cfg, &w->fallback))) return rc;
  *producer = FC_PRODUCER_CPU;
  return fc_mel_compute(w->fallback, x, n, mel);
}

/* ---- the compute stage of a batching backend ------------------------------------------------- */

/* The samples as 16-bit PCM when they are exactly that (a 16-bit source at the config's rate,
 * mono: v / 32768 as decoded), so that they cross PCIe at half the bytes and are converted on the
 * GPU into the same floats; else NULL (resampled, mixed, or float sources; out of memory). */
static int16_t *to_i16(const float *x, size_t n) {
  int16_t *v = malloc(n * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < n; i++) {
    float t = x[i] * 32768.0f;
    if (!(t >= -32768.0f && t <= 32767.0f)) goto no;
    v[i] = (int16_t)t;
    if (fc_cu_i16_to_f32(v[i]) != x[i]) goto no;
  }
  return v;
no:
  free(v);
  return NULL;
}

/* Hand a decoded job to the compute stage; blocks only while pending_max samples wait already. */
static void submit(fz_run *r, fz_job *j, double *waited) {
  pthread_mutex_lock(&r->bmu);
  if (r->p_count > 0 && r->p_samples + j->n > r->pending_max) {
    double t = now_s();
    while (r->p_count > 0 && r->p_samples + j->n > r->pending_max)
      pthread_cond_wait(&r->bcv_space, &r->bmu);
    *waited += now_s() - t;
  }
  j->submitted = now_s();
  j->next = NULL;
  if (r->ptail) r->ptail->next = j;
  else r->phead = j;
  r->ptail = j;
  r->p_count++;
  r->p_samples += j->n;
  pthread_cond_signal(&r->bcv_work);
  pthread_mutex_unlock(&r->bmu);
}

/* One launch: features of the jobs straight into their records (in the record's dtype), then each
 * record finished (header, checksum) and queued for the writer. A failed launch fails its jobs,
 * each with a line. */
static void launch(fz_run *r, fz_job *batch, size_t count, const void **xs, size_t *ns,
                   void **outs) {
  size_t k = 0;
  const int i16 = batch->x16 != NULL; /* a launch holds one kind (stage_main) */
  for (fz_job *j = batch; j; j = j->next, k++) {
    xs[k] = i16 ? (const void *)j->x16 : (const void *)j->x;
    ns[k] = j->n;
    outs[k] = j->record + FC_RECORD_HEADER_SIZE;
  }
  double t = now_s(), waited = 0; /* waits on the writer's queue are not the stage's work */
  int rc = r->be->compute_batch(r->be_state, xs, i16, ns, count, r->cfg->dtype, outs);
  fz_job *next;
  for (fz_job *j = batch; j; j = next) {
    next = j->next;
    j->next = NULL;
    free(j->x);
    free(j->x16);
    j->x = NULL;
    j->x16 = NULL;
    if (rc) {
      char why[320];
      fc_why(why, sizeof why, "feature computation failed: %s", fc_strerror(rc));
      size_t index = j->index;
      job_free(j);
      report_failed(r, index, rc, why);
      continue;
    }
    uint8_t *pl = j->record + FC_RECORD_HEADER_SIZE;
    size_t payload = j->record_len - FC_RECORD_HEADER_SIZE;
    fc_record_header h = {.dtype = (uint8_t)r->cfg->dtype, .ndim = 2, .dim0 = (uint32_t)j->frames,
                          .dim1 = r->cfg->n_mels, .payload_bytes = payload,
                          .payload_hash = fc_hash64(pl, payload), .config = r->cfg_digest,
                          .flags = 0, .producer = r->be->producer};
    fc_record_header_encode(&h, j->record);
    int qrc = queue_push(r, j, &waited);
    if (qrc) {
      size_t index = j->index;
      job_free(j);
      report_unstored(r, index, qrc);
    }
  }
  r->stage_busy += now_s() - t - waited;
  r->stage_wait += waited;
}

/* The stage thread: launch when a launch's worth waits, when the oldest job has waited the
 * deadline, or when no worker is left to add to it; at most 2 launches' worth per call (the
 * backend overlaps its chunks on two streams). */
static void *stage_main(void *arg) {
  fz_run *r = arg;
  size_t cap = 0;
  const void **xs = NULL;
  size_t *ns = NULL;
  void **outs = NULL;
  pthread_mutex_lock(&r->bmu);
  for (;;) {
    if (r->p_count == 0) {
      if (r->submitters_left == 0) break;
      pthread_cond_wait(&r->bcv_work, &r->bmu);
      continue;
    }
    double due = r->phead->submitted + r->launch_wait;
    if (r->p_samples < r->chunk_samples && r->submitters_left > 0 && now_s() < due) {
      struct timespec ts = deadline(due - now_s());
      pthread_cond_timedwait(&r->bcv_work, &r->bmu, &ts);
      continue;
    }
    fz_job *batch = r->phead, *last = NULL;
    size_t count = 0;
    uint64_t samples = 0;
    for (fz_job *j = batch; j && (count == 0 || (samples + j->n <= 2 * (uint64_t)r->chunk_samples &&
                                                 (j->x16 != NULL) == (batch->x16 != NULL)));
         j = j->next) {
      samples += j->n;
      count++;
      last = j;
    }
    r->phead = last->next;
    if (!r->phead) r->ptail = NULL;
    last->next = NULL;
    r->p_count -= count;
    r->p_samples -= samples;
    pthread_cond_broadcast(&r->bcv_space);
    pthread_mutex_unlock(&r->bmu);
    if (count > cap) {
      size_t c = count > 2 * cap ? count : 2 * cap;
      const void **nx = realloc(xs, c * sizeof *xs);
      if (nx) xs = nx;
      size_t *nn = realloc(ns, c * sizeof *ns);
      if (nn) ns = nn;
      void **no = realloc(outs, c * sizeof *outs);
      if (no) outs = no;
      if (nx && nn && no) cap = c;
    }
    if (count <= cap) {
      launch(r, batch, count, xs, ns, outs);
    } else { /* no memory for the launch's tables: these jobs fail, the run goes on */
      fz_job *next;
      for (fz_job *j = batch; j; j = next) {
        next = j->next;
        size_t index = j->index;
        job_free(j);
        report_failed(r, index, ENOMEM, "out of memory");
      }
    }
    pthread_mutex_lock(&r->bmu);
  }
  pthread_mutex_unlock(&r->bmu);
  free(xs);
  free(ns);
  free(outs);
  pthread_mutex_lock(&r->mu); /* the stage is the writer's last producer */
  r->producers_left--;
  pthread_cond_broadcast(&r->cv_items);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static void process_item(fz_run *r, fz_worker *w, size_t i) {
  const fc_item *it = &r->items[i];
  const fc_mel_config *cfg = r->cfg;
  char why[320];
  why[0] = '\0';
  if (it->err) {
    report_failed(r, i, it->err, it->why);
    return;
  }
  if (!it->path || !it->path[0] || !it->id) {
    report_failed(r, i, FC_EMANIFEST, !it->id ? "no id" : "no audio path");
    return;
  }
  void *bytes = NULL;
  size_t len = 0;
  float *x = NULL;
  fz_job *j = NULL;
  fc_audio_info info;
  fz_times *tm = &w->t;
  double t0 = now_s(), t1;
  int rc = fc_audio_read_file(it->path, 0, &bytes, &len, &info);
  tm->read += (t1 = now_s()) - t0;
  if (rc) {
    report_failed(r, i, rc, plain_reason(rc));
    return;
  }
  fc_digest audio, key;
  fc_digest_buffer(bytes, len, &audio);
  fc_record_key(&audio, &r->cfg_digest, &key);
  int have_feat, have_entry;
  rc = lookup(r, it->id, &key, &audio, &have_feat, &have_entry);
  tm->hash += (t0 = now_s()) - t1;
  if (rc) {
    fc_why(why, sizeof why, "cannot read the store: %s", fc_strerror(rc));
    goto fail;
  }
  if (have_feat && have_entry) {
    free(bytes);
    report_skipped(r, i);
    return;
  }
  /* The record is there under another id: decode only for the entry's facts (no resampling). */
  size_t n = 0;
  rc = fc_audio_decode(bytes, len, have_feat ? 0 : cfg->sample_rate, r->o.max_seconds, &x, &n,
                       &info, why, sizeof why);
  free(bytes);
  bytes = NULL;
  tm->decode += (t1 = now_s()) - t0;
  if (rc) goto fail;

  if (!(j = calloc(1, sizeof *j))) goto nomem;
  j->index = i;
  j->key = key;
  j->seconds = info.sample_rate ? (double)info.frames / info.sample_rate : 0;
  if (!have_feat) {
    uint64_t frames = fc_mel_num_frames(cfg, n);
    if (frames == 0) {
      rc = FC_EEMPTY;
      fc_why(why, sizeof why, "too short: %zu samples at %u Hz give no frames", n,
              cfg->sample_rate);
      goto fail;
    }
    if (frames > UINT32_MAX ||
        frames > (SIZE_MAX - FC_RECORD_HEADER_SIZE) / r->dsize / cfg->n_mels / sizeof(float)) {
      rc = FC_ETOOLONG;
      fc_why(why, sizeof why, "too long: %llu frames", (unsigned long long)frames);
      goto fail;
    }
    size_t nvals = (size_t)frames * cfg->n_mels, payload = nvals * r->dsize;
    if (!(j->record = malloc(FC_RECORD_HEADER_SIZE + payload))) goto nomem;
    j->record_len = FC_RECORD_HEADER_SIZE + payload;
    j->frames = frames;
    if (r->batching && n <= r->chunk_samples) { /* the compute stage finishes the record */
      fc_audio_entry e = {.digest = audio, .sample_rate = info.sample_rate,
                          .channels = info.channels, .frames = info.frames,
                          .source_size = info.size, .mtime_ns = info.mtime_ns,
                          .path = it->path, .path_len = strlen(it->path)};
      j->entry_len = fc_audio_entry_size(&e);
      if (!(j->entry = malloc(j->entry_len))) goto nomem;
      fc_audio_entry_encode(&e, j->entry);
      j->n = n;
      if ((j->x16 = to_i16(x, n))) {
        free(x);
      } else {
        j->x = x;
      }
      x = NULL;
      submit(r, j, &tm->queue_wait);
      return;
    }
    uint8_t *pl = j->record + FC_RECORD_HEADER_SIZE;
    float *mel = cfg->dtype == FC_DTYPE_F32 ? (float *)(void *)pl : malloc(nvals * sizeof *mel);
    if (!mel) goto nomem;
    uint32_t producer;
    t1 = now_s();
    rc = compute_features(r, w, x, n, mel, &producer);
    if (!rc && cfg->dtype != FC_DTYPE_F32) fc_convert_dtype(mel, nvals, cfg->dtype, pl);
    if (mel != (float *)(void *)pl) free(mel);
    tm->compute += (t0 = now_s()) - t1;
    if (rc) {
      fc_why(why, sizeof why, "feature computation failed: %s", fc_strerror(rc));
      goto fail;
    }
    fc_record_header h = {.dtype = (uint8_t)cfg->dtype, .ndim = 2, .dim0 = (uint32_t)frames,
                          .dim1 = cfg->n_mels, .payload_bytes = payload,
                          .payload_hash = fc_hash64(pl, payload), .config = r->cfg_digest,
                          .flags = 0, .producer = producer};
    fc_record_header_encode(&h, j->record);
    tm->hash += now_s() - t0;
    j->frames = frames;
  }
  free(x);
  x = NULL;
  fc_audio_entry e = {.digest = audio, .sample_rate = info.sample_rate, .channels = info.channels,
                      .frames = info.frames, .source_size = info.size, .mtime_ns = info.mtime_ns,
                      .path = it->path, .path_len = strlen(it->path)};
  j->entry_len = fc_audio_entry_size(&e);
  if (!(j->entry = malloc(j->entry_len))) goto nomem;
  fc_audio_entry_encode(&e, j->entry);
  if ((rc = queue_push(r, j, &tm->queue_wait))) {
    job_free(j);
    report_unstored(r, i, rc);
  }
  return;

nomem:
  rc = ENOMEM;
  fc_why(why, sizeof why, "out of memory");
fail:
  free(bytes);
  free(x);
  job_free(j);
  report_failed(r, i, rc, why);
}

static void *worker_main(void *arg) {
  fz_worker *w = arg;
  fz_run *r = w->r;
  for (;;) {
    if (atomic_load(&r->halt)) break;
    if (stop_requested(r)) {
      if (atomic_load(&r->next) < r->n) atomic_store(&r->interrupted, 1);
      break;
    }
    size_t i = atomic_fetch_add(&r->next, 1);
    if (i >= r->n) break;
    process_item(r, w, i);
  }
  if (r->batching) {
    pthread_mutex_lock(&r->bmu);
    r->submitters_left--;
    pthread_cond_signal(&r->bcv_work);
    pthread_mutex_unlock(&r->bmu);
  }
  pthread_mutex_lock(&r->mu);
  r->producers_left--;
  pthread_cond_broadcast(&r->cv_items);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* Commit one batch: config, then each job's record (NOOVERWRITE) and audio entry. */
static int commit_batch(fz_run *r, fz_job *batch, size_t count) {
  fc_put *puts = malloc((2 * count + 1) * sizeof *puts);
  if (!puts) return ENOMEM;
  size_t np = 0;
  puts[np++] = (fc_put){FC_DB_META, r->cfg_key, 36, r->cfg_json, r->cfg_json_len,
                        FC_PUT_NOOVERWRITE};
  for (fz_job *j = batch; j; j = j->next) {
    if (j->record)
      puts[np++] = (fc_put){FC_DB_FEAT, j->key.bytes, sizeof j->key.bytes, j->record,
                            j->record_len, FC_PUT_NOOVERWRITE};
    const char *id = r->items[j->index].id;
    puts[np++] = (fc_put){FC_DB_AUDIO, id, strlen(id), j->entry, j->entry_len, 0};
  }
  int rc = fc_store_write(r->s, puts, np);
  free(puts);
  return rc;
}

static void report_committed(fz_run *r, fz_job *batch) {
  pthread_mutex_lock(&r->ev_mu);
  for (fz_job *j = batch; j; j = j->next) {
    fc_featurize_event ev = {.status = j->record ? FC_ITEM_STORED : FC_ITEM_LINKED,
                             .index = j->index, .frames = j->frames, .seconds = j->seconds};
    r->st.processed++;
    r->st.audio_seconds += j->seconds;
    emit(r, &ev);
  }
  r->st.committed_batches++;
  r->st.wall_seconds = now_s() - r->t0;
  if (r->o.on_progress) r->o.on_progress(&r->st, r->o.user);
  pthread_mutex_unlock(&r->ev_mu);
}

static void batch_free(fz_job *j) {
  while (j) {
    fz_job *next = j->next;
    job_free(j);
    j = next;
  }
}


/* The writer loop (runs on the calling thread). Returns 0 or the first commit error. */
static int writer_loop(fz_run *r) {
  const int nosync = (fc_store_open_flags(r->s) & FC_STORE_NOSYNC) != 0;
  double last_sync = now_s();
  int dirty = 0, rc = 0;
  fz_job *batch = NULL, *btail = NULL;
  size_t bcount = 0;
  uint64_t bbytes = 0;
  double started = 0;

  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (r->head && bcount < r->o.batch_records && bbytes < r->o.batch_bytes) {
      fz_job *j = r->head;
      r->head = j->next;
      if (!r->head) r->tail = NULL;
      r->q_count--;
      r->q_bytes -= job_bytes(j);
      j->next = NULL;
      if (btail) btail->next = j;
      else batch = j;
      btail = j;
      if (bcount++ == 0) started = now_s();
      bbytes += job_bytes(j);
      pthread_cond_broadcast(&r->cv_space);
    }
    const int finished = r->producers_left == 0 && !r->head;
    const int full = bcount >= r->o.batch_records || bbytes >= r->o.batch_bytes;
    if (bcount && (full || finished || now_s() - started >= r->o.batch_seconds)) {
      pthread_mutex_unlock(&r->mu);
      double tw = now_s();
      rc = commit_batch(r, batch, bcount);
      if (!rc) {
        report_committed(r, batch);
        dirty = 1;
        if (nosync && now_s() - last_sync >= r->o.sync_seconds) {
          rc = fc_store_sync(r->s);
          last_sync = now_s();
          dirty = 0;
        }
      } else { /* computed, never committed: a line each */
        for (fz_job *j = batch; j; j = j->next) report_unstored(r, j->index, rc);
      }
      batch_free(batch);
      r->write_busy += now_s() - tw;
      batch = btail = NULL;
      bcount = 0;
      bbytes = 0;
      pthread_mutex_lock(&r->mu);
      if (rc) {
        r->fatal = rc;
        atomic_store(&r->halt, 1);
        pthread_cond_broadcast(&r->cv_space);
        break;
      }
      continue;
    }
    if (finished) break;
    double wait = bcount ? started + r->o.batch_seconds - now_s() : 1.0;
    if (wait > 0) {
      struct timespec ts = deadline(wait);
      double tw = now_s();
      pthread_cond_timedwait(&r->cv_items, &r->mu, &ts);
      r->writer_wait += now_s() - tw;
    }
  }
  pthread_mutex_unlock(&r->mu);
  if (!rc && nosync && dirty) {
    double tw = now_s();
    rc = fc_store_sync(r->s);
    r->write_busy += now_s() - tw;
  }
  return rc;
}

/* The bound the stage times imply (docs/featurize.md "Stage accounting"). The pipeline has two
 * resources: the worker pool (jobs threads: read, hash, decode, compute) and the one writer. The
 * busier of the two, as a share of its capacity over the time after start-up, is the bound; within
 * the pool, the stage with the most busy seconds names it (compute on a GPU: "GPU-bound"). A run
 * whose start-up took longer than the rest is "start-up-bound". */
const char *fc_featurize_bound(const fc_featurize_stats *st, fc_device_kind device) {
  const double pool = st->read_seconds + st->hash_seconds + st->decode_seconds + st->compute_seconds;
  const double run = st->wall_seconds - st->setup_seconds;
  if (pool + st->write_seconds <= 0 || st->workers == 0) return "idle";
  if (st->setup_seconds > run) return "start-up-bound";
  const double span = run > 0 ? run : 1e-9;
  const double u_writer = st->write_seconds / span;
  if (st->compute_stage) { /* compute on its own thread (a GPU): three resources */
    const double u_pool = (pool - st->compute_seconds) / (span * st->workers);
    const double u_stage = st->compute_seconds / span;
    if (u_writer >= u_pool && u_writer >= u_stage) return "write-bound";
    if (u_stage >= u_pool) return device == FC_DEVICE_CUDA ? "GPU-bound" : "compute-bound";
    double best = st->read_seconds;
    const char *name = "read-bound";
    if (st->hash_seconds > best) best = st->hash_seconds, name = "hash-bound";
    if (st->decode_seconds > best) name = "decode-bound";
    return name;
  }
  const double u_pool = pool / (span * st->workers);
  if (u_writer >= u_pool) return "write-bound";
  double best = st->read_seconds;
  const char *name = "read-bound";
  if (st->hash_seconds > best) best = st->hash_seconds, name = "hash-bound";
  if (st->decode_seconds > best) best = st->decode_seconds, name = "decode-bound";
  if (st->compute_seconds > best)
    best = st->compute_seconds, name = device == FC_DEVICE_CUDA ? "GPU-bound" : "compute-bound";
  return name;
}

int fc_featurize_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
                     const fc_featurize_opts *opts, fc_featurize_stats *stats, char *why,
                     size_t why_len) {
  return fc_fz_run(s, cfg, items, n, opts, NULL, stats, why, why_len);
}

int fc_fz_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
              const fc_featurize_opts *opts, const fc_fz_backend *backend,
              fc_featurize_stats *stats, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  fz_run *r = calloc(1, sizeof *r);
  fz_worker *workers = NULL;
  unsigned started = 0;
  int rc = 0, ran = 0, stage_started = 0;
  pthread_t stage_thread;
  if (stats) memset(stats, 0, sizeof *stats);
  if (!r) return ENOMEM;
  r->t0 = now_s();
  r->st.total = n;
  r->st.bound = "idle";
  r->s = s;
  r->cfg = cfg;
  r->items = items;
  r->n = n;
  if (opts) r->o = *opts;
  else fc_featurize_opts_init(&r->o);
  if (!r->o.jobs) r->o.jobs = 1;
  if (!r->o.batch_records) r->o.batch_records = 64;
  if (!r->o.batch_bytes) r->o.batch_bytes = 64ull << 20;
  if (!(r->o.batch_seconds > 0)) r->o.batch_seconds = 1.0;
  if (!r->o.queue_records) r->o.queue_records = 64;
  if (!r->o.queue_bytes) r->o.queue_bytes = 64ull << 20;
  if (!(r->o.sync_seconds > 0)) r->o.sync_seconds = 5.0;
  atomic_init(&r->next, 0);
  atomic_init(&r->halt, 0);
  atomic_init(&r->interrupted, 0);
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->ev_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&r->cv_items, &ca);
  pthread_cond_init(&r->cv_space, &ca);
  pthread_mutex_init(&r->bmu, NULL);
  pthread_cond_init(&r->bcv_work, &ca);
  pthread_cond_init(&r->bcv_space, &ca);
  pthread_condattr_destroy(&ca);

  /* Configuration: everything that can fail before any work is done. */
  if ((rc = fc_mel_config_validate(cfg, why, why_len))) goto out;
  r->dsize = fc_dtype_size(cfg->dtype);
  int jl = fc_mel_config_json(cfg, r->cfg_json, sizeof r->cfg_json);
  if (jl < 0) {
    rc = jl;
    fc_why(why, why_len, "cannot encode the config");
    goto out;
  }
  r->cfg_json_len = (size_t)jl;
  fc_mel_config_digest(cfg, &r->cfg_digest);
  memcpy(r->cfg_key, "cfg/", 4);
  fc_digest_hex(&r->cfg_digest, r->cfg_key + 4);
  fc_device dev;
  char dev_why[256]; /* auto's fallback reason is not an error: keep it out of why */
  if (backend) { /* a test's backend (featurize_backend.h) */
    dev = r->o.device;
  } else if ((rc = fc_featurize_choose_device(&r->o.device, items, n, r->o.jobs,
                                              r->o.auto_gpu_min_seconds, &dev, dev_why,
                                              sizeof dev_why))) {
    fc_why(why, why_len, "%s", dev_why);
    goto out;
  }
  r->device = dev.kind;
  if (!(r->be = backend ? backend : fc_fz_backend_for(&dev))) {
    rc = FC_ENODEVICE;
    fc_why(why, why_len, "no backend for this device in this build");
    goto out;
  }
  if (fc_store_open_flags(s) & FC_STORE_RDONLY) {
    rc = EACCES;
    fc_why(why, why_len, "store opened read-only");
    goto out;
  }
  double t_setup = now_s();
  rc = r->be->open(cfg, &dev, r->o.jobs, &r->be_state, why, why_len);
  r->st.setup_seconds = now_s() - t_setup;
  if (rc) goto out;
  if (r->be->compute_batch) {
    r->batching = 1;
    r->chunk_samples = r->be->max_samples(r->be_state);
    r->pending_max = 4 * (uint64_t)r->chunk_samples;
    r->launch_wait = 0.002;
    r->submitters_left = r->o.jobs;
    r->st.compute_stage = 1;
  }

  if (!(workers = calloc(r->o.jobs, sizeof *workers))) {
    rc = ENOMEM;
    goto out;
  }
  r->producers_left = r->o.jobs + (r->batching ? 1 : 0);
  if (r->batching && (rc = pthread_create(&stage_thread, NULL, stage_main, r))) {
    fc_why(why, why_len, "cannot start the compute stage thread: %s", strerror(rc));
    goto out;
  }
  stage_started = r->batching;
  for (unsigned w = 0; w < r->o.jobs; w++) {
    workers[w].r = r;
    workers[w].index = w;
    if ((rc = pthread_create(&workers[w].thread, NULL, worker_main, &workers[w]))) {
      fc_why(why, why_len, "cannot start a worker thread: %s", strerror(rc));
      pthread_mutex_lock(&r->mu);
      r->producers_left -= r->o.jobs - w; /* the ones never started */
      pthread_mutex_unlock(&r->mu);
      if (r->batching) {
        pthread_mutex_lock(&r->bmu);
        r->submitters_left -= r->o.jobs - w;
        pthread_cond_signal(&r->bcv_work);
        pthread_mutex_unlock(&r->bmu);
      }
      atomic_store(&r->halt, 1);
      break;
    }
    started++;
  }
  int wrc = writer_loop(r);
  ran = 1;
  for (unsigned w = 0; w < started; w++) {
    pthread_join(workers[w].thread, NULL);
    fz_times *t = &workers[w].t;
    r->st.read_seconds += t->read;
    r->st.hash_seconds += t->hash;
    r->st.decode_seconds += t->decode;
    r->st.compute_seconds += t->compute;
    r->st.queue_wait_seconds += t->queue_wait;
    fc_mel_plan_free(workers[w].fallback);
  }
  if (stage_started) {
    pthread_join(stage_thread, NULL);
    stage_started = 0;
    r->st.compute_seconds += r->stage_busy;
    r->st.queue_wait_seconds += r->stage_wait;
  }
  r->st.workers = started;
  r->st.write_seconds = r->write_busy;
  r->st.writer_wait_seconds = r->writer_wait;
  /* After a failed commit, workers may still have queued jobs: computed, never committed. */
  for (fz_job *j = r->head; j; j = j->next) report_unstored(r, j->index, wrc ? wrc : FC_EBADSTATE);
  batch_free(r->head);
  r->head = r->tail = NULL;
  /* Items never begun: failures of this job after a failed commit (one line for them all, the
   * caller's summary), else the run was stopped on purpose (stop flag, strict). */
  size_t next = atomic_load(&r->next);
  uint64_t never = next < n ? n - next : 0;
  if (wrc || rc) r->st.failed += never;
  else r->st.not_started += never;
  if (rc) goto out; /* thread start failure */
  if (wrc) {
    rc = wrc;
    fc_why(why, why_len, "cannot write to the store: %s", fc_strerror(wrc));
  } else if (r->strict_err) {
    rc = r->strict_err;
  } else if (atomic_load(&r->interrupted)) {
    rc = FC_EINTR;
  }

out:
  if (stage_started) { /* the workers never started: nothing is pending */
    pthread_mutex_lock(&r->bmu);
    r->submitters_left = 0;
    pthread_cond_signal(&r->bcv_work);
    pthread_mutex_unlock(&r->bmu);
    pthread_join(stage_thread, NULL);
  }
  if (r->be && r->be_state) r->be->close(r->be_state);
  free(workers);
  r->st.wall_seconds = now_s() - r->t0;
  if (!ran) r->st.not_started = n; /* refused before any work */
  r->st.bound = fc_featurize_bound(&r->st, r->device);
  if (r->o.on_progress && started) r->o.on_progress(&r->st, r->o.user);
  if (stats) *stats = r->st;
  pthread_cond_destroy(&r->cv_items);
  pthread_cond_destroy(&r->cv_space);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->ev_mu);
  pthread_cond_destroy(&r->bcv_work);
  pthread_cond_destroy(&r->bcv_space);
  pthread_mutex_destroy(&r->bmu);
  free(r);
  return rc;
}
