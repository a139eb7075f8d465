/* Internal: the one-line reasons that functions hand back through (char *why, size_t why_len).
 * Inline, so that every library component has it without exporting a symbol. */
#ifndef FC_WHY_H
#define FC_WHY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "featcache/fc_format.h" /* fc_quote_name */

/* Format a reason into why (NULL or why_len 0: nothing). Not part of the public API. */
__attribute__((format(printf, 3, 4))) static inline void fc_why(char *why, size_t why_len,
                                                                const char *fmt, ...) {
  if (!why || !why_len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
}

/* A name (a store, a file, an id) inside a reason, as the tools print names: quoted with C escapes
 * when it holds a control character, a quote, a backslash or a byte that is not UTF-8
 * (fc_quote_name), into q (cut short past its size); returns q->s. n: the name's length, or
 * SIZE_MAX when it is NUL-terminated (a name inside a value is not). */
typedef struct fc_why_name_buf {
  char s[1024];
} fc_why_name_buf;
static inline const char *fc_why_name(const char *name, size_t n, fc_why_name_buf *q) {
  char copy[256];
  if (n != (size_t)-1) { /* a NUL inside ends it, as for any name */
    if (n >= sizeof copy) n = sizeof copy - 1;
    memcpy(copy, name, n);
    copy[n] = '\0';
    name = copy;
  }
  fc_quote_name(name, q->s, sizeof q->s);
  return q->s;
}
/* fc_why_name of a NUL-terminated name, into a buffer that lives to the end of the block. */
#define FC_WHY_NAME(name) fc_why_name((name), SIZE_MAX, &(fc_why_name_buf){{0}})

#endif
