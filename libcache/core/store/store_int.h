/* Internal view of a store, for core-component code that reads LMDB directly (loader/, verify/).
 * The mel and text components use only the public fc_store.h: this layout is not their ABI. */
#ifndef FC_STORE_INT_H
#define FC_STORE_INT_H

#include "featcache/fc_format.h"
#include "featcache/fc_store.h"

#include <lmdb.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>

/* Every db of a store, the optional ones included (fc_db). */
#define FC_DB_ALL (FC_DB_FAILED + 1)

/* One config's index (docs/FORMAT.md "Index"): the db index/<32 hex of cfg>. */
typedef struct store_index {
  fc_digest cfg;
  MDB_dbi dbi;
  uint8_t record_db; /* FC_DB_FEAT (a mel config) or FC_DB_TOK (a token config) */
  uint8_t entry_db; /* FC_DB_AUDIO or FC_DB_TEXT: the entries whose digests key its records */
  uint8_t pending; /* opened by the write transaction in flight: forgotten if it aborts */
  uint8_t dtype; /* a mel config's dtype; 0 for tokens */
  uint32_t n_mels; /* a mel config's bins */
} store_index;

struct fc_store {
  MDB_env *env;
  MDB_dbi dbi[FC_DB_ALL]; /* 0 for an optional db the store lacks (LMDB's named dbs are >= 2) */
  unsigned flags;
  char *path;
  pthread_mutex_t write_mu; /* one writer at a time */
  pthread_rwlock_t map_lock; /* read txns hold it shared; map resizes take it exclusive */
  atomic_uint pinned; /* read transactions kept open past map_lock (the loaders' snapshots),
                         whose pointers into the map a resize would leave dangling: while one
                         is open, store_adopt_map refuses (MDB_MAP_RESIZED) */
  int broken; /* sticky: a commit failed, writes refused */
  /* The indexes this process knows (index.c). idx_mu guards the table; dbi_mu is held by a
   * transaction that opens db handles until it ends (LMDB allows one such at a time). */
  store_index *idx;
  size_t n_idx, cap_idx;
  pthread_mutex_t idx_mu;
  pthread_mutex_t dbi_mu;
  int dbi_held; /* the write transaction in flight holds dbi_mu */
  int lock_probe; /* -1, or a descriptor of lock.mdb compaction asks (compact.c); closed after
                   * the environment, since closing it drops this process's lock on lock.mdb */
  struct store_once *once; /* this process's claim on the store (store_once.c); NULL: NOLOCK */
  int swap_lock; /* -1, or the compact copy swapped in (compact.c), flocked exclusive before its
                  * rename and held to the close: the writer lock on the file data.mdb names now */
};

/* One open of a store per process (store_once.c): store_claim claims dir's data.mdb for s,
 * FC_EOPENED when another handle of this process holds it (nothing claimed while there is no
 * data.mdb yet: call it again once LMDB made one), then with reserve allocates lock.mdb's blocks
 * ahead (0 or ENOSPC/EDQUOT); store_unclaim gives the claim back, after the environment is
 * closed. */
int store_claim(fc_store *s, const char *dir, int reserve);
void store_unclaim(fc_store *s);
/* Mark data.mdb with the lock.mdb this open uses (its inode, lock_ino), and refuse the open,
 * FC_ELOCKGONE, when another process's open marked another: its lock.mdb was removed (store_once.c).
 * After mdb_env_open; the mark goes with the environment's descriptor of data.mdb. */
int store_lock_mark(fc_store *s, ino_t lock_ino);
/* 0, or ENOSPC/EDQUOT when lock.mdb's header page cannot be written through a map (SIGBUS: a full
 * copy-on-write file system, or one over its quota), which LMDB's open would die of; with reserve,
 * store_claim refuses such a store so. Not asked of a store this process holds (store_once.c). */
int store_lock_faults(const char *dir);
/* Whether `need` bytes can be written into dir now: 0, or how the file system refuses them
 * (ENOSPC, EDQUOT, EFBIG), asked with fallocate of a file with no name (errors.c). */
int store_room_probe(const char *dir, uint64_t need);

