/* fc_strerror: one message table for our codes, LMDB's and errno's; and LMDB's assertions on
 * damaged pages, caught (store_lmdb_assert, store_int.h). */
#include "featcache/fc_base.h"
#include "featcache/fc_format.h" /* FC_FORMAT_NAME */
#include "libcache/core/store/store_int.h"

#include <errno.h> /* program_invocation_short_name */
#include <lmdb.h>
#include <stdio.h>
#include <string.h>

_Thread_local sigjmp_buf *store_lmdb_jump;
_Thread_local char store_lmdb_why[256];

void store_lmdb_assert(MDB_env *env, const char *msg) {
  if (!store_lmdb_jump) { /* LMDB aborts the process next: said first, the store named */
    const char *path = NULL;
    if (mdb_env_get_path(env, &path) != 0 || !path) path = "(a store)";
    fprintf(stderr,
            "%s: %s: damaged (LMDB stopped at a page it cannot use: %s): the process stops "
            "here, its transaction in progress not committed (cache-verify says more; "
            "cache-merge -o NEW STORE copies it into a sound one; featurize and tokenize "
            "--check-pages refuse such a store before writing)\n",
            program_invocation_short_name, path, msg);
    return;
  }
  snprintf(store_lmdb_why, sizeof store_lmdb_why, "%s", msg);
  siglongjmp(*store_lmdb_jump, 1);
}

int store_lmdb_guarded(int (*fn)(void *arg), void *arg) {
  sigjmp_buf jb, *outer = store_lmdb_jump;
  if (sigsetjmp(jb, 0)) {
    store_lmdb_jump = outer;
    return MDB_CORRUPTED;
  }
  store_lmdb_jump = &jb;
  int rc = fn(arg);
  store_lmdb_jump = outer;
  return rc;
}

#ifndef FC_VERSION_STRING
#define FC_VERSION_STRING "0.0.0"
#endif

const char *fc_version(void) { return FC_VERSION_STRING; }

const char *fc_strerror(int err) {
  switch (err) {
  case 0: return "success";
  case FC_EFORMAT: return "FC_EFORMAT: not in the featcache format";
  case FC_ECHECKSUM: return "FC_ECHECKSUM: checksum mismatch";
  case FC_ECONFIG: return "FC_ECONFIG: invalid configuration";
  case FC_EDECODE: return "FC_EDECODE: audio could not be decoded";
  case FC_EEMPTY: return "FC_EEMPTY: empty input (no samples, no text)";
  case FC_ETOOLONG: return "FC_ETOOLONG: input longer than the limit";
  case FC_EMANIFEST: return "FC_EMANIFEST: malformed manifest line";
  case FC_EUTF8: return "FC_EUTF8: invalid UTF-8";
  case FC_ENOTFOUND: return "FC_ENOTFOUND: not found in the store";
  case FC_ENODEVICE: return "FC_ENODEVICE: no usable compute device";
  case FC_ECUDA: return "FC_ECUDA: CUDA call failed";
  case FC_EINTR: return "FC_EINTR: interrupted";
  case FC_EBADSTATE: return "FC_EBADSTATE: handle unusable after an earlier failure";
  case FC_EVERSION: /* a store (or a split store's marker) of a later version: say what this reads */
    return "FC_EVERSION: a store format version this build does not read (it reads " FC_FORMAT_NAME
           " stores, split or not: one made by a newer featcache?)";
  case FC_EDUPLICATE: return "FC_EDUPLICATE: duplicate id";
  case FC_ETOKENIZER: return "FC_ETOKENIZER: invalid tokenizer definition";
  case FC_EUNKNOWN: return "FC_EUNKNOWN: unknown symbol";
  case FC_ERANGE:
    return "FC_ERANGE: value out of range (NaN, infinity, or past what float32 or the codec holds)";
  case FC_ESPLIT: return "FC_ESPLIT: a split store: open it as its parts";
  case FC_EPHONEMIZE: return "FC_EPHONEMIZE: espeak-ng died or hung reading this text";
  case FC_ECONFLICT: return "FC_ECONFLICT: an id's entry differs between stores";
  case FC_ENOSTORE: return "FC_ENOSTORE: not a featcache store (no data.mdb)";
  case FC_ETRUNCATED:
    return "FC_ETRUNCATED: data.mdb is truncated (it ends before its last committed page)";
  case FC_EDROPPED:
    return "FC_EDROPPED: the config was dropped from the store while this run wrote under it "
           "(cache-config --drop); run again to store it anew";
  case FC_EOPENED:
    return "FC_EOPENED: the store is open in this process already (LMDB opens a store once per "
           "process: use the handle that is open, or close it first)";
  case MDB_READERS_FULL: /* said only after the slots of dead processes were cleared (readers.c) */
    return "MDB_READERS_FULL: every reader slot of its lock.mdb is held by a live process (1024 in "
           "a table featcache set up; fewer where another LMDB program opened the store first): "
           "end some of the store's readers (training jobs' loaders, DataLoader workers, "
           "featcache.get) or wait for them";
  default: break;
  }
  if (err >= FC_EFIRST && err <= FC_ELAST) return "FC_E?: unknown featcache error";
  if (err >= MDB_KEYEXIST && err <= MDB_LAST_ERRCODE) return mdb_strerror(err);
  if (err > 0) return strerror(err);
  return "unknown error";
}
