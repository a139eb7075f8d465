/* Internal to cmd/cache-bench/: the bench handle, shared by bench.c (orders, passes) and
 * bench_dataset.c (the stores: open, enumerate, page cache); and what the reports share
 * (bench_report.c: verdict, table, JSON; bench_svg.c: the chart). */
#ifndef FC_BENCH_INT_H
#define FC_BENCH_INT_H

#include "cmd/cache-bench/bench.h"
#include "featcache/fc_store.h"

#include <stddef.h>
#include <stdint.h>

#define COLD_RESIDENT_MAX 0.02 /* a cold pass starts with at most 2 % of data.mdb resident */
#define COLD_PAGES_PER_STORE 64.5 /* or at most this many pages per store (meta and root pages) */

/* One store of the dataset: its own environment, map and data.mdb. */
struct bench_part {
  char *dir;
  char *data_path;
  fc_store *s;
  const uint8_t *map;
  size_t map_len;
  uint64_t file_bytes;
};

struct bench_rec {
  uint8_t key[16];
  uint64_t offset; /* of the value in its store's data.mdb */
  uint64_t val_len; /* value bytes (header + payload) */
  uint32_t part; /* index of its store */
};

struct fc_bench {
  unsigned store_flags;
  struct bench_part *parts; /* the stores, in the order given */
  size_t nparts;
  struct bench_rec *recs; /* store by store, key order within each; a key once (first store) */
  size_t n;
  uint64_t payload_bytes, max_payload, max_val, file_bytes; /* file_bytes: all stores */
  bench_device dev; /* the first store's */
  size_t page;
};

/* Open every part's store and map (again, after bench_detach). 0 or an fc_store_open error. */
__attribute__((visibility("hidden"))) int bench_attach(fc_bench *b);
/* Close every part's store: our own map would keep its pages resident. */
__attribute__((visibility("hidden"))) void bench_detach(fc_bench *b);

/* p50, p95, p99 and max, in ms, of the non-negative entries of v[0..n) (seconds; a negative one
 * is a record or batch not read), by linear interpolation (formats/common/quantile.h, as the
 * profiler and loader-bench); v is reordered. All 0 when none. */
__attribute__((visibility("hidden"))) void bench_percentiles(double *v, size_t n,
                                                             bench_latency *out);

/* Reports (bench_report.c), shared with the chart (bench_svg.c): "mmap" or "direct"; the
 * device's name (block device, else filesystem type, else kind); and the stores' passes side by
 * side: row k is a pass of the plan, cell [k][s] store s's run of it or NULL where it failed,
 * cell [k][n] the row's first run, rows in the plan's order. Returns the rows; *grid (NULL: no
 * memory) is the caller's to free. */
__attribute__((visibility("hidden"))) const char *bench_io_name(const bench_result *p);
__attribute__((visibility("hidden"))) const char *bench_device_name(const bench_device *d);
__attribute__((visibility("hidden"))) size_t bench_side_by_side(const bench_report *r, size_t n,
                                                                const bench_result ***grid);
/* The store's name as the text reports show it (bench_report.shown, else .store). */
static inline const char *bench_shown(const bench_report *r) {
  return r->shown ? r->shown : r->store;
}

#endif
