/* tokenize — text → token ids in a featcache store (text and tok dbs). See docs/tokenize.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/tokenize/configs.h"
#include "cmd/tokenize/manifest_checks.h"
#include "featcache/fc_format.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_shard.h"
#include "featcache/fc_store.h"
#include "featcache/fc_tokenize.h"

enum {
  OPT_MANIFEST = 256,
  OPT_MANIFEST_FORMAT,
  OPT_TEXT_COLUMN,
  OPT_TOKENIZER,
  OPT_VOCAB,
  OPT_BUILD_VOCAB,
  OPT_EXPORT_VOCAB,
  OPT_TOKENIZER_JSON,
  OPT_LANG,
  OPT_UNICODE,
  OPT_CASE,
  OPT_WHITESPACE,
  OPT_PUNCT,
  OPT_PAD,
  OPT_UNK,
  OPT_BOS,
  OPT_EOS,
  OPT_ADD_BOS,
  OPT_ADD_EOS,
  OPT_DTYPE,
  OPT_MAX_TEXT,
  OPT_BATCH,
  OPT_SHARD,
  OPT_STRICT,
  OPT_MAX_FAILED,
  OPT_JSON,
  OPT_PROGRESS,
  OPT_FORCE_NEW_STORE,
  OPT_CHECK_PAGES,
  OPT_VERSION
};

static const fc_cli_opt options[] = {
    {NULL, 0, 0, NULL, "Input and output:"},
    {"output", 'o', required_argument, "STORE", "store directory (created when missing)"},
    {"force-new-store", OPT_FORCE_NEW_STORE, no_argument, NULL,
     "create STORE even in a non-empty directory that is not a store"},
    {"check-pages", OPT_CHECK_PAGES, no_argument, NULL,
     "check every page of an existing STORE first (cache-verify's first step; without it, "
     "its free list alone): a damaged one is refused, nothing written"},
    {"manifest", OPT_MANIFEST, required_argument, "FILE",
     "manifest ('-' = stdin); or give it as the argument"},
    {"manifest-format", OPT_MANIFEST_FORMAT, required_argument, "FMT",
     "auto (default), ljspeech, tsv, jsonl"},
    {"text-column", OPT_TEXT_COLUMN, required_argument, "N",
     "LJSpeech: 2 raw, 3 normalized (default: 3 when present)"},
    {NULL, 0, 0, NULL, "Tokenizer:"},
    {"tokenizer", 't', required_argument, "KIND", "chars (default), phonemes, bpe"},
    {"vocab", OPT_VOCAB, required_argument, "FILE",
     "chars/phonemes: one symbol per line, id = line index ('-' = stdin)"},
    {"build-vocab", OPT_BUILD_VOCAB, no_argument, NULL,
     "chars/phonemes: build the vocab from the corpus (stored in meta)"},
    {"export-vocab", OPT_EXPORT_VOCAB, required_argument, "FILE",
     "write the vocab used to FILE ('-' = stdout)"},
    {"tokenizer-json", OPT_TOKENIZER_JSON, required_argument, "FILE",
     "bpe: a Hugging Face tokenizer.json ('-' = stdin)"},
    {"lang", OPT_LANG, required_argument, "LANG", "phonemes: espeak-ng voice (default en-us)"},
    {"pad", OPT_PAD, required_argument, "SYM", "pad symbol (default <pad>)"},
    {"unk", OPT_UNK, required_argument, "SYM", "unknown-symbol symbol (default <unk>)"},
    {"bos", OPT_BOS, required_argument, "SYM", "begin symbol (default <bos>)"},
    {"eos", OPT_EOS, required_argument, "SYM", "end symbol (default <eos>)"},
    {"add-bos", OPT_ADD_BOS, no_argument, NULL, "prepend the bos id"},
    {"add-eos", OPT_ADD_EOS, no_argument, NULL, "append the eos id"},
    {"dtype", OPT_DTYPE, required_argument, "T",
     "auto (default: i16, u16 or i32 by vocab size), i16, u16, i32"},
    {NULL, 0, 0, NULL, "Normalization (recorded in the token config):"},
    {"unicode", OPT_UNICODE, required_argument, "M", "nfkc (default; bpe: none) or none"},
    {"case", OPT_CASE, required_argument, "M", "keep (default) or fold"},
    {"whitespace", OPT_WHITESPACE, required_argument, "M", "collapse (default; bpe: keep) or keep"},
    {"punct", OPT_PUNCT, required_argument, "M", "keep (default) or remove"},
    {NULL, 0, 0, NULL, "Running:"},
    {"threads", 'j', required_argument, "N", "threads (default: all cores)"},
    {"batch", OPT_BATCH, required_argument, "N", "lines per write transaction (default 4096)"},
    {"shard", OPT_SHARD, required_argument, "K/N",
     "only shard K of N (0-based, by a hash of the id); 'slurm/N': K is the Slurm "
     "array task id; 'slurm': N is the task count too (--array=0-N-1)"},
    {"max-text-bytes", OPT_MAX_TEXT, required_argument, "N",
     "longer texts are bad lines (default 64KiB)"},
    {"strict", OPT_STRICT, no_argument, NULL, "the first bad line (or unknown symbol) is fatal"},
    {"max-failed", OPT_MAX_FAILED, required_argument, "N|P%",
     "exit 0 when at most N (or P % of the) lines failed (default 0)"},
    {"json", OPT_JSON, no_argument, NULL, "print a JSON summary on stdout"},
    {"progress", OPT_PROGRESS, no_argument, NULL,
     "progress on stderr even when it is not a terminal"},
    {"quiet", 'q', no_argument, NULL, "no progress, no summary unless something failed"},
    {"help", 'h', no_argument, NULL, "show this help and exit"},
    {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
    {NULL, 0, 0, NULL, NULL}};

static const char synopsis[] =
    "tokenize [options] -o STORE --manifest FILE\n"
    "       tokenize [options] -o STORE FILE|-";
static const char description[] =
    "Normalize transcripts and store their token ids (chars, espeak-ng phonemes or Hugging Face\n"
    "BPE) in a featcache store, keyed by text and token config. Reruns store only what is new.";
static const char footer[] =
    "Exit status: 0 all lines stored or already present (or the failed ones within --max-failed);\n"
    "1 some lines failed (see 'done: N of M'); 2 usage or configuration error, or a store this\n"
    "user may only read that lacks lines (it is checked, nothing written); 130/143 interrupted\n"
    "(committed batches are kept).\n"
    "Manual: man tokenize.";

typedef struct run_ctx {
  const char *manifest; /* as stderr names it: "(stdin)" for - */
  const char *source; /* as given: what --json's failures name */
  int json;
  fc_cli_progress progress;
  uint64_t reported; /* failed lines that got a line of their own */
  fc_cli_failures failures; /* what --json lists */
  uint64_t not_stored; /* a check's lines not stored: the first FC_CLI_NOT_STORED_SAID are named */
} run_ctx;

