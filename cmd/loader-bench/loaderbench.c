/* loader-bench's engine: batch sources (the featcache loader, the on-the-fly baseline, a synthetic
 * source), the profiled training loop without a model, the sweep recommendation. See
 * cmd/loader-bench/loaderbench.h for what each source and each phase is. */
#include "formats/common/why.h"
#include "cmd/loader-bench/loaderbench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "featcache/fc_featurize.h"
#include "featcache/fc_loader.h"
#include "featcache/fc_mel.h"
#include "formats/common/alloc.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {}
}

void lb_opts_init(lb_opts *o) {
  memset(o, 0, sizeof *o);
  o->source = LB_CACHE;
  o->batch = 32;
  o->workers = 2;
  o->prefetch = 2;
  o->warmup = 1;
  o->compute = LB_SLEEP;
  o->compute_ms = 50;
  o->pad_value = NAN;
}

/* ---- the pool: workers building whole batches ahead (AUDIO, SYNTH) -------------------------------- */
typedef struct pool_slot {
  uint64_t k; /* batch number (across epochs) */
  int ready;
  uint32_t n; /* utterances in the batch */
  uint32_t frames;
  float *data; /* [n][frames][n_mels] */
  size_t cap; /* floats */
} pool_slot;

typedef struct pool pool;
typedef struct pool_worker {
  pool *p;
  fc_mel_plan *plan;
  pthread_t th;
  int started;
  float **mels; /* [batch] per-item features while building */
  uint64_t *frames; /* [batch] */
} pool_worker;

struct pool {
  const lb_opts *o;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_ready;
  uint64_t next_build, consumed, total;
  uint32_t depth, n_mels;
  uint64_t nb; /* batches per epoch */
  pool_slot *slots;
  pool_worker *w; /* workers (or one for the in-loop build when workers == 0) */
  uint32_t nw;
  int stop;
  int err;
  char why[256];
  uint64_t failed;
  pthread_mutex_t warn_mu;
};

static void pool_warn(pool *p, const char *path, const char *msg) {
  if (!p->o->warn) return;
  pthread_mutex_lock(&p->warn_mu);
  p->o->warn(path, msg, p->o->user);
  pthread_mutex_unlock(&p->warn_mu);
}

/* Build batch k into slot s (no lock held: the slot belongs to this worker until ready). */
static int pool_build(pool *p, pool_worker *w, uint64_t k, pool_slot *s) {
  const lb_opts *o = p->o;
  uint64_t j = k % p->nb, first = j * o->batch;
  uint64_t last = first + o->batch < o->n_items ? first + o->batch : o->n_items;
  uint32_t n = 0, T = 0;
  for (uint64_t i = first; i < last; i++) {
    if (o->source == LB_SYNTH) {
      sleep_ms(o->synth_item_ms);
      w->mels[n] = NULL;
      w->frames[n] = 1;
      T = T > 1 ? T : 1;
      n++;
      continue;
    }
    char why[256] = "";
    float *mel = NULL;
    uint64_t frames = 0;
    int rc = fc_featurize_file(w->plan, o->items[i].path, 0, &mel, &frames, why, sizeof why);
    if (rc) {
      if (k < p->nb) { /* report each bad file once */
        pool_warn(p, o->items[i].path, why[0] ? why : fc_strerror(rc));
        __atomic_add_fetch(&p->failed, 1, __ATOMIC_RELAXED);
      }
      continue;
    }
    w->mels[n] = mel;
    w->frames[n] = frames;
    if (frames > T) T = (uint32_t)frames;
    n++;
  }
  /* collate: one dense zero-padded [n][T][n_mels] float batch, as a DataLoader's collate_fn does */
  size_t need = (size_t)n * T * p->n_mels;
  if (need > s->cap) {
    float *d = fc_realloc(s->data, need * sizeof(float));
    if (!d) {
      for (uint32_t b = 0; b < n; b++) free(w->mels[b]);
      return ENOMEM;
    }
    s->data = d;
    s->cap = need;
  }
  for (uint32_t b = 0; b < n; b++) {
    float *dst = s->data + (size_t)b * T * p->n_mels;
    size_t have = (size_t)w->frames[b] * p->n_mels;
    if (w->mels[b])
      memcpy(dst, w->mels[b], have * sizeof(float));
    else
      memset(dst, 0, have * sizeof(float));
    memset(dst + have, 0, ((size_t)T * p->n_mels - have) * sizeof(float));
    free(w->mels[b]);
  }
  s->k = k;
  s->n = n;
  s->frames = T;
  return 0;
}

