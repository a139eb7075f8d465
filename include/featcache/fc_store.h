/* featcache — the store: an LMDB environment with the named dbs meta, audio, text, feat, tok.
 *
 * Threads: one fc_store may be shared by threads. Writes (fc_store_write) are serialized
 * internally; read transactions are per thread (MDB_NOTLS: a thread may hold several). A store
 * opened before fork() must not be used in the child: open it again there.
 *
 * Once per process: a store (its data.mdb, whatever path names it) is open at most once in a
 * process, LMDB's locks being the process's: while one handle (or a loader, or a run of this
 * library that opened it) holds it, fc_store_open of it is FC_EOPENED. (A second open used to succeed, and
 * reset or drop the locks that keep other processes' writers off the pages the first handle's
 * readers read.) Share the open handle between threads instead; loaders of one process share
 * theirs. FC_STORE_NOLOCK opens are not counted.
 *
 * lock.mdb removed: an open is refused, FC_ELOCKGONE, while another process holds the store open
 * through a lock.mdb that is not the one in its directory now (removed, or replaced, since that
 * process opened it): the new lock file's reader table does not hold that process's readers, whose
 * pages a writer would reuse. Seen of processes that open with this library (docs/FORMAT.md). */
#ifndef FC_STORE_H
#define FC_STORE_H

#include "fc_base.h"

#include <errno.h>
#include <signal.h> /* sig_atomic_t */
#include <stdio.h> /* snprintf: fc_store_part_path */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fc_store fc_store;
typedef struct fc_rtxn fc_rtxn;
typedef struct fc_cursor fc_cursor;

enum fc_store_flags {
  FC_STORE_RDONLY = 1u << 0, /* MDB_RDONLY; never writes, not even lock.mdb with NOLOCK */
  FC_STORE_CREATE = 1u << 1, /* create the directory and the dbs if missing */
  FC_STORE_NOSYNC = 1u << 2, /* MDB_NOSYNC: commits do not fsync; call fc_store_sync */
  FC_STORE_NOLOCK = 1u << 3, /* MDB_NOLOCK: for read-only media (no lock.mdb written) */
  FC_STORE_NORDAHEAD = 1u << 4, /* MDB_NORDAHEAD: for random reads of stores larger than RAM */
  FC_STORE_NOMETASYNC = 1u << 5, /* MDB_NOMETASYNC: each commit fdatasyncs its pages, not its
                                    meta page (the next commit's sync or fc_store_sync does): a
                                    power cut may undo the last commit, never break the store,
                                    on any disk that honours fdatasync (docs/FORMAT.md) */
  FC_STORE_EXCLUSIVE = 1u << 6 /* the store's writer lock taken exclusively (cache-prune): the
                                  open fails with EBUSY while another process has the store open
                                  for writing, and writers that open it meanwhile wait until this
                                  handle is closed. Without it, an open for writing takes the lock
                                  shared (and waits while an exclusive holder has it: a signal
                                  whose handler was installed without SA_RESTART ends the wait,
                                  the open returning FC_EINTR, as read(2) returns EINTR, so that
                                  Ctrl-C stops a tool; retry the open to wait on). The lock
                                  belongs to the open data.mdb, which a fork shares: a child
                                  forked while a handle is open holds it too, until it exits */
};

typedef enum fc_db {
  FC_DB_META = 0,
  FC_DB_AUDIO,
  FC_DB_TEXT,
  FC_DB_FEAT,
  FC_DB_TOK,
  FC_DB_COUNT, /* the five dbs of every store (fc_store_info.entries is indexed by them) */
  /* featurize's failure records: key the utterance id, value an fc_failure (fc_format.h,
   * docs/FORMAT.md "Failure records"). Optional: stores written before it have none, and a store
   * opened read-only without it reads it as empty; a store opened for writing gets it. */
  FC_DB_FAILED = FC_DB_COUNT
} fc_db;

/* Name of a db ("meta", "audio", "text", "feat", "tok", "failed"); "?" for another value. A
 * static string. Inline: no symbol. */
