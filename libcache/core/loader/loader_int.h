/* Internals of the loader (fc_loader.h), shared by loader.c (open, index, lookup), loader_plan.c
 * (orders, sharding, batching), loader_batch.c (building batches, prefetch threads) and
 * loader_warm.c (the index's pages read ahead of the walk at open). */
#ifndef FC_LOADER_INT_H
#define FC_LOADER_INT_H

#include "featcache/fc_config.h"
#include "featcache/fc_loader.h"
#include "featcache/fc_manifest.h"
#include "libcache/core/store/store_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

/* One store of the dataset: a shared env (registry) and the loader's read transaction. */
typedef struct ld_store {
  struct ld_reg *reg; /* registry entry: the fc_store shared by the loaders of this process */
  fc_store *s; /* reg's store */
  const void *map; /* the map (read through an index: its advice is RANDOM while opening) */
  size_t map_len;
  MDB_txn *txn; /* snapshot held from open to close; the index points into it */
  char *path;
  fc_digest mel_cfg, tok_cfg; /* an empty store (no entries, no records): the dataset's */
  int empty; /* an empty shard among several stores: no config of its own needed, nothing read */
} ld_store;

/* loader_warm.c: the index's pages read ahead of the walk (index_store_fast). */
enum { LD_WARM_MAX_TREES = 4 };
typedef struct ld_warm ld_warm;
typedef struct ld_warm_stats {
  unsigned started; /* warming threads started (a store's trees deeper than their roots) */
  unsigned cold; /* of them, stores a sample of leaves found not all in memory */
  unsigned gave_up; /* of them, stores whose pages did not read as LMDB's (nothing advised) */
  uint64_t branch_pages, leaf_pages; /* read; found */
  uint64_t leaves_asked; /* leaf pages asked for (madvise WILLNEED): the cold stores' */
  uint64_t requests; /* madvise calls, branch levels' and leaves' */
} ld_warm_stats;
/* Start reading ahead the trees of dbs dbi[0..n) (named names[i] in the main db) of store st, as
 * st->txn sees them, on a thread of its own; NULL when there is nothing worth it or the store's
 * pages are not LMDB 0.9's. ld_warm_end stops it (the walk is done) and adds its counts to *out. */
ld_warm *ld_warm_begin(ld_store *st, const MDB_dbi *dbi, const char *const *names, unsigned n);
void ld_warm_end(ld_warm *w, ld_warm_stats *out);

/* The states of an item. Items of a store read through its index (docs/FORMAT.md "Index") start
 * LD_INDEXED: mel_rec and tok_rec point to their index values in the map (the record key first),
 * frames and ntok are the index's dim0s. The first batch (or locality plan) that needs one looks
 * its records up and checks their headers against the config and the index (LD_CHECKED; the
 * pointers are then the records). Items of a store read without an index are found and checked
 * at open. The state moves only forward, under resolve_mu; readers of mel_rec/tok_rec take
 * resolve_mu once after it moved. */
enum { LD_CHECKED = 0, LD_INDEXED = 1 };

/* One utterance of the dataset. */
typedef struct ld_item {
  const uint8_t *mel_rec; /* record in the map: 64-byte header, then [frames][n_mels] */
  const uint8_t *tok_rec; /* or NULL */
  uint32_t frames;
  uint32_t ntok;
  uint32_t id_off; /* into ids */
  uint32_t store; /* below 2^24 (fc_loader_open takes at most UINT32_MAX stores, shifts 56) */
  uint8_t state; /* LD_* */
} ld_item;

typedef struct ld_problem {
  char *id;
  uint32_t store;
  char *reason;
} ld_problem;

/* A planned epoch: this rank's items in order, cut into batches. */
typedef struct ld_plan {
  uint64_t epoch;
  uint64_t *order; /* indices into items */
  uint64_t n_order;
  uint64_t *bstart; /* batch b = order[bstart[b] .. bstart[b+1]) */
  uint64_t n_batches;
  uint64_t max_batch_bytes;
} ld_plan;

