/* An open for writing waits while cache-prune holds the store's writer lock exclusively
 * (FC_STORE_EXCLUSIVE). A signal arriving meanwhile: handled with SA_RESTART (a C program's usual
 * handler), the wait goes on and the open succeeds once the holder closes; handled without it
 * (the tools' SIGINT, CPython's handlers), the open returns FC_EINTR, as read(2) returns EINTR,
 * and may be retried — fc_store.h's contract. A timer and a pipe from a child that holds the lock. */
#include "featcache.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) {
  (void)sig;
  alarms++;
}

static void handle_alarm(int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
}

static void timer_ms(long ms) {
  struct itimerval t = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &t, NULL);
}

/* A child that opens path exclusively, says so on ready, holds it for hold_ms, then exits. */
static pid_t holder(const char *path, long hold_ms) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    fc_store *s;
    int rc = fc_store_open(path, FC_STORE_EXCLUSIVE, &s);
    char c = rc ? 'x' : 'k';
    if (write(fds[1], &c, 1) != 1) _exit(3);
    usleep((useconds_t)hold_ms * 1000);
    if (!rc) fc_store_close(s);
    _exit(rc ? 1 : 0);
  }
  close(fds[1]);
  char c = 0;
  ssize_t n = read(fds[0], &c, 1);
  close(fds[0]);
  if (n != 1 || c != 'k') {
    if (pid > 0) waitpid(pid, NULL, 0);
    return -1;
  }
  return pid;
}

int main(void) {
  char dir[] = "/tmp/fc_store_wait_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[300];
  snprintf(path, sizeof path, "%s/s", dir);
  fc_store *s;
  int rc = fc_store_open(path, FC_STORE_CREATE, &s);
  CHECK(rc == 0, "create: %s", fc_strerror(rc));
  if (rc) return 1;
  fc_store_close(s);

  /* without SA_RESTART: FC_EINTR at the signal; a retry waits on and opens once the holder left */
  handle_alarm(0);
  pid_t pid = holder(path, 600);
  CHECK(pid > 0, "the holder took the lock");
  timer_ms(150);
  rc = fc_store_open(path, 0, &s);
  CHECK(rc == FC_EINTR, "open interrupted: got %s, want FC_EINTR", fc_strerror(rc));
  CHECK(alarms == 1, "the alarm ran once: %d", (int)alarms);
  if (!rc) fc_store_close(s);
  rc = fc_store_open(path, 0, &s);
  CHECK(rc == 0, "the retry: %s", fc_strerror(rc));
  if (!rc) fc_store_close(s);
  int st = -1;
  if (pid > 0) waitpid(pid, &st, 0);
  CHECK(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "holder exit %d", st);

  /* with SA_RESTART: the wait goes on through the signal, the open succeeds */
  handle_alarm(SA_RESTART);
  alarms = 0;
  pid = holder(path, 600);
  CHECK(pid > 0, "the holder took the lock again");
  timer_ms(150);
  rc = fc_store_open(path, 0, &s);
  CHECK(rc == 0, "open through a restarting signal: %s", fc_strerror(rc));
  CHECK(alarms == 1, "the alarm ran once: %d", (int)alarms);
  if (!rc) fc_store_close(s);
  if (pid > 0) waitpid(pid, &st, 0);

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 2;
  return fc_check_result("test_store_wait");
}
