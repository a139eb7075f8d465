/* featcache — private parts of the tokenizers (libcache/tok_*.c, tokenizer.c, tokenize.c). */
#ifndef FC_TOK_INTERNAL_H
#define FC_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "featcache/fc_tokenize.h"
#include "formats/common/why.h"

/* ---- growable buffers ------------------------------------------------------------------------ */
typedef struct tok_buf {
  char *p;
  size_t len, cap;
} tok_buf;
int tok_buf_put(tok_buf *b, const void *s, size_t n); /* 0 or ENOMEM; keeps p NUL-terminated */

typedef struct tok_ids {
  int32_t *p;
  size_t len, cap;
  size_t unknown; /* bpe: characters mapped to unk, or dropped where there is no unk */
  char first_unknown[5]; /* the first of them (UTF-8) */
} tok_ids;
int tok_ids_push(tok_ids *v, int32_t id);

/* ---- string → int32 hash map (owns copies of its keys) --------------------------------------- */
typedef struct tok_map_slot {
  char *key;
  uint32_t len;
  int32_t val;
  uint64_t hash;
} tok_map_slot;
typedef struct tok_map {
  tok_map_slot *slots;
  size_t cap, count;
} tok_map;
/* Insert; returns 0, 1 when the key exists (*existing gets its value, the map is unchanged), ENOMEM. */
int tok_map_put(tok_map *m, const char *key, size_t len, int32_t val, int32_t *existing);
/* Lookup; returns 1 and *val when found, else 0. */
int tok_map_get(const tok_map *m, const char *key, size_t len, int32_t *val);
void tok_map_free(tok_map *m);

/* ---- (u32, u32) → (rank, id) map for BPE merges ---------------------------------------------- */
typedef struct tok_pair_slot {
  uint64_t key; /* (a << 32 | b) + 1; 0 = empty */
  int32_t rank, id;
} tok_pair_slot;
typedef struct tok_pairs {
  tok_pair_slot *slots;
  size_t cap, count;
} tok_pairs;
int tok_pairs_put(tok_pairs *m, uint32_t a, uint32_t b, int32_t rank, int32_t id);
int tok_pairs_get(const tok_pairs *m, uint32_t a, uint32_t b, int32_t *rank, int32_t *id);
void tok_pairs_free(tok_pairs *m);

/* ---- UTF-8 and Unicode classes --------------------------------------------------------------- */
/* Decode one code point at s (valid UTF-8 assumed, len > 0); returns its byte length. */
size_t tok_utf8_next(const char *s, size_t len, int32_t *cp);
size_t tok_utf8_encode(int32_t cp, char out[4]);
/* utf8proc_map with the result allocated by fc_malloc (the `alloc` fault site: utf8proc has no
 * allocator hook, and utf8proc_map's own malloc would be off the countdown): s[0, len)
 * decomposed, composed and re-encoded as UTF8PROC_* flags say, into *out (NUL-terminated, the
 * caller frees it) of *out_len bytes. 0, ENOMEM, or FC_EUTF8 (utf8proc refused the text). */
int tok_utf8_map(const char *s, size_t len, int flags, char **out, size_t *out_len);
int tok_is_space(int32_t cp); /* Unicode White_Space (Python's str.isspace for BMP text) */
int tok_is_punct(int32_t cp); /* general category P* */
/* Why normalization (nm) left nothing of text s (rc: fc_tok_normalize's error): what is true of it
 * as the manifest gives it ("text is only white space"...); NULL for an error not the text's
 * (ENOMEM: fc_strerror's). */
const char *tok_norm_why(int rc, const fc_tok_norm *nm, const char *s, size_t len);
int tok_is_letter(int32_t cp); /* L* */
int tok_is_number(int32_t cp); /* N* */
int tok_is_word(int32_t cp); /* regex \w: Alphabetic, M*, Nd, Pc, Join_Control */
#define tok_set_why fc_why /* formats/common/why.h */
/* A file in UTF-16 or UTF-32 rather than UTF-8 (what: "vocab", "tokenizer.json"): by its
 * byte-order mark, or a NUL byte in data[0, scan) (the ASCII of one saved without a mark). 1 with
 * why saying so and the iconv that converts it, else 0. */
