/* Split stores (docs/FORMAT.md "Split stores"): the marker's bytes and every way it can be wrong,
 * creation (marker, parts, meta part), reopening, the refusals, expansion of store lists, a part
 * missing under the marker, a misplaced part, fc_store_open on the directory (FC_ESPLIT). The
 * featurize and tokenize paths are tested end to end by tests/cli/featurize_split*.sh. */
#include "featcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

static char root[] = "/tmp/fc_test_split_XXXXXX";

static void put_file(const char *path, const char *bytes, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(bytes, 1, len, f) != len) CHECK(0, "cannot write %s", path);
  if (f) fclose(f);
}

static int marker_rc(const char *bytes, size_t len, unsigned *n) {
  char d[300], p[320];
  snprintf(d, sizeof d, "%s/m", root);
  mkdir(d, 0777);
  snprintf(p, sizeof p, "%s/featcache-split", d);
  put_file(p, bytes, len);
  return fc_store_split_count(d, n);
}

static int read_meta_part(fc_store *s, char *out, size_t len) {
  fc_rtxn *t;
  const void *v;
  size_t vl;
  int rc = fc_store_read_begin(s, &t);
  if (rc) return rc;
  rc = fc_rtxn_get(t, FC_DB_META, "part", 4, &v, &vl);
  if (!rc) snprintf(out, len, "%.*s", (int)vl, (const char *)v);
  fc_rtxn_end(t);
  return rc;
}

