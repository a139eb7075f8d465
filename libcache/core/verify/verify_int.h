/* Internals of cache-verify's engine (fc_verify.h), shared by its steps: verify.c (the run, the
 * findings, step 1: the environment), verify_meta.c (step 2), verify_entries.c (steps 3 and 5),
 * verify_scan.c (step 4). Private to libcache/core/verify/. */
#ifndef FC_VERIFY_INT_H
#define FC_VERIFY_INT_H

#include "formats/common/why.h"
#include "featcache/fc_verify.h"
#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_store.h"
#include "libcache/core/store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <omp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum { DB_ENV = FC_DB_FAILED + 1, DB_MANIFEST = FC_DB_FAILED + 2, DB_INDEX = FC_DB_FAILED + 3 };

enum { KIND_MEL = 1, KIND_TOK = 2 };

typedef struct vcfg {
  fc_digest digest;
  char hex[33];
  int kind; /* KIND_MEL / KIND_TOK, 0 when the JSON could not be read */
  int usable; /* mel: parsed and valid, so frame counts and dims can be checked */
  int expected; /* every entry of its kind must have a record */
  fc_mel_config mel;
  char label[64]; /* preset or tokenizer name for messages ("" when none) */
  int tok_dtype; /* token config's dtype when stated, else 0 */
  int tok_file_missing; /* its vocab/ or tokenizer/ key is not stored: 1 + index of the field */
  char tok_file_want[33]; /* the digest the config names for it */
  atomic_int has_records; /* the scan met a record made with it */
} vcfg;

typedef struct ventry {
  const char *id; /* into the main transaction's map: valid while it lives */
  size_t id_len;
  const void *val;
  size_t val_len;
  int ok; /* decoded */
} ventry;

typedef struct vfail { /* one failure record (docs/FORMAT.md "Failure record") */
  const char *id; /* into the main transaction's map */
  size_t id_len;
  fc_failure f; /* decoded; its strings point into the map */
  int explains; /* a gap it explains was seen (set by the entry and manifest checks) */
} vfail;

typedef struct vexp { /* one (entry, config) pair: the key its record must have */
  uint8_t key[16];
  uint32_t entry;
  uint16_t cfg;
  uint8_t db; /* FC_DB_FEAT / FC_DB_TOK */
  uint8_t pad;
} vexp;

typedef struct vctx {
  const fc_verify_opts *o;
  fc_verify_report *r;
  fc_store *s;
  fc_rtxn **pool; /* the run's read transactions, one per thread, one snapshot (verify.c) */
  fc_cursor *cur; /* the main thread's open cursor: closed at the end if a damaged page cut it */
  MDB_cursor *ix_cur; /* the index step's open cursor: the same */
  int npool;
  pthread_mutex_t mu;
  size_t cap;
  atomic_int halt; /* max_errors reached or stop seen (set and read by the scan's threads) */
  atomic_int nomem; /* a check ran out of memory: the run fails (ENOMEM), it is no finding */
  atomic_int lost; /* a thread's transaction could not be renewed on the snapshot (said once) */
  uint64_t snapshot; /* the transaction id every check reads */
  uint64_t max_warnings;
  vcfg *cfgs;
  size_t n_cfgs;
  ventry *audio, *text;
  size_t n_audio, n_text;
  vfail *fails; /* the failed db, in key order */
  size_t n_fails;
  vexp *exp;
  size_t n_exp;
  const uint8_t *map_lo, *map_hi; /* values must lie in [lo, hi): the file's bytes */
  unsigned part_k, part_n; /* meta part "K/N" of a split store's part (docs/FORMAT.md); n 0: none */
  int part_unreadable; /* meta part is there but not K/N (said already) */
  uint64_t bytes_done; /* for progress, updated atomically */
  uint64_t bytes_total;
  double t0;
} vctx;

/* ---- shared by the verify_*.c steps (hidden: not exported) -------------------------------------- */
/* verify_findings.c: the finding db names ("meta", "audio", "text", "feat", "tok",
 * "failed", "env", "manifest", "index"), indexed by the db argument of vf_add. */
#define VF_N_DBS 9
extern const char *const vf_db_names[VF_N_DBS];
double vf_now_s(void);
/* LMDB's assertions on damaged pages are caught as store_int.h says (store_lmdb_jump): the damage
 * is a finding (a read-only walk holds no lock and changes nothing LMDB shares). */
/* 1 once the run must stop: max_errors reached or the caller's stop flag set. */
int vf_stopping(vctx *c);
/* Printable copy of an id or meta key (malloc'ed): bytes outside printable ASCII/UTF-8 become \xNN. */
char *vf_printable(const char *s, size_t len);
/* A path in a problem, quoted as the tools quote names (fc_quote_name; malloc'ed, NULL without
 * memory). */
char *vf_quoted(const char *s, size_t len);
/* data.mdb of dir as LMDB's meta pages describe it, read with MDB_NOLOCK (nothing written; the
 * meta pages are read with pread, inside any file that opens). */
typedef struct vf_env {
  uint64_t file_size, map_size, used; /* used: bytes up to the end of the last committed page */
  size_t last_pgno;
  unsigned page_size, max_readers;
  int not_lmdb; /* data.mdb is there but LMDB cannot open it: its meta pages missing or damaged */
} vf_env;
/* 0 (e filled: the file is truncated when e->file_size < e->used), an LMDB error (e->not_lmdb
 * when data.mdb is no LMDB environment), or an errno (FC_ENOSTORE: no data.mdb). */
int vf_env_read(const char *dir, vf_env *e);
/* 1 when dir's data.mdb (read into e) lacks pages its meta names; a file that ends early only by
 * pages never written (allocated and freed in one transaction) is whole: 0. */
