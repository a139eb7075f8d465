/* GPU throughput benchmark (a measurement, not a timed assertion): hifigan features of 6-second
 * utterances through cuda_compute_batch, against one CPU thread of fc_mel_compute on the same
 * signals, side by side in one run. Prints realtime factors, frames per second and the plan's
 * memory, and checks the GPU's output of the timed run against the CPU's (exit 1 when it differs);
 * scripts/gpu-check collects the lines that start with "bench:". Without a usable GPU:
 * exit 77 (skipped) with the reason. FC_BENCH_UTTS overrides the number of utterances (256). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cuda/cuda_api.h"
#include "featcache/fc_mel.h"

#include "tests/unit/mel_signal.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The GPU's output of utterance i against fc_mel_compute on the CPU: frame counts are the plan's,
 * values within 1e-4 (absolute on log outputs, relative on linear ones, in ln units for dB), the
 * float32-FFT allowance for bands far below their frame's peak (1e-6 of the frame's largest band
 * in the linear domain; docs/ACCURACY.md). Returns the number of values outside both. */
static uint64_t check_output(const fc_mel_config *c, const float *got, const float *ref,
                             uint64_t frames, double *worst) {
  const uint32_t nm = c->n_mels;
  uint64_t bad = 0;
  for (uint64_t t = 0; t < frames; t++) {
    double fmax_lin = 1e-30;
    for (uint32_t m = 0; m < nm; m++) fmax_lin = fmax(fmax_lin, to_linear(c, ref[t * nm + m]));
    for (uint32_t m = 0; m < nm; m++) {
      uint64_t i = t * nm + m;
      double e = fabs((double)got[i] - (double)ref[i]);
      if (c->log == FC_LOG_NONE) e /= fmax(fabs((double)ref[i]), 1e-30);
      if (c->log == FC_LOG_DB) e /= 10.0 / log(10.0);
      if (e <= 1e-4) {
        if (e > *worst) *worst = e;
        continue;
      }
      if (!(fabs(to_linear(c, got[i]) - to_linear(c, ref[i])) / fmax_lin <= 1e-6)) {
        if (bad++ < 3)
          fprintf(stderr, "bench: %s frame %llu band %u: GPU %.9g, CPU %.9g\n", c->preset,
                  (unsigned long long)t, m, (double)got[i], (double)ref[i]);
      }
    }
  }
  return bad;
}

static int bench(const char *preset, size_t n_utts, double seconds) {
  fc_mel_config cfg;
  if (fc_mel_preset(preset, &cfg)) return 1;
  const size_t n = (size_t)(seconds * cfg.sample_rate);
  const uint64_t f = fc_mel_num_frames(&cfg, n);
  float **pcm = calloc(n_utts, sizeof *pcm), **out = calloc(n_utts, sizeof *out);
  size_t *lens = calloc(n_utts, sizeof *lens);
  for (size_t i = 0; i < n_utts; i++) {
    lens[i] = n;
    pcm[i] = malloc(sizeof(float) * n);
    out[i] = malloc(sizeof(float) * f * cfg.n_mels);
    for (uint64_t k = 0; k < f * cfg.n_mels; k++) out[i][k] = NAN; /* unwritten fails the check */
    make_signal(pcm[i], n, (uint32_t)i, cfg.sample_rate);
  }
  fc_cuda_plan *p = NULL;
  int rc = cuda_plan_create(&cfg, 0, 0, &p);
  if (rc) {
    fprintf(stderr, "cuda_plan_create: %s\n", cuda_last_error());
    return 1;
  }
  size_t dev = 0, pinned = 0;
  cuda_plan_bytes(p, &dev, &pinned);
  /* warm-up (module load, first launches), then the best of 3 */
  rc = cuda_compute_batch(p, (const float *const *)pcm, lens, n_utts, FC_DTYPE_F32,
                          (void *const *)out);
  double best = 1e9;
  for (int r = 0; r < 3 && !rc; r++) {
    double t0 = now();
    rc = cuda_compute_batch(p, (const float *const *)pcm, lens, n_utts, FC_DTYPE_F32,
                            (void *const *)out);
    double t = now() - t0;
    if (t < best) best = t;
  }
  if (rc) {
    fprintf(stderr, "cuda_compute_batch: %s\n", cuda_last_error());
    cuda_plan_free(p);
    return 1;
  }
  fc_mel_plan *cpu = NULL;
  fc_mel_plan_create(&cfg, &cpu);
  size_t cpu_utts = n_utts < 8 ? n_utts : 8;
  float *ref = malloc(sizeof(float) * f * cfg.n_mels);
  double t0 = now(), cpu_t = 0, worst = 0;
  uint64_t bad = 0;
  /* The CPU's time on the first cpu_utts utterances, each checked against the GPU's output of the
   * last timed run: a benchmark of wrong numbers is no benchmark. */
  for (size_t i = 0; i < cpu_utts; i++) {
    t0 = now();
    fc_mel_compute(cpu, pcm[i], n, ref);
    cpu_t += now() - t0;
    bad += check_output(&cfg, out[i], ref, f, &worst);
  }
  free(ref);
  if (bad) {
    fprintf(stderr, "bench: %s: %llu GPU values disagree with the CPU's\n", preset,
            (unsigned long long)bad);
    rc = 1;
  }
  const double audio = seconds * (double)n_utts;
  printf(
      "bench: %-9s gpu %zu x %.0f s utterances in %.4f s: %.0f x realtime, %.3g frames/s "
      "(plan: %.0f MiB device, %.0f MiB pinned)\n",
      preset, n_utts, seconds, best, audio / best, (double)f * (double)n_utts / best,
      (double)dev / 1048576.0, (double)pinned / 1048576.0);
  printf(
      "bench: %-9s cpu 1 thread: %.0f x realtime; gpu / cpu-thread = %.1f; output of %zu "
      "utterances checked against the CPU's: %s (max error %.1e)\n",
      preset, seconds * (double)cpu_utts / cpu_t,
      (audio / best) / (seconds * (double)cpu_utts / cpu_t), cpu_utts, bad ? "DIFFERENT" : "same",
      worst);
  fc_mel_plan_free(cpu);
  cuda_plan_free(p);
  for (size_t i = 0; i < n_utts; i++) {
    free(pcm[i]);
    free(out[i]);
  }
  free(pcm);
  free(out);
  free(lens);
  return rc;
}

int main(void) {
  int n = 0;
  char why[256], desc[256];
  if (cuda_device_count(&n, why, sizeof why) != 0) {
    printf("%s\n", why);
    return 77;
  }
  cuda_device_describe(0, desc, sizeof desc);
  printf("bench: device 0: %s\n", desc);
  const char *e = getenv("FC_BENCH_UTTS");
  size_t utts = e && atoi(e) > 0 ? (size_t)atoi(e) : 256;
  int rc = 0;
  const char *presets[] = {"hifigan", "whisper", "kaldi", "librosa"};
  for (int i = 0; i < 4; i++) rc |= bench(presets[i], utts, 6.0);
  return rc;
}
