/* CUDA vs CPU parity, on a GPU: every preset (and the dB, log10 and Kaldi unsnipped variants),
 * utterances of awkward lengths packed into one batch, a small staging buffer (many chunks over
 * both streams) and the default one; frame counts exact, log outputs within 1e-4 (absolute),
 * linear ones within 1e-4 (relative); f16/bf16 outputs the rounding of a value within that
 * tolerance of the CPU's; the gatherer from several threads; the errors (too long, empty, sticky after an injected CUDA
 * failure with FC_FAULT=cuda:N). Without a usable GPU: exit 77 (skipped) with the reason. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_api.h"
#include "featcache/fc_mel.h"

#include "kernels/cuda/mel_kernels.h"
#include "tests/check.h"
#include "tests/unit/mel_signal.h"

/* Max error of got vs ref over f frames: absolute (log) or relative (linear), in ln units for dB.
 * Values beyond 1e-4 must still agree to 1e-6 of their frame's largest band in the linear domain
 * (float32 FFT rounding is relative to the frame's energy; see test_shared_math.c). */
static double compare(const fc_mel_config *c, const float *got, const float *ref, uint64_t f,
                      double *frame_err, uint64_t *beyond) {
  const uint32_t nm = c->n_mels;
  double worst = 0;
  for (uint64_t t = 0; t < f; t++) {
    double fmax_lin = 0;
    for (uint32_t m = 0; m < nm; m++) fmax_lin = fmax(fmax_lin, to_linear(c, ref[t * nm + m]));
    for (uint32_t m = 0; m < nm; m++) {
      uint64_t i = t * nm + m;
      double e = fabs((double)got[i] - (double)ref[i]);
      if (c->log == FC_LOG_NONE) e /= fmax(fabs((double)ref[i]), 1e-30);
      if (c->log == FC_LOG_DB) e /= 10.0 / log(10.0);
      if (!(e <= 1e-4)) {
        double fe = fabs(to_linear(c, got[i]) - to_linear(c, ref[i])) / fmax_lin;
        if (!(fe <= *frame_err)) *frame_err = fe;
        (*beyond)++;
      } else if (e > worst) {
        worst = e;
      }
    }
  }
  return worst;
}

typedef struct variant {
  const char *preset, *label;
  int log;
  double top_db;
  int no_snip; /* Kaldi's snip_edges false */
} variant;

static int make_cfg(const variant *v, fc_mel_config *cfg) {
  if (fc_mel_preset(v->preset, cfg)) return -1;
  if (v->log >= 0) {
    cfg->log = (fc_log)v->log;
    cfg->top_db = v->top_db;
    if (cfg->log == FC_LOG_DB) cfg->log_floor = 1e-10;
    fc_mel_config_settle_preset(cfg);
  }
  if (v->no_snip) {
    cfg->no_snip_edges = 1;
    fc_mel_config_settle_preset(cfg);
  }
  return 0;
}

enum { N_UTTS = 12 };

