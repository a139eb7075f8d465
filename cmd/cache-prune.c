/* cache-prune — remove what a featcache store holds that no training run can reach: records no
 * entry refers to, and with --manifest the utterances the manifest no longer has
 * (docs/cache-prune.md). A thin main over fc_store_prune (libcache/core/verify/prune.c); a split
 * store is its parts, reported as one store. */
#include "cmd/cli.h"
#include "cmd/cli_stores.h"

#include "featcache/fc_manifest.h"
#include "featcache/fc_verify.h"

#include <errno.h>
#include <sys/stat.h>

enum {
  OPT_MANIFEST = 256,
  OPT_PROGRESS,
  OPT_MANIFEST_FORMAT,
  OPT_DAMAGED,
  OPT_COMPACT,
  OPT_BATCH,
  OPT_JSON,
  OPT_VERSION
};

static const fc_cli_opt options[] =
    {{NULL, 0, 0, NULL, "What goes:"},
     {"manifest", OPT_MANIFEST, required_argument, "FILE",
      "also remove the utterances (entries, failure records, then their records) whose ids this "
      "manifest (LJSpeech, wav.scp, JSONL, list) lacks"},
     {"manifest-format", OPT_MANIFEST_FORMAT, required_argument, "FMT",
      "auto, ljspeech, kaldi, jsonl, list, tsv (default auto)"},
     {"damaged", OPT_DAMAGED, no_argument, NULL,
      "also remove the records that fail their checksums (reads the whole store, as cache-verify "
      "does); featurize or tokenize run again then store them anew"},
     {"dry-run", 'n', no_argument, NULL, "say what would be removed; change nothing"},
     {"compact", OPT_COMPACT, no_argument, NULL,
      "then give the freed space back: swap a compact copy of data.mdb in (refused while "
      "another process has the store open)"},
     {NULL, 0, 0, NULL, "Running:"},
     {"batch", OPT_BATCH, required_argument, "N", "deletes per write transaction (default 4096)"},
     {"json", OPT_JSON, no_argument, NULL, "one JSON object per store on stdout"},
     {"quiet", 'q', no_argument, NULL, "no summary line, no progress line"},
     {"progress", OPT_PROGRESS, no_argument, NULL,
      "with --damaged, a progress line on stderr even when not a terminal"},
     {"help", 'h', no_argument, NULL, "show this help and exit"},
     {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
     {NULL, 0, 0, NULL, NULL}};

static const char synopsis[] = "cache-prune [options] STORE...";
static const char description[] =
    "Remove the records of a featcache store that no audio or text entry refers to (the orphans\n"
    "cache-verify warns about: left by refeaturizing or retokenizing an utterance with other\n"
    "audio or text), and with --manifest the utterances the manifest no longer names, so that\n"
    "no training run reads them. Writers (featurize, tokenize) wait while it runs; it refuses a\n"
    "store a writer has open. The pages freed are reused by later writes; --compact gives them\n"
    "back to the file system (with nothing to remove, it only compacts).";
static const char footer[] =
    "Exit status: 0 done (or nothing to remove); 1 a store is in use by a writer or another\n"
    "cache-prune (with --compact, by any process), damaged, or a write failed part-way (what\n"
    "was committed stays; run again to finish); 2 usage error, a STORE that is not a store or\n"
    "cannot be written, or a manifest that cannot be read or keeps none of the STOREs'\n"
    "utterances; 130/143 interrupted (run again to finish).\n"
    "Manual: man cache-prune.";

/* Can this user read dir's data.mdb (so that a dry run could)? */
static int data_readable(const char *dir) {
  char p[4200];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  return access(p, R_OK) == 0;
}

/* The refusal of a store another process holds the writer lock of: who, where it can be told (a
 * cache-prune holding it exclusive is no featurize or tokenize). */
static void say_busy(const char *path) {
  static const char then[] = "nothing removed: run cache-prune when it has finished";
  int excl;
  long pid;
  char comm[32], q[4 * 32 + 3], who[160] = "";
  unsigned others;
  fc_cli_lock_holder(path, &excl, &pid, comm, &others);
  if (pid) /* its command name quoted as names are (any process names itself) */
    snprintf(who, sizeof who, "process %ld%s%s%s", pid, comm[0] ? " (" : "",
             fc_cli_quoted(comm, q, sizeof q), comm[0] ? ")" : "");
  if (excl && pid)
    fc_cli_warn(path, "in use: %s holds it exclusively: a cache-prune runs on it; %s", who, then);
  else if (excl)
    fc_cli_warn(path, "in use: another cache-prune runs on it; %s", then);
  else if (pid && others)
    fc_cli_warn(path, "in use: %s and %u other%s have it open for writing; %s", who, others,
                others == 1 ? "" : "s", then);
  else if (pid)
    fc_cli_warn(path, "in use: %s has it open for writing; %s", who, then);
  else /* no holder seen: one of another pid namespace (a container: /proc/locks hides it), or
        * one that let it go between the open and the look — another cache-prune as well */
    fc_cli_warn(path,
                "in use: a process this one cannot name (of another pid namespace, or one that let "
                "it go a moment ago) had it open: featurize, tokenize, cache-merge, cache-config "
                "--drop or another cache-prune; %s",
                then);
}

/* Why store path could not be opened (fc_store_open's rc), said; the exit code. */
static int say_open_error(const char *path, int dry, int rc) {
  if (fc_cli_say_not_a_store(path, rc))
    ;
  else if (!dry && (rc == EROFS || ((rc == EACCES || rc == EPERM) && data_readable(path)))) {
    char refused[160];
    fc_cli_warn(path, "cannot open the store for writing: %s (--dry-run only reads it)",
                fc_cli_write_refused(path, rc, refused, sizeof refused));
  } else if (rc == EBUSY)
    say_busy(path);
  else
    fc_cli_warn(path, "cannot open the store: %s", fc_strerror(rc));
  /* in use, or out of memory (a rerun may get past either): the job ran, this STORE failed */
  return rc == EBUSY || rc == ENOMEM ? FC_EXIT_FAIL : FC_EXIT_USAGE;
}

/* Open one store to prune; 0, or the exit code, said. A dry run of a store whose lock.mdb this
 * user cannot open for writing (a teammate's dataset) reads it lock-free, as cache-verify does,
 * and says so. */
static int open_store(const char *path, int dry, fc_store **s) {
  int rc = dry ? fc_cli_open_to_read(path, FC_STORE_RDONLY, s)
               : fc_store_open(path, FC_STORE_EXCLUSIVE, s);
  return rc ? say_open_error(path, dry, rc) : 0;
}

/* --compact writes its copy of data.mdb beside it: a store whose folder this user cannot write
 * (data.mdb and lock.mdb writable, the folder a teammate's) was pruned, then failed with "cannot
 * write the compact copy ... run again to finish", which no rerun could. Refused before any STORE
 * is opened: 0, or exit 2 said. */
static int folder_writable(const char *path) {
  if (access(path, W_OK) == 0 || (errno != EACCES && errno != EPERM)) return 0;
  fc_cli_warn(
      path,
      "cannot compact: the store's folder is not writable by this user (%s), and "
      "--compact writes its copy of data.mdb there; nothing removed from any STORE (without "
      "--compact, the prune alone runs)",
      strerror(errno));
  return FC_EXIT_USAGE;
}

/* A store (a part) whose pages cache-verify's first step finds damaged, found before a run that
 * writes opens it for writing: that open commits on a store made before failure records (it gives
 * it its failed db), and a free list naming a page a B-tree uses would hand that commit the page.
 * The library's survey checks the pages too, once the store is open. */
typedef struct damage {
  int bad;
  char msg[1280]; /* "damaged (WHERE: PROBLEM): nothing removed..." */
} damage;

/* Each store's pages checked (a run that writes); 0, or the exit code of a stop (Ctrl-C), *at the
 * store whose check it stopped. */
static int check_pages(const char *const *stores, size_t n, int compact, damage *d, size_t *at) {
  for (size_t k = 0; k < n; k++) {
    char said[1200];
    const int got = fc_cli_pages_damage_said(stores[k], said, sizeof said);
    if (got < 0) {
      fc_cli_warn(stores[k], "interrupted while checking its pages: nothing removed");
      *at = k;
      return fc_cli_signal_exit();
    }
    if ((d[k].bad = got == 1))
      snprintf(d[k].msg, sizeof d[k].msg, "%s: %s", said,
               compact ? "nothing removed, nothing compacted" : "nothing removed");
  }
  return 0;
}

/* Before a run of several STOREs: every STORE (each part of a split one) opened for writing (a dry
 * run: for reading) and closed again, so that one mistyped, not a store, or not this user's to
 * write stops the run (exit 2) before any is changed — it pruned the STOREs before it, then
 * exited 2; a dry run listed them, then exited 2. One in use is left to
 * its turn (exit 1 for it alone, the others pruned), so is a damaged one (not opened for
 * writing), and one memory ran out opening (a rerun may get past it). 0, or exit 2 said. */
static int check_stores(const char *const *stores, size_t n, const damage *d, int dry) {
  int code = 0;
  for (size_t k = 0; k < n; k++) {
    if (d && d[k].bad) continue;
    fc_store *s = NULL;
    /* a dry run: opened to read, as its run opens it (lock-free where it must be), so that it
     * says what the run would: the same refusal, nothing listed */
    int rc = fc_store_open(stores[k], dry ? FC_STORE_RDONLY : FC_STORE_EXCLUSIVE, &s);
    if (dry && rc == EACCES && fc_cli_lock_unwritable(stores[k]))
      rc = fc_store_open(stores[k], FC_STORE_RDONLY | FC_STORE_NOLOCK, &s);
    fc_store_close(s);
    if (rc && rc != EBUSY && rc != ENOMEM) code = say_open_error(stores[k], dry, rc);
  }
  return code;
}

static void add(fc_prune_report *a, const fc_prune_report *b) {
  a->feat_records += b->feat_records;
  a->feat_bytes += b->feat_bytes;
  a->tok_records += b->tok_records;
  a->tok_bytes += b->tok_bytes;
  a->ids += b->ids;
  a->audio_entries += b->audio_entries;
  a->text_entries += b->text_entries;
  a->failures += b->failures;
  a->entry_bytes += b->entry_bytes;
  a->kept_ids += b->kept_ids;
  a->transactions += b->transactions;
  a->bytes_before += b->bytes_before;
  a->bytes_after += b->bytes_after;
  a->damaged_feat += b->damaged_feat;
  a->damaged_tok += b->damaged_tok;
  a->damaged_bytes += b->damaged_bytes;
  a->damaged_ids += b->damaged_ids;
}

/* unfinished: the run stopped or failed part-way (the utterances said are those in the store
 * then), with not_begun parts of a split store not begun. */
static void summary(const char *store, const fc_prune_report *r, int dry, int manifest, int damaged,
                    int compacted, int unfinished, size_t not_begun) {
  const char *verb = dry ? "would remove" : "removed";
  uint64_t orphans = r->feat_records + r->tok_records;
  fprintf(stderr, "%s: ", fc_cli_tool);
  fc_cli_put_name(stderr, store); /* quoted as every message quotes a name */
  fprintf(stderr, ": %s %llu orphan record%s (%llu feat, %llu tok; %.1f MB)", verb,
          (unsigned long long)orphans, orphans == 1 ? "" : "s", (unsigned long long)r->feat_records,
          (unsigned long long)r->tok_records, (r->feat_bytes + r->tok_bytes) / 1e6);
  if (manifest)
    fprintf(stderr,
            " and %llu utterance%s not in the manifest (%llu audio, %llu text entries, %llu "
            "failure records; %.1f MB)",
            (unsigned long long)r->ids, r->ids == 1 ? "" : "s",
            (unsigned long long)r->audio_entries, (unsigned long long)r->text_entries,
            (unsigned long long)r->failures, r->entry_bytes / 1e6);
  const uint64_t bad = r->damaged_feat + r->damaged_tok;
  if (damaged) { /* and who stores them again: the tool that made them */
    const char *tool = r->damaged_feat && r->damaged_tok ? "featurize and tokenize"
                       : r->damaged_feat                 ? "featurize"
                                                         : "tokenize";
    fprintf(stderr, " and %llu damaged record%s (%llu feat, %llu tok; %.1f MB",
            (unsigned long long)bad, bad == 1 ? "" : "s", (unsigned long long)r->damaged_feat,
            (unsigned long long)r->damaged_tok, r->damaged_bytes / 1e6);
    if (bad) fprintf(stderr, ": run %s again to store %s anew", tool, bad == 1 ? "it" : "them");
    fputc(')', stderr);
  }
  if (!unfinished)
    fprintf(stderr, "; %llu utterance%s stay%s", (unsigned long long)r->kept_ids,
            r->kept_ids == 1 ? "" : "s", r->kept_ids == 1 ? "s" : "");
  else if (!not_begun) /* not what stays once finished: the ids not yet removed are there too */
    fprintf(stderr, "; %llu utterance%s left in it for now", (unsigned long long)r->kept_ids,
            r->kept_ids == 1 ? "" : "s");
  else
    fprintf(stderr, "; %llu utterance%s left for now in the parts begun (%zu part%s not begun)",
            (unsigned long long)r->kept_ids, r->kept_ids == 1 ? "" : "s", not_begun,
            not_begun == 1 ? "" : "s");
  if (compacted && dry)
    fprintf(stderr, "; data.mdb %.1f MB, %.1f MB of it in use before these removals\n",
            r->bytes_before / 1e6, r->bytes_after / 1e6);
  else if (compacted && r->bytes_before == r->bytes_after) /* no free page: no copy made */
    fprintf(stderr, "; data.mdb already compact (%.1f MB)\n", r->bytes_after / 1e6);
  else if (compacted)
    fprintf(stderr, "; data.mdb compacted from %.1f MB to %.1f MB\n", r->bytes_before / 1e6,
            r->bytes_after / 1e6);
  else if (!dry && !orphans && !r->ids && !bad) /* a rerun of a finished prune */
    fputs(": nothing to remove\n", stderr);
  else
    fputs(dry ? "\n" : " (pages freed in data.mdb, reused by later writes)\n", stderr);
}

/* unwritten: a bit per part (up to 64) its writer never wrote, pruned around: "unwritten_parts" */
static void print_json(const char *store, unsigned parts, const fc_prune_report *r, int dry,
                       const char *status, int damaged, int compacted, uint64_t unwritten,
                       int counted) {
  char kept[24]; /* null: nothing counted (the STORE not opened, or its pages' check stopped) */
  snprintf(kept, sizeof kept, "%llu", (unsigned long long)r->kept_ids);
  fputs("{\"store\":", stdout);
  fc_json_write_string(stdout, store);
  printf(
      ",\"parts\":%u,\"dry_run\":%s,\"status\":\"%s\","
      "\"orphans\":{\"feat\":%llu,\"tok\":%llu,\"bytes\":%llu},"
      "\"dropped\":{\"ids\":%llu,\"audio\":%llu,\"text\":%llu,\"failed\":%llu,\"bytes\":%llu},"
      "\"kept_ids\":%s,\"bytes_freed\":%llu,\"transactions\":%llu",
      parts, dry ? "true" : "false", status, (unsigned long long)r->feat_records,
      (unsigned long long)r->tok_records, (unsigned long long)(r->feat_bytes + r->tok_bytes),
      (unsigned long long)r->ids, (unsigned long long)r->audio_entries,
      (unsigned long long)r->text_entries, (unsigned long long)r->failures,
      (unsigned long long)r->entry_bytes, counted ? kept : "null",
      (unsigned long long)(r->feat_bytes + r->tok_bytes + r->entry_bytes + r->damaged_bytes),
      (unsigned long long)r->transactions);
  if (damaged)
    printf(",\"damaged\":{\"feat\":%llu,\"tok\":%llu,\"bytes\":%llu,\"ids\":%llu}",
           (unsigned long long)r->damaged_feat, (unsigned long long)r->damaged_tok,
           (unsigned long long)r->damaged_bytes, (unsigned long long)r->damaged_ids);
  if (compacted)
    printf(",\"compact\":{\"bytes_before\":%llu,\"bytes_after\":%llu}",
           (unsigned long long)r->bytes_before, (unsigned long long)r->bytes_after);
  for (unsigned k = 0, first = 1; unwritten && k < parts && k < 64; k++)
    if (unwritten >> k & 1) printf("%s%u", first ? ",\"unwritten_parts\":[" : ",", k), first = 0;
  fputs(unwritten ? "]}\n" : "}\n", stdout);
}

/* The "parts" --json says of a STORE word: its stores' count (a split store's parts), 1 for a
 * plain store. */
static unsigned parts_of(const char *word, const char *const *stores, size_t n) {
  return n > 1 || strcmp(stores[0], word) ? (unsigned)n : 1;
}

/* --damaged's progress line: the records read of the store's bytes in use. */
typedef struct progress_state {
  const char *store;
  fc_cli_progress line;
} progress_state;

static void on_progress(uint64_t done, uint64_t total, void *ud) {
  progress_state *p = ud;
  fc_cli_progress_show(&p->line, "%s: %s: %.2f of %.2f GB read for damaged records", fc_cli_tool,
                       p->store, done / 1e9, total / 1e9);
}

/* The other hard links of a store's data.mdb (made by cp -al or rsync --link-dest): a compaction
 * renames its copy over this one, and the old file stays under them with its space. */
static nlink_t other_links(const char *store) {
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/data.mdb", store) >= (int)sizeof p || lstat(p, &st) != 0 ||
      !S_ISREG(st.st_mode) || st.st_nlink < 1)
    return 0;
  return st.st_nlink - 1;
}

