/* Exported files written whole or not at all (include/featcache/fc_outfile.h). */
#include "featcache/fc_outfile.h"
#include "formats/common/args.h"

#include "formats/common/alloc.h"
#include "formats/common/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fc_outfile {
  FILE *f;
  char *path; /* the target */
  char *tmp; /* the temporary beside it; NULL when the target is written in place */
};

/* The errno value of a failed step (EIO when the stream kept no better one). */
static int err_of(int failed) { return failed ? (errno ? errno : EIO) : 0; }

/* The `write` fault site: asked before each step, so that a failed step is not done at all. */
static int injected(void) { return fault_hit("write") ? EIO : 0; }

/* The descriptor a path names (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), else -1.
 * Such a path is the caller's open file, whatever it is: a file beside it would be made in /dev
 * (renamed over /dev/stdout, as root) or in /proc (refused), and opening it again would lose its
 * offset and append mode (`>> log`). It is written through a dup of the descriptor. */
static int names_fd(const char *path) {
  if (strcmp(path, "/dev/stdout") == 0) return 1;
  if (strcmp(path, "/dev/stderr") == 0) return 2;
  const char *n = strncmp(path, "/dev/fd/", 8) == 0          ? path + 8
                  : strncmp(path, "/proc/self/fd/", 14) == 0 ? path + 14
                                                             : NULL;
  if (!n || *n < '0' || *n > '9') return -1;
  char *end;
  long fd = strtol(n, &end, 10);
  return *end || fd > 1 << 20 ? -1 : (int)fd;
}

int fc_outfile_open(const char *path, fc_outfile **out) {
  FC_ARGS(out);
  static atomic_uint seq;
  *out = NULL;
  if (!path || !*path) return EINVAL;
  fc_outfile *o = fc_calloc(1, sizeof *o);
  if (!o || !(o->path = fc_strdup(path))) {
    free(o);
    return ENOMEM;
  }
  struct stat st;
  const int own_fd = names_fd(path);
  int in_place = own_fd >= 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
  int fd = -1, rc = 0;
  size_t cap = strlen(path) + 48;
  if ((rc = injected())) { /* the open fails at the `write` fault site */
  } else if (own_fd >= 0) { /* one open for reading only (a closed stdout given /dev/null): EBADF */
    const int fl = fcntl(own_fd, F_GETFL); /* not open: EBADF */
    if (fl >= 0 && (fl & O_ACCMODE) == O_RDONLY)
      errno = EBADF;
    else if (fl >= 0)
      fd = fcntl(own_fd, F_DUPFD_CLOEXEC, 3);
    rc = err_of(fd < 0);
  } else if (in_place) {
    fd = open(path, O_WRONLY | O_CLOEXEC);
    rc = err_of(fd < 0);
  } else if (!(o->tmp = fc_malloc(cap))) {
    rc = ENOMEM;
  } else {
    for (int tries = 0; tries < 100; tries++) { /* O_EXCL: never another writer's temporary */
      snprintf(o->tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&seq, 1));
      fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0 || errno != EEXIST) break;
    }
    rc = err_of(fd < 0);
  }
  if (!rc && !(o->f = fdopen(fd, "w"))) rc = errno ? errno : ENOMEM;
  if (rc) {
    if (fd >= 0) {
      close(fd);
      if (o->tmp) unlink(o->tmp);
    }
    free(o->tmp);
    free(o->path);
    free(o);
    return rc;
  }
  *out = o;
  return 0;
}

FILE *fc_outfile_stream(fc_outfile *o) {
  FC_ARGS_OR(NULL, o);
  return o->f;
}

static void outfile_free(fc_outfile *o) {
  free(o->tmp);
  free(o->path);
  free(o);
}

int fc_outfile_commit(fc_outfile *o) {
  FC_ARGS(o);
  errno = 0;
  int rc = injected();
  if (!rc) rc = err_of(fflush(o->f) != 0 || ferror(o->f));
  if (!rc && o->tmp && !(rc = injected())) rc = err_of(fsync(fileno(o->f)) != 0);
  int rc_close = rc ? 0 : injected(); /* the stream is closed whatever fails */
  errno = 0;
  if (fclose(o->f) != 0 && !rc_close) rc_close = err_of(1);
  if (!rc) rc = rc_close;
  if (!rc && o->tmp && !(rc = injected())) rc = err_of(rename(o->tmp, o->path) != 0);
  if (rc && o->tmp) unlink(o->tmp);
  outfile_free(o);
  return rc;
}

void fc_outfile_abort(fc_outfile *o) {
  if (!o) return;
  fclose(o->f);
  if (o->tmp) unlink(o->tmp);
  outfile_free(o);
}

int fc_outfile_write(const char *path, const void *data, size_t len) {
  FC_ARGS(data || !len);
  fc_outfile *o;
  int rc = fc_outfile_open(path, &o);
  if (rc) return rc;
  if (len && fwrite(data, 1, len, o->f) != len) {
    rc = errno ? errno : EIO;
    fc_outfile_abort(o);
    return rc;
  }
  return fc_outfile_commit(o);
}