/* Open dir without a lock? setting > 0 always, < 0 never, 0 auto: read-only media, a directory or
 * lock.mdb we cannot write, or no lock.mdb at all (no process has the environment open, and
 * creating one would be a write). Readers that must never write use it: cache-verify, cache-merge's
 * inputs. */
int store_wants_nolock(const char *dir, int setting);

/* Refuse a data.mdb cut short (extent.c): 0 when the file holds every page its last committed
 * meta names that is not on that meta's free list, else FC_ETRUNCATED; and one whose main db's or
 * meta db's pages (those the open reads through LMDB) are malformed: MDB_CORRUPTED (or an
 * LMDB/errno code). Reads with pread, never through the map. At open, before any other page is
 * read. */
int store_check_extent(fc_store *s);

/* Map growth for writers that drive LMDB themselves (merge/): every resize of an fc_store's map
 * takes map_lock exclusive, as LMDB allows a resize only while the process has no transaction
 * open on the environment (fc_store_read_begin's read transactions hold map_lock shared).
 * store_grow_map: twice the map, or at_least bytes if that is more; the `grow` fault site.
 * store_adopt_map: take the size another process grew the map to (after MDB_MAP_RESIZED).
 * Both return 0 or an LMDB/errno code. The caller must hold no transaction on s itself; while a
 * loader's snapshot of the process is open (pinned), store_adopt_map returns MDB_MAP_RESIZED. */
int store_grow_map(fc_store *s, uint64_t at_least);
int store_adopt_map(fc_store *s);
/* The read transactions of s this thread holds: d = 1 when one begins, -1 when it ends
 * (store_map.c: while the thread holds one, it may not grow or adopt the map). */
void store_held_add(const fc_store *s, int d);
/* fc_store_open flag (internal, beside fc_store_flags), read-only opens: map STORE_MAP_HEADROOM
 * bytes past data.mdb's size, so that what writers add in the meantime is read without resizing
 * the map, which a loader's open snapshot forbids (address space only: where a limit on it
 * refuses the map, ENOMEM, the store is opened without; none in a test build run with
 * FC_FAULT_MAPSIZE, so that its small jobs reach the resize). */
enum { STORE_OPEN_HEADROOM = 1u << 30 };
#define STORE_MAP_HEADROOM (16ull << 30)
/* fc_store_read_begin for a thread that may hold other read transactions of s already: when
 * another process grew the map it returns MDB_MAP_RESIZED instead of adopting the new size (that
 * takes the map lock for writing, which the transactions held would deadlock); the caller ends
 * them, calls store_adopt_map and begins again. */
int store_read_begin_held(fc_store *s, fc_rtxn **out);
/* store_txn_begin of a read-only transaction; when every slot of the reader table is taken, the
 * slots of dead processes (a loader killed with SIGKILL) are cleared and the begin tried once
 * more (readers.c). MDB_READERS_FULL then means live processes hold every slot. */
int store_txn_begin_read(MDB_env *env, MDB_txn **txn);
/* A writer's open and each of its writes (store.c, store_write.c): the reader slots of dead
 * processes cleared (mdb_reader_check, a write to lock.mdb only; the live keep theirs). Such a
 * slot pins the snapshot it read, and LMDB resets the table only when the first process opens
 * the store: while another keeps it open, no page freed since could be reused, and every rewrite
 * grew data.mdb. Nothing for a read-only or lock-free handle. */
void store_clear_stale_readers(fc_store *s);
/* FC_FAULT_MAPSIZE in a test build (the first map of a new store, at least 16 KiB), else 0. A
 * writer that sizes its map up front (cache-merge) does not when it is set, so that a small test
 * job grows its map mid-run (tests/cli/fault_sites.sh). */
size_t store_fault_mapsize(void);

/* LMDB asserts, then aborts, on some damaged pages (a page of the wrong type where its B-tree
 * leads: a copy with a hole of zeros). store_lmdb_assert is every store's assert function (set at
 * open): when the calling thread has set store_lmdb_jump, it jumps there with LMDB's message in
 * store_lmdb_why, so that the damage is an error its caller reports; else it says the store
 * damaged on stderr (the program and the store named, as the tools say it) and returns, and LMDB
 * aborts as it would. After a jump, the transaction that met the page must be ended: a read
 * transaction (fc_rtxn_end, its cursors closed), or a write transaction aborted — mdb_txn_abort
 * frees the cursors opened in it, which must not be closed again. */