static void on_not_stored(const fc_item *it, void *ud) {
  run_ctx *c = ud;
  if (c->not_stored++ < FC_CLI_NOT_STORED_SAID) {
    char id[1024];
    fc_cli_progress_clear(&c->progress);
    fputs("tokenize: ", stderr);
    fc_cli_put_name(stderr, c->manifest);
    fprintf(stderr, ":%zu: %s not stored\n", it->line,
            fc_cli_quoted(it->id ? it->id : "", id, sizeof id));
  }
}

static void on_bad_line(const fc_item *it, int err, const char *why, void *ud) {
  run_ctx *c = ud;
  c->reported++;
  if (c->json) /* a line refused before its id was read: its first column, when one is cut */
    fc_cli_failures_add(&c->failures, it->id ? it->id : it->id_field, c->source, it->line, err,
                        why);
  fc_cli_progress_clear(&c->progress); /* the reason takes its place; the next one follows */
  fputs("tokenize: ", stderr);
  fc_cli_put_name(stderr, c->manifest); /* quoted when odd, as every message's names */
  fprintf(stderr, ":%zu: %s\n", it->line, why);
}

static void on_progress(const fc_tokenize_stats *s, void *ud) {
  run_ctx *c = ud;
  const unsigned long long done = s->processed + s->skipped_existing + s->failed + s->not_stored;
  if (s->lines)
    fc_cli_progress_show(&c->progress, "tokenize: %llu of %llu lines", done,
                         (unsigned long long)s->lines);
  else /* a manifest read as the job goes: its length is known at the end */
    fc_cli_progress_show(&c->progress, "tokenize: %llu line%s done", done, done == 1 ? "" : "s");
}

/* '-' for a file option: stdin (out: stdout), as for the manifest (the library opens a path) */
static const char dev_stdin[] = "/dev/stdin", dev_stdout[] = "/dev/stdout";
static const char *stdio_path(const char *opt, const char *v, int out) {
  if (strcmp(v, "-") == 0) return out ? dev_stdout : dev_stdin;
  return out ? fc_cli_out_path(opt, v) : fc_cli_path(opt, v);
}

static int pick(const char *opt, const char *v, const char *a, const char *b) {
  if (strcmp(v, a) == 0) return 0;
  if (strcmp(v, b) == 0) return 1;
  fc_cli_usage_error("invalid value '%s' for --%s (want %s or %s)", v, opt, a, b);
  return 0;
}

/* A vocab built from the text refused (FC_ECONFIG): a special symbol is one of the text's, whose
 * occurrences would all have become <unk> (fc_tokenizer_build_vocab). The options that set one. */
