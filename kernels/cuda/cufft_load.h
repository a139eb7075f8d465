/* cuFFT, loaded at run time (cufft_load.c): the library is ~290 MB of kernels that only a CUDA run
 * needs, so libfeatcache_mel does not link it; the cuFFT calls of cuda_host.c go to stubs that
 * dlopen libcufft.so.<major> on first use. Private to kernels/cuda/. */
#ifndef FC_CUFFT_LOAD_H
#define FC_CUFFT_LOAD_H

#include <stddef.h>

/* Load cuFFT once per process (thread-safe): $FC_CUFFT_LIBRARY when set, else libcufft.so.<the
 * major version built against> by the usual search (the library's RUNPATH, LD_LIBRARY_PATH,
 * ldconfig), else the same name in the toolkit's library directory found at configure. Returns
 * 0, or FC_ENODEVICE with the reason in why ("cuFFT not loaded: ..."); also without FC_HAVE_CUDA. */
int cufft_load(char *why, size_t why_len);
/* The reason the load failed, "" when it did not (or was not tried). Static string. */
const char *cufft_load_error(void);
/* cufftGetVersion through the stubs (needs no GPU): 0 and *version, or FC_ENODEVICE (no cuFFT,
 * or built without CUDA). For tests. */
int cufft_version(int *version);

#endif
