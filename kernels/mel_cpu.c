/* The CPU backend: framing, FFT (FFTW single precision), spectrum, sparse mel projection, log.
 *
 * Work goes in blocks of MEL_BLOCK frames:
 *   1. fill: each frame's window-length segment (padding, DC removal, pre-emphasis, window) into
 *      its row of `in`;
 *   2. FFT: for an even n_fft, one batched complex FFT of n_fft/2 points over the rows read as
 *      complex (x[2i] + i x[2i+1]), then the standard split step turns each into the n_fft-point
 *      real spectrum; for an odd n_fft, FFTW's r2c;
 *   3. spectrum: |X|^power of the bins the filterbank uses (bins above the highest band's last
 *      nonzero weight are never computed), stored bin-major: `spec` row k holds bin k of the
 *      block's MEL_BLOCK frames;
 *   4. mel: each band's weights times those rows, MEL_BLOCK frames side by side, so the inner loop
 *      is one multiply-add over a contiguous row whatever the band's width; then the first log
 *      stage over the band's MEL_BLOCK values (fc_logf_poly, vectorised) and the values go to their
 *      frames in the time-major output.
 * Every loop over frames or bins is written so that the compiler vectorises it (-O3); the values
 * come from the per-element functions of fc_math.h that the CUDA backend shares.
 *
 * Reproducible bytes: the FFTW plans are made with FFTW_ESTIMATE, which chooses by a fixed model of
 * the problem, never by timing (FFTW_MEASURE picked different algorithms in different processes,
 * so the same input gave features differing in the last bits). On one machine and build the same
 * input and config give the same record in every run. ESTIMATE's r2c plan for 1024 points is slow
 * (a radix-2 last pass: 1.5 us per frame here, against 1.05 us measured), its complex 512-point
 * plan is as fast as a measured one (0.47 us), hence the half-length complex FFT and our own split.
 *
 * What a plan owns: the read-only tables (window, twiddles, sparse filterbank, FFTW plans) live in
 * a reference-counted `mel_tables` shared with clones; each plan has its own buffers, laid out
 * exactly as the buffers the FFTW plans were made for so the new-array execute functions (which
 * are thread-safe) can run them. */
#include "formats/common/alloc.h"
#include "formats/common/args.h"
#include "formats/common/fault.h"
#include "featcache/fc_mel.h"

#include <errno.h>
#include <fftw3.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fc_math.h"

/* Frames per batched FFT and per mel step. 32 keeps the block's FFT rows (133 KB for hifigan) and
 * its spectrum rows (47 KB) in L2; measured against 8 and 16: 16 and 32 within the noise, 8 slower. */
#ifndef MEL_BLOCK
#define MEL_BLOCK 32
#endif
/* Frames whose running sums one pass over a band's bins keeps in registers. Measured on hifigan
 * (SSE2 baseline build): 8 lanes 1.55 us/frame, 16 lanes 1.9, all 32 1.6. (An AVX2 clone of the
 * hot loops via target_clones measured slower, 2.0: GCC 12 fills it with permutes.) */
#ifndef MEL_LANES
#define MEL_LANES 8
#endif

#ifndef MEL_FFTW_FLAGS
#define MEL_FFTW_FLAGS FFTW_ESTIMATE
#endif

/* Row strides padded to 64 bytes, so every row of a block is as aligned as the block itself and
 * the single-frame plan can run on any row (FFTW requires new-array alignment to match). */
#define ROUND_UP(x, m) (((x) + (m)-1) / (m) * (m))
/* ... plus 64 bytes when that lands on a multiple of 4 KB: rows 4 KB apart all map to the same
 * L1 sets and can alias the window's loads (hifigan: 1024 floats per row). Measured: no change
 * beyond this machine's noise; kept as it costs nothing. */
#define ROW_FLOATS(x) (ROUND_UP(x, 16) % 1024 == 0 ? ROUND_UP(x, 16) + 16 : ROUND_UP(x, 16))

