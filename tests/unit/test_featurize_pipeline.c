/* The featurize pipeline around a backend, on any machine: a fake "GPU" backend (featurize_backend.h)
 * that computes with the CPU kernels, says producer 2, refuses utterances longer than its
 * "staging buffer" with FC_ETOOLONG (as the CUDA backend does) and fails one chosen utterance.
 * Checked: a long utterance is computed on the CPU (producer 1), never failed, with exactly the
 * numbers of fc_featurize_file; short ones carry producer 2 and the same numbers; a backend failure
 * fails that item only, with its reason; counts add up on every path (a bad file, the stop flag);
 * the stage accounting is filled in and its bound follows the documented rule
 * (fc_featurize_bound, checked on constructed stats, the staging ring's too); a slow device holds
 * the workers' waits for a chunk and bounds the run (GPU-bound); the pipeline's threads are named
 * (fc-worker0.., fc-launch, fc-complete). */
#include "featcache/fc_audio.h"
#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "kernels/cuda/mel_kernels.h"
#include "libcache/mel/featurize/featurize_backend.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/stage_mock.h"
#include "tests/wav.h"

enum { LIMIT = 30000, NFILES = 10, LONG_FILE = 3, BROKEN_FILE = 6 };

static size_t file_len(int k) { return k == LONG_FILE ? 70000 : 4000 + 1500 * (size_t)k; }

enum { RESAMPLED_FILE = 8 }; /* a 16 kHz source: resampled to 22.05 kHz, so not 16-bit exact */

static void write_noisy_wav(const char *path, int k, size_t n) {
  const uint32_t sr = k == RESAMPLED_FILE ? 16000 : 22050;
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  wav_header16(f, sr, (uint32_t)n);
  uint32_t s = 12345u + (uint32_t)k;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    double v =
        6000 * sin(2 * M_PI * (150 + 41 * k) * (double)i / 22050.0) + (double)(s >> 20) - 2048;
    put_le(f, (uint32_t)(int16_t)v, 2);
  }
  fclose(f);
}

/* ---- the fake backend ---------------------------------------------------------------------------- */
typedef struct fake {
  unsigned workers;
  atomic_uint calls;
  size_t broken_len; /* an utterance of this many samples fails with FC_ECUDA */
  volatile sig_atomic_t *stop_after_flag;
  unsigned stop_after; /* set *stop_after_flag on this call (0: never) */
  fc_mel_plan *plans[16];
} fake;

static fake the_fake;

static int fake_open(const fc_mel_config *cfg, const fc_device *dev, unsigned workers, void **state,
                     char *why, size_t why_len) {
  (void)dev, (void)why, (void)why_len;
  fake *f = &the_fake;
  f->workers = workers;
  atomic_store(&f->calls, 0);
  for (unsigned i = 0; i < workers; i++)
    if (fc_mel_plan_create(cfg, &f->plans[i])) return FC_ECONFIG;
  *state = f;
  return 0;
}

static int fake_compute(void *state, unsigned worker, const float *x, size_t n, float *out) {
  fake *f = state;
  unsigned c = atomic_fetch_add(&f->calls, 1) + 1;
  if (f->stop_after && c == f->stop_after) *f->stop_after_flag = 1;
  if (n > LIMIT) return FC_ETOOLONG; /* the staging buffer's limit, before any work */
  if (n == f->broken_len) return FC_ECUDA;
  return fc_mel_compute(f->plans[worker], x, n, out);
}

static void fake_close(void *state) {
  fake *f = state;
  for (unsigned i = 0; i < f->workers; i++) fc_mel_plan_free(f->plans[i]);
  memset(f->plans, 0, sizeof f->plans);
}

static const fc_fz_backend fake_backend = {.name = "fake-gpu",
                                           .producer = FC_PRODUCER_CUDA,
                                           .open = fake_open,
                                           .compute = fake_compute,
                                           .close = fake_close};

/* The same as a staging backend (as the CUDA one is): tests/stage_mock.h, chunks of LIMIT samples;
 * a launch that holds the broken utterance fails as a whole. */
static void mock_setup(size_t broken_len) {
  stage_mock *m = &the_mock;
  m->chunks = 2;
  m->capacity = LIMIT;
  m->max_utts = 64;
  m->max_frames = 0;
  m->launch_wait = 0;
  m->delay_us = 0;
  m->broken_len = broken_len;
  m->fail_launch = m->fail_finish = 0;
  m->hold_first = 0;
}

