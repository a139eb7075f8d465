/* featcache — the loader-bench engine: a training loop without a model over a batch source,
 * profiled with the step profiler (fc_profiler.h), to see how much of a step waits for data with
 * the featcache loader and with on-the-fly decoding. cmd/loader-bench.c is a thin main over it;
 * a C training harness can run the same loop. Lives in the mel component (libfeatcache_mel: the
 * audio source computes mels); link -lfeatcache or featcache::featcache.
 *
 * Each step: phase "data" = give the previous batch back (as a framework drops its reference when
 * it fetches the next) and take the next batch from the source, waiting for it if the workers are
 * behind; phase "compute" = the model stand-in (sleep, busy-wait, or an N×N float matmul).
 *
 * Sources:
 *   CACHE  the featcache loader (fc_loader) over a store, sequential order, padded (default) or
 *          views, prefetch_threads = workers, prefetch_depth = workers × prefetch (≥ 1);
 *   AUDIO  the on-the-fly baseline: `workers` threads each build whole batches (read the file,
 *          decode, resample, compute the mels with the CPU kernels: fc_featurize_file, then pad
 *          into one dense [B][T][n_mels] float array), at most workers × prefetch batches ahead —
 *          PyTorch DataLoader's num_workers / prefetch_factor; workers 0 builds in the loop;
 *   SYNTH  the same pipeline, each item costing synth_item_ms of sleep (tests, --sweep checks).
 * Batches are cut from the item sequence in order; steps past its end wrap into a new epoch. */
#ifndef FC_LOADERBENCH_H
#define FC_LOADERBENCH_H

#include <signal.h>
#include <stdio.h>

#include "featcache/fc_base.h"
#include "featcache/fc_config.h"
#include "featcache/fc_profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lb_source { LB_CACHE = 0, LB_AUDIO = 1, LB_SYNTH = 2 } lb_source;
typedef enum lb_compute { LB_SLEEP = 0, LB_BUSY = 1, LB_MATMUL = 2 } lb_compute;

typedef struct lb_item {
  const char *id;
  const char *path;
} lb_item;

/* A per-item problem (decode failure, an id out of order): called from any thread, serialized. */
typedef void (*lb_warn_fn)(const char *path, const char *msg, void *user);

typedef struct lb_opts {
  int source; /* lb_source */
  const char *store; /* CACHE (one store; or stores/n_stores) */
  const char *const *stores; /* CACHE: several stores read as one dataset (n_stores > 0) */
  size_t n_stores;
  const char *features; /* CACHE: loader feature selector (NULL: the store's config) */
  int views; /* CACHE: zero-copy views instead of a padded batch */
  int nolock; /* CACHE: open the stores MDB_NOLOCK (FC_LOADER_NOLOCK; --read-only) */
  int partial; /* CACHE: FC_LOADER_PARTIAL (--partial) */
  const fc_mel_config *mel; /* AUDIO: the features to compute */
  const lb_item *items; /* AUDIO: the utterances in order */
  size_t n_items; /* AUDIO, SYNTH: how many */
  const char *const *expect_ids; /* CACHE: when set, check the loader yields these ids in order */
  size_t n_expect;
  const char *const *subset; /* CACHE: when set, read only these utterances (a manifest's) */
  size_t n_subset;
  double synth_item_ms; /* SYNTH */
  uint32_t batch, workers, prefetch;
  uint64_t steps; /* measured steps; 0 = `epochs` epochs */
  uint32_t epochs; /* with steps 0: this many epochs (0 = 1) */
  uint32_t warmup; /* steps run first and not measured */
  int compute; /* lb_compute */
  double compute_ms; /* SLEEP, BUSY */
  uint32_t matmul_n; /* MATMUL */
  const volatile sig_atomic_t *stop; /* set → the run stops after the current step (FC_EINTR) */
  lb_warn_fn warn;
  void *user;
  float pad_value; /* CACHE, padded: the loader's pad_value (NAN, the default: the config's
                      silence; a whisper config has none: --pad-value) */
} lb_opts;

typedef struct lb_result {
  uint64_t steps; /* measured steps */
  uint64_t utterances; /* utterances delivered in measured steps */
  uint64_t failed; /* AUDIO: utterances that could not be featurized (distinct, epoch 0) */
  uint64_t order_mismatch; /* CACHE with expect_ids: positions whose id differed */
  uint64_t epoch_batches; /* batches per epoch */
  uint64_t epoch_items; /* utterances per epoch */
  double wall_s; /* measured steps */
  int started; /* the steps began (the loader or the workers were ready): an error after is the
                * run's, not its configuration's */
} lb_result;

void lb_opts_init(lb_opts *o);

/* Run the loop, recording into prof (its data phase must be "data"). Returns 0, FC_EINTR when
 * stopped, FC_ECONFIG/FC_ENOTFOUND/... with a reason in why. */
