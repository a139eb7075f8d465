/* featurize under injected faults (formats/common/fault.h): the n-th write-transaction commit or put
 * failures, n = 1, 2, ... until the job succeeds. After each failure: a clean error (the store's
 * EIO, with a reason), no hang (workers blocked on the full queue are released), and a store
 * that reopens with every audio entry's record present and valid. Then the library's other
 * exits: the stop flag (FC_EINTR), strict, a bad device, and fc_featurize_file. */
#include "kernels/cuda/cuda_api.h"
#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/common/fault.h"
#include "tests/check.h"
#include "tests/wav.h"

#define NFILES 24

/* Reopen and check: every audio entry has a valid record of the config; returns the entry count. */
static uint64_t check_store(const char *dir, const fc_digest *cfg) {
  fc_store *s;
  int rc = fc_store_open(dir, 0, &s);
  CHECK(rc == 0, "reopen: %s", fc_strerror(rc));
  if (rc) return 0;
  fc_rtxn *t;
  fc_store_read_begin(s, &t);
  fc_cursor *c;
  fc_cursor_open(t, FC_DB_AUDIO, &c);
  const void *k, *v;
  size_t kl, vl;
  uint64_t n = 0, feats = 0;
  while (fc_cursor_next(c, &k, &kl, &v, &vl) == 0) {
    n++;
    fc_audio_entry e;
    CHECK(fc_audio_entry_decode(v, vl, &e) == 0, "entry %.*s", (int)kl, (const char *)k);
    fc_digest key;
    fc_record_key(&e.digest, cfg, &key);
    const void *rv;
    size_t rl;
    rc = fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, &rv, &rl);
    CHECK(rc == 0, "entry %.*s without its record", (int)kl, (const char *)k);
    fc_record_header h;
    const void *pl;
    char why[128];
    if (!rc) CHECK(fc_record_verify(rv, rl, &h, &pl, why, sizeof why) == 0, "record: %s", why);
  }
  fc_cursor_close(c);
  fc_rtxn_count(t, FC_DB_FEAT, &feats);
  CHECK(feats == n, "%llu records, %llu entries", (unsigned long long)feats, (unsigned long long)n);
  fc_rtxn_end(t);
  fc_store_close(s);
  return n;
}

static int run_once(const char *dir, const fc_mel_config *cfg, fc_item_list *items,
                    fc_featurize_opts *o, fc_featurize_stats *st, char *why, size_t wl) {
  fc_store *s;
  int rc = fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  if (rc) return rc;
  rc = fc_featurize_run(s, cfg, items->items, items->count, o, st, why, wl);
  fc_store_close(s);
  return rc;
}

