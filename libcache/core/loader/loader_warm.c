/* Reading the index ahead of the loader's walk. index_store_fast walks each index (and, when their
 * counts differ, the entries) in key order through the map, which fc_loader_open advises RANDOM:
 * on a store not in memory every leaf page is one read, waited for before the next is known
 * (~2 µs an utterance on a virtual disk, 1.46 s at 1M). The pages' places are known before the
 * walk needs them, from the trees' branch pages: a thread reads the branch levels (one level's
 * pages asked for at once, then read), gathers every leaf page number, and asks the kernel for
 * them all in file order (madvise WILLNEED: reads queued without waiting, adjacent pages in one
 * request), while the walk goes on beside it. On a store already in memory it stops after the
 * branch pages and a sample of leaves (mincore).
 *
 * The branch pages are LMDB's (0.9's data format, mdb.c: a 16-byte page header {pgno, pad, flags,
 * lower, upper}, then 2-byte node offsets; a branch node starts with its child's page number in
 * three 16-bit words, low first), read only as advice: every value is checked against the tree's
 * own counts (mdb_stat) and the file's size before use, a page that does not look as expected
 * ends the warming (never the walk), and nothing is written. A page is touched only below the
 * file's size, so a wrong number cannot fault past its end. Other LMDB versions are not warmed. */
#include "libcache/core/loader/loader_int.h"

#include "formats/common/alloc.h"
#include "formats/common/thread_name.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  PAGE_HEADER = 16, /* pgno u64, pad u16, flags u16, lower u16, upper u16 */
  P_BRANCH = 0x01,
  P_LEAF = 0x02,
  P_OVERFLOW = 0x04,
  P_META = 0x08,
  DB_RECORD = 48, /* a named db's record in the main db: pad u32, flags u16, depth u16, branch,
                     leaf, overflow pages, entries, root: u64 each */
  MAIN_DBI = 1, /* LMDB's main db (named dbs' records) */
  WARM_MIN_LEAVES = 64, /* fewer: the walk reads them sooner than a thread starts */
  SAMPLE = 64, /* leaves mincore'd to tell a store in memory */
};

typedef struct warm_tree {
  uint64_t root, branch, leaf;
  unsigned depth;
} warm_tree;

struct ld_warm {
  const uint8_t *map;
  size_t psize;
  uint64_t file_pages; /* pages below the file's size at the start */
  warm_tree tree[LD_WARM_MAX_TREES];
  unsigned n;
  int advise_all; /* tests: ask for the leaves even when the sample finds them in memory */
  int finish; /* tests: run to the end before the open returns (not stopped by the walk's end) */
  int sync; /* tests: run on the opening thread before the walk begins (no thread) */
  atomic_int stop;
  pthread_t th;
  ld_warm_stats st;
};

