/* The store: an LMDB environment with five named dbs, and the optional `failed` (docs/FORMAT.md).
 *
 * Map growth: LMDB fails a write with MDB_MAP_FULL when the map is too small. fc_store_write then
 * aborts, doubles the map (which LMDB allows only while this process has no transaction open,
 * hence map_lock: read transactions hold it shared) and replays the whole batch, so a batch is
 * atomic whatever the map size. cache-merge, which drives LMDB itself, grows through the same
 * store_grow_map (store_int.h). The write transactions themselves: store_write.c. */
#include "libcache/core/store/store_int.h"
#include "formats/common/args.h"

#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/config/config_stamp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define FC_INITIAL_MAP (64ull << 20)
/* the five dbs, and the indexes of up to 120 configs (later ones go unindexed) */
#define FC_STORE_MAX_DBS 128

static const char *const db_names[FC_DB_ALL] = {"meta", "audio", "text", "feat", "tok", "failed"};

const char *store_db_name(int db) { return db >= 0 && db < FC_DB_ALL ? db_names[db] : NULL; }

/* The first map of a store opened for writing. Test builds (FC_FAULT_INJECTION) take it from
 * FC_FAULT_MAPSIZE (bytes, at least 16 KiB) when set, so that a test's small job reaches map
 * growth (the `grow` fault site, tests/cli/fault_sites.sh); release builds never read it. */
size_t store_fault_mapsize(void) {
#ifdef FC_FAULT_INJECTION
  const char *e = getenv("FC_FAULT_MAPSIZE");
  char *end = NULL;
  unsigned long long v = e && *e ? strtoull(e, &end, 10) : 0;
  if (v >= (16u << 10) && end && !*end) return (size_t)v;
#endif
  return 0;
}

static size_t initial_map(void) {
  size_t m = store_fault_mapsize();
  return m ? m : FC_INITIAL_MAP;
}

static int file_exists(const char *dir, const char *name) {
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return 0;
  return stat(p, &st) != 0 ? 0 : S_ISREG(st.st_mode) && st.st_size == 0 ? 2 : 1; /* 2: empty */
}

/* lock.mdb's inode: 1 and *ino, or 0 when there is none. */
static int lock_ino(const char *dir, ino_t *ino) {
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/lock.mdb", dir) >= (int)sizeof p || stat(p, &st) != 0) return 0;
  *ino = st.st_ino;
  return 1;
}

static int open_dbs(fc_store *s, int existed) {
  int create = (s->flags & FC_STORE_CREATE) && !(s->flags & FC_STORE_RDONLY);
  MDB_txn *txn = NULL;
  int rc = create ? store_txn_begin(s->env, 0, &txn) : store_txn_begin_read(s->env, &txn);
  if (rc) return rc;
  /* data.mdb may be another process's store that has not committed its dbs yet (two featurize
   * runs starting on a new store): an environment with nothing in its main db is new. */
  MDB_dbi main_dbi;
  MDB_stat mst;
  if (create && existed && mdb_dbi_open(txn, NULL, 0, &main_dbi) == 0 &&
      mdb_stat(txn, main_dbi, &mst) == 0 && mst.ms_entries == 0)
    existed = 0;
  /* A pre-existing environment without our meta db is somebody else's: never convert it. */
  rc = mdb_dbi_open(txn, "meta", (create && !existed) ? MDB_CREATE : 0, &s->dbi[FC_DB_META]);
  if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) {
    rc = FC_EFORMAT;
    goto fail;
  }
  if (rc) goto fail;
  MDB_val k = {6, (void *)"format"}, v;
  rc = mdb_get(txn, s->dbi[FC_DB_META], &k, &v);
  if (rc == MDB_NOTFOUND && create && !existed) {
    v.mv_data = (void *)FC_FORMAT_NAME;
    v.mv_size = strlen(FC_FORMAT_NAME);
    rc = mdb_put(txn, s->dbi[FC_DB_META], &k, &v, 0);
    if (rc) goto fail;
  } else if (rc == MDB_NOTFOUND) {
    rc = FC_EFORMAT;
    goto fail;
  } else if (rc) {
    goto fail;
  } else if (v.mv_size != strlen(FC_FORMAT_NAME) || memcmp(v.mv_data, FC_FORMAT_NAME, v.mv_size)) {
    rc = (v.mv_size > 10 && memcmp(v.mv_data, "featcache/", 10) == 0) ? FC_EVERSION : FC_EFORMAT;
    goto fail;
  }
  for (int i = 1; i < FC_DB_COUNT; i++) {
    rc = mdb_dbi_open(txn, db_names[i], create ? MDB_CREATE : 0, &s->dbi[i]);
    if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) {
      rc = FC_EFORMAT;
      goto fail;
    }
    if (rc) goto fail;
  }
  /* The optional dbs: created by a writer, absent (dbi 0: read as empty) in an older store opened
   * read-only. */
  rc = mdb_dbi_open(txn, db_names[FC_DB_FAILED], create ? MDB_CREATE : 0, &s->dbi[FC_DB_FAILED]);
  if (rc == MDB_NOTFOUND) s->dbi[FC_DB_FAILED] = 0, rc = 0;
  if (rc == MDB_INCOMPATIBLE) rc = FC_EFORMAT;
  if (rc) goto fail;
  /* the index dbs' handles, opened here, are the environment's once this commits */
  if ((rc = store_index_load(s, txn))) goto fail;
  if ((rc = store_txn_commit(txn)) != 0) return rc;
  if (!s->dbi[FC_DB_FAILED] && !(s->flags & FC_STORE_RDONLY)) { /* opened writable, no CREATE */
    if ((rc = store_txn_begin(s->env, 0, &txn)) != 0) return rc;
    rc = mdb_dbi_open(txn, db_names[FC_DB_FAILED], MDB_CREATE, &s->dbi[FC_DB_FAILED]);
    if (rc) goto fail;
    return store_txn_commit(txn);
  }
  return 0;
