/* A disk quota that runs out, for tests on machines whose kernel has no quotas (or where the
 * tests run as root, whom quotas do not bind): preloaded (LD_PRELOAD) into a tool, it gives the
 * files under FC_QUOTA_DIR FC_QUOTA_BYTES bytes of writes, all calls together. The write that
 * would pass them is short (what is left), and the next one fails with EDQUOT, as a kernel's
 * quota does; a fallocate past them fails with EDQUOT. LMDB's pwrite and writev of data.mdb go
 * through it, and so do the store's own probes. Reads, and files elsewhere, are left alone.
 * Built as tests/stub/libfc_quota_shim.so; never installed. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long used;

/* Whether fd is a file under FC_QUOTA_DIR (a file with no name there included), with a quota. */
static int bound(int fd) {
  const char *dir = getenv("FC_QUOTA_DIR");
  if (!dir || !getenv("FC_QUOTA_BYTES")) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t k = readlink(link, path, sizeof path - 1);
  if (k < 0) return 0;
  path[k] = '\0';
  return strncmp(path, dir, strlen(dir)) == 0;
}

/* The bytes of n this fd may still write: n, fewer, or -1 (the quota is used up: EDQUOT). */
static ssize_t allowed(int fd, size_t n) {
  if (!n || !bound(fd)) return (ssize_t)n;
  const long long quota = atoll(getenv("FC_QUOTA_BYTES"));
  pthread_mutex_lock(&mu);
  long long left = quota - used;
  ssize_t r = left <= 0 ? -1 : (long long)n <= left ? (ssize_t)n : (ssize_t)left;
  if (r > 0) used += r;
  pthread_mutex_unlock(&mu);
  return r;
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

ssize_t write(int fd, const void *buf, size_t n) {
  ssize_t (*real)(int, const void *, size_t) = REAL("write", ssize_t(*)(int, const void *, size_t));
  ssize_t a = allowed(fd, n);
  if (a < 0) return errno = EDQUOT, -1;
  return real(fd, buf, (size_t)a);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  ssize_t (*real)(int, const void *, size_t, off_t) =
      REAL("pwrite", ssize_t(*)(int, const void *, size_t, off_t));
  ssize_t a = allowed(fd, n);
  if (a < 0) return errno = EDQUOT, -1;
  return real(fd, buf, (size_t)a, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  ssize_t (*real)(int, const struct iovec *, int) =
      REAL("writev", ssize_t(*)(int, const struct iovec *, int));
  size_t n = 0;
  for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
  ssize_t a = allowed(fd, n);
  if (a < 0) return errno = EDQUOT, -1;
  if ((size_t)a == n) return real(fd, iov, cnt);
  struct iovec cut[64]; /* the first a bytes of the vector */
  int m = 0;
  for (size_t left = (size_t)a; m < cnt && m < 64 && left; m++) {
    cut[m] = iov[m];
    if (cut[m].iov_len > left) cut[m].iov_len = left;
    left -= cut[m].iov_len;
  }
  return real(fd, cut, m);
}

/* Blocks asked for ahead: refused past the quota, never counted (they hold no data). */
int fallocate(int fd, int mode, off_t off, off_t len) {
  int (*real)(int, int, off_t, off_t) = REAL("fallocate", int (*)(int, int, off_t, off_t));
  if (len > 0 && bound(fd)) {
    pthread_mutex_lock(&mu);
    const int over = used + len > atoll(getenv("FC_QUOTA_BYTES"));
    pthread_mutex_unlock(&mu);
    if (over) return errno = EDQUOT, -1;
  }
  return real(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off_t off, off_t len) { return fallocate(fd, mode, off, len); }