extern _Thread_local sigjmp_buf *store_lmdb_jump;
extern _Thread_local char store_lmdb_why[256];
void store_lmdb_assert(MDB_env *env, const char *msg);
/* fn(arg) with LMDB's assertion caught: MDB_CORRUPTED (as LMDB says of such a page where it does
 * not assert) when it met a damaged page, else what fn returned; and a SIGBUS met meanwhile (a
 * page of a map that cannot be had): as store_txn_begin says. Nests: an outer jump is kept. */
int store_lmdb_guarded(int (*fn)(void *arg), void *arg);

/* LMDB writes lock.mdb through a shared map: its mutexes, the last transaction's id, the reader
 * slots, at each transaction's begin and end, at a reader check and at the environment's close.
 * On a copy-on-write file system (btrfs) that filled up or passed its quota while the store is
 * open, such a write finds no block for the page: SIGBUS, which killed the process (exit 135, not
 * a word; the store at its last commit). These calls make it an error instead: a SIGBUS in the
 * calling thread during the call (a process-wide handler, installed at the first of them, jumps
 * to the thread's guard, store_lmdb_jump; a SIGBUS anywhere else goes to the handler that was
 * there before, or ends the process as it would have) returns ENOSPC, or EDQUOT when the file
 * system says so of a block asked for beside lock.mdb; FC_ETRUNCATED when data.mdb's map faulted
 * (a file cut short meanwhile); EIO otherwise; MDB_CORRUPTED for LMDB's assertion on a damaged
 * page. The environment is then unusable: every later call of these on it returns the same code
 * at once, and store_env_close leaves it open (a mutex of lock.mdb may be held; the process's exit
 * releases it; where none is, the store may be opened anew: store_env_fault_held). A commit that faulted may have reached the disk (lock.mdb is written after the
 * meta page): the store is at its last commit, this one or the one before. */
int store_txn_begin(MDB_env *env, unsigned flags, MDB_txn **txn);
/* Install the handler above unless it is the process's SIGBUS handler now (fc_store_open calls
 * it: a handler installed since, as PyTorch's DataLoader workers do, is chained to). */
void store_bus_install(void);
int store_txn_commit(MDB_txn *txn);
void store_txn_abort(MDB_txn *txn);
/* mdb_txn_reset, then mdb_txn_renew, of a read transaction. */
int store_txn_renew(MDB_txn *txn);
int store_reader_check(MDB_env *env, int *dead);
void store_env_close(MDB_env *env);
/* 0, or the code a fault left env with (above). */
int store_env_faulted(const MDB_env *env);
/* 1 when a fault of env may have left a mutex of lock.mdb held (then the store is not opened again
 * in this process: FC_EOPENED), 0 when none did or env never faulted (errors.c). */
int store_env_fault_held(const MDB_env *env);

/* LMDB reports a short write as EIO: when the file system holds less than `bytes` (plus slack)
 * or data.mdb plus them passes RLIMIT_FSIZE, the error is ENOSPC or EFBIG instead, and when the
 * file system refuses `bytes` (plus slack) beside data.mdb, its reason (EDQUOT: a quota used up;
 * store_write.c); any other rc is returned as it is. For writers that commit through LMDB
 * themselves (merge/). */
int store_explain_write_error(const fc_store *s, int rc, size_t bytes);

/* Of dir, a part of a split store (a marker in its parent): 1 missing (no directory, or no
 * data.mdb in it), 2 empty (a data.mdb of 0 bytes, or an LMDB environment whose main db holds
 * nothing: never committed to), when its writer stopped before making it or before its first
 * commit; 0 otherwise (not a part, or one that holds a store or something else). Into store, of
 * store_len bytes, the split store's directory. (libcache/core/store/split.c) */
int store_part_unwritten(const char *dir, char *store, size_t store_len);

/* 1 when dir holds a data.mdb of 0 bytes or an LMDB environment whose main db holds nothing (its
 * writer stopped before its first commit), a part of a split store or not; else 0. */
int store_env_unwritten(const char *dir);

