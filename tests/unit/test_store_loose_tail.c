/* A data.mdb that ends before its meta's last page because LMDB committed pages it allocated and
 * freed in one transaction without writing them (a sound store, no writer running) opens, and
 * cache-verify does not call it truncated; one cut short (a used page missing) is refused with
 * FC_ETRUNCATED, and cache-verify says truncated. */
#include "featcache.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/check.h"

int main(void) {
  char dir[] = "/tmp/fc_test_loose_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[256], data[300];
  snprintf(path, sizeof path, "%s/s", dir);
  snprintf(data, sizeof data, "%s/data.mdb", path);
  fc_store *s = NULL;
  int rc = fc_store_open(path, FC_STORE_CREATE, &s);
  CHECK(rc == 0, "create: %s", fc_strerror(rc));
  if (rc) return 1;
  fc_put p = {FC_DB_FEAT, "small", 5, "v", 1, 0};
  CHECK(fc_store_write(s, &p, 1) == 0, "write");
  fc_store_close(s);

  /* LMDB directly: a value put and deleted (the free list holds its pages), then a transaction
   * that reuses free pages, puts a bigger value (overflow pages at the file's end) and deletes it:
   * its pages go back to the free list, never written, and the commit names them all the same */
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  MDB_envinfo ei;
  MDB_stat ms;
  CHECK(mdb_env_create(&env) == 0 && mdb_env_set_maxdbs(env, 64) == 0 &&
            mdb_env_set_mapsize(env, 64u << 20) == 0 && mdb_env_open(env, path, 0, 0664) == 0,
        "lmdb open");
  size_t big = 800u << 10;
  char *val = calloc(1, big);
  MDB_val k = {3, "big"}, v = {big / 2, val}, k2 = {6, "small2"}, v2 = {1, "w"};
  CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0 && mdb_dbi_open(txn, "feat", 0, &dbi) == 0 &&
            mdb_put(txn, dbi, &k, &v, 0) == 0 && mdb_txn_commit(txn) == 0,
        "put");
  CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0 && mdb_del(txn, dbi, &k, NULL) == 0 &&
            mdb_txn_commit(txn) == 0,
        "del");
  v.mv_size = big;
  CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0 && mdb_put(txn, dbi, &k2, &v2, 0) == 0 &&
            mdb_put(txn, dbi, &k, &v, 0) == 0 && mdb_del(txn, dbi, &k, NULL) == 0 &&
            mdb_txn_commit(txn) == 0,
        "loose txn");
  CHECK(mdb_env_info(env, &ei) == 0 && mdb_env_stat(env, &ms) == 0, "info");
  mdb_env_close(env);
  free(val);
  struct stat st;
  CHECK(stat(data, &st) == 0, "stat");
  const uint64_t want = ((uint64_t)ei.me_last_pgno + 1) * ms.ms_psize;
  CHECK((uint64_t)st.st_size < want, "the file is not short: %lld bytes, last page ends at %llu",
        (long long)st.st_size, (unsigned long long)want);
  printf("file %lld bytes, meta's last page ends at %llu (%llu pages short)\n",
         (long long)st.st_size, (unsigned long long)want,
         (unsigned long long)((want - (uint64_t)st.st_size) / ms.ms_psize));

  /* cache-verify takes it for what it is too: not truncated (its other findings are this test's
   * keys, which are no featcache records) */
  {
    fc_verify_opts o;
    fc_verify_opts_init(&o);
    fc_verify_report r;
    char why[256] = "";
    rc = fc_verify_store(path, &o, &r, why, sizeof why);
    CHECK(rc == 0, "cache-verify of a loose tail: %s", why);
    for (size_t i = 0; !rc && i < r.count; i++)
      CHECK(strncmp(r.findings[i].problem, "truncated", 9) != 0, "cache-verify of a loose tail: %s",
            r.findings[i].problem);
    if (!rc) fc_verify_report_free(&r);
  }

  /* no writer runs: every open takes it for what it is */
  rc = fc_store_open(path, FC_STORE_RDONLY, &s);
  CHECK(rc == 0, "rdonly open of a loose tail: %s", fc_strerror(rc));
  if (!rc) {
    fc_rtxn *t;
    const void *got;
    size_t n;
    CHECK(fc_store_read_begin(s, &t) == 0, "read");
    CHECK(fc_rtxn_get(t, FC_DB_FEAT, "small2", 6, &got, &n) == 0 && n == 1, "small2");
    fc_rtxn_end(t);
    fc_store_close(s);
  }
  rc = fc_store_open(path, FC_STORE_RDONLY | FC_STORE_NOLOCK, &s);
  CHECK(rc == 0, "nolock open of a loose tail: %s", fc_strerror(rc));
  fc_store_close(s);
  CHECK(stat(data, &st) == 0, "stat");
  rc = fc_store_open(path, 0, &s);
  CHECK(rc == 0, "writable open of a loose tail: %s", fc_strerror(rc));
  fc_store_close(s);

  /* cut to the meta pages and one more: the pages of the last commit's trees are missing (the
   * free list's own among them: read with pread, never through the map, or this would be SIGBUS) */
  CHECK(truncate(data, 3 * (off_t)ms.ms_psize) == 0, "cut");
  rc = fc_store_open(path, FC_STORE_RDONLY, &s);
  CHECK(rc == FC_ETRUNCATED, "cut to 3 pages: %s", fc_strerror(rc));
  if (!rc) fc_store_close(s);
  {
    fc_verify_opts o;
    fc_verify_opts_init(&o);
    fc_verify_report r;
    char why[256] = "";
    rc = fc_verify_store(path, &o, &r, why, sizeof why);
    CHECK(rc == 0 && r.count == 1 && strncmp(r.findings[0].problem, "truncated", 9) == 0,
          "cache-verify of a cut file: rc %d (%s), %zu findings, the first %s", rc, why, r.count,
          r.count ? r.findings[0].problem : "-");
    if (!rc) fc_verify_report_free(&r);
  }
  /* only the meta pages left */
  CHECK(truncate(data, 2 * (off_t)ms.ms_psize) == 0, "cut");
  rc = fc_store_open(path, FC_STORE_RDONLY, &s);
  CHECK(rc == FC_ETRUNCATED, "cut to the metas: %s", fc_strerror(rc));
  if (!rc) fc_store_close(s);

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return fc_check_result("test_store_loose_tail");
}
