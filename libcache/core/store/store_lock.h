/* Can this user take a store's reader lock? LMDB opens (or creates) lock.mdb for writing even to
 * read, so a store this user may read but not write (a teammate's dataset) fails to open with
 * EACCES unless it is opened MDB_NOLOCK. The one check of that case, for the loader (its message)
 * and the tools' engines that refuse such a store without their --read-only.
 * Header-only: a tool's engine links the shared library, whose internal functions are hidden, and
 * the exported ABI is capped; a public function for a four-line check is not worth a slot.
 * May call: libc only. */
#ifndef FC_STORE_LOCK_H
#define FC_STORE_LOCK_H

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

/* The reason, as the loader and the tools word it after "PATH: " or "store is ". */
#define STORE_LOCK_UNWRITABLE \
  "not writable by this user (lock.mdb): LMDB cannot take its reader lock"

/* 1 when dir holds a store (data.mdb) this user can read but whose lock.mdb it cannot open for
 * writing (or, with no lock.mdb, cannot create it: the directory is not writable); else 0. A
 * read-only mount is not this case (EROFS: LMDB opens such a store without its lock by itself),
 * nor a store that cannot be read at all (opening it says so). */
static inline int store_lock_unwritable(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s/data.mdb", dir) >= (int)sizeof p || access(p, R_OK) != 0) return 0;
  snprintf(p, sizeof p, "%s/lock.mdb", dir);
  if (access(p, F_OK) == 0) return access(p, W_OK) != 0 && errno == EACCES;
  return errno == ENOENT && access(dir, W_OK) != 0 && errno == EACCES;
}

#endif
