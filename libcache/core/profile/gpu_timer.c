/* Device time of a stretch of GPU work from C, with CUDA events (fc_profiler.h, fc_gpu_timer).
 *
 * Owns: two CUDA events. Calls: the CUDA runtime through dlopen/dlsym only (libcudart.so.12,
 * .11.0, or libcudart.so): the library never links CUDA, so the CPU build runs everywhere and a
 * missing runtime or device is an error the caller can report ("not measured"). */
#include "featcache/fc_profiler.h"
#include "libcache/core/profile/gpu_timer.h"
#include "libcache/core/profile/profile_int.h"
#include "formats/common/alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef int cuda_error; /* cudaError_t: 0 = cudaSuccess */
typedef struct cuda_event *cuda_event_t;

struct fc_gpu_timer {
  void *dl;
  cuda_error (*record)(cuda_event_t, void *);
  cuda_error (*sync)(cuda_event_t);
  cuda_error (*elapsed)(float *, cuda_event_t, cuda_event_t);
  cuda_error (*destroy)(cuda_event_t);
  const char *(*errstr)(cuda_error);
  cuda_event_t start, end;
  int started;
};

static void *open_cudart(void) {
  static const char *const names[] = {"libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (dl) return dl;
  }
  return NULL;
}

int gpu_timer_create(fc_gpu_timer **out, char *why, size_t why_len) {
  *out = NULL;
  void *dl = open_cudart();
  if (!dl) {
    prof_say(why, why_len, "CUDA runtime not available: libcudart.so.12, .so.11.0, .so not found");
    return FC_ENODEVICE;
  }
  fc_gpu_timer *t = fc_calloc(1, sizeof *t);
  if (!t) {
    dlclose(dl);
    return ENOMEM;
  }
  t->dl = dl;
  cuda_error (*count)(int *) = (cuda_error(*)(int *))dlsym(dl, "cudaGetDeviceCount");
  cuda_error (*create)(cuda_event_t *) =
      (cuda_error(*)(cuda_event_t *))dlsym(dl, "cudaEventCreate");
  t->record = (cuda_error(*)(cuda_event_t, void *))dlsym(dl, "cudaEventRecord");
  t->sync = (cuda_error(*)(cuda_event_t))dlsym(dl, "cudaEventSynchronize");
  t->elapsed =
      (cuda_error(*)(float *, cuda_event_t, cuda_event_t))dlsym(dl, "cudaEventElapsedTime");
  t->destroy = (cuda_error(*)(cuda_event_t))dlsym(dl, "cudaEventDestroy");
  t->errstr = (const char *(*)(cuda_error))dlsym(dl, "cudaGetErrorString");
  int n = 0;
  cuda_error e;
  if (!count || !create || !t->record || !t->sync || !t->elapsed || !t->destroy) {
    prof_say(why, why_len, "CUDA runtime not usable: it lacks the event functions");
  } else if ((e = count(&n)) || n == 0) {
    prof_say(why, why_len, "no CUDA device: %s",
             e && t->errstr ? t->errstr(e) : "cudaGetDeviceCount found none");
  } else if ((e = create(&t->start)) || (e = create(&t->end))) {
    prof_say(why, why_len, "cudaEventCreate: %s", t->errstr ? t->errstr(e) : "error");
  } else {
    *out = t;
    return 0;
  }
  gpu_timer_free(t);
  return FC_ENODEVICE;
}

int gpu_timer_start(fc_gpu_timer *t, void *stream) {
  if (t->record(t->start, stream)) return FC_ECUDA;
  t->started = 1;
  return 0;
}

int gpu_timer_stop(fc_gpu_timer *t, void *stream, double *ms) {
  *ms = 0;
  if (!t->started) return FC_EBADSTATE;
  t->started = 0;
  float f = 0;
  if (t->record(t->end, stream) || t->sync(t->end) || t->elapsed(&f, t->start, t->end))
    return FC_ECUDA;
  *ms = f;
  return 0;
}

void gpu_timer_free(fc_gpu_timer *t) {
  if (!t) return;
  if (t->destroy) {
    if (t->start) t->destroy(t->start);
    if (t->end) t->destroy(t->end);
  }
  if (t->dl) dlclose(t->dl);
  free(t);
}
