/* cache-verify on a store that another process writes while it runs: every check must read one
 * snapshot. A child process keeps adding an utterance (audio entry and feature record, in one
 * transaction) and deleting it again, as featurize and cache-config --drop do; a store that is
 * consistent at every commit must verify clean, every time, with several threads. Before the
 * checks read one snapshot, the threads' own read transactions saw later commits than the entries
 * they checked: orphan warnings, and "missing features" errors for utterances deleted meanwhile. */
#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_store.h"
#include "featcache/fc_verify.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/check.h"

static fc_mel_config mel;
static fc_digest mel_digest;

/* The puts of utterance i (audio entry and its feature record, or their deletion); the values are
 * malloc'ed into bufs, the record's key written to key. */
static void utt_puts(size_t i, int del, fc_put *p, void **bufs, char *id, size_t id_cap,
                     fc_digest *key) {
  snprintf(id, id_cap, "utt%06zu", i);
  char content[64];
  int cl = snprintf(content, sizeof content, "audio bytes of %zu", i);
  fc_digest audio;
  fc_digest_buffer(content, (size_t)cl, &audio);
  fc_record_key(&audio, &mel_digest, key);
  uint64_t samples = 256 + (i % 700);
  fc_audio_entry e = {audio, 22050, 1, samples, 1000, 5, "/nonexistent.wav", 16};
  size_t el = fc_audio_entry_size(&e);
  bufs[0] = malloc(el);
  fc_audio_entry_encode(&e, bufs[0]);
  uint32_t frames = (uint32_t)fc_mel_num_frames(&mel, samples);
  size_t n = (size_t)frames * mel.n_mels;
  float *pl = calloc(n + 1, sizeof *pl);
  fc_record_header h = {FC_DTYPE_F32, 2, frames, mel.n_mels, 0, 0, mel_digest, 0, FC_PRODUCER_CPU};
  size_t fl = 64 + n * sizeof *pl;
  bufs[1] = malloc(fl);
  fc_record_encode(&h, pl, n * sizeof *pl, bufs[1]);
  free(pl);
  p[0] = (fc_put){FC_DB_AUDIO, id, strlen(id), bufs[0], el, del ? FC_PUT_DELETE : 0};
  p[1] = (fc_put){FC_DB_FEAT, key->bytes, 16, bufs[1], fl, del ? FC_PUT_DELETE : 0};
}

static int write_utts(const char *dir, size_t from, size_t to, int del) {
  fc_store *s;
  int rc = fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  if (rc) return rc;
  for (size_t i = from; i < to && !rc; i++) {
    fc_put p[2];
    void *bufs[2];
    char id[32];
    fc_digest key;
    utt_puts(i, del, p, bufs, id, sizeof id, &key);
    rc = fc_store_write(s, p, 2);
    free(bufs[0]);
    free(bufs[1]);
  }
  fc_store_close(s);
  return rc;
}

/* The child: add utterance k, delete it, add k+1, ... until killed. One commit each. */
static void writer(const char *dir) {
  fc_store *s;
  if (fc_store_open(dir, FC_STORE_NOSYNC, &s)) _exit(1);
  for (size_t k = 100000;; k++)
    for (int del = 0; del < 2; del++) {
      fc_put p[2];
      void *bufs[2];
      char id[32];
      fc_digest key;
      utt_puts(k, del, p, bufs, id, sizeof id, &key);
      if (fc_store_write(s, p, 2)) _exit(1);
      free(bufs[0]);
      free(bufs[1]);
    }
}

int main(void) {
  char dir[] = "/tmp/fc-test-verify-live.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  fc_mel_preset("hifigan", &mel);
  char json[1024];
  int jl = fc_mel_config_json(&mel, json, sizeof json);
  fc_mel_config_digest(&mel, &mel_digest);
  {
    fc_store *s;
    CHECK(fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "create");
    fc_store_put_config(s, &mel_digest, json, (size_t)jl);
    fc_store_close(s);
  }
  CHECK(write_utts(dir, 0, 2000, 0) == 0, "2000 utterances written");

  pid_t pid = fork();
  if (pid == 0) writer(dir);
  fc_verify_opts o;
  fc_verify_opts_init(&o);
  o.threads = 4;
  int runs = 0, bad_runs = 0;
  struct timespec t0, tn;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    fc_verify_report r;
    char why[256];
    int rc = fc_verify_store(dir, &o, &r, why, sizeof why);
    CHECK(rc == 0, "verify runs: %s", why);
    if (r.errors || r.warnings) {
      if (!bad_runs)
        for (size_t i = 0; i < r.count; i++)
          fprintf(stderr, "  run %d: %s %s: %s\n", runs, r.findings[i].db,
                  r.findings[i].key ? r.findings[i].key : "-", r.findings[i].problem);
      bad_runs++;
    }
    fc_verify_report_free(&r);
    runs++;
    clock_gettime(CLOCK_MONOTONIC, &tn);
  } while (tn.tv_sec - t0.tv_sec < 3);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  CHECK(WIFSIGNALED(st), "the writer ran until killed (status %d)", st);
  CHECK(bad_runs == 0, "%d of %d runs during writes found problems in a consistent store", bad_runs,
        runs);
  fprintf(stderr, "%d verify runs while another process wrote\n", runs);

  char p[300];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/lock.mdb", dir);
  unlink(p);
  rmdir(dir);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  return failures ? 1 : 0;
}
