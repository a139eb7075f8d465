/* The CPU backend: framing, FFT (FFTW single precision), spectrum, sparse mel projection, log.
 *
 * Work goes in blocks of MEL_BLOCK frames: the frames of a block are filled (padding, DC removal,
 * pre-emphasis, window), one batched r2c plan transforms them all, then each frame's spectrum is
 * projected onto the mel bands. Every value comes from the per-element functions of fc_math.h,
 * which the CUDA backend shares.
 *
 * What a plan owns: the read-only tables (window, sparse filterbank, FFTW plans) live in a
 * reference-counted `mel_tables` shared with clones; each plan has its own FFT buffers, laid out
 * exactly as the buffers the FFTW plans were made for so the new-array execute functions (which
 * are thread-safe) can run them. */
#include "featcache/fc_mel.h"

#include <errno.h>
#include <fftw3.h>
#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fc_math.h"

/* Frames per batched FFT call. Measured on hifigan (1024-point): 8 to 64 are within the noise of
 * a shared 2-core machine (best runs ~2.4 us/frame each); 32 keeps a block (~260 KB) inside L2. */
#ifndef MEL_BLOCK
#define MEL_BLOCK 32
#endif
#ifndef MEL_FFTW_FLAGS
#define MEL_FFTW_FLAGS FFTW_MEASURE
#endif

/* Row strides padded to 64 bytes, so every row of a block is as aligned as the block itself and
 * the single-frame plan can run on any row (FFTW requires new-array alignment to match). */
#define ROUND_UP(x, m) (((x) + (m)-1) / (m) * (m))

/* FFTW's planner and plan destruction are not thread-safe: serialize them process-wide. */
static pthread_mutex_t fftw_planner_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct mel_tables {
  atomic_int refs;
  fc_mel_config cfg;
  uint32_t n_fft, win, nbins, in_dist, out_dist, woff;
  uint64_t pad;       /* padded samples each side */
  float scale;        /* 32768 for int16_scale, else 1 (exact either way) */
  float *window;      /* win values: the window over the win-length segment */
  uint32_t *first;    /* per band: first bin with a nonzero weight */
  uint32_t *count;    /* per band: bins in its nonzero span */
  size_t *offset;     /* per band: start of its weights in `weights` */
  float *weights;
  fftwf_plan block_plan; /* MEL_BLOCK frames */
  fftwf_plan frame_plan; /* one frame, for the tail of an utterance */
} mel_tables;

struct fc_mel_plan {
  mel_tables *t;
  float *in;            /* MEL_BLOCK rows of in_dist floats; outside the window always zero */
  fftwf_complex *out;   /* MEL_BLOCK rows of out_dist bins */
  float *spec;          /* one frame's |X|^power */
  double *scratch;      /* one window-length segment, for DC removal and pre-emphasis */
};

static void tables_free(mel_tables *t) {
  if (!t) return;
  pthread_mutex_lock(&fftw_planner_lock);
  if (t->block_plan) fftwf_destroy_plan(t->block_plan);
  if (t->frame_plan) fftwf_destroy_plan(t->frame_plan);
  pthread_mutex_unlock(&fftw_planner_lock);
  free(t->window);
  free(t->first);
  free(t->count);
  free(t->offset);
  free(t->weights);
  free(t);
}

/* Sparse filterbank from fc_mel_weight: each band keeps the span between its first and last
 * nonzero bins (triangles have no interior zeros). */
static int build_filterbank(mel_tables *t) {
  const fc_mel_config *c = &t->cfg;
  uint32_t nm = c->n_mels, nb = t->nbins;
  double fmax = fc_mel_config_fmax(c);
  float *row = malloc(sizeof *row * nb);
  t->first = calloc(nm, sizeof *t->first);
  t->count = calloc(nm, sizeof *t->count);
  t->offset = calloc(nm, sizeof *t->offset);
  /* Bands span at most all bins; grow lazily would save little: nm * nb floats is < 1 MB for
   * every preset, but sizing it to the actual spans keeps the hot loop's data small. */
  size_t cap = 0, used = 0;
  float *w = NULL;
  int rc = ENOMEM;
  if (!row || !t->first || !t->count || !t->offset) goto out;
  for (uint32_t m = 0; m < nm; m++) {
    uint32_t lo = nb, hi = 0;
    for (uint32_t k = 0; k < nb; k++) {
      row[k] = fc_mel_weight(m, k, nm, c->n_fft, c->sample_rate, c->fmin, fmax, c->mel_scale,
                             c->norm);
      if (row[k] != 0.0f) {
        if (lo == nb) lo = k;
        hi = k;
      }
    }
    uint32_t n = lo == nb ? 0 : hi - lo + 1;
    if (used + n > cap) {
      size_t ncap = cap ? 2 * cap : 4 * nb;
      while (ncap < used + n) ncap *= 2;
      float *nw = realloc(w, sizeof *w * ncap);
      if (!nw) goto out;
      w = nw;
      cap = ncap;
    }
    t->first[m] = n ? lo : 0;
    t->count[m] = n;
    t->offset[m] = used;
    if (n) memcpy(w + used, row + lo, sizeof *w * n);
    used += n;
  }
  t->weights = w;
  w = NULL;
  rc = 0;
out:
  free(w);
  free(row);
  return rc;
}

