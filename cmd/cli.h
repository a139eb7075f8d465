/* Shared helpers for the tools in cmd/: one option table that drives both getopt_long and --help
 * (git's usage_with_options), strict number parsing (zstd's readU32FromCharChecked), diagnostics
 * as `tool: path: message`, signal flags (mdb_dump's gotsig) and the common exit codes.
 * Header-only: every tool includes it once. */
#ifndef FC_CMD_CLI_H
#define FC_CMD_CLI_H

#include "featcache/fc_format.h" /* fc_quote_name */
#include "featcache/fc_manifest.h"
#include "featcache/fc_outfile.h" /* fc_json_write_string */
#include "featcache/fc_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FC_EXIT_OK = 0, FC_EXIT_FAIL = 1, FC_EXIT_USAGE = 2 };

/* One row per option. has_arg: no_argument / required_argument. id: the value getopt_long
 * returns (the short letter when there is one, else a number >= 256). A row with long_name NULL
 * and help set is a section heading in --help; the table ends with an all-zero row. */
typedef struct fc_cli_opt {
  const char *long_name;
  int id;
  int has_arg;
  const char *arg_name;
  const char *help;
} fc_cli_opt;

static const char *fc_cli_tool = "featcache";

/* stdout and stderr in one stream (`tool ... 2>&1 | tee log`, `>log 2>&1`, a terminal): stdout
 * is written at each end of line, so that a store's report comes before the next store's
 * messages, as it was produced, and not all at the exit (a pipe's or a file's stdout is otherwise
 * written in 4 KiB blocks, while stderr is written at once). Each message (fc_cli_vmsg) also
 * flushes stdout first. Apart (a report into a file, messages on the terminal), stdout keeps its
 * blocks. Called by fc_cli_std_fds, before anything is written. */
static inline void fc_cli_stdout_in_order(void) {
  struct stat o, e;
  if (fstat(STDOUT_FILENO, &o) == 0 && fstat(STDERR_FILENO, &e) == 0 && o.st_dev == e.st_dev &&
      o.st_ino == e.st_ino && o.st_rdev == e.st_rdev)
    setvbuf(stdout, NULL, _IOLBF, 0);
}

/* Standard input, output and error, each open before the tool opens anything (git's
 * sanitize_stdfds). A tool started with one of them closed (`>&-`, `2>&-`, a job runner's closed
 * descriptors) would otherwise get a store's lock.mdb or data.mdb as fd 1 or 2, and a message or
 * report meant for the terminal would be written over the store's first pages: a featurize with
 * both closed and one bad input destroyed its store's meta pages. A closed one becomes /dev/null
 * opened read-only, so writes to it still fail (EBADF, as when closed: a lost report is still
 * exit 1) and reads give end of file. */
static inline void fc_cli_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0 && nul != fd) close(nul); /* a lower one was closed too and took it: not here */
  }
  fc_cli_stdout_in_order();
}

/* A file name as messages print it: as it is, or — when it holds a control character, a double
 * quote, a backslash or a byte that is not UTF-8 (\xNN) — in double quotes with C escapes, as git quotes paths (fc_quote_name,
 * the library's rule for the names in its own messages too). One input's line stays one line, a
 * terminal gets no escape codes from a name, and a name that begins with a quote cannot pass for
 * a quoted one. */
static inline void fc_cli_put_name(FILE *f, const char *name) {
  char small[512], *big = NULL;
  const size_t n = fc_quote_name(name, small, sizeof small);
  if (n >= sizeof small && (big = malloc(n + 1))) fc_quote_name(name, big, n + 1);
  fputs(big ? big : small, f); /* without the memory, cut short */
  free(big);
}

/* fc_quote_name into buf (len bytes, cut short if it must be: 4 × the name + 3 always fits), for
 * a name inside a message: an utterance id (up to 511 bytes, any character but NUL, CR and LF). */
static inline const char *fc_cli_quoted(const char *name, char *buf, size_t len) {
  fc_quote_name(name, buf, len);
  return buf;
}

/* The first error a flush of stdout met (a full disk), for fc_cli_stdout_status to say. */
static int fc_cli_stdout_errno;

/* stdout written out now: after a store's report (a second Ctrl-C, a kill, keeps it), before a
 * message (what was reported before comes first). A write error is kept for the exit's word. */
