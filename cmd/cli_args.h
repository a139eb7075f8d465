/* The command line's words, for cmd/cli.h (which includes it after fc_cli_usage_error): an option
 * that names a run's one input given twice; an output file that cannot be made; the option a
 * mistyped one meant (or one given one dash). Header-only, as cli.h. */
#ifndef FC_CMD_CLI_ARGS_H
#define FC_CMD_CLI_ARGS_H

#include <ctype.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

/* An option that names a run's one input (--manifest FILE, cache-config's --drop CONFIG) given
 * again with another value: a usage error, its hint saying what to do instead. The last one
 * counting, as it does for a setting (a Makefile's options, then the user's), left the first out
 * without a word: the first manifest was not featurized, tokenized or checked, and cache-prune
 * --manifest train.csv --manifest dev.csv removed every utterance only train.csv names, exit 0.
 * The same value again is the same run. Returns value. */
static inline const char *fc_cli_once(const char *opt, const char *prev, const char *value,
                                      const char *hint) {
  char a[512], b[512];
  if (prev && strcmp(prev, value) != 0)
    fc_cli_usage_error("--%s given twice (%s, then %s): %s", opt, fc_cli_quoted(prev, a, sizeof a),
                       fc_cli_quoted(value, b, sizeof b), hint);
  return value;
}

static inline const char *fc_cli_path(const char *opt, const char *value); /* cli.h */

/* --manifest FILE: fc_cli_path, then fc_cli_once (featurize, tokenize, cache-verify, loader-bench:
 * a run reads one manifest). Returns value. */
static inline const char *fc_cli_manifest_arg(const char *prev, const char *value) {
  return fc_cli_once("manifest", prev, fc_cli_path("manifest", value),
                     "one manifest per run: run once for each, or give one file that names them "
                     "all");
}

/* Can an output file be made at path? 0, or why not as an errno value: a folder this user may not
 * write, a read-only mount (EACCES, EROFS), which the write found only once the run was over
 * (cache-bench --svg, loader-bench --trace: minutes of passes, then exit 1). The temporary the
 * write makes beside path (fc_outfile_open) is made and removed. A path that is no regular file
 * (/dev/stdout, /dev/null, a FIFO: written in place; opening a FIFO waits for its reader) is left
 * to the write. */
static inline int fc_cli_out_probe(const char *path) {
  struct stat st;
  fc_outfile *o;
  if (strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0 ||
      (stat(path, &st) == 0 && !S_ISREG(st.st_mode)))
    return 0;
  const int rc = fc_outfile_open(path, &o);
  if (!rc) fc_outfile_abort(o);
  return rc;
}

/* -o's value that begins with '=': -o=cache, as argparse and click read it (the value "cache"),
 * gives getopt's -o the value "=cache", and the store was made as "=cache", exit 0, where the next
 * step (tokenize -o cache, the loader) looks for "cache". A usage error; ./=cache names such a
 * store. Returns out (fc_cli_out_store, after its own checks). */
static inline const char *fc_cli_out_store_eq(const char *out) {
  if (!out || out[0] != '=') return out;
  char q[4 * 4096 + 8], r[4 * 4096 + 8];
  const char *name = fc_cli_quoted(out, q, sizeof q), *meant = fc_cli_quoted(out + 1, r, sizeof r);
  fc_cli_usage_error(
      "-o %s: a store name that begins with '=' (-o=%s gives -o the value '=%s'): "
      "write -o %s (or --output=%s), or ./%s for a store named so",
      name, meant, meant, meant, meant, name);
  return out;
}

/* ---- the option a mistyped one meant ----------------------------------------------------- */
static inline int fc_cli_typo_char(char c) { return c == '_' ? '-' : tolower((unsigned char)c); }

/* Damerau's edit distance of a (la bytes) and b: a letter left out, added, changed, or two next to
 * each other swapped count 1 each; '_' is read as '-' and case is ignored (--max_errors,
 * --JSON). A word of 64 bytes or more is no typo: 99. */
