/* fc_strerror: one message table for our codes, LMDB's and errno's; LMDB's assertions on damaged
 * pages, and the faults (SIGBUS) of its maps, caught (store_lmdb_assert, store_txn_begin,
 * store_int.h). */
#include "featcache/fc_base.h"
#include "featcache/fc_format.h" /* FC_FORMAT_NAME */
#include "libcache/core/store/store_int.h"

#include "formats/common/alloc.h"

#include <errno.h> /* program_invocation_short_name */
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

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

/* A SIGBUS met under a guard (store_lmdb_jump set by this thread): the handler notes where, and
 * jumps. Installed at the first guarded call, and again at each store's open where another
 * replaced it since (PyTorch's DataLoader workers install their own at start); a SIGBUS elsewhere
 * goes to the handler that was there before, or ends the process as it would have. */
static _Thread_local volatile sig_atomic_t bus_hit;
static _Thread_local void *volatile bus_addr;
static struct sigaction bus_prev;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void bus_handler(int sig, siginfo_t *si, void *uc) {
  if (store_lmdb_jump) {
    static const char why[] = "a fault through LMDB's map (SIGBUS)";
    for (size_t i = 0; i < sizeof why; i++) store_lmdb_why[i] = why[i]; /* async-signal-safe */
    bus_hit = 1;
    bus_addr = si->si_addr;
    siglongjmp(*store_lmdb_jump, 1);
  }
  if (bus_prev.sa_flags & SA_SIGINFO) {
    if (bus_prev.sa_sigaction) bus_prev.sa_sigaction(sig, si, uc);
    return;
  }
  if (bus_prev.sa_handler != SIG_DFL && bus_prev.sa_handler != SIG_IGN) {
    bus_prev.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL); /* not ours: the default action, as without this handler */
  raise(SIGBUS);
}

/* store_int.h: ours installed unless it is there, the handler found kept to chain to. */
static pthread_mutex_t bus_mu = PTHREAD_MUTEX_INITIALIZER;

void store_bus_install(void) {
  struct sigaction cur;
  pthread_mutex_lock(&bus_mu);
  if (sigaction(SIGBUS, NULL, &cur) == 0 &&
      !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == bus_handler)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = bus_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK; /* no mask to restore after the jump */
    sigemptyset(&sa.sa_mask);
    bus_prev = cur;
    sigaction(SIGBUS, &sa, NULL);
  }
  pthread_mutex_unlock(&bus_mu);
}

static void bus_install_once(void) { store_bus_install(); }

/* Whether `need` bytes can be written into dir now: 0, or how a write of them fails — ENOSPC,
 * EDQUOT (the user's or the project's quota, which statvfs does not show), EFBIG. The blocks are
 * asked of the file system (fallocate) for a file with no name (O_TMPFILE; else a name removed at
 * once), given back at its close. 0 too where that cannot be asked (no fallocate, no O_TMPFILE). */
int store_room_probe(const char *dir, uint64_t need) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && errno != ENOSPC && errno != EDQUOT) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/.fc-room-XXXXXX", dir) >= (int)sizeof p) return 0;
    if ((fd = mkostemp(p, O_CLOEXEC)) >= 0) unlink(p);
  }
  int rc = fd < 0 ? errno : fallocate(fd, 0, 0, (off_t)need) != 0 ? errno : 0;
  if (fd >= 0) close(fd);
  return rc == ENOSPC || rc == EDQUOT || rc == EFBIG ? rc : 0;
}

/* What a SIGBUS at addr means, from the file mapped there (/proc/self/maps): lock.mdb's page
 * could not be written (a full copy-on-write disk, or one over its quota: EDQUOT or ENOSPC as the
 * file system says of a block asked for beside it, ENOSPC when it says nothing); data.mdb's could
 * not be read (the file ends before it: FC_ETRUNCATED); else EIO. *lock: where lock.mdb's first
 * byte is mapped when the fault was in its map, else NULL. */
static int bus_reason(const void *addr, const unsigned char **lock) {
  *lock = NULL;
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return ENOSPC;
  char line[4608];
  int rc = EIO;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off;
    int at = 0;
    if (sscanf(line, "%lx-%lx %*s %lx %*x:%*x %*u %n", &lo, &hi, &off, &at) < 3 || !at) continue;
    if ((uintptr_t)addr < lo || (uintptr_t)addr >= hi) continue;
    char *path = line + at, *end = path + strcspn(path, "\n");
    *end = 0;
    const size_t del = sizeof " (deleted)" - 1, n = (size_t)(end - path);
    if (n > del && strcmp(end - del, " (deleted)") == 0) end -= del, *end = 0;
    const size_t len = (size_t)(end - path);
    if (len > 9 && strcmp(end - 9, "/lock.mdb") == 0) {
      end[-9] = 0;
      rc = store_room_probe(path, 4096) == EDQUOT ? EDQUOT : ENOSPC;
      if (off <= lo) *lock = (const unsigned char *)(uintptr_t)(lo - off);
    } else if (len > 9 && strcmp(end - 9, "/data.mdb") == 0) {
      rc = FC_ETRUNCATED;
    }
    break;
  }
  fclose(f);
  return rc;
}

