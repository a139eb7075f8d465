/* libFuzzer target: the phonemes tokenizer's reading of a line (libcache/text/tokenize/tok_espeak.c):
 * the whole line goes to espeak-ng (en-us), its clauses are found from how far espeak-ng read
 * (pointer arithmetic over the text: the read-ahead character dropped, white space trimmed, the
 * terminating mark taken from the consumed text), each clause is spoken the command line's way
 * and its phonemes are split into units. The input is the line; the first byte picks whether it
 * goes through the tool's normalization first (NFKC, white space collapsed: what tokenize hands
 * the tokenizer) or as it is (any valid UTF-8; invalid UTF-8 is refused before here).
 * Invariants beyond "no crash, no leak, no OOB": every unit is non-empty valid UTF-8 without
 * '\n', '_' or white space inside (" " alone separates words, never first, never twice in a row);
 * and nothing of the line stays in espeak-ng: a fixed probe
 * line phonemized after it gives the units it gave before any input (espeak-ng keeps a read-ahead
 * character and other state in globals between calls).
 *
 * Built with libFuzzer by tests/fuzz/build.sh; replayed without libFuzzer (seeds + seeded
 * mutations) by tests/fuzz/replay_phonemes.c. */
#include "featcache/fc_format.h"
#include "featcache/fc_tokenize.h"
#include "libcache/text/tokenize/tok_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_assert.h"

typedef struct units {
  tok_buf all; /* the units, each followed by '\n' */
  size_t n, spaces_in_a_row;
  int last_was_space;
} units;

static void on_unit(const char *s, size_t len, void *ud) {
  units *u = ud;
  FUZZ_ASSERT(len > 0);
  FUZZ_ASSERT(fc_utf8_valid(s, len));
  FUZZ_ASSERT(memchr(s, '\n', len) == NULL && memchr(s, '_', len) == NULL);
  if (len == 1 && s[0] == ' ') {
    FUZZ_ASSERT(u->n > 0 && !u->last_was_space); /* never first, never twice */
    u->last_was_space = 1;
  } else {
    FUZZ_ASSERT(memchr(s, ' ', len) == NULL && memchr(s, '\t', len) == NULL);
    u->last_was_space = 0;
  }
  u->n++;
  if (tok_buf_put(&u->all, s, len) || tok_buf_put(&u->all, "\n", 1)) abort();
}

static const char probe_text[] = "Yes."; /* short: it is spoken after every input */
static char *probe_units; /* what the probe gave before any input */
static size_t espeak_deaths; /* lines espeak-ng died on (FC_EPHONEMIZE) */

static void phonemize_probe(units *u) {
  memset(u, 0, sizeof *u);
  FUZZ_ASSERT(tok_phonemize("en-us", probe_text, strlen(probe_text), on_unit, u) == 0);
  FUZZ_ASSERT(u->n >= 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (!probe_units) {
    char why[256];
    if (tok_espeak_init("en-us", NULL, 0, NULL, why, sizeof why) != 0) {
      fprintf(stderr, "fuzz phonemes: %s\n", why);
      abort();
    }
    units u;
    phonemize_probe(&u);
    probe_units = u.all.p;
  }
  /* a private copy of exactly the input, so ASan sees any read past it */
  size_t n = size - 1;
  char *d = malloc(n ? n : 1);
  if (!d) abort();
  if (n) memcpy(d, data + 1, n);
  char *text = NULL;
  size_t len = 0;
  if (data[0] & 1) {
    fc_tok_norm norm = {FC_UNICODE_NFKC, (data[0] >> 1) & 1, FC_PUNCT_KEEP, 1};
    if (fc_tok_normalize(&norm, d, n, &text, &len) != 0) text = NULL;
  } else if (fc_utf8_valid(d, n)) {
    text = d;
    len = n;
  }
  if (text) {
    units u;
    memset(&u, 0, sizeof u);
    int rc = tok_phonemize("en-us", text, len, on_unit, &u);
    /* espeak-ng dying on the line (in its child process) fails the line alone: counted, and
     * the probe below checks that nothing of it reached this process's espeak-ng */
    FUZZ_ASSERT(rc == 0 || (rc == FC_EPHONEMIZE && u.n == 0));
    if (rc == FC_EPHONEMIZE) {
      espeak_deaths++;
      if ((espeak_deaths & (espeak_deaths - 1)) == 0) /* 1, 2, 4, ... */
        fprintf(stderr, "fuzz phonemes: espeak-ng died on %zu lines so far\n", espeak_deaths);
    }
    free(u.all.p);
    phonemize_probe(&u);
    if (strcmp(u.all.p, probe_units) != 0) {
      fprintf(stderr, "the probe line gave other units after the input:\n%s---\nwant:\n%s", u.all.p,
              probe_units);
      abort();
    }
    free(u.all.p);
  }
  if (text != d) free(text);
  free(d);
  return 0;
}
