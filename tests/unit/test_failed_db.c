/* The `failed` db and its failure records: the bytes (docs/FORMAT.md "Failure records"), writes
 * and FC_PUT_DELETE, and a store made before the db existed: read-only it opens and reads the db as
 * empty, writable it gains the db; its other dbs are untouched. */
#include "featcache.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/check.h"

/* A store as the tools wrote it before the `failed` db: meta/format and the four entry/record
 * dbs, written with LMDB directly. */
static int make_old_store(const char *dir) {
  if (mkdir(dir, 0777) != 0) return errno;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  int rc = mdb_env_create(&env);
  if (rc) return rc;
  mdb_env_set_maxdbs(env, 8);
  if ((rc = mdb_env_open(env, dir, 0, 0664)) || (rc = mdb_txn_begin(env, NULL, 0, &txn))) {
    mdb_env_close(env);
    return rc;
  }
  static const char *const names[] = {"meta", "audio", "text", "feat", "tok"};
  for (int i = 0; i < 5 && !rc; i++) {
    rc = mdb_dbi_open(txn, names[i], MDB_CREATE, &dbi);
    if (!rc && i == 0) {
      MDB_val k = {6, (void *)"format"}, v = {strlen(FC_FORMAT_NAME), (void *)FC_FORMAT_NAME};
      rc = mdb_put(txn, dbi, &k, &v, 0);
    }
    if (!rc && i == 1) {
      MDB_val k = {3, (void *)"old"},
              v = {48, (void *)"0123456789abcdef0123456789abcdef0123456789abcdef"};
      rc = mdb_put(txn, dbi, &k, &v, 0);
    }
  }
  rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
  mdb_env_close(env);
  return rc;
}

static int has_named_db(const char *dir, const char *name) {
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  if (mdb_env_create(&env)) return -1;
  mdb_env_set_maxdbs(env, 8);
  int rc = mdb_env_open(env, dir, MDB_RDONLY, 0664);
  if (!rc) rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
  if (!rc) {
    rc = mdb_dbi_open(txn, name, 0, &dbi);
    mdb_txn_abort(txn);
  }
  mdb_env_close(env);
  return rc == 0 ? 1 : rc == MDB_NOTFOUND ? 0 : -1;
}

