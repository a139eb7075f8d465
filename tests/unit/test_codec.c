/* The mq mel codec (fc_codec.h, docs/FORMAT.md "The mq payload").
 *
 * Round trips on real log-mels computed by the library's own hifigan pipeline from signals made
 * here (white noise, digital silence at the ln(1e-5) floor, pure tones, a chirp with harmonics
 * and a syllable-rate envelope as a stand-in for voiced speech; real espeak-ng speech is
 * tests/reference/test_codec_store.py), then edge shapes (0 frames, 1 frame, 1 bin), values at
 * the range's edges, NaN/inf/out-of-range refused, determinism, bytes of the header against the
 * documented layout, cropped decodes, and hostile payloads (truncated, wrong dims, corrupted
 * frames, lying escape counts): every one a clean FC_EFORMAT, never a write outside the output
 * (outputs are allocated to the exact size, so ASan in the sanitizer build sees any overrun). */
#include "featcache/fc_codec.h"
#include "formats/codec_int.h"
#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_mel.h"
#include "tests/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static uint64_t st = 0x2545F4914F6CDD1Dull;
static double urand(void) { /* [0, 1) */
  st ^= st << 13;
  st ^= st >> 7;
  st ^= st << 17;
  return (double)(st >> 11) / 9007199254740992.0;
}

static float *mel_of(const float *x, size_t n, uint32_t *frames) {
  fc_mel_config c;
  fc_mel_preset("hifigan", &c);
  fc_mel_plan *p;
  if (fc_mel_plan_create(&c, &p)) return NULL;
  *frames = (uint32_t)fc_mel_num_frames(&c, n);
  float *m = malloc((size_t)*frames * c.n_mels * sizeof *m + 4);
  if (fc_mel_compute(p, x, n, m)) {
    free(m);
    m = NULL;
  }
  fc_mel_plan_free(p);
  return m;
}

/* Encode, decode whole and in crops, check the bound; returns the payload size. */
static size_t round_trip_step(const char *name, const float *m, uint32_t fr, uint32_t nm,
                              unsigned s, double *max_err_out) {
  size_t cap = fc_mq_bound(fr, nm), len = 0, len2 = 0;
  uint8_t *a = malloc(cap), *b = malloc(cap);
  char why[256] = "";
  int rc = fc_mq_encode_step(NULL, m, fr, nm, s, a, cap, &len, why, sizeof why);
  CHECK(rc == 0, "%s: encode: %s", name, why);
  CHECK(len >= FC_MQ_HEADER && a[0] == s, "%s: payload's step byte %u, want %u", name, a[0], s);
  /* determinism: a fresh coder and a reused one give the same bytes (and mq_encode is step 7) */
  fc_mq_coder *c;
  CHECK(mq_coder_new(&c) == 0);
  for (int rep = 0; rep < 2; rep++) {
    CHECK((s == FC_MQ_STEP_LOG2 && rep
               ? mq_encode(c, m, fr, nm, b, cap, &len2, why, sizeof why)
               : fc_mq_encode_step(c, m, fr, nm, s, b, cap, &len2, why, sizeof why)) == 0,
          "%s: %s", name, why);
    CHECK(len2 == len && memcmp(a, b, len) == 0, "%s: encode %d not byte-identical", name, rep);
  }
  CHECK(mq_check(a, len, fr, nm, why, sizeof why) == 0, "%s: check: %s", name, why);
  size_t n = (size_t)fr * nm;
  float *out = malloc(n * sizeof *out + 1);
  CHECK(fc_mq_decode(c, a, len, fr, nm, 0, fr, out, why, sizeof why) == 0, "%s: decode: %s", name,
        why);
  double mx = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)out[i] - m[i]);
    if (e > mx) mx = e;
    /* decoded values are exact multiples of 2^-s */
    float g = (float)(1u << s);
    CHECK(out[i] * g == nearbyintf(out[i] * g), "%s: [%zu] %g not on the 2^-%u grid", name, i,
          (double)out[i], s);
  }
  CHECK(mx <= FC_MQ_ERROR(s), "%s: max error %.9g > 2^-%u", name, mx, s + 1);
  *max_err_out = mx;
  /* crops: rows [f0, f0 + k) equal the same rows of the whole decode, into exact-size buffers */
  uint32_t crops[][2] = {{0, 1},
                         {fr / 2, fr - fr / 2},
                         {fr ? fr - 1 : 0, fr ? 1 : 0},
                         {fr / 3, fr / 3}};
  for (int k = 0; k < 4 && fr; k++) {
    uint32_t f0 = crops[k][0], cnt = crops[k][1];
    float *o2 = malloc((size_t)cnt * nm * sizeof *o2 + 1);
    CHECK(fc_mq_decode(k & 1 ? c : NULL, a, len, fr, nm, f0, cnt, o2, why, sizeof why) == 0,
          "%s: crop %u+%u: %s", name, f0, cnt, why);
    CHECK(memcmp(o2, out + (size_t)f0 * nm, (size_t)cnt * nm * sizeof *o2) == 0,
          "%s: crop %u+%u differs from the whole decode", name, f0, cnt);
    free(o2);
  }
  CHECK(fc_mq_decode(c, a, len, fr, nm, 0, fr, NULL, why, sizeof why) == 0, "%s: check-only: %s",
        name, why);
  CHECK(fc_mq_decode(c, a, len, fr, nm, fr, 1, out, why, sizeof why) == FC_ECONFIG,
        "%s: rows past the end accepted", name);
  mq_coder_free(c);
  free(out);
  free(a);
  free(b);
  return len;
}

