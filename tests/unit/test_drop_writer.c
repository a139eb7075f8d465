/* A config dropped (cache-config --drop, fc_store_drop_config) while featurize or tokenize is
 * writing under it: the drop runs between two of the writer's batches (from its progress
 * callback, so the interleaving is the same every time). The writer's next batch must not be
 * stored: the run returns FC_EDROPPED and the store is as the drop left it — no config, no record
 * of it. Featurize used to store the config again with only its later records (and return 0:
 * "done", with the records of its first batch gone); tokenize, which wrote its config once at the
 * start, left its later records under no config at all (cache-verify errors no tool could list
 * or drop), and returned 0; a bulk load, whose records go in at the end, too (its config now goes
 * in just before them: the drop comes between the two). cache-merge into a
 * store whose config is dropped (by another process: one store is opened once per process)
 * between two of its batches did the same as tokenize. */
#include "featcache/fc_featurize.h"
#include "featcache/fc_merge.h"
#include "featcache/fc_store.h"
#include "featcache/fc_tokenize.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/common/fault.h"
#include "tests/check.h"
#include "tests/stopped.h"
#include "tests/wav.h"

#define N 4

static fc_store *store; /* the store the writer writes and the callback drops from */
static int dropped; /* batches seen before the drop ran: the drop runs once, after the first */

static void drop_all(void) {
  if (dropped++) return;
  fc_config_info *c;
  size_t n;
  CHECK(fc_store_configs(store, 0, &c, &n) == 0 && n == 1, "the config before the drop");
  if (n == 1) {
    int rc = fc_store_drop_config(store, &c[0].digest, NULL, NULL, NULL);
    CHECK(rc == 0, "drop: %s", fc_strerror(rc));
  }
  fc_configs_free(c, n);
}

static void fz_progress(const fc_featurize_stats *st, void *user) {
  (void)st, (void)user;
  drop_all();
}

static void tk_progress(const fc_tokenize_stats *st, void *user) {
  (void)st, (void)user;
  drop_all();
}

static const char *merge_out; /* the merge's output, dropped from by a child process */

static void mg_progress(const fc_merge_stats *st, void *user) {
  (void)user;
  if (dropped || !st->copied[FC_DB_FEAT]) return;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (fc_store_open(merge_out, 0, &store)) _exit(2);
    drop_all();
    fc_store_close(store);
    _exit(failures ? 1 : 0);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the drop in a child process: status %d", status);
  dropped = 1;
}

/* The store holds no config, and no record in db. */
static void check_dropped(const char *what, int db) {
  fc_config_info *c;
  size_t n;
  CHECK(fc_store_configs(store, 1, &c, &n) == 0 && n == 0, "%s: %zu configs after the drop", what,
        n);
  fc_configs_free(c, n);
  fc_rtxn *t;
  uint64_t records = 99;
  if (fc_store_read_begin(store, &t) == 0) {
    fc_rtxn_count(t, db, &records);
    fc_rtxn_end(t);
  }
  CHECK(records == 0, "%s: %llu records left under no config, or under the config stored again",
        what, (unsigned long long)records);
}

/* A run whose config was not in the store at its open, while another run of it stores files this
 * one lists (a `make -j` of two lists that overlap), then the config dropped before this run's
 * first commit: this run's lookups found the other's records and counted them stored, so its
 * commit must find the config there, not store it anew. Held, not timed: the event of the run's
 * first item (a file that is not there, its failure record queued, committed at the end with the
 * rest: batch_seconds long) has the other run (featurize, FC_BIN) store the next files, and the
 * event of the last of those, found stored, has cache-config --drop run. The run used to exit 0
 * with those files counted already stored, their records gone, the config stored again with the
 * last file's record alone. */
static char meanwhile_cmd[2][1400];
static size_t meanwhile_last; /* the last item the other run stores */

static void meanwhile_event(const fc_featurize_event *ev, void *user) {
  (void)user;
  int k = ev->index == 0 && ev->status == FC_ITEM_FAILED                 ? 0
          : ev->index == meanwhile_last && ev->status == FC_ITEM_SKIPPED ? 1
                                                                         : -1;
  if (k < 0) return;
  fflush(NULL);
  CHECK(system(meanwhile_cmd[k]) == 0, "%s", meanwhile_cmd[k]);
}