static inline void fc_cli_flush_stdout(void) {
  const int saved = errno;
  errno = 0;
  if (fflush(stdout) != 0 && !fc_cli_stdout_errno) fc_cli_stdout_errno = errno ? errno : EIO;
  errno = saved;
}

static inline void fc_cli_vmsg(const char *path, const char *fmt, va_list ap) {
  fc_cli_flush_stdout(); /* what was reported before comes first (fc_cli_stdout_in_order) */
  fprintf(stderr, "%s: ", fc_cli_tool);
  if (path) {
    fc_cli_put_name(stderr, path);
    fputs(": ", stderr);
  }
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

/* `tool: path: message` (path may be NULL) on stderr. */
static inline void fc_cli_warn(const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fc_cli_vmsg(path, fmt, ap);
  va_end(ap);
}

/* Usage error: message, a hint to --help, exit 2. */
static inline void fc_cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fc_cli_vmsg(NULL, fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try '%s --help' for more information.\n", fc_cli_tool);
  exit(FC_EXIT_USAGE);
}
#include "cli_args.h" /* fc_cli_once, fc_cli_unknown_option */

/* getopt_long (run with opterr = 0) refused the option it just read: say which and why, as
 * `tool: ...` (getopt's own messages name the program by its path), and exit 2. argv[optind - 1]
 * is the word it read, optopt the option's value (0 for an unknown or ambiguous long option). */
static inline void fc_cli_bad_option(int argc, char **argv, const struct option *longs) {
  const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "";
  if (strncmp(a, "--", 2) == 0 && a[2]) {
    const char *name = a + 2, *eq = strchr(name, '=');
    const size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option *hit = NULL;
    int n = 0;
    char list[256] = "";
    for (const struct option *l = longs; l->name; l++) {
      if (strncmp(l->name, name, len) != 0) continue;
      if (strlen(l->name) == len) { /* exact: no ambiguity */
        hit = l;
        n = 1;
        break;
      }
      size_t k = strlen(list);
      snprintf(list + k, sizeof list - k, "%s--%s", n ? ", " : "", l->name);
      hit = l;
      n++;
    }
    if (hit && (!optopt || optopt == hit->val)) { /* the option this word names was refused */
      if (n > 1) fc_cli_usage_error("option '--%.*s' is ambiguous (%s)", (int)len, name, list);
      if (eq && hit->has_arg == no_argument)
        fc_cli_usage_error("option '--%s' takes no value", hit->name);
      if (!eq && hit->has_arg == required_argument)
        fc_cli_usage_error("option '--%s' needs a value", hit->name);
    }
    if (!optopt) fc_cli_unknown_option(a, 0, argv, optind, argc, longs);
  }
  if (optopt > 0 && optopt < 128) {
    for (const struct option *l = longs; l->name; l++)
      if (l->val == optopt && l->has_arg == required_argument)
        fc_cli_usage_error("option '-%c' needs a value", optopt);
    fc_cli_unknown_option(NULL, optopt, argv, optind, argc, longs);
  }
  fc_cli_usage_error("unknown option '%s'", a);
}

/* stdout carries only what was asked for (--json, --help, a config): a write error there — a full
 * disk, a file-size limit, a closed pipe when SIGPIPE is ignored — must not pass for success.
 * Returns code, or 1 in place of 0 after saying why when stdout could not be written. */
static inline int fc_cli_stdout_status(int code) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return code;
  const int err = fc_cli_stdout_errno ? fc_cli_stdout_errno : errno;
  fc_cli_stdout_errno = err ? err : EIO; /* the done line says the report is lost */
  fc_cli_warn("stdout", "cannot write: %s", err ? strerror(err) : "write error");
  return code == FC_EXIT_OK ? FC_EXIT_FAIL : code;
}

/* Words of text printed from column `col` (the cursor's; a space first when it is past 0),
 * one space apart, wrapped so that lines end by column `width`; a continuation line starts at
 * column `indent`. An 80-column terminal shows --help unbroken. Columns count UTF-8 characters. */
