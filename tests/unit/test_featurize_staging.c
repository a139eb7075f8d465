/* The staging ring of the featurize pipeline (libcache/mel/featurize/featurize_stage.c) under many
 * shapes, on any machine: a CPU backend that implements the staging interface as the CUDA ring
 * plan does (tests/stage_mock.h: staging buffers of exactly the advertised size, a "device" thread,
 * launch limits checked, staging written while in flight detected, used-up staging poisoned).
 *
 * 36 files of odd sizes and six kinds (16-bit mono at 22.05 kHz with a plain header, with an
 * odd-sized chunk before the data, with an extensible header; 16-bit mono at 16 kHz; 32-bit float;
 * 16-bit stereo), three presets (two at 22.05 kHz, whisper at 16 kHz: what is resampled differs), then for ~40 seeded random shapes (worker
 * threads, chunks in the ring, chunk capacity, utterances and frames per chunk, launch deadline,
 * device latency, dtype) and for chosen faults (the n-th launch or finish failing, then sticky; an
 * utterance whose launch fails; --strict; the stop flag):
 *   - every item has exactly one event and the counts add up;
 *   - every stored record holds exactly the CPU path's numbers (fc_featurize_file, converted to the
 *     dtype), producer 2 when it fits a chunk, else 1 (computed on the CPU by its worker), under
 *     the whole file's digest (a 16-bit file read into staging is hashed in three pieces);
 *   - the mock saw each fitting utterance once (those taken from the file as int16 in the int16 region, the others as floats),
 *     no launch broke a chunk's limits, nothing wrote into a chunk in flight, every launched chunk
 *     was finished;
 *   - chunk k + 1 is launched while chunk k is in flight (the mock holds the first chunk until a
 *     second launch arrives; a pipeline that waited would leave max_in_flight at 1);
 *   - early refill (half the random shapes, and three chosen ones): a chunk's next use filled
 *     while the writers still read its output, launched only once they are through (seen: uses
 *     opened before the one before them was released);
 *   - the ring made as it runs (half the random shapes, and three chosen ones): chunk 0 at open,
 *     the others by the grower thread in turn, none asked for or launched before it is made; one
 *     that cannot be made leaves the ring at the chunks before it and the run goes round them;
 *   - a failed launch or finish fails exactly the utterances it carried, each with its reason,
 *     for each launch and each finish of a run failing in turn (half of them refilled early);
 *   - every allocation of a run failing in turn (FC_FAULT=alloc:N) leaves it accounted for;
 *   - every commit failing in turn (FC_FAULT=commit:N) with 1 to 3 writers: the ring drains, the
 *     run ends, everything accounted for (these two loops, too, half refilled early).
 * Shapes write into split stores of 1 to 3 parts, one writer each. */
#include "featcache/fc_audio.h"
#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_store.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/common/fault.h"
#include "tests/check.h"
#include "tests/stage_mock.h"
#include "tests/wav.h"

enum { NFILES = 36, NPRESETS = 3 };
static const char *const presets[NPRESETS] = {"hifigan", "tacotron2", "whisper"};

static uint32_t rng = 20261124u;
static uint32_t next_rand(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}
static uint32_t pick(uint32_t n) { return next_rand() % n; }

/* ---- the files ------------------------------------------------------------------------------- */
/* 16-bit mono at 22.05 kHz (plain header; with an odd-sized LIST chunk before the data; with a
 * WAVE_FORMAT_EXTENSIBLE header, which libsndfile decodes), 16-bit mono at 16 kHz, 32-bit float,
 * 16-bit stereo. */
enum { KIND_I16, KIND_I16_LIST, KIND_I16_EXT, KIND_RESAMPLED, KIND_FLOAT, KIND_STEREO, N_KINDS };
static int kinds[NFILES];

static void write_file(const char *path, int kind, uint32_t n, int seed) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  const uint32_t sr = kind == KIND_RESAMPLED ? 16000 : 22050;
  const int ch = kind == KIND_STEREO ? 2 : 1, bytes = kind == KIND_FLOAT ? 4 : 2;
  const uint32_t data = n * (uint32_t)(ch * bytes), fmt = kind == KIND_I16_EXT ? 40 : 16;
  const uint32_t list = kind == KIND_I16_LIST ? 8 + 5 + 1 : 0; /* "LIST", size 5, a pad byte */
  fwrite("RIFF", 1, 4, f);
  put_le(f, 4 + 8 + fmt + list + 8 + data, 4);
  fwrite("WAVEfmt ", 1, 8, f);
  put_le(f, fmt, 4);
  put_le(f, kind == KIND_FLOAT ? 3 : kind == KIND_I16_EXT ? 0xFFFE : 1, 2);
  put_le(f, (uint32_t)ch, 2);
  put_le(f, sr, 4);
  put_le(f, sr * (uint32_t)(ch * bytes), 4);
  put_le(f, (uint32_t)(ch * bytes), 2);
  put_le(f, (uint32_t)(8 * bytes), 2);
  if (kind == KIND_I16_EXT) { /* cbSize 22, valid bits, channel mask, KSDATAFORMAT_SUBTYPE_PCM */
    static const unsigned char pcm_guid[16] = {1,    0, 0, 0,    0, 0,    0x10, 0,
                                               0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71};
    put_le(f, 22, 2);
    put_le(f, 16, 2);
    put_le(f, 4, 4);
    fwrite(pcm_guid, 1, 16, f);
  }
  if (list) {
    fwrite("LIST", 1, 4, f);
    put_le(f, 5, 4);
    fwrite("INFO\0\0", 1, 6, f); /* 5 bytes and the pad */
  }
  fwrite("data", 1, 4, f);
  put_le(f, data, 4);
  uint32_t s = 777u + (uint32_t)seed;
  for (uint32_t i = 0; i < n; i++)
    for (int c = 0; c < ch; c++) {
      s = s * 1664525u + 1013904223u;
      double v = 0.3 * sin(2 * M_PI * (110 + 13 * seed + 50 * c) * (double)i / sr) +
                 ((double)(s >> 20) - 2048) / 40000.0;
      if (kind == KIND_FLOAT) {
        float fv = (float)v;
        uint32_t u;
        memcpy(&u, &fv, 4);
        put_le(f, u, 4);
      } else {
        put_le(f, (uint32_t)(int16_t)lrint(v * 32767), 2);
      }
    }
  fclose(f);
}