typedef struct ld_buf {
  void *p;
  size_t cap;
  int caller; /* caller-owned (fc_loader_set_buffers): never freed */
  uint32_t index; /* a caller buffer's position in the order it was given */
  size_t used; /* bytes the batch it holds needs */
  size_t touched; /* own buffer: bytes some batch has written since it was allocated or trimmed */
} ld_buf;

/* Where a batch's per-item arrays lie in its block (one allocation, or the tail of a caller
 * buffer): the same offsets for the same batch size, token width and id bytes. */
typedef struct ld_block_layout {
  size_t off_items, off_u32, off_mels, off_tokp, off_copy, off_idtext, total;
} ld_block_layout;

static inline size_t ld_align16(size_t n) { return (n + 15) & ~(size_t)15; }
static inline size_t ld_align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The block of a batch of B items: copy_bytes of copied payloads (views), tok_bytes of padded
 * tokens, id_bytes of id text. */
static inline ld_block_layout ld_block(size_t B, size_t copy_bytes, size_t tok_bytes,
                                       size_t id_bytes) {
  ld_block_layout y;
  y.off_items = ld_align16(B * sizeof(char *));
  y.off_u32 = y.off_items + ld_align16(B * 8);
  y.off_mels = y.off_u32 + ld_align16(4 * B * 4);
  y.off_tokp = y.off_mels + ld_align16(B * sizeof(void *));
  y.off_copy = y.off_tokp + ld_align16(B * sizeof(void *));
  y.off_idtext = y.off_copy + copy_bytes + tok_bytes;
  y.total = y.off_idtext + ld_align16(id_bytes);
  return y;
}

typedef struct ld_batch {
  fc_batch pub;
  struct fc_loader *l;
  ld_buf buf; /* padded mel buffer (p NULL for views) */
  void *block; /* one allocation for the per-item arrays and token copies; NULL when they lie
                  in the caller buffer after the mels (in_buf) */
  int in_buf;
  char *errors;
} ld_batch;

struct fc_loader {
  pid_t pid;
  fc_loader_opts o;
  char *features_sel, *tokens_sel; /* copies of the selectors */
  ld_store *stores;
  uint32_t n_stores;
  uint32_t n_mels;
  int mel_dtype, tok_dtype, has_tokens; /* mel_dtype: as delivered (f32 for coded records) */
  int mel_coded; /* mel records are mq-coded: decoded into batch memory */
  int willneed; /* madvise(WILLNEED) upcoming batches (flags, order; fc_loader.h) */
  size_t mel_dsize, tok_dsize;
  char *mel_json, *tok_json;
  ld_item *items;
  uint64_t n_items, cap_items;
  char *ids;
  size_t ids_len, ids_cap;
  ld_problem *problems;
  uint64_t n_problems, cap_problems;
  pthread_mutex_t lookup_mu; /* fc_loader_lookup uses the transactions from any thread */
  pthread_mutex_t resolve_mu; /* items' states and record pointers (LD_*), the transactions */
  int refresh_failed; /* fc_loader_refresh left a store without its transaction: lookups refused */
  int any_indexed; /* some store is read through its index: items may need resolving */
  ld_warm_stats warm; /* the index read ahead at open, over the stores (tests, benchmarks) */
  char err[512]; /* fc_loader_error, but after a lookup (ld_lookup_why) */
  uint64_t serial; /* this loader among those the process opened, from 1 (ld_lookup_serial) */
  /* the utterances an epoch may hold (opts manifest / ids), kept during open only */
  const char **want; /* sorted, each once; NULL: every utterance */
  size_t n_want;
  uint8_t *want_seen; /* [n_want]: an item or a problem of the index has the id */
  uint8_t *want_asked; /* [n_want], with a manifest and ids both: the id is one of the ids */
  fc_item_list want_list; /* the manifest's items, which want points into */

