/* GPU utilization sampled through NVML, loaded at run time (fc_profiler.h, fc_gpu_sampler).
 *
 * Owns: a thread that calls nvmlDeviceGetUtilizationRates every period and keeps the GPU percent.
 * Calls: libnvidia-ml.so.1 through dlopen/dlsym only — the library is never linked, so the CPU
 * build runs (and says "not measured") on machines without the NVIDIA driver. */
#include "featcache/fc_profiler.h"
#include "formats/common/args.h"
#include "libcache/core/profile/profile_int.h"
#include "formats/common/alloc.h"
#include "formats/common/thread_name.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <time.h>

/* The few NVML declarations used (nvml.h, stable ABI since NVML 5): */
typedef int nvml_return; /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device; /* nvmlDevice_t */
typedef struct nvml_utilization { /* nvmlUtilization_t */
  unsigned int gpu, memory;
} nvml_utilization;

struct fc_gpu_sampler {
  void *dl;
  nvml_return (*shutdown)(void);
  nvml_return (*get_util)(nvml_device, nvml_utilization *);
  nvml_device dev;
  double period_ms;
  pthread_t thread;
  int running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
  double *pct;
  size_t n, cap;
  double *snap; /* the copy fc_gpu_sampler_samples hands out while the thread appends to pct */
  size_t snap_cap;
};

static void *sampler_main(void *arg) {
  fc_gpu_sampler *s = arg;
  fc_thread_name("gpu-sampler", -1);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    pthread_mutex_unlock(&s->mu);
    nvml_utilization u;
    int ok = s->get_util(s->dev, &u) == 0;
    pthread_mutex_lock(&s->mu);
    if (ok) {
      if (s->n == s->cap) {
        size_t ncap = s->cap ? 2 * s->cap : 256;
        double *p = fc_realloc(s->pct, ncap * sizeof *p);
        if (p) {
          s->pct = p;
          s->cap = ncap;
        }
      }
      if (s->n < s->cap) s->pct[s->n++] = u.gpu;
    }
    long ns = (long)(s->period_ms * 1e6);
    next.tv_sec += ns / 1000000000L;
    next.tv_nsec += ns % 1000000000L;
    if (next.tv_nsec >= 1000000000L) {
      next.tv_sec++;
      next.tv_nsec -= 1000000000L;
    }
    while (!s->stop) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec >= next.tv_nsec))
        break;
      /* the condition variable uses CLOCK_MONOTONIC (set at init) */
      pthread_cond_timedwait(&s->cv, &s->mu, &next);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int fc_gpu_sampler_start(unsigned device, double period_ms, fc_gpu_sampler **out, char *why,
                         size_t why_len) {
  FC_ARGS_WHY(out);
  *out = NULL;
  if (!(period_ms >= 1 && period_ms <= 60000)) {
    prof_say(why, why_len, "sampling period %g ms out of range (1 .. 60000)", period_ms);
    return FC_ECONFIG;
  }
  void *dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    prof_say(why, why_len, "NVML not available: %s", e ? e : "libnvidia-ml.so.1 not found");
    return FC_ENODEVICE;
  }
  nvml_return (*init)(void) = (nvml_return(*)(void))dlsym(dl, "nvmlInit_v2");
  nvml_return (*by_index)(unsigned, nvml_device *) =
      (nvml_return(*)(unsigned, nvml_device *))dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
  const char *(*errstr)(nvml_return) = (const char *(*)(nvml_return))dlsym(dl, "nvmlErrorString");
  fc_gpu_sampler *s = fc_calloc(1, sizeof *s);
  if (!s) {
    dlclose(dl);
    return ENOMEM;
  }
  s->dl = dl;
  s->shutdown = (nvml_return(*)(void))dlsym(dl, "nvmlShutdown");
  s->get_util =
      (nvml_return(*)(nvml_device, nvml_utilization *))dlsym(dl, "nvmlDeviceGetUtilizationRates");
  s->period_ms = period_ms;
  if (!init || !by_index || !s->shutdown || !s->get_util) {
    prof_say(why, why_len, "NVML not usable: libnvidia-ml.so.1 lacks the functions used");
    dlclose(dl);
    free(s);
    return FC_ENODEVICE;
  }
  nvml_return r = init();
  if (r) {
    prof_say(why, why_len, "NVML not usable: nvmlInit: %s", errstr ? errstr(r) : "error");
    dlclose(dl);
    free(s);
    return FC_ENODEVICE;
  }
  nvml_utilization u;
  if ((r = by_index(device, &s->dev)) || (r = s->get_util(s->dev, &u))) {
    prof_say(why, why_len, "NVML: GPU %u: %s", device, errstr ? errstr(r) : "error");
    s->shutdown();
    dlclose(dl);
    free(s);
    return FC_ENODEVICE;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = pthread_create(&s->thread, NULL, sampler_main, s);
  if (rc) {
    prof_say(why, why_len, "sampler thread: %s", strerror(rc));
    fc_gpu_sampler_free(s);
    return rc;
  }
  s->running = 1;
  *out = s;
  return 0;
}

void fc_gpu_sampler_stop(fc_gpu_sampler *s) {
  if (!s || !s->running) return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  s->running = 0;
}

size_t fc_gpu_sampler_samples(fc_gpu_sampler *s, const double **pct) {
  FC_ARGS_OR(0, s, pct);
  pthread_mutex_lock(&s->mu);
  size_t n = s->n;
  if (n > s->snap_cap) {
    double *p = fc_realloc(s->snap, n * sizeof *p);
    if (p) {
      s->snap = p;
      s->snap_cap = n;
    } else {
      n = s->snap_cap; /* out of memory: the first samples, as many as the copy holds */
    }
  }
  if (n) memcpy(s->snap, s->pct, n * sizeof *s->pct);
  *pct = s->snap;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void fc_gpu_sampler_free(fc_gpu_sampler *s) {
  if (!s) return;
  fc_gpu_sampler_stop(s);
  if (s->shutdown) s->shutdown();
  if (s->dl) dlclose(s->dl);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->pct);
  free(s->snap);
  free(s);
}
