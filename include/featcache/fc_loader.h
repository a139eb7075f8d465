/* featcache — the zero-copy loader: batches of mels (and token ids) straight from the map.
 *
 * A loader opens one or more stores read-only (several stores read as one dataset), picks a
 * feature config (and optionally a token config), builds the index of utterances from the audio
 * (and text) dbs, and yields batches, either as views into the map or as one padded dense array
 * written straight from the map into a buffer (loader-owned, or caller-owned e.g. pinned memory).
 * docs/loader.md describes the orders, sharding, prefetch and lifetimes in full.
 *
 * Lifetimes (the one rule to remember): everything a batch points to — views into the map, the
 * padded buffer, ids, lengths — is valid until that batch is passed to fc_loader_release; ids
 * and views in fact stay valid until fc_loader_close, but only the first promise is the contract.
 * The loader holds one read transaction per store (a snapshot taken at open) for its whole life:
 * records written later are not seen (reopen), and a writer running meanwhile cannot reuse the
 * pages of that snapshot, so a store being written grows while a loader is open.
 *
 * Threads: a loader is driven by one thread at a time (next/set_epoch); its prefetch threads are
 * internal. fc_loader_release may be called from any thread, also while another drives the
 * loader (a batch given back when its copy to the GPU completed); fc_loader_lookup too. Separate loaders are independent. Fork: a loader must not be used in a
 * child process; open a new one there (every call in a child returns FC_EBADSTATE). */
#ifndef FC_LOADER_H
#define FC_LOADER_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fc_loader fc_loader;

typedef enum fc_loader_order {
  FC_ORDER_SEQUENTIAL = 0, /* index order: stores in the order given, ids in byte order */
  FC_ORDER_RANDOM = 1, /* Fisher-Yates with xoshiro256** seeded from (seed, epoch) */
  FC_ORDER_BUCKET = 2, /* random, then windows of bucket_batches batches sorted by length,
                              cut into batches, batch order shuffled: little padding */
  FC_ORDER_LOCALITY = 3 /* records sorted by address in the map, cut into runs of
                              locality_run; run order and items within a run shuffled; each
                              batch read in address order (HDDs, stores larger than RAM) */
} fc_loader_order;

typedef enum fc_loader_output {
  FC_OUTPUT_VIEWS = 0, /* mels[b]: pointer into the map, [mel_lengths[b]][n_mels] */
  FC_OUTPUT_PADDED = 1 /* mel_data: [size][frames][n_mels], padded with pad_value */
} fc_loader_output;

typedef enum fc_loader_shard {
  FC_SHARD_PAD = 0, /* repeat items from the start so every rank gets ceil(N/W) (DDP) */
  FC_SHARD_DROP = 1, /* drop the tail so every rank gets floor(N/W) */
  FC_SHARD_UNEVEN = 2 /* exact partition: ranks differ by at most one item */
} fc_loader_shard;