static inline const char *fc_db_name(int db) {
  static const char *const names[] = {"meta", "audio", "text", "feat", "tok", "failed"};
  return (db >= 0 && db < (int)(sizeof names / sizeof names[0])) ? names[db] : "?";
}

/* Open the store in directory dir. With FC_STORE_CREATE the directory, the dbs and meta/format
 * are created when missing. Errors: FC_EOPENED (open in this process already, above),
 * FC_ELOCKGONE (lock.mdb removed under another process's open, above), ENOENT (no
 * such directory), FC_ENOSTORE (a directory with
 * no store in it), FC_EFORMAT (an LMDB env that is not
 * a featcache store, or one with nothing committed: an empty data.mdb too), FC_EVERSION (a featcache store of a format this build does not know),
 * FC_ESPLIT (dir is a split store: see fc_store_open_split, fc_store_expand), FC_EINTR (an
 * open for writing that waited for cache-prune was interrupted by a signal: FC_STORE_EXCLUSIVE),
 * errno and LMDB codes. *out is owned by the caller: fc_store_close it. */
FC_API int fc_store_open(const char *dir, unsigned flags, fc_store **out);
/* Close; all read transactions of this store must have ended. NULL is ignored. */
FC_API void fc_store_close(fc_store *s);
/* The directory given to fc_store_open; valid until close. */
FC_API const char *fc_store_path(const fc_store *s);
/* The fc_store_flags it was opened with (FC_STORE_RDONLY, FC_STORE_NOSYNC, ...). */
FC_API unsigned fc_store_open_flags(const fc_store *s);

/* ---- writing --------------------------------------------------------------------------------- */
enum {
  FC_PUT_NOOVERWRITE = 1u << 0, /* keep an existing value (content-addressed dbs) */
  FC_PUT_FILL = 1u << 1, /* val is an fc_put_fill: the value is written into the store by it */
  FC_PUT_DELETE = 1u << 2, /* delete the key (val is ignored); a key not there is no error */
  /* the key sorts after every key of its db (a bulk load in key order): added at the end of the
   * table without a search, its pages filled whole (LMDB's MDB_APPEND); a key that does not is
   * put as any other, so the flag is a hint, never wrong */
  FC_PUT_APPEND = 1u << 3,
  /* nothing written (val is ignored): the key must be there already — a writer's config, which
   * its earlier batches were stored under. When it is not (dropped meanwhile), nothing of the
   * batch is written and fc_store_write returns FC_EDROPPED: the writer's records never outlive
   * the drop under no config, nor bring the config back with only its later records */
  FC_PUT_REQUIRE = 1u << 4,
  /* a plain put whose key holds these very bytes already is not written, and is reported kept
   * (fc_store_write_kept): an entry another writer wrote first, as this one would have */
  FC_PUT_SAME_KEPT = 1u << 5,
  /* val is an fc_put_seen (below): the value's bytes, and a call shown what the key held before */
  FC_PUT_SEEN = 1u << 6
};

/* A value written straight into the store (FC_PUT_FILL): with this flag, an fc_put's val points at
 * an fc_put_fill instead of the value's bytes, and val_len is the value's length. fc_store_write
 * reserves val_len bytes for the value in its write transaction (LMDB's MDB_RESERVE) and calls
 * fill(dst, val_len, arg), which must write all of them: one copy, from wherever the value is
 * into the page that will hold it. dst is valid only during the call. fill runs on the caller's
 * thread inside fc_store_write, possibly more than once for one put (the batch is replayed after
 * the map grows), never after the put's done (below) or after fc_store_write returned: what it
 * reads must stay valid until then, and it must write the same bytes each time. With
 * FC_PUT_NOOVERWRITE and the key already there, fill is not called. A nonzero return aborts the
 * batch (nothing of it committed, the store stays usable) and fc_store_write returns that code.
 * done, when not NULL, is called once for the put in each fc_store_write, on the caller's
 * thread, as soon as fill will not be called again: just before the commit when the map has room
 * for it (then the commit's write of the pages, most of its time, no longer holds what fill
 * reads), else just before fc_store_write returns, whatever it returns. The fc_put_fill is the
 * caller's, read during the call only. */
