/* cache-bench reports: verdict and recommendations, a table, JSON lines and an SVG chart. */
#include "cmd/cache-bench/bench_int.h"
#include "featcache/fc_format.h"
#include "featcache/fc_outfile.h"
#include "formats/common/alloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RECS 8

struct verdict {
  const bench_result *ref; /* the pass the verdict quotes (cold random at the batch size) */
  const bench_result *warm; /* the same in the page cache, when measured */
  double bps, warm_bps; /* batches/s of `per_batch` records */
  unsigned per_batch; /* records in the loader's batch: the batch, or fewer when the store holds
                       * fewer (a store of one record is read in batches of one) */
  unsigned gpus; /* GPUs the question is about, each reading a batch per step */
  double need_bps; /* batches/s they need: gpus x 1000 / step */
  int keeps_up, warm_keeps_up, fits_ram;
  double max_gpus; /* GPUs this rate feeds at the step: floor(bps x step / 1000) */
  double min_step_ms; /* the shortest step the rate feeds for `gpus` GPUs */
  const char *behaviour; /* "hdd-like", "ssd-like", "ram" or "unknown" */
  double rnd_vs_seq; /* cold: sequential MB/s / random MB/s (NAN when not measured) */
  double rnd_record_ms; /* cold random: p50 per record (ms) */
  char text[2048];
  char recs[MAX_RECS][512];
  int nrecs;
};

static void add_rec(struct verdict *v, const char *fmt, ...) {
  if (v->nrecs >= MAX_RECS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->recs[v->nrecs++], sizeof v->recs[0], fmt, ap);
  va_end(ap);
}

uint64_t bench_mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

/* Best (most records/s) pass matching pattern/state, preferring batch == want; NULL if none. A
 * pass that read no record (every one removed from the store meanwhile) measured nothing. */
static const bench_result *find_pass(const bench_report *r, int pattern, int state,
                                     unsigned want_batch, int exact_batch) {
  const bench_result *best = NULL;
  for (size_t i = 0; i < r->n_passes; i++) {
    const bench_result *p = &r->passes[i];
    if (pattern >= 0 && p->pattern != pattern) continue;
    if (state >= 0 && p->state != state) continue;
    if (exact_batch && p->batch != want_batch) continue;
    if (!p->records) continue;
    if (!best || p->records_per_s > best->records_per_s) best = p;
  }
  return best;
}

static const char *rotational_word(int rot) {
  return rot == 1 ? "rotational" : rot == 0 ? "non-rotational" : "rotation unknown";
}

void bench_human_bytes(uint64_t b, char *out, size_t len) {
  if (b >= 1000000000ull)
    snprintf(out, len, "%.1f GB", (double)b / 1e9);
  else
    snprintf(out, len, "%.1f MB", (double)b / 1e6);
}

/* HDD-like or SSD-like, by what the device did (the probe: single records, one thread,
 * O_DIRECT, in file order and in random order). A disk that seeks reads random records several
 * times slower than sequential ones, each taking milliseconds (a seek and half a turn: 4+ ms at
 * 7,200 rpm); an SSD reads them at about the sequential rate, each in a fraction of a
 * millisecond. The rotational flag a device reports is what a hypervisor says, not what the
 * medium does. */