static void parity(const variant *v, size_t max_batch_samples) {
  fc_mel_config cfg;
  CHECK(make_cfg(v, &cfg) == 0, "preset %s", v->preset);
  const uint32_t nm = cfg.n_mels, sr = cfg.sample_rate;
  fc_mel_plan *cpu = NULL;
  fc_cuda_plan *gpu = NULL;
  CHECK(fc_mel_plan_create(&cfg, &cpu) == 0, "cpu plan");
  int rc = cuda_plan_create(&cfg, 0, max_batch_samples, &gpu);
  CHECK(rc == 0, "%s: cuda_plan_create: %s", v->label, cuda_last_error());
  if (!cpu || !gpu) goto out;

  size_t lens[N_UTTS], shortest = 1;
  while (fc_mel_num_frames(&cfg, shortest) == 0) shortest++;
  const size_t extent = cfg.window_align == FC_ALIGN_LEFT ? cfg.win_length : cfg.n_fft;
  const size_t fixed[N_UTTS] = {shortest,
                                extent - 1 > shortest ? extent - 1 : shortest,
                                extent + 1,
                                3 * (size_t)cfg.hop_length + 7,
                                sr,
                                sr * 3 / 2 + 13,
                                sr / 3,
                                (size_t)sr * 6,
                                5 * (size_t)sr + 1,
                                2 * (size_t)sr - 1,
                                4096,
                                sr};
  float *pcm[N_UTTS], *ref[N_UTTS], *got[N_UTTS];
  uint16_t *half[N_UTTS];
  uint64_t frames[N_UTTS];
  for (int i = 0; i < N_UTTS; i++) {
    lens[i] = fixed[i];
    if (lens[i] > cuda_plan_max_samples(gpu)) lens[i] = cuda_plan_max_samples(gpu);
    if (fc_mel_num_frames(&cfg, lens[i]) == 0) lens[i] = shortest;
    frames[i] = fc_mel_num_frames(&cfg, lens[i]);
    pcm[i] = malloc(sizeof(float) * lens[i]);
    ref[i] = malloc(sizeof(float) * frames[i] * nm);
    got[i] = malloc(sizeof(float) * frames[i] * nm);
    half[i] = malloc(sizeof(uint16_t) * frames[i] * nm);
    make_signal(pcm[i], lens[i], (uint32_t)i + 7, sr);
    CHECK(fc_mel_compute(cpu, pcm[i], lens[i], ref[i]) == 0, "cpu compute");
    /* sentinel past nothing: fill got with NaN so an unwritten value fails */
    for (uint64_t k = 0; k < frames[i] * nm; k++) got[i][k] = NAN;
  }
  rc = cuda_compute_batch(gpu, (const float *const *)pcm, lens, N_UTTS, FC_DTYPE_F32,
                          (void *const *)got);
  CHECK(rc == 0, "%s: cuda_compute_batch: %s", v->label, cuda_last_error());
  double worst = 0, frame_err = 0;
  uint64_t beyond = 0, total = 0;
  for (int i = 0; i < N_UTTS && rc == 0; i++) {
    double w = compare(&cfg, got[i], ref[i], frames[i], &frame_err, &beyond);
    if (w > worst) worst = w;
    total += frames[i] * nm;
  }
  CHECK(frame_err <= 1e-6, "%s: %llu values beyond 1e-4, the worst %.3g of its frame", v->label,
        (unsigned long long)beyond, frame_err);
  printf(
      "%-22s batch %8zu: max error %.2e; %llu of %llu values beyond 1e-4 (worst %.1e of frame)\n",
      v->label, cuda_plan_max_samples(gpu), worst, (unsigned long long)beyond,
      (unsigned long long)total, frame_err);

  /* f16 / bf16 on the device. A 1-ulp rule against the CPU's converted values is meaningless where
   * the ulp is far finer than the float32 tolerance (near 0 dB, near 0 in ln): a value is right
   * when it is the rounding of the GPU's own float32 value (the same kernels, then the shared
   * fc_math conversion), or lies between the roundings of ref -/+ the float32 tolerance. Every
   * remaining disagreement is printed with the float32 values behind it. */
  for (int dt = FC_DTYPE_F16; dt <= FC_DTYPE_BF16 && rc == 0; dt++) {
    rc = cuda_compute_batch(gpu, (const float *const *)pcm, lens, N_UTTS, dt, (void *const *)half);
    CHECK(rc == 0, "%s: %s batch: %s", v->label, fc_dtype_name(dt), cuda_last_error());
    uint64_t far = 0, exact = 0, total_h = 0;
    for (int i = 0; i < N_UTTS && rc == 0; i++) {
      for (uint64_t k = 0; k < frames[i] * nm; k++) {
        total_h++;
        float g32 = got[i][k], r32 = ref[i][k], gh, own, lo, hi;
        uint16_t o;
        fc_convert_dtype(&g32, 1, dt, &o);
        if (o == half[i][k]) {
          exact++;
          continue;
        }
        double tol = 1e-4;
        if (cfg.log == FC_LOG_NONE) tol *= fabs((double)r32);
        if (cfg.log == FC_LOG_DB) tol *= 10.0 / log(10.0);
        float bounds[2] = {(float)((double)r32 - tol), (float)((double)r32 + tol)};
        uint16_t hb[2];
        fc_convert_dtype(bounds, 2, dt, hb);
        gh = dt == FC_DTYPE_F16 ? fc_f16_to_f32(half[i][k]) : fc_bf16_to_f32(half[i][k]);
        own = dt == FC_DTYPE_F16 ? fc_f16_to_f32(o) : fc_bf16_to_f32(o);
        lo = dt == FC_DTYPE_F16 ? fc_f16_to_f32(hb[0]) : fc_bf16_to_f32(hb[0]);
        hi = dt == FC_DTYPE_F16 ? fc_f16_to_f32(hb[1]) : fc_bf16_to_f32(hb[1]);
        if (gh >= lo && gh <= hi) continue;
        if (far++ < 5)
          fprintf(stderr,
                  "%s %s utterance %d value %llu: GPU %s %.9g, outside [%.9g, %.9g] (the "
                  "rounding of CPU f32 %.9g -/+ %.2g); GPU f32 %.9g rounds to %.9g\n",
                  v->label, fc_dtype_name(dt), i, (unsigned long long)k, fc_dtype_name(dt),
                  (double)gh, (double)lo, (double)hi, (double)r32, tol, (double)g32, (double)own);
      }
    }
    CHECK(far == 0, "%s: %s: %llu of %llu values outside the float32 tolerance after rounding",
          v->label, fc_dtype_name(dt), (unsigned long long)far, (unsigned long long)total_h);
    printf(
        "%-22s %-4s: %llu of %llu values the rounding of the GPU's float32, the rest within "
        "the float32 tolerance\n",
        v->label, fc_dtype_name(dt), (unsigned long long)exact, (unsigned long long)total_h);
  }
  /* 16-bit PCM: the signals quantised to int16 through cuda_compute_batch_i16 (copied as int16,
   * converted on the GPU) give bit for bit what cuda_compute_batch gives on their floats. */
  if (rc == 0) {
    int16_t *q[N_UTTS];
    float *qf[N_UTTS], *a[N_UTTS], *b[N_UTTS];
    for (int i = 0; i < N_UTTS; i++) {
      q[i] = malloc(sizeof(int16_t) * lens[i]);
      qf[i] = malloc(sizeof(float) * lens[i]);
      a[i] = malloc(sizeof(float) * frames[i] * nm);
      b[i] = malloc(sizeof(float) * frames[i] * nm);
      for (size_t k = 0; k < lens[i]; k++) {
        q[i][k] = (int16_t)lrintf(pcm[i][k] * 32767.0f);
        qf[i][k] = fc_cu_i16_to_f32(q[i][k]);
      }
    }
    rc = cuda_compute_batch(gpu, (const float *const *)qf, lens, N_UTTS, FC_DTYPE_F32,
                            (void *const *)a);
    CHECK(rc == 0, "%s: float batch of 16-bit signals: %s", v->label, cuda_last_error());
    if (rc == 0) {
      rc = cuda_compute_batch_i16(gpu, (const int16_t *const *)q, lens, N_UTTS, FC_DTYPE_F32,
                                  (void *const *)b);
      CHECK(rc == 0, "%s: int16 batch: %s", v->label, cuda_last_error());
    }
    for (int i = 0; i < N_UTTS && rc == 0; i++)
      CHECK(memcmp(a[i], b[i], sizeof(float) * frames[i] * nm) == 0,
            "%s: utterance %d: int16 input gives other numbers than its floats", v->label, i);
    for (int i = 0; i < N_UTTS; i++) {
      free(q[i]);
      free(qf[i]);
      free(a[i]);
      free(b[i]);
    }
  }
  for (int i = 0; i < N_UTTS; i++) {
    free(pcm[i]);
    free(ref[i]);
    free(got[i]);
    free(half[i]);
  }
out:
  cuda_plan_free(gpu);
  fc_mel_plan_free(cpu);
}

