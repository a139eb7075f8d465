/* Known-answer and hostile-input tests of the v1 record format, keys, entries and config JSON. */
#include "featcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tests/check.h"

static void test_digest(void) {
  /* XXH3-128("abc") from xxhsum -H2; stored low half LE then high half LE */
  fc_digest d;
  fc_digest_buffer("abc", 3, &d);
  XXH128_hash_t h = XXH3_128bits("abc", 3);
  for (int i = 0; i < 8; i++) {
    CHECK(d.bytes[i] == (uint8_t)(h.low64 >> (8 * i)), "low byte %d", i);
    CHECK(d.bytes[8 + i] == (uint8_t)(h.high64 >> (8 * i)), "high byte %d", i);
  }
  char hex[33];
  fc_digest_hex(&d, hex);
  fc_digest back;
  CHECK(fc_digest_parse(hex, &back) == 0 && memcmp(&back, &d, 16) == 0, "hex round trip %s", hex);
  CHECK(fc_digest_parse("xyz", &back) == FC_ECONFIG, "short hex accepted");
  CHECK(fc_digest_parse("0123456789abcdef0123456789abcdeg", &back) == FC_ECONFIG, "bad hex digit");
}

static void test_record(void) {
  float payload[6] = {1, 2, 3, 4, 5, 6};
  fc_record_header h = {.dtype = FC_DTYPE_F32, .ndim = 2, .dim0 = 3, .dim1 = 2, .producer = 1};
  memset(h.config.bytes, 0xAB, 16);
  uint8_t buf[64 + sizeof payload];
  CHECK(fc_record_encode(&h, payload, sizeof payload, buf) == 0, "encode");
  CHECK(memcmp(buf, "FCR1", 4) == 0, "magic");
  CHECK(buf[4] == 64 && buf[5] == 0 && buf[6] == 1 && buf[7] == 2, "size/dtype/ndim bytes");
  CHECK(buf[8] == 3 && buf[12] == 2 && buf[16] == 24, "dims/payload bytes");
  CHECK(XXH3_64bits(buf, 56) ==
            (buf[56] | (uint64_t)buf[57] << 8 | (uint64_t)buf[58] << 16 | (uint64_t)buf[59] << 24 |
             (uint64_t)buf[60] << 32 | (uint64_t)buf[61] << 40 | (uint64_t)buf[62] << 48 |
             (uint64_t)buf[63] << 56),
        "header checksum LE");
  fc_record_header g;
  const void *pl;
  char why[128] = "";
  CHECK(fc_record_verify(buf, sizeof buf, &g, &pl, why, sizeof why) == 0, "verify: %s", why);
  CHECK(g.dim0 == 3 && g.dim1 == 2 && pl == buf + 64 && g.producer == 1, "parsed fields");
  /* every single-bit flip anywhere is caught */
  for (size_t bit = 0; bit < sizeof buf * 8; bit++) {
    buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    int rc = fc_record_verify(buf, sizeof buf, NULL, NULL, why, sizeof why);
    CHECK(rc == FC_ECHECKSUM || rc == FC_EFORMAT, "bit %zu flip not caught", bit);
    buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  }
  /* truncated values, from 0 bytes up */
  for (size_t len = 0; len < sizeof buf; len++)
    CHECK(fc_record_parse(buf, len, NULL, NULL, why, sizeof why) != 0, "len %zu accepted", len);
  CHECK(fc_record_parse(NULL, 0, NULL, NULL, NULL, 0) == FC_EFORMAT, "NULL");
  /* a header that claims a huge shape, with a valid header checksum */
  fc_record_header big = h;
  big.dim0 = 0xFFFFFFFFu;
  big.dim1 = 0xFFFFFFFFu;
  big.payload_bytes = sizeof payload;
  fc_record_header_encode(&big, buf);
  CHECK(fc_record_parse(buf, sizeof buf, NULL, NULL, why, sizeof why) == FC_EFORMAT, "huge shape");
  big.payload_bytes = 0xFFFFFFFFFFFFFFF0ull;
  fc_record_header_encode(&big, buf);
  CHECK(fc_record_parse(buf, sizeof buf, NULL, NULL, why, sizeof why) == FC_EFORMAT,
        "huge payload claim");
  /* encode refuses inconsistent shapes */
  fc_record_header bad = h;
  bad.dim0 = 4;
  CHECK(fc_record_encode(&bad, payload, sizeof payload, buf) == FC_EFORMAT, "shape mismatch");
}