static void disk_behaviour(const bench_report *r, struct verdict *v, char *out, size_t len) {
  const bench_device *d = r->device;
  v->behaviour = "unknown";
  v->rnd_vs_seq = NAN;
  v->rnd_record_ms = NAN;
  if (!strcmp(d->kind, "tmpfs")) {
    v->behaviour = "ram";
    snprintf(out, len, "the store is in RAM (%s): no disk to tell HDD from SSD", d->fs_type);
    return;
  }
  const bench_result *seq = r->probe ? &r->probe[0] : NULL;
  const bench_result *rnd = r->probe ? &r->probe[1] : NULL;
  if (!seq || !(rnd->mb_per_s > 0) || !(seq->mb_per_s > 0)) {
    snprintf(out, len, "HDD or SSD not measured%s%s%s", r->probe_note && *r->probe_note ? " (" : "",
             r->probe_note ? r->probe_note : "", r->probe_note && *r->probe_note ? ")" : "");
    return;
  }
  char fb[32];
  bench_human_bytes(r->file_bytes, fb, sizeof fb);
  if (r->file_bytes < (64u << 20)) {
    snprintf(out, len,
             "HDD or SSD cannot be told on a store of %s (a disk's own cache holds that much): "
             "bench one of at least 64 MiB",
             fb);
    return;
  }
  v->rnd_vs_seq = seq->mb_per_s / rnd->mb_per_s;
  v->rnd_record_ms = rnd->record_ms.p50;
  int seeks = v->rnd_vs_seq >= 3 && v->rnd_record_ms >= 2.0;
  v->behaviour = seeks ? "hdd-like" : "ssd-like";
  const char *flag = d->rotational == 1 && !seeks  ? " (the device says rotational)"
                     : d->rotational == 0 && seeks ? " (the device says non-rotational)"
                                                   : "";
  if (v->rnd_vs_seq >= 1.05)
    snprintf(out, len, "%s: single random reads %.1fx slower than sequential, %.2f ms a record%s%s",
             seeks ? "HDD-like" : "SSD-like", v->rnd_vs_seq, v->rnd_record_ms,
             seeks ? " (seeks)" : "", flag);
  else
    snprintf(out, len, "%s: single random reads as fast as sequential, %.2f ms a record%s",
             seeks ? "HDD-like" : "SSD-like", v->rnd_record_ms, flag);
}

