/* A thread holding a read transaction begins a second one after another process grew the map
 * past this one's: the begin meets MDB_MAP_RESIZED, and adopting the new size takes the map lock
 * for writing, which the transaction held keeps shared. It must return (an error is fine; the
 * caller ends its transactions and begins again), not wait on itself: an alarm fails the test. */
#include "featcache.h"

#include <lmdb.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

static void on_alarm(int sig) {
  (void)sig;
  static const char m[] = "test_store_nested_resize: FAIL the second read_begin hung\n";
  if (write(2, m, sizeof m - 1) < 0) _exit(1);
  _exit(1);
}

int main(void) {
  char dir[] = "/tmp/fc_test_nested_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[256];
  snprintf(path, sizeof path, "%s/s", dir);
  fc_store *s = NULL;
  int rc = fc_store_open(path, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  CHECK(rc == 0, "create: %s", fc_strerror(rc));
  if (rc) return 1;
  fc_put p = {FC_DB_FEAT, "k", 1, "v", 1, 0};
  CHECK(fc_store_write(s, &p, 1) == 0, "write");
  fc_store_close(s);

  rc = fc_store_open(path, FC_STORE_RDONLY, &s);
  CHECK(rc == 0, "rdonly open: %s", fc_strerror(rc));
  if (rc) return 1;
  fc_store_info info;
  CHECK(fc_store_info_get(s, &info) == 0, "info");
  fc_rtxn *t1 = NULL, *t2 = NULL;
  CHECK(fc_store_read_begin(s, &t1) == 0, "first read");

  /* another process writes past this process's map: 1 MiB values, twice the map */
  pid_t pid = fork();
  if (pid == 0) {
    fc_store *w;
    if (fc_store_open(path, FC_STORE_NOSYNC, &w)) _exit(3);
    size_t vlen = 1 << 20;
    uint8_t *val = calloc(1, vlen);
    for (unsigned i = 0; i < 2 * (info.map_size >> 20) + 8; i++) {
      char key[16];
      snprintf(key, sizeof key, "big%05u", i);
      fc_put q = {FC_DB_FEAT, key, strlen(key), val, vlen, 0};
      if (fc_store_write(w, &q, 1)) _exit(4);
    }
    fc_store_close(w);
    _exit(0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the writer: status %d", status);

  signal(SIGALRM, on_alarm);
  alarm(20);
  rc = fc_store_read_begin(s, &t2);
  alarm(0);
  printf("second read_begin with one held: %s\n", rc ? fc_strerror(rc) : "ok");
  CHECK(rc == 0 || rc == MDB_MAP_RESIZED, "second read_begin: %s", fc_strerror(rc));
  if (!rc) fc_rtxn_end(t2);
  fc_rtxn_end(t1);
  /* with none held, the new size is adopted and the writer's values read */
  rc = fc_store_read_begin(s, &t2);
  CHECK(rc == 0, "read_begin with none held: %s", fc_strerror(rc));
  if (!rc) {
    const void *v;
    size_t n;
    CHECK(fc_rtxn_get(t2, FC_DB_FEAT, "big00000", 8, &v, &n) == 0 && n == (1u << 20), "big");
    fc_rtxn_end(t2);
  }
  fc_store_close(s);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return fc_check_result("test_store_nested_resize");
}
