/* cache-bench's dataset: one or several stores read as one (as the loader reads them), their
 * feature records listed once, and their data.mdb files in and out of the page cache.
 *
 * Several stores: the records are listed store by store in the order given, key order within
 * each (the loader's sequential order: stores in the order given); a content key held by several
 * stores is listed once, from the first (what cache-merge would store). Residency is counted over
 * all the files together; cold evicts each of them. */
#include "cmd/cache-bench/bench_int.h"

#include "featcache/fc_format.h"
#include "formats/common/alloc.h"
#include "libcache/core/store/store_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int bench_store_unwritable(const char *dir) { return store_lock_unwritable(dir); }

static unsigned store_flags_for(unsigned flags) {
  unsigned sf = FC_STORE_RDONLY;
  if (flags & BENCH_NOLOCK) sf |= FC_STORE_NOLOCK;
  if (flags & BENCH_NORDAHEAD) sf |= FC_STORE_NORDAHEAD;
  return sf;
}

static void part_detach(struct bench_part *p) {
  fc_store_close(p->s);
  p->s = NULL;
  p->map = NULL;
  p->map_len = 0;
}

static int part_attach(struct bench_part *p, unsigned store_flags) {
  int rc = fc_store_open(p->dir, store_flags, &p->s);
  if (rc) return rc;
  const void *base;
  rc = fc_store_map_region(p->s, &base, &p->map_len);
  if (rc) {
    part_detach(p);
    return rc;
  }
  p->map = base;
  return 0;
}

int bench_attach(fc_bench *b) {
  for (size_t i = 0; i < b->nparts; i++) {
    if (b->parts[i].s) continue;
    int rc = part_attach(&b->parts[i], b->store_flags);
    if (rc) return rc;
  }
  return 0;
}

void bench_detach(fc_bench *b) {
  for (size_t i = 0; i < b->nparts; i++) part_detach(&b->parts[i]);
}

static int file_size(const char *path, uint64_t *out) {
  struct stat st;
  if (stat(path, &st) != 0) return errno;
  *out = (uint64_t)st.st_size;
  return 0;
}

/* Append part pi's feature records (key order) to b->recs. */
static int enumerate(fc_bench *b, uint32_t pi, size_t *cap) {
  struct bench_part *p = &b->parts[pi];
  fc_rtxn *t;
  int rc = fc_store_read_begin(p->s, &t);
  if (rc) return rc;
  uint64_t count = 0;
  rc = fc_rtxn_count(t, FC_DB_FEAT, &count);
  fc_cursor *c = NULL;
  if (!rc && b->n + count > *cap) {
    size_t want = b->n + (size_t)count;
    struct bench_rec *r = fc_realloc(b->recs, want * sizeof *r);
    if (!r)
      rc = ENOMEM;
    else {
      b->recs = r;
      *cap = want;
    }
  }
  if (!rc && count > 0) rc = fc_cursor_open(t, FC_DB_FEAT, &c);
  for (uint64_t got = 0; !rc && c && got < count; got++) {
    const void *k, *v;
    size_t kl, vl;
    rc = fc_cursor_next(c, &k, &kl, &v, &vl);
    if (rc == FC_ENOTFOUND) {
      rc = 0;
      break;
    }
    if (rc) break;
    const uint8_t *vp = v;
    if (kl != 16 || vp < p->map || vp + vl > p->map + p->map_len) {
      rc = FC_EFORMAT;
      break;
    }
    struct bench_rec *r = &b->recs[b->n++];
    memcpy(r->key, k, 16);
    r->offset = (uint64_t)(vp - p->map);
    r->val_len = vl;
    r->part = pi;
  }
  fc_cursor_close(c);
  fc_rtxn_end(t);
  return rc;
}

static int by_key_then_index(const void *x, const void *y, void *ctx) {
  const struct bench_rec *r = ctx;
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
  int d = memcmp(r[i].key, r[j].key, 16);
  return d ? d : (i > j) - (i < j);
}

/* A key held by several stores is kept once: the first store's (the lowest index, as records are
 * listed store by store). The rest keep their order. */
