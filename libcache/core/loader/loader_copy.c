/* Writing the rows of a padded batch: copies (streaming ones for the large batches a prefetch
 * thread builds, LD_STREAM_MIN_BYTES) and the padding. loader_batch.c calls these; they call
 * nothing of it. */
#include "libcache/core/loader/loader_int.h"

#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define LD_STREAMING 1
#endif

/* memcpy, with non-temporal stores when stream (x86-64; elsewhere memcpy). After a batch's last
 * streaming copy, ld_stream_done() orders its stores before the batch is handed to another
 * thread. */
void ld_copy_rows(void *dst, const void *src, size_t n, int stream) {
#ifdef LD_STREAMING
  if (stream && n >= 256) {
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    memcpy(dst, src, head);
    __m128i *d = (__m128i *)(void *)((uint8_t *)dst + head);
    const __m128i *s = (const __m128i *)(const void *)((const uint8_t *)src + head);
    size_t k = (n - head) / 64;
    for (size_t i = 0; i < k; i++, d += 4, s += 4) {
      __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1), c = _mm_loadu_si128(s + 2),
              e = _mm_loadu_si128(s + 3);
      _mm_stream_si128(d, a);
      _mm_stream_si128(d + 1, b);
      _mm_stream_si128(d + 2, c);
      _mm_stream_si128(d + 3, e);
    }
    size_t done = head + 64 * k;
    memcpy((uint8_t *)dst + done, (const uint8_t *)src + done, n - done);
    return;
  }
#endif
  (void)stream;
  memcpy(dst, src, n);
}

void ld_stream_done(int stream) {
#ifdef LD_STREAMING
  if (stream) _mm_sfence();
#endif
  (void)stream;
}

/* Fill n elements of dsize (2 or 4) bytes with the low dsize bytes of pat. */
void ld_fill_pad(void *dst, size_t n, size_t dsize, uint32_t pat) {
  uint8_t *d = dst;
  if (pat == 0) {
    memset(d, 0, n * dsize);
  } else if (dsize == 4) {
    for (size_t i = 0; i < n; i++) memcpy(d + 4 * i, &pat, 4);
  } else {
    uint16_t h = (uint16_t)pat;
    for (size_t i = 0; i < n; i++) memcpy(d + 2 * i, &h, 2);
  }
}