static void *pool_main(void *arg) {
  pool_worker *w = arg;
  pool *p = w->p;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->stop && (p->next_build >= p->total || p->next_build >= p->consumed + p->depth))
      pthread_cond_wait(&p->cv_work, &p->mu);
    if (p->stop) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    uint64_t k = p->next_build++;
    pool_slot *s = &p->slots[k % p->depth];
    pthread_mutex_unlock(&p->mu);
    int rc = pool_build(p, w, k, s);
    pthread_mutex_lock(&p->mu);
    if (rc && !p->err) {
      p->err = rc;
      snprintf(p->why, sizeof p->why, "building batch %llu: %s", (unsigned long long)k,
               fc_strerror(rc));
    }
    s->ready = 1;
    pthread_cond_broadcast(&p->cv_ready);
    pthread_mutex_unlock(&p->mu);
  }
}

static void pool_free(pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
  for (uint32_t i = 0; i < p->nw; i++) {
    if (p->w[i].started) pthread_join(p->w[i].th, NULL);
    fc_mel_plan_free(p->w[i].plan);
    free(p->w[i].mels);
    free(p->w[i].frames);
  }
  for (uint32_t i = 0; i < p->depth; i++) free(p->slots[i].data);
  free(p->slots);
  free(p->w);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->warn_mu);
  pthread_cond_destroy(&p->cv_work);
  pthread_cond_destroy(&p->cv_ready);
  free(p);
}

static int pool_create(const lb_opts *o, uint64_t total, pool **out, char *why, size_t why_len) {
  pool *p = fc_calloc(1, sizeof *p);
  if (!p) return ENOMEM;
  p->o = o;
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->warn_mu, NULL);
  pthread_cond_init(&p->cv_work, NULL);
  pthread_cond_init(&p->cv_ready, NULL);
  p->total = total;
  p->nb = (o->n_items + o->batch - 1) / o->batch;
  p->n_mels = o->source == LB_AUDIO ? o->mel->n_mels : 1;
  p->depth = o->workers ? o->workers * (o->prefetch ? o->prefetch : 1) : 1;
  p->nw = o->workers ? o->workers : 1;
  p->slots = fc_calloc(p->depth, sizeof *p->slots);
  p->w = fc_calloc(p->nw, sizeof *p->w);
  int rc = 0;
  if (!p->slots || !p->w) {
    rc = ENOMEM;
    goto fail;
  }
  fc_mel_plan *base = NULL;
  if (o->source == LB_AUDIO) {
    char vwhy[256] = "";
    if ((rc = fc_mel_config_validate(o->mel, vwhy, sizeof vwhy))) {
      fc_why(why, why_len, "features: %s", vwhy);
      goto fail;
    }
    if ((rc = fc_mel_plan_create(o->mel, &base))) {
      fc_why(why, why_len, "features: %s", fc_strerror(rc));
      goto fail;
    }
  }
  p->w[0].plan = base; /* freed with the workers from here on */
  for (uint32_t i = 0; i < p->nw; i++) {
    pool_worker *w = &p->w[i];
    w->p = p;
    w->mels = fc_calloc(o->batch, sizeof *w->mels);
    w->frames = fc_calloc(o->batch, sizeof *w->frames);
    if (!w->mels || !w->frames) rc = ENOMEM;
    if (!rc && base && i > 0) rc = fc_mel_plan_clone(base, &w->plan);
    if (rc) {
      fc_why(why, why_len, "%s", fc_strerror(rc));
      goto fail;
    }
  }
  if (o->workers) {
    for (uint32_t i = 0; i < p->nw; i++) {
      if ((rc = pthread_create(&p->w[i].th, NULL, pool_main, &p->w[i]))) {
        fc_why(why, why_len, "starting worker threads: %s", fc_strerror(rc));
        goto fail;
      }
      p->w[i].started = 1;
    }
  }
  *out = p;
  return 0;
