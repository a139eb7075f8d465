/* XXH3, the digests' and checksums' hash, run by the widest vector code this CPU has.
 *
 * xxHash computes the same bits whatever its vector code (scalar, SSE2, AVX2, AVX-512); how fast
 * depends on which one it was compiled with. A distribution's libxxhash is built for the baseline
 * (SSE2 on x86-64: ~20 GB/s on a buffer in cache), which the digests of audio files, the record
 * checksums the writers compute and the loader checks on every read would all pay. So xxHash's
 * own code is compiled here once per instruction set (xxh3_base.c, and on x86-64 xxh3_avx2.c with
 * -mavx2 and xxh3_avx512.c with -mavx512f: XXH_INLINE_ALL, XXH_VECTOR) and xxh3_best() picks,
 * once, the widest the CPU and the OS support (~45 GB/s with AVX2 or AVX-512 on the same buffer).
 * tests/unit/test_xxh3.c checks every variant this CPU can run against libxxhash itself.
 * Internal to the core component (formats/digest.c is its public face). */
#ifndef FC_XXH3_INT_H
#define FC_XXH3_INT_H

#include "featcache/fc_base.h"

#include <stddef.h>
#include <stdint.h>

/* A streaming XXH3-128's state (an XXH3_state_t: xxh3_impl.h checks that it fits). */
typedef struct xxh3_stream {
  _Alignas(64) unsigned char state[768];
} xxh3_stream;

typedef struct xxh3_impl {
  const char *name; /* "base", "avx2", "avx512" */
  void (*h128)(const void *data, size_t len, uint64_t out[2]); /* low64, high64 */
  uint64_t (*h64)(const void *data, size_t len);
  void (*reset)(xxh3_stream *s); /* a 128-bit stream from the start */
  void (*update)(xxh3_stream *s, const void *data, size_t len);
  void (*digest)(const xxh3_stream *s, uint64_t out[2]);
} xxh3_impl;

extern const xxh3_impl xxh3_impl_base;
#if defined(__x86_64__)
#define XXH3_HAVE_X86 1
extern const xxh3_impl xxh3_impl_avx2, xxh3_impl_avx512;
#endif

/* The variant for this CPU, chosen at the first call. */
const xxh3_impl *xxh3_best(void);

/* A 128-bit hash (low64, high64) as a digest is stored (fc_base.h). */
void xxh3_put_digest(const uint64_t h[2], fc_digest *out);

#endif
