/* The ring plan's trace (cuda_trace.h). Compiled into CUDA builds only (FC_HAVE_CUDA). */
#include "kernels/cuda/cuda_trace.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cuda_trace {
  FILE *f;
  pthread_mutex_t mu; /* lines come from the launch, completion and grower threads */
  cudaEvent_t base;
  double base_host; /* when base was seen done, on the host's clock */
};

double cuda_trace_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

cuda_trace *cuda_trace_open(void) {
  const char *path = getenv("FC_CUDA_TRACE");
  if (!path || !path[0]) return NULL;
  cuda_trace *t = fc_calloc(1, sizeof *t);
  if (!t || !(t->f = fopen(path, "w"))) {
    fprintf(stderr, "featcache: FC_CUDA_TRACE: cannot write %s: %s\n", path,
            strerror(t ? errno : ENOMEM));
    free(t);
    return NULL;
  }
  cudaError_t e = cudaEventCreate(&t->base);
  if (e == cudaSuccess) e = cudaEventRecord(t->base, 0);
  if (e == cudaSuccess) e = cudaEventSynchronize(t->base);
  if (e != cudaSuccess) {
    fprintf(stderr, "featcache: FC_CUDA_TRACE: %s: %s\n", path, cudaGetErrorString(e));
    cudaGetLastError();
    if (t->base) cudaEventDestroy(t->base);
    fclose(t->f);
    free(t);
    return NULL;
  }
  t->base_host = cuda_trace_now();
  pthread_mutex_init(&t->mu, NULL);
  fputs("kind,slot,utterances,samples_int16,samples_float,output_bytes,t0,t1,t2,t3,t4,t5\n", t->f);
  return t;
}

/* kind, which, four counts, six times (negative: left empty). */
static void line(cuda_trace *t, const char *kind, int which, const uint64_t c[4],
                 const double tm[6]) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "%s,%d", kind, which);
  for (int i = 0; i < 4; i++)
    n += snprintf(buf + n, sizeof buf - (size_t)n, ",%llu", (unsigned long long)(c ? c[i] : 0));
  for (int i = 0; i < 6; i++)
    n += tm[i] >= 0 ? snprintf(buf + n, sizeof buf - (size_t)n, ",%.6f", tm[i])
                    : snprintf(buf + n, sizeof buf - (size_t)n, ",");
  pthread_mutex_lock(&t->mu);
  fprintf(t->f, "%s\n", buf);
  pthread_mutex_unlock(&t->mu);
}

void cuda_trace_span(cuda_trace *t, const char *kind, int which, const uint64_t c[4], double t0,
                     double t1) {
  if (!t) return;
  const double tm[6] = {t0, t1, -1, -1, -1, -1};
  line(t, kind, which, c, tm);
}

/* An event's time on the host's clock; -1 when it cannot be read. */
static double device_time(cuda_trace *t, cudaEvent_t e) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, t->base, e) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return t->base_host + (double)ms * 1e-3;
}

void cuda_trace_chunk(cuda_trace *t, int slot, const uint64_t c[4], double launched,
                      const cudaEvent_t ev[4], double seen) {
  if (!t) return;
  const double tm[6] = {launched,
                        device_time(t, ev[0]),
                        device_time(t, ev[1]),
                        device_time(t, ev[2]),
                        device_time(t, ev[3]),
                        seen};
  line(t, "chunk", slot, c, tm);
}

void cuda_trace_close(cuda_trace *t, double t0) {
  if (!t) return;
  cuda_trace_span(t, "free", -1, NULL, t0, cuda_trace_now());
  fclose(t->f);
  cudaEventDestroy(t->base);
  cudaGetLastError();
  pthread_mutex_destroy(&t->mu);
  free(t);
}
