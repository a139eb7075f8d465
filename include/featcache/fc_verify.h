/* featcache — verifying a store before a training run (docs/cache-verify.md).
 *
 * fc_verify_store opens a store read-only and checks, in this order:
 *   1. the environment: data.mdb at least as long as its last committed page (a truncated file is
 *      reported and nothing else is read: touching a page past the end of the file would SIGBUS),
 *      meta/format, stale reader slots, map usage;
 *   2. meta: every cfg/<hex> hashes to its key and parses (kind "mel" or "tokens");
 *   3. entries: every audio and text entry decodes; every audio entry has a feat record for each
 *      expected mel config whose header has that config, its dtype, n_mels and the frame count the
 *      config gives for the entry's sample count; every text entry has its tok record; with
 *      sources / rehash the source files are compared with the entry;
 *   4. records: every feat and tok record in key order (parallel over key ranges, one read
 *      transaction per thread): fc_record_verify (magic, sizes, both checksums), a config digest
 *      the store knows, the value inside the used part of the map, keys of 16 bytes in strictly
 *      increasing order, with finite no NaN/Inf; records no entry refers to are orphans (warning);
 *   5. a manifest: every id has an audio entry (and a text entry and tok records with tokens);
 *   6. indexes (docs/FORMAT.md "Index"): each entry of a config's index names the record its id's
 *      entry gives under that config, a record the store holds, with the index's dim0 (errors);
 *      ids whose record is there but not in the index are counted (readers look them up).
 * Every problem is a finding naming the db, the key and, when known, the utterance id.
 *
 * Memory: 32 bytes per audio/text entry plus 24 bytes per (entry, stored config) pair, plus the
 * findings and the manifest when given; the records themselves are read through the map. */
#ifndef FC_VERIFY_H
#define FC_VERIFY_H

#include "fc_base.h"
#include "fc_manifest.h"
#include "fc_store.h"

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A recorded failure (FC_VERIFY_FAILED) is an utterance featurize could not store and said so in
 * the store's `failed` db (docs/FORMAT.md "Failure record"): neither damage nor an unexplained gap.
 * The tool fails on it only under --strict, as on warnings. */
typedef enum fc_verify_severity {
  FC_VERIFY_ERROR = 1,
  FC_VERIFY_WARNING = 2,
  FC_VERIFY_FAILED = 3
} fc_verify_severity;

/* One problem. Strings are owned by the report (valid until fc_verify_report_free). key and id
 * are printable copies: a byte that is a control character or a backslash, and any byte above
 * 0x7F of a name that is not UTF-8, is written \xNN (a tab is \x09, a backslash \x5c). */
typedef struct fc_verify_finding {
  int severity; /* fc_verify_severity */
  const char *db; /* "meta", "audio", "text", "feat", "tok", "failed", "manifest", "index" (a
                          config's index), or "env" for data.mdb/lock.mdb */
  const char *key; /* feat/tok: 32 hex chars of the key; audio/text: the id; meta: the name;
                          env: the file name; NULL when the problem has no single key */
  const char *id; /* utterance id the problem concerns, NULL when unknown */
  const char *problem; /* one line, no trailing newline */
} fc_verify_finding;

