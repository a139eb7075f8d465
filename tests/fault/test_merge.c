/* cache-merge's engine (libcache/core/merge/) on real shards: 30 synthesized WAVs featurized whole into
 * a reference store and, split by fc_item_list_shard, into 3 shard stores.
 *   - the merge of the shards equals the reference, key for key and byte for byte, in every db;
 *     merging again writes nothing; the inputs are never written;
 *   - the n-th commit or put fails (formats/common/fault.h), n = 1, 2, ... until the merge succeeds:
 *     a clean EIO each time, an output in which every audio entry has its sound record, and the
 *     final output equal to the reference (resumed runs complete it);
 *   - the stop flag: FC_EINTR after one batch, a rerun completes; likewise in the failure-record
 *     pass (copying the inputs' records, and clearing the output's records of ids now stored):
 *     the batch committed stays, the output verifies, a rerun completes it;
 *   - conflicts: an id with a different audio entry refuses the merge (nothing created), and
 *     prefer first / last / a store picks the winner; an output holding a differing entry is a
 *     conflict too;
 *   - a damaged record is replaced by another input's sound copy, or left out (dropped);
 *   - write-back passes (libcache/core/merge/writeback.c), one every 128 KiB committed, on 12 records
 *     of ~550 KB: the merge equals the reference; on a disk-backed /tmp, the pages written before
 *     the last passes are no longer in the page cache and no block is left allocated beyond the
 *     file's end; the n-th pass fails (EIO), n = 1, 2, ... until the merge succeeds, consistent
 *     after each and equal to the reference at the end; failure records are written through the
 *     same passes (a failed pass during the failure-record pass fails the merge). */
#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "featcache/fc_merge.h"
#include "featcache/fc_shard.h"
#include "featcache/fc_verify.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "formats/common/fault.h"
#include "tests/check.h"
#include "tests/wav.h"

#define NFILES 30

static int featurize(const char *dir, const fc_mel_config *cfg, const fc_item_list *items) {
  fc_store *s;
  int rc = fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  if (rc) return rc;
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  fc_featurize_stats st;
  char why[256];
  rc = fc_featurize_run(s, cfg, items->items, items->count, &o, &st, why, sizeof why);
  fc_store_close(s);
  return rc;
}

/* 0 when stores a and b hold the same keys and bytes in every db; else prints the first difference. */
static int compare_stores(const char *a, const char *b) {
  fc_store *sa, *sb;
  if (fc_store_open(a, FC_STORE_RDONLY, &sa)) return -1;
  if (fc_store_open(b, FC_STORE_RDONLY, &sb)) {
    fc_store_close(sa);
    return -1;
  }
  fc_rtxn *ta, *tb;
  fc_store_read_begin(sa, &ta);
  fc_store_read_begin(sb, &tb);
  int diff = 0;
  for (int db = 0; db <= FC_DB_FAILED && !diff; db++) {
    fc_cursor *ca, *cb;
    fc_cursor_open(ta, db, &ca);
    fc_cursor_open(tb, db, &cb);
    for (;;) {
      const void *ka, *va, *kb, *vb;
      size_t kal, val, kbl, vbl;
      int ra = fc_cursor_next(ca, &ka, &kal, &va, &val);
      int rb = fc_cursor_next(cb, &kb, &kbl, &vb, &vbl);
      if (ra != rb) {
        diff = 1;
        fprintf(stderr, "  %s: one store has more entries\n", fc_db_name(db));
        break;
      }
      if (ra) break;
      /* a config's creation time (meta created/<hex>) is when each store made it: the same key,
       * a time of the same form, not the same second */
      int stamp =
          db == FC_DB_META && kal > 8 && !memcmp(ka, "created/", 8) && val == 20 && vbl == 20;
      if (kal != kbl || memcmp(ka, kb, kal) || val != vbl || (!stamp && memcmp(va, vb, val))) {
        fprintf(stderr, "  %s: entries differ\n", fc_db_name(db));
        diff = 1;
        break;
      }
    }
    fc_cursor_close(ca);
    fc_cursor_close(cb);
  }
  fc_rtxn_end(ta);
  fc_rtxn_end(tb);
  fc_store_close(sa);
  fc_store_close(sb);
  return diff;
}