/* ---- events ------------------------------------------------------------------------------------ */
typedef struct seen {
  int status[NFILES + 2];
  char reason[NFILES + 2][200];
  unsigned events;
} seen;

static void on_event(const fc_featurize_event *ev, void *user) {
  seen *s = user;
  s->events++;
  s->status[ev->index] = (int)ev->status + 1;
  if (ev->reason) snprintf(s->reason[ev->index], sizeof s->reason[0], "%s", ev->reason);
}

/* The names of this process's threads as the kernel has them (/proc/self/task/N/comm), gathered
 * at each commit of a run (its progress callback). */
static char thread_names[64][16];
static unsigned n_thread_names;

static void gather_thread_names(const fc_featurize_stats *st, void *user) {
  (void)st, (void)user;
  DIR *d = opendir("/proc/self/task");
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[16] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = '\0';
    fclose(f);
    unsigned k = 0;
    while (k < n_thread_names && strcmp(thread_names[k], name) != 0) k++;
    if (k == n_thread_names && k < 64) memcpy(thread_names[n_thread_names++], name, sizeof name);
  }
  closedir(d);
}

static int thread_named(const char *name) {
  for (unsigned k = 0; k < n_thread_names; k++)
    if (strcmp(thread_names[k], name) == 0) return 1;
  return 0;
}

static int counts_add_up(const fc_featurize_stats *st) {
  return st->processed + st->skipped_existing + st->failed + st->not_started == st->total;
}

/* ---- the bound rule on constructed stats ---------------------------------------------------------- */
static void bound_rule(void) {
  fc_featurize_stats st;
  memset(&st, 0, sizeof st);
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CPU), "idle") == 0, "empty: idle");
  st.workers = 4;
  st.wall_seconds = 10.5;
  st.setup_seconds = 0.5;
  st.read_seconds = 2, st.hash_seconds = 1, st.decode_seconds = 5, st.compute_seconds = 20;
  st.write_seconds = 3; /* writer 30 % busy, the pool 70 % */
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CPU), "compute-bound") == 0, "compute");
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "GPU-bound") == 0, "GPU");
  st.write_seconds = 9; /* writer 90 % busy */
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "write-bound") == 0, "write");
  st.write_seconds = 1, st.compute_seconds = 1, st.read_seconds = 30;
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CPU), "read-bound") == 0, "read");
  st.decode_seconds = 31;
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CPU), "decode-bound") == 0, "decode");
  st.hash_seconds = 32;
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CPU), "hash-bound") == 0, "hash");
  st.setup_seconds = 6; /* more than the 4.5 s after it */
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "start-up-bound") == 0, "start-up");

  /* A staging ring (a GPU): the workers' waits for a free chunk against their work, and what held
   * the chunks. The compute stage's in-flight time alone names nothing, however long. */
  memset(&st, 0, sizeof st);
  st.compute_stage = 1;
  st.workers = 4, st.writers = 2;
  st.wall_seconds = 10.5, st.setup_seconds = 0.5;
  st.read_seconds = 2, st.hash_seconds = 1, st.staging_seconds = 3; /* the pool worked 6 s */
  st.compute_seconds = 9.9, st.write_seconds = 4;
  st.queue_wait_seconds = 20, st.device_wait_seconds = 15; /* waited 20 s, 15 on the device */
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "GPU-bound") == 0, "ring: GPU");
  st.device_wait_seconds = 10; /* half of it: not more than the writers held them */
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "write-bound") == 0, "ring: write, even");
  st.device_wait_seconds = 2;
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "write-bound") == 0, "ring: write");
  st.queue_wait_seconds = 5.9, st.device_wait_seconds = 5.9; /* waited less than they worked */
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "staging-bound") == 0, "ring: staging");
  st.read_seconds = 3.5;
  CHECK(strcmp(fc_featurize_bound(&st, FC_DEVICE_CUDA), "read-bound") == 0, "ring: read");
}

/* Every stored record: producer 1 for the long one (the CPU fallback), 2 for the others; the
 * numbers exactly fc_featurize_file's converted to the dtype (the fakes compute with the same CPU
 * kernels). Item `skip` is not expected in the store. */
