/* Hybrid start of a staging backend (docs/featurize.md "Hybrid start"): the device is opened on
 * its own thread while the workers compute on the CPU, then they stage. Through the CPU staging
 * mock (tests/stage_mock.h), whose open is held until the writers have stored some records (the
 * writers then wait for the ring, so that the workers leave items for it):
 *   - FC_CUDA_START=hybrid: the first records are the CPU's (producer 1), made while the open
 *     waited, the rest the device's (producer 2); every record holds exactly the CPU path's
 *     numbers (fc_featurize_file); every item has one STORED event; the setup time is the open's;
 *     stats->cpu_computed counts the CPU's records (0 when the device was opened first);
 *   - FC_CUDA_START=wait: the device opened before any worker starts: every record the device's;
 *   - an open that fails while the workers compute: the run ends with the device's error and
 *     reason (no hang), what was computed is stored and holds the right numbers, the items never
 *     taken count as failed; a rerun (wait) stores the rest and finds the others stored;
 *   - an open that fails otherwise (out of pinned memory: ENOMEM), hybrid or wait: the device's
 *     failure (FC_ENODEVICE, its reason said), not the store's;
 *   - the same failing open on a job that may fall back (fallback_to_cpu: the device was auto's
 *     choice), hybrid and wait: the CPU computes the whole job (every record producer 1, exactly
 *     the CPU path's numbers), rc 0 with stats.fell_back_to_cpu and the device's reason; stopped
 *     (the stop flag) after it fell back: FC_EINTR, not a finished job, the reason still said;
 *   - fc_featurize_run's own backends: cuda:0 that may fall back, where it cannot be resolved (no
 *     usable GPU), is computed by the CPU (rc 0, fell_back_to_cpu, the resolve's reason);
 *   - FC_CUDA_START of another value: refused (FC_ECONFIG) before anything is done;
 *   - the default (auto): a small job of files opens the device first, a large one (its input
 *     over the large-job threshold, or a manifest read as the job goes) starts hybrid. */
#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_store.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/check.h"
#include "tests/stage_mock.h"
#include "tests/wav.h"

enum { NFILES = 40, HOLD_UNTIL = 6 };

static char paths[NFILES][300];
static float *ref_mel[NFILES];
static uint64_t ref_frames[NFILES];

static atomic_uint stored_events;
static unsigned hold_until; /* the open waits until this many records are stored (0: not at all) */
static int fail_with; /* then fails with this error (0: opens) */
static int fallback; /* fc_featurize_opts.fallback_to_cpu of the runs */
static int strict; /* fc_featurize_opts.strict of the runs */
static atomic_uint opened_after; /* stored records the open saw when it was called */
static atomic_int open_returned; /* the mock's open has returned (opened, or failed) */
static volatile sig_atomic_t stop_flag; /* fc_featurize_opts.stop of the runs */
static unsigned stop_after; /* set stop_flag once this many records are stored (0: never) */

static int slow_open(void) {
  atomic_store(&opened_after, atomic_load(&stored_events));
  for (int k = 0; k < 10000 && atomic_load(&stored_events) < hold_until; k++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&open_returned, 1);
  return fail_with;
}

/* Whether the run's opener thread ("fc-open") still runs: it marks the ring ready as it ends (the
 * mock's open returning is not enough: a loaded machine may stall the thread between the two,
 * and the workers then compute every item on the CPU). */
static int opener_running(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
    char p[300], name[32] = "";
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(p, "r");
    if (f && fgets(name, sizeof name, f)) found = strcmp(name, "fc-open\n") == 0;
    if (f) fclose(f);
  }
  closedir(d);
  return found;
}

/* The open is still to end as the writer's wait wants it: a ring set up (an open that succeeds),
 * or the opener ended with its failure (one that fails). */
static int open_pending(void) {
  if (opener_running()) return 1;
  return !fail_with ? atomic_load(&the_mock.opened) == 0 : !atomic_load(&open_returned);
}

typedef struct seen {
  unsigned events[NFILES];
  fc_featurize_status status[NFILES];
} seen;

