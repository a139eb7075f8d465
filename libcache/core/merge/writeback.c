/* The merge output's page cache (writeback.h).
 *
 * LMDB (without MDB_WRITEMAP) commits by writing its dirty pages into the page cache; a merge of
 * N bytes thus takes N bytes of fresh page cache, and the final sync waits for all of it. On a VM
 * whose free memory goes back to the host (free page reporting, a balloon), a fresh page costs a
 * fault on the host at its first touch: `dd` of 1.2 GB to ext4 took 3.9 s of CPU after a pause
 * and 0.4 s right after 1.2 GB of page cache had been freed (docs/BENCHMARKS.md "cache-merge
 * against mdb_copy"). mdb_copy does not meet it: it writes with O_DIRECT, which an LMDB commit
 * cannot. So the merge keeps its page cache small and warm instead: every `step` bytes committed
 * a pass starts write-back of everything (sync_file_range WRITE, no wait), waits for the pages
 * more than KEEP steps below the end of the file to be on the disk, and drops them
 * (POSIX_FADV_DONTNEED), so that the next commits reuse the memory just freed. The passes run in
 * a helper thread: the merge goes on copying while the disk writes. The file's blocks are
 * allocated ahead of the writes (fallocate with FALLOC_FL_KEEP_SIZE: unwritten extents, the size
 * unchanged), so that ext4 neither reserves each page's block at write(2) (delayed allocation) nor
 * allocates at write-back; what is left beyond the end is freed at the end. Only clean pages that no
 * process maps are dropped (the kernel never drops a dirty page): what LMDB reads through its
 * map (meta, branch pages, the last leaf) stays, and a page read later comes back from the disk.
 * Durability is unchanged: every commit is synced (MDB_NOMETASYNC) and the end too
 * (docs/FORMAT.md "Writing, durability"). */
#include "libcache/core/merge/writeback.h"
#include "libcache/core/store/store_int.h"

#include "formats/common/fault.h"
#include "formats/common/thread_name.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#define FC_WRITEBACK_STEP (16ull << 20)
/* steps at the file's end kept in the page cache (written last, or being written) */
#define FC_WRITEBACK_KEEP 4
/* steps the passes may lag behind the commits before the merge waits for them */
#define FC_WRITEBACK_LAG 16
/* steps of blocks allocated beyond the file's end (again when half of them are used) */
#define FC_WRITEBACK_AHEAD 16

#define FC_TMPFS_MAGIC 0x01021994
#define FC_RAMFS_MAGIC 0x858458f6

#ifdef __linux__
/* Blocks for the writes to come (best effort: without them ext4 allocates at write-back). Never
 * more than half the disk's free room: the blocks are taken until the merge ends, from other
 * writers of the disk too. */
static void allocate_ahead(fc_writeback *w, uint64_t end) {
  uint64_t ahead = FC_WRITEBACK_AHEAD * w->step;
  if (!w->allocating || end + ahead / 2 <= w->allocated_to) return;
  uint64_t from = end > w->allocated_to ? end : w->allocated_to;
  struct statvfs vfs;
  if (fstatvfs(w->fd, &vfs) == 0 &&
      (uint64_t)vfs.f_bavail * vfs.f_frsize / 2 < end + ahead - from) {
    w->allocating = 0; /* a disk nearly full: the writes take their blocks as they come */
    return;
  }
  if (fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(end + ahead - from)))
    w->allocating = 0; /* not supported here, or no room: the writes will say */
  /* set on a failure too: ext4 keeps what a fallocate that fails with ENOSPC allocated, and trim
   * frees it at the end (it trims only when allocated_to is set) */
  w->allocated_to = end + ahead;
}
#endif

