/* featcache — running a piece of the tokenizer in a child process (tok_internal.h).
 *
 * espeak-ng 1.51 has bugs of its own that a line of text can reach (reads of freed memory, stack
 * overflows: docs/RELIABILITY.md), and it runs inside the process that holds the store's write
 * transaction. tok_contained forks, runs the function in the child, which writes what it appended
 * to its buffer down a pipe and leaves with _exit, and the parent takes it back. A child that dies
 * (a signal, a sanitizer report, a nonzero exit) costs its line, FC_EPHONEMIZE, and nothing else:
 * the parent's espeak-ng state, heap and store never saw the line.
 *
 * The fork is made by the thread that holds espeak_lock; the child uses only that thread, the
 * heap (glibc's fork makes malloc usable in the child) and write(2), and ends with _exit: no
 * atexit handler, stdio flush or other thread's lock is touched. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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

static void child(int fd, tok_contained_fn fn, void *arg, int die) {
#ifdef TOK_SANITIZED
  /* a sanitizer report here ends this child, not the process that forked it: a fuzzer's death
   * callback would record the child's death as its own crash */
  __sanitizer_set_death_callback(NULL);
#endif
  if (die) abort(); /* FC_FAULT=espeak: what a crash in espeak-ng looks like from outside */
  tok_buf b = {0};
  int32_t rc = fn(arg, &b);
  if (write_all(fd, &rc, sizeof rc) || (b.len && write_all(fd, b.p, b.len))) _exit(3);
  _exit(0);
}

int tok_contained(tok_contained_fn fn, void *arg, tok_buf *out, int *status) {
  int fds[2];
  *status = 0;
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  int die = fault_hit("espeak");
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return e;
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], fn, arg, die);
  }
  close(fds[1]);
  tok_buf got = {0};
  int rc = 0;
  char chunk[16384];
  for (;;) {
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
  if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || got.len < sizeof crc)) rc = FC_EPHONEMIZE;
  if (!rc) {
    memcpy(&crc, got.p, sizeof crc);
    rc = crc;
    if (!rc && tok_buf_put(out, got.p + sizeof crc, got.len - sizeof crc)) rc = ENOMEM;
  }
  free(got.p);
  return rc;
}
