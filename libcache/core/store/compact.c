/* Compaction (cache-prune --compact; docs/FORMAT.md "Compaction"): data.mdb is replaced by a copy
 * without its free pages, written beside it and renamed over it under the writer lock held
 * exclusive and LMDB's own write lock, so that no commit can come between the copy and the swap.
 *
 * Why the copy's meta pages are rewritten: lock.mdb stays (it is shared by every process that has
 * the store open, and its mutexes must stay one), and LMDB picks the meta page a transaction
 * starts from by the parity of the transaction id lock.mdb holds (mti_txnid & 1), not by the
 * file's. mdb_env_copy2's compact copy numbers itself from scratch: meta page 1 holds the data
 * with transaction id 1, meta page 0 an empty environment. A process that opened the store
 * beside a surviving user of lock.mdb (which keeps the old id T) would start from meta page T & 1:
 * for an even T, an empty store, and a writer would commit over it. So both meta pages of the
 * copy are made the copied meta, with ids T and T - 1 on the pages of their parity: the copy
 * continues the old numbering, and whichever page LMDB picks holds the data.
 *
 * Who may have the old file: nobody writes it once the swap is made (a writer that opened it and
 * waited for the writer lock finds the name now names another file and opens again: store.c),
 * and a reader keeps its mapping of it, on which it reads the old store's last two snapshots (the
 * file is never written again). So the open readers are safe; compaction still refuses to start
 * while another process has the store open (its lock on lock.mdb), since the old file's space
 * comes back only when the last of them closes it, and a loader that has it open would not see
 * writes made to the new file. May call: LMDB, libc. */
#include "libcache/core/store/store_int.h"

#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/why.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TMP_PREFIX "data.mdb.compact-"

/* LMDB 0.9's on-disk meta page (mdb.c: MDB_page's 16-byte header, then MDB_meta): a 64-bit
 * build's offsets, checked on the copy before they are written (meta_layout_ok). */
enum {
  PAGE_FLAGS = 10, /* u16 mp_flags; P_META = 0x08 */
  META = 16, /* MDB_meta: u32 magic, u32 version, address, mapsize, 2 × MDB_db (48 B) */
  META_LAST_PG = META + 120,
  META_TXNID = META + 128,
  META_SIZE = 136,
  P_META = 0x08,
  MDB_MAGIC = 0xBEEFC0DE,
  MDB_DATA_VERSION = 1
};

/* Do the copy's two meta pages read as mdb_env_copy2's compact copy writes them (page 1: the
 * data, id 1; page 0: an empty environment, id 0; the file ends with page last_pg)? */
static int meta_layout_ok(const unsigned char *pages, size_t psize, uint64_t file_size) {
  for (int i = 0; i < 2; i++) {
    const unsigned char *pg = pages + i * psize;
    uint16_t flags;
    memcpy(&flags, pg + PAGE_FLAGS, 2);
    if (store_get64(pg) != (uint64_t)i || !(flags & P_META) ||
        store_get32(pg + META) != MDB_MAGIC || store_get32(pg + META + 4) != MDB_DATA_VERSION ||
        store_get64(pg + META_TXNID) != (uint64_t)i)
      return 0;
  }
  return (store_get64(pages + psize + META_LAST_PG) + 1) * psize == file_size;
}

/* Both meta pages of the copy (fd) become its page 1's meta, with transaction ids T and T - 1 on
 * the pages of their parity (above). 0, or FC_EFORMAT when the copy's meta pages are not laid out
 * as this code expects (another LMDB), or an errno code. */
