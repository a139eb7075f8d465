/* cache-config — list the configs of featcache stores, or drop one (docs/cache-config.md).
 * A thin main over fc_store_configs and fc_store_drop_config; a split store is its parts, listed
 * as one store (records summed, the earliest creation time) and dropped from every part. */
#include "cmd/cli.h"

#include "featcache/fc_store.h"

#include <ctype.h>
#include <lmdb.h> /* the codes of a damaged B-tree, which the library passes through */
#include <sys/stat.h>

enum { OPT_DROP = 256, OPT_JSON, OPT_NO_COUNT, OPT_VERSION };

static const fc_cli_opt options[] =
    {{NULL, 0, 0, NULL, "Options:"},
     {"drop", OPT_DROP, required_argument, "CONFIG",
      "remove the config's records and meta keys (CONFIG: its 32-hex digest, or a name that only "
      "it has, or 8 or more hex digits that only its digest begins with)"},
     {"json", OPT_JSON, no_argument, NULL, "one JSON object per store on stdout"},
     {"no-count", OPT_NO_COUNT, no_argument, NULL,
      "list without counting records (reads meta only, not the records' pages)"},
     {"quiet", 'q', no_argument, NULL, "--drop: no summary line"},
     {"help", 'h', no_argument, NULL, "show this help and exit"},
     {"version", OPT_VERSION, no_argument, NULL, "show the version and exit"},
     {NULL, 0, 0, NULL, NULL}};

static const char synopsis[] =
    "cache-config [--json] [--no-count] STORE...\n"
    "       cache-config --drop CONFIG STORE";
static const char description[] =
    "List the feature and token configs a featcache store holds (digest, kind, the name the\n"
    "loader answers to, records and their size, when the config was first stored), or remove\n"
    "one config: its records and meta keys. Entries (audio, text) stay; the pages freed are\n"
    "reused by later writes (cache-prune --compact gives them back to the file system).";
static const char footer[] =
    "Exit status: 0 done (or nothing to drop: the store holds no such config); 1 a store's\n"
    "configs could not be read once open, or a STORE that could not be opened beside others\n"
    "listed, or the drop failed part-way (run it again to finish); 2 usage error, a STORE that\n"
    "is not a store or cannot be opened (for --drop, for writing) when no other was listed, or\n"
    "given twice, or\n"
    "a name several configs have (or digits several digests begin with); 130/143 interrupted.\n"
    "Manual: man cache-config.";

/* A damaged B-tree page, as LMDB tells it: a rerun meets the same page. */
static int damaged(int rc) { return rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND; }

static const char *kind_name(int k) {
  return k == FC_CONFIG_MEL ? "mel" : k == FC_CONFIG_TOKENS ? "tokens" : "other";
}

static void free_parts(char **p, unsigned n) {
  for (unsigned k = 0; p && k < n; k++) free(p[k]);
  free(p);
}

/* The stores of one STORE word: a split store's parts, else itself. 0, or the exit code, said
 * and its words in said (--json's "error"): 2 for a marker that cannot be read, 1 out of memory. */
static int parts_of(const char *dir, char ***out, unsigned *n, char *said, size_t said_len) {
  unsigned np = 0;
  int rc = fc_store_split_count(dir, &np);
  if (rc) {
    snprintf(said, said_len, "cannot read the split store's marker: %s", fc_strerror(rc));
    fc_cli_warn(dir, "%s", said);
    return FC_EXIT_USAGE;
  }
  if (np < 2) np = 1;
  char **p = calloc(np, sizeof *p);
  int code = p ? 0 : FC_EXIT_FAIL;
  for (unsigned k = 0; k < np && !code; k++) {
    char buf[4096];
    if (np == 1)
      snprintf(buf, sizeof buf, "%s", dir);
    else if (fc_store_part_path(dir, k, buf, sizeof buf)) {
      snprintf(said, said_len, "path too long");
      fc_cli_warn(dir, "%s", said);
      code = FC_EXIT_USAGE;
      break;
    }
    if (!(p[k] = strdup(buf))) code = FC_EXIT_FAIL;
  }
  if (code == FC_EXIT_FAIL) {
    snprintf(said, said_len, "%s", fc_strerror(ENOMEM));
    fc_cli_warn(dir, "%s", said);
  }
  if (code) {
    free_parts(p, np);
    return code;
  }
  *out = p;
  *n = np;
  return 0;
}