typedef struct fc_put_fill {
  int (*fill)(void *dst, size_t len, void *arg);
  void *arg;
  void (*done)(void *arg);
} fc_put_fill;

/* A put that is shown what it overwrites (FC_PUT_SEEN): with this flag, an fc_put's val points at
 * an fc_put_seen, whose val holds the value's val_len bytes. fc_store_write calls
 * seen(old, old_len, arg) for the put inside its write transaction, before the put is written,
 * with the value the key holds then (old NULL and old_len 0: none): what another writer committed
 * after the caller looked the key up is there, since LMDB's writer lock orders the transactions.
 * old is valid during the call only. It is called once in each try of the batch (again when the
 * batch is replayed after the map grew, possibly with another value: the last call is what the
 * committed put replaced), on the caller's thread, also when the put then writes nothing
 * (FC_PUT_SAME_KEPT, FC_PUT_NOOVERWRITE) or a later put of the try fails; never when the try
 * fails before the put (nor on a store that refuses writes: FC_EBADSTATE). Not with FC_PUT_FILL
 * (EINVAL). */
typedef struct fc_put_seen {
  const void *val;
  void (*seen)(const void *old, size_t old_len, void *arg);
  void *arg;
} fc_put_seen;

typedef struct fc_put {
  int db; /* fc_db */
  const void *key;
  size_t key_len;
  const void *val;
  size_t val_len;
  unsigned flags; /* FC_PUT_* */
} fc_put;

/* Write n puts in one write transaction and commit it. On MDB_MAP_FULL the transaction is
 * aborted, the map doubled and the batch replayed, so the caller never sees MAP_FULL. Either all
 * puts are committed or none. Errors are sticky: after a failed commit the store returns
 * FC_EBADSTATE for every later write (reopen it). The caller keeps ownership of all buffers.
 * A put with FC_PUT_FILL has its value written by its fc_put_fill (above). */
FC_API int fc_store_write(fc_store *s, const fc_put *puts, size_t n);
/* fc_store_write, saying which puts with FC_PUT_NOOVERWRITE met their key already there (another
 * writer's, committed first) and kept its value, and which with FC_PUT_SAME_KEPT met the same
 * bytes there: kept[i] = 1 for those, 0 for every other put
 * (kept: n bytes, the caller's; NULL: fc_store_write). Meaningful when it returns 0: what a
 * writer that looked its keys up before this transaction counts as new is what kept says was. */
FC_API int fc_store_write_kept(fc_store *s, const fc_put *puts, size_t n, unsigned char *kept);

/* Flush to disk (mdb_env_sync force). Needed after writes with FC_STORE_NOSYNC. */
FC_API int fc_store_sync(fc_store *s);

/* ---- reading --------------------------------------------------------------------------------- */
/* Begin a read transaction (a snapshot). *out is owned by the caller: fc_rtxn_end it. When
 * another process has grown the map, the new size is adopted first; a thread that holds another
 * read transaction of s then gets MDB_MAP_RESIZED instead (no resize is possible under it, and
 * waiting would be on itself): end them all and begin again. The same holds for fc_store_write
 * by a thread holding a read transaction of s. */
FC_API int fc_store_read_begin(fc_store *s, fc_rtxn **out);
FC_API void fc_rtxn_end(fc_rtxn *t);
/* Refresh the snapshot of a long-lived read transaction (mdb_txn_reset + renew). */
FC_API int fc_rtxn_renew(fc_rtxn *t);

/* Look up key in db. *val points into the map: valid until the transaction ends, read-only.
 * Returns 0, FC_ENOTFOUND or an LMDB code. */
FC_API int fc_rtxn_get(fc_rtxn *t, int db, const void *key, size_t key_len, const void **val,
                       size_t *val_len);

/* Number of entries in db. */
FC_API int fc_rtxn_count(fc_rtxn *t, int db, uint64_t *count);