fail:
  store_txn_abort(txn);
  return rc;
}

int store_create_lock(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  while (flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL) break; /* the link() decides */
    int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

void store_create_unlock(int fd) {
  if (fd >= 0) close(fd); /* releases the flock */
}

/* Blocks allocated beyond data.mdb's end (fallocate with FALLOC_FL_KEEP_SIZE: cache-merge's
 * write-back allocates ahead and trims at its end, libcache/merge/writeback.c) are freed when a
 * writer opens the store, so that a merge killed before its trim leaves no space taken that `ls`
 * does not show. The truncation to the file's own size is made inside a write transaction: no
 * writer of another process extends the file meanwhile. */
static void reclaim_beyond_end(fc_store *s) {
  mdb_filehandle_t fd;
  struct stat st;
  if (mdb_env_get_fd(s->env, &fd) || fstat(fd, &st) || !S_ISREG(st.st_mode)) return;
  const uint64_t slack = 1u << 20; /* the file system's own rounding, never worth a transaction */
  if ((uint64_t)st.st_blocks * 512 <= (uint64_t)st.st_size + slack) return;
  MDB_txn *txn;
  pthread_rwlock_rdlock(&s->map_lock);
  if (store_txn_begin(s->env, 0, &txn) == 0) {
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_blocks * 512 > (uint64_t)st.st_size + slack)
      (void)ftruncate(fd, st.st_size); /* frees the blocks past the end; best effort */
    store_txn_abort(txn);
  }
  pthread_rwlock_unlock(&s->map_lock);
}

/* The store's writer lock (docs/FORMAT.md "Writing, durability"): an flock(2) of data.mdb, held
 * as long as the environment is open (LMDB's own descriptor: mdb_env_close releases it). A
 * writer holds it shared — any number write at once, each transaction LMDB's alone — and
 * cache-prune exclusive (FC_STORE_EXCLUSIVE), since featurize and tokenize decide from a read
 * transaction that a record is stored and commit the entry that refers to it in a later one: a
 * record removed in between would leave the entry without it. A shared open waits while the
 * exclusive holder runs; an exclusive one is refused (EBUSY) while any writer has the store open.
 * A file system without flock (ENOLCK, EOPNOTSUPP) has no lock. */