static int renumber_metas(int fd, size_t psize, uint64_t T) {
  struct stat st;
  if (fstat(fd, &st) != 0) return errno;
  unsigned char *pages = fc_calloc(2, psize);
  if (!pages) return ENOMEM;
  int rc = 0;
  if (pread(fd, pages, 2 * psize, 0) != (ssize_t)(2 * psize))
    rc = errno ? errno : EIO;
  else if (!meta_layout_ok(pages, psize, (uint64_t)st.st_size))
    rc = FC_EFORMAT;
  if (!rc) {
    memcpy(pages + META, pages + psize + META, META_SIZE);
    for (uint64_t i = 0; i < 2; i++) {
      const uint64_t id = (T & 1) == i ? T : T - 1;
      memcpy(pages + i * psize + META_TXNID, &id, 8);
    }
    if (pwrite(fd, pages, 2 * psize, 0) != (ssize_t)(2 * psize)) rc = errno ? errno : EIO;
  }
  free(pages);
  return rc;
}

/* Another process's pid when one has the environment open: LMDB holds a shared lock on byte 0 of
 * lock.mdb as long as an environment is open (mdb_env_excl_lock), and F_GETLK reports the locks
 * of other processes only. The descriptor stays open until the store is closed: closing any
 * descriptor of lock.mdb would drop this process's own lock on it (POSIX). 0 when none, or when
 * it cannot be told (no lock.mdb: the store was opened without one). */
static pid_t other_user(fc_store *s) {
  if (s->lock_probe < 0) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/lock.mdb", s->path) >= (int)sizeof p) return 0;
    if ((s->lock_probe = open(p, O_RDONLY | O_CLOEXEC)) < 0) return 0;
  }
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  if (fcntl(s->lock_probe, F_GETLK, &fl) != 0) return 0;
  return fl.l_type == F_UNLCK ? 0 : (fl.l_pid > 0 ? fl.l_pid : -1);
}

void store_compact_leftovers(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  int dfd = dirfd(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, TMP_PREFIX, sizeof TMP_PREFIX - 1) == 0) unlinkat(dfd, e->d_name, 0);
  closedir(d);
}

void store_compact_leftovers_seen(const char *dir,
                                  void (*found)(void *ctx, const char *name, uint64_t bytes),
                                  void *ctx) {
  DIR *d = opendir(dir);
  if (!d) return;
  int dfd = dirfd(d), busy = -1;
  struct stat st;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, TMP_PREFIX, sizeof TMP_PREFIX - 1) != 0 ||
        fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (busy < 0) { /* a compaction running writes its copy under the writer lock held exclusive */
      int fd = openat(dfd, "data.mdb", O_RDONLY | O_CLOEXEC);
      busy = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
      if (fd >= 0) close(fd); /* releases the lock taken to look */
    }
    if (busy) break;
    found(ctx, e->d_name, (uint64_t)st.st_size);
  }
  closedir(d);
}

static int sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
  close(fd);
  return rc;
}