static void *zalloc_fftw(size_t bytes) {
  void *p = fftwf_malloc(bytes ? bytes : 1);
  if (p) memset(p, 0, bytes);
  return p;
}

static int plan_buffers(fc_mel_plan *p) {
  const mel_tables *t = p->t;
  p->in = zalloc_fftw(sizeof(float) * (size_t)MEL_BLOCK * t->in_dist);
  p->out = zalloc_fftw(sizeof(fftwf_complex) * (size_t)MEL_BLOCK * t->out_dist);
  p->spec = malloc(sizeof(float) * t->nbins);
  p->scratch = malloc(sizeof(double) * t->win);
  return p->in && p->out && p->spec && p->scratch ? 0 : ENOMEM;
}

int fc_mel_plan_create(const fc_mel_config *cfg, fc_mel_plan **out) {
  *out = NULL;
  if (fc_mel_config_validate(cfg, NULL, 0)) return FC_ECONFIG;
  fc_mel_plan *p = calloc(1, sizeof *p);
  mel_tables *t = calloc(1, sizeof *t);
  int rc = ENOMEM;
  if (!p || !t) goto fail;
  atomic_init(&t->refs, 1);
  p->t = t;
  t->cfg = *cfg;
  t->n_fft = cfg->n_fft;
  t->win = cfg->win_length;
  t->nbins = cfg->n_fft / 2 + 1;
  t->in_dist = ROUND_UP(t->n_fft, 16);
  t->out_dist = ROUND_UP(t->nbins, 8);
  t->woff = fc_window_offset(cfg->window_align, cfg->n_fft, cfg->win_length);
  t->pad = fc_pad_each_side(cfg->center, cfg->n_fft, cfg->pad);
  t->scale = cfg->int16_scale ? 32768.0f : 1.0f;
  t->window = malloc(sizeof *t->window * t->win);
  if (!t->window) goto fail;
  for (uint32_t j = 0; j < t->win; j++) t->window[j] = (float)fc_window_value(cfg->window, j, t->win);
  if ((rc = build_filterbank(t))) goto fail;
  if ((rc = plan_buffers(p))) goto fail;

  /* FFTW_MEASURE: ~0.13 s per shape, once per process (FFTW keeps the wisdom; clones share the
   * plans). Against ESTIMATE it measured 0-10 % faster per frame here, within a noisy machine's
   * spread; worth it for a tool that runs for minutes. */
  int n = (int)t->n_fft;
  pthread_mutex_lock(&fftw_planner_lock);
  t->block_plan = fftwf_plan_many_dft_r2c(1, &n, MEL_BLOCK, p->in, NULL, 1, (int)t->in_dist,
                                          p->out, NULL, 1, (int)t->out_dist, MEL_FFTW_FLAGS);
  t->frame_plan = fftwf_plan_many_dft_r2c(1, &n, 1, p->in, NULL, 1, (int)t->in_dist, p->out, NULL,
                                          1, (int)t->out_dist, MEL_FFTW_FLAGS);
  pthread_mutex_unlock(&fftw_planner_lock);
  if (!t->block_plan || !t->frame_plan) {
    rc = FC_ECONFIG;
    goto fail;
  }
  /* Measuring scribbled over the buffers; the zeros outside the window must be restored. */
  memset(p->in, 0, sizeof(float) * (size_t)MEL_BLOCK * t->in_dist);
  *out = p;
  return 0;
fail:
  if (p) {
    fftwf_free(p->in);
    fftwf_free(p->out);
    free(p->spec);
    free(p->scratch);
    free(p);
  }
  tables_free(t);
  return rc;
}

int fc_mel_plan_clone(const fc_mel_plan *src, fc_mel_plan **out) {
  *out = NULL;
  fc_mel_plan *p = calloc(1, sizeof *p);
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
  fftwf_free(p->in);
  fftwf_free(p->out);
  free(p->spec);
  free(p->scratch);
  if (atomic_fetch_sub(&p->t->refs, 1) == 1) tables_free(p->t);
  free(p);
}

const fc_mel_config *fc_mel_plan_config(const fc_mel_plan *p) { return &p->t->cfg; }

