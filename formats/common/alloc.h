/* Allocation wrappers: the `alloc` fault site (fault.h). Every allocation the library makes
 * (formats/, kernels/, libcache/; not those inside LMDB, jansson, FFTW, libsndfile, soxr or
 * espeak-ng) goes through these, so that FC_FAULT=alloc:N fails the N-th one with NULL and errno
 * ENOMEM. In a release build (FC_FAULT_INJECTION off) they are the libc calls themselves: no
 * wrapper, no cost. Inline, so each component calls the one countdown (fault_hit) and nothing
 * new is exported. Memory they return is freed with free(). */
#ifndef FC_ALLOC_H
#define FC_ALLOC_H

#include <stdlib.h>
#include <string.h>

#include "formats/common/fault.h"

#ifdef FC_FAULT_INJECTION
#include <errno.h>

static inline int fc_alloc_fails(void) {
  if (!fault_hit("alloc")) return 0;
  errno = ENOMEM;
  return 1;
}
static inline void *fc_malloc(size_t n) { return fc_alloc_fails() ? NULL : malloc(n); }
static inline void *fc_calloc(size_t n, size_t size) {
  return fc_alloc_fails() ? NULL : calloc(n, size);
}
/* On failure the old block is left as it was (as realloc does), still the caller's to free. */
static inline void *fc_realloc(void *p, size_t n) {
  return fc_alloc_fails() ? NULL : realloc(p, n);
}
static inline char *fc_strdup(const char *s) { return fc_alloc_fails() ? NULL : strdup(s); }
static inline char *fc_strndup(const char *s, size_t n) {
  return fc_alloc_fails() ? NULL : strndup(s, n);
}
static inline void *fc_aligned_alloc(size_t align, size_t n) {
  return fc_alloc_fails() ? NULL : aligned_alloc(align, n);
}
/* Returns 0 or an errno value, as posix_memalign does. */
static inline int fc_posix_memalign(void **p, size_t align, size_t n) {
  return fc_alloc_fails() ? ENOMEM : posix_memalign(p, align, n);
}
#else
#define fc_alloc_fails() 0
#define fc_malloc(n) malloc(n)
#define fc_calloc(n, size) calloc(n, size)
#define fc_realloc(p, n) realloc(p, n)
#define fc_strdup(s) strdup(s)
#define fc_strndup(s, n) strndup(s, n)
#define fc_aligned_alloc(align, n) aligned_alloc(align, n)
#define fc_posix_memalign(p, align, n) posix_memalign(p, align, n)
#endif

#endif