static size_t round_trip(const char *name, const float *m, uint32_t fr, uint32_t nm,
                         double *max_err_out) {
  return round_trip_step(name, m, fr, nm, FC_MQ_STEP_LOG2, max_err_out);
}

/* The same mel in each log unit featurize codes (ln values converted: a dB is 10 / ln 10 of a nat,
 * a log10 1 / ln 10, a whisper unit (log10 + 4) / 4), at fc_mq_step_log2's step for that unit: the
 * decoded error, taken back to nats, is within 0.0045 for every unit. */
static void log_units(const char *name, const float *m, uint32_t fr, uint32_t nm) {
  static const struct {
    int log;
    const char *unit;
    double per_nat, offset, step;
  } u[] = {{FC_LOG_LN, "ln", 1, 0, 7},
           {FC_LOG_LOG10, "log10", 1 / M_LN10, 0, 8},
           {FC_LOG_DB, "db", 10 / M_LN10, 0, 5},
           {FC_LOG_WHISPER, "whisper", 0.25 / M_LN10, 1, 10}};
  size_t n = (size_t)fr * nm;
  float *v = malloc(n * sizeof *v + 1);
  CHECK(fc_mq_step_log2(FC_LOG_NONE) == 0, "no step without a log");
  for (size_t k = 0; k < sizeof u / sizeof *u; k++) {
    unsigned s = fc_mq_step_log2(u[k].log);
    CHECK(s == u[k].step, "%s: step 2^-%u, documented 2^-%g", u[k].unit, s, u[k].step);
    for (size_t i = 0; i < n; i++) v[i] = (float)(m[i] * u[k].per_nat + u[k].offset);
    char nm_[64];
    snprintf(nm_, sizeof nm_, "%s in %s", name, u[k].unit);
    double mx;
    size_t len = round_trip_step(nm_, v, fr, nm, s, &mx);
    double nats = mx / u[k].per_nat;
    CHECK(nats <= 0.0045, "%s: max error %.6f %s = %.6f nats > 0.0045", nm_, mx, u[k].unit, nats);
    printf("  %-22s step 2^-%-2u %zu bytes, %.2fx smaller than f32, max error %.6f (%.6f nats)\n",
           nm_, s, len, (double)n * 4 / (double)len, mx, nats);
  }
  free(v);
}