static int refuse_in_use(fc_store *s, char *why, size_t why_len) {
  pid_t pid = other_user(s);
  if (!pid) return 0;
  char who[1100] = "another process", comm[32] = "", p[64]; /* room for FC_WHY_NAME's buffer */
  snprintf(p, sizeof p, "/proc/%ld/comm", (long)pid);
  FILE *f = pid > 0 ? fopen(p, "r") : NULL; /* its command name, where /proc tells it */
  if (f && fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = '\0';
  if (f) fclose(f);
  if (pid > 0)
    snprintf(who, sizeof who, "process %ld%s%s%s", (long)pid, comm[0] ? " (" : "",
             FC_WHY_NAME(comm), comm[0] ? ")" : ""); /* (any process names itself) */
  fc_why(why, why_len,
         "in use: %s has it open (a training run's loader, cache-verify, a writer waiting for "
         "cache-prune, a Python process that called featcache.get: featcache.release_get_handles() "
         "lets it go); nothing compacted: run cache-prune --compact when it has closed it",
         who);
  return EBUSY;
}

/* Is there room beside data.mdb for the copy (the pages in use)? Filling the disk to its last
 * block would fail the other jobs writing to it too. 0, or ENOSPC said. */
static int room_for_copy(fc_store *s, char *why, size_t why_len) {
  uint64_t size, need;
  struct statvfs fs;
  if (store_compact_size(s, &size, &need) != 0 || statvfs(s->path, &fs) != 0) return 0;
  const uint64_t avail = (uint64_t)fs.f_bavail * fs.f_frsize;
  if (avail >= need + (1u << 20)) return 0;
  fc_why(why, why_len,
         "no room beside data.mdb for its compact copy: about %.1f MB needed and 1 MB to spare, "
         "%.1f MB free; nothing compacted",
         need / 1e6, avail / 1e6);
  return ENOSPC;
}

int store_compact(fc_store *s, volatile const int *stop, uint64_t *before, uint64_t *after,
                  char *why, size_t why_len) {
  *before = *after = 0;
  if ((s->flags & FC_STORE_RDONLY) || !(s->flags & FC_STORE_EXCLUSIVE) || s->swap_lock >= 0)
    return EINVAL; /* (compacted once already: s maps the file replaced) */
  int dfd;
  struct stat st;
  MDB_stat ms;
  int rc = mdb_env_get_fd(s->env, &dfd);
  if (!rc) rc = mdb_env_stat(s->env, &ms);
  if (!rc && fstat(dfd, &st) != 0) rc = errno;
  if (rc) return rc;
  *before = (uint64_t)st.st_size;
  const struct stat old = st;
  char tmp[4096], dst[4096];
  if (snprintf(tmp, sizeof tmp, "%s/" TMP_PREFIX "XXXXXX", s->path) >= (int)sizeof tmp ||
      snprintf(dst, sizeof dst, "%s/data.mdb", s->path) >= (int)sizeof dst)
    return ENAMETOOLONG;
  if (lstat(dst, &st) == 0 && S_ISLNK(st.st_mode)) {
    fc_why(why, why_len,
           "data.mdb is a symbolic link: the copy would replace the link, not free the file it "
           "names; nothing compacted");
    return EINVAL;
  }
  /* no free page to give back (a rerun of a finished compaction): nothing to do — a copy would
   * rewrite the whole store, need room for it beside, and be refused while a reader has it open */
  uint64_t size, used;
  if (store_compact_size(s, &size, &used) == 0 && used >= size) {
    *after = *before;
    return 0;
  }
  if ((rc = refuse_in_use(s, why, why_len)) != 0) return rc;
  store_compact_leftovers(s->path);
  if ((rc = room_for_copy(s, why, why_len)) != 0) return rc;
  pthread_mutex_lock(&s->write_mu);
  pthread_rwlock_rdlock(&s->map_lock);
  /* LMDB's write lock, held to the swap: no commit (a writer that took no lock included) comes
   * between the snapshot copied and the rename, and T is the id lock.mdb holds meanwhile. */
  MDB_txn *w = NULL;
  if ((rc = store_txn_begin(s->env, 0, &w)) != 0) goto out;
  const uint64_t T = (uint64_t)mdb_txn_id(w) - 1;
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    rc = errno;
    fc_why(why, why_len, "cannot write the compact copy beside data.mdb: %s; nothing compacted",
           strerror(rc));
    goto out;
  }
  /* the old file's owner and mode (mkostemp's 0600 would lock a team's readers out) */
  if (fchown(fd, old.st_uid, old.st_gid) != 0) (void)fchown(fd, (uid_t)-1, old.st_gid);
  rc = fchmod(fd, old.st_mode & 07777) != 0 ? errno : 0;
  if (!rc) rc = fault_hit("compact") ? EIO : mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT);
  if (!rc) rc = renumber_metas(fd, ms.ms_psize, T);
  if (!rc && fsync(fd) != 0) rc = errno;
  if (!rc && fstat(fd, &st) != 0) rc = errno;
  /* the writer lock, exclusive, on the copy before its name is data.mdb: from the rename on, a
   * writer or another cache-prune opens the copy, and must find it held as the file replaced is
   * until this process closes the store (its directory synced, LMDB's write lock let go): fd stays
   * open as s->swap_lock. No one else has the copy open: a refusal is a file system without flock */
  if (!rc && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno != ENOLCK && errno != EOPNOTSUPP &&
      errno != EINVAL)
    rc = errno;
  if (rc == FC_EFORMAT)
    fc_why(why, why_len,
           "the compact copy's meta pages are not laid out as LMDB 0.9 lays them "
           "out; nothing compacted");
  else if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) { /* the copy reads the free list */
    fc_why(why, why_len,
           "damaged (B-tree: LMDB: %s, met by the compact copy): nothing compacted (cache-verify "
           "says more)",
           mdb_strerror(rc));
    rc = FC_EFORMAT;
  } else if (rc)
    fc_why(why, why_len, "cannot write the compact copy: %s; nothing compacted",
           rc == EIO || rc == ENOSPC ? fc_strerror(store_explain_write_error(s, rc, *before))
                                     : fc_strerror(rc));
  if (!rc) rc = refuse_in_use(s, why, why_len); /* one that opened it while the copy was made */
  if (!rc) fault_stop("compact"); /* test builds: the copy written and synced, not swapped */
  if (!rc && stop && *stop) rc = FC_EINTR; /* Ctrl-C during the copy: it is not swapped in */
  if (!rc && rename(tmp, dst) != 0) {
    rc = errno;
    fc_why(why, why_len, "cannot rename the compact copy over data.mdb: %s; nothing compacted",
           strerror(rc));
  }
  if (rc) {
    unlink(tmp);
    close(fd);
    goto out;
  }
  s->swap_lock = fd;
  *after = (uint64_t)st.st_size;
  s->broken = 1; /* s maps the file replaced: a write through it would be lost */
  fault_stop("compact"); /* test builds: swapped, the directory not yet synced */
  if ((rc = sync_dir(s->path)) != 0)
    fc_why(why, why_len, "compacted, but syncing the store's directory failed: %s", strerror(rc));
