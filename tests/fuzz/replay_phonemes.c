/* Replay of tests/fuzz/fuzz_phonemes.c without libFuzzer (tests/fuzz/replay.h): lines that make
 * espeak-ng read ahead, split clauses, speak numbers, abbreviations and other scripts, each raw
 * and normalized, then seeded mutations of each. Every line is followed by the probe line, which
 * must give the units it gave first (nothing of a line stays in espeak-ng's globals). espeak-ng
 * and its data come with scripts/setup (libespeak-ng-dev): a missing voice fails the test. */
#include "tests/fuzz/fuzz_phonemes.c"
#include "tests/fuzz/replay.h"

#include <utf8proc.h>

/* Do lines a and b give the same units? Prints both, after what, when not. */
static int same_units(const char *what, const char *a, size_t la, const char *b, size_t lb) {
  units u, v;
  memset(&u, 0, sizeof u);
  memset(&v, 0, sizeof v);
  int same = !tok_phonemize("en-us", a, la, on_unit, &u) &&
             !tok_phonemize("en-us", b, lb, on_unit, &v) && u.all.p && v.all.p &&
             strcmp(u.all.p, v.all.p) == 0;
  if (!same)
    fprintf(stderr, "%s:\n%s---\n%s", what, u.all.p ? u.all.p : "", v.all.p ? v.all.p : "");
  free(u.all.p);
  free(v.all.p);
  return same;
}

