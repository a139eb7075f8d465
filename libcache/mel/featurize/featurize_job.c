/* The job's lifecycle, at the bottom of the featurize pipeline: the clock, freeing jobs and
 * batches, and the events every stage reports through (fz_emit, fz_report_*). The stages
 * (featurize_source.c: the workers; featurize_compute.c and featurize_stage.c: the device;
 * featurize_sink.c: the writers) call down into this file; it calls none of them. */
#include "featcache/fc_featurize.h"

#include "libcache/mel/featurize/featurize_int.h"
#include "formats/common/alloc.h"
#include "formats/common/why.h"
#include "formats/common/thread_name.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  free(j->replaced);
  free(j->note);
  fz_hold_drop(j->hold); /* a staged job: its chunk goes back to the ring with its last job */
  if (j->run) fz_item_release(j->run, j->index);
  free(j);
}

void fz_batch_free(fz_job *j) {
  while (j) {
    fz_job *next = j->next;
    fz_job_free(j);
    j = next;
  }
}

/* ---- the items: the caller's array, or a manifest read as workers take them -------------------- */
static void item_free(fc_item *it) {
  if (!it) return;
  free(it->id);
  free(it->path);
  free(it->why);
  free(it);
}

/* A copy of what the pipeline needs of an item (not its texts). */
static fc_item *item_copy(const fc_item *src) {
  fc_item *it = fc_calloc(1, sizeof *it);
  if (!it) return NULL;
  it->line = src->line;
  it->err = src->err;
  it->offset = src->offset;
  it->duration = src->duration;
  if ((src->id && !(it->id = fc_strdup(src->id))) ||
      (src->path && !(it->path = fc_strdup(src->path))) ||
      (src->why && !(it->why = fc_strdup(src->why)))) {
    item_free(it);
    return NULL;
  }
  return it;
}

/* Put item (index i) in the table of items in flight; caller holds src_mu. */
static int live_put(fz_run *r, size_t i, fc_item *it) {
  if (!r->live_cap || r->live[i % r->live_cap].item) { /* grow: the window outlived the table */
    size_t cap = r->live_cap ? 2 * r->live_cap : 256;
    for (;;) {
      struct fz_live *t = fc_calloc(cap, sizeof *t);
      if (!t) return ENOMEM;
      int clash = 0;
      for (size_t k = 0; k < r->live_cap && !clash; k++)
        if (r->live[k].item) {
          struct fz_live *d = &t[r->live[k].index % cap];
          if (d->item) clash = 1;
          *d = r->live[k];
        }
      if (!clash && !t[i % cap].item) {
        free(r->live);
        r->live = t;
        r->live_cap = cap;
        break;
      }
      free(t);
      cap *= 2;
    }
  }
  r->live[i % r->live_cap] = (struct fz_live){i, it, 1};
  return 0;
}

fz_job *fz_job_new(fz_run *r, size_t i) {
  fz_job *j = fc_calloc(1, sizeof *j);
  if (!j) return NULL;
  j->index = i;
  if (r->o.manifest) {
    j->run = r;
    pthread_mutex_lock(&r->src_mu);
    r->live[i % r->live_cap].refs++;
    pthread_mutex_unlock(&r->src_mu);
  }
  return j;
}

void fz_item_release(fz_run *r, size_t i) {
  if (!r->o.manifest) return;
  pthread_mutex_lock(&r->src_mu);
  struct fz_live *l = &r->live[i % r->live_cap];
  if (l->item && l->index == i && --l->refs == 0) {
    item_free(l->item);
    l->item = NULL;
  }
  pthread_mutex_unlock(&r->src_mu);
}

const fc_item *fz_item(fz_run *r, size_t i) {
  if (!r->o.manifest) return &r->items[i];
  pthread_mutex_lock(&r->src_mu);
  const fc_item *it = r->live[i % r->live_cap].item;
  pthread_mutex_unlock(&r->src_mu);
  return it;
}

/* Items the feed fills or empties by between wake-ups (of the workers waiting on an empty feed,
 * of the reader waiting on a full one). */
#define FEED_WAKE 16

/* The reader thread's on_item: a copy into the feed, waiting for room; once the run takes no
 * more, items are only counted. */
static int feed_item(const fc_item *src, void *user) {
  fz_run *r = user;
  fc_item *it = item_copy(src);
  if (!it) return ENOMEM;
  pthread_mutex_lock(&r->src_mu);
  while (r->feed_n == r->feed_cap && !r->feed_stop) pthread_cond_wait(&r->feed_cv, &r->src_mu);
  if (r->feed_stop) {
    r->drained++;
    item_free(it);
  } else {
    r->feed[(r->feed_head + r->feed_n++) % r->feed_cap] = it;
    /* Workers wait only on an empty feed; they are woken once it holds a few items (or at the
     * end), not for each: when they are faster than the reader, a wake-up per item is a context
     * switch per item (a no-op rerun of 100k inputs: ~45k of them, more time than its work). */
    if (r->feed_n == FEED_WAKE) pthread_cond_broadcast(&r->feed_cv);
  }
  pthread_mutex_unlock(&r->src_mu);
  return 0;
}