int main(void) {
  if (!mkdtemp(root)) return 2;
  char dir[300], p[400];
  unsigned n = 99;

  /* The marker: exactly "featcache-split/1 N\n", 2 <= N <= 64. */
  CHECK(fc_store_split_count(root, &n) == 0 && n == 0, "no marker: got n %u", n);
  CHECK(marker_rc("featcache-split/1 4\n", 20, &n) == 0 && n == 4, "n %u", n);
  CHECK(marker_rc("featcache-split/1 64\n", 21, &n) == 0 && n == 64, "n %u", n);
  static const char *const bad[] =
      {"featcache-split/1 4",    "featcache-split/1 4\n\n",         "featcache-split/1 04\n",
       "featcache-split/1 1\n",  "featcache-split/1 0\n",           "featcache-split/1 65\n",
       "featcache-split/1 4 \n", "featcache-split/1  4\n",          "featcache-split/1 -4\n",
       "featcache-split/1\n",    "featcache-split/1 99999999999\n", "",
       "featcache/1 4\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = marker_rc(bad[i], strlen(bad[i]), &n);
    CHECK(rc == FC_EFORMAT, "marker %zu ('%s'): got %s, want FC_EFORMAT", i, bad[i],
          fc_strerror(rc));
  }
  CHECK(marker_rc("featcache-split/2 4\n", 20, &n) == FC_EVERSION, "a later marker version");
  CHECK(marker_rc("featcache-split/10 4\n", 21, &n) == FC_EVERSION, "version 10");

  /* Create a split store of 3 parts. */
  snprintf(dir, sizeof dir, "%s/s", root);
  fc_store **parts = NULL;
  unsigned np = 0;
  char why[512];
  int rc =
      fc_store_open_split(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, 3, &parts, &np, why, sizeof why);
  CHECK(rc == 0 && np == 3, "create: %s %s", fc_strerror(rc), why);
  if (rc) return 1;
  for (unsigned k = 0; k < np; k++) {
    char got[32] = "", want[32];
    snprintf(want, sizeof want, "%u/3", k);
    CHECK(read_meta_part(parts[k], got, sizeof got) == 0 && strcmp(got, want) == 0,
          "part %u: meta part '%s', want '%s'", k, got, want);
    unsigned pk = 9, pn = 9;
    CHECK(fc_store_part_of_store(parts[k], &pk, &pn) == 0 && pk == k && pn == 3, "part_of %u/%u",
          pk, pn);
  }
  fc_store_close_split(parts, np);
  snprintf(p, sizeof p, "%s/featcache-split", dir);
  FILE *f = fopen(p, "rb");
  char mb[64] = "";
  size_t ml = f ? fread(mb, 1, sizeof mb, f) : 0;
  if (f) fclose(f);
  CHECK(ml == 20 && memcmp(mb, "featcache-split/1 3\n", 20) == 0, "marker bytes '%.*s'", (int)ml,
        mb);
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  CHECK(access(p, F_OK) != 0, "no data.mdb in the split store's directory");

  /* Reopen: the marker's N wins; refusals say why. */
  rc = fc_store_open_split(dir, FC_STORE_CREATE, 0, &parts, &np, why, sizeof why);
  CHECK(rc == 0 && np == 3, "reopen without want: %s", fc_strerror(rc));
  if (!rc) fc_store_close_split(parts, np);
  rc = fc_store_open_split(dir, FC_STORE_CREATE, 3, &parts, &np, why, sizeof why);
  CHECK(rc == 0 && np == 3, "reopen with want 3: %s", fc_strerror(rc));
  if (!rc) fc_store_close_split(parts, np);
  rc = fc_store_open_split(dir, FC_STORE_CREATE, 2, &parts, &np, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "split into 3 parts, not 2"), "want 2: %s %s",
        fc_strerror(rc), why);
  snprintf(p, sizeof p, "%s/part-1", dir);
  rc = fc_store_open_split(p, FC_STORE_CREATE, 0, &parts, &np, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "is part 1 of a split store of 3 parts"), "a part: %s %s",
        fc_strerror(rc), why);
  fc_store *s = NULL;
  CHECK(fc_store_open(dir, FC_STORE_CREATE, &s) == FC_ESPLIT, "fc_store_open on the split dir");
  CHECK(fc_store_open(dir, FC_STORE_RDONLY, &s) == FC_ESPLIT, "read-only open on the split dir");
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  CHECK(access(p, F_OK) != 0, "a refused open made no data.mdb");

  /* A plain store stays plain. */
  char plain[300];
  snprintf(plain, sizeof plain, "%s/plain", root);
  rc = fc_store_open_split(plain, FC_STORE_CREATE, 0, &parts, &np, why, sizeof why);
  CHECK(rc == 0 && np == 1, "a new plain store: %s", fc_strerror(rc));
  if (!rc) fc_store_close_split(parts, np);
  rc = fc_store_open_split(plain, FC_STORE_CREATE, 4, &parts, &np, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "a store of one part"), "want 4 on plain: %s", why);
  rc = fc_store_open_split(plain, FC_STORE_CREATE, FC_SPLIT_MAX_PARTS + 1, &parts, &np, why,
                           sizeof why);
  CHECK(rc == EINVAL, "want 65: %s", fc_strerror(rc));

  /* Expansion: a split store becomes its parts in order, others stay. */
  const char *list[] = {plain, dir, plain};
  char **all = NULL;
  size_t na = 0;
  rc = fc_store_expand(list, 3, &all, &na, why, sizeof why);
  CHECK(rc == 0 && na == 5, "expand: %s, %zu paths", fc_strerror(rc), na);
  if (!rc && na == 5) {
    CHECK(strcmp(all[0], plain) == 0 && strcmp(all[4], plain) == 0, "ends: %s %s", all[0], all[4]);
    for (unsigned k = 0; k < 3; k++) {
      char want[400];
      snprintf(want, sizeof want, "%s/part-%u", dir, k);
      CHECK(strcmp(all[1 + k], want) == 0, "path %u: %s, want %s", k, all[1 + k], want);
    }
  }
  fc_store_paths_free(all, na);
  snprintf(p, sizeof p, "%s/m", root); /* its marker is "featcache-split/2 4\n" now */
  const char *badlist[] = {p};
  rc = fc_store_expand(badlist, 1, &all, &na, why, sizeof why);
  CHECK(rc == FC_EVERSION && strstr(why, "featcache-split"), "expand a bad marker: %s %s",
        fc_strerror(rc), why);

  /* A part missing under the marker (a job killed while making it): readers name it, the next
   * writer creates it. */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf %s/part-2", dir);
  CHECK(system(cmd) == 0, "rm part-2");
  const char *one[] = {dir};
  rc = fc_store_expand(one, 1, &all, &na, why, sizeof why);
  CHECK(rc == 0 && na == 3, "expand with a missing part: %s", fc_strerror(rc));
  if (!rc && na == 3) {
    CHECK(fc_store_open(all[2], FC_STORE_RDONLY, &s) == ENOENT, "reading the missing part");
    CHECK(fc_store_open(all[1], FC_STORE_RDONLY, &s) == 0, "reading part 1");
    fc_store_close(s);
  }
  fc_store_paths_free(all, na);
  rc = fc_store_open_split(dir, 0, 0, &parts, &np, why, sizeof why);
  CHECK(rc == ENOENT && strstr(why, "part-2"), "no CREATE, missing part: %s %s", fc_strerror(rc),
        why);
  rc = fc_store_open_split(dir, FC_STORE_CREATE, 0, &parts, &np, why, sizeof why);
  CHECK(rc == 0 && np == 3, "recreate part-2: %s %s", fc_strerror(rc), why);
  if (!rc) {
    char got[32] = "";
    CHECK(read_meta_part(parts[2], got, sizeof got) == 0 && strcmp(got, "2/3") == 0, "'%s'", got);
    fc_store_close_split(parts, np);
  }

  /* A part whose meta part disagrees with its place is refused. */
  snprintf(cmd, sizeof cmd, "rm -rf %s/part-2 && cp -r %s/part-0 %s/part-2", dir, dir, dir);
  CHECK(system(cmd) == 0, "copy part-0 over part-2");
  rc = fc_store_open_split(dir, FC_STORE_CREATE, 0, &parts, &np, why, sizeof why);
  CHECK(rc == FC_EFORMAT && strstr(why, "it says it is part 0 of 3"), "misplaced part: %s %s",
        fc_strerror(rc), why);

  /* The marker cut short (a file-size limit of 10 bytes: the 20-byte marker's write is short):
   * the error says why the write stopped (EFBIG), never an errno left over from an earlier call.
   * In a child: the limit is the process's. */
  {
    char lim[300];
    snprintf(lim, sizeof lim, "%s/limited", root);
    pid_t pid = fork();
    if (pid == 0) {
      struct rlimit rl = {10, 10};
      signal(SIGXFSZ, SIG_IGN);
      if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
      errno = ENOENT;
      char w[512] = "";
      fc_store **pp = NULL;
      unsigned np2 = 0;
      int r = fc_store_open_split(lim, FC_STORE_CREATE, 3, &pp, &np2, w, sizeof w);
      if (r != EFBIG || !strstr(w, "File too large")) {
        fprintf(stderr, "marker past RLIMIT_FSIZE: %s (%s), want EFBIG\n", fc_strerror(r), w);
        _exit(1);
      }
      _exit(0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "a short write of the marker: child status %d", st);
    struct stat sst;
    snprintf(lim, sizeof lim, "%s/limited/featcache-split", root);
    CHECK(stat(lim, &sst) != 0, "a marker was left after its write failed");
  }

  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  if (failures)
    fprintf(stderr, "test_split: %d failure(s)\n", failures);
  else
    printf("test_split: ok\n");
  return failures ? 1 : 0;
}