out:
  if (w) store_txn_abort(w);
  pthread_rwlock_unlock(&s->map_lock);
  pthread_mutex_unlock(&s->write_mu);
  return rc;
}

int store_compact_size(fc_store *s, uint64_t *before, uint64_t *after) {
  *before = *after = 0;
  int fd;
  struct stat st;
  MDB_stat ms, fs;
  MDB_envinfo ei;
  int rc = mdb_env_get_fd(s->env, &fd);
  if (!rc && fstat(fd, &st) != 0) rc = errno;
  if (rc) return rc;
  *before = (uint64_t)st.st_size;
  pthread_rwlock_rdlock(&s->map_lock);
  MDB_txn *txn = NULL;
  MDB_cursor *c = NULL;
  if ((rc = store_txn_begin_read(s->env, &txn)) != 0) goto out;
  uint64_t free_pages = 0;
  MDB_val k, v;
  /* what mdb_env_copy2's compact copy leaves out: the pages on the free list (db 0: each value
   * a list of page numbers, its count first) and the free list's own pages */
  if ((rc = mdb_env_stat(s->env, &ms)) || (rc = mdb_env_info(s->env, &ei)) ||
      (rc = mdb_stat(txn, 0, &fs)) || (rc = mdb_cursor_open(txn, 0, &c)))
    goto out;
  while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0)
    if (v.mv_size >= sizeof(size_t)) free_pages += *(const size_t *)v.mv_data;
  if (rc != MDB_NOTFOUND) goto out;
  rc = 0;
  free_pages += fs.ms_branch_pages + fs.ms_leaf_pages + fs.ms_overflow_pages;
  const uint64_t pages = (uint64_t)ei.me_last_pgno + 1;
  *after = (pages > free_pages ? pages - free_pages : 2) * ms.ms_psize;
out:
  if (c) mdb_cursor_close(c);
  if (txn) store_txn_abort(txn);
  pthread_rwlock_unlock(&s->map_lock);
  return rc;
}
