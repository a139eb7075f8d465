/* cache-verify, step 1: the environment's pages (verify_int.h), before any B-tree is read through
 * LMDB. LMDB trusts its pages: a node offset, a key size or a value size that a flipped bit made
 * point past its page has its reads run off the page (and off the map: a crash), and a node flag
 * no featcache db has (a duplicate-data node) has them follow a NULL pointer. So every page the
 * snapshot's B-trees use — the free list's own tree, the main db's, each named db's: branch, leaf
 * and overflow pages — is read here through the map first, its number and kind checked before
 * its nodes, every offset kept inside its page, and marked once. A malformed page of a data tree
 * stops the run (said); one of the free list's tree is the free list's finding.
 *
 * Then the free list (its db 0: the pages each transaction freed, which later writes reuse), read
 * through LMDB, against those marks. No read of the store touches it, so damage there leaves a
 * store that reads, and passes, while writes fail on it once they reach the damaged part
 * (featurize, tokenize, cache-config --drop, cache-prune; its --compact at once: LMDB's compact
 * copy counts the free pages first); a page number past the last page would have a writer put
 * data where no page is, one a B-tree uses (a flipped bit) would have it write over that tree,
 * and one named twice would be handed out twice. Used, free and the two meta pages add up to the
 * last page + 1, as LMDB's own audit counts them when it commits: pages neither used nor free are
 * space no write reuses. And the two meta pages: a commit writes its meta to page (its
 * transaction id) % 2, so they hold two transactions in a row; a flipped bit that lowers the
 * newer one's id has LMDB read the store as of the older, and that commit is lost unseen.
 *
 * The layouts are LMDB 0.9's (mdb.c: MDB_page, MDB_meta, MDB_db, MDB_node, OVPAGES), as
 * libcache/core/store/extent.c reads them. */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"

enum {
  PAGEHDR = 16, /* MDB_page: pgno (8), pad (2), flags (2), lower/upper or overflow pages (4) */
  P_BRANCH = 1,
  P_LEAF = 2,
  P_OVERFLOW = 4,
  P_LEAF2 = 0x20, /* fixed-size keys without nodes: a DUPFIXED db's, which featcache has none of */
  F_BIGDATA = 1, /* a leaf node's value is the number of its first overflow page */
  F_SUBDATA = 2, /* a leaf node's value is a named db's MDB_db */
  NODEHDR = 8, /* MDB_node: lo, hi, flags, ksize (2 each) */
  META_DBS = PAGEHDR + 24, /* magic, version (4 each), address, mapsize (8 each): FREE, MAIN */
  DB_SIZE = 48,
  DB_ROOT = 40, /* MDB_db: pad (4), flags, depth (2 each), 3 page counts, entries (8 each) */
  META_LAST_PG = META_DBS + 2 * DB_SIZE,
  META_TXNID = META_LAST_PG + 8,
  MAX_DEPTH = 32, /* LMDB's cursor stack */
};

typedef struct pwalk {
  vctx *c;
  const uint8_t *map;
  size_t psize;
  uint64_t npages; /* the snapshot's: its meta's last page + 1 */
  uint64_t mapped; /* whole pages of the file in the map */
  uint8_t *used; /* a bit per page: reached from a B-tree (NULL: looking for find) */
  uint64_t n_used; /* the bits set in used */
  uint64_t find; /* owner: the page looked for; found set, and found_db, when a tree reaches it */
  int found;
  const char *found_db;
  size_t found_db_len;
  const char *db; /* the tree walked: "free list", "main", or a named db's name */
  size_t db_len;
  int partial; /* a page not what its parent says (LMDB's reads say it): the marks are short */
  /* no commit since the snapshot when the walk began: the meta page walked is the snapshot's,
   * whose pages the free list (read in the snapshot) may be held against. A commit while the
   * meta page is read can leave its trees a later commit's, which use pages the snapshot's free
   * list names (freed before the snapshot, reused since): held against it only when no commit
   * came before the free list was read either. */
  int stable;
  /* pages_only 3: a value's overflow pages counted from its size (LMDB's OVPAGES), its first page
   * not read — a page of the file per record fewer to read, the walk's cost on a cold store. The
   * pages counted are the value's, which its reads take: a page two values or trees take, or one
   * the free list names, is found as when the pages are read. A value LMDB rewrote smaller in
   * place keeps its larger run, which the count misses: pages that do not add up set redo, said
   * nothing, and the walk is made again reading each first page. A first page whose count is
   * wrong (reads do not use it; a write that frees the value does) is not seen. */
  int sizes, redo;
  int stopped; /* the run's stop flag seen (Ctrl-C): the walk ended there, nothing more is read */
  char bad[256]; /* a malformed page: what, where */
} pwalk;