static void check_records(const char *store, const fc_mel_config *cfg, const fc_digest *cd,
                          char paths[][300], int skip) {
  fc_store *s;
  char why[256];
  fc_mel_plan *plan;
  CHECK(fc_mel_plan_create(cfg, &plan) == 0, "plan");
  CHECK(fc_store_open(store, FC_STORE_RDONLY, &s) == 0, "reopen");
  fc_rtxn *t;
  fc_store_read_begin(s, &t);
  for (int i = 0; i < NFILES; i++) {
    if (i == skip) continue;
    const void *v;
    size_t vl;
    char id[16];
    snprintf(id, sizeof id, "u%02d", i);
    int rc = fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vl);
    CHECK(rc == 0, "%s: no audio entry", id);
    if (rc) continue;
    fc_audio_entry e;
    fc_audio_entry_decode(v, vl, &e);
    fc_digest key;
    fc_record_key(&e.digest, cd, &key);
    CHECK(fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, &v, &vl) == 0, "%s: no record", id);
    fc_record_header h;
    const void *pl;
    CHECK(fc_record_verify(v, vl, &h, &pl, why, sizeof why) == 0, "%s: %s", id, why);
    uint32_t want = i == LONG_FILE ? FC_PRODUCER_CPU : FC_PRODUCER_CUDA;
    CHECK(h.producer == want, "%s: producer %u, want %u", id, h.producer, want);
    float *mel;
    uint64_t frames;
    CHECK(fc_featurize_file(plan, paths[i], 0, &mel, &frames, why, sizeof why) == 0, "file");
    size_t nv = (size_t)frames * cfg->n_mels, bytes = nv * fc_dtype_size(cfg->dtype);
    void *conv = malloc(bytes);
    fc_convert_dtype(mel, nv, cfg->dtype, conv);
    CHECK(frames == h.dim0 && h.dtype == cfg->dtype && h.payload_bytes == bytes &&
              memcmp(conv, pl, bytes) == 0,
          "%s: numbers differ from fc_featurize_file", id);
    free(conv);
    free(mel);
  }
  fc_rtxn_end(t);
  fc_store_close(s);
  fc_mel_plan_free(plan);
}

/* ---- the launch deadline ----------------------------------------------------------------------- */
typedef struct deadline_run {
  fc_store *s;
  const fc_mel_config *cfg;
  fc_item_list items;
  fc_featurize_opts o;
  fc_featurize_stats st;
  atomic_int first_stored;
  int rc;
} deadline_run;

static void deadline_event(const fc_featurize_event *ev, void *user) {
  deadline_run *d = user;
  if (ev->index == 0 && ev->status == FC_ITEM_STORED) atomic_store(&d->first_stored, 1);
}

static void *deadline_thread(void *arg) {
  deadline_run *d = arg;
  char why[256];
  d->rc = fz_pipeline_run(d->s, d->cfg, d->items.items, d->items.count, &d->o, &mock_backend,
                          &d->st, why, sizeof why);
  return NULL;
}

/* With -j 1, item 0 is decoded and handed to the compute stage; the worker then blocks opening a
 * FIFO (item 1). Item 0 must be launched when its deadline passes (and committed by the writer's
 * batch bound), not held for a fuller launch: its STORED event arrives while the worker waits.
 * Then the FIFO delivers a real file and the run completes. */
static void deadline_case(const char *dir, const fc_mel_config *cfg) {
  char fifo[300], store[300], first[300], src[300];
  snprintf(fifo, sizeof fifo, "%s/fifo.wav", dir);
  snprintf(store, sizeof store, "%s/st_deadline", dir);
  snprintf(first, sizeof first, "%s/u00.wav", dir);
  snprintf(src, sizeof src, "%s/u01.wav", dir);
  CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
  mock_setup(0);
  deadline_run d;
  memset(&d, 0, sizeof d);
  d.cfg = cfg;
  const char *pp[2] = {first, fifo};
  CHECK(fc_items_from_paths(pp, 2, &d.items) == 0, "items");
  fc_featurize_opts_init(&d.o);
  d.o.jobs = 1;
  d.o.device.kind = FC_DEVICE_CUDA;
  d.o.batch_seconds = 0.05;
  d.o.on_event = deadline_event;
  d.o.user = &d;
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &d.s) == 0, "open");
  pthread_t th;
  pthread_create(&th, NULL, deadline_thread, &d);
  int waited_ms = 0;
  while (!atomic_load(&d.first_stored) && waited_ms < 20000) {
    usleep(10000);
    waited_ms += 10;
  }
  CHECK(atomic_load(&d.first_stored), "item 0 was not launched while the worker waited (%d ms)",
        waited_ms);
  /* feed the FIFO (unblocks the worker whatever happened above) */
  FILE *in = fopen(src, "rb"), *out = fopen(fifo, "wb");
  char buf[65536];
  size_t got;
  while (in && out && (got = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, got, out);
  if (in) fclose(in);
  if (out) fclose(out);
  pthread_join(th, NULL);
  fc_store_close(d.s);
  CHECK(d.rc == 0 && d.st.processed == 2, "deadline run: rc %d, %llu processed", d.rc,
        (unsigned long long)d.st.processed);
  printf("launch deadline: item 0 stored after %d ms while the worker waited on a FIFO\n",
         waited_ms);
  fc_item_list_free(&d.items);
}

