/* FUZZ_ASSERT: a fuzz target's invariant. A failed one names itself on stderr and aborts, which
 * libFuzzer records as a crash (and the replay drivers, tests/unit/test_*_fuzz.c, as a failure). */
#ifndef FC_FUZZ_ASSERT_H
#define FC_FUZZ_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(c)                               \
  do {                                               \
    if (!(c)) {                                      \
      fprintf(stderr, "invariant failed: %s\n", #c); \
      abort();                                       \
    }                                                \
  } while (0)

#endif
