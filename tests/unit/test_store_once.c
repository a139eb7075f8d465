/* A store is opened once per process (fc_store.h): while a loader (or another handle) of this
 * process holds it, fc_store_open of it, however spelled, is FC_EOPENED. A second open used to
 * succeed, and LMDB's locks on lock.mdb being the process's, closing it dropped them: another
 * process then found the loader's reader gone from the table (mdb_stat -r: "no active readers"),
 * and a writer there reused the pages of the loader's snapshot (its batches failed "bad magic").
 * NOLOCK opens are not counted; a fork child may open what its parent holds. */
#include "featcache.h"
#include "formats/common/fault.h"

#include <lmdb.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

#define N_MELS 80

static fc_digest mel_cfg;

static int put(fc_store *s, const char *id, uint32_t frames, float v) {
  fc_audio_entry ae = {.sample_rate = 22050,
                       .channels = 1,
                       .frames = 1,
                       .path = id,
                       .path_len = strlen(id)};
  fc_digest_buffer(id, strlen(id), &ae.digest);
  uint8_t aval[128];
  fc_audio_entry_encode(&ae, aval);
  size_t pl = (size_t)frames * N_MELS * 4;
  float *mel = malloc(pl);
  uint8_t *rec = malloc(64 + pl);
  for (size_t i = 0; i < (size_t)frames * N_MELS; i++) mel[i] = v;
  fc_record_header h = {.dtype = FC_DTYPE_F32,
                        .ndim = 2,
                        .dim0 = frames,
                        .dim1 = N_MELS,
                        .config = mel_cfg,
                        .producer = FC_PRODUCER_CPU};
  fc_record_encode(&h, mel, pl, rec);
  fc_digest k;
  fc_record_key(&ae.digest, &mel_cfg, &k);
  fc_put p[2] = {{FC_DB_AUDIO, id, strlen(id), aval, fc_audio_entry_size(&ae), 0},
                 {FC_DB_FEAT, k.bytes, 16, rec, 64 + pl, 0}};
  int rc = fc_store_write(s, p, 2);
  free(mel);
  free(rec);
  return rc;
}

static int count_reader(const char *msg, void *ctx) {
  if (strncmp(msg, "    pid", 7) != 0 && strncmp(msg, "(no active", 10) != 0) ++*(int *)ctx;
  return 0;
}

/* The readers another process sees in the store's reader table (plain LMDB, as mdb_stat -r). */
static int readers_elsewhere(const char *path) {
  pid_t pid = fork();
  if (pid == 0) {
    MDB_env *env;
    int n = 0;
    if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 64) ||
        mdb_env_open(env, path, MDB_RDONLY, 0664) || mdb_reader_list(env, count_reader, &n) < 0)
      _exit(100);
    mdb_env_close(env);
    _exit(n > 99 ? 99 : n);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* fc_store_open of path: its code; a store it opened is closed again */
static int open_close(const char *path, unsigned flags) {
  fc_store *s = NULL;
  int rc = fc_store_open(path, flags, &s);
  fc_store_close(s);
  return rc;
}

int main(void) {
  char dir[] = "/tmp/fc_test_store_once_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[256], other[300];
  snprintf(path, sizeof path, "%s/s", dir);
  snprintf(other, sizeof other, "%s/./s/", dir);

  fc_mel_config mc;
  fc_mel_preset("hifigan", &mc);
  char json[1024];
  int jl = fc_mel_config_json(&mc, json, sizeof json);
  fc_digest_buffer(json, (size_t)jl, &mel_cfg);
  fc_store *s = NULL;
  CHECK(fc_store_open(path, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "create");
  CHECK(fc_store_put_config(s, &mel_cfg, json, (size_t)jl) == 0, "config");
  CHECK(put(s, "a", 300, 1.f) == 0 && put(s, "b", 200, 2.f) == 0, "records");
  /* one handle open: a second of the same store is refused, whatever the spelling */
  int rc = open_close(path, FC_STORE_RDONLY);
  CHECK(rc == FC_EOPENED, "a second open beside a handle: %s", fc_strerror(rc));
  rc = open_close(other, 0);
  CHECK(rc == FC_EOPENED, "%s beside %s: %s", other, path, fc_strerror(rc));
  CHECK(strncmp(fc_strerror(FC_EOPENED), "FC_EOPENED: ", 12) == 0, "%s", fc_strerror(FC_EOPENED));
  fc_store_close(s);
  rc = open_close(path, FC_STORE_RDONLY);
  CHECK(rc == 0, "open after the close: %s", fc_strerror(rc));

  /* a loader holds the store: its reader stays in the table other processes read */
  fc_loader_opts o;
  fc_loader_opts_init(&o);
  const char *paths[] = {path};
  fc_loader *l = NULL;
  char why[512] = "";
  CHECK(fc_loader_open(paths, 1, &o, &l, why, sizeof why) == 0, "loader: %s", why);
  CHECK(readers_elsewhere(path) == 1, "the loader's reader, seen by another process");
  rc = open_close(path, FC_STORE_RDONLY);
  CHECK(rc == FC_EOPENED, "fc_store_open beside a loader: %s", fc_strerror(rc));
  rc = open_close(other, 0);
  CHECK(rc == FC_EOPENED, "for writing beside a loader: %s", fc_strerror(rc));
  int n = readers_elsewhere(path);
  CHECK(n == 1, "after the opens beside it, another process sees %d readers, want the loader's", n);
  rc = open_close(path, FC_STORE_RDONLY | FC_STORE_NOLOCK);
  CHECK(rc == 0, "a NOLOCK open is not counted: %s", fc_strerror(rc));
  fc_loader *l2 = NULL; /* loaders of a process share the store */
  CHECK(fc_loader_open(paths, 1, &o, &l2, why, sizeof why) == 0, "second loader: %s", why);
  fc_loader_close(l2);
  pid_t pid = fork();
  if (pid == 0) _exit(open_close(path, FC_STORE_RDONLY) == 0 ? 0 : 1);
  int status = 1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "a fork child opens the store its parent holds");
  CHECK(readers_elsewhere(path) == 1, "the loader's reader after the child");
  fc_batch *b = NULL;
  CHECK(fc_loader_next(l, &b) == 0 && b && b->size == 2 && b->n_errors == 0, "the batch");
  fc_loader_release(l, b);
  fc_loader_close(l);
  rc = open_close(path, 0);
  CHECK(rc == 0, "open after the loader closed: %s", fc_strerror(rc));

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return fc_check_result("test_store_once");
}
