/* featcache — text normalization, tokenizers (chars, phonemes, bpe) and the tokenize pipeline.
 *
 * A tokenizer is built from fc_tok_opts. Everything that changes the ids it produces
 * (normalization, tokenizer kind, vocab or tokenizer.json contents, language and espeak-ng
 * version, specials, dtype) goes into its canonical JSON config ("kind":"tokens"); the config
 * digest (XXH3-128 of that JSON) enters every tok key. See docs/tokenize.md.
 *
 * Threads: fc_tokenizer_encode may be called from many threads on one tokenizer. The phonemes
 * tokenizer calls libespeak-ng, which keeps global state and is not thread-safe: every espeak-ng
 * call in the process goes through one mutex, so phonemization runs one line at a time whatever
 * the thread count (normalization and id mapping still run in parallel). A line espeak-ng might
 * die on (a word of another script) is phonemized in a child process: fc_tokenizer_encode then
 * forks, and waits for it (FC_PHONEMIZE_TIMEOUT seconds at most; FC_PHONEMIZE_CHILD=none never
 * forks, =all for every line; docs/tokenize.md). */
#ifndef FC_TOKENIZE_H
#define FC_TOKENIZE_H

#include <stdio.h>
#include <string.h>

#include "fc_base.h"
#include "fc_manifest.h"
#include "fc_store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the ids some token config produces change: old tok records then stop matching. */
#define FC_TOKENIZER_VERSION 1
/* The bpe tokenizer's "tokenizer_version": 2 = as tokenizers does, a Lowercase normalizer maps each
 * character on its own (a word-final Σ is σ), an added token's lstrip/rstrip take Unicode white
 * space a code point at a time (1 looked at single bytes: it took UTF-8 continuation bytes 0x85
 * and 0xA0 for spaces and left multi-byte spaces), of a merge listed twice the later rank wins,
 * an added token with normalized true is matched in its normalized form, with byte_fallback an
 * unknown character's unk waits, as tokenizers', for the next character of the vocab, and a
 * single_word added token inside a word is dropped with no shorter one matched in its span.
 * 3 = an added token's id is the one tokenizers gives it (its content's id in the model's vocab,
 * else the next one), not the id written in the file. 4 = NFC, NFD, NFKC and NFKD leave the code
 * points assigned since Unicode 9.0 as they are, as tokenizers' tables (Unicode 9.0) do (3 normalized
 * them with utf8proc's Unicode 15: U+32FF, U+0898 and 243 others gave other ids), and byte_fallback
 * takes the bytes of the continuing_subword_prefix and end_of_word_suffix with a character's, as
 * tokenizers does (3 took the character's alone). */
#define FC_TOK_BPE_VERSION 4
/* The phonemes tokenizer's "tokenizer_version" (chars has FC_TOKENIZER_VERSION): 2 = the
 * whole line goes to espeak-ng and each clause's terminating mark is kept (1 cut the text at
 * punctuation marks first, so espeak-ng misread numbers and abbreviations); 3 = control characters
 * are spaces and a run of more than 100 bytes without white space is cut (espeak-ng 1.51 read 0x01
 * as one of its commands and overflowed its stack on some long words); 4 = characters on which
 * espeak-ng 1.51 reads freed memory in a line of another language (espeak_unsafe in
 * libcache/text/tokenize/tok_espeak.c: digits of some Indic scripts, old Hangul jamo, ...) are spaces;
 * 5 = espeak-ng's language-switch flags ("(en)" before a word it reads with English rules, "(ko)"
 * after) are dropped (4 kept them as symbols: phantom phonemes k, o, e, n under single characters). */
#define FC_TOK_PHONEMES_VERSION 5

/* The "tokenizer_version" this build writes into a config of tokenizer NAME ("chars", "phonemes",
 * "bpe"), 0 for a name it does not make. A stored config of a lower one was made by an older
 * tokenize: its ids are not the ones tokenize makes now (tokenize, cache-verify and the loader
 * say so; docs/tokenize.md "A second config of one name"). */
static inline int fc_tok_version_of(const char *name) {
  if (!name) return 0;
  if (!strcmp(name, "chars")) return FC_TOKENIZER_VERSION;
  if (!strcmp(name, "phonemes")) return FC_TOK_PHONEMES_VERSION;
  if (!strcmp(name, "bpe")) return FC_TOK_BPE_VERSION;
  return 0;
}

typedef enum fc_tok_kind { FC_TOK_CHARS = 0, FC_TOK_PHONEMES = 1, FC_TOK_BPE = 2 } fc_tok_kind;
typedef enum fc_tok_unicode { FC_UNICODE_NONE = 0, FC_UNICODE_NFKC = 1 } fc_tok_unicode;
typedef enum fc_tok_punct { FC_PUNCT_KEEP = 0, FC_PUNCT_REMOVE = 1 } fc_tok_punct;