static void signals(void) {
  const size_t sr = 22050, n = 4 * sr; /* 4 s each */
  float *x = malloc(n * sizeof *x);
  const char *names[] = {"white noise", "silence", "tones", "voiced chirp"};
  for (int s = 0; s < 4; s++) {
    for (size_t i = 0; i < n; i++) {
      double t = (double)i / sr;
      switch (s) {
      case 0: x[i] = (float)(0.3 * (2 * urand() - 1)); break;
      case 1: x[i] = 0; break;
      case 2: x[i] = (float)(0.3 * sin(2 * M_PI * 440 * t) + 0.2 * sin(2 * M_PI * 3000 * t)); break;
      default: { /* f0 gliding 100-200 Hz, 20 harmonics, 4 Hz syllable envelope, a little noise */
        double f0 = 100 + 25 * t, ph = 2 * M_PI * (100 * t + 12.5 * t * t), v = 0;
        for (int h = 1; h <= 20 && h * f0 < 8000; h++) v += sin(h * ph) / h;
        double env = 0.5 * (1 - cos(2 * M_PI * 4 * t));
        x[i] = (float)(0.2 * env * v + 0.001 * (2 * urand() - 1));
      }
      }
    }
    uint32_t fr;
    float *m = mel_of(x, n, &fr);
    CHECK(m != NULL, "%s: mel", names[s]);
    if (!m) continue;
    double mx;
    size_t len = round_trip(names[s], m, fr, 80, &mx);
    double ratio = (double)fr * 80 * 4 / (double)len;
    printf("%-12s %u frames: %zu bytes, %.2fx smaller than f32, max error %.6f\n", names[s], fr,
           len, ratio, mx);
    if (s == 1) { /* the log floor everywhere: the 8-byte constant payload */
      CHECK(m[0] == logf(1e-5f) && len == FC_MQ_HEADER, "silence: %g, %zu bytes", (double)m[0],
            len);
    }
    if (s == 2) CHECK(ratio > 8, "tones compress %.2fx (steady spectra predict well)", ratio);
    log_units(names[s], m, fr, 80);
    free(m);
  }
  free(x);
}