/* 16-bit PCM crosses PCIe as int16 and is converted on the GPU by fc_cu_i16_to_f32: for every one
 * of the 65536 values it must give the float the CPU path decodes (fc_audio_decode of a WAV,
 * libsndfile's normalisation), bit for bit. */
static void i16_conversion(const char *dir) {
  char path[300];
  snprintf(path, sizeof path, "%s/all16.wav", dir);
  FILE *f = fopen(path, "wb");
  const uint32_t n = 65536;
  wav_header16(f, 22050, n);
  for (uint32_t i = 0; i < n; i++) put_le(f, i, 2);
  fclose(f);
  f = fopen(path, "rb");
  static uint8_t bytes[44 + 2 * 65536];
  size_t len = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  float *x = NULL;
  size_t got = 0;
  fc_audio_info info;
  char why[200];
  CHECK(fc_audio_decode(bytes, len, 22050, 0, &x, &got, &info, why, sizeof why) == 0 && got == n,
        "decode: %s", why);
  unsigned bad = 0;
  for (uint32_t i = 0; i < got; i++) {
    float g = fc_cu_i16_to_f32((int16_t)(uint16_t)i);
    if (memcmp(&g, &x[i], sizeof g) != 0 && bad++ < 3)
      fprintf(stderr, "int16 %d: GPU conversion %.9g, CPU decode %.9g\n", (int16_t)(uint16_t)i,
              (double)g, (double)x[i]);
  }
  CHECK(bad == 0, "%u of 65536 int16 values convert differently from the CPU's decode", bad);
  free(x);
}