static int drop_duplicates(fc_bench *b) {
  if (b->nparts < 2 || b->n < 2) return 0;
  if (b->n > UINT32_MAX) return EINVAL;
  uint32_t *ix = fc_malloc(b->n * sizeof *ix);
  uint8_t *dup = fc_calloc(b->n, 1);
  if (!ix || !dup) {
    free(ix);
    free(dup);
    return ENOMEM;
  }
  for (size_t i = 0; i < b->n; i++) ix[i] = (uint32_t)i;
  qsort_r(ix, b->n, sizeof *ix, by_key_then_index, b->recs);
  for (size_t i = 1; i < b->n; i++)
    if (memcmp(b->recs[ix[i]].key, b->recs[ix[i - 1]].key, 16) == 0) dup[ix[i]] = 1;
  size_t w = 0;
  for (size_t i = 0; i < b->n; i++)
    if (!dup[i]) b->recs[w++] = b->recs[i];
  b->n = w;
  free(ix);
  free(dup);
  return 0;
}

int bench_open_many(const char *const *dirs, size_t n, unsigned flags, fc_bench **out,
                    size_t *failed) {
  *out = NULL;
  size_t at = n;
  if (!dirs || !n || n > UINT32_MAX) return EINVAL;
  fc_bench *b = fc_calloc(1, sizeof *b);
  if (!b) return ENOMEM;
  int rc = 0;
  b->store_flags = store_flags_for(flags);
  long pg = sysconf(_SC_PAGESIZE);
  b->page = pg > 0 ? (size_t)pg : 4096;
  b->parts = fc_calloc(n, sizeof *b->parts);
  if (!b->parts) {
    rc = ENOMEM;
    goto fail;
  }
  b->nparts = n;
  size_t cap = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    struct bench_part *p = &b->parts[i];
    at = i;
    size_t dl = strlen(dirs[i]);
    p->dir = fc_strdup(dirs[i]);
    p->data_path = fc_malloc(dl + 10);
    if (!p->dir || !p->data_path) {
      rc = ENOMEM;
      break;
    }
    snprintf(p->data_path, dl + 10, "%s/data.mdb", dirs[i]);
    if ((rc = part_attach(p, b->store_flags)) != 0) break;
    if ((rc = enumerate(b, (uint32_t)i, &cap)) != 0) break;
    if ((rc = file_size(p->data_path, &p->file_bytes)) != 0) break;
    b->file_bytes += p->file_bytes;
    at = n;
  }
  if (!rc) rc = drop_duplicates(b);
  if (rc) goto fail;
  for (size_t i = 0; i < b->n; i++) {
    uint64_t vl = b->recs[i].val_len;
    uint64_t pb = vl > FC_RECORD_HEADER_SIZE ? vl - FC_RECORD_HEADER_SIZE : 0;
    b->payload_bytes += pb;
    if (pb > b->max_payload) b->max_payload = pb;
    if (vl > b->max_val) b->max_val = vl;
  }
  if (b->n == 0) {
    rc = FC_EEMPTY;
    goto fail;
  }
  bench_device_probe(b->parts[0].data_path, &b->dev);
  *out = b;
  return 0;
fail:
  if (failed) *failed = at;
  bench_close(b);
  return rc;
}

int bench_open(const char *dir, unsigned flags, fc_bench **out) {
  return bench_open_many(&dir, 1, flags, out, NULL);
}

void bench_close(fc_bench *b) {
  if (!b) return;
  for (size_t i = 0; i < b->nparts; i++) {
    part_detach(&b->parts[i]);
    free(b->parts[i].data_path);
    free(b->parts[i].dir);
  }
  free(b->parts);
  free(b->recs);
  free(b);
}

size_t bench_records(const fc_bench *b) { return b->n; }
size_t bench_stores(const fc_bench *b) { return b->nparts; }
uint64_t bench_payload_bytes(const fc_bench *b) { return b->payload_bytes; }
uint64_t bench_file_bytes(const fc_bench *b) { return b->file_bytes; }
uint64_t bench_max_payload(const fc_bench *b) { return b->max_payload; }
const bench_device *bench_device_info(const fc_bench *b) { return &b->dev; }
const char *bench_store_path(const fc_bench *b, size_t s) {
  return s < b->nparts ? b->parts[s].dir : NULL;
}
const uint8_t *bench_key(const fc_bench *b, size_t i) { return i < b->n ? b->recs[i].key : NULL; }
uint64_t bench_offset(const fc_bench *b, size_t i) { return i < b->n ? b->recs[i].offset : 0; }
size_t bench_store_of(const fc_bench *b, size_t i) { return i < b->n ? b->recs[i].part : 0; }

