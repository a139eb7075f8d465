/* The mq mel codec (fc_codec.h; payload layout in docs/FORMAT.md, "The mq payload").
 *
 * Quantize: k = round-to-nearest-even(x * 2^s), exact in float arithmetic (a power-of-two scale), so
 * |k / 2^s - x| <= 2^-(s+1); s is 7 for ln outputs and chosen per log unit (fc_mq_step_log2). Predict planar: pred(f, b) = k(f, b-1) + k(f-1, b) - k(f-1, b-1), where
 * row -1 is all `base` = k(0, 0) and column -1 repeats column 0 (so the first column is predicted
 * from the row above). As differences: d(f, b) = k(f, b) - k(f-1, b), residual
 * r(f, b) = d(f, b) - d(f, b-1) with d(f, -1) = 0. Decoding is then a running sum of r along each row added to the previous row:
 * one add chain per row, no branches. r is zigzagged (0, -1, 1, -2, ... → 0, 1, 2, 3, ...) and its
 * bytes 0, 1, 2 go into planes 0, 1, 2; P = the number of planes the largest residual needs
 * (0..3); each plane is one standard zstd frame (content size in its header, no checksum: the
 * record header's XXH3 covers the payload). */
#include "featcache/fc_codec.h"
#include "formats/common/args.h"
#include "formats/codec_int.h"
#include "featcache/fc_config.h"

#include "formats/common/why.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef FC_FAULT_INJECTION
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem (zstd >= 1.3; test builds only) */
#endif
#include <zstd.h>
#include <zstd_errors.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MQ_LEVEL 1 /* zstd level: measured in scripts/bench-codec (docs/BENCHMARKS.md) */
#define MQ_CODED_HEADER 20 /* header, escape count, symbol and escape frame sizes */

struct fc_mq_coder {
  ZSTD_CCtx *cctx;
  ZSTD_DCtx *dctx;
  uint8_t *planes; /* cap_values bytes: symbols, escapes, one row of residuals */
  size_t cap_values;
  uint32_t *row; /* previous row (k values, wrapping arithmetic) */
  size_t cap_row;
};

/* zstd's contexts and their workspaces: on the `alloc` countdown in a fault-injection build
 * (zstd's customMem), zstd's own malloc in a release build. */
#ifdef FC_FAULT_INJECTION
static void *zstd_alloc(void *opaque, size_t n) {
  (void)opaque;
  return fc_malloc(n);
}
static void zstd_free(void *opaque, void *p) {
  (void)opaque;
  free(p);
}
static const ZSTD_customMem zstd_mem = {zstd_alloc, zstd_free, NULL};
#define new_cctx() ZSTD_createCCtx_advanced(zstd_mem)
#define new_dctx() ZSTD_createDCtx_advanced(zstd_mem)
#else
#define new_cctx() ZSTD_createCCtx()
#define new_dctx() ZSTD_createDCtx()
#endif

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int mq_coder_new(fc_mq_coder **out) {
  *out = fc_calloc(1, sizeof **out);
  return *out ? 0 : ENOMEM;
}

void mq_coder_free(fc_mq_coder *c) {
  if (!c) return;
  ZSTD_freeCCtx(c->cctx);
  ZSTD_freeDCtx(c->dctx);
  free(c->planes);
  free(c->row);
  free(c);
}

static pthread_key_t thread_key;
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;
static int thread_key_ok;

static void coder_destroy(void *c) { mq_coder_free(c); }
static void thread_key_make(void) {
  thread_key_ok = pthread_key_create(&thread_key, coder_destroy) == 0;
}

fc_mq_coder *fc_mq_thread_coder(void) {
  pthread_once(&thread_once, thread_key_make);
  if (!thread_key_ok) return NULL;
  fc_mq_coder *c = pthread_getspecific(thread_key);
  if (!c && mq_coder_new(&c) == 0 && pthread_setspecific(thread_key, c) != 0) {
    mq_coder_free(c);
    c = NULL;
  }
  return c;
}

/* Room for n values in 3 planes and a row of dim1. 0, or ENOMEM with the reason. */
static int reserve(fc_mq_coder *c, size_t n, size_t dim1, char *why, size_t why_len) {
  if (n > c->cap_values) {
    uint8_t *p = fc_malloc(n);
    if (!p) goto nomem;
    free(c->planes);
    c->planes = p;
    c->cap_values = n;
  }
  if (dim1 > c->cap_row) {
    uint32_t *r = fc_malloc(dim1 * sizeof *r);
    if (!r) goto nomem;
    free(c->row);
    c->row = r;
    c->cap_row = dim1;
  }
  return 0;
nomem:
  fc_why(why, why_len, "out of memory");
  return ENOMEM;
}