/* What the CPU path makes of a file under one preset: decoded samples, whether its samples go into
 * staging as they are in the file (16-bit mono PCM at the preset's rate, a plain WAV header: the
 * int16 region of a chunk), frames, the float32 mel (NULL when it gives no frames). */
typedef struct ref {
  size_t n;
  int i16;
  uint64_t frames;
  float *mel;
} ref;

static ref refs[NPRESETS][NFILES];
static char paths[NFILES][300];
static fc_digest
    digests[NFILES]; /* each file's digest as the CPU path takes it: the whole file's */
static fc_mel_config cfgs[NPRESETS];

static void make_refs(int p) {
  fc_mel_plan *plan;
  CHECK(fc_mel_plan_create(&cfgs[p], &plan) == 0, "plan");
  for (int i = 0; i < NFILES; i++) {
    ref *r = &refs[p][i];
    void *bytes;
    size_t len;
    fc_audio_info info;
    char why[256];
    float *x = NULL;
    CHECK(fc_audio_read_file(paths[i], 0, &bytes, &len, &info) == 0, "read %s", paths[i]);
    fc_digest_buffer(bytes, len, &digests[i]);
    CHECK(fc_audio_decode(bytes, len, cfgs[p].sample_rate, 0, &x, &r->n, &info, why, sizeof why) ==
              0,
          "decode %s: %s", paths[i], why);
    free(bytes);
    const int direct =
        kinds[i] == KIND_I16 || kinds[i] == KIND_I16_LIST || kinds[i] == KIND_RESAMPLED;
    r->i16 = direct && info.sample_rate == cfgs[p].sample_rate;
    free(x);
    r->mel = NULL;
    r->frames = 0;
    if (fc_mel_num_frames(&cfgs[p], r->n) > 0)
      CHECK(fc_featurize_file(plan, paths[i], 0, &r->mel, &r->frames, why, sizeof why) == 0,
            "cpu %s: %s", paths[i], why);
  }
  fc_mel_plan_free(plan);
}

/* ---- one run ---------------------------------------------------------------------------------- */
typedef struct seen {
  unsigned events[NFILES];
  int status[NFILES];
  char reason[NFILES][160];
  unsigned total;
  volatile sig_atomic_t *stop;
  unsigned stop_after;
} seen;

static void on_event(const fc_featurize_event *ev, void *user) {
  seen *s = user;
  s->events[ev->index]++;
  s->status[ev->index] = (int)ev->status;
  snprintf(s->reason[ev->index], sizeof s->reason[0], "%s", ev->reason ? ev->reason : "");
  if (s->stop && ++s->total == s->stop_after) *s->stop = 1;
}

typedef struct shape {
  int preset, dtype;
  unsigned jobs, chunks, delay_us;
  size_t capacity, max_utts;
  uint64_t max_frames; /* 0: the mock's default */
  double launch_wait;
  /* faults */
  unsigned fail_launch, fail_finish;
  int broken_file; /* -1: none */
  int hold_first, strict, stop_after;
  unsigned alloc_fault; /* FC_FAULT=alloc:N during the run (fault-injection builds) */
  unsigned commit_fault; /* FC_FAULT=commit:N during the run (fault-injection builds) */
  unsigned parts; /* a split store of this many parts, one writer each (0, 1: a plain store) */
  unsigned batch; /* records per write transaction (0: 5) */
  int stream; /* the items read from a manifest file as the run goes (fc_featurize_opts.manifest) */
  /* the ring made as it runs (the CUDA backend's way): chunk 0 at open, the others by the grower
   * thread, each after grow_delay_us; grow_fail >= 1: that chunk cannot be made */
  int grow;
  unsigned grow_fail, grow_delay_us;
  int early; /* the backend's early_refill */
} shape;

/* The same paths as a list manifest, for the shapes that read their items as they go. */
static char list_path[300];