int tok_wide_text(const char *data, size_t len, size_t scan, const char *what, char *why,
                  size_t why_len);

/* ---- vocab (chars, phonemes) ----------------------------------------------------------------- */
typedef struct tok_vocab {
  char **syms; /* id → symbol, NUL-terminated */
  size_t n;
  tok_map map; /* symbol → id (specials excluded from text matching: see match) */
  tok_map match; /* symbols that text may match */
  size_t max_len; /* longest matchable symbol, bytes */
  /* the distinct lengths of the matchable symbols, longest first: the lengths a match may have
   * (trying every length up to max_len made one long symbol cost its length squared a position) */
  size_t *lens, n_lens;
} tok_vocab;
/* Parse a vocab file's bytes. FC_ETOKENIZER with "LINE: reason" on an empty line, invalid UTF-8 or
 * a duplicate symbol. */
/* nfkc: each symbol is NFKC-normalized as the text is (two that become one are a duplicate). */
int tok_vocab_parse(tok_vocab *v, const char *data, size_t len, int nfkc, char *why,
                    size_t why_len);
/* Take ownership of syms[0..n) (malloc'd strings, array malloc'd). */
int tok_vocab_from_syms(tok_vocab *v, char **syms, size_t n, char *why, size_t why_len);
/* Exclude a symbol (a special) from text matching. */
/* Stop matching sym in text (specials are not text). 0, or ENOMEM with the vocab unchanged. */
int tok_vocab_unmatch(tok_vocab *v, const char *sym);
/* Greedy longest match of s[0..len) over the vocab; unknown code points → unk (or fail). */
int tok_vocab_map(const tok_vocab *v, const char *s, size_t len, int32_t unk, int strict,
                  tok_ids *out, size_t *unknown, char *why, size_t why_len);
void tok_vocab_free(tok_vocab *v);

/* ---- espeak-ng (serialized by one process-wide mutex) --------------------------------------- */
/* Initialize once and check that voice lang exists; *version gets espeak-ng's version string. */
/* canon (may be NULL): the voice's canonical name, as the config records it */
int tok_espeak_init(const char *lang, char *canon, size_t canon_len, const char **version,
                    char *why, size_t why_len);
/* Phoneme units of a whole line as espeak-ng reads it (phonemes separated, stress marks split off,
 * " " between words, each clause's terminating mark after it), each passed to cb. */
int tok_phonemize(const char *lang, const char *text, size_t len, fc_tok_symbol_fn cb, void *ud);
/* tok_phonemize in two steps: espeak-ng's reading of the line (the slow part) appended to out as
 * "PHONEMES\nMARK\n" per clause (MARK may be empty; neither holds a LF), 0 or an error (out then
 * holds nothing of it to use); then the units of such a reading, each passed to cb. The reading is
 * what tokenize keeps of a line between its vocab pass and its ids (tok_phcache). */
int tok_espeak_clauses(const char *lang, const char *text, size_t len, tok_buf *out);
void tok_phoneme_units(const char *clauses, size_t len, fc_tok_symbol_fn cb, void *ud);

/* tok_child.c: fn(arg, b) run in a forked child process, what it appended to its (empty) buffer b
 * appended to out. fn's return value, or FC_EPHONEMIZE when the child died before it finished
 * (*status: its wait status), or errno (pipe, fork), ENOMEM. FC_FAULT=espeak:N aborts the N-th
 * child before it runs fn. */
typedef int (*tok_contained_fn)(void *arg, tok_buf *b);
int tok_contained(tok_contained_fn fn, void *arg, tok_buf *out, int *status);
/* The marks on which espeak-ng ends a clause, kept as symbols at clause ends (UTF-8 string). */
extern const char tok_clause_marks[];

