/* Pure checks on one record value: fc_record_verify plus the NaN/Inf scan (cache-verify --finite),
 * and for a coded (mq) record a full decode.
 * Kept apart from verify.c so the fuzz target links only byte-level code. */
#include "featcache/fc_codec.h"
#include "featcache/fc_format.h"
#include "featcache/fc_verify.h"
#include "libcache/core/verify/verify_int.h"

#include <stdio.h>
#include <string.h>

/* An IEEE value is NaN or Inf exactly when its exponent bits are all ones, so the scan tests bit
 * patterns (no conversion): f32 0x7f800000, f16 0x7c00, bf16 0x7f80. Blocks of 32 are OR-reduced
 * branch-free (the compiler vectorises them); the exact index is found only in a bad block. */
static size_t scan32(const uint8_t *p, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint32_t any = 0;
    for (size_t j = 0; j < 32; j++) {
      uint32_t u;
      memcpy(&u, p + 4 * (i + j), 4);
      any |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
    }
    if (any) break;
  }
  for (; i < n; i++) {
    uint32_t u;
    memcpy(&u, p + 4 * i, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return i;
  }
  return n;
}

static size_t scan16(const uint8_t *p, size_t n, uint16_t mask) {
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    uint32_t any = 0;
    for (size_t j = 0; j < 64; j++) {
      uint16_t u;
      memcpy(&u, p + 2 * (i + j), 2);
      any |= (uint32_t)((u & mask) == mask);
    }
    if (any) break;
  }
  for (; i < n; i++) {
    uint16_t u;
    memcpy(&u, p + 2 * i, 2);
    if ((u & mask) == mask) return i;
  }
  return n;
}

size_t find_nonfinite(const void *p, size_t n, int dtype) {
  /* Records are little-endian; so is every host we build for (x86-64, aarch64). */
  switch (dtype) {
  case FC_DTYPE_F32: return scan32(p, n);
  case FC_DTYPE_F16: return scan16(p, n, 0x7c00u);
  case FC_DTYPE_BF16: return scan16(p, n, 0x7f80u);
  default: return n;
  }
}

/* NaN has a nonzero mantissa under the all-ones exponent; Inf has a zero one. */
static int is_nan_at(const uint8_t *p, size_t i, int dtype) {
  if (dtype == FC_DTYPE_F32) {
    uint32_t u;
    memcpy(&u, p + 4 * i, 4);
    return (u & 0x007fffffu) != 0;
  }
  uint16_t u;
  memcpy(&u, p + 2 * i, 2);
  return (u & (dtype == FC_DTYPE_F16 ? 0x03ffu : 0x007fu)) != 0;
}

int fc_verify_record(const void *val, size_t len, int finite, char *why, size_t why_len) {
  fc_record_header h;
  const void *payload;
  int rc = fc_record_verify(val, len, &h, &payload, why, why_len);
  if (rc) return rc;
  /* Reserved: v1 writers write 0, and the header checksum covers the field, so a flag set is no
   * flipped bit but a writer meaning something a v1 reader cannot know (docs/FORMAT.md). */
  if (h.flags) {
    if (why && why_len) snprintf(why, why_len, "header flags 0x%08x: reserved, must be 0", h.flags);
    return FC_EFORMAT;
  }
  /* A coded record must decode cleanly to its dims (its values are finite by construction: the
   * codec holds integers times 2^-7). The decode writes nothing: it checks. */
  if (h.dtype == FC_DTYPE_MQ)
    return fc_mq_decode(fc_mq_thread_coder(), payload, (size_t)h.payload_bytes, h.dim0, h.dim1, 0,
                        h.dim0, NULL, why, why_len);
  if (!finite) return 0;
  size_t n = (size_t)h.dim0 * h.dim1;
  size_t bad = find_nonfinite(payload, n, h.dtype);
  if (bad < n) {
    if (why && why_len) {
      const char *what = is_nan_at(payload, bad, h.dtype) ? "NaN" : "Inf";
      if (h.ndim == 2)
        snprintf(why, why_len, "payload holds %s at element %zu (frame %zu, bin %zu)", what, bad,
                 bad / h.dim1, bad % h.dim1);
      else
        snprintf(why, why_len, "payload holds %s at element %zu", what, bad);
    }
    return FC_EFORMAT;
  }
  return 0;
}
