/* GPU time through CUDA events: the profile room's timer of device work (internal; the tests and
 * the library call it, users time their GPU phases through StepProfiler's cuda=True). */
#ifndef FC_GPU_TIMER_H
#define FC_GPU_TIMER_H

#include <stddef.h>

/* The GPU time of the work queued on a stream between start and stop, measured with two CUDA
 * events; add it to a profile with fc_profiler_device_add (fc_profiler.h). The CUDA runtime is loaded at run time
 * (dlopen libcudart.so.12, libcudart.so.11.0 or libcudart.so): the library has no build-time CUDA
 * dependency. Errors of create: FC_ENODEVICE (no runtime, no device: why says which), ENOMEM.
 * stream: a cudaStream_t (NULL: the legacy default stream). stop records the end event, waits for
 * it (cudaEventSynchronize) and returns the elapsed ms: FC_ECUDA when a CUDA call fails,
 * FC_EBADSTATE without a start. One thread at a time per timer. */
typedef struct fc_gpu_timer fc_gpu_timer;
int gpu_timer_create(fc_gpu_timer **out, char *why, size_t why_len);
int gpu_timer_start(fc_gpu_timer *t, void *stream);
int gpu_timer_stop(fc_gpu_timer *t, void *stream, double *ms);
void gpu_timer_free(fc_gpu_timer *t);

#endif