static inline void fc_cli_wrap(FILE *f, const char *text, int col, int indent, int width) {
  const char *p = text;
  int sep = col > 0;
  while (*p == ' ') p++;
  while (*p) {
    const char *w = p;
    while (*p && *p != ' ') p++;
    int len = 0;
    for (const char *q = w; q < p; q++) len += ((unsigned char)*q & 0xC0) != 0x80;
    if (sep && col + 1 + len > width) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
      sep = 0;
    }
    fprintf(f, "%s%.*s", sep ? " " : "", (int)(p - w), w);
    col += sep + len;
    sep = 1;
    while (*p == ' ') p++;
  }
  fputc('\n', f);
}

/* Prose (a description, a footer) refilled to 79 columns: its lines are joined into one
 * paragraph, except that a line starting "Manual:" starts a new one. */
static inline void fc_cli_fill(FILE *f, const char *text) {
  char para[2048];
  size_t n = 0;
  for (const char *p = text;; p++) {
    int brk = *p == '\0' || (*p == '\n' && strncmp(p + 1, "Manual:", 7) == 0);
    if (brk) {
      para[n] = '\0';
      fc_cli_wrap(f, para, 0, 0, 79);
      n = 0;
      if (!*p) break;
      continue;
    }
    if (n + 1 < sizeof para) para[n++] = *p == '\n' ? ' ' : *p;
  }
}

static inline void fc_cli_help(FILE *f, const char *synopsis, const char *description,
                               const fc_cli_opt *opts, const char *footer) {
  fprintf(f, "Usage: %s\n", synopsis);
  if (description) {
    fputc('\n', f);
    fc_cli_fill(f, description);
  }
  for (const fc_cli_opt *o = opts; o->long_name || o->help; o++) {
    if (!o->long_name) {
      fprintf(f, "\n%s\n", o->help);
      continue;
    }
    char left[64];
    int n;
    if (o->id > 0 && o->id < 128)
      n = snprintf(left, sizeof left, "  -%c, --%s", o->id, o->long_name);
    else
      n = snprintf(left, sizeof left, "      --%s", o->long_name);
    if (o->has_arg && n > 0 && (size_t)n < sizeof left) /* an optional value is attached: [=X] */
      snprintf(left + n, sizeof left - (size_t)n, "%s%s",
               o->has_arg == optional_argument ? "" : " ", o->arg_name ? o->arg_name : "ARG");
    int w = fprintf(f, "%-30s", left);
    fc_cli_wrap(f, o->help ? o->help : "", w, 31, 79);
  }
  if (footer) {
    fputc('\n', f);
    fc_cli_fill(f, footer);
  }
}

/* Build getopt_long's tables from ours. longs must hold one entry per option plus one; shorts
 * at least 3 per option plus 2. */
static inline void fc_cli_getopt_tables(const fc_cli_opt *opts, struct option *longs,
                                        char *shorts) {
  size_t nl = 0, ns = 0;
  for (const fc_cli_opt *o = opts; o->long_name || o->help; o++) {
    if (!o->long_name) continue;
    longs[nl++] = (struct option){o->long_name, o->has_arg, NULL, o->id};
    if (o->id > 0 && o->id < 128) {
      shorts[ns++] = (char)o->id;
      if (o->has_arg == required_argument) shorts[ns++] = ':';
    }
  }
  longs[nl] = (struct option){0, 0, 0, 0};
  shorts[ns] = '\0';
}

/* Strict unsigned parse: digits only (no sign, no junk), overflow rejected. With sizes != 0,
 * accepts suffixes K M G T (×1000) and KiB MiB GiB TiB (×1024), and "k". Returns 0 or -1. */
static inline int fc_cli_parse_u64(const char *s, uint64_t *out, int sizes) {
  if (!s || *s < '0' || *s > '9') return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno == ERANGE) return -1;
  uint64_t mul = 1;
  if (*end && sizes) {
    static const struct {
      const char *suf;
      uint64_t mul;
    } sufs[] = {{"K", 1000ull},       {"k", 1000ull},          {"M", 1000000ull},
                {"G", 1000000000ull}, {"T", 1000000000000ull}, {"KiB", 1ull << 10},
                {"MiB", 1ull << 20},  {"GiB", 1ull << 30},     {"TiB", 1ull << 40},
                {"KB", 1000ull},      {"MB", 1000000ull},      {"GB", 1000000000ull}};
    mul = 0;
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
      if (strcmp(end, sufs[i].suf) == 0) mul = sufs[i].mul;
    if (!mul) return -1;
  } else if (*end) {
    return -1;
  }
  if (v > UINT64_MAX / mul) return -1;
  *out = (uint64_t)v * mul;
  return 0;
}

