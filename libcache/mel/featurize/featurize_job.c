/* The job's lifecycle, at the bottom of the featurize pipeline: the clock, freeing jobs and
 * batches, and the events every stage reports through (fz_emit, fz_report_*). The stages
 * (featurize_source.c: the workers; featurize_compute.c and featurize_stage.c: the device;
 * featurize_sink.c: the writers) call down into this file; it calls none of them. */
#include "featcache/fc_featurize.h"

#include "libcache/mel/featurize/featurize_int.h"
#include "formats/common/why.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

double fz_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double fz_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct timespec fz_deadline(double seconds_from_now) {
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

void fz_job_free(fz_job *j) {
  if (!j) return;
  free(j->record);
  free(j->entry);
  fz_hold_drop(j->hold); /* a staged job: its chunk goes back to the ring with its last job */
  free(j);
}

void fz_batch_free(fz_job *j) {
  while (j) {
    fz_job *next = j->next;
    fz_job_free(j);
    j = next;
  }
}

void fz_emit(fz_run *r, fc_featurize_event *ev) {
  const fc_item *it = &r->items[ev->index];
  ev->id = it->id;
  ev->path = it->path;
  ev->line = it->line;
  if (r->o.on_event) r->o.on_event(ev, r->o.user);
}

void fz_report_failed(fz_run *r, size_t i, int err, const char *reason) {
  fc_featurize_event ev = {.status = FC_ITEM_FAILED, .index = i, .err = err ? err : FC_EDECODE};
  ev.reason = reason && *reason ? reason : plain_reason(ev.err);
  pthread_mutex_lock(&r->ev_mu);
  r->st.failed++;
  fz_emit(r, &ev);
  if (r->o.strict && !r->strict_err) {
    r->strict_err = ev.err;
    atomic_store(&r->halt, 1);
  }
  pthread_mutex_unlock(&r->ev_mu);
}

/* The reason given for an item computed but never committed because a commit failed. */
void fz_report_unstored(fz_run *r, size_t i, int err) {
  char why[200];
  fc_why(why, sizeof why, "not stored: a write to the store failed (%s)", fc_strerror(err));
  fz_report_failed(r, i, err, why);
}