static int last_clean; /* the last run took no fault: everything that gives frames was stored */
static int last_injected; /* the last run's alloc fault was injected (FC_FAULT_LOG) */

static int fits(const shape *sh, const ref *r) {
  return r->n <= sh->capacity && r->frames <= the_mock.max_frames;
}

static void describe(const shape *sh, char *buf, size_t len) {
  snprintf(
      buf, len,
      "%s %s -j%u, %u chunks of %zu samples / %zu utts / %llu frames, wait %g s, delay %u us%s%s%s",
      presets[sh->preset], fc_dtype_name(sh->dtype), sh->jobs, sh->chunks, sh->capacity,
      sh->max_utts, (unsigned long long)the_mock.max_frames, sh->launch_wait, sh->delay_us,
      sh->fail_launch || sh->fail_finish || sh->broken_file >= 0 ? ", faults"
      : sh->alloc_fault                                          ? ", alloc fault"
      : sh->commit_fault                                         ? ", commit fault"
                                                                 : "",
      sh->strict       ? ", strict"
      : sh->stop_after ? ", stopped"
      : sh->stream     ? ", manifest read as it goes"
                       : "",
      sh->early ? ", early refill" : "");
}

static void mock_shape(const shape *sh) {
  stage_mock *m = &the_mock;
  m->chunks = sh->chunks;
  m->capacity = sh->capacity;
  m->max_utts = sh->max_utts;
  m->max_frames = sh->max_frames;
  m->launch_wait = sh->launch_wait;
  m->delay_us = sh->delay_us;
  m->fail_launch = sh->fail_launch;
  m->fail_finish = sh->fail_finish;
  m->broken_len = sh->broken_file >= 0 ? refs[sh->preset][sh->broken_file].n : (size_t)-1;
  m->hold_first = sh->hold_first;
  m->grow = sh->grow;
  m->grow_fail = sh->grow_fail;
  m->grow_delay_us = sh->grow_delay_us;
  m->early = sh->early;
}

