/* The body of one XXH3 variant (formats/xxh3_int.h): included by xxh3_base.c, xxh3_avx2.c and
 * xxh3_avx512.c, each with XXH3_IMPL (the table's name) and XXH3_IMPL_NAME defined, and
 * XXH_VECTOR where it chooses the vector code. xxHash inlined (static here: no symbol clashes
 * between the variants). */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "formats/xxh3_int.h"

_Static_assert(sizeof(XXH3_state_t) <= sizeof(((xxh3_stream *)0)->state),
               "xxh3_stream too small for this xxHash's XXH3_state_t");
_Static_assert(_Alignof(XXH3_state_t) <= 64, "XXH3_state_t aligned beyond 64 bytes");

static XXH3_state_t *state_of(const xxh3_stream *s) { return (XXH3_state_t *)(uintptr_t)s->state; }

static void impl_h128(const void *data, size_t len, uint64_t out[2]) {
  const XXH128_hash_t h = XXH3_128bits(len ? data : "", len);
  out[0] = h.low64;
  out[1] = h.high64;
}

static uint64_t impl_h64(const void *data, size_t len) { return XXH3_64bits(len ? data : "", len); }

static void impl_reset(xxh3_stream *s) {
  XXH3_state_t *st = state_of(s);
  XXH3_INITSTATE(st);
  XXH3_128bits_reset(st);
}

static void impl_update(xxh3_stream *s, const void *data, size_t len) {
  if (len) XXH3_128bits_update(state_of(s), data, len);
}

static void impl_digest(const xxh3_stream *s, uint64_t out[2]) {
  const XXH128_hash_t h = XXH3_128bits_digest(state_of(s));
  out[0] = h.low64;
  out[1] = h.high64;
}

const xxh3_impl XXH3_IMPL = {.name = XXH3_IMPL_NAME,
                             .h128 = impl_h128,
                             .h64 = impl_h64,
                             .reset = impl_reset,
                             .update = impl_update,
                             .digest = impl_digest};
