/* fc_mel.h: plans are made and freed from several threads at once safely, the library serializing
 * its FFTW planner calls; a program that plans with FFTW itself makes FFTW's planner thread-safe
 * (fftwf_make_planner_thread_safe) and may then plan beside it. Eight threads create, compute
 * with and free plans of four configs at once (two of prime FFT sizes), 64 times each (computing with one in eight), every output bit-identical to the
 * one a plan made alone computes. Then again with a ninth thread that plans and runs FFTW
 * transforms of its own the whole time, FFTW's planner made thread-safe first
 * (fftwf_make_planner_thread_safe of libfftw3f_threads, loaded at run time; said and left out
 * where it is not installed). Red with the library's planner lock removed (the first run). */
#include <dlfcn.h>
#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featcache/fc_mel.h"

#include "tests/check.h"

#define N_PRESETS 4
#define N_THREADS 8
#define ROUNDS 64
#define N_SAMPLES 16000

static const char *const presets[N_PRESETS] = {"hifigan", "whisper", "librosa", "librosa"};
static const uint32_t n_ffts[N_PRESETS] = {0, 0, 1031, 1999}; /* prime sizes: FFTW plans longer */

static int config(int i, fc_mel_config *c) {
  int rc = fc_mel_preset(presets[i], c);
  if (!rc && n_ffts[i]) c->n_fft = c->win_length = n_ffts[i];
  return rc;
}
static float samples[N_SAMPLES];
static float *want[N_PRESETS];
static uint64_t frames[N_PRESETS], bands[N_PRESETS];
static atomic_int bad, done;

static void *plan_loop(void *arg) {
  int k = (int)(intptr_t)arg;
  for (int r = 0; r < ROUNDS; r++) {
    int i = (k + r) % N_PRESETS;
    fc_mel_config c;
    fc_mel_plan *p = NULL;
    if (config(i, &c) || fc_mel_plan_create(&c, &p)) {
      atomic_fetch_add(&bad, 1);
      continue;
    }
    if (r % 32 < N_PRESETS) { /* a computation now and then; mostly planning, where it races */
      float *out = malloc(sizeof *out * frames[i] * bands[i]);
      if (!out || fc_mel_compute(p, samples, N_SAMPLES, out) ||
          memcmp(out, want[i], sizeof *out * frames[i] * bands[i]) != 0)
        atomic_fetch_add(&bad, 1);
      free(out);
    }
    fc_mel_plan_free(p);
  }
  return NULL;
}

/* A program's own FFTW use beside the library's: plans of its own, made and destroyed in a loop,
 * each transform of an impulse checked (all ones). */
static void *own_fftw_loop(void *arg) {
  (void)arg;
  int n = 64, fails = 0;
  float *in = fftwf_malloc(sizeof *in * 96);
  fftwf_complex *out = fftwf_malloc(sizeof *out * (96 / 2 + 1));
  for (int r = 0; !atomic_load(&done) || r < 8; r++) {
    fftwf_plan pl = fftwf_plan_dft_r2c_1d(n, in, out, FFTW_ESTIMATE);
    memset(in, 0, sizeof *in * n);
    in[0] = 1;
    fftwf_execute(pl);
    for (int b = 0; b <= n / 2; b++)
      fails += fabsf(out[b][0] - 1) > 1e-6f || fabsf(out[b][1]) > 1e-6f;
    fftwf_destroy_plan(pl);
    n = n == 64 ? 96 : 64;
  }
  fftwf_free(in);
  fftwf_free(out);
  return (void *)(intptr_t)fails;
}

static void run(int own_fftw) {
  pthread_t t[N_THREADS], own;
  atomic_store(&bad, 0);
  atomic_store(&done, 0);
  for (int k = 0; k < N_THREADS; k++)
    CHECK(pthread_create(&t[k], NULL, plan_loop, (void *)(intptr_t)k) == 0);
  if (own_fftw) CHECK(pthread_create(&own, NULL, own_fftw_loop, NULL) == 0);
  for (int k = 0; k < N_THREADS; k++) pthread_join(t[k], NULL);
  atomic_store(&done, 1);
  void *own_fails = NULL;
  if (own_fftw) pthread_join(own, &own_fails);
  CHECK(atomic_load(&bad) == 0, "%s: %d of %d plans failed or computed other bits",
        own_fftw ? "beside the program's FFTW" : "alone", atomic_load(&bad), N_THREADS * ROUNDS);
  CHECK(own_fails == NULL, "the program's own transforms: %d wrong bins", (int)(intptr_t)own_fails);
}

int main(void) {
  for (int j = 0; j < N_SAMPLES; j++)
    samples[j] = 0.5f * sinf(0.05f * (float)j) + 0.1f * sinf(0.31f * (float)j);
  for (int i = 0; i < N_PRESETS; i++) { /* each preset's output from a plan made alone */
    fc_mel_config c;
    fc_mel_plan *p;
    CHECK(config(i, &c) == 0 && fc_mel_plan_create(&c, &p) == 0, "config %d", i);
    frames[i] = fc_mel_num_frames(&c, N_SAMPLES);
    bands[i] = c.n_mels;
    want[i] = malloc(sizeof *want[i] * frames[i] * bands[i]);
    CHECK(fc_mel_compute(p, samples, N_SAMPLES, want[i]) == 0);
    fc_mel_plan_free(p);
  }
  /* the library's plans alone: its own lock serializes its planner calls */
  run(0);
  /* then beside the program's own FFTW use, its planner made thread-safe as fc_mel.h says to
   * (after the run above: FFTW's planner lock cannot be taken off again) */
  void *th = dlopen("libfftw3f_threads.so.3", RTLD_NOW | RTLD_GLOBAL);
  void (*safe)(void) = th ? (void (*)(void))dlsym(th, "fftwf_make_planner_thread_safe") : NULL;
  if (safe) {
    safe();
    run(1);
  } else {
    printf("mel_plan_threads: no libfftw3f_threads.so.3: the program's own FFTW thread left out\n");
  }
  for (int i = 0; i < N_PRESETS; i++) free(want[i]);
  return fc_check_result("mel_plan_threads");
}