fail:
  pool_free(p);
  return rc;
}

/* The next batch (number p->consumed) for the loop. */
static int pool_next(pool *p, pool_slot **out) {
  if (!p->o->workers) { /* built in the loop: all of it is data time */
    pool_slot *s = &p->slots[0];
    int rc = pool_build(p, &p->w[0], p->consumed, s);
    *out = s;
    return rc;
  }
  pthread_mutex_lock(&p->mu);
  pool_slot *s = &p->slots[p->consumed % p->depth];
  while (!(s->ready && s->k == p->consumed)) pthread_cond_wait(&p->cv_ready, &p->mu);
  int rc = p->err;
  pthread_mutex_unlock(&p->mu);
  *out = s;
  return rc;
}

static void pool_release(pool *p, pool_slot *s) {
  pthread_mutex_lock(&p->mu);
  s->ready = 0;
  p->consumed++;
  pthread_cond_broadcast(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
}

/* ---- compute stand-ins ------------------------------------------------------------------------- */
typedef struct matmul {
  uint32_t n;
  float *a, *b, *c;
} matmul;

static void do_compute(const lb_opts *o, matmul *mm, const void *batch_data, size_t batch_bytes) {
  if (o->compute == LB_MATMUL) {
    uint32_t n = mm->n;
    memset(mm->c, 0, (size_t)n * n * sizeof(float));
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t k = 0; k < n; k++) {
        float aik = mm->a[(size_t)i * n + k];
        const float *brow = mm->b + (size_t)k * n;
        float *crow = mm->c + (size_t)i * n;
        for (uint32_t j = 0; j < n; j++) crow[j] += aik * brow[j];
      }
    /* feed the result back so the work cannot be optimized away */
    mm->a[0] = mm->c[(size_t)n * n - 1] * 1e-30f;
  } else if (o->compute == LB_BUSY) {
    double end = now_s() + o->compute_ms / 1e3;
    while (now_s() < end) {}
  } else {
    sleep_ms(o->compute_ms);
  }
  (void)batch_data;
  (void)batch_bytes;
}