  /* epoch state, guarded by mu */
  pthread_mutex_t mu;
  pthread_cond_t cv_ready, cv_space, cv_idle;
  ld_plan plan; /* the current epoch */
  ld_plan ahead; /* epoch plan.epoch + 1, planned by a prefetch thread near the end of
                             the current one so prefetch runs on across the boundary */
  int ahead_ok; /* ahead holds a plan */
  int ahead_state; /* 0: not planned, 1: a thread is planning it, 2: planning failed */
  uint64_t base; /* sequence number of the current epoch's batch 0 */
  uint64_t gen; /* bumped by set_epoch: builds of an older generation are dropped */
  /* Batches are numbered by one sequence across epochs: s = base + k for batch k of the current
   * epoch, base + plan.n_batches + k for batch k of the next one. */
  uint64_t next_build; /* next sequence number a prefetch thread claims */
  uint64_t next_consume; /* next sequence number fc_loader_next hands out */
  uint32_t building; /* builds (and plannings) in flight */
  ld_batch **slots; /* [depth]: batch of sequence number s ready in slots[s % depth] */
  int *slot_err;
  char **slot_why;
  unsigned char *slot_ready;
  pthread_cond_t cv_buf; /* a caller buffer came back, or the epoch changed */
  size_t held_caller; /* caller buffers in batches handed out and not yet released */
  int stop;
  int sticky; /* an earlier next failed: FC_EBADSTATE until set_epoch */
  pthread_t *threads;
  _Atomic uint32_t n_threads; /* read by the threads too (build_batch) while more start */
  uint64_t wait_ns;

  /* padded buffers */
  ld_buf *free_bufs;
  size_t n_free, cap_free;
  size_t n_caller_bufs; /* caller buffers exist: take only those, wait when none is free */
  size_t caller_buf_bytes;
};

/* fc_loader_error after a failed fc_loader_lookup: that lookup's reason, for the thread that
 * made it. Lookups run from any thread, also while another drives the loader: one buffer per
 * loader gave a thread another thread's reason (another id), or none (a lookup that found its id
 * cleared it, and next's reason too). Defined in loader_buffers.c, which loader.c and
 * loader_batch.c both call. */
extern _Thread_local uint64_t ld_lookup_serial; /* loader of this thread's last lookup; 0: none */
extern _Thread_local char ld_lookup_why[512];
/* A call on l other than a lookup: fc_loader_error says its reason (l->err) again. */
static inline void ld_not_lookup(const fc_loader *l) {
  if (ld_lookup_serial == l->serial) ld_lookup_serial = 0;
}

/* loader_plan.c */
int ld_plan_epoch(struct fc_loader *l, uint64_t epoch, ld_plan *out);
void ld_plan_free(ld_plan *p);
/* Frames of item i after cropping, and the start frame, for (seed, epoch). */
uint32_t ld_crop_len(const struct fc_loader *l, const ld_item *it);
uint32_t ld_crop_start(const struct fc_loader *l, uint64_t epoch, uint64_t item, const ld_item *it);
/* Padded frame count T for a longest (cropped) length. */
uint32_t ld_padded_frames(const struct fc_loader *l, uint32_t longest);

/* Stored payload bytes of item it's mel record (its header was checked at open). */
static inline size_t ld_mel_bytes(const struct fc_loader *l, const ld_item *it) {
  if (!l->mel_coded) return (size_t)it->frames * l->n_mels * l->mel_dsize;
  const uint8_t *p = it->mel_rec + 16; /* u64 payload bytes, little-endian */
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return (size_t)v;
}

/* The number in the rank's epoch of batch k of this loader's plan (batch_stride's). */
static inline uint64_t ld_batch_number(const struct fc_loader *l, uint64_t k) {
  return l->o.batch_stride > 1 ? k * l->o.batch_stride + l->o.batch_offset : k;
}

/* loader_index.c: the loader's index (its items) */
int ld_add_problem(struct fc_loader *l, uint32_t store, const char *id, size_t id_len,
                   const char *reason);