/* ---- a phonemes vocab pass's readings, kept for the run's ids (tok_phcache.c) ------------------ */
/* `tokenize -t phonemes --build-vocab` needs espeak-ng's reading of every line twice: for the vocab
 * (all of the corpus, before anything is stored), then for the ids. The vocab pass adds each line's
 * reading here, in the order it reads the lines; the run finds them in the same order (a subset of
 * them: a shard, a split store's part, lines already stored). Entries: the line's number in its
 * manifest, the digest of its text (as stored, before normalization: one tokenizer normalizes a
 * text one way), the reading. The first mem_bytes bytes of entries stay in memory, the rest goes
 * to an unnamed temporary file. A lookup that finds nothing (a line the vocab pass could not read,
 * a changed manifest) only costs espeak-ng again: the cache never changes what is stored. */
typedef struct tok_phcache tok_phcache;
/* dir: where the file goes (the store's directory; NULL: $TMPDIR, else /tmp), opened when the
 * first entry passes mem_bytes. 0 or ENOMEM. */
int tok_phcache_open(const char *dir, size_t mem_bytes, tok_phcache **out);
/* Append an entry (reading NULL: the line has none, e.g. espeak-ng failed on it). 0 or an error
 * (ENOMEM, the file's errno): the cache then holds the entries before it and takes no more. */
int tok_phcache_add(tok_phcache *c, uint64_t line, const fc_digest *text, const char *reading,
                    size_t len);
/* Read from the first entry again (each run over the cached lines starts here). */
void tok_phcache_rewind(tok_phcache *c);
/* The reading of the line with this number and text: the entries before it are passed over.
 * 1 and *reading (malloc'd, the caller frees it; NUL-terminated, *len bytes), or 0: none (no such
 * entry at the cursor, or an error reading the file, after which every lookup finds none). */
int tok_phcache_find(tok_phcache *c, uint64_t line, const fc_digest *text, char **reading,
                     size_t *len);
/* Entries and bytes added (kept in memory, in the file), for tests and measurements. */
void tok_phcache_stats(const tok_phcache *c, uint64_t *entries, uint64_t *mem_bytes,
                       uint64_t *file_bytes);
void tok_phcache_free(tok_phcache *c);
/* The bytes of entries kept in memory: FC_PHONEME_CACHE (a size, K/M/G; 0: every entry in the
 * file), 64 MiB without it; -1 when it is "off" (no cache: espeak-ng reads each line twice). */
long long tok_phcache_mem_bytes(void);

/* The tokenizer's side (tokenizer.c). A phonemes tokenizer's reading of a normalized text
 * (tok_espeak_clauses for its voice; other kinds: FC_ECONFIG), and its ids from such a reading as
 * fc_tokenizer_encode makes them from the text. */
int tok_tokenizer_reading(const fc_tokenizer *t, const char *norm, size_t len, tok_buf *out);
int tok_tokenizer_encode_reading(fc_tokenizer *t, const char *reading, size_t rlen, int32_t **ids,
                                 size_t *n, size_t *unknown, char *why, size_t why_len);
/* The cache a vocab pass left with the tokenizer (NULL: none); set replaces (and frees) it. */
tok_phcache *tok_tokenizer_phcache(const fc_tokenizer *t);
void tok_tokenizer_set_phcache(fc_tokenizer *t, tok_phcache *c);

/* ---- bpe ------------------------------------------------------------------------------------- */
typedef struct tok_bpe tok_bpe;
/* tok_bpe.c reads the tokenizer.json, tok_bpe_encode.c encodes (private parts: tok_bpe.h) */
int tok_bpe_load(const char *data, size_t len, tok_bpe **out, char *why, size_t why_len);
int tok_bpe_encode(const tok_bpe *b, const char *text, size_t len, tok_ids *out, char *why,
                   size_t why_len);
uint32_t tok_bpe_vocab_size(const tok_bpe *b);
void tok_bpe_free(tok_bpe *b);

/* ---- where a run's lines come from (tok_lines.c) ---------------------------------------------- */
/* Called with each batch of at most `batch` lines, in order: 0 to go on; TOK_STOP to stop (the
 * lines not handed over yet are counted, not processed); any other code stops at once. */
