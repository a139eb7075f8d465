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
 *     A split store (opts.parts) has one writer per part, each with its own queue, on its own
 *     thread (part 0's on the calling thread); a job goes to its id's part (fc_store_part_of_id).
 *
 * Why workers do both decode and compute: the CPU backend's cost per utterance is dominated by
 * the FFTs, and a worker that keeps its samples in cache from decode to mel is faster than a
 * hand-off. With a staging backend (CUDA) the workers write their decoded samples into its
 * staging ring instead and a launch thread and a completion thread compute them
 * (featurize_stage.c).
 *
 * Read transactions are short (begin, two gets, end) and never held across a blocking call: a
 * writer that must grow the map waits for readers of this process to finish theirs. */
#include "featcache/fc_featurize.h"

#include "featcache/fc_audio.h"
#include "featcache/fc_format.h"
#include "libcache/mel/featurize/featurize_backend.h"
#include "featcache/fc_codec.h"
#include "libcache/mel/featurize/featurize_int.h"
#include "libcache/mel/featurize/audio_int.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the pipeline ------------------------------------------------------------------------------ */
void fc_featurize_opts_init(fc_featurize_opts *o) {
  memset(o, 0, sizeof *o);
  o->jobs = 1;
  o->device.kind = FC_DEVICE_AUTO;
}

static int stop_requested(const fz_run *r) { return r->o.stop && *r->o.stop; }

static void report_skipped(fz_run *r, size_t i) {
  fc_featurize_event ev = {.status = FC_ITEM_SKIPPED, .index = i};
  pthread_mutex_lock(&r->ev_mu);
  r->st.skipped_existing++;
  fz_emit(r, &ev);
  pthread_mutex_unlock(&r->ev_mu);
}

/* Is the record stored, and does the id's audio entry hold this digest? (In the id's part.) */
static int lookup(fz_run *r, size_t i, const fc_digest *key, const fc_digest *audio, int *have_feat,
                  int *have_entry) {
  const char *id = r->items[i].id;
  *have_feat = *have_entry = 0;
  fc_rtxn *t;
  int rc = fc_store_read_begin(r->parts[fz_part_of(r, i)].s, &t);
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

/* Does an utterance of n samples fit a chunk of the staging ring (else its worker computes it on
 * the CPU)? */
static int stage_fits(const fz_run *r, size_t n) {
  return n <= r->ring.capacity && fc_mel_num_frames(r->cfg, n) <= r->ring.max_frames;
}

/* The job's audio entry (FORMAT.md): the content digest, the source's facts and its path. */
static int encode_entry(fz_job *j, const fc_digest *audio, const fc_audio_info *info,
                        const char *path) {
  fc_audio_entry e = {.digest = *audio,
                      .sample_rate = info->sample_rate,
                      .channels = info->channels,
                      .frames = info->frames,
                      .source_size = info->size,
                      .mtime_ns = info->mtime_ns,
                      .path = path,
                      .path_len = strlen(path)};
  j->entry_len = fc_audio_entry_size(&e);
  if (!(j->entry = fc_malloc(j->entry_len))) return ENOMEM;
  fc_audio_entry_encode(&e, j->entry);
  return 0;
}

static void process_item(fz_run *r, fz_worker *w, size_t i) {
  const fc_item *it = &r->items[i];
  const fc_mel_config *cfg = r->cfg;
  char why[320];
  why[0] = '\0';
  if (it->err) {
    fz_report_failed(r, i, it->err, it->why);
    return;
  }
  if (!it->path || !it->path[0] || !it->id) {
    fz_report_failed(r, i, FC_EMANIFEST, !it->id ? "no id" : "no audio path");
    return;
  }
  const uint8_t *bytes = NULL; /* the worker's buffer (w->buf) */
  size_t len = 0;
  float *x = NULL;
  fz_job *j = NULL;
  fc_audio_info info;
  fz_times *tm = &w->t;
  double t0 = fz_cpu_now(), t1;
  int rc = audio_read_into(it->path, 0, &w->buf, &w->buf_cap, &len, &info);
  bytes = w->buf;
  tm->read += (t1 = fz_cpu_now()) - t0;
  if (rc) {
    fz_report_failed(r, i, rc, plain_reason(rc));
    return;
  }
  fc_digest audio, key;
  fc_digest_buffer(bytes, len, &audio);
  fc_record_key(&audio, &r->cfg_digest, &key);
  int have_feat, have_entry;
  rc = lookup(r, i, &key, &audio, &have_feat, &have_entry);
  tm->hash += (t0 = fz_cpu_now()) - t1;
  if (rc) {
    fc_why(why, sizeof why, "cannot read the store: %s", fc_strerror(rc));
    goto fail;
  }
  if (have_feat && have_entry) {
    report_skipped(r, i);
    return;
  }
  size_t n = 0;
  /* On a staging device (a GPU), 16-bit mono PCM at the config's rate goes from the file's bytes
   * into staging as it is: the device converts it (v / 32768, as the decode below would). */
  const void *pcm16 = NULL;
  if (r->batching && !have_feat) {
    rc = audio_pcm16_view(bytes, len, cfg->sample_rate, r->o.max_seconds, &pcm16, &n, &info, why,
                          sizeof why);
    if (rc < 0) goto fail;
    rc = 0;
    if (pcm16 && !stage_fits(r, n)) pcm16 = NULL; /* computed on the CPU: decoded below */
  }
  if (!pcm16) {
    /* The record is there under another id: decode only for the entry's facts (no resampling). */
    rc = fc_audio_decode(bytes, len, have_feat ? 0 : cfg->sample_rate, r->o.max_seconds, &x, &n,
                         &info, why, sizeof why);
  }
  tm->decode += (t1 = fz_cpu_now()) - t0;
  if (rc) goto fail;

  if (!(j = fc_calloc(1, sizeof *j))) goto nomem;
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
    if (cfg->dtype == FC_DTYPE_MQ) { /* coded: at most the codec's bound, trimmed after */
      payload = fc_mq_bound((uint32_t)frames, cfg->n_mels);
      if (!payload) {
        rc = FC_ETOOLONG;
        fc_why(why, sizeof why, "too long for the mq codec: %llu frames",
               (unsigned long long)frames);
        goto fail;
      }
    }
    j->frames = frames;
    if (r->batching && stage_fits(r, n)) {
      /* into the staging ring; a writer makes the record from the device's output */
      if (encode_entry(j, &audio, &info, it->path)) goto nomem;
      fz_stage_put(r, j, pcm16 ? pcm16 : (const void *)x, n, pcm16 != NULL, tm);
      free(x);
      return;
    }
    if (!(j->record = fc_malloc(FC_RECORD_HEADER_SIZE + payload))) goto nomem;
    j->record_len = FC_RECORD_HEADER_SIZE + payload;
    uint8_t *pl = j->record + FC_RECORD_HEADER_SIZE;
    float *mel = cfg->dtype == FC_DTYPE_F32 ? (float *)(void *)pl : fc_malloc(nvals * sizeof *mel);
    if (!mel) goto nomem;
    uint32_t producer;
    t1 = fz_cpu_now();
    rc = compute_features(r, w, x, n, mel, &producer);
    if (rc) {
      fc_why(why, sizeof why, "feature computation failed: %s", fc_strerror(rc));
    } else if (cfg->dtype == FC_DTYPE_MQ) {
      char cw[200];
      rc = fc_mq_encode_step(fc_mq_thread_coder(), mel, (uint32_t)frames, cfg->n_mels,
                             fc_mq_step_log2(cfg->log), pl, payload, &payload, cw, sizeof cw);
      if (rc) fc_why(why, sizeof why, "cannot code the mel: %s", cw);
      j->record_len = FC_RECORD_HEADER_SIZE + payload;
      uint8_t *fit =
          rc ? NULL : fc_realloc(j->record, j->record_len); /* give the bound's slack back */
      if (fit) pl = (j->record = fit) + FC_RECORD_HEADER_SIZE;
    } else if (cfg->dtype != FC_DTYPE_F32) {
      fc_convert_dtype(mel, nvals, cfg->dtype, pl);
    }
    if (mel != (float *)(void *)pl) free(mel);
    tm->compute += (t0 = fz_cpu_now()) - t1;
    if (rc) goto fail;
    fc_record_header h = {.dtype = (uint8_t)cfg->dtype,
                          .ndim = 2,
                          .dim0 = (uint32_t)frames,
                          .dim1 = cfg->n_mels,
                          .payload_bytes = payload,
                          .payload_hash = fc_hash64(pl, payload),
                          .config = r->cfg_digest,
                          .flags = 0,
                          .producer = producer};
    fc_record_header_encode(&h, j->record);
    tm->hash += fz_cpu_now() - t0;
    j->frames = frames;
  }
  free(x);
  x = NULL;
  if (encode_entry(j, &audio, &info, it->path)) goto nomem;
  if ((rc = fz_queue_push(r, j, &tm->queue_wait))) {
    fz_job_free(j);
    fz_report_unstored(r, i, rc);
  }
  return;

nomem:
  rc = ENOMEM;
  fc_why(why, sizeof why, "out of memory");
fail:
  free(x);
  fz_job_free(j);
  fz_report_failed(r, i, rc, why);
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
    if (w->buf_cap > FZ_KEEP_BUFFER) { /* a long file's buffer is not kept for the next ones */
      free(w->buf);
      w->buf = NULL;
      w->buf_cap = 0;
    }
  }
  free(w->buf);
  w->buf = NULL;
  if (r->batching) {
    pthread_mutex_lock(&r->bmu);
    r->submitters_left--;
    pthread_cond_signal(&r->bcv_launch);
    pthread_mutex_unlock(&r->bmu);
  }
  pthread_mutex_lock(&r->mu);
  r->producers_left--;
  pthread_cond_broadcast(&r->cv_items);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* The bound the stage times imply (docs/featurize.md "Stage accounting"). The pipeline has two
 * resources: the worker pool (jobs threads: read, hash, decode, staging, compute) and the writers.
 * The busier of the two, as a share of its capacity over the time after start-up, is the bound;
 * within the pool, the stage with the most busy seconds names it (compute on a GPU: "GPU-bound").
 * A run whose start-up took longer than the rest is "start-up-bound". */
const char *fc_featurize_bound(const fc_featurize_stats *st, fc_device_kind device) {
  const double pool = st->read_seconds + st->hash_seconds + st->decode_seconds +
                      st->staging_seconds + st->compute_seconds;
  const double run = st->wall_seconds - st->setup_seconds;
  if (pool + st->write_seconds <= 0 || st->workers == 0) return "idle";
  if (st->setup_seconds > run) return "start-up-bound";
  const double span = run > 0 ? run : 1e-9;
  const double u_writer = st->write_seconds / (span * (st->writers > 1 ? st->writers : 1));
  const int stage = st->compute_stage; /* compute on its own thread (a GPU): three resources */
  const double u_pool = (pool - (stage ? st->compute_seconds : 0)) / (span * st->workers);
  const double u_stage = stage ? st->compute_seconds / span : 0;
  if (u_writer >= u_pool && u_writer >= u_stage) return "write-bound";
  const char *compute = device == FC_DEVICE_CUDA ? "GPU-bound" : "compute-bound";
  if (stage && u_stage >= u_pool) return compute;
  double best = st->read_seconds;
  const char *name = "read-bound";
  if (st->hash_seconds > best) best = st->hash_seconds, name = "hash-bound";
  if (st->decode_seconds > best) best = st->decode_seconds, name = "decode-bound";
  if (st->staging_seconds > best) best = st->staging_seconds, name = "staging-bound";
  if (!stage && st->compute_seconds > best) best = st->compute_seconds, name = compute;
  return name;
}

int fc_featurize_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
                     const fc_featurize_opts *opts, fc_featurize_stats *stats, char *why,
                     size_t why_len) {
  return fz_pipeline_run(s, cfg, items, n, opts, NULL, stats, why, why_len);
}