/* FFTW's planner and plan destruction are not thread-safe: serialize them process-wide. */
static pthread_mutex_t fftw_planner_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct mel_tables {
  atomic_int refs;
  fc_mel_config cfg;
  uint32_t n_fft, win, nbins, woff;
  uint32_t half; /* n_fft / 2 when the FFT runs as a half-length complex one, else 0 */
  uint32_t kmax; /* bins the filterbank uses: 0 .. kmax-1 */
  uint32_t in_dist; /* floats per row of `in` */
  uint32_t out_dist; /* complex values per row of `out` */
  int64_t origin; /* signal index of frame 0's first window sample (fc_frame_origin) */
  float scale; /* 32768 for int16_scale, else 1 (exact either way) */
  float *window; /* win values: the window over the win-length segment */
  float *tw_re, *tw_im; /* half: cos and -sin of 2 pi k / n_fft, k < kmax */
  uint32_t *first; /* per band: first bin with a nonzero weight */
  uint32_t *count; /* per band: bins in its nonzero span */
  size_t *offset; /* per band: start of its weights in `weights` */
  float *weights;
  fftwf_plan block_plan; /* MEL_BLOCK frames */
  fftwf_plan frame_plan; /* one frame, for the tail of an utterance */
} mel_tables;

struct fc_mel_plan {
  mel_tables *t;
  float *in; /* MEL_BLOCK rows of in_dist floats; outside the window always zero */
  fftwf_complex *out; /* MEL_BLOCK rows of out_dist complex values */
  float *spec; /* kmax rows of MEL_BLOCK: bin-major |X|^power of the block */
  double *scratch; /* one window-length segment, for DC removal and pre-emphasis */
  float *tmp; /* half: 2 rows of n_fft/2, the reversed half of one frame's Z */
};

static void tables_free(mel_tables *t) {
  if (!t) return;
  pthread_mutex_lock(&fftw_planner_lock);
  if (t->block_plan) fftwf_destroy_plan(t->block_plan);
  if (t->frame_plan) fftwf_destroy_plan(t->frame_plan);
  pthread_mutex_unlock(&fftw_planner_lock);
  free(t->window);
  free(t->tw_re);
  free(t->tw_im);
  free(t->first);
  free(t->count);
  free(t->offset);
  free(t->weights);
  free(t);
}

/* Sparse filterbank from fc_mel_weight: each band keeps the span between its first and last
 * nonzero bins (triangles have no interior zeros). Also sets kmax. */
static int build_filterbank(mel_tables *t) {
  const fc_mel_config *c = &t->cfg;
  uint32_t nm = c->n_mels, nb = t->nbins;
  double fmax = fc_mel_config_fmax(c);
  float *row = fc_malloc(sizeof *row * nb);
  t->first = fc_calloc(nm, sizeof *t->first);
  t->count = fc_calloc(nm, sizeof *t->count);
  t->offset = fc_calloc(nm, sizeof *t->offset);
  size_t cap = 0, used = 0;
  float *w = NULL;
  int rc = ENOMEM;
  if (!row || !t->first || !t->count || !t->offset) goto out;
  t->kmax = 1;
  for (uint32_t m = 0; m < nm; m++) {
    uint32_t lo;
    uint32_t n = fc_mel_band_row(m, nb, c, fmax, row, &lo);
    if (used + n > cap) {
      size_t ncap = cap ? 2 * cap : 4 * nb;
      while (ncap < used + n) ncap *= 2;
      float *nw = fc_realloc(w, sizeof *w * ncap);
      if (!nw) goto out;
      w = nw;
      cap = ncap;
    }
    t->first[m] = lo;
    t->count[m] = n;
    t->offset[m] = used;
    if (n) memcpy(w + used, row + lo, sizeof *w * n);
    if (n && lo + n > t->kmax) t->kmax = lo + n;
    used += n;
  }
  if (!w && !(w = fc_malloc(sizeof *w))) goto out; /* every band empty: keep a valid pointer */
  t->weights = w;
  w = NULL;
  rc = 0;
out:
  free(w);
  free(row);
  return rc;
}

static void *zalloc_fftw(size_t bytes) {
  void *p = fc_alloc_fails() ? NULL : fftwf_malloc(bytes ? bytes : 1);
  if (p) memset(p, 0, bytes);
  return p;
}

static int plan_buffers(fc_mel_plan *p) {
  const mel_tables *t = p->t;
  p->in = zalloc_fftw(sizeof(float) * (size_t)MEL_BLOCK * t->in_dist);
  p->out = zalloc_fftw(sizeof(fftwf_complex) * (size_t)MEL_BLOCK * t->out_dist);
  p->spec = zalloc_fftw(sizeof(float) * (size_t)MEL_BLOCK * t->kmax);
  p->scratch = fc_malloc(sizeof(double) * t->win);
  p->tmp = fc_malloc(sizeof(float) * (2 * (size_t)t->half + 1));
  return p->in && p->out && p->spec && p->scratch && p->tmp ? 0 : ENOMEM;
}

