/* cache-merge — several featcache stores (e.g. the shards of one corpus) into one
 * (docs/cache-merge.md). A thin main over fc_merge_run (libcache/core/merge/). */
#include "cmd/cli.h"

#include "featcache/fc_merge.h"

#include <sys/stat.h>

enum {
  OPT_PREFER = 256,
  OPT_PARTIAL,
  OPT_STRICT,
  OPT_BATCH,
  OPT_NOLOCK,
  OPT_JSON,
  OPT_PROGRESS,
  OPT_VERSION,
  OPT_FORCE_NEW_STORE
};

static const fc_cli_opt options[] =
    {{NULL, 0, 0, NULL, "Output:"},
     {"output", 'o', required_argument, "OUT", "the merged store (created if missing)"},
     {"force-new-store", OPT_FORCE_NEW_STORE, no_argument, NULL,
      "create OUT even in a non-empty directory that holds no store"},
     {NULL, 0, 0, NULL, "Conflicts (an id whose audio or text entry differs between stores):"},
     {"prefer", OPT_PREFER, required_argument, "WHO",
      "first, last or a STORE among the inputs wins (default: refuse)"},
     {NULL, 0, 0, NULL, "Shards (the stores of a featurize or tokenize run over shards):"},
     {"partial", OPT_PARTIAL, no_argument, NULL,
      "merge shards that are not every K of N (default: refuse, naming the missing)"},
     {NULL, 0, 0, NULL, "Configs:"},
     {"strict", OPT_STRICT, no_argument, NULL,
      "refuse stores whose mel or token configs differ (a config that lacks some of the ids; "
      "default: say so and merge)"},
     {NULL, 0, 0, NULL, "Running:"},
     {"batch", OPT_BATCH, required_argument, "N", "entries per write transaction (default 1024)"},
     {"nolock", OPT_NOLOCK, no_argument, NULL,
      "open the inputs with MDB_NOLOCK: stores on NFS or Lustre that nobody writes any more "
      "(automatic when an input is not writable)"},
     {"quiet", 'q', no_argument, NULL, "no progress, no summary unless something failed"},
     {"progress", OPT_PROGRESS, no_argument, NULL, "progress line even when stderr is no terminal"},
     {"json", OPT_JSON, no_argument, NULL, "print a JSON summary on stdout"},
     {"help", 'h', no_argument, NULL, "show this help and exit"},
     {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
     {NULL, 0, 0, NULL, NULL}};

static const char synopsis[] = "cache-merge [options] -o OUT STORE...";
static const char description[] =
    "Merge featcache stores into one: records are stored once per content key, configs and\n"
    "vocabularies are unioned, and an utterance id whose audio or text entry differs between\n"
    "stores is reported and refused unless --prefer says which store wins. Interrupted merges\n"
    "resume where they stopped; a finished one is not repeated.";
static const char footer[] =
    "Exit status: 0 merged (or nothing to do); 1 conflicts refused (nothing written), damaged\n"
    "records left out, shards whose vocabularies were built apart, mel or token configs held\n"
    "apart under --strict (nothing written), a failed write (committed\n"
    "batches are kept; run again to finish), or the --json summary that could not be written;\n"
    "2 usage error, a store that cannot be opened, a store given twice or the output among the\n"
    "inputs, or shards missing (see --partial); 130/143 interrupted (committed batches are\n"
    "kept; run again to finish).\n"
    "Manual: man cache-merge.";

typedef struct ctx {
  const char *const *inputs;
  const char *out;
  fc_cli_progress progress;
  /* what to do about configs merged all the same: said after the merge, only when it went on
   * (conflicts may still refuse it after the configs were said) */
  char later[2048];
} ctx;

__attribute__((format(printf, 2, 3))) static void say_later(ctx *c, const char *fmt, ...) {
  size_t at = strlen(c->later);
  va_list ap;
  va_start(ap, fmt);
  if (at + 1 < sizeof c->later) vsnprintf(c->later + at, sizeof c->later - at, fmt, ap);
  va_end(ap);
}

static const char *holder(const ctx *c, long i) { return i < 0 ? c->out : c->inputs[i]; }

/* A store's name in a message, quoted as the tools quote names (fc_cli_quoted). */
typedef struct qname {
  char s[1024];
} qname;
static const char *qn(const char *name, qname *q) { return fc_cli_quoted(name, q->s, sizeof q->s); }
/* The same before "'s": without the slashes that end it (shards/s0/, as a pattern that ends in a
 * slash gives it, is said shards/s0's, not shards/s0/'s). */
static const char *qn_of(const char *name, qname *q) {
  char bare[1024];
  size_t n = strlen(name);
  while (n > 1 && name[n - 1] == '/') n--;
  if (n >= sizeof bare) return qn(name, q);
  memcpy(bare, name, n);
  bare[n] = '\0';
  return qn(bare, q);
}

static void on_conflict(const fc_merge_conflict *cf, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  const char *what = cf->db == FC_DB_AUDIO ? "audio" : cf->db == FC_DB_TEXT ? "text" : "meta";
  /* the id in single quotes, or in double quotes with C escapes when it needs them */
  char id[FC_ID_MAX + 1], qid[4 * FC_ID_MAX + 3];
  const size_t n = cf->key_len < sizeof id ? cf->key_len : sizeof id - 1;
  memcpy(id, cf->key, n);
  id[n] = '\0';
  const int plain = fc_quote_name(id, qid, sizeof qid) == strlen(id);
  qname qb, qa, qw;
  fprintf(stderr, "%s: %s: %s entry %s%s%s differs from %s's: %s; ", fc_cli_tool,
          qn(holder(c, cf->b), &qb), what, plain ? "'" : "", qid, plain ? "'" : "",
          qn_of(holder(c, cf->a), &qa), cf->detail);
  if (cf->winner == -2)
    fputs("refused\n", stderr);
  else
    fprintf(stderr, "kept %s's\n", qn_of(holder(c, cf->winner), &qw));
}

static void on_bad(long input, int db, const char *key_hex, const char *why, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  qname q;
  if (db == FC_DB_AUDIO || db == FC_DB_TEXT) /* an entry: left out, its id's records orphans */
    fprintf(stderr, "%s: %s: %s entry '%s': damaged entry left out: %s\n", fc_cli_tool,
            qn(c->inputs[input], &q), db == FC_DB_AUDIO ? "audio" : "text", key_hex, why);
  else
    fprintf(stderr, "%s: %s: %s %s: damaged record skipped: %s\n", fc_cli_tool,
            qn(c->inputs[input], &q), db == FC_DB_FEAT ? "feat" : "tok", key_hex, why);
}

static void on_shard_twice(uint32_t k, uint32_t n, size_t a, size_t b, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  qname qb, qa;
  fprintf(stderr, "%s: %s: holds shard %u/%u, as %s does (a copy? its entries are stored once)\n",
          fc_cli_tool, qn(c->inputs[b], &qb), k, n, qn(c->inputs[a], &qa));
}

/* Token configs of one name built per store (a vocabulary built in each shard): what, and the fix */
static void on_token_configs(const char *name, const char *detail, int refused, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  fprintf(stderr,
          "%s: the inputs hold %s: a vocabulary built in each, so each config holds the tokens of "
          "its own stores' ids, and tokens=\"%s\" would not say which\n",
          fc_cli_tool, detail, name);
  if (refused)
    fprintf(stderr,
            "%s: build the vocabulary once (tokenize --build-vocab --export-vocab %s.txt -o "
            "SCRATCH MANIFEST, over the whole manifest), then in each shard drop its own "
            "(cache-config --drop %s SHARD) and tokenize it with --vocab %s.txt\n",
            fc_cli_tool, name, name, name);
  else
    say_later(c,
              "%s: merged all the same (the stores record no shards): for one vocabulary, tokenize "
              "the merged store with --vocab FILE and drop the others (cache-config --drop)\n",
              fc_cli_tool);
}

/* The same where the configs differ in more than their vocabulary: shards tokenized with other
 * options (a task run with --add-bos, --case fold); diff says what differs */
static void on_token_configs_options(const char *name, const char *detail, const char *diff,
                                     int refused, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  fprintf(stderr,
          "%s: the inputs hold %s, tokenized with other options (%s): each config holds the "
          "tokens of its own stores' ids, and tokens=\"%s\" would not say which\n",
          fc_cli_tool, detail, diff, name);
  if (refused)
    fprintf(stderr,
            "%s: tokenize every shard with the same options: drop the other config from the "
            "shards that hold it (cache-config --drop DIGEST SHARD) and tokenize them again\n",
            fc_cli_tool);
  else
    say_later(c,
              "%s: merged all the same (the stores record no shards): for one config, tokenize "
              "the merged store with the options you want and drop the others (cache-config "
              "--drop)\n",
              fc_cli_tool);
}

/* The same when OUT holds configs of the name that no input holds: an older vocabulary there, not
 * one built in each input; the fix is OUT's */
static void on_output_token_configs(const char *name, const char *out_hex, const char *in_hex,
                                    int refused, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  qname q;
  const char *qo = qn(c->out, &q);
  const int one = !strchr(out_hex, ',');
  fprintf(stderr,
          "%s: %s holds %s '%s' token config%s that no input holds (an older vocabulary?): %s, "
          "beside the inputs' %s; merged, tokens=\"%s\" would not say which\n",
          fc_cli_tool, qo, one ? "a" : "other", name, one ? "" : "s", out_hex, in_hex, name);
  if (refused)
    fprintf(stderr,
            "%s: drop %s from %s first (cache-config --drop %s %s%s), or merge into a new store\n",
            fc_cli_tool, one ? "it" : "them", qo, one ? out_hex : "DIGEST", qo,
            one ? "" : ", for each of its DIGESTs above");
  else
    say_later(c,
              "%s: merged all the same (the stores record no shards): for one vocabulary, drop %s "
              "from %s (cache-config --drop %s %s%s)\n",
              fc_cli_tool, one ? "it" : "them", qo, one ? out_hex : "DIGEST", qo,
              one ? "" : ", for each of its DIGESTs above");
}

/* The converse: every input holds the configs of the name that OUT holds and others beside them
 * (a vocabulary built again in each shard after the manifest grew, OUT a former merge's) */
static void on_output_lacks_token_configs(const char *name, const char *out_hex, const char *in_hex,
                                          int refused, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  qname q;
  const char *qo = qn(c->out, &q);
  const int one = !strchr(out_hex, ',');
  fprintf(stderr,
          "%s: %s lacks %s '%s' token config%s that every input holds: %s, beside %s, which %s "
          "holds too (a vocabulary built again, over a manifest that grew or a line fixed?); "
          "merged, tokens=\"%s\" would not say which\n",
          fc_cli_tool, qo, strchr(in_hex, ',') ? "the" : "a", name, strchr(in_hex, ',') ? "s" : "",
          in_hex, out_hex, qo, name);
  if (refused)
    fprintf(stderr,
            "%s: for one vocabulary, drop %s from each input and from %s (cache-config --drop "
            "%s STORE%s), then merge again\n",
            fc_cli_tool, one ? out_hex : "those", qo, one ? out_hex : "DIGEST",
            one ? "" : ", for each of them");
  else
    say_later(c,
              "%s: merged all the same (the stores record no shards): for one vocabulary, drop "
              "%s from %s (cache-config --drop %s %s%s)\n",
              fc_cli_tool, one ? out_hex : "those", qo, one ? out_hex : "DIGEST", qo,
              one ? "" : ", for each of them");
}

/* The same where some were made by an older tokenize (a shard tokenized before an upgrade): its
 * ids are out of date, and no option makes it one with the others; the fix is to tokenize it
 * again with this one */
static void on_token_configs_stale(const char *name, const char *detail, const char *stale,
                                   const char *version, int refused, void *user) {
  ctx *c = user;
  fc_cli_progress_clear(&c->progress);
  qname q;
  const char *qo = qn(c->out, &q);
  const int one = !strchr(stale, ',');
  fprintf(stderr,
          "%s: the inputs hold %s: %s %s made by an older tokenize (%s): %s ids are out of date, "
          "and tokens=\"%s\" would not say which\n",
          fc_cli_tool, detail, stale, one ? "was" : "were", version, one ? "its" : "their", name);
  if (refused)
    fprintf(stderr,
            "%s: tokenize the stores that hold %s again with this tokenize: drop %s from them "
            "(cache-config --drop %s STORE) and run their tokenize again\n",
            fc_cli_tool, one ? "it" : "them", one ? "it" : "each", one ? stale : "DIGEST");
  else
    say_later(c,
              "%s: merged all the same (the stores record no shards): tokenize %s again with this "
              "tokenize over the whole manifest, then drop %s (cache-config --drop %s %s)\n",
              fc_cli_tool, qo, one ? "it" : "each", one ? stale : "DIGEST", qo);
}

/* Token configs of one name that every store holds all of (each shard tokenized again with
 * another vocabulary): merged whole, but the loader's tokens="NAME" wants a digest; said after the
 * merge went on, with the drop that leaves one */
static void on_token_configs_together(const char *name, size_t configs, const char *hexes,
                                      void *user) {
  ctx *c = user;
  qname q;
  const char *qo = qn(c->out, &q);
  say_later(c,
            "%s: %s holds %zu '%s' token configs, every one of them in every store (each "
            "tokenized again, with another vocabulary?): %s; the loader's tokens=\"%s\" would "
            "not say which (it wants a digest): keep one, dropping the others (cache-config "
            "--drop DIGEST %s)\n",
            fc_cli_tool, qo, configs, name, hexes, name, qo);
}

/* Configs of one kind that not every store holds (mel: a shard featurized by another version, or
 * with another --fmax; tokens: shards tokenized with other tokenizers): what, what the loader
 * makes of it, and the fix. what: "features" or "tokens", tool: the tool that makes them, over:
 * what it reads whole ("corpus", "manifest"). */
static void configs_apart(ctx *c, const char *detail, const char *loader, int refused,
                          const char *what, const char *tool, const char *over) {
  fc_cli_progress_clear(&c->progress);
  qname q;
  const char *qo = qn(c->out, &q);
  fprintf(stderr,
          "%s: the stores hold %s: merged, a config holds %s only for the ids of the stores that "
          "hold it\n",
          fc_cli_tool, detail, what);
  fprintf(stderr, "%s: %s\n", fc_cli_tool, loader);
  if (refused)
    fprintf(stderr,
            "%s: %s the stores that lack a config with it (or drop it where it is: cache-config "
            "--drop DIGEST STORE), or merge without --strict and complete %s\n",
            fc_cli_tool, tool, qo);
  else
    say_later(c,
              "%s: merged all the same (--strict refuses): for one config, %s %s with it over the "
              "whole %s (what is stored is skipped), then drop the others (cache-config --drop "
              "DIGEST %s)\n",
              fc_cli_tool, tool, qo, over, qo);
}

static void on_mel_configs(const char *detail, const char *loader, int refused, void *user) {
  configs_apart(user, detail, loader, refused, "features", "featurize", "corpus");
}

static void on_token_configs_held_apart(const char *detail, const char *loader, int refused,
                                        void *user) {
  configs_apart(user, detail, loader, refused, "tokens", "tokenize", "manifest");
}

static uint64_t sum(const uint64_t *v) {
  uint64_t s = 0;
  for (int i = 0; i < FC_DB_COUNT; i++) s += v[i];
  return s;
}

static void on_progress(const fc_merge_stats *st, void *user) {
  ctx *c = user;
  if (st->pass == 1) /* nothing written yet: the inputs read for conflicts and counted */
    fc_cli_progress_show(&c->progress, "%s: reading the inputs for conflicts: %llu of %llu entries",
                         fc_cli_tool, (unsigned long long)st->first_read,
                         (unsigned long long)st->first_total);
  else
    fc_cli_progress_show(&c->progress, "%s: %llu of %llu entries, %.1f MB written", fc_cli_tool,
                         (unsigned long long)(sum(st->copied) + sum(st->present)),
                         (unsigned long long)st->total, st->bytes_copied / 1e6);
}

static void json_dbs(const char *name, const uint64_t *v) {
  printf(",\"%s\":{\"meta\":%llu,\"audio\":%llu,\"text\":%llu,\"feat\":%llu,\"tok\":%llu}", name,
         (unsigned long long)v[FC_DB_META], (unsigned long long)v[FC_DB_AUDIO],
         (unsigned long long)v[FC_DB_TEXT], (unsigned long long)v[FC_DB_FEAT],
         (unsigned long long)v[FC_DB_TOK]);
}

/* The first input that holds no store, said as every tool says it (fc_cli_say_not_a_store: a
 * file, a folder without data.mdb; the library's open said "cannot open the store: Not a
 * directory", "... FC_ENOSTORE: ..."): 1, else 0; one that is not there is the open's to say. An
 * LMDB environment nothing was ever committed to (a shard whose featurize or tokenize was killed
 * before its first commit, a Slurm task stopped at its start; "not in the featcache format" to the
 * library) is said into why (1): it holds nothing to merge, and its run is to be made again. */
static int no_store_input(const char *const *inputs, size_t n, char *why, size_t why_len) {
  for (size_t i = 0; i < n; i++) {
    struct stat sb;
    char mdb[4096];
    /* a split store's part its writer never wrote: said as the other tools say it */
    if (fc_cli_say_unwritten_part(inputs[i], NULL, "nothing merged")) return 1;
    if (stat(inputs[i], &sb) != 0 && errno == ENOENT && strpbrk(inputs[i], "*?[")) {
      /* shards/s* before any shard was made: the shell passed the pattern as it was */
      qname q;
      int w = snprintf(why, why_len,
                       "%s: no such store: a pattern that matched nothing (the shell passes it "
                       "as it is: no store made there yet?); nothing merged",
                       qn(inputs[i], &q));
      if (w < 0 || (size_t)w >= why_len) why[why_len - 1] = '\0'; /* cut short: still said */
      return 1;
    }
    if (stat(inputs[i], &sb) != 0) continue;
    int rc = !S_ISDIR(sb.st_mode) ? ENOTDIR
             : snprintf(mdb, sizeof mdb, "%s/data.mdb", inputs[i]) < (int)sizeof mdb &&
                     stat(mdb, &sb) != 0 && errno == ENOENT
                 ? FC_ENOSTORE
                 : 0;
    if (rc && fc_cli_say_not_a_store(inputs[i], rc)) return 1;
    if (!fc_cli_env_empty(inputs[i])) continue;
    qname q;
    int w = snprintf(
        why, why_len,
        "%s: an empty store: nothing was ever committed to it (its writer stopped before "
        "its first commit?): nothing merged; run its featurize or tokenize again (they take "
        "it as new), or merge without it",
        qn(inputs[i], &q));
    if (w < 0 || (size_t)w >= why_len) why[why_len - 1] = '\0'; /* cut short: still said */
    return 1;
  }
  return 0;
}

/* OUT not there, in a folder not there: the merge would read every input for conflicts, then fail
 * to create it. Said in why as featurize says it (rc EINVAL: nothing done, exit 2). */
static int out_folder_missing(const char *out, char *why, size_t why_len) {
  struct stat sb;
  char folder[4 * 4096 + 8];
  if (lstat(out, &sb) == 0 || !fc_cli_store_folder_missing(out, folder, sizeof folder)) return 0;
  qname q;
  int w = snprintf(why, why_len,
                   "%s: cannot create the output store: its folder %s does not exist (a new store "
                   "is made in an existing folder: mkdir -p it)",
                   qn(out, &q), folder);
  if (w < 0 || (size_t)w >= why_len) why[why_len - 1] = '\0'; /* cut short: still said */
  return 1;
}

int main(int argc, char **argv) {
  fc_cli_tool = "cache-merge";
  fc_cli_std_fds();
  enum { NOPT = sizeof options / sizeof options[0] };
  struct option longs[NOPT + 1];
  char shorts[3 * NOPT + 3];
  shorts[0] = ':';
  fc_cli_getopt_tables(options, longs, shorts + 1);

  fc_merge_opts mo;
  fc_merge_opts_init(&mo);
  const char *out = NULL, *prefer = NULL;
  int json = 0, quiet = 0, progress = 0, force_new_store = 0;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case OPT_PREFER: prefer = optarg; break;
    case OPT_PARTIAL: mo.partial = 1; break;
    case OPT_STRICT: mo.strict = 1; break;
    case OPT_NOLOCK: mo.nolock = 1; break;
    case OPT_BATCH: mo.batch_records = fc_cli_u32("batch", optarg, 1, 1u << 24); break;
    case OPT_JSON: json = 1; break;
    case 'q': quiet = 1; break;
    case OPT_PROGRESS: progress = 1; break;
    case OPT_FORCE_NEW_STORE: force_new_store = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    default: fc_cli_bad_option(argc, argv, longs);
    }
  }
  if (!out) fc_cli_usage_error("no output store (-o OUT)");
  fc_cli_out_store(out);
  if (optind >= argc) fc_cli_usage_error("no input STORE given");
  fc_cli_no_empty_stores(argc, argv, optind);
  size_t n = (size_t)(argc - optind), given = n; /* n: the stores opened, a split store's parts */
  /* a split store is merged as its parts */
  const char *const *inputs = fc_cli_expand_stores((const char *const *)(argv + optind), &n);
  /* a store named twice is said here, naming the STOREs as given (fc_merge_run names parts) */
  char twice[1024];
  int named_twice = fc_cli_store_twice((const char *const *)(argv + optind), given, inputs, n,
                                       twice, sizeof twice);
  if (prefer) {
    if (strcmp(prefer, "first") == 0)
      mo.prefer = FC_MERGE_FIRST;
    else if (strcmp(prefer, "last") == 0)
      mo.prefer = FC_MERGE_LAST;
    else {
      /* a split store wins by all its parts: the engine takes a range of inputs, so they must
       * be given one after another (in any order; fc_cli_expand_stores lists them so) */
      unsigned parts = 0;
      if (fc_store_split_count(prefer, &parts) != 0 || parts < 2) parts = 1;
      struct stat *ids = calloc(n, sizeof *ids); /* the inputs' (st_dev, st_ino), stat once */
      if (!ids) {
        fc_cli_warn(NULL, "%s", fc_strerror(ENOMEM));
        return FC_EXIT_USAGE;
      }
      for (size_t i = 0; i < n; i++)
        if (stat(inputs[i], &ids[i]) != 0) ids[i].st_dev = 0, ids[i].st_ino = 0;
      size_t lo = n, hi = 0;
      for (unsigned j = 0; j < parts; j++) {
        char part[4096];
        struct stat sp;
        const char *who = prefer;
        if (parts > 1 && fc_store_part_path(prefer, j, part, sizeof part) == 0) who = part;
        if (stat(who, &sp) != 0) {
          free(ids);
          fc_cli_usage_error(
              "invalid value '%s' for --prefer (want first, last or one of the "
              "input stores)",
              prefer);
        }
        size_t at = n;
        for (size_t i = 0; i < n; i++)
          if (ids[i].st_dev == sp.st_dev && ids[i].st_ino == sp.st_ino) at = i;
        if (at == n) {
          free(ids);
          fc_cli_usage_error("--prefer %s: not one of the input stores", prefer);
        }
        if (at < lo) lo = at;
        if (at > hi) hi = at;
      }
      free(ids);
      if (hi - lo + 1 != parts)
        fc_cli_usage_error(
            "--prefer %s: its parts are not given together (give %s itself, or "
            "its parts one after another)",
            prefer, prefer);
      mo.prefer = FC_MERGE_STORE;
      mo.prefer_index = lo;
      mo.prefer_count = parts;
    }
  }

  ctx cx = {inputs, out, {0}, ""};
  fc_cli_progress_init(&cx.progress, progress, quiet);
  mo.on_conflict = on_conflict;
  mo.on_bad_record = on_bad;
  mo.on_progress = on_progress;
  mo.on_shard_twice = on_shard_twice;
  mo.on_token_configs = on_token_configs;
  mo.on_output_token_configs = on_output_token_configs;
  mo.on_output_lacks_token_configs = on_output_lacks_token_configs;
  mo.on_token_configs_options = on_token_configs_options;
  mo.on_token_configs_together = on_token_configs_together;
  mo.on_token_configs_stale = on_token_configs_stale;
  mo.on_mel_configs = on_mel_configs;
  mo.on_token_configs_held_apart = on_token_configs_held_apart;
  mo.user = &cx;
  fc_cli_install_signals();
  mo.stop = &fc_cli_signal;
  fc_merge_stats st;
  char why[1024] = "";
  int rc = EINVAL, said = 0; /* said: the error is said already */
  if (named_twice) {
    memset(&st, 0, sizeof st);
    snprintf(why, sizeof why, "%s", twice);
  } else if (no_store_input(inputs, n, why, sizeof why)) { /* rc EINVAL: nothing done, exit 2 */
    memset(&st, 0, sizeof st);
    said = !why[0];
  } else if (out_folder_missing(out, why, sizeof why)) { /* said before the inputs are read */
    memset(&st, 0, sizeof st);
  } else if (fc_cli_new_store_dir_refused(out, force_new_store, "force-new-store")) {
    /* -o naming the shards' folder, the corpus: refused as featurize does (rc EINVAL, exit 2) */
    memset(&st, 0, sizeof st);
    said = 1;
  } else {
    fc_cli_warn_network_fs(out); /* whatever -q: OUT written over the network */
    if (!quiet) fc_cli_note_prune_running(out);
    rc = fc_merge_run(out, inputs, n, &mo, &st, why, sizeof why);
  }
  fc_cli_progress_clear(&cx.progress);

  uint64_t copied = sum(st.copied), present = sum(st.present);
  if (cx.later[0] && (rc == 0 || copied + present > 0)) fputs(cx.later, stderr);
  qname qo;
  const char *qout = qn(out, &qo); /* OUT in the lines below */
  /* every entry counted once: what this run did not merge (left out as damaged, or not reached
   * after an error or a stop) is the rest of the total */
  uint64_t failed = st.total > copied + present ? st.total - copied - present : 0;
  const char *status = "done";
  int code = FC_EXIT_OK;
  if (rc == FC_EINTR && strstr(why, "waiting for cache-prune")) { /* OUT's writer lock */
    fprintf(stderr, "%s: %s: nothing done\n", fc_cli_tool, why);
    status = "interrupted";
    code = fc_cli_signal_exit();
  } else if (rc == FC_EINTR && st.total == 0 && copied + present == 0) { /* in the first pass */
    fprintf(stderr, "%s: interrupted: nothing written (%s); run again to merge\n", fc_cli_tool,
            st.pass == 0 ? "the stores' pages were being checked"
                         : "the inputs were being read for conflicts");
    status = "interrupted";
    code = fc_cli_signal_exit();
  } else if (rc == FC_EINTR) {
    fprintf(
        stderr,
        "%s: interrupted: %llu of %llu entries committed to %s, %llu not started; run again to finish\n",
        fc_cli_tool, (unsigned long long)(copied + present), (unsigned long long)st.total, qout,
        (unsigned long long)failed);
    status = "interrupted";
    code = fc_cli_signal_exit();
  } else if (rc == FC_EFORMAT && st.pages_refused) { /* said by fc_merge_run: the store, the page */
    fprintf(stderr, "%s: %s\n", fc_cli_tool, why);
    status = "refused";
    code = FC_EXIT_FAIL;
  } else if (rc == FC_ECONFLICT) {
    fprintf(stderr, "%s: %s (choose a winner with --prefer first|last|STORE)\n", fc_cli_tool, why);
    status = "refused";
    code = FC_EXIT_FAIL;
  } else if (rc == FC_ECONFIG && st.shards_missing && !mo.partial) { /* the inputs: nothing done */
    fprintf(stderr, "%s: %s; nothing merged (give the missing shards too, or --partial)\n",
            fc_cli_tool, why);
    status = "refused";
    code = FC_EXIT_USAGE;
  } else if (rc == FC_ECONFIG &&
             (st.token_configs_apart || st.mel_configs_apart || st.token_configs_held_apart)) {
    /* said by on_token_configs, on_mel_configs */
    fprintf(stderr, "%s: nothing merged\n", fc_cli_tool);
    status = "refused";
    code = FC_EXIT_FAIL;
  } else if (rc == EINVAL || (rc && st.commits == 0 && copied == 0 &&
                              (strstr(why, "cannot open") || strstr(why, "cannot create")))) {
    /* nothing was written: the stores could not be opened (usage / configuration) */
    if (!said) fc_cli_warn(NULL, "%s", why[0] ? why : fc_strerror(rc));
    if (!json) return FC_EXIT_USAGE;
    status = "error";
    code = FC_EXIT_USAGE;
  } else if (rc) { /* a failed write or commit: what was committed stays */
    fc_cli_warn(NULL, "%s%s", why[0] ? why : fc_strerror(rc), fc_cli_room_hint(rc));
    fprintf(stderr, "%s: done: %llu of %llu entries in %s (%llu failed); run again to finish\n",
            fc_cli_tool, (unsigned long long)(copied + present), (unsigned long long)st.total, qout,
            (unsigned long long)failed);
    status = "error";
    code = FC_EXIT_FAIL;
  } else if (st.dropped) {
    fprintf(stderr,
            "%s: done: %llu of %llu entries in %s (%llu failed: %llu damaged record%s left out)\n",
            fc_cli_tool, (unsigned long long)(copied + present), (unsigned long long)st.total, qout,
            (unsigned long long)failed, (unsigned long long)st.dropped, st.dropped == 1 ? "" : "s");
    code = FC_EXIT_FAIL;
  } else if (copied == 0 && !st.failures_copied && !st.failures_cleared) {
    status = "nothing to do";
    if (!quiet && st.total == 0) /* not "already in OUT": there was nothing to put there */
      fprintf(stderr, "%s: nothing to do: the %zu store%s hold%s no entries\n", fc_cli_tool, given,
              given == 1 ? "" : "s", given == 1 ? "s" : "");
    else if (!quiet)
      fprintf(stderr, "%s: nothing to do: all %llu entries of the %zu store%s already in %s\n",
              fc_cli_tool, (unsigned long long)present, given, given == 1 ? "" : "s", qout);
  } else if (!quiet) {
    double mbs = st.wall_seconds > 0 ? st.bytes_copied / 1e6 / st.wall_seconds : 0;
    fprintf(stderr,
            "%s: done: %llu of %llu entries in %s (%llu feat, %llu tok, %llu audio, %llu text, "
            "%llu meta copied; %llu already there; %llu duplicate key%s stored once); %.1f MB in "
            "%.2f s, %.0f MB/s\n",
            fc_cli_tool, (unsigned long long)(copied + present), (unsigned long long)st.total, qout,
            (unsigned long long)st.copied[FC_DB_FEAT], (unsigned long long)st.copied[FC_DB_TOK],
            (unsigned long long)st.copied[FC_DB_AUDIO], (unsigned long long)st.copied[FC_DB_TEXT],
            (unsigned long long)st.copied[FC_DB_META], (unsigned long long)present,
            (unsigned long long)sum(st.duplicates), sum(st.duplicates) == 1 ? "" : "s",
            st.bytes_copied / 1e6, st.wall_seconds, mbs);
    if (st.failures_copied || st.failures_cleared)
      fprintf(stderr, "%s: failure records: %llu copied, %llu cleared (stored in an input)\n",
              fc_cli_tool, (unsigned long long)st.failures_copied,
              (unsigned long long)st.failures_cleared);
  }
  if (!rc && st.changed_meanwhile) { /* said one by one through on_conflict */
    fprintf(stderr,
            "%s: %llu entr%s put into %s by another process during the merge differ%s from the "
            "inputs': %s kept; run cache-merge again to see %s (--prefer chooses)\n",
            fc_cli_tool, (unsigned long long)st.changed_meanwhile,
            st.changed_meanwhile == 1 ? "y" : "ies", qout, st.changed_meanwhile == 1 ? "s" : "",
            qout, st.changed_meanwhile == 1 ? "it as a conflict" : "them as conflicts");
    code = FC_EXIT_FAIL;
  }
  if (json) {
    printf("{\"output\":");
    fc_json_write_string(stdout, out);
    printf(",\"inputs\":%zu,\"status\":\"%s\",\"total\":%llu,\"failed\":%llu", given, status,
           (unsigned long long)st.total, (unsigned long long)failed);
    json_dbs("copied", st.copied);
    json_dbs("present", st.present);
    json_dbs("duplicates", st.duplicates);
    printf(
        ",\"conflicts\":%llu,\"resolved\":%llu,\"bad_records\":%llu,\"dropped\":%llu,"
        "\"bytes_in\":%llu,\"bytes_copied\":%llu,\"commits\":%llu,\"wall_seconds\":%.6f,"
        "\"failures_copied\":%llu,\"failures_cleared\":%llu,\"shards_missing\":%llu,"
        "\"shards_twice\":%llu,\"token_configs_apart\":%llu,\"mel_configs_apart\":%llu,\"token_configs_held_apart\":%llu,"
        "\"changed_meanwhile\":%llu}\n",
        (unsigned long long)st.conflicts, (unsigned long long)st.resolved,
        (unsigned long long)st.bad_records, (unsigned long long)st.dropped,
        (unsigned long long)st.bytes_in, (unsigned long long)st.bytes_copied,
        (unsigned long long)st.commits, st.wall_seconds, (unsigned long long)st.failures_copied,
        (unsigned long long)st.failures_cleared, (unsigned long long)st.shards_missing,
        (unsigned long long)st.shards_twice, (unsigned long long)st.token_configs_apart,
        (unsigned long long)st.mel_configs_apart, (unsigned long long)st.token_configs_held_apart,
        (unsigned long long)st.changed_meanwhile);
  }
  return fc_cli_stdout_status(code); /* the --json object lost is a failure */
}
