/* Compute backends of the featurize pipeline (private to libcache/featurize*.c).
 *
 * This is the one place a device becomes code: fz_backend_for() maps a resolved fc_device to
 * its backend. A CUDA backend plugs in by adding its table in featurize_device.c (and making
 * fc_device_resolve accept the device); the pipeline itself does not change.
 *
 * A backend computes float32 [frames][n_mels] features for one utterance at a time, called from
 * `workers` threads at once, each passing its own worker number (the CPU); or it is a staging
 * backend (CUDA): the workers write decoded samples into its chunks and the pipeline launches
 * them (below). A backend that cannot take an utterance because it is too long for it returns
 * FC_ETOOLONG (or, staging, it is longer than a chunk): the pipeline then computes it on the CPU
 * (producer 1). */
#ifndef FC_FEATURIZE_BACKEND_H
#define FC_FEATURIZE_BACKEND_H

#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"

/* A staging backend's ring (stage_info): its chunk count and what one chunk holds. */
typedef struct fc_fz_stage_info {
  unsigned chunks; /* chunks in the ring (>= 1): at most this many filling or in flight */
  size_t capacity; /* samples per chunk; longer utterances are computed on the CPU */
  uint64_t max_frames; /* frames per chunk (sum over its utterances) */
  size_t max_utts; /* utterances per chunk */
  double launch_wait; /* seconds a chunk fills before it is launched anyway (0: 2 ms) */
  int early_refill; /* a chunk's staging goes back to the workers once its finish returned, while
                       the writers still read its output (its next launch waits for them); else
                       once its utterances are committed */
  int hold_to_commit; /* a staged utterance holds its chunk until its batch is committed; else
                         only until its record is in the transaction's pages (fc_put_fill's done) */
} fc_fz_stage_info;

/* One launch of a chunk. Its staging buffer holds n16 int16 samples at its start (sample v stands
 * for exactly the float v / 32768, fc_cu_i16_to_f32: 16-bit sources at half the bytes) and nf
 * float samples at its end (its last nf * 4 bytes), n16 + nf <= capacity. The launch's samples, as
 * floats, are the int16 ones converted, then the float ones: utterance i is the len[i] samples from
 * sample_off[i] of that sequence. */
typedef struct fc_fz_launch {
  size_t count; /* utterances, <= max_utts */
  const uint64_t *sample_off, *len;
  size_t n16, nf;
  uint64_t frames; /* their total frames, <= max_frames */
  int dtype; /* f32, f16 or bf16 */
} fc_fz_launch;

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
  /* A staging backend (a GPU) sets these instead of compute (docs/featurize.md "Pipeline"). It owns
   * a ring of chunks, each a staging buffer the workers write their decoded samples into (pinned
   * host memory on CUDA) plus what one launch needs on the device. The pipeline fills a chunk,
   * launches it (asynchronous: copy up, compute, copy back) from its launch thread
   * and collects its features with finish from its completion thread, in launch order; several
   * chunks are in flight at once. The writers read the features where finish left them, so a
   * chunk is launched again only after its finish returned and its utterances' records were made
   * in the store's pages (fc_put_fill's done: before the commit, as a rule); its
   * staging buffer is written again only after its finish returned (with early_refill, perhaps
   * before the commits): finish returns once the device has read it. */
  void (*stage_info)(void *state, fc_fz_stage_info *info);
  /* Chunk `chunk`'s staging buffer: info.capacity * 4 bytes. Valid until close (from stage_grow
   * for a chunk it makes). The workers read
   * it back too (a 16-bit file read into it is hashed there), so it must be ordinary cached
   * memory: cudaMallocHost's default, not write-combined. */
  void *(*stage_buffer)(void *state, unsigned chunk);
  /* Optional: make chunk `chunk` of the ring (1 .. chunks - 1, each once, in order). A backend
   * that has it makes only chunk 0 in open; the pipeline's grower thread makes the others while
   * the first ones fill, so that the ring's set-up (pinned memory, device buffers, plans) overlaps
   * the run's first work instead of delaying it. It runs beside launch and finish of the chunks
   * made before it. stage_buffer(chunk) is valid once it returned 0; an error leaves the ring at
   * the chunks made, and the run goes on with them. */
  int (*stage_grow)(void *state, unsigned chunk);
  /* Start computing the utterances of l in chunk `chunk`; returns without waiting. */
  int (*launch)(void *state, unsigned chunk, const fc_fz_launch *l);
  /* Wait for chunk `chunk`'s launch; *out then points at the features of its utterances in launch
   * order, packed time-major in l->dtype (utterance i from the sum of the frames before it). *out
   * is valid until the chunk is launched again. */
  int (*finish)(void *state, unsigned chunk, const void **out);
  /* Optional: the ring's life, for a backend's trace (FC_CUDA_TRACE, docs/cuda.md): chunk `chunk`
   * opened for a use (reservations may start), sealed (no more), or released (the use's
   * utterances are through the writers: the chunk is free). Called under the pipeline's ring lock,
   * in that order for each use; must not block. */
  void (*stage_event)(void *state, unsigned chunk, int what);
} fc_fz_backend;

