/* The featurize pipeline's run (fc_featurize.h, docs/featurize.md "Pipeline"): everything that is
 * once per job, at the top of the line the data takes —
 *
 *   source (featurize_source.c): the workers read, hash, skip what is stored, decode;
 *   device: on the CPU the worker computes the record (featurize_compute.c); on a staging backend
 *     (a GPU) it puts the samples into the staging ring, whose launch and completion threads
 *     compute them (featurize_stage.c); the devices themselves: featurize_device.c;
 *   sink (featurize_sink.c): the writers commit the records in batches, one per store part;
 *   the job's lifecycle (featurize_job.c): the clock, freeing, the events every stage reports.
 *
 * Each file calls only those below it in this list; this one sets the run up (config, device,
 * backend, ring), starts the threads with their entry points (fz_worker_main, fz_launch_main,
 * fz_complete_main, fz_writer_main; part 0's writer on the calling thread), joins them, sums the
 * stage times and says which bound the run (fc_featurize_bound). */
#include "featcache/fc_featurize.h"
#include "formats/common/args.h"

#include "featcache/fc_format.h"
#include "libcache/mel/featurize/featurize_backend.h"
#include "libcache/mel/featurize/featurize_int.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"
#include "formats/common/thread_name.h"
#include "formats/config/config_stamp.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the pipeline ------------------------------------------------------------------------------ */
void fc_featurize_opts_init(fc_featurize_opts *o) {
  FC_ARGS_OR(, o);
  memset(o, 0, sizeof *o);
  o->jobs = 1;
  o->device.kind = FC_DEVICE_AUTO;
}

/* The bound the stage times imply (docs/featurize.md "Stage accounting"). A run whose start-up
 * took longer than the rest is "start-up-bound". On the CPU the pipeline has two resources: the
 * worker pool (jobs threads: read, hash, decode, compute) and the writers; the busier of the two,
 * as a share of its threads, is the bound. On a staging backend (a GPU) the workers feed a ring
 * of chunks that the device and then the writers hold: when the workers waited for a free chunk
 * longer than they worked, whichever held the chunks more of that wait is the bound ("GPU-bound"
 * or "write-bound"; a GPU's compute time with chunks in flight says nothing of how busy it was).
 * Otherwise the pool's stage with the most busy seconds names it. */
const char *fc_featurize_bound(const fc_featurize_stats *st, fc_device_kind device) {
  FC_ARGS_OR(NULL, st);
  const double pool = st->read_seconds + st->hash_seconds + st->decode_seconds +
                      st->staging_seconds + st->compute_seconds;
  const double run = st->wall_seconds - st->setup_seconds;
  if (pool + st->write_seconds <= 0 || st->workers == 0) return "idle";
  if (st->setup_seconds > run) return "start-up-bound";
  const char *compute = device == FC_DEVICE_CUDA ? "GPU-bound" : "compute-bound";
  const int stage = st->compute_stage; /* compute on its own stage (a GPU): the staging ring */
  if (stage) {
    /* The workers waited for a free staging chunk longer than they worked: what held the chunks
     * bound the run, the device or the writers; else the workers' own stages did. */
    const double held = st->queue_wait_seconds, on_device = st->device_wait_seconds;
    if (held > pool - st->compute_seconds) return on_device * 2 > held ? compute : "write-bound";
  } else if (st->write_seconds / (st->writers > 1 ? st->writers : 1) >= pool / st->workers) {
    return "write-bound"; /* the writers' utilization at least the workers' */
  }
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
  FC_ARGS_WHY(s, cfg, items || !n);
  return fz_pipeline_run(s, cfg, items, n, opts, NULL, stats, why, why_len);
}

/* A run that was refused before any work: the counts still add up. */
static void refused(fc_featurize_stats *stats, size_t n) {
  if (!stats) return;
  stats->total = stats->not_started = n;
  stats->bound = "idle";
}

