/* The CUDA backend's host side (cuda_api.h): device query, plans, the batched two-stream pipeline
 * and the gatherer for featurize's worker threads. Plain C against the CUDA runtime and cuFFT C
 * APIs; the kernels are in mel_cuda.cu behind the launchers of mel_cuda.h.
 *
 * Compiled into the library in every build (kernels/cuda/CMakeLists.txt adds it to fc_objects);
 * without FC_HAVE_CUDA every entry point returns FC_ENODEVICE. */
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_int.h"
#include "kernels/cuda/cuda_ring.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[512];

int cuda_set_error(int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return rc;
}

/* Truncating on purpose: the reason is cut to the caller's buffer. */
static void copy_why(char *why, size_t why_len, const char *msg) {
  if (!why || !why_len) return;
  size_t n = strnlen(msg, why_len - 1);
  memcpy(why, msg, n);
  why[n] = '\0';
}

const char *cuda_last_error(void) { return last_error; }

#define set_error cuda_set_error

#ifndef FC_HAVE_CUDA
/* ---- a build without the backend ---------------------------------------------------------------- */
#define NO_BACKEND "this build has no CUDA backend"

int cuda_built(void) { return 0; }

int cuda_device_count(int *n, char *why, size_t why_len) {
  *n = 0;
  set_error(FC_ENODEVICE, "no CUDA device: " NO_BACKEND);
  copy_why(why, why_len, last_error);
  return FC_ENODEVICE;
}

int cuda_device_describe(int device, char *buf, size_t buf_len) {
  (void)device;
  copy_why(buf, buf_len, "no CUDA device: " NO_BACKEND);
  return set_error(FC_ENODEVICE, "no CUDA device: " NO_BACKEND);
}

int cuda_plan_create(const fc_mel_config *cfg, int device, size_t max_batch_samples,
                     fc_cuda_plan **out) {
  (void)cfg, (void)device, (void)max_batch_samples;
  *out = NULL;
  return set_error(FC_ENODEVICE, "no CUDA device: " NO_BACKEND);
}

void cuda_plan_free(fc_cuda_plan *p) { (void)p; }
const fc_mel_config *cuda_plan_config(const fc_cuda_plan *p) {
  (void)p;
  return NULL;
}
size_t cuda_plan_max_samples(const fc_cuda_plan *p) {
  (void)p;
  return 0;
}
void cuda_plan_bytes(const fc_cuda_plan *p, size_t *device_bytes, size_t *pinned_bytes) {
  (void)p;
  if (device_bytes) *device_bytes = 0;
  if (pinned_bytes) *pinned_bytes = 0;
}

int cuda_compute_batch(fc_cuda_plan *p, const float *const *pcm, const size_t *lens, size_t n_utts,
                       int dtype, void *const *out) {
  (void)p, (void)pcm, (void)lens, (void)n_utts, (void)dtype, (void)out;
  return set_error(FC_ENODEVICE, "no CUDA device: " NO_BACKEND);
}

int cuda_compute(fc_cuda_plan *p, const float *samples, size_t n, float *out) {
  (void)p, (void)samples, (void)n, (void)out;
  return set_error(FC_ENODEVICE, "no CUDA device: " NO_BACKEND);
}

int cuda_compute_batch_i16(fc_cuda_plan *p, const int16_t *const *pcm, const size_t *lens,
                           size_t n_utts, int dtype, void *const *out) {
  (void)p, (void)pcm, (void)lens, (void)n_utts, (void)dtype, (void)out;
  return set_error(FC_ENODEVICE, "no CUDA device: " NO_BACKEND);
}

int cuda_ring_create(const fc_mel_config *cfg, int device, size_t max_samples, unsigned slots,
                     unsigned made, fc_cuda_plan **out) {
  (void)slots, (void)made;
  return cuda_plan_create(cfg, device, max_samples, out);
}
int cuda_ring_grow(fc_cuda_plan *p, unsigned chunk) {
  (void)p, (void)chunk;
  return set_error(FC_EBADSTATE, "no CUDA device: " NO_BACKEND);
}
unsigned cuda_ring_slots(const fc_cuda_plan *p) {
  (void)p;
  return 0;
}
uint64_t cuda_ring_plan_frames(const fc_cuda_plan *p) {
  (void)p;
  return 0;
}
size_t cuda_ring_max_utts(const fc_cuda_plan *p) {
  (void)p;
  return 0;
}
void *cuda_ring_staging(fc_cuda_plan *p, unsigned chunk) {
  (void)p, (void)chunk;
  return NULL;
}
int cuda_ring_launch(fc_cuda_plan *p, unsigned chunk, size_t count, const uint64_t *sample_off,
                     const uint64_t *len, size_t n16, size_t nf, int dtype) {
  (void)p, (void)chunk, (void)count, (void)sample_off, (void)len, (void)n16, (void)nf, (void)dtype;
  return set_error(FC_EBADSTATE, "no CUDA device: " NO_BACKEND);
}
int cuda_ring_finish(fc_cuda_plan *p, unsigned chunk, const void **out) {
  (void)p, (void)chunk;
  *out = NULL;
  return set_error(FC_EBADSTATE, "no CUDA device: " NO_BACKEND);
}
void cuda_ring_note(fc_cuda_plan *p, unsigned chunk, const char *what) {
  (void)p, (void)chunk, (void)what;
}