static int writer_lock(fc_store *s) {
  int fd;
  if (mdb_env_get_fd(s->env, &fd) != 0) return 0;
  int excl = (s->flags & FC_STORE_EXCLUSIVE) != 0;
  if (flock(fd, (excl ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) return 0;
  int e = errno;
  if (e == EWOULDBLOCK && excl) return EBUSY;
  if (e == EWOULDBLOCK) { /* cache-prune runs: wait for it */
    while (flock(fd, LOCK_SH) != 0) {
      if (errno == EINTR) return FC_EINTR;
      if (errno == ENOLCK || errno == EOPNOTSUPP) return 0;
      return errno;
    }
    return 0;
  }
  return e == ENOLCK || e == EOPNOTSUPP || e == EINVAL ? 0 : e;
}

/* Did data.mdb's name come to name another file between LMDB's open of it and the writer lock
 * (a compaction swapped a copy in meanwhile, compact.c)? A writer that went on would write to the
 * file replaced, which nothing reads again. */
static int replaced_meanwhile(fc_store *s) {
  char p[4096];
  struct stat a, b;
  int fd;
  if (mdb_env_get_fd(s->env, &fd) != 0 || fstat(fd, &a) != 0) return 0;
  if (snprintf(p, sizeof p, "%s/data.mdb", s->path) >= (int)sizeof p || stat(p, &b) != 0) return 0;
  return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

static int store_open_once(const char *dir, unsigned flags, fc_store **out);

int fc_store_open(const char *dir, unsigned flags, fc_store **out) {
  FC_ARGS(dir, out);
  int rc, tries = 0;
  fault_stop(
      "store_open"); /* test builds: FC_FAULT_STOP=store_open:N (tests/cli/bench_interrupt) */
  while ((rc = store_open_once(dir, flags, out)) == EAGAIN && ++tries < 100) continue;
  if (rc == ENOMEM && (flags & STORE_OPEN_HEADROOM)) /* address space limited (ulimit -v) */
    return fc_store_open(dir, flags & ~(unsigned)STORE_OPEN_HEADROOM, out);
  return rc;
}

/* fc_store_open, or EAGAIN when the store was compacted while it opened (open it again). */
static int store_open_once(const char *dir, unsigned flags, fc_store **out) {
  *out = NULL;
  if (!dir || !*dir) return EINVAL;
  int rdonly = (flags & FC_STORE_RDONLY) != 0;
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (errno != ENOENT || rdonly || !(flags & FC_STORE_CREATE)) return errno;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return errno;
  } else if (!S_ISDIR(st.st_mode)) {
    return ENOTDIR;
  }
  store_bus_install(); /* LMDB's faults on a full disk caught (store_int.h store_txn_begin) */
  int existed = file_exists(dir, "data.mdb");
  /* A split store's directory holds parts, never a store of its own: neither open nor create one
   * there (fc_store_open_split, fc_store_expand open its parts). */
  if (!existed && file_exists(dir, "featcache-split")) return FC_ESPLIT;
  if (!existed && (rdonly || !(flags & FC_STORE_CREATE))) return FC_ENOSTORE;
  /* Creating data.mdb: under the directory's creation lock, where a split store's creator looks
   * for data.mdb before it writes its marker (split.c); the marker is looked for again under it. */
  int lk = -1;
  if (!existed) {
    if ((lk = store_create_lock(dir)) < 0) return -lk;
    existed = file_exists(dir, "data.mdb");
    if (!existed && file_exists(dir, "featcache-split")) {
      store_create_unlock(lk);
      return FC_ESPLIT;
    }
  }

#ifdef FC_FAULT_INJECTION
  /* FC_FAULT_NOSYNC=1 (test builds only): the writers' former policy, commits unsynced and a
   * sync every few seconds, for the power-cut trials that compare it (scripts/crash-trials) */
  const char *ns = getenv("FC_FAULT_NOSYNC");
  if (ns && *ns == '1' && (flags & FC_STORE_NOMETASYNC))
    flags = (flags & ~(unsigned)FC_STORE_NOMETASYNC) | FC_STORE_NOSYNC;
#endif
  fc_store *s = fc_calloc(1, sizeof *s);
  if (!s) {
    store_create_unlock(lk);
    return ENOMEM;
  }
  s->flags = flags & ~(unsigned)STORE_OPEN_HEADROOM;
  s->lock_probe = -1;
  s->swap_lock = -1;
  s->path = fc_strdup(dir);
  pthread_mutex_init(&s->write_mu, NULL);
  pthread_rwlock_init(&s->map_lock, NULL);
  pthread_mutex_init(&s->idx_mu, NULL);
  pthread_mutex_init(&s->dbi_mu, NULL);
  int rc = s->path ? mdb_env_create(&s->env) : ENOMEM;
  if (rc) goto fail;
  mdb_env_set_maxdbs(s->env, FC_STORE_MAX_DBS);
  mdb_env_set_assert(s->env, store_lmdb_assert); /* a damaged page: an error where caught */
  mdb_env_set_maxreaders(s->env, 1024);
  if (!rdonly) mdb_env_set_mapsize(s->env, initial_map());
  if (rdonly && (flags & STORE_OPEN_HEADROOM) && sizeof(size_t) >= 8 && !store_fault_mapsize()) {
    char p[4096];
    struct stat dst;
    if (snprintf(p, sizeof p, "%s/data.mdb", dir) < (int)sizeof p && stat(p, &dst) == 0)
      mdb_env_set_mapsize(s->env, (size_t)dst.st_size + STORE_MAP_HEADROOM);
  }
  unsigned ef = MDB_NOTLS;
  if (rdonly) ef |= MDB_RDONLY;
  if (flags & FC_STORE_NOSYNC) ef |= MDB_NOSYNC;
  if (flags & FC_STORE_NOMETASYNC) ef |= MDB_NOMETASYNC;
  if (flags & FC_STORE_NOLOCK) ef |= MDB_NOLOCK;
  if (flags & FC_STORE_NORDAHEAD) ef |= MDB_NORDAHEAD;
  if (existed == 2 && !(flags & FC_STORE_CREATE)) rc = FC_EFORMAT; /* empty: nothing committed */
  if (rc || (!(flags & FC_STORE_NOLOCK) && (rc = store_claim(s, dir, 1)) != 0)) goto fail;
  ino_t lk0 = 0, lk1 = 0;
  const int had_lock = lock_ino(dir, &lk0);
  rc = fault_hit("env") ? EIO : mdb_env_open(s->env, dir, ef, 0664);
  if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH) rc = FC_EFORMAT;
  if (!rc && !(flags & FC_STORE_NOLOCK)) rc = store_claim(s, dir, 0); /* one it created */
  if (rc) goto fail;
  unsigned got = 0;
  if (mdb_env_get_flags(s->env, &got) == 0 && !(got & MDB_NOLOCK)) { /* a lock.mdb in use */
    if (!lock_ino(dir, &lk1) || (had_lock && lk0 != lk1)) { /* removed or replaced meanwhile */
      rc = EAGAIN;
      goto fail;
    }
    if ((rc = store_lock_mark(s, lk1)) != 0) goto fail;
  }
  if (existed && (rc = store_check_extent(s)) != 0) goto fail;
  if (!rdonly && (rc = writer_lock(s)) != 0) goto fail;
  if (!rdonly && replaced_meanwhile(s)) {
    rc = EAGAIN;
    goto fail;
  }
  rc = open_dbs(s, existed);
  while (rc == MDB_MAP_FULL && !(rc = store_grow_map(s, 0))) /* a first map too small for the dbs */
    rc = open_dbs(s, existed);
  if (rc) goto fail;
  store_create_unlock(lk);
  if (!rdonly) {
    store_clear_stale_readers(s);
    reclaim_beyond_end(s);
  }
  *out = s;
  return 0;
fail:
  store_create_unlock(lk);
  fc_store_close(s);
  return rc;
}

void fc_store_close(fc_store *s) {
  if (!s) return;
  store_env_close(s->env);
  if (s->lock_probe >= 0) close(s->lock_probe); /* after: it would drop the env's lock.mdb lock */
  if (s->swap_lock >= 0) close(s->swap_lock); /* the writer lock on a compact copy swapped in */
  /* after both: others of the process may open it now; not an environment a fault left open
   * holding a mutex of lock.mdb (store_txn_begin): one opened anew would wait for it forever */
  if (!s->env || !store_env_faulted(s->env) || !store_env_fault_held(s->env)) store_unclaim(s);
  free(s->idx);
  pthread_mutex_destroy(&s->dbi_mu);
  pthread_mutex_destroy(&s->idx_mu);
  pthread_rwlock_destroy(&s->map_lock);
  pthread_mutex_destroy(&s->write_mu);
  free(s->path);
  free(s);
}

const char *fc_store_path(const fc_store *s) {
  FC_ARGS_OR(NULL, s);
  return s->path;
}

unsigned fc_store_open_flags(const fc_store *s) {
  FC_ARGS_OR(0, s);
  return s->flags;
}

static int read_begin(fc_store *s, fc_rtxn **out, int adopt) {
  *out = NULL;
  fc_rtxn *t = fc_malloc(sizeof *t);
  if (!t) return ENOMEM;
  t->s = s;
  for (;;) {
    pthread_rwlock_rdlock(&s->map_lock);
    int rc = store_txn_begin_read(s->env, &t->txn);
    if (!rc) break;
    pthread_rwlock_unlock(&s->map_lock);
    if (adopt && rc == MDB_MAP_RESIZED && !(rc = store_adopt_map(s)))
      continue; /* another process grew the map: adopt its size and retry */
    free(t);
    return rc;
  }
  store_held_add(s, 1);
  *out = t;
  return 0;
}

int fc_store_read_begin(fc_store *s, fc_rtxn **out) {
  FC_ARGS(s, out);
  return read_begin(s, out, 1);
}

int store_read_begin_held(fc_store *s, fc_rtxn **out) { return read_begin(s, out, 0); }

void fc_rtxn_end(fc_rtxn *t) {
  if (!t) return;
  store_txn_abort(t->txn);
  pthread_rwlock_unlock(&t->s->map_lock);
  store_held_add(t->s, -1);
  free(t);
}

int fc_rtxn_renew(fc_rtxn *t) {
  FC_ARGS(t);
  return store_txn_renew(t->txn);
}

int fc_rtxn_get(fc_rtxn *t, int db, const void *key, size_t key_len, const void **val,
                size_t *val_len) {
  FC_ARGS(t, key || !key_len);
  if (db < 0 || db >= FC_DB_ALL) return EINVAL;
  if (!t->s->dbi[db]) return FC_ENOTFOUND; /* an optional db the store lacks */
  MDB_val k = {key_len, (void *)key}, v;
  int rc = mdb_get(t->txn, t->s->dbi[db], &k, &v);
  if (rc == MDB_NOTFOUND) return FC_ENOTFOUND;
  if (rc) return rc;
  if (val) *val = v.mv_data;
  if (val_len) *val_len = v.mv_size;
  return 0;
}

int fc_rtxn_count(fc_rtxn *t, int db, uint64_t *count) {
  FC_ARGS(t, count);
  if (db < 0 || db >= FC_DB_ALL) return EINVAL;
  if (!t->s->dbi[db]) return *count = 0, 0;
  MDB_stat st;
  int rc = mdb_stat(t->txn, t->s->dbi[db], &st);
  if (!rc) *count = st.ms_entries;
  return rc;
}

struct fc_cursor {
  MDB_cursor *c;
  MDB_cursor_op next_op; /* MDB_FIRST, then MDB_NEXT; MDB_GET_CURRENT right after a seek */
  int at_end;
};

int fc_cursor_open(fc_rtxn *t, int db, fc_cursor **out) {
  FC_ARGS(t, out);
  *out = NULL;
  if (db < 0 || db >= FC_DB_ALL) return EINVAL;
  fc_cursor *c = fc_calloc(1, sizeof *c);
  if (!c) return ENOMEM;
  if (!t->s->dbi[db]) { /* an optional db the store lacks: a cursor over nothing */
    c->at_end = 1;
    *out = c;
    return 0;
  }
  int rc = mdb_cursor_open(t->txn, t->s->dbi[db], &c->c);
  if (rc) {
    free(c);
    return rc;
  }
  c->next_op = MDB_FIRST;
  *out = c;
  return 0;
}

int fc_cursor_next(fc_cursor *c, const void **key, size_t *key_len, const void **val,
                   size_t *val_len) {
  FC_ARGS(c);
  if (c->at_end) return FC_ENOTFOUND;
  MDB_val k, v;
  int rc = mdb_cursor_get(c->c, &k, &v, c->next_op);
  c->next_op = MDB_NEXT;
  if (rc == MDB_NOTFOUND) {
    c->at_end = 1;
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  if (key) *key = k.mv_data;
  if (key_len) *key_len = k.mv_size;
  if (val) *val = v.mv_data;
  if (val_len) *val_len = v.mv_size;
  return 0;
}

int fc_cursor_seek(fc_cursor *c, const void *key, size_t key_len) {
  FC_ARGS(c, key || !key_len);
  if (!c->c) return 0; /* over an absent optional db: stays at the end */
  MDB_val k = {key_len, (void *)key}, v;
  int rc = mdb_cursor_get(c->c, &k, &v, MDB_SET_RANGE);
  c->at_end = (rc == MDB_NOTFOUND);
  c->next_op = MDB_GET_CURRENT;
  return (rc == MDB_NOTFOUND) ? 0 : rc;
}

void fc_cursor_close(fc_cursor *c) {
  if (!c) return;
  if (c->c) mdb_cursor_close(c->c);
  free(c);
}

int fc_store_put_config(fc_store *s, const fc_digest *digest, const char *json, size_t len) {
  FC_ARGS(s, digest, json || !len);
  char key[37], ckey[41], when[21];
  config_key(digest, key);
  config_stamp(digest, ckey, when);
  fc_put p[2] = {{FC_DB_META, key, 36, json, len, FC_PUT_NOOVERWRITE},
                 {FC_DB_META, ckey, 40, when, 20, FC_PUT_NOOVERWRITE}};
  return fc_store_write(s, p, 2);
}

int fc_rtxn_get_config(fc_rtxn *t, const fc_digest *digest, const char **json, size_t *len) {
  FC_ARGS(t, digest, json);
  char key[37];
  config_key(digest, key);
  const void *v;
  int rc = fc_rtxn_get(t, FC_DB_META, key, 36, &v, len);
  if (!rc) *json = v;
  return rc;
}

int fc_store_info_get(fc_store *s, fc_store_info *info) {
  FC_ARGS(s, info);
  MDB_envinfo ei;
  MDB_stat st;
  memset(info, 0, sizeof *info);
  int rc = mdb_env_info(s->env, &ei);
  if (!rc) rc = mdb_env_stat(s->env, &st);
  if (rc) return rc;
  info->map_size = ei.me_mapsize;
  info->page_size = st.ms_psize;
  info->map_used = (uint64_t)(ei.me_last_pgno + 1) * st.ms_psize;
  info->max_readers = ei.me_maxreaders;
  info->num_readers = ei.me_numreaders;
  fc_rtxn *t;
  rc = fc_store_read_begin(s, &t);
  if (rc) return rc;
  for (int i = 0; i < FC_DB_COUNT && !rc; i++) rc = fc_rtxn_count(t, i, &info->entries[i]);
  fc_rtxn_end(t);
  return rc;
}

/* LMDB reports the map address only for MDB_FIXEDMAP, so find the mapping of data.mdb in
 * /proc/self/maps: the one that holds a value read through this environment (the same file may be
 * mapped more than once in a process, e.g. by Python's lmdb beside us), with data.mdb's inode at
 * offset 0. Not matched by device: on btrfs a file's st_dev is its subvolume's anonymous device,
 * while the maps name the superblock's, and an address lies in one mapping only. */
int fc_store_map_region(fc_store *s, const void **base, size_t *len) {
  FC_ARGS(s, base, len);
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/data.mdb", s->path) >= (int)sizeof p) return ENAMETOOLONG;
  if (stat(p, &st) != 0) return errno;
  fc_rtxn *t;
  const void *probe;
  int rc = fc_store_read_begin(s, &t);
  if (rc) return rc;
  rc = fc_rtxn_get(t, FC_DB_META, "format", 6, &probe, NULL);
  fc_rtxn_end(t); /* the address stays meaningful: only the pointer value is compared below */
  if (rc) return rc;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return errno;
  char line[4608];
  rc = FC_ENOTFOUND;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off, ino;
    if (sscanf(line, "%lx-%lx %*s %lx %*x:%*x %lu", &lo, &hi, &off, &ino) != 4) continue;
    if (ino == st.st_ino && off == 0 && (uintptr_t)probe >= lo && (uintptr_t)probe < hi) {
      *base = (const void *)lo;
      *len = hi - lo;
      rc = 0;
      break;
    }
  }
  fclose(f);
  return rc;
}

int store_wants_nolock(const char *dir, int setting) {
  if (setting) return setting > 0;
  char p[4096];
  struct statvfs vfs;
  if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) return 1;
  if (access(dir, W_OK) != 0) return 1;
  if (snprintf(p, sizeof p, "%s/lock.mdb", dir) >= (int)sizeof p || access(p, W_OK) != 0) return 1;
  return store_lock_faults(dir) !=
         0; /* a full copy-on-write disk: LMDB's lock writes would fault */
}