/* Cursor over db in key order; pointers valid until the transaction ends. fc_cursor_next returns
 * 0 for each entry, then FC_ENOTFOUND. fc_cursor_seek positions at the first key >= key, so the
 * following fc_cursor_next returns that entry. */
FC_API int fc_cursor_open(fc_rtxn *t, int db, fc_cursor **out);
FC_API int fc_cursor_next(fc_cursor *c, const void **key, size_t *key_len, const void **val,
                          size_t *val_len);
FC_API int fc_cursor_seek(fc_cursor *c, const void *key, size_t key_len);
FC_API void fc_cursor_close(fc_cursor *c);

/* ---- configs in meta ------------------------------------------------------------------------- */
/* Store the canonical JSON of a config under meta cfg/<hex of digest>, and the time now under
 * meta created/<hex> (RFC 3339 UTC, docs/FORMAT.md "Configs"), in one transaction; a no-op for
 * what is present. */
FC_API int fc_store_put_config(fc_store *s, const fc_digest *digest, const char *json, size_t len);
/* Fetch the JSON of a config: *json points into the map, valid until t ends (not NUL-terminated).
 * FC_ENOTFOUND when the store does not know the digest. */
FC_API int fc_rtxn_get_config(fc_rtxn *t, const fc_digest *digest, const char **json, size_t *len);

/* ---- a store's configs: listed, dropped ------------------------------------------------------- */
typedef enum fc_config_kind { FC_CONFIG_OTHER = 0, FC_CONFIG_MEL, FC_CONFIG_TOKENS } fc_config_kind;

typedef struct fc_config_info {
  fc_digest digest;
  int kind; /* fc_config_kind, from the JSON's "kind" */
  char name[64]; /* what the loader's selectors answer to: a mel config's preset ("kaldi (mq)" for
                  * a preset stored in another dtype: fc_mel_config_preset_of), a token config's
                  * "tokenizer", "name" or "preset"; "" when it has none */
  uint64_t records; /* records stored under it: feat for mel, tok for tokens (with count_records) */
  uint64_t record_bytes; /* the bytes of their values */
  char created[32]; /* meta created/<hex>: RFC 3339 UTC; "" in a store written before it was kept */
  char *json; /* the canonical JSON, NUL-terminated */
} fc_config_info;

/* The configs of store s, in digest order. count_records: also count each config's records
 * (reads every record's 64-byte header: the records of a cold store are read a page each).
 * *out (*n_out entries) is owned by the caller: fc_configs_free. Returns 0, ENOMEM or an LMDB code
 * (MDB_CORRUPTED for a damaged page LMDB asserts on, which would abort the process); a config
 * whose JSON does not parse is listed with kind FC_CONFIG_OTHER. */
FC_API int fc_store_configs(fc_store *s, int count_records, fc_config_info **out, size_t *n_out);
FC_API void fc_configs_free(fc_config_info *c, size_t n);

/* Remove config d from store s: every record under it (feat or tok, found by the config digest
 * in each record's header), then its meta keys (cfg/, created/, and a token config's vocab/ or
 * tokenizer/ <hex>). Entries (audio, text) stay:
 * other configs' records use them. Records go in transactions of up to 4096, the meta keys in
 * the last one, together with any record written under d meanwhile, so a writer running at the
 * same time cannot leave a record without its config; an interrupted drop (stop set, or killed)
 * leaves the config listed with fewer records: running it again finishes. The pages freed stay
 * in data.mdb and are reused by later writes (a compact copy: cache-merge -o NEW s). *records,
 * *bytes (may be NULL): what was removed. The B-trees it changes (feat, tok, d's index) are
 * walked read-only first: a damaged page there (one LMDB's delete could fault on) is
 * MDB_CORRUPTED or MDB_PAGE_NOTFOUND, with nothing removed. Returns 0, FC_ENOTFOUND (no such
 * config), FC_EINTR (stopped: the records removed so far stay removed), EACCES (read-only), LMDB
 * codes. */
