/* The profile room's own helpers (profiler.c calls libc only; profile_compare.c also quotes names
 * with formats/common/why.h). */
#ifndef FC_PROFILE_INT_H
#define FC_PROFILE_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* A reason into why[len] (NULL or 0: nothing), printf-style. */
static inline void prof_say(char *why, size_t len, const char *fmt, ...) {
  if (!why || !len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
}

#endif