size_t fc_mq_bound(uint32_t dim0, uint32_t dim1) {
  uint64_t n = (uint64_t)dim0 * dim1;
  if (n > FC_MQ_MAX_VALUES) return 0;
  return MQ_CODED_HEADER + ZSTD_compressBound((size_t)n) + ZSTD_compressBound(4 * (size_t)n);
}

unsigned fc_mq_step_log2(int log) {
  switch (log) {
  case FC_LOG_LN: return 7;
  case FC_LOG_LOG10: return 8;
  case FC_LOG_DB: return 5;
  case FC_LOG_WHISPER: return 10;
  default: return 0;
  }
}

static void put_header(uint8_t *o, unsigned step, uint8_t mode, int32_t base) {
  o[0] = (uint8_t)step;
  o[1] = mode;
  o[2] = o[3] = 0;
  put32(o + 4, (uint32_t)base);
}

/* One zstd frame of src[0, n) at out, the same bytes for the same input every time. */
static int compress_frame(fc_mq_coder *c, const void *src, size_t n, uint8_t *out, size_t cap,
                          size_t *len, char *why, size_t why_len) {
  if (!c->cctx && !(c->cctx = new_cctx())) {
    fc_why(why, why_len, "zstd: out of memory");
    return ENOMEM;
  }
  ZSTD_CCtx_reset(c->cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, MQ_LEVEL);
  ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_checksumFlag, 0);
  size_t z = ZSTD_compress2(c->cctx, out, cap, src, n);
  if (ZSTD_isError(z)) {
    ZSTD_ErrorCode e = ZSTD_getErrorCode(z);
    fc_why(why, why_len, "zstd: %s",
           e == ZSTD_error_memory_allocation ? "out of memory" : ZSTD_getErrorName(z));
    return e == ZSTD_error_dstSize_tooSmall ? FC_ECONFIG : ENOMEM;
  }
  *len = z;
  return 0;
}

int mq_encode(fc_mq_coder *c, const float *x, uint32_t dim0, uint32_t dim1, void *out, size_t cap,
              size_t *len, char *why, size_t why_len) {
  return fc_mq_encode_step(c, x, dim0, dim1, FC_MQ_STEP_LOG2, out, cap, len, why, why_len);
}