static void say_special_collision(const char *manifest, const fc_tok_opts *to) {
  const char *names[] = {"pad", "unk", "bos", "eos"},
             *vals[] = {to->pad, to->unk, to->bos, to->eos};
  char given[600] = "";
  int n = 0;
  for (int i = 0; i < 4; i++) {
    if (!vals[i]) continue;
    size_t at = strlen(given);
    char q[160];
    snprintf(given + at, sizeof given - at, "%s--%s '%s'", n++ ? ", " : "", names[i],
             fc_cli_quoted(vals[i], q, sizeof q));
  }
  fc_cli_warn(manifest,
              "%s%s is also a symbol of the text: each of its occurrences would become <unk>; "
              "nothing stored (choose a symbol the text does not hold%s)",
              n > 1 ? "one of "
              : n   ? ""
                    : "a special symbol (<pad> <unk> <bos> <eos>)",
              given, n ? ", or leave the option out" : "");
}

/* The --json object (docs/tokenize.md "Output"); hex "": no config yet (null). */
static void print_json(const fc_tokenize_stats *st, double wall, const char *hex,
                       const char *kind_name, int check, const fc_cli_max_failed *mf, int allowed,
                       const fc_cli_failures *failures) {
  printf(
      "{\"processed\":%llu,\"skipped_existing\":%llu,\"failed\":%llu,\"not_started\":%llu,"
      "\"lines\":%llu,"
      "\"tokens\":%llu,\"unknown\":%llu,\"wall_seconds\":%.6f,\"config_digest\":%s%s%s,"
      "\"tokenizer\":\"%s\",\"checked_read_only\":%s,\"not_stored\":%llu,\"max_failed\":",
      (unsigned long long)st->processed, (unsigned long long)st->skipped_existing,
      (unsigned long long)st->failed, (unsigned long long)st->not_started,
      (unsigned long long)st->lines, (unsigned long long)st->tokens,
      (unsigned long long)st->unknown, wall, hex[0] ? "\"" : "", hex[0] ? hex : "null",
      hex[0] ? "\"" : "", kind_name, check ? "true" : "false", (unsigned long long)st->not_stored);
  fc_json_write_string(stdout, mf->text[0] ? mf->text : "0");
  printf(",\"failed_allowed\":%s,", allowed ? "true" : "false");
  fc_cli_failures_json(stdout, failures);
  fputs("}\n", stdout);
}

/* A run ended before its first line was begun, with exit code `code` (1: a store refused at the
 * page check, a vocab that could not be built; 130/143: stopped while the pages were checked or
 * cache-prune held the store): with --json its object all the same, the lines of the list (0 for
 * a manifest read as it goes) not started, so that a script reading stdout on exit 1 or 130 reads
 * one. Frees items and tok; returns the code. */
static int end_unbegun(int code, int json, fc_item_list *items, fc_tokenizer *tok,
                       const char *kind_name, const fc_cli_max_failed *mf) {
  if (json) {
    fc_tokenize_stats st = {.lines = items->count, .not_started = items->count};
    fc_digest cfg;
    char hex[33] = "";
    const fc_cli_failures none = {0};
    if (fc_tokenizer_config(tok, NULL, NULL, &cfg) == 0) fc_digest_hex(&cfg, hex);
    print_json(&st, 0.0, hex, kind_name, 0, mf, 0, &none);
    code = fc_cli_stdout_status(code);
  }
  fc_item_list_free(items);
  fc_tokenizer_free(tok);
  return code;
}

