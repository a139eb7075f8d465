/* featcache — running a piece of the tokenizer in a child process (tok_internal.h).
 *
 * espeak-ng 1.51 has bugs of its own that a line of text can reach (reads of freed memory, stack
 * overflows: docs/RELIABILITY.md), and it runs inside the process that holds the store's write
 * transaction. tok_contained forks, runs the function in the child, which writes what it appended
 * to its buffer down a pipe and leaves with _exit, and the parent takes it back. A child that dies
 * (a signal, a sanitizer report, a nonzero exit) costs its line, FC_EPHONEMIZE, and nothing else:
 * the parent's espeak-ng state, heap and store never saw the line. So does a child that hangs: the
 * parent waits FC_PHONEMIZE_TIMEOUT seconds (30 by default) for its answer, then kills it.
 *
 * The fork is made by the thread that holds espeak_lock; the child uses only that thread, the
 * heap (glibc's fork makes malloc usable in the child) and write(2), and ends with _exit: no
 * atexit handler, stdio flush or other thread's lock is touched. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/fault.h"

#if defined(__SANITIZE_ADDRESS__)
#define TOK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TOK_SANITIZED 1
#endif
#endif
#ifdef TOK_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Injected failures of the child (FC_FAULT, formats/fault.h). */
enum { CHILD_OK, CHILD_ABORT, CHILD_EXIT, CHILD_HANG };

static void child(int fd, tok_contained_fn fn, void *arg, int fault, pid_t parent) {
  /* The parent alone decides on SIGINT/SIGTERM (a Ctrl-C reaches the whole process group; the
   * tools' handler, inherited, would print in the child), and the child dies with it: a second
   * signal ends the parent at once (cmd/cli.h), and a hung child would outlive it for good. */
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(3);
#ifdef TOK_SANITIZED
  /* a sanitizer report here ends this child, not the process that forked it: a fuzzer's death
   * callback would record the child's death as its own crash */
  __sanitizer_set_death_callback(NULL);
#endif
  if (fault == CHILD_ABORT) abort(); /* FC_FAULT=espeak: a crash in espeak-ng, from outside */
  if (fault == CHILD_HANG) /* FC_FAULT=espeakhang: espeak-ng in an endless loop */
    for (;;) pause();
  tok_buf b = {0};
  int32_t rc = fn(arg, &b);
  if (write_all(fd, &rc, sizeof rc) || (b.len && write_all(fd, b.p, b.len))) _exit(3);
  /* FC_FAULT=espeakexit: the whole answer written, then a nonzero exit (a leak report at exit,
   * a failed write of the last bytes): the answer is not to be trusted */
  _exit(fault == CHILD_EXIT ? 1 : 0);
}

/* Seconds to wait for a child's answer: FC_PHONEMIZE_TIMEOUT, else 30. */
static double child_timeout(void) {
  const char *e = getenv("FC_PHONEMIZE_TIMEOUT");
  char *end = NULL;
  double v = e && *e ? strtod(e, &end) : 0;
  return (end && !*end && v > 0) ? v : 30.0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int tok_contained(tok_contained_fn fn, void *arg, tok_buf *out, int *status) {
  int fds[2];
  *status = 0;
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  int fault = fault_hit("espeak")       ? CHILD_ABORT
              : fault_hit("espeakexit") ? CHILD_EXIT
              : fault_hit("espeakhang") ? CHILD_HANG
                                        : CHILD_OK;
  const double deadline = now_s() + child_timeout();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return e;
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], fn, arg, fault, parent);
  }
  close(fds[1]);
  tok_buf got = {0};
  int rc = 0, hung = 0;
  char chunk[16384];
  for (;;) {
    double left = deadline - now_s();
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int ready = left > 0 ? poll(&pfd, 1, (int)(left * 1000) + 1) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) { /* no answer in time: a hung espeak-ng costs its line, not the job */
      kill(pid, SIGKILL);
      hung = 1;
      break;
    }
    ssize_t k = read(fds[0], chunk, sizeof chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    if (!rc && tok_buf_put(&got, chunk, (size_t)k)) rc = ENOMEM; /* read on: the child must end */
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  *status = st;
  int32_t crc;
  if (!rc && (hung || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || got.len < sizeof crc))
    rc = FC_EPHONEMIZE;
  if (!rc) {
    memcpy(&crc, got.p, sizeof crc);
    rc = crc;
    if (!rc && tok_buf_put(out, got.p + sizeof crc, got.len - sizeof crc)) rc = ENOMEM;
  }
  free(got.p);
  return rc;
}
