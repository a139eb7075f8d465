/* The store's SIGBUS handler (libcache/core/store/errors.c; store_int.h store_txn_begin): LMDB's
 * writes into lock.mdb's map fault on a full copy-on-write disk, and the store's calls catch that
 * in the thread that faulted. A SIGBUS that is not theirs goes to the handler the process had
 * before (here: one that notes it), and an open of a store puts the store's handler back when
 * another was installed since — PyTorch's DataLoader workers install their own SIGBUS handler at
 * start, before their loader opens the store, which left every LMDB fault in a worker uncaught
 * (exit 135) — chaining to that one in turn. (The fault itself: cli/store_btrfs_midrun.) */
#include "featcache.h"

#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"

static sigjmp_buf back;
static volatile sig_atomic_t seen_a, seen_b;

static void handler_a(int sig) {
  (void)sig;
  seen_a++;
  siglongjmp(back, 1);
}

static void handler_b(int sig) {
  (void)sig;
  seen_b++;
  siglongjmp(back, 1);
}

static void set_handler(void (*h)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = h;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER;
  sigaction(SIGBUS, &sa, NULL);
}

static int current_is(void (*h)(int)) {
  struct sigaction cur;
  return sigaction(SIGBUS, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == h;
}

/* A SIGBUS raised outside any store call: the handler that gets it in the end. */
static void raise_bus(void) {
  if (sigsetjmp(back, 1) == 0) raise(SIGBUS);
}

int main(void) {
  char dir[] = "/tmp/fc_sigbus_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char st[64];
  snprintf(st, sizeof st, "%s/st", dir);

  set_handler(handler_a);
  fc_store *s = NULL;
  int rc = fc_store_open(st, FC_STORE_CREATE, &s);
  CHECK(rc == 0, "open: %s", fc_strerror(rc));
  CHECK(!current_is(handler_a),
        "after an open, the process's SIGBUS handler is still the one it had");
  raise_bus();
  CHECK(seen_a == 1,
        "a SIGBUS not the store's reached the handler installed before: %d times, want 1",
        (int)seen_a);
  fc_store_close(s);

  /* another handler installed since (a DataLoader worker's), then the store opened again */
  set_handler(handler_b);
  rc = fc_store_open(st, 0, &s);
  CHECK(rc == 0, "open again: %s", fc_strerror(rc));
  CHECK(!current_is(handler_b),
        "an open left the handler installed since in place: LMDB's faults there are not caught");
  raise_bus();
  CHECK(seen_b == 1 && seen_a == 1,
        "a SIGBUS not the store's reached handler b %d times and a %d times, want 1 and 1",
        (int)seen_b, (int)seen_a);
  fc_store_close(s);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return fc_check_result("test_store_sigbus");
}
