/* Odd and bad inputs on the staging path (a GPU's) against the CPU path.
 *
 * On a staging device a 16-bit mono WAV at the config's rate is read from the file straight into
 * the ring (libcache/mel/featurize/featurize_source.c, read_staged: the first 4 KiB, room reserved,
 * the samples, the bytes after them, the digest over the three pieces); every other file is read
 * whole and goes the usual way. Real corpora have files that sit on the edges of that split: a
 * chunk after the samples, a header longer than the first read, streaming writers' size markers,
 * an odd data size, bytes after the last chunk, and files that are cut off, empty, not audio,
 * missing, a directory, two joined with cat, a manifest line's duration shorter than the file
 * (NeMo's segment), or float samples that are NaN. For each of them, a run through the CPU
 * staging mock (tests/stage_mock.h: the pipeline's real code up to the device boundary) must come
 * out exactly as the CPU path does:
 *   - the same event (status, error, reason, frames, seconds, source rate and channels);
 *   - the same audio entry bytes (digest: the whole file's), the same record bytes, the same
 *     failure record (error, source, reason);
 *   - a second run with --rehash: the stored ones skipped, the failed ones failed again alike; the
 *     files read straight into the ring are exactly those expected (each gives its reservation back
 *     once its record is found stored, which the mock counts as an int16 utterance);
 *   - a third run without --rehash: the stored ones skipped, the failed ones failed alike;
 *   - a fourth with one file more, the same bytes as one stored under another id: read into the
 *     ring, found stored, its room given back, then its entry linked to that record, as the CPU
 *     path does;
 *   - a first run of a linear mel in float16 into new stores: the full-scale tone's features pass
 *     65504 and it fails alike, with the same failure record;
 *   - a first run with --max-seconds 0.3 into new stores: the longer files fail alike (the staging
 *     path tells from the header, before any room is reserved);
 *   - a file whose record was dropped, its audio entry kept, stored again by another run between
 *     this run's lookup and its commit (the commit finds the record and the very entry there, the
 *     entry there all along): counted stored alike (the staging path counted it already stored:
 *     it never noted that the entry was there at the lookup). */
#include "featcache/fc_audio.h"
#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "featcache/fc_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/common/fault.h"
#include "tests/check.h"
#include "tests/stopped.h"
#include "tests/stage_mock.h"
#include "tests/wav.h"

/* A 16-bit mono file at 22.05 kHz, with the header and the bytes around the samples as asked. */
typedef struct wav_spec {
  uint32_t n; /* samples written */
  uint32_t junk; /* a JUNK chunk of this many bytes before "fmt " (0: none) */
  uint32_t after; /* a LIST chunk of this many bytes after the data (0: none; odd: padded) */
  uint32_t trailing; /* bytes after everything that are no chunk */
  uint32_t data_size; /* the data chunk's size field (0: 2n, as written) */
  int data_size_zero; /* write 0 there */
  uint32_t riff_size; /* the RIFF size field (0: the file's) */
  uint32_t align; /* block align (0: 2) */
  int stray; /* one sample byte more than the samples (an odd data size) */
  int loud; /* a full-scale 1 kHz tone instead of a quieter one with noise */
  uint32_t float_nan; /* > 0: 32-bit float samples, this one NaN */
  uint32_t second_data; /* > 0: a second data chunk of this many samples at the end */
} wav_spec;

