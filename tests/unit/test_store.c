/* The store: create/open, batches, map growth past the initial map, cursors, configs, refusals. */
#include "featcache.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/common/fault.h"
#include "tests/check.h"

/* FC_PUT_SEEN's call: what the key held, as a string ("-": nothing), into arg (8 bytes) */
static void saw(const void *old, size_t len, void *arg) {
  snprintf(arg, 8, "%.*s", old ? (int)len : 1, old ? (const char *)old : "-");
}

int main(void) {
  char dir[] = "/tmp/fc_test_store_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[256];
  snprintf(path, sizeof path, "%s/s", dir);
  fc_store *s = NULL;
  CHECK(fc_store_open(path, 0, &s) == ENOENT, "open without CREATE on nothing");
  CHECK(fc_store_open(path, FC_STORE_RDONLY, &s) == ENOENT, "rdonly on nothing");
  /* a directory with no store in it (a folder of WAVs): FC_ENOSTORE, "not a featcache store" */
  char plain_dir[300];
  snprintf(plain_dir, sizeof plain_dir, "%s/wavs", dir);
  CHECK(mkdir(plain_dir, 0777) == 0, "mkdir");
  CHECK(fc_store_open(plain_dir, FC_STORE_RDONLY, &s) == FC_ENOSTORE,
        "rdonly on a plain directory");
  CHECK(fc_store_open(plain_dir, 0, &s) == FC_ENOSTORE, "no CREATE on a plain directory");
  CHECK(strstr(fc_strerror(FC_ENOSTORE), "not a featcache store") != NULL, "%s",
        fc_strerror(FC_ENOSTORE));
  int rc = fc_store_open(path, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  CHECK(rc == 0, "create: %s", fc_strerror(rc));
  if (rc) return 1;

  /* 100 values of 1 MiB = 100 MiB > the 64 MiB initial map: grows transparently, in batches */
  size_t vlen = 1 << 20;
  uint8_t *val = malloc(vlen);
  for (int b = 0; b < 10; b++) {
    fc_put puts[10];
    char keys[10][8];
    for (int i = 0; i < 10; i++) {
      snprintf(keys[i], sizeof keys[i], "k%03d", b * 10 + i);
      puts[i] = (fc_put){FC_DB_FEAT, keys[i], 4, val, vlen, FC_PUT_NOOVERWRITE};
    }
    memset(val, b, vlen);
    rc = fc_store_write(s, puts, 10);
    CHECK(rc == 0, "batch %d: %s", b, fc_strerror(rc));
  }
  /* fc_store_write_kept: which NOOVERWRITE puts met their key stored (a writer that looked its
   * keys up before another committed them counts them by it); a plain put, an appended one and
   * the map-growing replay above say 0 */
  {
    unsigned char kept[4] = {9, 9, 9, 9};
    const uint8_t one = 1;
    fc_put p[4] = {{FC_DB_FEAT, "k005", 4, &one, 1, FC_PUT_NOOVERWRITE},
                   {FC_DB_FEAT, "k500", 4, &one, 1, FC_PUT_NOOVERWRITE},
                   {FC_DB_FEAT, "k099", 4, &one, 1, FC_PUT_NOOVERWRITE | FC_PUT_APPEND},
                   {FC_DB_META, "kept-test", 9, &one, 1, 0}};
    rc = fc_store_write_kept(s, p, 4, kept);
    CHECK(rc == 0 && kept[0] == 1 && kept[1] == 0 && kept[2] == 1 && kept[3] == 0,
          "kept: rc %d, %d %d %d %d (want 1 0 1 0)", rc, kept[0], kept[1], kept[2], kept[3]);
    rc = fc_store_write_kept(s, p + 1, 1, kept);
    CHECK(rc == 0 && kept[0] == 1, "kept: k500 again: rc %d, %d", rc, kept[0]);
    p[0] = (fc_put){FC_DB_FEAT, "k500", 4, NULL, 0, FC_PUT_DELETE};
    CHECK(fc_store_write_kept(s, p, 1, kept) == 0 && kept[0] == 0, "kept: a delete");
  }
  /* FC_PUT_SAME_KEPT: the very bytes there already are kept (not written, said kept); other
   * bytes are written over, a key not there is written: kept 0 for both */
  {
    unsigned char kept[2] = {9, 9};
    fc_put p[2] = {{FC_DB_AUDIO, "same", 4, "abc", 3, FC_PUT_SAME_KEPT},
                   {FC_DB_AUDIO, "other", 5, "xyz", 3, FC_PUT_SAME_KEPT}};
    rc = fc_store_write_kept(s, p, 2, kept);
    CHECK(rc == 0 && kept[0] == 0 && kept[1] == 0, "same: new keys: rc %d, %d %d", rc, kept[0],
          kept[1]);
    p[1].val = "xyZ";
    rc = fc_store_write_kept(s, p, 2, kept);
    CHECK(rc == 0 && kept[0] == 1 && kept[1] == 0, "same: rc %d, %d %d (want 1 0)", rc, kept[0],
          kept[1]);
    p[0].val_len = 2; /* a prefix of the stored bytes is other bytes */
    rc = fc_store_write_kept(s, p, 1, kept);
    CHECK(rc == 0 && kept[0] == 0, "same: a shorter value: rc %d, %d", rc, kept[0]);
    fc_rtxn *t;
    const void *v;
    size_t vl;
    CHECK(fc_store_read_begin(s, &t) == 0, "read");
    CHECK(fc_rtxn_get(t, FC_DB_AUDIO, "other", 5, &v, &vl) == 0 && vl == 3 && !memcmp(v, "xyZ", 3),
          "same: other bytes written over");
    CHECK(fc_rtxn_get(t, FC_DB_AUDIO, "same", 4, &v, &vl) == 0 && vl == 2 && !memcmp(v, "ab", 2),
          "same: the shorter value written");
    fc_rtxn_end(t);
    p[0] = (fc_put){FC_DB_AUDIO, "same", 4, NULL, 0, FC_PUT_DELETE};
    p[1] = (fc_put){FC_DB_AUDIO, "other", 5, NULL, 0, FC_PUT_DELETE};
    CHECK(fc_store_write(s, p, 2) == 0, "same: deleted");
  }
  /* FC_PUT_SEEN: the put is shown what its key held in the write transaction (nothing: NULL),
   * also when it is kept (FC_PUT_SAME_KEPT), and its value is fc_put_seen's */
  {
    char was[4][8] = {{0}};
    unsigned char kept[1] = {9};
    fc_put_seen sn = {"one", saw, was[0]};
    fc_put p[1] = {{FC_DB_AUDIO, "seen", 4, &sn, 3, FC_PUT_SEEN | FC_PUT_SAME_KEPT}};
    rc = fc_store_write_kept(s, p, 1, kept);
    CHECK(rc == 0 && kept[0] == 0 && !strcmp(was[0], "-"), "seen: new: rc %d, %d '%s'", rc, kept[0],
          was[0]);
    sn = (fc_put_seen){"two", saw, was[1]};
    rc = fc_store_write_kept(s, p, 1, kept);
    CHECK(rc == 0 && kept[0] == 0 && !strcmp(was[1], "one"), "seen: over: rc %d, %d '%s'", rc,
          kept[0], was[1]);
    sn.arg = was[2];
    rc = fc_store_write_kept(s, p, 1, kept);
    CHECK(rc == 0 && kept[0] == 1 && !strcmp(was[2], "two"), "seen: same: rc %d, %d '%s'", rc,
          kept[0], was[2]);
    fc_put_fill f = {NULL, NULL, NULL};
    fc_put q = {FC_DB_AUDIO, "seen", 4, &f, 3, FC_PUT_SEEN | FC_PUT_FILL};
    CHECK(fc_store_write(s, &q, 1) == EINVAL, "seen: with fill");
    fc_rtxn *t;
    const void *v;
    size_t vl;
    CHECK(fc_store_read_begin(s, &t) == 0, "read");
    CHECK(fc_rtxn_get(t, FC_DB_AUDIO, "seen", 4, &v, &vl) == 0 && vl == 3 && !memcmp(v, "two", 3),
          "seen: the value written");
    fc_rtxn_end(t);
    p[0] = (fc_put){FC_DB_AUDIO, "seen", 4, NULL, 0, FC_PUT_DELETE};
    CHECK(fc_store_write(s, p, 1) == 0, "seen: deleted");
  }
  CHECK(fc_store_sync(s) == 0, "sync");
  fc_store_info info;
  CHECK(fc_store_info_get(s, &info) == 0 && info.entries[FC_DB_FEAT] == 100 &&
            info.map_size >= (100ull << 20),
        "info: %llu entries, map %llu", (unsigned long long)info.entries[FC_DB_FEAT],
        (unsigned long long)info.map_size);

  fc_digest d;
  fc_digest_buffer("cfg", 3, &d);
  CHECK(fc_store_put_config(s, &d, "{\"kind\":\"mel\"}", 14) == 0, "put config");
  fc_store_close(s);

  CHECK(fc_store_open(path, FC_STORE_RDONLY, &s) == 0, "reopen rdonly");
  fc_rtxn *t;
  CHECK(fc_store_read_begin(s, &t) == 0, "rtxn");
  const void *v;
  size_t vl;
  CHECK(fc_rtxn_get(t, FC_DB_FEAT, "k042", 4, &v, &vl) == 0 && vl == vlen &&
            ((const uint8_t *)v)[0] == 4,
        "get k042");
  CHECK(fc_rtxn_get(t, FC_DB_FEAT, "zzzz", 4, &v, &vl) == FC_ENOTFOUND, "missing key");
  const char *json;
  size_t jl;
  CHECK(fc_rtxn_get_config(t, &d, &json, &jl) == 0 && jl == 14, "config back");
  const void *base;
  size_t maplen;
  /* another mapping of the same file in this process (as Python's lmdb would make) must not be
   * mistaken for the store's own */
  char dbfile[300];
  snprintf(dbfile, sizeof dbfile, "%s/data.mdb", path);
  int fd = open(dbfile, O_RDONLY);
  void *other = fd >= 0 ? mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  CHECK(other != MAP_FAILED, "second mapping");
  CHECK(fc_store_map_region(s, &base, &maplen) == 0 && base != other &&
            (const uint8_t *)v >= (const uint8_t *)base &&
            (const uint8_t *)v + vl <= (const uint8_t *)base + maplen,
        "value inside the map");
  if (other != MAP_FAILED) munmap(other, 1 << 20);
  if (fd >= 0) close(fd);
  fc_cursor *c;
  CHECK(fc_cursor_open(t, FC_DB_FEAT, &c) == 0, "cursor");
  int n = 0;
  const void *k;
  size_t kl;
  char prev[8] = "";
  while (fc_cursor_next(c, &k, &kl, NULL, NULL) == 0) {
    CHECK(kl == 4 && memcmp(prev, k, 4) < 0, "order");
    memcpy(prev, k, 4);
    n++;
  }
  CHECK(n == 100, "cursor saw %d", n);
  CHECK(fc_cursor_seek(c, "k050", 4) == 0 && fc_cursor_next(c, &k, &kl, NULL, NULL) == 0 &&
            memcmp(k, "k050", 4) == 0,
        "seek");
  fc_cursor_close(c);
  fc_rtxn_end(t);
  fc_put p = {FC_DB_META, "x", 1, "y", 1, 0};
  CHECK(fc_store_write(s, &p, 1) == EACCES, "write to rdonly");
  fc_store_close(s);

  /* an LMDB environment that is not a featcache store is refused, never converted */
  char foreign[256];
  snprintf(foreign, sizeof foreign, "%s/foreign", dir);
  mkdir(foreign, 0777);
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  mdb_env_create(&env);
  mdb_env_open(env, foreign, 0, 0664);
  mdb_txn_begin(env, NULL, 0, &txn);
  mdb_dbi_open(txn, NULL, 0, &dbi);
  MDB_val kk = {1, "a"}, vv = {1, "b"};
  mdb_put(txn, dbi, &kk, &vv, 0);
  mdb_txn_commit(txn);
  mdb_env_close(env);
  CHECK(fc_store_open(foreign, FC_STORE_RDONLY, &s) == FC_EFORMAT, "foreign rdonly");
  CHECK(fc_store_open(foreign, FC_STORE_CREATE, &s) == FC_EFORMAT, "foreign create");
  char plain[4096];
  snprintf(plain, sizeof plain, "%s/plain-file", dir);
  FILE *pf = fopen(plain, "w");
  CHECK(pf != NULL, "make a plain file");
  if (pf) fclose(pf);
  CHECK(fc_store_open(plain, 0, &s) == ENOTDIR, "file");

  /* a failed commit makes the handle refuse further writes (sticky), the store stays intact */
  if (!fault_built()) {
    printf("test_store: sticky-commit check skipped: built without -DFC_FAULT_INJECTION=ON\n");
    goto cleanup;
  }
  setenv("FC_FAULT", "commit:1", 1);
  CHECK(fc_store_open(path, 0, &s) == 0, "reopen rw");
  rc = fc_store_write(s, &p, 1);
  CHECK(rc == EIO, "injected commit failure: %s", fc_strerror(rc));
  CHECK(fc_store_write(s, &p, 1) == FC_EBADSTATE, "sticky");
  fc_store_close(s);
  CHECK(fc_store_open(path, FC_STORE_RDONLY, &s) == 0 && fc_store_read_begin(s, &t) == 0, "reopen");
  CHECK(fc_rtxn_get(t, FC_DB_META, "x", 1, &v, &vl) == FC_ENOTFOUND, "failed batch not stored");
  CHECK(fc_rtxn_get(t, FC_DB_FEAT, "k099", 4, &v, &vl) == 0, "earlier data intact");
  fc_rtxn_end(t);
  fc_store_close(s);

cleanup:
  free(val);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  if (failures)
    fprintf(stderr, "test_store: %d failure(s)\n", failures);
  else
    printf("test_store: ok\n");
  return failures ? 1 : 0;
}
