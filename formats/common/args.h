/* Internal: a public function's check of the pointers it needs. A NULL one is refused with EINVAL
 * (or the function's nothing: NULL, 0, no effect) and this thread's message (fc_last_error,
 * fc_base.h) naming the function and the argument: "fc_store_open: out is NULL".
 *
 *   FC_ARGS(s, out);                  return EINVAL when s or out is NULL
 *   FC_ARGS_WHY(path, out);           the same, the message also into why/why_len (in scope)
 *   FC_ARGS_OR(NULL, s);              return NULL (a function that returns no code)
 *   FC_ARGS_OR(, p);                  return (a void function)
 *   FC_ARGS_EACH_WHY(dirs, n);        return EINVAL when one of dirs[0..n) is NULL:
 *                                     "fc_verify_dataset: dirs[1] is NULL" (also FC_ARGS_EACH)
 *
 * An argument is any expression that is false when refused: `data || !len` (a buffer that may be
 * NULL when empty); the message names its first word. Inline, so that every component has it. */
#ifndef FC_ARGS_H
#define FC_ARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "featcache/fc_base.h" /* fc_set_last_error */
#include "formats/common/why.h"

/* The i-th argument's first word of names ("s, out" -> "out"), set as this thread's message. */
static inline int fc_args_refuse(const char *fn, const char *names, size_t i, char *why,
                                 size_t why_len) {
  const char *p = names;
  for (; i > 0 && *p; p++)
    if (*p == ',') i--; /* an expression holds no comma at its top level: arguments are simple */
  while (*p == ' ' || *p == '(' || *p == '!') p++;
  size_t n = strcspn(p, " ,|&)");
  fc_why(why, why_len, "%s: %.*s is NULL", fn, (int)n, p);
  return fc_set_last_error(EINVAL, "%s: %.*s is NULL", fn, (int)n, p);
}

static inline int fc_args_check(const char *fn, const char *names, const bool *ok, size_t n,
                                char *why, size_t why_len) {
  for (size_t i = 0; i < n; i++)
    if (!ok[i]) return fc_args_refuse(fn, names, i, why, why_len);
  return 0;
}

/* Element i of the array argument `name` is NULL: said as "fn: name[i] is NULL". Returns EINVAL. */
static inline int fc_args_refuse_at(const char *fn, const char *name, size_t i, char *why,
                                    size_t why_len) {
  fc_why(why, why_len, "%s: %s[%zu] is NULL", fn, name, i);
  return fc_set_last_error(EINVAL, "%s: %s[%zu] is NULL", fn, name, i);
}

#define FC_ARGS_N_(...) (sizeof((const bool[]){__VA_ARGS__}) / sizeof(bool))
#define FC_ARGS_FAIL_(why, why_len, ...)                                                           \
  fc_args_check(__func__, #__VA_ARGS__, (const bool[]){__VA_ARGS__}, FC_ARGS_N_(__VA_ARGS__), why, \
                why_len)
#define FC_ARGS(...)                                        \
  do {                                                      \
    if (FC_ARGS_FAIL_(NULL, 0, __VA_ARGS__)) return EINVAL; \
  } while (0)
#define FC_ARGS_WHY(...)                                         \
  do {                                                           \
    if (FC_ARGS_FAIL_(why, why_len, __VA_ARGS__)) return EINVAL; \
  } while (0)
#define FC_ARGS_OR(ret, ...)                             \
  do {                                                   \
    if (FC_ARGS_FAIL_(NULL, 0, __VA_ARGS__)) return ret; \
  } while (0)

/* Every element of an array of n pointers (the stores' paths) set; the array itself is checked
 * first (FC_ARGS: `arr || !n`). */
#define FC_ARGS_EACH_(arr, n, why, why_len)                                                       \
  do {                                                                                            \
    for (size_t fc_args_i_ = 0; fc_args_i_ < (size_t)(n); fc_args_i_++)                           \
      if (!(arr)[fc_args_i_]) return fc_args_refuse_at(__func__, #arr, fc_args_i_, why, why_len); \
  } while (0)
#define FC_ARGS_EACH(arr, n) FC_ARGS_EACH_(arr, n, NULL, 0)
#define FC_ARGS_EACH_WHY(arr, n) FC_ARGS_EACH_(arr, n, why, why_len)

#endif
