/* The sink of the featurize pipeline, its last stage: the writers (featurize_int.h,
 * docs/featurize.md "Pipeline"). The queue the workers and the staging ring's completion thread
 * push finished jobs into, and the writer loop that batches them into write transactions: each
 * utterance's feat record and audio entry in one transaction with meta cfg/<hex> and created/<hex>
 * (NOOVERWRITE: a no-op once stored), so no record exists without its config; a batch is committed when it reaches
 * batch_records or batch_bytes or is batch_seconds old, or the work is done, or (staged jobs) as
 * soon as nothing more is queued. A plain store has one writer, the calling thread; a split store
 * (docs/FORMAT.md "Split stores") one per part, parts 1.. on their own threads, each with its own
 * list in the queue (the bounds hold for all of them together) and its own transactions on its
 * own LMDB environment. A job goes to the part of its id (fc_store_part_of_id). A staged job's
 * record is made in the store's page (fc_put_fill): its features copied out of the device's
 * output and checksummed there; its hold on its chunk goes as soon as the store is done with the
 * output (fill_done), before the commit as a rule. What the writers store of an input that failed
 * is here too: its failure record (fz_input_failed), with its source path as audio entries store
 * it (fz_source_path). Calls down the line only: job (featurize_int.h). */
#include "libcache/mel/featurize/featurize_int.h"
#include "featcache/fc_format.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/thread_name.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- what the writers store of an input: its path, its failure record ------------------------ */
char *fz_source_path(const fz_run *r, const char *path) {
  if (path[0] != '/' && !r->cwd) return fc_strdup(path); /* no working directory: as given */
  const char *base = path[0] == '/' ? "" : r->cwd;
  size_t bl = strlen(base), pl = strlen(path);
  char *out = fc_malloc(bl + pl + 3);
  if (!out) return NULL;
  size_t o = 0; /* out[0..o) is "" or "/a/b" */
  for (int part = 0; part < 2; part++) {
    const char *p = part ? path : base;
    while (*p) {
      while (*p == '/') p++;
      const char *e = p;
      while (*e && *e != '/') e++;
      size_t n = (size_t)(e - p);
      if (n == 0 || (n == 1 && p[0] == '.')) {
        /* nothing */
      } else if (n == 2 && p[0] == '.' && p[1] == '.') {
        while (o > 0 && out[--o] != '/') {}
      } else {
        out[o++] = '/';
        memcpy(out + o, p, n);
        o += n;
      }
      p = e;
    }
  }
  if (o == 0) out[o++] = '/';
  out[o] = '\0';
  return out;
}

/* The failure record of item i (docs/FORMAT.md "Failure record") to its part's writer. */
void fz_input_failed(fz_run *r, size_t i, int err, const char *reason) {
  fz_report_failed(r, i, err, reason);
  if (r->o.check_only) return; /* a check writes nothing */
  const fc_item *it = fz_item(r, i);
  if (!it->id || fc_id_check(it->id, strlen(it->id)) != 0) return; /* nothing to key it by */
  if (it->err == FC_EDUPLICATE) return; /* the id is its first input's: not this one's to record */
  if (!reason || !*reason) reason = plain_reason(err ? err : FC_EDECODE);
  char *src = it->path && it->path[0] ? fz_source_path(r, it->path) : NULL;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  fc_failure f = {.config = r->cfg_digest,
                  .time_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
                  .err = err ? err : FC_EDECODE,
                  .source = src ? src : "",
                  .source_len = src ? strlen(src) : 0,
                  .reason = reason,
                  .reason_len = strlen(reason)};
  fz_job *j = fz_job_new(r, i);
  if (j) j->entry = fc_malloc(fc_failure_size(&f));
  if (j && j->entry) {
    j->kind = FZ_JOB_FAIL;
    j->entry_len = fc_failure_size(&f);
    fc_failure_encode(&f, j->entry);
    double waited = 0;
    if (fz_queue_push(r, j, &waited) == 0) j = NULL; /* else the store is failing: it says so */
  }
  fz_job_free(j);
  free(src);
}

/* ---- the queue -------------------------------------------------------------------------------- */
/* What a job counts against the queue's bounds: a staged job nothing (its features are in the
 * ring's memory, bounded by the ring), any other its record and entry. */