static int run_shape(const char *dir, const fc_item_list *items, const shape *sh, int number) {
  const int before = failures;
  stage_mock *m = &the_mock;
  mock_shape(sh);
  fc_mel_config cfg = cfgs[sh->preset];
  cfg.dtype = (fc_dtype)sh->dtype;
  fc_digest cd;
  fc_mel_config_digest(&cfg, &cd);

  static seen ev;
  memset(&ev, 0, sizeof ev);
  volatile sig_atomic_t stop = 0;
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = sh->jobs;
  o.batch_records = sh->batch ? sh->batch : 5;
  o.device.kind = FC_DEVICE_CUDA;
  o.on_event = on_event;
  o.user = &ev;
  o.strict = sh->strict;
  if (sh->stream) o.manifest = list_path;
  if (sh->stop_after) {
    o.stop = &stop;
    ev.stop = &stop;
    ev.stop_after = (unsigned)sh->stop_after;
  }
  char store[400], why[256], what[300];
  snprintf(store, sizeof store, "%s/st%02d", dir, number);
  fc_store **pv = NULL;
  unsigned np = 0;
  CHECK(fc_store_open_split(store, FC_STORE_CREATE | FC_STORE_NOSYNC, sh->parts, &pv, &np, why,
                            sizeof why) == 0,
        "open %s: %s", store, why);
  o.parts = pv;
  o.n_parts = np;
  fc_featurize_stats st;
  char fault[32];
  snprintf(fault, sizeof fault, "%s:%u", sh->alloc_fault ? "alloc" : "commit",
           sh->alloc_fault ? sh->alloc_fault : sh->commit_fault);
  const int any_fault = sh->alloc_fault || sh->commit_fault;
  char log[420];
  snprintf(log, sizeof log, "%s/fault.log", dir);
  remove(log);
  if (any_fault) {
    setenv("FC_FAULT_LOG", log, 1);
    setenv("FC_FAULT", fault, 1);
  }
  fc_fz_backend be = mock_backend;
  if (sh->grow) be.stage_grow = mock_grow;
  int rc = fz_pipeline_run(pv[0], &cfg, items->items, items->count, &o, &be, &st, why, sizeof why);
  unsetenv("FC_FAULT");
  unsetenv("FC_FAULT_LOG");
  FILE *lf = fopen(log, "r");
  last_injected = lf != NULL && fgetc(lf) != EOF;
  if (lf) fclose(lf);
  fc_store_close_split(pv, np);
  describe(sh, what, sizeof what);
  if (np > 1) {
    size_t l = strlen(what);
    snprintf(what + l, sizeof what - l, ", %u writers", np);
  }
  if (sh->grow) {
    size_t l = strlen(what);
    snprintf(what + l, sizeof what - l, ", ring grown (%u made%s)", atomic_load(&m->made),
             sh->grow_fail ? ", one failed" : "");
  }

  const int faults = sh->fail_launch || sh->fail_finish || sh->broken_file >= 0;
  if (any_fault)
    ; /* any outcome, as long as it is accounted for */
  else if (sh->strict)
    CHECK(rc != 0, "[%s] strict: rc 0", what);
  else if (sh->stop_after)
    CHECK(rc == FC_EINTR || rc == 0, "[%s] stopped: rc %d (%s)", what, rc, why);
  else
    CHECK(rc == 0, "[%s] rc %d (%s)", what, rc, why);
  CHECK(st.processed + st.skipped_existing + st.failed + st.not_started == st.total &&
            st.total == NFILES,
        "[%s] counts %llu+%llu+%llu+%llu of %llu", what, (unsigned long long)st.processed,
        (unsigned long long)st.skipped_existing, (unsigned long long)st.failed,
        (unsigned long long)st.not_started, (unsigned long long)st.total);
  CHECK(atomic_load(&m->violations) == 0,
        "[%s] %u launches broke a chunk's limits or staging was written while in flight, or the "
        "ring's events came out of order",
        what, atomic_load(&m->violations));
  /* the ring's life (stage_event): every use sealed was launched and released; one more may
   * have been opened and never filled */
  const unsigned op = atomic_load(&m->opened), se = atomic_load(&m->sealed),
                 re = atomic_load(&m->released);
  if (!any_fault)
    CHECK(se == atomic_load(&m->launches) && re == se && op >= se && op <= se + 1,
          "[%s] ring events: %u opened, %u sealed, %u released, %u launches", what, op, se, re,
          atomic_load(&m->launches));
  CHECK(atomic_load(&m->in_flight) == 0, "[%s] %u launched chunks never finished", what,
        atomic_load(&m->in_flight));

  /* Events: exactly one per item begun; what each says. */
  unsigned want_utts = 0, want16 = 0, evs = 0, failed_on_device = 0, too_short = 0;
  for (int i = 0; i < NFILES; i++) {
    const ref *r = &refs[sh->preset][i];
    evs += ev.events[i];
    CHECK(ev.events[i] <= 1, "[%s] item %d: %u events", what, i, ev.events[i]);
    if (ev.events[i] == 0) {
      CHECK(sh->strict || sh->stop_after || any_fault, "[%s] item %d: no event", what, i);
      continue;
    }
    if (!r->mel) {
      too_short++;
      CHECK(ev.status[i] == FC_ITEM_FAILED && (strstr(ev.reason[i], "too short") || any_fault),
            "[%s] item %d (%zu samples): status %d '%s', want too short", what, i, r->n,
            ev.status[i], ev.reason[i]);
      continue;
    }
    if (ev.status[i] == FC_ITEM_FAILED) {
      CHECK(any_fault ||
                (faults && fits(sh, r) && strstr(ev.reason[i], "feature computation failed")),
            "[%s] item %d failed: '%s'", what, i, ev.reason[i]);
      failed_on_device++;
      continue;
    }
    CHECK(ev.status[i] == FC_ITEM_STORED, "[%s] item %d: status %d '%s'", what, i, ev.status[i],
          ev.reason[i]);
    if (fits(sh, r)) want_utts++, want16 += r->i16 != 0;
  }
  /* After a failed commit (an alloc fault) the items never begun count as failed, without events. */
  CHECK(any_fault ? evs + st.not_started <= NFILES : evs + st.not_started == NFILES,
        "[%s] %u events, %llu not started", what, evs, (unsigned long long)st.not_started);
  last_clean = rc == 0 && st.failed == too_short && st.processed == NFILES - too_short;
  if (!faults && !sh->strict && !sh->stop_after && !any_fault) {
    CHECK(atomic_load(&m->utts) == want_utts && atomic_load(&m->utts16) == want16,
          "[%s] the device saw %u utterances (%u int16), want %u (%u)", what, atomic_load(&m->utts),
          atomic_load(&m->utts16), want_utts, want16);
  }
  if (faults && !sh->strict)
    CHECK(failed_on_device == atomic_load(&m->failed_utts),
          "[%s] %u items failed on the device, the failed launches carried %u", what,
          failed_on_device, atomic_load(&m->failed_utts));

  /* Records: each stored item's numbers are the CPU path's, in its id's part. */
  fc_store *sv[4] = {NULL};
  fc_rtxn *tv[4] = {NULL};
  for (unsigned k = 0; k < np && k < 4; k++) {
    char part[420];
    if (np > 1)
      fc_store_part_path(store, k, part, sizeof part);
    else
      snprintf(part, sizeof part, "%s", store);
    CHECK(fc_store_open(part, FC_STORE_RDONLY, &sv[k]) == 0 &&
              fc_store_read_begin(sv[k], &tv[k]) == 0,
          "reopen %s", part);
  }
  for (int i = 0; i < NFILES; i++) {
    const ref *r = &refs[sh->preset][i];
    if (ev.events[i] != 1 || ev.status[i] != FC_ITEM_STORED) continue;
    char id[16];
    snprintf(id, sizeof id, "f%02d", i);
    fc_rtxn *t = tv[np > 1 ? fc_store_part_of_id(id, strlen(id), np) : 0];
    if (!t) continue;
    const void *v;
    size_t vl;
    fc_audio_entry e;
    if (fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vl) != 0 ||
        fc_audio_entry_decode(v, vl, &e) != 0) {
      CHECK(0, "[%s] %s: no audio entry", what, id);
      continue;
    }
    CHECK(memcmp(e.digest.bytes, digests[i].bytes, 16) == 0,
          "[%s] %s: the audio entry's digest is not the whole file's", what, id);
    fc_digest key;
    fc_record_key(&e.digest, &cd, &key);
    fc_record_header h;
    const void *pl;
    if (fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, &v, &vl) != 0 ||
        fc_record_verify(v, vl, &h, &pl, why, sizeof why) != 0) {
      CHECK(0, "[%s] %s: no valid record", what, id);
      continue;
    }
    const uint32_t want_producer = fits(sh, r) ? FC_PRODUCER_CUDA : FC_PRODUCER_CPU;
    const size_t nv = (size_t)r->frames * cfg.n_mels, bytes = nv * fc_dtype_size(cfg.dtype);
    void *conv = malloc(bytes);
    fc_convert_dtype(r->mel, nv, cfg.dtype, conv);
    CHECK(h.producer == want_producer && h.dim0 == r->frames && h.payload_bytes == bytes &&
              memcmp(conv, pl, bytes) == 0,
          "[%s] %s (%zu samples%s): producer %u (want %u), %u frames (want %llu), numbers %s the "
          "CPU path's",
          what, id, r->n, r->i16 ? ", int16" : "", h.producer, want_producer, h.dim0,
          (unsigned long long)r->frames,
          h.payload_bytes == bytes && memcmp(conv, pl, bytes) == 0 ? "equal" : "differ from");
    free(conv);
  }
  for (unsigned k = 0; k < np && k < 4; k++) {
    if (tv[k]) fc_rtxn_end(tv[k]);
    fc_store_close(sv[k]);
  }
  char cmd[500];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", store);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", store);
  printf(
      "%s %s: %u launches, %u utterances (%u int16), at most %u in flight; %llu stored, %llu "
      "failed, %llu not started\n",
      failures == before ? "ok  " : "FAIL", what, atomic_load(&m->launches), atomic_load(&m->utts),
      atomic_load(&m->utts16), atomic_load(&m->max_in_flight), (unsigned long long)st.processed,
      (unsigned long long)st.failed, (unsigned long long)st.not_started);
  return failures == before;
}

