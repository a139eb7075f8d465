/* Internals of the featurize pipeline shared by featurize.c (workers, writer, the run) and
 * featurize_stage.c (the compute stage of a batching backend). Private to libcache/featurize/. */
#ifndef FC_FEATURIZE_INT_H
#define FC_FEATURIZE_INT_H

#include "featcache/fc_featurize.h"
#include "libcache/featurize/featurize_backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

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

  atomic_size_t next; /* next item to take */
  atomic_int halt; /* stop taking items: strict failure or a failed commit */
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
  size_t chunk_samples; /* be->max_samples: a launch's worth */
  uint64_t pending_max; /* samples allowed to wait: two launches' worth */
  double launch_wait; /* seconds the oldest pending job waits for a fuller launch */
  pthread_mutex_t bmu;
  pthread_cond_t bcv_work, bcv_space;
  fz_job *phead, *ptail;
  size_t p_count;
  uint64_t p_samples;
  unsigned submitters_left; /* workers still running */
  double stage_busy; /* the stage thread's compute time */
  double stage_wait; /* the stage thread blocked on the writer's full queue */
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

/* A user-facing reason for an error without a more specific one. */
static inline const char *plain_reason(int err) {
  switch (err) {
  case FC_EEMPTY: return "empty file";
  case FC_ETOOLONG: return "longer than the limit";
  case FC_EDECODE: return "cannot decode";
  default: break;
  }
  if (err > 0) return strerror(err);
  return fc_strerror(err);
}

double fz_now(void);
/* The CLOCK_MONOTONIC instant seconds_from_now ahead (for pthread_cond_timedwait). */
struct timespec fz_deadline(double seconds_from_now);
void fz_job_free(fz_job *j);
/* One FAILED event for item i (counts it; with strict, halts the run). */
void fz_report_failed(fz_run *r, size_t i, int err, const char *reason);
/* FAILED for an item computed but not committed because a write failed. */
void fz_report_unstored(fz_run *r, size_t i, int err);
/* Hand a finished job to the writer (blocks while the queue is full; the time into *waited).
 * Returns 0, or the writer's error: the job was not queued. */
int fz_queue_push(fz_run *r, fz_job *j, double *waited);

/* featurize_stage.c: hand a decoded job (x or x16 set) to the compute stage; the stage thread. */
void fz_submit(fz_run *r, fz_job *j, double *waited);
void *fz_stage_main(void *arg);
/* The samples as int16 when they are exactly 16-bit PCM, else NULL (featurize_stage.c). */
int16_t *fz_to_i16(const float *x, size_t n);

#endif