static int bit(const uint8_t *b, uint64_t i) { return (b[i >> 3] >> (i & 7)) & 1; }

/* Pages [pg, pg + n) used by w->db's tree. 1 when one of them was reached before (said: a page
 * two trees share is freed by a write to one while the other reads it), or is the page looked for. */
static int mark(pwalk *w, uint64_t pg, uint64_t n) {
  if (!w->used) {
    w->found = w->find >= pg && w->find - pg < n;
    w->found_db = w->db;
    w->found_db_len = w->db_len;
    return w->found;
  }
  for (uint64_t i = pg; i < pg + n; i++) {
    if (bit(w->used, i)) {
      vf_add(w->c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
             "B-tree damaged (page %llu is reached twice, the second time from the %.*s db): a "
             "write to one of its trees frees it while the other still reads it; cache-merge -o "
             "NEW STORE copies the store into a new one",
             (unsigned long long)i, (int)w->db_len, w->db);
      return 1;
    }
    w->used[i >> 3] |= (uint8_t)(1u << (i & 7));
    w->n_used++;
  }
  return 0;
}

/* The page pgno if it is a page of the file whose header names it, else NULL. */
static const uint8_t *page_at(const pwalk *w, uint64_t pgno) {
  if (pgno < 2 || pgno >= w->npages || pgno >= w->mapped) return NULL;
  const uint8_t *p = w->map + pgno * w->psize;
  return store_get64(p) == pgno ? p : NULL;
}

/* Page pgno of the file, whose header names another page, when its flags are of kind (a B-tree
 * page, an overflow value's first page): LMDB reads it where its parent points, never looking at
 * the number, but a write that changes or frees it frees the page its header names in its place —
 * a page in use, or one past the file's end, then handed to a later write — and this one never.
 * Said (not while looking for an owner), the marks then not held to add up; NULL when not of that
 * kind (LMDB's reads find a page of the wrong kind). */
static const uint8_t *misnumbered(pwalk *w, uint64_t pgno, uint16_t kind) {
  if (pgno < 2 || pgno >= w->npages || pgno >= w->mapped) return NULL;
  const uint8_t *p = w->map + pgno * w->psize;
  if (!(store_get16(p + 10) & kind)) return NULL;
  if (w->used) {
    const int ov = kind == P_OVERFLOW;
    vf_add(w->c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "B-tree damaged (%spage %llu of the %.*s db: its header names page %llu): LMDB's reads "
           "do not look, but a write that %s frees page %llu in its place; cache-merge -o NEW "
           "STORE copies the store into a new one",
           ov ? "overflow " : "", (unsigned long long)pgno, (int)w->db_len, w->db,
           (unsigned long long)store_get64(p), ov ? "frees the value" : "changes the page",
           (unsigned long long)store_get64(p));
    w->partial = 1;
  }
  return p;
}

/* A malformed page: said into w->bad (node: its node's index, 0-based as LMDB's; NO_NODE for the
 * page's header); -1. */
#define NO_NODE ((size_t)-1)
static int malformed(pwalk *w, uint64_t pgno, const char *what, size_t node) {
  int n = snprintf(w->bad, sizeof w->bad, "page %llu of the %.*s db: %s", (unsigned long long)pgno,
                   (int)w->db_len, w->db, what);
  if (node != NO_NODE && n > 0 && (size_t)n < sizeof w->bad)
    snprintf(w->bad + n, sizeof w->bad - (size_t)n, " (node %zu)", node);
  return -1;
}

/* A leaf node's value: its overflow pages marked, or a named db walked (main). 0, 1 (stop: a
 * shared page said, or the page found), or -1 (malformed, said into w->bad). */
static int walk(pwalk *w, uint64_t pgno, int depth, int main);