static shape base_shape(void) {
  shape sh = {.preset = 0,
              .dtype = FC_DTYPE_F32,
              .jobs = 3,
              .chunks = 3,
              .capacity = 20000,
              .max_utts = 1024,
              .launch_wait = 0.002,
              .broken_file = -1};
  return sh;
}

/* Item i's record in t holds the CPU path's numbers (preset 0, f32)? */
static int record_right(fc_rtxn *t, int i, const fc_digest *cd) {
  const ref *r = &refs[0][i];
  char id[16], why[256];
  snprintf(id, sizeof id, "f%02d", i);
  const void *v, *pl;
  size_t vl;
  fc_audio_entry e;
  fc_digest key;
  fc_record_header h;
  if (!r->mel || fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vl) != 0 ||
      fc_audio_entry_decode(v, vl, &e) != 0)
    return 0;
  if (memcmp(e.digest.bytes, digests[i].bytes, 16) != 0) return 0;
  fc_record_key(&e.digest, cd, &key);
  const size_t bytes = (size_t)r->frames * cfgs[0].n_mels * sizeof(float);
  return fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, &v, &vl) == 0 &&
         fc_record_verify(v, vl, &h, &pl, why, sizeof why) == 0 && h.dim0 == r->frames &&
         h.payload_bytes == bytes && memcmp(pl, r->mel, bytes) == 0;
}

/* Reruns on a staging device. A 16-bit file's samples are read straight into the ring before its
 * digest says whether its record is stored: the second run (--rehash: every file read) finds the
 * first half's records stored and gives their reservations back (their chunks launched with the
 * second half's utterances among them): those skipped, the others stored with the CPU path's
 * numbers, no chunk left behind. The third (every record stored) gives every reservation back. The
 * fourth, after some files were touched, rewrites their audio entries with the new mtime (skipped,
 * not stored again). */
