/* Replay of a libFuzzer target without libFuzzer, for CTest (both builds; ASan/UBSan in the
 * sanitizer one): the target's seeds, then a fixed number of seeded random mutations of each (bit
 * flips, byte overwrites, truncation, extension, inserted separators and bytes that parsers trip
 * on, a target-specific mutation). A crash, a sanitizer report or a broken invariant (abort) fails
 * the test. With FC_FUZZ_SEED_DIR set the seeds are also written there, as the corpus that
 * tests/fuzz/build.sh starts libFuzzer from. Include after the target's source. */
#ifndef FC_TESTS_FUZZ_REPLAY_H
#define FC_TESTS_FUZZ_REPLAY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_seed {
  uint8_t *p;
  size_t n;
} fuzz_seed;
static fuzz_seed fuzz_seeds[256];
static size_t fuzz_n_seeds;

static uint64_t fuzz_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t fuzz_rnd(void) {
  fuzz_state ^= fuzz_state << 13;
  fuzz_state ^= fuzz_state >> 7;
  fuzz_state ^= fuzz_state << 17;
  return fuzz_state;
}

/* A seed is the target byte followed by the input. */
static inline void fuzz_add_seed(uint8_t target, const void *p, size_t n) {
  if (fuzz_n_seeds == sizeof fuzz_seeds / sizeof *fuzz_seeds) abort();
  uint8_t *b = malloc(n + 1);
  if (!b) abort();
  b[0] = target;
  if (n) memcpy(b + 1, p, n);
  fuzz_seeds[fuzz_n_seeds++] = (fuzz_seed){b, n + 1};
}
static inline void fuzz_add_seed_str(uint8_t target, const char *s) {
  fuzz_add_seed(target, s, strlen(s));
}

/* A target-specific mutation of buf[0..*n) (capacity cap), or NULL. */
typedef void (*fuzz_mutate_fn)(uint8_t *buf, size_t *n, size_t cap, uint64_t k);

static inline int fuzz_replay(const char *name, int rounds, fuzz_mutate_fn extra) {
  const char *dir = getenv("FC_FUZZ_SEED_DIR");
  for (size_t i = 0; dir && i < fuzz_n_seeds; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-seed-%03zu", dir, name, i);
    FILE *f = fopen(path, "wb");
    if (f) {
      fwrite(fuzz_seeds[i].p, 1, fuzz_seeds[i].n, f);
      fclose(f);
    }
  }
  static const char *const tokens[] = {"|",
                                       "\t",
                                       "\n",
                                       "\r\n",
                                       "\"",
                                       "{",
                                       "}",
                                       "[",
                                       "]",
                                       ":",
                                       ",",
                                       "\\",
                                       "\\u0000",
                                       "\\ud800",
                                       "\xff",
                                       "\xc3",
                                       "\xed\xa0\x80",
                                       "\xef\xbb\xbf",
                                       " ",
                                       "null",
                                       "1e309",
                                       "-1",
                                       "4294967296"};
  const size_t cap = 1 << 16;
  uint8_t *buf = malloc(cap);
  size_t runs = 0;
  if (!buf) abort();
  for (size_t s = 0; s < fuzz_n_seeds; s++) {
    LLVMFuzzerTestOneInput(fuzz_seeds[s].p, fuzz_seeds[s].n);
    for (int r = 0; r < rounds; r++) {
      size_t n = fuzz_seeds[s].n;
      if (n > cap) n = cap;
      memcpy(buf, fuzz_seeds[s].p, n);
      int muts = 1 + (int)(fuzz_rnd() % 4);
      for (int m = 0; m < muts; m++) {
        uint64_t k = fuzz_rnd();
        size_t at = n > 1 ? 1 + (size_t)((k >> 8) % (n - 1)) : 0; /* never the target byte */
        switch (k % 7) {
        case 0:
          if (n > 1) buf[at] ^= (uint8_t)(1u << ((k >> 40) & 7));
          break;
        case 1:
          if (n > 1) buf[at] = (uint8_t)(k >> 48);
          break;
        case 2: n = 1 + (size_t)((k >> 16) % n); break; /* truncate */
        case 3:
          if (n + 8 < cap) {
            memset(buf + n, (int)(k >> 24), 8);
            n += 8;
          }
          break;
        case 4: { /* insert a separator or a byte sequence parsers trip on */
          const char *t = tokens[(k >> 16) % (sizeof tokens / sizeof *tokens)];
          size_t tl = strlen(t);
          if (n > 1 && n + tl < cap) {
            memmove(buf + at + tl, buf + at, n - at);
            memcpy(buf + at, t, tl);
            n += tl;
          }
          break;
        }
        case 5: { /* duplicate a span (long lines, repeated ids) */
          size_t len = n > 1 ? 1 + (size_t)((k >> 24) % (n - at)) : 0;
          if (len && n + len < cap) {
            memmove(buf + at + len, buf + at, n - at);
            n += len;
          }
          break;
        }
        default:
          if (extra) extra(buf, &n, cap, k);
          break;
        }
      }
      LLVMFuzzerTestOneInput(buf, n);
      runs++;
    }
  }
  free(buf);
  for (size_t s = 0; s < fuzz_n_seeds; s++) free(fuzz_seeds[s].p);
  fprintf(stderr, "fuzz replay %s: %zu seeds, %zu mutated inputs, no crash, invariants held\n",
          name, fuzz_n_seeds, runs);
  return 0;
}

#endif