#else
/* ---- the backend -------------------------------------------------------------------------------- */
#include <cuda_runtime_api.h>
#include <cufft.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "kernels/cuda/cufft_load.h"
#include "kernels/cuda/cuda_trace.h"
#include "mel_cuda.h"

enum {
  N_SLOTS = 2, /* cuda_plan_create's streams: chunk k on slot k % 2, copies overlap kernels */
  MAX_SLOTS = 16, /* cuda_ring_create's most */
  N_FFT_SIZES = 8, /* cuFFT plans per slot for max_frames, /2, /4, ... (one work area) */
  MAX_UTTS = CUDA_RING_MAX_UTTS /* utterances per chunk (the per-utterance tables' size) */
};

typedef struct slot {
  cudaStream_t stream;
  cudaEvent_t done;
  /* pinned: the chunk's PCM, max_samples floats' bytes: n16 int16 samples from its start, nf
   * floats at its end (cuda_ring.h) */
  void *pcm_h;
  void *out_h; /* pinned: the chunk's features in the output dtype */
  uint64_t *tab_h; /* pinned: sample_off[MAX_UTTS], len[MAX_UTTS], frame_off[MAX_UTTS + 1] */
  float *pcm_d, *rows_d, *mel_d, *umax_d;
  int16_t *pcm16_d; /* 16-bit PCM as copied, converted into pcm_d on the device */
  void *out_d, *work_d;
  uint64_t *tab_d;
  cufftHandle fft[N_FFT_SIZES];
  int fft_made[N_FFT_SIZES];
  uint64_t fft_batch[N_FFT_SIZES];
  /* A traced ring (FC_CUDA_TRACE): timing events around the chunk's copy up, kernels and copy
   * back, when it was launched and its samples (its utterances, dtype and frames are below and
   * in tab_h). */
  cudaEvent_t tr[4];
  double tr_launch;
  uint64_t tr_n16, tr_nf;
  /* The chunk in flight (busy): which utterances of the current call, in which dtype. */
  int busy;
  size_t first, count;
  int dtype;
} slot;

struct fc_cuda_plan {
  fc_mel_config cfg;
  int device;
  atomic_int failed; /* sticky: a CUDA call failed; the plan refuses work (any thread sets it) */
  size_t max_samples;
  uint64_t max_frames;
  int n_fft_sizes;
  fc_cu_params base; /* chunk-independent parameters, device table pointers */
  float *window_d, *weights_d;
  uint32_t *bands_d; /* first[n_mels], count[n_mels], offset[n_mels] */
  size_t device_bytes, pinned_bytes;
  unsigned n_slots;
  atomic_uint made; /* slots made: n_slots, or (a ring made as it runs, cuda_ring_grow) those made
                       so far: 0 .. made - 1 */
  int blocking_sync; /* a ring plan: its events are waited on without spinning */
  cuda_trace *trace; /* FC_CUDA_TRACE on a ring plan (cuda_trace.h), else NULL */
  slot slots[MAX_SLOTS];
};

/* ---- error plumbing: every call checked, the message names it ---------------------------------- */
static const char *cufft_result_name(cufftResult r) {
  switch (r) {
  case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
  case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
  case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
  case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
  case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
  case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
  case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
  case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
  case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
  case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
  case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
  case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
  case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
  default: return "unknown cufftResult";
  }
}

/* A failed runtime call: the message names it, the plan (if any) turns sticky. Test builds can
 * fail the n-th checked call with FC_FAULT=cuda:n (formats/common/fault.h). */