/* One STORE word: its stores (a split store's parts) all opened before any is changed, then
 * pruned one by one. Returns the exit code. */
static int prune_word(const char *word, unsigned parts, uint64_t unwritten,
                      const char *const *stores, size_t n, const damage *d,
                      const fc_prune_opts *po_in, int manifest, int json, int quiet,
                      int force_progress) {
  fc_prune_opts opts = *po_in, *po = &opts;
  progress_state ps = {word, {0}};
  fc_cli_progress_init(&ps.line, force_progress, quiet);
  if (po->damaged && ps.line.on) po->progress = on_progress, po->progress_ud = &ps;
  fc_store **ss = calloc(n ? n : 1, sizeof *ss);
  if (!ss) {
    fc_cli_warn(word, "%s: nothing removed", fc_strerror(ENOMEM));
    return FC_EXIT_FAIL;
  }
  int code = 0;
  const char *status = "done";
  for (size_t k = 0; k < n && !code; k++)
    if (d && d[k].bad) { /* refused before it is opened for writing */
      fc_cli_warn(stores[k], "%s", d[k].msg);
      status = "damaged";
      code = FC_EXIT_FAIL;
    }
  for (size_t k = 0; k < n && !code; k++) code = open_store(stores[k], po->dry_run, &ss[k]);
  fc_prune_report all = {0};
  if (code && !strcmp(status, "done")) status = "error";
  nlink_t links = 0; /* the parts' data.mdb's other hard links, before the compaction */
  uint64_t linked_bytes = 0; /* the size of those files */
  for (size_t k = 0; k < n && !code && po->compact && !po->dry_run; k++) {
    const nlink_t l = other_links(stores[k]);
    struct stat st;
    char p[4096];
    links += l;
    if (l && snprintf(p, sizeof p, "%s/data.mdb", stores[k]) < (int)sizeof p && !stat(p, &st))
      linked_bytes += (uint64_t)st.st_size;
  }
  size_t begun = 0; /* the parts whose prune began */
  for (size_t k = 0; k < n && !code; k++, begun++) {
    fc_prune_report r;
    char why[512] = "";
    int rc = fc_store_prune(ss[k], po, &r, why, sizeof why);
    fc_cli_progress_clear(&ps.line);
    if (!rc && !po->dry_run) rc = fc_store_sync(ss[k]);
    add(&all, &r);
    if (rc == FC_EINTR) {
      fc_cli_warn(stores[k], "interrupted: run again to finish");
      status = "interrupted";
      code = fc_cli_signal_exit();
    } else if (rc) {
      const int damaged = rc == FC_EFORMAT; /* no rerun gets past it */
      /* a full disk: a rerun fails the same way until there is room (a delete writes the pages
       * it changes before the old ones are free; compaction says its own) */
      const int full = !why[0] && (rc == ENOSPC || rc == EDQUOT || rc == EFBIG);
      fc_cli_warn(stores[k], "%s%s%s", why[0] ? why : fc_strerror(rc),
                  full ? r.transactions ? " (what was removed stays removed" : " (nothing removed"
                  : r.transactions && !damaged
                      ? " (what was removed stays removed: run again to finish)"
                      : "",
                  !full         ? ""
                  : rc == EFBIG ? "; a prune writes before it frees: raise the file-size limit "
                                  "(ulimit -f), then run again)"
                                : "; a prune writes before it frees, and frees pages inside "
                                  "data.mdb, which does not shrink: make room on the disk, then "
                                  "run again)");
      status = damaged ? "damaged" : "error";
      code = FC_EXIT_FAIL;
    }
  }
  for (size_t k = 0; k < n; k++) fc_store_close(ss[k]);
  free(ss);
  /* every part compacted (or, dry, sized): a compaction refused or failed says so above */
  const int compacted = po->compact && code == 0;
  if (!quiet && (code == 0 || all.transactions))
    summary(word, &all, po->dry_run, manifest, po->damaged, compacted, code != 0, n - begun);
  if (!quiet && compacted && links && all.bytes_before != all.bytes_after)
    fc_cli_warn(word,
                "data.mdb had %llu other hard link%s (made by cp -al or rsync --link-dest?): "
                "the old file stays there, so its %.1f MB come back only when %s",
                (unsigned long long)links, links == 1 ? "" : "s", linked_bytes / 1e6,
                links == 1 ? "that link goes" : "those links go");
  if (json && code != FC_EXIT_USAGE)
    print_json(word, parts, &all, po->dry_run, status, po->damaged, compacted, unwritten,
               begun > 0); /* a prune began: its survey counted what stays */
  return code;
}

