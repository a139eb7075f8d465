/* featcache — the featurize pipeline: audio files → log-mel records in a store (docs/featurize.md).
 *
 *   worker threads (read the file once, hash it → audio digest, skip when already stored, decode +
 *   mono + resample, compute on the device's backend, convert to the dtype; on a GPU, put the
 *   samples into its staging ring instead)
 *     → a bounded queue → a writer thread per store part committing a write transaction per
 *       batch (each utterance's `feat` record and its `audio` entry together, plus meta
 *       cfg/<hex>); fc_featurize_default_writers says how many parts a new store gets.
 *
 * Memory is bounded: at most `jobs` utterances are being decoded/computed, the queue holds at most
 * queue_records records / queue_bytes bytes, and the writer's batch at most batch_records /
 * batch_bytes. Per-utterance failures are reported through a callback and the job goes on.
 *
 * The device choice lives here (fc_device_*): "cpu" runs the CPU backend (FFTW, one plan per
 * worker); "cuda"/"cuda:N" the CUDA backend (refused with FC_ENODEVICE without a usable GPU);
 * "auto" picks by the job's size (fc_featurize_choose_device). An utterance longer than the CUDA
 * backend's staging buffer is computed on the CPU (its record says producer 1). */
#ifndef FC_FEATURIZE_H
#define FC_FEATURIZE_H

#include <signal.h>

#include "fc_config.h"
#include "fc_manifest.h"
#include "fc_mel.h"
#include "fc_store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- devices --------------------------------------------------------------------------------- */
typedef enum fc_device_kind {
  FC_DEVICE_AUTO = 0,
  FC_DEVICE_CPU = 1,
  FC_DEVICE_CUDA = 2
} fc_device_kind;

typedef struct fc_device {
  fc_device_kind kind;
  int index; /* CUDA device ordinal; 0 otherwise */
} fc_device;

/* Parse "auto", "cpu", "cuda" or "cuda:N". Returns 0, or FC_ECONFIG with a reason in why. */
FC_API int fc_device_parse(const char *spec, fc_device *out, char *why, size_t why_len);

/* Choose the device a job runs on, whatever its size: "auto" becomes the best backend this build
 * and machine have (the first CUDA device when one is usable, else the CPU with the reason in
 * why), "cpu" stays, "cuda[:N]" fails with FC_ENODEVICE and a reason in why when this
 * build or machine has no such device. *got receives the resolved device. */
FC_API int fc_device_resolve(const fc_device *want, fc_device *got, char *why, size_t why_len);

/* "cpu", "cuda:0", "auto" into buf (at least 16 bytes). Returns buf. */
FC_API const char *fc_device_name(const fc_device *d, char *buf, size_t buf_len);

/* The device a job of n items runs on. As fc_device_resolve, except that "auto" takes the GPU
 * only when the job is large enough for the GPU's fixed start-up (CUDA context, buffers, cuFFT
 * plans: 0.3-0.6 s) to pay off: its audio, estimated from the input files' sizes (stat; 44,100
 * bytes a second, 16-bit mono 22.05 kHz; stops counting once the threshold is reached), must be at
 * least gpu_min_seconds; 0 means the default, 3000 s per job (worker) — the CPU path at ~3000x
 * realtime per core would need a second or more —, and < 0 means any job. Small jobs never
 * touch the CUDA runtime. Nor does a GPU the NVIDIA driver lists (/proc/driver/nvidia/gpus, or
 * FC_NVIDIA_GPUS_DIR): auto's large job takes cuda:0, and cuda:N is taken when the driver lists
 * more than N GPUs (CUDA_VISIBLE_DEVICES of listed numbers: those it names; of anything else, the
 * runtime is asked), without the runtime's ~0.1 s start; the
 * job starts it as it opens the device, and a GPU it cannot use then is one that cannot be
 * started (fc_featurize_opts.fallback_to_cpu). When auto falls back to the CPU, why says why
 * ("small job: ...", or the runtime's "no CUDA device: ..."); it is not an error. Errors as
 * fc_device_resolve. */
FC_API int fc_featurize_choose_device(const fc_device *want, const fc_item *items, size_t n,
                                      unsigned jobs, double gpu_min_seconds, fc_device *got,
                                      char *why, size_t why_len);

/* How many writers (parts of a new split store, fc_store_open_split) a job of n items on the
 * resolved device dev with `jobs` workers gets by default (docs/featurize.md "Several writers"):
 * 1 for a small job (its audio, estimated from the files' sizes as fc_featurize_choose_device
 * does, below gpu_min_seconds, whose 0 means 3000 s per worker: it stays a plain store); else on a
 * GPU (FC_DEVICE_CUDA) one per two workers, at least 2; on the CPU one per four workers, at least
 * 1; at most 8. A store that exists keeps its own layout: this is for a new one. */
