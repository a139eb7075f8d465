/* Devices for featurize: parsing "auto|cpu|cuda[:N]", resolving them against this build, and the
 * backend tables (featurize_backend.h). Everything that knows which devices exist is here. */
#include "libcache/mel/featurize/featurize_backend.h"
#include "formats/common/args.h"

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_ring.h"
#include "formats/common/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int set_why(char *why, size_t why_len, int rc, const char *fmt, ...) {
  if (why && why_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
  }
  return rc;
}

int fc_device_parse(const char *spec, fc_device *out, char *why, size_t why_len) {
  FC_ARGS_WHY(out);
  if (why && why_len) why[0] = '\0';
  memset(out, 0, sizeof *out);
  if (!spec) spec = "";
  if (strcmp(spec, "auto") == 0) {
    out->kind = FC_DEVICE_AUTO;
    return 0;
  }
  if (strcmp(spec, "cpu") == 0) {
    out->kind = FC_DEVICE_CPU;
    return 0;
  }
  if (strncmp(spec, "cuda", 4) == 0) {
    out->kind = FC_DEVICE_CUDA;
    if (spec[4] == '\0') return 0;
    if (spec[4] == ':' && spec[5] >= '0' && spec[5] <= '9') {
      char *end;
      errno = 0;
      long v = strtol(spec + 5, &end, 10);
      if (!*end && !errno && v >= 0 && v <= 1023) {
        out->index = (int)v;
        return 0;
      }
    }
  }
  return set_why(why, why_len, FC_ECONFIG, "unknown device '%s' (want auto, cpu, cuda or cuda:N)",
                 spec);
}

/* auto: the first CUDA device when one is usable, else the CPU with the reason in why (the tool
 * prints it at -v). cuda[:N]: that device or FC_ENODEVICE with the runtime's reason. */
int fc_device_resolve(const fc_device *want, fc_device *got, char *why, size_t why_len) {
  FC_ARGS_WHY(want, got);
  if (why && why_len) why[0] = '\0';
  memset(got, 0, sizeof *got);
  int n = 0;
  char reason[256] = "";
  switch (want->kind) {
  case FC_DEVICE_AUTO:
    if (cuda_device_count(&n, reason, sizeof reason) == 0 && n > 0) {
      got->kind = FC_DEVICE_CUDA;
      got->index = 0;
      return 0;
    }
    got->kind = FC_DEVICE_CPU;
    set_why(why, why_len, 0, "%s", reason);
    return 0;
  case FC_DEVICE_CPU: got->kind = FC_DEVICE_CPU; return 0;
  case FC_DEVICE_CUDA:
    if (cuda_device_count(&n, reason, sizeof reason) != 0)
      return set_why(why, why_len, FC_ENODEVICE, "%s", reason);
    if (want->index >= n)
      return set_why(why, why_len, FC_ENODEVICE,
                     "no CUDA device: device %d does not exist (%d present)", want->index, n);
    *got = *want;
    return 0;
  }
  return set_why(why, why_len, FC_ECONFIG, "unknown device kind %d", (int)want->kind);
}

/* Auto's rule (docs/featurize.md "Choosing the device"): the CPU path runs at ~3000x realtime per
 * core; the GPU's start-up costs 0.3-0.6 s. Below about one second of CPU work the start-up would
 * dominate, so the default threshold is that second: 3000 s of audio per worker. */
enum { AUTO_CPU_RATE = 3000, AUTO_BYTES_PER_SECOND = 44100 };

/* The threshold of a large job, in seconds of audio: gpu_min_seconds as fc_featurize_choose_device
 * takes it. */
static double large_job_seconds(unsigned jobs, double gpu_min_seconds) {
  return gpu_min_seconds > 0   ? gpu_min_seconds
         : gpu_min_seconds < 0 ? 0
                               : (double)AUTO_CPU_RATE * (jobs ? jobs : 1);
}