/* Out of memory reading the manifest's ids, before any of the n_stores STOREs: said with the
 * summary every exit 1 has; exit 1 (a run-time failure, as the stores' listing's). */
static int manifest_out_of_memory(const char *path, size_t n_stores) {
  fc_cli_warn(path,
              "out of memory reading its ids: done: 0 of %zu store%s (%zu not started), "
              "nothing removed",
              n_stores, n_stores == 1 ? "" : "s", n_stores);
  return FC_EXIT_FAIL;
}

/* The ids of a manifest into *ids (pointing into *items): 0, or exit 2 said when it cannot be
 * read, names none, or has a line whose utterance cannot be told (an id that is kept could
 * otherwise be removed); exit 1 said for want of memory (n_stores: the STOREs given). What was
 * read is freed by the caller either way. */
static int manifest_ids(const char *path, const fc_manifest_opts *mo, fc_item_list *items,
                        const char ***ids, size_t *n, size_t n_stores) {
  char why[512] = "";
  int rc = fc_manifest_read(path, mo, items, why, sizeof why);
  if (rc == ENOMEM) return manifest_out_of_memory(path, n_stores);
  if (rc) {
    fc_cli_warn(path, "%s", why[0] ? why : fc_strerror(rc));
    return FC_EXIT_USAGE;
  }
  if (!(*ids = malloc((items->count ? items->count : 1) * sizeof **ids)))
    return manifest_out_of_memory(path, n_stores);
  *n = 0;
  for (size_t i = 0; i < items->count; i++) {
    const fc_item *it = &items->items[i];
    if (it->id) {
      (*ids)[(*n)++] = it->id;
    } else if (it->err != FC_EDUPLICATE) {
      fputs("cache-prune: ", stderr); /* FILE:LINE: as featurize and tokenize name a line */
      fc_cli_put_name(stderr, path);
      fprintf(stderr, ":%zu: %s: no id, so no utterance it keeps can be told; nothing removed\n",
              it->line, it->why ? it->why : fc_strerror(it->err));
      return FC_EXIT_USAGE;
    }
  }
  if (!*n) {
    fc_cli_warn(path, "names no utterance: refusing to remove every one");
    return FC_EXIT_USAGE;
  }
  return 0;
}

