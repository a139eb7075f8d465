/* The harness of scripts/bench-host: one featurize run, the real pipeline (fz_pipeline_run), with one of
 * three backends, over a list of audio files into a fresh store; prints one JSON object.
 *
 *   bench-host-harness ROW LIST STORE JOBS WRITERS DTYPE
 *
 * ROW is
 *   cpu           the CPU backend (FFTW), as `featurize --device cpu`;
 *   cpu-nomel     the CPU path with its mel replaced by a fill: every stage of the CPU path but the
 *                 feature math (read, hash, decode, the record, its checksum, the writers);
 *   staging-null  the GPU path up to the device boundary: the same code as `--device cuda` (the
 *                 staging ring with the CUDA ring's geometry, FC_CUDA_RING included, the
 *                 launch and completion threads, the writers), with a backend whose launch and
 *                 finish cost nothing: its staging and output buffers have all their pages
 *                 when made (as pinned memory does), the
 *                 first chunk's at open and the others' as the pipeline grows the ring (as the
 *                 CUDA backend makes them), a launch returns at once, a finish hands back the
 *                 output buffer as it is; with FC_BENCH_OPEN_SECONDS, its open takes that long
 *                 (busy), standing in for a GPU's start-up;
 *   floor         the data's own cost, on one thread, outside the pipeline: each file read with
 *                 one pread into a 64 MiB ring and hashed (XXH3-128, the audio digest); its
 *                 features' bytes (hifigan frames of its samples, the dtype's size) copied from a
 *                 64 MiB "device output" into a batch buffer and checksummed (XXH3-64, the record
 *                 checksum); each 2.5 MiB batch written with one pwrite at the end of a new file
 *                 STORE/floor.data (no LMDB, no sync). What any host path moves per utterance.
 * LIST holds one path per line (the floor row: 16-bit mono WAVs at the config's rate, as
 * audio_pcm16_view takes them); STORE must not exist (WRITERS >= 2: a split store of that many
 * parts; 0: featurize's default for a new store, fc_featurize_default_writers, on the device the
 * row stands for: cuda for staging-null). DTYPE is f32, f16 or bf16.
 *
 * Prints: the run's counts and stage split (fc_featurize_stats), its wall seconds, and getrusage
 * over the run alone (user + system CPU seconds of every thread of the process, voluntary and
 * involuntary context switches; cores_busy: those CPU seconds over the wall seconds, the cores
 * the run kept busy on average); cpu_computed, the utterances the CPU computed (a staging row's
 * hybrid start); sched, the scheduling policy it ran under ("fifo" when started under SCHED_FIFO,
 * as bench-host --sched fifo starts it; its threads inherit it), else "other".
 *
 * A benchmark harness (built beside the tools, linked to the static library for the internal
 * fz_pipeline_run): no tool or library call can make a store of fake features. Not installed. */
#include "featcache/fc_featurize.h"
#include "featcache/fc_format.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_store.h"
#include "libcache/mel/featurize/audio_int.h"
#include "libcache/mel/featurize/featurize_backend.h"

#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- cpu-nomel: the CPU backend's compute replaced by a fill ------------------------------------ */
typedef struct nomel {
  fc_mel_config cfg;
} nomel;

static int nomel_open(const fc_mel_config *cfg, const fc_device *dev, unsigned workers,
                      void **state, char *why, size_t why_len) {
  (void)dev, (void)workers, (void)why, (void)why_len;
  nomel *m = calloc(1, sizeof *m);
  if (!m) return ENOMEM;
  m->cfg = *cfg;
  *state = m;
  return 0;
}

static int nomel_compute(void *state, unsigned worker, const float *x, size_t n, float *out) {
  (void)worker, (void)x;
  const nomel *m = state;
  const size_t v = (size_t)fc_mel_num_frames(&m->cfg, n) * m->cfg.n_mels;
  for (size_t i = 0; i < v; i++) out[i] = -11.5129f; /* ln(1e-5): silence under hifigan */
  return 0;
}