static void plan_buffers_free(fc_mel_plan *p) {
  fftwf_free(p->in);
  fftwf_free(p->out);
  fftwf_free(p->spec);
  free(p->scratch);
  free(p->tmp);
}

int fc_mel_plan_create(const fc_mel_config *cfg, fc_mel_plan **out) {
  FC_ARGS(cfg, out);
  *out = NULL;
  if (fc_mel_config_validate(cfg, NULL, 0)) return FC_ECONFIG;
  fc_mel_plan *p = fc_calloc(1, sizeof *p);
  mel_tables *t = fc_calloc(1, sizeof *t);
  int rc = ENOMEM;
  if (!p || !t) goto fail;
  atomic_init(&t->refs, 1);
  p->t = t;
  t->cfg = *cfg;
  t->n_fft = cfg->n_fft;
  t->win = cfg->win_length;
  t->nbins = cfg->n_fft / 2 + 1;
  t->half = cfg->n_fft % 2 == 0 ? cfg->n_fft / 2 : 0;
  t->in_dist = ROW_FLOATS(t->n_fft);
  t->out_dist = ROW_FLOATS(2 * t->nbins) / 2;
  t->woff = fc_window_offset(cfg->window_align, cfg->n_fft, cfg->win_length);
  t->origin = fc_frame_origin(cfg->no_snip_edges, cfg->hop_length, cfg->win_length, t->woff,
                              fc_pad_each_side(cfg->center, cfg->n_fft, cfg->pad));
  t->scale = cfg->int16_scale ? 32768.0f : 1.0f;
  t->window = fc_malloc(sizeof *t->window * t->win);
  if (!t->window) goto fail;
  for (uint32_t j = 0; j < t->win; j++)
    t->window[j] = (float)fc_window_value(cfg->window, j, t->win);
  if ((rc = build_filterbank(t))) goto fail;
  rc = ENOMEM;
  if (t->half) {
    /* Twiddles of the split step, in double and rounded once. */
    t->tw_re = fc_malloc(sizeof *t->tw_re * t->kmax);
    t->tw_im = fc_malloc(sizeof *t->tw_im * t->kmax);
    if (!t->tw_re || !t->tw_im) goto fail;
    for (uint32_t k = 0; k < t->kmax; k++) {
      double a = 2.0 * FC_PI * (double)k / (double)t->n_fft;
      t->tw_re[k] = (float)cos(a);
      t->tw_im[k] = (float)-sin(a);
    }
  }
  if ((rc = plan_buffers(p))) goto fail;

  pthread_mutex_lock(&fftw_planner_lock);
  if (t->half) {
    int n = (int)t->half, dist = (int)(t->in_dist / 2);
    fftwf_complex *in = (fftwf_complex *)(void *)p->in;
    t->block_plan = fftwf_plan_many_dft(1, &n, MEL_BLOCK, in, NULL, 1, dist, p->out, NULL, 1,
                                        (int)t->out_dist, FFTW_FORWARD, MEL_FFTW_FLAGS);
    t->frame_plan = fftwf_plan_many_dft(1, &n, 1, in, NULL, 1, dist, p->out, NULL, 1,
                                        (int)t->out_dist, FFTW_FORWARD, MEL_FFTW_FLAGS);
  } else {
    int n = (int)t->n_fft;
    t->block_plan = fftwf_plan_many_dft_r2c(1, &n, MEL_BLOCK, p->in, NULL, 1, (int)t->in_dist,
                                            p->out, NULL, 1, (int)t->out_dist, MEL_FFTW_FLAGS);
    t->frame_plan = fftwf_plan_many_dft_r2c(1, &n, 1, p->in, NULL, 1, (int)t->in_dist, p->out, NULL,
                                            1, (int)t->out_dist, MEL_FFTW_FLAGS);
  }
  pthread_mutex_unlock(&fftw_planner_lock);
  if (!t->block_plan || !t->frame_plan || fault_hit("plan")) {
    rc = FC_ECONFIG;
    goto fail;
  }
  /* Planning may scribble over the buffers (not ESTIMATE, but the flag is a build option); the
   * zeros outside the window must be there. */
  memset(p->in, 0, sizeof(float) * (size_t)MEL_BLOCK * t->in_dist);
  *out = p;
  return 0;
fail:
  if (p) {
    plan_buffers_free(p);
    free(p);
  }
  tables_free(t);
  return rc;
}