/* fc_loader_opts.flags. A bit of none of them fails fc_loader_open (FC_ECONFIG, named). */
enum fc_loader_flags {
  FC_LOADER_NOLOCK = 1u << 0, /* MDB_NOLOCK: read-only media, no lock.mdb written */
  FC_LOADER_NORDAHEAD = 1u << 1, /* MDB_NORDAHEAD: random reads of stores larger than RAM */
  FC_LOADER_VERIFY = 1u << 2, /* check each record's payload checksum when its batch is
                                         built: the default now (this flag asks for it
                                         explicitly; FC_LOADER_NO_VERIFY turns it off) */
  FC_LOADER_STRICT = 1u << 3, /* a missing or corrupt record fails (open / next) instead
                                         of being skipped and reported */
  FC_LOADER_RANDOM_CROP = 1u << 4, /* crops take a seeded random segment, not the start */
  FC_LOADER_NO_WILLNEED = 1u << 5, /* no madvise(MADV_WILLNEED) on upcoming batches */
  FC_LOADER_LOOKUP_ONLY = 1u << 6, /* build no index: only fc_loader_lookup */
  FC_LOADER_WILLNEED = 1u << 7, /* madvise(MADV_WILLNEED) upcoming batches. Neither flag
                                         (default): hints only with NORDAHEAD; without it the
                                         kernel's read-around around each fault serves every
                                         order as well or better (docs/BENCHMARKS.md, the loader section) */
  FC_LOADER_CENTER_CROP = 1u << 8, /* crops take the middle segment (start (frames-len)/2);
                                         neither crop flag: the segment starting at frame 0 */
  FC_LOADER_NO_VERIFY = 1u << 9, /* skip the payload checksums (XXH3-64 of every byte of a
                                         batch's records, docs/BENCHMARKS.md): a damaged payload
                                         is then served, or fails its batch if it cannot decode */
  FC_LOADER_PARTIAL = 1u << 10, /* read stores whose recorded shards (meta shard/K/N) are not a
                                         whole partition, or record one shard twice: refused
                                         otherwise when two or more stores record shards */
  FC_LOADER_CHECK_PAGES = 1u << 11 /* before a store is opened, every page its B-trees use is
                                         checked as cache-verify's first step checks it: one
                                         LMDB's reads could crash on (a flipped bit) fails the
                                         open (FC_EFORMAT, the page said) instead of crashing a
                                         later read. Costs a read of the B-trees' pages */
};

/* Options. Always start from fc_loader_opts_init (defaults below), then set fields. */
typedef struct fc_loader_opts {
  const char *features; /* mel config: preset name or 32-hex digest; NULL: the store's only
                               mel config, else "hifigan" */
  const char *tokens; /* token config: 32-hex digest or name (its "preset", "name" or
                               "tokenizer" field, e.g. "chars"); NULL: no tokens */
  uint32_t flags; /* FC_LOADER_* */
  uint32_t order; /* fc_loader_order, default SEQUENTIAL */
  uint64_t seed; /* default 0 */
  uint32_t output; /* fc_loader_output, default VIEWS */
  uint32_t batch_size; /* utterances per batch, default 32; with max_frames: the cap (0 none) */
  uint64_t max_frames; /* > 0: dynamic batching, batch size x longest (cropped) length <= this */
  uint32_t drop_last; /* drop the last, smaller batch (count batching only) */
  uint32_t rank, world_size; /* default 0, 1 */
  uint32_t shard; /* fc_loader_shard, default PAD */
  uint32_t crop_frames; /* > 0: mels longer than this are cropped to it (from frame 0, or
                               RANDOM_CROP / CENTER_CROP) */
  uint32_t pad_to; /* > 0: padded batches have exactly this many frames: longer mels are
                               cropped, shorter ones padded (PADDED output only: with VIEWS it is
                               FC_ECONFIG, use crop_frames) */
  uint32_t pad_multiple; /* > 1: padded frame count rounded up to a multiple of this */
  float pad_value; /* value of padded mel frames. Default NAN = the silence of the mel
                               config: ln(log_floor) for "ln" (hifigan, tacotron2: ln 1e-5 =
                               -11.5129), log10(log_floor) for "log10", 10 log10(log_floor) for
                               "db" without top_db, 0 for linear mels; a config whose silence
                               depends on each utterance (whisper, db with top_db) makes a padded
                               open fail with FC_ECONFIG: give the value. info.pad_value says
                               which value is used. */
  int32_t token_pad; /* value of padded token slots, default 0 */
  uint32_t bucket_batches; /* BUCKET: batches per sorted window, default 64 */
  uint32_t locality_run; /* LOCALITY: records per run, default 16 x batch_size */
  uint32_t prefetch_threads; /* threads building batches ahead, default 2; 0: built in next() */
  uint32_t prefetch_depth; /* batches kept ready ahead, default 4 */
  /* The utterances the epochs hold (a train / dev split of one store): NULL and 0 = every
   * utterance of the stores. Else only the ids of the manifest at `manifest` (any format
   * featurize reads; its lines featurize would refuse are left out) and the n_ids strings of
   * `ids`. Read at open (they need not outlive it); fc_loader_lookup is not restricted. An id
   * none of the stores holds is a problem (fc_loader_problem: "not stored", or the failure a
   * featurize run recorded for it), or with STRICT fails the open. */
  const char *manifest;
  const char *const *ids;
  size_t n_ids;
  /* Nonzero → FC_LOADER_CHECK_PAGES's check stops at the next page it would read (a big store's
   * check from a cold disk reads one page at a time: minutes on a disk of 150 reads a second)
   * and the open returns FC_EINTR, nothing opened. Set it from a signal handler (Ctrl-C); NULL
   * (default): no stop. Only the page check looks at it, during the open: the flag need not
   * outlive fc_loader_open (the loader keeps no pointer to it). */
  volatile const int *stop;
  /* This loader takes batches batch_offset, batch_offset + batch_stride, ... of the rank's epoch
   * (planned whole, as with the default, then these kept), so that batch_stride loaders with
   * offsets 0 .. batch_stride-1 (the DataLoader workers of one rank) share the rank's epoch
   * exactly: the same batches, each taken by one of them, their union the epoch one loader
   * has. 0 or 1 (default 0): every batch; batch_offset below batch_stride (FC_ECONFIG). info's
   * epoch_items, epoch_batches and max_batch_bytes are of the batches taken; fc_batch.index is
   * the batch's number in the rank's epoch. */
  uint32_t batch_stride, batch_offset;
} fc_loader_opts;

