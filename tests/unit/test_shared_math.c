/* The CUDA kernels' bodies run on the host: every index the GPU would run, for every preset,
 * against the CPU backend.
 *
 * kernels/cuda/mel_kernels.h holds the body of each kernel as an FC_HD function of (thread index,
 * parameters); mel_cuda.cu's kernels are thin loops around them. Here the same functions are called
 * from host loops over all indices of a packed chunk of several utterances (odd lengths included),
 * with FFTW standing in for cuFFT on the same in-place row layout, and the result is compared with
 * fc_mel_compute utterance by utterance: frame counts exact, values within 1e-5 (absolute on log
 * outputs, relative on linear ones). The tables (window, sparse filterbank) the CUDA plan uploads
 * are checked bit for bit against the CPU plan's, and the dtype store against fc_convert_dtype.
 * So the CPU test suite exercises the GPU's index arithmetic on every machine. */
#include <fftw3.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featcache/fc_mel.h"
#include "kernels/cuda/mel_kernels.h"

#include "tests/check.h"
#include "tests/unit/mel_signal.h"

typedef struct variant {
  const char *preset;
  const char *label;
  int log; /* -1: the preset's */
  double top_db;
  int no_snip; /* Kaldi's snip_edges false */
} variant;

/* Run one chunk through the kernel bodies and compare with fc_mel_compute. Returns the max error. */
static double run_variant(const variant *v) {
  fc_mel_config cfg;
  if (fc_mel_preset(v->preset, &cfg)) {
    CHECK(0, "preset %s missing", v->preset);
    return 0;
  }
  if (v->log >= 0) {
    cfg.log = (fc_log)v->log;
    cfg.top_db = v->top_db;
    if (cfg.log == FC_LOG_DB) cfg.log_floor = 1e-10;
    fc_mel_config_settle_preset(&cfg);
  }
  if (v->no_snip) {
    cfg.no_snip_edges = 1;
    fc_mel_config_settle_preset(&cfg);
  }
  char why[256];
  CHECK(fc_mel_config_validate(&cfg, why, sizeof why) == 0, "%s: invalid config: %s", v->label,
        why);
  fc_mel_plan *plan = NULL;
  CHECK(fc_mel_plan_create(&cfg, &plan) == 0, "%s: fc_mel_plan_create", v->label);
  if (!plan) return 0;

  fc_cu_params P;
  memset(&P, 0, sizeof P);
  fc_cu_params_init(&P, &cfg);
  const uint32_t nm = cfg.n_mels, nb = P.nbins, row = P.row;

  /* Tables as cuda_host.c builds them, against the CPU plan's. */
  float *window = malloc(sizeof *window * cfg.win_length);
  uint32_t *bands = malloc(sizeof *bands * 3 * nm);
  float *weights = NULL;
  size_t n_weights = 0;
  CHECK(window && bands &&
            fc_cu_build_tables(&cfg, fc_mel_config_fmax(&cfg), window, bands, &weights,
                               &n_weights) == 0,
        "tables");
  float *cpu_win = malloc(sizeof *cpu_win * cfg.n_fft);
  float *cpu_fb = malloc(sizeof *cpu_fb * (size_t)nm * nb);
  float *gpu_fb = calloc((size_t)nm * nb, sizeof *gpu_fb);
  fc_mel_window(plan, cpu_win);
  fc_mel_filterbank_dense(plan, cpu_fb);
  for (uint32_t m = 0; m < nm; m++)
    for (uint32_t j = 0; j < bands[nm + m]; j++)
      gpu_fb[(size_t)m * nb + bands[m] + j] = weights[bands[2 * nm + m] + j];
  CHECK(memcmp(cpu_win + P.woff, window, sizeof *window * cfg.win_length) == 0,
        "%s: window differs from the CPU plan's", v->label);
  CHECK(memcmp(cpu_fb, gpu_fb, sizeof *gpu_fb * nm * nb) == 0,
        "%s: sparse filterbank differs from the CPU plan's dense one", v->label);
  P.window = window;
  P.mel_first = bands;
  P.mel_count = bands + nm;
  P.mel_offset = bands + 2 * nm;
  P.mel_weights = weights;

  /* A chunk of utterances of awkward lengths: the shortest that gives a frame, one frame's extent
   * minus one and plus one, a hop off a frame boundary, shorter than the pad (reflect wraps),
   * 1 s, and 1.37 s. */
  const uint32_t extent = cfg.window_align == FC_ALIGN_LEFT ? cfg.win_length : cfg.n_fft;
  size_t lens[8];
  size_t n_utts = 0;
  size_t shortest = 1;
  while (fc_mel_num_frames(&cfg, shortest) == 0) shortest++;
  lens[n_utts++] = shortest;
  lens[n_utts++] = extent + 1;
  lens[n_utts++] = extent > 1 ? extent - 1 : 1;
  lens[n_utts++] = 3 * (size_t)cfg.hop_length + 7;
  lens[n_utts++] = P.origin < -4 ? (size_t)(-P.origin) / 2 : 2;
  lens[n_utts++] = cfg.sample_rate;
  lens[n_utts++] = (size_t)(cfg.sample_rate * 1.37);
  size_t kept = 0;
  for (size_t i = 0; i < n_utts; i++)
    if (fc_mel_num_frames(&cfg, lens[i]) > 0) lens[kept++] = lens[i];
  n_utts = kept;

  uint64_t sample_off[8], utt_len[8], frame_off[9];
  uint64_t samples = 0, frames = 0;
  for (size_t u = 0; u < n_utts; u++) {
    sample_off[u] = samples;
    utt_len[u] = lens[u];
    frame_off[u] = frames;
    samples += lens[u];
    frames += fc_mel_num_frames(&cfg, lens[u]);
  }
  frame_off[n_utts] = frames;
  float *pcm = malloc(sizeof *pcm * samples);
  for (size_t u = 0; u < n_utts; u++)
    make_signal(pcm + sample_off[u], lens[u], (uint32_t)u, cfg.sample_rate);
  P.n_utts = (uint32_t)n_utts;
  P.utt_sample_off = sample_off;
  P.utt_len = utt_len;
  P.utt_frame_off = frame_off;

  /* frames kernel: every (frame, position) */
  float *rows = fftwf_malloc(sizeof(float) * frames * row);
  int n = (int)cfg.n_fft;
  fftwf_plan fft = fftwf_plan_many_dft_r2c(1, &n, (int)frames, rows, NULL, 1, (int)row,
                                           (fftwf_complex *)rows, NULL, 1, (int)nb, FFTW_ESTIMATE);
  for (uint64_t g = 0; g < frames; g++) {
    uint32_t u = fc_cu_frame_utt(&P, g);
    CHECK(frame_off[u] <= g && g < frame_off[u + 1], "frame %llu mapped to utterance %u",
          (unsigned long long)g, u);
    double mean = 0;
    if (P.remove_dc) {
      double s = 0;
      for (uint32_t j = 0; j < P.win; j++) s += (double)fc_cu_segment_sample(&P, pcm, u, g, j);
      mean = s / (double)P.win;
    }
    for (uint32_t pos = 0; pos < row; pos++)
      rows[g * row + pos] = fc_cu_frame_value(&P, pcm, u, g, pos, mean);
  }
  /* cuFFT's in-place R2C on the same layout */
  fftwf_execute(fft);
  fftwf_destroy_plan(fft);

  /* mel kernel: spectrum of the frame, then every band */
  float *spec = malloc(sizeof *spec * nb);
  float *mel = malloc(sizeof *mel * frames * nm);
  for (uint64_t g = 0; g < frames; g++) {
    for (uint32_t k = 0; k < nb; k++) spec[k] = fc_cu_spectrum(&P, rows + g * row, k);
    for (uint32_t m = 0; m < nm; m++) mel[g * nm + m] = fc_cu_mel_value(&P, spec, m);
  }
  /* utterance max kernel, then finish kernel (f32) */
  float umax[8];
  for (uint32_t u = 0; u < n_utts; u++) {
    float mx = -FLT_MAX;
    for (uint64_t i = frame_off[u] * nm; i < frame_off[u + 1] * nm; i++)
      mx = mel[i] > mx ? mel[i] : mx;
    umax[u] = mx;
  }
  float *out = malloc(sizeof *out * frames * nm);
  for (uint64_t i = 0; i < frames * nm; i++)
    fc_cu_store(out, i, fc_cu_finish_value(&P, i, mel[i], umax), FC_DTYPE_F32);

  /* against the CPU backend */
  const int is_log = cfg.log != FC_LOG_NONE;
  double worst = 0, worst_frame = 0;
  for (size_t u = 0; u < n_utts; u++) {
    uint64_t f = fc_mel_num_frames(&cfg, lens[u]);
    CHECK(f == frame_off[u + 1] - frame_off[u], "%s: utterance %zu frames", v->label, u);
    CHECK(f == fc_frames_for(lens[u], cfg.center, cfg.n_fft, cfg.win_length, cfg.hop_length,
                             cfg.pad, cfg.window_align, cfg.drop_last_frame, cfg.no_snip_edges),
          "%s: fc_frames_for disagrees with fc_mel_num_frames for %zu samples", v->label, lens[u]);
    float *ref = malloc(sizeof *ref * f * nm);
    CHECK(fc_mel_compute(plan, pcm + sample_off[u], lens[u], ref) == 0, "fc_mel_compute");
    const float *got = out + frame_off[u] * nm;
    /* Errors: absolute on log outputs, relative on linear ones; where that exceeds 1e-5 the value
     * must still agree to 2e-6 of its frame's largest band in the linear domain. float32 FFT
     * rounding is relative to the frame's energy, so bands far below it (Kaldi's pre-emphasis puts
     * the lowest bands 30 dB down) differ by more than 1e-5 between any two FFT algorithms; an
     * index mistake gives errors of 1e-3 of the frame or more. */
    double err_u = 0, frame_err = 0;
    uint64_t at = 0;
    for (uint64_t t = 0; t < f; t++) {
      double fmax_lin = 0;
      for (uint32_t m = 0; m < nm; m++) fmax_lin = fmax(fmax_lin, to_linear(&cfg, ref[t * nm + m]));
      for (uint32_t m = 0; m < nm; m++) {
        uint64_t i = t * nm + m;
        double e = fabs((double)got[i] - (double)ref[i]);
        if (!is_log) e /= fmax(fabs((double)ref[i]), 1e-30);
        if (cfg.log == FC_LOG_DB) e /= 10.0 / log(10.0); /* dB: 4.34 x the ln scale */
        if (!(e <= 1e-5)) {
          double fe = fabs(to_linear(&cfg, got[i]) - to_linear(&cfg, ref[i])) / fmax_lin;
          if (!(fe <= frame_err)) frame_err = fe;
          if (!(fe <= 2e-6)) {
            at = i;
            err_u = e;
          }
          continue;
        }
        if (e > err_u && !(frame_err > 2e-6)) err_u = e;
      }
    }
    CHECK(frame_err <= 2e-6,
          "%s: utterance %zu (%zu samples): %s error %.3g (%.3g of the frame) "
          "at frame %llu band %llu: got %.9g, CPU %.9g (check the frame/pad/window index "
          "arithmetic in mel_kernels.h)",
          v->label, u, lens[u], is_log ? "abs" : "rel", err_u, frame_err,
          (unsigned long long)(at / nm), (unsigned long long)(at % nm), got[at], ref[at]);
    if (frame_err > worst_frame) worst_frame = frame_err;
    if (err_u > worst) worst = err_u;

    /* the dtype store against the CPU conversion, bit for bit, on the CPU's values */
    uint16_t *h_gpu = malloc(sizeof *h_gpu * f * nm), *h_cpu = malloc(sizeof *h_cpu * f * nm);
    for (int dt = FC_DTYPE_F16; dt <= FC_DTYPE_BF16; dt++) {
      for (uint64_t i = 0; i < f * nm; i++) fc_cu_store(h_gpu, i, ref[i], dt);
      fc_convert_dtype(ref, f * nm, dt, h_cpu);
      CHECK(memcmp(h_gpu, h_cpu, sizeof *h_cpu * f * nm) == 0, "%s: %s store differs", v->label,
            fc_dtype_name(dt));
    }
    free(h_gpu);
    free(h_cpu);
    free(ref);
  }
  printf(
      "%-22s %zu utterances, %6llu frames: max %s error %.2e within 1e-5; "
      "others %.2e of their frame\n",
      v->label, n_utts, (unsigned long long)frames, is_log ? "abs" : "rel", worst, worst_frame);

  free(out);
  free(mel);
  free(spec);
  fftwf_free(rows);
  free(pcm);
  free(cpu_win);
  free(cpu_fb);
  free(gpu_fb);
  free(weights);
  free(bands);
  free(window);
  fc_mel_plan_free(plan);
  return worst;
}

