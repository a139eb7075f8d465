/* The check macro of the C tests: on failure, print file:line, the expression and a got/expected
 * message (printf-style, optional), count it, and go on; main returns CHECK_RESULT(name). */
#ifndef FC_TESTS_CHECK_H
#define FC_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int failures;

__attribute__((format(printf, 4, 5))) static void fc_check_fail(const char *file, int line,
                                                                const char *expr, const char *fmt,
                                                                ...) {
  va_list ap;
  failures++;
  fprintf(stderr, "%s:%d: FAIL %s:", file, line, expr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* CHECK(cond) or CHECK(cond, "got %d, want %d", got, want) */
#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) fc_check_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__); \
  } while (0)

/* 0 when every check passed (prints "name: ok"), else 1 with a count on stderr. */
static inline int fc_check_result(const char *name) {
  if (failures)
    fprintf(stderr, "%s: %d failure(s)\n", name, failures);
  else
    printf("%s: ok\n", name);
  return failures ? 1 : 0;
}

#endif
