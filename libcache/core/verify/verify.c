/* cache-verify's engine: every check a store must pass before a training run (fc_verify.h).
 *
 * Order matters for safety: LMDB trusts its pages, so before any B-tree page is touched the file
 * is checked to be as long as its last committed page (a truncated data.mdb would otherwise SIGBUS
 * on the first page past the end), and every value is checked to lie inside the file before its
 * bytes are read. Records are checked in parallel over 256 key ranges per db (keys are uniform
 * hashes, so the ranges are balanced), one read transaction per thread (MDB_NOTLS), all of one
 * snapshot (open_snapshot). */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/args.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"

/* Report order: the environment first, then meta, entries, records, indexes, the manifest,
 * recorded failures. */
static const int db_rank[] = {1, 2, 3, 4, 5, 8, 0, 7, 6};

static int db_index(const char *name) {
  for (int i = 0; i < VF_N_DBS; i++)
    if (strcmp(vf_db_names[i], name) == 0) return i;
  return 0;
}

static int cmp_str(const char *a, const char *b) {
  if (!a || !b) return (a != NULL) - (b != NULL);
  return strcmp(a, b);
}

static int cmp_finding(const void *pa, const void *pb) {
  const fc_verify_finding *a = pa, *b = pb;
  if (a->severity != b->severity) return a->severity - b->severity;
  int ra = db_rank[db_index(a->db)], rb = db_rank[db_index(b->db)];
  if (ra != rb) return ra - rb;
  int d = cmp_str(a->key, b->key);
  if (d) return d;
  if ((d = cmp_str(a->id, b->id))) return d;
  return cmp_str(a->problem, b->problem);
}

/* ---- step 1: the environment, read with pread-safe LMDB calls only ------------------------- */

typedef struct reader_scan {
  uint32_t stale, slots; /* slots of dead processes; slots taken */
  uint32_t procs; /* dead processes, each named once in pids (as room allows) */
  int seen[64]; /* the first dead processes, for naming each once */
  char pids[160];
} reader_scan;

static int reader_line(const char *msg, void *ctx) {
  reader_scan *rs = ctx;
  int pid;
  for (const char *line = msg; line && *line;) {
    if (sscanf(line, "%d", &pid) == 1 && pid > 0) {
      rs->slots++;
      if (kill(pid, 0) != 0 && errno == ESRCH) {
        uint32_t k = 0, n_seen = rs->procs < 64 ? rs->procs : 64;
        while (k < n_seen && rs->seen[k] != pid) k++;
        if (k == n_seen) { /* a process not named yet (one past the first 64: counted again) */
          size_t n = strlen(rs->pids);
          if (n + 16 < sizeof rs->pids)
            snprintf(rs->pids + n, sizeof rs->pids - n, "%s%d", n ? " " : "", pid);
          if (rs->procs < 64) rs->seen[rs->procs] = pid;
          rs->procs++;
        }
        rs->stale++;
      }
    }
    line = strchr(line, '\n');
    if (line) line++;
  }
  return 0;
}

/* A copy a killed cache-prune --compact left beside data.mdb: it takes room as large as the
 * store's data, and nothing but a later cache-prune removes it. */
static void leftover_copy(void *ctx, const char *name, uint64_t bytes) {
  vf_add(ctx, FC_VERIFY_WARNING, DB_ENV, name, strlen(name), NULL, 0,
         "a compact copy a killed cache-prune --compact left (%.1f MB): the next cache-prune that "
         "is not a dry run removes it",
         bytes / 1e6);
}

/* Open the environment with MDB_NOLOCK (nothing written, no lock taken) and compare the file's
 * length with the last committed page named by the meta pages (read by LMDB with pread; the meta
 * pages are the first two pages, inside any file that opened). 0: safe to open the store; 1: a
 * finding was made and nothing else must be read; or an errno. */