static void rerun_case(const char *dir, const fc_item_list *items) {
  shape sh = base_shape();
  sh.capacity = 60000;
  mock_shape(&sh);
  const fc_mel_config *cfg = &cfgs[0];
  char store[400], why[256];
  snprintf(store, sizeof store, "%s/st_rerun", dir);
  fc_store *s;
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open %s", store);
  static seen ev;
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = 3;
  o.batch_records = 5;
  o.device.kind = FC_DEVICE_CUDA;
  o.on_event = on_event;
  o.user = &ev;
  fc_featurize_stats a, b, c, d;
  fc_digest cd;
  fc_mel_config_digest(cfg, &cd);
  memset(&ev, 0, sizeof ev);
  const size_t half = NFILES / 2;
  int rc = fz_pipeline_run(s, cfg, items->items, half, &o, &mock_backend, &a, why, sizeof why);
  CHECK(rc == 0 && a.processed > 0 && a.processed + a.failed == half, "rerun 1: rc %d (%s)", rc,
        why);
  o.rehash = 1;
  memset(&ev, 0, sizeof ev);
  rc = fz_pipeline_run(s, cfg, items->items, items->count, &o, &mock_backend, &b, why, sizeof why);
  CHECK(rc == 0 && b.skipped_existing == a.processed &&
            b.processed + a.processed + b.failed == NFILES,
        "rerun 2 (rehash): rc %d (%s), %llu stored, %llu skipped (want %llu), %llu failed", rc, why,
        (unsigned long long)b.processed, (unsigned long long)b.skipped_existing,
        (unsigned long long)a.processed, (unsigned long long)b.failed);
  fc_rtxn *t;
  CHECK(fc_store_read_begin(s, &t) == 0, "read");
  unsigned right = 0;
  for (int i = (int)half; i < NFILES; i++) {
    if (!refs[0][i].mel) continue;
    CHECK(record_right(t, i, &cd), "rerun 2: f%02d's record differs from the CPU path's", i);
    right++;
  }
  fc_rtxn_end(t);
  memset(&ev, 0, sizeof ev);
  rc = fz_pipeline_run(s, cfg, items->items, items->count, &o, &mock_backend, &c, why, sizeof why);
  const unsigned voided = atomic_load(&the_mock.utts16);
  CHECK(rc == 0 && c.processed == 0 && c.skipped_existing == a.processed + b.processed,
        "rerun 3 (rehash, all stored): rc %d (%s), %llu stored, %llu skipped", rc, why,
        (unsigned long long)c.processed, (unsigned long long)c.skipped_existing);
  CHECK(voided > 0 && atomic_load(&the_mock.violations) == 0 &&
            atomic_load(&the_mock.in_flight) == 0,
        "rerun 3: %u int16 reservations given back, %u violations, %u in flight", voided,
        atomic_load(&the_mock.violations), atomic_load(&the_mock.in_flight));
  o.rehash = 0;
  const struct timespec when[2] = {{.tv_sec = 1700000000, .tv_nsec = 123456789},
                                   {.tv_sec = 1700000000, .tv_nsec = 123456789}};
  for (int i = 0; i < 6; i++) CHECK(utimensat(AT_FDCWD, paths[i], when, 0) == 0, "touch");
  memset(&ev, 0, sizeof ev);
  rc = fz_pipeline_run(s, cfg, items->items, items->count, &o, &mock_backend, &d, why, sizeof why);
  CHECK(rc == 0 && d.processed == 0 && d.skipped_existing == c.skipped_existing,
        "rerun 4 (touched): rc %d (%s), %llu stored, %llu skipped", rc, why,
        (unsigned long long)d.processed, (unsigned long long)d.skipped_existing);
  CHECK(fc_store_read_begin(s, &t) == 0, "read");
  unsigned touched = 0;
  for (int i = 0; i < 6; i++) {
    char id[16];
    snprintf(id, sizeof id, "f%02d", i);
    const void *v;
    size_t vl;
    fc_audio_entry e;
    if (fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vl) != 0) continue; /* too short */
    CHECK(fc_audio_entry_decode(v, vl, &e) == 0 &&
              e.mtime_ns == (int64_t)1700000000 * 1000000000 + 123456789,
          "rerun 4: %s's entry keeps the old mtime", id);
    touched++;
  }
  fc_rtxn_end(t);
  fc_store_close(s);
  CHECK(touched > 0, "rerun 4: no touched file was stored");
  printf(
      "reruns: %llu stored; then %llu skipped, %u stored with the CPU path's numbers; then all "
      "skipped, %u reservations given back; %u touched entries rewritten\n",
      (unsigned long long)a.processed, (unsigned long long)b.skipped_existing, right, voided,
      touched);
}

/* A run that never ends is this test's failure to report, not CTest's timeout to wait for. */
static void on_hang(int sig) {
  (void)sig;
  static const char msg[] =
      "FAIL test_featurize_staging: not finished after 1200 s: a run hung "
      "(a chunk never given back to the ring?)\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(1);
  _exit(1);
}

