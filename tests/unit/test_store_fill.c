/* fc_store_write's FC_PUT_FILL (fc_store.h): values written in place by the caller's fill.
 *   - a batch of fill puts (beside plain ones) larger than the first map: MAP_FULL, the map grows
 *     and the batch is replayed, fill called again for the puts it had done; every value stored
 *     is what fill wrote, the plain ones too;
 *   - FC_PUT_NOOVERWRITE on a stored key: fill is not called, the value stays;
 *   - a fill that fails aborts its batch: its code is returned, nothing of the batch is stored, the
 *     next write succeeds (not sticky);
 *   - done: once per fill put in every call, fill never called after it; before the commit when
 *     the map has room (the value not yet readable then), at the end when it has not (the large
 *     batch: replayed after done would store what the caller may have reused), and on every
 *     error (a failed fill, a read-only store). */
#include "featcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

enum { N = 12, VLEN = 7 << 20 }; /* 84 MiB in one batch: more than the 64 MiB first map */

typedef struct filler {
  int calls;
  unsigned char byte;
  int fail; /* return this instead of writing */
  const char *key; /* done looks it up in the store */
  int dones, fill_after_done, readable_at_done;
} filler;

static fc_store *store; /* the store done reads */

static int fill(void *dst, size_t len, void *arg) {
  filler *f = arg;
  f->calls++;
  if (f->dones) f->fill_after_done++;
  if (f->fail) return f->fail;
  memset(dst, f->byte, len);
  ((unsigned char *)dst)[len - 1] = (unsigned char)(f->byte ^ 0x5a); /* the last byte too */
  return 0;
}

/* Whether the value is committed yet (a read transaction sees only committed ones). */
static void done(void *arg) {
  filler *f = arg;
  f->dones++;
  fc_rtxn *t;
  const void *v;
  size_t vl;
  if (f->key && fc_store_read_begin(store, &t) == 0) {
    f->readable_at_done = fc_rtxn_get(t, FC_DB_FEAT, f->key, strlen(f->key), &v, &vl) == 0;
    fc_rtxn_end(t);
  }
}

static int value_is(fc_rtxn *t, const char *key, unsigned char byte, size_t len) {
  const void *v;
  size_t vl;
  if (fc_rtxn_get(t, FC_DB_FEAT, key, strlen(key), &v, &vl) != 0 || vl != len) return 0;
  const unsigned char *b = v;
  return b[0] == byte && b[len / 2] == byte && b[len - 1] == (unsigned char)(byte ^ 0x5a);
}