/* The input files' bytes, counted until `need` (stat; a huge list costs little). */
static double input_bytes_up_to(const fc_item *items, size_t n, double need) {
  double bytes = 0;
  for (size_t i = 0; i < n && bytes < need; i++) {
    struct stat sb;
    if (items[i].path && !items[i].err && stat(items[i].path, &sb) == 0 && S_ISREG(sb.st_mode))
      bytes += (double)sb.st_size;
  }
  return bytes;
}

/* How many of the GPUs the NVIDIA driver lists — a directory per GPU in /proc/driver/nvidia/gpus
 * (FC_NVIDIA_GPUS_DIR names another, for tests) — the CUDA runtime would show, told without
 * starting it: its cuInit alone takes ~0.1 s on a GPU machine (docs/featurize.md "Choosing the
 * device"). CUDA_VISIBLE_DEVICES, when set, must be distinct device numbers among the listed ones
 * (then: how many it names); anything else (UUIDs, MIG names, a number past the list, an empty
 * value) is the runtime's to read: 0, as when the directory cannot be read. */
static int gpus_listed(void) {
  const char *dir = getenv("FC_NVIDIA_GPUS_DIR");
  DIR *d = opendir(dir && *dir ? dir : "/proc/driver/nvidia/gpus");
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  if (!v) return n;
  unsigned long long seen = 0; /* the numbers named (n <= 64 here) */
  int k = 0;
  for (const char *p = v;; p++) {
    char *end;
    errno = 0;
    const long g = strtol(p, &end, 10);
    if (end == p || errno || g < 0 || g >= n || g >= 64 || (seen >> g & 1) ||
        (*end != ',' && *end != '\0'))
      return 0;
    seen |= 1ull << g, k++;
    if (!*(p = end)) return k;
  }
}

/* The device taken for want without starting the runtime: the runtime starts when the job opens
 * it (on the opener thread under a hybrid start), and a device it cannot use then falls back to
 * the CPU (auto) or stops the job (cuda), as a device that fails to start does. */
static int take_listed(int index, fc_device *got, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  memset(got, 0, sizeof *got);
  got->kind = FC_DEVICE_CUDA;
  got->index = index;
  return 0;
}

int fc_featurize_choose_device(const fc_device *want, const fc_item *items, size_t n, unsigned jobs,
                               double gpu_min_seconds, fc_device *got, char *why, size_t why_len) {
  FC_ARGS_WHY(want, items || !n, got);
  if (want->kind == FC_DEVICE_CUDA && cuda_built() && want->index < gpus_listed())
    return take_listed(want->index, got, why, why_len);
  if (want->kind != FC_DEVICE_AUTO || !cuda_built())
    return fc_device_resolve(want, got, why, why_len);
  if (why && why_len) why[0] = '\0';
  const double min_s = large_job_seconds(jobs, gpu_min_seconds);
  const double need = min_s * AUTO_BYTES_PER_SECOND;
  const double bytes = input_bytes_up_to(items, n, need);
  if (bytes < need) {
    memset(got, 0, sizeof *got);
    got->kind = FC_DEVICE_CPU;
    /* as many decimals as tell the two apart ("about 1 s, below the 1 s" would not) and show the
     * threshold as given */
    const double est = bytes / AUTO_BYTES_PER_SECOND;
    int d = 0;
    for (char a[64], b[64]; d < 6; d++) {
      snprintf(a, sizeof a, "%.*f", d, est);
      snprintf(b, sizeof b, "%.*f", d, min_s);
      if (strcmp(a, b) != 0 && strtod(b, NULL) == min_s) break;
    }
    set_why(why, why_len, 0,
            "small job: about %.*f s of audio, below the %.*f s for which the GPU's start-up pays "
            "off",
            d, est, d, min_s);
    return 0;
  }
  if (gpus_listed() > 0) return take_listed(0, got, why, why_len);
  return fc_device_resolve(want, got, why, why_len);
}

