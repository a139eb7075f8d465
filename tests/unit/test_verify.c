/* cache-verify's engine (libcache/core/verify/verify.c): stores written with the C store API, then damaged in
 * every way the checks claim to catch — bytes flipped inside data.mdb (payload, header, key), a
 * truncated file, values rewritten with valid checksums (huge shape, NaN, wrong frame count,
 * unknown config), missing features for manifest ids, a config mismatch, changed sources — each
 * asserting the exact finding. Also: the NaN/Inf scanner's known answers, a clean store of 10,000
 * records, and 1 thread vs 2 giving the same findings; a zeroed B-tree page (LMDB asserts, or fails
 * the transaction) verified again and again in one process, a writer between. Runs under
 * ASan/UBSan in the sanitizer build. */
#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_store.h"
#include "featcache/fc_verify.h"
#include "libcache/core/verify/verify_int.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/check.h"

static char tmpdir[256];
static fc_mel_config mel;
static fc_digest mel_digest;
static char mel_json[1024];
static int mel_json_len;

/* ---- fixture --------------------------------------------------------------------------------- */
typedef struct utt {
  char id[32];
  fc_digest audio; /* audio digest */
  uint64_t samples;
  fc_digest key; /* its feat key */
  uint8_t header[64];
} utt;

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void make_feat(const utt *u, uint32_t frames, void **val, size_t *len) {
  size_t n = (size_t)frames * mel.n_mels;
  float *pl = malloc(n * sizeof *pl + 1);
  for (size_t i = 0; i < n; i++) pl[i] = (float)(rnd() % 1000) / 100.0f - 5.0f;
  fc_record_header h = {FC_DTYPE_F32, 2, frames, mel.n_mels, 0, 0, mel_digest, 0, FC_PRODUCER_CPU};
  *len = 64 + n * sizeof *pl;
  *val = malloc(*len);
  fc_record_encode(&h, pl, n * sizeof *pl, *val);
  free(pl);
  (void)u;
}

/* A clean store of n utterances with hifigan features (1..3 frames each: small and fast);
 * records of `big` utterances get 40 frames (12.8 KB: LMDB overflow pages). */
static utt *make_store(const char *dir, size_t n, int big) {
  fc_store *s;
  int rc = fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  CHECK(rc == 0, "open %s: %s", dir, fc_strerror(rc));
  if (rc) exit(1);
  fc_store_put_config(s, &mel_digest, mel_json, (size_t)mel_json_len);
  utt *us = calloc(n, sizeof *us);
  size_t batch = 512;
  fc_put *puts = calloc(2 * batch, sizeof *puts);
  void **bufs = calloc(2 * batch, sizeof *bufs);
  for (size_t i0 = 0; i0 < n; i0 += batch) {
    size_t np = 0;
    for (size_t i = i0; i < n && i < i0 + batch; i++) {
      utt *u = &us[i];
      snprintf(u->id, sizeof u->id, "utt%05zu", i);
      char content[64];
      int cl = snprintf(content, sizeof content, "audio bytes of %zu", i);
      fc_digest_buffer(content, (size_t)cl, &u->audio);
      u->samples = big ? 40 * 256 + rnd() % 256 : 256 + rnd() % 700;
      fc_record_key(&u->audio, &mel_digest, &u->key);
      fc_audio_entry e = {u->audio, 22050, 1, u->samples, 1000, 5, "/nonexistent.wav", 16};
      size_t el = fc_audio_entry_size(&e);
      void *ev = malloc(el);
      fc_audio_entry_encode(&e, ev);
      void *fv;
      size_t fl;
      make_feat(u, (uint32_t)fc_mel_num_frames(&mel, u->samples), &fv, &fl);
      memcpy(u->header, fv, 64);
      bufs[np] = ev;
      puts[np++] = (fc_put){FC_DB_AUDIO, u->id, strlen(u->id), ev, el, 0};
      bufs[np] = fv;
      puts[np++] = (fc_put){FC_DB_FEAT, u->key.bytes, 16, fv, fl, 0};
    }
    rc = fc_store_write(s, puts, np);
    CHECK(rc == 0, "write: %s", fc_strerror(rc));
    for (size_t j = 0; j < np; j++) free(bufs[j]);
  }
  free(puts);
  free(bufs);
  fc_store_sync(s);
  fc_store_close(s);
  return us;
}

/* Replace (or add, or delete with val NULL) one value through the store API. */
static void put_raw(const char *dir, int db, const void *key, size_t kl, const void *val,
                    size_t vl) {
  fc_store *s;
  CHECK(fc_store_open(dir, 0, &s) == 0, "reopen");
  fc_put p = {db, key, kl, val, vl, 0};
  CHECK(fc_store_write(s, &p, 1) == 0, "put_raw");
  fc_store_close(s);
}

