/* A name for a thread the library starts, as top -H, ps -L, perf and gdb show it: "fc-" and what
 * the thread does, with its number where there are several (fc-worker3, fc-writer1). At most 15
 * characters (the kernel's limit; a longer one is cut). Best effort: a failure changes nothing.
 * Called by the thread itself, first thing; the caller's own thread is never renamed. */
#ifndef FC_THREAD_NAME_H
#define FC_THREAD_NAME_H
#include <pthread.h>
#include <stdio.h>

static inline void fc_thread_name(const char *what, int k) {
  char name[48];
  if (k >= 0)
    snprintf(name, sizeof name, "fc-%.24s%d", what, k);
  else
    snprintf(name, sizeof name, "fc-%.24s", what);
  name[15] = '\0'; /* the kernel's 16 bytes */
  pthread_setname_np(pthread_self(), name);
}
#endif