int ld_add_item(struct fc_loader *l, const ld_item *it, const char *id, size_t id_len);
/* The failure a featurize run recorded for id in one of the stores: r = "WHAT: featurize failed
 * it: REASON", and the store's index; else n_stores (r untouched). */
uint32_t ld_recorded_failure(const struct fc_loader *l, const char *id, size_t id_len,
                             const char *what, char *r, size_t rl);
/* A record against what the loader expects. 0, or FC_EFORMAT/FC_ECHECKSUM with a reason. */
int ld_check_record(struct fc_loader *l, const void *val, size_t len, int tokens,
                    const fc_digest *cfg, fc_record_header *h, char *why, size_t why_len);
/* Look id's records up in store si (aval: its audio entry, or NULL to look it up). 0 and *it;
 * FC_ENOTFOUND / FC_EFORMAT / FC_ECHECKSUM with a reason; LMDB codes. */
int ld_find_records(struct fc_loader *l, uint32_t si, const char *id, size_t id_len,
                    const void *aval, size_t alen, ld_item *it, char *why, size_t why_len);

int ld_index_store_lookups(struct fc_loader *l, uint32_t si, char *why, size_t why_len);
/* After every store is indexed: an id held by several stores is kept from the first of them
 * (items of later stores under it are dropped), and a store's problem with an id another store
 * serves is dropped (it skips nothing). 0 or ENOMEM. */
int ld_drop_duplicates(struct fc_loader *l);
/* loader_dataset.c: the stores as a set, checked once their transactions began: a store given
 * twice (FC_ECONFIG), and unless FC_LOADER_PARTIAL, an incomplete set of shards or a shard two
 * stores record (FC_ECONFIG, why naming them). */
int ld_check_set(struct fc_loader *l, char *why, size_t why_len);

/* loader_subset.c: the utterances the epochs hold, when the options name them (manifest, ids) */
int ld_subset_begin(struct fc_loader *l, const fc_loader_opts *o, char *why, size_t why_len);
/* 1: the index takes id (there is no subset, or the subset holds it), else 0. */
int ld_wanted(struct fc_loader *l, const void *id, size_t id_len);
/* After the index: the next id of the subset (from *i, 0 first) that no item or problem has, or
 * NULL. */
const char *ld_subset_unseen(const struct fc_loader *l, size_t *i);
/* How the subset named the id ld_subset_unseen returned last (i as it left it): "asked for"
 * (the ids) or "in the manifest". */
const char *ld_subset_source(const struct fc_loader *l, size_t i);
/* The next manifest line (from *i, 0 first) that featurize refuses though it names an id (a bad
 * "offset" or "duration", a missing column) and that no other line or id of the subset names:
 * not read, whatever a store holds under its id; NULL at the end. A duplicate's id is its first
 * line's. */
const fc_item *ld_subset_refused(const struct fc_loader *l, size_t *i);
void ld_subset_free(struct fc_loader *l);
/* Add store si's utterances from its configs' indexes: *used 1; or, when it lacks one of them (or
 * this loader's transaction cannot read it), nothing: *used 0, read it without. */
int ld_index_store(struct fc_loader *l, uint32_t si, int *used, char *why, size_t why_len);
/* Read-ahead while opening (docs/loader.md "Which utterances"): on a store out of the page
 * cache the walk of an index, and the lookups and headers of the first batch, read pages spread
 * over the file; with the kernel's read-around each costs a window of the file (read_ahead_kb;
 * 8 MiB here). random 1: MADV_RANDOM on the maps of the stores read through an index (a page at
 * a time); 0: back to the advice the store was opened with (NORMAL unless NORDAHEAD). */
void ld_advise_open(struct fc_loader *l, int random);
/* Resolve the items of batch k of plan p still LD_INDEXED (takes resolve_mu). *bad (and *bad_rc)
 * stay NULL when all resolved, else [batch size]: the reason (and code) of each that did not. */
