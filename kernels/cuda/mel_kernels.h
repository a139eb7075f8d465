/* The bodies of the CUDA backend's kernels, as FC_HD functions of (thread index, parameters).
 *
 * Each __global__ kernel in mel_cuda.cu is a thin loop over its threads that calls one function
 * here; tests/unit/test_shared_math.c calls the same functions from host loops over every index
 * and compares the result with fc_mel_compute for every preset. So the index arithmetic the GPU
 * runs (which utterance a frame belongs to, where a frame starts in the packed PCM, the padded
 * source index, the window offset, the in-place R2C row layout, the sparse mel rows, the
 * per-utterance clamp, the dtype conversion) is exercised on every machine, GPU or not.
 *
 * Layout of one chunk (several utterances packed together):
 *   pcm      the utterances' samples back to back; utterance u starts at utt_sample_off[u]
 *   frames   global frame g of utterance u is its frame g - utt_frame_off[u];
 *            utt_frame_off has n_utts + 1 entries (prefix sums of the frame counts)
 *   rows     frame g is row g of `row` floats (row = 2 (n_fft/2 + 1)): the n_fft real inputs of an
 *            in-place cuFFT R2C, whose output overwrites the row as n_fft/2 + 1 complex bins
 *   mel      [total frames][n_mels] float32, time-major: utterance u is one contiguous slice
 * Pure C11 when not compiled by nvcc. */
#ifndef FC_CUDA_MEL_KERNELS_H
#define FC_CUDA_MEL_KERNELS_H

#include <stdint.h>

#include "kernels/fc_math.h"

/* Everything the kernels read, passed by value at launch. Pointers are device pointers on the GPU
 * and host pointers in the host test. */
typedef struct fc_cu_params {
  uint32_t n_fft, win, hop, woff, nbins, n_mels;
  uint32_t row; /* floats per frame row: 2 * nbins */
  int64_t origin; /* signal index of frame 0's first window sample (fc_frame_origin) */
  int pad_mode;
  int no_snip; /* Kaldi's snip_edges false: edges mirrored (fc_frame_sample) */
  int remove_dc;
  int log_mode;
  int needs_max; /* fc_log_needs_max(log_mode, top_db) */
  float scale; /* 32768 for int16_scale, else 1 */
  float power, mag_eps, log_floor, top_db;
  double preemph; /* 0 = off */
  uint32_t n_utts;
  const uint64_t *utt_sample_off; /* n_utts */
  const uint64_t *utt_len; /* n_utts */
  const uint64_t *utt_frame_off; /* n_utts + 1 */
  const float *window; /* win values (float, as the CPU backend rounds them) */
  const uint32_t *mel_first; /* per band: first bin with a nonzero weight */
  const uint32_t *mel_count; /* per band: bins in its span */
  const uint32_t *mel_offset; /* per band: start of its weights in mel_weights */
  const float *mel_weights;
} fc_cu_params;

/* Utterance of global frame g: the last u with utt_frame_off[u] <= g (binary search, n_utts >= 1,
 * g < utt_frame_off[n_utts]). Utterances with no frames never own one. */