static int cuda_fail(fc_cuda_plan *p, const char *call, cudaError_t e) {
  if (p) p->failed = 1;
  cudaGetLastError(); /* clear a non-sticky error so the next call does not report it again */
  return set_error(FC_ECUDA, "%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
}

static int cufft_fail(fc_cuda_plan *p, const char *call, cufftResult r) {
  if (p) p->failed = 1;
  if (cufft_load_error()[0]) return set_error(FC_ENODEVICE, "%s: %s", call, cufft_load_error());
  return set_error(FC_ECUDA, "%s: %s (%d)", call, cufft_result_name(r), (int)r);
}

#define CU(name, call)                                              \
  do {                                                              \
    cudaError_t e_ = fault_hit("cuda") ? cudaErrorUnknown : (call); \
    if (e_ != cudaSuccess) {                                        \
      rc = cuda_fail(p, name, e_);                                  \
      goto out;                                                     \
    }                                                               \
  } while (0)

#define FFT(name, call)                                                 \
  do {                                                                  \
    cufftResult r_ = fault_hit("cuda") ? CUFFT_INTERNAL_ERROR : (call); \
    if (r_ != CUFFT_SUCCESS) {                                          \
      rc = cufft_fail(p, name, r_);                                     \
      goto out;                                                         \
    }                                                                   \
  } while (0)

int cuda_built(void) { return 1; }

int cuda_device_count(int *n, char *why, size_t why_len) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  *n = 0;
  if (e != cudaSuccess || count <= 0) {
    const char *reason =
        e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA-capable device is detected";
    cudaGetLastError();
    set_error(FC_ENODEVICE, "no CUDA device: %s", reason);
    copy_why(why, why_len, last_error);
    return FC_ENODEVICE;
  }
  *n = count;
  copy_why(why, why_len, "");
  return 0;
}

static int check_device(int device) {
  int n;
  char why[256];
  int rc = cuda_device_count(&n, why, sizeof why);
  if (rc) return rc;
  if (device < 0 || device >= n)
    return set_error(FC_ENODEVICE, "no CUDA device: device %d does not exist (%d present)", device,
                     n);
  return 0;
}