int lb_run(const lb_opts *o, fc_profiler *prof, lb_result *res, char *why, size_t why_len);

/* One cell of a sweep. */
typedef struct lb_cell {
  uint32_t batch, workers, prefetch;
  double data_share; /* 0..1 */
  double data_ms, step_ms;
} lb_cell;

/* The recommended cell: the smallest resources keeping data_share < max_share — fewest workers,
 * then the smallest prefetch, then the smallest batch. Returns its index, or -1 when none does. */
int lb_recommend(const lb_cell *cells, size_t n, double max_share);

/* An SVG chart of per-step data and compute time, one panel per profiler (same scales), with a
 * title and a legend. Returns 0 or an errno code. */
int lb_write_svg(FILE *f, const fc_profiler *const *profs, const char *const *names, size_t n,
                 const char *title);

/* ---- reports --------------------------------------------------------------------------------- */
/* One run's statistics, from its profiler: the "data" and "compute" phases and whole steps (ms),
 * the data phase's share of step time (0..1) and the verdict (fc_profiler_verdict). */
typedef struct lb_summary {
  fc_prof_stats data, compute, step;
  double data_share;
  char verdict[64];
} lb_summary;
void lb_summarize(const fc_profiler *prof, lb_summary *out);

/* One finished run, as the reports below show it. */
typedef struct lb_report_run {
  const char *source; /* "cache", "audio" or "synthetic" */
  fc_profiler *prof; /* its steps (the reports only read it) */
  lb_result res;
  uint32_t batch, workers, prefetch;
} lb_report_run;

/* Which report: one or more runs, a comparison (runs[0] the audio source, runs[1] the cache over
 * the same utterances), or a sweep (cells[i] is runs[i]'s cell; recommended: its index, -1 when
 * no cell qualifies, LB_NOT_RECOMMENDED when the sweep was interrupted and none is given,
 * LB_STOPPED_AT_FAILURE when a cell failed while running: cells[n] is that cell, not reported,
 * and the cells after it were not run). */
#define LB_NOT_RECOMMENDED (-2)
#define LB_STOPPED_AT_FAILURE (-3)
typedef enum lb_report_kind {
  LB_REPORT_RUNS = 0,
  LB_REPORT_COMPARE,
  LB_REPORT_SWEEP
} lb_report_kind;

/* How many times shorter the cache made the data phase in a comparison: the mean data ms of
 * runs[0] over that of runs[1] (0 when the cache's is 0). */
double lb_shrink_factor(const lb_report_run *runs, size_t n);

/* The report as text (a profiler table per run; a comparison's closing line; a sweep's grid and
 * recommendation) or as one JSON object ({"sources":[...], "shrink_factor", "same_order" for a
 * comparison, "recommended" for a sweep}; docs/loader-bench.md), on f. Returns 0 or an errno. */
int lb_write_report(FILE *f, int json, int kind, const lb_report_run *runs, size_t n,
                    const lb_cell *cells, int recommended);

/* The mel config of the stores[0..n) read as one dataset, as the loader resolves it (features: a
 * loader feature selector, NULL for the stores' one; an empty shard needs none), so the audio
 * source computes the same features as the cache holds; nolock: opened MDB_NOLOCK. 0, or an
 * error with why; *named: 1 when why names the store it is about (the loader's messages do).
 * digest (NULL: not wanted): the config's digest. */
int lb_store_mel_config(const char *const *stores, size_t n, const char *features, int nolock,
                        fc_mel_config *out, fc_digest *digest, int *named, char *why,
                        size_t why_len);

/* The loader's sequential order over several stores (docs/loader.md: stores in the order given,
 * ids in byte order within each) for items[0..n_items), which must be sorted by id (strcmp): for
 * each store in turn, the items whose id its audio db holds and, with mel_config, whose features
 * of that config it holds (an id in two stores comes once, from the first, as the loader reads
 * it), then the items no store holds (*missing of them; the loader cannot yield those). *out (n_out items, pointing at the same id/path strings) is the caller's:
 * free() it. The stores are opened read-only (nolock: MDB_NOLOCK too). Returns 0, ENOMEM, or a
 * store's open/read error (why names the store). */
int lb_dataset_order(const char *const *stores, size_t n_stores, int nolock,
                     const fc_digest *mel_config, const lb_item *items, size_t n_items,
                     lb_item **out, size_t *n_out, size_t *missing, char *why, size_t why_len);

/* 1 when dir is a store this user can read but not write (lock.mdb): LMDB cannot take its reader
 * lock there, so the store opens only with nolock (the loader's check, store_lock.h). */
int lb_store_unwritable(const char *dir);

#ifdef __cplusplus
}
#endif
#endif