int main(void) {
  /* the bytes: fixed part, source, reason; decoding refuses what does not add up */
  fc_failure f = {.time_ns = 1767225600123456789LL,
                  .err = FC_EDECODE,
                  .source = "/data/wavs/a.wav",
                  .source_len = 16,
                  .reason = "cannot decode: truncated",
                  .reason_len = 24};
  fc_digest_buffer("cfg", 3, &f.config);
  size_t n = fc_failure_size(&f);
  CHECK(n == FC_FAILURE_FIXED + 16 + 24, "size %zu", n);
  uint8_t buf[128];
  memset(buf, 0xee, sizeof buf);
  fc_failure_encode(&f, buf);
  CHECK(memcmp(buf, f.config.bytes, 16) == 0, "config digest at 0");
  CHECK(buf[16] == 0x15 && buf[23] == 0x18, "time little-endian at 16: %02x..%02x", buf[16],
        buf[23]);
  CHECK(buf[24] == (uint8_t)FC_EDECODE && buf[27] == 0xff, "err at 24 (two's complement)");
  CHECK(buf[28] == 16 && buf[29] == 0 && buf[30] == 0 && buf[31] == 0, "source length at 28");
  CHECK(memcmp(buf + 32, "/data/wavs/a.wav", 16) == 0, "source at 32");
  CHECK(memcmp(buf + 48, "cannot decode: truncated", 24) == 0, "reason after the source");
  fc_failure g;
  CHECK(fc_failure_decode(buf, n, &g) == 0 && g.time_ns == f.time_ns && g.err == FC_EDECODE &&
            g.source_len == 16 && g.reason_len == 24 && memcmp(g.reason, f.reason, 24) == 0 &&
            memcmp(g.config.bytes, f.config.bytes, 16) == 0,
        "round trip");
  CHECK(fc_failure_decode(buf, 31, &g) == FC_EFORMAT, "shorter than the fixed part");
  CHECK(fc_failure_decode(buf, 47, &g) == FC_EFORMAT, "source past the end");
  CHECK(fc_failure_decode(buf, 48, &g) == 0 && g.reason_len == 0, "no reason");

  char dir[] = "/tmp/fc_test_failed_db_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[256], old[256];
  snprintf(path, sizeof path, "%s/s", dir);
  snprintf(old, sizeof old, "%s/old", dir);

  /* a new store has the db: put, read, delete (an absent key deletes without error) */
  fc_store *s = NULL;
  int rc = fc_store_open(path, FC_STORE_CREATE, &s);
  CHECK(rc == 0, "create: %s", fc_strerror(rc));
  if (rc) return 1;
  CHECK(strcmp(fc_db_name(FC_DB_FAILED), "failed") == 0, "name %s", fc_db_name(FC_DB_FAILED));
  fc_put p[2] = {{FC_DB_FAILED, "a", 1, buf, n, 0}, {FC_DB_FAILED, "b", 1, buf, n, 0}};
  CHECK(fc_store_write(s, p, 2) == 0, "put two failures");
  fc_rtxn *t;
  const void *v;
  size_t vl;
  uint64_t cnt = 0;
  CHECK(fc_store_read_begin(s, &t) == 0, "rtxn");
  CHECK(fc_rtxn_get(t, FC_DB_FAILED, "a", 1, &v, &vl) == 0 && vl == n &&
            fc_failure_decode(v, vl, &g) == 0 && g.err == FC_EDECODE,
        "get a");
  CHECK(fc_rtxn_count(t, FC_DB_FAILED, &cnt) == 0 && cnt == 2, "count %llu",
        (unsigned long long)cnt);
  fc_rtxn_end(t);
  fc_put del[2] = {{FC_DB_FAILED, "a", 1, NULL, 0, FC_PUT_DELETE},
                   {FC_DB_FAILED, "zz", 2, NULL, 0, FC_PUT_DELETE}};
  CHECK(fc_store_write(s, del, 2) == 0, "delete a, and zz which is not there");
  CHECK(fc_store_read_begin(s, &t) == 0, "rtxn");
  CHECK(fc_rtxn_get(t, FC_DB_FAILED, "a", 1, &v, &vl) == FC_ENOTFOUND, "a deleted");
  CHECK(fc_rtxn_get(t, FC_DB_FAILED, "b", 1, &v, &vl) == 0, "b kept");
  fc_rtxn_end(t);
  fc_store_info info;
  CHECK(fc_store_info_get(s, &info) == 0 && info.entries[FC_DB_AUDIO] == 0, "info");
  fc_store_close(s);

  /* a store from before the db: read-only it opens, the db reads as empty */
  rc = make_old_store(old);
  CHECK(rc == 0, "old store: %s", fc_strerror(rc));
  CHECK(fc_store_open(old, FC_STORE_RDONLY, &s) == 0, "old store opens read-only");
  CHECK(fc_store_read_begin(s, &t) == 0, "rtxn");
  CHECK(fc_rtxn_get(t, FC_DB_FAILED, "a", 1, &v, &vl) == FC_ENOTFOUND, "get: not found");
  cnt = 9;
  CHECK(fc_rtxn_count(t, FC_DB_FAILED, &cnt) == 0 && cnt == 0, "count 0");
  fc_cursor *c;
  CHECK(fc_cursor_open(t, FC_DB_FAILED, &c) == 0, "cursor");
  CHECK(fc_cursor_seek(c, "a", 1) == 0, "seek");
  CHECK(fc_cursor_next(c, NULL, NULL, NULL, NULL) == FC_ENOTFOUND, "empty");
  fc_cursor_close(c);
  CHECK(fc_rtxn_get(t, FC_DB_AUDIO, "old", 3, &v, &vl) == 0 && vl == 48, "its audio entry");
  fc_rtxn_end(t);
  fc_put one = {FC_DB_FAILED, "x", 1, buf, n, 0};
  CHECK(fc_store_write(s, &one, 1) == EACCES, "read-only: no write");
  fc_store_close(s);
  CHECK(has_named_db(old, "failed") == 0, "read-only open left it without the db");

  /* opened for writing (with or without CREATE) it gains the db */
  CHECK(fc_store_open(old, 0, &s) == 0, "old store opens writable");
  CHECK(fc_store_write(s, &one, 1) == 0, "write a failure");
  fc_store_close(s);
  CHECK(has_named_db(old, "failed") == 1, "now has the db");
  CHECK(fc_store_open(old, FC_STORE_RDONLY, &s) == 0, "reopen");
  CHECK(fc_store_read_begin(s, &t) == 0, "rtxn");
  CHECK(fc_rtxn_get(t, FC_DB_FAILED, "x", 1, &v, &vl) == 0 && vl == n, "x");
  CHECK(fc_rtxn_get(t, FC_DB_AUDIO, "old", 3, &v, &vl) == 0, "audio entry kept");
  fc_rtxn_end(t);
  fc_store_close(s);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("test_failed_db");
}