int vf_env_truncated(const char *dir, const vf_env *e);
void vf_hex16(const void *k, char out[33]);
/* A config's name for messages (its preset or tokenizer, else "(no name)"). */
const char *vf_cfg_name(const vcfg *cf);
/* LMDB's default key order: bytes compared over the shorter length, then the shorter first. */
int vf_cmp_lmdb(const char *a, size_t al, const char *b, size_t bl);
/* The entry of id in a (n entries sorted in that order), or NULL. */
const ventry *vf_find_entry(const ventry *a, size_t n, const char *id, size_t len);
/* Add a finding; key/id given as byte strings (id_len 0 with id NULL: none). Thread-safe. */
void vf_add(vctx *c, int sev, int db, const char *key, size_t key_len, const char *id,
            size_t id_len, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* verify_split.c: a part's meta part "K/N" against its directory's name and the marker beside it;
 * a split store's directory (marker of n parts) as a whole: missing parts, parts beyond n. */
void vf_check_part_place(vctx *c, const char *dir);
int vf_verify_split(vctx *c, const char *dir, unsigned n, char *why, size_t why_len);

/* verify_findings.c: LMDB fails a transaction that met a damaged page (MDB_CORRUPTED, MDB_PAGE_NOTFOUND:
 * 1 from vf_damage_code): every later read in it is MDB_BAD_TXN. A parallel step that reported
 * the damage calls vf_txn_recover on its thread's transaction, which renews it: 0 when that is
 * the run's snapshot again (no commit since; cursors opened in it need mdb_cursor_renew), and its
 * checks go on; else the run stops (an env finding says the checks after it were not made) and
 * the code is returned. */
int vf_damage_code(int rc);
int vf_txn_recover(vctx *c, fc_rtxn *t);

/* step 2, verify_meta.c: the configs in meta, and which of them every entry must have */
int vf_read_meta(vctx *c, fc_rtxn *t);
vcfg *vf_find_cfg(vctx *c, const void *digest);
/* After the record scan: a token config's vocabulary or tokenizer.json that is not stored (an
 * error when records were made with the config; a warning when none were: a job cut short). */
void vf_report_tok_files(vctx *c);
int vf_resolve_expected(vctx *c, fc_rtxn *t, char *why, size_t why_len);
/* *yes = does the config cfg/HEX (its stored JSON) answer to a name o expects of its kind (tokens
 * 0: expect_mel, 1: expect_tok), as vf_resolve_expected takes the names (a digest; a preset, its
 * listed name, or the preset stored in another dtype; a token config's tokenizer, name or
 * preset)? 0, or ENOMEM. */
int vf_config_answers(const fc_verify_opts *o, int tokens, const char *hex, const char *json,
                      size_t len, int *yes);

/* step 3, verify_entries.c: audio and text entries, their sources; step 5: the manifest */
int vf_collect(vctx *c, fc_rtxn *t, int db, ventry **out, size_t *n_out);
int vf_build_expected(vctx *c);
const vexp *vf_find_exp(vctx *c, const void *key, int db);
int vf_check_entries(vctx *c, int nthreads);
void vf_check_manifest(vctx *c);
/* Without a manifest: the report's text_only and audio_only (fc_verify_report). */
void vf_count_unpaired(vctx *c);
/* A manifest line's text against a stored text entry (entry, len: its value): 0 when one of the
 * line's texts (the chosen column, or LJSpeech's raw or normalized one: tokenize may have read
 * either) hashes to the entry's text digest, or the line has no text; 1 when the line's text is
 * another; 2 when every text of the line is empty or blank (tokenize fails it and keeps the old
 * entry). vf_text_change_msg(how) says it after "manifest line N ". */
int vf_text_changed(const fc_item *it, const void *entry, size_t len);
const char *vf_text_change_msg(int how);
/* The finding for manifest ids with entries of a kind (tokens 0: audio, 1: text) in a store, or
 * several stores, that holds no config of that kind (every one dropped): n such ids. The string
 * lives until the calling thread's next call. */
const char *vf_no_config_msg(int tokens, int several, uint64_t n);

/* verify_failed.c: the failure records: collected (damaged ones are errors), looked up by id, and
 * each reported as an FC_VERIFY_FAILED finding once the checks that they explain gaps in ran */
int vf_collect_failures(vctx *c, fc_rtxn *t);
vfail *vf_find_failure(vctx *c, const char *id, size_t len);
void vf_report_failures(vctx *c, fc_rtxn *t);

/* step 4, verify_scan.c: every record's header, checksums, dims and expected key */
int vf_check_records(vctx *c, int nthreads);

/* Index of the first NaN or Inf among n elements of dtype (f32, f16, bf16) at p, or n when all
 * are finite (integer dtypes: always n). p need not be aligned. */
size_t find_nonfinite(const void *p, size_t n, int dtype);
/* step 6, verify_index.c: each config's index against its entries and records */
int vf_check_index(vctx *c, fc_rtxn *t);
/* step 1, verify_pages.c: the environment's pages, before any B-tree is read through LMDB: the
 * two meta pages, every page the snapshot's B-trees use (each page's layout checked: a malformed
 * one is said and *lost set, since LMDB's reads of it could crash the run), LMDB's free list
 * against them, and the count. 0, ENOMEM, or FC_EINTR when the run's stop flag ended the walk
 * (the pages after it unchecked: nothing may be read through LMDB then); *lost set when the run
 * must stop (said). */
int vf_check_pages(vctx *c, fc_rtxn *t, int *lost);

#endif