/* Open a store to list or change; says why not ("not a featcache store" for a folder that is no
 * store). A listing (lockfree) of a store whose lock.mdb this user cannot open for writing (a
 * teammate's dataset) reads it lock-free, as cache-verify and cache-merge do, and says so; a
 * drop, which must write it, does not (its names are read with the lock, or it is refused). */
static int open_store(const char *path, unsigned flags, int lockfree, fc_store **s, char *said,
                      size_t said_len) {
  int rc = lockfree ? fc_cli_open_to_read(path, flags, s) : fc_store_open(path, flags, s);
  if (!rc) return 0;
  const char *not_a_store = fc_cli_not_a_store_says(path, rc);
  if (not_a_store)
    snprintf(said, said_len, "%s", not_a_store);
  else if (rc == FC_EINTR) /* Ctrl-C while a drop waited for cache-prune's writer lock */
    snprintf(said, said_len,
             "interrupted while waiting for cache-prune to finish: nothing dropped");
  else if (!lockfree && (rc == EACCES || rc == EPERM || rc == EROFS)) { /* a drop: it must write */
    char refused[160];
    snprintf(said, said_len,
             "cannot drop from it: the store cannot be written (%s); nothing dropped "
             "(cache-config without --drop lists its configs: it only reads)",
             fc_cli_write_refused(path, rc, refused, sizeof refused));
  } else
    snprintf(said, said_len, "cannot open the store: %s", fc_strerror(rc));
  fc_cli_warn(path, "%s", said);
  return rc;
}

/* Add part's configs into *all (by digest: records summed, the earliest creation time). */
static int merge_into(fc_config_info **all, size_t *n, fc_config_info *c, size_t m) {
  for (size_t i = 0; i < m; i++) {
    size_t j = 0;
    while (j < *n && memcmp((*all)[j].digest.bytes, c[i].digest.bytes, 16)) j++;
    if (j < *n) {
      (*all)[j].records += c[i].records;
      (*all)[j].record_bytes += c[i].record_bytes;
      if (c[i].created[0] && (!(*all)[j].created[0] || strcmp(c[i].created, (*all)[j].created) < 0))
        memcpy((*all)[j].created, c[i].created, sizeof c[i].created);
      continue;
    }
    fc_config_info *g = realloc(*all, (*n + 1) * sizeof **all);
    if (!g) return ENOMEM;
    *all = g;
    g[*n] = c[i];
    c[i].json = NULL; /* moved */
    (*n)++;
  }
  return 0;
}

static void print_table(const char *store, const fc_config_info *c, size_t n, int counted) {
  fc_cli_put_name(stdout, store); /* quoted as names are: the line stays one line */
  printf(": %zu config%s\n", n, n == 1 ? "" : "s");
  if (!n) return;
  printf("%-32s  %-6s  %-20s  %10s  %10s  %s\n", "digest", "kind", "name", "records", "MB",
         "created");
  for (size_t i = 0; i < n; i++) {
    char hex[33], rec[24] = "-", mb[24] = "-";
    fc_digest_hex(&c[i].digest, hex);
    if (counted) {
      snprintf(rec, sizeof rec, "%llu", (unsigned long long)c[i].records);
      snprintf(mb, sizeof mb, "%.1f", c[i].record_bytes / 1e6);
    }
    printf("%-32s  %-6s  %-20s  %10s  %10s  %s\n", hex, kind_name(c[i].kind),
           c[i].name[0] ? c[i].name : "-", rec, mb, c[i].created[0] ? c[i].created : "-");
  }
}