static void nomel_close(void *state) { free(state); }

static const fc_fz_backend nomel_backend = {.name = "cpu-nomel",
                                            .producer = FC_PRODUCER_CPU,
                                            .open = nomel_open,
                                            .compute = nomel_compute,
                                            .close = nomel_close};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- staging-null: a staging backend whose launch and finish cost nothing ----------------------- */
typedef struct null_stage {
  fc_fz_stage_info info;
  size_t out_bytes;
  void **staging, **out;
} null_stage;

static unsigned ring_chunks; /* the ring staging-null made (its JSON); 0 for the other rows */
static size_t ring_samples;
static int ring_early; /* FC_CUDA_RING's ":early" (the JSON's ring_refill) */
static int ring_commit; /* FC_CUDA_RING's ":commit" (the JSON's ring_hold) */

static void null_close(void *state) {
  null_stage *z = state;
  if (!z) return;
  for (unsigned i = 0; i < z->info.chunks; i++) {
    if (z->staging && z->staging[i]) munmap(z->staging[i], z->info.capacity * sizeof(float));
    if (z->out && z->out[i]) munmap(z->out[i], z->out_bytes);
  }
  free(z->staging);
  free(z->out);
  free(z);
}

/* Memory whose pages are all there when it is made, as pinned memory's are (cudaHostAlloc). A
 * malloc and a memset of zeros would not do: the compiler makes them a calloc, whose fresh pages
 * the first read into staging would fault in instead. */
