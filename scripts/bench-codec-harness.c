/* Timing harness of scripts/bench-codec (compiled by it against the built library; not part of
 * the library or the tools).
 *
 *   bench-codec-harness FILE [REPEAT]
 *
 * FILE holds records: u32 frames, u32 n_mels, then frames * n_mels little-endian f32 (log-mel).
 * For the whole set, one core, best of REPEAT passes over all records (each pass decodes every
 * record once, in order, into one output buffer):
 *   mq      mq_encode / fc_mq_decode: stored bytes, max and mean |decoded - f32|, GB/s
 *   f16     the f16 record (round to nearest even): max and mean |f16 - f32|
 *   f16+zstd -3  zstd level 3 of each f16 payload (the lossless baseline on f16): bytes, decode GB/s
 *   f32 copy memcpy of the f32 payloads (a warm store's padded batch is this copy): GB/s
 * GB/s are of float32 output (frames * n_mels * 4 bytes per second), as the loader delivers it.
 * Prints one JSON object. */
#include "featcache/fc_base.h"
#include "featcache/fc_codec.h"
#include "formats/codec_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
  uint32_t fr, nm;
  float *x;
  uint8_t *mq;
  size_t mq_len;
  uint16_t *h;
  uint8_t *zh;
  size_t zh_len;
} rec;

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench-codec-harness FILE [REPEAT [STEP_LOG2]]\n");
    return 2;
  }
  int repeat = argc > 2 ? atoi(argv[2]) : 5;
  unsigned step = argc > 3 ? (unsigned)atoi(argv[3]) : FC_MQ_STEP_LOG2; /* fc_mq_step_log2 */
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  rec *r = NULL;
  size_t n = 0, cap = 0, maxv = 0;
  uint64_t values = 0;
  uint32_t hd[2];
  while (fread(hd, 4, 2, f) == 2) {
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      r = realloc(r, cap * sizeof *r);
    }
    rec *q = &r[n++];
    memset(q, 0, sizeof *q);
    q->fr = hd[0];
    q->nm = hd[1];
    size_t m = (size_t)q->fr * q->nm;
    q->x = malloc(m * 4 + 4);
    if (fread(q->x, 4, m, f) != m) {
      fprintf(stderr, "short file\n");
      return 2;
    }
    if (m > maxv) maxv = m;
    values += m;
  }
  fclose(f);
  fc_mq_coder *c;
  mq_coder_new(&c);
  ZSTD_CCtx *zc = ZSTD_createCCtx();
  ZSTD_DCtx *zd = ZSTD_createDCtx();
  uint64_t mq_bytes = 0, zh_bytes = 0;
  double enc_s = 0, sum_err = 0, max_err = 0, sum_err16 = 0, max_err16 = 0;
  float *out = malloc(maxv * 4 + 4);
  uint16_t *hout = malloc(maxv * 2 + 2);
  char why[256];
  for (size_t i = 0; i < n; i++) {
    rec *q = &r[i];
    size_t m = (size_t)q->fr * q->nm, b = fc_mq_bound(q->fr, q->nm);
    q->mq = malloc(b);
    double t = now();
    int rc = fc_mq_encode_step(c, q->x, q->fr, q->nm, step, q->mq, b, &q->mq_len, why, sizeof why);
    enc_s += now() - t;
    if (rc) {
      fprintf(stderr, "record %zu: %s\n", i, why);
      return 1;
    }
    mq_bytes += q->mq_len;
    if ((rc = fc_mq_decode(c, q->mq, q->mq_len, q->fr, q->nm, 0, q->fr, out, why, sizeof why))) {
      fprintf(stderr, "record %zu: %s\n", i, why);
      return 1;
    }
    q->h = malloc(m * 2 + 2);
    for (size_t j = 0; j < m; j++) {
      double e = fabs((double)out[j] - q->x[j]);
      sum_err += e;
      if (e > max_err) max_err = e;
      q->h[j] = fc_f32_to_f16(q->x[j]);
      double e16 = fabs((double)fc_f16_to_f32(q->h[j]) - q->x[j]);
      sum_err16 += e16;
      if (e16 > max_err16) max_err16 = e16;
    }
    size_t zb = ZSTD_compressBound(m * 2);
    q->zh = malloc(zb);
    q->zh_len = ZSTD_compressCCtx(zc, q->zh, zb, q->h, m * 2, 3);
    if (ZSTD_isError(q->zh_len)) return 1;
    zh_bytes += q->zh_len;
  }
  double best_mq = 1e9, best_zh = 1e9, best_cp = 1e9;
  for (int k = 0; k < repeat; k++) {
    double t = now();
    for (size_t i = 0; i < n; i++)
      fc_mq_decode(c, r[i].mq, r[i].mq_len, r[i].fr, r[i].nm, 0, r[i].fr, out, NULL, 0);
    t = now() - t;
    if (t < best_mq) best_mq = t;
    t = now();
    for (size_t i = 0; i < n; i++) {
      size_t m = (size_t)r[i].fr * r[i].nm;
      ZSTD_decompressDCtx(zd, hout, m * 2, r[i].zh, r[i].zh_len);
      /* f16 → f32 into the batch, as a loader would deliver float32 */
      for (size_t j = 0; j < m; j++) out[j] = fc_f16_to_f32(hout[j]);
    }
    t = now() - t;
    if (t < best_zh) best_zh = t;
    t = now();
    for (size_t i = 0; i < n; i++) memcpy(out, r[i].x, (size_t)r[i].fr * r[i].nm * 4);
    t = now() - t;
    if (t < best_cp) best_cp = t;
  }
  double gb = values * 4 / 1e9;
  printf(
      "{\"records\":%zu,\"values\":%llu,\"f32_bytes\":%llu,\"mq_bytes\":%llu,"
      "\"zstd_f16_bytes\":%llu,\"mq_max_err\":%.9g,\"mq_mean_err\":%.9g,"
      "\"f16_max_err\":%.9g,\"f16_mean_err\":%.9g,\"mq_encode_gbs\":%.4g,"
      "\"mq_decode_gbs\":%.4g,\"zstd_f16_decode_gbs\":%.4g,\"f32_copy_gbs\":%.4g}\n",
      n, (unsigned long long)values, (unsigned long long)values * 4, (unsigned long long)mq_bytes,
      (unsigned long long)zh_bytes, max_err, values ? sum_err / values : 0, max_err16,
      values ? sum_err16 / values : 0, gb / enc_s, gb / best_mq, gb / best_zh, gb / best_cp);
  return 0;
}