static void test_entries(void) {
  fc_audio_entry e = {.sample_rate = 22050,
                      .channels = 2,
                      .frames = 12345,
                      .source_size = 999,
                      .mtime_ns = 1700000000123456789LL,
                      .path = "wavs/a.wav",
                      .path_len = 10};
  memset(e.digest.bytes, 7, 16);
  uint8_t buf[128];
  CHECK(fc_audio_entry_size(&e) == 58, "size");
  fc_audio_entry_encode(&e, buf);
  fc_audio_entry d;
  CHECK(fc_audio_entry_decode(buf, 58, &d) == 0, "decode");
  CHECK(d.frames == 12345 && d.mtime_ns == e.mtime_ns && d.path_len == 10 &&
            memcmp(d.path, "wavs/a.wav", 10) == 0 && buf[16] == 0x22 && buf[17] == 0x56,
        "fields");
  CHECK(fc_audio_entry_decode(buf, 47, &d) == FC_EFORMAT, "short entry");
  CHECK(fc_id_check("LJ001-0001", 10) == 0, "id");
  CHECK(fc_id_check("", 0) == FC_EFORMAT, "empty id");
  CHECK(fc_id_check("a\nb", 3) == FC_EFORMAT, "newline id");
  CHECK(fc_id_check("\xff", 1) == FC_EUTF8, "bad utf8 id");
  char longid[600];
  memset(longid, 'a', sizeof longid);
  CHECK(fc_id_check(longid, 511) == 0 && fc_id_check(longid, 512) == FC_EFORMAT, "id length");
  CHECK(fc_utf8_valid("\xc3\xa9\xf0\x9f\x98\x80", 6), "valid utf8");
  CHECK(!fc_utf8_valid("\xc0\xaf", 2), "overlong");
  CHECK(!fc_utf8_valid("\xed\xa0\x80", 3), "surrogate");
  CHECK(!fc_utf8_valid("\xe2\x82", 2), "truncated");
}

static void test_config_json(void) {
  fc_mel_config c;
  memset(&c, 0, sizeof c);
  snprintf(c.preset, sizeof c.preset, "hifigan");
  c.sample_rate = 22050;
  c.n_fft = 1024;
  c.win_length = 1024;
  c.hop_length = 256;
  c.n_mels = 80;
  c.fmin = 0;
  c.fmax = 8000;
  c.power = 1;
  c.mag_eps = 1e-9;
  c.log = FC_LOG_LN;
  c.log_floor = 1e-5;
  c.pad = 384;
  c.dtype = FC_DTYPE_F32;
  char json[1024];
  int n = fc_mel_config_json(&c, json, sizeof json);
  const char *want =
      "{\"center\":false,\"drop_last_frame\":false,\"dtype\":\"f32\",\"fmax\":8000,\"fmin\":0,"
      "\"hop_length\":256,\"int16_scale\":false,\"kernel_version\":2,\"kind\":\"mel\",\"log\":\"ln\","
      "\"log_floor\":1e-05,\"mag_eps\":1e-09,\"mel_scale\":\"slaney\",\"n_fft\":1024,\"n_mels\":80,"
      "\"norm\":\"none\",\"pad\":384,\"pad_mode\":\"reflect\",\"power\":1,\"preemph\":0,"
      "\"preset\":\"hifigan\",\"remove_dc\":false,\"sample_rate\":22050,\"top_db\":0,"
      "\"win_length\":1024,\"window\":\"hann\",\"window_align\":\"center\"}";
  CHECK(n == (int)strlen(want) && strcmp(json, want) == 0, "json\n got %s\nwant %s", json, want);
  fc_mel_config back;
  char why[128] = "";
  CHECK(fc_mel_config_from_json(json, (size_t)n, &back, why, sizeof why) == 0, "parse: %s", why);
  char json2[1024];
  fc_mel_config_json(&back, json2, sizeof json2);
  CHECK(strcmp(json, json2) == 0, "round trip\n%s\n%s", json, json2);
  CHECK(fc_mel_config_json(&c, json2, 100) == FC_ECONFIG, "small buffer");
  CHECK(fc_mel_config_from_json("{\"kind\":\"tokens\"}", 17, &back, why, sizeof why) == FC_ECONFIG,
        "kind tokens accepted");
  CHECK(fc_mel_config_from_json("[1,", 3, &back, why, sizeof why) == FC_ECONFIG, "bad json");
  c.preset[0] = '\0';
  fc_mel_config_json(&c, json2, sizeof json2);
  CHECK(strstr(json2, "\"preset\":null") != NULL, "null preset: %s", json2);
  fc_digest d1, d2;
  fc_mel_config_digest(&c, &d1);
  c.hop_length = 255;
  fc_mel_config_digest(&c, &d2);
  CHECK(memcmp(&d1, &d2, 16) != 0, "digest ignores hop");
}

