/* The manifest readers' shared part: the lines of a file (getline, CRLF and a leading BOM
 * stripped), ids made from file names, the item list with its duplicate check, and the items of
 * paths given as arguments or one per line of a stream (fc_items_from_paths, _stream). The
 * formats themselves are manifest.c's. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "featcache/fc_format.h"
#include "formats/common/args.h"
#include "formats/common/alloc.h"
#include "formats/manifest_int.h"

/* ---- small string helpers ------------------------------------------------------------------- */
char *mf_dup_range(const char *s, size_t n) {
  char *out = fc_malloc(n + 1);
  if (!out) return NULL;
  memcpy(out, s, n);
  out[n] = '\0';
  return out;
}

/* Id from a path: file name without directory and (last) extension. "a/b.c.wav" -> "b.c". Dots
 * that begin the name are part of it, never an extension's, as Python's os.path.splitext and
 * pathlib's stem take them: ".hidden" and "..wav" are their own ids (the latter was "."). */
char *mf_id_from_path(const char *path, size_t len) {
  const char *end = path + len, *start = path;
  /* Slashes that end the path name no other file (a folder: "corpus/" is "corpus", as basename
   * says), so they are no part of the id; a path of slashes alone is "/". */
  while (end > path + 1 && end[-1] == '/') end--;
  for (const char *p = path; p < end; p++)
    if (*p == '/' && p + 1 < end) start = p + 1;
  const char *dot = NULL, *p = start;
  while (p < end && *p == '.') p++; /* ".hidden", "..wav", "..": no extension */
  for (; p < end; p++)
    if (*p == '.') dot = p;
  /* A name not in UTF-8 (Latin-1): each byte that is no part of a UTF-8 character becomes the four
   * characters \xNN (lower-case hex), as cache-verify --json prints it: the id is valid UTF-8. A
   * backslash that the name's own "x" and two hex digits follow becomes \x5c, so that every \xNN
   * of such an id is an escape: "a\xe9.wav" spelled with a backslash is a\x5cxe9, the Latin-1
   * name a\xe9 (two different files, two ids), and the name is its id with the escapes undone. */
  const char *s = start;
  size_t n = (size_t)((dot ? dot : end) - s);
  if (fc_utf8_valid(s, n) && !memmem(s, n, "\\x", 2)) return mf_dup_range(s, n);
  char *out = fc_malloc(4 * n + 1), *o = out;
  if (!out) return NULL;
  for (size_t i = 0; i < n;) {
    if (n - i >= 4 && s[i] == '\\' && s[i + 1] == 'x' && isxdigit((unsigned char)s[i + 2]) &&
        isxdigit((unsigned char)s[i + 3])) {
      memcpy(o, "\\x5c", 4);
      o += 4;
      i++;
      continue;
    }
    size_t k = 1;
    while (k <= 4 && i + k <= n && !fc_utf8_valid(s + i, k)) k++;
    if (k > 4 || i + k > n) { /* a stray byte */
      o += snprintf(o, 5, "\\x%02x", (unsigned char)s[i++]);
      continue;
    }
    memcpy(o, s + i, k);
    o += k;
    i += k;
  }
  *o = '\0';
  return out;
}

/* ---- the item list ---------------------------------------------------------------------------- */
struct arena_chunk {
  struct arena_chunk *next;
  char bytes[];
};

/* A copy of s, and of t after it (s's NUL, then t's bytes and NUL) when t is not NULL. */
static const char *arena_copy(arena *a, const char *s, const char *t) {
  size_t sn = strlen(s) + 1, n = sn + (t ? strlen(t) + 1 : 0);
  if (!a->head || a->used + n > a->cap) {
    size_t cap = n > 65536 ? n : 65536;
    struct arena_chunk *c = fc_malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = a->head;
    a->head = c;
    a->used = 0;
    a->cap = cap;
  }
  char *p = a->head->bytes + a->used;
  memcpy(p, s, sn);
  if (t) memcpy(p + sn, t, n - sn);
  a->used += n;
  return p;
}

void mf_arena_free(arena *a) {
  while (a->head) {
    struct arena_chunk *c = a->head;
    a->head = c->next;
    free(c);
  }
}