/* Strict u32 within [lo, hi]; on failure a usage error naming the option. */
static inline uint32_t fc_cli_u32(const char *opt, const char *s, uint32_t lo, uint32_t hi) {
  uint64_t v;
  if (fc_cli_parse_u64(s, &v, 0) || v < lo || v > hi)
    fc_cli_usage_error("invalid value '%s' for --%s (want an integer in %u..%u)", s, opt, lo, hi);
  return (uint32_t)v;
}

/* Strict finite double within [lo, hi]; on failure a usage error naming the option. Decimal only,
 * as the integers are: strtod's leading white space, hex floats (0x10), inf and nan are refused. */
static inline double fc_cli_double(const char *opt, const char *s, double lo, double hi) {
  char *end;
  errno = 0;
  const int decimal = s && s[strspn(s, "0123456789+-.eE")] == '\0';
  double v = s && *s && decimal ? strtod(s, &end) : NAN;
  if (!s || !*s || !decimal || *end || errno == ERANGE || !isfinite(v) || v < lo || v > hi)
    fc_cli_usage_error("invalid value '%s' for --%s (want a number in %g..%g)", s ? s : "", opt, lo,
                       hi);
  return v;
}

/* A comma list (cache-bench -t 1,2, loader-bench --sweep workers=1,2): each item through fn, in
 * order, with opt passed on for its messages. An empty item (1,,2, a leading or trailing comma)
 * or an empty list is a usage error, never skipped: a typo, or an unset variable in -t 1,$T,
 * would otherwise run another set of cells than the one asked for. */
static inline void fc_cli_list(const char *opt, const char *arg,
                               void (*fn)(const char *opt, const char *item, void *ctx),
                               void *ctx) {
  if (!*arg) fc_cli_usage_error("invalid value '' for --%s (an empty list)", opt);
  char *buf = strdup(arg);
  if (!buf) fc_cli_usage_error("--%s: %s", opt, strerror(ENOMEM));
  for (char *item = buf, *next;; item = next + 1) {
    next = strchr(item, ',');
    if (next) *next = '\0';
    if (!*item) {
      free(buf);
      fc_cli_usage_error("invalid value '%s' for --%s (an empty item in the list)", arg, opt);
    }
    fn(opt, item, ctx);
    if (!next) break;
  }
  free(buf);
}

/* --manifest-format's value (auto, ljspeech, kaldi, jsonl, list, tsv and their aliases); a usage
 * error (exit 2) for another. */
static inline fc_manifest_format fc_cli_manifest_format(const char *s) {
  int f = fc_manifest_format_from_name(s);
  if (f < 0)
    fc_cli_usage_error(
        "invalid value '%s' for --manifest-format (want one of auto, ljspeech, kaldi, "
        "jsonl, list, tsv)",
        s);
  return (fc_manifest_format)f;
}

/* Boolean: 1/0, true/false, yes/no, on/off. */
static inline int fc_cli_bool(const char *opt, const char *s) {
  const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
  for (int i = 0; i < 4; i++) {
    if (strcmp(s, yes[i]) == 0) return 1;
    if (strcmp(s, no[i]) == 0) return 0;
  }
  fc_cli_usage_error("invalid value '%s' for --%s (want true or false)", s, opt);
  return 0;
}

/* ---- how many failed inputs a job tolerates: --max-failed N or P% --------------------------- */
typedef struct fc_cli_max_failed {
  int percent; /* 0: at most n inputs; 1: at most pct % of the inputs */
  uint64_t n;
  double pct;
  char text[32]; /* as given, for messages */
} fc_cli_max_failed;

/* Parse "N" (an integer >= 0) or "P%" (a decimal number in 0..100 — digits, at most one '.' —
 * then '%'; not strtod's hex, exponents or inf); usage error otherwise. */