int fc_mel_plan_clone(const fc_mel_plan *src, fc_mel_plan **out) {
  FC_ARGS(src, out);
  *out = NULL;
  fc_mel_plan *p = fc_calloc(1, sizeof *p);
  if (!p) return ENOMEM;
  p->t = src->t;
  atomic_fetch_add(&p->t->refs, 1);
  if (plan_buffers(p)) {
    fc_mel_plan_free(p);
    return ENOMEM;
  }
  *out = p;
  return 0;
}

void fc_mel_plan_free(fc_mel_plan *p) {
  if (!p) return;
  plan_buffers_free(p);
  if (atomic_fetch_sub(&p->t->refs, 1) == 1) tables_free(p->t);
  free(p);
}

const fc_mel_config *fc_mel_plan_config(const fc_mel_plan *p) {
  FC_ARGS_OR(NULL, p);
  return &p->t->cfg;
}

/* Fill the window-length segment of frame `frame` into seg (the row at the window offset). */
static void fill_frame(const mel_tables *t, const float *x, uint64_t n, uint64_t frame,
                       float *restrict seg, double *scratch) {
  const fc_mel_config *c = &t->cfg;
  const uint32_t win = t->win, hop = c->hop_length;
  const float scale = t->scale;
  const float *restrict w = t->window;
  int64_t first = (int64_t)(frame * hop) + t->origin;
  const int inside = first >= 0 && (uint64_t)first + win <= n;
  if (inside && !c->remove_dc && !(c->preemph > 0)) {
    /* The common case in one pass: fc_frame_sample's in-range branch times the window. */
    const float *restrict src = x + first;
    if (scale == 1.0f) {
      for (uint32_t j = 0; j < win; j++) seg[j] = src[j] * w[j];
    } else {
      for (uint32_t j = 0; j < win; j++) seg[j] = (src[j] * scale) * w[j];
    }
    return;
  }
  if (inside) {
    const float *src = x + first;
    for (uint32_t j = 0; j < win; j++) seg[j] = src[j] * scale;
  } else {
    for (uint32_t j = 0; j < win; j++)
      seg[j] =
          fc_frame_sample(x, n, frame, j, hop, t->origin, c->pad_mode, c->no_snip_edges, scale);
  }
  if (c->remove_dc || c->preemph > 0) {
    /* Kaldi's DC removal and pre-emphasis difference nearly equal samples; done in double, the
     * cancellation costs no float32 precision (the float64 reference is what we match). */
    double *d = scratch;
    for (uint32_t j = 0; j < win; j++) d[j] = seg[j];
    if (c->remove_dc) {
      double sum = 0;
      for (uint32_t j = 0; j < win; j++) sum += d[j];
      const double mean = sum / win;
      for (uint32_t j = 0; j < win; j++) d[j] -= mean;
    }
    if (c->preemph > 0) {
      /* Kaldi: x[i] -= p x[i-1] for i > 0, and x[0] -= p x[0]; backwards keeps x[i-1] intact. */
      const double pe = c->preemph;
      for (uint32_t j = win - 1; j > 0; j--) d[j] -= pe * d[j - 1];
      d[0] -= pe * d[0];
    }
    for (uint32_t j = 0; j < win; j++) seg[j] = (float)(d[j] * w[j]);
    return;
  }
  for (uint32_t j = 0; j < win; j++) seg[j] *= w[j];
}

/* |X|^power of one frame's bins 0 .. kmax-1 into column b of the bin-major spectrum. `power` and
 * `eps` are compile-time constants at each call below, so each instance vectorises.
 *
 * Half-length FFT: Z = FFT_M(x[2i] + i x[2i+1]), M = n_fft/2, holds the transforms of the even
 * and odd samples, E[k] = (Z[k] + conj Z[M-k]) / 2 and O[k] = (Z[k] - conj Z[M-k]) / 2i, and
 * X[k] = E[k] + W^k O[k] with W = exp(-2 pi i / n_fft); X[0] = Re Z0 + Im Z0 and
 * X[M] = Re Z0 - Im Z0. */
