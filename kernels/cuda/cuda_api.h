/* featcache — the CUDA backend (cuFFT): device query and a batched mel plan mirroring fc_mel.h.
 *
 * A plan computes the same features as fc_mel_compute for many utterances per call: their PCM is
 * packed into a pinned host staging buffer, copied to the device asynchronously, framed + padded +
 * windowed by one kernel (every preset's padding and window, Kaldi's DC removal and pre-emphasis),
 * transformed by one batched cuFFT R2C plan made once and reused, reduced to |X|^power, projected
 * onto the mel bands by a sparse kernel, log-compressed (including whisper's and power_to_db's
 * per-utterance max clamp), converted to the output dtype and copied back into pinned memory.
 * Work alternates between two streams, each with its own staging buffers and cuFFT plan, so one
 * chunk's copies overlap the other's kernels. The per-element math is kernels/fc_math.h, shared with
 * the CPU backend. See docs/cuda.md.
 *
 * This header and its functions exist in every build. In a build without the CUDA backend
 * (-DFC_CUDA=OFF, or AUTO without a toolkit) every function returns FC_ENODEVICE with the reason
 * "this build has no CUDA backend".
 *
 * Errors: FC_ENODEVICE (no usable device; the reason names the runtime's message), FC_ECUDA (a CUDA
 * or cuFFT call failed; the message names the call), FC_ECONFIG, FC_ETOOLONG (one utterance does not
 * fit the plan), FC_EEMPTY (an utterance gives no frames), FC_EBADSTATE (the plan failed earlier and
 * refuses work: errors are sticky, free it and make a new one), ENOMEM. The message of the last
 * failure on the calling thread is cuda_last_error(). */
#ifndef FC_CUDA_H
#define FC_CUDA_H

#include "featcache/fc_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build has the CUDA backend compiled in (whether or not a GPU is present), else 0. */
int cuda_built(void);

/* Number of usable CUDA devices into *n. Returns 0 with *n >= 1, or FC_ENODEVICE with *n = 0 and
 * a reason in why ("no CUDA device: CUDA driver version is insufficient for CUDA runtime version",
 * "no CUDA device: no CUDA-capable device is detected", "no CUDA device: this build has no CUDA
 * backend"). why may be NULL; it holds at most why_len bytes, NUL-terminated. */
int cuda_device_count(int *n, char *why, size_t why_len);

/* A one-line description of device `device` ("NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB") into buf.
 * Returns 0, FC_ENODEVICE (no such device, reason in buf) or FC_ECUDA. */
int cuda_device_describe(int device, char *buf, size_t buf_len);

/* The message of the last failed fc_cuda_* call on this thread, "" if none. Thread-local static
 * storage: valid until the next fc_cuda_* call on this thread; do not free. */
const char *cuda_last_error(void);

typedef struct fc_cuda_plan fc_cuda_plan;

/* Create a plan for cfg on CUDA device `device`, able to take chunks of up to max_batch_samples
 * samples in total (0: 4 Mi samples, about 3 minutes of 22.05 kHz audio). Device buffers, pinned
 * staging buffers, streams and the cuFFT plans are all made here, once; their size is stated by
 * cuda_plan_bytes. *out is owned by the caller (cuda_plan_free). A plan is not thread-safe:
 * use it from one thread at a time. Errors: FC_ECONFIG (invalid cfg, or reason in
 * cuda_last_error), FC_ENODEVICE, FC_ECUDA, ENOMEM. */
int cuda_plan_create(const fc_mel_config *cfg, int device, size_t max_batch_samples,
                     fc_cuda_plan **out);
/* Frees everything the plan holds (synchronizes its streams first). NULL is a no-op. */
void cuda_plan_free(fc_cuda_plan *p);
/* The config the plan was made for (a copy owned by the plan). */
const fc_mel_config *cuda_plan_config(const fc_cuda_plan *p);
/* The longest utterance (samples) one call accepts: max_batch_samples as made. */
size_t cuda_plan_max_samples(const fc_cuda_plan *p);
/* Device bytes and pinned host bytes the plan holds (its memory bound; constant after create). */
void cuda_plan_bytes(const fc_cuda_plan *p, size_t *device_bytes, size_t *pinned_bytes);

