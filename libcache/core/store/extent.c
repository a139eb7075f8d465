/* Is data.mdb as long as its last committed meta says (docs/FORMAT.md "Files"), and are the pages
 * the open reads sound (check_tree, below)? LMDB trusts the
 * file to hold every page the meta names, and maps it: a data.mdb cut short (a copy that ran out
 * of space) would be a SIGBUS at the first read of a missing page. But LMDB also commits pages it
 * allocated and freed in the same transaction without writing them: the meta then names pages
 * past the end of a sound file, until a later transaction writes them. Those pages are on the
 * free list of that meta; so a short file is accepted when every page it lacks is free there.
 * The free list is read with pread (never through the map), each of its pages checked to lie
 * inside the file first, under a read transaction: no writer reuses the pages of its snapshot.
 * The layouts read are LMDB 0.9's (mdb.c: MDB_page, MDB_meta, MDB_db, MDB_node). */
#include "libcache/core/store/store_int.h"

#include "formats/common/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  PAGEHDR = 16, /* MDB_page: pgno (8), pad (2), flags (2), lower/upper or overflow pages (4) */
  P_BRANCH = 1,
  P_LEAF = 2,
  P_LEAF2 = 0x20,
  F_BIGDATA = 1,
  NODEHDR = 8, /* MDB_node: lo, hi, flags, ksize (2 each) */
  META_FREE_DB = PAGEHDR + 24, /* magic, version (4 each), address, mapsize (8 each) */
  DB_SIZE = 48, /* MDB_db; the main db's follows the free list's */
  P_OVERFLOW = 4,
  F_SUBDATA = 2,
  DB_ROOT = 40, /* MDB_db: pad (4), flags, depth (2 each), 3 page counts, entries (8 each) */
  META_LAST_PG = PAGEHDR + 24 + 2 * 48,
  META_TXNID = META_LAST_PG + 8,
  MAX_DEPTH = 16,
};

typedef struct walk {
  int fd;
  size_t psize;
  uint64_t have; /* whole pages in the file */
  uint64_t last; /* the meta's last page */
  uint8_t *missing; /* a bit per page in [have, last]: set until found free */
  uint64_t n_missing;
  int depth;
} walk;