static void drop_meanwhile(const char *dir, char paths[N][300]) {
  const char *bin = getenv("FC_BIN");
  if (!bin) {
    printf("test_drop_writer: the drop before a first commit skipped: no FC_BIN (the tools)\n");
    return;
  }
  char st_dir[400], missing[400];
  snprintf(st_dir, sizeof st_dir, "%s/meanwhile", dir);
  snprintf(missing, sizeof missing, "%s/not-there.wav", dir);
  const char *pp[N + 1] = {missing};
  for (int i = 0; i < N; i++) pp[i + 1] = paths[i];
  meanwhile_last = N - 1; /* the other run stores paths[0..N-2]; this one computes paths[N-1] */
  int o = snprintf(meanwhile_cmd[0], sizeof meanwhile_cmd[0], "'%s/featurize' -q -j 1 -o '%s'", bin,
                   st_dir);
  for (int i = 0; i < N - 1; i++)
    o += snprintf(meanwhile_cmd[0] + o, sizeof meanwhile_cmd[0] - (size_t)o, " '%s'", paths[i]);
  snprintf(meanwhile_cmd[1], sizeof meanwhile_cmd[1], "'%s/cache-config' -q --drop hifigan '%s'",
           bin, st_dir);
  fc_item_list items;
  fc_mel_config cfg;
  CHECK(fc_mel_preset("hifigan", &cfg) == 0, "preset");
  CHECK(fc_items_from_paths(pp, N + 1, &items) == 0, "items");
  CHECK(fc_store_open(st_dir, FC_STORE_CREATE, &store) == 0, "open %s", st_dir);
  fc_featurize_opts fo;
  fc_featurize_opts_init(&fo);
  fo.jobs = 1;
  fo.batch_seconds = 600; /* one commit, at the end */
  fo.on_event = meanwhile_event;
  fc_featurize_stats fst;
  char why[256] = "";
  int rc = fc_featurize_run(store, &cfg, items.items, items.count, &fo, &fst, why, sizeof why);
  CHECK(fst.skipped_existing == N - 1,
        "the drop before a first commit: %llu already stored, want %d",
        (unsigned long long)fst.skipped_existing, N - 1);
  CHECK(rc == FC_EDROPPED,
        "featurize with its config dropped after its lookups found another run's records, "
        "before its first commit: %s (%s), want FC_EDROPPED",
        fc_strerror(rc), why);
  check_dropped("featurize, the drop before a first commit", FC_DB_FEAT);
  fc_store_close(store);
  fc_item_list_free(&items);
}

/* tokenize over items into the store at dir, stopped by itself at the fault site `site`
 * (FC_FAULT_STOP) while a child process (no OpenMP in it: a forked child cannot use the parent's
 * thread pool) drops the config, then let go on: the run's return code. */
static int tokenize_dropped_at(const char *site, const char *dir, fc_tokenizer *tok,
                               const fc_item_list *items, const fc_tokenize_run_opts *ro,
                               fc_tokenize_stats *tst) {
  fflush(NULL);
  const pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    fc_test_wait_stopped(parent); /* until the run has stopped itself */
    if (fc_store_open(dir, 0, &store)) _exit(2);
    dropped = 0;
    drop_all();
    fc_store_close(store);
    kill(parent, SIGCONT);
    _exit(failures ? 1 : 0);
  }
  setenv("FC_FAULT_STOP", site, 1);
  int rc = fc_tokenize_run(store, tok, items, ro, tst);
  unsetenv("FC_FAULT_STOP");
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the drop in a child process: status %d", status);
  return rc;
}

