/* See fault.h. The countdown is read from FC_FAULT once; each site counts its own calls. When
 * FC_FAULT_LOG names a file, each injected failure appends "site:N" to it: a run that succeeded
 * may still have had its failure injected and absorbed (an allocation with a fallback), so the
 * driver (tests/cli/fault_sites.sh) stops only when the N-th call no longer happens.
 * jansson's allocations count as `alloc` calls too (below). */
#include "formats/common/fault.h"

#ifndef FC_FAULT_INJECTION
int fault_built(void) { return 0; }
#else
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static char fault_site[32];
static long fault_at = -1, fault_count;
static char fault_env[64]; /* the FC_FAULT value the countdown was set from */
static __thread int fault_held; /* fault_hold depth of this thread */

int fault_built(void) { return 1; }

void fault_hold(int on) { fault_held += on ? 1 : -1; }

int fault_hit(const char *site) {
  if (fault_held > 0) return 0;
  int hit = 0;
  pthread_mutex_lock(&fault_mu);
  const char *e = getenv("FC_FAULT");
  if (strncmp(e ? e : "", fault_env, sizeof fault_env) != 0) { /* (re)arm on a new value */
    snprintf(fault_env, sizeof fault_env, "%s", e ? e : "");
    fault_at = -1;
    fault_count = 0;
    const char *colon = e ? strchr(e, ':') : NULL;
    if (colon && (size_t)(colon - e) < sizeof fault_site) {
      memcpy(fault_site, e, (size_t)(colon - e));
      fault_site[colon - e] = '\0';
      fault_at = strtol(colon + 1, NULL, 10);
    }
  }
  if (fault_at > 0 && strcmp(site, fault_site) == 0 && ++fault_count == fault_at) hit = 1;
  pthread_mutex_unlock(&fault_mu);
  const char *log = hit ? getenv("FC_FAULT_LOG") : NULL;
  int fd = log && *log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  if (fd >= 0) {
    char line[64];
    int len = snprintf(line, sizeof line, "%s:%ld\n", site, fault_at);
    ssize_t put = len > 0 ? write(fd, line, (size_t)len) : 0;
    (void)put; /* the log is the test's: nothing to do when it cannot be written */
    close(fd);
  }
  return hit;
}

void fault_stop(const char *site) {
  static long count;
  static char counted[64]; /* the FC_FAULT_STOP value counted: another one (a test that sets a
                            * second site in one process) counts from 0 */
  const char *e = getenv("FC_FAULT_STOP");
  const char *colon = e ? strchr(e, ':') : NULL;
  if (!colon || (size_t)(colon - e) != strlen(site) || strncmp(e, site, strlen(site)) != 0) return;
  pthread_mutex_lock(&fault_mu);
  if (strncmp(counted, e, sizeof counted) != 0) {
    snprintf(counted, sizeof counted, "%s", e);
    count = 0;
  }
  const long n = ++count;
  pthread_mutex_unlock(&fault_mu);
  if (n == strtol(colon + 1, NULL, 10)) raise(SIGSTOP);
}

void fault_wait(const char *site, volatile const int *flag) {
  const char *e = getenv("FC_FAULT_WAIT");
  if (!e || strcmp(e, site) != 0 || !flag) return;
  for (int ms = 0; ms < 30000 && !*flag; ms++) usleep(1000);
}

/* jansson's allocations on the `alloc` countdown too (formats/common/json.h says how the library tells
 * its out-of-memory failures from bad JSON). Installed before anything can call jansson: when
 * the library is loaded (or, linked statically, when the program starts). jansson frees with
 * free(), which is right for this memory and for any it allocated before. */
static void *jansson_malloc(size_t n) {
  if (fault_hit("alloc")) { /* what fc_malloc (alloc.h) does; alloc.h calls this file, not back */
    errno = ENOMEM;
    return NULL;
  }
  return malloc(n);
}
__attribute__((constructor)) static void jansson_on_countdown(void) {
  json_set_alloc_funcs(jansson_malloc, free);
}
#endif