static uint64_t hash_str(const char *s) { /* FNV-1a: enough for a set, no dependency */
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* 1 if id is in the set (*first: the path it came with, or ""), 0 if added, -ENOMEM. */
static int id_set_insert(list_builder *b, const char *id, const char *path, const char **first) {
  if (2 * (b->set_count + 1) > b->set_cap) {
    size_t ncap = b->set_cap ? 2 * b->set_cap : 64;
    const char **nset = fc_calloc(ncap, sizeof *nset);
    if (!nset) return -ENOMEM;
    for (size_t i = 0; i < b->set_cap; i++) {
      if (!b->set[i]) continue;
      size_t j = hash_str(b->set[i]) & (ncap - 1);
      while (nset[j]) j = (j + 1) & (ncap - 1);
      nset[j] = b->set[i];
    }
    free(b->set);
    b->set = nset;
    b->set_cap = ncap;
  }
  size_t j = hash_str(id) & (b->set_cap - 1);
  while (b->set[j]) {
    if (strcmp(b->set[j], id) == 0) {
      *first = b->set[j] + strlen(b->set[j]) + 1;
      return 1;
    }
    j = (j + 1) & (b->set_cap - 1);
  }
  if (!(id = arena_copy(b->ids, id, path ? path : ""))) return -ENOMEM;
  b->set[j] = id;
  b->set_count++;
  return 0;
}

fc_item *mf_new_item(list_builder *b, size_t line) {
  fc_item_list *l = b->out;
  if (l->count == b->cap) {
    size_t ncap = b->cap ? 2 * b->cap : 64;
    fc_item *n = fc_realloc(l->items, ncap * sizeof *n);
    if (!n) return NULL;
    l->items = n;
    b->cap = ncap;
  }
  fc_item *it = &l->items[l->count++];
  memset(it, 0, sizeof *it);
  it->line = line;
  return it;
}

void mf_item_clear(fc_item *it) {
  free(it->id);
  free(it->path);
  free(it->text);
  free(it->text_raw);
  free(it->text_norm);
  free(it->why);
  free(it->id_field);
  memset(it, 0, sizeof *it);
}

/* Mark an item bad with a formatted reason. Returns 0, or -ENOMEM. */
int mf_item_fail(fc_item *it, int err, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  it->err = err;
  free(it->why);
  it->why = fc_strdup(buf);
  return it->why ? 0 : -ENOMEM;
}

int mf_is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t') return 0;
  return 1;
}

/* Check the id of a filled item and its uniqueness. Returns 0 or -ENOMEM (item errors set err). */
int mf_item_finish(list_builder *b, fc_item *it) {
  if (it->err) return 0;
  if (!it->id) return mf_item_fail(it, FC_EMANIFEST, "missing id");
  size_t n = strlen(it->id);
  int rc = fc_id_check(it->id, n);
  if (rc == FC_EUTF8) return mf_item_fail(it, FC_EUTF8, "id is not valid UTF-8");
  if (rc != 0) {
    if (n == 0) return mf_item_fail(it, FC_EMANIFEST, "empty id");
    if (n > FC_ID_MAX)
      return mf_item_fail(it, FC_EFORMAT, "id is %zu bytes, longer than the %d allowed%s", n,
                          FC_ID_MAX,
                          it->path && strstr(it->id, "\\x") /* made from a file name */
                              ? " (each byte of the file name that is not UTF-8 is 4 in the id, "
                                "as \\xNN: give the file an id in a manifest, e.g. a wav.scp)"
                              : "");
    return mf_item_fail(it, FC_EFORMAT, "id contains a %s", /* fc_id_check: no NUL in a string */
                        strchr(it->id, '\n') ? "newline" : "carriage return");
  }
  if (mf_is_blank(it->id, n)) /* " |text": an id no one can tell from none */
    return mf_item_fail(it, FC_EMANIFEST, "id is only spaces or tabs");
  const char *first = "";
  rc = id_set_insert(b, it->id, it->path, &first);
  if (rc < 0) return rc;
  if (rc == 1) { /* an id that holds a tab or an escape, quoted as the tools quote names */
    char q[4 * FC_ID_MAX + 3], pq[900], fq[960] = "";
    if (first[0] && it->path && strcmp(first, it->path) != 0) { /* two files, one id: name both */
      struct stat a, c; /* one file under two spellings (overlapping globs) is not two files */
      const int same = stat(first, &a) == 0 && stat(it->path, &c) == 0 && a.st_dev == c.st_dev &&
                       a.st_ino == c.st_ino;
      fc_quote_name(first, pq, sizeof pq);
      snprintf(fq, sizeof fq,
               same ? " (the same file as %s, given twice: leave one out)" : " (also the id of %s)",
               pq);
    }
    if (fc_quote_name(it->id, q, sizeof q) > n)
      return mf_item_fail(it, FC_EDUPLICATE, "duplicate id %s%s", q, fq);
    return mf_item_fail(it, FC_EDUPLICATE, "duplicate id '%s'%s", it->id, fq);
  }
  return 0;
}

