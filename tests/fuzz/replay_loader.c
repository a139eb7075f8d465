/* Replay of tests/fuzz/fuzz_loader.c without libFuzzer (tests/fuzz/replay.h): stores built from
 * valid programs (good utterances in every dtype, views and padded, verify and prefetch; coded mq
 * records under an mq config, whole and with a payload byte changed behind a valid checksum),
 * then mutated, each opened and read for a whole epoch. */
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

/* op 2 under an mq config (mode bit 7): frames x 80 values from one byte each, encoded, payload
 * byte at xor_at xored with x (0: none) */
static void mq_utterance(const char *id, unsigned frames, unsigned xor_at, unsigned x) {
  b8(2);
  b8((unsigned)strlen(id));
  bytes(id, strlen(id));
  b8(0x40 | 0x08);
  b16(frames);
  b8(80);
  for (size_t i = 0; i < (size_t)frames * 80; i++)
    b8((unsigned)((i * 37 + i / 80 * 11) % 96)); /* smooth-ish */
  b16(xor_at);
  b8(x);
}

static void seed_program(unsigned mode) {
  fuzz_add_seed((uint8_t)mode, prog, prog_n);
  prog_n = 0;
}

static void flip_mode(uint8_t *buf, size_t *n, size_t cap, uint64_t k) {
  (void)n, (void)cap;
  buf[0] ^= (uint8_t)(1u << ((k >> 16) % 8)); /* another output, order, verify, crop, mq ... */
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
  /* coded records: whole (every output, verify, prefetch, crops), then one with a byte of its
   * zstd frames changed and one with a byte of its fixed header changed, both sealed */
  for (unsigned mode = 0; mode < 8; mode++) {
    mq_utterance("mq-a", 9, 0, 0);
    mq_utterance("mq-b", 2, 0, 0);
    mq_utterance("mq-c", 40, 0, 0);
    seed_program(128 | mode | (mode & 2 ? 64 : 0));
  }
  mq_utterance("mq-a", 9, 0, 0);
  mq_utterance("mq-bad", 30, 25, 0x5a); /* inside the first zstd frame */
  seed_program(128 | 1);
  mq_utterance("mq-bad", 30, 3, 0xff); /* the mode byte: refused, sealed as it was */
  mq_utterance("mq-b", 2, 0, 0);
  seed_program(128 | 2);
  /* found by libFuzzer: an mq record of 0 frames (the writer's mq_encode made its escape plane
   * pointer as NULL + 0, undefined behaviour that clang's UBSan reports); the loader refuses it */
  mq_utterance("mq-empty", 0, 0, 0);
  mq_utterance("mq-a", 9, 0, 0);
  seed_program(128 | 1);
  /* the valid seeds must give a loader that reads their utterances (otherwise the mutations below
   * would only exercise the refusal at open), the hostile ones must be refused or skipped; the
   * changed zstd frame fails the decode of the one batch both its utterances are in */
  static const size_t want_min[] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0,
                                    3, 3, 3, 3, 3, 3, 3, 3, 0, 2, 1};
  static const size_t want_max[] = {3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0,
                                    3, 3, 3, 3, 3, 3, 3, 3, 0, 2, 1};
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