typedef struct fc_verify_report {
  fc_verify_finding *findings; /* errors first, then warnings, then recorded failures; each by db,
                                  key, problem */
  size_t count;
  uint64_t errors, warnings; /* all seen (warnings beyond max_warnings are counted, not kept) */
  int stopped; /* 1 when max_errors was reached and checking stopped early */
  int opened; /* 1 when the store could be opened and its records were read */
  /* facts */
  uint64_t records_checked; /* feat + tok records checked */
  uint64_t bytes_checked; /* their value bytes (headers + payloads) */
  uint64_t entries[5]; /* per fc_db: meta, audio, text, feat, tok (fc_verify_dataset: its
                         distinct audio and text ids, one held by several stores counted once) */
  uint64_t mel_configs, token_configs;
  uint64_t manifest_items; /* ids checked against the manifest */
  uint64_t data_size; /* bytes of data.mdb */
  uint64_t map_size, map_used; /* bytes */
  uint32_t page_size, max_readers, num_readers, stale_readers;
  int nolock; /* opened with MDB_NOLOCK (read-only media) */
  int threads; /* threads used for the record scan */
  double wall_seconds;
  uint32_t stale_cleared; /* stale reader slots cleared (opts.clear_stale_readers) */
  uint64_t indexed_configs; /* configs with an index (docs/FORMAT.md "Index"), checked */
  uint64_t index_entries; /* their index entries */
  uint64_t index_missing; /* ids with a record under an indexed config that its index lacks
                              (readers look them up: no finding) */
  /* Failure records (FC_VERIFY_FAILED findings, one per record; at most max_warnings kept):
   * every one in the store, and those that explain a manifest id with no audio entry or an
   * expected feature record that is missing — gaps that are then no error. */
  uint64_t failures;
  uint64_t failures_explaining; /* of them, those that explain a gap */
  /* With a manifest: stored utterances (audio entries; over several stores, distinct ids) whose
   * id it lacks — another split's, or dropped from it since; no finding (the loader reads them
   * unless told the manifest, cache-prune --manifest removes them) */
  uint64_t beyond_manifest;
  /* 1 when a page of a data tree is malformed so that LMDB's reads of it could run off it (a node
   * offset, key or value size past its page; a node flag no featcache db has): the run stopped
   * there (one error says where), and any reader of the store (the loader, cache-merge, the
   * writing tools) could crash on it */
  int unsafe_pages;
  /* Without a manifest, in a store that holds both kinds of configs (or a split store's part):
   * utterances with a text entry and no audio entry (and no failure record), and with an audio
   * entry and no text entry; a loader reading features and tokens leaves them out. No finding
   * (a corpus may hold text-only lines by design); *_first: the first such id (printable, as
   * findings' ids; owned by the report), NULL when none. */
  uint64_t text_only, audio_only;
  const char *text_only_first, *audio_only_first;
} fc_verify_report;

/* Called from one thread now and then (at most ~10 times a second) while records are checked. */
typedef void (*fc_verify_progress_fn)(uint64_t bytes_done, uint64_t bytes_total, void *ud);

typedef struct fc_verify_opts {
  int threads; /* OpenMP threads for the entry and record checks; 0 = OpenMP's default */
  int finite; /* scan f32/f16/bf16 payloads for NaN and Inf */
  int sources; /* compare each audio source file's size and mtime with its entry */
  int rehash; /* recompute each audio source's digest from the file's bytes */
  /* Mel configs every audio entry must have a feat record for: preset names ("hifigan": this
   * build's digest of that preset; "kaldi" also the preset stored in another dtype), a preset's
   * listed name ("kaldi (mq)": the preset in that dtype) or 32-hex config digests. None given:
   * every mel config stored. */
  const char *const *expect_mel;
  size_t n_expect_mel;
  /* Token configs every text entry must have a tok record for: 32-hex digests, or a name matched
   * against a stored token config's "tokenizer", "name" or "preset" field. None given: every token
   * config stored. expect_tokens_given also makes manifest ids need a text entry and tok record,
   * and a text entry that holds the text the manifest line gives, when it gives one. */
  const char *const *expect_tok;
  size_t n_expect_tok;
  int expect_tokens_given;
  /* ids that must be present (items with err != 0 are skipped); manifest ids with audio entries
   * in a store that holds no mel config (every one dropped), or with text entries and no token
   * config under expect_tokens_given, are an error too */
  const fc_item_list *manifest;
  uint64_t max_errors; /* stop checking after this many errors; 0 = no limit */
  uint64_t max_warnings; /* keep at most this many warnings in the report; 0 = 10000 */
  int nolock; /* -1 never, 1 always, 0 auto: when the store's directory or
                                   lock.mdb is not writable, or lock.mdb does not exist */
  volatile const int *stop; /* nonzero → stop soon and return FC_EINTR */
  fc_verify_progress_fn progress;
  void *progress_ud;
  int clear_stale_readers; /* clear reader slots of dead processes (mdb_reader_check): the
                                   only write cache-verify makes, to lock.mdb, never data.mdb */
  /* sources / rehash: the directory the corpus lives in now. A stored source path P is looked for
   * at source_root/T for the longest tail T of P (P's last components) that exists there; the
   * stored path itself is not tried. NULL: the stored path as it is. */
  const char *source_root;
  /* Only the first step: the environment and its pages (the meta pages, every page the B-trees
   * use, the free list against them); no record, entry or config is read. What cache-merge checks
   * of each input first (report.unsafe_pages). 2: of the pages, the meta pages and the free list
   * alone (each page number in the file and named once, its own tree's pages sound), no data
   * tree walked: a page the free list names that a tree uses is not found, but the cost is the
   * free list's few pages whatever the store's size (what featurize and tokenize check before
   * writing by default). 3: as 1, but each value's overflow pages counted from its size, its
   * first page not read (a page per record fewer: what a reader's check needs, the Loader's and
   * cache-merge's of its inputs): a first page whose own page count or number is wrong is not
   * seen (reads do not use them; a write that frees the value does). 2 and 3 read their pages without the
   * disk's read-ahead around each. With any of them, a data.mdb that is empty, no LMDB
   * environment, or truncated is no finding (no page to check): the caller's open of the store
   * says what it is (featurize, tokenize and cache-merge take an empty one as new). */
  int pages_only;
  /* 1: the store is one of several read as one dataset (fc_verify_dataset beside it; a split
   * store's parts). One that holds no audio (text) entries — a shard no id hashed to, a part no
   * id was routed to — needs no mel (token) config (the stores with entries hold the dataset's),
   * so an expected one it lacks is no finding; a store with such entries is held to it as alone.
   * A split store's part (meta part K/N) is taken as one of a dataset whatever this says. */
  int in_dataset;
} fc_verify_opts;