static void shapes_and_values(void) {
  double mx;
  float one = -11.5129251f, row[80], col[300],
        edge[6] = {4095.99f, -4095.99f, 0.00390625f, -0.0039f, 1e-30f, 2047.5f};
  for (int i = 0; i < 80; i++) row[i] = (float)(-5 + 0.37 * i);
  for (int i = 0; i < 300; i++) col[i] = (float)(3 * sin(i * 0.1));
  round_trip("1 x 1", &one, 1, 1, &mx);
  round_trip("1 frame", row, 1, 80, &mx);
  round_trip("1 bin", col, 300, 1, &mx);
  round_trip("edges", edge, 2, 3, &mx);
  round_trip("edges t", edge, 3, 2, &mx);
  /* residuals of either sign at the largest size: escapes every other value */
  float saw[64];
  for (int i = 0; i < 64; i++) saw[i] = (i & 1) ? 4095.9f : -4095.9f;
  round_trip("sawtooth", saw, 8, 8, &mx);
  /* 0 frames: the 8-byte header, base 0 */
  uint8_t buf[64];
  size_t len = 99;
  char why[256];
  CHECK(mq_encode(NULL, row, 0, 80, buf, sizeof buf, &len, why, sizeof why) == 0 && len == 8,
        "0 frames: %zu bytes", len);
  static const uint8_t empty[8] = {7, 0, 0, 0, 0, 0, 0, 0};
  CHECK(memcmp(buf, empty, 8) == 0, "0 frames: header bytes");
  CHECK(fc_mq_decode(NULL, buf, len, 0, 80, 0, 0, NULL, why, sizeof why) == 0, "%s", why);
  /* the constant payload byte for byte: step 7, mode 0, reserved, base = round(-11.5129 * 128) */
  CHECK(mq_encode(NULL, &one, 1, 1, buf, sizeof buf, &len, why, sizeof why) == 0 && len == 8);
  int32_t base = -1474;
  CHECK(buf[0] == 7 && buf[1] == 0 && buf[2] == 0 && buf[3] == 0 && memcmp(buf + 4, &base, 4) == 0,
        "constant header %02x %02x .. %02x%02x%02x%02x", buf[0], buf[1], buf[4], buf[5], buf[6],
        buf[7]);
  /* refused values: nothing written, FC_ERANGE with the position */
  float bad[4][3] = {{0, NAN, 1}, {0, 1, INFINITY}, {-INFINITY, 0, 0}, {0, 0, 4096.0f}};
  for (int k = 0; k < 4; k++) {
    memset(buf, 0xab, sizeof buf);
    int rc = mq_encode(NULL, bad[k], 1, 3, buf, sizeof buf, &len, why, sizeof why);
    CHECK(rc == FC_ERANGE, "bad value %d: rc %d", k, rc);
    CHECK(strstr(why, "cannot be coded") != NULL, "why: %s", why);
    CHECK(buf[0] == 0xab, "bad value %d: output written", k);
  }
  CHECK(fc_mq_bound(0x10000, 0x10000) == 0, "bound of 2^32 values");
  CHECK(mq_encode(NULL, row, 0x10000, 0x10000, buf, sizeof buf, &len, why, sizeof why) ==
            FC_ECONFIG,
        "2^32 values accepted");
  CHECK(mq_encode(NULL, row, 1, 80, buf, 4, &len, why, sizeof why) == FC_ECONFIG,
        "tiny output accepted");
  CHECK(mq_encode(NULL, row, 1, 80, buf, 30, &len, why, sizeof why) == FC_ECONFIG,
        "short output accepted");
  /* steps: the finest is 2^-12; a payload saying 2^-13 is refused; the constant payload's value
   * is base * step at its step (2^-5: -11.5129 * 32 rounds to -368 = -11.5 at 2^-5) */
  CHECK(fc_mq_encode_step(NULL, &one, 1, 1, FC_MQ_STEP_LOG2_MAX + 1, buf, sizeof buf, &len, why,
                          sizeof why) == FC_ECONFIG &&
            strstr(why, "finer") != NULL,
        "step 2^-13 accepted: %s", why);
  CHECK(fc_mq_encode_step(NULL, &one, 1, 1, 5, buf, sizeof buf, &len, why, sizeof why) == 0 &&
            len == 8 && buf[0] == 5,
        "step 5: %s", why);
  base = -368;
  CHECK(memcmp(buf + 4, &base, 4) == 0, "step 5 base");
  float v = 0;
  CHECK(fc_mq_decode(NULL, buf, len, 1, 1, 0, 1, &v, why, sizeof why) == 0 && v == -11.5f,
        "step 5 constant decodes to %g: %s", (double)v, why);
  buf[0] = FC_MQ_STEP_LOG2_MAX + 1;
  CHECK(mq_check(buf, len, 1, 1, why, sizeof why) == FC_EFORMAT && strstr(why, "step 2^-13"),
        "a payload at step 2^-13 passes the check: %s", why);
}