static void *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = malloc(*len + 1);
  if (fread(b, 1, *len, f) != *len) *len = 0;
  fclose(f);
  return b;
}

/* Flip bit `bit` of the byte at offset `delta` from where needle[0..nl) occurs in data.mdb. */
static void flip_in_file(const char *dir, const void *needle, size_t nl, long delta, int bit) {
  char p[512];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  size_t len;
  uint8_t *b = read_file(p, &len);
  uint8_t *hit = b ? memmem(b, len, needle, nl) : NULL;
  CHECK(hit != NULL, "needle not found in %s", p);
  if (hit) {
    long off = (long)(hit - b) + delta;
    int fd = open(p, O_RDWR);
    uint8_t c = b[off] ^ (uint8_t)(1u << bit);
    CHECK(pwrite(fd, &c, 1, off) == 1, "pwrite");
    close(fd);
  }
  free(b);
}

static void rm_store(const char *dir) {
  char p[512];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/lock.mdb", dir);
  unlink(p);
  rmdir(dir);
}

static int verify(const char *dir, const fc_verify_opts *o, fc_verify_report *r) {
  char why[256];
  int rc = fc_verify_store(dir, o, r, why, sizeof why);
  CHECK(rc == 0, "verify %s: %s", dir, why);
  return rc;
}

static void dump(const fc_verify_report *r) {
  for (size_t i = 0; i < r->count; i++)
    fprintf(stderr, "  %s %s %s (id %s): %s\n", r->findings[i].severity == 1 ? "error" : "warning",
            r->findings[i].db, r->findings[i].key ? r->findings[i].key : "-",
            r->findings[i].id ? r->findings[i].id : "-", r->findings[i].problem);
}

/* The report holds exactly one error, with this db, key (hex of a digest, or a string), id and
 * problem (a glob: '*' stands for any text). */
/* What cache-verify adds to a record that cache-prune --damaged would remove. */
#define ADVICE ": cache-prune --damaged removes it, and featurize run again stores it anew"

static void expect_one(const fc_verify_report *r, int sev, const char *db, const char *key,
                       const char *id, const char *problem, const char *what) {
  uint64_t n = sev == FC_VERIFY_ERROR ? r->errors : r->warnings;
  const fc_verify_finding *f = NULL;
  for (size_t i = 0; i < r->count; i++)
    if (r->findings[i].severity == sev) {
      f = &r->findings[i];
      break;
    }
  int ok = n == 1 && f && strcmp(f->db, db) == 0 &&
           ((!key && !f->key) || (key && f->key && strcmp(key, f->key) == 0)) &&
           ((!id && !f->id) || (id && f->id && strcmp(id, f->id) == 0)) &&
           fnmatch(problem, f->problem, 0) == 0;
  CHECK(ok, "%s: want one %s %s %s (id %s): %s", what, sev == 1 ? "error" : "warning", db,
        key ? key : "-", id ? id : "-", problem);
  if (!ok) dump(r);
}

static void hexd(const fc_digest *d, char out[33]) { fc_digest_hex(d, out); }

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_nonfinite_scanner(void) {
  float f[100];
  for (int i = 0; i < 100; i++) f[i] = (float)i - 50.0f;
  CHECK(find_nonfinite(f, 100, FC_DTYPE_F32) == 100, "all finite");
  int spots[] = {0, 1, 31, 32, 33, 63, 64, 99};
  for (size_t s = 0; s < sizeof spots / sizeof spots[0]; s++) {
    float g[100];
    memcpy(g, f, sizeof g);
    g[spots[s]] = (s & 1) ? INFINITY : NAN;
    CHECK(find_nonfinite(g, 100, FC_DTYPE_F32) == (size_t)spots[s], "f32 at %d", spots[s]);
    /* unaligned: start one byte in */
    uint8_t raw[401];
    memcpy(raw + 1, g, 400);
    CHECK(find_nonfinite(raw + 1, 100, FC_DTYPE_F32) == (size_t)spots[s], "unaligned %d", spots[s]);
  }
  float big[3] = {3.4e38f, -3.4e38f, 1e-45f}; /* largest finite, denormal: all finite */
  CHECK(find_nonfinite(big, 3, FC_DTYPE_F32) == 3, "extremes are finite");
  uint16_t h[130];
  for (int i = 0; i < 130; i++) h[i] = 0x3c00; /* 1.0 in f16 */
  h[127] = 0x7bff; /* 65504: largest finite f16 */
  CHECK(find_nonfinite(h, 130, FC_DTYPE_F16) == 130, "f16 finite");
  h[129] = 0xfc00; /* -Inf */
  CHECK(find_nonfinite(h, 130, FC_DTYPE_F16) == 129, "f16 -inf");
  uint16_t b[70];
  for (int i = 0; i < 70; i++) b[i] = 0x3f80; /* 1.0 in bf16 */
  b[65] = 0x7f7f; /* largest finite bf16 */
  CHECK(find_nonfinite(b, 70, FC_DTYPE_BF16) == 70, "bf16 finite");
  b[66] = 0x7fc0; /* NaN */
  CHECK(find_nonfinite(b, 70, FC_DTYPE_BF16) == 66, "bf16 nan");
  CHECK(find_nonfinite(b, 70, FC_DTYPE_I16) == 70, "integers are never non-finite");
  CHECK(find_nonfinite(b, 0, FC_DTYPE_F32) == 0, "empty");

  /* fc_verify_record names the element, frame and bin */
  fc_record_header hd = {FC_DTYPE_F32, 2, 5, 20, 0, 0, mel_digest, 0, 1};
  float pl[100];
  for (int i = 0; i < 100; i++) pl[i] = 1.0f;
  pl[47] = -INFINITY;
  uint8_t rec[64 + sizeof pl];
  fc_record_encode(&hd, pl, sizeof pl, rec);
  char why[128];
  CHECK(fc_verify_record(rec, sizeof rec, 0, why, sizeof why) == 0, "no finite check");
  CHECK(fc_verify_record(rec, sizeof rec, 1, why, sizeof why) == FC_EFORMAT, "finite");
  CHECK(strcmp(why, "payload holds Inf at element 47 (frame 2, bin 7)") == 0, "why: %s", why);
}