/* n pages from pgno into buf, 0; FC_ETRUNCATED when any of them is past the file's end. */
static int read_pages(walk *w, uint64_t pgno, uint64_t n, uint8_t *buf) {
  if (pgno >= w->have || n > w->have - pgno) return FC_ETRUNCATED;
  size_t len = (size_t)(n * w->psize), got = 0;
  while (got < len) {
    ssize_t r = pread(w->fd, buf + got, len - got, (off_t)(pgno * w->psize + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return FC_ETRUNCATED;
    got += (size_t)r;
  }
  return 0;
}

/* An IDL (count, then page numbers) from the free list: cross its pages off. */
static void free_pages(walk *w, const uint8_t *idl, size_t len) {
  if (len < 8) return;
  uint64_t n = store_get64(idl);
  for (uint64_t i = 1; i <= n && (i + 1) * 8 <= len; i++) {
    uint64_t pg = store_get64(idl + i * 8);
    if (pg < w->have || pg > w->last) continue;
    uint64_t b = pg - w->have;
    if (w->missing[b / 8] & (1u << (b % 8))) {
      w->missing[b / 8] &= (uint8_t) ~(1u << (b % 8));
      w->n_missing--;
    }
  }
}

static int walk_page(walk *w, uint64_t pgno) {
  if (++w->depth > MAX_DEPTH) return FC_EFORMAT;
  uint8_t *pg = fc_malloc(w->psize);
  int rc = pg ? read_pages(w, pgno, 1, pg) : ENOMEM;
  const uint16_t flags = rc ? 0 : store_get16(pg + 10), lower = rc ? 0 : store_get16(pg + 12);
  if (!rc && ((flags & P_LEAF2) || lower < PAGEHDR || lower > w->psize)) rc = FC_EFORMAT;
  const size_t keys = rc ? 0 : (lower - PAGEHDR) / 2;
  for (size_t i = 0; i < keys && !rc && w->n_missing; i++) {
    const size_t off = store_get16(pg + PAGEHDR + 2 * i);
    if (off + NODEHDR > w->psize) {
      rc = FC_EFORMAT;
      break;
    }
    const uint8_t *nd = pg + off;
    const uint64_t lo = store_get16(nd), hi = store_get16(nd + 2), nflags = store_get16(nd + 4),
                   ksize = store_get16(nd + 6);
    if (flags & P_BRANCH) {
      rc = walk_page(w, lo | hi << 16 | nflags << 32);
      continue;
    }
    if (!(flags & P_LEAF)) {
      rc = FC_EFORMAT;
      break;
    }
    const size_t dsize = (size_t)(lo | hi << 16), doff = off + NODEHDR + ksize;
    if (!(nflags & F_BIGDATA)) {
      if (doff + dsize > w->psize)
        rc = FC_EFORMAT;
      else
        free_pages(w, pg + doff, dsize);
      continue;
    }
    if (doff + 8 > w->psize) {
      rc = FC_EFORMAT;
      break;
    }
    const uint64_t ov = store_get64(pg + doff), n = (PAGEHDR + dsize + w->psize - 1) / w->psize;
    uint8_t *big = n <= w->have ? fc_malloc((size_t)(n * w->psize)) : NULL;
    rc = n > w->have ? FC_ETRUNCATED : !big ? ENOMEM : read_pages(w, ov, n, big);
    if (!rc) free_pages(w, big + PAGEHDR, dsize);
    free(big);
  }
  free(pg);
  w->depth--;
  return rc;
}

/* Every page in [have, last] free in the free list rooted at root? 0, or FC_ETRUNCATED. */
static int tail_is_free(walk *w, uint64_t root) {
  const uint64_t span = w->last - w->have + 1;
  if (root == UINT64_MAX || span > (UINT64_C(1) << 32)) return FC_ETRUNCATED; /* no free list */
  w->missing = fc_malloc((size_t)((span + 7) / 8));
  if (!w->missing) return ENOMEM;
  memset(w->missing, 0xff, (size_t)((span + 7) / 8));
  w->n_missing = span;
  int rc = walk_page(w, root);
  free(w->missing);
  return rc == FC_EFORMAT || (!rc && w->n_missing) ? FC_ETRUNCATED : rc;
}

/* The meta page of txnid: 0 with w->last, *root (its free list's root) and *main (its main db's)
 * set, or ENOENT (a writer has committed twice since the transaction began: both meta pages are
 * later ones). */
static int find_meta(walk *w, uint64_t txnid, uint64_t *root, uint64_t *main) {
  uint8_t m[META_TXNID + 8]; /* a meta page's header and meta, no more: no allocation */
  for (uint64_t i = 0; i < 2; i++) {
    if (pread(w->fd, m, sizeof m, (off_t)(i * w->psize)) != (ssize_t)sizeof m) continue;
    if (store_get64(m + META_TXNID) != txnid) continue;
    w->last = store_get64(m + META_LAST_PG);
    *root = store_get64(m + META_FREE_DB + DB_ROOT);
    *main = store_get64(m + META_FREE_DB + DB_SIZE + DB_ROOT);
    return 0;
  }
  return ENOENT;
}

/* The pages the open itself reads through LMDB (open_dbs: the main db's tree, for the dbs' names
 * and the index dbs'; the meta db's, for its format key), read with pread and checked first: a
 * flipped bit in one — a leaf's flags read as a branch's, a node offset or size past its page, a
 * child past the file's end — had every tool that opened the store (cache-verify, the Loader's
 * check_pages, cache-merge's check of its inputs among them) die of SIGBUS or SIGSEGV in that
 * open, before any check could look. Each page: a branch or a leaf (no other kind, no
 * fixed-size-key page), its node pointers and every node inside it (what its reads use: not its
 * free space's bounds, which only a write uses), a branch's children and a
 * value's overflow pages inside the file and the meta's last page, no node flag but a big value's
 * or a named db's (a duplicate-data node has LMDB follow a NULL pointer). The main db's named dbs
 * are not walked, but the meta db's root (*meta, when found). 0, or MDB_CORRUPTED. */
static int check_tree(walk *w, uint64_t pgno, int depth, uint64_t *meta) {
  if (depth > MAX_DEPTH || pgno < 2 || pgno >= w->have || pgno > w->last) return MDB_CORRUPTED;
  uint8_t *pg = fc_malloc(w->psize);
  int rc = pg ? read_pages(w, pgno, 1, pg) : ENOMEM;
  if (rc == FC_ETRUNCATED) rc = MDB_CORRUPTED;
  const uint16_t flags = rc ? 0 : store_get16(pg + 10), lower = rc ? 0 : store_get16(pg + 12);
  const int branch = (flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_LEAF2)) == P_BRANCH,
            leaf = (flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_LEAF2)) == P_LEAF;
  if (!rc && ((!branch && !leaf) || lower < PAGEHDR || (lower - PAGEHDR) % 2 || lower > w->psize ||
              (branch && lower == PAGEHDR)))
    rc = MDB_CORRUPTED;
  const size_t keys = rc ? 0 : (lower - PAGEHDR) / 2;
  for (size_t i = 0; i < keys && !rc; i++) {
    const size_t off = store_get16(pg + PAGEHDR + 2 * i);
    const uint8_t *nd = pg + off;
    if (off < lower || off + NODEHDR > w->psize) {
      rc = MDB_CORRUPTED;
      break;
    }
    const uint64_t lo = store_get16(nd), hi = store_get16(nd + 2), nflags = store_get16(nd + 4),
                   ksize = store_get16(nd + 6);
    const size_t doff = off + NODEHDR + (size_t)ksize;
    if (doff > w->psize) {
      rc = MDB_CORRUPTED;
    } else if (branch) {
      rc = check_tree(w, lo | hi << 16 | nflags << 32, depth + 1, meta);
    } else if (nflags & ~(uint64_t)(F_BIGDATA | F_SUBDATA)) {
      rc = MDB_CORRUPTED;
    } else if (nflags & F_BIGDATA) {
      const uint64_t dsize = lo | hi << 16, n = (PAGEHDR + dsize + w->psize - 1) / w->psize;
      const uint64_t ov = doff + 8 <= w->psize ? store_get64(pg + doff) : 0;
      if (ov < 2 || ov >= w->have || n > w->have - ov) rc = MDB_CORRUPTED;
    } else if (doff + (size_t)(lo | hi << 16) > w->psize) {
      rc = MDB_CORRUPTED;
    } else if ((nflags & F_SUBDATA) && meta && ksize == 4 && !memcmp(nd + NODEHDR, "meta", 4)) {
      *meta = (lo | hi << 16) == DB_SIZE ? store_get64(pg + doff + DB_ROOT) : 0;
    }
  }
  free(pg);
  return rc;
}