FC_API unsigned fc_featurize_default_writers(const fc_device *dev, const fc_item *items, size_t n,
                                             unsigned jobs, double gpu_min_seconds);

/* ---- one file → one float mel (loader-bench's "on the fly" baseline, tests) -------------------- */
/* Read path once, decode, mix to mono, resample to the plan's sample rate (fc_audio_decode) and
 * compute its features with plan (float32, [frames][n_mels], no dtype conversion).
 * *mel is malloc'd (free() it), *frames its first dimension. max_seconds > 0 rejects longer audio
 * (FC_ETOOLONG), from the file's header alone when it states the length (as featurize
 * --max-seconds: a 10 GB recording costs a header read, not 10 GB).
 * Errors: as fc_audio_read_file / fc_audio_decode, FC_EEMPTY when the audio gives no frames;
 * a one-line reason goes into why (may be NULL). Thread-safe on different plans. */
FC_API int fc_featurize_file(fc_mel_plan *plan, const char *path, double max_seconds, float **mel,
                             uint64_t *frames, char *why, size_t why_len);

/* The same over an in-memory file (bytes as read from disk). */
FC_API int fc_featurize_memory(fc_mel_plan *plan, const void *bytes, size_t len, double max_seconds,
                               float **mel, uint64_t *frames, char *why, size_t why_len);

/* ---- the pipeline ----------------------------------------------------------------------------- */
typedef enum fc_featurize_status {
  FC_ITEM_STORED = 0, /* features computed; record and audio entry committed */
  FC_ITEM_LINKED = 1, /* the record was already stored (same bytes, same config): only this id's
                          audio entry was committed */
  FC_ITEM_SKIPPED = 2, /* record and this id's audio entry (same digest) already stored (an
                          entry that named the source with another path, size or mtime is
                          written again with the file's) */
  FC_ITEM_FAILED = 3, /* not stored; err and reason say why */
  FC_ITEM_NOT_STORED = 4 /* check_only: its file reads and decodes, but its record or this id's
                            audio entry is not in the store (a run would compute or link it) */
} fc_featurize_status;

/* One report per item. Pointers are valid during the callback only. */
typedef struct fc_featurize_event {
  fc_featurize_status status;
  size_t index; /* index of the item */
  const char *id; /* may be NULL for a malformed manifest line */
  const char *path; /* audio path as given; NULL when a manifest line has none */
  size_t line; /* manifest line (1-based), 0 for paths from arguments */
  int err; /* FAILED: the error code (errno, FC_E*) */
  const char *reason; /* FAILED: one line, no "path:" prefix */
  uint64_t frames; /* STORED: feature frames */
  double seconds; /* STORED/LINKED: duration of the source audio */
  uint32_t source_rate; /* STORED/LINKED: the source's sample rate (STORED: resampled to the
                           config's when they differ) */
  uint32_t source_channels; /* STORED/LINKED: the source's channels (STORED: mixed to mono) */
  int manifest; /* FAILED: the item's manifest line is what is wrong (its err, why) */
  /* STORED/LINKED: the source path the id's audio entry named before this run rewrote it, when
   * that was another file with other audio (two files with one id, e.g. train/a.wav and
   * dev/a.wav in two runs); NULL otherwise (a new id, or the same file changed or moved) */
  const char *replaced;
  /* STORED/LINKED: a warning about the source that did not stop it (one line, no "path:"
   * prefix): a WAV whose data chunk states fewer bytes than follow it, in no chunk (the rest is
   * not read, as libsndfile and librosa do not read it); NULL when none */
  const char *note;
} fc_featurize_event;

typedef void (*fc_featurize_event_fn)(const fc_featurize_event *ev, void *user);