static void write_spec(const char *path, const wav_spec *w, int seed) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  const uint32_t bytes = w->float_nan ? 4 : 2, data = bytes * w->n + (w->stray ? 1 : 0);
  const uint32_t junk = w->junk ? 8 + w->junk : 0,
                 after = w->after ? 8 + w->after + w->after % 2 : 0;
  const uint32_t riff = 4 + junk + 8 + 16 + 8 + data + data % 2 + after + w->trailing +
                        (w->second_data ? 8 + 2 * w->second_data : 0);
  fwrite("RIFF", 1, 4, f);
  put_le(f, w->riff_size ? w->riff_size : riff, 4);
  fwrite("WAVE", 1, 4, f);
  if (w->junk) {
    fwrite("JUNK", 1, 4, f);
    put_le(f, w->junk, 4);
    for (uint32_t i = 0; i < w->junk; i++) fputc(0, f);
  }
  fwrite("fmt ", 1, 4, f);
  put_le(f, 16, 4);
  put_le(f, w->float_nan ? 3 : 1, 2);
  put_le(f, 1, 2);
  put_le(f, 22050, 4);
  put_le(f, bytes * 22050, 4);
  put_le(f, w->align ? w->align : bytes, 2);
  put_le(f, 8 * bytes, 2);
  fwrite("data", 1, 4, f);
  put_le(f, w->data_size_zero ? 0 : w->data_size ? w->data_size : data, 4);
  for (uint32_t i = 0; i < w->n; i++) {
    const double v = w->loud ? 32767 * sin(2 * M_PI * 1000 * i / 22050.0)
                             : 9000 * sin(2 * M_PI * (150 + 23 * seed) * i / 22050.0) +
                                   (double)((i * 2654435761u + (uint32_t)seed) >> 22) - 512;
    if (w->float_nan) {
      const float x = i == w->float_nan ? NAN : (float)(v / 32768);
      uint32_t u;
      memcpy(&u, &x, 4);
      put_le(f, u, 4);
    } else {
      put_le(f, (uint32_t)(int16_t)lrint(v), 2);
    }
  }
  if (w->stray) fputc(0x5a, f);
  if (data % 2) fputc(0, f);
  if (w->after) {
    fwrite("LIST", 1, 4, f);
    put_le(f, w->after, 4);
    fwrite("INFO", 1, w->after < 4 ? w->after : 4, f);
    for (uint32_t i = 4; i < w->after; i++) fputc('a' + (int)(i % 26), f);
    if (w->after % 2) fputc(0, f);
  }
  for (uint32_t i = 0; i < w->trailing; i++) fputc(0xa5, f);
  if (w->second_data) {
    fwrite("data", 1, 4, f);
    put_le(f, 2 * w->second_data, 4);
    for (uint32_t i = 0; i < w->second_data; i++) put_le(f, (uint32_t)(int16_t)(i * 37), 2);
  }
  fclose(f);
}

/* DIRECT: read straight into the ring; AGAIN: read into it, found to be no such file (another
 * after its samples), its room given back and read again the usual way */
enum { DIRECT = 1, AGAIN };
typedef struct input {
  const char *what;
  wav_spec w;
  int special; /* 0: a WAV as w says; else one of the kinds below */
  int route; /* DIRECT, AGAIN or 0 */
} input;
enum { S_ZERO = 1, S_TEXT, S_MISSING, S_DIR, S_DUP, S_JOINED, S_SEGMENT };

/* 4096: the first read (the header, then the samples into the ring). A plain header is 44 bytes;
 * a JUNK chunk of J bytes puts the samples at 52 + J. */
