/* See cufft_load.h. Each cuFFT function cuda_host.c calls has a stub here with cuFFT's own
 * signature (from cufft.h, so a mismatch does not compile) that loads the library on first use
 * and calls through; a call cuda_host.c adds without a stub fails to link (--no-undefined). */
#include "kernels/cuda/cufft_load.h"

#include "featcache/fc_base.h"

#include <stdio.h>

#ifndef FC_HAVE_CUDA
int cufft_load(char *why, size_t why_len) {
  if (why && why_len) snprintf(why, why_len, "cuFFT not loaded: built without CUDA");
  return FC_ENODEVICE;
}
const char *cufft_load_error(void) { return ""; }
int cufft_version(int *version) {
  *version = 0;
  return FC_ENODEVICE;
}
#else
#include <cufft.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FC_STR2(x) #x
#define FC_STR(x) FC_STR2(x)
#define CUFFT_SONAME "libcufft.so." FC_STR(CUFFT_VER_MAJOR)

/* One entry per function: name, pointer. */
#define FC_CUFFT_FUNCS(X)                                                                    \
  X(cufftCreate, (cufftHandle * plan))                                                       \
  X(cufftDestroy, (cufftHandle plan))                                                        \
  X(cufftSetAutoAllocation, (cufftHandle plan, int autoAllocate))                            \
  X(cufftMakePlanMany,                                                                       \
    (cufftHandle plan, int rank, int *n, int *inembed, int istride, int idist, int *onembed, \
     int ostride, int odist, cufftType type, int batch, size_t *workSize))                   \
  X(cufftSetStream, (cufftHandle plan, cudaStream_t stream))                                 \
  X(cufftSetWorkArea, (cufftHandle plan, void *workArea))                                    \
  X(cufftExecR2C, (cufftHandle plan, cufftReal * idata, cufftComplex * odata))               \
  X(cufftGetVersion, (int *version))

#define FC_CUFFT_PTR(name, params) cufftResult(*name) params;
static struct { FC_CUFFT_FUNCS(FC_CUFFT_PTR) } fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512];

static void *open_cufft(void) {
  const char *env = getenv("FC_CUFFT_LIBRARY");
  if (env && *env) return dlopen(env, RTLD_NOW | RTLD_LOCAL);
  void *h = dlopen(CUFFT_SONAME, RTLD_NOW | RTLD_LOCAL);
#ifdef FC_CUFFT_DIR
  if (!h) h = dlopen(FC_CUFFT_DIR "/" CUFFT_SONAME, RTLD_NOW | RTLD_LOCAL);
#endif
  return h;
}

static void load(void) {
  void *h = open_cufft();
  if (!h) {
    const char *e = dlerror();
    snprintf(load_error, sizeof load_error, "cuFFT not loaded: %s", e ? e : CUFFT_SONAME);
    return;
  }
  void *sym;
#define FC_CUFFT_SYM(name, params)                                                   \
  if (!(sym = dlsym(h, #name))) {                                                    \
    snprintf(load_error, sizeof load_error, "cuFFT not loaded: no %s in it", #name); \
    return;                                                                          \
  }                                                                                  \
  memcpy(&fn.name, &sym, sizeof sym);
  FC_CUFFT_FUNCS(FC_CUFFT_SYM)
  /* h stays open for the life of the process, as a linked library would */
}

int cufft_load(char *why, size_t why_len) {
  pthread_once(&once, load);
  if (!load_error[0]) return 0;
  if (why && why_len) snprintf(why, why_len, "%s", load_error);
  return FC_ENODEVICE;
}

const char *cufft_load_error(void) { return load_error; }

/* The stubs: cuFFT's names, so cuda_host.c is written against cufft.h as usual. A failed load
 * returns CUFFT_NOT_SUPPORTED; cuda_host.c's message then quotes cufft_load_error(). */
#define FC_CUFFT_ARGS_cufftCreate (plan)
#define FC_CUFFT_ARGS_cufftDestroy (plan)
#define FC_CUFFT_ARGS_cufftSetAutoAllocation (plan, autoAllocate)
#define FC_CUFFT_ARGS_cufftMakePlanMany \
  (plan, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, workSize)
#define FC_CUFFT_ARGS_cufftSetStream (plan, stream)
#define FC_CUFFT_ARGS_cufftSetWorkArea (plan, workArea)
#define FC_CUFFT_ARGS_cufftExecR2C (plan, idata, odata)
#define FC_CUFFT_ARGS_cufftGetVersion (version)
#define FC_CUFFT_STUB(name, params)                      \
  cufftResult CUFFTAPI name params {                     \
    if (cufft_load(NULL, 0)) return CUFFT_NOT_SUPPORTED; \
    return fn.name FC_CUFFT_ARGS_##name;                 \
  }
FC_CUFFT_FUNCS(FC_CUFFT_STUB)

int cufft_version(int *version) {
  *version = 0;
  return cufftGetVersion(version) == CUFFT_SUCCESS ? 0 : FC_ENODEVICE;
}
#endif