/* ---- the loop ---------------------------------------------------------------------------------- */
int lb_run(const lb_opts *o, fc_profiler *prof, lb_result *res, char *why, size_t why_len) {
  memset(res, 0, sizeof *res);
  if (!o->batch) {
    fc_why(why, why_len, "batch size 0");
    return FC_ECONFIG;
  }
  int rc = 0;
  fc_loader *ld = NULL;
  pool *pl = NULL;
  matmul mm = {0};
  uint64_t epoch = 0, pos = 0;

  if (o->compute == LB_MATMUL) {
    mm.n = o->matmul_n ? o->matmul_n : 1;
    size_t nn = (size_t)mm.n * mm.n;
    mm.a = fc_malloc(nn * sizeof(float));
    mm.b = fc_malloc(nn * sizeof(float));
    mm.c = fc_malloc(nn * sizeof(float));
    if (!mm.a || !mm.b || !mm.c) {
      rc = ENOMEM;
      fc_why(why, why_len, "matmul %u: %s", mm.n, fc_strerror(rc));
      goto out;
    }
    for (size_t i = 0; i < nn; i++) {
      mm.a[i] = (float)(i % 7) * 0.1f;
      mm.b[i] = (float)(i % 5) * 0.2f;
    }
  }

  if (o->source == LB_CACHE) {
    fc_loader_opts lo;
    fc_loader_opts_init(&lo);
    lo.features = o->features;
    lo.order = FC_ORDER_SEQUENTIAL;
    lo.output = o->views ? FC_OUTPUT_VIEWS : FC_OUTPUT_PADDED;
    lo.batch_size = o->batch;
    lo.prefetch_threads = o->workers;
    lo.prefetch_depth = o->workers ? o->workers * (o->prefetch ? o->prefetch : 1) : 1;
    lo.ids = o->subset;
    lo.n_ids = o->n_subset;
    if (o->nolock) lo.flags |= FC_LOADER_NOLOCK;
    if (o->partial) lo.flags |= FC_LOADER_PARTIAL;
    lo.pad_value = o->pad_value;
    const char *paths[1] = {o->store};
    const char *const *sp = o->n_stores ? o->stores : paths;
    char lwhy[512] = "";
    if ((rc = fc_loader_open(sp, o->n_stores ? o->n_stores : 1, &lo, &ld, lwhy, sizeof lwhy))) {
      static const char give[] = ": give pad_value"; /* the library's words: say ours */
      size_t ln = strlen(lwhy), gn = sizeof give - 1;
      if (ln >= gn && strcmp(lwhy + ln - gn, give) == 0)
        snprintf(lwhy + ln - gn, sizeof lwhy - (ln - gn), "%s",
                 ": give --pad-value V (what your training pads with; the timing does not "
                 "depend on it), or --views");
      fc_why(why, why_len, "%s", lwhy[0] ? lwhy : fc_strerror(rc));
      goto out;
    }
    fc_loader_info info;
    if ((rc = fc_loader_info_get(ld, &info))) goto out;
    res->epoch_batches = info.epoch_batches;
    res->epoch_items = info.epoch_items;
    if (!info.epoch_batches) {
      rc = FC_EEMPTY;
      fc_why(why, why_len, "no utterances with features in the store");
      goto out;
    }
  } else {
    if (!o->n_items) {
      rc = FC_EEMPTY;
      fc_why(why, why_len, "no utterances");
      goto out;
    }
    res->epoch_items = o->n_items;
    res->epoch_batches = (o->n_items + o->batch - 1) / o->batch;
  }
  uint64_t steps = o->steps ? o->steps : res->epoch_batches * (o->epochs ? o->epochs : 1);
  uint64_t total = steps + o->warmup;
  if (pl == NULL && o->source != LB_CACHE && (rc = pool_create(o, total, &pl, why, why_len)))
    goto out;

  double t_start = 0;
  res->started = 1;
  fc_batch *prev_b = NULL;
  pool_slot *prev_slot = NULL;
  for (uint64_t s = 0; s < total; s++) {
    if (o->stop && *o->stop) {
      rc = FC_EINTR;
      break;
    }
    if (s == o->warmup) { /* the pipeline has started: measure from here */
      fc_profiler_reset(prof);
      t_start = now_s();
    }
    if ((rc = fc_profiler_step_begin(prof))) break;
    /* data: give the previous batch back (as a framework drops its reference when it fetches
     * the next one), then take the next batch, waiting for it if the workers are behind */
    fc_profiler_phase_begin(prof, "data");
    if (prev_b) fc_loader_release(ld, prev_b);
    if (prev_slot) pool_release(pl, prev_slot);
    prev_b = NULL;
    prev_slot = NULL;
    fc_batch *b = NULL;
    pool_slot *slot = NULL;
    if (ld) {
      rc = fc_loader_next(ld, &b);
      if (!rc && !b) { /* end of the epoch: the next one */
        if (!(rc = fc_loader_set_epoch(ld, ++epoch))) rc = fc_loader_next(ld, &b);
        if (!rc && !b) rc = FC_EEMPTY;
      }
    } else {
      rc = pool_next(pl, &slot);
    }
    fc_profiler_phase_end(prof);
    if (rc) {
      fc_profiler_step_cancel(prof);
      if (ld)
        fc_why(why, why_len, "%s", fc_loader_error(ld) ? fc_loader_error(ld) : fc_strerror(rc));
      else
        fc_why(why, why_len, "%s", pl->why[0] ? pl->why : fc_strerror(rc));
      break;
    }
    uint32_t n = b ? b->size : slot->n;
    if (b && o->expect_ids && o->n_expect) {
      for (uint32_t i = 0; i < b->size; i++, pos++) {
        const char *want = o->expect_ids[pos % o->n_expect];
        if (strcmp(b->ids[i], want) != 0) {
          if (!res->order_mismatch && o->warn) {
            char msg[640];
            snprintf(msg, sizeof msg,
                     "the store yields '%.256s' where the manifest order has '%.256s'", b->ids[i],
                     want);
            o->warn(o->store, msg, o->user);
          }
          res->order_mismatch++;
        }
      }
    }
    fc_profiler_phase_begin(prof, "compute");
    do_compute(o, &mm, b ? b->mel_data : slot->data, 0);
    fc_profiler_phase_end(prof);
    prev_b = b;
    prev_slot = b ? NULL : slot;
    if ((rc = fc_profiler_step_end(prof))) break;
    if (s >= o->warmup) {
      res->steps++;
      res->utterances += n;
    }
  }
  if (t_start > 0) res->wall_s = now_s() - t_start;
  if (prev_b) fc_loader_release(ld, prev_b);
  if (prev_slot) pool_release(pl, prev_slot);
  if (pl) res->failed = pl->failed;
out:
  pool_free(pl);
  fc_loader_close(ld);
  free(mm.a);
  free(mm.b);
  free(mm.c);
  return rc;
}