typedef struct fc_featurize_stats {
  uint64_t total; /* items given */
  uint64_t processed; /* STORED + LINKED (committed by this run) */
  uint64_t skipped_existing; /* SKIPPED */
  uint64_t failed; /* FAILED */
  uint64_t committed_batches;
  double audio_seconds; /* source audio of the processed items */
  double wall_seconds;
  /* Items never begun because the run was stopped (the stop flag, or --strict). After a failed
   * commit the items never begun count as failed instead. Always:
   * processed + skipped_existing + failed + not_started + not_stored = total. */
  uint64_t not_started;
  /* Where the time went (docs/featurize.md "Stage accounting"): busy seconds of each stage (the
   * CPU time of the threads that ran it, summed; setup and a GPU's compute stage are wall time),
   * and the wall seconds each side of the queue spent waiting. */
  double setup_seconds; /* backend start-up: plans; on CUDA the context and the staging ring's
                           first chunk (buffers, cuFFT plans) */
  double read_seconds; /* workers: reading the files */
  double hash_seconds; /* workers: audio digest, store lookup, record checksum */
  double decode_seconds; /* workers: decode, mix to mono, resample */
  double compute_seconds; /* features and dtype conversion: the workers' (CPU), or the compute
                                 stage's (CUDA: wall seconds with a chunk in flight) */
  double write_seconds; /* the writers: building and committing transactions (on CUDA also
                                 copying the features out of pinned memory), syncs */
  double queue_wait_seconds; /* workers blocked on a full queue (the writer is behind) or, on
                                 a staging backend, waiting for a free staging chunk (held by
                                 the device or the writers: device_wait_seconds) */
  double writer_wait_seconds; /* the writers idle with nothing queued: the workers are behind */
  unsigned workers; /* worker threads that ran */
  unsigned writers; /* writer threads (parts of a split store; 1 for a plain store) */
  int compute_stage; /* 1: compute ran on its own stage fed by the workers (a staging
                                 backend, CUDA): compute_seconds is that stage's */
  const char *bound; /* static string: "write-bound", "compute-bound", "GPU-bound",
                                 "read-bound", "hash-bound", "decode-bound", "staging-bound",
                                 "start-up-bound", or "idle" when nothing was done
                                 (fc_featurize_bound) */
  double staging_seconds; /* workers (a staging backend, CUDA): reserving room in the staging
                                 ring and writing the samples into it; the grower thread
                                 making the ring's other chunks */
  /* Failure records (docs/FORMAT.md "Failure record"): written for the items that failed because
   * of their input (a missing, empty, truncated, undecodable file, a bad manifest line with an
   * id), and deleted for ids stored (or found stored) under this config. */
  uint64_t failures_recorded;
  uint64_t failures_cleared;
  double device_wait_seconds; /* of queue_wait_seconds (a staging backend, CUDA): the workers
                                 waiting for a free staging chunk while it was on the device;
                                 the rest of their waits the writers held it */
  /* Utterances whose features the CPU computed (producer 1 in their records): every one of a CPU
   * run; on a staging device (CUDA) those computed while it started (docs/featurize.md "Hybrid
   * start") and those longer than a staging chunk. */
  uint64_t cpu_computed;
  int fell_back_to_cpu; /* the device could not be started and the CPU computed the job
                           (fc_featurize_opts.fallback_to_cpu; the reason in fell_back_why) */
  uint64_t not_stored; /* NOT_STORED (check_only) */
  /* With fell_back_to_cpu: the device's reason, however the run ended (why holds it too when
   * the run ended well or was stopped; after a failure, --strict's or a commit's, why is that). */
  char fell_back_why[256];
  /* 1 when fc_featurize_opts.manifest could not be read to its end (a read error, a line with no
   * line break in FC_MANIFEST_LINE_MAX bytes, no memory for its next item): the run stopped there,
   * what was read before it done (the error returned, why naming the manifest). The line it
   * stopped at counts in total and failed (no failure record: it has no id), so that a summary's
   * N of total shows the run incomplete; the lines after it were not read and count nowhere. */
  int manifest_stopped;
} fc_featurize_stats;

/* The bound the stage times of st imply, on a device of kind `device` (the rule of
 * docs/featurize.md "Stage accounting"). Returns a static string. */
FC_API const char *fc_featurize_bound(const fc_featurize_stats *st, fc_device_kind device);

/* Progress, called by the writer thread after each commit (and once at the end). */
typedef void (*fc_featurize_progress_fn)(const fc_featurize_stats *st, void *user);

