/* The walk of a store's pages with each value's overflow pages counted from its size
 * (fc_verify_opts.pages_only 3, what the Loader's page check and cache-merge's check of its inputs
 * use) against the walk that reads each value's first page (pages_only 1): on a sound store both
 * find nothing, also where LMDB rewrote a value smaller in place and kept its larger run (the
 * count then misses pages, and the walk is made again reading them); a page the free list names
 * inside a value's run is found by both, in the same words; a first page whose page count a
 * flipped bit raised into the next value's pages is found only by the walk that reads it — which
 * shows the counted walk does not read first pages. Runs under ASan/UBSan in the sanitizer build. */
#include "featcache/fc_config.h"
#include "featcache/fc_store.h"
#include "featcache/fc_verify.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/check.h"

enum { PAGE = 4096, N = 30, VAL = 20000 };

static char tmpdir[256];

static void key_of(int i, uint8_t k[16]) {
  memset(k, 0, 16);
  snprintf((char *)k, 16, "key%04d", i);
}

/* The bytes of value i: its number, then a pattern (found again in data.mdb by its first 8). */
static void value_of(int i, uint8_t *v, size_t len) {
  for (size_t j = 0; j < len; j++) v[j] = (uint8_t)(j * 7 + (size_t)i);
  snprintf((char *)v, 8, "V%06d", i);
}

/* A store of N values of VAL bytes (5 overflow pages each); with slack, value 0 first written
 * 40,000 bytes and then VAL in the same transaction (LMDB keeps its 10-page run); with freed, a
 * value written and deleted, so that the free list names pages. */
static void make_store(const char *dir, int slack, int freed) {
  fc_store *s;
  int rc = fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  CHECK(rc == 0, "open %s: %s", dir, fc_strerror(rc));
  if (rc) exit(1);
  static uint8_t keys[N + 1][16], vals[N + 1][2 * VAL];
  fc_put puts[N + 1];
  size_t np = 0;
  if (slack) {
    key_of(0, keys[N]);
    value_of(0, vals[N], 2 * VAL);
    puts[np++] = (fc_put){FC_DB_FEAT, keys[N], 16, vals[N], 2 * VAL, 0};
  }
  for (int i = 0; i < N; i++) {
    key_of(i, keys[i]);
    value_of(i, vals[i], VAL);
    puts[np++] = (fc_put){FC_DB_FEAT, keys[i], 16, vals[i], VAL, 0};
  }
  CHECK((rc = fc_store_write(s, puts, np)) == 0, "write: %s", fc_strerror(rc));
  if (freed) {
    fc_put p = {FC_DB_META, "scratch", 7, vals[0], VAL, 0};
    CHECK(fc_store_write(s, &p, 1) == 0, "scratch");
    p.flags = FC_PUT_DELETE;
    CHECK(fc_store_write(s, &p, 1) == 0, "scratch deleted");
  }
  fc_store_sync(s);
  fc_store_close(s);
}

static uint8_t *read_store(const char *dir, size_t *len) {
  char p[512];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(*len);
  if (b && fread(b, 1, *len, f) != *len) *len = 0;
  fclose(f);
  return b;
}

static void write_at(const char *dir, size_t off, const void *bytes, size_t n) {
  char p[512];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  int fd = open(p, O_RDWR);
  CHECK(fd >= 0 && pwrite(fd, bytes, n, (off_t)off) == (ssize_t)n, "write into %s", p);
  if (fd >= 0) close(fd);
}

/* The page number of value i's first overflow page (its bytes start after the page's header). */
static uint64_t first_page(const uint8_t *b, size_t len, int i) {
  char tag[8];
  snprintf(tag, sizeof tag, "V%06d", i);
  const uint8_t *hit = memmem(b, len, tag, 8);
  CHECK(hit && (size_t)(hit - b) % PAGE == 16, "value %d's first page", i);
  return hit ? (uint64_t)(hit - b) / PAGE : 0;
}

static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

typedef struct {
  uint64_t errors, warnings;
  char first[1024]; /* the first finding's problem */
} result;

static result check(const char *dir, int pages_only) {
  fc_verify_opts o;
  fc_verify_opts_init(&o);
  o.pages_only = pages_only;
  o.threads = 1;
  fc_verify_report r;
  char why[256];
  result out = {0};
  int rc = fc_verify_store(dir, &o, &r, why, sizeof why);
  CHECK(rc == 0, "verify %s (pages_only %d): %s", dir, pages_only, why);
  if (rc) return out;
  out.errors = r.errors;
  out.warnings = r.warnings;
  if (r.count) snprintf(out.first, sizeof out.first, "%s", r.findings[0].problem);
  for (size_t i = 0; i < r.count; i++)
    fprintf(stderr, "  pages_only %d: %s\n", pages_only, r.findings[i].problem);
  fc_verify_report_free(&r);
  return out;
}