static void test_strerror(void) {
  CHECK(strncmp(fc_strerror(FC_ECHECKSUM), "FC_ECHECKSUM", 12) == 0, "%s",
        fc_strerror(FC_ECHECKSUM));
  CHECK(strstr(fc_strerror(-30792), "MDB_MAP_FULL") != NULL, "%s", fc_strerror(-30792));
  CHECK(strcmp(fc_strerror(2), "No such file or directory") == 0, "%s", fc_strerror(2));
}

/* Names in messages (fc_quote_name): plain and UTF-8 names as they are; a control character, a
 * quote, a backslash or a byte that is no part of a UTF-8 character (a Latin-1 name, a cut or
 * overlong sequence, a surrogate) quoted, the last as \xNN as an id made from the name holds it
 * (it printed the raw byte: invalid UTF-8 in every tool's stderr); a C1 control, a separator, a
 * direction control or a BOM as \uNNNN (they went out as they were: a line that shows another
 * name, or a terminal's escape); the length as snprintf's. */
static void test_quote_name(void) {
  static const char *const cases[][2] = {
      {"a.wav", "a.wav"},
      {"caf\xc3\xa9.wav", "caf\xc3\xa9.wav"},
      {"\xf0\x9f\x8e\xb5", "\xf0\x9f\x8e\xb5"},
      {"caf\xe9.wav", "\"caf\\xe9.wav\""},
      {"caf\\xe9.wav", "\"caf\\\\xe9.wav\""},
      {"a\tb\n\x1b\"", "\"a\\tb\\n\\033\\\"\""},
      {"\xc3", "\"\\xc3\""},
      {"\xc3(\xc3\xa9", "\"\\xc3(\xc3\xa9\""},
      {"\xc0\xaf", "\"\\xc0\\xaf\""},
      {"\xed\xa0\x80", "\"\\xed\\xa0\\x80\""},
      {"\xf4\x90\x80\x80", "\"\\xf4\\x90\\x80\\x80\""},
      {"\x7f\xff", "\"\\177\\xff\""},
      /* hidden or reordering characters: C1 CSI, a line separator, RLO, an isolate, a BOM */
      {"a\xc2\x9b"
       "31m",
       "\"a\\u009b31m\""},
      {"a\xe2\x80\xa8"
       "b",
       "\"a\\u2028b\""},
      {"\xe2\x80\xaevaw.exe", "\"\\u202evaw.exe\""},
      {"\xe2\x81\xa6x\xe2\x81\xa9", "\"\\u2066x\\u2069\""},
      {"\xef\xbb\xbf"
       "a.wav",
       "\"\\ufeffa.wav\""},
      {"\xc2\xa0\xe2\x80\x8d", "\xc2\xa0\xe2\x80\x8d"}, /* NBSP, ZWJ (emoji, scripts): as is */
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[64];
    size_t n = fc_quote_name(cases[i][0], buf, sizeof buf);
    CHECK(strcmp(buf, cases[i][1]) == 0 && n == strlen(cases[i][1]), "case %zu: got %s (%zu)", i,
          buf, n);
    CHECK(fc_quote_name(cases[i][0], NULL, 0) == n, "case %zu: length without a buffer", i);
    char small[5];
    fc_quote_name(cases[i][0], small, sizeof small);
    CHECK(strncmp(small, cases[i][1], 4) == 0 && strlen(small) <= 4, "case %zu: cut short", i);
  }
}

int main(void) {
  test_digest();
  test_record();
  test_entries();
  test_config_json();
  test_strerror();
  test_quote_name();
  if (failures)
    fprintf(stderr, "test_format: %d failure(s)\n", failures);
  else
    printf("test_format: ok\n");
  return failures ? 1 : 0;
}
