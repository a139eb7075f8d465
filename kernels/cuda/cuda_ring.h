/* The CUDA plan as a ring of chunks, for featurize's staging pipeline (libcache/mel/featurize/
 * featurize_stage.c through the backend table of featurize_device.c; docs/featurize.md "Pipeline").
 *
 * A ring plan has `slots` chunks, each its own pinned staging buffer, pinned output buffer, device
 * buffers, cuFFT plans, stream and event: the first `made` made by cuda_ring_create, the others
 * by cuda_ring_grow, one at a time and in order, from any thread while the chunks made before
 * are in use (so that a caller overlaps their set-up with its first work). The caller writes a
 * chunk's samples straight into its staging buffer: n16 int16 samples at its start and nf float
 * samples at its end (its last nf * 4 bytes), n16 + nf <= cuda_plan_max_samples. launch enqueues
 * the copy up, the kernels and the copy back on the chunk's stream and returns; finish waits for its
 * event. One thread may launch while another finishes a different chunk; a chunk must be finished
 * before it is launched again. Errors as cuda_compute_batch (sticky: FC_EBADSTATE after a
 * failure), EINVAL for a launch that breaks the chunk's limits or a chunk in the wrong state.
 * Without FC_HAVE_CUDA every function fails with FC_ENODEVICE (create) or FC_EBADSTATE.
 * Private to the mel component. */
#ifndef FC_CUDA_RING_H
#define FC_CUDA_RING_H

#include "kernels/cuda/cuda_api.h"

#include <stdint.h>

/* A ring plan's geometry, the same in every build (with or without the backend), so that code
 * without a GPU can reproduce it (the benchmark harness's zero-cost staging backend): at most
 * CUDA_RING_MAX_UTTS utterances per chunk, CUDA_DEFAULT_MAX_SAMPLES samples per chunk unless the
 * caller asks for another size, and cuda_ring_max_frames(cfg, samples) frames per chunk (the
 * frames of that many samples, rounded up to CUDA_FRAME_ROUND for the batched FFT plans). */
enum { CUDA_RING_MAX_UTTS = 1024, CUDA_FRAME_ROUND = 64 };
#define CUDA_DEFAULT_MAX_SAMPLES ((size_t)4 << 20)
static inline uint64_t cuda_ring_max_frames(const fc_mel_config *cfg, size_t max_samples) {
  uint64_t f = fc_mel_num_frames(cfg, max_samples ? max_samples : CUDA_DEFAULT_MAX_SAMPLES);
  return (f + CUDA_FRAME_ROUND - 1) / CUDA_FRAME_ROUND * CUDA_FRAME_ROUND;
}

/* cuda_plan_create with `slots` chunks (>= 1; cuda_plan_create makes 2), `made` of them (1 ..
 * slots) made now. */
int cuda_ring_create(const fc_mel_config *cfg, int device, size_t max_samples, unsigned slots,
                     unsigned made, fc_cuda_plan **out);
/* Make chunk `slot` (the next one: slot == the number made so far). Its failure (an error as
 * cuda_compute_batch's, EINVAL out of turn) is not sticky: the ring goes on with the chunks made. */
int cuda_ring_grow(fc_cuda_plan *p, unsigned slot);
/* The ring's chunk count (made or not), frames per chunk (sum over its utterances), utterances per
 * chunk. */
unsigned cuda_ring_slots(const fc_cuda_plan *p);
uint64_t cuda_ring_plan_frames(const fc_cuda_plan *p);
size_t cuda_ring_max_utts(const fc_cuda_plan *p);
/* Chunk `slot`'s pinned staging buffer: cuda_plan_max_samples(p) * 4 bytes, valid until free; NULL
 * while the chunk is not made. */
void *cuda_ring_staging(fc_cuda_plan *p, unsigned slot);
/* Launch chunk `slot`: utterance i is the len[i] samples from sample_off[i] of the chunk's samples
 * as floats (the n16 converted int16 ones, then the nf float ones). Features in dtype (f32, f16,
 * bf16). Returns without waiting. */
int cuda_ring_launch(fc_cuda_plan *p, unsigned slot, size_t count, const uint64_t *sample_off,
                     const uint64_t *len, size_t n16, size_t nf, int dtype);
/* Wait for chunk `slot`; *out: its utterances' features, packed in launch order, in the pinned
 * output buffer (valid until the chunk is launched again). Its staging buffer may be written again
 * once this returned: the device has read it. */
int cuda_ring_finish(fc_cuda_plan *p, unsigned slot, const void **out);
/* A moment of chunk `slot`'s life in its user's hands ("opened", "sealed", "released": featurize's
 * staging ring) written to the plan's trace (FC_CUDA_TRACE) with the time now; nothing without
 * a trace. Never blocks on the device. */
void cuda_ring_note(fc_cuda_plan *p, unsigned slot, const char *what);

#endif