static inline int fc_cli_typo_distance(const char *a, size_t la, const char *b) {
  const size_t lb = strlen(b);
  int d[64][64];
  if (la >= 64 || lb >= 64) return 99;
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      const int x = fc_cli_typo_char(a[i - 1]), y = fc_cli_typo_char(b[j - 1]);
      int v = d[i - 1][j - 1] + (x != y);
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && x == fc_cli_typo_char(b[j - 2]) && fc_cli_typo_char(a[i - 2]) == y &&
          d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

/* The long option that name (len bytes, no dashes) is a typo of: the one nearest it, when no
 * other is as near and it is at most one edit per 4 letters away (one for a shorter name); NULL
 * otherwise (--bogus names none). */
static inline const char *fc_cli_meant(const char *name, size_t len, const struct option *longs) {
  const char *best = NULL;
  int bd = 99, tie = 0;
  for (const struct option *l = longs; l->name; l++) {
    const int d = fc_cli_typo_distance(name, len, l->name);
    if (d < bd)
      bd = d, best = l->name, tie = 0;
    else if (d == bd)
      tie = 1;
  }
  return !tie && bd <= (len / 4 > 1 ? (int)(len / 4) : 1) ? best : NULL;
}

/* An unknown option said with the one it most likely meant: a long one mistyped ('--dryrun': did
 * you mean '--dry-run'?), or a long one given one dash (-json, read as -j -s -o -n: '-j' in
 * '-json': did you mean '--json'?). word: the long option's word (NULL for a short one), c the
 * short option getopt refused, argv[at] the words where it may be (getopt leaves optind on a word
 * it has not finished). Exits 2. */
static inline void fc_cli_unknown_option(const char *word, int c, char **argv, int at, int argc,
                                         const struct option *longs) {
  const char *meant = NULL;
  if (word) {
    const char *name = word + 2, *eq = strchr(name, '=');
    meant = fc_cli_meant(name, eq ? (size_t)(eq - name) : strlen(name), longs);
    if (meant) fc_cli_usage_error("unknown option '%s': did you mean '--%s'?", word, meant);
    fc_cli_usage_error("unknown option '%s'", word);
  }
  for (int i = at - 1; i <= at && i < argc; i++) { /* the word that holds the -c getopt refused */
    const char *w = i > 0 ? argv[i] : "", *eq = strchr(w, '=');
    const size_t len = eq ? (size_t)(eq - w - 1) : strlen(w) - 1;
    if (w[0] != '-' || w[1] == '-' || len < 2 || !memchr(w + 1, c, len)) continue;
    if ((meant = fc_cli_meant(w + 1, len, longs)) != NULL)
      fc_cli_usage_error("unknown option '-%c' in '%s': did you mean '--%s'?", c, w, meant);
  }
  fc_cli_usage_error("unknown option '-%c'", c);
}

static inline uint32_t fc_cli_u32(const char *opt, const char *s, uint32_t lo, uint32_t hi);

/* A short option's number (-j N, -b N): fc_cli_u32, except that a long option given one dash,
 * read by getopt as the letter and its value (-json: -j with the value "son", -batch: -b "atch"),
 * is said as such: 'invalid value 'son' for --jobs: -json reads as -j son: did you mean
 * '--json'?' (it said only "invalid value 'son' for --jobs"). c: the letter, opt its long name. */
static inline uint32_t fc_cli_u32_short(int c, const char *opt, const char *s, uint32_t lo,
                                        uint32_t hi, const struct option *longs) {
  char word[64], q[4 * 64 + 8];
  const char *meant = NULL;
  if (s[0] < '0' || s[0] > '9') { /* no number at all: the rest of a word? */
    snprintf(word, sizeof word, "%c%s", c, s);
    const char *eq = strchr(word, '=');
    meant = fc_cli_meant(word, eq ? (size_t)(eq - word) : strlen(word), longs);
  }
  if (meant)
    fc_cli_usage_error("invalid value '%s' for --%s: -%s reads as -%c %s: did you mean '--%s'?",
                       fc_cli_quoted(s, q, sizeof q), opt, word, c, q, meant);
  return fc_cli_u32(opt, s, lo, hi);
}

#endif