static size_t job_bytes(const fz_job *j) {
  return j->hold ? 0 : j->record_len + j->entry_len + sizeof *j;
}
static size_t job_counts(const fz_job *j) { return j->hold ? 0 : 1; }

/* What a job puts into a write transaction. */
static size_t job_write_bytes(const fz_job *j) {
  return (j->feat ? FC_RECORD_HEADER_SIZE + j->feat_len : j->record_len) + j->entry_len;
}

/* The part (writer) of item i: its id's shard among the parts. */
unsigned fz_part_of(fz_run *r, size_t i) {
  if (r->n_parts < 2) return 0;
  const char *id = fz_item(r, i)->id;
  return fc_store_part_of_id(id, strlen(id), r->n_parts);
}

/* Append j to its part's queue (r->mu held). */
static void part_append(fz_part *p, fz_job *j) {
  if (p->tail)
    p->tail->next = j;
  else
    p->head = j;
  p->tail = j;
  p->count++;
}

/* Hand a job to the writer; blocks while the queue is full (the time goes to *waited). Returns 0,
 * or the writer's error when a commit failed: the job is not queued (the caller reports it). */
int fz_queue_push(fz_run *r, fz_job *j, double *waited) {
  size_t b = job_bytes(j);
  fz_part *p = &r->parts[fz_part_of(r, j->index)];
  pthread_mutex_lock(&r->mu);
  if (!r->fatal && r->q_count > 0 &&
      (r->q_count >= r->o.queue_records || r->q_bytes + b > r->o.queue_bytes)) {
    double t = fz_now();
    while (!r->fatal && r->q_count > 0 &&
           (r->q_count >= r->o.queue_records || r->q_bytes + b > r->o.queue_bytes))
      pthread_cond_wait(&r->cv_space, &r->mu);
    *waited += fz_now() - t;
  }
  if (r->fatal) {
    int rc = r->fatal;
    pthread_mutex_unlock(&r->mu);
    return rc;
  }
  part_append(p, j);
  r->q_count += job_counts(j);
  r->q_bytes += b;
  if (r->n_parts > 1) /* the writers share cv_items: wake them all, the right one takes it */
    pthread_cond_broadcast(&r->cv_items);
  else
    pthread_cond_signal(&r->cv_items);
  pthread_mutex_unlock(&r->mu);
  return 0;
}

void fz_queue_producer_done(fz_run *r) {
  pthread_mutex_lock(&r->mu);
  r->producers_left--;
  pthread_cond_broadcast(&r->cv_items); /* a writer may be waiting for its last jobs */
  pthread_mutex_unlock(&r->mu);
}

void fz_queue_push_staged(fz_run *r, fz_job *const *jobs, size_t n) {
  pthread_mutex_lock(&r->mu);
  const int fatal = r->fatal;
  if (!fatal) {
    for (size_t k = 0; k < n; k++) {
      fz_job *j = jobs[k];
      fz_part *p = &r->parts[fz_part_of(r, j->index)];
      j->next = NULL;
      part_append(p, j);
    }
    if (n) pthread_cond_broadcast(&r->cv_items); /* one wake-up for the chunk */
  }
  pthread_mutex_unlock(&r->mu);
  if (fatal)
    for (size_t k = 0; k < n; k++) {
      fz_report_unstored(r, jobs[k]->index, fatal); /* while the job holds its item */
      fz_job_free(jobs[k]);
    }
}

/* A staged job's record, written into the store's page (fc_put_fill): the header, then the
 * features copied out of the chunk's output and checksummed there, once. */
typedef struct fill_arg {
  const fz_run *r;
  fz_job *j;
} fill_arg;

static int fill_record(void *dst, size_t len, void *arg) {
  const fill_arg *a = arg;
  const fz_run *r = a->r;
  const fz_job *j = a->j;
  if (len != FC_RECORD_HEADER_SIZE + j->feat_len) return EINVAL;
  uint8_t *pl = (uint8_t *)dst + FC_RECORD_HEADER_SIZE;
  memcpy(pl, j->feat, j->feat_len);
  fc_record_header h = {.dtype = (uint8_t)r->cfg->dtype,
                        .ndim = 2,
                        .dim0 = (uint32_t)j->frames,
                        .dim1 = r->cfg->n_mels,
                        .payload_bytes = j->feat_len,
                        .payload_hash = fc_hash64(pl, j->feat_len),
                        .config = r->cfg_digest,
                        .flags = 0,
                        .producer = r->be->producer};
  fc_record_header_encode(&h, dst);
  return 0;
}