/* Every audio entry of the store has its record under cfg, and it verifies; returns the entries. */
static uint64_t check_consistent(const char *dir, const fc_digest *cfg) {
  fc_store *s;
  if (fc_store_open(dir, FC_STORE_RDONLY, &s)) return 0;
  fc_rtxn *t;
  fc_store_read_begin(s, &t);
  fc_cursor *c;
  fc_cursor_open(t, FC_DB_AUDIO, &c);
  const void *k, *v;
  size_t kl, vl;
  uint64_t n = 0;
  while (fc_cursor_next(c, &k, &kl, &v, &vl) == 0) {
    n++;
    fc_audio_entry e;
    CHECK(fc_audio_entry_decode(v, vl, &e) == 0);
    fc_digest key;
    fc_record_key(&e.digest, cfg, &key);
    const void *rv;
    size_t rl;
    int rc = fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, &rv, &rl);
    CHECK(rc == 0, "entry %.*s without its record", (int)kl, (const char *)k);
    fc_record_header h;
    const void *pl;
    if (!rc)
      CHECK(fc_record_verify(rv, rl, &h, &pl, NULL, 0) == 0, "record of %.*s", (int)kl,
            (const char *)k);
  }
  fc_cursor_close(c);
  fc_rtxn_end(t);
  fc_store_close(s);
  return n;
}

typedef struct seen {
  int conflicts, bad;
  long winner;
  char id[64];
} seen;

static void on_conflict(const fc_merge_conflict *cf, void *user) {
  seen *s = user;
  s->conflicts++;
  s->winner = cf->winner;
  snprintf(s->id, sizeof s->id, "%.*s", (int)cf->key_len, cf->key);
}

static void on_bad(long input, int db, const char *key, const char *why, void *user) {
  (void)input, (void)db, (void)key, (void)why;
  ((seen *)user)->bad++;
}

static volatile sig_atomic_t stop_flag;
static void stop_after_commit(const fc_merge_stats *st, void *user) {
  (void)user;
  if (st->commits) stop_flag = 1;
}

static int progress_calls; /* progress reports since arm_stop */

/* The stop flag armed with a progress hook that sets it, and disarmed. */
static void arm_stop(fc_merge_opts *o, fc_merge_progress_fn hook) {
  stop_flag = 0;
  progress_calls = 0;
  o->stop = &stop_flag;
  o->on_progress = hook;
}
static void disarm_stop(fc_merge_opts *o) {
  o->stop = NULL;
  o->on_progress = NULL;
}

/* merge.c reports progress once after each of its five dbs (meta, feat, tok, audio, text), then
 * from the failure pass: stop at the first report of that pass. */
static void stop_in_failure_pass(const fc_merge_stats *st, void *user) {
  (void)st, (void)user;
  if (++progress_calls == 6) stop_flag = 1;
}
static void stop_after_failures(const fc_merge_stats *st, void *user) {
  (void)user;
  if (st->failures_copied || st->failures_cleared) stop_flag = 1;
}

/* A store holding only failure records: ids prefix00, prefix01, ... under config cfg, each
 * with a reason of `reason_len` bytes. */
static int write_failures(const char *dir, const char *prefix, int count, const fc_digest *cfg,
                          size_t reason_len) {
  fc_store *s;
  int rc = fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  if (rc) return rc;
  char *reason = malloc(reason_len), *val = malloc(FC_FAILURE_FIXED + 64 + reason_len);
  memset(reason, 'r', reason_len);
  for (int i = 0; i < count && !rc; i++) {
    char id[64], src[96];
    snprintf(id, sizeof id, "%s%02d", prefix, i);
    snprintf(src, sizeof src, "/corpus/%s.wav", id);
    fc_failure f = {.config = *cfg,
                    .time_ns = 1000000000ll * (1700000000 + i),
                    .err = FC_EFORMAT,
                    .source = src,
                    .source_len = strlen(src),
                    .reason = reason,
                    .reason_len = reason_len};
    fc_failure_encode(&f, val);
    fc_put p = {FC_DB_FAILED, id, strlen(id), val, fc_failure_size(&f), 0};
    rc = fc_store_write(s, &p, 1);
  }
  free(reason);
  free(val);
  fc_store_close(s);
  return rc;
}

/* The failure records the store holds. */
static uint64_t failures_in(const char *dir) {
  fc_store *s;
  if (fc_store_open(dir, FC_STORE_RDONLY, &s)) return 0;
  fc_rtxn *t;
  uint64_t n = 0;
  if (fc_store_read_begin(s, &t) == 0) {
    fc_rtxn_count(t, FC_DB_FAILED, &n);
    fc_rtxn_end(t);
  }
  fc_store_close(s);
  return n;
}

/* cache-verify's checks find no error in the store. */
static int verifies(const char *dir) {
  fc_verify_opts vo;
  fc_verify_opts_init(&vo);
  fc_verify_report r;
  char why[256] = "";
  int rc = fc_verify_store(dir, &vo, &r, why, sizeof why);
  int ok = rc == 0 && r.opened && r.errors == 0;
  if (!ok)
    fprintf(stderr, "  %s: verify rc %d, %llu errors %s\n", dir, rc, (unsigned long long)r.errors,
            why);
  fc_verify_report_free(&r);
  return ok;
}

