/* featcache — cache-bench: how fast the device under a store can feed training.
 *
 * A bench handle enumerates a store's feature records (db "feat") once, then runs passes: one
 * access pattern, cold or warm page cache, 1..N reader threads, records read one at a time or in
 * batches of B. A read looks the key up in LMDB, faults the value in through the map, checks the
 * record header and copies the payload into a private buffer, as the loader's dense-batch path
 * does, so every byte is touched. docs/cache-bench.md says how the numbers are measured.
 *
 * Threads: a handle is used by one thread at a time (bench_run starts its own readers). */
#ifndef FC_BENCH_H
#define FC_BENCH_H

#include "featcache/fc_base.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bench_pattern {
  BENCH_SEQUENTIAL = 0, /* key order (a cursor walk) */
  BENCH_PHYSICAL, /* map order: by the value's offset in data.mdb */
  BENCH_RANDOM, /* a seeded permutation */
  BENCH_LOCALITY, /* the loader's locality-aware order: runs of map-adjacent records,
                              the runs shuffled, the records shuffled within each run, each
                              batch then read in address order */
  BENCH_PATTERN_COUNT
} bench_pattern;

typedef enum bench_state { BENCH_COLD = 0, BENCH_WARM = 1 } bench_state;

/* "sequential", "physical", "random", "locality"; "cold", "warm". Static strings ("?" if bad). */
const char *bench_pattern_name(int pattern);
const char *bench_state_name(int state);
/* Inverse of the above; -1 for an unknown name. */
int bench_pattern_from_name(const char *name);
int bench_state_from_name(const char *name);

/* ---- device facts ------------------------------------------------------------------------------ */
typedef struct bench_device {
  char kind[16]; /* "block" (a block device is behind it), "tmpfs", "overlay", "other" */
  char block_device[64]; /* kernel name of the device holding the file, e.g. "vda1"; "" if none */
  char disk[64]; /* the whole disk behind it, e.g. "vda" (dm/md: the first slave) */
  char model[128]; /* device/model (or vendor) from sysfs; "" when the kernel does not say */
  char fs_type[32]; /* from /proc/self/mountinfo, e.g. "ext4", "tmpfs", "overlay" */
  char mount_point[256]; /* the mount that holds the file */
  char note[256]; /* plain words for tmpfs/overlay/virtual disks; "" otherwise */
  int rotational; /* queue/rotational: 1, 0, or -1 unknown */
  int read_ahead_kb; /* queue/read_ahead_kb, -1 unknown */
  int read_only; /* the mount is read-only */
  unsigned dev_major, dev_minor; /* st_dev of the file */
} bench_device;

/* Facts about the device and filesystem holding path (a file or directory). Fields the system
 * does not reveal are left "" / -1. Returns 0 or an errno (stat failed). */
int bench_device_probe(const char *path, bench_device *out);
/* For a filesystem without a block device behind it (d->fs_type set): d->kind ("tmpfs",
 * "overlay" or "other") and d->note, which says what "cold" cannot mean there (RAM; a ZFS ARC
 * or a network server that keeps its own cache). */
void bench_device_no_block(bench_device *d);

/* ---- the bench handle -------------------------------------------------------------------------- */
typedef struct fc_bench fc_bench;

enum bench_open_flags {
  BENCH_NOLOCK = 1u << 0, /* open MDB_NOLOCK (read-only media) */
  BENCH_NORDAHEAD = 1u << 1 /* open MDB_NORDAHEAD: compare with and without kernel readahead */
};

/* 1 when dir is a store this user can read but not write (lock.mdb): LMDB cannot take its reader
 * lock there, so the store opens only with BENCH_NOLOCK (the loader's check, store_lock.h). */
int bench_store_unwritable(const char *dir);
/* Open the store in dir read-only and list its feature records (key order). Memory: about 40 B
 * per record. Errors: those of fc_store_open (ENOENT: no store; FC_EFORMAT: not a featcache
 * store), FC_EEMPTY when the store holds no feature records. *out is the caller's: close it. */
int bench_open(const char *dir, unsigned flags, fc_bench **out);
/* Open the stores in dirs[0..n) as one dataset (the shards of one corpus, as the loader reads
 * them): their records are listed store by store in the order given, key order within each, and
 * a content key held by several stores is listed once, from the first. Passes read the union;
 * cold evicts every store's data.mdb, residency counts all of them; the device facts are the
 * first store's. A store without feature records is no error (an empty shard) unless all are.
 * Errors as bench_open, for the first store that fails (*failed, when not NULL, receives its
 * index); FC_EEMPTY when no store holds a feature record (*failed = n); EINVAL when n is 0. */
int bench_open_many(const char *const *dirs, size_t n, unsigned flags, fc_bench **out,
                    size_t *failed);
void bench_close(fc_bench *b);

size_t bench_records(const fc_bench *b);
/* How many stores the handle reads (1 for bench_open), and the directory of store s (as
 * given; valid until close; NULL when s is out of range). */
