/* Internal: the one-line reasons that functions hand back through (char *why, size_t why_len).
 * Inline, so that every library component has it without exporting a symbol. */
#ifndef FC_WHY_H
#define FC_WHY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format a reason into why (NULL or why_len 0: nothing). Not part of the public API. */
__attribute__((format(printf, 3, 4))) static inline void fc_why(char *why, size_t why_len,
                                                                const char *fmt, ...) {
  if (!why || !why_len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
}

#endif