int cuda_device_describe(int device, char *buf, size_t buf_len) {
  fc_cuda_plan *p = NULL; /* for CU() */
  int rc = check_device(device);
  struct cudaDeviceProp prop;
  if (rc) {
    copy_why(buf, buf_len, last_error);
    return rc;
  }
  CU("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, device));
  if (buf && buf_len)
    snprintf(buf, buf_len, "%s, sm_%d%d, %.1f GiB", prop.name, prop.major, prop.minor,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
out:
  return rc;
}

/* ---- plans ------------------------------------------------------------------------------------- */
static size_t dtype_bytes_max(void) { return sizeof(float); } /* f32 is the widest output */

/* The allocations and set-up calls below take the plan they count into (plan) and whether their
 * failure turns it sticky: not for a ring's slot made while the ring runs (cuda_ring_grow), whose
 * failure leaves the ring at the slots it has. */
static int dev_alloc(fc_cuda_plan *plan, int sticky, void **ptr, size_t bytes, const char *what) {
  fc_cuda_plan *p = sticky ? plan : NULL; /* for CU() */
  int rc = 0;
  CU(what, cudaMalloc(ptr, bytes ? bytes : 1));
  plan->device_bytes += bytes;
out:
  return rc;
}

static int host_alloc(fc_cuda_plan *plan, int sticky, void **ptr, size_t bytes, const char *what) {
  fc_cuda_plan *p = sticky ? plan : NULL; /* for CU() */
  int rc = 0;
  CU(what, cudaMallocHost(ptr, bytes ? bytes : 1));
  plan->pinned_bytes += bytes;
out:
  return rc;
}

/* Streams, buffers and cuFFT plans of one slot. */
static int slot_create(fc_cuda_plan *plan, int sticky, slot *s) {
  fc_cuda_plan *p = sticky ? plan : NULL; /* for CU() and FFT() */
  int rc = 0;
  const uint64_t F = plan->max_frames;
  const size_t row = plan->base.row, nm = plan->cfg.n_mels;
  const size_t tab = 3 * (size_t)MAX_UTTS + 1;
  size_t work_max = 0;
  CU("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  /* A ring's events are waited on by featurize's completion thread beside busy workers: it
   * sleeps in cudaEventSynchronize (BlockingSync) rather than spin on a core they need. */
  CU("cudaEventCreateWithFlags",
     cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming |
                                            (plan->blocking_sync ? cudaEventBlockingSync : 0)));
  if (plan->trace)
    for (int q = 0; q < 4; q++) CU("cudaEventCreate(trace)", cudaEventCreate(&s->tr[q]));
  if ((rc = host_alloc(plan, sticky, &s->pcm_h, sizeof(float) * plan->max_samples,
                       "cudaMallocHost(pcm)")) ||
      (rc = host_alloc(plan, sticky, &s->out_h, dtype_bytes_max() * F * nm,
                       "cudaMallocHost(out)")) ||
      (rc = host_alloc(plan, sticky, (void **)&s->tab_h, sizeof(uint64_t) * tab,
                       "cudaMallocHost(tables)")) ||
      (rc = dev_alloc(plan, sticky, (void **)&s->pcm_d, sizeof(float) * plan->max_samples,
                      "cudaMalloc(pcm)")) ||
      (rc = dev_alloc(plan, sticky, (void **)&s->pcm16_d, sizeof(int16_t) * plan->max_samples,
                      "cudaMalloc(pcm int16)")) ||
      (rc = dev_alloc(plan, sticky, (void **)&s->rows_d, sizeof(float) * F * row,
                      "cudaMalloc(rows)")) ||
      (rc = dev_alloc(plan, sticky, (void **)&s->mel_d, sizeof(float) * F * nm,
                      "cudaMalloc(mel)")) ||
      (rc = dev_alloc(plan, sticky, &s->out_d, dtype_bytes_max() * F * nm, "cudaMalloc(out)")) ||
      (rc = dev_alloc(plan, sticky, (void **)&s->umax_d, sizeof(float) * MAX_UTTS,
                      "cudaMalloc(utt_max)")) ||
      (rc = dev_alloc(plan, sticky, (void **)&s->tab_d, sizeof(uint64_t) * tab,
                      "cudaMalloc(tables)")))
    goto out;
  /* Rows past a chunk's last frame go through the FFT too (plans come in halving batch sizes):
   * keep them finite. */
  CU("cudaMemsetAsync(rows)", cudaMemsetAsync(s->rows_d, 0, sizeof(float) * F * row, s->stream));
  /* One batched in-place R2C plan per batch size, all sharing one work area: input rows of
   * 2 (n_fft/2 + 1) floats, output rows of n_fft/2 + 1 complex bins over the same memory. */
  int n = (int)plan->cfg.n_fft, inembed = (int)row, onembed = (int)plan->base.nbins;
  for (int k = 0; k < plan->n_fft_sizes; k++) {
    size_t ws = 0;
    s->fft_batch[k] = (F + ((uint64_t)1 << k) - 1) >> k;
    FFT("cufftCreate", cufftCreate(&s->fft[k]));
    s->fft_made[k] = 1;
    FFT("cufftSetAutoAllocation", cufftSetAutoAllocation(s->fft[k], 0));
    FFT("cufftMakePlanMany", cufftMakePlanMany(s->fft[k], 1, &n, &inembed, 1, inembed, &onembed, 1,
                                               onembed, CUFFT_R2C, (int)s->fft_batch[k], &ws));
    FFT("cufftSetStream", cufftSetStream(s->fft[k], s->stream));
    if (ws > work_max) work_max = ws;
  }
  if ((rc = dev_alloc(plan, sticky, &s->work_d, work_max, "cudaMalloc(cufft work area)"))) goto out;
  for (int k = 0; k < plan->n_fft_sizes; k++)
    FFT("cufftSetWorkArea", cufftSetWorkArea(s->fft[k], s->work_d));
out:
  return rc;
}

static void slot_free(slot *s) {
  if (s->stream) cudaStreamSynchronize(s->stream);
  for (int k = 0; k < N_FFT_SIZES; k++)
    if (s->fft_made[k]) cufftDestroy(s->fft[k]);
  cudaFreeHost(s->pcm_h);
  cudaFreeHost(s->out_h);
  cudaFreeHost(s->tab_h);
  cudaFree(s->pcm_d);
  cudaFree(s->pcm16_d);
  cudaFree(s->rows_d);
  cudaFree(s->mel_d);
  cudaFree(s->out_d);
  cudaFree(s->umax_d);
  cudaFree(s->tab_d);
  cudaFree(s->work_d);
  if (s->done) cudaEventDestroy(s->done);
  for (int q = 0; q < 4; q++)
    if (s->tr[q]) cudaEventDestroy(s->tr[q]);
  if (s->stream) cudaStreamDestroy(s->stream);
  cudaGetLastError();
}

void cuda_plan_free(fc_cuda_plan *p) {
  if (!p) return;
  const double t0 = cuda_trace_now();
  cudaSetDevice(p->device);
  for (unsigned i = 0; i < p->n_slots; i++) slot_free(&p->slots[i]);
  cudaFree(p->window_d);
  cudaFree(p->weights_d);
  cudaFree(p->bands_d);
  cudaGetLastError();
  cuda_trace_close(p->trace, t0);
  free(p);
}

static int plan_create(const fc_mel_config *cfg, int device, size_t max_batch_samples,
                       unsigned slots, unsigned made, int ring, fc_cuda_plan **out);

int cuda_plan_create(const fc_mel_config *cfg, int device, size_t max_batch_samples,
                     fc_cuda_plan **out) {
  return plan_create(cfg, device, max_batch_samples, N_SLOTS, N_SLOTS, 0, out);
}

int cuda_ring_create(const fc_mel_config *cfg, int device, size_t max_batch_samples, unsigned slots,
                     unsigned made, fc_cuda_plan **out) {
  return plan_create(cfg, device, max_batch_samples, slots, made, 1, out);
}

static int plan_create(const fc_mel_config *cfg, int device, size_t max_batch_samples,
                       unsigned slots, unsigned made, int ring, fc_cuda_plan **out) {
  char why[256];
  float *window = NULL, *weights = NULL;
  uint32_t *bands = NULL;
  size_t n_weights = 0;
  fc_cuda_plan *p = NULL;
  int rc;
  *out = NULL;
  const double t_begin = cuda_trace_now();
  if (fc_mel_config_validate(cfg, why, sizeof why)) return set_error(FC_ECONFIG, "%s", why);
  if (slots < 1 || slots > MAX_SLOTS)
    return set_error(FC_ECONFIG, "%u chunks: want 1 to %d", slots, MAX_SLOTS);
  if (made < 1 || made > slots)
    return set_error(FC_ECONFIG, "%u of %u chunks made at first: want 1 to %u", made, slots, slots);
  if ((rc = check_device(device))) return rc;
  if (!max_batch_samples) max_batch_samples = CUDA_DEFAULT_MAX_SAMPLES;
  /* The frames of a chunk index rows of 2^31 floats at most for cuFFT's int batch; far above any
   * sensible staging buffer. */
  if (max_batch_samples > ((size_t)1 << 30))
    return set_error(FC_ECONFIG, "max_batch_samples %zu is above the limit of 2^30",
                     max_batch_samples);
  uint64_t frames = fc_mel_num_frames(cfg, max_batch_samples);
  if (frames == 0)
    return set_error(FC_ECONFIG, "max_batch_samples %zu gives no frames with this config",
                     max_batch_samples);
  p = fc_calloc(1, sizeof *p);
  window = fc_malloc(sizeof *window * cfg->win_length);
  bands = fc_malloc(sizeof *bands * 3 * (size_t)cfg->n_mels);
  if (!p || !window || !bands) {
    rc = set_error(ENOMEM, "out of host memory for the CUDA plan");
    goto out;
  }
  p->cfg = *cfg;
  p->device = device;
  p->max_samples = max_batch_samples;
  p->max_frames = cuda_ring_max_frames(cfg, max_batch_samples);
  p->n_fft_sizes = 1;
  while (p->n_fft_sizes < N_FFT_SIZES && (p->max_frames >> p->n_fft_sizes) >= CUDA_FRAME_ROUND)
    p->n_fft_sizes++;

  fc_cu_params *P = &p->base;
  fc_cu_params_init(P, cfg);
  if (fc_cu_build_tables(cfg, fc_mel_config_fmax(cfg), window, bands, &weights, &n_weights)) {
    rc = set_error(ENOMEM, "out of host memory for the mel filterbank");
    goto out;
  }

  CU("cudaSetDevice", cudaSetDevice(device));
  if ((rc = dev_alloc(p, 1, (void **)&p->window_d, sizeof *window * cfg->win_length,
                      "cudaMalloc(window)")) ||
      (rc = dev_alloc(p, 1, (void **)&p->weights_d, sizeof *weights * n_weights,
                      "cudaMalloc(weights)")) ||
      (rc = dev_alloc(p, 1, (void **)&p->bands_d, sizeof *bands * 3 * cfg->n_mels,
                      "cudaMalloc(bands)")))
    goto out;
  CU("cudaMemcpy(window)",
     cudaMemcpy(p->window_d, window, sizeof *window * cfg->win_length, cudaMemcpyHostToDevice));
  CU("cudaMemcpy(weights)",
     cudaMemcpy(p->weights_d, weights, sizeof *weights * n_weights, cudaMemcpyHostToDevice));
  CU("cudaMemcpy(bands)",
     cudaMemcpy(p->bands_d, bands, sizeof *bands * 3 * cfg->n_mels, cudaMemcpyHostToDevice));
  P->window = p->window_d;
  P->mel_weights = p->weights_d;
  P->mel_first = p->bands_d;
  P->mel_count = p->bands_d + cfg->n_mels;
  P->mel_offset = p->bands_d + 2 * cfg->n_mels;
  p->n_slots = slots;
  p->blocking_sync = ring;
  if (ring) p->trace = cuda_trace_open();
  for (unsigned i = 0; i < made; i++) {
    if ((rc = slot_create(p, 1, &p->slots[i]))) goto out;
    atomic_store(&p->made, i + 1);
  }
  /* The table uploads and row clears must be complete before the non-blocking streams run. */
  CU("cudaDeviceSynchronize", cudaDeviceSynchronize());
  if (p->trace) {
    const uint64_t c[4] = {made, slots, p->max_samples, 0};
    cuda_trace_span(p->trace, "plan", -1, c, t_begin, cuda_trace_now());
  }
  *out = p;
  p = NULL;
out:
  free(window);
  free(weights);
  free(bands);
  cuda_plan_free(p);
  return rc;
}

const fc_mel_config *cuda_plan_config(const fc_cuda_plan *p) { return &p->cfg; }
size_t cuda_plan_max_samples(const fc_cuda_plan *p) { return p->max_samples; }

void cuda_plan_bytes(const fc_cuda_plan *p, size_t *device_bytes, size_t *pinned_bytes) {
  if (device_bytes) *device_bytes = p->device_bytes;
  if (pinned_bytes) *pinned_bytes = p->pinned_bytes;
}

/* ---- the pipeline ------------------------------------------------------------------------------ */

/* Enqueue a chunk on its slot's stream: H2D, frames, FFT, mel, max, finish, D2H, event. Its tables
 * (sample_off, len) are in tab_h; frame_off is filled here. */
static int slot_enqueue(fc_cuda_plan *p, slot *s, size_t count, uint64_t n16, uint64_t nf,
                        int dtype) {
  int rc = 0;
  fc_cu_params P = p->base;
  const size_t tab_bytes = sizeof(uint64_t) * (3 * (size_t)MAX_UTTS + 1);
  cudaStream_t st = s->stream;
  uint64_t *sample_off = s->tab_h, *len = s->tab_h + MAX_UTTS, *frame_off = s->tab_h + 2 * MAX_UTTS;
  uint64_t frames = 0;
  if (p->failed) return set_error(FC_EBADSTATE, "the CUDA plan failed earlier; make a new one");
  if (dtype != FC_DTYPE_F32 && dtype != FC_DTYPE_F16 && dtype != FC_DTYPE_BF16)
    return set_error(FC_ECONFIG, "dtype %d is not f32, f16 or bf16", dtype);
  if (s->busy) return set_error(EINVAL, "chunk launched again before it was finished");
  if (count == 0 || count > MAX_UTTS || n16 + nf > p->max_samples)
    return set_error(EINVAL, "chunk of %zu utterances, %llu samples: above its limits", count,
                     (unsigned long long)(n16 + nf));
  for (size_t i = 0; i < count; i++) {
    uint64_t f = fc_mel_num_frames(&p->cfg, len[i]);
    if (f == 0 || sample_off[i] > n16 + nf || len[i] > n16 + nf - sample_off[i])
      return set_error(EINVAL, "utterance %zu of the chunk: %llu samples from %llu", i,
                       (unsigned long long)len[i], (unsigned long long)sample_off[i]);
    frame_off[i] = frames;
    frames += f;
  }
  frame_off[count] = frames;
  if (frames > p->max_frames)
    return set_error(EINVAL, "chunk of %llu frames, more than its %llu", (unsigned long long)frames,
                     (unsigned long long)p->max_frames);
  const uint64_t n = frames * p->cfg.n_mels;
  P.n_utts = (uint32_t)count;
  P.utt_sample_off = s->tab_d;
  P.utt_len = s->tab_d + MAX_UTTS;
  P.utt_frame_off = s->tab_d + 2 * MAX_UTTS;
  CU("cudaSetDevice", cudaSetDevice(p->device)); /* per thread: the ring launches and finishes */
  if (p->trace) {
    s->tr_launch = cuda_trace_now();
    s->tr_n16 = n16;
    s->tr_nf = nf;
    CU("cudaEventRecord(trace)", cudaEventRecord(s->tr[0], st));
  }
  if (n16) { /* half the bytes across PCIe, converted as the CPU path converts them */
    CU("cudaMemcpyAsync(pcm int16, host to device)",
       cudaMemcpyAsync(s->pcm16_d, s->pcm_h, sizeof(int16_t) * n16, cudaMemcpyHostToDevice, st));
    CU("int16 conversion kernel launch",
       (cudaError_t)fc_cu_launch_i16_to_f32(s->pcm16_d, s->pcm_d, n16, st));
  }
  if (nf)
    CU("cudaMemcpyAsync(pcm, host to device)",
       cudaMemcpyAsync(s->pcm_d + n16, (const float *)s->pcm_h + (p->max_samples - nf),
                       sizeof(float) * nf, cudaMemcpyHostToDevice, st));
  CU("cudaMemcpyAsync(tables, host to device)",
     cudaMemcpyAsync(s->tab_d, s->tab_h, tab_bytes, cudaMemcpyHostToDevice, st));
  if (p->trace) CU("cudaEventRecord(trace)", cudaEventRecord(s->tr[1], st));
  CU("frames kernel launch", (cudaError_t)fc_cu_launch_frames(&P, s->pcm_d, s->rows_d, frames, st));
  int k = p->n_fft_sizes - 1;
  while (k > 0 && s->fft_batch[k] < frames) k--;
  FFT("cufftExecR2C", cufftExecR2C(s->fft[k], s->rows_d, (cufftComplex *)s->rows_d));
  CU("mel kernel launch", (cudaError_t)fc_cu_launch_mel(&P, s->rows_d, s->mel_d, frames, st));
  const void *src = s->mel_d;
  if (P.needs_max)
    CU("utterance max kernel launch",
       (cudaError_t)fc_cu_launch_utt_max(&P, s->mel_d, s->umax_d, st));
  if (P.needs_max || dtype != FC_DTYPE_F32) {
    CU("finish kernel launch",
       (cudaError_t)fc_cu_launch_finish(&P, s->mel_d, s->umax_d, s->out_d, n, dtype, st));
    src = s->out_d;
  }
  if (p->trace) CU("cudaEventRecord(trace)", cudaEventRecord(s->tr[2], st));
  CU("cudaMemcpyAsync(features, device to host)",
     cudaMemcpyAsync(s->out_h, src, fc_dtype_size(dtype) * n, cudaMemcpyDeviceToHost, st));
  if (p->trace) CU("cudaEventRecord(trace)", cudaEventRecord(s->tr[3], st));
  CU("cudaEventRecord", cudaEventRecord(s->done, st));
  s->busy = 1;
  s->count = count;
  s->dtype = dtype;
out:
  return rc;
}

/* Wait for the slot's chunk (busy: launched, not finished). */
static int slot_wait(fc_cuda_plan *p, slot *s) {
  int rc = 0;
  if (!s->busy) return set_error(EINVAL, "chunk finished without a launch");
  s->busy = 0;
  CU("cudaSetDevice", cudaSetDevice(p->device));
  CU("cudaEventSynchronize", cudaEventSynchronize(s->done));
  if (p->trace) {
    const uint64_t frames = s->tab_h[2 * MAX_UTTS + s->count]; /* frame_off[count] */
    const uint64_t c[4] = {s->count, s->tr_n16, s->tr_nf,
                           fc_dtype_size(s->dtype) * frames * p->cfg.n_mels};
    cuda_trace_chunk(p->trace, (int)(s - p->slots), c, s->tr_launch, s->tr, cuda_trace_now());
  }
out:
  return rc;
}

/* Wait for the slot's chunk of a compute_batch call and copy each utterance's slice to its
 * caller's buffer. */
static int slot_finish(fc_cuda_plan *p, slot *s, void *const *out) {
  int rc;
  if (!s->busy) return 0;
  if ((rc = slot_wait(p, s))) return rc;
  const uint64_t *frame_off = s->tab_h + 2 * MAX_UTTS;
  const size_t row_bytes = fc_dtype_size(s->dtype) * p->cfg.n_mels;
  for (size_t i = 0; i < s->count; i++)
    memcpy(out[s->first + i], (const char *)s->out_h + frame_off[i] * row_bytes,
           (frame_off[i + 1] - frame_off[i]) * row_bytes);
  return 0;
}

/* cuda_compute_batch and its int16 twin: pcm[i] points at floats, or at int16 when i16. Each
 * chunk is packed into its slot's staging buffer as the ring's callers pack it (int16 from the
 * start, floats at the end) and launched on it; the slots take turns. */
static int compute_batch(fc_cuda_plan *p, const void *const *pcm, int i16, const size_t *lens,
                         size_t n_utts, int dtype, void *const *out) {
  int rc = 0;
  if (p->failed) return set_error(FC_EBADSTATE, "the CUDA plan failed earlier; make a new one");
  if (dtype == 0) dtype = p->cfg.dtype;
  if (dtype != FC_DTYPE_F32 && dtype != FC_DTYPE_F16 && dtype != FC_DTYPE_BF16)
    return set_error(FC_ECONFIG, "dtype %d is not f32, f16 or bf16", dtype);
  for (size_t i = 0; i < n_utts; i++) {
    if (lens[i] > p->max_samples)
      return set_error(FC_ETOOLONG, "utterance %zu: %zu samples, more than the plan's %zu", i,
                       lens[i], p->max_samples);
    if (fc_mel_num_frames(&p->cfg, lens[i]) == 0)
      return set_error(FC_EEMPTY, "utterance %zu: %zu samples give no frames", i, lens[i]);
  }
  size_t i = 0;
  unsigned next = 0;
  while (i < n_utts) {
    slot *s = &p->slots[next];
    if ((rc = slot_finish(p, s, out))) goto out;
    /* Take utterances while the chunk has room for their samples, frames and table rows. */
    uint64_t *sample_off = s->tab_h, *len = s->tab_h + MAX_UTTS;
    uint64_t samples = 0, frames = 0;
    size_t j = i;
    for (; j < n_utts && j - i < MAX_UTTS; j++) {
      uint64_t f = fc_mel_num_frames(&p->cfg, lens[j]);
      if (samples + lens[j] > p->max_samples || frames + f > p->max_frames) break;
      sample_off[j - i] = samples;
      len[j - i] = lens[j];
      samples += lens[j];
      frames += f;
    }
    char *dst =
        i16 ? (char *)s->pcm_h : (char *)s->pcm_h + sizeof(float) * (p->max_samples - samples);
    const size_t sample_bytes = i16 ? sizeof(int16_t) : sizeof(float);
    for (size_t k = i; k < j; k++)
      memcpy(dst + sample_bytes * sample_off[k - i], pcm[k], sample_bytes * lens[k]);
    if ((rc = slot_enqueue(p, s, j - i, i16 ? samples : 0, i16 ? 0 : samples, dtype))) goto out;
    s->first = i;
    i = j;
    next = (next + 1) % p->n_slots;
  }
  /* The older chunk is in the slot that would be used next. */
  for (unsigned k = 0; k < p->n_slots; k++)
    if ((rc = slot_finish(p, &p->slots[(next + k) % p->n_slots], out))) goto out;
out:
  if (rc) {
    for (unsigned k = 0; k < p->n_slots; k++) p->slots[k].busy = 0;
    p->failed = 1;
  }
  return rc;
}

int cuda_compute_batch(fc_cuda_plan *p, const float *const *pcm, const size_t *lens, size_t n_utts,
                       int dtype, void *const *out) {
  return compute_batch(p, (const void *const *)pcm, 0, lens, n_utts, dtype, out);
}

int cuda_compute_batch_i16(fc_cuda_plan *p, const int16_t *const *pcm, const size_t *lens,
                           size_t n_utts, int dtype, void *const *out) {
  return compute_batch(p, (const void *const *)pcm, 1, lens, n_utts, dtype, out);
}

/* ---- the ring (cuda_ring.h) ------------------------------------------------------------------- */
unsigned cuda_ring_slots(const fc_cuda_plan *p) { return p->n_slots; }
uint64_t cuda_ring_plan_frames(const fc_cuda_plan *p) { return p->max_frames; }
size_t cuda_ring_max_utts(const fc_cuda_plan *p) {
  (void)p;
  return MAX_UTTS;
}
void *cuda_ring_staging(fc_cuda_plan *p, unsigned chunk) {
  return chunk < atomic_load(&p->made) ? p->slots[chunk].pcm_h : NULL;
}

int cuda_ring_grow(fc_cuda_plan *p, unsigned chunk) {
  const unsigned made = atomic_load(&p->made);
  if (chunk != made || chunk >= p->n_slots)
    return set_error(EINVAL, "chunk %u made out of turn: %u of %u made", chunk, made, p->n_slots);
  if (p->failed) return set_error(FC_EBADSTATE, "the CUDA plan failed earlier; make a new one");
  slot *s = &p->slots[chunk];
  const double t_begin = cuda_trace_now();
  const size_t device_bytes = p->device_bytes, pinned_bytes = p->pinned_bytes;
  /* Not sticky (cuda_fail without the plan): the ring goes on with the chunks it has. */
  cudaError_t e = fault_hit("cuda") ? cudaErrorUnknown : cudaSetDevice(p->device); /* per thread */
  int rc = e != cudaSuccess ? cuda_fail(NULL, "cudaSetDevice", e) : slot_create(p, 0, s);
  if (!rc) { /* its row clear done before its stream is used from another thread */
    e = fault_hit("cuda") ? cudaErrorUnknown : cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess) rc = cuda_fail(NULL, "cudaStreamSynchronize", e);
  }
  if (rc) {
    slot_free(s);
    memset(s, 0, sizeof *s);
    p->device_bytes = device_bytes;
    p->pinned_bytes = pinned_bytes;
    return rc;
  }
  cuda_trace_span(p->trace, "grow", (int)chunk, NULL, t_begin, cuda_trace_now());
  atomic_store(&p->made, made + 1);
  return 0;
}

int cuda_ring_launch(fc_cuda_plan *p, unsigned chunk, size_t count, const uint64_t *sample_off,
                     const uint64_t *len, size_t n16, size_t nf, int dtype) {
  if (chunk >= atomic_load(&p->made) || count > MAX_UTTS)
    return set_error(EINVAL, "chunk %u of %u made, %zu utterances", chunk, atomic_load(&p->made),
                     count);
  slot *s = &p->slots[chunk];
  if (s->busy) return set_error(EINVAL, "chunk launched again before it was finished");
  memcpy(s->tab_h, sample_off, sizeof *sample_off * count);
  memcpy(s->tab_h + MAX_UTTS, len, sizeof *len * count);
  int rc = slot_enqueue(p, s, count, n16, nf, dtype);
  if (rc && rc != EINVAL && rc != FC_ECONFIG) p->failed = 1;
  return rc;
}

int cuda_ring_finish(fc_cuda_plan *p, unsigned chunk, const void **out) {
  *out = NULL;
  if (chunk >= atomic_load(&p->made))
    return set_error(EINVAL, "chunk %u of %u made", chunk, atomic_load(&p->made));
  int rc = slot_wait(p, &p->slots[chunk]);
  if (!rc) *out = p->slots[chunk].out_h;
  return rc;
}

void cuda_ring_note(fc_cuda_plan *p, unsigned chunk, const char *what) {
  if (p && p->trace) cuda_trace_span(p->trace, what, (int)chunk, NULL, cuda_trace_now(), -1);
}

int cuda_compute(fc_cuda_plan *p, const float *samples, size_t n, float *out) {
  void *o = out;
  return cuda_compute_batch(p, &samples, &n, 1, FC_DTYPE_F32, &o);
}

#endif