int main(void) {
  /* the ring, opened before any worker: a run whose manifest is read as it goes would otherwise
   * start on the CPU (hybrid start, tests/unit/test_featurize_hybrid.c) */
  setenv("FC_CUDA_START", "wait", 1);
  signal(SIGALRM, on_hang);
  alarm(1200);
  char tmpl[] = "/tmp/fc_staging.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  /* Odd sizes: no frames (100), 1 hop +- 1, a chunk's capacity +- 1 (20000), the rest spread up to
   * 26000 samples (longer than the small chunks: computed on the CPU there). */
  static const uint32_t fixed[] = {100, 255, 256, 257, 19999, 20000, 20001, 1};
  const char *pp[NFILES];
  for (int i = 0; i < NFILES; i++) {
    uint32_t n = i < (int)(sizeof fixed / sizeof fixed[0]) ? fixed[i] : 300 + pick(26000);
    static const int fixed_kinds[] = {KIND_I16,      KIND_I16_EXT, KIND_I16_LIST, KIND_I16,
                                      KIND_I16_LIST, KIND_I16,     KIND_I16,      KIND_I16};
    int kind = i < 8 ? fixed_kinds[i] : (int)pick(N_KINDS);
    kinds[i] = kind;
    if (kind == KIND_RESAMPLED) n = n * 16000 / 22050 + 1;
    snprintf(paths[i], sizeof paths[i], "%s/f%02d.wav", dir, i);
    write_file(paths[i], kind, n, i);
    pp[i] = paths[i];
  }
  fc_item_list items;
  CHECK(fc_items_from_paths(pp, NFILES, &items) == 0, "items");
  snprintf(list_path, sizeof list_path, "%s/list.txt", dir);
  FILE *lf = fopen(list_path, "w");
  CHECK(lf != NULL, "%s", list_path);
  for (int i = 0; lf && i < NFILES; i++) fprintf(lf, "%s\n", paths[i]);
  if (lf) fclose(lf);
  for (int p = 0; p < NPRESETS; p++) {
    CHECK(fc_mel_preset(presets[p], &cfgs[p]) == 0, "preset %s", presets[p]);
    make_refs(p);
  }
  int number = 0, ok = 0;

  /* Random shapes. */
  static const unsigned jobs[] = {1, 2, 3, 4, 7}, chunks[] = {1, 2, 3, 4, 8},
                        delays[] = {0, 0, 200, 2000};
  static const size_t caps[] = {6000, 20000, 60000}, utts[] = {1, 3, 1024, 1024};
  static const double waits[] = {1e-5, 0.002, 0.02};
  static const int dtypes[] = {FC_DTYPE_F32, FC_DTYPE_F16, FC_DTYPE_BF16};
  for (int k = 0; k < 36; k++) {
    shape sh = base_shape();
    sh.preset = (int)pick(NPRESETS);
    sh.dtype = dtypes[pick(3)];
    sh.jobs = jobs[pick(5)];
    sh.chunks = chunks[pick(5)];
    sh.capacity = caps[pick(3)];
    sh.max_utts = utts[pick(4)];
    sh.launch_wait = waits[pick(3)];
    sh.delay_us = delays[pick(4)];
    if (pick(4) == 0) /* frames per chunk the binding limit */
      sh.max_frames = fc_mel_num_frames(&cfgs[sh.preset], sh.capacity) / 3 + 1;
    sh.parts = 1 + pick(3); /* 1 to 3 writers, each holding chunks until it commits */
    sh.stream = k % 3 == 0;
    sh.early = k % 4 >= 2; /* the staging refilled before the writers are through */
    sh.grow = k % 2; /* the ring made as it runs, sometimes slowly, sometimes short of a chunk */
    if (sh.grow) {
      static const unsigned grow_delays[] = {0, 500, 3000};
      sh.grow_delay_us = grow_delays[pick(3)];
      sh.grow_fail = sh.chunks > 1 && pick(3) == 0 ? 1 + pick(sh.chunks - 1) : 0;
    }
    ok += run_shape(dir, &items, &sh, number++);
  }

  /* Chunk k + 1 launched while chunk k is in flight. */
  shape sh = base_shape();
  sh.capacity = 6000;
  sh.chunks = 2;
  sh.jobs = 2;
  sh.hold_first = 1;
  ok += run_shape(dir, &items, &sh, number++);
  CHECK(atomic_load(&the_mock.max_in_flight) >= 2 && !atomic_load(&the_mock.held_timeout),
        "overlap: at most %u chunk(s) in flight; the held first chunk %s",
        atomic_load(&the_mock.max_in_flight),
        atomic_load(&the_mock.held_timeout) ? "timed out: no second launch while it was in flight"
                                            : "was released by a second launch");

  /* Early refill: a chunk's next use filled while the writers still read its output (and launched
   * only once they are through: the mock counts a launch before as a violation, and the records
   * checked against the CPU path would hold the next use's features). Many launches on two chunks,
   * one writer: uses are seen opened before the one before them is released. */
  unsigned early_opens = 0;
  for (int e = 0; e < 3; e++) {
    sh = base_shape();
    sh.chunks = 2;
    sh.max_utts = 2;
    sh.jobs = 3;
    sh.early = 1;
    ok += run_shape(dir, &items, &sh, number++);
    early_opens += atomic_load(&the_mock.early_opens);
  }
  CHECK(early_opens > 0, "early refill: no use was opened before its chunk's output was released");

  /* The ring made as it runs (the CUDA backend's way): its chunks made one by one while the first
   * fill, the workers waiting for each; every one made by the end. A chunk that cannot be made
   * (the 2nd, the 4th) leaves the ring at the chunks before it, and the run goes round those. */
  static const unsigned grow_fails[] = {0, 1, 3};
  for (int g = 0; g < 3; g++) {
    sh = base_shape();
    sh.chunks = 4;
    sh.max_utts = 2; /* many launches: the ring goes round several times */
    sh.jobs = 3;
    sh.delay_us = 3000;
    sh.grow = 1;
    sh.grow_fail = grow_fails[g];
    sh.grow_delay_us = 2000;
    ok += run_shape(dir, &items, &sh, number++);
    const unsigned want = grow_fails[g] ? grow_fails[g] : sh.chunks;
    CHECK(atomic_load(&the_mock.made) == want && atomic_load(&the_mock.max_in_flight) <= want &&
              atomic_load(&the_mock.launches) > 2 * want,
          "ring grown to %u of %u chunks (want %u), at most %u in flight, %u launches",
          atomic_load(&the_mock.made), sh.chunks, want, atomic_load(&the_mock.max_in_flight),
          atomic_load(&the_mock.launches));
  }

  /* Faults: the 2nd launch, the 3rd finish, an utterance whose launch fails; sticky after. */
  for (int f = 0; f < 3; f++) {
    sh = base_shape();
    sh.capacity = 6000 + 14000 * (unsigned)(f == 2);
    sh.fail_launch = f == 0 ? 2 : 0;
    sh.fail_finish = f == 1 ? 3 : 0;
    sh.broken_file = f == 2 ? 12 : -1;
    sh.jobs = 2 + (unsigned)f;
    ok += run_shape(dir, &items, &sh, number++);
  }
  /* Every launch and every finish failing in turn (SQLite's faultsim loop): n = 1, 2, ... until a
   * run takes no fault. Each run accounts for every item and stores only right numbers. */
  for (int which = 0; which < 2; which++) {
    for (unsigned n = 1; n < 64; n++) {
      sh = base_shape();
      sh.capacity = 6000;
      sh.chunks = 2 + n % 3;
      sh.jobs = 1 + n % 4;
      sh.broken_file = -1;
      sh.stream = n % 2;
      sh.early = (n / 2) % 2; /* and with early refill: a failed use gives its chunk back too */
      if (which == 0)
        sh.fail_launch = n;
      else
        sh.fail_finish = n;
      ok += run_shape(dir, &items, &sh, number++);
      if (atomic_load(&the_mock.failed_utts) == 0) break; /* n is past the last launch */
    }
  }
  /* Every allocation of a run failing in turn (FC_FAULT=alloc:N; each one up to 40, then every
   * 17th) until the N-th allocation no longer happens (FC_FAULT_LOG: a run may absorb a failure):
   * whatever fails, every item is accounted for, nothing stored is wrong, no chunk is left in
   * flight, nothing leaks (ASan). */
  if (fault_built()) {
    const int before_alloc = failures;
    unsigned runs = 0, absorbed = 0;
    for (unsigned n = 1; n < 100000; n += n < 40 ? 1 : 17) {
      sh = base_shape();
      sh.capacity = 6000;
      sh.jobs = 1 + n % 3;
      sh.early = (n / 3) % 2;
      sh.alloc_fault = n;
      int before = failures;
      run_shape(dir, &items, &sh, number);
      runs++;
      absorbed += last_injected && last_clean;
      if (failures != before || !last_injected) break;
    }
    printf("allocation faults: %u runs (%u absorbed), the last with none injected\n", runs,
           absorbed);
    ok += failures == before_alloc;
    number++;
  }
  /* Every commit failing in turn (FC_FAULT=commit:N), with 1 to 3 writers and a ring of 2 chunks:
   * a writer whose commit fails gives the chunks its queued utterances hold back to the ring, so
   * the workers waiting for one go on and the run ends (a hang here is the bug), every item
   * accounted for, nothing wrong stored. */
  if (fault_built()) {
    const int before_commit = failures;
    unsigned runs = 0;
    for (unsigned n = 1; n < 1000; n++) {
      sh = base_shape();
      sh.capacity = 60000; /* several utterances a chunk */
      sh.chunks = 2;
      sh.jobs = 1 + n % 3;
      sh.parts = 1 + n % 3;
      sh.batch = 1; /* a commit per record: both chunks' utterances wait in the queues, workers
                       wait for a chunk */
      sh.commit_fault = n;
      sh.stream = n % 2; /* items held by their jobs only: reported before they are let go */
      sh.early = (n / 2) % 2; /* a chunk refilled early waits to launch for those writers */
      int before = failures;
      run_shape(dir, &items, &sh, number);
      runs++;
      if (failures != before || !last_injected) break;
    }
    printf("commit faults: %u runs, the last with none injected\n", runs);
    ok += failures == before_commit;
    number++;
  }
  rerun_case(dir, &items);
  /* --strict with a failing launch (tacotron2: every file gives frames, so the launch's failure is
   * the first): the run stops, everything begun is accounted for. */
  sh = base_shape();
  sh.preset = 1;
  sh.fail_launch = 1;
  sh.strict = 1;
  ok += run_shape(dir, &items, &sh, number++);
  /* The stop flag after 5 events: the ring drains, nothing is lost or duplicated. */
  sh = base_shape();
  sh.capacity = 6000;
  sh.stop_after = 5;
  sh.delay_us = 500;
  ok += run_shape(dir, &items, &sh, number++);
  sh.stream = 1; /* the same, the manifest read as it goes: the rest is read and counted */
  ok += run_shape(dir, &items, &sh, number++);

  for (int p = 0; p < NPRESETS; p++)
    for (int i = 0; i < NFILES; i++) free(refs[p][i].mel);
  fc_item_list_free(&items);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  printf("%d of %d shapes ok\n", ok, number);
  return fc_check_result("test_featurize_staging");
}
