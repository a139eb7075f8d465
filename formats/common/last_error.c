/* fc_last_error, fc_set_last_error (fc_base.h): this thread's message of the last argument the
 * library refused (formats/common/args.h). Defined once, in the core component: the mel and text
 * components set it through fc_set_last_error. */
#include "featcache/fc_base.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[256];

const char *fc_last_error(void) { return last_error; }

int fc_set_last_error(int err, const char *fmt, ...) {
  if (!fmt) return last_error[0] = '\0', err;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return err;
}