static int leaf_value(pwalk *w, uint64_t pgno, size_t i, const uint8_t *node, size_t room,
                      int main) {
  const uint16_t nflags = store_get16(node + 4), ksize = store_get16(node + 6);
  const uint64_t dsize = store_get16(node) | (uint64_t)store_get16(node + 2) << 16;
  const uint8_t *data = node + NODEHDR + ksize;
  if ((nflags & ~(F_BIGDATA | F_SUBDATA)) || (nflags & F_BIGDATA && nflags & F_SUBDATA) ||
      (!main && (nflags & F_SUBDATA)))
    return malformed(w, pgno, "a node with flags no featcache db's entries have", i);
  if (nflags & F_BIGDATA) {
    if (room < 8) return malformed(w, pgno, "an overflow value's page number past the page", i);
    const uint64_t first = store_get64(data), need = (PAGEHDR - 1 + dsize) / w->psize + 1;
    if (first >= w->npages) return w->partial = 1, 0; /* LMDB's reads: MDB_PAGE_NOTFOUND */
    if (first >= w->mapped || need > w->mapped - first) /* LMDB reads it: off the map */
      return malformed(w, pgno, "an overflow value that runs past the file's end", i);
    if (w->sizes) return mark(w, first, need);
    const uint8_t *op = page_at(w, first);
    if (!op) op = misnumbered(w, first, P_OVERFLOW);
    const uint64_t n = op && (store_get16(op + 10) & P_OVERFLOW) ? store_get32(op + 12) : 0;
    if (!n || n > w->npages - first) return w->partial = 1, 0; /* not marked: LMDB's reads go on */
    if (n < need && w->used) { /* reads take the value's bytes; a write that frees it, n pages */
      vf_add(w->c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
             "B-tree damaged (overflow page %llu of the %.*s db: its page count %llu does not "
             "hold the value's %llu bytes): a write that frees it frees other pages with it; "
             "cache-merge -o NEW STORE copies the store into a new one",
             (unsigned long long)first, (int)w->db_len, w->db, (unsigned long long)n,
             (unsigned long long)dsize);
      return w->partial = 1, 0;
    }
    return mark(w, first, n);
  }
  if (nflags & F_SUBDATA) {
    if (dsize != DB_SIZE || room < DB_SIZE)
      return malformed(w, pgno, "a named db's record of the wrong size", i);
    const char *was = w->db;
    const size_t was_len = w->db_len;
    w->db = (const char *)node + NODEHDR;
    w->db_len = ksize;
    int rc = walk(w, store_get64(data + DB_ROOT), 0, 0);
    w->db = was;
    w->db_len = was_len;
    return rc;
  }
  if (dsize > room) return malformed(w, pgno, "a value that runs past the page's end", i);
  return 0;
}

/* The tree under page pgno (main: the main db's, whose named dbs are walked from its leaves). 0,
 * 1 (stop: said, or the page looked for found) or -1 (malformed: w->bad). */
static int walk(pwalk *w, uint64_t pgno, int depth, int main) {
  if (pgno == UINT64_MAX) return 0; /* an empty tree (LMDB's P_INVALID root) */
  fault_wait("check_pages", w->c->o->stop); /* test builds: FC_FAULT_WAIT=check_pages */
  if (w->c->o->stop && *w->c->o->stop) return w->stopped = 1; /* a big store's walk takes minutes */
  const uint8_t *p = page_at(w, pgno);
  if (!p && depth <= MAX_DEPTH) p = misnumbered(w, pgno, P_BRANCH | P_LEAF); /* said */
  /* not a page of the file, or not a B-tree page: LMDB's reads find it (MDB_PAGE_NOTFOUND, a page
   * of the wrong kind), or meet a child page they do not check: its own reads are checked there */
  if (!p || depth > MAX_DEPTH) return w->partial = 1, 0;
  const uint16_t flags = store_get16(p + 10), lower = store_get16(p + 12),
                 upper = store_get16(p + 14);
  if (!(flags & (P_BRANCH | P_LEAF))) return w->partial = 1, 0; /* LMDB: of the wrong kind */
  if ((flags & P_BRANCH && flags & P_LEAF) || (flags & P_LEAF2))
    return malformed(w, pgno, "a page of a kind no featcache db has", NO_NODE);
  if (lower < PAGEHDR || lower > upper || upper > w->psize || (lower - PAGEHDR) % 2)
    return malformed(w, pgno, "its node count and free space do not add up", NO_NODE);
  int rc = mark(w, pgno, 1);
  if (rc) return rc;
  const size_t n = (size_t)(lower - PAGEHDR) / 2;
  for (size_t i = 0; i < n; i++) {
    const uint16_t off = store_get16(p + PAGEHDR + 2 * i);
    if (off < upper || (size_t)off + NODEHDR > w->psize)
      return malformed(w, pgno, "a node outside the page's nodes", i);
    const uint8_t *node = p + off;
    const size_t key_end = (size_t)off + NODEHDR + store_get16(node + 6);
    if (key_end > w->psize) return malformed(w, pgno, "a key that runs past the page's end", i);
    if (flags & P_BRANCH) /* the child's number: lo, hi and flags (LMDB's NODEPGNO) */
      rc = walk(w,
                store_get16(node) | (uint64_t)store_get16(node + 2) << 16 |
                    (uint64_t)store_get16(node + 4) << 32,
                depth + 1, main);
    else
      rc = leaf_value(w, pgno, i, node, w->psize - key_end, main);
    if (rc) return rc;
  }
  return 0;
}

