/* libFuzzer target over every reader of text a user hands the tools: the manifest readers
 * (LJSpeech, wav.scp, JSON lines, plain lists, TSV, and format detection), the tokenizer.json
 * reader (bpe), the vocab reader (chars, phonemes), text normalization and the --shard spec (K/N,
 * or slurm and slurm/N with the SLURM_ARRAY_TASK_* variables from the input). The first input
 * byte picks the target, the rest is the file's bytes. Invariants beyond "no crash, no leak, no
 * OOB": every manifest item is either good (a valid id, a path where the format has one) or
 * carries a reason; a loaded tokenizer or vocab maps fixed texts to ids inside its vocabulary;
 * normalized text is valid UTF-8; a shard spec that parses is K < N, as the text says, and one
 * that does not has a reason.
 *
 * Built with libFuzzer by tests/fuzz/build.sh; replayed without libFuzzer (seeds + seeded
 * mutations) by tests/fuzz/replay_parsers.c. */
#include "featcache/fc_format.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_shard.h"
#include "featcache/fc_tokenize.h"
#include "libcache/text/tokenize/tok_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_assert.h"

enum {
  T_MANIFEST_FIRST = 0,
  T_MANIFEST_LAST = 5,
  T_BPE = 6,
  T_VOCAB = 7,
  T_NORMALIZE = 8,
  T_SHARD = 9,
  T_COUNT = 10
};

static const char *const fixed_texts[] = {"hello, world",
                                          "The 3rd of May, 1999 \xe2\x80\x94 caf\xc3\xa9!", "  ",
                                          "\xf0\x9f\x98\x80 emoji", "a"};