/* One pass for a file that ends at `end`. Returns 0 or the errno of a failed write-back. */
static int pass(fc_writeback *w, uint64_t end) {
#ifdef __linux__
  if (fault_hit("writeback")) return EIO;
  allocate_ahead(w, end);
  (void)sync_file_range(w->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  uint64_t keep = FC_WRITEBACK_KEEP * w->step;
  if (!w->dropping || end < keep || end - keep <= w->dropped_to) return 0;
  uint64_t to = end - keep;
  /* from 0: pages LMDB reused from its freelist lie below dropped_to */
  if (sync_file_range(w->fd, 0, (off_t)to,
                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                          SYNC_FILE_RANGE_WAIT_AFTER)) {
    int e = errno;
    w->dropping = 0; /* never drop a page whose write failed: readers would see the old bytes */
    return e == EINVAL || e == ESPIPE || e == ENOSYS ? 0 : e; /* not supported: go on without */
  }
  (void)posix_fadvise(w->fd, 0, (off_t)to, POSIX_FADV_DONTNEED);
  w->dropped_to = to;
#else
  (void)w;
  (void)end;
#endif
  return 0;
}

static void *helper(void *arg) {
  fc_writeback *w = arg;
  fc_thread_name("writeback", -1);
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->quit && w->asked == w->done) pthread_cond_wait(&w->cv, &w->mu);
    if (w->quit) break; /* the merge syncs the rest itself */
    uint64_t end = w->asked;
    int failed = w->err != 0;
    pthread_mutex_unlock(&w->mu);
    int e = failed ? 0 : pass(w, end); /* after a failure: no more passes */
    pthread_mutex_lock(&w->mu);
    if (e && !w->err) w->err = e;
    w->done = end;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

void writeback_init(fc_writeback *w, MDB_env *env, uint64_t step) {
  memset(w, 0, sizeof *w);
  w->env = env;
  w->fd = -1;
  w->step = step ? step : FC_WRITEBACK_STEP;
#ifdef __linux__
  mdb_filehandle_t fd;
  MDB_stat ms;
  struct statfs sf;
  if (mdb_env_get_fd(env, &fd) || mdb_env_stat(env, &ms) || fstatfs(fd, &sf)) return;
  /* pages in memory only: nothing to write back, nothing that may be dropped */
  if ((unsigned long)sf.f_type == FC_TMPFS_MAGIC || (unsigned long)sf.f_type == FC_RAMFS_MAGIC)
    return;
  w->fd = fd;
  w->psize = ms.ms_psize;
  w->dropping = 1;
  w->allocating = 1;
  MDB_envinfo info;
  if (!mdb_env_info(env, &info)) {
    /* an output merged into: the lag counts from its end, not from 0 */
    w->asked = w->done = ((uint64_t)info.me_last_pgno + 1) * w->psize;
    allocate_ahead(w, w->done);
  }
  if (pthread_mutex_init(&w->mu, NULL)) return;
  if (pthread_cond_init(&w->cv, NULL)) {
    pthread_mutex_destroy(&w->mu);
    return;
  }
  if (pthread_create(&w->thread, NULL, helper, w)) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return;
  }
  w->threaded = 1;
#endif
}

int writeback_committed(fc_writeback *w, uint64_t bytes) {
  w->unkicked += bytes;
  if (w->fd < 0 || w->unkicked < w->step) return 0;
  w->unkicked = 0;
  MDB_envinfo info;
  if (mdb_env_info(w->env, &info)) return 0;
  uint64_t end = ((uint64_t)info.me_last_pgno + 1) * w->psize;
  if (!w->threaded) {
    if (w->err) return w->err;
    return (w->err = pass(w, end));
  }
  pthread_mutex_lock(&w->mu);
  w->asked = end;
  pthread_cond_broadcast(&w->cv);
  while (!w->err && end > w->done + FC_WRITEBACK_LAG * w->step) pthread_cond_wait(&w->cv, &w->mu);
  int e = w->err;
  pthread_mutex_unlock(&w->mu);
  return e;
}

/* Free the blocks allocated beyond the file's end: a truncation to the file's own size (ext4
 * frees preallocated blocks then too). In a write transaction: no other process's writer is
 * extending the file meanwhile. */
static void trim(fc_writeback *w) {
#ifdef __linux__
  if (!w->allocated_to) return;
  w->allocated_to = 0;
  MDB_txn *txn;
  if (store_txn_begin(w->env, 0, &txn)) return;
  struct stat st;
  if (fstat(w->fd, &st) == 0) (void)ftruncate(w->fd, st.st_size);
  store_txn_abort(txn);
#else
  (void)w;
#endif
}

int writeback_end(fc_writeback *w) {
  if (w->threaded) {
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->threaded = 0;
  }
  if (w->fd >= 0) trim(w);
  return w->err;
}