static void compute_verdict(const bench_report *r, double step_ms, unsigned batch,
                            uint64_t mem_available, struct verdict *v) {
  memset(v, 0, sizeof *v);
  if (!batch) batch = 1;
  /* what no pass measured stays unknown (null in JSON), never 0: a 0 ms shortest step would say
   * any step keeps up */
  v->bps = v->warm_bps = v->max_gpus = v->min_step_ms = NAN;
  v->gpus = r->gpus ? r->gpus : 1;
  v->need_bps = v->gpus * 1000.0 / step_ms;
  /* the device and the probe's HDD-or-SSD answer hold even when no pass ran (interrupted) */
  const bench_device *d = r->device;
  char dev[256], tell[512], tail[800];
  if (strcmp(d->kind, "block") == 0)
    snprintf(dev, sizeof dev, "%s (%s, %s)", d->disk[0] ? d->disk : d->block_device,
             d->model[0] ? d->model : "model unknown", d->fs_type);
  else
    snprintf(dev, sizeof dev, "%s", d->fs_type[0] ? d->fs_type : d->kind);
  disk_behaviour(r, v, tell, sizeof tell);
  if (!strcmp(v->behaviour, "ram"))
    snprintf(tail, sizeof tail, "%s", tell);
  else
    snprintf(tail, sizeof tail, "disk %s: %s", dev, tell);
  static const int prefer[] = {BENCH_RANDOM, BENCH_LOCALITY, BENCH_PHYSICAL, BENCH_SEQUENTIAL};
  for (int exact = 1; exact >= 0 && !v->ref; exact--) /* any cold pass before a warm one */
    for (int st = BENCH_COLD; st <= BENCH_WARM && !v->ref; st++)
      for (int i = 0; i < 4 && !v->ref; i++) v->ref = find_pass(r, prefer[i], st, batch, exact);
  if (!v->ref) {
    snprintf(v->text, sizeof v->text, "%s: no pass was measured; %s", bench_shown(r), tail);
    return;
  }
  v->warm = find_pass(r, v->ref->pattern, BENCH_WARM, batch, 1);
  if (!v->warm) v->warm = find_pass(r, v->ref->pattern, BENCH_WARM, batch, 0);
  if (v->warm == v->ref) v->warm = NULL;
  /* batches/s from records/s so that passes of another batch size convert honestly; a batch
   * holds no more than the store: the loader's batches of a store of 3 records hold 3, and a
   * rate "of 32" would be of batches no pass read and no training run gets */
  v->per_batch = r->records && r->records < batch ? (unsigned)r->records : batch;
  v->bps = v->ref->records_per_s / v->per_batch;
  v->warm_bps = v->warm ? v->warm->records_per_s / v->per_batch : 0;
  /* Through the loader's prefetch, reads overlap the step's compute: the device keeps up when
   * it delivers as many batches per second as the GPUs consume, each one batch per step. */
  v->keeps_up = v->bps >= v->need_bps;
  v->warm_keeps_up = v->warm && v->warm_bps >= v->need_bps;
  v->max_gpus = floor(v->bps * step_ms / 1000.0);
  v->min_step_ms = v->bps > 0 ? v->gpus * 1000.0 / v->bps : INFINITY;
  uint64_t avail = mem_available ? mem_available : bench_mem_available();
  v->fits_ram = avail && r->file_bytes < avail / 2;

  char how[320], not_cold[96] = "", fewer[96] = "";
  if (v->ref->state == BENCH_COLD && !v->ref->cold_verified) /* what the table marks (not cold) */
    snprintf(not_cold, sizeof not_cold, ", but not cold: %.1f%% of data.mdb was resident",
             100 * v->ref->resident_before);
  if (v->ref->state == BENCH_WARM && v->ref->resident_before < WARM_RESIDENT_MIN)
    snprintf(not_cold, sizeof not_cold, ", but not warm: %.1f%% of data.mdb was resident",
             100 * v->ref->resident_before);
  if (v->per_batch < batch)
    snprintf(fewer, sizeof fewer, "; all the store's %u record%s: a batch of %u holds no more",
             v->per_batch, v->per_batch == 1 ? "" : "s", batch);
  /* an O_DIRECT pass (--direct) is said: the loader reads through the map */
  snprintf(how, sizeof how, "%s order, %s%s, %u thread%s%s%s%s",
           bench_pattern_name(v->ref->pattern), bench_state_name(v->ref->state),
           v->ref->direct ? ", O_DIRECT" : "", v->ref->threads, v->ref->threads == 1 ? "" : "s",
           v->ref->batch == batch ? "" : ", converted", not_cold, fewer);
  const char *gs = v->gpus == 1 ? "" : "s";
  double headroom = floor(10 * v->bps / v->need_bps) / 10; /* 2.96 is "2.9x", as 2 GPUs */
  if (v->keeps_up)
    snprintf(v->text, sizeof v->text,
             "%s keeps up with %u GPU%s at a %g ms step: it delivers %.1f batches/s of %u (%s) "
             "where %.1f/s are needed (%.1fx; up to %.0f GPU%s); %s",
             bench_shown(r), v->gpus, gs, step_ms, v->bps, v->per_batch, how, v->need_bps, headroom,
             v->max_gpus, v->max_gpus == 1 ? "" : "s", tail);
  else {
    char warm[160] = "";
    if (v->warm && v->fits_ram)
      snprintf(warm, sizeof warm,
               "; from the page cache (data.mdb fits in RAM: the second "
               "epoch on) %.1f/s, %s",
               v->warm_bps, v->warm_keeps_up ? "enough" : "still short");
    snprintf(v->text, sizeof v->text,
             "%s is too slow for %u GPU%s at a %g ms step: it delivers %.1f batches/s of %u (%s) "
             "where %.1f/s are needed (steps of %.1f ms or more keep up)%s; %s",
             bench_shown(r), v->gpus, gs, step_ms,
             floor(v->bps * 10 + 1e-6) / 10, /* down: never said equal to the rate needed */
             v->per_batch, how, v->need_bps,
             ceil(v->min_step_ms * 10 - 1e-6) / 10, /* up: the step said must keep up */
             warm, tail);
  }

  /* recommendations */
  const bench_result *rc_cold = find_pass(r, BENCH_RANDOM, BENCH_COLD, batch, 0);
  const bench_result *lc_cold = find_pass(r, BENCH_LOCALITY, BENCH_COLD, batch, 0);
  const bench_result *sq_cold = find_pass(r, BENCH_SEQUENTIAL, BENCH_COLD, batch, 0);
  const bench_result *ph_cold = find_pass(r, BENCH_PHYSICAL, BENCH_COLD, batch, 0);
  if (!strcmp(d->kind, "tmpfs"))
    add_rec(v, "the store is in RAM (%s): these are memory numbers; it cannot be read cold",
            d->fs_type);
  if (!strcmp(d->kind, "overlay"))
    add_rec(v,
            "the store is on an overlay filesystem: bench the host path of its layer to "
            "learn which disk is really read");
  uint64_t avg = r->records ? r->payload_bytes / r->records : 0;
  int keeps_up = v->keeps_up;
  if (!keeps_up && rc_cold && lc_cold && lc_cold->records_per_s > 1.3 * rc_cold->records_per_s)
    add_rec(v,
            "use the locality-aware order (shuffled within runs of adjacent records): %.1fx "
            "the random order's throughput here%s",
            lc_cold->records_per_s / rc_cold->records_per_s,
            d->rotational == 1 ? " on this rotational disk" : "");
  if (rc_cold && d->read_ahead_kb > 0 && avg > 0 && avg < (uint64_t)d->read_ahead_kb * 1024 &&
      ((sq_cold && rc_cold->mb_per_s < 0.5 * sq_cold->mb_per_s) ||
       (ph_cold && rc_cold->mb_per_s < 0.5 * ph_cold->mb_per_s)))
    add_rec(v,
            "random reads of %.0f KB records under a read-ahead of %d KB read pages nobody "
            "asked for: for random order on a store larger than RAM open it with "
            "MDB_NORDAHEAD (loader option; compare with cache-bench --nordahead)",
            (double)avg / 1e3, d->read_ahead_kb);
  char fb[32], av[32];
  bench_human_bytes(r->file_bytes, fb, sizeof fb);
  bench_human_bytes(avail, av, sizeof av);
  if (!keeps_up && strcmp(d->kind, "tmpfs")) {
    if (avail && r->file_bytes < avail / 2 && v->warm && !v->warm_keeps_up)
      /* the verdict just said the page cache is still short: RAM is no remedy then */
      add_rec(v,
              "copying the cache to RAM would not be enough: read from the page cache it "
              "delivers %.1f batches/s where %.1f/s are needed; the reading itself is the "
              "limit: more prefetch threads (compare -t 1,2,4) or a longer step",
              v->warm_bps, v->need_bps); /* as the verdict says it */
    else if (avail && r->file_bytes < avail / 2)
      add_rec(v,
              "copy the cache to RAM (e.g. cp -r to /dev/shm) or let the page cache keep it "
              "after the first epoch: %s fits in the %s available%s",
              fb, av, v->warm_keeps_up ? ", and warm reads keep up" : "");
    else
      add_rec(v,
              "the store (%s) is larger than half the available memory (%s): move it to a "
              "faster device (SSD/NVMe) or use the locality-aware order",
              fb, av);
  }
  const bench_result *t1 = NULL, *tn = NULL;
  for (size_t i = 0; i < r->n_passes; i++) {
    const bench_result *p = &r->passes[i];
    if (p->pattern != v->ref->pattern || p->state != v->ref->state || p->batch != v->ref->batch)
      continue;
    if (p->threads == 1)
      t1 = p;
    else if (!tn || p->records_per_s > tn->records_per_s)
      tn = p;
  }
  if (t1 && tn && tn->records_per_s > 1.3 * t1->records_per_s)
    add_rec(v, "use %u prefetch threads: %.1fx one thread's throughput here", tn->threads,
            tn->records_per_s / t1->records_per_s);
  /* the rate is enough only if the prefetch queue (the loader's prefetch_depth, 4 batches by
   * default) also covers a slow batch */
  double p99 = v->ref->batch == batch ? v->ref->batch_ms.p99 : NAN;
  if (keeps_up && p99 > 4 * step_ms)
    add_rec(v,
            "a batch takes up to %.1f ms (p99), more than the 4 steps the loader prefetches by "
            "default: give the loader prefetch_depth=%.0f",
            p99, ceil(p99 / step_ms) + 1);
}