/* Text normalization, applied in this order: Unicode NFKC, case folding (full Unicode folding,
 * as Python's str.casefold), punctuation removal (general category P*), whitespace collapse
 * (runs of Unicode white space → one U+0020, trimmed at both ends). */
typedef struct fc_tok_norm {
  fc_tok_unicode unicode; /* default NFKC (chars, phonemes), NONE (bpe) */
  int casefold; /* default 0 */
  fc_tok_punct punct; /* default KEEP */
  int collapse_space; /* default 1 (chars, phonemes), 0 (bpe) */
} fc_tok_norm;

typedef struct fc_tok_opts {
  fc_tok_kind kind;
  fc_tok_norm norm;
  int norm_set; /* 0: fc_tokenizer_create picks the kind's defaults for norm */
  const char *vocab_path; /* chars/phonemes: one symbol per line, id = line index (0-based) */
  int build_vocab; /* chars/phonemes: no vocab file; fc_tokenizer_build_vocab later */
  const char *tokenizer_json; /* bpe: a Hugging Face tokenizer.json */
  const char *lang; /* phonemes: espeak-ng voice, default "en-us" */
  const char *pad, *unk, *bos, *eos; /* special symbols; NULL: "<pad>" "<unk>" "<bos>" "<eos>" */
  int add_bos, add_eos; /* chars/phonemes: prepend bos / append eos ids */
  int dtype; /* 0 = auto (i16 when ids < 32768, u16 < 65536, else i32) */
  int strict; /* unknown symbols fail the line instead of mapping to unk */
} fc_tok_opts;

typedef struct fc_tokenizer fc_tokenizer;

/* Defaults for kind (norm included). */
FC_API void fc_tok_opts_init(fc_tok_opts *o, fc_tok_kind kind);
/* "chars", "phonemes", "bpe"; NULL for an unknown kind. Inverse returns -1 for unknown names. */
FC_API const char *fc_tok_kind_name(fc_tok_kind k);
FC_API int fc_tok_kind_from_name(const char *name);

/* Build a tokenizer: reads the vocab / tokenizer.json, initializes espeak-ng for phonemes.
 * Errors: FC_ECONFIG (bad options, named by their fc_tok_opts fields: "chars takes exactly one of
 * vocab_path and build_vocab"), FC_ETOKENIZER (vocab or tokenizer.json invalid: duplicate
 * symbol, unsupported model...), errno codes; why gets "path:line: reason" (path quoted as
 * fc_quote_name quotes names when it holds a control character, a quote, a backslash or a byte
 * that is not UTF-8). On success why is
 * empty, or holds a warning: "path: N symbols can never match the normalized text ...", the
 * chars vocab symbols whose ids are never produced (an upper-case letter under case folding:
 * the vocab is kept as written, as a Hugging Face tokenizer keeps its vocab), or a phonemes
 * vocab's clause marks under punct remove; before it, on a line of its own, a note that espeak-ng
 * has no voice for lang and reads it with its voice for a related language (en-gb for en-zz). With
 * build_vocab the
 * tokenizer is not ready until fc_tokenizer_build_vocab. *out: caller frees with fc_tokenizer_free. */
FC_API int fc_tokenizer_create(const fc_tok_opts *o, fc_tokenizer **out, char *why, size_t why_len);
FC_API void fc_tokenizer_free(fc_tokenizer *t);

/* Normalize UTF-8 text with the tokenizer's normalization. *out is malloc'd (NUL-terminated,
 * caller frees). Returns 0, FC_EUTF8 (invalid input), FC_EEMPTY (nothing left), ENOMEM. */
FC_API int fc_tok_normalize(const fc_tok_norm *nm, const char *text, size_t len, char **out,
                            size_t *out_len);

/* The symbols (units) of one text before id mapping: chars → code points, phonemes → espeak-ng
 * phonemes, stress marks, word boundaries (" ") and punctuation. Used to build a vocab. cb is
 * called once per symbol (not NUL-terminated). FC_ECONFIG for bpe. Thread-safe. */
typedef void (*fc_tok_symbol_fn)(const char *sym, size_t len, void *ud);
FC_API int fc_tokenizer_symbols(fc_tokenizer *t, const char *norm, size_t len, fc_tok_symbol_fn cb,
                                void *ud);

/* Finish a build_vocab tokenizer: vocab = the specials (pad, unk, bos, eos: ids 0..3), then the
 * distinct symbols in byte order (so the vocab does not depend on the order of the corpus).
 * Symbols holding a line break cannot be written in a vocab file and are left out (they map to
 * unk). syms: n symbols, each NUL-terminated. FC_ECONFIG when one of syms is a special symbol
 * (fc_tok_opts pad/unk/bos/eos, e.g. a pad of "a" over text holding 'a'): the text's would never
 * be produced (all <unk>); nothing is built. */