/* Fill o with the defaults. */
FC_API void fc_loader_opts_init(fc_loader_opts *o);

/* Open n stores (directories) as one dataset and build the index. Among several stores one with
 * no entries and no records (an empty shard) needs no config and contributes nothing. Errors:
 * those of fc_store_open, FC_ENOTFOUND (no such config, or with STRICT a missing record), FC_ECONFIG (a
 * config selector matching several configs, bad options (a flags bit of no FC_LOADER_* flag
 * among them), stores disagreeing on the config, a
 * store given twice, and without FC_LOADER_PARTIAL shards recorded by two or more of the stores
 * that miss some of their partition or hold one twice),
 * FC_EFORMAT/FC_ECHECKSUM (with STRICT, a corrupt record; FC_EFORMAT with CHECK_PAGES, a damaged
 * page), FC_EINTR (CHECK_PAGES: o->stop seen, nothing opened), ENOMEM; why (may be NULL) receives a
 * one-line reason naming the store and the id. *out is owned by the caller: fc_loader_close. */
FC_API int fc_loader_open(const char *const *paths, size_t n, const fc_loader_opts *o,
                          fc_loader **out, char *why, size_t why_len);
/* Stop the prefetch threads, end the transactions, close the stores. Outstanding batches become
 * invalid (release them first). NULL is ignored. In a child process after fork only the
 * loader's own memory is freed (the parent's LMDB handles are left alone). */
FC_API void fc_loader_close(fc_loader *l);

/* ---- what was indexed ------------------------------------------------------------------------ */
typedef struct fc_loader_info {
  uint64_t items; /* utterances in the index (all ranks) */
  uint64_t skipped; /* utterances left out (missing or corrupt records), see problems */
  uint64_t epoch_items; /* items this rank yields per epoch (after sharding, before drop_last) */
  uint64_t epoch_batches; /* batches this rank yields in the current epoch */
  uint64_t max_batch_bytes; /* largest padded mel buffer of the current epoch's batches */
  uint32_t n_mels;
  int mel_dtype; /* fc_dtype */
  int tok_dtype; /* fc_dtype; 0 without tokens */
  fc_digest mel_config, tok_config;
  uint32_t n_stores;
  float pad_value; /* the value padded mel frames get (options.pad_value resolved; with views,
                       which are never padded, the config's silence, NAN where there is none) */
  uint64_t bound_batch_bytes; /* largest padded mel buffer any epoch can need (batch cap, or
                               the utterances if fewer, x the longest cropped, padded length;
                               with max_frames that budget, if smaller),
                               plus, with a batch cap, room for a batch's per-item arrays,
                               padded tokens and ids: caller buffers of this size serve every
                               epoch and hold whole batches (FC_DESC_LAYOUT) */
} fc_loader_info;
FC_API int fc_loader_info_get(const fc_loader *l, fc_loader_info *info);