static void *reader_main(void *arg) {
  fz_run *r = arg;
  fc_thread_name("manifest", -1);
  fc_manifest_opts mo = {0};
  if (r->o.manifest_opts) mo = *r->o.manifest_opts;
  mo.on_item = feed_item;
  mo.user = r;
  fc_item_list none;
  char why[200] = "";
  int rc = fc_manifest_read(r->o.manifest, &mo, &none, why, sizeof why);
  pthread_mutex_lock(&r->src_mu);
  r->feed_done = 1;
  if (rc) {
    r->src_err = rc;
    fc_why(r->src_why, sizeof r->src_why, "%s: %s", FC_WHY_NAME(r->o.manifest),
           why[0] ? why : fc_strerror(rc));
  }
  pthread_cond_broadcast(&r->feed_cv);
  pthread_mutex_unlock(&r->src_mu);
  return NULL;
}

int fz_feed_start(fz_run *r) {
  if (!r->o.manifest) return 0;
  r->feed_cap = 4 * (size_t)r->o.jobs + 64; /* > 2 * FEED_WAKE */
  if (!(r->feed = fc_calloc(r->feed_cap, sizeof *r->feed))) return ENOMEM;
  int rc = pthread_create(&r->reader, NULL, reader_main, r);
  r->reader_started = rc == 0;
  return rc;
}

int fz_take(fz_run *r, size_t *i) {
  if (!r->o.manifest) {
    *i = atomic_fetch_add(&r->next, 1);
    return *i < r->n;
  }
  pthread_mutex_lock(&r->src_mu);
  while (r->feed_n == 0 && !r->feed_done) pthread_cond_wait(&r->feed_cv, &r->src_mu);
  int got = 0;
  if (r->feed_n) {
    fc_item *it = r->feed[r->feed_head];
    r->feed_head = (r->feed_head + 1) % r->feed_cap;
    /* the reader waits on a full feed: woken once there is room for a few, not for each */
    if (r->feed_n-- == r->feed_cap - FEED_WAKE + 1) pthread_cond_broadcast(&r->feed_cv);
    if (live_put(r, r->taken, it)) { /* no memory for the table: the run ends as on an error */
      item_free(it);
      if (!r->src_err) {
        r->src_err = ENOMEM;
        snprintf(r->src_why, sizeof r->src_why, "out of memory");
      }
    } else {
      *i = r->taken++;
      got = 1;
    }
  }
  pthread_mutex_unlock(&r->src_mu);
  return got;
}

int fz_more(fz_run *r) {
  if (!r->o.manifest) return atomic_load(&r->next) < r->n;
  pthread_mutex_lock(&r->src_mu);
  int more = r->feed_n > 0 || !r->feed_done;
  pthread_mutex_unlock(&r->src_mu);
  return more;
}

size_t fz_untaken(fz_run *r) {
  if (!r->o.manifest) {
    size_t next = atomic_load(&r->next);
    return next < r->n ? r->n - next : 0;
  }
  pthread_mutex_lock(&r->src_mu);
  r->feed_stop = 1; /* the reader thread reads on, counting */
  pthread_cond_broadcast(&r->feed_cv);
  pthread_mutex_unlock(&r->src_mu);
  if (r->reader_started) pthread_join(r->reader, NULL);
  r->reader_started = 0;
  size_t left = r->drained + r->feed_n;
  for (; r->feed_n; r->feed_n--) {
    item_free(r->feed[r->feed_head]);
    r->feed_head = (r->feed_head + 1) % r->feed_cap;
  }
  r->drained = 0;
  return left;
}

void fz_live_free(fz_run *r) {
  if (r->reader_started) (void)fz_untaken(r); /* a run that ended before its workers ran */
  for (size_t k = 0; k < r->live_cap; k++) item_free(r->live[k].item);
  free(r->live);
  free(r->feed);
  r->live = NULL;
  r->live_cap = 0;
}

void fz_emit(fz_run *r, fc_featurize_event *ev) {
  const fc_item *it = fz_item(r, ev->index);
  ev->id = it->id;
  ev->path = it->path;
  ev->line = it->line;
  ev->manifest = it->err != 0 || !it->path || !it->path[0] || !it->id; /* (no path: the line) */
  if (r->o.on_event) r->o.on_event(ev, r->o.user);
  /* A check commits nothing, so no writer reports progress: its items do, ten times a second. */
  if (r->o.check_only && r->o.on_progress) {
    const double now = fz_now();
    if (now - r->check_shown >= 0.1) {
      r->check_shown = now;
      r->st.wall_seconds = now - r->t0;
      r->o.on_progress(&r->st, r->o.user);
    }
  }
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