/* Does the calling thread hold a mutex of the lock.mdb mapped at lock (its reader or writer
 * mutex)? LMDB 0.9's lock file begins with MDB_txninfo (mdb.c): its magic, a format word, the
 * reader mutex at byte 8, the writer mutex at byte 64 (the first 64-byte cache line padded); a
 * glibc pthread_mutex_t (40 bytes on a 64-bit Linux) holds its owner's thread id at its byte 8
 * (__owner) and, robust as LMDB makes it, in its first word's low 30 bits. 1 (held, as far as
 * this can tell) where the layout is not that one. Read through the map: reading a page of it
 * never faults for want of a block. */
static int lock_mutex_mine(const unsigned char *lock) {
#if defined(__linux__) && defined(__GLIBC__) && UINTPTR_MAX == UINT64_MAX
  if (!lock || sizeof(pthread_mutex_t) != 40) return 1;
  const uint32_t magic = __atomic_load_n((const uint32_t *)lock, __ATOMIC_RELAXED);
  if (magic != 0xBEEFC0DEu) return 1;
  const uint32_t tid = (uint32_t)gettid();
  for (size_t m = 8; m <= 64; m += 56) {
    const uint32_t word = __atomic_load_n((const uint32_t *)(lock + m), __ATOMIC_RELAXED);
    const uint32_t owner = __atomic_load_n((const uint32_t *)(lock + m + 8), __ATOMIC_RELAXED);
    if ((word & 0x3fffffffu) == tid || owner == tid) return 1;
  }
  return 0;
#else
  (void)lock;
  return 1;
#endif
}

/* After a jump: what the guarded call met (LMDB's assertion: MDB_CORRUPTED). *held: 0 when the
 * call is known to have been left holding none of lock.mdb's mutexes (a fault writing lock.mdb
 * while taking one, or a reader slot written outside them), else 1; *lock: where lock.mdb is
 * mapped when the fault was there, else NULL. */
static int jumped_reason(int *held, const unsigned char **lock) {
  *held = 1;
  *lock = NULL;
  if (!bus_hit) return MDB_CORRUPTED;
  bus_hit = 0;
  const int rc = bus_reason(bus_addr, lock);
  if (*lock) *held = lock_mutex_mine(*lock);
  return rc;
}

int store_lmdb_guarded(int (*fn)(void *arg), void *arg) {
  pthread_once(&bus_once, bus_install_once);
  sigjmp_buf jb, *outer = store_lmdb_jump;
  if (sigsetjmp(jb, 0)) {
    store_lmdb_jump = outer;
    int held;
    const unsigned char *lock;
    return jumped_reason(&held, &lock);
  }
  store_lmdb_jump = &jb;
  int rc = fn(arg);
  store_lmdb_jump = outer;
  return rc;
}

/* The environments a guarded call jumped out of, with what it met. Such an environment is never
 * used nor closed again: the jump may have left a mutex of lock.mdb held by this process (taken,
 * then the write that would release it faulted), or a transaction half ended; LMDB's own end of
 * it (mdb_env_close) would write to lock.mdb again. They are kept here, with the transactions
 * left behind, until the process exits (which releases the locks, and LMDB's robust mutexes tell
 * the next process their holder died). Where every fault of an environment is known to have left
 * no mutex held (held 0: lock_mutex_mine), the store may be opened again in the process once its
 * handle is closed (store_env_fault_held, fc_store_close): a long-lived process (a training loop)
 * whose store met a full disk reopens it once there is room, where it met FC_EOPENED until it
 * exited. The environment left open holds only its reader slots (this live process's pid: they
 * keep the snapshots they pinned, which costs room, never data) and the process's locks, which a
 * new environment shares. */
typedef struct faulted {
  struct faulted *next;
  const MDB_env *env;
  int code;
  int held; /* a mutex of lock.mdb may be held by the faulting thread */
  const unsigned char *lock; /* where the fault found lock.mdb mapped (NULL: not there) */
  MDB_txn *txn; /* a read transaction whose end faulted (NULL: none) */
} faulted;
static pthread_mutex_t faulted_mu = PTHREAD_MUTEX_INITIALIZER;
static faulted *faulted_head;
static atomic_int n_faulted;

int store_env_faulted(const MDB_env *env) {
  if (!atomic_load(&n_faulted)) return 0;
  int code = 0;
  pthread_mutex_lock(&faulted_mu);
  for (faulted *f = faulted_head; f && !code; f = f->next)
    if (f->env == env) code = f->code;
  pthread_mutex_unlock(&faulted_mu);
  return code;
}

