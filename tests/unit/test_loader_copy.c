/* The rows of a padded batch (libcache/core/loader/loader_copy.c): ld_copy_rows, with and without
 * streaming (non-temporal) stores, copies exactly n bytes for every size around its 16-byte
 * alignment and 64-byte blocks (0 .. 300, a page and a MiB give or take a few) and every
 * alignment of source and destination (0..17), touching nothing before or after; ld_fill_pad
 * writes n elements of 2 or 4 bytes of the pattern, and zeros. */
#include "libcache/core/loader/loader_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

#define GUARD 64

static void one(uint8_t *src0, uint8_t *dst0, size_t n, size_t so, size_t dof, int stream) {
  uint8_t *src = src0 + GUARD + so, *dst = dst0 + GUARD + dof;
  for (size_t i = 0; i < n + 2 * GUARD + 32; i++) dst0[i] = 0xA5;
  for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(i * 131 + n + so * 7);
  ld_copy_rows(dst, src, n, stream);
  ld_stream_done(stream);
  CHECK(memcmp(dst, src, n) == 0, "size %zu src+%zu dst+%zu stream %d: bytes differ", n, so, dof,
        stream);
  int before = 0, after = 0;
  for (size_t i = 0; i < GUARD + dof; i++) before |= dst0[i] != 0xA5;
  for (size_t i = 0; i < GUARD; i++) after |= dst[n + i] != 0xA5;
  CHECK(!before && !after, "size %zu src+%zu dst+%zu stream %d: wrote outside (%d %d)", n, so, dof,
        stream, before, after);
}

int main(void) {
  size_t big = ((size_t)1 << 20) + 200;
  uint8_t *src0 = malloc(big + 4 * GUARD), *dst0 = malloc(big + 4 * GUARD);
  if (!src0 || !dst0) return 2;
  for (int stream = 0; stream <= 1; stream++) {
    for (size_t n = 0; n <= 300; n++)
      for (size_t so = 0; so < 18; so += (n < 70 ? 1 : 5))
        for (size_t dof = 0; dof < 18; dof++) one(src0, dst0, n, so, dof, stream);
    const size_t sizes[] = {4095, 4096, 4097, 4096 + 63, (size_t)1 << 20, ((size_t)1 << 20) + 17};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
      for (size_t dof = 0; dof < 18; dof += 3) one(src0, dst0, sizes[k], 5, dof, stream);
  }
  /* padding: 4-byte and 2-byte patterns, zero */
  uint8_t pad[4 * 37 + 8];
  memset(pad, 0x5A, sizeof pad);
  ld_fill_pad(pad + 4, 37, 4, 0xC1380000u); /* -11.5f */
  float f;
  int ok = 1;
  for (int i = 0; i < 37; i++) {
    memcpy(&f, pad + 4 + 4 * i, 4);
    ok &= f == -11.5f;
  }
  CHECK(ok && pad[3] == 0x5A && pad[4 + 4 * 37] == 0x5A, "f32 pad");
  memset(pad, 0x5A, sizeof pad);
  ld_fill_pad(pad + 2, 37, 2, 0xBEEF);
  ok = 1;
  for (int i = 0; i < 37; i++) {
    uint16_t h;
    memcpy(&h, pad + 2 + 2 * i, 2);
    ok &= h == 0xBEEF;
  }
  CHECK(ok && pad[1] == 0x5A && pad[2 + 2 * 37] == 0x5A, "16-bit pad");
  memset(pad, 0x5A, sizeof pad);
  ld_fill_pad(pad + 4, 37, 4, 0);
  ok = 1;
  for (int i = 0; i < 4 * 37; i++) ok &= pad[4 + i] == 0;
  CHECK(ok && pad[3] == 0x5A && pad[4 + 4 * 37] == 0x5A, "zero pad");
  free(src0);
  free(dst0);
  return fc_check_result("test_loader_copy");
}
