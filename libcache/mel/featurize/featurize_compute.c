/* The CPU's side of the device stage: one utterance's record computed by the worker that decoded
 * it — on the CPU backend (FFTW, one plan per worker), or on the CPU for an utterance a staging
 * device cannot take (longer than a chunk) — converted to the dtype (or coded, mq) straight into
 * the record, which gets its header and checksum. The staging device's side is
 * featurize_stage.c. Calls down the line only: job (featurize_int.h). */
#include "featcache/fc_codec.h"
#include "featcache/fc_format.h"
#include "libcache/mel/featurize/featurize_int.h"
#include "formats/common/alloc.h"
#include "formats/common/why.h"

#include <errno.h>
#include <stdlib.h>

/* Features of x on the backend; an utterance the backend refuses as too long for it (the CUDA
 * staging buffer), or one computed before a staging backend is open (hybrid start), is computed
 * on the CPU instead, never failed. *producer says which did it. */
static int compute_features(fz_run *r, fz_worker *w, const float *x, size_t n, float *mel,
                            uint32_t *producer) {
  *producer = r->be->producer;
  int rc = r->be->compute ? r->be->compute(r->be_state, w->index, x, n, mel) : FC_ETOOLONG;
  if (rc != FC_ETOOLONG || r->be->producer == FC_PRODUCER_CPU) return rc;
  if (!w->fallback) { /* one plan made (FFTW's planner is serial), each worker's a clone of it */
    rc = 0;
    pthread_mutex_lock(&r->plan_mu);
    if (!r->cpu_plan) rc = fc_mel_plan_create(r->cfg, &r->cpu_plan);
    pthread_mutex_unlock(&r->plan_mu);
    if (rc || (rc = fc_mel_plan_clone(r->cpu_plan, &w->fallback))) return rc;
  }
  *producer = FC_PRODUCER_CPU;
  return fc_mel_compute(w->fallback, x, n, mel);
}

int fz_compute_record(fz_run *r, fz_worker *w, fz_job *j, const float *x, size_t n, char *why,
                      size_t why_len) {
  const fc_mel_config *cfg = r->cfg;
  const uint64_t frames = j->frames;
  fz_times *tm = &w->t;
  size_t nvals = (size_t)frames * cfg->n_mels, payload = nvals * r->dsize;
  if (cfg->dtype == FC_DTYPE_MQ) { /* coded: at most the codec's bound, trimmed after */
    payload = fc_mq_bound((uint32_t)frames, cfg->n_mels);
    if (!payload) {
      fc_why(why, why_len, "too long for the mq codec: %llu frames", (unsigned long long)frames);
      return FC_ETOOLONG;
    }
  }
  double t0 = fz_cpu_now(), t1;
  if (!(j->record = fc_malloc(FC_RECORD_HEADER_SIZE + payload))) goto nomem;
  j->record_len = FC_RECORD_HEADER_SIZE + payload;
  uint8_t *pl = j->record + FC_RECORD_HEADER_SIZE;
  float *mel = cfg->dtype == FC_DTYPE_F32 ? (float *)(void *)pl : fc_malloc(nvals * sizeof *mel);
  if (!mel) goto nomem;
  uint32_t producer;
  int rc = compute_features(r, w, x, n, mel, &producer);
  if (rc) {
    fc_why(why, why_len, "feature computation failed: %s", fc_strerror(rc));
  } else if (cfg->dtype == FC_DTYPE_MQ) {
    char cw[200];
    rc = fc_mq_encode_step(fc_mq_thread_coder(), mel, (uint32_t)frames, cfg->n_mels,
                           fc_mq_step_log2(cfg->log), pl, payload, &payload, cw, sizeof cw);
    if (rc) fc_why(why, why_len, "cannot code the mel: %s", cw);
    j->record_len = FC_RECORD_HEADER_SIZE + payload;
    uint8_t *fit = rc ? NULL : fc_realloc(j->record, j->record_len); /* the bound's slack back */
    if (fit) pl = (j->record = fit) + FC_RECORD_HEADER_SIZE;
  } else if (cfg->dtype != FC_DTYPE_F32) {
    fc_convert_dtype(mel, nvals, cfg->dtype, pl);
    if (fz_f16_overflow(cfg, pl, nvals, why, why_len) < nvals) rc = ERANGE;
  }
  if (mel != (float *)(void *)pl) free(mel);
  tm->compute += (t1 = fz_cpu_now()) - t0;
  if (rc) return rc;
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
  tm->hash += fz_cpu_now() - t1;
  w->cpu_computed += producer == FC_PRODUCER_CPU;
  return 0;
nomem:
  fc_why(why, why_len, "out of memory");
  return ENOMEM;
}
