/* The manifest readers' shared part (manifest_items.c), what manifest.c builds on: the lines of a
 * file, ids made from file names, the item list and its duplicate check. Not the ABI. */
#ifndef FC_MANIFEST_INT_H
#define FC_MANIFEST_INT_H

#include <stdio.h>
#include <sys/types.h>

#include "featcache/fc_manifest.h"

/* Copies of strings in chunks (the ids a reader has seen, for the duplicate check). */
typedef struct arena {
  struct arena_chunk *head;
  size_t used, cap;
} arena;
void mf_arena_free(arena *a);

/* Items being collected into out, with the set of the ids seen so far. */
typedef struct list_builder {
  fc_item_list *out;
  size_t cap;
  /* Open-addressing set of valid ids, for duplicate detection: pointers into the items, or into
   * ids (a reader's: its items do not stay). */
  const char **set;
  size_t set_cap, set_count;
  arena *ids;
} list_builder;

/* A new, zeroed item at the end of b->out, of that line; NULL without the memory. */
fc_item *mf_new_item(list_builder *b, size_t line);
/* Free an item's strings and zero it. */
void mf_item_clear(fc_item *it);
/* Mark an item bad with a formatted reason. Returns 0, or -ENOMEM. */
int mf_item_fail(fc_item *it, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Check the id of a filled item and its uniqueness. Returns 0 or -ENOMEM (item errors set err). */
int mf_item_finish(list_builder *b, fc_item *it);
/* A line whose first non-blank byte is '#' (a hand-written manifest's comment): no manifest holds
 * comments, and one would be an utterance ('# speaker one|...'), a file ('# my list') or an id '#'.
 * It fails with this reason and no id (no failure record); a path list's line that names a file
 * (one whose name begins with '#') is a path still (mf_list_comment). */
#define MF_COMMENT_WHY \
  "a comment ('#' begins the line): manifests hold none; remove it: grep -v '^#'"
/* 1 when a path list's line (path: it joined to its folder) is such a comment: it begins with '#'
 * and names no file. */
int mf_list_comment(const char *line, const char *path);
/* Free the id set (the ids' copies are the arena's). */
void mf_builder_done(list_builder *b);

/* A malloc'ed copy of n bytes of s, NUL-terminated; NULL without the memory. */
char *mf_dup_range(const char *s, size_t n);
/* The id a file name gives (path's len bytes): its name without directory and last extension,
 * escaped where it is not UTF-8 (manifest_items.c says how). Malloc'ed; NULL without the memory. */
char *mf_id_from_path(const char *path, size_t len);
/* 1 when the n bytes of s are only spaces and tabs (or none). */
int mf_is_blank(const char *s, size_t n);
/* n without the spaces and tabs that end line (a path list's line, as wav.scp's path column). */
size_t mf_trim_end(const char *line, size_t n);
/* Read one line into *buf (getline's); its length without LF or CRLF, -1 at EOF, -2 on a read
 * error (errno set). On the first line (*first set, then cleared) a UTF-8 BOM is removed. max > 0:
 * at most max bytes of it are kept (the rest is read and dropped: memory stays max whatever the
 * line), and *whole (when not NULL) is the line's length with its LF; over max, the line is too
 * long and *buf holds its first max bytes (the length returned). Any line that reaches
 * FC_MANIFEST_LINE_MAX bytes without its LF: -2 with errno FC_ETOOLONG, the reading stopped. */
ssize_t mf_next_line(FILE *f, char **buf, size_t *cap, int *first, size_t max, size_t *whole);
/* CSV's quoting (pandas' to_csv, Python's csv) over a line of n bytes, fields separated by sep,
 * from state in (1: inside a quoted field an earlier line opened): 1 when the line ends inside a
 * quoted field. *lead (may be NULL), when in is 1: the bytes before the quote that closes that
 * field, n when the line does not close it. */
int mf_csv_quote_open(const char *s, size_t n, char sep, int in, size_t *lead);
/* A JSON line's NeMo "offset" and "duration" (root: its object) into it->offset and ->duration
 * (manifest_segment.c): a number of seconds, or a string that reads whole as one ("3.2"); null or
 * absent is none. Another value, a junk string ("3.2s"), a negative fails the item naming the
 * field. Returns 0, or -ENOMEM. */
struct json_t;
int mf_json_segment(fc_item *it, const struct json_t *root);

/* What a JSON value is, for a message of a field that wants another kind: "a string (\"2.5s\")",
 * "a real number (1.5)", "a boolean", "null", ... (into buf when it holds a value's text). */
const char *mf_json_kind(const struct json_t *v, char *buf, size_t n);

#endif