/* Where a fault of env found its lock.mdb mapped, or NULL. */
static const unsigned char *fault_lock(const MDB_env *env) {
  const unsigned char *lock = NULL;
  pthread_mutex_lock(&faulted_mu);
  for (faulted *f = faulted_head; f && !lock; f = f->next)
    if (f->env == env) lock = f->lock;
  pthread_mutex_unlock(&faulted_mu);
  return lock;
}

int store_env_fault_held(const MDB_env *env) {
  if (!atomic_load(&n_faulted)) return 0;
  int held = 0;
  pthread_mutex_lock(&faulted_mu);
  for (faulted *f = faulted_head; f && !held; f = f->next) held = f->env == env && f->held;
  pthread_mutex_unlock(&faulted_mu);
  return held;
}

static void faulted_add(const MDB_env *env, int code, int held, const unsigned char *lock,
                        MDB_txn *txn) {
  faulted *f = fc_calloc(1, sizeof *f);
  pthread_mutex_lock(&faulted_mu);
  if (f) { /* without memory: its env is only not refused later (the calls fault again, caught) */
    *f = (faulted){faulted_head, env, code, held, lock, txn};
    faulted_head = f;
    atomic_fetch_add(&n_faulted, 1);
  }
  pthread_mutex_unlock(&faulted_mu);
}

enum { OP_BEGIN, OP_COMMIT, OP_ABORT, OP_RESET, OP_RENEW, OP_CHECK, OP_CLOSE };

/* One LMDB call that may write lock.mdb through its map, guarded. env: the call's environment. */
static int guarded_op(int op, MDB_env *env, MDB_txn *txn, unsigned flags, MDB_txn **out,
                      int *dead) {
  pthread_once(&bus_once, bus_install_once);
  int code = store_env_faulted(env);
  if (code) { /* refused: a transaction to end is kept with its environment */
    /* another thread's transaction, refused its end: a write transaction's thread holds the
     * writer mutex for good (its release is that end); so does one that faulted holding it */
    if (op == OP_ABORT || op == OP_RESET || op == OP_COMMIT) {
      const unsigned char *lock = fault_lock(env);
      faulted_add(env, code, lock_mutex_mine(lock), lock, op == OP_COMMIT ? NULL : txn);
    }
    return code;
  }
  sigjmp_buf jb, *outer = store_lmdb_jump;
  if (sigsetjmp(jb, 0)) {
    store_lmdb_jump = outer;
    int held;
    const unsigned char *lock;
    code = jumped_reason(&held, &lock);
#ifdef __SANITIZE_ADDRESS__
    if (op == OP_BEGIN) __lsan_enable();
#endif
    faulted_add(env, code, held, lock, op == OP_ABORT || op == OP_RESET ? txn : NULL);
    return code;
  }
  store_lmdb_jump = &jb;
  int rc = 0;
  switch (op) {
  case OP_BEGIN:
#ifdef __SANITIZE_ADDRESS__
    /* a read transaction LMDB allocates, then faults on its reader slot, is lost in the jump */
    __lsan_disable();
    rc = mdb_txn_begin(env, NULL, flags, out);
    __lsan_enable();
#else
    rc = mdb_txn_begin(env, NULL, flags, out);
#endif
    break;
  case OP_COMMIT: rc = mdb_txn_commit(txn); break;
  case OP_ABORT: mdb_txn_abort(txn); break;
  case OP_RESET: mdb_txn_reset(txn); break;
  case OP_RENEW: rc = mdb_txn_renew(txn); break;
  case OP_CHECK: rc = mdb_reader_check(env, dead); break;
  case OP_CLOSE: mdb_env_close(env); break;
  default: break;
  }
  store_lmdb_jump = outer;
  return rc;
}

int store_txn_begin(MDB_env *env, unsigned flags, MDB_txn **txn) {
  return guarded_op(OP_BEGIN, env, NULL, flags, txn, NULL);
}

int store_txn_commit(MDB_txn *txn) {
  return guarded_op(OP_COMMIT, mdb_txn_env(txn), txn, 0, NULL, NULL);
}

void store_txn_abort(MDB_txn *txn) {
  if (txn) (void)guarded_op(OP_ABORT, mdb_txn_env(txn), txn, 0, NULL, NULL);
}

int store_txn_renew(MDB_txn *txn) {
  int rc = guarded_op(OP_RESET, mdb_txn_env(txn), txn, 0, NULL, NULL);
  return rc ? rc : guarded_op(OP_RENEW, mdb_txn_env(txn), txn, 0, NULL, NULL);
}

int store_reader_check(MDB_env *env, int *dead) {
  *dead = 0;
  return guarded_op(OP_CHECK, env, NULL, 0, NULL, dead);
}

void store_env_close(MDB_env *env) {
  if (env) (void)guarded_op(OP_CLOSE, env, NULL, 0, NULL, NULL);
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
  case FC_ELOCKGONE:
    return "FC_ELOCKGONE: lock.mdb was removed while other processes have the store open (their "
           "readers are in the removed file, where a writer opened now would not see them and "
           "would reuse the pages they read): end them (fuser -v STORE/data.mdb lists them), "
           "then run again";
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
