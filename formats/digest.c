/* Digests, checksums and dtypes: thin, byte-order-explicit wrappers over xxHash. */
#include "featcache/fc_base.h"

#include <string.h>
#include <xxhash.h>

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void fc_digest_buffer(const void *data, size_t len, fc_digest *out) {
  /* Stored order is fixed (low half LE, then high half LE) so stores move between hosts. */
  XXH128_hash_t h = XXH3_128bits(len ? data : "", len);
  put_le64(out->bytes, h.low64);
  put_le64(out->bytes + 8, h.high64);
}

uint64_t fc_hash64(const void *data, size_t len) { return XXH3_64bits(len ? data : "", len); }

void fc_digest_hex(const fc_digest *d, char out[33]) {
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
  if (!hex || strlen(hex) != 32) return FC_ECONFIG;
  for (int i = 0; i < 16; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return FC_ECONFIG;
    out->bytes[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}