void mf_builder_done(list_builder *b) {
  free(b->set);
  b->set = NULL;
}

void fc_item_list_free(fc_item_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->count; i++) mf_item_clear(&l->items[i]);
  free(l->items);
  l->items = NULL;
  l->count = 0;
}

/* A path list's line without the spaces and tabs that end it, as wav.scp's path column. */
size_t mf_trim_end(const char *line, size_t n) {
  while (n && (line[n - 1] == ' ' || line[n - 1] == '\t')) n--;
  return n;
}

/* ---- line reading ----------------------------------------------------------------------------- */
/* Strip "\n", "\r\n" (and a lone trailing "\r"). */
static size_t chomp(char *line, size_t n) {
  if (n && line[n - 1] == '\n') n--;
  if (n && line[n - 1] == '\r') n--;
  line[n] = '\0';
  return n;
}

/* getline's, keeping at most max bytes of the line (the rest read and dropped); *whole its
 * length with its LF. A line that reaches FC_MANIFEST_LINE_MAX bytes without its LF is not read
 * on: -1 with errno FC_ETOOLONG. */
static ssize_t bounded_line(FILE *f, char **buf, size_t *cap, size_t max, size_t *whole) {
  size_t n = 0, kept = 0;
  int c;
  flockfile(f);
  while ((c = getc_unlocked(f)) != EOF) {
    if (++n >= FC_MANIFEST_LINE_MAX && c != '\n') {
      funlockfile(f);
      *whole = n;
      errno = FC_ETOOLONG;
      return -1;
    }
    if (kept < max) {
      if (kept + 2 > *cap) { /* room for c and the NUL, grown as getline grows it */
        size_t want = *cap ? *cap * 2 : 128;
        if (want > max + 1) want = max + 1;
        if (want < kept + 2) want = kept + 2;
        char *grown = fc_realloc(*buf, want);
        if (!grown) {
          funlockfile(f);
          errno = ENOMEM;
          return -1;
        }
        *buf = grown;
        *cap = want;
      }
      (*buf)[kept++] = (char)c;
    }
    if (c == '\n') break;
  }
  funlockfile(f);
  *whole = n;
  if (!n) return -1;
  (*buf)[kept] = '\0';
  return (ssize_t)kept;
}

/* manifest_int.h: the line's length after chomp (a too-long one's kept bytes as they are), -1 at
 * EOF, -2 on a read error; the first line's UTF-8 BOM removed. */
ssize_t mf_next_line(FILE *f, char **buf, size_t *cap, int *first, size_t max, size_t *whole) {
  errno = 0;
  size_t all = 0;
  ssize_t got = bounded_line(f, buf, cap, max ? max : FC_MANIFEST_LINE_MAX, &all);
  if (whole) *whole = all;
  if (got < 0) {
    if (ferror(f)) return -2;
    if (errno == ENOMEM || errno == FC_ETOOLONG) return -2;
    return -1;
  }
  if (all > (size_t)got) { /* too long: its first max bytes as they are (no LF to remove) */
    *first = 0;
    return got;
  }
  size_t n = chomp(*buf, (size_t)got);
  if (*first) {
    *first = 0;
    if (n >= 3 && (uint8_t)(*buf)[0] == 0xEF && (uint8_t)(*buf)[1] == 0xBB &&
        (uint8_t)(*buf)[2] == 0xBF) {
      memmove(*buf, *buf + 3, n - 3 + 1);
      n -= 3;
    }
  }
  return (ssize_t)n;
}