static void fuzz_manifest(int format, const uint8_t *d, size_t n) {
  /* the reader takes a path: an anonymous memory file holds exactly the input */
  int fd = memfd_create("manifest", 0);
  if (fd < 0) return;
  if (n && write(fd, d, n) != (ssize_t)n) {
    close(fd);
    return;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  fc_manifest_opts o = {.format = (fc_manifest_format)format,
                        .audio_dir = "/nonexistent-audio-dir"};
  fc_item_list l = {0};
  char why[256];
  int rc = fc_manifest_read(path, &o, &l, why, sizeof why);
  if (rc == 0) {
    for (size_t i = 0; i < l.count; i++) {
      const fc_item *it = &l.items[i];
      FUZZ_ASSERT(it->line >= 1);
      if (it->err) {
        FUZZ_ASSERT(it->why != NULL);
        continue;
      }
      FUZZ_ASSERT(it->id != NULL);
      FUZZ_ASSERT(fc_id_check(it->id, strlen(it->id)) == 0);
      /* no path: only tsv, and a JSON line that names its id and text (a tokenize manifest) */
      if (l.format == FC_MANIFEST_JSONL)
        FUZZ_ASSERT(it->path != NULL || it->text != NULL);
      else if (l.format != FC_MANIFEST_TSV)
        FUZZ_ASSERT(it->path != NULL);
      if (it->text) FUZZ_ASSERT(fc_utf8_valid(it->text, strlen(it->text)));
    }
  } else {
    FUZZ_ASSERT(l.count == 0 && l.items == NULL);
  }
  fc_item_list_free(&l);
  close(fd);
}

static void fuzz_bpe(const uint8_t *d, size_t n) {
  tok_bpe *b = NULL;
  char why[256];
  if (tok_bpe_load((const char *)d, n, &b, why, sizeof why) != 0) {
    FUZZ_ASSERT(b == NULL && why[0] != 0);
    return;
  }
  uint32_t vs = tok_bpe_vocab_size(b);
  for (size_t t = 0; t < sizeof fixed_texts / sizeof *fixed_texts; t++) {
    tok_ids ids = {0};
    if (tok_bpe_encode(b, fixed_texts[t], strlen(fixed_texts[t]), &ids, why, sizeof why) == 0)
      for (size_t i = 0; i < ids.len; i++) FUZZ_ASSERT(ids.p[i] >= 0 && (uint32_t)ids.p[i] < vs);
    free(ids.p);
  }
  tok_bpe_free(b);
}

static void fuzz_vocab(const uint8_t *d, size_t n) {
  tok_vocab v;
  memset(&v, 0, sizeof v);
  char why[256];
  if (tok_vocab_parse(&v, (const char *)d, n, (int)(n & 1), why, sizeof why) != 0) {
    tok_vocab_free(&v);
    return;
  }
  for (size_t t = 0; t < sizeof fixed_texts / sizeof *fixed_texts; t++) {
    tok_ids ids = {0};
    size_t unknown = 0;
    int32_t unk = v.n ? 0 : -1;
    if (tok_vocab_map(&v, fixed_texts[t], strlen(fixed_texts[t]), unk, 0, &ids, &unknown, why,
                      sizeof why) == 0)
      for (size_t i = 0; i < ids.len; i++) FUZZ_ASSERT(ids.p[i] >= 0 && (size_t)ids.p[i] < v.n);
    free(ids.p);
  }
  tok_vocab_free(&v);
}

static void fuzz_normalize(const uint8_t *d, size_t n) {
  if (n < 1) return;
  fc_tok_norm norm = {(fc_tok_unicode)(d[0] & 1), (d[0] >> 1) & 1, (fc_tok_punct)((d[0] >> 2) & 1),
                      (d[0] >> 3) & 1};
  char *out = NULL;
  size_t len = 0;
  int rc = fc_tok_normalize(&norm, (const char *)d + 1, n - 1, &out, &len);
  if (rc == 0) {
    FUZZ_ASSERT(out != NULL && out[len] == 0);
    FUZZ_ASSERT(fc_utf8_valid(out, len));
  }
  free(out);
}

/* The spec, then NUL-separated values of SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _MAX (a missing
 * value: the variable is unset). */
static void fuzz_shard(const uint8_t *d, size_t n) {
  static const char *const vars[] = {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
                                     "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"};
  char *s = malloc(n + 1);
  if (!s) abort();
  if (n) memcpy(s, d, n);
  s[n] = 0;
  const char *spec = s, *p = s + strlen(s);
  const char *val[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < 4 && p < s + n; i++) {
    val[i] = p + 1;
    p = val[i] + strlen(val[i]);
  }
  for (int i = 0; i < 4; i++) {
    if (val[i])
      setenv(vars[i], val[i], 1);
    else
      unsetenv(vars[i]);
  }
  uint32_t k = 7, cnt = 3;
  char why[256];
  int rc = fc_shard_parse(spec, &k, &cnt, why, sizeof why);
  if (rc == 0) {
    FUZZ_ASSERT(cnt >= 1 && k < cnt);
    if (strncmp(spec, "slurm", 5) != 0) { /* K/N in decimal digits, as many as they take */
      unsigned long long pk = 0, pn = 0;
      char tail = 0;
      FUZZ_ASSERT(sscanf(spec, "%llu/%llu%c", &pk, &pn, &tail) == 2);
      FUZZ_ASSERT(pk == k && pn == cnt && spec[0] >= '0' && spec[0] <= '9');
    } else { /* K is the task id; N as written (slurm/N), else the array's count */
      FUZZ_ASSERT(val[0] && strtoull(val[0], NULL, 10) == k);
      if (spec[5] == '/')
        FUZZ_ASSERT(strtoull(spec + 6, NULL, 10) == cnt);
      else
        FUZZ_ASSERT(spec[5] == 0 && val[1] && strtoull(val[1], NULL, 10) == cnt);
    }
    FUZZ_ASSERT(fc_shard_of(spec, strlen(spec), cnt) < cnt);
  } else {
    FUZZ_ASSERT(rc == FC_ECONFIG && why[0] != 0 && memchr(why, 0, sizeof why));
  }
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int target = data[0] % T_COUNT;
  /* a private copy of exactly the input, so ASan sees any read past it */
  size_t n = size - 1;
  uint8_t *d = malloc(n ? n : 1);
  if (!d) return 0;
  if (n) memcpy(d, data + 1, n);
  if (target <= T_MANIFEST_LAST)
    fuzz_manifest(target - T_MANIFEST_FIRST, d, n);
  else if (target == T_BPE)
    fuzz_bpe(d, n);
  else if (target == T_VOCAB)
    fuzz_vocab(d, n);
  else if (target == T_NORMALIZE)
    fuzz_normalize(d, n);
  else
    fuzz_shard(d, n);
  free(d);
  return 0;
}