static uint64_t total(const uint64_t *v) {
  uint64_t s = 0;
  for (int i = 0; i < FC_DB_COUNT; i++) s += v[i];
  return s;
}

/* The audio entry of id in the store, copied into buf; its length. */
static size_t audio_entry(const char *dir, const char *id, void *buf, size_t cap) {
  fc_store *s;
  if (fc_store_open(dir, FC_STORE_RDONLY, &s)) return 0;
  fc_rtxn *t;
  fc_store_read_begin(s, &t);
  const void *v;
  size_t vl = 0;
  if (fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vl) == 0 && vl <= cap)
    memcpy(buf, v, vl);
  else
    vl = 0;
  fc_rtxn_end(t);
  fc_store_close(s);
  return vl;
}

/* Of the first `len` bytes of file `path`, how many pages are in the page cache; *pages: how many
 * there are. -1 when it cannot be told. */
static long resident_pages(const char *path, size_t len, long *pages) {
  long ps = sysconf(_SC_PAGESIZE), in = 0;
  *pages = (long)((len + (size_t)ps - 1) / (size_t)ps);
  int fd = open(path, O_RDONLY);
  if (fd < 0 || !len) {
    if (fd >= 0) close(fd);
    return -1;
  }
  void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0); /* maps, reads nothing */
  close(fd);
  unsigned char *vec = malloc((size_t)*pages);
  if (m == MAP_FAILED || !vec || mincore(m, len, vec)) in = -1;
  for (long i = 0; i < *pages && in >= 0; i++) in += vec[i] & 1;
  if (m != MAP_FAILED) munmap(m, len);
  free(vec);
  return in;
}

/* 1 when dir is on a file system with a disk behind it (not tmpfs or ramfs). */
static int disk_backed(const char *dir) {
  struct statfs sf;
  if (statfs(dir, &sf) != 0) return 0;
  return sf.f_type != 0x01021994 && sf.f_type != (__typeof__(sf.f_type))0x858458f6;
}

/* Set when no directory on a disk was found for the write-back checks: the test then ends 77
 * (skipped, said why), never passes without them. */
static int writeback_unchecked;

/* A new directory for the write-back checks, on a disk: under /tmp, else /var/tmp, else the
 * working directory (ctest's: the build tree); tmp_dir when none is on a disk. */
static const char *writeback_dir(const char *tmp_dir, char *buf, size_t len) {
  static const char *const bases[] = {"/tmp", "/var/tmp", "."};
  for (size_t i = 0; i < 3; i++) {
    if (!disk_backed(bases[i])) continue;
    snprintf(buf, len, "%s/fc_fault_merge_wb.XXXXXX", bases[i]);
    if (mkdtemp(buf)) return buf;
  }
  return tmp_dir;
}

/* 6. write-back passes on records large enough for the passes to matter (see the top). */

/* Merge in (nin stores) into out with the n-th write-back pass failing (FC_FAULT=writeback:n),
 * n = 1, 2, ... until a merge completes: each failing run ends with EIO ("Input/output error")
 * and leaves out verifying (with cd: every audio entry's record there, at most `most`). Returns the runs, or
 * -1 when none completed in 500. */