/* Defaults: everything 0 / NULL (auto threads, no optional checks, every stored config). Inline:
 * no symbol. */
static inline void fc_verify_opts_init(fc_verify_opts *o) { memset(o, 0, sizeof *o); }

/* Verify the store in directory dir. Given a split store's directory (docs/FORMAT.md "Split
 * stores"), checks the split store as a whole instead: every part-K for K < N exists and no part-K
 * with K >= N lies beside them (its records would be hidden from every reader): findings in db
 * "env", keyed by the part's name; its parts are verified by giving each (fc_store_expand), which
 * also checks each part's meta part "K/N" against its directory (part-K) and the marker's N. The store is opened with FC_STORE_RDONLY (and NOLOCK per
 * o->nolock): data.mdb is never written (lock.mdb only with o->clear_stale_readers). Returns 0 when the checks ran — the findings are in *out,
 * and out->errors == 0 means the store is sound — or an error when they could not run: ENOENT,
 * ENOTDIR, FC_ENOSTORE, EACCES (no such directory / not one / a directory with no store in it /
 * not readable), FC_ECONFIG (an expected config named wrongly,
 * with a reason in why), FC_EINTR (o->stop was seen; *out holds what was found so far), ENOMEM.
 * A store that exists but is damaged (truncated, not a featcache store, unknown format version)
 * is a finding, not an error return. *out is always initialized; free it with
 * fc_verify_report_free, whatever the return value. */
FC_API int fc_verify_store(const char *dir, const fc_verify_opts *o, fc_verify_report *out,
                           char *why, size_t why_len);

FC_API void fc_verify_report_free(fc_verify_report *r);

/* The checks of several stores read as one dataset (the shards of one corpus), to run beside
 * fc_verify_store on each: an id held by several stores must have the same audio (text) entry in
 * each; every store that holds audio (text) entries holds the same mel (token) configs; and, with
 * o->manifest, every manifest id has an audio entry in some store (and a text entry with
 * expect_tokens_given, holding the manifest line's text), and the stores hold configs of a kind
 * whose entries manifest ids have. Findings name the db ("audio", "text", "meta", "manifest"), the id, and
 * the stores. Uses o->manifest, expect_tokens_given, max_errors, nolock and stop; memory: a few
 * words per store plus the manifest's ids (the stores' keys are merged in order, not loaded).
 * Returns 0 when the checks ran (out->errors == 0: the stores form one sound dataset), the errors
 * of fc_store_open (why names the store), FC_EINTR, ENOMEM. Free *out with fc_verify_report_free. */
FC_API int fc_verify_dataset(const char *const *dirs, size_t n, const fc_verify_opts *o,
                             fc_verify_report *out, char *why, size_t why_len);

/* Check a whole record value as fc_verify_store does for each record: fc_record_verify, the
 * reserved header flags 0, then with finite the NaN/Inf scan. Returns 0, FC_EFORMAT or FC_ECHECKSUM with a one-line reason in why
 * (may be NULL); a non-finite value is FC_EFORMAT, "payload holds NaN at element N (frame F, bin B)". */