static int preflight(vctx *c, const char *dir, int nolock) {
  fc_verify_report *r = c->r;
  vf_env e;
  int rc = vf_env_read(dir, &e);
  r->data_size = e.file_size;
  /* a tool's page check (pages_only): a file that is no environment (an empty one, which the
   * writing tools take as new), or is truncated, is the tool's open's to say (FC_ETRUNCATED, ...):
   * said here, the check would call it damaged and refuse a store they take as new */
  if (c->o->pages_only && ((rc && e.not_lmdb) || (!rc && vf_env_truncated(dir, &e)))) return 1;
  if (rc && e.not_lmdb && e.file_size == 0) { /* LMDB made the file, wrote no page */
    vf_add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "an empty file: LMDB never wrote its first pages (a full disk, or its writer stopped, "
           "as it made the store); featurize, tokenize and cache-merge take it as new");
    return 1;
  }
  if (rc && e.not_lmdb) {
    vf_add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "not an LMDB environment (%llu bytes; its meta pages are missing or damaged): %s",
           (unsigned long long)e.file_size, mdb_strerror(rc));
    return 1;
  }
  if (rc) return rc;
  r->page_size = e.page_size;
  r->map_size = e.map_size;
  r->map_used = e.used;
  r->max_readers = e.max_readers;
  if (vf_env_truncated(dir, &e)) {
    vf_add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "truncated: %llu bytes, but the last committed page (%zu) ends at byte %llu; "
           "nothing else was read",
           (unsigned long long)e.file_size, e.last_pgno, (unsigned long long)e.used);
    return 1;
  }
  store_compact_leftovers_seen(dir, leftover_copy, c);
  MDB_env *env;

  if (!nolock) { /* stale reader slots: listed; cleared (mdb_reader_check) when asked or full */
    rc = mdb_env_create(&env);
    if (rc) return rc;
    mdb_env_set_maxdbs(env, 8);
    rc = mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS, 0664);
    if (!rc) {
      reader_scan rs = {0};
      MDB_envinfo e2 = {0};
      mdb_reader_list(env, reader_line, &rs);
      if (mdb_env_info(env, &e2) == 0) r->num_readers = e2.me_numreaders;
      r->stale_readers = rs.stale;
      int dead = 0;
      /* a table with no slot free: cleared whether asked or not, as any open of the store would
       * (store_txn_begin_read), and said */
      const int full = e2.me_maxreaders && rs.slots >= e2.me_maxreaders;
      if (rs.stale && (c->o->clear_stale_readers || full) && store_reader_check(env, &dead) == 0 &&
          dead > 0) {
        r->stale_cleared = (uint32_t)dead;
        r->stale_readers = rs.stale > (unsigned)dead ? rs.stale - (unsigned)dead : 0;
        if (mdb_env_info(env, &e2) == 0) r->num_readers = e2.me_numreaders;
        if (full)
          vf_add(c, FC_VERIFY_WARNING, DB_ENV, "lock.mdb", 8, NULL, 0,
                 "%d stale reader slot%s of %u dead process%s (pid %s) cleared: the reader table "
                 "was full",
                 dead, dead == 1 ? "" : "s", rs.procs, rs.procs == 1 ? "" : "es", rs.pids);
      }
      if (r->stale_readers && !(full && dead > 0))
        vf_add(c, FC_VERIFY_WARNING, DB_ENV, "lock.mdb", 8, NULL, 0,
               "%u stale reader slot%s (dead pid %s): old pages stay pinned and the file grows; "
               "clear them with cache-verify --clear-stale-readers",
               rs.stale, rs.stale == 1 ? "" : "s", rs.pids);
    }
    store_env_close(env);
    if (rc) return rc;
  }
  return 0;
}

/* ---- one snapshot ---------------------------------------------------------------------------- */

/* The read transactions of the run: *main (the checks of the main thread) and c->pool, one per
 * thread of the parallel steps (pool[0] is *main; LMDB lets no two threads share one), all of the
 * same snapshot, so that a writer committing meanwhile (featurize adding, cache-config --drop
 * deleting) never makes the entries and the records disagree. Begun back to back and compared by
 * transaction id; after a few tries under a writer that commits without pause, one thread reads
 * the one snapshot. All are begun and ended on the calling thread (each holds the map lock for
 * reading: nothing may begin a transaction that adopts a grown map while they are held). */