FC_API int fc_tokenizer_build_vocab(fc_tokenizer *t, const char *const *syms, size_t n);

/* Token ids of already normalized text (fc_tok_normalize with fc_tokenizer_norm). *ids is
 * malloc'd (caller frees), *n its length (0 is possible for bpe on white space only).
 * *unknown receives the number of symbols mapped to unk (bpe: characters, and those dropped
 * where the tokenizer.json has no unk_token; may be NULL). Returns 0, FC_EUNKNOWN (a symbol not
 * in the vocab under strict or, chars and phonemes, without an unk symbol; why names it),
 * FC_EBADSTATE (build_vocab tokenizer not finished), ENOMEM. Thread-safe. */
FC_API int fc_tokenizer_encode(fc_tokenizer *t, const char *norm, size_t len, int32_t **ids,
                               size_t *n, size_t *unknown, char *why, size_t why_len);

/* Accessors; pointers valid until fc_tokenizer_free. */
FC_API const fc_tok_norm *fc_tokenizer_norm(const fc_tokenizer *t);
/* Canonical JSON of the config (NUL-terminated) and its digest. FC_EBADSTATE before the vocab
 * of a build_vocab tokenizer is built. */
FC_API int fc_tokenizer_config(const fc_tokenizer *t, const char **json, size_t *len,
                               fc_digest *digest);
FC_API fc_tok_kind fc_tokenizer_kind(const fc_tokenizer *t);
/* Number of ids (largest id + 1) and the record dtype chosen. */
FC_API uint32_t fc_tokenizer_vocab_size(const fc_tokenizer *t);
FC_API int fc_tokenizer_dtype(const fc_tokenizer *t);
/* chars/phonemes: the vocab as a vocab file (one symbol per line, "\n" after each). bpe: the
 * tokenizer.json bytes. */
FC_API int fc_tokenizer_vocab_text(const fc_tokenizer *t, const char **text, size_t *len);
/* Write that text to `path`, whole or not at all (fc_outfile.h: a temporary renamed over the
 * target, which a failure leaves as it was). Returns 0, FC_EBADSTATE before the vocab is built,
 * or the errno value of the step that failed (ENOSPC, EACCES, ...). */
FC_API int fc_tokenizer_export_vocab(const fc_tokenizer *t, const char *path);

/* ---- the pipeline: manifest items → text and tok dbs ----------------------------------------- */
typedef struct fc_tokenize_stats {
  uint64_t lines; /* items seen (during the run: a list's length; 0 for a manifest, read as it
                     goes) */
  uint64_t processed; /* tok records written this run */
  /* already stored under this config: before the run, by an earlier line of it, or by another
   * writer between the run's lookup and its write (a concurrent tokenize) */
  uint64_t skipped_existing;
  uint64_t failed; /* bad lines (reported through the callback), and after an error that ends the
                      run (a failed write, out of memory) the lines it left unstored */
  uint64_t tokens; /* tokens in the records written this run */
  uint64_t unknown; /* symbols mapped to unk, in the records written this run */
  /* Lines never stored because the run was stopped on purpose (the stop flag, --strict). Always:
   * processed + skipped_existing + failed + not_started + not_stored = lines. */
  uint64_t not_started;
  /* Text entries written this run: a new id's, or one rewritten for a changed transcript. A line
   * counted in skipped_existing (its record was stored already) may have had its entry written. */
  uint64_t entries;
  uint64_t not_stored; /* check_only: lines whose record or text entry is not in the store */
} fc_tokenize_stats;

/* Called for every failed line: item (its line, id), the error and a one-line reason. */
typedef void (*fc_tokenize_report_fn)(const fc_item *item, int err, const char *why, void *ud);

/* What a manifest line may hold beside its text (fc_tokenize_run_opts.max_text_bytes). */
#define FC_TOKENIZE_LINE_SLACK 65536

