/* fc_store_prune (fc_verify.h) and the writer lock (FC_STORE_EXCLUSIVE, fc_store.h): a store
 * opened without the exclusive lock is refused (EINVAL) unless it is a dry run; an exclusive open
 * is refused (EBUSY) while another handle has the store open for writing, even in this process;
 * a writer opening the store while the exclusive handle is held waits for its close; a prune
 * removes the orphans and the entries of ids not kept, in transactions that put the entries
 * first, and leaves a store fc_verify_store finds clean. */
#include "featcache/fc_featurize.h"
#include "featcache/fc_store.h"
#include "featcache/fc_verify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/wav.h"

#define N 3

static void featurize(const char *dir, const char *const *paths) {
  fc_store *s;
  fc_item_list items;
  fc_mel_config cfg;
  CHECK(fc_mel_preset("hifigan", &cfg) == 0, "preset");
  CHECK(fc_items_from_paths(paths, N, &items) == 0, "items");
  CHECK(fc_store_open(dir, FC_STORE_CREATE, &s) == 0, "open %s", dir);
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = 1;
  fc_featurize_stats st;
  char why[256] = "";
  int rc = fc_featurize_run(s, &cfg, items.items, items.count, &o, &st, why, sizeof why);
  CHECK(rc == 0, "featurize: %s (%s)", fc_strerror(rc), why);
  fc_store_close(s);
  fc_item_list_free(&items);
}

int main(void) {
  alarm(120); /* a lock never released fails the test instead of hanging it */
  char tmpl[] = "/tmp/fc_prune.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  char paths[N][300], st[400], why[512];
  const char *pp[N];
  for (int i = 0; i < N; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/u%d.wav", dir, i);
    write_wav(paths[i], i + 1, 22050);
    pp[i] = paths[i];
  }
  snprintf(st, sizeof st, "%s/st", dir);
  featurize(st, pp);
  write_wav(paths[0], 9, 22050); /* u0 refeaturized with other audio: its old record an orphan */
  featurize(st, pp);

  fc_store *s = NULL, *w = NULL;
  fc_prune_report r;
  fc_prune_opts o = {0};
  /* a writer's handle: no prune through it, and no exclusive open beside it */
  CHECK(fc_store_open(st, 0, &w) == 0, "open for writing");
  int rc = fc_store_prune(w, &o, &r, why, sizeof why);
  CHECK(rc == EINVAL, "prune without FC_STORE_EXCLUSIVE: %s, want EINVAL", fc_strerror(rc));
  rc = fc_store_open(st, FC_STORE_EXCLUSIVE, &s); /* in this process: one open of a store */
  CHECK(rc == FC_EOPENED, "exclusive open beside this process's writer: %s", fc_strerror(rc));
  fc_store_close(s);
  s = NULL;
  fflush(NULL);
  pid_t busy = fork(); /* in another: EBUSY while the writer has it open */
  if (busy == 0) {
    fc_store *c = NULL;
    rc = fc_store_open(st, FC_STORE_EXCLUSIVE, &c);
    fc_store_close(c);
    _exit(rc == EBUSY ? 0 : 1);
  }
  int busy_status = 1;
  CHECK(busy > 0 && waitpid(busy, &busy_status, 0) == busy && WIFEXITED(busy_status) &&
            WEXITSTATUS(busy_status) == 0,
        "exclusive open in another process beside a writer: want EBUSY");
  /* a dry run reads: any handle */
  o.dry_run = 1;
  rc = fc_store_prune(w, &o, &r, why, sizeof why);
  CHECK(rc == 0 && r.feat_records == 1 && r.tok_records == 0 && r.kept_ids == N &&
            r.transactions == 0 && r.feat_bytes > 64,
        "dry run: %s (%s): %llu feat, %llu kept, %llu transactions", fc_strerror(rc), why,
        (unsigned long long)r.feat_records, (unsigned long long)r.kept_ids,
        (unsigned long long)r.transactions);
  fc_store_close(w);

  /* a writer opening the store while it is held exclusively waits for the exclusive handle's
   * close. It is forked before that open: a process forked while a handle is open shares its lock
   * (flock belongs to the open file, which fork shares) */
  int go[2] = {-1, -1};
  CHECK(pipe(go) == 0, "pipe");
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    char b;
    fc_store *c;
    close(go[1]);
    if (read(go[0], &b, 1) != 1) _exit(3);
    _exit(fc_store_open(st, 0, &c) == 0 ? (fc_store_close(c), 0) : 2);
  }
  close(go[0]);
  CHECK(fc_store_open(st, FC_STORE_EXCLUSIVE, &s) == 0, "exclusive open, no writer");
  CHECK(write(go[1], "g", 1) == 1, "go");
  close(go[1]);
  struct timespec pause = {0, 300 * 1000 * 1000};
  nanosleep(&pause, NULL);
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, WNOHANG) == 0,
        "a writer opened the store while it was held exclusively");
  /* u0 not kept: its entry first, then both its records (the old one and its present one) */
  const char *keep[] = {"u2", "u1"};
  o = (fc_prune_opts){.keep = keep, .n_keep = 2, .batch = 1};
  rc = fc_store_prune(s, &o, &r, why, sizeof why);
  CHECK(rc == 0 && r.feat_records == 2 && r.ids == 1 && r.audio_entries == 1 &&
            r.text_entries == 0 && r.kept_ids == 2 && r.transactions == 3,
        "prune: %s (%s): %llu feat, %llu ids, %llu audio, %llu kept, %llu transactions",
        fc_strerror(rc), why, (unsigned long long)r.feat_records, (unsigned long long)r.ids,
        (unsigned long long)r.audio_entries, (unsigned long long)r.kept_ids,
        (unsigned long long)r.transactions);
  fc_store_close(s);
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the waiting writer after the close: status %d", status);

  fc_verify_report vr;
  rc = fc_verify_store(st, NULL, &vr, why, sizeof why);
  CHECK(rc == 0 && vr.errors == 0 && vr.warnings == 0 && vr.entries[FC_DB_AUDIO] == 2 &&
            vr.entries[FC_DB_FEAT] == 2,
        "verify after the prune: %s, %llu errors, %llu warnings, %llu audio, %llu feat",
        fc_strerror(rc), (unsigned long long)vr.errors, (unsigned long long)vr.warnings,
        (unsigned long long)vr.entries[FC_DB_AUDIO], (unsigned long long)vr.entries[FC_DB_FEAT]);
  fc_verify_report_free(&vr);

  char cmd[500];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("test_prune");
}