static int open_snapshot(vctx *c, int *nthreads, fc_rtxn **main) {
  int n = *nthreads > 1 ? *nthreads : 1;
  c->pool = fc_calloc((size_t)n, sizeof *c->pool);
  if (!c->pool) return ENOMEM;
  for (int attempt = 0;; attempt++) {
    if (attempt == 16) n = 1;
    int rc = 0, same = 1;
    size_t id = 0;
    c->npool = 0;
    while (c->npool < n && same) {
      if ((rc = store_read_begin_held(c->s, &c->pool[c->npool])) != 0) break;
      size_t k = mdb_txn_id(c->pool[c->npool++]->txn);
      if (c->npool == 1) id = k;
      same = k == id;
    }
    if (!rc && same) {
      c->snapshot = id;
      *main = c->pool[0];
      *nthreads = n;
      return 0;
    }
    while (c->npool > 0) fc_rtxn_end(c->pool[--c->npool]);
    /* another process grew the map: adopt it, now that no transaction is held */
    if (rc == MDB_MAP_RESIZED) rc = store_adopt_map(c->s);
    if (rc) return rc;
  }
}

/* The checks on the opened store, in report order; *t is the snapshot's main transaction. */
static int run_checks(vctx *c, const char *dir, int *nthreads, fc_rtxn **t, char *why,
                      size_t why_len) {
  int rc;
  const fc_verify_opts *o = c->o;
  /* one snapshot for every check, its threads' included (a writer may commit meanwhile) */
  if ((rc = open_snapshot(c, nthreads, t)) != 0) return rc;
  c->r->threads = *nthreads;
  /* The file as long as it is now: it only grows while open, and every page of the snapshot was
   * written before the snapshot began (a writer may have grown it since the preflight). */
  struct stat fst;
  char mdb[4096];
  snprintf(mdb, sizeof mdb, "%s/data.mdb", dir);
  if (stat(mdb, &fst) == 0 && (uint64_t)fst.st_size > c->r->data_size)
    c->r->data_size = (uint64_t)fst.st_size;
  const void *base;
  size_t maplen;
  if ((rc = fc_store_map_region(c->s, &base, &maplen)) != 0) return rc;
  c->map_lo = base;
  c->map_hi = (const uint8_t *)base + (maplen < c->r->data_size ? maplen : c->r->data_size);
  for (int i = 0; i < FC_DB_COUNT && !rc; i++) rc = fc_rtxn_count(*t, i, &c->r->entries[i]);
  if (rc) return rc;
  c->r->opened = 1;

  int lost = 0; /* the pages (verify_pages.c): a page LMDB's reads could crash on stops the run */
  if ((rc = vf_check_pages(c, *t, &lost)) != 0 || lost) return rc; /* lost: said, no more read */
  if (o->pages_only) return 0;
  if ((rc = vf_read_meta(c, *t)) != 0) return rc;
  vf_check_part_place(c, dir);
  if ((rc = vf_resolve_expected(c, *t, why, why_len)) != 0) return rc;
  if ((rc = vf_collect(c, *t, FC_DB_AUDIO, &c->audio, &c->n_audio)) != 0) return rc;
  if ((rc = vf_collect(c, *t, FC_DB_TEXT, &c->text, &c->n_text)) != 0) return rc;
  if ((rc = vf_collect_failures(c, *t)) != 0) return rc;
  if ((rc = vf_build_expected(c)) != 0) return rc;
  if (!vf_stopping(c) && (rc = vf_check_entries(c, *nthreads)) != 0) return rc;
  if (!vf_stopping(c) && (rc = vf_check_records(c, *nthreads)) != 0) return rc;
  if (!vf_stopping(c)) vf_report_tok_files(c);
  if (!vf_stopping(c) && o->manifest) vf_check_manifest(c);
  if (!vf_stopping(c) && !o->manifest) vf_count_unpaired(c);
  if (!vf_stopping(c) && (rc = vf_check_index(c, *t)) != 0) return rc;
  if (!vf_stopping(c)) vf_report_failures(c, *t);
  return 0;
}

/* run_checks' arguments, for store_lmdb_guarded; returned: run_checks returned (else LMDB's
 * assertion jumped out of it). */
typedef struct run_checks_args {
  vctx *c;
  const char *dir;
  int *nthreads;
  fc_rtxn **t;
  char *why;
  size_t why_len;
  int returned;
} run_checks_args;

static int run_checks_call(void *arg) {
  run_checks_args *a = arg;
  int rc = run_checks(a->c, a->dir, a->nthreads, a->t, a->why, a->why_len);
  a->returned = 1;
  return rc;
}

