/* loader-bench — a training loop without a model, profiled: how much of each step waits for data,
 * with the featcache loader and with on-the-fly decoding (docs/loader-bench.md).
 * A thin main over the loader-bench engine (loaderbench.h) and the step profiler. */
#include "cmd/cli.h"

#include "featcache/fc_config.h"
#include "featcache/fc_loader.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_profiler.h"
#include "cmd/loader-bench/loaderbench.h"
#include "featcache/fc_outfile.h"

#include <math.h>

enum {
  OPT_SOURCE = 256,
  OPT_MANIFEST,
  OPT_MANIFEST_FORMAT,
  OPT_AUDIO_DIR,
  OPT_COMPARE,
  OPT_PRESET,
  OPT_FEATURES,
  OPT_VIEWS,
  OPT_PAD_VALUE,
  OPT_READ_ONLY,
  OPT_PARTIAL,
  OPT_CHECK_PAGES,
  OPT_SYN_MS,
  OPT_SYN_ITEMS,
  OPT_PREFETCH,
  OPT_STEPS,
  OPT_EPOCHS,
  OPT_WARMUP,
  OPT_COMPUTE_MS,
  OPT_COMPUTE_MODE,
  OPT_MATMUL,
  OPT_SWEEP,
  OPT_JSON,
  OPT_SVG,
  OPT_TRACE,
  OPT_PROGRESS,
  OPT_VERSION,
  OPT_COMPARE_PROFILES
};