static void on_event(const fc_featurize_event *ev, void *user) {
  seen *s = user;
  s->events[ev->index]++;
  s->status[ev->index] = ev->status;
  if (ev->status != FC_ITEM_STORED) return;
  if (stop_after && atomic_load(&stored_events) + 1 >= stop_after) stop_flag = 1;
  /* Once the open may return, the writer (this thread) waits for the ring to be set up — or, for
   * an open that fails, for the opener to have ended with its failure: the workers, a record or
   * two ahead of it (queue_records 1), stop on the full queue, so that items are left for the
   * device (or never taken) however late a loaded machine runs the opener thread (the workers
   * computed all 40 on the CPU before a failing open returned, 1 run in ~40 under load). */
  if (atomic_fetch_add(&stored_events, 1) + 1 == hold_until)
    for (int k = 0; k < 10000 && open_pending(); k++) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
}

static int run(const char *store, const fc_mel_config *cfg, const fc_item_list *items, seen *ev,
               fc_featurize_stats *st, char *why, size_t why_len) {
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = 2;
  o.batch_records = 1; /* each record committed (and its event sent) as it comes, */
  o.queue_records = 1; /* and the workers at most a few records ahead of the commits */
  o.device.kind = FC_DEVICE_CUDA;
  o.fallback_to_cpu = fallback;
  o.strict = strict;
  o.stop = &stop_flag;
  stop_flag = 0;
  o.on_event = on_event;
  o.user = ev;
  memset(ev, 0, sizeof *ev);
  atomic_store(&stored_events, 0);
  atomic_store(&open_returned, 0);
  stage_mock *m = &the_mock;
  memset(m, 0, sizeof *m);
  m->chunks = 4;
  m->capacity = 60000;
  m->max_utts = 1024;
  m->open_hook = slow_open;
  fc_store *s;
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open %s", store);
  int rc = fz_pipeline_run(s, cfg, items->items, items->count, &o, &mock_backend, st, why, why_len);
  fc_store_close(s);
  return rc;
}

/* The stored records of store: how many each producer made; each one's numbers must be the CPU
 * path's. Returns the records found. */
/* A real GPU's record against the CPU path's (hifigan: ln of the mel magnitude): within
 * docs/ACCURACY.md's bound for log outputs, 1e-4 + 32 float32 epsilons of the frame's loudest band
 * in this band's units (the float32 FFTs differ in their last bits; the mock's are the CPU's own). */
static int within_bound(const float *got, const float *want, uint32_t frames, uint32_t n_mels) {
  for (uint32_t f = 0; f < frames; f++) {
    const float *g = got + (size_t)f * n_mels, *w = want + (size_t)f * n_mels;
    float peak = w[0];
    for (uint32_t b = 1; b < n_mels; b++) peak = w[b] > peak ? w[b] : peak;
    for (uint32_t b = 0; b < n_mels; b++)
      if (fabs((double)g[b] - w[b]) > 1e-4 + 32 * 1.1920929e-7 * exp((double)peak - w[b])) return 0;
  }
  return 1;
}

/* gpu: a real GPU's records (producer CUDA) are held to the bound above, not to the CPU's bytes */
static unsigned check_records_on(const char *what, const char *store, const fc_mel_config *cfg,
                                 unsigned *cpu, unsigned *dev, int gpu) {
  fc_store *s;
  fc_rtxn *t;
  char why[256];
  unsigned found = 0;
  *cpu = *dev = 0;
  CHECK(fc_store_open(store, FC_STORE_RDONLY, &s) == 0 && fc_store_read_begin(s, &t) == 0,
        "%s: reopen %s", what, store);
  fc_digest cd;
  fc_mel_config_digest(cfg, &cd);
  for (int i = 0; i < NFILES; i++) {
    char id[16];
    snprintf(id, sizeof id, "f%02d", i);
    const void *v, *pl;
    size_t vl;
    fc_audio_entry e;
    if (fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vl) != 0) continue;
    CHECK(fc_audio_entry_decode(v, vl, &e) == 0, "%s: %s: entry", what, id);
    fc_digest key;
    fc_record_key(&e.digest, &cd, &key);
    fc_record_header h;
    if (fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, &v, &vl) != 0 ||
        fc_record_verify(v, vl, &h, &pl, why, sizeof why) != 0) {
      CHECK(0, "%s: %s: an entry without a valid record", what, id);
      continue;
    }
    found++;
    *cpu += h.producer == FC_PRODUCER_CPU;
    *dev += h.producer == FC_PRODUCER_CUDA;
    const size_t bytes = (size_t)ref_frames[i] * cfg->n_mels * sizeof(float);
    const int same =
        h.payload_bytes == bytes &&
        (gpu && h.producer == FC_PRODUCER_CUDA ? within_bound(pl, ref_mel[i], h.dim0, cfg->n_mels)
                                               : memcmp(pl, ref_mel[i], bytes) == 0);
    CHECK(h.dim0 == ref_frames[i] && same,
          "%s: %s (producer %u): %u frames (want %llu), numbers %s the CPU path's", what, id,
          h.producer, h.dim0, (unsigned long long)ref_frames[i], same ? "equal" : "differ from");
  }
  fc_rtxn_end(t);
  fc_store_close(s);
  return found;
}