int main(void) {
  static const char *const lines[] = {
      "Printing, in the only sense with which we are at present concerned.",
      "What? No! Really?! Well... maybe; it's 2.0 -- or 3.5: who knows.",
      "Mr. and Mrs. Smith paid $3,000.50 for caf\xc3\xa9 au lait at 9 a.m.. on Jan. 5th, 1999",
      "e.g. i.e. etc. U.S.A. 1st 2nd 3rd 42nd 100% 7:30 1/2 -12 +3 #5 @home a&b",
      "\xe2\x80\x9cQuoted,\xe2\x80\x9d she said \xe2\x80\x94 \xe2\x80\xa6 and then (in brackets) "
      "[more] {still}.",
      "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xe4\xb8\x96\xe7\x95\x8c! "
      "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xf0\x9f\x98\x80 \xef\xbc\xa1\xef\xbc\xa2",
      ".",
      "...",
      "?!?!",
      " ",
      "a",
      "a.",
      "a.b.c.d.e.f.g.h",
      "1234567890123456789012345678901234",
      "word,word;word:word.word!word?word",
      "\t tabs\tand  spaces \n newline \r\n end  ",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "\xef\xbb\xbf"
      "BOM first. \xc2\xa0nbsp\xc2\xa0. soft\xc2\xad hyphen. zero\xe2\x80\x8bwidth.",
  };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
    fuzz_add_seed_str(0, lines[i]); /* as it is */
    fuzz_add_seed_str(1, lines[i]); /* normalized (NFKC, white space collapsed) */
  }
  fuzz_add_seed_str(3, "casefolded \xc3\x9f\xe1\xba\x9e and NFKC \xef\xac\x81");
  /* Regression (found by this fuzzer): espeak-ng reads 0x01 as the start of an embedded command;
   * "\x01B" + "l." read a punctuation list past the end of the text (ASan: a read 714 bytes past
   * the line's buffer, where its end pointer then pointed) and set a global option. Control
   * characters are white space to espeak-ng now: the line reads as with spaces, the probe as
   * before. */
  static const char crash[] =
      "\x01\x1f\x1f\x1fl@\x00\x01"
      "Bl.";
  fuzz_add_seed(0, crash, sizeof crash - 1);
  fuzz_add_seed(1, crash, sizeof crash - 1);
  {
    static const char with[] =
        "a \x01"
        "B1 b\x01V\x02x\x1f. Yes",
                      spaced[] = "a  B1 b V x . Yes";
    LLVMFuzzerTestOneInput((const uint8_t *)"\0", 1); /* espeak-ng initialized, the probe heard */
    if (!same_units("control characters did not read as white space", with, sizeof with - 1, spaced,
                    sizeof spaced - 1))
      return 1;
  }
  /* Regression (found by this fuzzer): a letter, a dot and 165 or more letters overflow a stack
   * buffer in espeak-ng 1.51 (its command line aborts too). A run of more than 100 bytes without
   * white space is cut by a space before the byte that would pass 100. */
  {
    char with[203], spaced[205];
    memcpy(with, "s.", 2);
    memset(with + 2, 'o', 200);
    with[202] = 0;
    snprintf(spaced, sizeof spaced, "s.%.98s %.100s %.2s", with + 2, with + 2, with + 2);
    if (!same_units("a 202-byte word was not cut as 100-byte runs", with, strlen(with), spaced,
                    strlen(spaced)))
      return 1;
    char seed[183]; /* the input libFuzzer found: "s.", 170 letters o, " \u00a0\u00a0Om ." */
    memcpy(seed, "s.", 2);
    memset(seed + 2, 'o', 170);
    memcpy(seed + 172, " \xc2\xa0\xc2\xa0Om .", 10);
    fuzz_add_seed(0, seed, 182);
    /* the same cut keeps espeak-ng 1.51 off its other long-word overflow (espeak-ng PR 2495):
     * "s'" 68 times or more stacks suffix phonemes past a 200-byte buffer */
    char sufx[161];
    for (int i = 0; i < 80; i++) memcpy(sufx + 2 * i, "s'", 2);
    fuzz_add_seed(0, sufx, 160);
  }
  /* Regression (found by this fuzzer, minimized): an unassigned code point such as U+058C, or a
   * symbol of the Armenian block (U+058E), makes espeak-ng 1.51 read freed memory (ASan:
   * heap-use-after-free in its memcmp; its command line too, under valgrind), as do U+055A,
   * U+0970, U+09F2, U+10FB... Unassigned code points, and punctuation and symbols of the scripts
   * in U+0370-U+1FFF, are white space to espeak-ng now: the line reads as with a space there. */
  {
    static const char with[] = "a\xd6\x8c\xd8\x8c b \xd6\x8b\xef\xbf\xbe c", spaced[] = "a   b   c";
    if (!same_units("unassigned code points did not read as white space", with, sizeof with - 1,
                    spaced, sizeof spaced - 1))
      return 1;
    fuzz_add_seed(0, "\xd6\x8c\xd8\x8c", 4); /* the inputs libFuzzer found, minimized */
    fuzz_add_seed(3, "\xd6\x8e\xd8\x8c\x0c", 5); /* U+058E, an assigned symbol */
    fuzz_add_seed(0, "x \xd5\x9a \xe0\xa5\xb0 \xe0\xa7\xb2 \xe1\x83\xbb y", 18);
    fuzz_add_seed(1, "\xd6\x8c\xd8\x8c", 4);
  }
  /* Regression (found by this fuzzer in CI: "x \u11FB", an old Hangul final consonant after an
   * English word): a character of a script espeak-ng reads with another language's translator
   * (Bengali -> bn, ..., Hangul jamo -> ko) that this language's rules do not cover frees that
   * translator while it reads the word (espeak_unsafe in tok_espeak.c, found by
   * tests/fuzz/scan-espeak.sh). Every assigned code point of U+0370-U+1FFF and of the Hangul
   * blocks, alone after an English word, at the end of one and after a dot: under ASan (the
   * sanitizer build runs this test) a read of freed memory aborts here. In an English line such a
   * character reads as a space; in a line of its own language (--lang bn) it is read. */
  {
    static const char *const shapes[] = {"x %s", "x a%s", "x .%s"};
    size_t tried = 0;
    for (int32_t cp = 0x370; cp < 0x3190; cp++) {
      if (cp == 0x2000) cp = 0x3130; /* Hangul compatibility jamo */
      utf8proc_category_t cat = utf8proc_category(cp);
      if (cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_CC) continue;
      char c[5] = {0}, line[32];
      tok_utf8_encode(cp, c);
      for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        snprintf(line, sizeof line, shapes[k], c);
        units u;
        memset(&u, 0, sizeof u);
        if (tok_phonemize("en-us", line, strlen(line), on_unit, &u) != 0) {
          fprintf(stderr, "U+%04X in \"%s\" was not phonemized\n", (unsigned)cp, shapes[k]);
          return 1;
        }
        free(u.all.p);
        tried++;
      }
    }
    printf("phonemes: %zu lines with every code point of U+0370-U+1FFF and U+3130-U+318F\n", tried);
    static const char digits[] = "x \xe0\xa7\xa7\xe0\xa7\xa8 y \xe1\x87\xbb", spaced[] = "x    y  ";
    if (!same_units("Bengali digits and U+11FB did not read as spaces in an English line", digits,
                    sizeof digits - 1, spaced, sizeof spaced - 1))
      return 1;
    units u;
    memset(&u, 0, sizeof u);
    if (tok_phonemize("bn", "\xe0\xa7\xa7\xe0\xa7\xa8\xe0\xa7\xa9", 9, on_unit, &u) != 0 ||
        u.n < 3) {
      fprintf(stderr, "a Bengali line lost its Bengali digits (%zu units)\n", u.n);
      return 1;
    }
    free(u.all.p);
    fuzz_add_seed(0, "x \xd5\x9a \xe0\xa5\xb0 \xe0\xa7\xb2 \xe1\x87\xbb y", 18); /* as found */
    fuzz_add_seed(0, "x \xe1\x87\xbb", 5); /* the same, minimized */
    fuzz_add_seed(0, "x a\xe0\xa7\xa7", 6);
    fuzz_add_seed(0, "x .\xe0\xa7\xb6", 6); /* U+09F6: only after a dot (found by this fuzzer) */
  }
  return fuzz_replay("phonemes", 12, NULL);
}
