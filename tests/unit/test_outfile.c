/* Exported files written whole or not at all (include/featcache/fc_outfile.h, formats/common/outfile.c):
 *   - a new file and a file replaced hold exactly the bytes written, with no temporary left;
 *   - an abort, a write error of the stream and a missing directory leave the target as it was
 *     (absent, or its previous bytes) and no temporary;
 *   - a target that is not a regular file (a FIFO made here) is written in place, not replaced;
 *   - in fault-injection builds, FC_FAULT=write:N for N = 1, 2, ... fails the open, the write, the
 *     sync, the close and the rename in turn: EIO each time, the previous file untouched, no
 *     temporary; N = 6 succeeds. */
#include "featcache/fc_outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/common/fault.h"
#include "tests/check.h"

static char dir[64];

/* the file's bytes as a string ("" when absent, "?" when unreadable) */
static const char *slurp(const char *path) {
  static char buf[256];
  FILE *f = fopen(path, "rb");
  if (!f) return errno == ENOENT ? "" : "?";
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* entries of the directory besides "." and ".." */
static int entries(void) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  if (d) closedir(d);
  return n;
}

static void *fifo_reader(void *arg) {
  static char got[64];
  int fd = open((const char *)arg, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, got, sizeof got - 1) : -1;
  got[n > 0 ? n : 0] = '\0';
  if (fd >= 0) close(fd);
  return got;
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/fc_outfile_XXXXXX");
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  char path[128], sub[160], fifo[128];
  snprintf(path, sizeof path, "%s/vocab.txt", dir);

  /* a new file, then a replacement */
  int rc = fc_outfile_write(path, "a\nb\n", 4);
  CHECK(rc == 0 && strcmp(slurp(path), "a\nb\n") == 0 && entries() == 1, "rc %d, '%s', %d entries",
        rc, slurp(path), entries());
  fc_outfile *o;
  rc = fc_outfile_open(path, &o);
  CHECK(rc == 0, "open: %d", rc);
  if (!rc) {
    fputs("new contents\n", fc_outfile_stream(o));
    CHECK(strcmp(slurp(path), "a\nb\n") == 0 && entries() == 2,
          "before the commit the target is the old one, the temporary beside it");
    rc = fc_outfile_commit(o);
    CHECK(rc == 0 && strcmp(slurp(path), "new contents\n") == 0 && entries() == 1,
          "commit: rc %d, '%s'", rc, slurp(path));
  }

  /* an abort, a stream error: the target as it was */
  if (fc_outfile_open(path, &o) == 0) {
    fputs("half", fc_outfile_stream(o));
    fc_outfile_abort(o);
  }
  CHECK(strcmp(slurp(path), "new contents\n") == 0 && entries() == 1, "abort: '%s', %d entries",
        slurp(path), entries());
  if (fc_outfile_open(path, &o) == 0) {
    FILE *f = fc_outfile_stream(o);
    fputs("half", f);
    fflush(f);
    fgetc(f); /* reading a write-only stream: sets its error indicator */
    rc = fc_outfile_commit(o);
    CHECK(rc != 0 && strcmp(slurp(path), "new contents\n") == 0 && entries() == 1,
          "stream error: rc %d, '%s', %d entries", rc, slurp(path), entries());
  }
  snprintf(sub, sizeof sub, "%s/no/such/dir/v.txt", dir);
  rc = fc_outfile_write(sub, "x", 1);
  CHECK(rc == ENOENT && entries() == 1, "missing directory: rc %d (want ENOENT)", rc);

  /* a FIFO: written in place */
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
  pthread_t th;
  pthread_create(&th, NULL, fifo_reader, fifo);
  rc = fc_outfile_write(fifo, "through the pipe", 16);
  void *got;
  pthread_join(th, &got);
  struct stat st;
  CHECK(rc == 0 && strcmp(got, "through the pipe") == 0 && stat(fifo, &st) == 0 &&
            S_ISFIFO(st.st_mode) && entries() == 2,
        "fifo: rc %d, read '%s'", rc, (const char *)got);
  unlink(fifo);

  /* the `write` fault site: each step in turn */
  if (!fault_built()) {
    printf(
        "test_outfile: the write fault site is not built in (-DFC_FAULT_INJECTION=ON): not "
        "checked here\n");
  } else {
    int n = 1;
    for (; n <= 10; n++) {
      char spec[32];
      snprintf(spec, sizeof spec, "write:%d", n);
      setenv("FC_FAULT", spec, 1);
      rc = fc_outfile_write(path, "faulted\n", 8);
      if (rc == 0) break;
      CHECK(rc == EIO && strcmp(slurp(path), "new contents\n") == 0 && entries() == 1,
            "write:%d: rc %d, '%s', %d entries", n, rc, slurp(path), entries());
    }
    unsetenv("FC_FAULT");
    CHECK(n == 6 && strcmp(slurp(path), "faulted\n") == 0,
          "the open, write, sync, close and rename fail in turn, then success: succeeded at n=%d",
          n);
  }
  unlink(path);
  rmdir(dir);
  return fc_check_result("test_outfile");
}