/* unwritten: a bit per part (up to 64) its writer never wrote, listed as "unwritten_parts" */
static void print_json(const char *store, unsigned parts, const fc_config_info *c, size_t n,
                       int counted, uint64_t unwritten) {
  fputs("{\"store\":", stdout);
  fc_json_write_string(stdout, store);
  printf(",\"parts\":%u,\"configs\":[", parts);
  for (size_t i = 0; i < n; i++) {
    char hex[33];
    fc_digest_hex(&c[i].digest, hex);
    printf("%s{\"digest\":\"%s\",\"kind\":\"%s\",\"name\":", i ? "," : "", hex,
           kind_name(c[i].kind));
    if (c[i].name[0])
      fc_json_write_string(stdout, c[i].name);
    else
      fputs("null", stdout);
    if (counted)
      printf(",\"records\":%llu,\"record_bytes\":%llu", (unsigned long long)c[i].records,
             (unsigned long long)c[i].record_bytes);
    else
      fputs(",\"records\":null,\"record_bytes\":null", stdout);
    fputs(",\"created\":", stdout);
    if (c[i].created[0])
      fc_json_write_string(stdout, c[i].created);
    else
      fputs("null", stdout);
    /* the config itself, as stored: canonical JSON, so it is embedded as it is — unless it did
     * not parse (kind other: damaged, or of a kind this build does not know), when splicing it
     * would make the whole line invalid JSON: then its bytes as a string */
    if (c[i].kind == FC_CONFIG_OTHER && c[i].json) {
      fputs(",\"config\":null,\"config_text\":", stdout);
      fc_json_write_string(stdout, c[i].json);
      fputc('}', stdout);
    } else {
      printf(",\"config\":%s}", c[i].json ? c[i].json : "null");
    }
  }
  fputc(']', stdout);
  for (unsigned k = 0, first = 1; unwritten && k < parts && k < 64; k++)
    if (unwritten >> k & 1) printf("%s%u", first ? ",\"unwritten_parts\":[" : ",", k), first = 0;
  fputs(unwritten ? "]}\n" : "}\n", stdout);
}

static int list_store(const char *dir, int json, int count) {
  char **parts = NULL;
  unsigned np = 1;
  char failed[512] = ""; /* why the configs could not be read: said, and --json's "error" */
  int code = parts_of(dir, &parts, &np, failed, sizeof failed);
  fc_config_info *all = NULL;
  size_t n = 0;
  uint64_t stored = 0; /* the records the parts hold, when no commit came between the counts */
  int steady = 1;
  uint64_t unwritten = 0; /* the parts its writer never wrote (a split store has at most 64) */
  for (unsigned k = 0; k < np && !code; k++) {
    fc_store *s;
    if (fc_cli_signal) { /* a split store's parts counted so far are not the store's sums */
      snprintf(failed, sizeof failed, "interrupted: not listed");
      code = fc_cli_signal_exit();
      break;
    }
    if (np > 1 && fc_cli_say_unwritten_part(parts[k], "listed without it", NULL)) {
      unwritten |= (uint64_t)1 << (k & 63);
      continue;
    }
    const int rc_open = open_store(parts[k], FC_STORE_RDONLY, 1, &s, failed, sizeof failed);
    if (rc_open) { /* out of memory is no usage error (a rerun may get past it): 1, counted */
      code = rc_open == ENOMEM ? FC_EXIT_FAIL : FC_EXIT_USAGE;
      break;
    }
    fc_config_info *c;
    size_t m;
    fc_store_info before, after;
    int rc = fc_store_info_get(s, &before);
    if (!rc) rc = fc_store_configs(s, count, &c, &m);
    if (!rc && (fc_store_info_get(s, &after) ||
                memcmp(before.entries, after.entries, sizeof before.entries) != 0))
      steady = 0; /* a writer committed meanwhile: the two counts are of different stores */
    stored += before.entries[FC_DB_FEAT] + before.entries[FC_DB_TOK];
    fc_store_close(s);
    if (rc) {
      snprintf(failed, sizeof failed, "cannot list its configs: %s%s", fc_strerror(rc),
               damaged(rc) ? ": the store is damaged (cache-verify says where)" : "");
      fc_cli_warn(parts[k], "%s", failed);
      code = FC_EXIT_FAIL;
      break;
    }
    rc = merge_into(&all, &n, c, m);
    fc_configs_free(c, m);
    if (rc) {
      snprintf(failed, sizeof failed, "%s", fc_strerror(rc));
      fc_cli_warn(dir, "%s", failed);
      code = FC_EXIT_FAIL;
    }
  }
  if (code && json) { /* one object per STORE all the same (not there, no store, damaged): a
                       * script reading one per STORE finds it */
    fputs("{\"store\":", stdout);
    fc_json_write_string(stdout, dir);
    printf(",\"parts\":%u,\"configs\":null,\"error\":", np);
    fc_json_write_string(stdout, failed);
    fputs("}\n", stdout);
  }
  if (!code) {
    if (json)
      print_json(dir, np, all, n, count, unwritten);
    else
      print_table(dir, all, n, count);
    uint64_t counted = 0;
    for (size_t i = 0; i < n; i++) counted += all[i].records;
    if (count && steady && stored > counted) /* each record names its config in its header */
      fc_cli_warn(dir,
                  "%llu record%s name%s no config the store holds (a damaged header?) and %s "
                  "counted above: cache-verify names %s",
                  (unsigned long long)(stored - counted), stored - counted == 1 ? "" : "s",
                  stored - counted == 1 ? "s" : "", stored - counted == 1 ? "is not" : "are not",
                  stored - counted == 1 ? "it" : "them");
  }
  fc_configs_free(all, n);
  free_parts(parts, np);
  return code;
}

