/* One open of a store per process (fc_store_open, store_int.h). LMDB must not open an environment
 * twice in a process: its locks on lock.mdb are the process's (fcntl), not the handle's. A second
 * open of a store the process holds resets the reader table when no other process has the store
 * open (the first handle's readers, a loader's snapshot among them, are gone from it), and closing
 * either handle, or any descriptor of lock.mdb, drops the process's locks: another process then
 * takes the store for unused, and its writers reuse the pages those readers still read (their
 * records fail their checksums, or with the checks off are other records' bytes). So an open that
 * uses the lock is refused, FC_EOPENED, while another handle of the process holds the store's
 * data.mdb (by device and inode, as loader.c's registry, through which loaders share one handle
 * per store: a data.mdb renamed over since is another file, opened anew). NOLOCK opens, which
 * never touch lock.mdb, are not counted. Entries of a parent's handles are dropped in a fork
 * child. */
#include "libcache/core/store/store_int.h"

#include "formats/common/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct store_once {
  struct store_once *next;
  dev_t dev;
  ino_t ino;
  pid_t pid;
} store_once;

static pthread_mutex_t once_mu = PTHREAD_MUTEX_INITIALIZER;
static store_once *once_head;

/* LMDB sizes lock.mdb (its reader table: 1024 slots of 64 bytes and a header) with ftruncate and
 * writes it through a shared map. On a full file system the first write into a page without a
 * block behind it is SIGBUS, not an error: creating a store on a full disk killed the tool (exit
 * 135), and so could a reader taking a slot on a page never written. The blocks are allocated here
 * first (beyond the end while the file is shorter: LMDB's ftruncate then grows into them). A lock
 * file with no block yet (new, or left sparse by such a crash) is one LMDB's open would fault on:
 * a full disk is ENOSPC from the open then. One LMDB has written before opens as it always did
 * when the rest cannot be allocated (a rerun with nothing to do on a full disk still succeeds).
 * Where the file cannot be opened for writing or the file system cannot allocate ahead
 * (EOPNOTSUPP), LMDB goes on as before. */
enum { LOCK_FILE_BYTES = 1024 * 64 + 4096 };

/* A copy-on-write file system (btrfs) that is full, or whose quota (qgroup) is used up, has no
 * block for any page written anew, allocated ahead or not: LMDB's first write into lock.mdb's map
 * (its header, where every open and every transaction takes or releases a lock) is SIGBUS. Every
 * tool, readers and the loader included, died there (exit 135, not a word), the store sound. So
 * the header page is written first here, through a map of its own, with an atomic OR of 0 (the
 * same bytes, whoever else writes them), under the guard LMDB's calls have (store_lmdb_guarded,
 * store_int.h): 0, or ENOSPC/EDQUOT when it faults. */
static int or_zero(void *page) {
  __atomic_fetch_or((unsigned char *)page, (unsigned char)0, __ATOMIC_RELAXED);
  return 0;
}

static int lock_page_faults(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return 0; /* nothing LMDB wrote yet */
  const size_t len = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return 0;
  const int rc = store_lmdb_guarded(or_zero, m);
  munmap(m, len);
  return rc == EDQUOT ? EDQUOT : rc ? ENOSPC : 0;
}

static int reserve_lock_file(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s/lock.mdb", dir) >= (int)sizeof p) return 0;
  int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
  if (fd < 0) return 0; /* read-only: LMDB decides (MDB_NOLOCK where it may) */
  struct stat st;
  const int unwritten = fstat(fd, &st) != 0 || st.st_blocks == 0;
  int rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, LOCK_FILE_BYTES) == 0 ? 0 : errno;
  const int faults = lock_page_faults(fd);
  close(fd);
  if (faults) return faults;
  return unwritten && (rc == ENOSPC || rc == EDQUOT) ? rc : 0;
}

/* store_int.h */
int store_lock_faults(const char *dir) {
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/data.mdb", dir) >= (int)sizeof p || stat(p, &st) != 0) return 0;
  pthread_mutex_lock(&once_mu); /* a store this process holds: its lock file is not closed here */
  const pid_t pid = getpid();
  int held = 0;
  for (store_once *e = once_head; e && !held; e = e->next)
    held = e->pid == pid && e->dev == st.st_dev && e->ino == st.st_ino;
  pthread_mutex_unlock(&once_mu);
  if (held) return 0;
  snprintf(p, sizeof p, "%s/lock.mdb", dir);
  int fd = open(p, O_RDWR | O_CLOEXEC);
  if (fd < 0) return 0;
  const int faults = lock_page_faults(fd);
  close(fd);
  return faults;
}