static inline fc_cli_max_failed fc_cli_parse_max_failed(const char *opt, const char *s) {
  fc_cli_max_failed m;
  memset(&m, 0, sizeof m);
  snprintf(m.text, sizeof m.text, "%s", s);
  size_t l = strlen(s);
  if (l > 1 && s[l - 1] == '%') {
    char num[32], *end;
    size_t digits = strspn(s, "0123456789"), frac = 0;
    if (s[digits] == '.') frac = 1 + strspn(s + digits + 1, "0123456789");
    if (l - 1 < sizeof num && digits > 0 && digits + frac == l - 1) {
      memcpy(num, s, l - 1);
      num[l - 1] = '\0';
      errno = 0;
      m.pct = strtod(num, &end);
      if (!*end && errno == 0 && m.pct >= 0 && m.pct <= 100) {
        m.percent = 1;
        return m;
      }
    }
  } else if (fc_cli_parse_u64(s, &m.n, 0) == 0) {
    return m;
  }
  fc_cli_usage_error("invalid value '%s' for --%s (want a count, or a percentage such as 1%%)", s,
                     opt);
  return m;
}

/* Are `failed` failures of `total` inputs within m? A percentage is of the inputs, rounded up: any
 * P > 0 tolerates one failure, so that a small shard is not stopped by a single bad file. */
static inline int fc_cli_failed_allowed(const fc_cli_max_failed *m, uint64_t failed,
                                        uint64_t total) {
  if (!m->percent) return failed <= m->n;
  double limit = ceil(m->pct * (double)total / 100.0 - 1e-9); /* 60% of 5 is 3, not 4 */
  return (double)failed <= limit;
}

#include "cli_failures.h" /* the failures --json lists */

/* ---- paths on the command line ------------------------------------------------------------- */
/* The value of a file option (--manifest FILE): an empty one ("$MANIFEST" unset) is a usage
 * error said as such, not "cannot open" under an empty name. Returns value. */
static inline const char *fc_cli_path(const char *opt, const char *value) {
  if (!value[0])
    fc_cli_usage_error("--%s '' names no file (an empty path: an unset variable?)", opt);
  return value;
}

/* The value of an output file option (--svg FILE): as fc_cli_path, and a file in a folder that
 * is not there, or a FILE that is a directory, is a usage error before the run (which may take
 * minutes), not a write that fails after it; so is '-' (it wrote a file named '-'), and a folder
 * where no file can be made (fc_cli_out_probe: one this user may not write, a read-only mount). */
static inline const char *fc_cli_out_path(const char *opt, const char *value) {
  fc_cli_path(opt, value);
  if (strcmp(value, "-") == 0) /* by the convention stdout, which carries the report here */
    fc_cli_usage_error(
        "--%s -: '-' would be stdout, which carries the report; give a file name "
        "(./- for a file named so)",
        opt);
  const char *slash = strrchr(value, '/');
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == value ? 1 : slash - value) : 1,
           slash ? value : ".");
  struct stat st;
  int err = stat(dir, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  /* a FILE that is a directory would fail only when written, after the work */
  if (!err && stat(value, &st) == 0 && S_ISDIR(st.st_mode)) err = EISDIR;
  if (!err) err = fc_cli_out_probe(value);
  if (err)
    fc_cli_usage_error("--%s %s: cannot be written there: %s", opt,
                       fc_cli_quoted(value, dir, sizeof dir), strerror(err));
  return value;
}

#include "cli_manifest.h" /* a manifest that is none: UTF-16, binary, a JSON document */

/* The store of -o: an empty one ("$CACHE" with CACHE unset) is a usage error said as such. NULL
 * (not given) is left to the caller. Returns out. */
static inline const char *fc_cli_out_store(const char *out) {
  if (out && !out[0])
    fc_cli_usage_error("-o '' names no store (an empty path: an unset variable?)");
  if (out && out[0] == '-') { /* -o $UNSET --manifest m.csv: the next option taken for the store */
    char q[4 * 4096 + 8];
    const char *name = fc_cli_quoted(out, q, sizeof q);
    fc_cli_usage_error(
        "-o %s: a store name that begins with '-' looks like an option (-o without "
        "its value? an unset variable?): name such a store ./%s",
        name, name);
  }
  return fc_cli_out_store_eq(out);
}

/* STORE words argv[first..argc): an empty one ("$CACHE" with CACHE unset) is a usage error said
 * as such, not an open's "Invalid argument" under an empty name. */
static inline void fc_cli_no_empty_stores(int argc, char **argv, int first) {
  for (int i = first; i < argc; i++)
    if (!argv[i][0]) fc_cli_usage_error("'' names no STORE (an empty path: an unset variable?)");
}