int fc_mq_encode_step(fc_mq_coder *c, const float *x, uint32_t dim0, uint32_t dim1,
                      unsigned step_log2, void *out, size_t cap, size_t *len, char *why,
                      size_t why_len) {
  FC_ARGS_WHY(x || !dim0 || !dim1, out, len);
  if (step_log2 > FC_MQ_STEP_LOG2_MAX) {
    fc_why(why, why_len, "step 2^-%u: finer than the codec's 2^-%d", step_log2,
           FC_MQ_STEP_LOG2_MAX);
    return FC_ECONFIG;
  }
  const float scale = (float)(1u << step_log2); /* x * scale is exact: a power of two */
  uint64_t n64 = (uint64_t)dim0 * dim1;
  if (n64 > FC_MQ_MAX_VALUES) {
    fc_why(why, why_len, "%u x %u values: more than the codec's %u", dim0, dim1, FC_MQ_MAX_VALUES);
    return FC_ECONFIG;
  }
  size_t n = (size_t)n64;
  if (cap < FC_MQ_HEADER) {
    fc_why(why, why_len, "output of %zu bytes is too small", cap);
    return FC_ECONFIG;
  }
  /* range first: nothing is written for a refused array */
  for (size_t i = 0; i < n; i++)
    if (!(fabsf(x[i]) < FC_MQ_MAX_ABS)) {
      fc_why(why, why_len, "value %g at [%zu][%zu] cannot be coded (finite, |x| < 4096)",
             (double)x[i], i / dim1, i % dim1);
      return FC_ERANGE;
    }
  fc_mq_coder *own = NULL;
  if (!c) {
    if (mq_coder_new(&own)) {
      fc_why(why, why_len, "out of memory");
      return ENOMEM;
    }
    c = own;
  }
  int rc = 0;
  uint8_t *o = out;
  int32_t base = n ? (int32_t)lrintf(x[0] * scale) : 0;
  /* symbols (n bytes) then escapes (4 bytes each, at most n) in the plane scratch */
  if ((rc = reserve(c, 5 * n, dim1, why, why_len))) goto out;
  uint8_t *sym = c->planes, *esc = n ? c->planes + n : NULL; /* no planes for 0 values */
  size_t n_esc = 0;
  uint32_t *prev = c->row, any = 0;
  for (uint32_t b = 0; b < dim1 && n; b++) prev[b] = (uint32_t)base;
  for (uint32_t f = 0; f < dim0 && n; f++) {
    const float *xr = x + (size_t)f * dim1;
    uint8_t *sr = sym + (size_t)f * dim1;
    int32_t dl = 0; /* d(f, b-1) */
    for (uint32_t b = 0; b < dim1; b++) {
      int32_t k = (int32_t)lrintf(xr[b] * scale); /* |k| <= 2^24 */
      int32_t d = k - (int32_t)prev[b], r = d - dl; /* |r| <= 2^26 */
      uint32_t z = ((uint32_t)r << 1) ^ (uint32_t)(r >> 31);
      any |= z;
      if (z < 255) {
        sr[b] = (uint8_t)z;
      } else {
        sr[b] = 255;
        put32(esc + 4 * n_esc++, z - 255);
      }
      prev[b] = (uint32_t)k;
      dl = d;
    }
  }
  if (!any) { /* constant (or empty): the header says it all */
    put_header(o, step_log2, 0, base);
    *len = FC_MQ_HEADER;
    goto out;
  }
  if (cap < MQ_CODED_HEADER) {
    fc_why(why, why_len, "output of %zu bytes is too small", cap);
    rc = FC_ECONFIG;
    goto out;
  }
  put_header(o, step_log2, 1, base);
  size_t zs = 0, ze = 0;
  if ((rc = compress_frame(c, sym, n, o + MQ_CODED_HEADER, cap - MQ_CODED_HEADER, &zs, why,
                           why_len)))
    goto out;
  if (n_esc && (rc = compress_frame(c, esc, 4 * n_esc, o + MQ_CODED_HEADER + zs,
                                    cap - MQ_CODED_HEADER - zs, &ze, why, why_len)))
    goto out;
  put32(o + 8, (uint32_t)n_esc);
  put32(o + 12, (uint32_t)zs);
  put32(o + 16, (uint32_t)ze);
  *len = MQ_CODED_HEADER + zs + ze;
out:
  mq_coder_free(own);
  return rc;
}

int mq_check(const void *payload, size_t len, uint32_t dim0, uint32_t dim1, char *why,
             size_t why_len) {
  const uint8_t *p = payload;
  uint64_t n = (uint64_t)dim0 * dim1;
  if (n > FC_MQ_MAX_VALUES) {
    fc_why(why, why_len, "mq: %u x %u values is more than %u", dim0, dim1, FC_MQ_MAX_VALUES);
    return FC_EFORMAT;
  }
  if (!p || len < FC_MQ_HEADER) {
    fc_why(why, why_len, "mq: payload of %zu bytes is shorter than its 8-byte header", len);
    return FC_EFORMAT;
  }
  if (p[0] > FC_MQ_STEP_LOG2_MAX || p[2] || p[3] || p[1] > 1) {
    fc_why(why, why_len,
           "mq: step 2^-%u, mode %u, reserved %02x%02x (want at most 2^-%d, 0 or 1, 0000)", p[0],
           p[1], p[2], p[3], FC_MQ_STEP_LOG2_MAX);
    return FC_EFORMAT;
  }
  if (p[1] == 0) {
    if (len != FC_MQ_HEADER) {
      fc_why(why, why_len, "mq: constant payload of %zu bytes (want 8)", len);
      return FC_EFORMAT;
    }
    if (n == 0 && get32(p + 4)) {
      fc_why(why, why_len, "mq: base %d for an empty array (want 0)", (int32_t)get32(p + 4));
      return FC_EFORMAT;
    }
    return 0;
  }
  if (n == 0 || len < MQ_CODED_HEADER) {
    fc_why(why, why_len, "mq: coded payload of %zu bytes for %llu values", len,
           (unsigned long long)n);
    return FC_EFORMAT;
  }
  uint64_t n_esc = get32(p + 8), zs = get32(p + 12), ze = get32(p + 16);
  if (n_esc > n || (n_esc == 0) != (ze == 0) || zs == 0 ||
      MQ_CODED_HEADER + zs + ze != (uint64_t)len) {
    fc_why(why, why_len, "mq: %llu escapes, frames of %llu + %llu bytes in a %zu-byte payload",
           (unsigned long long)n_esc, (unsigned long long)zs, (unsigned long long)ze, len);
    return FC_EFORMAT;
  }
  return 0;
}