/* The record is in the store's page (or will not be): the job's hold on its chunk goes now, so
 * the ring has the chunk back while the commit writes the pages, not after. */
static void fill_done(void *arg) {
  fz_job *j = ((fill_arg *)arg)->j;
  fz_hold_drop(j->hold);
  j->hold = NULL;
}

/* The id's audio entry as the commit found it (fc_put_seen), before the job's entry replaces it:
 * the job's replaced is the file it names when that is another file with other audio, else NULL;
 * an entry of this audio naming another file sets FZ_KEPT_AUDIO (the put's kept says the rest).
 * The commit's view, not the lookup's: another run beside this one (a `make -j` of train/ and dev/,
 * one id in both) may have committed the id after this run looked it up, and LMDB's
 * writer lock puts that commit before this one. */
static void entry_seen(const void *old, size_t old_len, void *arg) {
  fz_job *j = arg;
  fc_audio_entry was, now;
  char *path = NULL;
  j->kept &= ~(unsigned)FZ_KEPT_AUDIO; /* this try's */
  if (old && fc_audio_entry_decode(old, old_len, &was) == 0 &&
      fc_audio_entry_decode(j->entry, j->entry_len, &now) == 0) {
    const int same_path =
        was.path_len == now.path_len && memcmp(was.path, now.path, now.path_len) == 0;
    if (memcmp(was.digest.bytes, now.digest.bytes, sizeof now.digest.bytes) == 0)
      j->kept |= same_path ? 0 : FZ_KEPT_AUDIO;
    else if (was.path_len && !same_path)
      path = fc_strndup(was.path, was.path_len); /* NULL without memory: no note */
  }
  free(j->replaced);
  j->replaced = path;
}

/* Commit one batch to part p: config and its creation time, then each job's record (NOOVERWRITE)
 * and audio entry, with the deletion of the id's failure record when it had one; or a failure
 * record. A staged job's record is written straight into the store's page (fill_record). */
static int commit_batch(fz_run *r, fz_part *p, fz_job *batch, size_t count) {
  fc_put *puts = fc_malloc((3 * count + 2) * sizeof *puts);
  fc_put_fill *fills = fc_malloc(count * sizeof *fills);
  fill_arg *args = fc_malloc(count * sizeof *args);
  fc_put_seen *seen = fc_malloc(count * sizeof *seen);
  unsigned char *kept = fc_malloc(3 * count + 2);
  int rc = ENOMEM;
  if (!puts || !fills || !args || !seen || !kept) goto out;
  size_t np = 0, nf = 0, ns = 0;
  /* the config: stored by the first batch; there still for the later ones, and for the first
   * too once a lookup found a record of it stored (a drop meanwhile would leave what this run
   * counted as stored gone: FC_EDROPPED, nothing of the batch stored) */
  const int require = p->cfg_stored || atomic_load(&p->cfg_seen);
  puts[np++] =
      (fc_put){FC_DB_META,  r->cfg_key,      36,
               r->cfg_json, r->cfg_json_len, require ? FC_PUT_REQUIRE : FC_PUT_NOOVERWRITE};
  puts[np++] = (fc_put){FC_DB_META, r->created_key, 40, r->created, 20, FC_PUT_NOOVERWRITE};
  for (fz_job *j = batch; j; j = j->next) {
    const char *id = fz_item(r, j->index)->id;
    if (j->kind == FZ_JOB_FAIL) {
      puts[np++] = (fc_put){FC_DB_FAILED, id, strlen(id), j->entry, j->entry_len, 0};
      continue;
    }
    if (j->kind == FZ_JOB_CLEAR || j->clear_fail)
      puts[np++] = (fc_put){FC_DB_FAILED, id, strlen(id), NULL, 0, FC_PUT_DELETE};
    if (j->kind == FZ_JOB_CLEAR) continue;
    if (j->record) {
      puts[np++] = (fc_put){FC_DB_FEAT, j->key.bytes,  sizeof j->key.bytes,
                            j->record,  j->record_len, FC_PUT_NOOVERWRITE};
    } else if (j->feat) {
      args[nf] = (fill_arg){r, j};
      fills[nf] = (fc_put_fill){fill_record, &args[nf], r->ring.hold_to_commit ? NULL : fill_done};
      puts[np++] = (fc_put){FC_DB_FEAT,
                            j->key.bytes,
                            sizeof j->key.bytes,
                            &fills[nf],
                            FC_RECORD_HEADER_SIZE + j->feat_len,
                            FC_PUT_NOOVERWRITE | FC_PUT_FILL};
      nf++;
    }
    seen[ns] = (fc_put_seen){j->entry, entry_seen, j};
    puts[np++] = (fc_put){FC_DB_AUDIO, id,           strlen(id),
                          &seen[ns++], j->entry_len, FC_PUT_SAME_KEPT | FC_PUT_SEEN};
  }
  rc = fc_store_write_kept(p->s, puts, np, kept);
  /* what another run beside this one stored since the lookups: the config's two puts, then each
   * job's in the order made above */
  size_t i = 2;
  for (fz_job *j = batch; j && !rc; j = j->next) {
    if (j->kind == FZ_JOB_FAIL || j->kind == FZ_JOB_CLEAR) {
      i++;
      continue;
    }
    i += j->clear_fail != 0;
    j->kept = (j->kept & FZ_KEPT_AUDIO) | (!(j->record || j->feat) ? FZ_KEPT_RECORD
                                           : kept[i++]             ? FZ_KEPT_RECORD
                                                                   : 0);
    if (kept[i++]) j->kept |= FZ_KEPT_ENTRY;
  }
out:
  free(puts);
  free(fills);
  free(args);
  free(seen);
  free(kept);
  return rc;
}