static void hostile(void) {
  /* a real payload with escapes: a noisy 40 x 20 array */
  float m[800];
  for (int i = 0; i < 800; i++) m[i] = (float)(8 * urand() - 4 + (i % 20) * 0.1);
  size_t cap = fc_mq_bound(40, 20), len;
  uint8_t *a = malloc(cap);
  char why[256];
  CHECK(mq_encode(NULL, m, 40, 20, a, cap, &len, why, sizeof why) == 0, "%s", why);
  uint32_t n_esc;
  memcpy(&n_esc, a + 8, 4);
  CHECK(a[1] == 1 && n_esc > 0, "coded with escapes: mode %u, %u escapes", a[1], n_esc);
  float *out = malloc(800 * sizeof *out);
  /* every truncation: a clean error */
  for (size_t t = 0; t < len; t++) {
    uint8_t *v = malloc(t ? t : 1);
    memcpy(v, a, t);
    int rc = fc_mq_decode(NULL, v, t, 40, 20, 0, 40, out, why, sizeof why);
    CHECK(rc == FC_EFORMAT, "truncated to %zu: rc %d", t, rc);
    free(v);
  }
  /* wrong dims: fewer or more values than the frames declare */
  CHECK(fc_mq_decode(NULL, a, len, 39, 20, 0, 39, out, why, sizeof why) == FC_EFORMAT, "39x20");
  CHECK(fc_mq_decode(NULL, a, len, 40, 19, 0, 40, out, why, sizeof why) == FC_EFORMAT, "40x19");
  float *big = malloc(41 * 20 * sizeof *big);
  CHECK(fc_mq_decode(NULL, a, len, 41, 20, 0, 41, big, why, sizeof why) == FC_EFORMAT, "41x20");
  free(big);
  /* header fields */
  uint8_t *v = malloc(len);
  int fields[][2] = {{0, 13}, {1, 2}, {2, 1}, {3, 9}, {8, 0}, {8, 0xff}, {12, 0}, {16, 0}};
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
    memcpy(v, a, len);
    v[fields[k][0]] = (uint8_t)fields[k][1];
    int rc = fc_mq_decode(NULL, v, len, 40, 20, 0, 40, out, why, sizeof why);
    CHECK(rc == FC_EFORMAT, "byte %d = %d: rc %d", fields[k][0], fields[k][1], rc);
  }
  /* one escape fewer declared (frame sizes re-balanced so only the count lies) */
  memcpy(v, a, len);
  uint32_t fewer = n_esc - 1;
  memcpy(v + 8, &fewer, 4);
  CHECK(fc_mq_decode(NULL, v, len, 40, 20, 0, 40, out, why, sizeof why) == FC_EFORMAT,
        "escape count lies");
  /* an escape frame that is whole and consistent with its count, but one escape short of what
   * the symbols use (re-compressed without its last value): only the decoder's escape cursor
   * bound can catch it, before it reads past the escapes it has */
  {
    uint32_t zs, ze;
    memcpy(&zs, a + 12, 4);
    memcpy(&ze, a + 16, 4);
    uint8_t *esc = malloc(4 * (size_t)n_esc);
    CHECK(ZSTD_decompress(esc, 4 * (size_t)n_esc, a + 20 + zs, ze) == 4 * (size_t)n_esc,
          "the escape frame decompresses");
    size_t zb = ZSTD_compressBound(4 * (size_t)(n_esc - 1));
    uint8_t *short_ = malloc(20 + zs + zb);
    memcpy(short_, a, 20 + zs);
    size_t nz = ZSTD_compress(short_ + 20 + zs, zb, esc, 4 * (size_t)(n_esc - 1), 3);
    CHECK(!ZSTD_isError(nz), "re-compress the escapes");
    uint32_t nze = (uint32_t)nz;
    memcpy(short_ + 8, &fewer, 4);
    memcpy(short_ + 16, &nze, 4);
    int rc = fc_mq_decode(NULL, short_, 20 + zs + nz, 40, 20, 0, 40, out, why, sizeof why);
    CHECK(rc == FC_EFORMAT && strstr(why, "more escape symbols than the"),
          "one escape short, in a consistent frame: rc %d (%s)", rc, why);
    /* the rows up to the one that needs the missing escape, cropped: the same bound */
    rc = fc_mq_decode(NULL, short_, 20 + zs + nz, 40, 20, 39, 1, out, why, sizeof why);
    CHECK(rc == FC_EFORMAT && strstr(why, "more escape symbols than the"),
          "one escape short, last row: rc %d (%s)", rc, why);
    free(short_);
    free(esc);
  }
  /* every byte flipped, one at a time: 0 or FC_EFORMAT, never a crash or an overrun */
  size_t ok = 0;
  for (size_t i = 0; i < len; i++) {
    memcpy(v, a, len);
    v[i] ^= 0x5a;
    int rc = fc_mq_decode(NULL, v, len, 40, 20, 0, 40, out, why, sizeof why);
    CHECK(rc == 0 || rc == FC_EFORMAT, "flip at %zu: rc %d", i, rc);
    ok += rc == 0;
    rc = fc_mq_decode(NULL, v, len, 40, 20, 17, 5, out, why, sizeof why);
    CHECK(rc == 0 || rc == FC_EFORMAT, "flip at %zu, crop: rc %d", i, rc);
  }
  printf(
      "hostile: %zu truncations and %zu byte flips refused cleanly (%zu flips decoded to "
      "other values: the record checksum catches those)\n",
      len, len - ok, ok);
  /* a record around the payload: header checks use the payload's own length, not dims x 4 */
  fc_record_header h = {.dtype = FC_DTYPE_MQ, .ndim = 2, .dim0 = 40, .dim1 = 20, .producer = 1};
  uint8_t *rec = malloc(64 + len);
  CHECK(fc_record_encode(&h, a, len, rec) == 0, "record encode");
  fc_record_header g;
  const void *pl;
  CHECK(fc_record_verify(rec, 64 + len, &g, &pl, why, sizeof why) == 0, "record: %s", why);
  CHECK(g.payload_bytes == len && g.dim0 == 40 && g.dim1 == 20 && g.dtype == 7, "record header");
  CHECK(fc_record_parse(rec, 63 + len, NULL, NULL, why, sizeof why) == FC_EFORMAT, "short value");
  h.ndim = 1;
  CHECK(fc_record_encode(&h, a, len, rec) == FC_EFORMAT, "ndim 1 mq record encoded");
  h.ndim = 2;
  CHECK(fc_record_encode(&h, a, len - 1, rec) == FC_EFORMAT, "short payload encoded");
  CHECK(fc_dtype_size(FC_DTYPE_MQ) == 0 && fc_dtype_decoded(FC_DTYPE_MQ) == FC_DTYPE_F32 &&
            strcmp(fc_dtype_name(FC_DTYPE_MQ), "mq") == 0 &&
            fc_dtype_from_name("mq") == FC_DTYPE_MQ,
        "dtype table");
  free(rec);
  free(v);
  free(out);
  free(a);
}