/* ---- the gatherer from several threads ---------------------------------------------------------- */
typedef struct job {
  fc_cuda_gather *g;
  fc_mel_plan *cpu;
  const fc_mel_config *cfg;
  int id, bad;
} job;

static void *worker(void *arg) {
  job *j = arg;
  for (int k = 0; k < 6; k++) {
    size_t n = (size_t)j->cfg->sample_rate / 2 + (size_t)(j->id * 977 + k * 131);
    uint64_t f = fc_mel_num_frames(j->cfg, n);
    float *x = malloc(sizeof *x * n), *a = malloc(sizeof *a * f * j->cfg->n_mels),
          *b = malloc(sizeof *b * f * j->cfg->n_mels);
    make_signal(x, n, (uint32_t)(j->id * 100 + k), j->cfg->sample_rate);
    if (cuda_gather_compute(j->g, x, n, a) != 0)
      j->bad++;
    else if (fc_mel_compute(j->cpu, x, n, b) != 0)
      j->bad++;
    else {
      double fe = 0;
      uint64_t beyond = 0;
      compare(j->cfg, a, b, f, &fe, &beyond);
      if (fe > 1e-6) j->bad++;
    }
    free(x);
    free(a);
    free(b);
  }
  return NULL;
}

static void gather(void) {
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  enum { T = 4 };
  fc_cuda_gather *g = NULL;
  int rc = cuda_gather_create(&cfg, 0, 0, T, 0, &g);
  CHECK(rc == 0, "gather_create: %s", cuda_last_error());
  if (rc) return;
  job jobs[T];
  pthread_t th[T];
  for (int i = 0; i < T; i++) {
    jobs[i] = (job){g, NULL, &cfg, i, 0};
    fc_mel_plan_create(&cfg, &jobs[i].cpu);
    pthread_create(&th[i], NULL, worker, &jobs[i]);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    CHECK(jobs[i].bad == 0, "gather worker %d: %d bad results", i, jobs[i].bad);
    fc_mel_plan_free(jobs[i].cpu);
  }
  /* errors detected before queueing */
  float x[4] = {0};
  float out[1];
  CHECK(cuda_gather_compute(g, x, 1, out) == FC_EEMPTY, "1 sample");
  cuda_gather_free(g);
  printf("gatherer: %d threads x 6 utterances agree with the CPU\n", T);
}