size_t bench_stores(const fc_bench *b);
const char *bench_store_path(const fc_bench *b, size_t s);
/* Sum of the payload bytes of all feature records (what training reads). */
uint64_t bench_payload_bytes(const fc_bench *b);
/* Size of data.mdb in bytes (of all the stores' data.mdb files together). */
uint64_t bench_file_bytes(const fc_bench *b);
/* Largest payload, in bytes. */
uint64_t bench_max_payload(const fc_bench *b);
/* The device facts, probed at open; valid until close. */
const bench_device *bench_device_info(const fc_bench *b);
/* Key (16 bytes) of record i in key order; valid until close. */
const uint8_t *bench_key(const fc_bench *b, size_t i);
/* Byte offset of record i's value in its store's data.mdb, and the index of that store. */
uint64_t bench_offset(const fc_bench *b, size_t i);
size_t bench_store_of(const fc_bench *b, size_t i);

/* The visiting order of a pattern: fills order[0..n) with record indices (a permutation of
 * 0..n-1, n = bench_records). seed drives random and locality; run is the locality run
 * length in records (0: 16 x batch, the loader's default); batch matters to locality only
 * (each batch is read in address order). Several stores: addresses are ordered store by store
 * (the loader's locality rule), so physical reads each store in map order, one after the other.
 * Returns 0, EINVAL or ENOMEM. */
int bench_order(const fc_bench *b, int pattern, uint64_t seed, uint32_t run, unsigned batch,
                uint32_t *order);

/* Fraction (0..1) of data.mdb's pages in the page cache, from mincore over a fresh mmap (of all
 * the stores' pages together). */
int bench_resident(fc_bench *b, double *fraction);
/* Evict the store from the page cache: close the map, fsync + posix_fadvise(DONTNEED) data.mdb,
 * reopen. *resident receives the fraction left (mincore). On tmpfs nothing can be evicted. */
int bench_evict(fc_bench *b, double *resident);
/* Read data.mdb once so that it is in the page cache (as far as memory allows). stop, when not
 * NULL, is polled between reads of 4 MiB: non-zero ends the prewarming early (a large store takes
 * minutes; an interrupt must not wait for it), and *resident says how far it got. */
int bench_prewarm(fc_bench *b, double *resident, int (*stop)(void *ctx), void *stop_ctx);

/* ---- passes ------------------------------------------------------------------------------------ */
typedef struct bench_params {
  int pattern; /* bench_pattern */
  int state; /* bench_state: cold evicts first, warm prewarms first */
  unsigned threads; /* reader threads, >= 1 */
  unsigned batch; /* records per batch, >= 1 (1: one record at a time) */
  uint64_t seed; /* random/locality */
  uint32_t run; /* locality run length in records (0: 16 x batch, as the loader) */
  double max_seconds; /* stop a pass after this long (0: no limit) */
  uint64_t max_bytes; /* stop a pass after this many payload bytes (0: no limit) */
  int direct; /* cold passes read with O_DIRECT pread instead of the map */
  int hint; /* batches: madvise(WILLNEED) every record of a batch before reading */
  /* Polled between batches, and while prewarming; a non-zero return stops the pass (signals):
   * stopped before it read a record, the pass returns 0 with r->stopped 3. May be NULL. */
  int (*should_stop)(void *ctx);
  void *stop_ctx;
  /* Test hook: called after each record is read, with its index; serialized by the library.
   * May be NULL. */
  void (*visit)(void *ctx, size_t index);
  void *visit_ctx;
} bench_params;

/* Defaults: sequential, cold, 1 thread, batch 1, seed 1, run 16 x batch, 5 s, no byte bound,
 * hint on. */
void bench_params_init(bench_params *p);

typedef struct bench_latency {
  double p50, p95, p99, max; /* milliseconds */
} bench_latency;

