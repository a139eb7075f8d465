/* Internals of the featurize pipeline, shared by its files (featurize.c says which does what):
 * the job, the run, and each stage's entry points, listed from the bottom of the line (the job's
 * lifecycle) up. Private to libcache/mel/featurize/. */
#ifndef FC_FEATURIZE_INT_H
#define FC_FEATURIZE_INT_H

#include "featcache/fc_featurize.h"
#include "libcache/mel/featurize/featurize_backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* What a job asks of its writer (docs/FORMAT.md "Failure record"). */
typedef enum fz_job_kind {
  FZ_JOB_STORE = 0, /* the record (unless stored already) and the audio entry */
  FZ_JOB_FAIL, /* the id's failure record (fail): reported already, counted as failed */
  FZ_JOB_CLEAR /* only delete the id's failure record: the id was skipped as stored */
} fz_job_kind;

/* A hold on memory that jobs point into (a staging chunk's output): refs jobs hold it; the last
 * one dropped (fz_hold_drop, from fz_job_free) calls release. */
typedef struct fz_hold {
  atomic_uint refs;
  void (*release)(struct fz_hold *h);
} fz_hold;

static inline void fz_hold_drop(fz_hold *h) {
  if (h && atomic_fetch_sub(&h->refs, 1) == 1) h->release(h);
}

/* One utterance on its way to the store. Its feat record is one of: made by its worker (record,
 * record_len: the CPU path); the features in a staging chunk's output (feat, feat_len bytes in the
 * config's dtype, held by hold until the job is freed), from which the writer makes the record in
 * the store's page (fz_fill_record); neither: the record is stored already, only the audio entry
 * is new. */
typedef struct fz_job {
  struct fz_job *next;
  size_t index;
  struct fz_run *run; /* set by fz_job_new: the job holds its item until it is freed */
  int kind; /* fz_job_kind */
  int clear_fail; /* STORE: delete the id's failure record in the same transaction */
  fc_digest key;
  uint8_t *record;
  size_t record_len;
  const void *feat;
  size_t feat_len;
  fz_hold *hold;
  uint8_t *entry; /* STORE: the audio entry; FAIL: the failure record */
  size_t entry_len;
  uint64_t frames;
  double seconds;
  int refresh; /* only the entry, rewritten for its source's new identity: reported SKIPPED */
  char *replaced; /* STORED: the entry's rewrite replaces another file's (the event's replaced) */
  char *note; /* STORED: a warning about its source (the event's note), or NULL */
  uint32_t source_rate, source_channels; /* STORE: the source's, for the event */
  /* STORE, once committed: its record's put met the record there (FZ_KEPT_RECORD; set too for a
   * job that links a record found at the lookup), its entry's the same entry (FZ_KEPT_ENTRY) or
   * an entry of the same audio naming another file (FZ_KEPT_AUDIO: a copy, a moved file) */
  unsigned kept;
  int entry_there; /* STORE: the id's entry named this file as it is at the lookup already */
  int audio_there; /* STORE: the id's entry held this audio at the lookup (whatever file it named) */
} fz_job;
enum { FZ_KEPT_RECORD = 1, FZ_KEPT_ENTRY = 2, FZ_KEPT_AUDIO = 4 };

typedef struct fz_chunk fz_chunk; /* featurize_stage.c */

/* One writer: a part of the store (the store itself when it is not split), its queue of finished
 * jobs (under fz_run.mu) and its thread's stage times. */
typedef struct fz_run fz_run;
typedef struct fz_part {
  fz_run *run;
  fc_store *s;
  fz_job *head, *tail;
  size_t count;
  double busy, wait; /* commit + sync seconds; seconds waiting for jobs */
  int rc; /* its first commit error */
  pthread_t thread;
  int started;
  int no_entries; /* the part held no audio entry when the run began */
  int cfg_stored; /* the part held the config at the start, or a batch stored it: later batches
                     require it there (FC_PUT_REQUIRE), not a drop meanwhile */
  /* a lookup found a record of this run stored with its config there (another run beside this
   * one stored it since the open): from then on the commits require the config, as with
   * cfg_stored, for what the run counted stored is gone if it was dropped since (set by the
   * workers, read by the writer) */
  atomic_int cfg_seen;
} fz_part;

