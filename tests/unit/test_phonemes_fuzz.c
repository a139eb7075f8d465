/* Replay of tests/fuzz/fuzz_phonemes.c without libFuzzer (tests/fuzz/replay.h): lines that make
 * espeak-ng read ahead, split clauses, speak numbers, abbreviations and other scripts, each raw
 * and normalized, then seeded mutations of each. Every line is followed by the probe line, which
 * must give the units it gave first (nothing of a line stays in espeak-ng's globals). espeak-ng
 * and its data come with scripts/setup (libespeak-ng-dev): a missing voice fails the test. */
#include "tests/fuzz/fuzz_phonemes.c"
#include "tests/fuzz/replay.h"

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
  return fuzz_replay("phonemes", 12, NULL);
}
