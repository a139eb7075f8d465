/* Why a store could not be written, said with the file that refused it, for cmd/cli_stores.h.
 * Header-only, as cli.h. */
#ifndef FC_CMD_CLI_UNWRITABLE_H
#define FC_CMD_CLI_UNWRITABLE_H

#include "featcache/fc_base.h" /* fc_strerror */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

/* The reason (err, of an open for writing) a store at dir could not be written: fc_strerror(err),
 * and where a want of permission is one file's — data.mdb writable and lock.mdb not, or the other
 * way round: a store whose files were copied or chmod-ed one at a time — that file:
 * "Permission denied: lock.mdb is read-only for this user" (a store whose two files this user may
 * read only, a teammate's, is said as before: the store is read-only). Asked with the process's
 * effective ids and capabilities (faccessat, AT_EACCESS), not by opening the files: closing a
 * descriptor of lock.mdb would drop the process's locks on it. buf holds the words when needed. */
static inline const char *fc_cli_write_refused(const char *dir, int err, char *buf, size_t len) {
  const char *said = fc_strerror(err);
  if ((err != EACCES && err != EPERM) || !dir) return said;
  static const char *const files[2] = {"data.mdb", "lock.mdb"};
  int refused[2], n = 0;
  for (int i = 0; i < 2; i++) {
    char path[PATH_MAX];
    refused[i] = 0;
    if (snprintf(path, sizeof path, "%s/%s", dir, files[i]) >= (int)sizeof path) return said;
    if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0 && (errno == EACCES || errno == EPERM))
      refused[i] = 1, n++;
  }
  if (n != 1) return said;
  snprintf(buf, len, "%s: %s is read-only for this user", said, files[refused[1]]);
  return buf;
}

#endif
