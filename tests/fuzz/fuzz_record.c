/* libFuzzer target over the byte-level validation cache-verify and the loader rely on:
 * fc_record_parse / fc_record_verify / fc_verify_record (records), fc_audio_entry_decode /
 * fc_text_entry_decode / fc_id_check (entries) and fc_mel_config_from_json (config JSON).
 * The first input byte picks the target. Invariants checked beyond "no crash, no OOB read":
 * a parsed record's payload lies inside the input and fills it exactly; verify implies parse;
 * a config that parses and validates survives a canonical JSON round trip with the same digest;
 * a coded (mq) record's payload decodes (whatever its checksum says) to 0 or FC_EFORMAT, whole and
 * cropped, into outputs of exactly the decoded size.
 *
 * Built with libFuzzer by tests/fuzz/build.sh (clang -fsanitize=fuzzer,address,undefined);
 * replayed without libFuzzer by tests/fuzz/replay_record.c (seeds + random mutations). */
#include "featcache/fc_codec.h"
#include "formats/codec_int.h"
#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_verify.h"
#include "libcache/core/verify/verify_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_assert.h"

static void fuzz_record(const uint8_t *d, size_t n) {
  /* a private copy of exactly n bytes, so ASan sees any read past the value */
  uint8_t *v = calloc(1, n ? n : 1);
  if (n) memcpy(v, d, n);
  fc_record_header h;
  const void *payload = NULL;
  char why[256];
  int rp = fc_record_parse(v, n, &h, &payload, why, sizeof why);
  if (rp == 0) {
    FUZZ_ASSERT(payload == v + FC_RECORD_HEADER_SIZE);
    FUZZ_ASSERT(h.payload_bytes == n - FC_RECORD_HEADER_SIZE);
    if (h.dtype != FC_DTYPE_MQ)
      FUZZ_ASSERT((uint64_t)h.dim0 * h.dim1 * fc_dtype_size(h.dtype) == h.payload_bytes);
    else
      FUZZ_ASSERT(mq_check(payload, n - FC_RECORD_HEADER_SIZE, h.dim0, h.dim1, NULL, 0) == 0);
  } else {
    FUZZ_ASSERT(rp == FC_EFORMAT || rp == FC_ECHECKSUM);
    FUZZ_ASSERT(memchr(why, '\0', sizeof why) != NULL);
  }
  int rv = fc_record_verify(v, n, &h, &payload, why, sizeof why);
  FUZZ_ASSERT(rv == 0 ? rp == 0 : 1);
  int rf = fc_verify_record(v, n, 1, why, sizeof why);
  FUZZ_ASSERT(rv != 0 ? rf == rv : 1);
  if (rp == 0 && h.dtype == FC_DTYPE_MQ && (uint64_t)h.dim0 * h.dim1 <= (1u << 20)) {
    size_t cnt = (size_t)h.dim0 * h.dim1, half = (size_t)(h.dim0 - h.dim0 / 2) * h.dim1;
    float *out = malloc(cnt * sizeof *out + 1), *crop = malloc(half * sizeof *crop + 1);
    int rd = fc_mq_decode(NULL, payload, h.payload_bytes, h.dim0, h.dim1, 0, h.dim0, out, why,
                          sizeof why);
    FUZZ_ASSERT(rd == 0 || rd == FC_EFORMAT);
    int rc = fc_mq_decode(NULL, payload, h.payload_bytes, h.dim0, h.dim1, h.dim0 / 2,
                          h.dim0 - h.dim0 / 2, crop, why, sizeof why);
    FUZZ_ASSERT(rc == 0 || rc == FC_EFORMAT);
    if (rd == 0 && rc == 0) /* a crop is the same rows of the whole decode */
      FUZZ_ASSERT(memcmp(crop, out + (size_t)(h.dim0 / 2) * h.dim1, half * sizeof *crop) == 0);
    if (rv == 0 && !h.flags) FUZZ_ASSERT(rf == rd); /* verify decodes the same way */
    free(out);
    free(crop);
  }
  if (rp == 0) {
    size_t cnt = (size_t)h.dim0 * h.dim1;
    size_t bad = find_nonfinite(payload, cnt, h.dtype);
    FUZZ_ASSERT(bad <= cnt);
  }
  free(v);
}

static void fuzz_entries(const uint8_t *d, size_t n) {
  uint8_t *v = calloc(1, n ? n : 1);
  if (n) memcpy(v, d, n);
  fc_audio_entry e;
  if (fc_audio_entry_decode(v, n, &e) == 0) {
    FUZZ_ASSERT(e.path == (const char *)v + FC_AUDIO_ENTRY_FIXED);
    FUZZ_ASSERT(FC_AUDIO_ENTRY_FIXED + e.path_len == n);
    volatile char sink = 0;
    for (size_t i = 0; i < e.path_len; i++) sink ^= e.path[i];
    (void)sink;
    FUZZ_ASSERT(fc_audio_entry_size(&e) == n);
  } else {
    FUZZ_ASSERT(n < FC_AUDIO_ENTRY_FIXED);
  }
  fc_digest dg;
  const char *text;
  size_t tl;
  if (fc_text_entry_decode(v, n, &dg, &text, &tl) == 0) {
    FUZZ_ASSERT(text == (const char *)v + 16 && tl == n - 16);
    fc_utf8_valid(text, tl);
  }
  fc_id_check((const char *)v, n);
  free(v);
}

static void fuzz_config(const uint8_t *d, size_t n) {
  char *v = calloc(1, n ? n : 1);
  if (n) memcpy(v, d, n);
  fc_mel_config c;
  char why[256];
  if (fc_mel_config_from_json(v, n, &c, why, sizeof why) == 0 &&
      fc_mel_config_validate(&c, why, sizeof why) == 0) {
    char js[1024];
    int len = fc_mel_config_json(&c, js, sizeof js);
    FUZZ_ASSERT(len > 0);
    fc_mel_config c2;
    FUZZ_ASSERT(fc_mel_config_from_json(js, (size_t)len, &c2, why, sizeof why) == 0);
    fc_digest a, b;
    fc_mel_config_digest(&c, &a);
    fc_mel_config_digest(&c2, &b);
    FUZZ_ASSERT(memcmp(a.bytes, b.bytes, 16) == 0);
    /* the frame count cache-verify compares with: defined for any sample count */
    uint64_t ns[] = {0, 1, c.n_fft - 1, c.n_fft, c.n_fft + 1, 22050, UINT32_MAX};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
      (void)fc_mel_num_frames(&c, ns[i]);
      (void)fc_resampled_length(ns[i], c.sample_rate, 22050);
    }
  }
  free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
  case 0: fuzz_record(data + 1, size - 1); break;
  case 1: fuzz_entries(data + 1, size - 1); break;
  default: fuzz_config(data + 1, size - 1); break;
  }
  return 0;
}