/* store_int.h */
int store_claim(fc_store *s, const char *dir, int reserve) {
  char p[4096];
  struct stat st;
  if (s->once || snprintf(p, sizeof p, "%s/data.mdb", dir) >= (int)sizeof p) return 0;
  if (stat(p, &st) != 0) /* a store this open creates: claimed once LMDB made data.mdb */
    return reserve ? reserve_lock_file(dir) : 0;
  const pid_t pid = getpid();
  int rc = 0;
  pthread_mutex_lock(&once_mu);
  for (store_once **pp = &once_head; *pp;) { /* a parent's, inherited over fork: not ours */
    if ((*pp)->pid != pid) {
      store_once *gone = *pp;
      *pp = gone->next;
      free(gone);
    } else {
      pp = &(*pp)->next;
    }
  }
  store_once *e = once_head;
  while (e && !(e->dev == st.st_dev && e->ino == st.st_ino)) e = e->next;
  if (e) {
    rc = FC_EOPENED;
  } else if (!(e = fc_calloc(1, sizeof *e))) {
    rc = ENOMEM;
  } else {
    *e = (store_once){once_head, st.st_dev, st.st_ino, pid};
    once_head = e;
    s->once = e;
  }
  pthread_mutex_unlock(&once_mu);
  return rc ? rc : reserve ? reserve_lock_file(dir) : 0;
}

/* store_int.h */
void store_unclaim(fc_store *s) {
  if (!s->once) return;
  pthread_mutex_lock(&once_mu);
  for (store_once **pp = &once_head; *pp; pp = &(*pp)->next)
    if (*pp == s->once) {
      *pp = s->once->next;
      free(s->once);
      break;
    }
  s->once = NULL;
  pthread_mutex_unlock(&once_mu);
}

/* lock.mdb removed under open processes (docs/FORMAT.md "lock.mdb is no stale lock"): `rm
 * STORE/lock.mdb` while a loader reads, and the next open makes a new lock.mdb, an empty reader
 * table; writers there do not see the loader's snapshot and reuse its pages (it is then served
 * other records' bytes, or fails their checksums). Nothing in lock.mdb outlives its removal, so
 * each open marks data.mdb with the lock file it uses: an OFD read lock (fcntl F_OFD_SETLK, held
 * by LMDB's own descriptor of data.mdb until the environment closes; not the process's fcntl
 * locks, which any close of the file would drop) of one byte at MARK_BASE + lock.mdb's inode
 * number. An open that finds another process's mark at another byte — a lock.mdb that is not this
 * name's any more — is refused, FC_ELOCKGONE: marking first and looking after, of two opens racing
 * across a removal one sees the other. Where OFD locks are not had (EINVAL, ENOLCK: an old kernel,
 * some network file systems) nothing is marked nor refused; processes that do not mark (py-lmdb,
 * featcache before this) are not seen. */
#define MARK_BASE ((off_t)1 << 40)
#define MARK_SPAN ((off_t)1 << 40)

static int mark_seen(int fd, off_t from, off_t len) {
  struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = from, .l_len = len};
  return len > 0 && fcntl(fd, F_OFD_GETLK, &q) == 0 && q.l_type != F_UNLCK;
}

/* store_int.h */
int store_lock_mark(fc_store *s, ino_t lock_ino) {
  int fd;
  if (mdb_env_get_fd(s->env, &fd) != 0) return 0;
  const off_t mine = MARK_BASE + (off_t)(lock_ino % (ino_t)MARK_SPAN);
  struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = mine, .l_len = 1};
  if (fcntl(fd, F_OFD_SETLK, &fl) != 0) return 0;
  return mark_seen(fd, MARK_BASE, mine - MARK_BASE) ||
                 mark_seen(fd, mine + 1, MARK_BASE + MARK_SPAN - mine - 1)
             ? FC_ELOCKGONE
             : 0;
}