/* The i-th skipped utterance (i < info.skipped): its id, store path and a reason. Pointers valid
 * until close. Returns 0 or FC_ENOTFOUND. */
FC_API int fc_loader_problem(const fc_loader *l, uint64_t i, const char **id, const char **store,
                             const char **reason);

/* The memory map of store i (0 .. info.n_stores-1): base and length, valid until close. Views of
 * large records lie inside it (bindings use this to wrap the map once and slice views from it). */
FC_API int fc_loader_map_region(const fc_loader *l, uint32_t i, const void **base, size_t *len);

/* The digest of this loader's view of the dataset: XXH3-128 over its configs and its index
 * (every utterance in index order: its id, the store serving it, its frames and tokens; with the
 * LOCALITY order, which plans by where records lie, also each record's place in its store's file),
 * not the other options. Two loaders over the same stores, configs and subset see the same view exactly when
 * their snapshots hold the same utterances: a writer that committed between their opens makes it
 * differ. The ranks of one run (and DataLoader workers) each cut their share of their own view's
 * order, so ranks whose views differ read some utterances twice and others never, silently:
 * exchange it once after open and stop on a difference (Python: featcache.check_ranks, which
 * compares the options that shape the order too). Computed on each call: one pass over the index
 * hashing each id and 16 bytes more (no record is read); nothing on the batch path. FC_EBADSTATE
 * with LOOKUP_ONLY. */
FC_API int fc_loader_view_digest(const fc_loader *l, fc_digest *out);

/* Canonical JSON of the chosen mel (which = 0) or token (which = 1) config; valid until close. */
FC_API const char *fc_loader_config_json(const fc_loader *l, int which);

/* ---- epochs and batches ---------------------------------------------------------------------- */
/* Plan epoch e (order, shard, batches) and restart iteration at its first batch. Opening plans
 * epoch 0. The same (seed, epoch, options, index) gives the same batches on every run and rank.
 * Prefetch runs across epochs: near the end of epoch e the threads plan e+1 and build its first
 * batches, which set_epoch(e+1) after the last batch of e keeps; so does set_epoch(e) before the
 * first batch of e. Any other call drops the prefetched, unconsumed batches (batches the caller
 * still holds stay valid) and plans afresh. */
FC_API int fc_loader_set_epoch(fc_loader *l, uint64_t epoch);

typedef struct fc_batch {
  uint64_t epoch;
  uint64_t index; /* batch number within the epoch */
  uint32_t size; /* B: utterances in this batch (may be less than planned when
                                  corrupt records were skipped under VERIFY) */
  uint32_t n_mels;
  int mel_dtype;
  int tok_dtype; /* 0 without tokens */
  const char *const *ids; /* [B] NUL-terminated utterance ids */
  const uint64_t *items; /* [B] positions in the index (0 .. info.items-1) */
  const uint32_t *mel_lengths; /* [B] frames after cropping */
  const uint32_t *mel_starts; /* [B] first frame taken (crops) */
  const uint32_t *src_frames; /* [B] frames of the stored record */
  const void *const *mels; /* [B] views: record payload + start frame, in the map */
  uint32_t frames; /* PADDED: T of mel_data */
  void *mel_data; /* PADDED: [B][T][n_mels] in mel_dtype; NULL for VIEWS */
  const uint32_t *token_lengths; /* [B], or NULL without tokens */
  const void *const *tokens; /* [B] token arrays (in the map when aligned, else copies) */
  uint32_t max_tokens; /* PADDED with tokens: T of tok_data */
  void *tok_data; /* PADDED with tokens: [B][max_tokens] in tok_dtype */
  uint32_t n_errors; /* utterances of the planned batch skipped (VERIFY failures) */
  const char *errors; /* "id: reason" lines for them ("id: reason (in STORE)" of several
                       * stores), or NULL */
  const char *id_text; /* the B ids back to back, each followed by a NUL (one string to
                                  decode for bindings: split at NUL) */
  uint64_t id_text_len; /* bytes of id_text, the B NULs included */
} fc_batch;