/* The rule of docs/featurize.md "Several writers". A GPU job's host work is about half the
 * writers' (copying features into the store's pages, LMDB puts and commits) and half the workers'
 * (read, hash, staging), so writers balance at about one per two workers; at least two, so that one
 * commits while another copies out of the ring (a chunk stays held until its utterances' records
 * are in the store's pages). A CPU job's writers do about a sixth of its work (the FFTs are the
 * rest): one writer per four workers keeps them ahead. More than 8 parts only adds environments. */
unsigned fc_featurize_default_writers(const fc_device *dev, const fc_item *items, size_t n,
                                      unsigned jobs, double gpu_min_seconds) {
  FC_ARGS_OR(1, dev, items || !n);
  if (!jobs) jobs = 1;
  const double need = large_job_seconds(jobs, gpu_min_seconds) * AUTO_BYTES_PER_SECOND;
  if (need > 0 && input_bytes_up_to(items, n, need) < need) return 1; /* a small job */
  unsigned w = dev->kind == FC_DEVICE_CUDA ? (jobs + 1) / 2 : jobs / 4;
  const unsigned lo = dev->kind == FC_DEVICE_CUDA ? 2 : 1;
  return w < lo ? lo : w > 8 ? 8 : w;
}

int fz_cuda_start_env(const fc_item *items, size_t n, int streamed, unsigned jobs,
                      double gpu_min_seconds, int *hybrid, char *why, size_t why_len) {
  const char *e = getenv("FC_CUDA_START");
  *hybrid = 0;
  if (e && strcmp(e, "hybrid") == 0) {
    *hybrid = 1;
  } else if (e && strcmp(e, "wait") == 0) {
  } else if (!e || !*e || strcmp(e, "auto") == 0) {
    const double need = large_job_seconds(jobs ? jobs : 1, gpu_min_seconds) * AUTO_BYTES_PER_SECOND;
    *hybrid = streamed || input_bytes_up_to(items, n, need) >= need;
  } else {
    return set_why(why, why_len, FC_ECONFIG,
                   "FC_CUDA_START '%s': want hybrid, wait or auto (the default)", e);
  }
  return 0;
}

const char *fc_device_name(const fc_device *d, char *buf, size_t buf_len) {
  FC_ARGS_OR(NULL, d, buf || !buf_len);
  switch (d->kind) {
  case FC_DEVICE_AUTO: snprintf(buf, buf_len, "auto"); break;
  case FC_DEVICE_CPU: snprintf(buf, buf_len, "cpu"); break;
  case FC_DEVICE_CUDA: snprintf(buf, buf_len, "cuda:%d", d->index); break;
  default: snprintf(buf, buf_len, "?"); break;
  }
  return buf;
}

/* ---- the CPU backend: one fc_mel_plan per worker (clones share the tables and FFTW plans) ---- */
typedef struct cpu_state {
  unsigned workers;
  fc_mel_plan *plans[];
} cpu_state;

static void cpu_close(void *state) {
  cpu_state *c = state;
  if (!c) return;
  for (unsigned i = 0; i < c->workers; i++) fc_mel_plan_free(c->plans[i]);
  free(c);
}

static int cpu_open(const fc_mel_config *cfg, const fc_device *dev, unsigned workers, void **state,
                    char *why, size_t why_len) {
  (void)dev;
  *state = NULL;
  if (workers == 0) workers = 1;
  cpu_state *c = fc_calloc(1, sizeof *c + workers * sizeof c->plans[0]);
  if (!c) return ENOMEM;
  c->workers = workers;
  int rc = fc_mel_plan_create(cfg, &c->plans[0]);
  for (unsigned i = 1; i < workers && !rc; i++) rc = fc_mel_plan_clone(c->plans[0], &c->plans[i]);
  if (rc) {
    cpu_close(c);
    return set_why(why, why_len, rc, "cannot plan the mel computation: %s", fc_strerror(rc));
  }
  *state = c;
  return 0;
}

static int cpu_compute(void *state, unsigned worker, const float *x, size_t n, float *out) {
  cpu_state *c = state;
  return fc_mel_compute(c->plans[worker], x, n, out);
}