typedef struct fc_featurize_opts {
  unsigned jobs; /* worker threads; 0 = 1 */
  fc_device device; /* auto, cpu, cuda[:N]: chosen by fc_featurize_run (see below) */
  double max_seconds; /* > 0: longer audio fails with FC_ETOOLONG */
  /* Read and hash every file, even one whose audio entry names it with its size and mtime (by
   * default such a file is taken as stored, unread: docs/featurize.md "Reruns"). */
  int rehash;
  int strict; /* stop at the first failed item (finished work is committed) */
  /* Set by the caller (e.g. a signal handler) to stop: no new items are started, what is computed
   * is committed, and fc_featurize_run returns FC_EINTR. May be NULL. */
  const volatile sig_atomic_t *stop;
  fc_featurize_event_fn on_event; /* may be NULL; calls are serialized */
  fc_featurize_progress_fn on_progress; /* may be NULL */
  void *user;
  /* Bounds; 0 picks the default in brackets. */
  uint32_t batch_records; /* records per write transaction [64] */
  uint64_t batch_bytes; /* bytes per write transaction [64 MiB] */
  double batch_seconds; /* a started batch is committed after this long [1] */
  uint32_t queue_records; /* computed records waiting for the writer [64] */
  uint64_t queue_bytes; /* bytes waiting for the writer [64 MiB] */
  double sync_seconds; /* fc_store_sync interval for stores opened FC_STORE_NOSYNC [5] */
  double auto_gpu_min_seconds; /* device auto: fc_featurize_choose_device's gpu_min_seconds [0] */
  /* A split store (fc_store.h, fc_store_open_split): its n_parts >= 2 parts, each written by its
   * own writer thread; an item goes to part fc_store_part_of_id(id, n_parts), its record and audio entry
   * in one transaction there. The s argument of fc_featurize_run is then ignored. NULL / 0 / 1:
   * s alone, written by the calling thread. The queue bounds above hold for all writers together,
   * the batch bounds for each. */
  fc_store *const *parts;
  unsigned n_parts;
  /* The items of this manifest file, read as workers take them (a reader thread hands them over
   * through fc_manifest_opts.on_item; manifest_opts may be NULL; the items and n arguments of
   * fc_featurize_run are then ignored): memory is the items in flight, not the manifest's.
   * stats->total counts the items read (on a stop, the rest are read and counted too). A
   * manifest that cannot be read on ends the run with its error (what was read is done). */
  const char *manifest;
  const fc_manifest_opts *manifest_opts;
  /* A GPU that cannot be started (its open fails: out of memory, a busy or exclusive device; or
   * the runtime no longer finds it) leaves the job to the CPU instead of failing it:
   * stats->fell_back_to_cpu, the device's reason in why.
   * Implied by device auto; set it too when passing the device auto chose (featurize does). */
  int fallback_to_cpu;
  /* Look, write nothing: each item is found stored (SKIPPED, by the rules of a rerun: its size
   * and mtime, else its bytes' digest), FAILED as a run would fail it (its file read and decoded,
   * its length checked), or NOT_STORED; no record, audio entry or failure record is written, an
   * entry naming the file otherwise is left as it is, and nothing is computed (the device is the
   * CPU whatever opts->device says). The store, or its parts, may be opened FC_STORE_RDONLY: a
   * store this user may only read is checked this way (docs/featurize.md "A store you may only
   * read"). */
  int check_only;
} fc_featurize_opts;

/* Fill o with the defaults (jobs 1, device auto, no limits, no callbacks). */
FC_API void fc_featurize_opts_init(fc_featurize_opts *o);

/* Featurize items[0..n) with cfg into the store s (opened writable, or read-only under
 * opts->check_only, which writes nothing; with FC_STORE_NOSYNC the
 * pipeline syncs every sync_seconds and at the end, with FC_STORE_NOMETASYNC at the end). Items with err set (manifest problems) are
 * reported as FAILED. For each good item: key = fc_record_key(audio digest, config digest); the
 * item is SKIPPED when the feat record exists and the id's audio entry holds the same digest;
 * unless opts->rehash, an item whose audio entry names its path with the file's size and mtime
 * is SKIPPED without reading the file when its record is stored (docs/featurize.md "Reruns").
 * Audio entries hold the source path made absolute against the working directory (lexically, as
 * os.path.abspath). An item that fails because of its input (a missing, empty, truncated or
 * undecodable file, too short or too long, a bad manifest line that has an id) also gets a
 * failure record in the `failed` db, committed as its entry would have been; an id stored, or
 * found stored, under cfg loses its failure record of cfg (docs/FORMAT.md "Failure record").
 * Device auto is chosen with fc_featurize_choose_device (opts->auto_gpu_min_seconds).
 * Returns 0 when the job ran to the end (stats->failed may be > 0; with stats->fell_back_to_cpu,
 * why says why the device could not be started); FC_EINTR when *stop was set (why: the same
 * reason, or empty when the device was not given up);
 * with strict, the error code of the first failed item; FC_ECONFIG / FC_ENODEVICE (reason in why)
 * before anything is done — FC_ENODEVICE also for a device that could not be started whatever the
 * runtime said (out of pinned memory: "the device failed to start: REASON"), under a hybrid start
 * after the utterances the CPU computed meanwhile are stored; a store error (errno, LMDB, FC_EBADSTATE) when a commit failed, in
 * which case earlier batches stay committed. The caller keeps ownership of items, cfg and s;
 * *stats (may be NULL) is filled in every case. */
FC_API int fc_featurize_run(fc_store *s, const fc_mel_config *cfg, const fc_item *items, size_t n,
                            const fc_featurize_opts *opts, fc_featurize_stats *stats, char *why,
                            size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