void bench_verdict(const bench_report *r, double step_ms, unsigned batch, uint64_t mem_available,
                   char *buf, size_t len) {
  struct verdict *v = fc_malloc(sizeof *v);
  if (!v) {
    if (len) buf[0] = '\0';
    return;
  }
  compute_verdict(r, step_ms, batch, mem_available, v);
  int n = snprintf(buf, len, "verdict: %s\n", v->text);
  for (int i = 0; i < v->nrecs && n >= 0 && (size_t)n < len; i++)
    n += snprintf(buf + n, len - (size_t)n, "recommendation: %s\n", v->recs[i]);
  free(v);
}

/* ---- table ------------------------------------------------------------------------------------- */
const char *bench_io_name(const bench_result *p) { return p->direct ? "direct" : "mmap"; }

static void device_line(FILE *f, const bench_report *r) {
  const bench_device *d = r->device;
  char pay[32], fb[32];
  bench_human_bytes(r->payload_bytes, pay, sizeof pay);
  bench_human_bytes(r->file_bytes, fb, sizeof fb);
  const char *rs = r->records == 1 ? "" : "s";
  size_t given = r->n_given ? r->n_given : r->n_stores;
  if (r->n_stores > 1 && given == 1) /* a split store: its parts */
    fprintf(f, "store: %s  (a split store of %zu parts: %llu record%s, %s payload, data.mdb %s)\n",
            bench_shown(r), r->n_stores, (unsigned long long)r->records, rs, pay, fb);
  else if (r->n_stores > given) /* split stores among them */
    fprintf(f,
            "store: %s  (one dataset of %zu stores in %zu parts: %llu record%s, %s payload, "
            "data.mdb %s)\n",
            bench_shown(r), given, r->n_stores, (unsigned long long)r->records, rs, pay, fb);
  else if (r->n_stores > 1)
    fprintf(f, "store: %s  (one dataset of %zu stores: %llu record%s, %s payload, data.mdb %s)\n",
            bench_shown(r), r->n_stores, (unsigned long long)r->records, rs, pay, fb);
  else
    fprintf(f, "store: %s  (%llu record%s, %s payload, data.mdb %s)\n", bench_shown(r),
            (unsigned long long)r->records, rs, pay, fb);
  char mnt[4 * sizeof d->mount_point + 3]; /* named as names are: quoted when it must be */
  fc_quote_name(d->mount_point, mnt, sizeof mnt);
  if (!strcmp(d->kind, "block")) {
    fprintf(f, "device: %s", d->block_device);
    if (strcmp(d->disk, d->block_device)) fprintf(f, " on disk %s", d->disk);
    fprintf(f, " (%s), %s, %s on %s%s, read-ahead ", d->model[0] ? d->model : "model unknown",
            rotational_word(d->rotational), d->fs_type, mnt, d->read_only ? " (read-only)" : "");
    if (d->read_ahead_kb >= 0)
      fprintf(f, "%d KB\n", d->read_ahead_kb);
    else
      fprintf(f, "unknown\n");
  } else {
    fprintf(f, "device: no block device (%s on %s%s)\n", d->fs_type, mnt,
            d->read_only ? ", read-only" : "");
  }
  if (d->note[0]) fprintf(f, "note: %s\n", d->note);
  if (r->probe)
    fprintf(f,
            "probe (O_DIRECT, one record at a time): file order %.1f MB/s, %.3f ms a record; "
            "random order %.1f MB/s, %.3f ms a record\n",
            r->probe[0].mb_per_s, r->probe[0].record_ms.p50, r->probe[1].mb_per_s,
            r->probe[1].record_ms.p50);
}