/* ---- errors --------------------------------------------------------------------------------- */
static void errors(void) {
  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  fc_cuda_plan *p = NULL;
  int rc = cuda_plan_create(&cfg, 0, 65536, &p);
  CHECK(rc == 0, "plan: %s", cuda_last_error());
  if (rc) return;
  float *x = calloc(65537, sizeof *x), *out = malloc(sizeof(float) * 80 * 300);
  const float *xs[1] = {x};
  size_t n = 65537;
  void *outs[1] = {out};
  CHECK(cuda_compute_batch(p, xs, &n, 1, 0, outs) == FC_ETOOLONG, "too long");
  n = 10;
  CHECK(cuda_compute_batch(p, xs, &n, 1, 0, outs) == FC_EEMPTY, "empty");
  CHECK(cuda_compute_batch(p, xs, &n, 1, FC_DTYPE_I32, outs) == FC_ECONFIG, "dtype");
  n = 4096;
  CHECK(cuda_compute_batch(p, xs, &n, 1, 0, outs) == 0, "still usable: %s", cuda_last_error());
  cuda_plan_free(p);

  /* Injected failures (test builds): the n-th checked CUDA/cuFFT call fails, for n = 1, 2, ...
   * until a plan is made and a batch computed: each failure is FC_ECUDA naming the call, and a plan
   * that failed refuses further work (FC_EBADSTATE). */
  int steps = 0, ok = 0;
  for (int k = 1; k < 200 && !ok; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "cuda:%d", k);
    setenv("FC_FAULT", spec, 1);
    p = NULL;
    rc = cuda_plan_create(&cfg, 0, 65536, &p);
    if (rc == 0) rc = cuda_compute_batch(p, xs, &n, 1, 0, outs);
    if (rc == 0) {
      ok = 1;
    } else {
      CHECK(rc == FC_ECUDA, "fault %d: rc %d (%s)", k, rc, fc_strerror(rc));
      CHECK(strchr(cuda_last_error(), ':') != NULL, "fault %d: message \"%s\"", k,
            cuda_last_error());
      if (p) CHECK(cuda_compute_batch(p, xs, &n, 1, 0, outs) == FC_EBADSTATE, "sticky");
      steps++;
    }
    cuda_plan_free(p);
  }
  unsetenv("FC_FAULT");
  if (steps == 0)
    printf("fault injection not compiled in; skipped that part\n");
  else
    CHECK(ok, "never succeeded after %d injected failures", steps);
  printf("errors: too long, empty, dtype; %d injected CUDA failures each clean and sticky\n",
         steps);
  free(x);
  free(out);
}

int main(void) {
  int n = 0;
  char why[256];
  if (cuda_device_count(&n, why, sizeof why) != 0) {
    printf("%s\n", why);
    return 77;
  }
  char desc[256];
  cuda_device_describe(0, desc, sizeof desc);
  printf("device 0: %s\n", desc);
  const char *const *names = fc_mel_preset_names();
  for (int i = 0; names[i]; i++) {
    variant v = {names[i], names[i], -1, 0, 0};
    parity(&v, 0);
    /* a small staging buffer: many chunks, both streams, utterances clamped to it */
    parity(&v, strcmp(v.preset, "librosa") == 0 ? 70000 : 40000);
  }
  variant db = {"librosa", "librosa --log db", FC_LOG_DB, 80.0, 0};
  variant l10 = {"tacotron2", "tacotron2 --log log10", FC_LOG_LOG10, 0.0, 0};
  variant nosnip = {"kaldi", "kaldi --snip-edges false", -1, 0.0, 1};
  parity(&db, 0);
  parity(&l10, 50000);
  parity(&nosnip, 40000);
  gather();
  errors();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok: CUDA agrees with the CPU backend\n");
  return 0;
}