/* The meta pages: two transactions in a row, the newer the snapshot's. Checked only when no commit
 * came while they were read (a writer's own). */
static void check_metas(vctx *c, const uint8_t *map, size_t psize) {
  MDB_envinfo a, b;
  if (mdb_env_info(c->s->env, &a) != 0) return;
  const uint64_t t[2] = {store_get64(map + META_TXNID), store_get64(map + psize + META_TXNID)};
  const uint64_t last[2] = {store_get64(map + META_LAST_PG),
                            store_get64(map + psize + META_LAST_PG)};
  if (mdb_env_info(c->s->env, &b) != 0) return;
  const uint64_t snap = c->snapshot;
  const int cur = t[0] < t[1]; /* the page LMDB reads (mdb_env_pick_meta) */
  if (a.me_last_txnid != snap || b.me_last_txnid != snap || t[cur] != snap) return;
  const uint64_t other = t[!cur];
  if (snap == 0 && other == 0) return;
  if ((snap & 1) == (uint64_t)cur && other + 1 == snap) {
    /* two in a row; but a commit never names fewer pages than the one before it (LMDB gives no
     * page back to the file): an older page that names more held a later commit, whose id a
     * flipped bit lowered to one below the newer's (e.g. 3 to 1 beside 2) */
    if (last[!cur] > last[cur])
      vf_add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
             "meta page damaged (page %d names transaction %llu and %llu pages, page %d "
             "transaction %llu and %llu pages; a commit never names fewer pages than the one "
             "before it, so page %d held a later commit and its transaction id was lowered): the "
             "store reads as of transaction %llu; that later commit is lost, and featurize or "
             "tokenize run again stores what it held",
             !cur, (unsigned long long)other, (unsigned long long)last[!cur] + 1, cur,
             (unsigned long long)snap, (unsigned long long)last[cur] + 1, !cur,
             (unsigned long long)snap);
    return;
  }
  vf_add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
         "meta page damaged (page %d names transaction %llu, page %d %llu; commits leave two in a "
         "row, page id %% 2 holding id): the store reads as of transaction %llu; %s",
         cur, (unsigned long long)snap, !cur, (unsigned long long)other, (unsigned long long)snap,
         last[!cur] > last[cur]
             ? "the other page, the newer (it names more pages), is the damaged one: its commit is "
               "lost, and featurize or tokenize run again stores what that commit held"
             : "if the damaged page was the newer, its commit is lost (featurize or tokenize run "
               "again stores what it held); the next commit writes over it");
}

/* The tree that uses page pg (after the free list named it), into w->db. */
static void owner(pwalk *w, const uint8_t *meta, uint64_t pg) {
  pwalk o = *w;
  o.used = NULL;
  o.find = pg;
  o.db = "free list";
  o.db_len = strlen(o.db);
  if (walk(&o, store_get64(meta + META_DBS + DB_ROOT), 0, 0) <= 0) {
    o.db = "main";
    o.db_len = strlen(o.db);
    walk(&o, store_get64(meta + META_DBS + DB_SIZE + DB_ROOT), 0, 1);
  }
  w->db = o.found ? o.found_db : "unknown";
  w->db_len = o.found ? o.found_db_len : strlen(w->db);
}

/* LMDB's free list, read through its cursor: each entry a list of page numbers (count first), each
 * page 2..last, named once, used by no tree. Said into bad; *free_pages counts them. LMDB's
 * assertion on a damaged page is caught (store_lmdb_assert): its message into bad and
 * MDB_CORRUPTED. *open holds the cursor while it is open (closed by the caller after a jump). */