FC_API int fc_verify_record(const void *val, size_t len, int finite, char *why, size_t why_len);

/* ---- pruning: what no entry refers to, and the utterances a manifest no longer has ---------- */
typedef struct fc_prune_opts {
  /* Ids to keep (e.g. a manifest's; any order, NUL-terminated): every audio and text entry and
   * failure record of an id not among them is removed too, and then the records only they
   * referred to. NULL: entries stay, only orphan records go. */
  const char *const *keep;
  size_t n_keep;
  int dry_run; /* find and count, change nothing (any open of the store will do) */
  uint32_t batch; /* deletes per write transaction; 0 = 4096 */
  volatile const int *stop; /* nonzero → stop between transactions and return FC_EINTR */
  /* then replace data.mdb by a compact copy (docs/FORMAT.md "Compaction"): refused (EBUSY, the
   * prune done, nothing compacted) while another process has the store open; after it s maps the
   * replaced file and refuses writes: close it. With dry_run: bytes_after says about how large */
  int compact;
  /* also read every record's payload (the whole store, as fc_verify_store does) and remove the
   * records that fail fc_verify_record (a flipped bit, a torn page) though an entry refers to
   * them; each id that referred to one leaves that config's index with it, so the store then
   * lacks the id's record (cache-verify: missing), and featurize or tokenize run again store it
   * anew. Orphans are removed as orphans whether damaged or not. */
  int damaged;
  /* With damaged: called from the calling thread about every 0.1 s while the records are read
   * (the bytes of their values read so far, and data.mdb's bytes in use), and once at the end. */
  fc_verify_progress_fn progress;
  void *progress_ud;
} fc_prune_opts;

typedef struct fc_prune_report {
  uint64_t feat_records, feat_bytes; /* orphan feature records removed (or, dry, found) */
  uint64_t tok_records, tok_bytes; /* orphan token records */
  uint64_t ids; /* ids not kept that had an audio or text entry or a failure record */
  uint64_t audio_entries, text_entries, failures, entry_bytes; /* theirs, removed */
  uint64_t kept_ids; /* ids with an entry that stay (a run stopped or failed part-way: those
                       * in the store then, the ids it had yet to remove too) */
  uint64_t transactions; /* write transactions committed */
  uint64_t bytes_before, bytes_after; /* with compact: data.mdb's size before and after (0: not
                                         compacted; with dry_run, what the copy would be) */
  uint64_t damaged_feat, damaged_tok, damaged_bytes; /* with damaged: records removed (found) */
  uint64_t damaged_ids; /* the ids that referred to them: their records are to be stored again */
} fc_prune_report;

/* Remove from s the records no entry refers to — the orphans of fc_verify_store's step 4, found
 * by the same code (every entry's digest under every config the store holds; a record of no
 * config held is an orphan too) — and, with o->keep, first the entries, failure records and
 * index entries of the ids it does not hold. s must be open for writing with FC_STORE_EXCLUSIVE
 * (else EINVAL; read-only is fine with dry_run), so no writer that could be about to refer to an
 * orphan runs. Entries go before records, in write transactions of o->batch deletes, each
 * committed: a stop or a crash at any point leaves a store that verifies, with at most orphan
 * records left, and running it again finishes. Refused, nothing changed, with a reason in why:
 * FC_EFORMAT when meta or an entry is damaged (its records would look like orphans: cache-verify
 * names it), or a page a write reads (LMDB's free list: what was committed before stays),
 * FC_ECONFLICT when a commit of another process came between the snapshot the orphans
 * were found in and a transaction of ours (a writer that took no lock) — run it again. With
 * o->compact, after the removals: EBUSY when another process has the store open (nothing
 * compacted), or the copy's errors (the old data.mdb stays), each with a reason in why. Other
 * returns: FC_EINTR, ENOMEM, LMDB and errno codes. *r holds what was done (or found) so far.
 * With o->damaged, then the damaged records an entry refers to, each in a transaction with its
 * ids' index entries (a stop or a crash leaves the indexes naming only stored records).
 * Memory: that of fc_verify_store's entries and pairs, plus 24 bytes per orphan and the ids not
 * kept (with o->damaged, 48 bytes per damaged record and the ids referring to them). The pages freed stay in data.mdb, reused by later writes. */
FC_API int fc_store_prune(fc_store *s, const fc_prune_opts *o, fc_prune_report *r, char *why,
                          size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