static void test_clean_10k(void) {
  char dir[300];
  snprintf(dir, sizeof dir, "%s/clean", tmpdir);
  utt *us = make_store(dir, 10000, 0);
  fc_verify_opts o;
  fc_verify_opts_init(&o);
  o.finite = 1;
  const char *pre[] = {"hifigan"};
  o.expect_mel = pre;
  o.n_expect_mel = 1;
  fc_verify_report r1, r2;
  o.threads = 1;
  verify(dir, &o, &r1);
  CHECK(r1.errors == 0 && r1.warnings == 0 && r1.records_checked == 10000 && r1.opened,
        "clean 10k: %llu errors %llu warnings %llu records", (unsigned long long)r1.errors,
        (unsigned long long)r1.warnings, (unsigned long long)r1.records_checked);
  if (r1.count) dump(&r1);
  o.threads = 2;
  verify(dir, &o, &r2);
  CHECK(r2.errors == 0 && r2.records_checked == 10000 && r2.bytes_checked == r1.bytes_checked,
        "2 threads: same bytes %llu vs %llu", (unsigned long long)r2.bytes_checked,
        (unsigned long long)r1.bytes_checked);
  CHECK(r1.entries[FC_DB_AUDIO] == 10000 && r1.entries[FC_DB_FEAT] == 10000, "entries");
  fprintf(stderr, "clean 10k: %.3f s (1 thread), %.3f s (2 threads), %.1f MB\n", r1.wall_seconds,
          r2.wall_seconds, r1.bytes_checked / 1e6);
  fc_verify_report_free(&r1);
  fc_verify_report_free(&r2);

  /* --max-errors: damage 20 records through the API (valid LMDB), stop after 5 */
  for (int i = 0; i < 20; i++) {
    utt *u = &us[i * 400];
    void *v;
    size_t vl;
    make_feat(u, (uint32_t)fc_mel_num_frames(&mel, u->samples), &v, &vl);
    ((uint8_t *)v)[vl - 1] ^= 0x40; /* payload no longer matches its checksum */
    put_raw(dir, FC_DB_FEAT, u->key.bytes, 16, v, vl);
    free(v);
  }
  o.max_errors = 5;
  verify(dir, &o, &r1);
  CHECK(r1.errors == 5 && r1.stopped && r1.count == 5, "max_errors: %llu errors, stopped %d",
        (unsigned long long)r1.errors, r1.stopped);
  fc_verify_report_free(&r1);
  o.max_errors = 0;
  verify(dir, &o, &r1);
  CHECK(r1.errors == 20 && !r1.stopped, "all 20 found: %llu", (unsigned long long)r1.errors);
  for (size_t i = 0; i < r1.count; i++)
    CHECK(strcmp(r1.findings[i].problem, "payload checksum mismatch" ADVICE) == 0 &&
              r1.findings[i].id,
          "finding %zu: %s", i, r1.findings[i].problem);
  fc_verify_report_free(&r1);
  free(us);
  rm_store(dir);
}

