/* featcache — the step profiler: where does each training step's time go?
 *
 * A training loop marks steps and named phases inside them ("data", "h2d", "compute", or any name:
 * "forward", "backward", "optimizer"...). Phases nest. The rules:
 *   - step time  = wall time of the step (step_begin .. step_end), CLOCK_MONOTONIC;
 *   - phase time = SELF time: the phase's wall time minus the wall time of the phases nested in it,
 *     so nothing is counted twice and the phase times of a step add up to at most its step time;
 *     a phase entered several times in one step adds up its self times for that step;
 *   - "other" = step time − the sum of its phase times (time inside a step but in no phase).
 * Statistics are taken over steps: a phase's series has one value per step (0 in a step where it
 * did not run). Shares are of the total step time (sum of phase series / sum of step series).
 *
 * Statistics (fc_prof_series_stats): mean; std (population, ddof = 0, as numpy's default); min;
 * max; median, p95, p99 by linear interpolation between order statistics (numpy's default
 * "linear" method: position q·(n−1) of the sorted series); variation ratio = std / mean (0 when the
 * mean is 0); periodicity = the sample autocorrelation
 *     r(k) = Σ_{t<n−k} (x_t − m)(x_{t+k} − m) / Σ_t (x_t − m)²
 * (the textbook estimator, as statsmodels' acf) maximised over lags 1 ≤ k ≤ n/2; its lag and r(k)
 * (a run of more than 262,144 steps: over its last 262,144).
 * A series repeating exactly with period p over n = c·p steps has r(p) = 1 − p/n.
 *
 * Verdict (TensorFlow profiler's bands on the share of the step spent in the data phase):
 *   share < 5 % "not input-bound"; 5 % ≤ share ≤ 20 % "moderately input-bound";
 *   share > 20 % "highly input-bound"; ", unstable" is appended when the data phase's variation
 *   ratio exceeds 0.5 and the step is at least moderately input-bound (the jitter of a data phase
 *   that is under 5 % of the step cannot make the accelerator wait noticeably, so it is not flagged).
 *
 * Threads: a profiler belongs to one thread (the training loop's); different profilers are
 * independent. Overhead: one clock_gettime per begin and per end (see docs/loader.md).
 * Memory: per step, 8 bytes per phase and per device series and 24 for the step's own (wall
 * time, "other", start), plus 24 bytes per phase occurrence when the trace is kept
 * (FC_PROF_TRACE); the arrays grow by doubling, so up to twice that. */
#ifndef FC_PROFILER_H
#define FC_PROFILER_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fc_profiler fc_profiler;

#define FC_PROF_MAX_PHASES 64 /* distinct phase names per profiler */
#define FC_PROF_MAX_DEPTH 32 /* nesting depth */
#define FC_PROF_NAME_MAX 63 /* bytes of a phase name */

enum fc_prof_flags {
  FC_PROF_TRACE = 1u << 0 /* keep every phase occurrence's begin/end for the Chrome trace */
};

/* Clock override (tests, replays): returns nanoseconds of a monotonic clock. NULL = the default,
 * clock_gettime(CLOCK_MONOTONIC). */
typedef int64_t (*fc_prof_clock_fn)(void *ctx);

/* Create a profiler. data_phase names the phase the verdict and the autocorrelation look at
 * (NULL = "data"). *out is owned by the caller: fc_profiler_free. Errors: ENOMEM, FC_ECONFIG
 * (a name longer than FC_PROF_NAME_MAX or empty). */
FC_API int fc_profiler_create(unsigned flags, const char *data_phase, fc_profiler **out);
FC_API void fc_profiler_free(fc_profiler *p);
/* Use another clock (before the first step). */
FC_API void fc_profiler_set_clock(fc_profiler *p, fc_prof_clock_fn fn, void *ctx);
/* Forget every step, the open one included (phase names are kept). */
FC_API void fc_profiler_reset(fc_profiler *p);

/* Mark a step. Errors: FC_EBADSTATE (begin inside an open step, end without one or with phases
 * still open), ENOMEM. */
FC_API int fc_profiler_step_begin(fc_profiler *p);
FC_API int fc_profiler_step_end(fc_profiler *p);
/* Drop the open step and its open phases without recording anything (e.g. the loop's last fetch
 * found the iterator exhausted). Returns 0, or FC_EBADSTATE when no step is open. */
FC_API int fc_profiler_step_cancel(fc_profiler *p);
/* Enter a named phase inside the open step (name copied; at most FC_PROF_NAME_MAX bytes) and
 * leave the innermost open one. Errors: FC_EBADSTATE (no open step, nothing to end, nesting
 * deeper than FC_PROF_MAX_DEPTH), FC_ECONFIG (bad name, more than FC_PROF_MAX_PHASES names). */