static inline FC_HD uint32_t fc_cu_frame_utt(const fc_cu_params *P, uint64_t g) {
  uint32_t lo = 0, hi = P->n_utts; /* answer in [lo, hi) */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (P->utt_frame_off[mid] <= g)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Sample j (0 <= j < win) of the window-length segment of global frame g (utterance u), scaled,
 * before DC removal, pre-emphasis and window: fc_frame_sample on the utterance's slice. */
static inline FC_HD float fc_cu_segment_sample(const fc_cu_params *P, const float *pcm, uint32_t u,
                                               uint64_t g, uint32_t j) {
  uint64_t t = g - P->utt_frame_off[u];
  return fc_frame_sample(pcm + P->utt_sample_off[u], P->utt_len[u], t, j, P->hop, P->origin,
                         P->pad_mode, P->no_snip, P->scale);
}

/* Value at position pos (0 <= pos < row) of frame g's FFT input row, given the segment's mean
 * (used only with remove_dc; the caller sums fc_cu_segment_sample over j in double). Positions
 * outside the window, and the two padding floats of the in-place row, are zero. Mirrors
 * mel_cpu.c fill_frame: double arithmetic when DC removal or pre-emphasis is on, float otherwise. */
static inline FC_HD float fc_cu_frame_value(const fc_cu_params *P, const float *pcm, uint32_t u,
                                            uint64_t g, uint32_t pos, double mean) {
  if (pos < P->woff || pos >= P->woff + P->win) return 0.0f;
  uint32_t j = pos - P->woff;
  float s = fc_cu_segment_sample(P, pcm, u, g, j);
  if (P->remove_dc || P->preemph > 0) {
    double m = P->remove_dc ? mean : 0.0;
    double d = (double)s - m;
    if (P->preemph > 0) {
      /* Kaldi: x[j] -= p x[j-1] for j > 0, x[0] -= p x[0] (on the DC-removed values). */
      double prev = j > 0 ? (double)fc_cu_segment_sample(P, pcm, u, g, j - 1) - m : d;
      d = d - P->preemph * prev;
    }
    return (float)(d * (double)P->window[j]);
  }
  return s * P->window[j];
}

/* |X|^power of bin k of a transformed row (interleaved re, im). */
static inline FC_HD float fc_cu_spectrum(const fc_cu_params *P, const float *row, uint32_t k) {
  return fc_spectrum_value(row[2 * k], row[2 * k + 1], P->power, P->mag_eps);
}

/* Band m of one frame from its spectrum (nbins values): the sparse weighted sum, in the CPU
 * backend's order (four running sums), then the first log stage. */
static inline FC_HD float fc_cu_mel_value(const fc_cu_params *P, const float *spec, uint32_t m) {
  const float *w = P->mel_weights + P->mel_offset[m];
  const float *s = spec + P->mel_first[m];
  const uint32_t cnt = P->mel_count[m];
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  uint32_t j = 0;
  for (; j + 4 <= cnt; j += 4) {
    a0 += w[j] * s[j];
    a1 += w[j + 1] * s[j + 1];
    a2 += w[j + 2] * s[j + 2];
    a3 += w[j + 3] * s[j + 3];
  }
  for (; j < cnt; j++) a0 += w[j] * s[j];
  return fc_log_compress((a0 + a1) + (a2 + a3), P->log_mode, P->log_floor);
}

/* Final value of element i of the chunk's mel array (first-stage value x), given the maxima of
 * the first stage per utterance (only read when needs_max). */
static inline FC_HD float fc_cu_finish_value(const fc_cu_params *P, uint64_t i, float x,
                                             const float *utt_max) {
  if (!P->needs_max) return x;
  uint32_t u = fc_cu_frame_utt(P, i / P->n_mels);
  return fc_log_finish(x, utt_max[u], P->log_mode, P->top_db);
}

/* A 16-bit PCM sample as the CPU path reads it (libcache/mel/featurize/audio.c, libsndfile's
 * normalisation): v / 32768 as a float product, exact. 16-bit sources cross PCIe as int16 and are
 * converted on the GPU with this. */
static inline FC_HD float fc_cu_i16_to_f32(int16_t v) { return (float)v * (1.0f / 32768.0f); }

/* Store v as element i of an output array of dtype FC_DTYPE_F32, F16 or BF16. */
static inline FC_HD void fc_cu_store(void *out, uint64_t i, float v, int dtype) {
  if (dtype == FC_DTYPE_F16)
    ((uint16_t *)out)[i] = fc_math_f32_to_f16(v);
  else if (dtype == FC_DTYPE_BF16)
    ((uint16_t *)out)[i] = fc_math_f32_to_bf16(v);
  else
    ((float *)out)[i] = v;
}

/* ---- host-side setup, shared by cuda_host.c and the host test ---------------------------------- */
#ifndef __CUDA_ARCH__
#include <stdlib.h>
#include "formats/common/alloc.h"

/* The chunk-independent fields of P for cfg (table pointers and per-chunk fields left alone). */
static inline void fc_cu_params_init(fc_cu_params *P, const fc_mel_config *cfg) {
  P->n_fft = cfg->n_fft;
  P->win = cfg->win_length;
  P->hop = cfg->hop_length;
  P->woff = fc_window_offset(cfg->window_align, cfg->n_fft, cfg->win_length);
  P->nbins = cfg->n_fft / 2 + 1;
  P->n_mels = cfg->n_mels;
  P->row = 2 * P->nbins;
  P->origin = fc_frame_origin(cfg->no_snip_edges, cfg->hop_length, cfg->win_length, P->woff,
                              fc_pad_each_side(cfg->center, cfg->n_fft, cfg->pad));
  P->pad_mode = cfg->pad_mode;
  P->no_snip = cfg->no_snip_edges;
  P->remove_dc = cfg->remove_dc;
  P->log_mode = cfg->log;
  P->needs_max = fc_log_needs_max(cfg->log, (float)cfg->top_db);
  P->scale = cfg->int16_scale ? 32768.0f : 1.0f;
  P->power = (float)cfg->power;
  P->mag_eps = (float)cfg->mag_eps;
  P->log_floor = (float)cfg->log_floor;
  P->top_db = (float)cfg->top_db;
  P->preemph = cfg->preemph;
}

/* The window (win floats) and the sparse filterbank, as mel_cpu.c builds them: each band keeps the
 * span from its first to its last nonzero weight (fc_mel_weight). bands holds 3 * n_mels entries
 * (first, count, offset); *weights (malloc'd, n_mels * nbins floats at most, *n_weights used) is
 * the caller's to free. fmax is fc_mel_config_fmax(cfg). Returns 0, or -1 when out of memory. */
static inline int fc_cu_build_tables(const fc_mel_config *c, double fmax, float *window,
                                     uint32_t *bands, float **weights, size_t *n_weights) {
  const uint32_t nm = c->n_mels, nb = c->n_fft / 2 + 1;
  for (uint32_t j = 0; j < c->win_length; j++)
    window[j] = (float)fc_window_value(c->window, j, c->win_length);
  float *row = (float *)fc_malloc(sizeof *row * nb);
  float *w = (float *)fc_malloc(sizeof *w * (size_t)nm * nb);
  size_t used = 0;
  if (!row || !w) {
    free(row);
    free(w);
    return -1;
  }
  for (uint32_t m = 0; m < nm; m++) {
    uint32_t lo;
    uint32_t cnt = fc_mel_band_row(m, nb, c, fmax, row, &lo);
    bands[m] = lo;
    bands[nm + m] = cnt;
    bands[2 * nm + m] = (uint32_t)used;
    if (cnt) memcpy(w + used, row + lo, sizeof *w * cnt);
    used += cnt;
  }
  free(row);
  *weights = w;
  *n_weights = used;
  return 0;
}
#endif

#endif