/* Is frame [src, src + z) exactly one zstd frame declaring want bytes? (Reads the frame header and
 * the block headers only.) */
static int one_frame(const uint8_t *src, size_t z, size_t want) {
  unsigned long long cs = ZSTD_getFrameContentSize(src, z);
  size_t fz = ZSTD_findFrameCompressedSize(src, z);
  return cs == want && !ZSTD_isError(fz) && fz == z;
}

/* Decompress the first need bytes of frame [src, src + z) into dst. 0, FC_EFORMAT, or ENOMEM (the
 * streamed prefix allocates its window: that is no fault of the frame). */
static int decompress_prefix(fc_mq_coder *c, const uint8_t *src, size_t z, size_t total,
                             uint8_t *dst, size_t need, const char *what, char *why,
                             size_t why_len) {
  size_t got;
  if (need == total) {
    got = ZSTD_decompressDCtx(c->dctx, dst, need, src, z);
  } else {
    ZSTD_DCtx_reset(c->dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {src, z, 0};
    ZSTD_outBuffer ob = {dst, need, 0};
    got = 0;
    while (ob.pos < need) {
      size_t r = ZSTD_decompressStream(c->dctx, &ob, &in);
      if (ZSTD_isError(r)) {
        got = r;
        break;
      }
      if (r == 0 || in.pos == in.size) break; /* the frame ended, or no more input */
    }
    if (!ZSTD_isError(got)) got = ob.pos;
  }
  if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation) {
    fc_why(why, why_len, "mq: %s frame: out of memory", what);
    return ENOMEM;
  }
  if (ZSTD_isError(got) || got != need) {
    fc_why(why, why_len, "mq: %s frame: %s", what,
           ZSTD_isError(got) ? ZSTD_getErrorName(got) : "shorter than its declared size");
    return FC_EFORMAT;
  }
  return 0;
}

/* Row b's zigzagged residuals in z[0, dim1): the symbols, escapes patched in from esc (a cursor
 * into n_esc values). 0, or -1 when the row needs more escapes than are left. */
static int row_symbols(const uint8_t *s, uint32_t dim1, uint32_t *z, const uint8_t *esc, size_t *e,
                       size_t n_esc) {
  uint32_t b = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  for (; b + 16 <= dim1; b += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(s + b));
    __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);
    _mm_storeu_si128((__m128i *)(z + b), _mm_unpacklo_epi16(lo, zero));
    _mm_storeu_si128((__m128i *)(z + b + 4), _mm_unpackhi_epi16(lo, zero));
    _mm_storeu_si128((__m128i *)(z + b + 8), _mm_unpacklo_epi16(hi, zero));
    _mm_storeu_si128((__m128i *)(z + b + 12), _mm_unpackhi_epi16(hi, zero));
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xff)));
    while (m) {
      unsigned j = (unsigned)__builtin_ctz(m);
      m &= m - 1;
      if (*e >= n_esc) return -1;
      z[b + j] = 255u + get32(esc + 4 * (*e)++);
    }
  }
#endif
  for (; b < dim1; b++) {
    z[b] = s[b];
    if (s[b] == 255) {
      if (*e >= n_esc) return -1;
      z[b] = 255u + get32(esc + 4 * (*e)++);
    }
  }
  return 0;
}

/* Add the running sum of row z's residuals (unzigzagged) to prev; write prev * step to out (or
 * not, when out is NULL). Unsigned arithmetic wraps: a hostile payload decodes to garbage values,
 * never to undefined behaviour. */