static const fc_fz_backend cpu_backend = {.name = "cpu",
                                          .producer = FC_PRODUCER_CPU,
                                          .open = cpu_open,
                                          .compute = cpu_compute,
                                          .close = cpu_close};

/* ---- the CUDA backend: a ring plan fed by the pipeline's staging ring (featurize_stage.c) ------ */
/* The ring by default: one chunk of 2 Mi samples (~95 s at 22.05 kHz; a longer utterance is
 * computed on the CPU by its worker) per worker, 4 to 16 chunks, each with its own pinned staging
 * buffer, device buffers and cuFFT plans, a chunk's staging refilled as soon as the GPU is done
 * with it (early refill, its next launch waiting for the writers). On H200 machines at -j 16 over
 * 40 h, 16 such chunks ran f32 at 1.00-1.12x and f16 at 1.03-1.18x the earlier 4 x 4 Mi refilled
 * once committed, never below it; on 2 cores (-j 2, the host side without a GPU) 16 chunks cost
 * ~10 % more host CPU than 4, whose wake-ups a few workers cannot spread (docs/BENCHMARKS.md
 * "featurize on the GPU"). open makes the first (with the context and the tables); the pipeline's
 * grower thread the others while the first fills (cuda_stage_grow). */
enum { CUDA_RING_MIN_CHUNKS = 4 };
#define CUDA_RING_SAMPLES ((size_t)2 << 20)

static int cuda_open(const fc_mel_config *cfg, const fc_device *dev, unsigned workers, void **state,
                     char *why, size_t why_len) {
  unsigned chunks;
  size_t samples;
  int rc = fz_cuda_ring_env(workers, &chunks, &samples, NULL, NULL, why, why_len); /* stage_info */
  if (rc) return rc;
  rc = cuda_ring_create(cfg, dev->index, samples, chunks, 1, (fc_cuda_plan **)state);
  if (rc) set_why(why, why_len, rc, "%s", cuda_last_error());
  return rc;
}

/* A count with an optional binary suffix (K: 1024, M: 1048576) into *v; 0 when it is not one. */
static int ring_count(const char *s, const char *end, uint64_t *v) {
  uint64_t n = 0, unit = 1;
  const char *q = s;
  for (; q < end && *q >= '0' && *q <= '9'; q++)
    if ((n = n * 10 + (uint64_t)(*q - '0')) > UINT64_C(1) << 40) return 0; /* past any limit */
  if (q == s) return 0;
  if (q + 1 == end && (*q == 'K' || *q == 'k'))
    unit = 1024, q++;
  else if (q + 1 == end && (*q == 'M' || *q == 'm'))
    unit = 1024 * 1024, q++;
  if (q != end) return 0;
  *v = n * unit;
  return 1;
}

int fz_cuda_ring_env(unsigned workers, unsigned *chunks, size_t *samples, int *early,
                     int *to_commit, char *why, size_t why_len) {
  *chunks = workers < CUDA_RING_MIN_CHUNKS ? CUDA_RING_MIN_CHUNKS
            : workers > FZ_RING_MAX_CHUNKS ? FZ_RING_MAX_CHUNKS
                                           : workers;
  *samples = CUDA_RING_SAMPLES;
  if (early) *early = 1;
  if (to_commit) *to_commit = 0;
  const char *e = getenv("FC_CUDA_RING");
  if (!e || !*e) return 0;
  const char *x = strchr(e, 'x'), *colon = strchr(e, ':');
  const char *end = colon ? colon : e + strlen(e);
  /* the suffixes: a refill (":early", ":late"), then ":commit", each at most once */
  const char *tail = colon ? colon : end;
  int late = 0, commit = 0, bad = 0;
  if (strncmp(tail, ":late", 5) == 0)
    late = 1, tail += 5;
  else if (strncmp(tail, ":early", 6) == 0)
    tail += 6;
  if (strcmp(tail, ":commit") == 0)
    commit = 1;
  else if (*tail)
    bad = 1;
  uint64_t c = 0, n = 0;
  if (bad || !x || x > end || !ring_count(e, x, &c) || !ring_count(x + 1, end, &n) || c < 1 ||
      c > FZ_RING_MAX_CHUNKS || n < FZ_RING_MIN_SAMPLES || n > FZ_RING_MAX_SAMPLES)
    return set_why(why, why_len, FC_ECONFIG,
                   "FC_CUDA_RING '%s': want CHUNKSxSAMPLES[:early|:late][:commit], 1 to %d chunks "
                   "of 64K to 32M samples (e.g. 16x2M, the default at -j 16)",
                   e, FZ_RING_MAX_CHUNKS);
  *chunks = (unsigned)c;
  *samples = (size_t)n;
  if (early) *early = !late;
  if (to_commit) *to_commit = commit;
  return 0;
}

