/* A merge stopped in its first pass (libcache/core/merge/), which reads the inputs to find the
 * conflicts and count the entries before anything is written: FC_EINTR, nothing written (the
 * output not even created), and stats->total 0 — the count was cut short, so it is no total; it
 * was the keys walked so far (cache-merge said "0 of 178650 entries committed to OUT, 178650 not
 * started" of a store of 529,152, and named an output that did not exist). Here the stop comes
 * from the conflict callback, at the first audio entry: the same every time. The same merge run
 * again, not stopped, counts every key. */
#include "featcache/fc_featurize.h"
#include "featcache/fc_merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/check.h"
#include "tests/featurize_dir.h"
#include "tests/wav.h"

#define NEACH 4

static volatile sig_atomic_t stop;
static int conflicts_seen;

static void stop_at_conflict(const fc_merge_conflict *c, void *user) {
  (void)c;
  (void)user;
  conflicts_seen++;
  stop = 1;
}

int main(void) {
  char tmpl[] = "/tmp/fc_merge_stop_count.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  /* the same ids x0.. in a and b, other audio: every id a conflict, the first stops the pass */
  char paths[2][NEACH][300], a[300], b[300], out[300], cmd[400];
  const char *pp[2][NEACH];
  for (int s = 0; s < 2; s++) {
    char sub[200];
    snprintf(sub, sizeof sub, "%s/w%d", dir, s);
    mkdir(sub, 0755);
    for (int i = 0; i < NEACH; i++) {
      snprintf(paths[s][i], sizeof paths[s][i], "%s/x%d.wav", sub, i);
      write_wav(paths[s][i], s * NEACH + i, 3000 + 200 * (uint32_t)i);
      pp[s][i] = paths[s][i];
    }
  }
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  CHECK(featurize_dir(a, &cfg, pp[0], NEACH) == 0);
  CHECK(featurize_dir(b, &cfg, pp[1], NEACH) == 0);

  fc_merge_opts o;
  fc_merge_opts_init(&o);
  o.prefer = FC_MERGE_FIRST; /* resolved, so that only the stop ends the pass */
  o.on_conflict = stop_at_conflict;
  o.stop = &stop;
  fc_merge_stats st;
  char why[512] = "";
  const char *in[] = {a, b};
  int rc = fc_merge_run(out, in, 2, &o, &st, why, sizeof why);
  struct stat sb;
  CHECK(rc == FC_EINTR, "stopped in the first pass: %s (%s)", fc_strerror(rc), why);
  CHECK(conflicts_seen == 1, "conflicts reported before the stop: %d", conflicts_seen);
  CHECK(st.total == 0, "total after a stop in the first pass: %llu (want 0: not counted)",
        (unsigned long long)st.total);
  CHECK(st.commits == 0 && st.copied[FC_DB_META] == 0, "commits: %llu",
        (unsigned long long)st.commits);
  CHECK(stat(out, &sb) != 0, "the output was created by a merge stopped before it wrote");

  stop = 0;
  o.on_conflict = NULL;
  rc = fc_merge_run(out, in, 2, &o, &st, why, sizeof why);
  CHECK(rc == 0, "the merge run again: %s (%s)", fc_strerror(rc), why);
  uint64_t copied = 0;
  for (int d = 0; d < FC_DB_COUNT; d++) copied += st.copied[d];
  CHECK(st.total == copied && st.copied[FC_DB_AUDIO] == NEACH && st.copied[FC_DB_FEAT] == 2 * NEACH,
        "the merge run again: total %llu, %llu copied (%llu audio, %llu feat)",
        (unsigned long long)st.total, (unsigned long long)copied,
        (unsigned long long)st.copied[FC_DB_AUDIO], (unsigned long long)st.copied[FC_DB_FEAT]);

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("merge_stop_count");
}