/* A manifest that keeps none of the utterances the STOREs hold (the wrong file: a vocab, another
 * split's manifest, ids spelled as paths) would have every one removed: 0 when one of its ids is
 * an utterance of some STORE (an audio or text entry), or when they hold none; else said, exit 2,
 * before anything is removed from any. A STORE that cannot be read is left to its prune to say. */
static int manifest_keeps_none(const char *manifest, const char *const *stores, size_t n,
                               const char *const *ids, size_t n_ids) {
  uint64_t held[2] = {0, 0}; /* audio, text entries */
  char example[128] = "";
  for (size_t k = 0; k < n; k++) {
    fc_store *s = NULL;
    fc_rtxn *t = NULL;
    int rc = fc_store_open(stores[k], FC_STORE_RDONLY, &s);
    if (rc == EACCES) rc = fc_store_open(stores[k], FC_STORE_RDONLY | FC_STORE_NOLOCK, &s);
    if (rc || fc_store_read_begin(s, &t) != 0) {
      fc_store_close(s);
      continue;
    }
    int kept = 0;
    for (int db = FC_DB_AUDIO; db <= FC_DB_TEXT && !kept; db++) {
      uint64_t c = 0;
      const void *key, *v;
      size_t kl, vl;
      fc_cursor *cur;
      if (fc_rtxn_count(t, db, &c) != 0 || c == 0) continue;
      held[db - FC_DB_AUDIO] += c;
      if (!example[0] && fc_cursor_open(t, db, &cur) == 0) { /* one of its ids, to compare */
        char id[101];
        if (fc_cursor_next(cur, &key, &kl, NULL, NULL) == 0) {
          memcpy(id, key, kl < 100 ? kl : 100);
          id[kl < 100 ? kl : 100] = '\0';
          fc_cli_quoted(id, example, sizeof example);
        }
        fc_cursor_close(cur);
      }
      for (size_t i = 0; i < n_ids && !kept; i++)
        kept = fc_rtxn_get(t, db, ids[i], strlen(ids[i]), &v, &vl) == 0;
    }
    fc_rtxn_end(t);
    fc_store_close(s);
    if (kept) return 0;
  }
  if (!held[0] && !held[1]) return 0; /* nothing to remove */
  char q[128];
  fc_cli_warn(manifest,
              "keeps none of the STOREs' utterances (%llu audio, %llu text entries): its ids, "
              "such as '%s', name none of theirs, such as '%s' (the wrong file, or ids spelled "
              "otherwise?); nothing removed",
              (unsigned long long)held[0], (unsigned long long)held[1],
              fc_cli_quoted(ids[0], q, sizeof q), example);
  return FC_EXIT_USAGE;
}