/* How config c answers to the name want: 2 named so, 1 a mel config listed as "WANT (dtype)" (a
 * preset stored in another dtype), 0 not at all. */
static int name_match(const fc_config_info *c, const char *want) {
  size_t wl = strlen(want), nl = strlen(c->name);
  if (strcmp(c->name, want) == 0) return 2;
  return c->kind == FC_CONFIG_MEL && nl > wl + 3 && strncmp(c->name, want, wl) == 0 &&
         c->name[wl] == ' ' && c->name[wl + 1] == '(' && c->name[nl - 1] == ')';
}

/* 1 when want is 8..31 hex digits that config c's digest begins with (any case): the start of a
 * digest, as cache-merge names configs (12 digits) */
static int digest_start(const fc_config_info *c, const char *want) {
  size_t wl = strlen(want);
  if (wl < 8 || wl >= 32) return 0;
  char hex[33];
  fc_digest_hex(&c->digest, hex);
  for (size_t i = 0; i < wl; i++)
    if (!isxdigit((unsigned char)want[i]) || tolower((unsigned char)want[i]) != hex[i]) return 0;
  return 1;
}

/* "NAME HEX, NAME HEX, ..." of the configs that answer to want at level `only` (every config
 * when 0), whole entries only: returns how many did not fit into list. */
static size_t list_configs(const fc_config_info *all, size_t n, const char *want, int only,
                           char *list, size_t cap) {
  size_t l = 0, left_off = 0;
  list[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (only > 0 && name_match(&all[i], want) != only) continue;
    if (only < 0 && !digest_start(&all[i], want)) continue; /* -1: the digests want begins */
    char hex[33], item[320];
    fc_digest_hex(&all[i].digest, hex);
    int il = snprintf(item, sizeof item, "%s%s %s", l ? ", " : "",
                      all[i].name[0] ? all[i].name : "(no name)", hex);
    if (!left_off && l + (size_t)il < cap) {
      memcpy(list + l, item, (size_t)il + 1);
      l += (size_t)il;
    } else {
      left_off++;
    }
  }
  return left_off;
}

/* A drop from one part of a split store, refused (exit 2, said): the other parts would keep the
 * config, and the split store would no longer be one dataset. 0 for a store that is no part. */
static int refuse_part(const char *dir, fc_store *s) {
  unsigned pk, pn;
  if (fc_store_part_of_store(s, &pk, &pn) != 0 || pn < 2) return 0;
  fc_cli_warn(dir,
              "is part %u of a split store of %u parts: give the split store's directory (the "
              "config is dropped from every part)",
              pk, pn);
  return FC_EXIT_USAGE;
}

/* CONFIG as a digest: 32 hex, or a name (a preset, "kaldi (mq)", a tokenizer) only one config of
 * the store has; as for the loader's features=, a preset's name ("kaldi") also names the config of
 * that preset stored in another dtype ("kaldi (mq)") when no config is the preset itself. 0, or
 * exit code 2 said (a name several configs have), or -1 when no config has the name: nothing to
 * drop, said unless quiet (a rerun of a finished drop; what the store has shows a misspelling). */
