/* cache-bench: read a store's feature records in a given order, cold or warm, and time it.
 *
 * How a pass reads (the loader's dense-batch path): for a batch, look every key up (B-tree pages
 * only: LMDB hands out a pointer into the map without touching an overflow value), optionally
 * madvise(WILLNEED) each value so the kernel can queue the reads together, then bring each value
 * in by reading one byte per page (the page faults and any waiting for the device happen here),
 * then check its header and memcpy the payload into a private buffer (copying resident pages).
 * Timing the fault-in and the copy separately is what makes the fault/copy/wait split honest:
 * fault = thread CPU time spent in the fault-in loop (kernel work), wait = its wall time minus
 * that CPU time (off CPU: blocked on the device or preempted), copy = wall time of the copies.
 *
 * Cold: the map is closed (our own mappings would pin the pages), data.mdb fsync'ed and dropped
 * with posix_fadvise(DONTNEED), the store reopened, and mincore over a fresh mmap of the file says
 * how much of it is still resident. */
#include "cmd/cache-bench/bench_int.h"
#include "featcache/fc_codec.h"
#include "featcache/fc_format.h"
#include "featcache/fc_store.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/quantile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h> /* MDB_MAP_RESIZED: the library passes it through */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIRECT_ALIGN BENCH_DIRECT_ALIGN

static const char *const pattern_names[BENCH_PATTERN_COUNT] = {"sequential", "physical", "random",
                                                               "locality"};