/* ---- sweep ------------------------------------------------------------------------------------- */
int lb_recommend(const lb_cell *cells, size_t n, double max_share) {
  int best = -1;
  for (size_t i = 0; i < n; i++) {
    const lb_cell *c = &cells[i];
    if (!(c->data_share < max_share)) continue;
    if (best >= 0) {
      const lb_cell *b = &cells[best];
      if (c->workers != b->workers) {
        if (c->workers > b->workers) continue;
      } else if (c->prefetch != b->prefetch) {
        if (c->prefetch > b->prefetch) continue;
      } else if (c->batch >= b->batch) {
        continue;
      }
    }
    best = (int)i;
  }
  return best;
}

/* ---- SVG --------------------------------------------------------------------------------------- */
static double nice_step(double range, int ticks) {
  double raw = range / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;
  return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

static void svg_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else
      fputc(*s, f);
  }
}

int lb_write_svg(FILE *f, const fc_profiler *const *profs, const char *const *names, size_t n,
                 const char *title) {
  const double W = 960, PH = 260, L = 70, R = 20, TOP = 60, GAP = 60;
  double H = TOP + n * (PH + GAP) + 10;
  uint64_t maxsteps = 1;
  double ymax = 0;
  for (size_t i = 0; i < n; i++) {
    const fc_profiler *p = profs[i];
    uint64_t ns = fc_profiler_steps(p);
    if (ns > maxsteps) maxsteps = ns;
    const double *st = fc_profiler_series(p, -1);
    for (uint64_t k = 0; k < ns; k++)
      if (st[k] > ymax) ymax = st[k];
  }
  if (ymax <= 0) ymax = 1;
  double ystep = nice_step(ymax, 5);
  ymax = ceil(ymax / ystep) * ystep;
  double xw = W - L - R;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
          W, H, W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", L);
  svg_text(f, title ? title : "loader-bench: time per training step");
  fputs("</text>\n", f);
  /* legend */
  fprintf(
      f,
      "<rect x=\"%.0f\" y=\"36\" width=\"14\" height=\"10\" fill=\"#d62728\"/>"
      "<text x=\"%.0f\" y=\"45\">data (waiting for the batch)</text>\n"
      "<rect x=\"%.0f\" y=\"36\" width=\"14\" height=\"10\" fill=\"#1f77b4\" fill-opacity=\"0.55\"/>"
      "<text x=\"%.0f\" y=\"45\">compute</text>\n"
      "<rect x=\"%.0f\" y=\"36\" width=\"14\" height=\"10\" fill=\"#999999\"/>"
      "<text x=\"%.0f\" y=\"45\">other</text>\n",
      L, L + 18, L + 220, L + 238, L + 320, L + 338);
  for (size_t i = 0; i < n; i++) {
    const fc_profiler *p = profs[i];
    double y0 = TOP + i * (PH + GAP) + 20, yb = y0 + PH;
    uint64_t ns = fc_profiler_steps(p);
    int di = -1, ci = -1;
    for (int j = 0; j < fc_profiler_num_phases(p); j++) {
      if (strcmp(fc_profiler_phase_name(p, j), "data") == 0) di = j;
      if (strcmp(fc_profiler_phase_name(p, j), "compute") == 0) ci = j;
    }
    const double *step = fc_profiler_series(p, -1);
    const double *data = di >= 0 ? fc_profiler_series(p, di) : NULL;
    const double *comp = ci >= 0 ? fc_profiler_series(p, ci) : NULL;
    fc_prof_stats ds = {0};
    double share = 0;
    if (di >= 0) fc_profiler_stats(p, di, &ds, &share);
    char verdict[64];
    fc_profiler_verdict(p, NULL, verdict, sizeof verdict);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\">", L, y0 - 8);
    svg_text(f, names && names[i] ? names[i] : "run");
    fprintf(f,
            "</text><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">data %.3f ms/step (%.1f %%) — ",
            W - R, y0 - 8, ds.mean, 100 * share);
    svg_text(f, verdict);
    fputs("</text>\n", f);
    /* grid and y axis */
    for (double v = 0; v <= ymax + 1e-9; v += ystep) {
      double y = yb - v / ymax * PH;
      fprintf(f,
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>"
              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
              L, y, W - R, y, L - 6, y + 4, v);
    }
    fprintf(f,
            "<text transform=\"translate(%.0f,%.0f) rotate(-90)\" text-anchor=\"middle\">ms per "
            "step</text>\n",
            L - 50, y0 + PH / 2);
    /* stacked areas: data from 0, compute above it, the rest of the step (other) above that */
    double bw = xw / (double)maxsteps;
    const char *fills[3] = {"#d62728", "#1f77b4\" fill-opacity=\"0.55", "#999999"};
    for (int layer = 2; layer >= 0; layer--) {
      fprintf(f, "<path fill=\"%s\" stroke=\"none\" d=\"", fills[layer]);
      for (uint64_t k = 0; k < ns; k++) {
        double d = data ? data[k] : 0, c = comp ? comp[k] : 0;
        double top = layer == 0 ? d : layer == 1 ? d + c : step[k];
        if (top > ymax) top = ymax;
        double x = L + k * bw, h = top / ymax * PH;
        if (h <= 0) continue;
        fprintf(f, "M%.2f %.2fh%.2fv%.2fh%.2fz", x, yb, bw, -h, -bw);
      }
      fputs("\"/>\n", f);
    }
    /* x axis */
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"black\"/>\n", L, yb,
            W - R, yb);
    double xstep = nice_step((double)maxsteps, 10);
    if (xstep < 1) xstep = 1;
    for (double v = 0; v <= maxsteps; v += xstep)
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", L + v * bw,
              yb + 16, v);
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", L + xw / 2,
            yb + 32);
  }
  fputs("</svg>\n", f);
  return ferror(f) ? EIO : 0;
}