/* run_checks with LMDB's assertions on damaged pages caught (store_lmdb_assert): a finding. */
static int run_guarded(vctx *c, const char *dir, int *nthreads, fc_rtxn **t, char *why,
                       size_t why_len) {
  run_checks_args ra = {c, dir, nthreads, t, why, why_len, 0};
  int rc = store_lmdb_guarded(run_checks_call, &ra);
  if (!ra.returned) { /* LMDB met a page its B-tree cannot have: the walk cut short */
    vf_add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "B-tree damaged (LMDB: %s); the checks after it were not made", store_lmdb_why);
    return 0;
  }
  return rc;
}

/* ---- the whole run --------------------------------------------------------------------------- */

void fc_verify_report_free(fc_verify_report *r) {
  if (!r) return;
  for (size_t i = 0; i < r->count; i++) {
    free((char *)r->findings[i].key);
    free((char *)r->findings[i].id);
    free((char *)r->findings[i].problem);
  }
  free(r->findings);
  free((char *)r->text_only_first);
  free((char *)r->audio_only_first);
  memset(r, 0, sizeof *r);
}

/* fn(txn, arg) on dir's environment opened apart, read-only and lock-free, for the message of a
 * store that fc_store_open refused (not called when the environment cannot be had). */
static void env_peek(const char *dir, void (*fn)(MDB_txn *txn, void *arg), void *arg) {
  MDB_env *env;
  MDB_txn *txn;
  if (mdb_env_create(&env)) return;
  mdb_env_set_maxdbs(env, 8);
  if (!mdb_env_open(env, dir, MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0) &&
      !store_txn_begin(env, MDB_RDONLY, &txn)) {
    fn(txn, arg);
    store_txn_abort(txn);
  }
  store_env_close(env);
}

/* Nothing in the main db: a store whose writer was stopped before its first commit (the writing
 * tools take it as new). */
static void main_db_empty(MDB_txn *txn, void *arg) {
  MDB_dbi dbi;
  MDB_stat st;
  *(int *)arg = !mdb_dbi_open(txn, NULL, 0, &dbi) && !mdb_stat(txn, dbi, &st) && st.ms_entries == 0;
}

/* The format a store says it has (meta/format, printable, at most 31 bytes) into ((char *)arg),
 * a buffer of 32 bytes ("" when it says none), for the message of a store of another version. */