int store_check_extent(fc_store *s) {
  MDB_stat ms;
  struct stat st;
  int fd, rc = mdb_env_stat(s->env, &ms);
  if (!rc) rc = mdb_env_get_fd(s->env, &fd);
  for (int tries = 0; !rc; tries++) {
    MDB_txn *txn;
    rc = store_txn_begin_read(s->env, &txn);
    if (rc == MDB_MAP_RESIZED && tries < 8 && !(rc = mdb_env_set_mapsize(s->env, 0))) continue;
    if (rc) break;
    /* the file's size after the snapshot is taken: it only grows meanwhile */
    walk w = {.fd = fd, .psize = ms.ms_psize};
    uint64_t root = 0, main = 0, meta = UINT64_MAX;
    if (fstat(fd, &st) != 0) rc = errno;
    if (!rc) w.have = (uint64_t)st.st_size / ms.ms_psize; /* whole pages in the file */
    if (!rc && w.have < 2) rc = FC_ETRUNCATED;
    if (!rc) rc = find_meta(&w, (uint64_t)mdb_txn_id(txn), &root, &main);
    if (!rc && w.have <= w.last) rc = tail_is_free(&w, root);
    /* the trees the open reads (none yet in a store with nothing committed: P_INVALID) */
    if (!rc && main != UINT64_MAX) rc = check_tree(&w, main, 0, &meta);
    if (!rc && meta != UINT64_MAX) rc = check_tree(&w, meta, 0, NULL);
    store_txn_abort(txn);
    if (rc != ENOENT || tries == 8) break;
    rc = 0; /* the snapshot's meta page was overwritten: take a newer snapshot */
  }
  return rc == ENOENT ? FC_ETRUNCATED : rc;
}