FC_API int fc_store_drop_config(fc_store *s, const fc_digest *d, const volatile sig_atomic_t *stop,
                                uint64_t *records, uint64_t *bytes);

/* ---- facts ----------------------------------------------------------------------------------- */
typedef struct fc_store_info {
  uint64_t map_size; /* bytes */
  uint64_t map_used; /* bytes: (last page + 1) * page size */
  uint32_t page_size;
  uint32_t max_readers;
  uint32_t num_readers; /* reader slots in use, stale ones included */
  uint64_t entries[FC_DB_COUNT];
} fc_store_info;
FC_API int fc_store_info_get(fc_store *s, fc_store_info *info);

/* Base address and length of the memory map, for callers that check that a pointer lies in it. */
FC_API int fc_store_map_region(fc_store *s, const void **base, size_t *len);

/* ---- split stores (docs/FORMAT.md "Split stores") -------------------------------------------- */
/* A split store is a directory DIR holding N >= 2 stores, its parts, at DIR/part-0 .. part-<N-1>,
 * and the marker file DIR/featcache-split ("featcache-split/1 N\n"). Utterance id lives in part
 * fc_store_part_of_id(id, len, N): its entries and records are all in that part, so each part is
 * a valid store by itself (meta part = "K/N"), and readers take the parts as several stores read
 * as one dataset. A plain store is the same thing with one part. */
#define FC_SPLIT_MAX_PARTS 64u

/* The part (0..n-1) of utterance id (len bytes) in a split store of n parts: the low 32 bits of
 * XXH3-64(id) (seed 0) times n, shifted right 32. Unrelated to fc_shard_of (which ranges over the
 * high bits), so the ids of one --shard spread over all parts. n <= 1: 0. */
FC_API uint32_t fc_store_part_of_id(const char *id, size_t len, uint32_t n);

/* N of the split store at dir: *n = 0 when dir has no marker (a plain store, or no store), else
 * 2..FC_SPLIT_MAX_PARTS. Returns 0, FC_EFORMAT (a marker that does not parse), FC_EVERSION (a
 * marker of a later version), or the errno of reading it. */
FC_API int fc_store_split_count(const char *dir, unsigned *n);

/* The path of part k of the split store dir into buf: "<dir>/part-<k>". 0 or ENAMETOOLONG.
 * Inline: no symbol. */
static inline int fc_store_part_path(const char *dir, unsigned k, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s/part-%u", dir, k);
  return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

/* Each store directory of dirs as the stores to open: a split store becomes its parts in order,
 * any other path stays itself. *out (n_out strings) is owned by the caller: fc_store_paths_free.
 * Errors: those of fc_store_split_count (why names the marker), ENOMEM. */
FC_API int fc_store_expand(const char *const *dirs, size_t n, char ***out, size_t *n_out, char *why,
                           size_t why_len);
FC_API void fc_store_paths_free(char **paths, size_t n);

/* Open the store at dir for writing as its parts: a split store gives its N parts, a plain store
 * (or a new one when want <= 1) gives one. want >= 2 on a directory with no store creates a split
 * store of want parts (with FC_STORE_CREATE). Refused with FC_ECONFIG (reason in why): want >= 2
 * on a plain store, a want that differs from the split store's N, a dir that is itself a part
 * of a split store. A part missing under the marker is created with FC_STORE_CREATE (a job killed
 * while creating it); a part whose meta part is not "K/N" is FC_EFORMAT. *parts (an array of
 * *n_out stores) is owned by the caller: fc_store_close_split. */
FC_API int fc_store_open_split(const char *dir, unsigned flags, unsigned want, fc_store ***parts,
                               unsigned *n_out, char *why, size_t why_len);
FC_API void fc_store_close_split(fc_store **parts, unsigned n);

/* The part a store says it is (meta part = "K/N"): *k = 0, *n = 1 for a plain store. Returns 0,
 * FC_EFORMAT (a meta part that is not "K/N" with K < N), or a read error. */
FC_API int fc_store_part_of_store(fc_store *s, unsigned *k, unsigned *n);

#ifdef __cplusplus
}
#endif
#endif
