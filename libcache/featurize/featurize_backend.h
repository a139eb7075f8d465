/* Compute backends of the featurize pipeline (private to libcache/featurize*.c).
 *
 * This is the one place a device becomes code: fc_fz_backend_for() maps a resolved fc_device to
 * its backend. A CUDA backend plugs in by adding its table in featurize_device.c (and making
 * fc_device_resolve accept the device); the pipeline itself does not change.
 *
 * A backend computes float32 [frames][n_mels] features for one utterance at a time, called from
 * `workers` threads at once, each passing its own worker number. A batching backend (CUDA) may
 * gather the calls of several workers into one launch; each call returns when its output is
 * ready. A backend that cannot take an utterance because it is too long for it (a GPU staging
 * buffer) returns FC_ETOOLONG: the pipeline then computes it on the CPU (producer 1). */
#ifndef FC_FEATURIZE_BACKEND_H
#define FC_FEATURIZE_BACKEND_H

#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"

typedef struct fc_fz_backend {
  const char *name; /* "cpu", "cuda" */
  uint32_t producer; /* FC_PRODUCER_* written into record headers */
  /* Prepare for `workers` threads computing cfg on dev. Called once, before the workers start.
   * *state is freed with close. Returns 0 or an error with a reason in why. */
  int (*open)(const fc_mel_config *cfg, const fc_device *dev, unsigned workers, void **state,
              char *why, size_t why_len);
  /* Features of n mono samples at cfg->sample_rate into out (fc_mel_num_frames(cfg, n) * n_mels
   * floats). Thread-safe across distinct worker numbers. */
  int (*compute)(void *state, unsigned worker, const float *x, size_t n, float *out);
  void (*close)(void *state);
  /* A batching backend (a GPU) sets these instead of compute: the pipeline then runs one compute
   * stage thread that gathers the workers' decoded utterances (the workers go on decoding) and
   * calls compute_batch once per launch, when max_samples(state) samples are waiting or the oldest
   * has waited a short deadline, or nothing more is coming. compute_batch writes count feature
   * arrays of dtype (f32, f16, bf16) as fc_cuda_compute_batch does; it is called from that one
   * thread only. x[i] points at floats, or with i16 at 16-bit samples v standing for exactly the
   * float v / 32768 (fc_cu_i16_to_f32): 16-bit sources that needed no resampling travel so, at
   * half the bytes. Utterances longer than max_samples are computed on the CPU by their worker. */
  int (*compute_batch)(void *state, const void *const *x, int i16, const size_t *n, size_t count,
                       int dtype, void *const *out);
  size_t (*max_samples)(void *state);
} fc_fz_backend;

/* The backend for a resolved device (fc_device_resolve); NULL when this build has none. */
const fc_fz_backend *fc_fz_backend_for(const fc_device *dev);

/* fc_featurize_run with a given backend (NULL: the device's, chosen as fc_featurize_run does;
 * else opts->device is taken as is). For tests: a fake backend exercises the pipeline's hand-offs,
 * deadlines and fallbacks on any machine. */
int fc_fz_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
              const fc_featurize_opts *opts, const fc_fz_backend *backend,
              fc_featurize_stats *stats, char *why, size_t why_len);

#endif