/* Features of n_utts utterances: pcm[i] holds lens[i] mono samples at cfg->sample_rate in [-1, 1];
 * out[i] receives fc_mel_num_frames(cfg, lens[i]) * n_mels values, time-major [frames][n_mels], of
 * dtype `dtype` (FC_DTYPE_F32, F16 or BF16; 0 means cfg->dtype), rounded to nearest even as
 * fc_convert_dtype does. The numbers are fc_mel_compute's to within 1e-4 on log outputs (float
 * summation order differs), with exactly its frame counts. Utterances are packed into chunks of up
 * to max_batch_samples samples; chunks alternate between the plan's two streams. Returns when every
 * out[i] is written. The caller keeps ownership of pcm, lens and out.
 * Errors: FC_EEMPTY (an utterance gives no frames: nothing is computed), FC_ETOOLONG (an utterance
 * is longer than cuda_plan_max_samples), FC_ECONFIG (bad dtype), FC_ECUDA (the plan turns sticky:
 * later calls give FC_EBADSTATE), FC_EBADSTATE. Unlike fc_mel_compute, samples that are NaN or
 * infinite are not refused (FC_ERANGE there): a log output holds the floor or an infinity for
 * their frames. Its callers feed it decoded audio, which fc_audio_decode has checked already. */
int cuda_compute_batch(fc_cuda_plan *p, const float *const *pcm, const size_t *lens, size_t n_utts,
                       int dtype, void *const *out);

/* The same from 16-bit PCM: sample v stands for v / 32768 (as libsndfile and featurize read 16-bit
 * audio, so the numbers are exactly those of cuda_compute_batch on the decoded floats). The
 * samples cross PCIe as int16 (half the bytes) and are converted on the GPU. */
int cuda_compute_batch_i16(fc_cuda_plan *p, const int16_t *const *pcm, const size_t *lens,
                           size_t n_utts, int dtype, void *const *out);

/* One utterance, float32 out: the same as cuda_compute_batch with n_utts = 1, dtype F32, and
 * fc_mel_compute's signature. */
int cuda_compute(fc_cuda_plan *p, const float *samples, size_t n, float *out);

/* ---- a gatherer for the featurize pipeline ------------------------------------------------------
 * Worker threads each hold one utterance and want its features; the GPU wants many per launch.
 * cuda_gather_compute may be called from any number of threads at once: a call queues its
 * utterance and blocks; when `workers` calls are waiting, the staging buffer is full, or the
 * oldest call has waited wait_us microseconds, one of the callers launches them all as one
 * cuda_compute_batch and every caller returns with its own out filled (float32). */
typedef struct fc_cuda_gather fc_cuda_gather;

/* Create a gatherer owning a new plan for (cfg, device, max_batch_samples) — see
 * cuda_plan_create — for up to `workers` concurrent callers (0 = 1); wait_us 0 means 2000.
 * *out is freed with cuda_gather_free (after every caller has returned). */
int cuda_gather_create(const fc_mel_config *cfg, int device, size_t max_batch_samples,
                       unsigned workers, unsigned wait_us, fc_cuda_gather **out);
void cuda_gather_free(fc_cuda_gather *g);
/* Features of one utterance into out (fc_mel_num_frames(cfg, n) * n_mels float32). Thread-safe.
 * Errors as cuda_compute_batch; FC_EEMPTY and FC_ETOOLONG concern this utterance only, and
 * are detected before it is queued. A CUDA failure fails every caller of that launch and every
 * later call (FC_EBADSTATE). */
int cuda_gather_compute(fc_cuda_gather *g, const float *samples, size_t n, float *out);

#ifdef __cplusplus
}
#endif
#endif