static const input inputs[] = {
    {"plain, the whole file within the first read", {.n = 1500}, 0, DIRECT},
    {"plain, longer than the first read", {.n = 12000}, 0, DIRECT},
    {"a LIST chunk after the samples, all within the first read",
     {.n = 1500, .after = 40},
     0,
     DIRECT},
    {"a LIST chunk after the samples", {.n = 9000, .after = 26}, 0, DIRECT},
    {"an odd-sized LIST chunk after the samples", {.n = 7001, .after = 5}, 0, DIRECT},
    {"bytes after the last chunk", {.n = 5000, .trailing = 3}, 0, DIRECT},
    {"samples from byte 4096, right after the first read", {.n = 6000, .junk = 4044}, 0, DIRECT},
    {"one sample within the first read", {.n = 6000, .junk = 4042}, 0, DIRECT},
    {"a header longer than the first read", {.n = 8000, .junk = 5000}, 0, 0},
    {"streaming sizes (0xFFFFFFFF)",
     {.n = 5000, .data_size = 0xFFFFFFFFu, .riff_size = 0xFFFFFFFFu},
     0,
     0},
    {"a data size of 0 with samples after it", {.n = 5000, .data_size_zero = 1}, 0, 0},
    {"an odd data size", {.n = 5000, .stray = 1}, 0, 0},
    {"a block align of 4 for 16-bit mono", {.n = 5000, .align = 4}, 0, 0},
    {"cut off: the data chunk claims twice its samples", {.n = 6000, .data_size = 24000}, 0, 0},
    {"cut off: a header and no samples", {.n = 0, .data_size = 8000}, 0, 0},
    {"a data chunk of 0 bytes", {.n = 0}, 0, 0},
    {"too short for a frame", {.n = 100}, 0, 0},
    {"one sample", {.n = 1}, 0, 0},
    {"0 bytes", {0}, S_ZERO, 0},
    {"text, not audio", {0}, S_TEXT, 0},
    {"a path that does not exist", {0}, S_MISSING, 0},
    {"a directory", {0}, S_DIR, 0},
    {"two files joined with cat, all within the first read", {.n = 900}, S_JOINED, 0},
    {"two files joined with cat", {.n = 5000}, S_JOINED, AGAIN},
    /* a WAV holds one data chunk: libsndfile refuses a second, sox reads the first, ffmpeg the
     * last; the 16-bit path read the first, so that the file was stored at the config's rate and
     * refused at another */
    {"a second data chunk, all within the first read", {.n = 900, .second_data = 300}, 0, 0},
    {"a second data chunk", {.n = 5000, .second_data = 2000}, 0, AGAIN},
    {"a LIST chunk, then a second data chunk",
     {.n = 5000, .after = 26, .second_data = 9},
     0,
     AGAIN},
    /* samples past what the data chunk states, in no chunk: stored as stated, with a warning */
    {"samples past what its data chunk states", {.n = 5000, .data_size = 2000}, 0, DIRECT},
    {"a manifest line's duration shorter than the file", {.n = 6000}, S_SEGMENT, 0},
    {"a float WAV with a NaN sample", {.n = 3000, .float_nan = 2000}, 0, 0},
    {"a full-scale tone", {.n = 5000, .loud = 1}, 0, DIRECT},
    {"the same bytes as the second file, under another id", {0}, S_DUP, DIRECT},
};
enum { N = sizeof inputs / sizeof inputs[0] };

static char paths[N][300];

typedef struct seen {
  unsigned events[N];
  fc_featurize_status status[N];
  int err[N];
  char reason[N][200];
  uint64_t frames[N];
  double seconds[N];
  uint32_t rate[N], channels[N];
  int note[N]; /* the event said a warning about the source */
} seen;

static void on_event(const fc_featurize_event *ev, void *user) {
  seen *s = user;
  size_t i = ev->index;
  s->events[i]++;
  s->status[i] = ev->status;
  s->err[i] = ev->err;
  snprintf(s->reason[i], sizeof s->reason[i], "%s", ev->reason ? ev->reason : "");
  s->frames[i] = ev->frames;
  s->seconds[i] = ev->seconds;
  s->rate[i] = ev->source_rate;
  s->channels[i] = ev->source_channels;
  s->note[i] = ev->note != NULL;
}

/* One run of the first n items into store (created when new): the CPU path, or the staging mock
 * when staged. */
static double max_seconds; /* --max-seconds of the runs (0: none) */