int fz_pipeline_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
                    const fc_featurize_opts *opts, const fc_fz_backend *backend,
                    fc_featurize_stats *stats, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  fz_run *r = fc_calloc(1, sizeof *r);
  fz_worker *workers = NULL;
  unsigned started = 0;
  int rc = 0, ran = 0, stage_started = 0;
  pthread_t launch_thread, complete_thread;
  if (stats) memset(stats, 0, sizeof *stats);
  if (!r) { /* refused before any work: the counts still add up */
    if (stats) {
      stats->total = stats->not_started = n;
      stats->bound = "idle";
    }
    return ENOMEM;
  }
  r->t0 = fz_now();
  r->st.total = n;
  r->st.bound = "idle";
  r->cfg = cfg;
  r->items = items;
  r->n = n;
  if (opts)
    r->o = *opts;
  else
    fc_featurize_opts_init(&r->o);
  if (!r->o.jobs) r->o.jobs = 1;
  r->n_parts = r->o.parts && r->o.n_parts > 1 ? r->o.n_parts : 1;
  if (!(r->parts = fc_calloc(r->n_parts, sizeof *r->parts))) {
    free(r);
    if (stats) { /* refused before any work: the counts still add up */
      stats->total = stats->not_started = n;
      stats->bound = "idle";
    }
    return ENOMEM;
  }
  for (unsigned k = 0; k < r->n_parts; k++) {
    r->parts[k].run = r;
    r->parts[k].s = r->n_parts > 1 ? r->o.parts[k] : s;
  }
  r->s = r->parts[0].s;
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
  pthread_cond_init(&r->bcv_launch, &ca);
  pthread_cond_init(&r->bcv_done, &ca);
  pthread_cond_init(&r->bcv_space, &ca);
  pthread_condattr_destroy(&ca);

  /* Configuration: everything that can fail before any work is done. */
  if ((rc = fc_mel_config_validate(cfg, why, why_len))) goto out;
  r->dsize = fc_dtype_size(fc_dtype_decoded(cfg->dtype)); /* mq: the f32 it codes */
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
  if (!(r->be = backend ? backend : fz_backend_for(&dev))) {
    rc = FC_ENODEVICE;
    fc_why(why, why_len, "no backend for this device in this build");
    goto out;
  }
  for (unsigned k = 0; k < r->n_parts && !rc; k++)
    if (!r->parts[k].s || (fc_store_open_flags(r->parts[k].s) & FC_STORE_RDONLY)) rc = EACCES;
  if (rc) {
    rc = EACCES;
    fc_why(why, why_len, "store opened read-only");
    goto out;
  }
  double t_setup = fz_now();
  rc = r->be->open(cfg, &dev, r->o.jobs, &r->be_state, why, why_len);
  r->st.setup_seconds = fz_now() - t_setup;
  if (rc) goto out;
  if (r->be->launch && cfg->dtype != FC_DTYPE_MQ) { /* mq: coded per utterance */
    r->batching = 1;
    r->be->stage_info(r->be_state, &r->ring);
    if (r->ring.chunks == 0 || r->ring.capacity == 0 || r->ring.max_utts == 0 ||
        (rc = fz_stage_init(r))) {
      if (!rc) rc = EINVAL;
      fc_why(why, why_len, "cannot set up the staging ring: %s", fc_strerror(rc));
      goto out;
    }
    r->submitters_left = r->o.jobs;
    r->st.compute_stage = 1;
  }

  if (!(workers = fc_calloc(r->o.jobs, sizeof *workers))) {
    rc = ENOMEM;
    goto out;
  }
  r->producers_left = r->o.jobs + (r->batching ? 1 : 0);
  if (r->batching) {
    if ((rc = pthread_create(&launch_thread, NULL, fz_launch_main, r))) {
      fc_why(why, why_len, "cannot start the launch thread: %s", strerror(rc));
      goto out;
    }
    if ((rc = pthread_create(&complete_thread, NULL, fz_complete_main, r))) {
      fc_why(why, why_len, "cannot start the completion thread: %s", strerror(rc));
      stage_started = 1; /* the launch thread only */
      goto out;
    }
    stage_started = 2;
  }
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
        pthread_cond_signal(&r->bcv_launch);
        pthread_mutex_unlock(&r->bmu);
      }
      atomic_store(&r->halt, 1);
      break;
    }
    started++;
  }
  /* Writers of parts 1.. on their own threads (started after the workers: a writer that cannot
   * start halts the run, and its part's queue is drained below as unstored). */
  for (unsigned k = 1; k < r->n_parts; k++) {
    int trc = pthread_create(&r->parts[k].thread, NULL, fz_writer_main, &r->parts[k]);
    if (trc) {
      pthread_mutex_lock(&r->mu);
      if (!r->fatal) r->fatal = trc;
      atomic_store(&r->halt, 1);
      pthread_cond_broadcast(&r->cv_space);
      pthread_mutex_unlock(&r->mu);
      if (!rc) fc_why(why, why_len, "cannot start a writer thread: %s", strerror(trc));
      r->parts[k].rc = trc;
      break;
    }
    r->parts[k].started = 1;
  }
  int wrc = fz_writer_loop(r, &r->parts[0]);
  for (unsigned k = 1; k < r->n_parts; k++) {
    if (r->parts[k].started) pthread_join(r->parts[k].thread, NULL);
    if (!wrc) wrc = r->parts[k].rc;
  }
  ran = 1;
  for (unsigned w = 0; w < started; w++) {
    pthread_join(workers[w].thread, NULL);
    fz_times *t = &workers[w].t;
    r->st.read_seconds += t->read;
    r->st.hash_seconds += t->hash;
    r->st.decode_seconds += t->decode;
    r->st.compute_seconds += t->compute;
    r->st.staging_seconds += t->staging;
    r->st.queue_wait_seconds += t->queue_wait;
    fc_mel_plan_free(workers[w].fallback);
  }
  if (stage_started) {
    pthread_join(launch_thread, NULL);
    pthread_join(complete_thread, NULL);
    stage_started = 0;
    r->st.compute_seconds += r->stage_busy;
  }
  r->st.workers = started;
  r->st.writers = r->n_parts;
  for (unsigned k = 0; k < r->n_parts; k++) {
    fz_part *p = &r->parts[k];
    r->st.write_seconds += p->busy;
    r->st.writer_wait_seconds += p->wait;
    /* After a failed commit, workers may still have queued jobs: computed, never committed. */
    for (fz_job *j = p->head; j; j = j->next)
      fz_report_unstored(r, j->index, wrc ? wrc : FC_EBADSTATE);
    fz_batch_free(p->head);
    p->head = p->tail = NULL;
  }
  /* Items never begun: failures of this job after a failed commit (one line for them all, the
   * caller's summary), else the run was stopped on purpose (stop flag, strict). */
  size_t next = atomic_load(&r->next);
  uint64_t never = next < n ? n - next : 0;
  if (wrc || rc)
    r->st.failed += never;
  else
    r->st.not_started += never;
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
  if (stage_started) { /* the workers never started: nothing is in the ring */
    pthread_mutex_lock(&r->bmu);
    r->submitters_left = 0;
    pthread_cond_signal(&r->bcv_launch);
    pthread_mutex_unlock(&r->bmu);
    pthread_join(launch_thread, NULL);
    if (stage_started == 2) pthread_join(complete_thread, NULL);
  }
  fz_stage_free(r);
  if (r->be && r->be_state) r->be->close(r->be_state);
  free(workers);
  r->st.wall_seconds = fz_now() - r->t0;
  if (!ran) r->st.not_started = n; /* refused before any work */
  r->st.bound = fc_featurize_bound(&r->st, r->device);
  if (r->o.on_progress && started) r->o.on_progress(&r->st, r->o.user);
  if (stats) *stats = r->st;
  pthread_cond_destroy(&r->cv_items);
  pthread_cond_destroy(&r->cv_space);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->ev_mu);
  pthread_cond_destroy(&r->bcv_launch);
  pthread_cond_destroy(&r->bcv_done);
  pthread_cond_destroy(&r->bcv_space);
  pthread_mutex_destroy(&r->bmu);
  free(r->parts);
  free(r);
  return rc;
}