static int walk_free_list(pwalk *w, const uint8_t *meta, MDB_txn *txn, uint8_t *freeb, char *bad,
                          char *uses, size_t bad_len, uint64_t *free_pages, MDB_cursor **open) {
  const size_t last = (size_t)w->npages - 1;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, 0, &cur);
  if (rc) return rc;
  *open = cur;
  MDB_val k, v;
  while (!bad[0] && !uses[0] && (rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
    const uint8_t *p = v.mv_data;
    size_t n = 0;
    if (p < w->c->map_lo || p + v.mv_size > w->c->map_hi || v.mv_size < sizeof n ||
        v.mv_size % sizeof n || (memcpy(&n, p, sizeof n), n != v.mv_size / sizeof n - 1)) {
      snprintf(bad, bad_len, "an entry of %zu bytes is no list of page numbers", v.mv_size);
      break;
    }
    for (size_t i = 1; i <= n && !bad[0] && !uses[0]; i++) {
      size_t pg;
      memcpy(&pg, p + i * sizeof pg, sizeof pg);
      if (pg < 2 || pg > last) {
        snprintf(bad, bad_len, "it names page %zu, not a page of the file (2..%zu)", pg, last);
      } else if (bit(freeb, pg)) {
        snprintf(bad, bad_len, "it names page %zu twice", pg);
      } else if (w->stable && bit(w->used, pg)) {
        owner(w, meta, pg);
        snprintf(uses, bad_len, "it names page %zu, which the %.*s B-tree uses", pg, (int)w->db_len,
                 w->db);
      } else {
        freeb[pg >> 3] |= (uint8_t)(1u << (pg & 7));
        ++*free_pages;
      }
    }
  }
  mdb_cursor_close(cur);
  *open = NULL;
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int walk_free_list_guarded(pwalk *w, const uint8_t *meta, MDB_txn *txn, uint8_t *freeb,
                                  char *bad, char *uses, size_t bad_len, uint64_t *free_pages,
                                  MDB_cursor **open) {
  sigjmp_buf jb, *outer = store_lmdb_jump;
  if (sigsetjmp(jb, 0)) {
    store_lmdb_jump = outer;
    snprintf(bad, bad_len, "LMDB: %s", store_lmdb_why);
    return MDB_CORRUPTED;
  }
  store_lmdb_jump = &jb;
  int rc = walk_free_list(w, meta, txn, freeb, bad, uses, bad_len, free_pages, open);
  store_lmdb_jump = outer;
  return rc;
}

/* The free list's finding and the count, w's marks made. 0, or ENOMEM; *lost when LMDB failed the
 * snapshot's transaction on a damaged page and it could not be renewed on it (said). */
static int check_free_list(pwalk *w, const uint8_t *meta, fc_rtxn *t, int *lost) {
  char bad[320] = "", uses[320] = "";
  MDB_cursor *open = NULL;
  uint64_t free_pages = 0;
  int rc = 0;
  if (w->bad[0]) { /* the free list's own tree malformed: LMDB's walk of it could crash */
    snprintf(bad, sizeof bad, "%s", w->bad);
  } else {
    uint8_t *freeb = fc_calloc((size_t)(w->npages + 7) / 8, 1); /* a bit per page it names */
    if (!freeb) return ENOMEM;
    rc = walk_free_list_guarded(w, meta, t->txn, freeb, bad, uses, sizeof bad, &free_pages, &open);
    if (open) mdb_cursor_close(open); /* left open by a jump */
    free(freeb);
    if (rc && !bad[0]) snprintf(bad, sizeof bad, "LMDB: %s", mdb_strerror(rc));
    MDB_envinfo ei;
    if (mdb_env_info(w->c->s->env, &ei) != 0 || ei.me_last_txnid != w->c->snapshot)
      w->stable = 0; /* a commit meanwhile: the trees walked may be a later commit's */
    if (!bad[0] && w->stable) memcpy(bad, uses, sizeof bad);
  }
  if (bad[0])
    vf_add(w->c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "free list damaged (%s): the store reads, but writes fail on it or could overwrite "
           "data (featurize, tokenize, cache-config --drop, cache-prune); cache-merge -o NEW "
           "STORE copies it into a new store",
           bad);
  else if (w->stable && !w->partial && !uses[0] &&
           w->n_used + free_pages + 2 < w->npages) { /* LMDB's audit: they add up */
    if (w->sizes) return w->redo = 1, 0; /* a run the count missed? said by the walk again */
    const uint64_t lost_pages = w->npages - 2 - w->n_used - free_pages;
    vf_add(w->c, FC_VERIFY_WARNING, DB_ENV, "data.mdb", 8, NULL, 0,
           "%llu page%s (%.1f MB) neither in a B-tree nor on the free list: space no write "
           "reuses (the pages LMDB counted do not add up); cache-merge -o NEW STORE copies the "
           "store into a new one",
           (unsigned long long)lost_pages, lost_pages == 1 ? "" : "s",
           (double)lost_pages * (double)w->psize / 1e6);
  }
  if (rc) *lost = vf_txn_recover(w->c, t) != 0; /* LMDB fails a transaction that met a damage */
  return 0;
}

/* The trees of the snapshot's meta page walked (when have_meta) and the free list checked against
 * them, w's marks made afresh. 0, or ENOMEM. */
static int walk_all(pwalk *w, const uint8_t *meta, int have_meta, fc_rtxn *t, int *lost) {
  if (!(w->used = fc_calloc((size_t)(w->npages + 7) / 8, 1))) return ENOMEM;
  char free_bad[sizeof w->bad] = "", data_bad[sizeof w->bad] = "";
  if (have_meta) {
    w->db = "free list";
    w->db_len = strlen(w->db);
    if (walk(w, store_get64(meta + META_DBS + DB_ROOT), 0, 0)) w->partial = 1; /* said, malformed */
    memcpy(free_bad, w->bad, sizeof free_bad);
    w->bad[0] = '\0';
  }
  /* pages_only 2, the free list alone: no data tree walked, none held against it */
  if (w->c->o->pages_only == 2) {
    w->partial = 1;
    w->stable = 0;
    memcpy(w->bad, free_bad, sizeof w->bad);
  } else if (have_meta) {
    w->db = "main";
    w->db_len = strlen(w->db);
    if (walk(w, store_get64(meta + META_DBS + DB_SIZE + DB_ROOT), 0, 1)) w->partial = 1;
    memcpy(data_bad, w->bad, sizeof data_bad);
    memcpy(w->bad, free_bad, sizeof w->bad); /* the free list's tree, for check_free_list */
  } else {
    w->partial = 1; /* no tree walked: the free list alone is checked (its pages, each once) */
  }
  int err = 0;
  if (w->stopped) { /* nothing more read: fc_verify_store returns FC_EINTR */
  } else if (data_bad[0]) { /* LMDB's reads of that page could crash the run: none is made */
    vf_add(w->c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "B-tree damaged (%s): LMDB's reads of that page could crash, so the checks after it "
           "were not made; the store cannot be read safely: restore it from a copy, or make it "
           "again (featurize, tokenize)",
           data_bad);
    w->c->r->unsafe_pages = 1;
    *lost = 1;
  } else {
    err = check_free_list(w, meta, t, lost);
  }
  free(w->used);
  return err;
}

int vf_check_pages(vctx *c, fc_rtxn *t, int *lost) {
  MDB_stat st;
  if (mdb_env_stat(c->s->env, &st) != 0 || st.ms_psize < 1024) return 0;
  pwalk w = {.c = c,
             .map = c->map_lo,
             .psize = st.ms_psize,
             .mapped = (uint64_t)(c->map_hi - c->map_lo) / st.ms_psize};
  if (w.mapped < 2) return 0;
  MDB_envinfo ei;
  w.stable = mdb_env_info(c->s->env, &ei) == 0 && ei.me_last_txnid == c->snapshot;
  check_metas(c, w.map, w.psize);
  /* the snapshot's meta page, copied twice (equal, and still the snapshot's: not one a writer was
   * writing over); two commits after the snapshot it is gone, and the trees are not walked */
  uint8_t meta[META_TXNID + 8], again[sizeof meta];
  int have_meta = 0;
  for (uint64_t m = 0; m < 2 && !have_meta; m++) {
    memcpy(meta, w.map + m * w.psize, sizeof meta);
    memcpy(again, w.map + m * w.psize, sizeof again);
    have_meta = store_get64(meta + META_TXNID) == c->snapshot && !memcmp(meta, again, sizeof meta);
  }
  w.stable = w.stable && have_meta;
  w.npages = have_meta ? store_get64(meta + META_LAST_PG) + 1 : (uint64_t)ei.me_last_pgno + 1;
  if (w.npages < 2) return 0;
  /* pages_only 3 counts overflow pages from the values' sizes; pages that then do not add up have
   * the walk made again as pages_only 1 makes it (every first page read) */
  const pwalk start = w;
  int err = 0;
  for (int sizes = c->o->pages_only == 3; sizes >= 0; sizes--) {
    w = start;
    w.sizes = sizes;
    if ((err = walk_all(&w, meta, have_meta, t, lost)) != 0 || !w.redo) break;
  }
  /* stopped: the pages after it unchecked, so no step may read the trees through LMDB */
  return err ? err : w.stopped ? FC_EINTR : 0;
}