static void test_sound(void) {
  char d[300];
  snprintf(d, sizeof d, "%s/sound", tmpdir);
  make_store(d, 0, 1);
  for (int m = 1; m <= 3; m += 2) {
    result r = check(d, m);
    CHECK(r.errors == 0 && r.warnings == 0, "sound store, pages_only %d: %llu errors %llu warnings",
          m, (unsigned long long)r.errors, (unsigned long long)r.warnings);
  }
}

/* Value 0 rewritten smaller in its transaction: its first page still counts 10 pages, its size 5.
 * The counted walk alone would find 5 pages in no tree and not free: it walks again instead. */
static void test_slack(void) {
  char d[300];
  snprintf(d, sizeof d, "%s/slack", tmpdir);
  make_store(d, 1, 0);
  size_t len;
  uint8_t *b = read_store(d, &len);
  const uint64_t pg = b ? first_page(b, len, 0) : 0;
  const uint32_t n = b ? get32(b + pg * PAGE + 12) : 0;
  CHECK(n == 10, "the fixture: value 0's run is %u pages, want 10 (LMDB kept the larger run)", n);
  free(b);
  for (int m = 1; m <= 3; m += 2) {
    result r = check(d, m);
    CHECK(r.errors == 0 && r.warnings == 0,
          "value rewritten smaller in place, pages_only %d: %llu errors %llu warnings (%s)", m,
          (unsigned long long)r.errors, (unsigned long long)r.warnings, r.first);
  }
}

/* A flipped bit raises value 3's page count by one, into value 4's first page (a write that
 * frees value 3 would free that page too). Reading first pages finds it; counting does not. */
static void test_count_raised(void) {
  char d[300];
  snprintf(d, sizeof d, "%s/raised", tmpdir);
  make_store(d, 0, 0);
  size_t len;
  uint8_t *b = read_store(d, &len);
  if (!b) return;
  const uint64_t p3 = first_page(b, len, 3), p4 = first_page(b, len, 4);
  const uint32_t n = get32(b + p3 * PAGE + 12);
  CHECK(p3 + n == p4, "the fixture: value 4 right after value 3 (pages %llu + %u, %llu)",
        (unsigned long long)p3, n, (unsigned long long)p4);
  const uint32_t raised = n + 1;
  write_at(d, p3 * PAGE + 12, &raised, 4);
  free(b);
  result r = check(d, 1);
  char want[128];
  snprintf(want, sizeof want, "page %llu is reached twice", (unsigned long long)p4);
  CHECK(r.errors == 1 && strstr(r.first, want),
        "first pages read: want \"%s\", got %llu errors (%s)", want, (unsigned long long)r.errors,
        r.first);
  r = check(d, 3);
  CHECK(r.errors == 0 && r.warnings == 0,
        "first pages counted: their counts are not read, want no finding, got %llu errors (%s)",
        (unsigned long long)r.errors, r.first);
}

/* The root page of named db name (LMDB 0.9's layout: the newer meta page's main db root, its leaf
 * nodes each a name and an MDB_db whose root is at 40). */
static uint64_t db_root(const uint8_t *b, const char *name) {
  const size_t txn_at = 16 + 24 + 2 * 48 + 8;
  const uint8_t *meta = get64(b + txn_at) > get64(b + PAGE + txn_at) ? b : b + PAGE;
  const uint8_t *main = b + get64(meta + 16 + 24 + 48 + 40) * PAGE;
  const uint16_t lower = (uint16_t)(main[12] | main[13] << 8);
  for (size_t i = 0; i < (size_t)(lower - 16) / 2; i++) {
    const uint8_t *n = main + (main[16 + 2 * i] | main[17 + 2 * i] << 8);
    const uint16_t ksize = (uint16_t)(n[6] | n[7] << 8);
    if (ksize == strlen(name) && !memcmp(n + 8, name, ksize)) return get64(n + 8 + ksize + 40);
  }
  return 0;
}

/* A page whose header names another page (a flipped bit): LMDB reads it where its parent points,
 * never looking, but a write that changes it (a B-tree page) or frees it (an overflow value's
 * first page) frees the page its header names in its place — here one past the file's end, which
 * the next write is then handed. The walk took such a page for one LMDB's reads would refuse and
 * said nothing: cache-verify found the store clean, and a featurize --check-pages wrote into it. */