/* The run's state with its defaults, locks and condition variables; NULL when out of memory. */
static fz_run *run_new(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
                       const fc_featurize_opts *opts) {
  fz_run *r = fc_calloc(1, sizeof *r);
  if (!r) return NULL;
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
  char cwd[PATH_MAX];
  int no_cwd = getcwd(cwd, sizeof cwd) == NULL; /* then relative paths are stored as given */
  if (!(r->parts = fc_calloc(r->n_parts, sizeof *r->parts)) ||
      (!no_cwd && !(r->cwd = fc_strdup(cwd)))) {
    free(r->parts);
    free(r);
    return NULL;
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
  if (r->o.manifest) r->n = 0; /* counted as they are read */
  pthread_mutex_init(&r->src_mu, NULL);
  pthread_cond_init(&r->feed_cv, NULL);
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
  pthread_mutex_init(&r->plan_mu, NULL);
  pthread_cond_init(&r->bcv_launch, &ca);
  pthread_cond_init(&r->bcv_done, &ca);
  pthread_cond_init(&r->bcv_space, &ca);
  pthread_condattr_destroy(&ca);
  return r;
}

static void run_free(fz_run *r) {
  fz_live_free(r); /* (joins a manifest's reader thread still running) */
  pthread_cond_destroy(&r->feed_cv);
  pthread_mutex_destroy(&r->src_mu);
  pthread_cond_destroy(&r->cv_items);
  pthread_cond_destroy(&r->cv_space);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->ev_mu);
  pthread_cond_destroy(&r->bcv_launch);
  pthread_cond_destroy(&r->bcv_done);
  pthread_cond_destroy(&r->bcv_space);
  pthread_mutex_destroy(&r->bmu);
  pthread_mutex_destroy(&r->plan_mu);
  free(r->parts);
  free(r->cwd);
  free(r);
}

/* The staging ring of an open staging backend. */
static int stage_setup(fz_run *r, char *why, size_t why_len) {
  int rc = 0;
  r->be->stage_info(r->be_state, &r->ring);
  if (r->ring.chunks == 0 || r->ring.capacity == 0 || r->ring.max_utts == 0 ||
      (rc = fz_stage_init(r))) {
    if (!rc) rc = EINVAL;
    fc_why(why, why_len, "cannot set up the staging ring: %s", fc_strerror(rc));
  }
  return rc;
}

/* A device that could not be opened, or its staging ring set up, whatever the runtime said (out
 * of pinned memory: ENOMEM, FC_ECUDA): the device's failure, FC_ENODEVICE with the reason, as a
 * GPU that is not there (the tools' exit 2), never taken for the store's. rc 0 and the CPU's own
 * failures pass through. */
static int device_start_failed(const fz_run *r, int rc, char *why, size_t why_len) {
  if (!rc || rc == FC_ENODEVICE || rc == FC_ECONFIG || r->be->producer == FC_PRODUCER_CPU)
    return rc;
  char reason[sizeof r->open_why];
  snprintf(reason, sizeof reason, "%s", why && why[0] ? why : fc_strerror(rc));
  fc_why(why, why_len, "the device failed to start: %s", reason);
  return FC_ENODEVICE;
}

/* The job gives the device up for the CPU: reason (the device's) is what the run will say. */
static void note_fallback(fz_run *r, const char *reason) {
  snprintf(r->open_why, sizeof r->open_why, "%s", reason);
  atomic_store(&r->fell_back, 1);
}

/* The device could not be opened and the job may fall back (fz_run.fallback): the CPU backend
 * computes it; reason is the device's (the caller's why then holds the CPU backend's errors). */
static int fall_back_to_cpu(fz_run *r, const char *reason, char *why, size_t why_len) {
  note_fallback(r, reason);
  r->batching = r->hybrid = 0;
  r->submitters_left = 0;
  r->st.compute_stage = 0;
  const fc_device cpu = {.kind = FC_DEVICE_CPU};
  r->device = FC_DEVICE_CPU;
  r->be = fz_backend_for(&cpu);
  r->be_state = NULL;
  if (why && why_len) why[0] = '\0';
  const double t = fz_now();
  int rc = r->be ? r->be->open(r->cfg, &cpu, r->o.jobs, &r->be_state, why, why_len) : FC_ENODEVICE;
  r->st.setup_seconds += fz_now() - t;
  return rc;
}