int main(void) {
  bound_rule();
  char tmpl[] = "/tmp/fc_pipeline.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  char paths[NFILES + 1][300], store[300];
  const char *pp[NFILES + 1];
  for (int i = 0; i < NFILES; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/u%02d.wav", dir, i);
    write_noisy_wav(paths[i], i, file_len(i));
    pp[i] = paths[i];
  }
  i16_conversion(dir);
  snprintf(paths[NFILES], sizeof paths[NFILES], "%s/missing.wav", dir);
  pp[NFILES] = paths[NFILES];
  fc_item_list items;
  CHECK(fc_items_from_paths(pp, NFILES + 1, &items) == 0, "items");
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  fc_digest cd;
  fc_mel_config_digest(&cfg, &cd);

  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = 3;
  o.batch_records = 4;
  o.device.kind = FC_DEVICE_CUDA; /* taken as is with a given backend: names the bound "GPU" */
  seen ev;
  memset(&ev, 0, sizeof ev);
  o.on_event = on_event;
  o.user = &ev;
  the_fake.broken_len = file_len(BROKEN_FILE);
  fc_featurize_stats st;
  char why[256];
  fc_store *s;
  snprintf(store, sizeof store, "%s/st", dir);
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open");
  int rc =
      fz_pipeline_run(s, &cfg, items.items, items.count, &o, &fake_backend, &st, why, sizeof why);
  fc_store_close(s);
  CHECK(rc == 0, "run: rc %d (%s)", rc, why);
  CHECK(st.total == NFILES + 1 && st.processed == NFILES - 1 && st.failed == 2 &&
            st.not_started == 0 && counts_add_up(&st),
        "counts %llu+%llu+%llu+%llu of %llu", (unsigned long long)st.processed,
        (unsigned long long)st.skipped_existing, (unsigned long long)st.failed,
        (unsigned long long)st.not_started, (unsigned long long)st.total);
  CHECK(ev.events == NFILES + 1, "%u events for %d items", ev.events, NFILES + 1);
  CHECK(ev.status[BROKEN_FILE] == FC_ITEM_FAILED + 1 &&
            strstr(ev.reason[BROKEN_FILE], "feature computation failed") != NULL,
        "broken utterance: status %d reason '%s'", ev.status[BROKEN_FILE] - 1,
        ev.reason[BROKEN_FILE]);
  CHECK(ev.status[LONG_FILE] == FC_ITEM_STORED + 1, "long utterance: status %d (%s)",
        ev.status[LONG_FILE] - 1, ev.reason[LONG_FILE]);
  /* Stage accounting: filled in, within the time the run took, bound by the rule. */
  CHECK(st.workers == 3 && st.read_seconds > 0 && st.hash_seconds > 0 && st.decode_seconds > 0 &&
            st.compute_seconds > 0 && st.write_seconds > 0 && st.setup_seconds >= 0,
        "stage times missing");
  double pool = st.read_seconds + st.hash_seconds + st.decode_seconds + st.compute_seconds +
                st.queue_wait_seconds;
  CHECK(pool <= st.workers * st.wall_seconds + 1e-3 &&
            st.write_seconds + st.writer_wait_seconds <= st.wall_seconds + 1e-3 &&
            st.setup_seconds <= st.wall_seconds,
        "stage times exceed the wall time: pool %.4f, writer %.4f + %.4f, wall %.4f", pool,
        st.write_seconds, st.writer_wait_seconds, st.wall_seconds);
  CHECK(st.bound && strcmp(st.bound, fc_featurize_bound(&st, FC_DEVICE_CUDA)) == 0, "bound '%s'",
        st.bound ? st.bound : "(null)");

  check_records(store, &cfg, &cd, paths, BROKEN_FILE);

  /* The batching backend: the workers hand decoded utterances to the compute stage and go on; the
   * long one is computed by its worker on the CPU. Same records, same numbers; f16 too. */
  for (int dt = FC_DTYPE_F32; dt <= FC_DTYPE_F16; dt++) {
    fc_mel_config c2 = cfg;
    c2.dtype = (fc_dtype)dt;
    fc_digest cd2;
    fc_mel_config_digest(&c2, &cd2);
    memset(&ev, 0, sizeof ev);
    mock_setup(0);
    snprintf(store, sizeof store, "%s/st_batch%d", dir, dt);
    CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open");
    rc = fz_pipeline_run(s, &c2, items.items, items.count, &o, &mock_backend, &st, why, sizeof why);
    fc_store_close(s);
    CHECK(rc == 0 && st.processed == NFILES && st.failed == 1 && counts_add_up(&st),
          "staging %s: rc %d, %llu processed, %llu failed", fc_dtype_name(dt), rc,
          (unsigned long long)st.processed, (unsigned long long)st.failed);
    CHECK(atomic_load(&the_mock.utts) == NFILES - 1 && atomic_load(&the_mock.launches) >= 1 &&
              atomic_load(&the_mock.finishes) == atomic_load(&the_mock.launches),
          "staging: %u utterances in %u launches (%u finished), want %d (the long one on the CPU)",
          atomic_load(&the_mock.utts), atomic_load(&the_mock.launches),
          atomic_load(&the_mock.finishes), NFILES - 1);
    CHECK(atomic_load(&the_mock.utts16) == NFILES - 2,
          "staging: %u utterances as 16-bit PCM, want %d (all but the long and the resampled)",
          atomic_load(&the_mock.utts16), NFILES - 2);
    CHECK(atomic_load(&the_mock.violations) == 0, "staging: %u launch or staging violations",
          atomic_load(&the_mock.violations));
    CHECK(st.compute_stage == 1 && st.compute_seconds > 0 &&
              st.device_wait_seconds <= st.queue_wait_seconds + 1e-9 &&
              strcmp(st.bound, fc_featurize_bound(&st, FC_DEVICE_CUDA)) == 0,
          "staging: stage accounting");
    check_records(store, &c2, &cd2, paths, -1);
    printf("staging backend, %s: %u utterances (%u as 16-bit PCM) in %u launches\n",
           fc_dtype_name(dt), atomic_load(&the_mock.utts), atomic_load(&the_mock.utts16),
           atomic_load(&the_mock.launches));
  }

  /* A failed launch fails the utterances it carried, each with its reason; the run goes on. */
  memset(&ev, 0, sizeof ev);
  mock_setup(file_len(BROKEN_FILE));
  snprintf(store, sizeof store, "%s/st_batch_fail", dir);
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open");
  rc = fz_pipeline_run(s, &cfg, items.items + BROKEN_FILE, 1, &o, &mock_backend, &st, why,
                       sizeof why);
  fc_store_close(s);
  CHECK(rc == 0 && st.failed == 1 && counts_add_up(&st) && ev.events == 1 &&
            strstr(ev.reason[0], "feature computation failed") != NULL,
        "failed launch: rc %d failed %llu reason '%s'", rc, (unsigned long long)st.failed,
        ev.reason[0]);
  the_fake.broken_len = 0;

  /* A slow device (each chunk 20 ms on the mock's device thread, one utterance a chunk, two
   * chunks): the workers wait for chunks that are on the device, and the run says GPU-bound.
   * Its threads carry their names meanwhile (fc_thread_name). */
  mock_setup(0);
  o.on_progress = gather_thread_names;
  the_mock.max_utts = 1;
  the_mock.delay_us = 20000;
  snprintf(store, sizeof store, "%s/st_slow_device", dir);
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open");
  rc = fz_pipeline_run(s, &cfg, items.items, NFILES, &o, &mock_backend, &st, why, sizeof why);
  fc_store_close(s);
  CHECK(rc == 0 && st.processed == NFILES && counts_add_up(&st), "slow device: rc %d (%s)", rc,
        why);
  CHECK(st.queue_wait_seconds > 0 && st.device_wait_seconds > 0.5 * st.queue_wait_seconds &&
            st.device_wait_seconds <= st.queue_wait_seconds + 1e-9 &&
            strcmp(st.bound, "GPU-bound") == 0,
        "slow device: waited %.4f s for chunks, %.4f s of it on the device, bound %s",
        st.queue_wait_seconds, st.device_wait_seconds, st.bound);
  printf("slow device: the workers waited %.3f s for a chunk, %.3f s of it on the device: %s\n",
         st.queue_wait_seconds, st.device_wait_seconds, st.bound);
  o.on_progress = NULL;
  CHECK(thread_named("fc-worker0") && thread_named("fc-worker1") && thread_named("fc-worker2") &&
            thread_named("fc-launch") && thread_named("fc-complete") && !thread_named("fc-worker3"),
        "thread names: %u seen, the first %s", n_thread_names, thread_names[0]);

  /* The launch deadline (see deadline_case). */
  deadline_case(dir, &cfg);

  /* The stop flag set during the run (by the backend's 2nd call), -j1: the items not begun are
   * counted as not started, and everything adds up. */
  volatile sig_atomic_t stop = 0;
  the_fake.stop_after_flag = &stop;
  the_fake.stop_after = 2;
  o.stop = &stop;
  o.jobs = 1;
  memset(&ev, 0, sizeof ev);
  snprintf(store, sizeof store, "%s/st_stop", dir);
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open");
  rc = fz_pipeline_run(s, &cfg, items.items, items.count, &o, &fake_backend, &st, why, sizeof why);
  fc_store_close(s);
  CHECK(rc == FC_EINTR, "stop: rc %d", rc);
  CHECK(st.processed == 2 && st.not_started == NFILES + 1 - 2 && counts_add_up(&st),
        "stop: counts %llu+%llu+%llu+%llu of %llu", (unsigned long long)st.processed,
        (unsigned long long)st.skipped_existing, (unsigned long long)st.failed,
        (unsigned long long)st.not_started, (unsigned long long)st.total);

  /* Refused before any work (a read-only store): nothing done, all counted as not started. */
  o.stop = NULL;
  the_fake.stop_after = 0;
  CHECK(fc_store_open(store, FC_STORE_RDONLY, &s) == 0, "open ro");
  rc = fz_pipeline_run(s, &cfg, items.items, items.count, &o, &fake_backend, &st, why, sizeof why);
  fc_store_close(s);
  CHECK(rc == EACCES && st.not_started == NFILES + 1 && counts_add_up(&st), "read-only: rc %d", rc);

  /* A manifest read as the run goes that cannot be read: its name in the reason quoted as names are
   * (a newline or an escape in it printed raw split the line, reached the terminal) */
  char odd[300], want[400];
  snprintf(odd, sizeof odd, "%s/no\n\033[1m.txt", dir);
  snprintf(want, sizeof want, "\"%s/no\\n\\033[1m.txt\": cannot open: %s", dir, strerror(ENOENT));
  o.manifest = odd;
  snprintf(store, sizeof store, "%s/st_manifest", dir);
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open");
  rc = fz_pipeline_run(s, &cfg, NULL, 0, &o, &fake_backend, &st, why, sizeof why);
  fc_store_close(s);
  CHECK(rc == ENOENT && strcmp(why, want) == 0, "unreadable manifest: rc %d, got: %s\nwant: %s", rc,
        why, want);
  o.manifest = NULL;

  fc_item_list_free(&items);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok: long utterances on the CPU, counts add up, stage accounting and bound rule\n");
  return 0;
}