static int same_pass(const bench_result *a, const bench_result *b) {
  return a->pattern == b->pattern && a->state == b->state && a->direct == b->direct &&
         a->threads == b->threads && a->batch == b->batch;
}
/* Stores side by side: row k is a pass of the plan (pattern, state, io, threads, batch), cell
 * [k][s] store s's run of it or NULL where it failed (a gap, not later passes shifted into its
 * row), cell [k][n] the row's first run. Rows are in the plan's order (bench_result.plan), also
 * a pass that only a later store ran. Returns the rows; *grid (NULL: no memory) to free. */
size_t bench_side_by_side(const bench_report *r, size_t n, const bench_result ***grid) {
  size_t cap = 0, rows = 0, w = n + 1;
  for (size_t s = 0; s < n; s++) cap += r[s].n_passes;
  const bench_result **g = *grid = fc_calloc(cap * w + 1, sizeof *g);
  for (size_t s = 0; g && s < n; s++)
    for (size_t i = 0, k = 0; i < r[s].n_passes; i++, k = 0) {
      const bench_result *p = &r[s].passes[i];
      while (k < rows && !same_pass(g[k * w + n], p)) k++;
      if (k == rows) { /* a new row, before the first that comes later in the plan */
        k = 0;
        while (k < rows && g[k * w + n]->plan <= p->plan) k++;
        memmove(g + (k + 1) * w, g + k * w, (rows - k) * w * sizeof *g);
        memset(g + k * w, 0, w * sizeof *g);
        g[k * w + n] = p;
        rows++;
      }
      g[k * w + s] = p;
    }
  return g ? rows : 0;
}