int main(void) {
  if (!fault_built()) { /* scripts/test builds with it; a default (release) build has none */
    printf("skip: the library was built without -DFC_FAULT_INJECTION=ON\n");
    return 77;
  }
  char tmpl[] = "/tmp/fc_fault_featurize.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  char paths[NFILES][300], store[300];
  const char *pp[NFILES];
  for (int i = 0; i < NFILES; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/u%02d.wav", dir, i);
    write_wav(paths[i], i, 5000 + 300 * (uint32_t)i);
    pp[i] = paths[i];
  }
  fc_item_list items;
  CHECK(fc_items_from_paths(pp, NFILES, &items) == 0, "items");
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  fc_digest cd;
  fc_mel_config_digest(&cfg, &cd);
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = 2;
  o.batch_records = 3; /* several commits per run */
  o.queue_records = 2; /* workers block on the queue: a failed commit must release them */
  fc_featurize_stats st;
  char why[256];

  static const char *const sites[] = {"commit", "put"};
  for (int si = 0; si < 2; si++) {
    snprintf(store, sizeof store, "%s/st_%s", dir, sites[si]);
    int n, rc = -1;
    for (n = 1; n < 200 && rc != 0; n++) {
      char spec[64];
      snprintf(spec, sizeof spec, "%s:%d", sites[si], n);
      setenv("FC_FAULT", spec, 1);
      rc = run_once(store, &cfg, &items, &o, &st, why, sizeof why);
      setenv("FC_FAULT", "", 1);
      if (rc) {
        CHECK(rc == EIO, "%s: rc %d (%s), want EIO", spec, rc, fc_strerror(rc));
        CHECK(strstr(why, "cannot write to the store") != NULL, "%s: why '%s'", spec, why);
        /* Every item is accounted for, after a failed commit too: its batch and the items
         * queued or never started count as failed. */
        CHECK(st.total == NFILES && st.processed + st.skipped_existing + st.failed == NFILES,
              "%s: counts %llu+%llu+%llu of %llu", spec, (unsigned long long)st.processed,
              (unsigned long long)st.skipped_existing, (unsigned long long)st.failed,
              (unsigned long long)st.total);
      }
      check_store(store, &cd);
    }
    CHECK(rc == 0, "%s: never succeeded", sites[si]);
    CHECK(n > 2, "%s: the fault never fired", sites[si]);
    CHECK(check_store(store, &cd) == NFILES, "%s: final store incomplete", sites[si]);
    printf("%s faults: %d runs until the job completed, store consistent after each\n", sites[si],
           n - 1);
  }

  /* Stop flag set before the start: nothing started, FC_EINTR. */
  volatile sig_atomic_t stop = 1;
  o.stop = &stop;
  snprintf(store, sizeof store, "%s/st_stop", dir);
  int rc = run_once(store, &cfg, &items, &o, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.processed == 0, "stop: rc %d processed %llu", rc,
        (unsigned long long)st.processed);
  o.stop = NULL;

  /* A CUDA device this machine lacks (any CUDA device without a GPU or without the backend; the
   * ordinal one past the last with a GPU): refused before anything is done. */
  int ndev = 0;
  char dev_why[256];
  cuda_device_count(&ndev, dev_why, sizeof dev_why);
  o.device.kind = FC_DEVICE_CUDA;
  o.device.index = ndev;
  rc = run_once(store, &cfg, &items, &o, &st, why, sizeof why);
  CHECK(rc == FC_ENODEVICE && strstr(why, "no CUDA device"), "cuda:%d: rc %d why '%s'", ndev, rc,
        why);
  if (ndev > 0)
    CHECK(strstr(why, "does not exist") != NULL, "cuda:%d on a machine with %d: why '%s'", ndev,
          ndev, why);
  CHECK(st.processed + st.skipped_existing + st.failed == 0 && st.total == NFILES,
        "refused run: counts %llu+%llu+%llu of %llu", (unsigned long long)st.processed,
        (unsigned long long)st.skipped_existing, (unsigned long long)st.failed,
        (unsigned long long)st.total);
  o.device.kind = FC_DEVICE_AUTO;
  o.device.index = 0;
  fc_device d;
  CHECK(fc_device_parse("cuda:3", &d, why, sizeof why) == 0 && d.index == 3, "parse cuda:3");
  CHECK(fc_device_parse("cuda:x", &d, why, sizeof why) == FC_ECONFIG, "parse cuda:x");

  /* fc_featurize_file: frames = N // hop for hifigan, same numbers as the stored record. */
  fc_mel_plan *plan;
  CHECK(fc_mel_plan_create(&cfg, &plan) == 0, "plan");
  float *mel;
  uint64_t frames;
  rc = fc_featurize_file(plan, paths[3], 0, &mel, &frames, why, sizeof why);
  CHECK(rc == 0 && frames == (5000 + 300 * 3) / 256, "file: rc %d frames %llu", rc,
        (unsigned long long)frames);
  free(mel);
  rc = fc_featurize_file(plan, "/nonexistent.wav", 0, &mel, &frames, why, sizeof why);
  CHECK(rc == ENOENT && mel == NULL, "missing file: rc %d", rc);
  rc = fc_featurize_file(plan, paths[3], 0.1, &mel, &frames, why, sizeof why);
  CHECK(rc == FC_ETOOLONG, "max_seconds: rc %d (%s)", rc, why);
  fc_mel_plan_free(plan);

  fc_item_list_free(&items);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