/* Creating a store in dir (data.mdb, or a split store's marker) is decided under an exclusive
 * flock of the directory, so that two jobs never make both (libcache/store/split.c). Returns the
 * locked descriptor (>= 0) or -errno; store_create_unlock releases it. */
int store_create_lock(const char *dir);
void store_create_unlock(int fd);

/* Replace s's data.mdb by a compact copy (compact.c; docs/FORMAT.md "Compaction"): written beside
 * it, synced, renamed over it and the directory synced, under LMDB's write lock. s must be open
 * for writing with FC_STORE_EXCLUSIVE (else EINVAL). Refused (nothing done, why says so) when
 * data.mdb is a symbolic link (EINVAL) or the file system has no room for the copy (ENOSPC);
 * *stop set during the copy: FC_EINTR, the copy discarded. *before and *after: data.mdb's size
 * before and after (after is 0 when nothing was swapped). Refused (EBUSY, nothing done, why says
 * so) while another process has the store open. A data.mdb without a free page (already compact)
 * is left as it is: 0, *after = *before, nothing swapped. After a swap s maps the replaced file:
 * it refuses writes (FC_EBADSTATE), and should be closed. Returns 0 or an FC_E, LMDB or errno
 * code, with a reason in why; a kill at any point leaves the old data.mdb or the new one. */
int store_compact(fc_store *s, volatile const int *stop, uint64_t *before, uint64_t *after,
                  char *why, size_t why_len);
/* Remove the copies a compaction killed before its swap left in dir (data.mdb.compact-*). Only
 * under the writer lock held exclusive: no compaction runs then, so any there is garbage. */
void store_compact_leftovers(const char *dir);
/* The copies a killed compaction left in dir, for cache-verify to report: found(ctx, name, bytes)
 * for each data.mdb.compact-* there, and nothing while a cache-prune holds the store's writer lock
 * exclusive (its copy may be one being written; told by a shared lock tried and released at
 * once). Changes nothing. */
void store_compact_leftovers_seen(const char *dir,
                                  void (*found)(void *ctx, const char *name, uint64_t bytes),
                                  void *ctx);
/* What store_compact would make, changing nothing (any open will do): *before data.mdb's size,
 * *after the pages in use (the file's, less the free list's and its own) in bytes. */
int store_compact_size(fc_store *s, uint64_t *before, uint64_t *after);

/* ---- the index (index.c; docs/FORMAT.md "Index") ---- */
/* Every config first stored by this version has an index: the db index/<32 hex> mapping each
 * utterance id to the key and dim0 (frames, or tokens) of its record under that config. The store
 * keeps it: each write of an audio (text) entry sets or removes the id's entry in the index of
 * every mel (token) config, from the records present in the same transaction (and fitting the
 * config), so the index never names a record that is not there. A record put without its id's
 * entry indexes nothing until the entry is written again. */
typedef struct store_ix {
  fc_digest key; /* the record's key in feat (mel) or tok (tokens) */
  uint32_t dim0; /* the record's dim0: frames, or tokens */
} store_ix;

/* Open the handles of every index db in txn (store open: its transaction is committed, so the
 * handles are the environment's). Caller holds no lock. */
int store_index_load(fc_store *s, MDB_txn *txn);
/* Pick up index dbs this process does not know yet (another process made them) with a short
 * read transaction; for readers about to begin a long one. */
int store_index_refresh(fc_store *s);
/* The index of cfg: 0 and *out (a copy), or FC_ENOTFOUND (none). Entries a write transaction in
 * flight opened are not returned. */
int store_index_find(fc_store *s, const fc_digest *cfg, store_index *out);
/* The name of db (FC_DB_*) in LMDB's main db ("audio", ...). */
const char *store_db_name(int db);
/* The name of cfg's index db in LMDB's main db, NUL-terminated: FC_INDEX_PREFIX + 32 hex. */
void store_index_name(const fc_digest *cfg, char name[sizeof FC_INDEX_PREFIX + 32]);
/* Write transactions that change entries or configs (fc_store_write, cache-merge): begin once
 * the transaction is, end after its commit or abort (committed: its commit succeeded). */