/* ---- page cache -------------------------------------------------------------------------------- */
/* Resident and total pages of one file (mincore over a fresh mmap, 1 GiB at a time). */
static int file_resident(const char *path, size_t page, uint64_t *resident, uint64_t *pages) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return e;
  }
  uint64_t size = (uint64_t)st.st_size;
  const uint64_t window = 1ull << 30; /* bounded memory: one 256 KiB mincore vector, any size */
  unsigned char *vec = fc_malloc((size_t)(window / page));
  int rc = vec ? 0 : ENOMEM;
  for (uint64_t off = 0; !rc && off < size; off += window) {
    size_t len = (size_t)(size - off < window ? size - off : window);
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
    if (m == MAP_FAILED) {
      rc = errno;
      break;
    }
    size_t np = (len + page - 1) / page;
    if (mincore(m, len, vec) != 0) rc = errno;
    for (size_t i = 0; !rc && i < np; i++) *resident += vec[i] & 1;
    *pages += np;
    munmap(m, len);
  }
  free(vec);
  close(fd);
  return rc;
}

int bench_resident(fc_bench *b, double *fraction) {
  *fraction = 0;
  uint64_t resident = 0, pages = 0;
  for (size_t i = 0; i < b->nparts; i++) {
    int rc = file_resident(b->parts[i].data_path, b->page, &resident, &pages);
    if (rc) return rc;
  }
  *fraction = pages ? (double)resident / (double)pages : 0.0;
  return 0;
}

static int drop_cache(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  /* Dirty pages cannot be dropped: write them first. A read-only fd or mount has none to write,
   * and some filesystems refuse fsync there; that is not a failure of the eviction. */
  if (fsync(fd) != 0 && errno != EROFS && errno != EINVAL && errno != EBADF) {
    int e = errno;
    close(fd);
    return e;
  }
  int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return rc;
}

static int drop_all(fc_bench *b) {
  for (size_t i = 0; i < b->nparts; i++) {
    int rc = drop_cache(b->parts[i].data_path);
    if (rc) return rc;
  }
  return 0;
}

int bench_evict(fc_bench *b, double *resident) {
  *resident = 1.0;
  bench_detach(b); /* pages mapped by our own maps could not be dropped */
  int rc = drop_all(b);
  int rc2 = bench_attach(b);
  /* Reopening faults the meta pages in, and the kernel reads around a fault (up to
   * read_ahead_kb): drop again; only the few pages LMDB now has mapped stay. */
  for (int tries = 0; !rc && !rc2 && tries < 3; tries++) {
    rc = drop_all(b);
    if (!rc) rc = bench_resident(b, resident);
    if (*resident <= COLD_RESIDENT_MAX || *resident * (double)b->file_bytes / (double)b->page <=
                                              COLD_PAGES_PER_STORE * (double)b->nparts)
      break; /* else pages were under writeback: again */
  }
  return rc ? rc : rc2;
}

static int prewarm_file(const char *path, char *buf, size_t cap, int (*stop)(void *), void *ctx) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int rc = 0;
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  for (off_t off = 0; !(stop && stop(ctx));) {
    ssize_t got = pread(fd, buf, cap, off);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) rc = errno;
    if (got <= 0) break;
    off += got;
  }
  close(fd);
  return rc;
}

int bench_prewarm(fc_bench *b, double *resident, int (*stop)(void *ctx), void *stop_ctx) {
  *resident = 0;
  size_t cap = 4u << 20;
  char *buf = fc_malloc(cap);
  int rc = buf ? 0 : ENOMEM;
  for (size_t i = 0; i < b->nparts && !rc; i++)
    rc = prewarm_file(b->parts[i].data_path, buf, cap, stop, stop_ctx);
  free(buf);
  return rc ? rc : bench_resident(b, resident);
}