/* Each damage on a fresh store of 50 utterances with 40-frame records (overflow pages). */
static void test_damage(void) {
  char dir[300], hex[33];
  fc_verify_opts o;
  fc_verify_report r;
  fc_verify_opts_init(&o);
  o.threads = 2;

  /* 1. a flipped bit in a payload, inside data.mdb */
  snprintf(dir, sizeof dir, "%s/payload", tmpdir);
  utt *us = make_store(dir, 50, 1);
  flip_in_file(dir, us[17].header, 64, 64 + 1000, 3);
  verify(dir, &o, &r);
  hexd(&us[17].key, hex);
  expect_one(&r, FC_VERIFY_ERROR, "feat", hex, "utt00017", "payload checksum mismatch" ADVICE,
             "payload");
  CHECK(r.warnings == 0, "payload: no warnings");
  fc_verify_report_free(&r);
  free(us);
  rm_store(dir);

  /* 2. a flipped bit in a header (dim0) */
  snprintf(dir, sizeof dir, "%s/header", tmpdir);
  us = make_store(dir, 50, 1);
  flip_in_file(dir, us[3].header, 64, 8, 0);
  verify(dir, &o, &r);
  hexd(&us[3].key, hex);
  expect_one(&r, FC_VERIFY_ERROR, "feat", hex, "utt00003", "header checksum mismatch" ADVICE,
             "header");
  fc_verify_report_free(&r);
  free(us);
  rm_store(dir);

  /* 3. a flipped bit in a key (lowest bit of its last byte: the key order is kept) */
  snprintf(dir, sizeof dir, "%s/key", tmpdir);
  us = make_store(dir, 50, 1);
  flip_in_file(dir, us[29].key.bytes, 16, 15, 0);
  verify(dir, &o, &r);
  hexd(&us[29].key, hex);
  char want[256];
  snprintf(want, sizeof want, "missing: no feature record for mel config hifigan %s", "*");
  expect_one(&r, FC_VERIFY_ERROR, "feat", hex, "utt00029", want, "key: missing");
  fc_digest flipped = us[29].key;
  flipped.bytes[15] ^= 1;
  hexd(&flipped, hex);
  expect_one(&r, FC_VERIFY_WARNING, "feat", hex, NULL, "orphan: no audio entry refers to this*",
             "key: orphan");
  fc_verify_report_free(&r);
  free(us);
  rm_store(dir);

  /* 4. a truncated data.mdb: found before any page past the end is touched */
  snprintf(dir, sizeof dir, "%s/trunc", tmpdir);
  us = make_store(dir, 50, 1);
  char p[512];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  struct stat st;
  stat(p, &st);
  CHECK(truncate(p, st.st_size / 2) == 0, "truncate");
  verify(dir, &o, &r);
  expect_one(&r, FC_VERIFY_ERROR, "env", "data.mdb", NULL, "truncated: *", "truncated");
  CHECK(!r.opened && r.records_checked == 0, "nothing read after truncation");
  fc_verify_report_free(&r);
  CHECK(truncate(p, 4096) == 0, "truncate to one page");
  verify(dir, &o, &r);
  expect_one(&r, FC_VERIFY_ERROR, "env", "data.mdb", NULL, "not an LMDB environment*", "1 page");
  fc_verify_report_free(&r);
  CHECK(truncate(p, 0) == 0, "truncate to 0");
  verify(dir, &o, &r);
  CHECK(r.errors == 1 && !r.opened, "empty data.mdb is an error finding");
  fc_verify_report_free(&r);
  free(us);
  rm_store(dir);

  /* 5-8. values rewritten with valid checksums */
  snprintf(dir, sizeof dir, "%s/values", tmpdir);
  us = make_store(dir, 50, 1);
  { /* 5. header claiming a huge shape (header checksum recomputed) */
    fc_record_header h =
        {FC_DTYPE_F32, 2, 0x7fffffffu, 80, 0x7fffffffull * 80 * 4, 0, mel_digest, 0, 1};
    uint8_t v[64 + 400];
    memset(v, 0, sizeof v);
    fc_record_header_encode(&h, v);
    put_raw(dir, FC_DB_FEAT, us[5].key.bytes, 16, v, sizeof v);
  }
  { /* 6. NaN in a payload, both checksums valid */
    size_t n = fc_mel_num_frames(&mel, us[6].samples) * mel.n_mels;
    float *pl = calloc(n, sizeof *pl);
    pl[3 * mel.n_mels + 7] = NAN;
    fc_record_header h = {FC_DTYPE_F32, 2, (uint32_t)(n / mel.n_mels),
                          mel.n_mels,   0, 0,
                          mel_digest,   0, 1};
    uint8_t *v = malloc(64 + n * 4);
    fc_record_encode(&h, pl, n * 4, v);
    put_raw(dir, FC_DB_FEAT, us[6].key.bytes, 16, v, 64 + n * 4);
    free(v);
    free(pl);
  }
  { /* 7. a frame count the config does not give for that many samples */
    void *v;
    size_t vl;
    make_feat(&us[7], 39, &v, &vl);
    put_raw(dir, FC_DB_FEAT, us[7].key.bytes, 16, v, vl);
    free(v);
  }
  { /* 8. a record whose config the store does not know (an orphan too) */
    fc_digest other, k;
    fc_digest_buffer("no such config", 14, &other);
    fc_record_key(&us[8].audio, &other, &k);
    fc_record_header h = {FC_DTYPE_F32, 2, 1, 80, 0, 0, other, 0, 1};
    float pl[80] = {0};
    uint8_t v[64 + sizeof pl];
    fc_record_encode(&h, pl, sizeof pl, v);
    put_raw(dir, FC_DB_FEAT, k.bytes, 16, v, sizeof v);
  }
  { /* 8b. a reserved header field set (flags), both checksums valid: no v1 writer does that */
    void *v;
    size_t vl;
    make_feat(&us[10], (uint32_t)fc_mel_num_frames(&mel, us[10].samples), &v, &vl);
    fc_record_header h;
    const void *pl;
    fc_record_parse(v, vl, &h, &pl, NULL, 0);
    h.flags = 4;
    uint8_t *w = malloc(vl);
    fc_record_encode(&h, pl, vl - 64, w);
    put_raw(dir, FC_DB_FEAT, us[10].key.bytes, 16, w, vl);
    free(w);
    free(v);
  }
  o.finite = 1;
  verify(dir, &o, &r);
  CHECK(r.errors == 5 && r.warnings == 1, "values: %llu errors, %llu warnings",
        (unsigned long long)r.errors, (unsigned long long)r.warnings);
  int seen = 0;
  for (size_t i = 0; i < r.count; i++) {
    const fc_verify_finding *f = &r.findings[i];
    if (f->id && strcmp(f->id, "utt00005") == 0)
      seen |= 1 * (strcmp(f->problem,
                          "header says 687194767040 payload bytes, value holds 400" ADVICE) == 0);
    if (f->id && strcmp(f->id, "utt00006") == 0)
      seen |= 2 * (strcmp(f->problem, "payload holds NaN at element 247 (frame 3, bin 7)") == 0);
    if (f->id && strcmp(f->id, "utt00007") == 0) {
      snprintf(want, sizeof want, "39 frames, config hifigan gives 40 for %llu samples at 22050 Hz",
               (unsigned long long)us[7].samples);
      seen |= 4 * (strcmp(f->problem, want) == 0);
    }
    if (strncmp(f->problem, "unknown config ", 15) == 0 && !f->id) seen |= 8;
    if (f->severity == FC_VERIFY_WARNING && strncmp(f->problem, "orphan: ", 8) == 0) seen |= 16;
    if (f->id && strcmp(f->id, "utt00010") == 0)
      seen |= 32 * (strcmp(f->problem, "header flags 0x00000004: reserved, must be 0" ADVICE) == 0);
  }
  CHECK(seen == 63, "values: findings seen %d of 63", seen);
  if (seen != 63) dump(&r);
  fc_verify_report_free(&r);
  o.finite = 0;
  verify(dir, &o, &r);
  CHECK(r.errors == 4, "without finite the NaN record passes: %llu", (unsigned long long)r.errors);
  fc_verify_report_free(&r);

  /* 9. a config mismatch: the store holds hifigan, the run wants tacotron2 */
  const char *pre[] = {"tacotron2"};
  o.expect_mel = pre;
  o.n_expect_mel = 1;
  fc_mel_config t2;
  fc_mel_preset("tacotron2", &t2);
  fc_digest t2d;
  fc_mel_config_digest(&t2, &t2d);
  char t2hex[33], key[64];
  hexd(&t2d, t2hex);
  hexd(&mel_digest, hex);
  snprintf(key, sizeof key, "cfg/%s", t2hex);
  snprintf(want, sizeof want,
           "config mismatch: expected preset tacotron2 (config %s) is not in the store; stored "
           "mel configs: hifigan %s",
           t2hex, hex);
  fc_verify_report r9;
  verify(dir, &o, &r9);
  int found = 0;
  for (size_t i = 0; i < r9.count; i++)
    found += strcmp(r9.findings[i].db, "meta") == 0 && strcmp(r9.findings[i].key, key) == 0 &&
             strcmp(r9.findings[i].problem, want) == 0;
  CHECK(found == 1, "config mismatch finding");
  fc_verify_report_free(&r9);
  const char *bad[] = {"hifi-gun"};
  o.expect_mel = bad;
  char why[256];
  CHECK(fc_verify_store(dir, &o, &r9, why, sizeof why) == FC_ECONFIG, "unknown preset");
  CHECK(
      strcmp(
          why,
          "unknown preset 'hifi-gun' (want one of hifigan, tacotron2, librosa, whisper, kaldi; one stored in another dtype as cache-config lists it, 'kaldi (mq)'; or a 32-hex config digest)") ==
          0,
      "why: %s", why);
  fc_verify_report_free(&r9);
  o.n_expect_mel = 0;
  free(us);
  rm_store(dir);
}