/* Configuration: everything that can fail before any work is done — the config, the device and
 * its backend (backend: a test's, featurize_backend.h, else the device's; the CPU's for a check),
 * a writable store (any store for a check), the backend opened, the staging ring when the backend
 * stages. */
static int run_configure(fz_run *r, const fc_fz_backend *backend, char *why, size_t why_len) {
  const fc_mel_config *cfg = r->cfg;
  int rc = fc_mel_config_validate(cfg, why, why_len);
  if (rc) return rc;
  r->dsize = fc_dtype_size(fc_dtype_decoded(cfg->dtype)); /* mq: the f32 it codes */
  int jl = fc_mel_config_json(cfg, r->cfg_json, sizeof r->cfg_json);
  if (jl < 0) {
    fc_why(why, why_len, "cannot encode the config");
    return jl;
  }
  r->cfg_json_len = (size_t)jl;
  fc_mel_config_digest(cfg, &r->cfg_digest);
  config_key(&r->cfg_digest, r->cfg_key);
  config_stamp(&r->cfg_digest, r->created_key, r->created);
  fc_device dev;
  char dev_why[256]; /* auto's fallback reason is not an error: keep it out of why */
  if (r->o.check_only) { /* nothing is computed: no device to start */
    dev = (fc_device){.kind = FC_DEVICE_CPU};
    backend = NULL;
  } else if (backend) {
    dev = r->o.device;
  } else if ((rc = fc_featurize_choose_device(&r->o.device, r->items, r->n, r->o.jobs,
                                              r->o.auto_gpu_min_seconds, &dev, dev_why,
                                              sizeof dev_why))) {
    if (rc != FC_ENODEVICE || !r->o.fallback_to_cpu) {
      fc_why(why, why_len, "%s", dev_why);
      return rc;
    }
    note_fallback(r, dev_why); /* the caller's choice of a GPU, gone since: the CPU */
    dev = (fc_device){.kind = FC_DEVICE_CPU};
  }
  r->device = dev.kind;
  r->fallback =
      dev.kind != FC_DEVICE_CPU && (r->o.device.kind == FC_DEVICE_AUTO || r->o.fallback_to_cpu);
  if (!(r->be = backend ? backend : fz_backend_for(&dev))) {
    fc_why(why, why_len, "no backend for this device in this build");
    return FC_ENODEVICE;
  }
  for (unsigned k = 0; k < r->n_parts; k++) {
    fz_part *p = &r->parts[k];
    if (!p->s || (!r->o.check_only && (fc_store_open_flags(p->s) & FC_STORE_RDONLY))) {
      fc_why(why, why_len, "store opened read-only");
      return EACCES;
    }
    /* A part with no audio entry at the start (a new store): no input is stored by its identity,
     * so the workers need not stat each file and look its entry up before reading it. */
    fc_rtxn *t;
    uint64_t entries = 1;
    if (fc_store_read_begin(p->s, &t) == 0) {
      const char *json;
      size_t len;
      if (fc_rtxn_count(t, FC_DB_AUDIO, &entries) != 0) entries = 1;
      p->cfg_stored = fc_rtxn_get_config(t, &r->cfg_digest, &json, &len) == 0;
      fc_rtxn_end(t);
    }
    p->no_entries = entries == 0;
  }
  const int stages = r->be->launch && cfg->dtype != FC_DTYPE_MQ; /* mq: coded per utterance */
  if (stages) {
    int hybrid;
    unsigned ring_chunks;
    size_t ring_samples;
    rc = fz_cuda_start_env(r->items, r->n, r->o.manifest != NULL, r->o.jobs,
                           r->o.auto_gpu_min_seconds, &hybrid, why, why_len);
    /* FC_CUDA_RING too, before the open: a bad value is the user's configuration error (exit 2),
     * not a device that failed to start, whose job auto's fallback would give the CPU */
    if (!rc)
      rc = fz_cuda_ring_env(r->o.jobs, &ring_chunks, &ring_samples, NULL, NULL, why, why_len);
    if (rc) return rc;
    r->batching = 1;
    r->submitters_left = r->o.jobs;
    r->st.compute_stage = 1;
    if (hybrid) { /* opened by the opener thread as the workers start (run_start) */
      r->hybrid = 1;
      r->open_dev = dev;
      return 0;
    }
  }
  double t_setup = fz_now();
  rc = r->be->open(cfg, &dev, r->o.jobs, &r->be_state, why, why_len);
  r->st.setup_seconds = fz_now() - t_setup;
  if (rc && r->fallback) {
    char reason[sizeof r->open_why];
    snprintf(reason, sizeof reason, "%s", why && why[0] ? why : fc_strerror(rc));
    return fall_back_to_cpu(r, reason, why, why_len);
  }
  if (!rc && stages) rc = stage_setup(r, why, why_len);
  return device_start_failed(r, rc, why, why_len);
}