FC_API int fc_profiler_phase_begin(fc_profiler *p, const char *name);
FC_API int fc_profiler_phase_end(fc_profiler *p);
/* Add a measured self time (ms >= 0) to phase name in the open step, for times measured elsewhere
 * (another thread, a GPU event). It is not subtracted from any enclosing phase, and it is not in
 * the trace. */
FC_API int fc_profiler_phase_add(fc_profiler *p, const char *name, double ms);

/* Add a time measured on a device (ms >= 0; e.g. the GPU time of the compute phase between two
 * CUDA events) to the device series `name` of the open step. Device series are reported beside
 * the phases (rows "name [device]", JSON "device_phases", share = sum / total step time) and
 * are NOT part of the phase sums, "other" or the verdict: a step's wall time already contains
 * the host's wait for its device. Errors: FC_EBADSTATE (no open step), FC_ECONFIG (bad name or
 * value, more than FC_PROF_MAX_PHASES names), ENOMEM. */
FC_API int fc_profiler_device_add(fc_profiler *p, const char *name, double ms);
FC_API int fc_profiler_num_device(const fc_profiler *p);
FC_API const char *fc_profiler_device_name(const fc_profiler *p, int i);
/* Per-step ms of device series i; owned by the profiler, valid until the next step/reset/free. */
FC_API const double *fc_profiler_device_series(const fc_profiler *p, int i);

/* GPU utilization (percent, one value per sample, e.g. from fc_gpu_sampler) sampled during the
 * run, copied into the profiler's reports ("gpu busy" line, JSON "gpu_busy"); n = 0 with a note
 * records that it was not measured and why (e.g. "libnvidia-ml.so.1: cannot open shared object
 * file"; at most 255 bytes of it are kept, cut between UTF-8 characters). Returns 0, FC_ECONFIG
 * (a sample that is NaN or infinite: nothing is changed) or ENOMEM. */
FC_API int fc_profiler_set_gpu_busy(fc_profiler *p, const double *pct, size_t n, double period_ms,
                                    const char *note);
/* A label for the run (< 128 bytes, e.g. "featcache, device=cuda") and the items (utterances) per
 * step, for the JSON profile's "label", "items_per_step" and "items_per_s". FC_ECONFIG: label
 * too long. */
FC_API int fc_profiler_set_info(fc_profiler *p, const char *label, double items_per_step);
/* n items (utterances) delivered in the open step (adds up when called again in the step). When
 * every step of the run counted its items, the JSON profile's "items" is their sum and
 * "items_per_s" is that over the steps' time ("items_counted": true): a short last batch counts
 * as what it holds; otherwise both are estimated as steps x items_per_step. Returns 0,
 * FC_EBADSTATE outside a step, FC_ECONFIG for a negative or non-finite n. */
FC_API int fc_profiler_step_items(fc_profiler *p, double n);

/* Two saved profiles (FC_PROF_JSON files, e.g. of the same training loop before and after a change
 * of data pipeline) side by side on a stdio FILE* (void * as above): steps/s, utterances/s, data
 * share, data wait mean/p50/p95/p99, its variation and periodicity, the first device series, GPU
 * busy, each profile's verdict, the shrink factor (mean data wait BEFORE / AFTER) and a verdict
 * (docs/loader-bench.md, --compare-profiles); json: one JSON object instead. Returns 0, or an
 * errno / FC_EFORMAT code with why ("path: reason"). */
FC_API int fc_prof_compare_files(const char *before, const char *after, int json, void *stdio_file,
                                 char *why, size_t why_len);

/* ---- GPU utilization through NVML -------------------------------------------------------------- */
/* A thread sampling nvmlDeviceGetUtilizationRates (the percent of the last sample period in which
 * a kernel ran) every period_ms. NVML is loaded at run time (dlopen "libnvidia-ml.so.1"): the
 * library has no build-time dependency on it. device is the NVML index (which ignores
 * CUDA_VISIBLE_DEVICES). Errors: FC_ENODEVICE (NVML not found or failing, no such device: why
 * says which), ENOMEM, a pthread error. *out: fc_gpu_sampler_free. */
typedef struct fc_gpu_sampler fc_gpu_sampler;
FC_API int fc_gpu_sampler_start(unsigned device, double period_ms, fc_gpu_sampler **out, char *why,
                                size_t why_len);
/* Stop sampling (joins the thread; idempotent). */
FC_API void fc_gpu_sampler_stop(fc_gpu_sampler *s);
/* The samples so far (percent): their count, and *pct, a copy taken now (owned by the sampler,
 * valid until the next call or free). It may be called while the sampler runs, which goes on
 * sampling: a profile read every N steps hands each report the samples until then. */
