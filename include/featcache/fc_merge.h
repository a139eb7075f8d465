/* featcache — merging stores: several stores (shards of one corpus, or caches built apart) into one
 * (docs/cache-merge.md).
 *
 * fc_merge_run streams every entry of the inputs into the output store, one db at a time in key
 * order (a k-way merge of one cursor per input), in this order: meta, feat, tok, audio, text, so
 * that an utterance's entry is committed only after the records it names. Memory is bounded: n
 * cursors, the current batch's list of puts (values are read in place from the inputs' maps),
 * nothing per entry.
 *
 *   - feat and tok keys are content keys: a key in several inputs is stored once (the first
 *     input's record that passes fc_record_verify; a damaged record is skipped and reported).
 *   - meta is unioned: configs (cfg/<hex>), vocabularies (vocab/<hex>, tokenizer/<hex>) and any
 *     other name; meta/format is the output's own.
 *   - audio and text entries are keyed by utterance id: an id whose entry differs between inputs
 *     (or between an input and what the output already holds) is a conflict. A first pass over
 *     the keys of every db (values of meta, audio and text only) finds every conflict, and counts
 *     the entries, before anything is written; unless the options say which input wins, the merge
 *     is refused whole (FC_ECONFLICT, nothing written).
 *
 * Crash safety: the output is opened with FC_STORE_NOMETASYNC (each commit's pages synced, its
 * meta page with the next commit) and synced at the end; each batch is one transaction. A merge killed at any instant leaves a store that
 * cache-verify accepts (at most orphan records), and running it again completes it: keys already
 * in the output are found and skipped (an input's cursor need not restart), so a rerun of a
 * finished merge writes nothing. */
#ifndef FC_MERGE_H
#define FC_MERGE_H

#include <signal.h>

#include "fc_base.h"
#include "fc_store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which input wins a conflict. */
typedef enum fc_merge_prefer {
  FC_MERGE_REFUSE = 0, /* a conflict refuses the merge */
  FC_MERGE_FIRST = 1, /* the first input (in the order given) holding the id wins */
  FC_MERGE_LAST = 2, /* the last input holding the id wins */
  FC_MERGE_STORE = 3 /* inputs prefer_index .. + prefer_count - 1 win where they hold the id;
                        other conflicts refuse */
} fc_merge_prefer;

/* A conflict: the entry of one id differs between two holders. Pointers valid during the call. */
typedef struct fc_merge_conflict {
  int db; /* FC_DB_AUDIO, FC_DB_TEXT or FC_DB_META */
  const char *key; /* the utterance id (meta: the name); not NUL-terminated */
  size_t key_len;
  long a, b; /* the two holders that differ: input index, or -1 for the output */
  long winner; /* the input whose entry is kept, -1 the output's own, -2 refused */
  const char *detail; /* one line: what differs, b's value first, e.g. "different audio: digest
                         1f3a... (B's source) vs 9c0e... (A's source)" */
} fc_merge_conflict;

typedef struct fc_merge_stats {
  uint64_t inputs;
  uint64_t total; /* distinct keys of the inputs (meta/format aside): the entries OUT holds from
                     them when the merge is done (counted first; 0 when stopped before the count
                     was done, nothing written) */
  uint64_t copied[FC_DB_COUNT]; /* entries written by this run, per db */
  uint64_t present[FC_DB_COUNT]; /* already in the output with these bytes (rerun, resume) */
  uint64_t duplicates[FC_DB_COUNT]; /* keys met in more than one input (stored once) */
  uint64_t conflicts; /* ids whose entries differ */
  uint64_t resolved; /* of those, resolved by the prefer option */
  uint64_t bad_records; /* damaged feat/tok record copies met (another copy may serve), and
                           damaged audio/text entries (as cache-verify finds them) */
  uint64_t dropped; /* feat/tok keys left out: no input holds a sound copy; and damaged entries */
  uint64_t bytes_copied; /* key + value bytes written by this run */
  uint64_t bytes_in; /* value bytes of every input entry and record met (the data merged) */
  uint64_t commits;
  double wall_seconds;
  /* featurize's failure records (docs/FORMAT.md "Failure record"), not counted above: written
   * into OUT (the latest of each id among the inputs), and deleted from OUT or left out because
   * an input stores the id under the record's config */
  uint64_t failures_copied;
  uint64_t failures_cleared;
  /* shards (meta shard/K/N) no input or the output records, of the sets the inputs record
   * some of; shards that two inputs record */
  uint64_t shards_missing;
  uint64_t shards_twice;
  /* token config names (tokens="chars") that stand for several configs, each held by some of
   * the stores only: vocabularies built per shard or per store */
  uint64_t token_configs_apart;
  /* The first pass (conflicts and the count, before anything is written): entries of the inputs
   * (and of the output) read so far, of first_total, every entry they hold (counted as the pass
   * begins). pass: the pass on_progress reports on, 1 the first, 2 the copy (and the failure
   * records after it); 0 before the first, while the stores' pages are checked. */
  uint64_t first_read, first_total;
  int pass;
  /* mel configs that a store holding utterances lacks (one preset featurized with different
   * configs in different shards: another featcache version, another --fmax): merged, each holds
   * features for some ids only */
  uint64_t mel_configs_apart;
  /* ids whose entry another process put into the output during the merge (after the first pass,
   * which found no conflict for them), differing from the inputs': the output's is kept, each said
   * through on_conflict (winner -1); a rerun's first pass meets them as conflicts. Only when
   * conflicts are refused (FC_MERGE_REFUSE): under a prefer option the inputs win over the
   * output, as they do in the first pass. */
  uint64_t changed_meanwhile;
  /* token configs that a store holding text entries lacks (shards tokenized with other
   * tokenizers): merged, each holds tokens for some ids only; token configs of one name built
   * apart are counted in token_configs_apart instead */
  uint64_t token_configs_held_apart;
  /* 1 when the merge was refused for a store's pages (FC_EFORMAT, before anything was opened or
   * written; why names the store and the page): an input with a page LMDB's reads could crash
   * on, or an existing output whose pages are damaged (a free list that would hand the merge's
   * writes a page a B-tree uses) */
  int pages_refused;
} fc_merge_stats;

