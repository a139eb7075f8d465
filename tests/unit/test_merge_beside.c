/* Two merges into one store at once (libcache/core/merge/): a merge appends the keys above the
 * last key its output's db held when the db's pass began (MDB_APPEND). Another cache-merge into the
 * same output, run between two of its batches (from its progress callback, so the interleaving
 * is the same every time), commits ids greater than every id the first has left to write; both
 * merges must then succeed, and the output hold exactly the ids of both, each with its records
 * (an append below a key that another writer added used to fail with MDB_KEYEXIST). */
#include "featcache/fc_featurize.h"
#include "featcache/fc_merge.h"
#include "featcache/fc_verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/check.h"
#include "tests/featurize_dir.h"
#include "tests/wav.h"

#define NEACH 6

static const char *beside_cmd; /* the other merge, run once, after the first audio entry */
static int beside_status = -1;

static void run_beside(const fc_merge_stats *st, void *user) {
  (void)user;
  if (beside_status != -1 || st->copied[FC_DB_AUDIO] != 1) return;
  beside_status = system(beside_cmd);
}

static uint64_t entries(const char *dir, int db) {
  fc_store *s;
  if (fc_store_open(dir, FC_STORE_RDONLY, &s)) return 0;
  fc_rtxn *t;
  fc_cursor *c;
  uint64_t n = 0;
  if (fc_store_read_begin(s, &t) == 0 && fc_cursor_open(t, db, &c) == 0) {
    const void *k, *v;
    size_t kl, vl;
    while (fc_cursor_next(c, &k, &kl, &v, &vl) == 0) n++;
    fc_cursor_close(c);
  }
  fc_rtxn_end(t);
  fc_store_close(s);
  return n;
}

int main(void) {
  const char *bin = getenv("FC_BIN");
  if (!bin) {
    printf("skip: FC_BIN (the tools' directory) is not set\n");
    return 77;
  }
  char tmpl[] = "/tmp/fc_merge_beside.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  /* ids a0.. in store a, z0.. in store z: z's all sort above a's */
  char paths[2][NEACH][300];
  const char *pp[2][NEACH];
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < NEACH; i++) {
      snprintf(paths[s][i], sizeof paths[s][i], "%s/%c%d.wav", dir, s ? 'z' : 'a', i);
      write_wav(paths[s][i], s * NEACH + i, 3000 + 200 * (uint32_t)i);
      pp[s][i] = paths[s][i];
    }
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  char a[300], z[300], out[300], cmd[1400];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(z, sizeof z, "%s/z", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  CHECK(featurize_dir(a, &cfg, pp[0], NEACH) == 0);
  CHECK(featurize_dir(z, &cfg, pp[1], NEACH) == 0);

  snprintf(cmd, sizeof cmd, "'%s/cache-merge' -q -o '%s' '%s'", bin, out, z);
  beside_cmd = cmd;
  fc_merge_opts o;
  fc_merge_opts_init(&o);
  o.batch_records = 1;
  o.on_progress = run_beside;
  fc_merge_stats st;
  char why[512] = "";
  const char *in[] = {a};
  int rc = fc_merge_run(out, in, 1, &o, &st, why, sizeof why);
  CHECK(beside_status != -1 && WIFEXITED(beside_status) && WEXITSTATUS(beside_status) == 0,
        "the merge beside it: status %d", beside_status);
  CHECK(rc == 0, "the merge with another beside it: %s (%s)", fc_strerror(rc), why);
  CHECK(st.copied[FC_DB_AUDIO] == NEACH, "audio entries copied: %llu",
        (unsigned long long)st.copied[FC_DB_AUDIO]);
  CHECK(entries(out, FC_DB_AUDIO) == 2 * NEACH && entries(out, FC_DB_FEAT) == 2 * NEACH,
        "the output holds %llu audio entries, %llu records (want %d each)",
        (unsigned long long)entries(out, FC_DB_AUDIO), (unsigned long long)entries(out, FC_DB_FEAT),
        2 * NEACH);
  snprintf(cmd, sizeof cmd, "'%s/cache-verify' -q --strict '%s' >/dev/null", bin, out);
  rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "cache-verify of the output: status %d", rc);

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("merge_beside");
}
