/* cache-bench: how fast can the device under a store feed training (docs/cache-bench.md). */
#include "cmd/cli.h"
#include "cmd/cache-bench/bench.h"
#include "featcache/fc_outfile.h"

#include <sys/stat.h>

enum {
  OPT_STEP = 256,
  OPT_GPUS,
  OPT_NO_PROBE,
  OPT_DURATION,
  OPT_BYTES,
  OPT_SEED,
  OPT_RUN,
  OPT_DIRECT,
  OPT_NO_HINT,
  OPT_NORDAHEAD,
  OPT_READ_ONLY,
  OPT_SEPARATE,
  OPT_JSON,
  OPT_SVG,
  OPT_PROGRESS,
  OPT_DUMP,
  OPT_VERSION
};

static const fc_cli_opt options[] = {
    {NULL, 0, 0, NULL, "Passes:"},
    {"patterns", 'p', required_argument, "LIST",
     "sequential,physical,random,locality or all (default all)"},
    {"states", 's', required_argument, "LIST", "cold,warm (default both)"},
    {"threads", 't', required_argument, "LIST", "reader thread counts, e.g. 1,2 (default 1)"},
    {"batch", 'b', required_argument, "B",
     "records per batch; every pass runs at 1 and at B (default 32)"},
    {"duration", OPT_DURATION, required_argument, "SEC", "time bound per pass (default 5; 0 none)"},
    {"bytes", OPT_BYTES, required_argument, "SIZE", "payload bound per pass, e.g. 256MiB"},
    {"seed", OPT_SEED, required_argument, "N", "seed of random and locality (default 1)"},
    {"run", OPT_RUN, required_argument, "N", "locality run length in records (default 16 x batch)"},
    {"direct", OPT_DIRECT, no_argument, NULL, "cold passes read with O_DIRECT instead of the map"},
    {"no-hint", OPT_NO_HINT, no_argument, NULL, "batches: no madvise(WILLNEED) before reading"},
    {"nordahead", OPT_NORDAHEAD, no_argument, NULL, "open the store with MDB_NORDAHEAD"},
    {"read-only", OPT_READ_ONLY, no_argument, NULL,
     "bench a store on a read-only mount, or one this user cannot write (opened MDB_NOLOCK)"},
    {NULL, 0, 0, NULL, "Several STOREs:"},
    {"separate", OPT_SEPARATE, no_argument, NULL,
     "bench each on its own, side by side (default: one dataset)"},
    {NULL, 0, 0, NULL, "Verdict:"},
    {"step-ms", OPT_STEP, required_argument, "MS", "training step time (default 50)"},
    {"gpus", OPT_GPUS, required_argument, "N",
     "data-parallel GPUs, each reading a batch per step (default 1)"},
    {"no-probe", OPT_NO_PROBE, no_argument, NULL,
     "skip the ~2 s O_DIRECT probe that tells an HDD from an SSD"},
    {NULL, 0, 0, NULL, "Output:"},
    {"json", OPT_JSON, no_argument, NULL, "JSON lines: one object per store and pass, a summary"},
    {"svg", OPT_SVG, required_argument, "FILE", "write a chart of throughput and latency"},
    {"dump-order", OPT_DUMP, required_argument, "FILE",
     "write the keys each pass read, in order (testing)"},
    {"progress", OPT_PROGRESS, no_argument, NULL, "progress on stderr even when not a terminal"},
    {"quiet", 'q', no_argument, NULL,
     "no progress, no warnings about not-cold passes or other devices, no done line (kept when a "
     "pass failed)"},
    {"help", 'h', no_argument, NULL, "show this help and exit"},
    {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
    {NULL, 0, 0, NULL, NULL}};

static const char synopsis[] = "cache-bench [options] STORE...";
static const char description[] =
    "Measure how fast the device under each featcache STORE delivers its feature records:\n"
    "access patterns x cold/warm page cache x threads x batch size, with latency percentiles,\n"
    "the device facts, and a verdict in one line: does the store keep up with --gpus GPUs at a\n"
    "step of --step-ms, batches of --batch utterances, through the loader's prefetch, and does the\n"
    "device read like an HDD or an SSD (measured: cold random against sequential reads).\n"
    "Several STOREs (the shards of one corpus) are one dataset, read as the loader reads them:\n"
    "each pass reads their union. --separate benches each store on its own, side by side\n"
    "(e.g. one cache on an HDD and on an SSD).";
static const char footer[] =
    "Exit status: 0 all passes ran; 1 a pass failed, or the report or the chart could not be\n"
    "written; 2 usage error or a store that cannot be benched (not a store, empty, read-only or\n"
    "not writable without --read-only); 130/143 interrupted.\n"
    "Manual: man cache-bench.";

struct opts {
  int patterns[BENCH_PATTERN_COUNT], np;
  int states[2], ns;
  unsigned threads[16], nt;
  unsigned batch;
  double step_ms, duration;
  unsigned gpus;
  int no_probe;
  uint64_t max_bytes, seed;
  uint32_t run;
  int direct, hint, nordahead, read_only, separate, json, progress, quiet;
  const char *svg, *dump;
};

static void add_pattern(const char *opt, const char *tok, void *ctx) {
  struct opts *o = ctx;
  if (!strcmp(tok, "all")) {
    o->np = 0;
    for (int i = 0; i < BENCH_PATTERN_COUNT; i++) o->patterns[o->np++] = i;
    return;
  }
  int p = bench_pattern_from_name(tok);
  if (p < 0)
    fc_cli_usage_error(
        "invalid value '%s' for --%s (want sequential, physical, random, "
        "locality or all)",
        tok, opt);
  for (int i = 0; i < o->np; i++)
    if (o->patterns[i] == p) return;
  o->patterns[o->np++] = p;
}

static void add_state(const char *opt, const char *tok, void *ctx) {
  struct opts *o = ctx;
  int s = bench_state_from_name(tok);
  if (s < 0) fc_cli_usage_error("invalid value '%s' for --%s (want cold or warm)", tok, opt);
  for (int i = 0; i < o->ns; i++)
    if (o->states[i] == s) return;
  o->states[o->ns++] = s;
}

static void add_threads(const char *opt, const char *tok, void *ctx) {
  struct opts *o = ctx;
  unsigned t = fc_cli_u32(opt, tok, 1, 256);
  for (unsigned i = 0; i < o->nt;
       i++) /* a repeated value counts once, as in --patterns, --states */
    if (o->threads[i] == t) return;
  if (o->nt >= 16) fc_cli_usage_error("too many values for --%s (at most 16)", opt);
  o->threads[o->nt++] = t;
}

/* Each reader thread holds a batch of B records of up to the largest payload (docs/cache-bench.md
 * "Memory bound"): the most threads asked for at B, refused when that is more than the memory
 * available (a pass would be killed for it, or swap), saying how much and what to change. */
static int buffers_fit(const struct opts *o, fc_bench *const *benches, size_t nunits) {
  unsigned t = 1;
  for (unsigned i = 0; i < o->nt; i++)
    if (o->threads[i] > t) t = o->threads[i];
  uint64_t largest = 0, avail = bench_mem_available();
  for (size_t u = 0; u < nunits; u++)
    if (benches[u] && bench_max_payload(benches[u]) > largest)
      largest = bench_max_payload(benches[u]);
  const uint64_t need = (uint64_t)t * o->batch * largest;
  if (!avail || need <= avail) return 1;
  char n[32], a[32], l[32];
  bench_human_bytes(need, n, sizeof n);
  bench_human_bytes(avail, a, sizeof a);
  if (largest >= 1000000)
    bench_human_bytes(largest, l, sizeof l);
  else
    snprintf(l, sizeof l, "%.0f kB", (double)largest / 1e3);
  fc_cli_warn(NULL,
              "%u reader thread%s with a batch of %u records of up to %s (the largest payload) "
              "need %s, more than the %s of memory available: fewer threads (-t) or a smaller "
              "batch (-b)",
              t, t == 1 ? "" : "s", o->batch, l, n, a);
  return 0;
}

static int stop_requested(void *ctx) {
  (void)ctx;
  return fc_cli_signal != 0;
}

struct dump_ctx {
  FILE *f;
  const fc_bench *b;
  size_t pass;
  const bench_params *p;
  int probe; /* the probe's reads: "probe" in place of the pass number */
};

static void dump_visit(void *ctx, size_t index) {
  struct dump_ctx *d = ctx;
  char hex[33];
  fc_digest k;
  memcpy(k.bytes, bench_key(d->b, index), 16);
  fc_digest_hex(&k, hex);
  char pass[24];
  snprintf(pass, sizeof pass, d->probe ? "probe" : "%zu", d->pass);
  fprintf(d->f, "%s %s %s %u %u %s\n", pass, bench_pattern_name(d->p->pattern),
          bench_state_name(d->p->state), d->p->batch, d->p->threads, hex);
}

/* names[0..n) joined by " + ", each as given or (quote) as the tools' messages quote a name
 * (fc_quote_name: a newline or a byte that is not UTF-8 escaped). malloc'd; NULL: no memory. */
static char *join_names(const char *const *names, size_t n, int quote) {
  size_t len = 1, o = 0;
  for (size_t i = 0; i < n; i++)
    len += (quote ? fc_quote_name(names[i], NULL, 0) : strlen(names[i])) + 3;
  char *out = malloc(len);
  for (size_t i = 0; out && i < n; i++) {
    if (i) o += (size_t)snprintf(out + o, len - o, " + ");
    o += quote ? fc_quote_name(names[i], out + o, len - o)
               : (size_t)snprintf(out + o, len - o, "%s", names[i]);
  }
  if (out && !n) out[0] = '\0';
  return out;
}

/* Out of memory before the first pass: the summary every exit 1 has, all total passes not started.
 * Returns the exit code, 1. */
static int nothing_run(size_t total) {
  fprintf(stderr, "%s: done: 0 of %zu passes (%zu not started), nothing run\n", fc_cli_tool, total,
          total);
  return FC_EXIT_FAIL;
}

/* What a pass or the probe that failed with rc met: with O_DIRECT, data.mdb refused at its open
 * (the filesystem does not do direct I/O) told apart from one of its reads failing (EINVAL there
 * is an alignment the device or filesystem wants, on a filesystem that does direct I/O). */
#define WHY_LEN (4 * (4096 + 16) + 3 + 400) /* pass_why's: a quoted name and words */
static void pass_why(const fc_bench *b, const bench_result *r, int rc, char *buf, size_t len) {
  char file[4096 + 16], q[4 * sizeof file + 3];
  if (bench_stores(b) > 1) /* which store's data.mdb: a dataset's, a split store's part */
    snprintf(file, sizeof file, "%s/data.mdb", bench_store_path(b, r->direct_store));
  else
    snprintf(file, sizeof file, "data.mdb");
  const char *f = fc_cli_quoted(file, q, sizeof q);
  if (r->direct_failed == BENCH_DIRECT_OPEN && rc == EINVAL)
    snprintf(buf, len,
             "%s cannot be opened with O_DIRECT: the filesystem does not do direct I/O (%s)", f,
             fc_strerror(rc));
  else if (r->direct_failed == BENCH_DIRECT_OPEN)
    snprintf(buf, len, "%s cannot be opened with O_DIRECT: %s", f, fc_strerror(rc));
  else if (r->direct_failed == BENCH_DIRECT_READ && rc == EINVAL)
    snprintf(
        buf, len,
        "an O_DIRECT read of %s failed: %s (%llu bytes at offset %llu, into a buffer aligned to "
        "%u bytes: the device or filesystem wants another alignment)",
        f, fc_strerror(rc), (unsigned long long)r->direct_len, (unsigned long long)r->direct_offset,
        BENCH_DIRECT_ALIGN);
  else if (r->direct_failed == BENCH_DIRECT_READ)
    snprintf(buf, len, "an O_DIRECT read of %s failed: %s (%llu bytes at offset %llu)", f,
             fc_strerror(rc), (unsigned long long)r->direct_len,
             (unsigned long long)r->direct_offset);
  else
    snprintf(buf, len, "%s", fc_strerror(rc));
}

/* A clear message for a store that cannot be benched (the caller exits 2; 1 out of memory). */
static void open_error(const char *path, int rc) {
  struct stat st;
  if (fc_cli_say_unwritten_part(path, NULL, "nothing run")) return; /* a split store's */
  if (stat(path, &st) != 0) {
    if (fc_cli_say_not_a_store(path, errno)) return; /* shards/s* that matched nothing */
    fc_cli_warn(path, "cannot open the store: %s", strerror(errno));
    return;
  }
  if (fc_cli_say_not_a_store(path, rc == ENOENT ? FC_ENOSTORE : rc)) return;
  switch (rc) {
  case FC_EVERSION: fc_cli_warn(path, "%s", fc_strerror(rc)); break;
  case FC_EEMPTY:
    fc_cli_warn(path, "store has no feature records (db feat is empty): nothing to bench");
    break;
  default: fc_cli_warn(path, "cannot open the store: %s", fc_strerror(rc)); break;
  }
}

int main(int argc, char **argv) {
  fc_cli_tool = "cache-bench";
  fc_cli_std_fds();
  struct opts o =
      {.batch = 32, .step_ms = 50, .gpus = 1, .duration = 5, .seed = 1, .run = 0, .hint = 1};
  struct option longs[sizeof options / sizeof options[0] + 1];
  char shorts[3 * (sizeof options / sizeof options[0]) + 2];
  fc_cli_getopt_tables(options, longs, shorts);
  int c;
  opterr = 0; /* fc_cli_bad_option says what is wrong, as `cache-bench: ...` */
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    switch (c) {
    case 'p':
      o.np = 0;
      fc_cli_list("patterns", optarg, add_pattern, &o);
      break;
    case 's':
      o.ns = 0;
      fc_cli_list("states", optarg, add_state, &o);
      break;
    case 't':
      o.nt = 0;
      fc_cli_list("threads", optarg, add_threads, &o);
      break;
    case 'b': o.batch = fc_cli_u32_short(c, "batch", optarg, 1, 4096, longs); break;
    case OPT_STEP: o.step_ms = fc_cli_double("step-ms", optarg, 0.001, 1e7); break;
    case OPT_GPUS: o.gpus = fc_cli_u32("gpus", optarg, 1, 65536); break;
    case OPT_NO_PROBE: o.no_probe = 1; break;
    case OPT_DURATION: o.duration = fc_cli_double("duration", optarg, 0, 86400); break;
    case OPT_BYTES:
      if (fc_cli_parse_u64(optarg, &o.max_bytes, 1))
        fc_cli_usage_error("invalid value '%s' for --bytes (want a size, e.g. 256MiB)", optarg);
      break;
    case OPT_SEED:
      if (fc_cli_parse_u64(optarg, &o.seed, 0))
        fc_cli_usage_error("invalid value '%s' for --seed (want an unsigned integer)", optarg);
      break;
    case OPT_RUN: o.run = fc_cli_u32("run", optarg, 1, 1u << 24); break;
    case OPT_DIRECT: o.direct = 1; break;
    case OPT_NO_HINT: o.hint = 0; break;
    case OPT_NORDAHEAD: o.nordahead = 1; break;
    case OPT_READ_ONLY: o.read_only = 1; break;
    case OPT_SEPARATE: o.separate = 1; break;
    case OPT_JSON: o.json = 1; break;
    case OPT_SVG: o.svg = fc_cli_out_path("svg", optarg); break;
    case OPT_DUMP: o.dump = fc_cli_out_path("dump-order", optarg); break;
    case OPT_PROGRESS: o.progress = 1; break;
    case 'q': o.quiet = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    default: fc_cli_bad_option(argc, argv, longs);
    }
  }
  if (optind >= argc) fc_cli_usage_error("no STORE given");
  if (fc_cli_same_out(o.svg, o.dump)) { /* one file for both: one renamed over the other */
    char q[1024];
    fc_cli_usage_error("--svg and --dump-order name the same file (%s)",
                       fc_cli_quoted(o.dump, q, sizeof q));
  }
  fc_cli_no_empty_stores(argc, argv, optind);
  const char *const *words = (const char *const *)(argv + optind);
  size_t nwords = (size_t)(argc - optind);
  fc_cli_expand_argv(&argc, &argv, optind); /* a split store is benched as its parts */
  char twice[1024]; /* LMDB: one environment, one open per process */
  if (fc_cli_store_twice(words, nwords, (const char *const *)(argv + optind),
                         (size_t)(argc - optind), twice, sizeof twice)) {
    fc_cli_warn(NULL, "%s: a process must not open a store twice", twice);
    return FC_EXIT_USAGE;
  }
  for (int k = 0; k < 2; k++) { /* the STOREs given (a split store's marker) and their parts */
    fc_cli_out_not_in_store("svg", o.svg, k ? (const char *const *)(argv + optind) : words,
                            k ? (size_t)(argc - optind) : nwords);
    fc_cli_out_not_in_store("dump-order", o.dump, k ? (const char *const *)(argv + optind) : words,
                            k ? (size_t)(argc - optind) : nwords);
  }
  if (!o.np) add_pattern("patterns", "all", &o);
  if (!o.ns) {
    o.states[o.ns++] = BENCH_COLD;
    o.states[o.ns++] = BENCH_WARM;
  }
  if (!o.nt) o.threads[o.nt++] = 1;
  /* an option that changes no pass run is refused, not dropped */
  int any_cold = 0, any_locality = 0;
  for (int i = 0; i < o.ns; i++) any_cold |= o.states[i] == BENCH_COLD;
  for (int i = 0; i < o.np; i++) any_locality |= o.patterns[i] == BENCH_LOCALITY;
  if (o.direct && !any_cold)
    fc_cli_usage_error(
        "--direct applies to cold passes: -s warm runs none (warm passes read "
        "through the map)");
  if (o.run && !any_locality)
    fc_cli_usage_error(
        "--run applies to the locality order: the patterns given (-p) do not include it");
  int show_progress = fc_cli_progress_wanted(o.progress, o.quiet);
  size_t nstores = (size_t)(argc - optind);
  const char *const *paths = (const char *const *)(argv + optind);
  /* the units benched: each STORE given (--separate, or only one; a split store: its parts), or
   * all of them as one dataset; unit u reads paths[first[u] .. first[u + 1]) */
  size_t nunits = o.separate ? nwords : 1;
  size_t *first = malloc((nwords + 1) * sizeof *first);
  if (!first) return fc_cli_say_listing_failed(ENOMEM, NULL, nwords);
  if (fc_cli_store_groups(words, nwords, nstores, first) != 0) {
    fc_cli_warn(NULL, "a split store changed while its parts were listed");
    free(first);
    return FC_EXIT_USAGE;
  }
  if (!o.separate) first[1] = nstores;
  char *label = NULL; /* one dataset of several STOREs: their names joined by " + " */

  /* Open every store first: a store that cannot be benched stops everything (exit 2). */
  fc_bench **benches = calloc(nunits, sizeof *benches);
  bench_report *reports = calloc(nunits, sizeof *reports);
  unsigned batches[2] = {1, o.batch};
  unsigned nbatch = o.batch == 1 ? 1 : 2;
  size_t per_store = (size_t)o.np * o.ns * o.nt * nbatch;
  bench_result *results = calloc(nunits * per_store, sizeof *results);
  bench_result *probes = calloc(2 * nunits, sizeof *probes);
  char(*probe_why)[WHY_LEN + 32] =
      calloc(nunits, sizeof *probe_why); /* why a unit's probe failed */
  int exit_code = FC_EXIT_OK, any_ro = 0;
  char *refused = calloc(nstores, 1); /* on a read-only mount without --read-only */
  bench_device dev0;
  memset(&dev0, 0, sizeof dev0);
  int have_dev0 = 0; /* the first store's device was found (else its open says what is wrong) */
  if (!benches || !reports || !results || !probes || !refused || !probe_why) {
    fc_cli_warn(NULL, "out of memory");
    return nothing_run(nunits * per_store);
  }
  for (size_t s = 0; s < nstores; s++) {
    const char *path = paths[s];
    bench_device dev;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || bench_device_probe(path, &dev) != 0)
      continue; /* the open below says what is wrong */
    if (dev.read_only && !o.read_only) {
      char qm[4 * sizeof dev.mount_point + 3]; /* named as names are */
      fc_cli_warn(path,
                  "store is on a read-only mount (%s): LMDB runs without its lock file "
                  "there, so a writer elsewhere could change it under the benchmark; pass "
                  "--read-only to bench it anyway",
                  fc_cli_quoted(dev.mount_point, qm, sizeof qm));
      exit_code = FC_EXIT_USAGE;
      refused[s] = 1;
    }
    int unwritable = !dev.read_only && bench_store_unwritable(path);
    if (unwritable && !o.read_only) {
      fc_cli_warn(path,
                  "store is not writable by this user (lock.mdb): LMDB cannot take its reader "
                  "lock, so a writer elsewhere could change it under the benchmark; pass "
                  "--read-only to bench it anyway");
      exit_code = FC_EXIT_USAGE;
      refused[s] = 1;
    }
    any_ro |= dev.read_only || unwritable;
    if (s == 0) {
      dev0 = dev;
      have_dev0 = 1;
    } else if (have_dev0 && !o.separate && nstores > 1 && !o.quiet &&
               (dev.block_device[0] && dev0.block_device[0] /* btrfs: st_dev is a subvolume's */
                    ? strcmp(dev.block_device, dev0.block_device) != 0
                    : dev.dev_major != dev0.dev_major || dev.dev_minor != dev0.dev_minor)) {
      char q0[4 * 1024 + 3]; /* the first store quoted as names are */
      fc_cli_warn(path,
                  "on another device (%s) than %s (%s): one dataset's numbers mix them; "
                  "--separate benches each store on its own",
                  dev.block_device[0] ? dev.block_device : dev.fs_type,
                  fc_cli_quoted(paths[0], q0, sizeof q0),
                  dev0.block_device[0] ? dev0.block_device : dev0.fs_type);
    }
  }
  unsigned flags = (o.read_only && any_ro ? BENCH_NOLOCK : 0) | (o.nordahead ? BENCH_NORDAHEAD : 0);
  for (size_t u = 0; u < nunits; u++) {
    size_t lo = first[u], cnt = first[u + 1] - first[u], failed = 0;
    int skip = nunits == 1 && exit_code != FC_EXIT_OK; /* said why */
    for (size_t s = lo; s < lo + cnt; s++) skip |= refused[s];
    if (skip) continue;
    int rc = cnt == 1 ? bench_open(paths[lo], flags, &benches[u])
                      : bench_open_many(paths + lo, cnt, flags, &benches[u], &failed);
    if (!rc) continue;
    if (cnt == 1)
      open_error(paths[lo], rc);
    else if (failed < cnt)
      open_error(paths[lo + failed], rc);
    else if (rc == FC_EEMPTY && (o.separate || nwords == 1))
      fc_cli_warn(words[u],
                  "no part of the split store has feature records (db feat is empty): "
                  "nothing to bench");
    else if (rc == FC_EEMPTY)
      fc_cli_warn(NULL,
                  "none of the %zu stores has feature records (db feat is empty): nothing "
                  "to bench",
                  cnt);
    else
      fc_cli_warn(NULL, "cannot open the stores: %s", fc_strerror(rc));
    /* out of memory is no usage error (a rerun may get past it): 1, unless a store was refused */
    exit_code = rc == ENOMEM && exit_code != FC_EXIT_USAGE ? FC_EXIT_FAIL : FC_EXIT_USAGE;
  }
  if (exit_code == FC_EXIT_OK && !buffers_fit(&o, benches, nunits)) exit_code = FC_EXIT_USAGE;
  /* each unit's name as given (JSON "store") and as the text shows it (quoted names) */
  char **shown = calloc(nunits, sizeof *shown);
  if (exit_code == FC_EXIT_OK && nunits == 1 && nwords > 1 &&
      !(label = join_names(words, nwords, 0)))
    exit_code = FC_EXIT_FAIL;
  const int nomem = exit_code == FC_EXIT_FAIL; /* a store's open: said */
  for (size_t u = 0; exit_code == FC_EXIT_OK && u < nunits; u++)
    if (!shown || !(shown[u] = join_names(label ? words : words + u, label ? nwords : 1, 1)))
      exit_code = FC_EXIT_FAIL;
  if (exit_code == FC_EXIT_FAIL && !nomem) fc_cli_warn(NULL, "out of memory");
  FILE *dump = NULL;
  fc_outfile *dumpf = NULL; /* whole or not at all */
  int derr = exit_code == FC_EXIT_OK && o.dump ? fc_outfile_open(o.dump, &dumpf) : 0;
  if (derr) {
    fc_cli_warn(o.dump, "cannot write: %s", fc_strerror(derr));
    exit_code = FC_EXIT_USAGE;
  }
  if (dumpf) dump = fc_outfile_stream(dumpf);
  if (exit_code == FC_EXIT_FAIL) nothing_run(nunits * per_store);
  if (exit_code != FC_EXIT_OK) {
    for (size_t s = 0; s < nunits; s++) bench_close(benches[s]);
    free(label);
    for (size_t u = 0; shown && u < nunits; u++) free(shown[u]);
    free(shown);
    free(first);
    free(refused);
    free(benches);
    free(reports);
    free(results);
    free(probes);
    free(probe_why);
    return exit_code;
  }

  fc_cli_install_signals();
  size_t total = nunits * per_store, done = 0, failed = 0;
  for (size_t s = 0; s < nunits && !fc_cli_signal; s++) {
    const char *path = label ? label : words[s]; /* fc_cli_warn quotes it */
    bench_report *rep = &reports[s];
    rep->store = path;
    rep->shown = shown[s];
    rep->gpus = o.gpus;
    rep->stores = paths + first[s]; /* the directories read */
    rep->n_stores = first[s + 1] - first[s];
    rep->n_given = label ? nwords : 1;
    rep->device = bench_device_info(benches[s]);
    rep->records = bench_records(benches[s]);
    rep->payload_bytes = bench_payload_bytes(benches[s]);
    rep->file_bytes = bench_file_bytes(benches[s]);
    rep->passes = results + s * per_store;
    rep->probe_note = o.no_probe ? "--no-probe" : "";
    if (!o.no_probe && strcmp(rep->device->kind, "tmpfs") != 0) {
      /* HDD or SSD, by behaviour: single records read with O_DIRECT (no page cache, no
       * read-ahead) in file order (map order: key order is the content hashes' order, as
       * scattered on the disk as a random one), then in random order; about a second each */
      int ok = 1;
      for (int q = 0; q < 2 && ok && !fc_cli_signal; q++) {
        bench_params p;
        bench_params_init(&p);
        p.pattern = q ? BENCH_RANDOM : BENCH_PHYSICAL;
        p.state = BENCH_COLD;
        p.seed = o.seed;
        p.max_seconds = 1;
        p.max_bytes = 64u << 20;
        p.direct = 1;
        p.hint = 0;
        p.should_stop = stop_requested;
        struct dump_ctx dc = {dump, benches[s], 0, &p, 1};
        if (dump) {
          p.visit = dump_visit;
          p.visit_ctx = &dc;
        }
        int rc = bench_run(benches[s], &p, &probes[2 * s + q]);
        if (rc) {
          char why[WHY_LEN];
          pass_why(benches[s], &probes[2 * s + q], rc, why, sizeof why);
          snprintf(probe_why[s], sizeof probe_why[s], "%s%s",
                   probes[2 * s + q].direct_failed ? "" : "the probe's reads failed: ", why);
          rep->probe_note = probe_why[s];
          ok = 0;
        }
      }
      if (ok && !fc_cli_signal) rep->probe = probes + 2 * s;
      if (ok && fc_cli_signal) rep->probe_note = "interrupted";
    }
    size_t k = 0;
    for (int pi = 0; pi < o.np; pi++)
      for (int si = 0; si < o.ns; si++)
        for (unsigned ti = 0; ti < o.nt; ti++)
          for (unsigned bi = 0; bi < nbatch && !fc_cli_signal; bi++) {
            bench_params p;
            bench_params_init(&p);
            p.pattern = o.patterns[pi];
            p.state = o.states[si];
            p.threads = o.threads[ti];
            p.batch = batches[bi];
            p.seed = o.seed;
            p.run = o.run;
            p.max_seconds = o.duration;
            p.max_bytes = o.max_bytes;
            p.direct = o.direct;
            p.hint = o.hint;
            p.should_stop = stop_requested;
            struct dump_ctx dc = {dump, benches[s], s * per_store + k, &p, 0};
            if (dump) {
              p.visit = dump_visit;
              p.visit_ctx = &dc;
            }
            if (show_progress)
              fprintf(stderr, "cache-bench: %s: pass %zu of %zu: %s %s, %u thread%s, batch %u\n",
                      shown[s], done + failed + 1, total, bench_pattern_name(p.pattern),
                      bench_state_name(p.state), p.threads, p.threads == 1 ? "" : "s", p.batch);
            bench_result *r = &results[s * per_store + k];
            int rc = bench_run(benches[s], &p, r);
            if (rc) {
              char why[WHY_LEN];
              pass_why(benches[s], r, rc, why, sizeof why);
              fc_cli_warn(path, "%s %s pass failed: %s", bench_pattern_name(p.pattern),
                          bench_state_name(p.state), why);
              failed++;
              continue;
            }
            if (fc_cli_signal) break; /* a pass cut short by a signal is not reported */
            r->plan = (unsigned)(((pi * (size_t)o.ns + si) * o.nt + ti) * nbatch + bi);
            if (r->bad_records)
              fc_cli_warn(path, "%llu record%s with a bad header %s skipped (run cache-verify)",
                          (unsigned long long)r->bad_records, r->bad_records == 1 ? "" : "s",
                          r->bad_records == 1 ? "was" : "were");
            if (r->gone_records) /* the numbers are of the records that were there */
              fc_cli_warn(path,
                          "%s %s pass: %llu record%s listed when the store was opened %s not in it "
                          "any more (removed by another process meanwhile: a cache-prune?), not "
                          "read",
                          bench_pattern_name(p.pattern), bench_state_name(p.state),
                          (unsigned long long)r->gone_records, r->gone_records == 1 ? "" : "s",
                          r->gone_records == 1 ? "was" : "were");
            if (p.state == BENCH_WARM && r->resident_before < WARM_RESIDENT_MIN && !o.quiet)
              fc_cli_warn(path,
                          "%s warm pass started with %.1f%% of data.mdb resident: not warm (the "
                          "page cache did not keep what was read into it: more than memory "
                          "allows?)",
                          bench_pattern_name(p.pattern), 100 * r->resident_before);
            if (p.state == BENCH_COLD && !r->cold_verified && !o.quiet)
              fc_cli_warn(path, "%s cold pass started with %.1f%% of data.mdb resident: not cold%s",
                          bench_pattern_name(p.pattern), 100 * r->resident_before,
                          strcmp(rep->device->kind, "tmpfs") ? "" : " (tmpfs lives in RAM)");
            k++;
            done++;
          }
    rep->n_passes = k;
  }
  int lost_dump = 0, lost_svg = 0; /* "N of N passes" alone would read as a pass */
  if (dumpf && fc_cli_signal) {
    fc_outfile_abort(dumpf); /* an interrupted run leaves no half file */
  } else if (dumpf && (derr = fc_outfile_commit(dumpf))) {
    fc_cli_warn(o.dump, "cannot write: %s", fc_strerror(derr));
    exit_code = FC_EXIT_FAIL;
    lost_dump = 1;
  }

  size_t nrep = 0;
  for (size_t s = 0; s < nunits; s++)
    if (reports[s].store) nrep++;
  if (nrep) {
    if (o.json) {
      bench_write_json(stdout, reports, nrep, o.step_ms, o.batch);
    } else {
      bench_write_table(stdout, reports, nrep);
      for (size_t s = 0; s < nrep; s++) {
        char v[4096];
        bench_verdict(&reports[s], o.step_ms, o.batch, 0, v, sizeof v);
        fprintf(stdout, "\n%s", v);
      }
    }
    if (o.svg) {
      fc_outfile *f; /* whole or not at all */
      int e = fc_outfile_open(o.svg, &f);
      if (!e && (e = bench_write_svg(fc_outfile_stream(f), reports, nrep)) != 0)
        fc_outfile_abort(f);
      else if (!e)
        e = fc_outfile_commit(f);
      if (e) {
        fc_cli_warn(o.svg, "cannot write the chart: %s", fc_strerror(e));
        exit_code = FC_EXIT_FAIL;
        lost_svg = 1;
      }
    }
  }
  exit_code = fc_cli_stdout_status(exit_code); /* the report lost (a full disk) is a failure */
  char failed_s[48]; /* each pass counted: done, failed, or not started (a signal) */
  snprintf(failed_s, sizeof failed_s, "%zu failed)", failed);
  if (!o.quiet || failed || exit_code == FC_EXIT_FAIL) /* exit 1 comes with its done line */
    fprintf(stderr, "%s: done: %zu of %zu passes%s%s%s%s%s\n", fc_cli_tool, done, total,
            failed ? " (" : "", failed ? failed_s : "",
            fc_cli_stdout_errno ? "; the report not written (stdout)" : "",
            lost_svg ? "; the chart not written" : "",
            lost_dump ? "; the key dump not written" : "");
  for (size_t s = 0; s < nunits; s++) bench_close(benches[s]);
  free(label);
  for (size_t u = 0; shown && u < nunits; u++) free(shown[u]);
  free(shown);
  free(first);
  free(refused);
  free(benches);
  free(reports);
  free(results);
  free(probes);
  free(probe_why);
  if (fc_cli_signal) return fc_cli_signal_exit();
  return failed ? FC_EXIT_FAIL : exit_code;
}
