/* Digests and checksums: thin, byte-order-explicit wrappers over xxHash's XXH3, run by the widest
 * vector code the CPU has (formats/xxh3_int.h). */
#include "featcache/fc_base.h"
#include "formats/common/args.h"
#include "formats/xxh3_int.h"

#include <stdatomic.h>
#include <string.h>

const xxh3_impl *xxh3_best(void) {
  static _Atomic(const xxh3_impl *) chosen;
  const xxh3_impl *p = atomic_load_explicit(&chosen, memory_order_acquire);
  if (p) return p;
  p = &xxh3_impl_base;
#if defined(XXH3_HAVE_X86) && defined(__GNUC__)
  __builtin_cpu_init(); /* "supports" below also asks whether the OS saves the registers */
  if (__builtin_cpu_supports("avx512f"))
    p = &xxh3_impl_avx512;
  else if (__builtin_cpu_supports("avx2"))
    p = &xxh3_impl_avx2;
#endif
  atomic_store_explicit(&chosen, p, memory_order_release); /* any thread's choice is the same */
  return p;
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Stored order is fixed (low half LE, then high half LE) so stores move between hosts. */
void xxh3_put_digest(const uint64_t h[2], fc_digest *out) {
  put_le64(out->bytes, h[0]);
  put_le64(out->bytes + 8, h[1]);
}

void fc_digest_buffer(const void *data, size_t len, fc_digest *out) {
  FC_ARGS_OR(, data || !len, out);
  uint64_t h[2];
  xxh3_best()->h128(data, len, h);
  xxh3_put_digest(h, out);
}

void fc_digest_pieces(const void *const *data, const size_t *len, size_t n, fc_digest *out) {
  FC_ARGS_OR(, data || !n, len || !n, out);
  const xxh3_impl *x = xxh3_best();
  xxh3_stream s;
  uint64_t h[2];
  x->reset(&s);
  for (size_t i = 0; i < n; i++) x->update(&s, data[i], len[i]);
  x->digest(&s, h);
  xxh3_put_digest(h, out);
}

uint64_t fc_hash64(const void *data, size_t len) {
  FC_ARGS_OR(0, data || !len);
  return xxh3_best()->h64(data, len);
}

void fc_digest_hex(const fc_digest *d, char out[33]) {
  FC_ARGS_OR(, d, out);
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[d->bytes[i] >> 4];
    out[2 * i + 1] = hex[d->bytes[i] & 15];
  }
  out[32] = '\0';
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int fc_digest_parse(const char *hex, fc_digest *out) {
  FC_ARGS(out);
  if (!hex || strlen(hex) != 32) return FC_ECONFIG;
  for (int i = 0; i < 16; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return FC_ECONFIG;
    out->bytes[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}
