/* XXH3 per instruction set (formats/xxh3_int.h): every variant this CPU can run gives libxxhash's
 * own XXH3-128 and XXH3-64, whole and streamed in pieces, at every length to 2 KiB and at block
 * edges beyond, from aligned and misaligned addresses; xxh3_best() takes the widest the CPU has;
 * fc_digest_pieces is fc_digest_buffer of the concatenation. */
#include "featcache.h"
#include "formats/xxh3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tests/check.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* One variant against libxxhash over buf[off .. off + len). */
static void check_at(const xxh3_impl *x, const unsigned char *p, size_t len) {
  const XXH128_hash_t want = XXH3_128bits(p, len);
  uint64_t h[2];
  x->h128(p, len, h);
  CHECK(h[0] == want.low64 && h[1] == want.high64, "%s: XXH3-128 of %zu bytes", x->name, len);
  CHECK(x->h64(p, len) == XXH3_64bits(p, len), "%s: XXH3-64 of %zu bytes", x->name, len);
  /* streamed: random pieces, some empty */
  xxh3_stream s;
  x->reset(&s);
  for (size_t at = 0; at < len;) {
    size_t n = (size_t)(next() % 4 == 0 ? 0 : next() % (len - at + 1));
    if (next() % 3 == 0 && n > 300) n = 1 + n % 300; /* short pieces too: the stream's buffer */
    x->update(&s, p + at, n);
    at += n;
  }
  x->digest(&s, h);
  CHECK(h[0] == want.low64 && h[1] == want.high64, "%s: XXH3-128 of %zu bytes, streamed", x->name,
        len);
}

static void check_impl(const xxh3_impl *x, const unsigned char *buf, size_t cap) {
  for (size_t len = 0; len <= 2048; len++) check_at(x, buf + (len % 7), len);
  const size_t big[] = {4095, 4096, 4097, 16383, 16384, 65549, (1u << 20) + 7, cap - 3};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
    for (size_t off = 0; off < 4; off++) check_at(x, buf + off, big[i]);
  printf("  %s: checked\n", x->name);
}

int main(void) {
  const size_t cap = 3u << 20;
  unsigned char *buf = malloc(cap + 8);
  if (!buf) return 1;
  for (size_t i = 0; i < cap + 8; i++) buf[i] = (unsigned char)next();

  const xxh3_impl *best = xxh3_best();
  check_impl(&xxh3_impl_base, buf, cap);
  const xxh3_impl *widest = &xxh3_impl_base;
#if defined(XXH3_HAVE_X86)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    check_impl(&xxh3_impl_avx2, buf, cap);
    widest = &xxh3_impl_avx2;
  } else {
    printf("  avx2: not run (this CPU has no AVX2)\n");
  }
  if (__builtin_cpu_supports("avx512f")) {
    check_impl(&xxh3_impl_avx512, buf, cap);
    widest = &xxh3_impl_avx512;
  } else {
    printf("  avx512: not run (this CPU has no AVX-512F)\n");
  }
#endif
  CHECK(best == widest, "xxh3_best took %s, the widest this CPU runs is %s", best->name,
        widest->name);
  printf("  xxh3_best: %s\n", best->name);

  /* the public face: fc_digest_buffer, fc_digest_pieces, fc_hash64 */
  for (int t = 0; t < 200; t++) {
    size_t len = (size_t)(next() % (t < 100 ? 3000 : cap)), cut1 = len ? next() % (len + 1) : 0,
           cut2 = cut1 + (len - cut1 ? next() % (len - cut1 + 1) : 0);
    const unsigned char *p = buf + t % 5;
    fc_digest whole, pieces;
    fc_digest_buffer(p, len, &whole);
    const void *const data[3] = {p, p + cut1, p + cut2};
    const size_t lens[3] = {cut1, cut2 - cut1, len - cut2};
    fc_digest_pieces(data, lens, 3, &pieces);
    CHECK(memcmp(whole.bytes, pieces.bytes, 16) == 0, "pieces %zu + %zu + %zu", cut1, cut2 - cut1,
          len - cut2);
    const XXH128_hash_t want = XXH3_128bits(p, len);
    CHECK(memcmp(whole.bytes, &want.low64, 8) == 0 && memcmp(whole.bytes + 8, &want.high64, 8) == 0,
          "fc_digest_buffer of %zu bytes: stored order low half, high half (little-endian host)",
          len);
    CHECK(fc_hash64(p, len) == XXH3_64bits(p, len), "fc_hash64 of %zu bytes", len);
  }
  fc_digest none, empty;
  fc_digest_pieces(NULL, NULL, 0, &none);
  fc_digest_buffer(NULL, 0, &empty);
  CHECK(memcmp(none.bytes, empty.bytes, 16) == 0, "no pieces: the empty digest");
  free(buf);
  return fc_check_result("test_xxh3");
}
