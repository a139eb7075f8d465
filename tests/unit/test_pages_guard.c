/* The page check before an open (libcache/core/verify/verify_guard.c), through both its callers:
 * a store whose audio db's leaf has a node with a flag no featcache db has (a flipped bit: LMDB
 * then follows a NULL pointer when it reads that node) is refused
 *   - by fc_merge_run as an input: FC_EFORMAT, stats.pages_refused, why naming the store and the
 *     page, no output made; the sound store merges as before (pages_refused 0);
 *   - by fc_merge_run as an existing output: FC_EFORMAT, pages_refused, data.mdb unchanged;
 *   - by fc_loader_open with FC_LOADER_CHECK_PAGES: FC_EFORMAT, why naming the same page;
 * and a stop flag set before the merge ends it in the check: FC_EINTR, nothing made. */
#include "featcache/fc_featurize.h"
#include "featcache/fc_loader.h"
#include "featcache/fc_merge.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/check.h"
#include "tests/featurize_dir.h"
#include "tests/wav.h"

#define NUTT 8
#define PAGE 4096

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
/* the offset in the file of node i of page pg (LMDB 0.9's layout) */
static size_t node_at(const uint8_t *data, uint64_t pg, int i) {
  return (size_t)pg * PAGE + get16(data + pg * PAGE + 16 + 2 * i);
}

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *d = malloc(*len ? *len : 1);
  if (d && fread(d, 1, *len, f) != *len) {
    free(d);
    d = NULL;
  }
  fclose(f);
  return d;
}

/* The first leaf of dir's audio db given a duplicate-data node (flag 4) as its first node; its
 * page number, or 0 when it could not be done. */
static uint64_t damage_audio_leaf(const char *dir) {
  char p[400];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  size_t len;
  uint8_t *data = slurp(p, &len);
  if (!data || len < 2 * PAGE) {
    free(data);
    return 0;
  }
  const size_t meta = get64(data + 144) >= get64(data + PAGE + 144) ? 0 : PAGE; /* the newer */
  const uint64_t main_root = get64(data + meta + 128);
  uint64_t pg = 0;
  const uint8_t *mp = data + main_root * PAGE;
  for (int i = 0; i < (get16(mp + 12) - 16) / 2; i++) {
    const uint8_t *n = data + node_at(data, main_root, i);
    const uint16_t ks = get16(n + 6);
    if (ks == 5 && memcmp(n + 8, "audio", 5) == 0) pg = get64(n + 8 + ks + 40);
  }
  while (pg && get16(data + pg * PAGE + 10) & 1) { /* a branch: its first child */
    const uint8_t *n = data + node_at(data, pg, 0);
    pg = (uint64_t)get16(n) | (uint64_t)get16(n + 2) << 16;
  }
  if (pg) {
    uint8_t *flags = data + node_at(data, pg, 0) + 4;
    flags[0] |= 4;
    FILE *f = fopen(p, "r+b");
    if (!f || fwrite(data, 1, len, f) != len) pg = 0;
    if (f && fclose(f) != 0) pg = 0;
  }
  free(data);
  return pg;
}

static int same_file(const char *a, const char *b) {
  size_t la, lb;
  uint8_t *x = slurp(a, &la), *y = slurp(b, &lb);
  int same = x && y && la == lb && memcmp(x, y, la) == 0;
  free(x);
  free(y);
  return same;
}