static int resolve(const char *dir, char **parts, const unsigned char *skip, unsigned np,
                   const char *want, int quiet, fc_digest *d) {
  if (strlen(want) == 32 && fc_digest_parse(want, d) == 0) return 0;
  fc_config_info *all = NULL;
  size_t n = 0;
  int code = 0;
  for (unsigned k = 0; k < np && !code; k++) {
    fc_store *s;
    fc_config_info *c;
    size_t m;
    char said[512];
    if (skip[k]) continue;
    if (open_store(parts[k], FC_STORE_RDONLY, 0, &s, said, sizeof said)) {
      code = FC_EXIT_USAGE; /* the parts before it listed: freed below */
      break;
    }
    /* a part alone refused before any "nothing to drop": the name may be another part's */
    if (np == 1 && (code = refuse_part(dir, s)) != 0) {
      fc_store_close(s);
      break;
    }
    int rc = fc_store_configs(s, 0, &c, &m);
    fc_store_close(s);
    if (!rc) {
      rc = merge_into(&all, &n, c, m);
      fc_configs_free(c, m);
    }
    if (rc) {
      fc_cli_warn(parts[k], "cannot list its configs: %s", fc_strerror(rc));
      code = FC_EXIT_FAIL;
    }
  }
  size_t hits = 0;
  int best = 0; /* 2: named so; 1: a mel config named "WANT (dtype)" */
  for (size_t i = 0; !code && i < n; i++) {
    int m = name_match(&all[i], want);
    if (!m || m < best) continue;
    if (m > best) best = m, hits = 0;
    if (!hits++) *d = all[i].digest;
  }
  size_t starts = 0; /* no name: the configs whose digest begins with want (8 digits or more) */
  for (size_t i = 0; !code && !hits && i < n; i++)
    if (digest_start(&all[i], want) && !starts++) *d = all[i].digest;
  if (!code && hits != 1 && starts != 1) {
    char list[1024]; /* the configs so named, or all the store has */
    size_t left_off = list_configs(all, n, want, hits ? best : starts ? -1 : 0, list, sizeof list);
    char more[160 + 4 * 64], qd[4 * 64 + 3]; /* (a long name cut short) */
    more[0] = '\0';
    if (left_off)
      snprintf(more, sizeof more, ", and %zu more (cache-config %s lists them)", left_off,
               fc_cli_quoted(dir, qd, sizeof qd));
    if (hits) {
      fc_cli_warn(dir, "%zu configs are named '%s': give the digest of one (%s%s)", hits, want,
                  list, more);
      code = FC_EXIT_USAGE;
    } else if (starts) {
      fc_cli_warn(dir, "%zu configs' digests begin with '%s': give more of the digest (%s%s)",
                  starts, want, list, more);
      code = FC_EXIT_USAGE;
    } else {
      if (!quiet)
        fc_cli_warn(dir, "nothing to drop: no config named '%s'%s (it has: %s%s)", want,
                    strlen(want) >= 8 && strlen(want) < 32 &&
                            strspn(want, "0123456789abcdefABCDEF") == strlen(want)
                        ? ", nor one whose digest begins with it"
                        : "",
                    n ? list : "none", more);
      code = -1;
    }
  }
  fc_configs_free(all, n);
  return code;
}

/* A part whose pages cache-verify's first step finds damaged: a free list that would hand the
 * drop's writes a page a B-tree uses (they would write over it), or that they would fail on, a
 * page LMDB's reads could crash on. Said (exit 1); the signal's code when stopped (said); 0 when
 * sound or when it cannot be checked (the drop then says what it meets). */
static int refuse_damaged(const char *part, const char *hex) {
  char said[1200];
  const int got = fc_cli_pages_damage_said(part, said, sizeof said);
  if (got < 0) {
    fc_cli_warn(part, "interrupted while checking its pages: nothing dropped");
    return fc_cli_signal_exit();
  }
  if (got != 1) return 0;
  fc_cli_warn(part, "cannot drop config %s: %s: nothing dropped", hex, said);
  return FC_EXIT_FAIL;
}