struct fz_run {
  fc_store *s; /* parts[0].s */
  fz_part *parts; /* n_parts writers; a job goes to part fc_store_part_of_id(id) */
  unsigned n_parts;
  const fc_mel_config *cfg;
  fc_digest cfg_digest;
  char cfg_key[37];
  char created_key[41], created[21]; /* meta created/<hex> and the time (config_stamp) */
  char cfg_json[1024];
  size_t cfg_json_len;
  const fc_item *items; /* the items [0, n), or, with a source (opts.source), none: */
  size_t n;
  char *cwd; /* the working directory at the start: relative source paths are stored under it */
  /* items of opts.manifest, read by a reader thread into the feed as workers take them (fz_take),
   * each held while a worker or a job needs it: at most the items in flight, whatever the
   * manifest's length. Under src_mu. */
  pthread_mutex_t src_mu;
  pthread_cond_t feed_cv; /* room in the feed, items in it, or the end */
  fc_item **feed; /* a ring of feed_cap */
  size_t feed_cap, feed_head, feed_n;
  int feed_done; /* the reader thread read to the end (or could not read on: src_err) */
  int feed_stop; /* the run takes no more: the reader thread counts the rest (drained) */
  size_t drained;
  pthread_t reader;
  int reader_started;
  int src_err;
  char src_why[200];
  size_t taken; /* items taken from the feed */
  struct fz_live {
    size_t index;
    fc_item *item; /* NULL: a free slot */
    unsigned refs; /* the worker that took it, and each job that names it */
  } * live; /* slot index % cap */
  size_t live_cap;
  fc_featurize_opts o;
  const fc_fz_backend *be;
  void *be_state;
  size_t dsize;

  atomic_size_t next; /* next item to take */
  atomic_int halt; /* stop taking items: strict failure or a failed commit */
  atomic_int interrupted; /* a worker saw *stop set with items left */

  pthread_mutex_t mu; /* the writers' queues (parts[].head), bounded together */
  pthread_cond_t cv_space, cv_items;
  size_t q_count;
  uint64_t q_bytes;
  unsigned producers_left;
  int fatal; /* a commit failed: workers drop what they would queue */

  pthread_mutex_t ev_mu; /* events, stats, progress */
  fc_featurize_stats st;
  int strict_err;
  double t0;
  double check_shown; /* a check (opts.check_only): when on_progress was last called */
  fc_device_kind device;

  /* The staging ring of a staging backend (be->launch; featurize_stage.c): workers reserve room
   * in its chunks with an atomic and write their samples there, the launch thread launches them,
   * the completion thread hands their features to the writers, which free the chunks. fill_seq is
   * read without the lock (a worker's fast path); everything else below is under bmu, taken a few
   * times per chunk, never per utterance. */
  int batching;
  fc_fz_stage_info ring;
  fz_chunk *chunks; /* ring.chunks */
  /* The chunks in use: ring.chunks, or fewer when the backend could not make the rest (its
   * stage_grow failed); chunk seq % ring_live holds use seq. Changed once at most, under bmu, before
   * any use >= its new value is opened. */
  atomic_uint ring_live;
  unsigned made; /* chunks made (the rest are made by the grower thread, in order) */
  double grow_seconds; /* the grower's thread CPU seconds making chunks (staging time) */
  pthread_mutex_t bmu;
  pthread_cond_t bcv_launch, bcv_done, bcv_space; /* the launch thread, the completion thread,
                                                     workers waiting for a chunk to open */
  _Atomic uint64_t fill_seq; /* the use of the ring being filled (chunk fill_seq % ring_live) */
  uint64_t launch_seq, done_seq; /* uses launched, completed (< fill_seq: sealed) */
  unsigned in_flight; /* chunks launched and not yet completed */
  unsigned submitters_left; /* workers still running */
  int launcher_done;
  double busy_since; /* since when in_flight > 0 */
  double stage_busy; /* wall seconds with a chunk in flight */

  /* Hybrid start (docs/featurize.md): the staging backend opened on the opener thread while the
   * workers compute on the CPU (producer 1); once it is open, the ring set up and its threads
   * started, ring_ready is set (release: the ring and be_state are visible to a worker that sees
   * it) and the workers stage from their next item on. An open that fails halts the run:
   * open_rc, open_why; or, with fallback (the device was auto's choice), leaves the job to the
   * CPU: fell_back, its reason in open_why. */
  int hybrid;
  fc_device open_dev; /* the device the opener opens */
  atomic_int ring_ready;
  pthread_t opener;
  int opener_started;
  int open_rc;
  int fallback; /* a device that cannot be opened leaves the job to the CPU */
  atomic_int fell_back;
  char open_why[256];
  pthread_mutex_t plan_mu;
  fc_mel_plan *cpu_plan; /* the workers' CPU plans are clones of it, made by the first worker that
                            computes on the CPU (under plan_mu) */
};

/* Does a worker stage its next item (a staging backend, its ring ready)? Else it computes it on
 * the CPU. */
static inline int fz_staging(fz_run *r) {
  return r->batching && (!r->hybrid || atomic_load_explicit(&r->ring_ready, memory_order_acquire));
}

/* One worker's stages, summed into the stats at the end (its own: no lock): thread CPU seconds
 * of each stage, and the wall seconds it waited on a full queue or for a free staging chunk. */