static int writeback_fault_runs(const char *out, const char *const *in, size_t nin,
                                const fc_merge_opts *o, const char *what, const fc_digest *cd,
                                uint64_t most) {
  char why[512];
  fc_merge_stats st;
  int rc = -1, n;
  for (n = 1; n < 500 && rc != 0; n++) {
    char spec[64];
    snprintf(spec, sizeof spec, "writeback:%d", n);
    setenv("FC_FAULT", spec, 1);
    rc = fc_merge_run(out, in, nin, o, &st, why, sizeof why);
    setenv("FC_FAULT", "", 1);
    if (rc)
      CHECK(rc == EIO && strstr(why, "Input/output error"), "%s, %s: rc %d (%s)", what, spec, rc,
            why);
    CHECK(verifies(out) && (!cd || check_consistent(out, cd) <= most), "%s, %s", what, spec);
  }
  return rc == 0 ? n - 1 : -1;
}
static void check_writeback(const char *dir, const fc_mel_config *cfg, const fc_digest *cd) {
  enum { N = 12 };
  char paths[N][300], ref[300], shard[2][300], out[300], why[512];
  const char *pp[N], *in[2];
  for (int i = 0; i < N; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/long%02d.wav", dir, i);
    write_wav(paths[i], 40 + i, 441000 + 1000 * (uint32_t)i); /* 20 s: ~550 KB of mel */
    pp[i] = paths[i];
  }
  fc_item_list all;
  CHECK(fc_items_from_paths(pp, N, &all) == 0);
  snprintf(ref, sizeof ref, "%s/long_ref", dir);
  CHECK(featurize(ref, cfg, &all) == 0, "long reference");
  fc_item_list_free(&all);
  for (uint32_t k = 0; k < 2; k++) {
    fc_item_list l;
    fc_items_from_paths(pp, N, &l);
    fc_item_list_shard(&l, k, 2);
    snprintf(shard[k], sizeof shard[k], "%s/long_s%u", dir, k);
    CHECK(featurize(shard[k], cfg, &l) == 0, "long shard %u", k);
    fc_item_list_free(&l);
    in[k] = shard[k];
  }
  fc_merge_opts o;
  fc_merge_opts_init(&o);
  o.batch_records = 2;
  o.writeback_bytes = 128 << 10;
  fc_merge_stats st;
  snprintf(out, sizeof out, "%s/long_m", dir);
  int rc = fc_merge_run(out, in, 2, &o, &st, why, sizeof why);
  CHECK(rc == 0 && st.copied[FC_DB_FEAT] == N, "merge with write-back passes: %s", why);
  const int on_disk = disk_backed(dir);
  struct stat fst;
  snprintf(why, sizeof why, "%s/data.mdb", out);
  CHECK(stat(why, &fst) == 0);
  if (!on_disk) {
    printf("write-back: not checked, %s is on tmpfs (nothing to write back, no blocks)\n", dir);
    writeback_unchecked = 1;
  } else {
    /* the last 4 passes' bytes are kept, and the last pass may have been left to the final sync */
    size_t len = (size_t)fst.st_size - 8 * o.writeback_bytes;
    long pages, in_cache = resident_pages(why, len, &pages);
    CHECK(pages > 1000 && in_cache >= 0 && in_cache * 4 < pages,
          "%ld of the %ld pages written before the last 1 MiB still in the page cache", in_cache,
          pages);
    CHECK((uint64_t)fst.st_blocks * 512 < (uint64_t)fst.st_size + 64 * 1024,
          "%llu bytes allocated for a data.mdb of %llu", (unsigned long long)fst.st_blocks * 512,
          (unsigned long long)fst.st_size);
    printf(
        "write-back: %ld of the %ld pages written before the last 1 MiB in the page cache; "
        "%llu bytes allocated for %llu\n",
        in_cache, pages, (unsigned long long)fst.st_blocks * 512, (unsigned long long)fst.st_size);
  }
  CHECK(compare_stores(ref, out) == 0, "merge with write-back passes differs from the reference");
  if (on_disk) {
    /* what a merge killed before its trim leaves: blocks allocated beyond the end (KEEP_SIZE);
     * the next writer that opens the store frees them, a reader leaves the file alone */
    int fd = open(why, O_RDWR);
    CHECK(fd >= 0 && fallocate(fd, FALLOC_FL_KEEP_SIZE, fst.st_size, 32 << 20) == 0,
          "fallocate beyond the end");
    if (fd >= 0) close(fd);
    struct stat a, b;
    CHECK(stat(why, &a) == 0 && (uint64_t)a.st_blocks * 512 >= (uint64_t)fst.st_size + (32 << 20),
          "the allocation beyond the end is there");
    fc_store *s = NULL;
    CHECK(fc_store_open(out, FC_STORE_RDONLY, &s) == 0);
    fc_store_close(s);
    CHECK(stat(why, &b) == 0 && b.st_blocks == a.st_blocks, "a read-only open changed data.mdb");
    CHECK(fc_store_open(out, FC_STORE_CREATE, &s) == 0);
    fc_store_close(s);
    CHECK(stat(why, &b) == 0 && b.st_size == fst.st_size &&
              (uint64_t)b.st_blocks * 512 < (uint64_t)fst.st_size + (1 << 20),
          "after a writer's open: %llu bytes allocated for a data.mdb of %llu",
          (unsigned long long)b.st_blocks * 512, (unsigned long long)b.st_size);
    printf("allocation beyond the end: %llu bytes before a writer's open, %llu after (size %llu)\n",
           (unsigned long long)a.st_blocks * 512, (unsigned long long)b.st_blocks * 512,
           (unsigned long long)b.st_size);
  }
  if (!fault_built() || !on_disk) return; /* said in main / above */
  snprintf(out, sizeof out, "%s/long_m_fault", dir);
  int n = writeback_fault_runs(out, in, 2, &o, "writeback", cd, N);
  /* passes asked for while one runs are taken together: how many fail varies, at least one */
  CHECK(n > 1, "writeback: %d runs", n);
  CHECK(compare_stores(ref, out) == 0, "writeback: the resumed merge differs from the reference");
  printf(
      "writeback faults: %d runs until the merge completed; consistent after each; equal to "
      "the reference\n",
      n);

  /* failure records go through the same passes: ~2 MiB of them (the pass after the entries),
   * far enough ahead of the passes that the merge waits for one; the n-th pass fails, n = 1,
   * 2, ..., the output verifies after each, and the last merge equals an uninterrupted one */
  char fl[300], fref[300];
  snprintf(fl, sizeof fl, "%s/long_fails", dir);
  CHECK(write_failures(fl, "f", 512, cd, 4000) == 0, "failure records");
  const char *fin[1] = {fl};
  o.batch_records = 16;
  snprintf(fref, sizeof fref, "%s/long_fails_ref", dir);
  CHECK(fc_merge_run(fref, fin, 1, &o, &st, why, sizeof why) == 0 && st.failures_copied == 512,
        "failure records with write-back passes: %s", why);
  snprintf(out, sizeof out, "%s/long_fails_fault", dir);
  n = writeback_fault_runs(out, fin, 1, &o, "writeback in the failure pass", NULL, 0);
  CHECK(n > 1, "writeback in the failure pass: %d runs", n);
  CHECK(compare_stores(fref, out) == 0, "failure records: the resumed merge differs");
  printf("writeback faults in the failure pass: %d runs until the merge completed\n", n);
}