/* The next batch of the current epoch into *out (owned by the loader until fc_loader_release).
 * Returns 0 with *out NULL at the end of the epoch (call fc_loader_set_epoch for the next).
 * Errors: FC_ECHECKSUM/FC_EFORMAT for a corrupt record under VERIFY|STRICT (fc_loader_error
 * says which id), ENOBUFS (with caller buffers, fc_loader_set_buffers: the caller holds every one
 * of them; not sticky: release a batch and call again), ENOMEM, FC_EBADSTATE after fork, with
 * LOOKUP_ONLY, or after an earlier failure of next (sticky until fc_loader_set_epoch). */
FC_API int fc_loader_next(fc_loader *l, fc_batch **out);
/* A batch's descriptor, for bindings: its fields as one packed array of uint64 (pointers as
 * addresses, 0 for NULL), so a binding reads them with one unpack instead of one field access
 * each. desc[FC_DESC_BATCH] is the fc_batch (give it back with fc_loader_release), 0 at the end
 * of the epoch (then the other entries are 0). */
enum {
  FC_DESC_BATCH,
  FC_DESC_EPOCH,
  FC_DESC_INDEX,
  FC_DESC_SIZE,
  FC_DESC_N_MELS,
  FC_DESC_MEL_DTYPE,
  FC_DESC_TOK_DTYPE,
  FC_DESC_FRAMES,
  FC_DESC_MAX_TOKENS,
  FC_DESC_IDS,
  FC_DESC_ITEMS,
  FC_DESC_MEL_LENGTHS,
  FC_DESC_MEL_STARTS,
  FC_DESC_SRC_FRAMES,
  FC_DESC_MELS,
  FC_DESC_MEL_DATA,
  FC_DESC_TOKEN_LENGTHS,
  FC_DESC_TOKENS,
  FC_DESC_TOK_DATA,
  FC_DESC_N_ERRORS,
  FC_DESC_ERRORS,
  FC_DESC_ID_TEXT,
  FC_DESC_ID_TEXT_LEN,
  /* nonzero when every array of the batch lies in a caller buffer (fc_loader_set_buffers: the
   * per-item arrays, padded tokens and id text after the mels, where the buffer has room): a
   * key equal for two batches exactly when their arrays lie at the same addresses with the same
   * shapes (the same buffer, batch size, frames and max tokens), so a binding makes its objects
   * over a buffer once per shape and reuses them. 0 otherwise. */
  FC_DESC_LAYOUT,
  FC_DESC_LEN = 24 /* entries of desc */
};
/* The hand-off of a binding, several batches a call: give back the batches that
 * descs[i * FC_DESC_LEN + FC_DESC_BATCH] names for i < n (0: none; not woken for), then take up to
 * n batches into descs[0 .. n * FC_DESC_LEN): the first as fc_loader_next takes it (waiting for
 * it, or building it), each following one only while it is already built (never waiting, and
 * never one whose build failed: the next call reports that one as its first). The taken
 * descriptors come first; the first entry not taken has FC_DESC_BATCH 0 (none taken: the end of
 * the epoch, or an error) and, after a batch was taken, FC_DESC_INDEX the number of batches the
 * epoch has left (0: it is over, no call needed to learn it). Returns fc_loader_next's codes (of
 * the first). A binding that takes n batches a call makes one call per n batches; every batch
 * taken is the caller's until given back, as with fc_loader_next. */
FC_API int fc_loader_swap_descs(fc_loader *l, uint64_t *descs, size_t n);
/* The next batch as one descriptor (fc_loader_swap_descs taking one, giving none back). */
static inline int fc_loader_next_desc(fc_loader *l, uint64_t desc[FC_DESC_LEN]) {
  desc[FC_DESC_BATCH] = 0;
  return fc_loader_swap_descs(l, desc, 1);
}
/* Give back the batch desc[FC_DESC_BATCH] names (none when 0), then take the next, in one call. */
static inline int fc_loader_swap_desc(fc_loader *l, uint64_t desc[FC_DESC_LEN]) {
  return fc_loader_swap_descs(l, desc, 1);
}
/* Give the batch back: its views, buffers and arrays become invalid. NULL is ignored. Batches may
 * be released in any order and from any thread. */
