/* The compute stage of a batching backend (a GPU; featurize_backend.h): workers hand their decoded
 * utterances over (fz_submit) and go on; one stage thread launches them by size or deadline and
 * queues the finished records for the writer. See docs/featurize.md "Pipeline". */
#include "featcache/fc_format.h"
#include "kernels/cuda/mel_kernels.h"
#include "libcache/featurize/featurize_int.h"
#include "formats/why.h"

#include <errno.h>
#include <stdlib.h>

/* ---- the compute stage of a batching backend ------------------------------------------------- */

/* The samples as 16-bit PCM when they are exactly that (a 16-bit source at the config's rate,
 * mono: v / 32768 as decoded), so that they cross PCIe at half the bytes and are converted on the
 * GPU into the same floats; else NULL (resampled, mixed, or float sources; out of memory). */
int16_t *fz_to_i16(const float *x, size_t n) {
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
void fz_submit(fz_run *r, fz_job *j, double *waited) {
  pthread_mutex_lock(&r->bmu);
  if (r->p_count > 0 && r->p_samples + j->n > r->pending_max) {
    double t = fz_now();
    while (r->p_count > 0 && r->p_samples + j->n > r->pending_max)
      pthread_cond_wait(&r->bcv_space, &r->bmu);
    *waited += fz_now() - t;
  }
  j->submitted = fz_now();
  j->next = NULL;
  if (r->ptail)
    r->ptail->next = j;
  else
    r->phead = j;
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
  const int i16 = batch->x16 != NULL; /* a launch holds one kind (fz_stage_main) */
  for (fz_job *j = batch; j; j = j->next, k++) {
    xs[k] = i16 ? (const void *)j->x16 : (const void *)j->x;
    ns[k] = j->n;
    outs[k] = j->record + FC_RECORD_HEADER_SIZE;
  }
  double t = fz_now(), waited = 0; /* waits on the writer's queue are not the stage's work */
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
      fz_job_free(j);
      fz_report_failed(r, index, rc, why);
      continue;
    }
    uint8_t *pl = j->record + FC_RECORD_HEADER_SIZE;
    size_t payload = j->record_len - FC_RECORD_HEADER_SIZE;
    fc_record_header h = {.dtype = (uint8_t)r->cfg->dtype,
                          .ndim = 2,
                          .dim0 = (uint32_t)j->frames,
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
  r->stage_busy += fz_now() - t - waited;
  r->stage_wait += waited;
}

/* The stage thread: launch when a launch's worth waits, when the oldest job has waited the
 * deadline, or when no worker is left to add to it; at most 2 launches' worth per call (the
 * backend overlaps its chunks on two streams). */
void *fz_stage_main(void *arg) {
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
    if (r->p_samples < r->chunk_samples && r->submitters_left > 0 && fz_now() < due) {
      struct timespec ts = fz_deadline(due - fz_now());
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
        fz_job_free(j);
        fz_report_failed(r, index, ENOMEM, "out of memory");
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