int main(void) {
  char tmpl[] = "/tmp/fc_drop_writer.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  char paths[N][300], st_dir[400], tk_dir[400], csv[400], cmd[600];
  const char *pp[N];
  for (int i = 0; i < N; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/u%d.wav", dir, i);
    write_wav(paths[i], i + 1, 22050);
    pp[i] = paths[i];
  }

  /* featurize, a batch per file */
  snprintf(st_dir, sizeof st_dir, "%s/st", dir);
  fc_item_list items;
  fc_mel_config cfg;
  CHECK(fc_mel_preset("hifigan", &cfg) == 0, "preset");
  CHECK(fc_items_from_paths(pp, N, &items) == 0, "items");
  CHECK(fc_store_open(st_dir, FC_STORE_CREATE, &store) == 0, "open %s", st_dir);
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = 1;
  o.batch_records = 1;
  o.on_progress = fz_progress;
  fc_featurize_stats fst;
  char why[256] = "";
  int rc = fc_featurize_run(store, &cfg, items.items, items.count, &o, &fst, why, sizeof why);
  CHECK(rc == FC_EDROPPED,
        "featurize with its config dropped after the first batch: %s (%s), "
        "want FC_EDROPPED",
        fc_strerror(rc), why);
  check_dropped("featurize", FC_DB_FEAT);
  fc_store_close(store);
  fc_item_list_free(&items);

  drop_meanwhile(dir, paths);

  /* tokenize (no bulk load: every batch committed), a batch per line */
  snprintf(tk_dir, sizeof tk_dir, "%s/tk", dir);
  snprintf(csv, sizeof csv, "%s/m.csv", dir);
  FILE *f = fopen(csv, "w");
  for (int i = 0; f && i < N; i++) fprintf(f, "u%d|Line number %d.|Line number %d.\n", i, i, i);
  if (f) fclose(f);
  fc_tok_opts to;
  fc_tok_opts_init(&to, FC_TOK_CHARS);
  to.build_vocab = 1;
  fc_tokenizer *tok = NULL;
  CHECK(fc_tokenizer_create(&to, &tok, why, sizeof why) == 0, "tokenizer: %s", why);
  CHECK(fc_manifest_read(csv, NULL, &items, why, sizeof why) == 0, "manifest: %s", why);
  CHECK(fc_store_open(tk_dir, FC_STORE_CREATE, &store) == 0, "open %s", tk_dir);
  fc_tokenize_run_opts ro = {0};
  ro.batch = 1;
  ro.bulk = -1;
  ro.progress = tk_progress;
  fc_tokenize_stats tst;
  dropped = 0;
  rc = fc_tokenize_run(store, tok, &items, &ro, &tst);
  CHECK(rc == FC_EDROPPED,
        "tokenize with its config dropped after the first batch: %s, want "
        "FC_EDROPPED",
        fc_strerror(rc));
  check_dropped("tokenize", FC_DB_TOK);
  fc_store_close(store);
  fc_tokenizer_free(tok);

  /* a bulk load (a new store): its config goes in just before its records, each batch of which
   * requires it. The run stops itself there (FC_FAULT_STOP=tokenize_merge:1); a child process
   * (no OpenMP in it: a forked child cannot use the parent's thread pool) drops the config and
   * lets it go on; the load must find the config dropped. */
  snprintf(tk_dir, sizeof tk_dir, "%s/bulk", dir);
  if (!fault_built()) {
    printf(
        "test_drop_writer: the bulk load's case skipped: built without "
        "-DFC_FAULT_INJECTION=ON\n");
  } else {
    CHECK(fc_tokenizer_create(&to, &tok, why, sizeof why) == 0, "tokenizer: %s", why);
    CHECK(fc_store_open(tk_dir, FC_STORE_CREATE, &store) == 0, "open %s", tk_dir);
    ro.bulk = 0;
    ro.progress = NULL;
    rc = tokenize_dropped_at("tokenize_merge:1", tk_dir, tok, &items, &ro, &tst);
    CHECK(rc == FC_EDROPPED, "a bulk tokenize with its config dropped: %s, want FC_EDROPPED",
          fc_strerror(rc));
    check_dropped("bulk tokenize", FC_DB_TOK);
    fc_store_close(store);
    fc_tokenizer_free(tok);
  }
  /* a drop before a tokenize run's first commit, its lookups having found records of its config
   * stored (another run's: lines 0..N-2, stored before it here, or beside it) and counted them
   * stored: the run stops itself between those lookups and its commit (FC_FAULT_STOP=
   * tokenize_batch:1), a child drops the config. The commit stored the config anew with the
   * last line's record alone, returning 0, the N-1 lines it counted stored gone. */
  snprintf(tk_dir, sizeof tk_dir, "%s/tk-seen", dir);
  if (fault_built()) {
    CHECK(fc_tokenizer_create(&to, &tok, why, sizeof why) == 0, "tokenizer: %s", why);
    CHECK(fc_tokenizer_build_vocab_from(tok, &items, NULL) == 0, "vocab"); /* one config */
    CHECK(fc_store_open(tk_dir, FC_STORE_CREATE, &store) == 0, "open %s", tk_dir);
    const fc_item_list first = {items.items, N - 1, items.format};
    ro.bulk = -1;
    ro.batch = N;
    rc = fc_tokenize_run(store, tok, &first, &ro, &tst);
    CHECK(rc == 0 && tst.processed == N - 1, "the other run: %s", fc_strerror(rc));
    rc = tokenize_dropped_at("tokenize_batch:1", tk_dir, tok, &items, &ro, &tst);
    CHECK(rc == FC_EDROPPED,
          "tokenize with its config dropped after its lookups found records of it, before its "
          "first commit: %s (%llu already stored), want FC_EDROPPED",
          fc_strerror(rc), (unsigned long long)tst.skipped_existing);
    check_dropped("tokenize, the drop before a first commit", FC_DB_TOK);
    fc_store_close(store);
    fc_tokenizer_free(tok);
  }
  fc_item_list_free(&items);

  /* cache-merge, a batch per record */
  char src[400], out[400];
  snprintf(src, sizeof src, "%s/src", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  CHECK(fc_items_from_paths(pp, N, &items) == 0, "items");
  CHECK(fc_store_open(src, FC_STORE_CREATE, &store) == 0, "open %s", src);
  o.on_progress = NULL;
  rc = fc_featurize_run(store, &cfg, items.items, items.count, &o, &fst, why, sizeof why);
  CHECK(rc == 0, "featurize the merge's input: %s (%s)", fc_strerror(rc), why);
  fc_store_close(store);
  fc_item_list_free(&items);
  fc_merge_opts mo;
  fc_merge_opts_init(&mo);
  mo.batch_records = 1;
  mo.on_progress = mg_progress;
  merge_out = out;
  dropped = 0;
  fc_merge_stats mst;
  const char *in[] = {src};
  rc = fc_merge_run(out, in, 1, &mo, &mst, why, sizeof why);
  CHECK(rc == FC_EDROPPED,
        "a merge whose output's config was dropped after its first batch: %s "
        "(%s), want FC_EDROPPED",
        fc_strerror(rc), why);
  CHECK(fc_store_open(out, FC_STORE_RDONLY, &store) == 0, "open %s", out);
  check_dropped("cache-merge", FC_DB_FEAT);
  fc_store_close(store);

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("test_drop_writer");
}
