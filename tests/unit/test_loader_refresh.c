/* fc_loader_refresh: a LOOKUP_ONLY loader moves to what another process committed since it
 * opened, in the environment it has (the map not moved, no file opened); a loader with an index
 * refuses (FC_ECONFIG). A map another process grew past this one's (FC_FAULT_MAPSIZE, test builds:
 * small maps and no headroom) is adopted when nothing else of the process holds the store; while
 * another loader of it is open the refresh fails with MDB_MAP_RESIZED, the loader then refuses
 * lookups (FC_EBADSTATE), and the other loader's records stay where they were, intact. A
 * LOOKUP_ONLY loader refuses next and set_epoch (FC_EBADSTATE), fc_loader_error saying why. */
#include "featcache.h"
#include "featcache/fc_loader.h"
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

/* utterance id with frames frames of value v, written by this process */
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

/* Another process writes n utterances PREFIX000.. of 300 frames (96 KB each). */
static int write_elsewhere(const char *path, char prefix, int n) {
  pid_t pid = fork();
  if (pid == 0) {
    fc_store *s;
    if (fc_store_open(path, FC_STORE_NOSYNC, &s)) _exit(3);
    for (int i = 0; i < n; i++) {
      char id[16];
      snprintf(id, sizeof id, "%c%03d", prefix, i);
      if (put(s, id, 300, (float)i)) _exit(4);
    }
    fc_store_close(s);
    _exit(0);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static fc_loader *lookup_loader(const char *path) {
  fc_loader_opts o;
  fc_loader_opts_init(&o);
  o.flags = FC_LOADER_LOOKUP_ONLY;
  const char *paths[] = {path};
  fc_loader *l = NULL;
  char why[512] = "";
  int rc = fc_loader_open(paths, 1, &o, &l, why, sizeof why);
  CHECK(rc == 0, "open %s: %s", path, why);
  return rc ? NULL : l;
}

static void make_store(const char *path) {
  fc_mel_config mc;
  fc_mel_preset("hifigan", &mc);
  char json[1024];
  int jl = fc_mel_config_json(&mc, json, sizeof json);
  fc_digest_buffer(json, (size_t)jl, &mel_cfg);
  fc_store *s;
  CHECK(fc_store_open(path, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "create");
  CHECK(fc_store_put_config(s, &mel_cfg, json, (size_t)jl) == 0, "config");
  CHECK(put(s, "first", 300, 7.f) == 0, "first");
  fc_store_close(s);
}

int main(void) {
  char dir[] = "/tmp/fc_test_refresh_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[256];
  snprintf(path, sizeof path, "%s/s", dir);
  make_store(path);

  /* a commit of another process: found after a refresh, in the same map */
  fc_loader *l = lookup_loader(path);
  if (!l) return fc_check_result("test_loader_refresh");
  /* no index: no batches, and fc_loader_error says why (it said nothing) */
  fc_batch *none = NULL;
  CHECK(fc_loader_next(l, &none) == FC_EBADSTATE && !none &&
            strstr(fc_loader_error(l), "LOOKUP_ONLY loader has no index"),
        "next of a LOOKUP_ONLY loader: '%s'", fc_loader_error(l));
  CHECK(fc_loader_set_epoch(l, 1) == FC_EBADSTATE &&
            strstr(fc_loader_error(l), "LOOKUP_ONLY loader has no index"),
        "set_epoch of a LOOKUP_ONLY loader: '%s'", fc_loader_error(l));
  fc_loader_item it;
  const void *base0, *base1;
  size_t len0, len1;
  CHECK(fc_loader_map_region(l, 0, &base0, &len0) == 0, "map");
  CHECK(write_elsewhere(path, 'a', 3) == 0, "writer");
  CHECK(fc_loader_lookup(l, "a001", &it) == FC_ENOTFOUND, "a001 before the refresh");
  CHECK(fc_loader_refresh(l) == 0, "refresh: %s", fc_loader_error(l));
  CHECK(fc_loader_lookup(l, "a001", &it) == 0 && it.frames == 300 &&
            ((const float *)it.mel)[5] == 1.f,
        "a001 after the refresh: %s", fc_loader_error(l));
  CHECK(fc_loader_lookup(l, "first", &it) == 0 && ((const float *)it.mel)[0] == 7.f, "first");
  CHECK(fc_loader_map_region(l, 0, &base1, &len1) == 0 && base1 == base0, "the map stayed");
  fc_loader_close(l);

  /* a loader with an index: its index is of its snapshot */
  fc_loader_opts o;
  fc_loader_opts_init(&o);
  const char *paths[] = {path};
  char why[512];
  CHECK(fc_loader_open(paths, 1, &o, &l, why, sizeof why) == 0, "open: %s", why);
  CHECK(fc_loader_refresh(l) == FC_ECONFIG, "refresh of an indexed loader");
  fc_loader_close(l);

  if (!fault_built()) {
    printf("growth part not run: the library was built without -DFC_FAULT_INJECTION=ON\n");
  } else {
    /* small maps on both sides, from the store's creation: the writer's grows by doubling,
     * the reader's is what the store's last commit recorded */
    setenv("FC_FAULT_MAPSIZE", "16384", 1);
    snprintf(path, sizeof path, "%s/g", dir);
    make_store(path);
    l = lookup_loader(path);
    if (!l) return fc_check_result("test_loader_refresh");
    CHECK(write_elsewhere(path, 'b', 40) == 0, "writer");
    int rc = fc_loader_refresh(l); /* alone: the grown map is adopted */
    CHECK(rc == 0, "refresh alone: %s", fc_strerror(rc));
    CHECK(fc_loader_lookup(l, "b039", &it) == 0 && ((const float *)it.mel)[0] == 39.f, "b039");
    fc_loader *other = lookup_loader(path); /* holds the store: the map may not move */
    fc_loader_item kept;
    CHECK(other && fc_loader_lookup(other, "b039", &kept) == 0, "other");
    CHECK(write_elsewhere(path, 'c', 200) == 0, "writer"); /* past the map adopted */
    rc = fc_loader_refresh(l);
    CHECK(rc == MDB_MAP_RESIZED, "refresh with another loader open: %s", fc_strerror(rc));
    CHECK(strstr(fc_loader_error(l), "let them go") != NULL, "why: %s", fc_loader_error(l));
    CHECK(fc_loader_lookup(l, "b039", &it) == FC_EBADSTATE, "lookups refused after it");
    CHECK(fc_loader_refresh(l) == FC_EBADSTATE, "refresh refused after it");
    CHECK(((const float *)kept.mel)[N_MELS * 299] == 39.f, "the other's record intact");
    fc_loader_close(l);
    fc_loader_close(other);
    l = lookup_loader(path); /* nothing held: the new size is taken */
    CHECK(l && fc_loader_lookup(l, "c199", &it) == 0, "c199 in a new loader");
    fc_loader_close(l);
  }
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return fc_check_result("test_loader_refresh");
}