void bench_write_table(FILE *f, const bench_report *r, size_t n) {
  if (n == 1) {
    device_line(f, r);
    fprintf(f,
            "\n%-10s %-5s %-6s %3s %5s %8s %9s %9s %9s %8s %8s %8s %8s %8s %8s %5s %5s %5s "
            "%5s\n",
            "pattern", "state", "io", "thr", "batch", "resident", "MB/s", "rec/s", "batch/s",
            "rec_p50", "rec_p95", "rec_p99", "rec_max", "bat_p50", "bat_p99", "fault", "copy",
            "wait", "other");
    for (size_t i = 0; i < r->n_passes; i++) {
      const bench_result *p = &r->passes[i];
      fprintf(f,
              "%-10s %-5s %-6s %3u %5u %7.1f%% %9.1f %9.1f %9.1f %8.3f %8.3f %8.3f %8.3f %8.3f "
              "%8.3f %4.0f%% %4.0f%% %4.0f%% %4.0f%%%s\n",
              bench_pattern_name(p->pattern), bench_state_name(p->state), bench_io_name(p),
              p->threads, p->batch, 100 * p->resident_before, p->mb_per_s, p->records_per_s,
              p->batches_per_s, p->record_ms.p50, p->record_ms.p95, p->record_ms.p99,
              p->record_ms.max, p->batch_ms.p50, p->batch_ms.p99, 100 * p->fault_frac,
              100 * p->copy_frac, 100 * p->wait_frac, 100 * p->other_frac,
              p->state == BENCH_COLD && !p->cold_verified                        ? "  (not cold)"
              : p->state == BENCH_WARM && p->resident_before < WARM_RESIDENT_MIN ? "  (not warm)"
                                                                                 : "");
      if (p->decoded_bytes != p->bytes) /* coded records: what the training loop receives */
        fprintf(f, "%-10s %-5s %-6s %3s %5s %8s %9.1f  MB/s decoded to float32 (coded records)\n",
                "", "", "", "", "", "", p->decoded_mb_per_s);
    }
    fprintf(f,
            "latencies in ms; MB = 10^6 bytes of payload; resident = data.mdb in the page "
            "cache before the pass\n");
    return;
  }
  for (size_t s = 0; s < n; s++) {
    fprintf(f, "[%zu] ", s + 1);
    device_line(f, &r[s]);
  }
  fprintf(f, "\n%-10s %-5s %-6s %3s %5s", "pattern", "state", "io", "thr", "batch");
  for (size_t s = 0; s < n; s++) {
    char a[32], b2[32];
    snprintf(a, sizeof a, "MB/s[%zu]", s + 1);
    snprintf(b2, sizeof b2, "bat_p99[%zu]", s + 1);
    fprintf(f, " %11s %13s", a, b2);
  }
  fputc('\n', f);
  const bench_result **g;
  size_t rows = bench_side_by_side(r, n, &g);
  for (size_t i = 0; i < rows; i++) {
    const bench_result *p0 = g[i * (n + 1) + n];
    fprintf(f, "%-10s %-5s %-6s %3u %5u", bench_pattern_name(p0->pattern),
            bench_state_name(p0->state), bench_io_name(p0), p0->threads, p0->batch);
    for (size_t s = 0; s < n; s++) {
      const bench_result *p = g[i * (n + 1) + s];
      if (p)
        fprintf(f, " %11.1f %13.3f", p->mb_per_s, p->batch_ms.p99);
      else
        fprintf(f, " %11s %13s", "-", "-");
    }
    /* as the one-store table marks (not cold): which stores' "cold" pass started warm */
    size_t marked = 0;
    for (size_t s = 0; s < n; s++) {
      const bench_result *p = g[i * (n + 1) + s];
      if (p && p->state == BENCH_COLD && !p->cold_verified)
        fprintf(f, "%s[%zu]", marked++ ? ", " : "  (not cold: ", s + 1);
    }
    size_t warm = 0; /* and whose warm pass started with data.mdb out of the page cache */
    for (size_t s = 0; s < n; s++) {
      const bench_result *p = g[i * (n + 1) + s];
      if (p && p->state == BENCH_WARM && p->resident_before < WARM_RESIDENT_MIN)
        fprintf(f, "%s[%zu]", warm++ ? ", " : "  (not warm: ", s + 1);
    }
    fputs(marked || warm ? ")\n" : "\n", f);
  }
  free(g);
  fprintf(f, "bat_p99 in ms; MB = 10^6 bytes of payload\n");
}