FC_API size_t fc_gpu_sampler_samples(fc_gpu_sampler *s, const double **pct);
/* Stop and free. NULL is ignored. */
FC_API void fc_gpu_sampler_free(fc_gpu_sampler *s);

/* ---- statistics -------------------------------------------------------------------------------- */
typedef struct fc_prof_stats {
  uint64_t n; /* values in the series */
  double mean, std, min, max, p50, p95, p99; /* in the series' unit (ms for the profiler's) */
  double sum;
  double variation_ratio; /* std / mean; 0 when mean is 0 */
  uint32_t acf_lag; /* lag of the strongest autocorrelation, 1..n/2; 0 when none (n < 2 or
                             a constant series) */
  double acf_coef; /* r(acf_lag); 0 when none */
} fc_prof_stats;

/* Statistics of any series (pure; see the definitions above). x may be NULL when n is 0. Needs a
 * temporary copy (malloc); returns 0, FC_ECONFIG (a value that is NaN or infinite: numpy's
 * statistics of such a series are NaN) or ENOMEM. */
FC_API int fc_prof_series_stats(const double *x, size_t n, fc_prof_stats *out);

/* Number of completed steps. */
FC_API uint64_t fc_profiler_steps(const fc_profiler *p);
/* Number of phase names seen, and the i-th (in order of first appearance; static until free). */
FC_API int fc_profiler_num_phases(const fc_profiler *p);
FC_API const char *fc_profiler_phase_name(const fc_profiler *p, int i);
/* The series of phase i (self ms per step), of the steps (i = -1: step wall ms) or of "other"
 * (i = -2). Pointer owned by the profiler, valid until the next begin/end/reset/free. NULL for a
 * bad index. */
FC_API const double *fc_profiler_series(const fc_profiler *p, int i);
/* Statistics of the series above; share = its sum / the sum of step times (0 with no steps). */
FC_API int fc_profiler_stats(const fc_profiler *p, int i, fc_prof_stats *out, double *share);

/* Verdict from a data share (0..1) and the data phase's variation ratio: writes e.g.
 * "highly input-bound, unstable" into buf (64 bytes suffice); returns the band 0 (not), 1
 * (moderately) or 2 (highly). A share that is not a number >= 0 (NaN, negative, infinite) has no
 * verdict: FC_ECONFIG, and buf says so. */
FC_API int fc_prof_verdict(double data_share, double data_variation_ratio, char *buf, size_t len);
/* The profiler's data share and verdict; with no step: share 0, band 0 and the verdict "no
 * steps"; when the data phase never ran: "no data phase" (the table says which name it looks
 * for). */
FC_API int fc_profiler_verdict(const fc_profiler *p, double *data_share, char *buf, size_t len);

/* ---- outputs ----------------------------------------------------------------------------------- */
typedef enum fc_prof_format {
  FC_PROF_TABLE =
      0, /* aligned text table, one row per phase + "other" + "step", then the verdict */
  FC_PROF_JSON = 1, /* {"steps":N,"step":{...},"phases":{name:{...}},"data_phase":...,
                        "data_share":...,"verdict":...,"steps_per_s":...,"items_per_s":...,
                        "device_phases":{...},"gpu_busy":{...},"label":...}: the saved profile
                        that loader-bench --compare-profiles reads (docs/loader.md) */
  FC_PROF_TRACE_JSON = 2 /* Chrome trace-event JSON: one "X" event per step and per phase
                            occurrence (needs FC_PROF_TRACE; else steps only from their times) */
} fc_prof_format;

/* Render a report into buf (NUL-terminated, truncated to len) snprintf-style: returns the full
 * length without NUL (call again with a bigger buffer when >= len), or a negative error. */
FC_API long fc_profiler_report(const fc_profiler *p, int format, char *buf, size_t len);
/* Write a report to a stdio FILE* (passed as void * so bindings need no FILE type). Returns 0 or
 * an errno code. */
FC_API int fc_profiler_write(const fc_profiler *p, int format, void *stdio_file);
/* One Chrome trace of several profilers (e.g. two data sources run one after the other): profiler
 * i becomes process i+1 named names[i] (names may be NULL). Each profiler's times start at 0.
 * Returns 0 or an errno code. */
FC_API int fc_profiler_write_traces(const fc_profiler *const *ps, const char *const *names,
                                    size_t n, void *stdio_file);
/* Write a report to path (created/truncated). Returns 0 or an errno code. */
FC_API int fc_profiler_save(const fc_profiler *p, int format, const char *path);

#ifdef __cplusplus
}
#endif
#endif
