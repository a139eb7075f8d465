/* See why.h. */
#include "why.h"

#include <stdarg.h>
#include <stdio.h>

void fc_why(char *why, size_t why_len, const char *fmt, ...) {
  if (!why || !why_len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
}