#define TOK_STOP 1
typedef int (*tok_batch_fn)(const fc_item *lines, size_t m, void *ctx);
/* fn over every line of the run, batch lines at a time: items, or o->manifest read as it goes
 * (memory: a batch of lines). *lines: how many there were (read to the end even after a stop or
 * an error of fn, so that the lines never begun are counted). Returns 0 (TOK_STOP included), fn's
 * error, or the manifest's (ENOMEM, errno codes), then in *input_err too (may be NULL). */
int tok_for_each_batch(const fc_item_list *items, const fc_tokenize_run_opts *o, size_t batch,
                       tok_batch_fn fn, void *ctx, uint64_t *lines, int *input_err);
/* A tok_batch_fn that only lets the lines be counted. */
int tok_count_only(const fc_item *lines, size_t m, void *ctx);

/* ---- the job (tokenize.c), for the split-store runner (tok_split.c) ---------------------------- */
/* fc_tokenize_run into one store, the readings a vocab pass left with t kept there (a split
 * store's next part reads them too). *stopped (may be NULL): 1 when the run was stopped on purpose
 * (the stop flag, --strict's bad line), so that the lines it never began are not started. */
int tok_run_store(fc_store *s, fc_tokenizer *t, const fc_item_list *items,
                  const fc_tokenize_run_opts *o, fc_tokenize_stats *st, int *stopped);
/* Finish a build_vocab tokenizer from items (fc_tokenizer_build_vocab_from); dir: where the
 * phonemes readings' file goes (NULL: $TMPDIR); by_shard: keep only the readings of o's shard. */
int tok_build_vocab_from(fc_tokenizer *t, const fc_item_list *items, const fc_tokenize_run_opts *o,
                         const char *dir, int by_shard);

/* ---- bulk loads (tok_bulk.c) ------------------------------------------------------------------ */
/* Runs of puts spilled to an unnamed temporary file in dir (the store's directory: the same file
 * system), then merged in key order into the store with FC_PUT_APPEND: for a table that is empty,
 * every page is written once. slot: 0 the tok puts, 1 the text puts (their runs merge apart). */
typedef struct tok_spill tok_spill;
/* A job whose store holds no text entries and no tok records yet is a bulk load: it writes each
 * batch as a sorted run and merges them at the end, records first, then the entries (so an entry
 * never names a missing record). *empty: whether s holds none; 0 or the store's error. */
int tok_store_is_empty(fc_store *s, int *empty);
int tok_spill_open(const char *dir, tok_spill **out);
void tok_spill_close(tok_spill *sp);
/* Append puts[0..n) as one run of slot, in key order (LMDB's), equal keys once; aux[i] (may be
 * NULL) goes with put i. */
int tok_spill_run(tok_spill *sp, int slot, const fc_put *puts, const uint32_t *aux, size_t n);
/* What a merge committed: distinct keys, the sum of their aux (TOK_AUX_NEW left out) and of their
 * values' dim0 (bytes 8..11 of a record) but for the keys it found stored already
 * (FC_PUT_NOOVERWRITE: another writer's), the puts dropped as a key seen before (another batch's
 * same text) or so found, and the puts whose aux has TOK_AUX_NEW (a text entry whose line made its
 * record: a merge that fails part-way counts the lines of the entries it committed). */
typedef struct tok_merged {
  uint64_t puts, aux, dim0, duplicates, marked;
} tok_merged;
#define TOK_AUX_NEW 0x80000000u
/* Merge slot's runs into db of s, one write transaction per batch_puts puts or batch_bytes, each
 * put with FC_PUT_APPEND and flags (FC_PUT_NOOVERWRITE: a key stored meanwhile is kept);
 * guard (may be NULL) is written with each (the config's FC_PUT_REQUIRE). */
int tok_spill_merge(tok_spill *sp, fc_store *s, int slot, int db, unsigned flags,
                    const fc_put *guard, size_t batch_puts, size_t batch_bytes, tok_merged *done);
/* Sort puts by key (LMDB's order). */
void tok_sort_puts(fc_put *puts, size_t n);

#endif