static uint16_t u16_at(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static uint64_t u64_at(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* madvise WILLNEED pages pg[0..n) (sorted), each run of adjacent pages in one call; the pages
 * asked for (fewer when stopped). */
static uint64_t advise(ld_warm *w, const uint64_t *pg, size_t n) {
  size_t i = 0;
  while (i < n && !atomic_load_explicit(&w->stop, memory_order_relaxed)) {
    size_t j = i + 1;
    while (j < n && pg[j] == pg[j - 1] + 1) j++;
    madvise((void *)(w->map + pg[i] * w->psize), (j - i) * w->psize, MADV_WILLNEED);
    w->st.requests++;
    i = j;
  }
  return i;
}

/* Append the children of branch page pgno to *out; 0, or -1 when the page is not a branch page
 * of this file as LMDB 0.9 writes one. */
static int children(const ld_warm *w, uint64_t pgno, uint64_t **out, size_t *n, size_t *cap) {
  if (pgno < 2 || pgno >= w->file_pages) return -1; /* pages 0 and 1 are the metas */
  const uint8_t *p = w->map + pgno * w->psize;
  const uint16_t flags = u16_at(p + 10), lower = u16_at(p + 12), upper = u16_at(p + 14);
  if (u64_at(p) != pgno || (flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_META)) != P_BRANCH ||
      lower < PAGE_HEADER + 2 || lower > upper || upper > w->psize)
    return -1;
  const size_t keys = (size_t)(lower - PAGE_HEADER) / 2;
  if (*n + keys > *cap) {
    size_t c = (*cap ? *cap * 2 : 1024) + keys;
    uint64_t *q = fc_realloc(*out, c * sizeof *q);
    if (!q) return -1;
    *out = q;
    *cap = c;
  }
  for (size_t i = 0; i < keys; i++) {
    const uint16_t off = u16_at(p + PAGE_HEADER + 2 * i);
    if (off < upper || off > w->psize - 8) return -1;
    const uint64_t child = (uint64_t)u16_at(p + off) | (uint64_t)u16_at(p + off + 2) << 16 |
                           (uint64_t)u16_at(p + off + 4) << 32;
    if (child < 2 || child >= w->file_pages) return -1;
    (*out)[(*n)++] = child;
  }
  return 0;
}

/* How many of the leaves a sample finds in memory, of how many sampled. */
static void sample_resident(const ld_warm *w, const uint64_t *leaf, size_t n, unsigned *in,
                            unsigned *of) {
  *in = *of = 0;
  const size_t step = n > SAMPLE ? n / SAMPLE : 1;
  for (size_t i = 0; i < n; i += step) {
    unsigned char v = 0;
    if (mincore((void *)(w->map + leaf[i] * w->psize), w->psize, &v) != 0) continue;
    (*of)++;
    *in += v & 1;
  }
}

/* The thread: the trees' branch levels, one level at a time (asked for, then read), then their
 * leaves asked for in file order. */
static void *warm_main(void *arg) {
  ld_warm *w = arg;
  fc_thread_name("warm", -1);
  uint64_t *level = NULL, *next = NULL, *leaves = NULL;
  size_t n_leaves = 0, cap_leaves = 0, cap_level = 0, cap_next = 0;
  for (unsigned t = 0; t < w->n && !w->st.gave_up; t++) {
    const warm_tree *tr = &w->tree[t];
    size_t n_level = 0, n_next = 0;
    uint64_t branches = 0;
    if (cap_level < 1 && !(level = fc_malloc(sizeof *level * (cap_level = 1024)))) goto fail;
    level[n_level++] = tr->root;
    for (unsigned d = 0; d + 1 < tr->depth; d++) { /* levels 0 .. depth-2 are branch pages */
      qsort(level, n_level, sizeof *level, cmp_u64);
      advise(w, level, n_level);
      n_next = 0;
      for (size_t i = 0; i < n_level; i++) {
        if (atomic_load_explicit(&w->stop, memory_order_relaxed)) goto done;
        if (children(w, level[i], &next, &n_next, &cap_next)) goto fail;
      }
      branches += n_level;
      uint64_t *s = level;
      level = next;
      next = s;
      size_t c = cap_level;
      cap_level = cap_next;
      cap_next = c;
      n_level = n_next;
    }
    /* level now holds the tree's leaves: as many as LMDB counts, or the pages were misread */
    if (branches != tr->branch || n_level != tr->leaf) goto fail;
    w->st.branch_pages += branches;
    if (n_leaves + n_level > cap_leaves) {
      size_t c = n_leaves + n_level;
      uint64_t *q = fc_realloc(leaves, c * sizeof *q);
      if (!q) goto fail;
      leaves = q;
      cap_leaves = c;
    }
    memcpy(leaves + n_leaves, level, n_level * sizeof *level);
    n_leaves += n_level;
  }
  if (!w->st.gave_up) {
    w->st.leaf_pages = n_leaves;
    qsort(leaves, n_leaves, sizeof *leaves, cmp_u64);
    unsigned in, of;
    sample_resident(w, leaves, n_leaves, &in, &of);
    w->st.cold = of && in < of; /* some leaf of the sample must be read from the disk */
    if (w->st.cold || w->advise_all) w->st.leaves_asked = advise(w, leaves, n_leaves);
  }
  goto done;
fail:
  w->st.gave_up = 1;
done:
  free(level);
  free(next);
  free(leaves);
  return NULL;
}

/* The tree of db `name` in txn: root, depth and page counts from its record in the main db,
 * checked against LMDB's own statistics of dbi. 0, or -1 when they differ or are unreadable. */
static int tree_of(MDB_txn *txn, MDB_dbi dbi, const char *name, warm_tree *t) {
  MDB_val k = {strlen(name), (void *)name}, v;
  MDB_stat ms;
  if (mdb_get(txn, MAIN_DBI, &k, &v) || v.mv_size != DB_RECORD || mdb_stat(txn, dbi, &ms))
    return -1;
  const uint8_t *r = v.mv_data;
  t->depth = u16_at(r + 6);
  t->branch = u64_at(r + 8);
  t->leaf = u64_at(r + 16);
  t->root = u64_at(r + 40);
  if (t->depth != ms.ms_depth || t->branch != ms.ms_branch_pages || t->leaf != ms.ms_leaf_pages ||
      u64_at(r + 32) != ms.ms_entries)
    return -1;
  return 0;
}

/* Test builds: FC_FAULT_LOADER_WARM=finish runs every warming to its end before the open returns
 * (a walk of a store in memory ends first), =sync runs it whole before the walk begins (so the
 * walk's own reads cannot make a cold store's sample look resident), =all also asks for the
 * leaves of a store in memory and warms trees of fewer than WARM_MIN_LEAVES leaves. Release
 * builds never read it. */
static void test_mode(ld_warm *w) {
#ifdef FC_FAULT_INJECTION
  const char *e = getenv("FC_FAULT_LOADER_WARM");
  w->advise_all = e && strcmp(e, "all") == 0;
  w->sync = e && strcmp(e, "sync") == 0;
  w->finish = w->advise_all || w->sync || (e && strcmp(e, "finish") == 0);
#else
  (void)w;
#endif
}

ld_warm *ld_warm_begin(ld_store *st, const MDB_dbi *dbi, const char *const *names, unsigned n) {
#if MDB_VERSION_MAJOR != 0 || MDB_VERSION_MINOR != 9 || UINTPTR_MAX != UINT64_MAX || \
    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  (void)st, (void)dbi, (void)names, (void)n;
  return NULL; /* another page layout */
#else
  int major = 0, minor = 0;
  mdb_version(&major, &minor, NULL);
  MDB_stat es;
  int fd;
  struct stat sb;
  if (major != 0 || minor != 9 || !st->map || n > LD_WARM_MAX_TREES ||
      mdb_env_stat(st->s->env, &es) || mdb_env_get_fd(st->s->env, &fd) || fstat(fd, &sb) ||
      !S_ISREG(sb.st_mode))
    return NULL;
  ld_warm *w = fc_calloc(1, sizeof *w);
  if (!w) return NULL;
  w->map = st->map;
  w->psize = es.ms_psize;
  w->file_pages = (uint64_t)sb.st_size / es.ms_psize;
  if (w->file_pages * es.ms_psize > st->map_len) w->file_pages = st->map_len / es.ms_psize;
  test_mode(w);
  uint64_t leaves = 0;
  for (unsigned i = 0; i < n; i++) {
    if (tree_of(st->txn, dbi[i], names[i], &w->tree[w->n])) {
      free(w);
      return NULL;
    }
    if (w->tree[w->n].depth >= 2) leaves += w->tree[w->n++].leaf; /* a lone root: nothing ahead */
  }
  atomic_init(&w->stop, 0);
  w->st.started = 1;
  if ((leaves < WARM_MIN_LEAVES && !w->advise_all) || !w->n ||
      (!w->sync && pthread_create(&w->th, NULL, warm_main, w) != 0)) {
    free(w);
    return NULL;
  }
  if (w->sync) warm_main(w);
  return w;
#endif
}

void ld_warm_end(ld_warm *w, ld_warm_stats *out) {
  if (!w) return;
  if (!w->finish) atomic_store(&w->stop, 1); /* what is left, the walk has read */
  if (!w->sync) pthread_join(w->th, NULL);
  if (out) {
    out->started += w->st.started;
    out->cold += w->st.cold;
    out->gave_up += w->st.gave_up;
    out->branch_pages += w->st.branch_pages;
    out->leaf_pages += w->st.leaf_pages;
    out->leaves_asked += w->st.leaves_asked;
    out->requests += w->st.requests;
  }
  free(w);
}