/* The threads of a run besides the caller's (the caller is part 0's writer). */
typedef struct run_threads {
  fz_worker *workers;
  unsigned started; /* workers started */
  int stage_started; /* 0, 1 (the launch thread), 2 (and the completion thread) */
  int grow_started; /* the grower thread (the rest of the ring) */
  int workers_begun; /* the workers' start was tried: the writers run and every thread is joined */
  pthread_t launch, complete, grow;
} run_threads;

/* The staging ring's threads: launch, completion and, for a ring made as it fills, the grower.
 * Returns 0, or the error of a thread that could not be started (t says which were). */
static int start_stage_threads(fz_run *r, run_threads *t, char *why, size_t why_len) {
  int rc;
  if ((rc = pthread_create(&t->launch, NULL, fz_launch_main, r))) {
    fc_why(why, why_len, "cannot start the launch thread: %s", strerror(rc));
    return rc;
  }
  t->stage_started = 1;
  if ((rc = pthread_create(&t->complete, NULL, fz_complete_main, r))) {
    fc_why(why, why_len, "cannot start the completion thread: %s", strerror(rc));
    return rc;
  }
  t->stage_started = 2;
  /* The rest of the ring is made while its first chunk fills; without a thread for it, here
   * before the workers start (as a backend that makes it all at once). */
  if (fz_stage_growing(r)) {
    if (pthread_create(&t->grow, NULL, fz_grow_main, r) == 0)
      t->grow_started = 1;
    else
      fz_grow_main(r);
  }
  return 0;
}

/* Hybrid start: the opener thread opens the staging backend, sets its ring up and starts the
 * ring's threads while the workers compute on the CPU, then lets them stage. An open that fails
 * halts the run (the workers take no more items; what they computed is stored), or, when the job
 * may fall back (fz_run.fallback), leaves it to the workers on the CPU; either way the opener
 * stands in for the completion thread as the writers' producer, which never started. */
typedef struct opener_arg {
  fz_run *r;
  run_threads *t;
  double seconds; /* the open's wall seconds (the run's setup_seconds) */
} opener_arg;

static void *opener_main(void *arg) {
  opener_arg *a = arg;
  fz_run *r = a->r;
  fc_thread_name("open", -1);
  char why[sizeof r->open_why] = "";
  const double t0 = fz_now();
  int rc = r->be->open(r->cfg, &r->open_dev, r->o.jobs, &r->be_state, why, sizeof why);
  a->seconds = fz_now() - t0;
  if (rc && r->fallback) { /* nothing of the device to undo: the workers go on on the CPU */
    note_fallback(r, why[0] ? why : fc_strerror(rc));
    r->be_state = NULL;
    fz_queue_producer_done(r);
    return NULL;
  }
  if (!rc) rc = stage_setup(r, why, sizeof why);
  rc = device_start_failed(r, rc, why, sizeof why);
  if (!rc) rc = start_stage_threads(r, a->t, why, sizeof why);
  if (!rc) {
    atomic_store_explicit(&r->ring_ready, 1, memory_order_release);
    return NULL;
  }
  r->open_rc = rc;
  snprintf(r->open_why, sizeof r->open_why, "%s", why[0] ? why : fc_strerror(rc));
  atomic_store(&r->halt, 1);
  if (a->t->stage_started < 2) fz_queue_producer_done(r);
  return NULL;
}