/* ---- a new store's directory --------------------------------------------------------------- */
/* A tool about to create a store in dir: refuse (1, a message naming what is there said) when dir
 * is a non-empty directory that holds no store (no data.mdb, no split marker), unless force (the
 * option `force_opt` said "yes, here"). Missing or empty directories, existing stores and the
 * leftovers of a job killed while creating one pass. */
static inline int fc_cli_new_store_dir_refused(const char *dir, int force, const char *force_opt) {
  struct stat st;
  char p[4096];
  if (force || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0; /* the open says what is wrong */
  static const char *const marks[] = {"data.mdb", "featcache-split"};
  for (int i = 0; i < 2; i++)
    if (snprintf(p, sizeof p, "%s/%s", dir, marks[i]) < (int)sizeof p && stat(p, &st) == 0)
      return 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  size_t n = 0;
  char first[256] = "";
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    /* what a job killed while creating a store leaves: a split marker's temporary file, an LMDB
     * lock file; the next writer creates the store there */
    if (strncmp(e->d_name, ".featcache-split.", 17) == 0 || strcmp(e->d_name, "lock.mdb") == 0)
      continue;
    if (!n++) snprintf(first, sizeof first, "%s", e->d_name);
  }
  closedir(d);
  if (!n) return 0;
  /* Another job may have been creating a store here while we looked (featurize or tokenize
   * started together on a new directory): whatever it made comes after its data.mdb or its split
   * marker, so if either exists now, this is a store, which the open decides about. */
  for (int i = 0; i < 2; i++)
    if (snprintf(p, sizeof p, "%s/%s", dir, marks[i]) < (int)sizeof p && stat(p, &st) == 0)
      return 0;
  fc_cli_warn(dir,
              "not a featcache store, and not empty (%zu entr%s, e.g. %s): a new store goes into a "
              "new or empty directory; --%s creates it here",
              n, n == 1 ? "y" : "ies", first, force_opt);
  return 1;
}

/* The same, exiting with status 2 when refused (featurize, tokenize: before anything is read). */
static inline void fc_cli_check_new_store_dir(const char *dir, int force, const char *force_opt) {
  if (fc_cli_new_store_dir_refused(dir, force, force_opt)) exit(FC_EXIT_USAGE);
}

/* ---- signals: SIGINT/SIGTERM set a flag; the job commits finished work and exits 130/143 ---- */
static volatile sig_atomic_t fc_cli_signal;

static int fc_cli_stderr_tty; /* fc_cli_install_signals: a notice first clears a progress line */

static inline void fc_cli_signal_note(const char *msg, size_t len) {
  ssize_t w = fc_cli_stderr_tty ? write(STDERR_FILENO, "\r\033[K", 4) : 0;
  w = write(STDERR_FILENO, fc_cli_tool, strlen(fc_cli_tool));
  w = write(STDERR_FILENO, msg, len);
  (void)w;
}

/* The first SIGINT/SIGTERM sets the flag and says so; a second one (Ctrl-C again, while a worker
 * waits on a FIFO that no one writes, a hung network file system, a long file) ends the process at
 * once: its default action, so the shell sees 130/143 as for the first. Every commit is already
 * durable (a kill at any instant loses only the batch not yet committed); only async-signal-safe
 * calls. */
static inline void fc_cli_on_signal(int sig) {
  if (!fc_cli_signal) { /* said at once: the work in flight may take a while (a long file) */
    static const char note[] =
        ": interrupted: stopping after the work in flight (interrupt again to stop at once)\n";
    fc_cli_signal = sig;
    fc_cli_signal_note(note, sizeof note - 1);
    return;
  }
  static const char msg[] =
      ": interrupted again: stopping now; work committed before stays in the store\n";
  fc_cli_signal_note(msg, sizeof msg - 1);
  signal(sig, SIG_DFL);
  raise(sig); /* delivered when the handler returns (the signal is blocked in it) */
}

/* A signal the tool was started with ignored stays ignored (as shells and sort do): a job started
 * with `&` from a script, or under nohup, has SIGINT ignored on purpose, so that a Ctrl-C on the
 * terminal stops the foreground job and not it. */