static const fc_cli_opt options[] = {
    {NULL, 0, 0, NULL, "Data source:"},
    {"source", OPT_SOURCE, required_argument, "S",
     "cache (default: the featcache loader over STORE), audio (decode and compute on the fly), "
     "synthetic (each utterance costs --synthetic-ms)"},
    {"manifest", OPT_MANIFEST, required_argument, "FILE",
     "utterances for --source audio / --compare (LJSpeech, wav.scp, JSONL, list); with the "
     "cache source alone, only these are read (a split of the stores)"},
    {"audio", OPT_MANIFEST, required_argument, "FILE", "same as --manifest"},
    {"manifest-format", OPT_MANIFEST_FORMAT, required_argument, "F",
     "auto, ljspeech, kaldi, jsonl, list or tsv"},
    {"audio-dir", OPT_AUDIO_DIR, required_argument, "DIR", "base of relative manifest paths"},
    {"compare-profiles", OPT_COMPARE_PROFILES, no_argument, NULL,
     "two saved profiles of your own training loop side by side "
     "(BEFORE.json AFTER.json): the shrink factor and a verdict"},
    {"compare", OPT_COMPARE, no_argument, NULL,
     "featcache's own C featurizer on the fly (not your pipeline), "
     "then the cache, on the same utterances in the same order"},
    {"preset", OPT_PRESET, required_argument, "NAME",
     "features for --source audio without a STORE (default hifigan)"},
    {"features", OPT_FEATURES, required_argument, "SEL",
     "the store's mel config: preset name or 32-hex digest"},
    {"views", OPT_VIEWS, no_argument, NULL, "cache: zero-copy views instead of a padded batch"},
    {"pad-value", OPT_PAD_VALUE, required_argument, "V",
     "cache: value of padded frames (default: the config's silence; a whisper store needs it)"},
    {"read-only", OPT_READ_ONLY, no_argument, NULL,
     "read a store this user cannot write, such as a teammate's dataset (opened MDB_NOLOCK: "
     "no one may write it meanwhile)"},
    {"partial", OPT_PARTIAL, no_argument, NULL,
     "read shards that are not a whole set, or one shard in two stores (refused otherwise)"},
    {"check-pages", OPT_CHECK_PAGES, no_argument, NULL,
     "check the pages of each STORE's B-trees first, as the loader's check_pages does: one "
     "with a page LMDB's reads could crash on is refused, nothing run"},
    {"synthetic-ms", OPT_SYN_MS, required_argument, "MS", "synthetic: cost of one utterance (2)"},
    {"synthetic-items", OPT_SYN_ITEMS, required_argument, "N", "synthetic: utterances (1024)"},
    {NULL, 0, 0, NULL, "Training loop:"},
    {"batch", 'b', required_argument, "N", "utterances per batch (32)"},
    {"workers", 'w', required_argument, "N", "threads building batches (2); 0: in the loop"},
    {"prefetch", OPT_PREFETCH, required_argument, "N",
     "batches ahead per worker (2), PyTorch's prefetch_factor"},
    {"steps", OPT_STEPS, required_argument, "N", "measured steps (default: one epoch)"},
    {"epochs", OPT_EPOCHS, required_argument, "N", "measured epochs instead of --steps"},
    {"warmup", OPT_WARMUP, required_argument, "N", "steps run first and not measured (1)"},
    {"compute-ms", OPT_COMPUTE_MS, required_argument, "MS", "compute time per step (50)"},
    {"compute-mode", OPT_COMPUTE_MODE, required_argument, "M",
     "sleep (default: an accelerator works, the CPU is free) or busy"},
    {"compute-matmul", OPT_MATMUL, required_argument, "N",
     "compute = one N x N float matmul per step (real CPU work; not with --compute-ms or "
     "--compute-mode)"},
    {"sweep", OPT_SWEEP, no_argument, NULL,
     "run the grid given as words batch=L workers=L prefetch=L (L: 1,2,4) "
     "and recommend the smallest setting under 5 % data share"},
    {NULL, 0, 0, NULL, "Output:"},
    {"json", OPT_JSON, no_argument, NULL, "print JSON on stdout instead of tables"},
    {"svg", OPT_SVG, required_argument, "FILE",
     "chart of per-step data and compute time (not with --sweep)"},
    {"trace", OPT_TRACE, required_argument, "FILE",
     "Chrome trace-event JSON (Perfetto) of every step"},
    {"quiet", 'q', no_argument, NULL, "no progress, no summary line unless a run failed"},
    {"progress", OPT_PROGRESS, no_argument, NULL, "progress lines even when stderr is no terminal"},
    {"help", 'h', no_argument, NULL, "show this help and exit"},
    {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
    {NULL, 0, 0, NULL, NULL}};

/* --check-pages: each store (part) checked as the loader's check_pages checks it (pages_only 3:
 * a record's pages counted from its size), and refused, naming it, when it holds a page LMDB's
 * reads could crash on (a damaged free list, which no read touches, is no reason). Exit 2,
 * nothing run; the signal's code when stopped; 0 when every store is sound. */
static int refuse_damaged(const char *const *stores, size_t n, int nolock) {
  for (size_t i = 0; i < n; i++) {
    char where[64], problem[1024];
    int unsafe = 0;
    int got = fc_cli_pages_damaged_as(stores[i], 3, nolock, &unsafe, where, sizeof where, problem,
                                      sizeof problem);
    if (got < 0 || fc_cli_signal) {
      fc_cli_warn(stores[i], "interrupted while checking its pages: nothing run");
      return fc_cli_signal_exit();
    }
    if (got == 1 && unsafe) {
      fc_cli_warn(stores[i], "damaged (%s: %s): nothing run (cache-verify says more)", where,
                  problem);
      return FC_EXIT_USAGE;
    }
  }
  return 0;
}

static const char synopsis[] =
    "loader-bench [options] [--manifest FILE] STORE...\n"
    "       loader-bench --source audio --manifest FILE [options] [STORE...]\n"
    "       loader-bench --compare-profiles [--json] BEFORE.json AFTER.json\n"
    "       loader-bench --compare --manifest FILE [options] STORE...\n"
    "       loader-bench --sweep [batch=L] [workers=L] [prefetch=L] [options]\n"
    "         [STORE...]";
static const char description[] =
    "Run a training loop without a model: each step takes a batch (phase \"data\") and then\n"
    "spends a compute time (phase \"compute\"). Report per-step statistics, the data phase's\n"
    "share of the step and a verdict (not / moderately / highly input-bound). Several STOREs\n"
    "(e.g. shards) are read as one dataset, as the loader reads them.";
static const char footer[] =
    "Exit status: 0 ok; 1 some utterances failed to decode or the store's order differs from\n"
    "the manifest (see 'done: N of M'), or a run failed (out of memory, a read error); 2 usage\n"
    "or configuration error, nothing run; 130/143 interrupted.\n"
    "Manual: man loader-bench.";

#define MAX_AXIS 16
typedef struct axis {
  uint32_t v[MAX_AXIS];
  int n;
} axis;

/* A sweep's values are held to the bounds of the option of the same name (-b, -w, --prefetch). */
#define MAX_BATCH 65536u
#define MAX_WORKERS 256u
#define MAX_PREFETCH 64u
/* the cache source's loader (fc_loader_open refuses more: libcache/core/loader/loader.c) */
#define LOADER_MAX_THREADS 64u
#define LOADER_MAX_DEPTH 1024u

static void add_axis_value(const char *name, const char *item, void *ctx) {
  axis *a = ctx;
  uint32_t v = !strcmp(name, "batch")     ? fc_cli_u32(name, item, 1, MAX_BATCH)
               : !strcmp(name, "workers") ? fc_cli_u32(name, item, 0, MAX_WORKERS)
                                          : fc_cli_u32(name, item, 1, MAX_PREFETCH);
  for (int i = 0; i < a->n; i++) /* a repeated value is one cell, not the same cell twice */
    if (a->v[i] == v) return;
  if (a->n == MAX_AXIS) fc_cli_usage_error("too many values for --%s (at most %d)", name, MAX_AXIS);
  a->v[a->n++] = v;
}

/* word: NAME=L, a comma list of values of the axis NAME */
static void parse_axis(const char *word, const char *name, axis *a) {
  a->n = 0;
  fc_cli_list(name, word + strlen(name) + 1, add_axis_value, a);
}

static void warn_cb(const char *path, const char *msg, void *user) {
  (void)user;
  fc_cli_warn(path, "%s", msg);
}

/* A STORE that is a file, or a folder without data.mdb, said as the other tools say it (the
 * loader's open said "FC_ENOSTORE: not a featcache store (no data.mdb)", "Not a directory");
 * returns 1 when one is. A path that is not there is left to the open (but a shell pattern that
 * matched nothing). */
static int say_not_a_store(const char *const *stores, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    char data[4200];
    if (stat(stores[i], &st) != 0) { /* shards/s* that matched nothing: said; else the open's */
      if (errno == ENOENT && fc_cli_say_not_a_store(stores[i], ENOENT)) return 1;
      continue;
    }
    int rc = S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    snprintf(data, sizeof data, "%s/data.mdb", stores[i]);
    if (!rc && stat(data, &st) != 0 && errno == ENOENT) rc = FC_ENOSTORE;
    if (rc && fc_cli_say_not_a_store(stores[i], rc)) return 1;
  }
  return 0;
}