typedef struct fz_times {
  double read, hash, decode, staging, compute, queue_wait;
  double device_wait; /* of queue_wait: waiting for a staging chunk while it was on the device */
} fz_times;

typedef struct fz_worker {
  fz_run *r;
  unsigned index;
  pthread_t thread;
  fz_times t;
  /* CPU plan for utterances the backend refuses as too long (a GPU's staging buffer), made on
   * the first such utterance. */
  fc_mel_plan *fallback;
  uint64_t cpu_computed; /* records whose features it computed on the CPU (producer 1) */
  /* The file being processed: one buffer from file to file (no fresh pages to fault in per file),
   * given back after a file of more than FZ_KEEP_BUFFER bytes. */
  uint8_t *buf;
  size_t buf_cap;
} fz_worker;

enum { FZ_KEEP_BUFFER = 32 << 20 };

/* An error of this process or system rather than of the input: out of memory, out of file
 * descriptors (EMFILE: the process's limit, ulimit -n; ENFILE: the system's). Reported, never
 * recorded as the input's failure: the next run tries the input as new. */
static inline int fz_not_the_input(int err) {
  return err == ENOMEM || err == EMFILE || err == ENFILE;
}

/* A user-facing reason for an error without a more specific one. */
static inline const char *plain_reason(int err) {
  switch (err) {
  case FC_EEMPTY: return "empty file";
  case FC_ETOOLONG: return "longer than the limit";
  case FC_EDECODE: return "cannot decode";
  case EMFILE: return "Too many open files (the limit of this process: ulimit -n)";
  case ENODEV: return "not a regular file or a pipe (a device)"; /* audio.c open_checked */
  default: break;
  }
  if (err > 0) return strerror(err);
  return fc_strerror(err);
}

/* Features past float16's range: a linear mel (log none) of loud audio can exceed 65504, which
 * float16 rounds to an infinity. The first value of feat (nvals halves, the record's payload) that
 * is not finite, or nvals; only f16 with no log is looked at (a log bounds the values far below
 * it, and f32 and bf16 have float's range). why: the reason, naming frame and bin. */
static inline size_t fz_f16_overflow(const fc_mel_config *cfg, const void *feat, size_t nvals,
                                     char *why, size_t why_len) {
  if (cfg->dtype != FC_DTYPE_F16 || cfg->log != FC_LOG_NONE) return nvals;
  const unsigned char *p = feat;
  for (size_t i = 0; i < nvals; i++) {
    if ((p[2 * i + 1] & 0x7C) != 0x7C) continue; /* exponent all ones: an infinity (or NaN) */
    snprintf(why, why_len,
             "features past float16's range (65504) at frame %zu, bin %zu: a linear mel (--log "
             "none) this loud needs --dtype f32 or bf16",
             i / cfg->n_mels, i % cfg->n_mels);
    return i;
  }
  return nvals;
}

/* ---- the job's lifecycle (featurize_job.c): at the bottom, calls no stage --------------------- */
/* Seconds on CLOCK_MONOTONIC (deadlines, waits, wall time) and on this thread's CPU clock (the
 * stages' busy seconds: docs/featurize.md "Stage accounting"). */
double fz_now(void);
double fz_cpu_now(void);
/* The CLOCK_MONOTONIC instant seconds_from_now ahead (for pthread_cond_timedwait). */
struct timespec fz_deadline(double seconds_from_now);
/* Free a job (a staged job drops its hold: its chunk goes back to the ring with its last job), or
 * a list of them. */
void fz_job_free(fz_job *j);
void fz_batch_free(fz_job *j);
/* One event to the caller's callback (its id, path and line filled in); call under ev_mu. */
void fz_emit(fz_run *r, fc_featurize_event *ev);
/* Item i of the run: valid while its worker processes it, and while a job names it. */
const fc_item *fz_item(fz_run *r, size_t i);
/* A job for item i (zeroed, index set), holding the item until fz_job_free; NULL: no memory. */
fz_job *fz_job_new(fz_run *r, size_t i);
/* The worker is done with item i (its jobs, if any, still hold it). */
void fz_item_release(fz_run *r, size_t i);
/* Take the next item for a worker: 1 and *i, or 0 when there are no more (or the manifest could
 * not be read on: src_err). */
int fz_take(fz_run *r, size_t *i);
/* May fz_take give more? */
int fz_more(fz_run *r);
/* With a manifest: start the reader thread (0, or an error: nothing started). */
int fz_feed_start(fz_run *r);
/* The items never taken (the rest of the manifest read to its end and counted: a run that
 * stopped early); the reader thread is joined. Once, when the workers are done. */