enum { FZ_STAGE_OPENED = 1, FZ_STAGE_SEALED, FZ_STAGE_RELEASED };

/* The CUDA backend's ring for a run of `workers` workers:
 * FC_CUDA_RING=CHUNKSxSAMPLES[:early|:late][:commit] when set (docs/featurize.md "Environment";
 * SAMPLES may end in K or M, binary; the refill, fc_fz_stage_info.early_refill, into *early unless
 * it is NULL: early unless ":late"; ":commit", fc_fz_stage_info.hold_to_commit, into *to_commit
 * unless it is NULL), else one chunk of 2 Mi samples per worker, 4 to 16 chunks, refilled early,
 * each utterance's hold gone once its record is made. FC_ECONFIG with the reason in why when the
 * variable says something else. */
enum { FZ_RING_MAX_CHUNKS = 16, FZ_RING_MIN_SAMPLES = 64 << 10, FZ_RING_MAX_SAMPLES = 32 << 20 };
int fz_cuda_ring_env(unsigned workers, unsigned *chunks, size_t *samples, int *early,
                     int *to_commit, char *why, size_t why_len);

/* The staging ring the CUDA backend gives a run of `workers` workers (its stage_info), known
 * without a GPU: a zero-cost staging backend that stands in for the GPU on a machine without one
 * (scripts/bench-host) takes the same geometry. Fails as fz_cuda_ring_env. */
int fz_cuda_stage_geometry(const fc_mel_config *cfg, unsigned workers, fc_fz_stage_info *info,
                           char *why, size_t why_len);

/* Whether a staging backend is opened while the workers already compute (docs/featurize.md
 * "Hybrid start"): a GPU's start-up (the CUDA context, the ring's first chunk: 0.2-0.4 s) is time
 * the CPU can compute in. FC_CUDA_START says: "hybrid" always, "wait" never (the backend opened
 * before any worker starts, as before), unset or "auto" for a large job only — items as
 * fc_featurize_default_writers counts them, or a manifest read as the job goes (streamed: its
 * length unknown, the usual way of a large job). Small jobs stay on one device: their records are
 * all the device's. *hybrid set; FC_ECONFIG with the reason in why for another value. */
int fz_cuda_start_env(const fc_item *items, size_t n, int streamed, unsigned jobs,
                      double gpu_min_seconds, int *hybrid, char *why, size_t why_len);

/* The backend for a resolved device (fc_device_resolve); NULL when this build has none. */
const fc_fz_backend *fz_backend_for(const fc_device *dev);

/* fc_featurize_run with a given backend (NULL: the device's, chosen as fc_featurize_run does;
 * else opts->device is taken as is). For tests: a fake backend exercises the pipeline's hand-offs,
 * deadlines and fallbacks on any machine. */
int fz_pipeline_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
                    const fc_featurize_opts *opts, const fc_fz_backend *backend,
                    fc_featurize_stats *stats, char *why, size_t why_len);

#endif