int store_index_begin(fc_store *s, MDB_txn *txn);
void store_index_end(fc_store *s, int committed);
/* Empty cfg's index in txn (its config's records are being removed); 0 when it has none. */
int store_index_clear(fc_store *s, MDB_txn *txn, const fc_digest *cfg);
/* Meta key cfg/<32 hex> was just inserted with value json: create that config's index. */
int store_index_config_added(fc_store *s, MDB_txn *txn, const void *key, size_t key_len,
                             const void *json, size_t json_len);
/* Where store_index_entry may take a record's header from instead of the record in txn: 0 and
 * *h (parsed), or FC_ENOTFOUND. cache-merge reads its inputs' copy of what it just copied, so as
 * not to read back (and so keep in the page cache) the pages its write-back drops from its
 * output. */
typedef int (*store_header_fn)(void *ud, int record_db, const fc_digest *key, fc_record_header *h);
/* Entry db (FC_DB_AUDIO or FC_DB_TEXT) now holds id's entry (or none, when entry is NULL): set
 * or remove id in the index of every config of that kind, from the records txn holds (header_of
 * may be NULL). */
int store_index_entry(fc_store *s, MDB_txn *txn, int entry_db, const void *id, size_t id_len,
                      const void *entry, size_t entry_len, store_header_fn header_of, void *ud);
/* Decode an index value: 0, or FC_EFORMAT when it is not FC_INDEX_VALUE_SIZE bytes. */
int store_index_decode(const void *val, size_t len, store_ix *out);

/* ---- shards (store_shards.c; docs/FORMAT.md "Shards") ---- */
/* Which shards of a partition (featurize/tokenize --shard K/N, fc_shard.h) runs wrote into a
 * store: one meta key per shard, shard/K/N -> the ASCII bytes "K/N" (e.g. shard/3/16 -> 3/16),
 * written by the tools as they open the store (cmd/cli_stores.h fc_cli_mark_shard, over the public
 * API). Keys, not one value, so that a store that takes several runs holds the set of them, and a
 * merge (which unions meta) holds the union of its inputs' sets. Readers that predate the keys
 * ignore them (an unknown meta key). Core-internal: cache-merge and cache-verify read them. */
typedef struct shard_mark {
  uint32_t k, n; /* shard k of n, k < n */
} shard_mark;

/* The shards the meta db of txn records: *marks (sorted by n, then k; NULL when none) of *count,
 * freed with free(). Malformed shard/ keys are skipped. Returns 0 or an LMDB/errno code. */
int store_shards_txn(MDB_txn *txn, MDB_dbi meta, shard_mark **marks, size_t *count);

/* Called for a shard k of n recorded by two of the stores checked (a and b, a < b, indexes into
 * sets), unless each of them holds a whole set of some n by itself (two merged corpora). */
typedef void (*shard_twice_fn)(uint32_t k, uint32_t n, size_t a, size_t b, void *user);

/* Do the shards recorded by stores 0..m-1 (sets[i], counts[i]; a store without any: count 0,
 * ignored) cover every id? Shard k of n holds the ids whose hash lies in [k/n, (k+1)/n), so
 * shards of several n count as their intervals cover [0, 1). Stores i with cover_only[i] set (an
 * output merged into) count only as holders, never as given twice; cover_only may be NULL.
 * *missing: the shards of the finest n met that some gap touches; why (when missing) names them,
 * e.g. "of 16 shards, 14 given: shards 3, 7 missing". twice (may be NULL) is called for each shard two
 * of the stores record. Returns 0 or ENOMEM. */
int shard_sets_check(const shard_mark *const *sets, const size_t *counts, size_t m,
                     const int *cover_only, shard_twice_fn twice, void *user, uint64_t *missing,
                     char *why, size_t why_len);

struct fc_rtxn {
  fc_store *s;
  MDB_txn *txn;
};

/* Little-endian fields of LMDB 0.9's on-disk pages (mdb.c: MDB_page, MDB_meta, MDB_db, MDB_node),
 * read where LMDB does not read them for us: extent.c, compact.c, cache-verify's page walk. */
static inline uint16_t store_get16(const void *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

static inline uint32_t store_get32(const void *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static inline uint64_t store_get64(const void *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

#endif