typedef struct fc_tokenize_run_opts {
  int threads; /* OpenMP threads, 0 = default */
  size_t batch; /* lines per write transaction, 0 = 4096 */
  /* longer texts fail the line (FC_ETOOLONG); 0 = 65536. A manifest line longer than this plus
   * FC_TOKENIZE_LINE_SLACK (the id, the other columns) fails without being read into memory
   * (fc_manifest_opts.max_line_bytes, set so when manifest_opts leaves it 0). */
  size_t max_text_bytes;
  int strict; /* stop at the first bad line (its error is returned) */
  volatile const int *stop; /* checked between batches: nonzero → FC_EINTR after committing */
  fc_tokenize_report_fn report;
  void *report_ud;
  /* Called after each committed batch (may be NULL), e.g. for a progress line; in a bulk load
   * after each batch written to its runs (counted as the merge at the end will store it), and once
   * more after the merge with the final counts. */
  void (*progress)(const fc_tokenize_stats *stats, void *ud);
  void *progress_ud;
  /* 0: a job of more than one batch into a store that holds no text entries and no token
   * records yet is a bulk load: its batches go to sorted runs in a temporary file beside the store
   * and are appended to the store's tables in key order at the end (each page written once; a
   * job killed before then leaves the store as it was). -1: never; every batch is committed. */
  int bulk;
  /* The lines of this manifest file, read as the run goes (fc_manifest_opts.on_item, with
   * manifest_opts, may be NULL; the items argument is then ignored and may be NULL): memory is a
   * batch's, not the manifest's. A build_vocab tokenizer reads it twice. Not stdin ("-"), not for
   * split stores (fc_tokenize_run_split refuses it: FC_ECONFIG). */
  const char *manifest;
  const fc_manifest_opts *manifest_opts;
  /* fc_tokenizer_build_vocab_from for a run over one shard (shard_n > 0): the vocab is the whole
   * corpus's, but the phonemes readings kept for the run are those of shard shard_k's lines
   * (fc_shard_of their id; an item without one: shard 0, as fc_item_list_shard keeps it) only, so
   * that memory and the file hold the shard's. Ignored elsewhere. */
  uint32_t shard_k, shard_n;
  /* Look, write nothing: each line is found stored (skipped_existing: its record and its id's
   * text entry with this text are there), fails as in a run (the line itself: UTF-8, empty, too
   * long; not its tokenization, which a check does not do), or is not stored (not_stored, and
   * report_not_stored when set, with report_ud). No config, record or entry is written. The store
   * may be opened FC_STORE_RDONLY: a store this user may only read is checked this way
   * (docs/tokenize.md "A store you may only read"). */
  int check_only;
  void (*report_not_stored)(const fc_item *item, void *ud);
} fc_tokenize_run_opts;

/* Tokenize items into store s: per item, the text entry (id → text digest ‖ text as read: the
 * manifest's chosen column, UTF-8 checked, a BOM and trailing CR removed) and the tok record
 * (key fc_record_key(text digest, config digest)). Items whose record and text entry exist are
 * skipped before any tokenization. Writes meta cfg/<hex> and vocab/<hex> (chars, phonemes) or
 * tokenizer/<hex> (bpe). A build_vocab tokenizer is finished here from the whole corpus.
 * Returns 0 when every line was processed or skipped, 0 with stats->failed > 0 when some lines
 * failed, FC_EINTR when *stop was seen (committed work kept), the first line's error under
 * strict, or a store error. */
FC_API int fc_tokenize_run(fc_store *s, fc_tokenizer *t, const fc_item_list *items,
                           const fc_tokenize_run_opts *o, fc_tokenize_stats *stats);

/* fc_tokenize_run into a split store (fc_store.h, fc_store_open_split): the n_parts parts, each
 * item written to part fc_store_part_of_id(id, n_parts) (an item without an id: part 0), one part after
 * the other. A build_vocab tokenizer is finished from all the items first, so every part holds the
 * same config. stats and progress count all parts together. n_parts 1: fc_tokenize_run. */
FC_API int fc_tokenize_run_split(fc_store *const *parts, unsigned n_parts, fc_tokenizer *t,
                                 const fc_item_list *items, const fc_tokenize_run_opts *o,
                                 fc_tokenize_stats *stats);

/* Finish a build_vocab tokenizer from items as fc_tokenize_run would (bad lines left out), without
 * storing anything: for a run over one shard of a corpus (fc_item_list_shard) whose vocab must be
 * that of the whole corpus. o: threads and max_text_bytes are used (may be NULL). Phonemes: each
 * line's espeak-ng reading is kept with t (64 MiB in memory, the rest in an unnamed file in
 * $TMPDIR; docs/tokenize.md) so that the next fc_tokenize_run or fc_tokenize_run_split over these
 * lines, or a subset of them in the same order, makes their ids without espeak-ng; that run, or
 * fc_tokenizer_free, releases them. Returns 0, FC_ECONFIG (not a build_vocab tokenizer, or already
 * finished, or a special symbol is a symbol of the text: fc_tokenizer_build_vocab), ENOMEM. */
FC_API int fc_tokenizer_build_vocab_from(fc_tokenizer *t, const fc_item_list *items,
                                         const fc_tokenize_run_opts *o);

#ifdef __cplusplus
}
#endif
#endif