FC_API void fc_loader_release(fc_loader *l, fc_batch *b);
/* Reason for the last failure of open-time config resolution or next; static until the next
 * call on l. After a failed fc_loader_lookup, that lookup's reason, for the thread that made it
 * (until its next call on l): lookups from other threads meanwhile neither replace nor clear it,
 * nor the reason of a next that failed. */
FC_API const char *fc_loader_error(const fc_loader *l);

/* Caller-owned buffers for padded batches (e.g. page-locked memory the caller allocated with its
 * GPU runtime, so that a host-to-device copy from a batch is asynchronous: the library itself
 * links no GPU runtime): n buffers of bytes each, used instead of the loader's own. Call before
 * the first fc_loader_next of an epoch; bytes must be at least info.max_batch_bytes
 * (FC_ECONFIG otherwise; info.bound_batch_bytes serves every epoch). A buffer is written again
 * only after the batch in it was given back with fc_loader_release: a caller that copies from it
 * asynchronously releases the batch once the copy is complete. The loader never frees them; they
 * must outlive the loader. The prefetch threads build at most as many batches ahead as there are
 * caller buffers the caller does not hold (and at most prefetch_depth). */
FC_API int fc_loader_set_buffers(fc_loader *l, void *const *bufs, size_t n, size_t bytes);
/* More caller buffers, at any time after fc_loader_set_buffers (a consumer that keeps batches
 * needs more than it gave): n buffers of bytes each (at least the first set's). FC_EBADSTATE
 * without caller buffers, FC_ECONFIG for smaller ones. */
FC_API int fc_loader_add_buffers(fc_loader *l, void *const *bufs, size_t n, size_t bytes);

/* Time the caller spent blocked in fc_loader_next waiting for batches, in ns since open. */
FC_API uint64_t fc_loader_wait_ns(const fc_loader *l);

/* ---- random access --------------------------------------------------------------------------- */
typedef struct fc_loader_item {
  const void *mel; /* payload in the map, [frames][n_mels]; for mel_dtype FC_DTYPE_MQ
                               the coded payload: decode it with fc_mq_decode (fc_codec.h) */
  uint32_t frames, n_mels;
  int mel_dtype; /* the stored dtype (FC_DTYPE_MQ for a coded store) */
  const void *tokens; /* payload in the map (maybe unaligned for short arrays) or NULL */
  uint32_t n_tokens;
  int tok_dtype;
  uint64_t mel_bytes; /* payload bytes at mel */
} fc_loader_item;
/* Look utterance id up in the stores (the first store that has its records, as the index serves
 * it; a store whose records of it are missing or corrupt is passed over, its reason returned
 * only when no store has them). Pointers valid until close (or fc_loader_refresh).
 * Returns 0, FC_ENOTFOUND (an id no store can hold too: fc_loader_error says so; for an id
 * featurize failed, the reason it recorded), FC_EFORMAT/
 * FC_ECHECKSUM (corrupt record; fc_loader_error says why). Works with LOOKUP_ONLY (no index built). Serialized internally; safe from any thread. */
FC_API int fc_loader_lookup(fc_loader *l, const char *id, fc_loader_item *out);
/* Move a LOOKUP_ONLY loader to the stores' latest snapshots (what writers committed since it
 * opened or last refreshed), keeping their environments: no file is opened or mapped again.
 * Every pointer fc_loader_lookup returned before is invalid once it returns (the pages of the
 * old snapshot may be reused by writers). Configs stay those chosen at open.
 * Returns 0; FC_ECONFIG for a loader with an index (open a new one); FC_EBADSTATE after fork;
 * on any other failure (MDB_MAP_RESIZED: a store grew past this process's map while another
 * loader of the process has it open; ESTALE: a data.mdb written over in place; LMDB's errors)
 * the loader refuses every later lookup and refresh with FC_EBADSTATE: close it and open a new
 * one. Not to be called while another thread uses pointers of a lookup. */
FC_API int fc_loader_refresh(fc_loader *l);

#ifdef __cplusplus
}
#endif
#endif
