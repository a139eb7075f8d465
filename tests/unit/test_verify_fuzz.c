/* Replay of the fuzz target tests/fuzz/fuzz_record.c without libFuzzer: valid seeds (a record of
 * every dtype and shape kind, audio and text entries, every preset's canonical JSON), then a fixed
 * number of seeded random mutations of each (bit flips, byte overwrites, truncation, extension,
 * header fields re-encoded with a valid checksum so the deeper checks are reached). A crash, an
 * ASan report (sanitizer build) or a broken invariant (abort) fails the test. With
 * FC_FUZZ_SEED_DIR set, the seeds are also written there as a corpus for tests/fuzz/build.sh. */
#include "tests/fuzz/fuzz_record.c"

#include <math.h>
#include <stdio.h>

static uint64_t st = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  st ^= st << 13;
  st ^= st >> 7;
  st ^= st << 17;
  return st;
}

typedef struct seed {
  uint8_t *p;
  size_t n;
} seed;
static seed seeds[64];
static size_t n_seeds;

static void add_seed(uint8_t target, const void *p, size_t n) {
  uint8_t *b = malloc(n + 1);
  b[0] = target;
  memcpy(b + 1, p, n);
  seeds[n_seeds++] = (seed){b, n + 1};
}

static void record_seed(int dtype, int ndim, uint32_t d0, uint32_t d1, int nonfinite) {
  size_t es = fc_dtype_size(dtype), n = (size_t)d0 * d1 * es;
  uint8_t *pl = calloc(1, n + 1), *rec = malloc(64 + n);
  for (size_t i = 0; i < n; i++) pl[i] = (uint8_t)(rnd() & 0x3f);
  if (nonfinite && dtype == FC_DTYPE_F32 && n >= 4) {
    float inf = INFINITY;
    memcpy(pl + n - 4, &inf, 4);
  }
  fc_record_header h = {(uint8_t)dtype, (uint8_t)ndim, d0, d1, 0, 0, {{0}}, 0, 1};
  if (fc_record_encode(&h, pl, n, rec) == 0) add_seed(0, rec, 64 + n);
  free(pl);
  free(rec);
}

static void run_one(const uint8_t *p, size_t n) { LLVMFuzzerTestOneInput(p, n); }

int main(void) {
  record_seed(FC_DTYPE_F32, 2, 3, 80, 0);
  record_seed(FC_DTYPE_F32, 2, 2, 80, 1);
  record_seed(FC_DTYPE_F16, 2, 4, 7, 0);
  record_seed(FC_DTYPE_BF16, 2, 5, 3, 0);
  record_seed(FC_DTYPE_I16, 1, 17, 1, 0);
  record_seed(FC_DTYPE_U16, 1, 1, 1, 0);
  record_seed(FC_DTYPE_I32, 1, 9, 1, 0);
  record_seed(FC_DTYPE_F32, 2, 0, 80, 0);
  fc_audio_entry e = {{{1, 2, 3}}, 22050, 1, 12345, 999, 42, "data/wavs/LJ001-0001.wav", 24};
  uint8_t eb[128];
  fc_audio_entry_encode(&e, eb);
  add_seed(1, eb, fc_audio_entry_size(&e));
  uint8_t tb[40] = {0};
  memcpy(tb + 16, "hello, world \xc3\xa9", 15);
  add_seed(1, tb, 31);
  for (const char *const *p = fc_mel_preset_names(); *p; p++) {
    fc_mel_config c;
    char js[1024];
    fc_mel_preset(*p, &c);
    int len = fc_mel_config_json(&c, js, sizeof js);
    add_seed(2, js, (size_t)len);
  }
  const char *dir = getenv("FC_FUZZ_SEED_DIR");
  for (size_t i = 0; dir && i < n_seeds; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%02zu", dir, i);
    FILE *f = fopen(path, "wb");
    if (f) {
      fwrite(seeds[i].p, 1, seeds[i].n, f);
      fclose(f);
    }
  }

  const int rounds = 10000;
  size_t runs = 0;
  uint8_t *buf = malloc(8192);
  for (size_t s = 0; s < n_seeds; s++) {
    run_one(seeds[s].p, seeds[s].n);
    for (int r = 0; r < rounds; r++) {
      size_t n = seeds[s].n;
      memcpy(buf, seeds[s].p, n);
      int muts = 1 + (int)(rnd() % 4);
      for (int m = 0; m < muts; m++) {
        uint64_t k = rnd();
        size_t at = n > 1 ? 1 + (size_t)((k >> 8) % (n - 1)) : 0;
        switch (k % 6) {
        case 0: if (n > 1) buf[at] ^= (uint8_t)(1u << ((k >> 40) & 7)); break;
        case 1: if (n > 1) buf[at] = (uint8_t)(k >> 48); break;
        case 2: n = 1 + (size_t)((k >> 16) % n); break;                    /* truncate */
        case 3: if (n + 8 < 8192) { memset(buf + n, (int)(k >> 24), 8); n += 8; } break;
        case 4: /* record: change a header field and re-seal the header checksum */
          if (buf[0] == 0 && n >= 65) {
            size_t field = 6 + (size_t)((k >> 16) % 24);
            buf[1 + field] = (uint8_t)(k >> 32);
            uint64_t hh = fc_hash64(buf + 1, 56);
            for (int i = 0; i < 8; i++) buf[1 + 56 + i] = (uint8_t)(hh >> (8 * i));
          }
          break;
        default: /* config: overwrite a digit or a value with an edge case */
          if (buf[0] == 2) {
            static const char *const edge[] = {"0", "-1", "1e309", "4294967296", "null",
                                               "\"x\"", "true", "1.5"};
            const char *ed = edge[(k >> 16) % 8];
            size_t el = strlen(ed);
            if (at + el < n) memcpy(buf + at, ed, el);
          }
          break;
        }
      }
      run_one(buf, n);
      runs++;
    }
  }
  free(buf);
  for (size_t s = 0; s < n_seeds; s++) free(seeds[s].p);
  fprintf(stderr, "fuzz replay: %zu seeds, %zu mutated inputs, no crash, invariants held\n",
          n_seeds, runs);
  return 0;
}
