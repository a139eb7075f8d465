/* Which characters make espeak-ng read freed memory? Every assigned code point from LO to HI (hex)
 * is put into a line by a printf format (default "x %s": alone, after an English word) and the
 * line phonemized by the phonemes tokenizer (libcache/text/tokenize/tok_espeak.c, so what espeak_text
 * takes out is taken out), each in a child process of an ASan build: a child that does not exit
 * cleanly is a crash. Prints the ranges of crashing code points, one "U+XXXX-U+YYYY" per line
 * (an unassigned code point inside a range does not end it). Built and run by
 * tests/fuzz/scan-espeak.sh; what its ranges became: espeak_unsafe in tok_espeak.c.
 *   scan_espeak [FORMAT [LO [HI [LANG]]]]       defaults: "x %s" 80 2FFFF en-us
 * CJK ideographs, Hangul syllables and the planes above the first are tried one in 61. */
#include "featcache/fc_format.h"
#include "libcache/text/tokenize/tok_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utf8proc.h>

static void on_unit(const char *s, size_t len, void *ud) { (void)s, (void)len, (void)ud; }

static int skipped(long cp) {
  utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)cp);
  if (cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_CS || cat == UTF8PROC_CATEGORY_CO ||
      cat == UTF8PROC_CATEGORY_CC)
    return 1;
  int sampled = (cp >= 0x4E00 && cp < 0xA000) || (cp >= 0xAC00 && cp < 0xD7A4) || cp >= 0x20000;
  return sampled && cp % 61 != 0;
}

/* Does the line made of FORMAT and cp phonemize in a child without a sanitizer report? */
static int crashes(const char *fmt, const char *lang, long cp) {
  char c[8] = {0}, text[128];
  c[utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)c)] = 0;
  snprintf(text, sizeof text, fmt, c, c, c, c);
  fflush(stdout);
  pid_t p = fork();
  if (p < 0) {
    perror("scan_espeak: fork");
    exit(2);
  }
  if (p == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 2);
    _exit(tok_phonemize(lang, text, strlen(text), on_unit, NULL) ? 3 : 0);
  }
  int st;
  if (waitpid(p, &st, 0) != p) return 1;
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv) {
  const char *fmt = argc > 1 ? argv[1] : "x %s";
  long lo = argc > 2 ? strtol(argv[2], NULL, 16) : 0x80;
  long hi = argc > 3 ? strtol(argv[3], NULL, 16) : 0x2FFFF;
  const char *lang = argc > 4 ? argv[4] : "en-us";
  char why[256];
  if (tok_espeak_init(lang, NULL, 0, NULL, why, sizeof why) != 0) {
    fprintf(stderr, "scan_espeak: %s\n", why);
    return 2;
  }
  long run_lo = -1, tried = 0, found = 0;
  for (long cp = lo; cp <= hi + 1; cp++) {
    int bad;
    if (cp > hi) {
      bad = 0;
    } else if (skipped(cp)) {
      continue; /* neither starts nor ends a range */
    } else {
      bad = crashes(fmt, lang, cp);
      tried++;
      found += bad;
    }
    if (bad && run_lo < 0) run_lo = cp;
    if (!bad && run_lo >= 0) {
      printf("U+%04lX-U+%04lX\n", run_lo, cp - 1);
      run_lo = -1;
    }
  }
  fprintf(stderr, "scan_espeak: \"%s\" (%s): %ld code points tried, %ld crash\n", fmt, lang, tried,
          found);
  return found ? 1 : 0;
}