int main(int argc, char **argv) {
  fc_cli_tool = "tokenize";
  fc_cli_std_fds();
  struct option longs[sizeof options / sizeof options[0]];
  char shorts[3 * (sizeof options / sizeof options[0]) + 2];
  fc_cli_getopt_tables(options, longs, shorts);

  const char *out_dir = NULL, *manifest = NULL, *export_vocab = NULL, *kind_name = "chars";
  int force_new_store = 0, lang_given = 0, check_pages = 0;
  const char *shard_spec = NULL;
  fc_manifest_opts mopts = {0};
  fc_tok_opts to;
  memset(&to, 0, sizeof to);
  to.lang = "en-us";
  int unicode = -1, fold = -1, collapse = -1, punct = -1, json = 0, quiet = 0, progress = 0;
  fc_tokenize_run_opts ro = {0};
  fc_cli_max_failed max_failed;
  memset(&max_failed, 0, sizeof max_failed);
  int c;
  opterr = 0; /* fc_cli_bad_option says what is wrong, as `tokenize: ...` */
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    switch (c) {
    case 'o': out_dir = optarg; break;
    case OPT_MANIFEST: manifest = fc_cli_manifest_arg(manifest, optarg); break;
    case OPT_MANIFEST_FORMAT: {
      int f = fc_manifest_format_from_name(optarg);
      if (f < 0 || f == FC_MANIFEST_KALDI || f == FC_MANIFEST_LIST)
        fc_cli_usage_error(
            "invalid value '%s' for --manifest-format (want auto, ljspeech, tsv, jsonl)", optarg);
      mopts.format = (fc_manifest_format)f;
      break;
    }
    case OPT_TEXT_COLUMN: mopts.text_column = (int)fc_cli_u32("text-column", optarg, 2, 3); break;
    case 't': kind_name = optarg; break;
    case OPT_VOCAB: to.vocab_path = stdio_path("vocab", optarg, 0); break;
    case OPT_BUILD_VOCAB: to.build_vocab = 1; break;
    case OPT_EXPORT_VOCAB: export_vocab = stdio_path("export-vocab", optarg, 1); break;
    case OPT_TOKENIZER_JSON: to.tokenizer_json = stdio_path("tokenizer-json", optarg, 0); break;
    case OPT_LANG: to.lang = optarg, lang_given = 1; break;
    case OPT_UNICODE:
      unicode = !pick("unicode", optarg, "none", "nfkc") ? FC_UNICODE_NONE : FC_UNICODE_NFKC;
      break;
    case OPT_CASE: fold = pick("case", optarg, "keep", "fold"); break;
    case OPT_WHITESPACE: collapse = !pick("whitespace", optarg, "collapse", "keep"); break;
    case OPT_PUNCT: punct = pick("punct", optarg, "keep", "remove"); break;
    case OPT_PAD: to.pad = optarg; break;
    case OPT_UNK: to.unk = optarg; break;
    case OPT_BOS: to.bos = optarg; break;
    case OPT_EOS: to.eos = optarg; break;
    case OPT_ADD_BOS: to.add_bos = 1; break;
    case OPT_ADD_EOS: to.add_eos = 1; break;
    case OPT_DTYPE:
      if (strcmp(optarg, "auto") == 0)
        to.dtype = 0;
      else if (!(to.dtype = fc_dtype_from_name(optarg)) ||
               (to.dtype != FC_DTYPE_I32 && to.dtype != FC_DTYPE_I16 && to.dtype != FC_DTYPE_U16))
        fc_cli_usage_error("invalid value '%s' for --dtype (want auto, i16, u16, i32)", optarg);
      break;
    case 'j': ro.threads = (int)fc_cli_u32_short(c, "threads", optarg, 1, 1024, longs); break;
    case OPT_BATCH: ro.batch = fc_cli_u32("batch", optarg, 1, 1u << 20); break;
    case OPT_SHARD: shard_spec = optarg; break;
    case OPT_MAX_TEXT: {
      uint64_t v;
      if (fc_cli_parse_u64(optarg, &v, 1) || v == 0 || v > (1ull << 30))
        fc_cli_usage_error("invalid value '%s' for --max-text-bytes (want 1..1GiB)", optarg);
      ro.max_text_bytes = (size_t)v;
      break;
    }
    case OPT_STRICT: to.strict = ro.strict = 1; break;
    case OPT_MAX_FAILED: max_failed = fc_cli_parse_max_failed("max-failed", optarg); break;
    case OPT_JSON: json = 1; break;
    case OPT_PROGRESS: progress = 1; break;
    case 'q': quiet = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_FORCE_NEW_STORE: force_new_store = 1; break;
    case OPT_CHECK_PAGES: check_pages = 1; break;
    default: fc_cli_bad_option(argc, argv, longs);
    }
  }
  if (optind < argc) {
    if (manifest || argc - optind > 1) fc_cli_usage_error("one manifest only");
    if (!argv[optind][0])
      fc_cli_usage_error("'' names no manifest (an empty path: an unset variable?)");
    manifest = argv[optind];
  }
  if (!out_dir) fc_cli_usage_error("no output store (-o STORE)");
  fc_cli_out_store(out_dir);
  if (!manifest) fc_cli_usage_error("no manifest (--manifest FILE, or '-' for stdin)");
  const char *mname = strcmp(manifest, "-") == 0 ? "(stdin)" : manifest; /* said, as featurize */
  const char *reads_stdin = to.vocab_path == dev_stdin       ? "--vocab -"
                            : to.tokenizer_json == dev_stdin ? "--tokenizer-json -"
                                                             : NULL;
  if (reads_stdin && strcmp(manifest, "-") == 0)
    fc_cli_usage_error("%s and the manifest '-' would both read stdin: give one of them as a file",
                       reads_stdin);
  if (export_vocab == dev_stdout && json)
    fc_cli_usage_error(
        "--export-vocab - and --json would both write to stdout: give the vocab a file");
  if (ro.strict && max_failed.text[0])
    fc_cli_usage_error("--strict stops at the first failure: drop --max-failed %s",
                       max_failed.text);
  fc_cli_check_new_store_dir(out_dir, force_new_store, "force-new-store");
  int kind = fc_tok_kind_from_name(kind_name);
  if (kind < 0)
    fc_cli_usage_error("invalid value '%s' for --tokenizer (want chars, phonemes, bpe)", kind_name);
  /* an option of another tokenizer: -t forgotten, and a store of the default chars without it */
  if (lang_given && kind != FC_TOK_PHONEMES)
    fc_cli_usage_error(
        "--lang is the espeak-ng voice of -t phonemes, and the tokenizer is %s (add -t phonemes)",
        kind_name);
  if (to.tokenizer_json && kind != FC_TOK_BPE)
    fc_cli_usage_error(
        "--tokenizer-json is the tokenizer of -t bpe, and the tokenizer is %s (add -t bpe)",
        kind_name);

  /* what fc_tokenizer_create refuses in fc_tok_opts' names, said in the options' */
  if (kind == FC_TOK_BPE && (!to.tokenizer_json || to.vocab_path || to.build_vocab || to.add_bos ||
                             to.add_eos || to.pad || to.unk || to.bos || to.eos))
    fc_cli_usage_error(
        "bpe takes --tokenizer-json FILE and neither a vocab, --add-bos/--add-eos "
        "nor --pad/--unk/--bos/--eos (its special tokens are the tokenizer.json's)");
  if (kind != FC_TOK_BPE && !to.vocab_path == !to.build_vocab)
    fc_cli_usage_error("%s takes exactly one of --vocab FILE and --build-vocab", kind_name);
  const char *const special_opt[] = {"pad", "unk", "bos", "eos"},
                    *special_val[] = {to.pad, to.unk, to.bos, to.eos};
  for (int i = 0; i < 4; i++)
    if (special_val[i] && !*special_val[i]) /* --pad "$PAD" with PAD unset */
      fc_cli_usage_error("the %s symbol is empty (--%s '': an unset variable?)", special_opt[i],
                         special_opt[i]);
  fc_tok_opts d;
  fc_tok_opts_init(&d, (fc_tok_kind)kind);
  to.kind = (fc_tok_kind)kind;
  to.norm = d.norm;
  to.norm_set = 1;
  if (unicode >= 0) to.norm.unicode = (fc_tok_unicode)unicode;
  if (fold >= 0) to.norm.casefold = fold;
  if (collapse >= 0) to.norm.collapse_space = collapse;
  if (punct >= 0) to.norm.punct = (fc_tok_punct)punct;

  char why[1024] = "";
  uint32_t shard_k = 0, shard_n = 1;
  if (shard_spec && fc_shard_parse(shard_spec, &shard_k, &shard_n, why, sizeof why) != 0)
    fc_cli_usage_error("%s", why);
  fc_tokenizer *tok = NULL;
  int rc = fc_tokenizer_create(&to, &tok, why, sizeof why);
  /* "FILE: reason" or "FILE:LINE: reason" of --vocab's or --tokenizer-json's FILE (the library
   * quotes it when odd, as every message's names); on success, a warning (vocab symbols the
   * normalization never leaves in the text), not with -q */
  if (rc || (why[0] && !quiet)) {
    for (char *l = why, *nl; *l; l = nl ? nl + 1 : l + strlen(l)) { /* a line each */
      if ((nl = strchr(l, '\n')) != NULL) *nl = '\0';
      fprintf(stderr, "tokenize: %s\n", l);
    }
    if (!why[0]) fprintf(stderr, "tokenize: %s\n", fc_strerror(rc));
    if (rc) return FC_EXIT_USAGE;
  }
  /* A manifest file is read as the run goes (memory: a batch of lines and the ids seen); stdin,
   * a pipe (<(grep ...), /dev/stdin, a FIFO: its lines come once, and --build-vocab reads the
   * corpus before the run does), or a split store's parts, take it whole. A line over the text's
   * limit and the slack fails unread either way (memory: the limit, not the line). */
  mopts.max_line_bytes = (ro.max_text_bytes ? ro.max_text_bytes : 65536) + FC_TOKENIZE_LINE_SLACK;
  fc_item_list items = {0};
  unsigned split_n = 0;
  struct stat mst;
  const int pipe_manifest =
      stat(manifest, &mst) == 0 && !S_ISREG(mst.st_mode) && !S_ISDIR(mst.st_mode);
  const int stream = strcmp(manifest, "-") != 0 && !pipe_manifest &&
                     !(fc_store_split_count(out_dir, &split_n) == 0 && split_n >= 2);
  rc = stream ? tkm_manifest_readable(manifest, why, sizeof why)
              : fc_manifest_read(manifest, &mopts, &items, why, sizeof why);
  if (rc) {
    fc_cli_warn(mname, "%s", why[0] ? why : fc_strerror(rc));
    fc_tokenizer_free(tok);
    return FC_EXIT_USAGE;
  }
  /* UTF-16 text, an audio file: every line would fail alike, each leaving the store a failure */
  if (stream ? fc_cli_first_line_has_nul(manifest)
             : items.count && items.items[0].line == 1 && items.items[0].why &&
                   strstr(items.items[0].why, "NUL byte"))
    fc_cli_refuse_nul_manifest(manifest, !pipe_manifest && strcmp(manifest, "-") != 0,
                               "an audio file? tokenize reads transcripts: LJSpeech, TSV or JSON "
                               "lines");
  const fc_manifest_format fmt = mopts.format != FC_MANIFEST_AUTO ? mopts.format
                                 : stream                         ? tkm_detected_format(manifest)
                                 : items.count                    ? items.format
                                                                  : FC_MANIFEST_AUTO;
  if (mopts.format == FC_MANIFEST_AUTO && !stream)
    fc_cli_refuse_json_stream(manifest, mname, &items, fmt);
  if (mopts.format == FC_MANIFEST_AUTO) tkm_refuse_textless(mname, fmt);
  tkm_refuse_comma_csv(manifest, fmt); /* Hugging Face's audiofolder metadata.csv */
  tkm_refuse_pandas_index(manifest, fmt); /* to_csv without index=False */
  tkm_refuse_extra_columns(manifest, fmt, mopts.text_column); /* id|text|speaker */
  fc_cli_refuse_json_document(manifest, fmt); /* json.dump of a list */
  /* a TSV's text is the rest of the line (tabs and all), a JSON line's its "text": a column asked
   * for would be ignored, and 'id<TAB>raw<TAB>normalized' stored as one text */
  if (mopts.text_column && (fmt == FC_MANIFEST_TSV || fmt == FC_MANIFEST_JSONL)) {
    char q[1024];
    fc_cli_usage_error(
        "--text-column picks a column of an LJSpeech manifest (id|raw|normalized), "
        "and %s reads as %s",
        fc_cli_quoted(mname, q, sizeof q), fmt == FC_MANIFEST_TSV ? "tsv" : "JSON lines");
  }
  if (stream) {
    ro.manifest = manifest;
    ro.manifest_opts = &mopts;
  }
  /* from here on a signal stops the job, the --shard vocab pass below included (minutes of
   * espeak-ng for phonemes): what was committed is kept, the rest counted not started */
  fc_cli_install_signals();
  ro.stop = (volatile const int *)&fc_cli_signal;
  if (shard_spec) {
    /* A vocab built from the corpus is built from all of it, so every shard has the same config;
     * the phonemes readings kept for the run are the shard's lines' alone. Stopped (FC_EINTR), the
     * vocab is left unbuilt: the run below sees the stop before its own vocab pass reads a line,
     * stores nothing, and counts the shard's lines as not started. */
    ro.shard_k = shard_k, ro.shard_n = shard_n;
    if (to.build_vocab && (rc = fc_tokenizer_build_vocab_from(tok, &items, &ro)) != 0 &&
        rc != FC_EINTR) {
      if (rc == FC_ECONFIG) {
        say_special_collision(mname, &to);
        fc_item_list_free(&items);
        fc_tokenizer_free(tok);
        return FC_EXIT_USAGE;
      }
      fc_cli_warn(mname, "cannot build the vocab: %s", fc_strerror(rc));
      return end_unbegun(FC_EXIT_FAIL, json, &items, tok, kind_name, &max_failed);
    }
    if (stream) /* the run reads its shard */
      mopts.shard_k = shard_k, mopts.shard_n = shard_n;
    else
      fc_item_list_shard(&items, shard_k, shard_n);
  }
  /* A split store (featurize --writers) gets each line's text in its id's part. */
  fc_store **parts = NULL;
  unsigned n_parts = 0;
  char swhy[512] = "";
  if ((rc = fc_cli_check_pages_before_write(out_dir, check_pages)) != 0)
    return end_unbegun(rc, json, &items, tok, kind_name, &max_failed); /* said */
  fc_cli_warn_network_fs(out_dir); /* whatever -q: a store it could corrupt silently */
  if (!quiet) fc_cli_note_prune_running(out_dir);
  fc_cli_room_for_store(out_dir, 0); /* a low soft open-file limit raised first */
  rc = fc_store_open_split(out_dir, FC_STORE_CREATE, 0, &parts, &n_parts, swhy, sizeof swhy);
  if (rc == FC_EINTR && fc_cli_signal) { /* while it waited for cache-prune: nothing done */
    fc_cli_warn(out_dir, "interrupted while waiting for cache-prune to finish: nothing done");
    return end_unbegun(fc_cli_signal_exit(), json, &items, tok, kind_name, &max_failed);
  }
  /* A store this user may only read: checked instead, nothing written (docs/tokenize.md "A store
   * you may only read"). */
  const int write_err = rc;
  const int ro_open = rc == EACCES || rc == EROFS || rc == EPERM;
  const int ro_rc = ro_open ? fc_cli_open_to_check(out_dir, &parts, &n_parts) : 0;
  const int check = ro_open && ro_rc == 0;
  if (check) {
    rc = 0;
    char refused[160];
    if (!quiet)
      fc_cli_warn(out_dir,
                  "cannot write the store (%s): checking that it holds every line instead, "
                  "writing nothing",
                  fc_cli_write_refused(out_dir, write_err, refused, sizeof refused));
  }
  if (rc) {
    char folder[4 * 4096 + 8]; /* the store's folder, quoted */
    if (ro_open && (ro_rc == ENOENT || ro_rc == FC_ENOSTORE))
      fc_cli_warn(out_dir, "cannot create the store: %s", fc_strerror(rc));
    else if (swhy[0] && rc == EMFILE) /* past the hard limit, which no process raises */
      fc_cli_say_fd_limit(swhy, out_dir, 0);
    else if (swhy[0])
      fc_cli_warn(NULL, "%s", swhy);
    else if (rc == ENOENT && fc_cli_store_folder_missing(out_dir, folder, sizeof folder))
      fc_cli_warn(out_dir,
                  "cannot create the store: its folder %s does not exist (a new store is made in "
                  "an existing folder: mkdir -p it)",
                  folder);
    else /* as featurize says it */
      fc_cli_warn(out_dir, "cannot open the store: %s", fc_strerror(rc));
    fc_item_list_free(&items);
    fc_tokenizer_free(tok);
    return FC_EXIT_USAGE;
  }
  if (!check &&
      (rc = fc_cli_mark_shard(parts[0], shard_k, shard_n)) != 0) { /* docs/FORMAT.md "Shards" */
    /* before anything is stored, as the open it belongs to: nothing done */
    fc_cli_warn(out_dir, "cannot record its shard in the store: %s", fc_strerror(rc));
    fc_store_close_split(parts, n_parts);
    fc_item_list_free(&items);
    fc_tokenizer_free(tok);
    return FC_EXIT_USAGE;
  }
  if (stream && n_parts > 1) { /* split by a featurize started beside this run: read it whole */
    ro.manifest = NULL;
    ro.manifest_opts = NULL;
    rc = fc_manifest_read(manifest, &mopts, &items, why, sizeof why);
    if (rc) {
      fc_cli_warn(mname, "%s", why[0] ? why : fc_strerror(rc));
      fc_store_close_split(parts, n_parts);
      fc_item_list_free(&items);
      fc_tokenizer_free(tok);
      return FC_EXIT_USAGE;
    }
  }

  run_ctx ctx = {mname, manifest, json, {0}, 0, {0}, 0};
  fc_cli_progress_init(&ctx.progress, progress, quiet);
  ro.report = on_bad_line;
  ro.report_ud = &ctx;
  ro.check_only = check;
  ro.report_not_stored = on_not_stored;
  if (ctx.progress.on) ro.progress = on_progress;
  ro.progress_ud = &ctx;
  tkc_cfgs before; /* the store's token configs: is this run's config a second of its name? */
  tkc_list(parts, n_parts, &before);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  fc_tokenize_stats st;
  rc = fc_tokenize_run_split(parts, n_parts, tok, &items, &ro, &st);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  fc_cli_progress_end(&ctx.progress);
  if (rc == FC_ECONFIG && to.build_vocab) { /* the vocab refused before a line was stored */
    say_special_collision(ctx.manifest, &to);
    fc_store_close_split(parts, n_parts);
    fc_item_list_free(&items);
    fc_tokenizer_free(tok);
    return FC_EXIT_USAGE;
  }

  int exit_code = FC_EXIT_OK, manifest_stopped = 0;
  /* --max-failed says how many bad lines the run tolerates (of its lines: the shard's); an error
   * that ended the run (a failed write) fails it whatever the tolerance. */
  const int allowed = !rc && fc_cli_failed_allowed(&max_failed, st.failed, st.lines);
  fc_digest cfg;
  char hex[33] = "";
  if (fc_tokenizer_config(tok, NULL, NULL, &cfg) == 0) fc_digest_hex(&cfg, hex);
  if (hex[0] && !check && !quiet && st.processed)
    tkc_say_second_config(out_dir, &before, parts, n_parts, &cfg);
  tkc_free(&before);
  if (rc == FC_EINTR && check) {
    fc_cli_check_interrupted("line", st.lines, st.skipped_existing, st.not_stored, st.failed,
                             st.not_started);
    exit_code = fc_cli_signal_exit();
  } else if (rc == FC_EINTR) {
    fprintf(stderr,
            "tokenize: interrupted: %llu of %llu lines committed (%llu failed), %llu not started\n",
            (unsigned long long)(st.processed + st.skipped_existing), (unsigned long long)st.lines,
            (unsigned long long)st.failed, (unsigned long long)st.not_started);
    exit_code = fc_cli_signal_exit();
  } else if (rc && ro.strict && st.failed) {
    fprintf(stderr, "tokenize: stopped at the first bad line (--strict)\n");
    exit_code = FC_EXIT_FAIL;
  } else if (rc) {
    if (tkm_said_long_line(ro.manifest, rc, to.build_vocab)) {
      /* the manifest, and its line, not the store: that line counts in lines and failed, so that
       * N of M shows the run cut short (the lines after it were not read and count nowhere) */
      manifest_stopped = 1;
      st.lines++, st.failed++, ctx.reported++;
    } else {
      fc_cli_warn(out_dir, "%s%s", fc_strerror(rc), fc_cli_room_hint(rc));
    }
    exit_code = FC_EXIT_FAIL;
  } else if (check &&
             st.not_stored) { /* what is missing cannot be written: as the open's refusal */
    exit_code = FC_EXIT_USAGE;
  } else if (!allowed) {
    exit_code = FC_EXIT_FAIL;
  }
  /* whole or not at all: a failure leaves no half file; and not after a check that lacks lines,
   * which writes nothing (exit 2, as the open's refusal) */
  if (!rc && export_vocab && exit_code != FC_EXIT_USAGE) {
    int err = fc_tokenizer_export_vocab(tok, export_vocab);
    if (err) {
      fc_cli_warn(export_vocab, "cannot write the vocab: %s", fc_strerror(err));
      exit_code = FC_EXIT_FAIL;
    }
  }
  uint64_t ok = st.processed + st.skipped_existing;
  if (st.failed > ctx.reported) /* a failed write's batch, the lines never begun: one line */
    fprintf(stderr, "tokenize: %llu line%s not stored after the failure, counted as failed\n",
            (unsigned long long)(st.failed - ctx.reported),
            st.failed - ctx.reported == 1 ? "" : "s");
  if (check && rc == FC_EINTR) {
    /* said above: a check commits nothing, so no `done` line */
  } else if (check && st.lines) {
    fc_cli_check_summary(out_dir, "line", st.lines, st.skipped_existing, st.not_stored,
                         ctx.not_stored < FC_CLI_NOT_STORED_SAID ? ctx.not_stored
                                                                 : FC_CLI_NOT_STORED_SAID,
                         st.failed, write_err, &max_failed, allowed, quiet);
  } else if (!quiet || exit_code == FC_EXIT_FAIL || st.failed) {
    /* exit 1 always comes with its `done: N of M` line, and so do failures a tolerance allowed */
    char not_started[48] = "";
    const char *tolerance =
        st.failed && !rc && max_failed.text[0] ? (allowed ? ", allowed by" : ", more than") : "";
    if (st.not_started)
      snprintf(not_started, sizeof not_started, ", %llu not started",
               (unsigned long long)st.not_started);
    if (rc == 0 && st.lines == 0) { /* an empty file (the wrong one?), or a small one's shard */
      fputs("tokenize: nothing to do: ", stderr);
      if (shard_spec) fprintf(stderr, "shard %u/%u of ", shard_k, shard_n);
      fc_cli_put_name(stderr, ctx.manifest);
      fputs(" holds no lines\n", stderr);
    } else if (rc == 0 && st.processed == 0 && st.failed == 0 && st.entries == 0)
      fprintf(stderr, "tokenize: nothing to do: all %llu line%s already stored (config %s)\n",
              (unsigned long long)st.lines, st.lines == 1 ? "" : "s", hex);
    else
      fprintf(stderr,
              "tokenize: done: %llu of %llu (%llu new, %llu already stored, %llu failed%s%s%s, "
              "%llu token%s)%s%s\n",
              (unsigned long long)ok, (unsigned long long)st.lines,
              (unsigned long long)st.processed, (unsigned long long)st.skipped_existing,
              (unsigned long long)st.failed, tolerance, tolerance[0] ? " --max-failed " : "",
              tolerance[0] ? max_failed.text : "", (unsigned long long)st.tokens,
              st.tokens == 1 ? "" : "s",
              manifest_stopped ? ", stopped at a manifest line it could not read, the lines "
                                 "after it not read"
                               : "",
              not_started);
    if (st.unknown && fc_tokenizer_kind(tok) == FC_TOK_BPE) /* unk_token, or dropped without */
      fprintf(stderr,
              "tokenize: %llu character%s not in the tokenizer.json's vocab (mapped to its "
              "unk_token, or dropped where it has none)\n",
              (unsigned long long)st.unknown, st.unknown == 1 ? "" : "s");
    else if (st.unknown)
      fprintf(stderr, "tokenize: %llu unknown symbol%s mapped to unk\n",
              (unsigned long long)st.unknown, st.unknown == 1 ? "" : "s");
  }
  if (json)
    print_json(&st, wall, hex, kind_name, check, &max_failed, exit_code == FC_EXIT_OK,
               &ctx.failures);
  fc_cli_failures_free(&ctx.failures);
  fc_store_close_split(parts, n_parts);
  fc_item_list_free(&items);
  fc_tokenizer_free(tok);
  return fc_cli_stdout_status(exit_code); /* the --json object lost is a failure */
}