static unsigned check_records(const char *what, const char *store, const fc_mel_config *cfg,
                              unsigned *cpu, unsigned *dev) {
  return check_records_on(what, store, cfg, cpu, dev, 0);
}

static void rm_rf(const char *path) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", path);
}

int main(void) {
  alarm(600); /* a run that never ends (a producer never done) fails here, not in CI's timeout */
  char tmpl[] = "/tmp/fc_hybrid.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  fc_mel_config cfg;
  CHECK(fc_mel_preset("hifigan", &cfg) == 0, "preset");
  fc_mel_plan *plan;
  CHECK(fc_mel_plan_create(&cfg, &plan) == 0, "plan");
  const char *argv[NFILES];
  for (int i = 0; i < NFILES; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/f%02d.wav", dir, i);
    write_wav(paths[i], i, 6000 + 997 * (uint32_t)i); /* 0.27-2.0 s, each fits a chunk */
    argv[i] = paths[i];
    char why[256];
    CHECK(fc_featurize_file(plan, paths[i], 0, &ref_mel[i], &ref_frames[i], why, sizeof why) == 0,
          "reference %d: %s", i, why);
  }
  fc_mel_plan_free(plan);
  fc_item_list items;
  CHECK(fc_items_from_paths(argv, NFILES, &items) == 0, "items");
  /* ids f00.. f39: the file names' stems */
  char store[400], why[256];
  seen ev;
  fc_featurize_stats st;
  unsigned cpu, dev;

  /* hybrid: the open held until HOLD_UNTIL records are stored, the workers computing meanwhile */
  setenv("FC_CUDA_START", "hybrid", 1);
  hold_until = HOLD_UNTIL;
  fail_with = 0;
  snprintf(store, sizeof store, "%s/hybrid", dir);
  int rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == 0, "hybrid: rc %d (%s)", rc, why);
  CHECK(st.processed == NFILES && st.failed == 0, "hybrid: %llu stored, %llu failed",
        (unsigned long long)st.processed, (unsigned long long)st.failed);
  for (int i = 0; i < NFILES; i++)
    CHECK(ev.events[i] == 1 && ev.status[i] == FC_ITEM_STORED, "hybrid: f%02d: %u events", i,
          ev.events[i]);
  /* the open is started with the job, beside the workers, not after a share of it: a machine
   * loaded four times over ran the opener thread after the first record once in ~60, and one
   * loaded eight times over (two test suites on two cores) after the ninth once; an open made
   * only once the CPU had done half the job would be the defect */
  CHECK(atomic_load(&opened_after) < NFILES / 2, "hybrid: the open was called after %u records",
        atomic_load(&opened_after));
  CHECK(check_records("hybrid", store, &cfg, &cpu, &dev) == NFILES, "hybrid: records missing");
  CHECK(cpu >= HOLD_UNTIL && dev >= 1 && cpu + dev == NFILES,
        "hybrid: %u records by the CPU (want >= %d: made while the open waited), %u by the "
        "device (want >= 1)",
        cpu, HOLD_UNTIL, dev);
  CHECK(atomic_load(&the_mock.utts) == dev, "hybrid: the device computed %u, %u records say so",
        atomic_load(&the_mock.utts), dev);
  CHECK(st.setup_seconds > 0, "hybrid: setup_seconds %g (the open's)", st.setup_seconds);
  CHECK(st.cpu_computed == cpu, "hybrid: cpu_computed %llu, %u records by the CPU",
        (unsigned long long)st.cpu_computed, cpu);
  printf("hybrid: %u records by the CPU while the device opened, %u by the device\n", cpu, dev);
  rm_rf(store);

  /* wait: the device opened before any worker starts, whatever the open takes */
  setenv("FC_CUDA_START", "wait", 1);
  snprintf(store, sizeof store, "%s/wait", dir);
  hold_until = 0;
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == 0 && st.processed == NFILES, "wait: rc %d (%s), %llu stored", rc, why,
        (unsigned long long)st.processed);
  CHECK(check_records("wait", store, &cfg, &cpu, &dev) == NFILES && dev == NFILES,
        "wait: %u records by the CPU, %u by the device (want all)", cpu, dev);
  CHECK(st.cpu_computed == 0, "wait: cpu_computed %llu", (unsigned long long)st.cpu_computed);
  rm_rf(store);

  /* an open that fails after HOLD_UNTIL records: the device's error, the rest never taken */
  setenv("FC_CUDA_START", "hybrid", 1);
  snprintf(store, sizeof store, "%s/failed", dir);
  hold_until = HOLD_UNTIL;
  fail_with = FC_ENODEVICE;
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == FC_ENODEVICE && strcmp(why, "the mock device cannot be opened") == 0,
        "failed open: rc %d (%s), want FC_ENODEVICE with the device's reason", rc, why);
  unsigned events = 0;
  for (int i = 0; i < NFILES; i++) events += ev.events[i];
  CHECK(st.processed >= HOLD_UNTIL && st.processed + st.failed + st.not_started == NFILES &&
            st.failed > 0,
        "failed open: %llu stored, %llu failed, %llu not started of %d",
        (unsigned long long)st.processed, (unsigned long long)st.failed,
        (unsigned long long)st.not_started, NFILES);
  const unsigned kept = check_records("failed open", store, &cfg, &cpu, &dev);
  CHECK(kept == st.processed && cpu == kept, "failed open: %u records (%u by the CPU), %llu stored",
        kept, cpu, (unsigned long long)st.processed);
  CHECK(st.cpu_computed == kept, "failed open: cpu_computed %llu, %u records",
        (unsigned long long)st.cpu_computed, kept);
  printf("failed open: %u records stored before the device failed, %llu items failed\n", kept,
         (unsigned long long)st.failed);
  /* the rerun stores the rest and finds those stored */
  setenv("FC_CUDA_START", "wait", 1);
  fail_with = 0;
  hold_until = 0;
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == 0 && st.processed == NFILES - kept && st.skipped_existing == kept,
        "rerun: rc %d (%s), %llu stored, %llu skipped (want %u, %u)", rc, why,
        (unsigned long long)st.processed, (unsigned long long)st.skipped_existing, NFILES - kept,
        kept);
  CHECK(check_records("rerun", store, &cfg, &cpu, &dev) == NFILES, "rerun: records missing");
  rm_rf(store);

  /* an open that fails for another reason (out of pinned memory) is still the device's failure:
   * FC_ENODEVICE with its reason, as "no device" (the CLI's exit 2), not a store error (exit 1) */
  const char *want_why = "the device failed to start: the mock device cannot be opened";
  setenv("FC_CUDA_START", "hybrid", 1);
  snprintf(store, sizeof store, "%s/nomem", dir);
  hold_until = HOLD_UNTIL;
  fail_with = ENOMEM;
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == FC_ENODEVICE && strcmp(why, want_why) == 0,
        "hybrid, out of memory: rc %d (%s), want FC_ENODEVICE (%s)", rc, why, want_why);
  CHECK(st.processed >= HOLD_UNTIL && st.failed > 0 &&
            st.processed + st.failed + st.not_started == NFILES,
        "hybrid, out of memory: %llu stored, %llu failed, %llu not started of %d",
        (unsigned long long)st.processed, (unsigned long long)st.failed,
        (unsigned long long)st.not_started, NFILES);
  rm_rf(store);
  setenv("FC_CUDA_START", "wait", 1);
  hold_until = 0;
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == FC_ENODEVICE && strcmp(why, want_why) == 0 && st.not_started == NFILES,
        "wait, out of memory: rc %d (%s), %llu not started, want FC_ENODEVICE (%s), nothing done",
        rc, why, (unsigned long long)st.not_started, want_why);
  fail_with = 0;
  rm_rf(store);

  /* the same failing open, on a job that may fall back: the CPU computes it all */
  for (int hyb = 1; hyb >= 0; hyb--) {
    const char *mode = hyb ? "hybrid" : "wait";
    setenv("FC_CUDA_START", mode, 1);
    snprintf(store, sizeof store, "%s/fallback-%s", dir, mode);
    hold_until = hyb ? HOLD_UNTIL : 0;
    fail_with = ENOMEM;
    fallback = 1;
    rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
    CHECK(rc == 0 && st.fell_back_to_cpu && strcmp(why, "the mock device cannot be opened") == 0,
          "fallback, %s: rc %d, fell_back_to_cpu %d (%s): want 0, 1 and the device's reason", mode,
          rc, st.fell_back_to_cpu, why);
    CHECK(strcmp(st.fell_back_why, "the mock device cannot be opened") == 0,
          "fallback, %s: fell_back_why '%s'", mode, st.fell_back_why);
    CHECK(st.processed == NFILES && st.failed == 0 && st.not_started == 0 && !st.compute_stage &&
              st.cpu_computed == NFILES,
          "fallback, %s: %llu stored, %llu failed, %llu not started, compute_stage %d, %llu "
          "computed on the CPU",
          mode, (unsigned long long)st.processed, (unsigned long long)st.failed,
          (unsigned long long)st.not_started, st.compute_stage,
          (unsigned long long)st.cpu_computed);
    CHECK(check_records(mode, store, &cfg, &cpu, &dev) == NFILES && cpu == NFILES &&
              atomic_load(&the_mock.utts) == 0,
          "fallback, %s: %u records by the CPU, %u by the device (want all the CPU's)", mode, cpu,
          dev);
    fallback = 0;
    fail_with = 0;
    rm_rf(store);
  }
  /* a job that fell back and is then stopped says so: FC_EINTR, not a finished job */
  setenv("FC_CUDA_START", "hybrid", 1);
  snprintf(store, sizeof store, "%s/fallback-stopped", dir);
  hold_until = HOLD_UNTIL;
  fail_with = ENOMEM;
  fallback = 1;
  stop_after = HOLD_UNTIL + 4;
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == FC_EINTR && st.fell_back_to_cpu &&
            strcmp(why, "the mock device cannot be opened") == 0,
        "fallback, then stopped: rc %d, fell_back_to_cpu %d (%s): want FC_EINTR, 1 and the "
        "device's reason",
        rc, st.fell_back_to_cpu, why);
  CHECK(strcmp(st.fell_back_why, "the mock device cannot be opened") == 0,
        "fallback, then stopped: fell_back_why '%s'", st.fell_back_why);
  CHECK(st.processed >= stop_after && st.processed < NFILES && st.failed == 0 &&
            st.processed + st.not_started == NFILES,
        "fallback, then stopped: %llu stored, %llu failed, %llu not started of %d",
        (unsigned long long)st.processed, (unsigned long long)st.failed,
        (unsigned long long)st.not_started, NFILES);
  stop_after = 0;
  fallback = 0;
  fail_with = 0;
  rm_rf(store);
  /* a job that fell back and then failed (--strict, at a missing file): the device's reason is
   * in the stats still, why being the failure's */
  {
    const char *with_bad[NFILES + 1] = {"/nonexistent/featcache-missing.wav"};
    for (int i = 0; i < NFILES; i++) with_bad[i + 1] = paths[i];
    fc_item_list bad_items;
    CHECK(fc_items_from_paths(with_bad, NFILES + 1, &bad_items) == 0, "items with a missing one");
    setenv("FC_CUDA_START", "wait", 1);
    snprintf(store, sizeof store, "%s/fallback-strict", dir);
    hold_until = 0;
    fail_with = ENOMEM;
    fallback = strict = 1;
    rc = run(store, &cfg, &bad_items, &ev, &st, why, sizeof why);
    CHECK(rc != 0 && rc != FC_EINTR && st.fell_back_to_cpu &&
              strcmp(st.fell_back_why, "the mock device cannot be opened") == 0,
          "fallback, then --strict stopped: rc %d, fell_back_to_cpu %d, fell_back_why '%s': want "
          "the item's error, 1 and the device's reason",
          rc, st.fell_back_to_cpu, st.fell_back_why);
    fallback = strict = fail_with = 0;
    fc_item_list_free(&bad_items);
    rm_rf(store);
  }

  /* a device that opens is used whether or not the job may fall back */
  setenv("FC_CUDA_START", "wait", 1);
  snprintf(store, sizeof store, "%s/fallback-unused", dir);
  hold_until = 0;
  fallback = 1;
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == 0 && !st.fell_back_to_cpu && !st.fell_back_why[0] &&
            check_records("fallback unused", store, &cfg, &cpu, &dev) == NFILES && dev == NFILES,
        "fallback, the device opens: rc %d, fell_back_to_cpu %d, %u records by the device", rc,
        st.fell_back_to_cpu, dev);
  fallback = 0;
  rm_rf(store);

  /* the real backends through fc_featurize_run: cuda:0 on a job that may fall back, on a machine
   * without a usable GPU (its resolve fails), is the CPU's with the resolve's reason, not an
   * error; with one, the GPU's */
  {
    fc_device want = {.kind = FC_DEVICE_CUDA}, got;
    char reason[256];
    const int no_gpu = fc_device_resolve(&want, &got, reason, sizeof reason) != 0;
    unsetenv("FC_CUDA_START");
    snprintf(store, sizeof store, "%s/fallback-resolve", dir);
    fc_featurize_opts o;
    fc_featurize_opts_init(&o);
    o.jobs = 2;
    o.device = want;
    o.fallback_to_cpu = 1;
    fc_store *s;
    CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open %s", store);
    rc = fc_featurize_run(s, &cfg, items.items, items.count, &o, &st, why, sizeof why);
    fc_store_close(s);
    CHECK(rc == 0 && st.processed == NFILES && st.fell_back_to_cpu == no_gpu &&
              (!no_gpu || strcmp(why, reason) == 0),
          "cuda:0 that may fall back (%s): rc %d, %llu stored, fell_back_to_cpu %d (%s)",
          no_gpu ? reason : "a GPU", rc, (unsigned long long)st.processed, st.fell_back_to_cpu,
          why);
    CHECK(check_records_on("fallback at resolve", store, &cfg, &cpu, &dev, !no_gpu) == NFILES &&
              (no_gpu ? cpu : dev) == NFILES,
          "cuda:0 that may fall back: %u records by the CPU, %u by the device", cpu, dev);
    rm_rf(store);
  }

  /* another value: refused before anything is done */
  setenv("FC_CUDA_START", "later", 1);
  snprintf(store, sizeof store, "%s/bad", dir);
  rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "FC_CUDA_START 'later'") && st.not_started == NFILES,
        "FC_CUDA_START=later: rc %d (%s), %llu not started", rc, why,
        (unsigned long long)st.not_started);
  rm_rf(store);

  /* FC_CUDA_RING of another value, on a job that may fall back (auto took the GPU): the user's
   * configuration error, refused before anything is done, hybrid or wait — not a device that
   * could not be started, whose job the CPU would compute */
  setenv("FC_CUDA_RING", "8x4Q", 1);
  fallback = 1;
  hold_until = 0;
  for (int hyb = 1; hyb >= 0; hyb--) {
    const char *mode = hyb ? "hybrid" : "wait";
    setenv("FC_CUDA_START", mode, 1);
    snprintf(store, sizeof store, "%s/bad-ring-%s", dir, mode);
    rc = run(store, &cfg, &items, &ev, &st, why, sizeof why);
    CHECK(rc == FC_ECONFIG && strstr(why, "FC_CUDA_RING '8x4Q': want CHUNKSxSAMPLES") &&
              !st.fell_back_to_cpu && st.processed == 0 && st.not_started == NFILES,
          "FC_CUDA_RING=8x4Q, %s, may fall back: rc %d (%s), fell_back_to_cpu %d, %llu stored, "
          "%llu not started: want FC_ECONFIG, nothing done",
          mode, rc, why, st.fell_back_to_cpu, (unsigned long long)st.processed,
          (unsigned long long)st.not_started);
    rm_rf(store);
  }
  fallback = 0;
  unsetenv("FC_CUDA_RING");

  /* auto: by the job's size */
  unsetenv("FC_CUDA_START");
  int hybrid = -1;
  CHECK(fz_cuda_start_env(items.items, items.count, 0, 2, 0, &hybrid, why, sizeof why) == 0 &&
            hybrid == 0,
        "auto, 40 short files: hybrid %d, want 0", hybrid);
  CHECK(fz_cuda_start_env(items.items, items.count, 1, 2, 0, &hybrid, why, sizeof why) == 0 &&
            hybrid == 1,
        "auto, a manifest read as it goes: hybrid %d, want 1", hybrid);
  CHECK(fz_cuda_start_env(items.items, items.count, 0, 2, 10, &hybrid, why, sizeof why) == 0 &&
            hybrid == 1,
        "auto, over a large-job threshold of 10 s: hybrid %d, want 1", hybrid);
  CHECK(fz_cuda_start_env(items.items, items.count, 0, 2, -1, &hybrid, why, sizeof why) == 0 &&
            hybrid == 1,
        "auto, every job large (gpu_min_seconds < 0): hybrid %d, want 1", hybrid);

  for (int i = 0; i < NFILES; i++) free(ref_mel[i]);
  fc_item_list_free(&items);
  rm_rf(dir);
  return fc_check_result("test_featurize_hybrid");
}