/* A missing feature for a manifest id (its audio entry exists, its record was never written) and
 * a manifest id the store does not hold at all. */
static void test_manifest_missing(void) {
  char dir[300], hex[33];
  snprintf(dir, sizeof dir, "%s/man", tmpdir);
  fc_store *s;
  CHECK(fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "create");
  fc_store_put_config(s, &mel_digest, mel_json, (size_t)mel_json_len);
  utt u[3];
  for (int i = 0; i < 3; i++) {
    snprintf(u[i].id, sizeof u[i].id, "LJ001-%04d", i + 1);
    fc_digest_buffer(u[i].id, strlen(u[i].id), &u[i].audio);
    u[i].samples = 22050;
    fc_record_key(&u[i].audio, &mel_digest, &u[i].key);
    fc_audio_entry e = {u[i].audio, 22050, 1, u[i].samples, 1, 1, "x.wav", 5};
    uint8_t ev[64];
    fc_audio_entry_encode(&e, ev);
    fc_put p = {FC_DB_AUDIO, u[i].id, strlen(u[i].id), ev, fc_audio_entry_size(&e), 0};
    fc_store_write(s, &p, 1);
    if (i == 1) continue; /* LJ001-0002: audio entry, but its features were never written */
    void *fv;
    size_t fl;
    make_feat(&u[i], (uint32_t)fc_mel_num_frames(&mel, u[i].samples), &fv, &fl);
    fc_put q = {FC_DB_FEAT, u[i].key.bytes, 16, fv, fl, 0};
    fc_store_write(s, &q, 1);
    free(fv);
  }
  fc_store_close(s);
  fc_item items[3] = {{.id = "LJ001-0001", .line = 1},
                      {.id = "LJ001-0002", .line = 2},
                      {.id = "LJ001-0009", .line = 3}};
  fc_item_list list = {items, 3, FC_MANIFEST_LJSPEECH};
  fc_verify_opts o;
  fc_verify_opts_init(&o);
  o.manifest = &list;
  fc_verify_report r;
  verify(dir, &o, &r);
  hexd(&u[1].key, hex);
  CHECK(r.errors == 2 && r.count == 2 && r.manifest_items == 3, "manifest: %llu errors",
        (unsigned long long)r.errors);
  if (r.count == 2) {
    const fc_verify_finding *a = &r.findings[0], *b = &r.findings[1];
    CHECK(strcmp(a->db, "audio") == 0 && strcmp(a->key, "LJ001-0009") == 0 &&
              strcmp(a->problem,
                     "missing: manifest line 3 names it, the store has no audio "
                     "entry (no features)") == 0,
          "manifest id not in store: %s %s", a->db, a->problem);
    char want[200];
    snprintf(want, sizeof want, "missing: no feature record for mel config hifigan ");
    CHECK(strcmp(b->db, "feat") == 0 && strcmp(b->key, hex) == 0 &&
              strcmp(b->id, "LJ001-0002") == 0 && strncmp(b->problem, want, strlen(want)) == 0,
          "missing feature: %s %s %s", b->db, b->id, b->problem);
  } else {
    dump(&r);
  }
  fc_verify_report_free(&r);
  rm_store(dir);
}