static void *populated(size_t n) {
  void *p =
      mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Chunk k's buffers, their pages made as pinned memory's are when it is allocated. */
static int null_grow(void *state, unsigned k) {
  null_stage *z = state;
  if (k >= z->info.chunks || z->staging[k]) return EINVAL;
  const size_t sb = z->info.capacity * sizeof(float);
  void *staging = populated(sb), *out = populated(z->out_bytes);
  if (!staging || !out) {
    if (staging) munmap(staging, sb);
    if (out) munmap(out, z->out_bytes);
    return ENOMEM;
  }
  memset(out, 0x3c, z->out_bytes); /* the "features": any bytes, written once */
  z->staging[k] = staging;
  z->out[k] = out;
  return 0;
}

static int null_open(const fc_mel_config *cfg, const fc_device *dev, unsigned workers, void **state,
                     char *why, size_t why_len) {
  (void)dev;
  /* FC_BENCH_OPEN_SECONDS: the GPU's start-up (its context, the first chunk's pinned and device
   * memory: 0.2-0.35 s on H200 machines) stood in for by that long on this thread, busy (the
   * CUDA driver's start-up is mostly the CPU's: on two cores it takes one from the workers), so
   * that a start-up the workers compute beside (featurize's hybrid start) is measured here. */
  const char *os = getenv("FC_BENCH_OPEN_SECONDS");
  const double busy = os ? strtod(os, NULL) : 0;
  for (const double until = now_s() + busy; busy > 0 && now_s() < until;) {}
  null_stage *z = calloc(1, sizeof *z);
  if (!z) return ENOMEM;
  int rc = fz_cuda_stage_geometry(cfg, workers, &z->info, why, why_len); /* as CUDA's */
  if (rc) {
    free(z);
    return rc;
  }
  z->out_bytes =
      (size_t)z->info.max_frames * cfg->n_mels * fc_dtype_size(fc_dtype_decoded(cfg->dtype));
  z->staging = calloc(z->info.chunks, sizeof *z->staging);
  z->out = calloc(z->info.chunks, sizeof *z->out);
  ring_chunks = z->info.chunks;
  ring_samples = z->info.capacity;
  ring_early = z->info.early_refill;
  ring_commit = z->info.hold_to_commit;
  rc = z->staging && z->out ? null_grow(z, 0) : ENOMEM; /* the rest: null_grow */
  if (rc) {
    null_close(z);
    snprintf(why, why_len, "out of memory for the staging buffers");
    return rc;
  }
  *state = z;
  return 0;
}

static void null_stage_info(void *state, fc_fz_stage_info *info) {
  *info = ((null_stage *)state)->info;
}

static void *null_stage_buffer(void *state, unsigned chunk) {
  null_stage *z = state;
  return chunk < z->info.chunks ? z->staging[chunk] : NULL; /* NULL until made */
}

static int null_launch(void *state, unsigned chunk, const fc_fz_launch *l) {
  (void)state, (void)chunk, (void)l;
  return 0;
}

static int null_finish(void *state, unsigned chunk, const void **out) {
  *out = ((null_stage *)state)->out[chunk];
  return 0;
}

static const fc_fz_backend null_backend = {.name = "staging-null",
                                           .producer = FC_PRODUCER_CUDA,
                                           .open = null_open,
                                           .close = null_close,
                                           .stage_info = null_stage_info,
                                           .stage_buffer = null_stage_buffer,
                                           .stage_grow = null_grow,
                                           .launch = null_launch,
                                           .finish = null_finish};

/* ---- the run ------------------------------------------------------------------------------------ */
static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double tv(struct timeval t) { return (double)t.tv_sec + t.tv_usec * 1e-6; }

static void usage(void) {
  fprintf(stderr,
          "usage: bench-host-harness cpu|cpu-nomel|staging-null|floor LIST STORE JOBS WRITERS "
          "f32|f16|bf16\n");
  exit(2);
}

/* ---- floor: the data's own cost --------------------------------------------------------------- */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall_now(void);

/* The run, its wall seconds and the getrusage around it (after the buffers are made). */
static int floor_run(const fc_item_list *items, const char *store, const fc_mel_config *cfg,
                     fc_featurize_stats *st, double *wall, struct rusage *r0, struct rusage *r1) {
  enum { RING = 64 << 20, BATCH = 5 << 19 };
  const size_t dsize = fc_dtype_size(cfg->dtype);
  uint8_t *ring = malloc(RING), *out = malloc(RING), *batch = malloc(BATCH + RING);
  char path[4200];
  snprintf(path, sizeof path, "%s/floor.data", store);
  int rc = ring && out && batch && mkdir(store, 0755) == 0 ? 0 : errno ? errno : ENOMEM;
  int fd = rc ? -1 : open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!rc && fd < 0) rc = errno;
  if (!rc) { /* touched first, as the pinned buffers are */
    memset(ring, 0, RING);
    memset(out, 0x3c, RING);
  }
  size_t at = 0, from = 0, fill = 0;
  uint64_t sum = 0, file_off = 0;
  getrusage(RUSAGE_SELF, r0);
  const double w0 = wall_now();
  double t = cpu_now(), u; /* each stage's thread CPU seconds, as the pipeline counts them */
  for (size_t i = 0; i < items->count && !rc; i++) {
    int in = open(items->items[i].path, O_RDONLY);
    struct stat sb;
    if (in < 0 || fstat(in, &sb) != 0 || sb.st_size <= 0 || sb.st_size > RING / 2) {
      rc = in < 0 ? errno : EINVAL;
      if (in >= 0) close(in);
      break;
    }
    const size_t len = (size_t)sb.st_size;
    if (at + len > RING) at = 0;
    const ssize_t got = pread(in, ring + at, len, 0);
    close(in);
    const void *pcm;
    size_t n = 0;
    fc_audio_info info;
    char why[256];
    if (got != (ssize_t)len || audio_pcm16_view(ring + at, len, cfg->sample_rate, 0, &pcm, &n,
                                                &info, why, sizeof why) != 1) {
      rc = EINVAL;
      break;
    }
    st->read_seconds += (u = cpu_now()) - t;
    t = u;
    fc_digest d;
    fc_digest_buffer(ring + at, len, &d);
    sum += d.bytes[0];
    at += (len + 63) & ~(size_t)63;
    const uint64_t frames = fc_mel_num_frames(cfg, n);
    const size_t bytes = (size_t)frames * cfg->n_mels * dsize;
    st->hash_seconds += (u = cpu_now()) - t;
    t = u;
    if (from + bytes > RING) from = 0;
    memcpy(batch + fill, out + from, bytes); /* the features out of the device's output */
    sum += fc_hash64(batch + fill, bytes);
    from += bytes;
    fill += bytes;
    if (fill >= BATCH || i + 1 == items->count) {
      if (pwrite(fd, batch, fill, (off_t)file_off) != (ssize_t)fill) rc = errno ? errno : EIO;
      file_off += fill;
      fill = 0;
      st->committed_batches++;
    }
    st->write_seconds += (u = cpu_now()) - t;
    t = u;
    st->processed++;
    st->audio_seconds += (double)n / cfg->sample_rate;
  }
  if (fd >= 0) close(fd);
  *wall = wall_now() - w0;
  getrusage(RUSAGE_SELF, r1);
  free(ring);
  free(out);
  free(batch);
  st->total = items->count;
  st->workers = st->writers = 1;
  st->bound = sum == 1 ? "" : "floor"; /* (sum keeps the hashing from being optimized away) */
  return rc;
}