static void report_committed(fz_run *r, fz_job *batch) {
  pthread_mutex_lock(&r->ev_mu);
  for (fz_job *j = batch; j; j = j->next) {
    if (j->kind == FZ_JOB_FAIL) r->st.failures_recorded++;
    if (j->kind == FZ_JOB_CLEAR || j->clear_fail) r->st.failures_cleared++;
    if (j->kind != FZ_JOB_STORE) continue; /* reported when they failed, or were skipped */
    /* record and this very entry found there at the commit, the entry not there at the lookup:
     * another run beside this one stored the item since (one run gives an id once), so it is
     * counted as found at the lookup would have been; so too with an entry of this audio naming
     * another file (that run's copy of it), not there at the lookup, which the commit points at
     * this file, as a lookup that found it would have (settle_stored). A record alone found there
     * (another id's of the same audio, in this run or another), or with an entry there all
     * along, leaves the item STORED, as before */
    const unsigned k = j->kept;
    const int found = j->refresh ||
                      ((k & FZ_KEPT_RECORD) && (k & FZ_KEPT_ENTRY) && !j->entry_there) ||
                      ((k & FZ_KEPT_RECORD) && (k & FZ_KEPT_AUDIO) && !j->audio_there);
    fc_featurize_event ev = {.status = found                  ? FC_ITEM_SKIPPED
                                       : j->record || j->feat ? FC_ITEM_STORED
                                                              : FC_ITEM_LINKED,
                             .index = j->index,
                             .frames = j->frames,
                             .seconds = j->seconds,
                             .source_rate = j->source_rate,
                             .source_channels = j->source_channels,
                             .replaced = j->replaced,
                             .note = found ? NULL : j->note};
    if (found) {
      r->st.skipped_existing++;
    } else {
      r->st.processed++;
      r->st.audio_seconds += j->seconds;
    }
    fz_emit(r, &ev);
  }
  r->st.committed_batches++;
  r->st.wall_seconds = fz_now() - r->t0;
  if (r->o.on_progress) r->o.on_progress(&r->st, r->o.user);
  pthread_mutex_unlock(&r->ev_mu);
}

/* The writer loop of part p (part 0's on the calling thread, the others' on their own). Returns 0
 * or the first commit error. */
