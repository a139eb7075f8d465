/* Internal: the one-line reasons that functions hand back through (char *why, size_t why_len). */
#ifndef FC_WHY_H
#define FC_WHY_H

#include <stddef.h>

/* Format a reason into why (NULL or why_len 0: nothing). Not part of the public API. */
__attribute__((visibility("hidden"), format(printf, 3, 4))) void fc_why(char *why, size_t why_len,
                                                                        const char *fmt, ...);

#endif
