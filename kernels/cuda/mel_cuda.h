/* Kernel launchers of the CUDA backend (mel_cuda.cu), called by cuda_host.c. Private to the
 * backend. Each enqueues one kernel on `stream` and returns cudaGetLastError() as an int
 * (cudaError_t), so the C host code never needs nvcc. */
#ifndef FC_CUDA_MEL_CUDA_H
#define FC_CUDA_MEL_CUDA_H

#include <stdint.h>

#include "mel_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *fc_cu_stream; /* = cudaStream_t */

/* pcm[i] = fc_cu_i16_to_f32(pcm16[i]) for i < n. */
int fc_cu_launch_i16_to_f32(const int16_t *pcm16, float *pcm, uint64_t n, fc_cu_stream stream);
/* rows[g * row + pos] for every frame g < n_frames and pos < row (fc_cu_frame_value). */
int fc_cu_launch_frames(const fc_cu_params *P, const float *pcm, float *rows, uint64_t n_frames,
                        fc_cu_stream stream);
/* mel[g * n_mels + m], first stage, from the transformed rows (fc_cu_spectrum, fc_cu_mel_value). */
int fc_cu_launch_mel(const fc_cu_params *P, const float *rows, float *mel, uint64_t n_frames,
                     fc_cu_stream stream);
/* utt_max[u] = max over utterance u's slice of mel (first stage), for u < n_utts. */
int fc_cu_launch_utt_max(const fc_cu_params *P, const float *mel, float *utt_max,
                         fc_cu_stream stream);
/* out[i] = fc_cu_store(fc_cu_finish_value(mel[i])) for i < n (total frames * n_mels). */
int fc_cu_launch_finish(const fc_cu_params *P, const float *mel, const float *utt_max, void *out,
                        uint64_t n, int dtype, fc_cu_stream stream);

#ifdef __cplusplus
}
#endif
#endif