static inline __attribute__((always_inline)) void frame_spectrum(const mel_tables *t,
                                                                 const fftwf_complex *Z,
                                                                 float *restrict spec,
                                                                 float *restrict tmp, uint32_t b,
                                                                 float power, float eps) {
  const uint32_t kmax = t->kmax;
  const float *restrict z = (const float *)Z;
  if (!t->half) {
    for (size_t k = 0; k < kmax; k++)
      spec[k * MEL_BLOCK + b] = fc_spectrum_value(z[2 * k], z[2 * k + 1], power, eps);
    return;
  }
  const size_t M = t->half;
  const float *restrict wr = t->tw_re, *restrict wi = t->tw_im;
  spec[b] = fc_spectrum_value(z[0] + z[1], 0.0f, power, eps);
  const size_t kend = kmax < M ? kmax : M; /* (size_t indices: 2 * k cannot wrap, so the
                                            * compiler sees contiguous loads) */
  if (kend > 1) {
    /* Z[M-kend+1 .. M-1] split into real and imaginary rows first: the loop below reads them in
     * reverse, which vectorises on plain rows but not on interleaved complex values. */
    float *restrict zr = tmp, *restrict zi = tmp + M;
    for (size_t k = M - kend + 1; k < M; k++) {
      zr[k] = z[2 * k];
      zi[k] = z[2 * k + 1];
    }
    for (size_t k = 1; k < kend; k++) {
      const float ar = z[2 * k], ai = z[2 * k + 1];
      const float br = zr[M - k], bi = zi[M - k];
      const float pr = ar + br, pi = ai - bi; /* 2 E[k] */
      const float qr = ai + bi, qi = br - ar; /* 2 O[k] */
      const float xr = 0.5f * (pr + (wr[k] * qr - wi[k] * qi));
      const float xi = 0.5f * (pi + (wr[k] * qi + wi[k] * qr));
      spec[k * MEL_BLOCK + b] = fc_spectrum_value(xr, xi, power, eps);
    }
  }
  if (kmax > M) spec[M * MEL_BLOCK + b] = fc_spectrum_value(z[0] - z[1], 0.0f, power, eps);
}

static void block_spectrum(const mel_tables *t, const fftwf_complex *out, float *spec, float *tmp,
                           uint32_t nf) {
  const fc_mel_config *c = &t->cfg;
  const float eps = (float)c->mag_eps;
  for (uint32_t b = 0; b < nf; b++) {
    const fftwf_complex *Z = out + (size_t)b * t->out_dist;
    if (c->power == 2.0)
      frame_spectrum(t, Z, spec, tmp, b, 2.0f, 0.0f);
    else if (c->power == 1.0)
      frame_spectrum(t, Z, spec, tmp, b, 1.0f, eps);
    else
      frame_spectrum(t, Z, spec, tmp, b, (float)c->power, eps);
  }
}

/* Each band's weighted sum over the block's frames, the first log stage, and the values into the
 * time-major output (rows f0 .. f0+nf-1). Lanes nf .. MEL_BLOCK-1 hold stale values from an
 * earlier block and are never stored. Returns nonzero when a sum of the nf frames is not finite
 * (a NaN or an infinite sample in the frame, or a power past float32's range): the log's clamp
 * would turn a NaN into the floor, a silent frame. */