typedef void (*fc_merge_conflict_fn)(const fc_merge_conflict *c, void *user);
/* A damaged record (input index, db, 16-byte key as 32 hex, reason), or a damaged entry (db
 * FC_DB_AUDIO or FC_DB_TEXT: the utterance id, quoted as names are, for the key). */
typedef void (*fc_merge_bad_fn)(long input, int db, const char *key_hex, const char *why,
                                void *user);
typedef void (*fc_merge_progress_fn)(const fc_merge_stats *st, void *user);

typedef struct fc_merge_opts {
  fc_merge_prefer prefer;
  size_t prefer_index; /* FC_MERGE_STORE: index of the winning input */
  size_t prefer_count; /* FC_MERGE_STORE: how many inputs from prefer_index win, e.g. the parts
                          of one split store, which hold disjoint ids [0: one] */
  uint32_t batch_records; /* puts per write transaction [1024] */
  uint64_t batch_bytes; /* value bytes per write transaction [4 MiB] */
  double sync_seconds; /* mdb_env_sync interval when the output is opened FC_STORE_NOSYNC (test
                          builds' FC_FAULT_NOSYNC=1); every commit is synced otherwise [5] */
  /* Committed bytes between two write-back passes on the output [16 MiB; 0: the default]: each
   * starts writing what was committed and drops what is on the disk from the page cache but the
   * last 4 passes' worth (libcache/core/merge/writeback.c; not on tmpfs). */
  uint64_t writeback_bytes;
  /* Set (e.g. by a signal handler) to stop: the current batch is committed and synced and
   * fc_merge_run returns FC_EINTR. May be NULL. */
  const volatile sig_atomic_t *stop;
  fc_merge_conflict_fn on_conflict; /* may be NULL */
  fc_merge_bad_fn on_bad_record; /* may be NULL */
  /* after each commit, and in the first pass as it begins, every 0.1 s or so and as it ends
   * (stats->pass says which); may be NULL */
  fc_merge_progress_fn on_progress;
  /* Shards (docs/cache-merge.md "Shards"): the shards the inputs record (featurize/tokenize
   * --shard; docs/FORMAT.md "Shards") must cover every id (the output's own counted as held), or
   * the merge is refused with FC_ECONFIG before anything is written (why names what is missing),
   * unless partial is set. Inputs that record none merge as they are. */
  int partial;
  /* a shard k of n that inputs a and b (indexes, a < b) both record; may be NULL */
  void (*on_shard_twice)(uint32_t k, uint32_t n, size_t a, size_t b, void *user);
  /* Several token configs of one name where a store holding one lacks another (a vocabulary
   * built in each shard): the merge would hold each for some ids only, and tokens="NAME" would
   * not say which. Called once per name with what differs (detail: "3 different 'chars' token
   * configs, in 3 stores (8640eacd12ac in s0, ...)"); refused: a store involved records shards,
   * and fc_merge_run returns FC_ECONFIG, nothing written. May be NULL. */
  void (*on_token_configs)(const char *name, const char *detail, int refused, void *user);
  /* The same where the cause is the output's: it holds token configs of the name that no input
   * holds (an older vocabulary, from a former run into it), and the inputs agree. Called instead
   * of on_token_configs (which is called when this is NULL), refused as it would be; out_hex:
   * the output's own configs, in_hex: the inputs' (32 hex each, ", " between). May be NULL. */
  void (*on_output_token_configs)(const char *name, const char *out_hex, const char *in_hex,
                                  int refused, void *user);
  /* Mel configs that a store holding utterances (audio entries) lacks, among the inputs and the
   * output (docs/cache-merge.md "Configs held apart"): called once before anything is written,
   * detail naming the configs, what they differ in and their stores ("2 mel configs that not
   * every store holds: 1a2b3c4d5e6f (hifigan) in s0, s1; 9f8e7d6c5b4a (no preset: fmax 7600
   * where 1a2b3c4d5e6f has 8000) in s2"), loader what the loader's features="NAME" then does.
   * Merged all the same, or refused with strict. May be NULL. */
  void (*on_mel_configs)(const char *detail, const char *loader, int refused, void *user);
  /* Refuse (FC_ECONFIG, nothing written) mel configs held apart, and token configs of other
   * names held apart (on_token_configs_held_apart), which are otherwise said and merged [0] */
  int strict;
  void *user;
  /* Inputs opened with MDB_NOLOCK: 1 always (stores on shared storage that nobody writes any
   * more: NFS, Lustre, docs/scale-out.md "File systems"), -1 never, 0 when an input's directory
   * or lock.mdb is not writable, or its mount is read-only [0]. */
  int nolock;
  /* As on_mel_configs, of token configs of other names that a store holding text entries lacks
   * (shards tokenized with other tokenizers: "2 token configs that not every store holds: ...",
   * loader: what tokens="NAME" then does); refused with strict. Not called for configs of one
   * name built apart (on_token_configs). May be NULL. */
  void (*on_token_configs_held_apart)(const char *detail, const char *loader, int refused,
                                      void *user);
  /* The converse of on_output_token_configs: every input holding a config of the name holds the
   * same ones (a vocabulary built again in every shard after the manifest grew), and the output
   * holds only some of them (a former merge's). Called instead of on_token_configs (which is
   * called when this is NULL), refused as it would be; out_hex: the configs the output holds,
   * in_hex: the inputs' that it lacks (32 hex each, ", " between). May be NULL. */
  void (*on_output_lacks_token_configs)(const char *name, const char *out_hex, const char *in_hex,
                                        int refused, void *user);
  /* As on_token_configs where the configs differ in more than their vocabulary: shards
   * tokenized with other options (--add-bos, --case fold in one of them). diff says what, of
   * each config against the one most stores hold ("288124152b4b: add_bos true where
   * 150988de11d1 has false"). Called instead of on_token_configs (which is called when this is
   * NULL), refused as it would be. May be NULL. */
  void (*on_token_configs_options)(const char *name, const char *detail, const char *diff,
                                   int refused, void *user);
  /* Several token configs of one name that every store holding any of them holds all of (each
   * shard tokenized again with another vocabulary, or configs made so on purpose): merged as
   * they are, each holding every id, but tokens="NAME" would not say which. Called once per
   * name before anything is written, with how many and their digests (32 hex each, ", "
   * between, at most 4, one an older tokenize made followed by " (made by an older tokenize,
   * tokenizer_version N: out of date)"). Never refused. May be NULL. */
  void (*on_token_configs_together)(const char *name, size_t configs, const char *hexes,
                                    void *user);
  /* As on_token_configs where some of the configs were made by an older tokenize (their
   * tokenizer_version below this build's: a shard tokenized before an upgrade), whose ids are
   * out of date: stale, their digests (32 hex each, ", " between); version, "tokenizer_version
   * 4, where this one's is 5". Called instead of on_token_configs_options and on_token_configs
   * (which are called when this is NULL), refused as they would be. May be NULL. */
  void (*on_token_configs_stale)(const char *name, const char *detail, const char *stale,
                                 const char *version, int refused, void *user);
} fc_merge_opts;