size_t fz_untaken(fz_run *r);
void fz_live_free(fz_run *r);
/* One FAILED event for item i (counts it; with strict, halts the run). */
void fz_report_failed(fz_run *r, size_t i, int err, const char *reason);
/* FAILED for an item computed but not committed because a write failed. */
void fz_report_unstored(fz_run *r, size_t i, int err);

/* ---- the sink (featurize_sink.c): the writers ---------------------------------------------------- */
/* Item i failed because of its input (its file or its manifest line): the FAILED event, and its
 * failure record queued for the writer (when the item has a valid id). */
void fz_input_failed(fz_run *r, size_t i, int err, const char *reason);
/* The source path stored for path: absolute, "." and ".." resolved lexically against r->cwd
 * (symbolic links kept, as os.path.abspath does). malloc'd; NULL when out of memory. */
char *fz_source_path(const fz_run *r, const char *path);
/* The part (writer) of item i. */
unsigned fz_part_of(fz_run *r, size_t i);
/* Hand a finished job to its writer (blocks while the queue is full; the time into *waited).
 * Returns 0, or the writer's error: the job was not queued. */
int fz_queue_push(fz_run *r, fz_job *j, double *waited);
/* Hand a completed chunk's n jobs (each with feat and hold) to their writers at once; never blocks
 * (their memory is the ring's, bounded by it). A job the writers cannot take (a commit failed) is
 * reported unstored and freed. */
void fz_queue_push_staged(fz_run *r, fz_job *const *jobs, size_t n);
/* A producer (a worker, the completion thread) is done: once none is left, the writers finish. */
void fz_queue_producer_done(fz_run *r);
/* The writer loop of part p (returns 0 or its first commit error, also left in p->rc), and the
 * same as a thread's start routine (parts 1..). */
int fz_writer_loop(fz_run *r, fz_part *p);
void *fz_writer_main(void *arg);

/* ---- the device: the staging ring (featurize_stage.c) ------------------------------------------ */
/* The ring's chunks (r->ring set, clamped to what a chunk can count; 0, ENOMEM, or EINVAL for a
 * backend without staging buffers) and their release (also after a failed init). */
int fz_stage_init(fz_run *r);
void fz_stage_free(fz_run *r);
/* Does an utterance of n samples fit a chunk (else its worker computes it on the CPU)? */
int fz_stage_fits(const fz_run *r, size_t n);
/* A worker's utterance (j->frames and its entry set) into the ring: n samples at x, int16 (as
 * read from a 16-bit file: the device converts them) when i16, else float; x stays the caller's.
 * Returns once they are in a chunk's staging buffer. Its time goes to tm. */
void fz_stage_put(fz_run *r, fz_job *j, const void *x, size_t n, int i16, fz_times *tm);
/* fz_stage_put in two steps, for a worker that reads a file's samples straight into staging:
 * fz_stage_reserve makes room for n samples (frames of features) in the chunk being filled and
 * returns where they go (int16 when i16, else float; blocks while the ring is full); the caller
 * writes them there and then must call fz_stage_commit once, with its job (j->frames as reserved,
 * its entry set), or with NULL to give the room up (the samples need not be written then): the
 * chunk is launched only when every reservation in it is committed. Nothing between the two
 * calls may wait on the ring. */
typedef struct fz_slot {
  fz_chunk *chunk;
  size_t k;
} fz_slot;
void *fz_stage_reserve(fz_run *r, size_t n, uint64_t frames, int i16, fz_slot *slot, fz_times *tm);
void fz_stage_commit(fz_run *r, const fz_slot *slot, fz_job *j);
/* A worker is done putting (once none is left, the filling chunk is launched as it is). */
void fz_stage_submitter_done(fz_run *r);
/* The launch thread and the completion thread. */
void *fz_launch_main(void *arg);
void *fz_complete_main(void *arg);
/* Does the ring have chunks left to make (a backend with stage_grow)? Then the grower thread makes
 * them, in order, while the first ones fill; it stops early when no worker is left. */
int fz_stage_growing(const fz_run *r);
void *fz_grow_main(void *arg);

/* ---- the device: the CPU's side (featurize_compute.c) ------------------------------------------ */
/* Item j's record (j->frames set) from its n decoded samples at x, by worker w: computed on the
 * backend, or on the CPU when the backend refuses it as too long (producer 1), converted to the
 * dtype or coded, with its header. Returns 0, or an error with the reason in why (j->record may be
 * set: fz_job_free frees it). Its time goes to w->t (compute; the checksum to hash). */
int fz_compute_record(fz_run *r, fz_worker *w, fz_job *j, const float *x, size_t n, char *why,
                      size_t why_len);

/* ---- the source (featurize_source.c): the workers' start routine -------------------------------- */
void *fz_worker_main(void *arg);

#endif