static inline void fc_cli_install_signals(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  fc_cli_stderr_tty = isatty(STDERR_FILENO);
  sa.sa_handler = fc_cli_on_signal;
  sigemptyset(&sa.sa_mask);
  static const int sigs[] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; i++)
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_IGN)
      sigaction(sigs[i], &sa, NULL);
  /* Past RLIMIT_FSIZE a write fails with EFBIG instead of killing the process (SIGXFSZ's default
   * action): the store's commit fails cleanly and the tool says the file-size limit was hit. */
  signal(SIGXFSZ, SIG_IGN);
}

/* What to do after a write to a store that failed for want of room — a full disk or quota
 * (ENOSPC, EDQUOT), the file-size limit (EFBIG) — said after the error: the end of the store's
 * line; "" for any other error. What was committed stays, and a rerun stores only the rest. */
static inline const char *fc_cli_room_hint(int rc) {
  if (rc == ENOSPC || rc == EDQUOT) /* a quota: the disk has room, this user has not */
    return rc == EDQUOT ? ": make room within your quota (quota -s says it), then run again (what "
                          "was committed stays; the rerun stores only what is missing)"
                        : ": make room on the disk, then run again (what was committed stays; the "
                          "rerun stores only what is missing)";
  return rc == EFBIG ? ": raise the file-size limit (ulimit -f), then run again (what was "
                       "committed stays; the rerun stores only what is missing)"
                     : "";
}

/* Exit code for an interrupted job: 128 + signal number (130 SIGINT, 143 SIGTERM). */
static inline int fc_cli_signal_exit(void) { return 128 + (int)fc_cli_signal; }

/* Progress on stderr: forced with --progress, silenced with -q, else only on a terminal. */
static inline int fc_cli_progress_wanted(int force, int quiet) {
  if (quiet) return 0;
  if (force) return 1;
  return isatty(STDERR_FILENO);
}

/* The progress line itself. On a terminal it is redrawn in place at each update (\r, erase to the
 * end of the line). Anywhere else — a log file or a pipe, where --progress forced it — each update
 * is a plain line of its own, the first at once and then at most one every FC_CLI_PROGRESS_LOG_S
 * seconds: a log reads line by line, holds no escape codes, and a job of many batches leaves a few
 * lines in it rather than one per batch. */
#define FC_CLI_PROGRESS_LOG_S 5.0
typedef struct fc_cli_progress {
  int on; /* fc_cli_progress_wanted */
  int tty; /* stderr is a terminal: redraw in place */
  int shown; /* a line drawn on the terminal and not ended: the next output clears or ends it */
  double last; /* CLOCK_MONOTONIC seconds of the last plain line; < 0 before the first */
} fc_cli_progress;

static inline void fc_cli_progress_init(fc_cli_progress *p, int force, int quiet) {
  p->on = fc_cli_progress_wanted(force, quiet);
  p->tty = isatty(STDERR_FILENO);
  p->shown = 0;
  p->last = -1;
}

__attribute__((format(printf, 2, 3))) static inline void fc_cli_progress_show(fc_cli_progress *p,
                                                                              const char *fmt,
                                                                              ...) {
  if (!p->on) return;
  fc_cli_flush_stdout(); /* the reports before it first, as for a message */
  if (p->tty) {
    fputs("\r\033[K", stderr);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (p->last >= 0 && now - p->last < FC_CLI_PROGRESS_LOG_S) return;
    p->last = now;
  }
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (p->tty)
    p->shown = 1;
  else
    fputc('\n', stderr);
}

/* Before another line on stderr: the progress line on the terminal is erased (the next update
 * draws it again). */
static inline void fc_cli_progress_clear(fc_cli_progress *p) {
  if (p->shown) fputs("\r\033[K", stderr);
  p->shown = 0;
}

/* At the end of the job: the last progress line on the terminal stays, ended by a newline. */
static inline void fc_cli_progress_end(fc_cli_progress *p) {
  if (p->shown) fputc('\n', stderr);
  p->shown = 0;
}

static inline void fc_cli_version(void) {
#ifdef FC_VERSION_STRING
  printf("%s (featcache) %s\n", fc_cli_tool, FC_VERSION_STRING);
#else
  printf("%s (featcache)\n", fc_cli_tool);
#endif
}

#include "cli_stores.h" /* STORE words: split stores, a store given twice */

#endif
