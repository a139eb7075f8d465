/* Internal: jansson in the library, and its failures for want of memory.
 * In a fault-injection build jansson allocates through the `alloc` fault site (fault.c hands it
 * fc_malloc with json_set_alloc_funcs when the library loads), so that its allocations count
 * down with ours; a release build leaves jansson's allocator alone. Inline, like alloc.h, so
 * that every component has it without exporting a symbol.
 *
 * jansson's builders (json_object, json_string, json_object_set_new, json_dumps) fail cleanly:
 * NULL, or -1 from json_object_set_new, which also takes a NULL value; callers check every one.
 * Its parser does not: jansson 2.14 (and its master, 2026) ignores a failure to grow the buffer
 * of the token it is reading (lex_save drops strbuffer_append_byte's -1: jansson issue #362,
 * pull requests #735 and #747), so the token loses a byte and the lexer then walks past its
 * buffer (a crash, found by the `alloc` loops) or asserts. So a parse runs with the countdown
 * held (fc_fault_hold): its allocations are neither counted nor failed. A real lack of memory
 * can still meet that bug; what can be told apart is told: jansson does not say it ran out of
 * memory (an empty error text, or "invalid token" when a string could not be copied), so
 * these wrappers look at errno (ENOMEM, malloc's), after a NULL and after a success too (a
 * token that lost a byte parses into a wrong value). */
#ifndef FC_JSON_H
#define FC_JSON_H

#include <errno.h>
#include <jansson.h>

#include "formats/fault.h"

/* json_loadb that says why it failed: NULL with *nomem = 1 when jansson ran out of memory (err
 * is then meaningless), NULL with *nomem = 0 when the JSON is bad (err says where and why). */
static inline json_t *fc_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err,
                                    int *nomem) {
  int saved = errno;
  errno = 0;
  fc_fault_hold(1);
  json_t *o = json_loadb(buf, len, flags, err);
  fc_fault_hold(0);
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
  fc_fault_hold(1);
  json_t *o = json_load_file(path, flags, err);
  fc_fault_hold(0);
  *nomem = errno == ENOMEM;
  if (*nomem) {
    json_decref(o);
    return NULL;
  }
  return o;
}

#endif