int main(void) {
  char tmpl[] = "/tmp/fc_pages_guard.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  char wavs[NUTT][300];
  const char *pp[NUTT];
  for (int i = 0; i < NUTT; i++) {
    snprintf(wavs[i], sizeof wavs[i], "%s/u%d.wav", dir, i);
    write_wav(wavs[i], i, 3000 + 300 * (uint32_t)i);
    pp[i] = wavs[i];
  }
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  char good[300], bad[300], out[300], cmd[700];
  snprintf(good, sizeof good, "%s/good", dir);
  snprintf(bad, sizeof bad, "%s/bad", dir);
  CHECK(featurize_dir(good, &cfg, pp, NUTT) == 0);
  CHECK(featurize_dir(bad, &cfg, pp, NUTT) == 0);
  const uint64_t pg = damage_audio_leaf(bad);
  CHECK(pg > 0, "damaging the audio db's leaf");
  char page[200];
  snprintf(page, sizeof page,
           "(page %llu of the audio db: a node with flags no featcache db's entries have (node "
           "0))",
           (unsigned long long)pg);
  struct stat sb;

  /* fc_merge_run, the damaged store an input */
  fc_merge_opts o;
  fc_merge_opts_init(&o);
  fc_merge_stats st;
  char why[1024] = "", want[1400];
  snprintf(out, sizeof out, "%s/out", dir);
  const char *in_bad[] = {good, bad};
  int rc = fc_merge_run(out, in_bad, 2, &o, &st, why, sizeof why);
  snprintf(want, sizeof want,
           "%s: damaged %s: LMDB's reads of that page could crash the merge; nothing merged "
           "(cache-verify says more; merge the other stores without it)",
           bad, page);
  CHECK(rc == FC_EFORMAT && st.pages_refused == 1, "merge of a damaged input: %s, refused %d (%s)",
        fc_strerror(rc), st.pages_refused, why);
  CHECK(strcmp(why, want) == 0, "merge of a damaged input: %s (want %s)", why, want);
  CHECK(stat(out, &sb) != 0, "merge of a damaged input: the output was made");
  const char *in_good[] = {good};
  rc = fc_merge_run(out, in_good, 1, &o, &st, why, sizeof why);
  CHECK(rc == 0 && st.pages_refused == 0 && st.copied[FC_DB_AUDIO] == NUTT,
        "merge of the sound store: %s (%s)", fc_strerror(rc), why);

  /* fc_merge_run, the damaged store the output */
  char before[400], now[400];
  snprintf(cmd, sizeof cmd, "cp '%s/data.mdb' '%s/before.mdb'", bad, dir);
  CHECK(system(cmd) == 0);
  snprintf(before, sizeof before, "%s/before.mdb", dir);
  snprintf(now, sizeof now, "%s/data.mdb", bad);
  rc = fc_merge_run(bad, in_good, 1, &o, &st, why, sizeof why);
  snprintf(want, sizeof want, "%s: damaged (env data.mdb: B-tree damaged %s", bad, page);
  CHECK(rc == FC_EFORMAT && st.pages_refused == 1 && strstr(why, want) == why &&
            strstr(why, "nothing merged into it"),
        "merge into a damaged output: %s, refused %d (%s)", fc_strerror(rc), st.pages_refused, why);
  CHECK(same_file(before, now), "merge into a damaged output: its data.mdb changed");

  /* fc_loader_open with the check */
  fc_loader_opts lo;
  fc_loader_opts_init(&lo);
  lo.flags = FC_LOADER_CHECK_PAGES;
  lo.prefetch_threads = 0;
  fc_loader *l = NULL;
  const char *lb[] = {bad};
  rc = fc_loader_open(lb, 1, &lo, &l, why, sizeof why);
  snprintf(want, sizeof want, "%s: damaged (B-tree damaged %s", bad, page);
  CHECK(rc == FC_EFORMAT && !l && strstr(why, want) == why && strstr(why, "not opened"),
        "the loader on a damaged store: %s (%s)", fc_strerror(rc), why);
  if (l) fc_loader_close(l);
  const char *lg[] = {good};
  rc = fc_loader_open(lg, 1, &lo, &l, why, sizeof why);
  CHECK(rc == 0, "the loader on the sound store: %s (%s)", fc_strerror(rc), why);
  if (!rc) fc_loader_close(l);

  /* a stop before the merge: ended in the check, nothing made */
  static volatile sig_atomic_t stop = 1;
  o.stop = &stop;
  snprintf(out, sizeof out, "%s/stopped", dir);
  rc = fc_merge_run(out, in_good, 1, &o, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.pass == 0 && st.commits == 0 && stat(out, &sb) != 0,
        "a stopped merge: %s, pass %d (%s)", fc_strerror(rc), st.pass, why);

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("pages_guard");
}