/* CSV's quoting (pandas' to_csv, Python's csv) over a line of fields separated by sep, from state
 * in (1: inside a quoted field that an earlier line opened): 1 when the line ends inside a quoted
 * field (the line break is the field's). A quote opens a field only where the field begins; in
 * one, two quotes are one. *lead, when in is 1: the bytes before the quote that closes the field
 * an earlier line opened, n when the line does not close it. */
int mf_csv_quote_open(const char *s, size_t n, char sep, int in, size_t *lead) {
  int begins = !in;
  if (lead) *lead = n;
  for (size_t i = 0; i < n; i++) {
    if (in) {
      if (s[i] != '"') continue;
      if (i + 1 < n && s[i + 1] == '"') {
        i++;
        continue;
      }
      in = 0;
      if (lead && *lead == n) *lead = i;
      begins = 0;
    } else if (s[i] == sep) {
      begins = 1;
    } else {
      in = begins && s[i] == '"';
      begins = 0;
    }
  }
  return in;
}

/* ---- paths from arguments or a stream --------------------------------------------------------- */
static int add_path_item(list_builder *b, const char *p, size_t n, size_t line) {
  fc_item *it = mf_new_item(b, line);
  if (!it) return -ENOMEM;
  if (memchr(p, '\0', n)) /* names from `find -print0`: all of them one line */
    return mf_item_fail(
        it, FC_EMANIFEST,
        "line contains a NUL byte (paths come one per line: find -print, not -print0)");
  if (line && memchr(p, '\r', n)) /* old Mac line ends: the list is one line, as the reader says */
    return mf_item_fail(it, FC_EMANIFEST,
                        "a carriage return inside the line (CR line endings? convert them to LF)");
  if (!(it->path = mf_dup_range(p, n))) return -ENOMEM;
  if (line && mf_list_comment(it->path, it->path)) { /* a list's line, not an argument */
    free(it->path);
    it->path = NULL;
    return mf_item_fail(it, FC_EMANIFEST, MF_COMMENT_WHY);
  }
  if (!(it->id = mf_id_from_path(p, n))) return -ENOMEM;
  return mf_item_finish(b, it);
}

int mf_list_comment(const char *line, const char *path) {
  struct stat st;
  return line[strspn(line, " \t")] == '#' && stat(path, &st) != 0 && errno == ENOENT;
}

int fc_items_from_paths(const char *const *paths, size_t n, fc_item_list *out) {
  FC_ARGS(out, paths || !n);
  memset(out, 0, sizeof *out);
  out->format = FC_MANIFEST_LIST;
  FC_ARGS_EACH(paths, n);
  arena ids = {0};
  list_builder b = {.out = out, .ids = &ids};
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *p = paths[i] ? paths[i] : "";
    if (p[0] == '\0') {
      fc_item *it = mf_new_item(&b, 0);
      rc = it ? mf_item_fail(it, FC_EMANIFEST, "empty path") : -ENOMEM;
      continue;
    }
    rc = add_path_item(&b, p, strlen(p), 0);
  }
  mf_builder_done(&b);
  mf_arena_free(&ids);
  if (rc < 0) {
    fc_item_list_free(out);
    return ENOMEM;
  }
  return 0;
}

int fc_items_from_stream(void *stdio_file, fc_item_list *out) {
  FC_ARGS(out);
  memset(out, 0, sizeof *out);
  out->format = FC_MANIFEST_LIST;
  FILE *f = stdio_file ? (FILE *)stdio_file : stdin;
  arena ids = {0};
  list_builder b = {.out = out, .ids = &ids};
  char *buf = NULL;
  size_t cap = 0, lineno = 0;
  int first = 1, rc = 0;
  for (;;) {
    ssize_t got = mf_next_line(f, &buf, &cap, &first, 0, NULL);
    if (got == -1) break;
    if (got == -2) {
      rc = errno ? errno : EIO;
      break;
    }
    lineno++;
    if (mf_is_blank(buf, (size_t)got)) continue;
    if (add_path_item(&b, buf, mf_trim_end(buf, (size_t)got), lineno) < 0) {
      rc = ENOMEM;
      break;
    }
  }
  free(buf);
  mf_builder_done(&b);
  mf_arena_free(&ids);
  if (rc) fc_item_list_free(out);
  return rc;
}