/* The opener thread, joined once (its threads are then in t). */
static void join_opener(fz_run *r, opener_arg *a) {
  if (!r->opener_started) return;
  pthread_join(r->opener, NULL);
  r->opener_started = 0;
  r->st.setup_seconds = a->seconds;
}

/* The staging threads (or, hybrid, the opener thread), then the workers. Returns 0, or the error
 * of a thread that could not be started (the run then halts; workers never started count as
 * done). */
static int run_start(fz_run *r, run_threads *t, opener_arg *oa, char *why, size_t why_len) {
  int rc;
  if (!(t->workers = fc_calloc(r->o.jobs, sizeof *t->workers))) return ENOMEM;
  r->producers_left = r->o.jobs + (r->batching ? 1 : 0);
  if (r->hybrid) {
    *oa = (opener_arg){r, t, 0};
    if ((rc = pthread_create(&r->opener, NULL, opener_main, oa))) {
      fc_why(why, why_len, "cannot start the device's opener thread: %s", strerror(rc));
      return rc;
    }
    r->opener_started = 1;
  } else if (r->batching && (rc = start_stage_threads(r, t, why, why_len))) {
    return rc;
  }
  if ((rc = fz_feed_start(r))) { /* a manifest read as the workers go */
    fc_why(why, why_len, "cannot start the manifest's reader: %s", strerror(rc));
    return rc;
  }
  t->workers_begun = 1;
  for (unsigned w = 0; w < r->o.jobs; w++) {
    t->workers[w].r = r;
    t->workers[w].index = w;
    if ((rc = pthread_create(&t->workers[w].thread, NULL, fz_worker_main, &t->workers[w]))) {
      fc_why(why, why_len, "cannot start a worker thread: %s", strerror(rc));
      for (unsigned k = w; k < r->o.jobs; k++) { /* the ones never started */
        fz_queue_producer_done(r);
        if (r->batching) fz_stage_submitter_done(r);
      }
      atomic_store(&r->halt, 1);
      return rc;
    }
    t->started++;
  }
  return 0;
}

/* Writers of parts 1.. on their own threads (started after the workers: a writer that cannot
 * start halts the run, and its part's queue is drained as unstored), part 0's here; then every
 * thread joined and its times summed. Returns the first writer's error. */
static int run_write_and_join(fz_run *r, run_threads *t, opener_arg *oa, int rc, char *why,
                              size_t why_len) {
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
  for (unsigned w = 0; w < t->started; w++) {
    pthread_join(t->workers[w].thread, NULL);
    fz_times *tm = &t->workers[w].t;
    r->st.read_seconds += tm->read;
    r->st.hash_seconds += tm->hash;
    r->st.decode_seconds += tm->decode;
    r->st.compute_seconds += tm->compute;
    r->st.staging_seconds += tm->staging;
    r->st.queue_wait_seconds += tm->queue_wait;
    r->st.device_wait_seconds += tm->device_wait;
    r->st.cpu_computed += t->workers[w].cpu_computed;
    fc_mel_plan_free(t->workers[w].fallback);
  }
  join_opener(r, oa); /* the ring's threads are in t once it is joined */
  if (atomic_load(&r->fell_back)) { /* the CPU computed it all: its compute is the workers' */
    r->device = FC_DEVICE_CPU;
    r->st.compute_stage = 0;
  }
  if (t->stage_started) {
    pthread_join(t->launch, NULL);
    pthread_join(t->complete, NULL);
    t->stage_started = 0;
    r->st.compute_seconds += r->stage_busy;
  }
  if (t->grow_started) {
    pthread_join(t->grow, NULL);
    t->grow_started = 0;
  }
  r->st.staging_seconds += r->grow_seconds; /* the ring's other chunks, made as it ran */
  r->st.workers = t->started;
  r->st.writers = r->n_parts;
  for (unsigned k = 0; k < r->n_parts; k++) {
    fz_part *p = &r->parts[k];
    r->st.write_seconds += p->busy;
    r->st.writer_wait_seconds += p->wait;
    /* After a failed commit, workers may still have queued jobs: computed, never committed. */
    for (fz_job *j = p->head; j; j = j->next)
      if (j->kind == FZ_JOB_STORE) fz_report_unstored(r, j->index, wrc ? wrc : FC_EBADSTATE);
    fz_batch_free(p->head);
    p->head = p->tail = NULL;
  }
  /* Items never begun: failures of this job after a failed commit (one line for them all, the
   * caller's summary), else the run was stopped on purpose (stop flag, strict). */
  uint64_t never = fz_untaken(r); /* (a manifest: the rest of it read and counted) */
  if (r->o.manifest) r->st.total = r->taken + never;
  if (wrc || rc || r->open_rc)
    r->st.failed += never;
  else
    r->st.not_started += never;
  return wrc;
}

