// The CUDA backend's kernels. Each is a loop over its threads around one FC_HD body from
// mel_kernels.h (shared with the host test, tests/unit/test_shared_math.c); the launchers are the
// only C-callable entry points (mel_cuda.h). Kept small on purpose: nvcc time on a 2-core CI box.
// Built with -fmad=false so products and sums round as the CPU backend's do (see CMakeLists.txt).
#include <cfloat>
#include <cuda_runtime.h>

#include "mel_cuda.h"

namespace {

constexpr int kFrameThreads = 256;
constexpr int kMelThreads = 128;
constexpr int kMaxThreads = 256;
constexpr int kFinishThreads = 256;
constexpr unsigned kMaxGrid = 1u << 20;

unsigned grid_for(uint64_t n) { return n < kMaxGrid ? (unsigned)n : kMaxGrid; }

// One block per frame: the segment's sum (Kaldi DC removal) as a block reduction in double, then
// every position of the row.
__global__ void frames_kernel(fc_cu_params P, const float *pcm, float *rows, uint64_t n_frames) {
  __shared__ double partial[kFrameThreads];
  for (uint64_t g = blockIdx.x; g < n_frames; g += gridDim.x) {
    const uint32_t u = fc_cu_frame_utt(&P, g);
    double mean = 0.0;
    if (P.remove_dc) {
      double s = 0.0;
      for (uint32_t j = threadIdx.x; j < P.win; j += blockDim.x)
        s += (double)fc_cu_segment_sample(&P, pcm, u, g, j);
      partial[threadIdx.x] = s;
      __syncthreads();
      for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
        __syncthreads();
      }
      mean = partial[0] / (double)P.win;
      __syncthreads(); // partial[] is reused by the next frame of this block
    }
    float *row = rows + g * P.row;
    for (uint32_t pos = threadIdx.x; pos < P.row; pos += blockDim.x)
      row[pos] = fc_cu_frame_value(&P, pcm, u, g, pos, mean);
  }
}

// One block per frame: |X|^power into shared memory, then one thread per mel band.
__global__ void mel_kernel(fc_cu_params P, const float *rows, float *mel, uint64_t n_frames) {
  extern __shared__ float spec[];
  for (uint64_t g = blockIdx.x; g < n_frames; g += gridDim.x) {
    const float *row = rows + g * P.row;
    for (uint32_t k = threadIdx.x; k < P.nbins; k += blockDim.x)
      spec[k] = fc_cu_spectrum(&P, row, k);
    __syncthreads();
    for (uint32_t m = threadIdx.x; m < P.n_mels; m += blockDim.x)
      mel[g * P.n_mels + m] = fc_cu_mel_value(&P, spec, m);
    __syncthreads(); // spec[] is reused by the next frame of this block
  }
}

// One block per utterance: the maximum of its first-stage values (order-independent: exact).
__global__ void utt_max_kernel(fc_cu_params P, const float *mel, float *utt_max) {
  __shared__ float partial[kMaxThreads];
  const uint32_t u = blockIdx.x;
  const uint64_t lo = P.utt_frame_off[u] * P.n_mels, hi = P.utt_frame_off[u + 1] * P.n_mels;
  float mx = -FLT_MAX;
  for (uint64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) mx = mel[i] > mx ? mel[i] : mx;
  partial[threadIdx.x] = mx;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w && partial[threadIdx.x + w] > partial[threadIdx.x])
      partial[threadIdx.x] = partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) utt_max[u] = partial[0];
}

__global__ void i16_kernel(const int16_t *pcm16, float *pcm, uint64_t n) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    pcm[i] = fc_cu_i16_to_f32(pcm16[i]);
}

__global__ void finish_kernel(fc_cu_params P, const float *mel, const float *utt_max, void *out,
                              uint64_t n, int dtype) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    fc_cu_store(out, i, fc_cu_finish_value(&P, i, mel[i], utt_max), dtype);
}

} // namespace

extern "C" int fc_cu_launch_i16_to_f32(const int16_t *pcm16, float *pcm, uint64_t n,
                                       fc_cu_stream stream) {
  if (n == 0) return cudaSuccess;
  i16_kernel<<<grid_for((n + kFinishThreads - 1) / kFinishThreads), kFinishThreads, 0, stream>>>(
      pcm16, pcm, n);
  return cudaGetLastError();
}

extern "C" int fc_cu_launch_frames(const fc_cu_params *P, const float *pcm, float *rows,
                                   uint64_t n_frames, fc_cu_stream stream) {
  if (n_frames == 0) return cudaSuccess;
  frames_kernel<<<grid_for(n_frames), kFrameThreads, 0, stream>>>(*P, pcm, rows, n_frames);
  return cudaGetLastError();
}

extern "C" int fc_cu_launch_mel(const fc_cu_params *P, const float *rows, float *mel,
                                uint64_t n_frames, fc_cu_stream stream) {
  if (n_frames == 0) return cudaSuccess;
  mel_kernel<<<grid_for(n_frames), kMelThreads, P->nbins * sizeof(float), stream>>>(*P, rows, mel,
                                                                                    n_frames);
  return cudaGetLastError();
}

extern "C" int fc_cu_launch_utt_max(const fc_cu_params *P, const float *mel, float *utt_max,
                                    fc_cu_stream stream) {
  if (P->n_utts == 0) return cudaSuccess;
  utt_max_kernel<<<P->n_utts, kMaxThreads, 0, stream>>>(*P, mel, utt_max);
  return cudaGetLastError();
}

extern "C" int fc_cu_launch_finish(const fc_cu_params *P, const float *mel, const float *utt_max,
                                   void *out, uint64_t n, int dtype, fc_cu_stream stream) {
  if (n == 0) return cudaSuccess;
  finish_kernel<<<grid_for((n + kFinishThreads - 1) / kFinishThreads), kFinishThreads, 0, stream>>>(
      *P, mel, utt_max, out, n, dtype);
  return cudaGetLastError();
}