static void test_sources(void) {
  char dir[300], src[320];
  snprintf(dir, sizeof dir, "%s/src", tmpdir);
  snprintf(src, sizeof src, "%s/a.wav", tmpdir);
  FILE *f = fopen(src, "wb");
  fputs("RIFF....WAVEfake audio bytes", f);
  fclose(f);
  struct timeval tv[2] = {{1600000000, 0}, {1600000000, 0}};
  utimes(src, tv);
  size_t len;
  void *bytes = read_file(src, &len);
  struct stat st;
  stat(src, &st);
  fc_store *s;
  CHECK(fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "create");
  fc_store_put_config(s, &mel_digest, mel_json, (size_t)mel_json_len);
  utt u = {.id = "a", .samples = 5000};
  fc_digest_buffer(bytes, len, &u.audio);
  fc_record_key(&u.audio, &mel_digest, &u.key);
  fc_audio_entry e = {u.audio,
                      22050,
                      1,
                      u.samples,
                      (uint64_t)st.st_size,
                      (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                      src,
                      strlen(src)};
  uint8_t ev[512];
  fc_audio_entry_encode(&e, ev);
  void *fv;
  size_t fl;
  make_feat(&u, (uint32_t)fc_mel_num_frames(&mel, u.samples), &fv, &fl);
  fc_put puts[2] = {{FC_DB_AUDIO, "a", 1, ev, fc_audio_entry_size(&e), 0},
                    {FC_DB_FEAT, u.key.bytes, 16, fv, fl, 0}};
  fc_store_write(s, puts, 2);
  fc_store_close(s);
  free(fv);

  fc_verify_opts o;
  fc_verify_opts_init(&o);
  o.sources = 1;
  o.rehash = 1;
  fc_verify_report r;
  verify(dir, &o, &r);
  CHECK(r.errors == 0 && r.warnings == 0, "sources clean");
  fc_verify_report_free(&r);

  /* same size, other bytes, same mtime: only --rehash can tell */
  f = fopen(src, "wb");
  fputs("RIFF....WAVEfake audio bytez", f);
  fclose(f);
  utimes(src, tv);
  o.rehash = 0;
  verify(dir, &o, &r);
  CHECK(r.errors == 0, "sources alone cannot see a same-size same-mtime change");
  fc_verify_report_free(&r);
  o.rehash = 1;
  verify(dir, &o, &r);
  expect_one(&r, FC_VERIFY_ERROR, "audio", "a", "a", "source changed: *", "rehash");
  CHECK(r.count && strstr(r.findings[0].problem, "hashes to"), "rehash text");
  fc_verify_report_free(&r);

  /* touched: new mtime, same bytes → error with --sources, a warning once --rehash clears it */
  f = fopen(src, "wb");
  fwrite(bytes, 1, len, f);
  fclose(f);
  o.rehash = 0;
  verify(dir, &o, &r);
  expect_one(&r, FC_VERIFY_ERROR, "audio", "a", "a", "source changed: *", "mtime");
  CHECK(r.count && strstr(r.findings[0].problem, "has mtime"), "mtime text: %s",
        r.count ? r.findings[0].problem : "");
  fc_verify_report_free(&r);
  o.rehash = 1;
  verify(dir, &o, &r);
  expect_one(&r, FC_VERIFY_WARNING, "audio", "a", "a", "source * touched*", "touched");
  CHECK(r.errors == 0, "touched but unchanged is no error");
  fc_verify_report_free(&r);

  /* grown file, then a deleted one */
  f = fopen(src, "ab");
  fputs("more", f);
  fclose(f);
  o.rehash = 0;
  verify(dir, &o, &r);
  expect_one(&r, FC_VERIFY_ERROR, "audio", "a", "a", "source changed: *", "size");
  CHECK(r.count && strstr(r.findings[0].problem, "bytes, its features were made from 28 bytes"),
        "size text: %s", r.count ? r.findings[0].problem : "");
  fc_verify_report_free(&r);
  unlink(src);
  verify(dir, &o, &r);
  expect_one(
      &r, FC_VERIFY_ERROR, "audio", "a", "a",
      "source *: No such file or directory (the corpus moved? --source-root DIR looks for it under DIR)",
      "deleted");
  fc_verify_report_free(&r);
  free(bytes);
  rm_store(dir);
}

static void test_not_a_store(void) {
  fc_verify_report r;
  char why[256], dir[300];
  snprintf(dir, sizeof dir, "%s/none", tmpdir);
  CHECK(fc_verify_store(dir, NULL, &r, why, sizeof why) == ENOENT, "no dir: %s", why);
  fc_verify_report_free(&r);
  mkdir(dir, 0777);
  CHECK(fc_verify_store(dir, NULL, &r, why, sizeof why) == FC_ENOSTORE, "no data.mdb: %s", why);
  fc_verify_report_free(&r);
  /* an LMDB environment that is not a featcache store */
  char p[400];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  FILE *f = fopen(p, "wb");
  for (int i = 0; i < 3 * 4096; i++) fputc(i & 0xff, f);
  fclose(f);
  CHECK(fc_verify_store(dir, NULL, &r, why, sizeof why) == 0, "garbage data.mdb runs");
  expect_one(&r, FC_VERIFY_ERROR, "env", "data.mdb", NULL, "not an LMDB environment*", "garbage");
  fc_verify_report_free(&r);
  rm_store(dir);
  /* a copy whose second half is zeros (a preallocated file written short): B-tree pages of the
   * wrong type are damage found, not a run that could not be made */
  free(make_store(dir, 2000, 0));
  size_t len;
  uint8_t *b = read_file(p, &len);
  memset(b + len / 2, 0, len - len / 2);
  f = fopen(p, "wb");
  fwrite(b, 1, len, f);
  fclose(f);
  free(b);
  CHECK(fc_verify_store(dir, NULL, &r, why, sizeof why) == 0, "half-zeroed data.mdb runs: %s", why);
  CHECK(r.errors >= 1, "half-zeroed data.mdb: %llu errors", (unsigned long long)r.errors);
  fc_verify_report_free(&r);
  rm_store(dir);
}

/* A damaged page on which LMDB asserts (it would abort): cache-verify jumps out of the read-only
 * walk (store_lmdb_assert) and reports it. The jump must leave nothing behind in the process — no
 * reader slot, lock or cursor: a second verify, with one thread or several, reports the same; a
 * writer opens the store and commits; the store verifies again. The damage is met by the main
 * thread's walk of the audio entries, then by the parallel record scan (a feat page). */
static void test_assert_recovery(void) {
  char dir[300], p[400], why[256];
  snprintf(dir, sizeof dir, "%s/assert", tmpdir);
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  for (int db = FC_DB_AUDIO; db <= FC_DB_FEAT; db += FC_DB_FEAT - FC_DB_AUDIO) {
    utt *us = make_store(dir, 2000, 0);
    /* the leaf page that holds utt01000's entry or record (not a stale copy of it), zeroed */
    fc_store *s;
    fc_rtxn *t;
    const void *base, *v = NULL;
    size_t maplen, vl;
    const void *key = db == FC_DB_AUDIO ? (const void *)"utt01000" : us[1000].key.bytes;
    CHECK(fc_store_open(dir, FC_STORE_RDONLY, &s) == 0 && fc_store_read_begin(s, &t) == 0 &&
              fc_store_map_region(s, &base, &maplen) == 0 &&
              fc_rtxn_get(t, db, key, db == FC_DB_AUDIO ? 8 : 16, &v, &vl) == 0,
          "find utt01000's page");
    off_t page = (off_t)(((const char *)v - (const char *)base) / 4096 * 4096);
    fc_rtxn_end(t);
    fc_store_close(s);
    free(us);
    int fd = open(p, O_RDWR);
    CHECK(fd >= 0 && pwrite(fd, (char[4096]){0}, 4096, page) == 4096, "zero the page");
    close(fd);
    fc_verify_opts o;
    fc_verify_opts_init(&o);
    o.nolock = -1; /* through lock.mdb's reader table, as beside a running writer */
    uint64_t errors[4] = {0};
    for (int run = 0; run < 4; run++) {
      o.threads = run % 2 ? 4 : 1;
      fc_verify_report r;
      int rc = fc_verify_store(dir, &o, &r, why, sizeof why);
      CHECK(rc == 0, "db %d, verify %d of the damaged store: %s", db, run, why);
      int found = 0, bad_txn = 0, cut = 0;
      for (size_t i = 0; i < r.count; i++) {
        found |= fnmatch("B-tree damaged (LMDB: *Assertion*", r.findings[i].problem, 0) == 0;
        bad_txn |= strstr(r.findings[i].problem, "MDB_BAD_TXN") != NULL;
        cut |= strstr(r.findings[i].problem, "the checks after it were not made") != NULL;
      }
      /* (a transaction LMDB failed on the page made every later read of it MDB_BAD_TXN); a
       * feature page is met by the parallel steps and the index's: the checks go on */
      CHECK(found && !bad_txn && cut == (db == FC_DB_AUDIO),
            "db %d, verify %d: no finding of LMDB's assertion, reads in a failed transaction, or "
            "the checks cut short",
            db, run);
      if (!found || bad_txn || cut != (db == FC_DB_AUDIO)) dump(&r);
      errors[run] = r.errors;
      fc_verify_report_free(&r);
      if (run == 1) { /* a writer in the same process, after the jumps */
        fc_store *w;
        rc = fc_store_open(dir, 0, &w);
        CHECK(rc == 0, "a writer after verify: open: %s", fc_strerror(rc));
        fc_put put = {FC_DB_META, "test/after", 10, "1", 1, 0};
        if (!rc) CHECK((rc = fc_store_write(w, &put, 1)) == 0, "write: %s", fc_strerror(rc));
        fc_store_close(w);
      }
    }
    CHECK(errors[0] == errors[2] && errors[1] == errors[3] && errors[0] == errors[1],
          "db %d: %llu, %llu errors (1 thread, 4), then %llu, %llu", db,
          (unsigned long long)errors[0], (unsigned long long)errors[1],
          (unsigned long long)errors[2], (unsigned long long)errors[3]);
    rm_store(dir);
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/fc-test-verify.XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  fc_mel_preset("hifigan", &mel);
  mel_json_len = fc_mel_config_json(&mel, mel_json, sizeof mel_json);
  fc_mel_config_digest(&mel, &mel_digest);

  test_nonfinite_scanner();
  test_clean_10k();
  test_damage();
  test_manifest_missing();
  test_sources();
  test_not_a_store();
  test_assert_recovery();

  rmdir(tmpdir);
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  else
    fprintf(stderr, "all verify checks passed\n");
  return failures ? 1 : 0;
}