const char *bench_pattern_name(int p) {
  return (p >= 0 && p < BENCH_PATTERN_COUNT) ? pattern_names[p] : "?";
}
const char *bench_state_name(int s) {
  return s == BENCH_COLD ? "cold" : s == BENCH_WARM ? "warm" : "?";
}
int bench_pattern_from_name(const char *name) {
  for (int i = 0; i < BENCH_PATTERN_COUNT; i++)
    if (name && strcmp(name, pattern_names[i]) == 0) return i;
  return -1;
}
int bench_state_from_name(const char *name) {
  if (name && strcmp(name, "cold") == 0) return BENCH_COLD;
  if (name && strcmp(name, "warm") == 0) return BENCH_WARM;
  return -1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- orders ------------------------------------------------------------------------------------ */
static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, bound) (Lemire's multiply-shift; the bias is below 2^-40 for our sizes). */
static uint32_t rand_below(uint64_t *s, uint32_t bound) {
  return (uint32_t)(((unsigned __int128)splitmix64(s) * bound) >> 64);
}

static void shuffle(uint32_t *a, size_t n, uint64_t *s) {
  for (size_t i = n; i > 1; i--) {
    uint32_t j = rand_below(s, (uint32_t)i);
    uint32_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

/* Map order: store by store (each is its own file), then the value's offset in data.mdb. */
static int by_offset(const void *x, const void *y, void *ctx) {
  const struct bench_rec *r = ctx, *a = &r[*(const uint32_t *)x], *b = &r[*(const uint32_t *)y];
  if (a->part != b->part) return a->part < b->part ? -1 : 1;
  return (a->offset > b->offset) - (a->offset < b->offset);
}

int bench_order(const fc_bench *b, int pattern, uint64_t seed, uint32_t run, unsigned batch,
                uint32_t *order) {
  size_t n = b->n;
  if (n > UINT32_MAX) return EINVAL;
  for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
  uint64_t st = seed;
  switch (pattern) {
  case BENCH_SEQUENTIAL: return 0;
  case BENCH_RANDOM: shuffle(order, n, &st); return 0;
  case BENCH_PHYSICAL:
  case BENCH_LOCALITY: break;
  default: return EINVAL;
  }
  qsort_r(order, n, sizeof *order, by_offset, b->recs);
  if (pattern == BENCH_PHYSICAL) return 0;
  /* locality, the loader's rule (libcache/loader_plan.c, FC_ORDER_LOCALITY): runs of `run`
   * map-adjacent records (default 16 batches), the runs in a shuffled order, each run's records
   * shuffled among themselves, then every batch read in address order. A batch reads from one
   * or two short stretches of the disk while an epoch still visits the store in a random order.
   * The loader's generator is its own (xoshiro seeded per epoch): same rule, other permutations. */
  if (batch == 0) batch = 1;
  if (run == 0) run = 16 * batch;
  size_t nruns = (n + run - 1) / run;
  uint32_t *perm = fc_malloc(nruns * sizeof *perm), *tmp = fc_malloc(n * sizeof *tmp);
  if (!perm || !tmp) {
    free(perm);
    free(tmp);
    return ENOMEM;
  }
  for (size_t i = 0; i < nruns; i++) perm[i] = (uint32_t)i;
  shuffle(perm, nruns, &st);
  size_t w = 0;
  for (size_t r = 0; r < nruns; r++) {
    size_t lo = (size_t)perm[r] * run, hi = lo + run < n ? lo + run : n;
    memcpy(tmp + w, order + lo, (hi - lo) * sizeof *tmp);
    shuffle(tmp + w, hi - lo, &st);
    w += hi - lo;
  }
  memcpy(order, tmp, n * sizeof *order);
  for (size_t i = 0; i < n; i += batch)
    qsort_r(order + i, n - i < batch ? n - i : batch, sizeof *order, by_offset, b->recs);
  free(tmp);
  free(perm);
  return 0;
}

/* ---- a pass ------------------------------------------------------------------------------------ */
void bench_params_init(bench_params *p) {
  memset(p, 0, sizeof *p);
  p->pattern = BENCH_SEQUENTIAL;
  p->state = BENCH_COLD;
  p->threads = 1;
  p->batch = 1;
  p->seed = 1;
  p->run = 0;
  p->max_seconds = 5.0;
  p->hint = 1;
}

struct pass {
  fc_bench *b;
  const bench_params *p;
  const uint32_t *order;
  size_t n;
  int *direct_fd; /* per store; NULL unless direct */
  double t0;
  atomic_size_t next;
  atomic_uint_fast64_t bytes;
  atomic_int stop; /* 0 running; 1 time, 2 bytes, 3 asked to stop, 4 error */
  double *rec_lat; /* seconds, by position in the order; < 0: not read */
  double *batch_lat; /* by batch number */
  pthread_mutex_t visit_mu;
};

struct reader {
  pthread_t th;
  struct pass *ps;
  int rc;
  uint64_t records, bytes, bad, gone, batches, majflt, minflt;
  double fault_cpu, wait, copy, total;
  uint8_t *buf; /* batch × max payload: the dense batch the loader would fill */
  float *dec; /* coded (mq) records are decoded here, as the loader decodes into its batch */
  size_t dec_cap;
  uint64_t decoded; /* bytes delivered: payload bytes, or decoded f32 bytes of coded records */
  uint8_t *dbuf; /* direct: aligned bounce buffer */
  size_t direct_store; /* direct: the read that failed (rc from read_direct) */
  uint64_t direct_offset, direct_len;
  int direct_failed;
};

/* Check record val and deliver its payload as the loader would: a copy into the batch slot, or
 * for a coded record a decode (into the reader's buffer: decoded records are larger than the
 * slots). Counts bytes read and delivered; a record that fails is counted bad. */
static void deliver(struct reader *rd, fc_bench *b, const void *val, size_t len, size_t j) {
  fc_record_header h;
  const void *payload;
  if (fc_record_parse(val, len, &h, &payload, NULL, 0) != 0) {
    rd->bad++;
    return;
  }
  uint64_t out = h.payload_bytes;
  if (h.dtype == FC_DTYPE_MQ) {
    out = (uint64_t)h.dim0 * h.dim1 * sizeof(float);
    if (out > rd->dec_cap) {
      float *p = fc_realloc(rd->dec, (size_t)out);
      if (!p) {
        rd->bad++;
        return;
      }
      rd->dec = p;
      rd->dec_cap = (size_t)out;
    }
    if (fc_mq_decode(fc_mq_thread_coder(), payload, (size_t)h.payload_bytes, h.dim0, h.dim1, 0,
                     h.dim0, rd->dec, NULL, 0) != 0) {
      rd->bad++;
      return;
    }
  } else {
    memcpy(rd->buf + j * b->max_payload, payload, (size_t)h.payload_bytes);
  }
  rd->bytes += h.payload_bytes;
  rd->decoded += out;
}

static void set_stop(struct pass *ps, int why) {
  int zero = 0;
  atomic_compare_exchange_strong(&ps->stop, &zero, why);
}

/* Bring a mapped value in: one read per page (faults, readahead, waiting happen here). */
static uint8_t touch_pages(const uint8_t *p, size_t len, size_t page) {
  const volatile uint8_t *v = p;
  uint8_t acc = 0;
  size_t first = page - ((uintptr_t)p & (page - 1));
  if (len) acc ^= v[0];
  for (size_t o = first; o < len; o += page) acc ^= v[o];
  if (len) acc ^= v[len - 1];
  return acc;
}

static volatile uint8_t touch_sink;

/* FC_FAULT=directread:N fails the N-th O_DIRECT read with EINVAL, as a misaligned one fails */
static int read_direct(struct reader *rd, int fd, uint64_t offset, size_t len,
                       const uint8_t **out) {
  uint64_t lo = offset & ~(uint64_t)(DIRECT_ALIGN - 1);
  uint64_t hi = (offset + len + DIRECT_ALIGN - 1) & ~(uint64_t)(DIRECT_ALIGN - 1);
  size_t want = (size_t)(hi - lo), got = 0;
  rd->direct_offset = lo;
  rd->direct_len = want;
  while (got < want) {
    errno = EINVAL;
    ssize_t r =
        fault_hit("directread") ? -1 : pread(fd, rd->dbuf + got, want - got, (off_t)(lo + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) break; /* end of file inside the last block */
    got += (size_t)r;
  }
  if (got < (size_t)(offset - lo) + len) return EIO;
  *out = rd->dbuf + (offset - lo);
  return 0;
}

/* Begin a read transaction of every store (t: NULL each). With base (--direct), also the map's
 * address in each, as the transactions hold it: another process that grew a store since it was
 * opened (a featurize writing beside) has its size adopted by the first read transaction after,
 * which maps it anew, elsewhere — a value's offset in data.mdb is its pointer minus this map's
 * address, not the one seen when the store was opened. No remap happens while they are held;
 * one that comes between the begin and the look-up of the address begins them all again. */
static int begin_reads(fc_bench *b, fc_rtxn **t, const uint8_t **base) {
  for (int tries = 0;; tries++) {
    int rc = 0;
    for (size_t i = 0; i < b->nparts && !rc; i++) rc = fc_store_read_begin(b->parts[i].s, &t[i]);
    for (size_t i = 0; base && i < b->nparts && !rc; i++) {
      const void *m;
      size_t len;
      rc = fc_store_map_region(b->parts[i].s, &m, &len);
      base[i] = m;
    }
    if (!rc) return 0;
    for (size_t i = 0; i < b->nparts; i++) {
      fc_rtxn_end(t[i]);
      t[i] = NULL;
    }
    if (rc != MDB_MAP_RESIZED || tries == 8) return rc;
  }
}

static void *reader_main(void *arg) {
  struct reader *rd = arg;
  struct pass *ps = rd->ps;
  fc_bench *b = ps->b;
  const bench_params *p = ps->p;
  size_t B = p->batch;
  const void *vals[B > 0 ? B : 1];
  size_t lens[B > 0 ? B : 1];
  double lk[B > 0 ? B : 1], ft[B > 0 ? B : 1];
  struct rusage ru0, ru1;
  getrusage(RUSAGE_THREAD, &ru0);
  fc_rtxn **t = fc_calloc(b->nparts, sizeof *t); /* one read transaction per store */
  const uint8_t **base = ps->direct_fd ? fc_calloc(b->nparts, sizeof *base) : NULL;
  rd->rc = t && (base || !ps->direct_fd) ? begin_reads(b, t, base) : ENOMEM;
  uint8_t acc = 0;
  if (rd->rc) {
    set_stop(ps, 4);
    goto out;
  }
  while (!atomic_load(&ps->stop)) {
    size_t i0 = atomic_fetch_add(&ps->next, B);
    if (i0 >= ps->n) break;
    size_t batch_n = ps->n - i0 < B ? ps->n - i0 : B, m = 0;
    size_t pos[B > 0 ? B : 1]; /* the batch's records found: their places in the order */
    double tb0 = now_s();
    for (size_t j = 0; j < batch_n; j++) {
      double a = now_s();
      const struct bench_rec *r = &b->recs[ps->order[i0 + j]];
      int rc = fc_rtxn_get(t[r->part], FC_DB_FEAT, r->key, 16, &vals[m], &lens[m]);
      lk[m] = now_s() - a;
      if (rc == FC_ENOTFOUND) { /* removed since the store was listed (a cache-prune beside) */
        rd->gone++;
        continue;
      }
      if (rc) {
        rd->rc = rc;
        set_stop(ps, 4);
        goto out;
      }
      pos[m++] = i0 + j;
    }
    if (m > 1 && p->hint && !ps->direct_fd) {
      for (size_t j = 0; j < m; j++) {
        uintptr_t lo = (uintptr_t)vals[j] & ~(uintptr_t)(b->page - 1);
        madvise((void *)lo, (uintptr_t)vals[j] + lens[j] - lo, MADV_WILLNEED);
      }
    }
    double fault_wall = 0, copy = 0, cpu = 0;
    const uint8_t *src[B > 0 ? B : 1];
    if (ps->direct_fd) {
      for (size_t j = 0; j < m; j++) { /* read and copy one by one through the bounce buffer */
        double a = now_s(), c0 = thread_cpu_s();
        const struct bench_rec *r = &b->recs[ps->order[pos[j]]];
        uint64_t off = (uint64_t)((const uint8_t *)vals[j] - base[r->part]);
        int rc = read_direct(rd, ps->direct_fd[r->part], off, lens[j], &src[j]);
        double c1 = thread_cpu_s();
        ft[j] = now_s() - a;
        cpu += c1 - c0;
        fault_wall += ft[j];
        if (rc) {
          rd->rc = rc;
          rd->direct_failed = BENCH_DIRECT_READ;
          rd->direct_store = r->part;
          set_stop(ps, 4);
          goto out;
        }
        double a2 = now_s();
        uint64_t before = rd->bytes;
        deliver(rd, b, src[j], lens[j], j);
        atomic_fetch_add(&ps->bytes, rd->bytes - before);
        double c = now_s() - a2;
        copy += c;
        ps->rec_lat[pos[j]] = lk[j] + ft[j] + c;
      }
    } else {
      double c0 = thread_cpu_s();
      for (size_t j = 0; j < m; j++) {
        double a = now_s();
        acc ^= touch_pages(vals[j], lens[j], b->page);
        ft[j] = now_s() - a;
        fault_wall += ft[j];
      }
      cpu = thread_cpu_s() - c0;
      for (size_t j = 0; j < m; j++) {
        double a = now_s();
        uint64_t before = rd->bytes;
        deliver(rd, b, vals[j], lens[j], j);
        atomic_fetch_add(&ps->bytes, rd->bytes - before);
        double c = now_s() - a;
        copy += c;
        ps->rec_lat[pos[j]] = lk[j] + ft[j] + c;
      }
    }
    double tb = now_s() - tb0;
    if (m) ps->batch_lat[i0 / B] = tb; /* a batch of records all gone is no batch read */
    if (cpu > fault_wall) cpu = fault_wall;
    rd->fault_cpu += cpu;
    rd->wait += fault_wall - cpu;
    rd->copy += copy;
    rd->total += tb;
    rd->records += m;
    rd->batches += m > 0;
    if (p->visit) {
      pthread_mutex_lock(&ps->visit_mu);
      for (size_t j = 0; j < m; j++) p->visit(p->visit_ctx, ps->order[pos[j]]);
      pthread_mutex_unlock(&ps->visit_mu);
    }
    if (p->max_seconds > 0 && now_s() - ps->t0 >= p->max_seconds) set_stop(ps, 1);
    if (p->max_bytes > 0 && atomic_load(&ps->bytes) >= p->max_bytes) set_stop(ps, 2);
    if (p->should_stop && p->should_stop(p->stop_ctx)) set_stop(ps, 3);
  }
out:
  touch_sink = acc;
  for (size_t i = 0; t && i < b->nparts; i++) fc_rtxn_end(t[i]);
  free(t);
  free(base);
  getrusage(RUSAGE_THREAD, &ru1);
  rd->majflt = (uint64_t)(ru1.ru_majflt - ru0.ru_majflt);
  rd->minflt = (uint64_t)(ru1.ru_minflt - ru0.ru_minflt);
  return NULL;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Percentiles of the non-negative entries of v[0..n) (seconds), in ms, by the profiler's and
 * loader-bench's method (numpy's linear interpolation: formats/common/quantile.h); v is
 * reordered. */
void bench_percentiles(double *v, size_t n, bench_latency *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i] >= 0) v[k++] = v[i];
  memset(out, 0, sizeof *out);
  if (!k) return;
  qsort(v, k, sizeof *v, cmp_double);
  out->p50 = fc_quantile_sorted(v, k, 0.50) * 1e3;
  out->p95 = fc_quantile_sorted(v, k, 0.95) * 1e3;
  out->p99 = fc_quantile_sorted(v, k, 0.99) * 1e3;
  out->max = v[k - 1] * 1e3;
}

int bench_run(fc_bench *b, const bench_params *p, bench_result *r) {
  memset(r, 0, sizeof *r);
  if (p->threads < 1 || p->batch < 1 || p->pattern < 0 || p->pattern >= BENCH_PATTERN_COUNT ||
      (p->state != BENCH_COLD && p->state != BENCH_WARM))
    return EINVAL;
  r->pattern = p->pattern;
  r->state = p->state;
  r->threads = p->threads;
  r->batch = p->batch;
  r->direct = p->direct && p->state == BENCH_COLD;
  int rc = bench_attach(b); /* an earlier eviction may have failed to reopen a store */
  if (rc) return rc;

  size_t n = b->n, nb = (n + p->batch - 1) / p->batch;
  uint32_t *order = fc_malloc(n * sizeof *order);
  double *rec_lat = fc_malloc(n * sizeof *rec_lat), *batch_lat = fc_malloc(nb * sizeof *batch_lat);
  struct reader *rds = fc_calloc(p->threads, sizeof *rds);
  struct pass ps = {.b = b, .p = p, .n = n, .rec_lat = rec_lat, .batch_lat = batch_lat};
  pthread_mutex_init(&ps.visit_mu, NULL);
  rc = (order && rec_lat && batch_lat && rds) ? 0 : ENOMEM;
  if (!rc) rc = bench_order(b, p->pattern, p->seed, p->run, p->batch, order);
  if (rc) goto out;
  ps.order = order;
  for (size_t i = 0; i < n; i++) rec_lat[i] = -1;
  for (size_t i = 0; i < nb; i++) batch_lat[i] = -1;
  for (unsigned i = 0; i < p->threads && !rc; i++) {
    rds[i].ps = &ps;
    rds[i].buf = fc_malloc((size_t)p->batch * (b->max_payload ? b->max_payload : 1));
    if (!rds[i].buf) rc = ENOMEM;
    if (!rc && r->direct &&
        fc_posix_memalign((void **)&rds[i].dbuf, DIRECT_ALIGN,
                          (size_t)b->max_val + 2 * DIRECT_ALIGN))
      rc = ENOMEM;
  }
  if (rc) goto out;

  double resident = 0;
  rc = p->state == BENCH_COLD ? bench_evict(b, &resident)
                              : bench_prewarm(b, &resident, p->should_stop, p->stop_ctx);
  if (!rc && p->state == BENCH_WARM) fault_stop("bench_warm"); /* a test evicts it here */
  if (!rc) rc = bench_resident(b, &r->resident_before); /* after reopening: what the pass sees */
  if (rc) goto out;
  if (p->should_stop && p->should_stop(p->stop_ctx)) { /* asked to stop while getting ready */
    r->stopped = 3;
    goto out;
  }
  /* cold: at most 2 % resident, or a handful of pages per store (the meta and root pages LMDB
   * maps on opening stay, whatever the store's size) */
  double file_pages = (double)b->file_bytes / (double)b->page;
  r->cold_verified = p->state == BENCH_COLD &&
                     (r->resident_before <= COLD_RESIDENT_MAX ||
                      r->resident_before * file_pages <= COLD_PAGES_PER_STORE * (double)b->nparts);
  if (r->direct) {
    if (!(ps.direct_fd = fc_malloc(b->nparts * sizeof *ps.direct_fd))) {
      rc = ENOMEM;
      goto out;
    }
    for (size_t i = 0; i < b->nparts; i++) ps.direct_fd[i] = -1;
    for (size_t i = 0; i < b->nparts; i++) { /* FC_FAULT=directopen:N: EINVAL, as refused */
      errno = EINVAL;
      ps.direct_fd[i] = fault_hit("directopen")
                            ? -1
                            : open(b->parts[i].data_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
      if (ps.direct_fd[i] < 0) {
        rc = errno; /* EINVAL: the filesystem does not do O_DIRECT */
        r->direct_failed = BENCH_DIRECT_OPEN;
        r->direct_store = i;
        goto out;
      }
    }
  }

  ps.t0 = now_s();
  unsigned started = 0;
  for (; started < p->threads; started++) {
    if (pthread_create(&rds[started].th, NULL, reader_main, &rds[started]) != 0) {
      rc = EAGAIN;
      set_stop(&ps, 4);
      break;
    }
  }
  for (unsigned i = 0; i < started; i++) pthread_join(rds[i].th, NULL);
  r->seconds = now_s() - ps.t0;

  double fault = 0, wait = 0, copy = 0, total = 0;
  for (unsigned i = 0; i < started; i++) {
    struct reader *rd = &rds[i];
    if (!rc && rd->rc) {
      rc = rd->rc;
      r->direct_failed = rd->direct_failed;
      r->direct_store = rd->direct_store;
      r->direct_offset = rd->direct_offset;
      r->direct_len = rd->direct_len;
    }
    r->records += rd->records;
    r->batches += rd->batches;
    r->bytes += rd->bytes;
    r->decoded_bytes += rd->decoded;
    r->bad_records += rd->bad;
    r->gone_records += rd->gone;
    r->major_faults += rd->majflt;
    r->minor_faults += rd->minflt;
    fault += rd->fault_cpu;
    wait += rd->wait;
    copy += rd->copy;
    total += rd->total;
  }
  if (rc) goto out;
  /* a bound reached on the order's last batch stopped nothing: the pass is complete */
  int why = atomic_load(&ps.stop);
  r->stopped = r->records + r->gone_records >= n ? 0 : (why == 1 || why == 2) ? why : 3;
  if (r->seconds > 0) {
    r->mb_per_s = (double)r->bytes / r->seconds / 1e6;
    r->decoded_mb_per_s = (double)r->decoded_bytes / r->seconds / 1e6;
    r->records_per_s = (double)r->records / r->seconds;
    r->batches_per_s = (double)r->batches / r->seconds;
  }
  if (total > 0) {
    r->fault_frac = fault / total;
    r->wait_frac = wait / total;
    r->copy_frac = copy / total;
    r->other_frac = 1.0 - r->fault_frac - r->wait_frac - r->copy_frac;
    if (r->other_frac < 0) r->other_frac = 0;
  }
  bench_percentiles(rec_lat, n, &r->record_ms);
  bench_percentiles(batch_lat, nb, &r->batch_ms);
out:
  for (size_t i = 0; ps.direct_fd && i < b->nparts; i++)
    if (ps.direct_fd[i] >= 0) close(ps.direct_fd[i]);
  free(ps.direct_fd);
  if (rds)
    for (unsigned i = 0; i < p->threads; i++) {
      free(rds[i].buf);
      free(rds[i].dec);
      free(rds[i].dbuf);
    }
  free(rds);
  free(batch_lat);
  free(rec_lat);
  free(order);
  pthread_mutex_destroy(&ps.visit_mu);
  return rc;
}