int main(int argc, char **argv) {
  fc_cli_tool = "cache-prune";
  fc_cli_std_fds();
  enum { NOPT = sizeof options / sizeof options[0] };
  struct option longs[NOPT + 1];
  char shorts[3 * NOPT + 3];
  shorts[0] = ':';
  fc_cli_getopt_tables(options, longs, shorts + 1);
  const char *manifest = NULL;
  fc_manifest_opts mo = {.format = FC_MANIFEST_AUTO};
  fc_prune_opts po = {0};
  int json = 0, quiet = 0, force_progress = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    switch (c) {
    case OPT_MANIFEST: /* the first one's utterances would be removed */
      manifest = fc_cli_once("manifest", manifest, fc_cli_path("manifest", optarg),
                             "one manifest per run, and the utterances it lacks are removed: give "
                             "one file that names every utterance to keep (cat them into one)");
      break;
    case OPT_MANIFEST_FORMAT: mo.format = fc_cli_manifest_format(optarg); break;
    case OPT_DAMAGED: po.damaged = 1; break;
    case 'n': po.dry_run = 1; break;
    case OPT_COMPACT: po.compact = 1; break;
    case OPT_BATCH: po.batch = fc_cli_u32("batch", optarg, 1, 1u << 24); break;
    case OPT_JSON: json = 1; break;
    case 'q': quiet = 1; break;
    case OPT_PROGRESS: force_progress = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    default: fc_cli_bad_option(argc, argv, longs);
    }
  }
  if (optind == argc) fc_cli_usage_error("no STORE given");
  fc_cli_no_empty_stores(argc, argv, optind);
  fc_item_list items = {0};
  const char **keep = NULL;
  size_t *first = NULL;
  damage *dmg = NULL; /* a run that writes: each store's pages */
  unsigned *nparts = NULL; /* each STORE word's stores (a split store's parts), for --json */
  uint64_t *unw = NULL; /* each STORE word's parts its writer never wrote, a bit each */
  const char **written = NULL; /* the stores less a split store's parts never written */
  int worst = 0;
  if (manifest && (worst = manifest_ids(manifest, &mo, &items, &keep, &po.n_keep,
                                        (size_t)(argc - optind))) != 0)
    goto out;
  po.keep = keep;
  const char *const *words = (const char *const *)argv + optind;
  size_t nw = (size_t)(argc - optind), n = nw;
  const char **stores = fc_cli_expand_stores(words, &n);
  char msg[1024];
  if (!(first = malloc((nw + 1) * sizeof *first))) { /* said, as the listing's own */
    worst = fc_cli_say_listing_failed(ENOMEM, NULL, nw);
    goto out;
  }
  if (fc_cli_store_groups(words, nw, n, first) != 0) {
    fc_cli_warn(NULL, "a split store's marker changed meanwhile: run again");
    worst = FC_EXIT_USAGE;
    goto out;
  }
  if (fc_cli_store_twice(words, nw, stores, n, msg, sizeof msg)) {
    fc_cli_warn(NULL, "%s", msg);
    worst = FC_EXIT_USAGE;
    goto out;
  }
  if (!(nparts = malloc(nw * sizeof *nparts)) || !(unw = calloc(nw, sizeof *unw)) ||
      !(written = malloc((n ? n : 1) * sizeof *written))) {
    worst = fc_cli_say_listing_failed(ENOMEM, NULL, nw);
    goto out;
  }
  /* a split store's part that its writer never wrote (featurize stopped before the part's first
   * commit) holds nothing to remove: the split store is pruned without it, said; a missing part,
   * which may be one moved away, refuses the run (exit 2) */
  size_t kept = 0;
  for (size_t w = 0; w < nw; w++) {
    const size_t a = first[w], b = first[w + 1];
    nparts[w] = parts_of(words[w], stores + a, b - a);
    first[w] = kept;
    for (size_t k = a; k < b; k++) {
      const int unwritten =
          nparts[w] < 2
              ? 0
              : fc_cli_say_unwritten_part(stores[k],
                                          "nothing in it to prune: the other parts are pruned",
                                          "nothing removed from any STORE");
      if (unwritten == 2) worst = FC_EXIT_USAGE;
      if (unwritten) unw[w] |= (uint64_t)1 << ((k - a) & 63);
      if (!unwritten) written[kept++] = stores[k];
    }
  }
  if (worst) goto out;
  first[nw] = n = kept;
  stores = written;
  for (size_t k = 0; k < n && !worst && po.compact && !po.dry_run; k++)
    worst = folder_writable(stores[k]);
  if (worst) goto out;
  fc_cli_install_signals();
  po.stop = (volatile const int *)&fc_cli_signal;
  if (!po.dry_run) {
    if (!(dmg = calloc(n ? n : 1, sizeof *dmg))) {
      worst = fc_cli_say_listing_failed(ENOMEM, NULL, nw);
      goto out;
    }
    size_t at = 0;
    if ((worst = check_pages(stores, n, po.compact, dmg, &at)) != 0) {
      /* --json: the STORE whose check was stopped says so, as a stop in its removals does (the
       * STOREs after it are not started); nothing was removed from any */
      size_t w = 0;
      while (w + 1 < nw && first[w + 1] <= at) w++;
      const fc_prune_report none = {0};
      if (json) print_json(words[w], nparts[w], &none, 0, "interrupted", po.damaged, 0, unw[w], 0);
      goto out;
    }
  }
  if (nw > 1 && (worst = check_stores(stores, n, dmg, po.dry_run)) != 0) goto out;
  if (manifest && (worst = manifest_keeps_none(manifest, stores, n, keep, po.n_keep)) != 0)
    goto out;
  size_t pruned = 0, failed = 0; /* STORE words */
  for (size_t w = 0; w < nw; w++) {
    int code =
        prune_word(words[w], nparts[w], unw[w], stores + first[w], first[w + 1] - first[w],
                   dmg ? dmg + first[w] : NULL, &po, manifest != NULL, json, quiet, force_progress);
    if (code > worst) worst = code;
    pruned += code == FC_EXIT_OK;
    failed += code == FC_EXIT_FAIL;
    if (code > 128) break; /* interrupted: the stores after it are not started */
  }
  /* the summary every exit 1 has, whatever -q, the STOREs done of those given (one in use,
   * damaged, out of memory or whose write failed is said above; the others were pruned all the
   * same); one STORE too: its own line is of the records, not whether its run went through */
  if (worst == FC_EXIT_FAIL)
    fc_cli_warn(NULL, "done: %zu of %zu store%s %s (%zu failed)", pruned, nw, nw == 1 ? "" : "s",
                po.dry_run ? "read" : "pruned", failed);
out:
  free(nparts);
  free(unw);
  free(written);
  free(dmg);
  free(first);
  free(keep);
  fc_item_list_free(&items);
  return fc_cli_stdout_status(worst);
}