/* The binary search over frame offsets, on its own: empty tables, one utterance, many. */
static void test_frame_utt(void) {
  uint64_t off[6] = {0, 3, 3, 10, 11, 20}; /* utterance 1 has no frames (never owns one) */
  fc_cu_params P;
  memset(&P, 0, sizeof P);
  P.n_utts = 5;
  P.utt_frame_off = off;
  for (uint64_t g = 0; g < 20; g++) {
    uint32_t u = fc_cu_frame_utt(&P, g);
    CHECK(off[u] <= g && g < off[u + 1], "frame %llu -> utterance %u", (unsigned long long)g, u);
  }
  P.n_utts = 1;
  CHECK(fc_cu_frame_utt(&P, 2) == 0, "single utterance");
}

int main(void) {
  test_frame_utt();
  const char *const *names = fc_mel_preset_names();
  int n_presets = 0;
  for (; names[n_presets]; n_presets++) {
    variant v = {names[n_presets], names[n_presets], -1, 0, 0};
    run_variant(&v);
  }
  CHECK(n_presets >= 5, "expected the five presets, got %d", n_presets);
  /* The per-utterance clamp of power_to_db (top_db) and plain log10, on librosa's framing. */
  variant db = {"librosa", "librosa --log db", FC_LOG_DB, 80.0, 0};
  variant l10 = {"tacotron2", "tacotron2 --log log10", FC_LOG_LOG10, 0.0, 0};
  /* Kaldi's unsnipped frames: the mirrored edges, through the GPU's parameters */
  variant nosnip = {"kaldi", "kaldi --snip-edges false", -1, 0.0, 1};
  run_variant(&db);
  run_variant(&l10);
  run_variant(&nosnip);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok: the CUDA kernel bodies agree with the CPU backend for every preset\n");
  return 0;
}