static void run(const char *store, const fc_mel_config *cfg, const fc_item_list *items, size_t n,
                int staged, int rehash, seen *ev, fc_featurize_stats *st) {
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = 3;
  o.batch_records = 4;
  o.rehash = rehash;
  o.max_seconds = max_seconds;
  o.device.kind = staged ? FC_DEVICE_CUDA : FC_DEVICE_CPU;
  o.on_event = on_event;
  o.user = ev;
  memset(ev, 0, sizeof *ev);
  fc_store *s;
  char why[256];
  CHECK(fc_store_open(store, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "open %s", store);
  int rc = staged ? fz_pipeline_run(s, cfg, items->items, n, &o, &mock_backend, st, why, sizeof why)
                  : fc_featurize_run(s, cfg, items->items, n, &o, st, why, sizeof why);
  CHECK(rc == 0, "%s run into %s: rc %d (%s)", staged ? "staged" : "CPU", store, rc, why);
  CHECK(st->processed + st->skipped_existing + st->failed == n && st->not_started == 0,
        "%s run: %llu + %llu + %llu of %zu", staged ? "staged" : "CPU",
        (unsigned long long)st->processed, (unsigned long long)st->skipped_existing,
        (unsigned long long)st->failed, n);
  fc_store_close(s);
}

static int same_events(const seen *a, const seen *b, int i) {
  return a->events[i] == 1 && b->events[i] == 1 && a->status[i] == b->status[i] &&
         a->err[i] == b->err[i] && strcmp(a->reason[i], b->reason[i]) == 0 &&
         a->frames[i] == b->frames[i] && a->seconds[i] == b->seconds[i] &&
         a->rate[i] == b->rate[i] && a->channels[i] == b->channels[i] && a->note[i] == b->note[i];
}

/* Item i's id: the file name without ".wav". */
static void id_of(int i, char *id, size_t len) { snprintf(id, len, "f%02d", i); }

/* The stores' bytes for item i alike: audio entry, record, failure record (its time aside). */
static void compare_stores(fc_rtxn *ta, fc_rtxn *tb, int i, const fc_digest *cd, const char *when) {
  char id[16], why[256];
  id_of(i, id, sizeof id);
  const void *va, *vb;
  size_t la, lb;
  int ga = fc_rtxn_get(ta, FC_DB_AUDIO, id, strlen(id), &va, &la);
  int gb = fc_rtxn_get(tb, FC_DB_AUDIO, id, strlen(id), &vb, &lb);
  CHECK(ga == gb && (ga != 0 || (la == lb && memcmp(va, vb, la) == 0)),
        "%s: %s (%s): audio entries differ (CPU %s, staged %s)", when, id, inputs[i].what,
        ga ? "none" : "one", gb ? "none" : "one");
  if (ga == 0) {
    fc_audio_entry e;
    CHECK(fc_audio_entry_decode(va, la, &e) == 0, "%s: %s: entry", when, id);
    void *bytes = NULL;
    size_t len = 0;
    fc_audio_info info;
    const char *p = inputs[i].special == S_DUP ? paths[1] : paths[i];
    CHECK(fc_audio_read_file(p, 0, &bytes, &len, &info) == 0, "read %s", p);
    fc_digest d;
    fc_digest_buffer(bytes, len, &d);
    free(bytes);
    CHECK(memcmp(d.bytes, e.digest.bytes, 16) == 0, "%s: %s: the entry's digest is not the file's",
          when, id);
    fc_digest key;
    fc_record_key(&e.digest, cd, &key);
    fc_record_header ha, hb;
    const void *pa, *pb;
    if (fc_rtxn_get(ta, FC_DB_FEAT, key.bytes, 16, &va, &la) != 0 ||
        fc_rtxn_get(tb, FC_DB_FEAT, key.bytes, 16, &vb, &lb) != 0) {
      CHECK(0, "%s: %s: no record under the entry's key in one of the stores", when, id);
    } else if (fc_record_verify(va, la, &ha, &pa, why, sizeof why) != 0 ||
               fc_record_verify(vb, lb, &hb, &pb, why, sizeof why) != 0) {
      CHECK(0, "%s: %s: a record does not verify: %s", when, id, why);
    } else {
      CHECK(ha.dim0 == hb.dim0 && ha.payload_bytes == hb.payload_bytes &&
                memcmp(pa, pb, ha.payload_bytes) == 0,
            "%s: %s (%s): the staged record (%u frames) differs from the CPU path's (%u)", when, id,
            inputs[i].what, hb.dim0, ha.dim0);
    }
  }
  ga = fc_rtxn_get(ta, FC_DB_FAILED, id, strlen(id), &va, &la);
  gb = fc_rtxn_get(tb, FC_DB_FAILED, id, strlen(id), &vb, &lb);
  fc_failure fa, fb;
  CHECK(ga == gb &&
            (ga != 0 ||
             (fc_failure_decode(va, la, &fa) == 0 && fc_failure_decode(vb, lb, &fb) == 0 &&
              fa.err == fb.err && fa.source_len == fb.source_len &&
              memcmp(fa.source, fb.source, fa.source_len) == 0 && fa.reason_len == fb.reason_len &&
              memcmp(fa.reason, fb.reason, fa.reason_len) == 0)),
        "%s: %s (%s): failure records differ", when, id, inputs[i].what);
}

static void compare(const char *sa, const char *sb, const fc_digest *cd, const seen *a,
                    const seen *b, int n, const char *when) {
  for (int i = 0; i < n; i++) {
    CHECK(same_events(a, b, i),
          "%s: %s (%s): CPU path status %d err %d '%s' %llu frames %.4f s %u Hz %u ch; staged "
          "status %d err %d '%s' %llu frames %.4f s %u Hz %u ch",
          when, paths[i], inputs[i].what, a->status[i], a->err[i], a->reason[i],
          (unsigned long long)a->frames[i], a->seconds[i], a->rate[i], a->channels[i], b->status[i],
          b->err[i], b->reason[i], (unsigned long long)b->frames[i], b->seconds[i], b->rate[i],
          b->channels[i]);
  }
  fc_store *xa, *xb;
  fc_rtxn *ta, *tb;
  CHECK(fc_store_open(sa, FC_STORE_RDONLY, &xa) == 0 && fc_store_read_begin(xa, &ta) == 0 &&
            fc_store_open(sb, FC_STORE_RDONLY, &xb) == 0 && fc_store_read_begin(xb, &tb) == 0,
        "reopen");
  for (int i = 0; i < n; i++) compare_stores(ta, tb, i, cd, when);
  fc_rtxn_end(ta);
  fc_rtxn_end(tb);
  fc_store_close(xa);
  fc_store_close(xb);
}

/* The file at path into a store (created) under cfg, then the config dropped: its audio entry
 * stays, its record is gone. Then a run that stops before its commit (FC_FAULT_STOP, the stop's
 * count in this process: stop), while another process (featurize, FC_BIN) stores the file again;
 * its event into *ev, its counts into *st. */
static void stored_again_meanwhile(const char *store, const char *path, const fc_mel_config *cfg,
                                   int staged, int stop, seen *ev, fc_featurize_stats *st) {
  fc_item_list items;
  const char *pp[1] = {path};
  CHECK(fc_items_from_paths(pp, 1, &items) == 0, "items");
  run(store, cfg, &items, 1, staged, 0, ev, st);
  fc_store *s;
  fc_digest cd;
  fc_mel_config_digest(cfg, &cd);
  CHECK(fc_store_open(store, 0, &s) == 0 && fc_store_drop_config(s, &cd, NULL, NULL, NULL) == 0,
        "drop the config of %s", store);
  fc_store_close(s);
  char cmd[1200], stop_at[40];
  snprintf(cmd, sizeof cmd, "'%s/featurize' -q -j 1 -o '%s' '%s'", getenv("FC_BIN"), store, path);
  fflush(NULL);
  const pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    fc_test_wait_stopped(parent); /* until the run has stopped itself */
    const int rc = system(cmd);
    kill(parent, SIGCONT);
    _exit(rc == 0 ? 0 : 1);
  }
  snprintf(stop_at, sizeof stop_at, "featurize_batch:%d", stop);
  setenv("FC_FAULT_STOP", stop_at, 1);
  run(store, cfg, &items, 1, staged, 0, ev, st);
  unsetenv("FC_FAULT_STOP");
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "%s while the run was stopped: status %d", cmd, status);
  fc_item_list_free(&items);
}

