/* Replay of tests/fuzz/fuzz_loader.c without libFuzzer (tests/fuzz/replay.h): stores built from
 * valid programs (good utterances in every dtype, views and padded, verify and prefetch), then
 * mutated, each opened and read for a whole epoch. */
#include "tests/fuzz/fuzz_loader.c"
#include "tests/fuzz/replay.h"

static uint8_t prog[65536];
static size_t prog_n;
static void b8(unsigned v) { prog[prog_n++] = (uint8_t)v; }
static void b16(unsigned v) {
  b8(v & 0xff);
  b8(v >> 8);
}
static void bytes(const void *p, size_t n) {
  memcpy(prog + prog_n, p, n);
  prog_n += n;
}

/* op 2: an utterance whose record holds frames x 80 f32 values (b: dtype/ndim bits) */
static void good_utterance(const char *id, unsigned frames, unsigned dtype_bits) {
  b8(2);
  b8((unsigned)strlen(id));
  bytes(id, strlen(id));
  b8(dtype_bits | 0x40 | 0x08); /* 2-D, 80 bins */
  b16(frames);
  b8(80);
  size_t n = (size_t)frames * 80 * fc_dtype_size(1 + dtype_bits % 6);
  for (size_t i = 0; i < n; i++) prog[prog_n++] = (uint8_t)(0x3c + (i * 7) % 3); /* finite */
}

static void seed_program(unsigned mode) {
  fuzz_add_seed((uint8_t)mode, prog, prog_n);
  prog_n = 0;
}

static void flip_mode(uint8_t *buf, size_t *n, size_t cap, uint64_t k) {
  (void)n, (void)cap;
  buf[0] ^= (uint8_t)(1u << ((k >> 16) % 7)); /* another output, order, verify, crop ... */
}

int main(void) {
  for (unsigned mode = 0; mode < 8; mode++) {
    good_utterance("utt-a", 7, 0);
    good_utterance("utt-b", 3, 0);
    good_utterance("utt-c", 12, mode % 2 ? 1 : 0); /* f16 beside f32: refused or skipped */
    seed_program(mode | (mode & 4 ? 64 : 0));
  }
  /* a raw record under op 1, a raw meta put (another format version), a broken config */
  {
    fc_record_header h = {0};
    h.dtype = 1, h.ndim = 2, h.dim0 = 2, h.dim1 = 80, h.producer = 1;
    fc_mel_config cfg;
    fc_mel_preset("hifigan", &cfg);
    fc_mel_config_digest(&cfg, &h.config);
    float pl[160] = {0};
    uint8_t rec[64 + sizeof pl];
    fc_record_encode(&h, pl, sizeof pl, rec);
    b8(1);
    b8(4);
    bytes("raw1", 4);
    b16(sizeof rec);
    bytes(rec, sizeof rec);
    good_utterance("ok", 4, 0);
    seed_program(3);
    b8(0);
    b8(FC_DB_META);
    b8(6);
    bytes("format", 6);
    b16(11);
    bytes("featcache/2", 11);
    good_utterance("ok", 4, 0);
    seed_program(1);
    b8(3);
    b16(9);
    bytes("{\"kind\":1", 9);
    good_utterance("ok", 4, 0);
    seed_program(0);
  }
  /* the valid seeds must give a loader that reads their utterances (otherwise the mutations below
   * would only exercise the refusal at open), the hostile ones must be refused or skipped */
  static const size_t want_min[] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0};
  static const size_t want_max[] = {3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0};
  for (size_t i = 0; i < fuzz_n_seeds; i++) {
    LLVMFuzzerTestOneInput(fuzz_seeds[i].p, fuzz_seeds[i].n);
    if (fuzz_loader_items_read < want_min[i] || fuzz_loader_items_read > want_max[i]) {
      fprintf(stderr, "seed %zu (mode %u): the loader read %zu utterances, want %zu..%zu\n", i,
              fuzz_seeds[i].p[0], fuzz_loader_items_read, want_min[i], want_max[i]);
      return 1;
    }
  }
  return fuzz_replay("loader", 150, flip_mode);
}