/* A run that stopped with rc: 1 when it failed while running — its steps had begun (a damaged
 * record, memory that ran out part-way), or a resource ran out before (memory, threads, files)
 * or a read failed (EIO) —; 0 when the options or the stores were what was wrong before
 * anything ran (no such config, no utterances): exit 2, nothing was run. */
static int run_failed(int rc, const lb_result *res) {
  return res->started || rc == ENOMEM || rc == EIO || rc == EAGAIN || rc == EMFILE ||
         rc == ENFILE || rc == FC_ECUDA;
}

static int cmp_item_id(const void *a, const void *b) {
  return strcmp(((const lb_item *)a)->id, ((const lb_item *)b)->id);
}

int main(int argc, char **argv) {
  fc_cli_tool = "loader-bench";
  fc_cli_std_fds();
  struct option longs[sizeof options / sizeof options[0]];
  char shorts[3 * (sizeof options / sizeof options[0]) + 2];
  fc_cli_getopt_tables(options, longs, shorts);

  lb_opts base;
  lb_opts_init(&base);
  const char *source = "cache", *manifest = NULL, *audio_dir = NULL, *preset = NULL;
  const char *svg = NULL, *trace = NULL;
  int manifest_format = FC_MANIFEST_AUTO, compare = 0, sweep = 0, json = 0, quiet = 0;
  int progress = 0, compare_profiles = 0, read_only = 0, check_pages = 0;
  int compute_mode_given = 0, compute_ms_given = 0; /* beside --compute-matmul: refused */
  int matmul_given = 0, synth_ms_given = 0, synth_items_given = 0, manifest_format_given = 0;
  int loop_opt = 0; /* the first option of a run, which --compare-profiles has none of */
  uint64_t synth_items = 1024;
  base.synth_item_ms = 2;
  int c;
  opterr = 0; /* fc_cli_bad_option says what is wrong, as `loader-bench: ...` */
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    if (!loop_opt && c != OPT_COMPARE_PROFILES && c != OPT_JSON && c != 'q' && c != OPT_PROGRESS)
      loop_opt = c;
    switch (c) {
    case OPT_SOURCE:
      if (strcmp(optarg, "cache") && strcmp(optarg, "audio") && strcmp(optarg, "synthetic"))
        fc_cli_usage_error("invalid value '%s' for --source (want cache, audio or synthetic)",
                           optarg);
      source = optarg;
      break;
    case OPT_MANIFEST: manifest = fc_cli_manifest_arg(manifest, optarg); break;
    case OPT_MANIFEST_FORMAT:
      manifest_format = fc_cli_manifest_format(optarg);
      manifest_format_given = 1;
      break;
    case OPT_AUDIO_DIR: audio_dir = fc_cli_path("audio-dir", optarg); break;
    case OPT_COMPARE: compare = 1; break;
    case OPT_COMPARE_PROFILES: compare_profiles = 1; break;
    case OPT_PRESET: preset = optarg; break;
    case OPT_FEATURES: base.features = optarg; break;
    case OPT_VIEWS: base.views = 1; break;
    case OPT_PAD_VALUE:
      base.pad_value = (float)fc_cli_double("pad-value", optarg, -1e6, 1e6);
      break;
    case OPT_READ_ONLY: read_only = 1; break;
    case OPT_PARTIAL: base.partial = 1; break;
    case OPT_CHECK_PAGES: check_pages = 1; break;
    case OPT_SYN_MS:
      base.synth_item_ms = fc_cli_double("synthetic-ms", optarg, 0, 60000);
      synth_ms_given = 1;
      break;
    case OPT_SYN_ITEMS:
      synth_items = fc_cli_u32("synthetic-items", optarg, 1, 100000000);
      synth_items_given = 1;
      break;
    case 'b': base.batch = fc_cli_u32_short(c, "batch", optarg, 1, MAX_BATCH, longs); break;
    case 'w': base.workers = fc_cli_u32_short(c, "workers", optarg, 0, MAX_WORKERS, longs); break;
    case OPT_PREFETCH: base.prefetch = fc_cli_u32("prefetch", optarg, 1, MAX_PREFETCH); break;
    case OPT_STEPS: base.steps = fc_cli_u32("steps", optarg, 1, 100000000); break;
    case OPT_EPOCHS: base.epochs = fc_cli_u32("epochs", optarg, 1, 100000); break;
    case OPT_WARMUP: base.warmup = fc_cli_u32("warmup", optarg, 0, 1000000); break;
    case OPT_COMPUTE_MS:
      base.compute_ms = fc_cli_double("compute-ms", optarg, 0, 3600e3);
      compute_ms_given = 1;
      break;
    case OPT_COMPUTE_MODE:
      compute_mode_given = 1;
      if (strcmp(optarg, "sleep") == 0)
        base.compute = LB_SLEEP;
      else if (strcmp(optarg, "busy") == 0)
        base.compute = LB_BUSY;
      else
        fc_cli_usage_error("invalid value '%s' for --compute-mode (want sleep or busy)", optarg);
      break;
    case OPT_MATMUL:
      base.compute = LB_MATMUL;
      matmul_given = 1;
      base.matmul_n = fc_cli_u32("compute-matmul", optarg, 1, 8192);
      break;
    case OPT_SWEEP: sweep = 1; break;
    case OPT_JSON: json = 1; break;
    case OPT_SVG: svg = fc_cli_out_path("svg", optarg); break;
    case OPT_TRACE: trace = fc_cli_out_path("trace", optarg); break;
    case 'q': quiet = 1; break;
    case OPT_PROGRESS: progress = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    default: fc_cli_bad_option(argc, argv, longs);
    }
  }
  if (base.steps && base.epochs) fc_cli_usage_error("--steps and --epochs exclude each other");
  if (fc_cli_same_out(svg, trace)) { /* one file for both: the trace would replace the chart */
    char q[1024];
    fc_cli_usage_error("--svg and --trace name the same file (%s)",
                       fc_cli_quoted(trace, q, sizeof q));
  }
  if (matmul_given && compute_mode_given)
    fc_cli_usage_error(
        "--compute-matmul and --compute-mode exclude each other (the matmul is the compute)");
  if (matmul_given && compute_ms_given)
    fc_cli_usage_error(
        "--compute-matmul and --compute-ms exclude each other (the matmul takes what it takes)");
  if (compare_profiles) {
    if (compare || sweep) fc_cli_usage_error("--compare-profiles excludes --compare and --sweep");
    for (const fc_cli_opt *o = options; loop_opt && o->help; o++)
      if (o->long_name && o->id == loop_opt)
        fc_cli_usage_error("--compare-profiles compares two saved profiles: --%s does not apply",
                           o->long_name);
    if (argc - optind != 2)
      fc_cli_usage_error("--compare-profiles wants two profiles: BEFORE.json AFTER.json");
    char why[600] = "";
    int rc = fc_prof_compare_files(argv[optind], argv[optind + 1], json, stdout, why, sizeof why);
    if (rc) {
      fc_cli_warn(NULL, "%s", why[0] ? why : fc_strerror(rc));
      return FC_EXIT_USAGE;
    }
    return fc_cli_stdout_status(FC_EXIT_OK);
  }

  /* positional words: STOREs, and the sweep axes */
  const char *store = NULL;
  const char **stores = (const char **)(argv + optind); /* the STORE words, compacted in place */
  size_t n_stores = 0;
  axis ax_batch = {{base.batch}, 1}, ax_workers = {{base.workers}, 1},
       ax_prefetch = {{base.prefetch}, 1};
  static const char *const axis_names[] = {"batch", "workers", "prefetch"};
  axis *axes[] = {&ax_batch, &ax_workers, &ax_prefetch};
  int axis_seen[3] = {0};
  for (int i = optind; i < argc; i++) {
    const char *a = argv[i];
    int k = 0;
    while (k < 3 && !(strncmp(a, axis_names[k], strlen(axis_names[k])) == 0 &&
                      a[strlen(axis_names[k])] == '='))
      k++;
    if (k < 3 && !sweep && access(a, F_OK) != 0) { /* (a store may have such a name) */
      char q[1024];
      fc_cli_usage_error("%s: a sweep's axis without --sweep", fc_cli_quoted(a, q, sizeof q));
    }
    if (k == 3 || !sweep) {
      stores[n_stores++] = a;
      continue;
    }
    if (axis_seen[k]++) /* the second list replaced the first */
      fc_cli_usage_error("%s= given twice (one list per axis: %s=1,2)", axis_names[k],
                         axis_names[k]);
    parse_axis(a, axis_names[k], axes[k]);
  }
  if (!compare && strcmp(source, "synthetic") == 0 && (n_stores || manifest))
    fc_cli_usage_error(
        "--source synthetic reads no STORE and no --manifest (each utterance costs "
        "--synthetic-ms): leave them out, or use --source cache or audio");
  /* an option of a source that does not run is refused, not dropped */
  int want_cache = compare || strcmp(source, "cache") == 0;
  int want_audio = compare || strcmp(source, "audio") == 0;
  if (preset && !want_audio)
    fc_cli_usage_error(
        "--preset: only --source audio without a STORE computes features by a "
        "preset; the cache source reads the store's (--features selects one)");
  if ((synth_ms_given || synth_items_given) && (compare || strcmp(source, "synthetic")))
    fc_cli_usage_error("--%s applies to --source synthetic only",
                       synth_ms_given ? "synthetic-ms" : "synthetic-items");
  if (base.views && !want_cache) fc_cli_usage_error("--views applies to the cache source only");
  /* the loader's bounds, for every cell: said before any runs, naming the options (the loader's
   * own refusal named the store, "prefetch_threads 256 > 64", and stopped a sweep midway, the
   * cells it had measured unreported) */
  for (int wi = 0; want_cache && wi < ax_workers.n; wi++)
    for (int pi = 0; pi < ax_prefetch.n; pi++) {
      uint32_t w = ax_workers.v[wi], pf = ax_prefetch.v[pi];
      const char *wo = sweep ? "workers=" : "--workers ", *po = sweep ? "prefetch=" : "--prefetch ";
      if (w > LOADER_MAX_THREADS)
        fc_cli_usage_error("%s%u: the cache source's loader runs at most %u prefetch threads", wo,
                           w, LOADER_MAX_THREADS);
      if ((uint64_t)w * pf > LOADER_MAX_DEPTH)
        fc_cli_usage_error(
            "%s%u with %s%u: %llu batches ahead; the cache source's loader keeps "
            "at most %u",
            wo, w, po, pf, (unsigned long long)w * pf, LOADER_MAX_DEPTH);
    }
  if (!isnan(base.pad_value) && !want_cache)
    fc_cli_usage_error("--pad-value applies to the cache source only");
  if (!isnan(base.pad_value) && base.views)
    fc_cli_usage_error("--pad-value applies to padded batches: --views yields none");
  if (base.features && !n_stores)
    fc_cli_usage_error("--features selects a STORE's mel config: no STORE is read here");
  if ((manifest_format_given || audio_dir) && !manifest)
    fc_cli_usage_error("--%s applies to a --manifest: none is given",
                       manifest_format_given ? "manifest-format" : "audio-dir");
  if ((read_only || base.partial || check_pages) && !n_stores)
    fc_cli_usage_error("--%s applies to a STORE: no STORE is read here", read_only ? "read-only"
                                                                         : base.partial
                                                                             ? "partial"
                                                                             : "check-pages");
  fc_cli_no_empty_stores((int)n_stores, (char **)stores, 0);
  const char *const *words = stores; /* the STORE words as given */
  size_t n_words = n_stores;
  if (n_stores) stores = fc_cli_expand_stores(stores, &n_stores); /* a split store: its parts */
  char twice[1024]; /* one dataset reads each store once, as cache-bench and cache-verify insist */
  if (fc_cli_store_twice(words, n_words, stores, n_stores, twice, sizeof twice)) {
    fc_cli_warn(NULL, "%s", twice);
    return FC_EXIT_USAGE;
  }
  for (int k = 0; k < 2; k++) { /* the STOREs given (a split store's marker) and their parts */
    fc_cli_out_not_in_store("svg", svg, k ? stores : words, k ? n_stores : n_words);
    fc_cli_out_not_in_store("trace", trace, k ? stores : words, k ? n_stores : n_words);
  }
  if (n_stores) store = stores[0];

  int synthetic = !compare && strcmp(source, "synthetic") == 0;
  if (compare && sweep) fc_cli_usage_error("--compare and --sweep exclude each other");
  if (sweep && svg) /* it was dropped without a word */
    fc_cli_usage_error(
        "--svg draws the steps of one run: a sweep draws no chart (its cells are "
        "the table's rows); leave --svg out, or chart one cell without --sweep");
  if (want_cache && !store) fc_cli_usage_error("missing STORE (the cache source reads one)");
  if (want_audio && !manifest)
    fc_cli_usage_error("--source audio and --compare need --manifest FILE");
  if (preset && store && want_audio)
    fc_cli_usage_error("--preset: the audio source uses the store's config; leave --preset out");
  /* a store this user cannot write opens only without LMDB's lock, where a writer elsewhere could
   * change it under the run: refused unless --read-only says no one does, as cache-bench does */
  if ((want_cache || want_audio) && say_not_a_store(stores, n_stores)) return FC_EXIT_USAGE;
  int unwritable = 0, refused = 0;
  for (size_t i = 0; (want_cache || want_audio) && i < n_stores; i++) {
    if (!lb_store_unwritable(stores[i])) continue;
    unwritable = 1;
    if (!read_only) {
      fc_cli_warn(stores[i],
                  "store is not writable by this user (lock.mdb): LMDB cannot take its reader "
                  "lock, so a writer elsewhere could change it under the benchmark; pass "
                  "--read-only to bench it anyway");
      refused = 1;
    }
  }
  if (refused) return FC_EXIT_USAGE;
  base.nolock = read_only && unwritable;
  if (check_pages && (want_cache || want_audio)) { /* before any open reads the B-trees */
    fc_cli_install_signals(); /* a big store's walk from a cold disk: Ctrl-C stops it */
    int code = refuse_damaged(stores, n_stores, base.nolock);
    if (code) return code;
  }

  /* the features the audio source computes: the store's config, else --preset */
  fc_mel_config mel;
  memset(&mel, 0, sizeof mel);
  fc_digest mel_digest = {{0}}; /* its digest (a STORE given): --compare's order needs it */
  if (want_audio) {
    if (store) {
      char why[512] = "";
      /* the stores' config, as the loader resolves it over all of them */
      int named = 0;
      int rc = lb_store_mel_config(stores, n_stores, base.features, base.nolock, &mel, &mel_digest,
                                   &named, why, sizeof why);
      if (rc) {
        fc_cli_warn(named && why[0] ? NULL : store, "%s", why[0] ? why : fc_strerror(rc));
        return FC_EXIT_USAGE;
      }
    } else if (fc_mel_preset(preset ? preset : "hifigan", &mel)) {
      fc_cli_usage_error("unknown preset '%s'", preset);
    }
  }

  /* the utterances of the audio source, sorted by id: the loader's sequential order (over several
   * stores with --compare: store by store, below) */
  fc_item_list list = {0};
  lb_item *items = NULL;
  const char **ids = NULL;
  size_t n_items = 0, n_missing = 0; /* n_missing: --compare's ids in no store, the last ones */
  int exit_code = FC_EXIT_OK;
  if (want_audio || (want_cache && manifest)) { /* the cache source alone: the manifest's ids */
    fc_manifest_opts mo = {.format = manifest_format, .audio_dir = audio_dir};
    char why[512] = "";
    int rc = fc_manifest_read(manifest, &mo, &list, why, sizeof why);
    if (rc) {
      fc_cli_warn(manifest, "%s", why[0] ? why : fc_strerror(rc));
      return FC_EXIT_USAGE;
    }
    items = calloc(list.count ? list.count : 1, sizeof *items);
    ids = calloc(list.count ? list.count : 1, sizeof *ids);
    if (!items || !ids) {
      fc_cli_warn(NULL, "%s", fc_strerror(ENOMEM));
      return FC_EXIT_FAIL;
    }
    for (size_t i = 0; i < list.count; i++) {
      const fc_item *it = &list.items[i];
      if (it->err || (want_audio && !it->path)) {
        fprintf(stderr, "%s: ", fc_cli_tool); /* FILE:LINE, FILE quoted as names are */
        fc_cli_put_name(stderr, manifest);
        fprintf(stderr, ":%zu: %s\n", it->line, it->why ? it->why : "no audio path");
        exit_code = FC_EXIT_FAIL;
        continue;
      }
      items[n_items++] = (lb_item){it->id, it->path};
    }
    if (!n_items) {
      fc_cli_warn(manifest, "no utterances");
      return FC_EXIT_USAGE;
    }
    qsort(items, n_items, sizeof *items, cmp_item_id);
    if (compare) {
      /* the loader yields store by store (ids in byte order within each): the audio run goes in
       * that order, and the cache run is checked against it; ids no store holds go last */
      lb_item *ordered = NULL;
      size_t n_ordered = 0, missing = 0;
      why[0] = '\0';
      rc = lb_dataset_order(stores, n_stores, base.nolock, &mel_digest, items, n_items, &ordered,
                            &n_ordered, &missing, why, sizeof why);
      if (rc) {
        fc_cli_warn(NULL, "%s", why[0] ? why : fc_strerror(rc));
        return FC_EXIT_USAGE;
      }
      if (missing) {
        if (n_stores == 1)
          fc_cli_warn(manifest, "%zu of %zu utterances are not in the store", missing, n_items);
        else
          fc_cli_warn(manifest, "%zu of %zu utterances are in none of the %zu stores", missing,
                      n_items, n_stores);
        exit_code = FC_EXIT_FAIL;
      }
      n_missing = missing;
      const char **oids = calloc(n_ordered ? n_ordered : 1, sizeof *oids);
      if (!oids) {
        fc_cli_warn(NULL, "%s", fc_strerror(ENOMEM));
        return FC_EXIT_FAIL;
      }
      free(items);
      free(ids);
      items = ordered;
      ids = oids;
      n_items = n_ordered;
    }
    for (size_t i = 0; i < n_items; i++) ids[i] = items[i].id;
  }

  fc_cli_install_signals();
  base.stop = &fc_cli_signal;
  base.warn = warn_cb;
  int show_progress = fc_cli_progress_wanted(progress, quiet);

  /* the runs: compare = audio then cache; sweep = the grid; else one */
  size_t n_runs = 0, max_runs = compare ? 2 : (size_t)ax_batch.n * ax_workers.n * ax_prefetch.n;
  lb_report_run *runs = calloc(max_runs, sizeof *runs);
  lb_cell *cells = calloc(max_runs, sizeof *cells);
  if (!runs || !cells) {
    fc_cli_warn(NULL, "%s", fc_strerror(ENOMEM));
    return FC_EXIT_FAIL;
  }
  uint64_t steps_planned = 0, steps_done = 0, failed = 0;
  /* for the plan of the runs a signal kept from starting */
  uint64_t first_planned = 0, epoch_items = 0;
  size_t n_started = 0;
  int rc = 0, sweep_failed = 0;
  for (int bi = 0; bi < ax_batch.n && !rc; bi++)
    for (int wi = 0; wi < ax_workers.n && !rc; wi++)
      for (int pi = 0; pi < ax_prefetch.n && !rc; pi++)
        for (int si = 0; si < (compare ? 2 : 1) && !rc; si++) {
          lb_opts o = base;
          o.batch = ax_batch.v[bi];
          o.workers = ax_workers.v[wi];
          o.prefetch = ax_prefetch.v[pi];
          if (sweep && !o.steps && !o.epochs) o.steps = 30;
          const char *src = compare ? (si == 0 ? "audio" : "cache") : source;
          if (strcmp(src, "cache") == 0) {
            o.source = LB_CACHE;
            o.store = store;
            o.stores = stores;
            o.n_stores = n_stores;
            if (manifest) { /* the manifest's utterances only: a split of the stores */
              o.subset = ids;
              o.n_subset = n_items;
            }
            if (compare) {
              /* the loader must yield the audio run's ids in its order (one store: ids in byte
               * order; several: store by store, as the audio run was ordered above) */
              o.expect_ids = ids;
              o.n_expect = n_items - n_missing; /* (those it cannot yield, epoch after epoch) */
              /* the same steps over the same utterances as the audio run */
              o.steps = runs[0].res.steps;
              o.epochs = 0;
            }
          } else if (strcmp(src, "audio") == 0) {
            o.source = LB_AUDIO;
            o.mel = &mel;
            o.items = items;
            o.n_items = n_items;
          } else {
            o.source = LB_SYNTH;
            o.n_items = synth_items;
          }
          lb_report_run *r = &runs[n_runs];
          r->source = synthetic ? "synthetic" : src;
          r->batch = o.batch;
          r->workers = o.workers;
          r->prefetch = o.prefetch;
          fc_profiler *prof = NULL;
          if ((rc = fc_profiler_create(trace ? FC_PROF_TRACE : 0, "data", &prof))) {
            fc_cli_warn(NULL, "%s", fc_strerror(rc));
            exit_code = FC_EXIT_FAIL;
            goto out; /* out of memory: no report, the runs so far freed */
          }
          r->prof = prof;
          n_runs++;
          if (show_progress)
            fprintf(stderr, "%s: running %s: batch %u, workers %u, prefetch %u...\n", fc_cli_tool,
                    r->source, o.batch, o.workers, o.prefetch);
          char why[512] = "";
          rc = lb_run(&o, prof, &r->res, why, sizeof why);
          uint64_t planned = o.steps ? o.steps : r->res.epoch_batches * (o.epochs ? o.epochs : 1);
          steps_planned += planned;
          if (!n_started++) first_planned = planned;
          if (r->res.epoch_items) epoch_items = r->res.epoch_items;
          steps_done += r->res.steps;
          failed += r->res.failed;
          if (r->res.failed || r->res.order_mismatch) exit_code = FC_EXIT_FAIL;
          if (rc == FC_EINTR && !r->res.steps) { /* stopped in its warmup: nothing measured */
            fc_profiler_free(prof);
            n_runs--;
            break; /* (nothing of it to summarize: the loops end, rc is set) */
          }
          if (rc == FC_EEMPTY && o.source == LB_CACHE && manifest) {
            /* the manifest's utterances, none of them in the stores: the manifest is what is
             * wrong (it said 'STORE: no utterances with features in the store') */
            char named[1024];
            if (n_words > 1) /* (the STOREs as given: a split store is one) */
              fc_cli_warn(manifest,
                          "none of its %zu utterances has features in any of the %zu stores",
                          n_items, n_words);
            else
              fc_cli_warn(manifest, "none of its %zu utterances has features in the store %s",
                          n_items, fc_cli_quoted(words[0], named, sizeof named));
            exit_code = FC_EXIT_USAGE;
            break;
          }
          if (rc && rc != FC_EINTR) {
            /* (several stores: a reason that names none of them is the set's, not the first's) */
            const char *path = o.source == LB_CACHE   ? (n_stores > 1 ? NULL : store)
                               : o.source == LB_AUDIO ? manifest
                                                      : NULL;
            /* a message that names a store (any of them: the loader's of a later store) */
            for (size_t k = 0; path && k < (o.source == LB_CACHE ? n_stores : 1); k++) {
              char named[1024]; /* as the library names it: quoted when odd */
              fc_cli_quoted(o.source == LB_CACHE ? stores[k] : path, named, sizeof named);
              size_t pl = strlen(named);
              if (strncmp(why, named, pl) == 0 && why[pl] == ':') path = NULL;
            }
            fc_cli_warn(path, "%s", why[0] ? why : fc_strerror(rc));
            exit_code = run_failed(rc, &r->res) ? FC_EXIT_FAIL : FC_EXIT_USAGE;
            if (sweep && exit_code == FC_EXIT_FAIL && n_runs > 1) {
              /* the cells measured before it are reported (they were lost with it); this one,
               * cut short by its failure, is named as where the sweep stopped */
              fc_profiler_free(prof);
              cells[--n_runs] = (lb_cell){o.batch, o.workers, o.prefetch, 0, 0, 0};
              sweep_failed = 1;
            }
            break;
          }
          if (compare && si == 1 && r->res.order_mismatch)
            fc_cli_warn(store, "%llu of %llu utterances differ from the manifest's order",
                        (unsigned long long)r->res.order_mismatch,
                        (unsigned long long)r->res.utterances);
          lb_summary s;
          lb_summarize(prof, &s);
          cells[n_runs - 1] =
              (lb_cell){o.batch, o.workers, o.prefetch, s.data_share, s.data.mean, s.step.mean};
        }

  /* interrupted: what was measured is reported (a run cut short with the steps it took), and
   * the exit status says it was interrupted; a sweep stopped by a cell that failed: the cells
   * before it are reported, and the exit status says it failed */
  int interrupted = rc == FC_EINTR;
  if (interrupted || sweep_failed) rc = 0;
  /* the runs it kept from starting were planned too, so that done + not started = planned: a
   * sweep's later cells (the same dataset: their epochs are known), --compare's cache run (the
   * audio run's steps) */
  for (size_t i = n_started; (interrupted || sweep_failed) && i < max_runs; i++) {
    if (compare || base.steps || !base.epochs) { /* (30: a sweep's default) */
      steps_planned += compare ? first_planned : base.steps ? base.steps : 30;
      continue;
    }
    uint32_t batch = ax_batch.v[i / ((size_t)ax_workers.n * ax_prefetch.n)];
    steps_planned += (epoch_items + batch - 1) / batch * base.epochs;
  }
  if (!rc && n_runs) {
    /* ---- reports ---- */
    int rec = interrupted    ? LB_NOT_RECOMMENDED
              : sweep_failed ? LB_STOPPED_AT_FAILURE
              : sweep        ? lb_recommend(cells, n_runs, 0.05)
                             : -1;
    int kind = compare ? LB_REPORT_COMPARE : sweep ? LB_REPORT_SWEEP : LB_REPORT_RUNS;
    lb_write_report(stdout, json, kind, runs, n_runs, cells, rec);
    /* ---- files ---- */
    const fc_profiler *profs[2];
    const char *names[2];
    size_t nf = 0;
    for (size_t i = 0; i < n_runs && nf < 2; i++) {
      profs[nf] = runs[i].prof;
      names[nf++] = runs[i].source;
    }
    if (sweep) nf = 0; /* one chart per grid cell would not be readable: only tables */
    if (svg && nf) {
      fc_outfile *of; /* whole or not at all */
      int e = fc_outfile_open(svg, &of);
      char title[160];
      if (base.compute == LB_MATMUL)
        snprintf(title, sizeof title,
                 "loader-bench: ms per training step (batch %u, compute: %u x %u matmul)",
                 runs[0].batch, base.matmul_n, base.matmul_n);
      else
        snprintf(title, sizeof title,
                 "loader-bench: ms per training step (batch %u, compute %g ms)", runs[0].batch,
                 base.compute_ms);
      if (!e && (e = lb_write_svg(fc_outfile_stream(of), profs, names, nf, title)))
        fc_outfile_abort(of);
      else if (!e)
        e = fc_outfile_commit(of);
      if (e) {
        fc_cli_warn(svg, "cannot write the chart: %s", fc_strerror(e));
        exit_code = FC_EXIT_FAIL;
      }
    }
    if (trace && n_runs) {
      fc_outfile *of;
      int e = fc_outfile_open(trace, &of);
      if (!e && (e = fc_profiler_write_traces(profs, names, nf ? nf : 1, fc_outfile_stream(of))))
        fc_outfile_abort(of);
      else if (!e)
        e = fc_outfile_commit(of);
      if (e) {
        fc_cli_warn(trace, "cannot write the trace: %s", fc_strerror(e));
        exit_code = FC_EXIT_FAIL;
      }
    }
  }
  exit_code = fc_cli_stdout_status(exit_code); /* the report lost (a full disk) is a failure */
  if (interrupted) exit_code = fc_cli_signal_exit();
  if (exit_code != FC_EXIT_USAGE && (!quiet || exit_code == FC_EXIT_FAIL)) {
    /* the steps add up: done + not started (an interrupted run) = planned */
    fprintf(stderr, "%s: done: %llu of %llu steps", fc_cli_tool, (unsigned long long)steps_done,
            (unsigned long long)steps_planned);
    if (steps_done < steps_planned)
      fprintf(stderr, ", %llu not started", (unsigned long long)(steps_planned - steps_done));
    fprintf(stderr, " (%llu utterance%s failed", (unsigned long long)failed,
            failed == 1 ? "" : "s");
    /* what else made it 1 under --compare, said again where a log's reader looks last (an order
     * that differs is said above, with its first difference) */
    if (n_missing)
      fprintf(stderr, ", %zu of the manifest's not in the store%s", n_missing,
              n_stores > 1 ? "s" : "");
    fputs(")\n", stderr);
  }

out:
  for (size_t i = 0; i < n_runs; i++) fc_profiler_free(runs[i].prof);
  free(runs);
  free(cells);
  free(items);
  free(ids);
  fc_item_list_free(&list);
  return exit_code;
}