/* The staging threads of a run whose workers never started: nothing is in the ring. */
static void run_stop_stage(fz_run *r, run_threads *t, opener_arg *oa) {
  join_opener(r, oa);
  if (!t->stage_started) return;
  pthread_mutex_lock(&r->bmu);
  r->submitters_left = 0;
  pthread_cond_signal(&r->bcv_launch);
  pthread_mutex_unlock(&r->bmu);
  pthread_join(t->launch, NULL);
  if (t->stage_started == 2) pthread_join(t->complete, NULL);
  if (t->grow_started) pthread_join(t->grow, NULL); /* stops: no worker is left */
  t->stage_started = t->grow_started = 0;
}

int fz_pipeline_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
                    const fc_featurize_opts *opts, const fc_fz_backend *backend,
                    fc_featurize_stats *stats, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  if (stats) memset(stats, 0, sizeof *stats);
  fz_run *r = run_new(s, cfg, items, n, opts);
  if (!r) {
    refused(stats, n);
    return ENOMEM;
  }
  run_threads t = {0};
  opener_arg oa = {0};
  int ran = 0;
  int rc = run_configure(r, backend, why, why_len);
  if (!rc) {
    rc = run_start(r, &t, &oa, why, why_len);
    if (rc && !t.workers_begun) {
      run_stop_stage(r, &t, &oa); /* no worker was started: nothing is in the ring */
    } else {
      int wrc = run_write_and_join(r, &t, &oa, rc, why, why_len);
      ran = 1;
      if (rc) { /* a thread that could not start: its reason is said */
      } else if (r->open_rc) { /* hybrid start: the device could not be opened */
        rc = r->open_rc;
        fc_why(why, why_len, "%s", r->open_why);
      } else if (r->src_err && !wrc) { /* the manifest could not be read on: what was, is done */
        rc = r->src_err;
        fc_why(why, why_len, "%s", r->src_why);
        r->st.manifest_stopped = 1; /* its line a failed one: N of total shows the run cut short */
        r->st.total++;
        r->st.failed++;
      } else if (wrc) {
        rc = wrc;
        fc_why(why, why_len, "cannot write to the store: %s", fc_strerror(wrc));
      } else if (r->strict_err) {
        rc = r->strict_err;
      } else if (atomic_load(&r->interrupted)) {
        rc = FC_EINTR;
        if (atomic_load(&r->fell_back)) fc_why(why, why_len, "%s", r->open_why);
      } else if (atomic_load(&r->fell_back)) {
        fc_why(why, why_len, "%s", r->open_why); /* rc 0: why the CPU computed the job */
      }
    }
  }
  fz_stage_free(r);
  if (r->be && r->be_state) r->be->close(r->be_state);
  fc_mel_plan_free(r->cpu_plan);
  free(t.workers);
  r->st.wall_seconds = fz_now() - r->t0;
  if (!ran) r->st.not_started = n; /* refused before any work */
  r->st.fell_back_to_cpu = atomic_load(&r->fell_back);
  if (r->st.fell_back_to_cpu)
    snprintf(r->st.fell_back_why, sizeof r->st.fell_back_why, "%s", r->open_why);
  r->st.bound = fc_featurize_bound(&r->st, r->device);
  if (r->o.on_progress && t.started) r->o.on_progress(&r->st, r->o.user);
  if (stats) *stats = r->st;
  run_free(r);
  return rc;
}