static int block_mel(const mel_tables *t, const float *restrict spec, float *out, uint32_t nf) {
  const fc_mel_config *c = &t->cfg;
  const uint32_t nm = c->n_mels;
  const int mode = c->log;
  const float floor_ = (float)c->log_floor;
  int bad = 0;
  for (uint32_t m = 0; m < nm; m++) {
    const float *restrict w = t->weights + t->offset[m];
    const float *restrict s = spec + (size_t)t->first[m] * MEL_BLOCK;
    const uint32_t cnt = t->count[m];
    float acc[MEL_BLOCK];
    /* MEL_LANES frames at a time: that many running sums stay in registers across the band's
     * bins, several independent vector adds per bin. */
    for (uint32_t b0 = 0; b0 < MEL_BLOCK; b0 += MEL_LANES) {
      float a[MEL_LANES] = {0};
      for (uint32_t j = 0; j < cnt; j++) {
        const float wj = w[j];
        const float *restrict row = s + (size_t)j * MEL_BLOCK + b0;
        for (uint32_t b = 0; b < MEL_LANES; b++) a[b] += wj * row[b];
      }
      for (uint32_t b = 0; b < MEL_LANES; b++) acc[b0 + b] = a[b];
    }
    /* the sums are of non-negative terms: finite iff <= FLT_MAX (a NaN compares false) */
    for (uint32_t b = 0; b < nf; b++) bad |= !(acc[b] <= FLT_MAX);
    float val[MEL_BLOCK];
    if (mode == FC_LOG_LN) {
      int odd = 0;
      for (uint32_t b = 0; b < MEL_BLOCK; b++) {
        const float y = fc_clampf(acc[b], floor_);
        val[b] = fc_logf_poly(y);
        odd |= !fc_logf_poly_domain(y);
      }
      if (odd) /* +inf, or a subnormal floor: libm's logf for those */
        for (uint32_t b = 0; b < MEL_BLOCK; b++) {
          const float y = fc_clampf(acc[b], floor_);
          if (!fc_logf_poly_domain(y)) val[b] = logf(y);
        }
    } else {
      for (uint32_t b = 0; b < nf; b++) val[b] = fc_log_compress(acc[b], mode, floor_);
    }
    for (uint32_t b = 0; b < nf; b++) out[(size_t)b * nm + m] = val[b];
  }
  return bad;
}

int fc_mel_compute(fc_mel_plan *p, const float *samples, size_t n, float *out) {
  FC_ARGS(p, samples || !n, out);
  const float *x = samples;
  const mel_tables *t = p->t;
  const fc_mel_config *c = &t->cfg;
  const uint64_t frames = fc_mel_num_frames(c, n);
  if (frames == 0) return FC_EEMPTY;
  const uint32_t nm = c->n_mels;
  for (uint64_t f0 = 0; f0 < frames; f0 += MEL_BLOCK) {
    uint32_t nf = frames - f0 < MEL_BLOCK ? (uint32_t)(frames - f0) : MEL_BLOCK;
    for (uint32_t b = 0; b < nf; b++)
      fill_frame(t, x, n, f0 + b, p->in + (size_t)b * t->in_dist + t->woff, p->scratch);
    if (t->half) {
      fftwf_complex *in = (fftwf_complex *)(void *)p->in;
      if (nf == MEL_BLOCK) {
        fftwf_execute_dft(t->block_plan, in, p->out);
      } else {
        /* A short tail goes frame by frame rather than paying for a whole block's FFTs. */
        for (uint32_t b = 0; b < nf; b++)
          fftwf_execute_dft(t->frame_plan, in + (size_t)b * (t->in_dist / 2),
                            p->out + (size_t)b * t->out_dist);
      }
    } else if (nf == MEL_BLOCK) {
      fftwf_execute_dft_r2c(t->block_plan, p->in, p->out);
    } else {
      for (uint32_t b = 0; b < nf; b++)
        fftwf_execute_dft_r2c(t->frame_plan, p->in + (size_t)b * t->in_dist,
                              p->out + (size_t)b * t->out_dist);
    }
    block_spectrum(t, p->out, p->spec, p->tmp, nf);
    if (block_mel(t, p->spec, out + f0 * nm, nf)) return FC_ERANGE;
  }
  const float top_db = (float)c->top_db;
  if (fc_log_needs_max(c->log, top_db)) {
    const size_t total = (size_t)frames * nm;
    float mx = -FLT_MAX;
    for (size_t i = 0; i < total; i++) mx = out[i] > mx ? out[i] : mx;
    for (size_t i = 0; i < total; i++) out[i] = fc_log_finish(out[i], mx, c->log, top_db);
  }
  return 0;
}

void fc_mel_filterbank_dense(const fc_mel_plan *p, float *out) {
  FC_ARGS_OR(, p, out);
  const mel_tables *t = p->t;
  memset(out, 0, sizeof *out * (size_t)t->cfg.n_mels * t->nbins);
  for (uint32_t m = 0; m < t->cfg.n_mels; m++)
    memcpy(out + (size_t)m * t->nbins + t->first[m], t->weights + t->offset[m],
           sizeof *out * t->count[m]);
}

void fc_mel_window(const fc_mel_plan *p, float *out) {
  FC_ARGS_OR(, p, out);
  const mel_tables *t = p->t;
  memset(out, 0, sizeof *out * t->n_fft);
  memcpy(out + t->woff, t->window, sizeof *out * t->win);
}
