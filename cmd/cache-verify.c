/* cache-verify: check stores before a training run (docs/cache-verify.md). The checks live in
 * libcache/core/verify/verify.c (fc_verify_store); this main parses options, prints and picks the exit code. */
#include "cmd/cli.h"
#include "cmd/cache-verify/json.h"
#include "cmd/cache-verify/notes.h"

#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_store.h"
#include "featcache/fc_verify.h"

#include <sys/stat.h>
#include <time.h>

enum {
  OPT_EXPECT_PRESET = 256,
  OPT_EXPECT_CONFIG,
  OPT_EXPECT_TOKENS,
  OPT_MANIFEST,
  OPT_MANIFEST_FORMAT,
  OPT_FINITE,
  OPT_SOURCES,
  OPT_REHASH,
  OPT_MAX_ERRORS,
  OPT_STRICT,
  OPT_JSON,
  OPT_STATUS,
  OPT_PROGRESS,
  OPT_NOLOCK,
  OPT_CLEAR_STALE,
  OPT_SEPARATE,
  OPT_SOURCE_ROOT,
  OPT_VERSION
};

static const fc_cli_opt options[] =
    {{NULL, 0, 0, NULL, "What the store must hold:"},
     {"expect-preset", OPT_EXPECT_PRESET, required_argument, "NAME",
      "every audio entry has features of this preset (as this build computes it); repeatable"},
     {"expect-config", OPT_EXPECT_CONFIG, required_argument, "DIGEST",
      "every audio entry has features of this config digest; repeatable"},
     {"expect-tokens", OPT_EXPECT_TOKENS, optional_argument, "[=CONFIG]",
      "manifest ids need tokens too, of the text the manifest gives; CONFIG (digest or tokenizer "
      "name) must be stored; repeatable"},
     {"manifest", OPT_MANIFEST, required_argument, "FILE",
      "every id of this manifest (LJSpeech, wav.scp, JSONL, list) is in the store"},
     {"manifest-format", OPT_MANIFEST_FORMAT, required_argument, "FMT",
      "ljspeech, kaldi, jsonl, list, tsv (default: detected)"},
     {"separate", OPT_SEPARATE, no_argument, NULL,
      "several STOREs are separate datasets, not one (each checked against the manifest)"},
     {NULL, 0, 0, NULL, "Extra checks:"},
     {"finite", OPT_FINITE, no_argument, NULL, "no NaN or Inf in f32/f16/bf16 payloads"},
     {"sources", OPT_SOURCES, no_argument, NULL,
      "each audio source file still has the size and mtime it was featurized with"},
     {"rehash", OPT_REHASH, no_argument, NULL,
      "recompute each audio source's digest from its bytes (reads every source)"},
     {"source-root", OPT_SOURCE_ROOT, required_argument, "DIR",
      "the corpus moved to DIR: sources are looked up there by the tail of their stored path"},
     {NULL, 0, 0, NULL, "Running:"},
     {"threads", 'j', required_argument, "N", "threads (default: all cores)"},
     {"max-errors", OPT_MAX_ERRORS, required_argument, "N",
      "stop after N errors (default: no limit)"},
     {"strict", OPT_STRICT, no_argument, NULL,
      "warnings (orphans, stale readers...) and recorded failures fail too"},
     {"nolock", OPT_NOLOCK, no_argument, NULL,
      "open with MDB_NOLOCK (automatic when the store is not writable)"},
     {"clear-stale-readers", OPT_CLEAR_STALE, no_argument, NULL,
      "clear reader slots left by killed processes (writes lock.mdb only)"},
     {NULL, 0, 0, NULL, "Output:"},
     {"json", OPT_JSON, no_argument, NULL, "one JSON report per store on stdout"},
     {"status", OPT_STATUS, no_argument, NULL, "print nothing; only the exit code tells"},
     {"quiet", 'q', no_argument, NULL, "no progress line and no summary on stderr"},
     {"progress", OPT_PROGRESS, no_argument, NULL,
      "progress line on stderr even when not a terminal"},
     {"help", 'h', no_argument, NULL, "show this help and exit"},
     {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
     {0, 0, 0, 0, 0}};

static const char *synopsis = "cache-verify [options] STORE...";
static const char *description =
    "Check featcache stores before a training run: the LMDB environment, every feat and tok record\n"
    "(header, sizes, checksums, known config), that every audio entry has its features with the\n"
    "right frame count and every text entry its tokens, orphans, and optionally a manifest, NaN/Inf\n"
    "and the source files. Every problem is named by db, key and utterance id. Several STOREs\n"
    "(shards) are one dataset: each is checked, then the manifest against all of them together,\n"
    "ids held by several stores for equal entries, and every store for the same configs.\n"
    "Utterances featurize could not store, and recorded so, are listed apart as recorded failures:\n"
    "a manifest id or a feature record they explain is no error.";
static const char *footer =
    "Exit status: 0 clean (warnings and recorded failures allowed unless --strict), 1 problems\n"
    "found, or the report could not be written to stdout (a lost report is never a pass), or a\n"
    "STORE could not be checked beside others that were, 2 could not run (bad options, no store\n"
    "could be checked), 130/143 interrupted, 141 the report's reader went away (SIGPIPE).\n"
    "Manual: man cache-verify.";

typedef struct progress_state {
  const char *store;
  double t0;
  fc_cli_progress line;
} progress_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_progress(uint64_t done, uint64_t total, void *ud) {
  progress_state *p = ud;
  double dt = now_s() - p->t0;
  fc_cli_progress_show(&p->line, "%s: %s: %.2f of %.2f GB checked, %.2f GB/s", fc_cli_tool,
                       p->store, done / 1e9, total / 1e9, dt > 0 ? done / 1e9 / dt : 0.0);
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A finding's key or id (the library's printable copy: \xNN for a control byte or a backslash)
 * as names are printed in messages: its bytes again, quoted as fc_cli_put_name quotes them ("a\tb",
 * "caf\xe9" for a byte that is not UTF-8); a name that holds a NUL in double quotes with the \xNN
 * escapes as they are. */
static void put_key(const char *s) {
  const size_t n = strlen(s);
  char *raw = malloc(n + 1), *o = raw;
  int nul = 0;
  for (const char *p = s; raw && *p;) {
    const int hi = p[0] == '\\' && p[1] == 'x' ? hex_digit(p[2]) : -1;
    const int lo = hi >= 0 ? hex_digit(p[3]) : -1;
    if (lo >= 0) {
      nul |= hi == 0 && lo == 0;
      *o++ = (char)(hi << 4 | lo);
      p += 4;
    } else {
      *o++ = *p++;
    }
  }
  if (raw && !nul) {
    *o = '\0';
    fc_cli_put_name(stdout, raw);
  } else if (strchr(s, '\\') || strchr(s, '"')) {
    putchar('"');
    for (const char *p = s; *p; p++) {
      if (*p == '"') putchar('\\');
      putchar(*p);
    }
    putchar('"');
  } else {
    fputs(s, stdout);
  }
  free(raw);
}

/* " KEY (id ID)" of a finding line, each when there is one (the id when it is not the key). */
static void put_key_id(const fc_verify_finding *f) {
  if (f->key) {
    putchar(' ');
    put_key(f->key);
  }
  if (f->id && (!f->key || strcmp(f->id, f->key) != 0)) {
    fputs(" (id ", stdout);
    put_key(f->id);
    putchar(')');
  }
}

/* Where the dataset's configs are: the stores that hold audio (text) entries hold the same mel
 * (token) configs (fc_verify_dataset); a store without such entries (an empty shard or part) need
 * hold none. with[0], with[1]: the stores with audio, text entries, of n. */
static void put_dataset_configs(const fc_verify_report *r, const size_t with[2], size_t n) {
  if (with[0] == n && with[1] == n) {
    printf("%llu mel, %llu token configs in every store", (unsigned long long)r->mel_configs,
           (unsigned long long)r->token_configs);
    return;
  }
  static const char *const kind[2] = {"mel", "token"}, *const entries[2] = {"audio", "text"};
  const uint64_t configs[2] = {r->mel_configs, r->token_configs};
  for (int k = 0; k < 2; k++) {
    if (k) fputs(", ", stdout);
    if (with[k] == n)
      printf("%llu %s configs in every store", (unsigned long long)configs[k], kind[k]);
    else if (with[k] == 0)
      printf("no %s configs needed (no %s entries)", kind[k], entries[k]);
    else
      printf("%llu %s configs in the %zu of %zu stores with %s entries",
             (unsigned long long)configs[k], kind[k], with[k], n, entries[k]);
  }
}

/* A note, no finding: stored utterances the manifest does not name, which a training run's
 * loader still reads unless told the manifest. WHO: "dataset", or "" after the store's name. */
static void put_beyond(const char *who, const fc_verify_report *r) {
  if (!r->beyond_manifest) return;
  if (who[0]) printf("%s: ", who);
  printf(
      "note: %llu stored utterance%s not in the manifest (another split's, or dropped from "
      "it): the loader reads them unless given the manifest (manifest=); cache-prune "
      "--manifest removes them\n",
      (unsigned long long)r->beyond_manifest, r->beyond_manifest == 1 ? " is" : "s are");
}

/* the "fatal" of a store's (the dataset's) --json object when a signal stopped its check */
#define INTERRUPTED "interrupted: the check was stopped before its end (run it again)"

static const char *severity_name(int s) {
  return s == FC_VERIFY_ERROR ? "error" : s == FC_VERIFY_WARNING ? "warning" : "recorded failure";
}

/* "STORE: " at the start of a line, the name quoted as in every message. */
/* The stores not checked as one dataset, and why: `dataset of N stores: not checked as one
 * dataset: WHY` on stdout (with --json its object, "ok":false and WHY as its "fatal"), the
 * manifest's ids said unchecked, since only the dataset's check reads them over several stores. */
static void put_dataset_unchecked(char *const *stores, size_t n, const char *why, size_t ids,
                                  int json) {
  char text[1024], unread_ids[64] = "";
  if (ids) snprintf(unread_ids, sizeof unread_ids, "; the manifest's %zu ids not checked", ids);
  snprintf(text, sizeof text, "not checked as one dataset: %s%s", why, unread_ids);
  if (!json) {
    printf("dataset of %zu stores: %s\n", n, text);
    return;
  }
  fputs("{\"dataset\":[", stdout);
  for (size_t i = 0; i < n; i++) {
    if (i) putchar(',');
    fc_json_write_string(stdout, stores[i]);
  }
  fputs("],\"ok\":false,\"fatal\":", stdout);
  fc_json_write_string(stdout, text);
  fputs("}\n", stdout);
}

static void put_store(const char *store) {
  fc_cli_put_name(stdout, store);
  fputs(": ", stdout);
}

static int with_manifest; /* --manifest given (over several stores, checked as a dataset) */

static void print_human(const char *store, const fc_verify_report *r) {
  for (size_t i = 0; i < r->count; i++) {
    const fc_verify_finding *f = &r->findings[i];
    put_store(store);
    if (f->severity == FC_VERIFY_FAILED) { /* "STORE: recorded failure: ID: ..." */
      printf("%s: ", severity_name(f->severity));
      put_key(f->id ? f->id : "?");
      printf(": %s\n", f->problem);
      continue;
    }
    printf("%s: %s", severity_name(f->severity), f->db);
    put_key_id(f);
    printf(": %s\n", f->problem);
  }
  uint64_t kept_w = 0;
  for (size_t i = 0; i < r->count; i++) kept_w += r->findings[i].severity == FC_VERIFY_WARNING;
  if (r->warnings > kept_w)
    put_store(store),
        printf("%llu more warning%s not listed\n", (unsigned long long)(r->warnings - kept_w),
               r->warnings - kept_w == 1 ? "" : "s");
  uint64_t kept_f = 0;
  for (size_t i = 0; i < r->count; i++) kept_f += r->findings[i].severity == FC_VERIFY_FAILED;
  if (r->failures > kept_f)
    put_store(store),
        printf("%llu more recorded failure%s not listed\n",
               (unsigned long long)(r->failures - kept_f), r->failures - kept_f == 1 ? "" : "s");
  char writer[192] = ""; /* a run still writing: what it has not committed is not checked */
  if (r->errors) cvc_writer_now(store, writer, sizeof writer);
  if (!r->stopped && !cvc_missing_notes(store, r, writer)) cvc_writer_note(store, r, writer);
  if (!r->stopped && !with_manifest) cvc_unpaired_notes(store, r); /* else its errors say it */
  cvc_stale_note(store, r);
  if (r->stopped)
    put_store(store), printf("stopped after %llu error%s (--max-errors)\n",
                             (unsigned long long)r->errors, r->errors == 1 ? "" : "s");
  if (r->beyond_manifest) put_store(store), put_beyond("", r);
  double gbs = r->wall_seconds > 0 ? r->bytes_checked / 1e9 / r->wall_seconds : 0;
  char failed[96] = "";
  if (r->failures)
    snprintf(failed, sizeof failed, ", %llu recorded failure%s", (unsigned long long)r->failures,
             r->failures == 1 ? "" : "s");
  put_store(store);
  printf(
      "%llu error%s, %llu warning%s%s; %llu record%s (%.3f GB) checked in %.3f s (%.2f GB/s, "
      "%d thread%s); %llu audio, %llu text entries; %llu mel, %llu token configs\n",
      (unsigned long long)r->errors, r->errors == 1 ? "" : "s", (unsigned long long)r->warnings,
      r->warnings == 1 ? "" : "s", failed, (unsigned long long)r->records_checked,
      r->records_checked == 1 ? "" : "s", r->bytes_checked / 1e9, r->wall_seconds, gbs, r->threads,
      r->threads == 1 ? "" : "s", (unsigned long long)r->entries[1],
      (unsigned long long)r->entries[2], (unsigned long long)r->mel_configs,
      (unsigned long long)r->token_configs);
}

/* An --expect-preset NAME that can name no config, whatever a store holds (a typo): a usage
 * error, said once before any store is read. A preset, its listed name "PRESET (DTYPE)" or a
 * digest is a name, checked against each store (fc_verify_store says the rest). */
static void check_preset_name(const char *name) {
  fc_mel_config pc;
  fc_digest d;
  if (fc_digest_parse(name, &d) == 0 || fc_mel_preset(name, &pc) == 0) return;
  const char *open = strstr(name, " (");
  const size_t nl = strlen(name), bl = open ? (size_t)(open - name) : 0;
  char base[32], dt[16];
  if (open && name[nl - 1] == ')' && bl < sizeof base && nl - bl - 3 < sizeof dt) {
    memcpy(base, name, bl);
    base[bl] = '\0';
    memcpy(dt, open + 2, nl - bl - 3);
    dt[nl - bl - 3] = '\0';
    if (fc_dtype_from_name(dt) && fc_mel_preset(base, &pc) == 0) return;
  }
  char list[128] = ""; /* the presets there are, as featurize names them: a typo shows */
  const char *const *p = fc_mel_preset_names();
  for (int i = 0; p[i]; i++) {
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", p[i]);
  }
  fc_cli_usage_error(
      "unknown preset '%s' (want one of %s; one stored in another dtype as cache-config "
      "lists it, 'kaldi (mq)'; or a 32-hex config digest)",
      name, list);
}

int main(int argc, char **argv) {
  fc_cli_tool = "cache-verify";
  fc_cli_std_fds();
  struct option longs[64];
  char shorts[128];
  fc_cli_getopt_tables(options, longs, shorts);

  fc_verify_opts vo;
  fc_verify_opts_init(&vo);
  const char *mel[64], *tok[64];
  size_t n_mel = 0, n_tok = 0;
  const char *manifest = NULL;
  fc_manifest_opts mo = {.format = FC_MANIFEST_AUTO};
  int strict = 0, json = 0, status = 0, quiet = 0, force_progress = 0, separate = 0;
  const char *detached_tokens = NULL; /* the word after a bare --expect-tokens */
  int c;
  opterr = 0; /* fc_cli_bad_option says what is wrong, as `cache-verify: ...` */
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    switch (c) {
    case OPT_EXPECT_PRESET:
    case OPT_EXPECT_CONFIG: {
      if (n_mel == 64) fc_cli_usage_error("too many --expect-preset/--expect-config (64 at most)");
      fc_digest dg;
      if (c == OPT_EXPECT_CONFIG && (strlen(optarg) != 32 || fc_digest_parse(optarg, &dg) != 0))
        fc_cli_usage_error("invalid value '%s' for --expect-config (want 32 hex chars)", optarg);
      if (c == OPT_EXPECT_PRESET) check_preset_name(optarg);
      mel[n_mel++] = optarg;
      break;
    }
    case OPT_EXPECT_TOKENS:
      vo.expect_tokens_given = 1;
      /* an optional argument must be attached: "--expect-tokens chars" reads chars as a STORE */
      if (!optarg && optind < argc && argv[optind][0] != '-' && !detached_tokens)
        detached_tokens = argv[optind];
      if (optarg && !optarg[0]) /* --expect-tokens=$TOK, TOK unset: not a name to look for */
        fc_cli_usage_error(
            "--expect-tokens= names no token config (an empty value: an unset "
            "variable?); --expect-tokens alone checks every stored one");
      if (optarg) {
        if (n_tok == 64) fc_cli_usage_error("too many --expect-tokens (64 at most)");
        tok[n_tok++] = optarg;
      }
      break;
    case OPT_MANIFEST: manifest = fc_cli_manifest_arg(manifest, optarg), with_manifest = 1; break;
    case OPT_MANIFEST_FORMAT: mo.format = fc_cli_manifest_format(optarg); break;
    case OPT_FINITE: vo.finite = 1; break;
    case OPT_SOURCES: vo.sources = 1; break;
    case OPT_REHASH: vo.rehash = 1; break;
    case OPT_SOURCE_ROOT: vo.source_root = fc_cli_path("source-root", optarg); break;
    case 'j': vo.threads = (int)fc_cli_u32_short(c, "threads", optarg, 1, 1024, longs); break;
    case OPT_MAX_ERRORS: {
      uint64_t v;
      if (fc_cli_parse_u64(optarg, &v, 0) || v == 0)
        fc_cli_usage_error("invalid value '%s' for --max-errors (want an integer >= 1)", optarg);
      vo.max_errors = v;
      break;
    }
    case OPT_STRICT: strict = 1; break;
    case OPT_NOLOCK: vo.nolock = 1; break;
    case OPT_CLEAR_STALE: vo.clear_stale_readers = 1; break;
    case OPT_SEPARATE: separate = 1; break;
    case OPT_JSON: json = 1; break;
    case OPT_STATUS: status = 1; break;
    case 'q': quiet = 1; break;
    case OPT_PROGRESS: force_progress = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    default: fc_cli_bad_option(argc, argv, longs);
    }
  }
  if (optind >= argc) fc_cli_usage_error("no STORE given");
  fc_cli_no_empty_stores(argc, argv, optind);
  struct stat dst;
  if (detached_tokens && stat(detached_tokens, &dst) != 0)
    fc_cli_usage_error("--expect-tokens takes its CONFIG as --expect-tokens=%s ('%s' is no store)",
                       detached_tokens + (detached_tokens[0] == '='), detached_tokens);
  if (json && status) fc_cli_usage_error("--json and --status exclude each other");
  if (vo.source_root && !vo.sources && !vo.rehash)
    fc_cli_usage_error("--source-root says where the sources are: give --sources or --rehash");
  if (vo.source_root) {
    struct stat sst;
    if (stat(vo.source_root, &sst) != 0 || !S_ISDIR(sst.st_mode))
      fc_cli_usage_error("--source-root %s: not a directory", vo.source_root);
  }
  vo.expect_mel = mel;
  vo.n_expect_mel = n_mel;
  vo.expect_tok = tok;
  vo.n_expect_tok = n_tok;

  fc_item_list items = {0};
  size_t usable = 0; /* the manifest's ids */
  if (manifest) {
    char why[512] = "";
    int rc = fc_manifest_read(manifest, &mo, &items, why, sizeof why);
    if (rc) {
      if (!status) fc_cli_warn(manifest, "%s", why[0] ? why : fc_strerror(rc));
      return FC_EXIT_USAGE;
    }
    for (size_t i = 0; i < items.count; i++) usable += !items.items[i].err && items.items[i].id;
    if (!usable) { /* the check asked for cannot be made: no "clean" over zero ids */
      if (!status && !items.count)
        fc_cli_warn(manifest, "names no utterance (it has no lines)");
      else if (!status)
        fc_cli_warn(manifest, "names no utterance (%zu line%s, none with a usable id: %s)",
                    items.count, items.count == 1 ? "" : "s",
                    items.items[0].why ? items.items[0].why : fc_strerror(items.items[0].err));
      fc_item_list_free(&items);
      return FC_EXIT_USAGE;
    }
    vo.manifest = &items;
  }

  fc_cli_install_signals();
  vo.stop = (volatile const int *)&fc_cli_signal;
  int show_progress = !status && fc_cli_progress_wanted(force_progress, quiet);
  int worst = 0;
  /* A split store is checked as its parts: several stores, one dataset. */
  char **stores = NULL;
  size_t clean = 0, unchecked = 0, n_stores = 0;
  const char *first_unread = NULL; /* the first store not checked */
  {
    char why[512] = "";
    int rc = fc_store_expand((const char *const *)(argv + optind), (size_t)(argc - optind), &stores,
                             &n_stores, why, sizeof why);
    if (rc) {
      const int code = status ? rc == ENOMEM ? FC_EXIT_FAIL : FC_EXIT_USAGE
                              : fc_cli_say_listing_failed(rc, why, (size_t)(argc - optind));
      fc_item_list_free(&items);
      return code;
    }
  }
  fc_cli_room_for_stores(n_stores);
  /* LMDB: one environment, one open per process (the dataset check opens them all at once, and
   * closing one handle of an environment drops the process's locks on it): a store named twice
   * (or a split store and one of its parts) is refused, as cache-merge and cache-bench do */
  char twice[1024];
  if (fc_cli_store_twice((const char *const *)(argv + optind), (size_t)(argc - optind),
                         (const char *const *)stores, n_stores, twice, sizeof twice)) {
    if (!status) fc_cli_warn(NULL, "%s", twice);
    fc_item_list_free(&items);
    fc_store_paths_free(stores, n_stores);
    return FC_EXIT_USAGE;
  }
  /* a split store as a whole: its missing parts and the parts beyond its marker's N */
  size_t split_missing = 0, split_bad = 0; /* split_bad: split stores with other errors */
  uint64_t split_bad_errors = 0;
  const char *split_bad_name = NULL;
  for (int a = optind; a < argc; a++) {
    unsigned split_n = 0;
    if (fc_store_split_count(argv[a], &split_n) != 0 || split_n == 0) continue; /* said above */
    fc_verify_report r;
    char why[512] = "";
    int rc = fc_verify_store(argv[a], &vo, &r, why, sizeof why);
    if (rc) { /* the expansion above read the same marker: not reached but for a race */
      if (!status) fc_cli_warn(argv[a], "%s", why[0] ? why : fc_strerror(rc));
      if (FC_EXIT_USAGE > worst) worst = FC_EXIT_USAGE;
    } else if (r.opened && r.count) {
      uint64_t other = 0; /* a missing part is said as a store not clean; the others here */
      for (size_t i = 0; i < r.count; i++) {
        const fc_verify_finding *f = &r.findings[i];
        int missing = f->problem && strncmp(f->problem, "missing:", 8) == 0;
        split_missing += missing;
        other += !missing && f->severity == FC_VERIFY_ERROR;
        if (!status && !json) {
          put_store(argv[a]);
          fputs("error:", stdout);
          put_key_id(f);
          printf(": %s\n", f->problem);
        }
      }
      if (other) {
        if (!split_bad++) split_bad_name = argv[a];
        split_bad_errors += other;
      }
      if (json) cvc_print_json(argv[a], &r, 0, NULL);
      if (r.errors && FC_EXIT_FAIL > worst) worst = FC_EXIT_FAIL;
    }
    /* a part nothing was ever committed to (its writer stopped before its first commit) is said
     * as a missing one is: not an error of its own format, a part not yet written */
    for (unsigned k = 0; !rc && k < split_n; k++) {
      char part[4096], q[512];
      if (fc_store_part_path(argv[a], k, part, sizeof part) || !fc_cli_env_empty(part)) continue;
      split_missing++;
      if (FC_EXIT_FAIL > worst) worst = FC_EXIT_FAIL;
      if (status || json) continue; /* --json: the part's own report says it */
      char w[192];
      cvc_writer_now(part, w, sizeof w); /* its writer still before its first commit? */
      put_store(argv[a]);
      if (w[0])
        printf(
            "error: part-%u: empty: nothing committed to it yet: %s has it open for writing; "
            "check the store again when it has finished\n",
            k, w);
      else
        printf(
            "error: part-%u: empty: nothing was ever committed to it (its writer stopped before "
            "its first commit?): its ids are not stored; featurize (or tokenize) -o %s again "
            "mends it\n",
            k, fc_cli_quoted(argv[a], q, sizeof q));
    }
    fc_verify_report_free(&r);
  }
  /* one dataset: the manifest is checked against all stores together, by fc_verify_dataset */
  int dataset = n_stores > 1 && !separate;
  size_t with_entries[2] = {0, 0}; /* stores that hold audio, text entries: the dataset line's */
  const fc_item_list *manifest_items = vo.manifest;
  if (dataset) vo.manifest = NULL;
  vo.in_dataset = dataset; /* an empty shard of them needs no config (the stores with entries do) */
  for (size_t i = 0; i < n_stores; i++) {
    const char *store = stores[i];
    progress_state ps = {store, now_s(), {0}};
    fc_cli_progress_init(&ps.line, show_progress, !show_progress);
    vo.progress = show_progress ? on_progress : NULL;
    vo.progress_ud = &ps;
    fc_verify_report r;
    char why[512] = "";
    int rc = fc_verify_store(store, &vo, &r, why, sizeof why);
    fc_cli_progress_clear(&ps.line);
    int code, unread = 0;
    if (rc == FC_EINTR) {
      /* the report a script reads says the check did not end: no all-ok report of a cut run */
      if (json) cvc_print_json(store, &r, 0, INTERRUPTED);
      fc_verify_report_free(&r);
      if (!status) fc_cli_warn(store, "interrupted");
      fc_item_list_free(&items);
      fc_store_paths_free(stores, n_stores);
      return fc_cli_signal_exit();
    } else if (rc == ENOENT && split_missing) { /* a missing part, named above: a finding */
      code = FC_EXIT_FAIL;
      if (!status) fc_cli_warn(store, "%s", "missing part of a split store");
    } else if (rc) {
      /* out of memory is no usage error (a rerun may get past it): 1, counted as not checked */
      code = rc == ENOMEM ? FC_EXIT_FAIL : FC_EXIT_USAGE;
      unread = 1;
      /* a file, or a folder without data.mdb: as the other tools say it (FC_EFORMAT is left to
       * the check's own words here: an empty store, or a damaged one) */
      const char *said = rc == FC_ENOSTORE || rc == ENOTDIR || rc == ENOENT
                             ? fc_cli_not_a_store_why(store, rc)
                             : NULL;
      char bare[600]; /* an error of the open or the read with no words of its own: said as such */
      if (!said && (!why[0] || strcmp(why, fc_strerror(rc)) == 0)) {
        snprintf(bare, sizeof bare, "cannot %s the store: %s", r.opened ? "check" : "open",
                 fc_strerror(rc));
        said = bare;
      }
      if (!said) said = why;
      if (!status) fc_cli_warn(store, "%s", said);
      if (json) cvc_print_json(store, &r, 0, said);
    } else {
      code = (r.errors || (strict && (r.warnings || r.failures))) ? FC_EXIT_FAIL : FC_EXIT_OK;
      /* lock-free because it had to be: a teammate's store, whose owner may be writing to it */
      if (r.nolock && !vo.nolock && !status && fc_cli_lock_unwritable(store)) {
        fc_cli_warn(store,
                    "%s: read without it (MDB_NOLOCK); a writer committing meanwhile could make "
                    "sound records look damaged",
                    FC_CLI_LOCK_UNWRITABLE);
        if (vo.clear_stale_readers) /* the reader table is lock.mdb's: not this user's to clear */
          fc_cli_warn(store,
                      "--clear-stale-readers: nothing cleared, its reader slots not even read "
                      "(lock.mdb is not this user's to write: its owner can clear them)");
      }
      if (json)
        cvc_print_json(store, &r, code == FC_EXIT_OK, NULL);
      else if (!status)
        print_human(store, &r);
    }
    if (!rc)
      with_entries[0] += r.entries[FC_DB_AUDIO] > 0, with_entries[1] += r.entries[FC_DB_TEXT] > 0;
    if (code == FC_EXIT_OK) clean++;
    unchecked += unread; /* could not be opened or read through */
    if (unread && !first_unread) first_unread = store;
    if (code > worst) worst = code;
    fc_verify_report_free(&r);
  }
  int dataset_code = FC_EXIT_OK; /* the stores together; each may be clean and they not */
  uint64_t dataset_errors = 0, dataset_warnings = 0, dataset_failures = 0;
  char unread[640] = ""; /* why the stores were not checked as one dataset */
  int unread_said = 0; /* said (with --manifest: its ids are checked only there; it was silent) */
  if (dataset && (worst == FC_EXIT_USAGE || unchecked || split_missing)) {
    char q[512];
    if (unchecked)
      snprintf(unread, sizeof unread, "%s could not be checked%s",
               fc_cli_quoted(first_unread, q, sizeof q), unchecked > 1 ? ", nor could others" : "");
    else
      snprintf(unread, sizeof unread, "a split store has a part missing or unread");
    unread_said = usable > 0; /* without one, the store's own lines say what is wrong */
    if (!status && unread_said) put_dataset_unchecked(stores, n_stores, unread, usable, json);
  }
  if (dataset && !unread[0]) {
    vo.manifest = manifest_items;
    fc_verify_report r;
    char why[512] = "";
    int rc = fc_verify_dataset((const char *const *)stores, n_stores, &vo, &r, why, sizeof why);
    int code = rc ? rc == ENOMEM ? FC_EXIT_FAIL : FC_EXIT_USAGE /* a rerun may get past memory */
               : (r.errors || (strict && (r.warnings || r.failures_explaining))) ? FC_EXIT_FAIL
                                                                                 : FC_EXIT_OK;
    if (rc == FC_EINTR && json) {
      fputs("{\"dataset\":[", stdout);
      for (size_t i = 0; i < n_stores; i++) {
        if (i) putchar(',');
        fc_json_write_string(stdout, stores[i]);
      }
      printf("],\"ok\":false,\"fatal\":\"%s\"}\n", INTERRUPTED);
    }
    if (rc == FC_EINTR) {
      fc_verify_report_free(&r);
      if (!status) fc_cli_warn(NULL, "interrupted");
      fc_item_list_free(&items);
      fc_store_paths_free(stores, n_stores);
      return fc_cli_signal_exit();
    }
    if (rc && !status) fc_cli_warn(NULL, "%s", why[0] ? why : fc_strerror(rc));
    if (rc) { /* the stores checked one by one, not together: said as a skipped check is */
      snprintf(unread, sizeof unread, "%s", why[0] ? why : fc_strerror(rc));
      unread_said = 1;
      if (!status) put_dataset_unchecked(stores, n_stores, unread, usable, json);
    } else if (json) {
      fputs("{\"dataset\":[", stdout);
      for (size_t i = 0; i < n_stores; i++) {
        if (i) putchar(',');
        fc_json_write_string(stdout, stores[i]);
      }
      printf("],\"ok\":%s,\"errors\":", code == FC_EXIT_OK ? "true" : "false");
      cvc_json_findings(&r, FC_VERIFY_ERROR);
      fputs(",\"warnings\":", stdout);
      cvc_json_findings(&r, FC_VERIFY_WARNING);
      printf(
          ",\"error_count\":%llu,\"warning_count\":%llu,\"failures_explaining\":%llu,"
          "\"entries\":{\"audio\":%llu,"
          "\"text\":%llu},\"mel_configs\":%llu,\"token_configs\":%llu,\"manifest_items\":%llu,"
          "\"beyond_manifest\":%llu,\"wall_seconds\":%.6f}\n",
          (unsigned long long)r.errors, (unsigned long long)r.warnings,
          (unsigned long long)r.failures_explaining, (unsigned long long)r.entries[1],
          (unsigned long long)r.entries[2], (unsigned long long)r.mel_configs,
          (unsigned long long)r.token_configs, (unsigned long long)r.manifest_items,
          (unsigned long long)r.beyond_manifest, r.wall_seconds);
    } else if (!status && !rc) {
      for (size_t i = 0; i < r.count; i++) {
        const fc_verify_finding *f = &r.findings[i];
        printf("dataset: %s: %s", severity_name(f->severity), f->db);
        put_key_id(f);
        printf(": %s\n", f->problem);
      }
      char warned[48] = "";
      if (r.warnings)
        snprintf(warned, sizeof warned, ", %llu warning%s", (unsigned long long)r.warnings,
                 r.warnings == 1 ? "" : "s");
      printf("dataset of %zu stores: %llu error%s%s; %llu audio, %llu text entries; ", n_stores,
             (unsigned long long)r.errors, r.errors == 1 ? "" : "s", warned,
             (unsigned long long)r.entries[1], (unsigned long long)r.entries[2]);
      put_dataset_configs(&r, with_entries, n_stores);
      printf("; %llu manifest ids", (unsigned long long)r.manifest_items);
      if (r.failures_explaining)
        printf(", %llu of them recorded failures", (unsigned long long)r.failures_explaining);
      putchar('\n');
      put_beyond("dataset", &r);
    }
    if (code > worst) worst = code;
    dataset_code = code;
    dataset_errors = r.errors;
    dataset_warnings = r.warnings;
    dataset_failures = r.failures_explaining;
    fc_verify_report_free(&r);
  }
  /* a store that could not be opened or read through beside stores that were checked: the job
   * ran, and that store failed it (1, counted in the summary); 2 only when none was checked */
  if (worst == FC_EXIT_USAGE && unchecked < n_stores) worst = FC_EXIT_FAIL;
  worst = fc_cli_stdout_status(worst); /* the report lost (--json > full disk) is no pass */
  if (!status && (!quiet || worst == FC_EXIT_FAIL)) { /* exit 1 comes with it, whatever -q */
    /* every store counted once: clean, not clean (problems found), or not checked */
    fprintf(stderr, "%s: done: %zu of %zu stores clean", fc_cli_tool, clean, n_stores);
    if (clean < n_stores) {
      size_t not_clean = n_stores - clean - unchecked;
      fputs(" (", stderr);
      if (not_clean) fprintf(stderr, "%zu not clean%s", not_clean, unchecked ? ", " : "");
      if (unchecked) fprintf(stderr, "%zu not checked", unchecked);
      fputc(')', stderr);
    }
    if (split_bad == 1) /* "3 of 3 stores clean" alone would read as a pass */
      fputs("; split store ", stderr), fc_cli_put_name(stderr, split_bad_name),
          fprintf(stderr, " not sound (%llu error%s)", (unsigned long long)split_bad_errors,
                  split_bad_errors == 1 ? "" : "s");
    else if (split_bad)
      fprintf(stderr, "; %zu split stores not sound (%llu errors)", split_bad,
              (unsigned long long)split_bad_errors);
    if (unread_said) /* "2 of 2 stores clean" alone would read as a pass */
      fputs("; not checked as one dataset", stderr);
    else if (dataset && worst == FC_EXIT_OK)
      fputs("; one sound dataset", stderr);
    else if (dataset &&
             dataset_code == FC_EXIT_FAIL) /* "3 of 3 clean" alone would read as a pass */
    {
      uint64_t k = dataset_errors     ? dataset_errors
                   : dataset_warnings ? dataset_warnings
                                      : dataset_failures;
      fprintf(stderr, "; not one sound dataset (%llu %s%s%s)", (unsigned long long)k,
              dataset_errors     ? "error"
              : dataset_warnings ? "warning"
                                 : "recorded failure",
              k == 1 ? "" : "s", dataset_errors ? "" : " under --strict");
    }
    if (fc_cli_stdout_errno) fputs("; the report not written (stdout)", stderr);
    fputc('\n', stderr);
  }
  fc_item_list_free(&items);
  fc_store_paths_free(stores, n_stores);
  return worst;
}