static int cuda_stage_grow(void *state, unsigned chunk) { return cuda_ring_grow(state, chunk); }

int fz_cuda_stage_geometry(const fc_mel_config *cfg, unsigned workers, fc_fz_stage_info *info,
                           char *why, size_t why_len) {
  memset(info, 0, sizeof *info);
  unsigned chunks;
  size_t samples;
  int rc = fz_cuda_ring_env(workers, &chunks, &samples, &info->early_refill, &info->hold_to_commit,
                            why, why_len);
  if (rc) return rc;
  info->chunks = chunks;
  info->capacity = samples;
  info->max_frames = cuda_ring_max_frames(cfg, samples);
  info->max_utts = CUDA_RING_MAX_UTTS;
  info->launch_wait = 0; /* the pipeline's 2 ms */
  return 0;
}

static void cuda_stage_info(void *state, fc_fz_stage_info *info) {
  info->chunks = cuda_ring_slots(state);
  info->capacity = cuda_plan_max_samples(state);
  info->max_frames = cuda_ring_plan_frames(state);
  info->max_utts = cuda_ring_max_utts(state);
  info->launch_wait = 0; /* the pipeline's 2 ms */
  unsigned chunks; /* the ring's refill and hold, as FC_CUDA_RING said at open (checked there) */
  size_t samples;
  if (fz_cuda_ring_env(0, &chunks, &samples, &info->early_refill, &info->hold_to_commit, NULL, 0))
    info->early_refill = 0, info->hold_to_commit = 0;
}

static void *cuda_stage_buffer(void *state, unsigned chunk) {
  return cuda_ring_staging(state, chunk);
}

static int cuda_launch(void *state, unsigned chunk, const fc_fz_launch *l) {
  return cuda_ring_launch(state, chunk, l->count, l->sample_off, l->len, l->n16, l->nf, l->dtype);
}

static int cuda_finish(void *state, unsigned chunk, const void **out) {
  return cuda_ring_finish(state, chunk, out);
}

static void cuda_close(void *state) { cuda_plan_free(state); }

static void cuda_stage_event(void *state, unsigned chunk, int what) {
  cuda_ring_note(state, chunk,
                 what == FZ_STAGE_OPENED   ? "opened"
                 : what == FZ_STAGE_SEALED ? "sealed"
                                           : "released");
}

static const fc_fz_backend cuda_backend = {.name = "cuda",
                                           .producer = FC_PRODUCER_CUDA,
                                           .open = cuda_open,
                                           .close = cuda_close,
                                           .stage_info = cuda_stage_info,
                                           .stage_buffer = cuda_stage_buffer,
                                           .stage_grow = cuda_stage_grow,
                                           .launch = cuda_launch,
                                           .finish = cuda_finish,
                                           .stage_event = cuda_stage_event};

const fc_fz_backend *fz_backend_for(const fc_device *dev) {
  if (dev->kind == FC_DEVICE_CPU) return &cpu_backend;
  if (dev->kind == FC_DEVICE_CUDA && cuda_built()) return &cuda_backend;
  return NULL;
}