int fz_writer_loop(fz_run *r, fz_part *p) {
  const unsigned sflags = fc_store_open_flags(p->s);
  /* NOSYNC: a sync every sync_seconds and at the end; NOMETASYNC (each commit synced but its
   * meta page): a sync at the end makes the last commit durable too */
  const int nosync = (sflags & FC_STORE_NOSYNC) != 0;
  const int end_sync = nosync || (sflags & FC_STORE_NOMETASYNC);
  double last_sync = fz_now();
  int dirty = 0, rc = 0;
  fz_job *batch = NULL, *btail = NULL;
  size_t bcount = 0, bstaged = 0;
  uint64_t bbytes = 0;
  double started = 0;

  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (p->head && bcount < r->o.batch_records && bbytes < r->o.batch_bytes) {
      fz_job *j = p->head;
      p->head = j->next;
      if (!p->head) p->tail = NULL;
      p->count--;
      r->q_count -= job_counts(j);
      r->q_bytes -= job_bytes(j);
      j->next = NULL;
      if (btail)
        btail->next = j;
      else
        batch = j;
      btail = j;
      if (bcount++ == 0) started = fz_now();
      bbytes += job_write_bytes(j);
      if (j->hold)
        bstaged++;
      else
        pthread_cond_broadcast(&r->cv_space);
    }
    const int finished = r->producers_left == 0 && !p->head;
    const int full = bcount >= r->o.batch_records || bbytes >= r->o.batch_bytes;
    /* Staged jobs hold their chunk of the ring until their records are made (fill_done): a batch
     * that holds some is committed as soon as nothing more is queued (the workers may need the
     * chunk), never left to age. */
    const int drained = bstaged && !p->head;
    if (bcount && (full || finished || drained || fz_now() - started >= r->o.batch_seconds)) {
      pthread_mutex_unlock(&r->mu);
      fault_stop("featurize_batch"); /* test builds: another run's commit before this one's */
      double tw = fz_cpu_now();
      rc = commit_batch(r, p, batch, bcount);
      if (!rc) {
        p->cfg_stored = 1;
        report_committed(r, batch);
        dirty = 1;
        if (nosync && fz_now() - last_sync >= r->o.sync_seconds) {
          rc = fc_store_sync(p->s);
          last_sync = fz_now();
          dirty = 0;
        }
      } else { /* computed, never committed: a line each */
        for (fz_job *j = batch; j; j = j->next)
          if (j->kind == FZ_JOB_STORE) fz_report_unstored(r, j->index, rc);
      }
      fz_batch_free(batch);
      p->busy += fz_cpu_now() - tw;
      batch = btail = NULL;
      bcount = bstaged = 0;
      bbytes = 0;
      pthread_mutex_lock(&r->mu);
      if (rc) {
        if (!r->fatal) r->fatal = rc;
        atomic_store(&r->halt, 1);
        pthread_cond_broadcast(&r->cv_space);
        /* What is queued here will never be committed: each gets its line now, and staged jobs
         * give their chunks back to the ring (the workers may be waiting for one). Nothing is
         * queued here after this: pushes see fatal. */
        fz_job *left = p->head;
        p->head = p->tail = NULL;
        for (fz_job *j = left; j; j = j->next) {
          p->count--;
          r->q_count -= job_counts(j);
          r->q_bytes -= job_bytes(j);
        }
        pthread_mutex_unlock(&r->mu);
        for (fz_job *j = left; j; j = j->next)
          if (j->kind == FZ_JOB_STORE) fz_report_unstored(r, j->index, rc);
        fz_batch_free(left);
        pthread_mutex_lock(&r->mu);
        break;
      }
      continue;
    }
    if (finished) break;
    double wait = bcount ? started + r->o.batch_seconds - fz_now() : 1.0;
    if (wait > 0) {
      struct timespec ts = fz_deadline(wait);
      double tw = fz_now();
      pthread_cond_timedwait(&r->cv_items, &r->mu, &ts);
      p->wait += fz_now() - tw;
    }
  }
  pthread_mutex_unlock(&r->mu);
  if (!rc && end_sync && dirty) {
    double tw = fz_cpu_now();
    rc = fc_store_sync(p->s);
    p->busy += fz_cpu_now() - tw;
  }
  p->rc = rc;
  return rc;
}

void *fz_writer_main(void *arg) {
  fz_part *p = arg;
  fz_run *r = p->run;
  fc_thread_name("writer", (int)(p - r->parts)); /* parts 1..: part 0's is the caller's thread */
  fz_writer_loop(r, p);
  return NULL;
}