static int drop(const char *dir, const char *want, int quiet) {
  char **parts;
  unsigned np;
  char why[512];
  int code = parts_of(dir, &parts, &np, why, sizeof why);
  if (code) return code;
  /* a part its writer never wrote holds no config: the drop is from the others (said) */
  unsigned char *skip = calloc(np, 1);
  if (!skip) {
    free_parts(parts, np);
    return FC_EXIT_FAIL;
  }
  for (unsigned k = 0; np > 1 && k < np && !code; k++)
    if ((skip[k] = (unsigned char)fc_cli_say_unwritten_part(parts[k], "no config in it to drop",
                                                            "nothing dropped")) == 2)
      code = FC_EXIT_USAGE;
  if (code) {
    free(skip);
    free_parts(parts, np);
    return code;
  }
  fc_digest d;
  if ((code = resolve(dir, parts, skip, np, want, quiet, &d)) != 0) {
    free(skip);
    free_parts(parts, np);
    return code < 0 ? FC_EXIT_OK : code;
  }
  char hex[33];
  fc_digest_hex(&d, hex);
  uint64_t records = 0, bytes = 0;
  unsigned had = 0;
  fc_cli_install_signals();
  if (!quiet) fc_cli_note_prune_running(dir);
  /* every part opened before any is changed: a part that cannot be opened (missing) leaves the
   * config in all of them, not dropped from the parts before it */
  /* each part's pages checked first, before it is opened here (LMDB: one environment of a file
   * open in a process at a time; the check opens its own) */
  for (unsigned k = 0; k < np && !code; k++)
    if (!skip[k]) code = refuse_damaged(parts[k], hex);
  fc_store **ss = code ? NULL : calloc(np, sizeof *ss);
  if (!ss && !code) code = FC_EXIT_FAIL;
  for (unsigned k = 0; k < np && !code; k++) {
    char said[512];
    if (skip[k]) continue;
    int rc = open_store(parts[k], 0, 0, &ss[k], said, sizeof said);
    if (rc) code = rc == FC_EINTR && fc_cli_signal ? fc_cli_signal_exit() : FC_EXIT_USAGE;
  }
  if (!code && np == 1) code = refuse_part(dir, ss[0]);
  for (unsigned k = 0; k < np && !code; k++) {
    uint64_t r = 0, b = 0;
    if (skip[k]) continue;
    int rc = fc_store_drop_config(ss[k], &d, &fc_cli_signal, &r, &b);
    if (!rc) rc = fc_store_sync(ss[k]);
    records += r;
    bytes += b;
    if (rc == FC_ENOTFOUND) continue; /* this part never had it */
    had++;
    if (rc == FC_EINTR) {
      fprintf(stderr,
              "%s: interrupted: %llu record%s of %s removed so far, the config is still "
              "listed: run again to finish\n",
              fc_cli_tool, (unsigned long long)records, records == 1 ? "" : "s", hex);
      code = fc_cli_signal_exit();
    } else if (rc) {
      /* a full disk: the rerun would fail the same way until there is room; a damaged store
       * ever (the drop walks the B-trees it changes first, and removes nothing from one LMDB
       * cannot read; its pages and free list were checked before, refuse_damaged: what is
       * met here came after that) */
      const int full = rc == ENOSPC || rc == EDQUOT;
      fc_cli_warn(parts[k], "cannot drop config %s: %s (%llu record%s removed%s)", hex,
                  fc_strerror(rc), (unsigned long long)records, records == 1 ? "" : "s",
                  full ? "; a drop writes before it frees, and frees pages inside data.mdb, "
                         "which does not shrink: make room on the disk, then run again"
                  : rc == EFBIG ? "; a drop writes before it frees: raise the file-size limit "
                                  "(ulimit -f), then run again"
                  : damaged(rc) ? ": the store is damaged"
                                : ": run again to finish");
      code = FC_EXIT_FAIL;
    }
  }
  for (unsigned k = 0; ss && k < np; k++) fc_store_close(ss[k]);
  free(ss);
  free(skip);
  if (!code && !had) { /* a rerun of a finished drop: what was asked holds */
    if (!quiet) fc_cli_warn(dir, "nothing to drop: no config %s in the store", hex);
  } else if (!code && !quiet) {
    char qdir[4 * 1024 + 3]; /* quoted as names are */
    fprintf(stderr,
            "%s: dropped config %s from %s: %llu record%s, %.1f MB (free pages in data.mdb, "
            "reused by later writes)\n",
            fc_cli_tool, hex, fc_cli_quoted(dir, qdir, sizeof qdir), (unsigned long long)records,
            records == 1 ? "" : "s", bytes / 1e6);
  }
  free_parts(parts, np);
  return code;
}