static void config(void) {
  fc_mel_config c;
  fc_mel_preset("hifigan", &c);
  fc_digest d32, dmq;
  fc_mel_config_digest(&c, &d32);
  c.dtype = FC_DTYPE_MQ;
  char why[256], js[1024];
  CHECK(fc_mel_config_validate(&c, why, sizeof why) == 0, "mq hifigan: %s", why);
  fc_mel_config_digest(&c, &dmq);
  CHECK(memcmp(d32.bytes, dmq.bytes, 16) != 0, "mq and f32 configs share a digest");
  int n = fc_mel_config_json(&c, js, sizeof js);
  CHECK(n > 0 && strstr(js, "\"dtype\":\"mq\"") != NULL, "json: %s", js);
  fc_mel_config back;
  CHECK(fc_mel_config_from_json(js, (size_t)n, &back, why, sizeof why) == 0 &&
            back.dtype == FC_DTYPE_MQ,
        "from json: %s", why);
  c.log = FC_LOG_NONE;
  CHECK(fc_mel_config_validate(&c, why, sizeof why) == FC_ECONFIG && strstr(why, "log"),
        "mq with a linear output: %s", why);
}

int main(void) {
  signals();
  shapes_and_values();
  hostile();
  config();
  return fc_check_result("test_codec");
}