typedef struct bench_result {
  int pattern, state;
  unsigned threads, batch;
  int direct;
  double resident_before; /* mincore fraction of data.mdb right before the pass */
  int cold_verified; /* cold pass: resident_before <= 0.02, or <= 64 pages (LMDB's
                               meta and root pages, mapped on opening) */
  uint64_t records, batches, bytes; /* read in this pass; bytes = payload bytes */
  uint64_t bad_records; /* values whose header failed fc_record_parse (not copied), or coded
                               ones that failed to decode */
  uint64_t gone_records; /* listed when the store was opened, not in it when the pass looked
                               them up: removed by another process meanwhile (not read, not in
                               records) */
  double seconds; /* wall time of the pass */
  double mb_per_s; /* payload bytes / seconds / 1e6 */
  double records_per_s, batches_per_s;
  bench_latency record_ms; /* lookup + fault-in + check + copy of one record */
  bench_latency batch_ms; /* a whole batch, lookups and hints included */
  /* Split of the readers' loop time (sums to 1): kernel CPU bringing pages in (page faults;
   * the read syscall with direct), copying (memcpy of resident pages), waiting (off-CPU time
   * while bringing pages in: blocked on the device, or preempted), other (lookups, checks). */
  double fault_frac, copy_frac, wait_frac, other_frac;
  uint64_t major_faults, minor_faults; /* getrusage(RUSAGE_THREAD) deltas of the readers */
  int stopped; /* 0 the whole order was read, 1 time bound, 2 byte bound, 3 stopped */
  /* Delivered: what the training loop gets. Equal to bytes for plain records; for coded (mq)
   * records the decoded float32 bytes (each coded record is decoded, as the loader does). */
  uint64_t decoded_bytes;
  double decoded_mb_per_s; /* decoded_bytes / seconds / 1e6 */
  /* The pass's place in the run's plan (0, 1, ...), set by the caller after bench_run: stores
   * side by side show their passes in this order, also one that the first store failed. */
  unsigned plan;
  /* A --direct pass (or probe) that failed, where: BENCH_DIRECT_OPEN opening data.mdb with
   * O_DIRECT (the filesystem may not do direct I/O), BENCH_DIRECT_READ one of its O_DIRECT reads
   * (EINVAL there: a buffer, offset or length the device cannot take, not the filesystem), 0 the
   * failure was elsewhere; direct_store is the store whose data.mdb it was, direct_offset and
   * direct_len the aligned range the read asked for. */
  int direct_failed;
  size_t direct_store;
  uint64_t direct_offset, direct_len;
} bench_result;

enum { BENCH_DIRECT_OPEN = 1, BENCH_DIRECT_READ = 2 };
/* A warm pass that starts with less of data.mdb resident than this is not warm (a store larger
 * than the page cache keeps): said, as a cold pass that is not cold. */
#define WARM_RESIDENT_MIN 0.90
/* The alignment of --direct's reads: buffer, offset and length (bytes). */
#define BENCH_DIRECT_ALIGN 4096u

/* Run one pass. Returns 0 (also when stopped early: see r->stopped), or an errno/LMDB code. */
int bench_run(fc_bench *b, const bench_params *p, bench_result *r);

/* ---- reports ----------------------------------------------------------------------------------- */
typedef struct bench_report {
  const char *store; /* as given by the user (several stores read as one: a label naming them) */
  /* store as the text shows it (table, verdict, chart): each name quoted as the tools' messages
   * quote names (fc_quote_name), so that the verdict stays one line and the text UTF-8; NULL:
   * store as it is */
  const char *shown;
  const bench_device *device;
  uint64_t records, payload_bytes, file_bytes;
  const bench_result *passes;
  size_t n_passes;
  /* Several stores read as one dataset (bench_open_many): their directories; n_stores 0 or 1
   * means the one store named by `store`. */
  const char *const *stores;
  size_t n_stores;
  size_t n_given; /* the STOREs given that they came from (a split store is one); 0: n_stores */
  unsigned gpus; /* data-parallel readers (GPUs) the verdict is for, each a batch per step; 0: 1 */
  /* The disk's behaviour probe: one record at a time, one thread, O_DIRECT (no page cache, no
   * read-ahead), [0] in file order and [1] in random order; NULL when not run, probe_note then
   * says why ("" when it was not asked for). */
  const bench_result *probe;
  const char *probe_note;
} bench_report;

/* The verdict for one store, one line: does it keep up with r->gpus GPUs at a step of step_ms
 * through the loader's prefetch — a rate: reads overlap compute, so it keeps up when it delivers
 * gpus x 1000 / step_ms batches/s of `batch` records (the random-order cold pass with that batch
 * size, else the closest pass) — and is the device HDD-like or SSD-like by its measured behaviour
 * (cold random against cold sequential reads, not the rotational flag); then recommendations,
 * one per line. Writes a NUL-terminated text into buf (truncated to len). mem_available: bytes
 * of RAM available (0: read /proc/meminfo). */
void bench_verdict(const bench_report *r, double step_ms, unsigned batch, uint64_t mem_available,
                   char *buf, size_t len);

/* Bytes of RAM available (MemAvailable of /proc/meminfo; 0 when it cannot be read). */
uint64_t bench_mem_available(void);
/* b as "12.3 GB" or "4.5 MB". */
void bench_human_bytes(uint64_t b, char *out, size_t len);

/* A readable table: one store → a row per pass; several → side by side (MB/s and p99 per batch
 * for each store). */
void bench_write_table(FILE *f, const bench_report *r, size_t n);
/* One JSON object per line per store and pass ("record":"pass"), then one per store
 * ("record":"summary") with the device facts, verdict and recommendations. */
void bench_write_json(FILE *f, const bench_report *r, size_t n, double step_ms, unsigned batch);
/* An SVG 1.1 chart: bars of MB/s per pass (one <rect class="pass"> each), markers for the p50
 * and p99 batch latency on a log axis, axes, labels and a legend. Returns 0, or ENOMEM (nothing
 * written); an error writing f stays in f (ferror) for the caller to report, with its errno
 * (fc_outfile_commit). */
int bench_write_svg(FILE *f, const bench_report *r, size_t n);

#ifdef __cplusplus
}
#endif
#endif