int ld_resolve_batch(struct fc_loader *l, const ld_plan *p, uint64_t k, char ***bad, int **bad_rc);
void ld_bad_free(char **bad, int *bad_rc, uint64_t m);
/* madvise(WILLNEED) the records of batch k of plan p (when the loader hints: l->willneed). */
void ld_willneed(struct fc_loader *l, const ld_plan *p, uint64_t k);
/* The same, whatever l->willneed says. */
void ld_hint_batch(struct fc_loader *l, const ld_plan *p, uint64_t k);
/* Caller holds resolve_mu. */
/* → LD_CHECKED: look the records up by their keys and check their headers against the config
 * and the index's lengths. 0, or FC_ENOTFOUND / FC_EFORMAT / FC_ECHECKSUM and a reason (the item
 * stays LD_INDEXED), or an LMDB code. */
int ld_resolve(struct fc_loader *l, ld_item *it, char *why, size_t why_len);
/* Where item it's mel record is (in the map) and its length, LD_INDEXED or not: 0, or
 * FC_ENOTFOUND. For hints only: nothing is checked. */
int ld_locate(struct fc_loader *l, const ld_item *it, const uint8_t **rec, size_t *len);
/* Resolve every item still LD_INDEXED (orders by address). Takes resolve_mu. Items that fail
 * stay as they are: their batches report them. */
void ld_resolve_all(struct fc_loader *l);

/* loader_config.c */
/* Resolve selector sel (NULL, a name, or 32 hex) to a config digest of kind "mel"/"tokens" in
 * one store's meta db. On success *json is a malloc'd NUL-terminated copy of the config. */
int ld_resolve_config(MDB_txn *txn, MDB_dbi meta, const char *store, const char *sel, int tokens,
                      fc_digest *out, char **json, char *why, size_t why_len);
/* The padding value of config mc's silence (pad_value NAN asks for it). */
int ld_resolve_pad_value(const fc_mel_config *mc, float *out, char *why, size_t why_len);

/* loader_batch.c */
int ld_threads_start(struct fc_loader *l);
void ld_threads_stop(struct fc_loader *l);
void ld_drop_ready(struct fc_loader *l);
void ld_bufs_free(struct fc_loader *l);

/* loader_buffers.c: take a buffer of at least need bytes (called without mu held; 0, ENOMEM, or
 * EAGAIN when the epoch changed or the loader stops while waiting for a caller buffer), and give
 * one back (mu held). */
int ld_buf_get(fc_loader *l, uint64_t gen, size_t need, ld_buf *out);
void ld_buf_put_locked(fc_loader *l, ld_buf b);

/* loader_copy.c: a batch's rows. With prefetch threads, the rows of a padded batch of at least
 * LD_STREAM_MIN_BYTES are copied with non-temporal stores (stream), by a thread or by the caller
 * helping them: with prefetch_depth such batches ahead (16 MiB and more by default) the buffer
 * written has left the caches since its last batch, so an ordinary store would first read each
 * destination line from memory, and would evict what the training loop works on for a batch
 * read only later. Without threads, memcpy: one buffer comes back at once, still cached.
 * ld_stream_done(stream) after a batch's last copy, before it is handed to another thread. */
#define LD_STREAM_MIN_BYTES ((size_t)4 << 20)
void ld_copy_rows(void *dst, const void *src, size_t n, int stream);
void ld_stream_done(int stream);
void ld_fill_pad(void *dst, size_t n, size_t dsize, uint32_t pat);

/* FC_LOADER_CHECK_PAGES (loader_pages.c): the pages of the store at path checked as
 * cache-verify's first step checks them, before it is opened; FC_EFORMAT with the page said when
 * one could crash LMDB's reads, FC_EINTR when *stop was seen (the check ended there), else 0 (a
 * store that cannot be checked: its open says why). stop may be NULL. */
int ld_check_pages(const char *path, int nolock, volatile const int *stop, char *why,
                   size_t why_len);

#endif