static void meta_format(MDB_txn *txn, void *arg) {
  char *buf = arg;
  MDB_dbi dbi;
  MDB_val k = {6, (void *)"format"}, v;
  if (!mdb_dbi_open(txn, "meta", 0, &dbi) && !mdb_get(txn, dbi, &k, &v)) {
    size_t n = v.mv_size < 32 ? v.mv_size : 0;
    for (size_t i = 0; i < n; i++) {
      const unsigned char ch = ((const unsigned char *)v.mv_data)[i];
      buf[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    buf[n] = '\0';
  }
}

int fc_verify_store(const char *dir, const fc_verify_opts *o, fc_verify_report *out, char *why,
                    size_t why_len) {
  FC_ARGS_WHY(dir, out);
  fc_verify_opts defaults;
  if (!o) {
    fc_verify_opts_init(&defaults);
    o = &defaults;
  }
  memset(out, 0, sizeof *out);
  if (why && why_len) why[0] = '\0';
  vctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.r = out;
  c.max_warnings = o->max_warnings ? o->max_warnings : 10000;
  c.t0 = vf_now_s();
  pthread_mutex_init(&c.mu, NULL);
  int nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
  out->threads = nthreads;
  fc_rtxn *t = NULL;
  int rc;
  if (!dir || !*dir) {
    rc = EINVAL;
    goto done;
  }
  unsigned split_n = 0;
  if ((rc = fc_store_split_count(dir, &split_n)) != 0) {
    char mp[4096]; /* the marker, quoted as names are */
    snprintf(mp, sizeof mp, "%s/featcache-split", dir);
    fc_why(why, why_len, "%s: %s", FC_WHY_NAME(mp),
           rc == FC_EFORMAT ? "not a split-store marker (featcache-split/1 N)" : fc_strerror(rc));
    goto done;
  }
  if (split_n) { /* the split store as a whole; its parts are verified one by one */
    rc = vf_verify_split(&c, dir, split_n, why, why_len);
    goto done;
  }

  int nolock = store_wants_nolock(dir, o->nolock);
  out->nolock = nolock;
  rc = preflight(&c, dir, nolock);
  if (rc == 1) {
    rc = 0;
    goto done;
  }
  if (rc) goto done;

  /* the free list, or the trees' pages with the records' counted (pages_only 2, 3): a page here
   * and there, each read by itself, not the disk's read-ahead around it. The walk that reads each
   * record's first page (1) keeps the read-ahead: on a disk that seeks, reading most of the file
   * in large requests costs less than a seek per record. */
  rc = fc_store_open(dir,
                     FC_STORE_RDONLY | (nolock ? FC_STORE_NOLOCK : 0) |
                         (o->pages_only >= 2 ? FC_STORE_NORDAHEAD : 0),
                     &c.s);
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) { /* a page the open reads (extent.c) */
    vf_add(&c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "B-tree damaged (a page of the main db or the meta db, which opening the store reads: "
           "LMDB: %s): LMDB's reads of that page could crash, so the checks after it were not "
           "made; the store cannot be read safely: restore it from a copy, or make it again "
           "(featurize, tokenize)",
           mdb_strerror(rc));
    out->unsafe_pages = 1;
    rc = 0;
    goto done;
  }
  if (rc == FC_EFORMAT || rc == FC_EVERSION || rc == MDB_INVALID) {
    char found[32] = "", version[160] = "";
    int empty = 0;
    if (rc == FC_EVERSION) env_peek(dir, meta_format, found);
    if (rc == FC_EFORMAT) env_peek(dir, main_db_empty, &empty);
    snprintf(
        version, sizeof version,
        "a featcache store of a format version this build does not know (%s%s%sit reads " FC_FORMAT_NAME
        "): made by a newer featcache?",
        found[0] ? "it says " : "", found, found[0] ? "; " : "");
    vf_add(&c, FC_VERIFY_ERROR, FC_DB_META, "format", 6, NULL, 0, "%s",
           rc == FC_EVERSION ? version
           : rc == FC_EFORMAT && empty
               ? "an empty store: nothing was ever committed to it (its writer stopped before "
                 "its first commit?); featurize, tokenize and cache-merge take it as new"
           : rc == FC_EFORMAT ? "not a featcache store: no meta db with format " FC_FORMAT_NAME
                              : mdb_strerror(rc));
    rc = 0;
    goto done;
  }
  if (rc) goto done;
  fc_store_info info; /* before the snapshot: it begins a transaction of its own */
  if ((rc = fc_store_info_get(c.s, &info)) != 0) goto done;
  out->map_size = info.map_size;
  out->map_used = info.map_used;
  c.bytes_total = info.map_used;
  mdb_env_set_assert(c.s->env, store_lmdb_assert);
  rc = run_guarded(&c, dir, &nthreads, &t, why, why_len);
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) { /* the same, said by LMDB as a code */
    vf_add(&c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "B-tree damaged (LMDB: %s); the checks after it were not made", mdb_strerror(rc));
    rc = 0;
  } else if (rc == MDB_BAD_TXN) { /* a read of the snapshot failed before (LMDB fails the
                                   * transaction on a damaged page: a page past the file's last
                                   * page, say, after a damaged meta page), and a step went on */
    if (!atomic_load(&c.lost))
      vf_add(&c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
             "B-tree damaged (LMDB failed a read of the snapshot: a page past the last page its "
             "meta page gives, or a page of the wrong kind); the checks after it were not made");
    rc = 0;
  }
  if (o->stop && *o->stop) rc = FC_EINTR;

done:
  if (rc && rc != FC_EINTR && why && why_len && !why[0])
    snprintf(why, why_len, "%s", fc_strerror(rc));
  for (int i = 1; i < c.npool; i++) fc_rtxn_end(c.pool[i]);
  free(c.pool);
  fc_cursor_close(c.cur); /* left open by a damaged page */
  if (c.ix_cur) mdb_cursor_close(c.ix_cur);
  fc_rtxn_end(t);
  fc_store_close(c.s);
  free(c.audio);
  free(c.text);
  free(c.fails);
  free(c.exp);
  free(c.cfgs);
  pthread_mutex_destroy(&c.mu);
  if (out->count) qsort(out->findings, out->count, sizeof *out->findings, cmp_finding);
  out->wall_seconds = vf_now_s() - c.t0;
  return rc;
}