int main(void) {
  char tmpl[] = "/tmp/fc_fault_merge.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  char paths[NFILES][300];
  const char *pp[NFILES];
  for (int i = 0; i < NFILES; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/u%02d.wav", dir, i);
    write_wav(paths[i], i, 4000 + 250 * (uint32_t)i);
    pp[i] = paths[i];
  }
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  fc_digest cd;
  fc_mel_config_digest(&cfg, &cd);

  char ref[300], shard[3][300], out[300];
  const char *in[4];
  snprintf(ref, sizeof ref, "%s/ref", dir);
  fc_item_list all;
  CHECK(fc_items_from_paths(pp, NFILES, &all) == 0);
  CHECK(featurize(ref, &cfg, &all) == 0, "reference");
  fc_item_list_free(&all);
  size_t sizes = 0;
  for (uint32_t k = 0; k < 3; k++) {
    fc_item_list l;
    fc_items_from_paths(pp, NFILES, &l);
    fc_item_list_shard(&l, k, 3);
    sizes += l.count;
    CHECK(l.count > 0 && l.count < NFILES, "shard %u holds %zu", k, l.count);
    snprintf(shard[k], sizeof shard[k], "%s/s%u", dir, k);
    CHECK(featurize(shard[k], &cfg, &l) == 0, "shard %u", k);
    fc_item_list_free(&l);
    in[k] = shard[k];
  }
  CHECK(sizes == NFILES);

  /* 1. a plain merge equals the reference; a second writes nothing */
  fc_merge_opts o;
  fc_merge_opts_init(&o);
  o.batch_records = 4;
  fc_merge_stats st;
  char why[512];
  snprintf(out, sizeof out, "%s/m_plain", dir);
  int rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == 0, "merge: %s", why);
  CHECK(st.copied[FC_DB_FEAT] == NFILES && st.copied[FC_DB_AUDIO] == NFILES, "copied %llu feat",
        (unsigned long long)st.copied[FC_DB_FEAT]);
  CHECK(st.copied[FC_DB_META] == 2 && st.duplicates[FC_DB_META] == 2,
        "meta: one config and its creation time, in 3 shards");
  CHECK(st.commits >= NFILES * 2 / 4, "commits %llu", (unsigned long long)st.commits);
  CHECK(compare_stores(ref, out) == 0, "merged store differs from the reference");
  rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == 0 && total(st.copied) == 0 && st.commits == 0 && total(st.present) == 2 * NFILES + 2,
        "rerun: rc %d, copied %llu, present %llu", rc, (unsigned long long)total(st.copied),
        (unsigned long long)total(st.present));
  CHECK(compare_stores(ref, out) == 0, "rerun changed the store");
  struct stat stt;
  in[3] = out;
  rc = fc_merge_run(out, in, 4, &o, &st, why, sizeof why);
  CHECK(rc == EINVAL && strstr(why, "the output cannot be one of the inputs"), "out as input: %s",
        why);
  in[3] = in[0];
  rc = fc_merge_run(ref, in, 4, &o, &st, why, sizeof why);
  CHECK(rc == EINVAL && strstr(why, "given twice"), "twice: %s", why);
  in[3] = NULL;

  /* 2. faults at the n-th commit / put, resumed until done (scripts/test builds the countdowns
   * in; a release build has none, and says so here) */
  static const char *const sites[] = {"commit", "put"};
  if (!fault_built())
    printf("fault part not run: the library was built without -DFC_FAULT_INJECTION=ON\n");
  for (int si = 0; si < 2 && fault_built(); si++) {
    snprintf(out, sizeof out, "%s/m_%s", dir, sites[si]);
    int n;
    rc = -1;
    for (n = 1; n < 500 && rc != 0; n++) {
      char spec[64];
      snprintf(spec, sizeof spec, "%s:%d", sites[si], n);
      setenv("FC_FAULT", spec, 1);
      rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
      setenv("FC_FAULT", "", 1);
      if (rc)
        CHECK(rc == EIO && strstr(why, "Input/output error"), "%s: rc %d (%s)", spec, rc, why);
      check_consistent(out, &cd);
    }
    CHECK(rc == 0 && n > 3, "%s: %d runs", sites[si], n - 1);
    CHECK(compare_stores(ref, out) == 0, "%s: the resumed merge differs from the reference",
          sites[si]);
    printf(
        "%s faults: %d runs until the merge completed; consistent after each; equal to the "
        "reference\n",
        sites[si], n - 1);
  }

  /* 3. stop flag: set before the start, nothing is done; set after the first commit (as a signal
   * would), that batch is kept and FC_EINTR returned; the rerun completes */
  stop_flag = 1;
  o.stop = &stop_flag;
  snprintf(out, sizeof out, "%s/m_stop", dir);
  rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.commits == 0 && stat(out, &stt) != 0, "stop at once: rc %d", rc);
  stop_flag = 0;
  o.on_progress = stop_after_commit;
  rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.commits == 1, "stop: rc %d commits %llu", rc,
        (unsigned long long)st.commits);
  CHECK(check_consistent(out, &cd) < NFILES, "stopped merge holds everything");
  o.stop = NULL;
  o.on_progress = NULL;
  CHECK(fc_merge_run(out, in, 3, &o, &st, why, sizeof why) == 0 && st.copied[FC_DB_META] == 0 &&
            st.present[FC_DB_META] == 2,
        "resume after stop");
  CHECK(compare_stores(ref, out) == 0, "stop: resumed merge differs");

  /* 3b. stop in the failure-record pass (after every entry is in): set once its first batch (4
   * records) is committed, in its copy of the inputs' records and in its clearing of the output's
   * records of ids an input now stores; that batch is kept, the output verifies, and the rerun
   * completes it as an uninterrupted merge does */
  char fl[300], fref[300];
  snprintf(fl, sizeof fl, "%s/fails", dir);
  CHECK(write_failures(fl, "zz", 10, &cd, 40) == 0, "failure records");
  const char *fin[4] = {in[0], in[1], in[2], fl};
  snprintf(fref, sizeof fref, "%s/m_fails_ref", dir);
  rc = fc_merge_run(fref, fin, 4, &o, &st, why, sizeof why);
  CHECK(rc == 0 && st.failures_copied == 10 && failures_in(fref) == 10, "failures: rc %d (%s)", rc,
        why);
  arm_stop(&o, stop_after_failures);
  snprintf(out, sizeof out, "%s/m_fails_stop", dir);
  rc = fc_merge_run(out, fin, 4, &o, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.failures_copied == 4 && failures_in(out) == 4,
        "stop in the failure pass: rc %d, %llu copied, %llu in the output", rc,
        (unsigned long long)st.failures_copied, (unsigned long long)failures_in(out));
  CHECK(check_consistent(out, &cd) == NFILES && verifies(out), "stopped in the failure pass");
  disarm_stop(&o);
  rc = fc_merge_run(out, fin, 4, &o, &st, why, sizeof why);
  CHECK(rc == 0 && total(st.copied) == 0 && st.failures_copied == 6,
        "resume the failure pass: rc %d, %llu copied", rc, (unsigned long long)st.failures_copied);
  CHECK(compare_stores(fref, out) == 0, "failure pass: resumed merge differs");
  /* the output holds records of the shards' ids (u00 ... u29) that the shards now store */
  snprintf(fl, sizeof fl, "%s/fails_u", dir);
  CHECK(write_failures(fl, "u", NFILES, &cd, 40) == 0, "failure records of stored ids");
  snprintf(out, sizeof out, "%s/m_fails_clear", dir);
  CHECK(fc_merge_run(out, (const char *const[]){fl}, 1, &o, &st, why, sizeof why) == 0 &&
            failures_in(out) == NFILES,
        "records of stored ids: %s", why);
  arm_stop(&o, stop_after_failures);
  rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.failures_cleared == 4 && failures_in(out) == NFILES - 4,
        "stop while clearing: rc %d, %llu cleared, %llu left", rc,
        (unsigned long long)st.failures_cleared, (unsigned long long)failures_in(out));
  CHECK(check_consistent(out, &cd) == NFILES && verifies(out), "stopped while clearing");
  disarm_stop(&o);
  rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == 0 && total(st.copied) == 0 && st.failures_cleared == NFILES - 4,
        "resume clearing: rc %d, %llu cleared", rc, (unsigned long long)st.failures_cleared);
  CHECK(compare_stores(ref, out) == 0, "clearing: resumed merge differs from the reference");
  /* 3c. little to clear: the clearing pass sees the stop flag after each round of reads (16
   * batches' worth), not only after a batch of deletions, so a large failed db is not read through
   * before a stop. The output holds 200 records of ids no input stores; merging the 10 records
   * above into it, stopped at its first progress call, ends in that pass, before any is copied */
  char fq[300], fz[300];
  snprintf(fq, sizeof fq, "%s/fails_q", dir);
  snprintf(fz, sizeof fz, "%s/fails", dir);
  CHECK(write_failures(fq, "zq", 200, &cd, 40) == 0, "200 failure records");
  snprintf(out, sizeof out, "%s/m_fails_scan", dir);
  CHECK(fc_merge_run(out, (const char *const[]){fq}, 1, &o, &st, why, sizeof why) == 0 &&
            failures_in(out) == 200,
        "200 failure records merged: %s", why);
  arm_stop(&o, stop_in_failure_pass);
  rc = fc_merge_run(out, (const char *const[]){fz}, 1, &o, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.failures_copied == 0 && st.failures_cleared == 0 &&
            failures_in(out) == 200,
        "stop while reading the output's records: rc %d, %llu copied, %llu in the output", rc,
        (unsigned long long)st.failures_copied, (unsigned long long)failures_in(out));
  disarm_stop(&o);
  rc = fc_merge_run(out, (const char *const[]){fz}, 1, &o, &st, why, sizeof why);
  CHECK(rc == 0 && st.failures_copied == 10 && failures_in(out) == 210,
        "resume after the reads: rc %d, %llu copied", rc, (unsigned long long)st.failures_copied);

  /* 4. conflicts: shard x holds the id of shard 0's first utterance with other audio */
  char sx[300], xwav[300], id[64] = "";
  {
    fc_item_list l;
    fc_items_from_paths(pp, NFILES, &l);
    fc_item_list_shard(&l, 0, 3);
    snprintf(id, sizeof id, "%s", l.items[0].id);
    fc_item_list_free(&l);
  }
  snprintf(xwav, sizeof xwav, "%s/x/%s.wav", dir, id);
  snprintf(sx, sizeof sx, "%s/x", dir);
  mkdir(sx, 0777);
  write_wav(xwav, 99, 6000);
  snprintf(sx, sizeof sx, "%s/sx", dir);
  const char *xp[1] = {xwav};
  fc_item_list xl;
  fc_items_from_paths(xp, 1, &xl);
  CHECK(featurize(sx, &cfg, &xl) == 0);
  fc_item_list_free(&xl);
  const char *cin[4] = {shard[0], shard[1], shard[2], sx};
  seen sn = {0};
  o.on_conflict = on_conflict;
  o.on_bad_record = on_bad;
  o.user = &sn;
  snprintf(out, sizeof out, "%s/m_conflict", dir);
  rc = fc_merge_run(out, cin, 4, &o, &st, why, sizeof why);
  CHECK(rc == FC_ECONFLICT && sn.conflicts == 1 && sn.winner == -2 && strcmp(sn.id, id) == 0,
        "refuse: rc %d conflicts %d winner %ld id %s", rc, sn.conflicts, sn.winner, sn.id);
  CHECK(stat(out, &stt) != 0, "a refused merge created its output");
  uint8_t e_sx[1024], e_s0[1024], e_out[1024];
  size_t l_sx = audio_entry(sx, id, e_sx, sizeof e_sx),
         l_s0 = audio_entry(shard[0], id, e_s0, sizeof e_s0);
  CHECK(l_sx && l_s0 && (l_sx != l_s0 || memcmp(e_sx, e_s0, l_sx)));
  struct {
    fc_merge_prefer p;
    size_t idx;
    long want;
    const uint8_t *e;
    size_t l;
  } cases[] = {{FC_MERGE_FIRST, 0, 0, e_s0, l_s0},
               {FC_MERGE_LAST, 0, 3, e_sx, l_sx},
               {FC_MERGE_STORE, 3, 3, e_sx, l_sx},
               {FC_MERGE_STORE, 0, 0, e_s0, l_s0}};
  for (int ci = 0; ci < 4; ci++) {
    snprintf(out, sizeof out, "%s/m_prefer%d", dir, ci);
    sn.conflicts = 0;
    o.prefer = cases[ci].p;
    o.prefer_index = cases[ci].idx;
    rc = fc_merge_run(out, cin, 4, &o, &st, why, sizeof why);
    size_t lo = audio_entry(out, id, e_out, sizeof e_out);
    CHECK(rc == 0 && sn.conflicts == 1 && sn.winner == cases[ci].want && st.resolved == 1,
          "prefer case %d: rc %d winner %ld", ci, rc, sn.winner);
    CHECK(lo == cases[ci].l && memcmp(e_out, cases[ci].e, lo) == 0,
          "prefer case %d: wrong entry kept", ci);
    CHECK(check_consistent(out, &cd) == NFILES, "prefer case %d: inconsistent", ci);
  }
  /* prefer a store that does not hold the id: still refused */
  o.prefer = FC_MERGE_STORE;
  o.prefer_index = 1;
  snprintf(out, sizeof out, "%s/m_prefer_other", dir);
  CHECK(fc_merge_run(out, cin, 4, &o, &st, why, sizeof why) == FC_ECONFLICT,
        "prefer s1 resolves nothing");
  /* an output already holding the other entry: a conflict with the output */
  o.prefer = FC_MERGE_REFUSE;
  snprintf(out, sizeof out, "%s/m_prefer1", dir); /* holds sx's entry */
  sn.conflicts = 0;
  rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == FC_ECONFLICT && sn.conflicts == 1, "output conflict: rc %d", rc);
  o.prefer = FC_MERGE_FIRST;
  rc = fc_merge_run(out, in, 3, &o, &st, why, sizeof why);
  CHECK(rc == 0 && st.copied[FC_DB_AUDIO] == 1 &&
            audio_entry(out, id, e_out, sizeof e_out) == l_s0 && memcmp(e_out, e_s0, l_s0) == 0,
        "the inputs win over the output: rc %d", rc);
  o.prefer = FC_MERGE_REFUSE;

  /* 5. damaged records: a copy of shard 0 with one payload byte flipped */
  char bad[300];
  snprintf(bad, sizeof bad, "%s/bad", dir);
  fc_store *s0, *sb;
  CHECK(fc_store_open(shard[0], FC_STORE_RDONLY, &s0) == 0);
  CHECK(fc_store_open(bad, FC_STORE_CREATE, &sb) == 0);
  fc_rtxn *t;
  fc_store_read_begin(s0, &t);
  for (int db = 0; db < FC_DB_COUNT; db++) {
    fc_cursor *c;
    fc_cursor_open(t, db, &c);
    const void *k, *v;
    size_t kl, vl;
    int first = 1;
    while (fc_cursor_next(c, &k, &kl, &v, &vl) == 0) {
      uint8_t *copy = malloc(vl);
      memcpy(copy, v, vl);
      if (db == FC_DB_FEAT && first) copy[vl - 1] ^= 0x40;
      if (db == FC_DB_FEAT) first = 0;
      fc_put p = {db, k, kl, copy, vl, 0};
      CHECK(fc_store_write(sb, &p, 1) == 0);
      free(copy);
    }
    fc_cursor_close(c);
  }
  fc_rtxn_end(t);
  fc_store_close(s0);
  fc_store_close(sb);
  const char *bin[3] = {bad, shard[0], shard[1]};
  sn.bad = 0;
  snprintf(out, sizeof out, "%s/m_bad_healed", dir);
  rc = fc_merge_run(out, bin, 3, &o, &st, why, sizeof why);
  CHECK(rc == 0 && sn.bad == 1 && st.bad_records == 1 && st.dropped == 0,
        "healed: rc %d bad %d dropped %llu", rc, sn.bad, (unsigned long long)st.dropped);
  CHECK(check_consistent(out, &cd) > 0);
  const char *bin2[2] = {bad, shard[1]};
  snprintf(out, sizeof out, "%s/m_bad_dropped", dir);
  rc = fc_merge_run(out, bin2, 2, &o, &st, why, sizeof why);
  CHECK(rc == 0 && st.dropped == 1 && st.copied[FC_DB_FEAT] + 1 == st.copied[FC_DB_AUDIO],
        "dropped: rc %d dropped %llu", rc, (unsigned long long)st.dropped);

  /* the inputs were never written: the shards still verify as they were */
  for (int k = 0; k < 3; k++) CHECK(check_consistent(shard[k], &cd) > 0);

  char wb[200];
  const char *wdir = writeback_dir(dir, wb, sizeof wb);
  check_writeback(wdir, &cfg, &cd);

  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'%s%s%s", dir, wdir != dir ? " '" : "",
           wdir != dir ? wdir : "", wdir != dir ? "'" : "");
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  int res = fc_check_result("test_merge");
  if (res == 0 && writeback_unchecked) {
    printf(
        "skipped: the write-back checks need a directory on a disk (/tmp, /var/tmp and the "
        "working directory are all tmpfs)\n");
    return 77;
  }
  return res;
}