int main(int argc, char **argv) {
  fc_cli_tool = "cache-config";
  fc_cli_std_fds();
  enum { NOPT = sizeof options / sizeof options[0] };
  struct option longs[NOPT + 1];
  char shorts[3 * NOPT + 3];
  shorts[0] = ':';
  fc_cli_getopt_tables(options, longs, shorts + 1);
  const char *drop_cfg = NULL;
  int json = 0, count = 1, quiet = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    switch (c) {
    case OPT_DROP: /* --drop "$OLD", OLD unset: "nothing to drop" would read as done */
      if (!optarg[0])
        fc_cli_usage_error("--drop '' names no config (an empty value: an unset variable?)");
      drop_cfg =
          fc_cli_once("drop", drop_cfg, optarg, "one config per run: run --drop once for each");
      break;
    case OPT_JSON: json = 1; break;
    case OPT_NO_COUNT: count = 0; break;
    case 'q': quiet = 1; break;
    case 'h':
      fc_cli_help(stdout, synopsis, description, options, footer);
      return fc_cli_stdout_status(FC_EXIT_OK);
    case OPT_VERSION: fc_cli_version(); return fc_cli_stdout_status(FC_EXIT_OK);
    default: fc_cli_bad_option(argc, argv, longs);
    }
  }
  int nargs = argc - optind;
  if (nargs == 0) fc_cli_usage_error("no store given");
  fc_cli_no_empty_stores(argc, argv, optind);
  if (drop_cfg) {
    if (nargs != 1) fc_cli_usage_error("--drop takes one store, not %d", nargs);
    if (json || !count) /* name the options given, not one that was not */
      fc_cli_usage_error("--drop lists nothing: drop %s", json && !count ? "--json and --no-count"
                                                          : json         ? "--json"
                                                                         : "--no-count");
    return drop(argv[optind], drop_cfg, quiet);
  }
  /* one store named twice (`s s`, `s ./s/`, a split store and one of its parts): refused before
   * anything is listed, as cache-merge and cache-verify refuse it (fc_cli_store_twice: by device
   * and inode), both spellings named; a marker that cannot be read is said by its listing */
  char **expanded = NULL, twice[1024], why[512];
  size_t n_expanded = 0;
  if (fc_store_expand((const char *const *)(argv + optind), (size_t)nargs, &expanded, &n_expanded,
                      why, sizeof why) == 0) {
    const int dup =
        fc_cli_store_twice((const char *const *)(argv + optind), (size_t)nargs,
                           (const char *const *)expanded, n_expanded, twice, sizeof twice);
    fc_store_paths_free(expanded, n_expanded);
    if (dup) {
      fc_cli_warn(NULL, "%s", twice);
      return FC_EXIT_USAGE;
    }
  }
  /* Ctrl-C, SIGTERM: the store being counted is listed, the next ones not; what was listed is
   * on stdout (it was lost with the process's buffer), and the exit is 130/143 */
  fc_cli_install_signals();
  int code = FC_EXIT_OK, done = 0, listed = 0, unopened = 0;
  for (int i = optind; i < argc && !fc_cli_signal; i++) {
    int rc = list_store(argv[i], json, count);
    fc_cli_flush_stdout(); /* each store's listing out: a second Ctrl-C (a kill) keeps it */
    if (rc > code) code = rc;
    listed += rc == FC_EXIT_OK;
    unopened += rc == FC_EXIT_USAGE;
    done += !fc_cli_signal || rc != fc_cli_signal_exit(); /* not cut short by the signal */
  }
  if (fc_cli_signal) {
    fc_cli_warn(NULL, "interrupted after %d of %d store%s", done, nargs, nargs == 1 ? "" : "s");
    code = fc_cli_signal_exit();
  } else if (code != FC_EXIT_OK && unopened < nargs) {
    /* the job ran: a store that could not be opened beside others listed (or read) failed it,
     * counted (2 only when none could be opened: nothing done) */
    fc_cli_warn(NULL, "done: %d of %d store%s listed (%d failed)", listed, nargs,
                nargs == 1 ? "" : "s", nargs - listed);
    code = FC_EXIT_FAIL;
  }
  return fc_cli_stdout_status(code); /* the listing lost (a full disk) is a failure */
}