int main(void) {
  char dir[] = "/tmp/fc_test_store_fill_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[256];
  snprintf(path, sizeof path, "%s/s", dir);
  fc_store *s = NULL;
  int rc = fc_store_open(path, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  CHECK(rc == 0, "create: %s", fc_strerror(rc));
  if (rc) return 1;
  store = s;

  filler f[N];
  fc_put_fill pf[N];
  fc_put puts[N + 1];
  char keys[N][8];
  static char plain[] = "a plain value beside the filled ones";
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "k%02d", i);
    f[i] = (filler){.byte = (unsigned char)(0x10 + i), .key = keys[i]};
    pf[i] = (fc_put_fill){fill, &f[i], done};
    puts[i] = (fc_put){FC_DB_FEAT, keys[i], strlen(keys[i]),
                       &pf[i],     VLEN,    FC_PUT_FILL | FC_PUT_NOOVERWRITE};
  }
  puts[N] = (fc_put){FC_DB_META, "plain", 5, plain, sizeof plain, 0};
  rc = fc_store_write(s, puts, N + 1);
  CHECK(rc == 0, "batch of %d x %d MiB: %s", N, VLEN >> 20, fc_strerror(rc));
  int calls = 0;
  for (int i = 0; i < N; i++) calls += f[i].calls;
  CHECK(calls > N && f[0].calls >= 2 && f[N - 1].calls >= 1,
        "fill calls: %d for %d puts (the first put's %d): the batch was not replayed after the map "
        "grew",
        calls, N, f[0].calls);
  for (int i = 0; i < N; i++)
    CHECK(f[i].dones == 1 && !f[i].fill_after_done && f[i].readable_at_done,
          "%s: done called %d times, fill %d times after it, the value %s at done (the map had no "
          "room: done comes when the write returns)",
          keys[i], f[i].dones, f[i].fill_after_done,
          f[i].readable_at_done ? "committed" : "not committed");
  fc_store_info info;
  CHECK(fc_store_info_get(s, &info) == 0 && info.map_size >= (uint64_t)N * VLEN, "map %llu",
        (unsigned long long)info.map_size);

  /* NOOVERWRITE on stored keys: fill is not called; a new key beside them is filled */
  filler again = {.byte = 0x77, .key = "k03"}, fresh = {.byte = 0x66, .key = "new"};
  fc_put_fill pa = {fill, &again, done}, pn = {fill, &fresh, done};
  fc_put two[2] = {{FC_DB_FEAT, "k03", 3, &pa, VLEN, FC_PUT_FILL | FC_PUT_NOOVERWRITE},
                   {FC_DB_FEAT, "new", 3, &pn, 1000, FC_PUT_FILL | FC_PUT_NOOVERWRITE}};
  rc = fc_store_write(s, two, 2);
  CHECK(rc == 0 && again.calls == 0 && fresh.calls == 1,
        "NOOVERWRITE: rc %d, fill of the stored key called %d times, of the new one %d", rc,
        again.calls, fresh.calls);
  /* a small batch in a map with room: done before the commit, the value not readable yet */
  CHECK(again.dones == 1 && fresh.dones == 1 && !fresh.fill_after_done && !fresh.readable_at_done,
        "small batch: done called %d and %d times, the new value %s at done (want: before the "
        "commit)",
        again.dones, fresh.dones, fresh.readable_at_done ? "already committed" : "not committed");

  /* a failing fill aborts the batch, and only the batch */
  filler ok = {.byte = 0x21}, bad = {.byte = 0x22, .fail = EPROTO};
  fc_put_fill po = {fill, &ok, done}, pb = {fill, &bad, done};
  fc_put three[3] = {{FC_DB_FEAT, "ok", 2, &po, 5000, FC_PUT_FILL},
                     {FC_DB_META, "plain2", 6, plain, sizeof plain, 0},
                     {FC_DB_FEAT, "bad", 3, &pb, 5000, FC_PUT_FILL}};
  rc = fc_store_write(s, three, 3);
  CHECK(rc == EPROTO, "a failing fill: rc %d (%s), want EPROTO", rc, fc_strerror(rc));
  CHECK(ok.dones == 1 && bad.dones == 1, "a failed batch: done called %d and %d times", ok.dones,
        bad.dones);
  fc_put again_ok = {FC_DB_FEAT, "later", 5, &po, 100, FC_PUT_FILL};
  rc = fc_store_write(s, &again_ok, 1);
  CHECK(rc == 0, "a write after the failed fill: %s (sticky?)", fc_strerror(rc));
  fc_store_close(s);

  CHECK(fc_store_open(path, FC_STORE_RDONLY, &s) == 0, "reopen");
  filler ro = {.byte = 0x31};
  fc_put_fill pr = {fill, &ro, done};
  fc_put ro_put = {FC_DB_FEAT, "ro", 2, &pr, 100, FC_PUT_FILL};
  rc = fc_store_write(s, &ro_put, 1);
  CHECK(rc == EACCES && ro.calls == 0 && ro.dones == 1,
        "a read-only store: rc %d, fill called %d times, done %d", rc, ro.calls, ro.dones);
  fc_rtxn *t;
  CHECK(fc_store_read_begin(s, &t) == 0, "rtxn");
  for (int i = 0; i < N; i++)
    CHECK(value_is(t, keys[i], (unsigned char)(0x10 + i), VLEN), "%s: not what fill wrote",
          keys[i]);
  const void *v;
  size_t vl;
  CHECK(fc_rtxn_get(t, FC_DB_META, "plain", 5, &v, &vl) == 0 && vl == sizeof plain &&
            memcmp(v, plain, vl) == 0,
        "the plain put of the batch");
  CHECK(value_is(t, "new", 0x66, 1000) && value_is(t, "later", 0x21, 100), "new, later");
  CHECK(fc_rtxn_get(t, FC_DB_FEAT, "ok", 2, &v, &vl) == FC_ENOTFOUND &&
            fc_rtxn_get(t, FC_DB_FEAT, "bad", 3, &v, &vl) == FC_ENOTFOUND &&
            fc_rtxn_get(t, FC_DB_META, "plain2", 6, &v, &vl) == FC_ENOTFOUND,
        "the failed batch left something behind");
  fc_rtxn_end(t);
  fc_store_close(s);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("test_store_fill");
}