static void test_misnumbered(void) {
  char d[300];
  snprintf(d, sizeof d, "%s/misnumbered", tmpdir);
  make_store(d, 0, 0);
  size_t len;
  uint8_t *b = read_store(d, &len);
  if (!b) return;
  const uint64_t root = db_root(b, "feat"), first = first_page(b, len, 7);
  CHECK(root >= 2 && root * PAGE < len && get64(b + root * PAGE) == root,
        "the fixture: the feat db's root page (%llu)", (unsigned long long)root);
  free(b);
  const uint64_t wrong = root + 1000, wrong_ov = first + 1000;
  write_at(d, root * PAGE, &wrong, 8);
  char want[160];
  snprintf(want, sizeof want,
           "B-tree damaged (page %llu of the feat db: its header names page %llu)",
           (unsigned long long)root, (unsigned long long)wrong);
  for (int m = 1; m <= 3; m += 2) {
    result r = check(d, m);
    CHECK(r.errors == 1 && strstr(r.first, want) == r.first,
          "a B-tree page misnumbered, pages_only %d: want \"%s\", got %llu errors (%s)", m, want,
          (unsigned long long)r.errors, r.first);
  }
  write_at(d, root * PAGE, &root, 8);
  write_at(d, first * PAGE, &wrong_ov, 8);
  snprintf(want, sizeof want,
           "B-tree damaged (overflow page %llu of the feat db: its header names page %llu)",
           (unsigned long long)first, (unsigned long long)wrong_ov);
  result r = check(d, 1);
  CHECK(r.errors == 1 && strstr(r.first, want) == r.first,
        "an overflow page misnumbered: want \"%s\", got %llu errors (%s)", want,
        (unsigned long long)r.errors, r.first);
  r = check(d, 3); /* a value's first page not read: as a count that is wrong, not seen */
  CHECK(r.errors == 0, "an overflow page misnumbered, counted: got %llu errors (%s)",
        (unsigned long long)r.errors, r.first);
}

/* A stop (Ctrl-C: o.stop set) ends the walk at the next page: the run returns FC_EINTR with what
 * was found so far, here nothing, where the walk went on to the store's end (a big store's walk
 * takes minutes from a cold disk) and found test_count_raised's damage before it returned. */
static void test_stop(void) {
  char d[300];
  snprintf(d, sizeof d, "%s/raised", tmpdir); /* test_count_raised's: pages_only 1 finds 1 error */
  volatile int stop = 1;
  for (int m = 1; m <= 3; m++) {
    fc_verify_opts o;
    fc_verify_opts_init(&o);
    o.pages_only = m;
    o.threads = 1;
    o.stop = (volatile const int *)&stop;
    fc_verify_report r;
    int rc = fc_verify_store(d, &o, &r, NULL, 0);
    CHECK(rc == FC_EINTR && r.errors == 0 && r.warnings == 0,
          "stopped before the walk, pages_only %d: want FC_EINTR and no finding, got %s, %llu "
          "errors (%s)",
          m, fc_strerror(rc), (unsigned long long)r.errors, r.count ? r.findings[0].problem : "");
    fc_verify_report_free(&r);
  }
}

/* The free list's first page number made the third page of value 5's run: the next write would be
 * handed a page of it. Both walks find it, in the same words. */
static void test_free_list_names_value(void) {
  char d[300];
  snprintf(d, sizeof d, "%s/freelist", tmpdir);
  make_store(d, 0, 1);
  size_t len;
  uint8_t *b = read_store(d, &len);
  if (!b) return;
  /* the newer meta page (transaction id at 16 + 24 + 2 * 48 + 8), its free db's root (at 80) */
  const size_t txn_at = 16 + 24 + 2 * 48 + 8;
  const uint8_t *meta = get64(b + txn_at) > get64(b + PAGE + txn_at) ? b : b + PAGE;
  const uint64_t root = get64(meta + 80);
  const uint8_t *leaf = b + root * PAGE;
  const uint16_t off = (uint16_t)(leaf[16] | leaf[17] << 8), flags = leaf[off + 4],
                 ksize = (uint16_t)(leaf[off + 6] | leaf[off + 7] << 8);
  CHECK(!(flags & 1), "the fixture: the free list's ids are on its leaf");
  const size_t ids = (size_t)(leaf + off + 8 + ksize - b);
  CHECK(get64(b + ids) >= 1, "the fixture: the free list names pages");
  const uint64_t target = first_page(b, len, 5) + 2;
  write_at(d, ids + 8, &target, 8);
  free(b);
  char want[160];
  snprintf(want, sizeof want, "free list damaged (it names page %llu, which the feat B-tree uses)",
           (unsigned long long)target);
  for (int m = 1; m <= 3; m += 2) {
    result r = check(d, m);
    CHECK(r.errors == 1 && strstr(r.first, want) == r.first,
          "free list naming a value's page, pages_only %d: want \"%s\", got %llu errors (%s)", m,
          want, (unsigned long long)r.errors, r.first);
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/fc-test-verify-pages.XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  test_sound();
  test_slack();
  test_count_raised();
  test_stop();
  test_misnumbered();
  test_free_list_names_value();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  else
    fprintf(stderr, "all page walk checks passed\n");
  return failures ? 1 : 0;
}