int main(void) {
  char tmpl[] = "/tmp/fc_staging_inputs.XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  const char *pp[N];
  unsigned want_direct = 0, want_again = 0; /* of the first N - 1 (the last is the duplicate) */
  for (int i = 0; i < N; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/f%02d.wav", dir, i);
    pp[i] = paths[i];
    const input *in = &inputs[i];
    want_direct += in->route == DIRECT && in->special != S_DUP;
    want_again += in->route == AGAIN;
    FILE *f;
    switch (in->special) {
    case 0:
    case S_SEGMENT: write_spec(paths[i], &in->w, i); break;
    case S_ZERO:
    case S_TEXT:
      f = fopen(paths[i], "wb");
      CHECK(f != NULL, "%s", paths[i]);
      if (f && in->special == S_TEXT) fputs("id|text\nLJ001-0001|not a wav file\n", f);
      if (f) fclose(f);
      break;
    case S_MISSING: break;
    case S_DIR: CHECK(mkdir(paths[i], 0755) == 0, "mkdir %s", paths[i]); break;
    case S_DUP: write_spec(paths[i], &inputs[1].w, 1); break;
    case S_JOINED: { /* cat a.wav b.wav: b half as long */
      char second[320];
      snprintf(second, sizeof second, "%.300s.2", paths[i]);
      const wav_spec half = {.n = in->w.n / 2};
      write_spec(paths[i], &in->w, i);
      write_spec(second, &half, i + 1);
      FILE *to = fopen(paths[i], "ab"), *from = fopen(second, "rb");
      CHECK(to && from, "%s", second);
      for (int c; to && from && (c = fgetc(from)) != EOF;) fputc(c, to);
      if (to) fclose(to);
      if (from) fclose(from);
      remove(second);
      break;
    }
    }
  }
  CHECK(inputs[N - 1].special == S_DUP, "the duplicate comes last");
  fc_item_list items;
  CHECK(fc_items_from_paths(pp, N, &items) == 0, "items");
  for (int i = 0; i < N; i++) /* NeMo's segment [0, 0.1 s) of a 0.27 s file: it fails alike */
    if (inputs[i].special == S_SEGMENT) items.items[i].duration = 0.1;
  fc_mel_config cfg;
  CHECK(fc_mel_preset("hifigan", &cfg) == 0, "preset");
  fc_digest cd;
  fc_mel_config_digest(&cfg, &cd);
  stage_mock *m = &the_mock;
  m->chunks = 3;
  m->capacity = 20000; /* every file that gives frames fits a chunk */
  m->max_utts = 1024;
  m->launch_wait = 0.002;
  m->broken_len = (size_t)-1;

  char sa[400], sb[400];
  snprintf(sa, sizeof sa, "%s/cpu", dir);
  snprintf(sb, sizeof sb, "%s/staged", dir);
  static seen a, b, first, dup;
  fc_featurize_stats st_a, st_b;
  run(sa, &cfg, &items, N - 1, 0, 0, &a, &st_a);
  run(sb, &cfg, &items, N - 1, 1, 0, &b, &st_b);
  CHECK(atomic_load(&m->violations) == 0 && atomic_load(&m->in_flight) == 0,
        "first run: %u violations, %u in flight", atomic_load(&m->violations),
        atomic_load(&m->in_flight));
  compare(sa, sb, &cd, &a, &b, N - 1, "first run");
  first = b;
  unsigned stored = 0, failed = 0;
  for (int i = 0; i < N - 1; i++)
    stored += b.status[i] == FC_ITEM_STORED, failed += b.status[i] == FC_ITEM_FAILED;
  CHECK(stored == 14 && failed == 17, "first run: %u stored, %u failed, want 14 and 17", stored,
        failed);
  for (int i = 0; i < N - 1; i++) /* the warning: only where samples follow what is stated */
    CHECK(b.note[i] == (inputs[i].w.data_size == 2000), "%s: note %d", inputs[i].what, b.note[i]);
  for (int i = 0; i < N - 1; i++) /* refused on both paths, saying why */
    CHECK(!inputs[i].w.second_data ||
              (b.status[i] == FC_ITEM_FAILED && strstr(b.reason[i], "two data chunks")),
          "%s: status %d, %s", inputs[i].what, b.status[i], b.reason[i]);

  /* Again with --rehash: every file read; those read into the ring give their room back (and a
   * file read into it that proves to be two joined, which fails again). */
  run(sa, &cfg, &items, N - 1, 0, 1, &a, &st_a);
  run(sb, &cfg, &items, N - 1, 1, 1, &b, &st_b);
  const unsigned direct = atomic_load(&m->utts16);
  CHECK(direct == want_direct + want_again && atomic_load(&m->violations) == 0 &&
            atomic_load(&m->in_flight) == 0,
        "rehash: %u files read straight into the ring, want %u (%u violations)", direct,
        want_direct + want_again, atomic_load(&m->violations));
  CHECK(st_b.processed == 0 && st_b.skipped_existing == stored && st_b.failed == failed,
        "rehash: %llu stored, %llu skipped, %llu failed", (unsigned long long)st_b.processed,
        (unsigned long long)st_b.skipped_existing, (unsigned long long)st_b.failed);
  compare(sa, sb, &cd, &a, &b, N - 1, "rehash");

  /* Again as a rerun: what is stored is known by its source's identity, without a read; what
   * failed is read again. */
  run(sa, &cfg, &items, N - 1, 0, 0, &a, &st_a);
  run(sb, &cfg, &items, N - 1, 1, 0, &b, &st_b);
  CHECK(atomic_load(&m->utts16) == want_again && st_b.processed == 0 &&
            st_b.skipped_existing == stored,
        "rerun: %u reservations, %llu stored, %llu skipped", atomic_load(&m->utts16),
        (unsigned long long)st_b.processed, (unsigned long long)st_b.skipped_existing);
  compare(sa, sb, &cd, &a, &b, N - 1, "rerun");

  /* The duplicate: read into the ring, its record found stored under another id, linked. */
  run(sa, &cfg, &items, N, 0, 0, &a, &st_a);
  run(sb, &cfg, &items, N, 1, 0, &b, &st_b);
  CHECK(atomic_load(&m->utts16) == 1 + want_again && b.status[N - 1] == FC_ITEM_LINKED &&
            st_b.processed == 1,
        "duplicate: %u reservations (want 1 and the joined file's), status %d (want linked), %llu "
        "processed",
        atomic_load(&m->utts16), b.status[N - 1], (unsigned long long)st_b.processed);
  compare(sa, sb, &cd, &a, &b, N, "duplicate");
  dup = b;

  /* A linear mel in float16 (--log none, power 2, no norm): the full-scale tone's features pass
   * 65504 and it fails alike on both paths, with its failure record; the others are stored. */
  fc_mel_config lin = cfg;
  lin.dtype = FC_DTYPE_F16;
  lin.log = FC_LOG_NONE;
  lin.power = 2;
  lin.norm = FC_NORM_NONE;
  lin.preset[0] = '\0';
  fc_digest lcd;
  fc_mel_config_digest(&lin, &lcd);
  char sl[400], sm[400];
  snprintf(sl, sizeof sl, "%s/cpu-linear", dir);
  snprintf(sm, sizeof sm, "%s/staged-linear", dir);
  run(sl, &lin, &items, N - 1, 0, 0, &a, &st_a);
  run(sm, &lin, &items, N - 1, 1, 0, &b, &st_b);
  unsigned past = 0;
  for (int i = 0; i < N - 1; i++) past += strstr(b.reason[i], "past float16's range") != NULL;
  CHECK(past == 1 && strstr(b.reason[N - 2], "past float16's range") &&
            st_b.processed == stored - 1,
        "linear f16: %u past f16's range (want 1: the tone), %llu stored (want %u)", past,
        (unsigned long long)st_b.processed, stored - 1);
  compare(sl, sm, &lcd, &a, &b, N - 1, "linear f16");

  /* --max-seconds: the longer files fail with the CPU path's reason; no room reserved for them. */
  char sc[400], sd[400];
  snprintf(sc, sizeof sc, "%s/cpu-max", dir);
  snprintf(sd, sizeof sd, "%s/staged-max", dir);
  max_seconds = 0.3;
  run(sc, &cfg, &items, N - 1, 0, 0, &a, &st_a);
  run(sd, &cfg, &items, N - 1, 1, 0, &b, &st_b);
  unsigned too_long = 0;
  for (int i = 0; i < N - 1; i++) too_long += strstr(b.reason[i], "s long, over the 0.3") != NULL;
  /* over 0.3 s: f01, f03, f04, f08; int16 into the ring: f00, f02, f05, f06, f07, the full-scale
   * tone and the file with samples past its stated data (the others that are stored are decoded
   * by libsndfile, as floats), and the AGAIN ones (two joined, two data chunks) given back */
  CHECK(too_long == 4 && atomic_load(&m->utts16) == 7 + want_again,
        "max-seconds: %u over the limit (want 4), %u int16 utterances launched (want %u)", too_long,
        atomic_load(&m->utts16), 7 + want_again);
  compare(sc, sd, &cd, &a, &b, N - 1, "max-seconds");
  max_seconds = 0;

  /* stored again by another run between the lookup and the commit, its entry kept all along */
  if (fault_built() && getenv("FC_BIN")) {
    char se[400], sf[400];
    snprintf(se, sizeof se, "%s/cpu-again", dir);
    snprintf(sf, sizeof sf, "%s/staged-again", dir);
    stored_again_meanwhile(se, paths[0], &cfg, 0, 1, &a, &st_a);
    stored_again_meanwhile(sf, paths[0], &cfg, 1, 2, &b, &st_b);
    CHECK(a.status[0] == FC_ITEM_STORED && st_a.processed == 1,
          "stored again meanwhile: CPU path status %d, %llu processed, want stored, 1", a.status[0],
          (unsigned long long)st_a.processed);
    CHECK(b.status[0] == a.status[0] && st_b.processed == st_a.processed &&
              st_b.skipped_existing == st_a.skipped_existing,
          "stored again meanwhile: staged status %d, %llu processed, %llu already stored; the CPU "
          "path's %d, %llu, %llu",
          b.status[0], (unsigned long long)st_b.processed,
          (unsigned long long)st_b.skipped_existing, a.status[0],
          (unsigned long long)st_a.processed, (unsigned long long)st_a.skipped_existing);
  } else {
    printf(
        "test_featurize_staging_inputs: the file stored again meanwhile skipped: no fault stop "
        "sites (-DFC_FAULT_INJECTION=ON) or no FC_BIN\n");
  }

  printf(
      "%d inputs (%u stored, %u failed, %u read straight into the ring, then a duplicate "
      "linked): the staging path's events, entries, records and failure records are the CPU "
      "path's, in four runs, with a linear f16 config and with --max-seconds\n",
      N - 1, stored, failed, direct);
  for (int i = 0; i < N; i++) {
    const seen *e = i < N - 1 ? &first : &dup;
    printf("  f%02d %-55s %s%s%s\n", i, inputs[i].what,
           e->status[i] == FC_ITEM_FAILED   ? "failed: "
           : e->status[i] == FC_ITEM_LINKED ? "linked"
                                            : "stored",
           e->reason[i],
           inputs[i].route == DIRECT  ? " (read into the ring)"
           : inputs[i].route == AGAIN ? " (read into the ring, then again)"
                                      : "");
  }
  fc_item_list_free(&items);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("test_featurize_staging_inputs");
}