/* The run's JSON object on stdout. */
static int report(const char *row, const fc_featurize_stats *st, double wall,
                  const struct rusage *r0, const struct rusage *r1, const char *dtype_name) {
  const double user = tv(r1->ru_utime) - tv(r0->ru_utime),
               sys = tv(r1->ru_stime) - tv(r0->ru_stime);
  const long vcs = r1->ru_nvcsw - r0->ru_nvcsw, ics = r1->ru_nivcsw - r0->ru_nivcsw;
  const double hours = st->audio_seconds / 3600;
  printf(
      "{\"name\":\"%s\",\"utterances\":%llu,\"audio_seconds\":%.3f,\"wall_seconds\":%.6f,"
      "\"x_realtime\":%.1f,\"user_seconds\":%.4f,\"sys_seconds\":%.4f,"
      "\"host_cpu_s_per_audio_hour\":%.5f,\"cores_busy\":%.4f,\"voluntary_ctx_switches\":%ld,"
      "\"involuntary_ctx_switches\":%ld,\"ctx_switches_per_utt\":%.4f,"
      "\"stages\":{\"setup\":%.6f,\"read\":%.6f,\"hash\":%.6f,\"decode\":%.6f,\"staging\":%.6f,"
      "\"compute\":%.6f,\"write\":%.6f},\"waits\":{\"workers_on_writer\":%.6f,"
      "\"workers_on_device\":%.6f,\"writer_on_workers\":%.6f},\"workers\":%u,\"writers\":%u,\"commits\":%llu,"
      "\"dtype\":\"%s\",\"bound\":\"%s\",\"ring_chunks\":%u,\"ring_samples\":%zu,"
      "\"ring_refill\":\"%s\",\"ring_hold\":\"%s\",\"cpu_computed\":%llu,\"sched\":\"%s\"}\n",
      row, (unsigned long long)st->processed, st->audio_seconds, wall, st->audio_seconds / wall,
      user, sys, (user + sys) / hours, wall > 0 ? (user + sys) / wall : 0.0, vcs, ics,
      (double)(vcs + ics) / (double)st->processed, st->setup_seconds, st->read_seconds,
      st->hash_seconds, st->decode_seconds, st->staging_seconds, st->compute_seconds,
      st->write_seconds, st->queue_wait_seconds - st->device_wait_seconds, st->device_wait_seconds,
      st->writer_wait_seconds, st->workers, st->writers, (unsigned long long)st->committed_batches,
      dtype_name, st->bound, ring_chunks, ring_samples, ring_early ? "early" : "late",
      ring_commit ? "commit" : "record", (unsigned long long)st->cpu_computed,
      sched_getscheduler(0) == SCHED_FIFO ? "fifo" : "other");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 7) usage();
  mallopt(M_MMAP_THRESHOLD, 32 << 20); /* as the featurize tool's main does */
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  const char *row = argv[1], *list = argv[2], *store = argv[3], *dtype_name = argv[6];
  const unsigned jobs = (unsigned)strtoul(argv[4], NULL, 10),
                 writers = (unsigned)strtoul(argv[5], NULL, 10);
  const fc_fz_backend *be = NULL;
  fc_device_kind kind = FC_DEVICE_CPU;
  if (strcmp(row, "cpu") == 0) {
    be = NULL;
  } else if (strcmp(row, "cpu-nomel") == 0) {
    be = &nomel_backend;
  } else if (strcmp(row, "staging-null") == 0) {
    be = &null_backend;
    kind = FC_DEVICE_CUDA; /* what it stands in for: the GPU path's accounting and defaults */
  } else if (strcmp(row, "floor") != 0) {
    usage();
  }
  if (jobs < 1 || jobs > 256) usage();
  fc_mel_config cfg;
  if (fc_mel_preset("hifigan", &cfg) != 0) return 1;
  if (strcmp(dtype_name, "f32") == 0)
    cfg.dtype = FC_DTYPE_F32;
  else if (strcmp(dtype_name, "f16") == 0)
    cfg.dtype = FC_DTYPE_F16;
  else if (strcmp(dtype_name, "bf16") == 0)
    cfg.dtype = FC_DTYPE_BF16;
  else
    usage();

  FILE *lf = fopen(list, "r");
  if (!lf) {
    perror(list);
    return 2;
  }
  fc_item_list items;
  int rc = fc_items_from_stream(lf, &items);
  fclose(lf);
  if (rc) {
    fprintf(stderr, "bench-host-harness: %s: %s\n", list, fc_strerror(rc));
    return 2;
  }
  char why[512] = "";
  fc_featurize_stats st;
  struct rusage r0, r1;
  double wall;
  if (strcmp(row, "floor") == 0) {
    memset(&st, 0, sizeof st);
    rc = floor_run(&items, store, &cfg, &st, &wall, &r0, &r1);
    fc_item_list_free(&items);
    if (rc) {
      fprintf(stderr, "bench-host-harness: floor: %s: %s\n", store, strerror(rc));
      return 1;
    }
    return report(row, &st, wall, &r0, &r1, dtype_name);
  }
  fc_store **parts = NULL;
  unsigned n_parts = 0;
  fc_device dev = {.kind = kind};
  const unsigned want =
      writers ? writers : fc_featurize_default_writers(&dev, items.items, items.count, jobs, 0);
  /* Opened as the featurize tool opens a store (each commit's pages synced). */
  rc = fc_store_open_split(store, FC_STORE_CREATE | FC_STORE_NOMETASYNC, want, &parts, &n_parts,
                           why, sizeof why);
  if (rc) {
    fprintf(stderr, "bench-host-harness: %s: %s\n", store, why[0] ? why : fc_strerror(rc));
    return 2;
  }
  fc_featurize_opts o;
  fc_featurize_opts_init(&o);
  o.jobs = jobs;
  o.device.kind = kind;
  o.parts = parts;
  o.n_parts = n_parts;
  getrusage(RUSAGE_SELF, &r0);
  double t0 = wall_now();
  rc = fz_pipeline_run(parts[0], &cfg, items.items, items.count, &o, be, &st, why, sizeof why);
  wall = wall_now() - t0;
  getrusage(RUSAGE_SELF, &r1);
  fc_store_close_split(parts, n_parts);
  fc_item_list_free(&items);
  if (rc || st.failed || st.processed != st.total) {
    fprintf(stderr, "bench-host-harness: %s: rc %d (%s), %llu of %llu stored, %llu failed\n", row,
            rc, why[0] ? why : fc_strerror(rc), (unsigned long long)st.processed,
            (unsigned long long)st.total, (unsigned long long)st.failed);
    return 1;
  }
  return report(row, &st, wall, &r0, &r1, dtype_name);
}