/* ---- JSON -------------------------------------------------------------------------------------- */
static void json_num(FILE *f, double x) {
  if (isfinite(x))
    fprintf(f, "%.6g", x);
  else
    fputs("null", f);
}

static void json_lat(FILE *f, const char *name, const bench_latency *l) {
  fprintf(f, ",\"%s\":{\"p50\":", name);
  json_num(f, l->p50);
  fputs(",\"p95\":", f);
  json_num(f, l->p95);
  fputs(",\"p99\":", f);
  json_num(f, l->p99);
  fputs(",\"max\":", f);
  json_num(f, l->max);
  fputc('}', f);
}

const char *bench_device_name(const bench_device *d) {
  return d->block_device[0] ? d->block_device : d->fs_type[0] ? d->fs_type : d->kind;
}

static void json_rotational(FILE *f, int rot) {
  fputs(rot == 1 ? "true" : rot == 0 ? "false" : "null", f);
}
/* The fields every JSON line of one store starts with. */
static void json_record_head(FILE *f, const char *record, const char *store,
                             const bench_device *d) {
  fprintf(f, "{\"record\":\"%s\",\"store\":", record);
  fc_json_write_string(f, store);
  fputs(",\"device\":", f);
  fc_json_write_string(f, bench_device_name(d));
  fputs(",\"disk\":", f);
  if (d->disk[0]) /* none (tmpfs, overlay): null, not "" */
    fc_json_write_string(f, d->disk);
  else
    fputs("null", f);
  fputs(",\"rotational\":", f);
  json_rotational(f, d->rotational);
}

static const char *const stop_names[] = {"complete", "time", "bytes", "signal"};