/* Fill the window-length segment of frame `frame` into seg (the row at the window offset). */
static void fill_frame(const mel_tables *t, const float *x, uint64_t n, uint64_t frame,
                       float *seg, double *scratch) {
  const fc_mel_config *c = &t->cfg;
  const uint32_t win = t->win, hop = c->hop_length;
  const float scale = t->scale;
  int64_t first = (int64_t)(frame * hop + t->woff) - (int64_t)t->pad;
  if (first >= 0 && (uint64_t)first + win <= n) {
    /* The whole segment lies inside the signal: fc_frame_sample's in-range branch, without the
     * per-sample index test the padded frames need. */
    const float *src = x + first;
    for (uint32_t j = 0; j < win; j++) seg[j] = src[j] * scale;
  } else {
    for (uint32_t j = 0; j < win; j++)
      seg[j] = fc_frame_sample(x, n, frame, j, hop, t->woff, t->pad, c->pad_mode, scale);
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
    for (uint32_t j = 0; j < win; j++) seg[j] = (float)(d[j] * t->window[j]);
    return;
  }
  const float *w = t->window;
  for (uint32_t j = 0; j < win; j++) seg[j] *= w[j];
}

/* |X|^power of one frame, then each band's weighted sum and the first log stage. The power branch
 * is resolved outside the loop so each loop vectorises. */
static void project_frame(const mel_tables *t, const fftwf_complex *X, float *spec, float *dst) {
  const fc_mel_config *c = &t->cfg;
  const uint32_t nb = t->nbins;
  if (c->power == 2.0) {
    for (uint32_t k = 0; k < nb; k++) spec[k] = fc_spectrum_value(X[k][0], X[k][1], 2.0f, 0.0f);
  } else if (c->power == 1.0) {
    const float eps = (float)c->mag_eps;
    for (uint32_t k = 0; k < nb; k++) spec[k] = fc_spectrum_value(X[k][0], X[k][1], 1.0f, eps);
  } else {
    const float pw = (float)c->power, eps = (float)c->mag_eps;
    for (uint32_t k = 0; k < nb; k++) spec[k] = fc_spectrum_value(X[k][0], X[k][1], pw, eps);
  }
  const int mode = c->log;
  const float floor_ = (float)c->log_floor;
  for (uint32_t m = 0; m < c->n_mels; m++) {
    const float *w = t->weights + t->offset[m];
    const float *s = spec + t->first[m];
    const uint32_t cnt = t->count[m];
    /* Four running sums: a single one would chain every add on the previous (latency-bound, and
     * the compiler may not reorder float sums); four lanes vectorise and are no less accurate. */
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    uint32_t j = 0;
    for (; j + 4 <= cnt; j += 4) {
      a0 += w[j] * s[j];
      a1 += w[j + 1] * s[j + 1];
      a2 += w[j + 2] * s[j + 2];
      a3 += w[j + 3] * s[j + 3];
    }
    for (; j < cnt; j++) a0 += w[j] * s[j];
    dst[m] = fc_log_compress((a0 + a1) + (a2 + a3), mode, floor_);
  }
}

int fc_mel_compute(fc_mel_plan *p, const float *x, size_t n, float *out) {
  const mel_tables *t = p->t;
  const fc_mel_config *c = &t->cfg;
  const uint64_t frames = fc_mel_num_frames(c, n);
  if (frames == 0) return FC_EEMPTY;
  const uint32_t nm = c->n_mels;
  for (uint64_t f0 = 0; f0 < frames; f0 += MEL_BLOCK) {
    uint32_t nf = frames - f0 < MEL_BLOCK ? (uint32_t)(frames - f0) : MEL_BLOCK;
    for (uint32_t b = 0; b < nf; b++) fill_frame(t, x, n, f0 + b, p->in + (size_t)b * t->in_dist + t->woff, p->scratch);
    if (nf == MEL_BLOCK) {
      fftwf_execute_dft_r2c(t->block_plan, p->in, p->out);
    } else {
      /* A short tail goes frame by frame rather than paying for a whole block's FFTs. */
      for (uint32_t b = 0; b < nf; b++)
        fftwf_execute_dft_r2c(t->frame_plan, p->in + (size_t)b * t->in_dist,
                              p->out + (size_t)b * t->out_dist);
    }
    for (uint32_t b = 0; b < nf; b++)
      project_frame(t, p->out + (size_t)b * t->out_dist, p->spec, out + (f0 + b) * nm);
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
  const mel_tables *t = p->t;
  memset(out, 0, sizeof *out * (size_t)t->cfg.n_mels * t->nbins);
  for (uint32_t m = 0; m < t->cfg.n_mels; m++)
    memcpy(out + (size_t)m * t->nbins + t->first[m], t->weights + t->offset[m],
           sizeof *out * t->count[m]);
}

void fc_mel_window(const fc_mel_plan *p, float *out) {
  const mel_tables *t = p->t;
  memset(out, 0, sizeof *out * t->n_fft);
  memcpy(out + t->woff, t->window, sizeof *out * t->win);
}