/* Defaults: refuse conflicts, the bounds in brackets, no callbacks. */
FC_API void fc_merge_opts_init(fc_merge_opts *o);

/* Merge the stores in directories inputs[0..n) into out_dir (created when missing; an existing
 * store there is merged into). Inputs are opened read-only (with MDB_NOLOCK as o->nolock says)
 * and never written. Returns 0 when every entry is in the output
 * (stats->bad_records may be > 0); FC_ECONFLICT when conflicts were found and not resolved
 * (nothing written; each was reported); FC_ECONFIG when the inputs record incomplete sets of
 * shards and o->partial is not set (nothing written; why names the missing shards), or when
 * shards hold token configs of one name built apart (on_token_configs; nothing written);
 * FC_EFORMAT with stats->pages_refused when an input has a page LMDB's reads could crash on, or
 * the existing output has damaged pages (each store's pages are checked as cache-verify's first
 * step checks them, before it is opened; nothing written; why names the store and the page);
 * FC_EINTR when *stop was set (committed work kept);
 * EINVAL (no inputs, the output is one of the inputs, prefer_index + prefer_count out of range:
 * reason in why); FC_ESPLIT when out_dir is a split store (said before any input is opened);
 * the errors of fc_store_open for a store that cannot be opened (why names it); a store error
 * when a write or commit fails (earlier batches stay committed). *stats may be NULL. */
FC_API int fc_merge_run(const char *out_dir, const char *const *inputs, size_t n,
                        const fc_merge_opts *o, fc_merge_stats *stats, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