void bench_write_json(FILE *f, const bench_report *r, size_t n, double step_ms, unsigned batch) {
  struct verdict *v = fc_malloc(sizeof *v);
  for (size_t s = 0; s < n; s++) {
    const bench_device *d = r[s].device;
    for (size_t i = 0; i < r[s].n_passes; i++) {
      const bench_result *p = &r[s].passes[i];
      json_record_head(f, "pass", r[s].store, d);
      fputs(",\"pattern\":", f);
      fc_json_write_string(f, bench_pattern_name(p->pattern));
      fputs(",\"cache_state\":", f);
      fc_json_write_string(f, bench_state_name(p->state));
      fprintf(f, ",\"io\":\"%s\",\"threads\":%u,\"batch\":%u,\"mb_per_s\":", bench_io_name(p),
              p->threads, p->batch);
      json_num(f, p->mb_per_s);
      fputs(",\"decoded_mb_per_s\":", f);
      json_num(f, p->decoded_mb_per_s);
      fputs(",\"records_per_s\":", f);
      json_num(f, p->records_per_s);
      fputs(",\"batches_per_s\":", f);
      json_num(f, p->batches_per_s);
      json_lat(f, "latency_ms", &p->record_ms);
      json_lat(f, "batch_latency_ms", &p->batch_ms);
      fputs(",\"resident_fraction_before\":", f);
      json_num(f, p->resident_before);
      fprintf(f, ",\"cold_verified\":%s",
              p->state == BENCH_COLD ? (p->cold_verified ? "true" : "false") : "null");
      fputs(",\"time_split\":{\"faults\":", f);
      json_num(f, p->fault_frac);
      fputs(",\"copying\":", f);
      json_num(f, p->copy_frac);
      fputs(",\"waiting\":", f);
      json_num(f, p->wait_frac);
      fputs(",\"other\":", f);
      json_num(f, p->other_frac);
      fprintf(f,
              "},\"major_faults\":%llu,\"minor_faults\":%llu,\"records\":%llu,"
              "\"batches\":%llu,\"bytes\":%llu,\"bad_records\":%llu,\"gone_records\":%llu,"
              "\"seconds\":",
              (unsigned long long)p->major_faults, (unsigned long long)p->minor_faults,
              (unsigned long long)p->records, (unsigned long long)p->batches,
              (unsigned long long)p->bytes, (unsigned long long)p->bad_records,
              (unsigned long long)p->gone_records);
      json_num(f, p->seconds);
      fprintf(f, ",\"stopped\":\"%s\"}\n",
              stop_names[p->stopped >= 0 && p->stopped <= 3 ? p->stopped : 0]);
    }
    json_record_head(f, "summary", r[s].store, d);
    fputs(",\"kind\":", f);
    fc_json_write_string(f, d->kind);
    fputs(",\"model\":", f);
    fc_json_write_string(f, d->model);
    fputs(",\"fs_type\":", f);
    fc_json_write_string(f, d->fs_type);
    fputs(",\"mount_point\":", f);
    fc_json_write_string(f, d->mount_point);
    fprintf(f, ",\"read_only\":%s,\"read_ahead_kb\":", d->read_only ? "true" : "false");
    if (d->read_ahead_kb >= 0)
      fprintf(f, "%d", d->read_ahead_kb);
    else
      fputs("null", f);
    fputs(",\"note\":", f);
    fc_json_write_string(f, d->note);
    fputs(",\"stores\":[", f);
    if (r[s].n_stores > 1)
      for (size_t i = 0; i < r[s].n_stores; i++) {
        if (i) fputc(',', f);
        fc_json_write_string(f, r[s].stores[i]);
      }
    else
      fc_json_write_string(f, r[s].store);
    fputc(']', f);
    fprintf(f, ",\"records\":%llu,\"payload_bytes\":%llu,\"file_bytes\":%llu,\"step_ms\":",
            (unsigned long long)r[s].records, (unsigned long long)r[s].payload_bytes,
            (unsigned long long)r[s].file_bytes);
    json_num(f, step_ms);
    fprintf(f, ",\"batch\":%u", batch);
    if (v) {
      compute_verdict(&r[s], step_ms, batch, 0, v);
      fprintf(f, ",\"batch_records\":%u", v->ref ? v->per_batch : batch);
      fputs(",\"batches_per_s\":", f);
      json_num(f, v->bps);
      fprintf(f, ",\"gpus\":%u,\"need_batches_per_s\":", v->gpus ? v->gpus : 1);
      json_num(f, v->need_bps);
      fprintf(f,
              ",\"keeps_up\":%s,\"max_gpus\":", v->ref ? (v->keeps_up ? "true" : "false") : "null");
      json_num(f, v->ref ? v->max_gpus : NAN);
      fputs(",\"min_step_ms\":", f);
      json_num(f, v->min_step_ms);
      fputs(",\"warm_batches_per_s\":", f);
      json_num(f, v->warm ? v->warm_bps : NAN);
      fputs(",\"disk_behaviour\":", f);
      fc_json_write_string(f, v->behaviour ? v->behaviour : "unknown");
      fputs(",\"random_vs_sequential\":", f);
      json_num(f, v->rnd_vs_seq);
      fputs(",\"random_record_ms_p50\":", f);
      json_num(f, v->rnd_record_ms);
      fputs(",\"probe\":", f);
      if (r[s].probe) {
        for (int q = 0; q < 2; q++) {
          const bench_result *pr = &r[s].probe[q];
          fprintf(f, "%s\"%s\":{\"mb_per_s\":", q ? "," : "{", q ? "random" : "sequential");
          json_num(f, pr->mb_per_s);
          fputs(",\"record_ms_p50\":", f);
          json_num(f, pr->record_ms.p50);
          fprintf(f, ",\"records\":%llu}", (unsigned long long)pr->records);
        }
        fputc('}', f);
      } else {
        fputs("null", f);
      }
      fputs(",\"verdict\":", f);
      fc_json_write_string(f, v->text);
      fputs(",\"recommendations\":[", f);
      for (int i = 0; i < v->nrecs; i++) {
        if (i) fputc(',', f);
        fc_json_write_string(f, v->recs[i]);
      }
      fputc(']', f);
    }
    fputs("}\n", f);
  }
  free(v);
}