static void row_add(const uint32_t *z, uint32_t *prev, float *out, uint32_t dim1, float step) {
  uint32_t b = 0, d = 0;
#if defined(__SSE2__)
  const __m128i one = _mm_set1_epi32(1), zero = _mm_setzero_si128();
  const __m128 stepv = _mm_set1_ps(step);
  __m128i carry = zero;
  for (; b + 4 <= dim1; b += 4) {
    __m128i v = _mm_loadu_si128((const __m128i *)(z + b));
    __m128i r = _mm_xor_si128(_mm_srli_epi32(v, 1), _mm_sub_epi32(zero, _mm_and_si128(v, one)));
    r = _mm_add_epi32(r, _mm_slli_si128(r, 4));
    r = _mm_add_epi32(r, _mm_slli_si128(r, 8));
    r = _mm_add_epi32(r, carry);
    carry = _mm_shuffle_epi32(r, _MM_SHUFFLE(3, 3, 3, 3));
    __m128i k = _mm_add_epi32(_mm_loadu_si128((const __m128i *)(prev + b)), r);
    _mm_storeu_si128((__m128i *)(prev + b), k);
    if (out) _mm_storeu_ps(out + b, _mm_mul_ps(_mm_cvtepi32_ps(k), stepv));
  }
  d = (uint32_t)_mm_cvtsi128_si32(carry);
#endif
  for (; b < dim1; b++) {
    d += (z[b] >> 1) ^ (0u - (z[b] & 1u));
    prev[b] += d;
    if (out) out[b] = (float)(int32_t)prev[b] * step;
  }
}

int fc_mq_decode(fc_mq_coder *c, const void *payload, size_t len, uint32_t dim0, uint32_t dim1,
                 uint32_t first, uint32_t count, float *out, char *why, size_t why_len) {
  int rc = mq_check(payload, len, dim0, dim1, why, why_len);
  if (rc) return rc;
  if (first > dim0 || count > dim0 - first) {
    fc_why(why, why_len, "mq: rows %u..%u of %u", first, first + count, dim0);
    return FC_ECONFIG;
  }
  const uint8_t *p = payload;
  size_t n = (size_t)dim0 * dim1;
  uint32_t end = first + count;
  int32_t base = (int32_t)get32(p + 4);
  const float step = 1.0f / (float)(1u << p[0]); /* exact: a power of two */
  if (p[1] == 0) { /* every residual is 0: the array is constant */
    float v = (float)base * step;
    for (size_t i = 0; out && i < (size_t)count * dim1; i++) out[i] = v;
    return 0;
  }
  size_t n_esc = get32(p + 8), zs = get32(p + 12), ze = get32(p + 16);
  const uint8_t *fs = p + MQ_CODED_HEADER, *fe = fs + zs;
  if (!one_frame(fs, zs, n) || (n_esc && !one_frame(fe, ze, 4 * n_esc))) {
    fc_why(why, why_len, "mq: the symbol or escape frame is not one zstd frame of its size");
    return FC_EFORMAT;
  }
  if (count == 0 && out) return 0;
  fc_mq_coder *own = NULL;
  if (!c) {
    if (mq_coder_new(&own)) {
      fc_why(why, why_len, "out of memory");
      return ENOMEM;
    }
    c = own;
  }
  /* only the rows up to end are needed: decompress just that prefix of the symbols; escapes are
   * few (all of them, 4 bytes each) */
  size_t need = (size_t)end * dim1;
  size_t zoff = (need + 4 * n_esc + 15) & ~(size_t)15;
  if ((rc = reserve(c, zoff + 4 * (size_t)dim1, dim1, why, why_len))) goto out;
  if (!c->dctx && !(c->dctx = new_dctx())) {
    fc_why(why, why_len, "out of memory");
    rc = ENOMEM;
    goto out;
  }
  uint8_t *sym = c->planes, *esc = sym + need;
  uint32_t *z = (uint32_t *)(void *)(sym + zoff);
  if ((rc = decompress_prefix(c, fs, zs, n, sym, need, "symbol", why, why_len))) goto out;
  if (n_esc &&
      (rc = decompress_prefix(c, fe, ze, 4 * n_esc, esc, 4 * n_esc, "escape", why, why_len)))
    goto out;
  uint32_t *prev = c->row;
  for (uint32_t b = 0; b < dim1; b++) prev[b] = (uint32_t)base;
  size_t e = 0;
  for (uint32_t f = 0; f < end; f++) {
    if (row_symbols(sym + (size_t)f * dim1, dim1, z, esc, &e, n_esc)) {
      fc_why(why, why_len, "mq: more escape symbols than the %zu escapes", n_esc);
      rc = FC_EFORMAT;
      goto out;
    }
    row_add(z, prev, (out && f >= first) ? out + (size_t)(f - first) * dim1 : NULL, dim1, step);
  }
  if (need == n && e != n_esc) {
    fc_why(why, why_len, "mq: %zu escape symbols, %zu escapes", e, n_esc);
    rc = FC_EFORMAT;
  }
out:
  mq_coder_free(own);
  return rc;
}
