/* Replay of the fuzz target tests/fuzz/fuzz_record.c without libFuzzer: valid seeds (a record of
 * every dtype and shape kind, audio and text entries, every preset's canonical JSON), then a fixed
 * number of seeded random mutations of each (bit flips, byte overwrites, truncation, extension,
 * header fields re-encoded with a valid checksum so the deeper checks are reached). A crash, an
 * ASan report (sanitizer build) or a broken invariant (abort) fails the test. With
 * FC_FUZZ_SEED_DIR set, the seeds are also written there as a corpus for tests/fuzz/build.sh. */
#include "tests/fuzz/fuzz_record.c"
#include "tests/fuzz/replay.h"

#include <math.h>
#include <stdio.h>

static void record_seed(int dtype, int ndim, uint32_t d0, uint32_t d1, int nonfinite) {
  size_t es = fc_dtype_size(dtype), n = (size_t)d0 * d1 * es;
  uint8_t *pl = calloc(1, n + 1), *rec = malloc(64 + n);
  for (size_t i = 0; i < n; i++) pl[i] = (uint8_t)(fuzz_rnd() & 0x3f);
  if (nonfinite && dtype == FC_DTYPE_F32 && n >= 4) {
    float inf = INFINITY;
    memcpy(pl + n - 4, &inf, 4);
  }
  fc_record_header h = {(uint8_t)dtype, (uint8_t)ndim, d0, d1, 0, 0, {{0}}, 0, 1};
  if (fc_record_encode(&h, pl, n, rec) == 0) fuzz_add_seed(0, rec, 64 + n);
  free(pl);
  free(rec);
}

/* record: change a header field and re-seal the header checksum, so the deeper checks are
 * reached; config: overwrite a digit or a value with an edge case */
static void reseal_or_edge(uint8_t *buf, size_t *np, size_t cap, uint64_t k) {
  size_t n = *np, at = n > 1 ? 1 + (size_t)((k >> 8) % (n - 1)) : 0;
  (void)cap;
  if (buf[0] == 0 && n >= 65) {
    size_t field = 6 + (size_t)((k >> 16) % 24);
    buf[1 + field] = (uint8_t)(k >> 32);
    uint64_t hh = fc_hash64(buf + 1, 56);
    for (int i = 0; i < 8; i++) buf[1 + 56 + i] = (uint8_t)(hh >> (8 * i));
  } else if (buf[0] == 2) {
    static const char *const edge[] = {"0",    "-1",    "1e309", "4294967296",
                                       "null", "\"x\"", "true",  "1.5"};
    const char *ed = edge[(k >> 16) % 8];
    size_t el = strlen(ed);
    if (at + el < n) memcpy(buf + at, ed, el);
  }
}

/* A coded (mq) record of d0 x d1 log-mel-like values; escapes when wild. */
static void mq_seed(uint32_t d0, uint32_t d1, int wild) {
  size_t n = (size_t)d0 * d1, cap = fc_mq_bound(d0, d1), len = 0;
  float *x = malloc(n * sizeof *x + 4);
  for (size_t i = 0; i < n; i++)
    x[i] = wild ? (float)((int)(fuzz_rnd() % 2000) - 1000) / 7.0f
                : (float)(i % d1) * 0.05f - 6.0f + (float)(fuzz_rnd() % 64) / 128.0f;
  uint8_t *pl = malloc(cap), *rec = malloc(64 + cap);
  if (mq_encode(NULL, x, d0, d1, pl, cap, &len, NULL, 0) == 0) {
    fc_record_header h = {FC_DTYPE_MQ, 2, d0, d1, 0, 0, {{0}}, 0, 1};
    if (fc_record_encode(&h, pl, len, rec) == 0) fuzz_add_seed(0, rec, 64 + len);
  }
  free(x);
  free(pl);
  free(rec);
}

int main(void) {
  record_seed(FC_DTYPE_F32, 2, 3, 80, 0);
  record_seed(FC_DTYPE_F32, 2, 2, 80, 1);
  record_seed(FC_DTYPE_F16, 2, 4, 7, 0);
  record_seed(FC_DTYPE_BF16, 2, 5, 3, 0);
  record_seed(FC_DTYPE_I16, 1, 17, 1, 0);
  record_seed(FC_DTYPE_U16, 1, 1, 1, 0);
  record_seed(FC_DTYPE_I32, 1, 9, 1, 0);
  record_seed(FC_DTYPE_F32, 2, 0, 80, 0);
  mq_seed(12, 20, 0);
  mq_seed(6, 9, 1);
  mq_seed(1, 1, 0);
  mq_seed(0, 80, 0);
  mq_seed(30, 1, 1);
  fc_audio_entry e = {{{1, 2, 3}}, 22050, 1, 12345, 999, 42, "data/wavs/LJ001-0001.wav", 24};
  uint8_t eb[128];
  fc_audio_entry_encode(&e, eb);
  fuzz_add_seed(1, eb, fc_audio_entry_size(&e));
  uint8_t tb[40] = {0};
  memcpy(tb + 16, "hello, world \xc3\xa9", 15);
  fuzz_add_seed(1, tb, 31);
  for (const char *const *p = fc_mel_preset_names(); *p; p++) {
    fc_mel_config c;
    char js[1024];
    fc_mel_preset(*p, &c);
    int len = fc_mel_config_json(&c, js, sizeof js);
    fuzz_add_seed(2, js, (size_t)len);
  }
  /* Regression (found by the replay's inserted escapes): a stored config whose preset name held a
   * control character or a quote validated, then serialized to JSON that did not read back. */
  {
    fc_mel_config c;
    char js[1024], why[256];
    fc_mel_preset("hifigan", &c);
    int len = fc_mel_config_json(&c, js, sizeof js);
    char *at = strstr(js, "\"hifigan\"");
    if (len <= 0 || !at) return 1;
    memmove(at + 4, at + 2, strlen(at + 2) + 1); /* "hi\\figan": JSON for "hi<form feed>figan" */
    memcpy(at + 3, "\\f", 2);
    if (fc_mel_config_from_json(js, strlen(js), &c, why, sizeof why) != 0 ||
        fc_mel_config_validate(&c, why, sizeof why) == 0 || !strstr(why, "preset name")) {
      fprintf(stderr, "a preset name with a control character validated (%s): %s\n", why, js);
      return 1;
    }
    fuzz_add_seed(2, js, strlen(js));
  }
  return fuzz_replay("record", 10000, reseal_or_edge);
}
