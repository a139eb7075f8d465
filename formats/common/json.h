/* Internal: jansson in the library, and its failures for want of memory.
 * In a fault-injection build jansson allocates through the `alloc` fault site (fault.c hands it
 * fc_malloc with json_set_alloc_funcs when the library loads), so that its allocations count
 * down with ours; a release build leaves jansson's allocator alone. Inline, like alloc.h, so
 * that every component has it without exporting a symbol.
 *
 * jansson's builders (json_object, json_string, json_object_set_new) fail cleanly: NULL, or -1
 * from json_object_set_new, which also takes a NULL value; callers check every one. Its writer
 * does not: jansson 2.14 (and its master) ignores a failure to write an object's key (do_dump
 * drops dump_string's -1: jansson issue #655, pull request #649), and json_dumps returns JSON
 * with the key missing ('{"a":1,:2}'), as the `alloc` loops found in a stored token config. So
 * the library writes JSON with fc_json_dumps, through a callback that remembers any failure.
 * Its parser does not: jansson 2.14 (and its master, 2026) ignores a failure to grow the buffer
 * of the token it is reading (lex_save drops strbuffer_append_byte's -1: jansson issue #362,
 * pull requests #735 and #747), so the token loses a byte and the lexer then walks past its
 * buffer (a crash, found by the `alloc` loops) or asserts. So a parse runs with the countdown
 * held (fault_hold): its allocations are neither counted nor failed. A real lack of memory
 * can still meet that bug; what can be told apart is told: jansson does not say it ran out of
 * memory (an empty error text, or "invalid token" when a string could not be copied), so
 * these wrappers look at errno (ENOMEM, malloc's), after a NULL and after a success too (a
 * token that lost a byte parses into a wrong value). */
#ifndef FC_JSON_H
#define FC_JSON_H

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "featcache/fc_format.h" /* fc_quote_name */
#include "formats/common/alloc.h"
#include "formats/common/fault.h"

/* jansson's reason (err->text), whose "near '...'" is the input's own bytes: a control character,
 * a hidden one or a byte that is no part of a UTF-8 character written as fc_quote_name writes it
 * (\033, \u009b, \xe9), so that none reaches a terminal or splits a message; quotes and
 * backslashes stay as jansson wrote them. Into buf (4 x the text fits); returns buf. */
static inline const char *fc_json_error_text(const json_error_t *err, char *buf, size_t len) {
  const unsigned char *p = (const unsigned char *)err->text;
  size_t o = 0, k;
  uint32_t c;
  if (!len) return "";
  for (; *p && o + 8 < len; p += k) {
    k = fc_quote_utf8_len_(p, &c);
    if (k && (!fc_quote_special_(c) || c == '"' || c == '\\')) {
      memcpy(buf + o, p, k);
      o += k;
      continue;
    }
    char one[5] = {0}, q[12];
    k = k ? k : 1;
    memcpy(one, p, k);
    size_t n = fc_quote_name(one, q, sizeof q); /* the character between its quotes */
    memcpy(buf + o, q + 1, n - 2);
    o += n - 2;
  }
  buf[o] = '\0';
  return buf;
}

/* json_loadb that says why it failed: NULL with *nomem = 1 when jansson ran out of memory (err
 * is then meaningless), NULL with *nomem = 0 when the JSON is bad (err says where and why). */
static inline json_t *fc_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err,
                                    int *nomem) {
  int saved = errno;
  errno = 0;
  fault_hold(1);
  json_t *o = json_loadb(buf, len, flags, err);
  fault_hold(0);
  *nomem = errno == ENOMEM;
  if (*nomem) {
    json_decref(o);
    return NULL;
  }
  errno = saved;
  return o;
}

/* json_load_file, the same way (a file that cannot be opened: NULL, *nomem 0, errno says why). */
static inline json_t *fc_json_load_file(const char *path, size_t flags, json_error_t *err,
                                        int *nomem) {
  errno = 0;
  fault_hold(1);
  json_t *o = json_load_file(path, flags, err);
  fault_hold(0);
  *nomem = errno == ENOMEM;
  if (*nomem) {
    json_decref(o);
    return NULL;
  }
  return o;
}

typedef struct fc_json_buf {
  char *p;
  size_t len, cap;
  int failed; /* a write failed: whatever jansson returns, the text is not whole */
} fc_json_buf;

static inline int fc_json_buf_put(const char *s, size_t n, void *ud) {
  fc_json_buf *b = (fc_json_buf *)ud;
  if (b->failed) return -1;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = (char *)fc_realloc(b->p, cap);
    if (!p) {
      b->failed = 1;
      return -1;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

/* json_dumps (the same bytes) that cannot return a text with a part missing: a NUL-terminated
 * string the caller frees, or NULL with *nomem = 1 for want of memory (0: jansson refused the
 * value, e.g. a loop). */
static inline char *fc_json_dumps(const json_t *j, size_t flags, int *nomem) {
  fc_json_buf b = {NULL, 0, 0, 0};
  errno = 0;
  int rc = json_dump_callback(j, fc_json_buf_put, &b, flags);
  *nomem = b.failed || errno == ENOMEM;
  if (rc || *nomem || !b.p) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

/* The fields in which JSON objects a and b differ (two configs), as the tools say them: a's
 * fields in a's order, then those only b has, each unless skip(key) (skip may be NULL): "KEY A"
 * appended to mine and "B" to theirs, ", " between them, "none" for the value of a field an
 * object lacks ("?" for one that could not be written out), at most max fields, then ", ..." after
 * mine. What does not fit a buffer is cut off. Returns the number of fields said. */
static inline int fc_json_diff_lists(json_t *a, json_t *b, int (*skip)(const char *key), int max,
                                     char *mine, size_t mine_len, char *theirs, size_t theirs_len) {
  int said = 0;
  for (int pass = 0; pass < 2; pass++) { /* a's fields, then those only b has */
    const char *key;
    json_t *val;
    json_object_foreach(pass ? b : a, key, val) {
      json_t *va = json_object_get(a, key), *vb = json_object_get(b, key);
      if ((pass && va) || (va && vb && json_equal(va, vb)) || (skip && skip(key))) continue;
      if (said == max) {
        size_t m = strlen(mine);
        if (m + 1 < mine_len) snprintf(mine + m, mine_len - m, ", ...");
        return said;
      }
      int nomem;
      char *x = va ? fc_json_dumps(va, JSON_ENCODE_ANY | JSON_COMPACT, &nomem) : NULL;
      char *y = vb ? fc_json_dumps(vb, JSON_ENCODE_ANY | JSON_COMPACT, &nomem) : NULL;
      size_t m = strlen(mine), t = strlen(theirs);
      if (m + 1 < mine_len)
        snprintf(mine + m, mine_len - m, "%s%s %s", said ? ", " : "", key,
                 x    ? x
                 : va ? "?"
                      : "none");
      if (t + 1 < theirs_len)
        snprintf(theirs + t, theirs_len - t, "%s%s", said ? ", " : "", y ? y : vb ? "?" : "none");
      free(x);
      free(y);
      said++;
    }
  }
  return said;
}

#endif
