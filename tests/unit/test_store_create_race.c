/* Two processes creating one new store at once (featurize runs started together by GNU parallel,
 * Slurm or make -j): the second used to see data.mdb before the first committed its dbs and
 * refused the store with FC_EFORMAT ("not in the featcache format"). */
#include "featcache.h"

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

enum { ROUNDS = 20, PROCS = 4 };

int main(void) {
  char dir[] = "/tmp/fc_store_race_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[300];
  fc_store *s;
  int rc;

  /* Deterministic: what the second process sees in the window, an environment whose creator has
   * not committed anything yet (LMDB wrote the meta pages only). */
  snprintf(path, sizeof path, "%s/fresh", dir);
  mkdir(path, 0777);
  MDB_env *env;
  CHECK(mdb_env_create(&env) == 0 && mdb_env_open(env, path, 0, 0664) == 0, "bare env");
  mdb_env_close(env);
  rc = fc_store_open(path, FC_STORE_CREATE, &s);
  CHECK(rc == 0, "empty environment opened for create: %s", fc_strerror(rc));
  if (!rc) {
    fc_put p = {FC_DB_FEAT, "k", 1, "v", 1, 0};
    CHECK(fc_store_write(s, &p, 1) == 0, "write");
    fc_store_close(s);
  }
  rc = fc_store_open(path, FC_STORE_RDONLY, &s);
  CHECK(rc == 0, "reopen read-only: %s", fc_strerror(rc));
  if (!rc) fc_store_close(s);

  /* The real race: PROCS processes create the same new store at once, ROUNDS times. */
  for (int r = 0; r < ROUNDS; r++) {
    snprintf(path, sizeof path, "%s/race%d", dir, r);
    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
      if ((pids[i] = fork()) == 0) {
        fc_store *cs;
        int crc = fc_store_open(path, FC_STORE_CREATE, &cs);
        if (crc) {
          fprintf(stderr, "round %d process %d: %s\n", r, i, fc_strerror(crc));
          _exit(1);
        }
        char key = (char)('a' + i);
        fc_put p = {FC_DB_AUDIO, &key, 1, "v", 1, 0};
        crc = fc_store_write(cs, &p, 1);
        fc_store_close(cs);
        _exit(crc ? 1 : 0);
      }
    }
    for (int i = 0; i < PROCS; i++) {
      int st = 0;
      waitpid(pids[i], &st, 0);
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d process %d failed", r, i);
    }
    rc = fc_store_open(path, FC_STORE_RDONLY, &s);
    CHECK(rc == 0, "round %d: reopen: %s", r, fc_strerror(rc));
    if (!rc) {
      fc_store_info info;
      CHECK(fc_store_info_get(s, &info) == 0 && info.entries[FC_DB_AUDIO] == PROCS,
            "round %d: %llu audio entries, want %d", r,
            (unsigned long long)info.entries[FC_DB_AUDIO], PROCS);
      fc_store_close(s);
    }
  }

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  return fc_check_result("test_store_create_race");
}
