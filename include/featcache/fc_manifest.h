/* featcache — manifests: LJSpeech csv, Kaldi wav.scp, JSON lines, plain path lists, TSV.
 *
 * A manifest is read into a list of items (id, audio path resolved against the audio dir, text).
 * Malformed lines are reported one by one through the item list (an item with err != 0 and a
 * reason), never silently dropped, so tools can say "featurize: FILE:LINE: reason" and go on.
 * Lines of any length are read whole; "\r\n" endings, a UTF-8 BOM at the start of the file and
 * blank (whitespace-only) lines are skipped silently. Every line must be valid UTF-8 without NUL.
 * Relative audio paths resolve against opts->audio_dir, else wavs/ beside an LJSpeech manifest,
 * else the manifest's own directory ("." for stdin: the path is kept as written). */
#ifndef FC_MANIFEST_H
#define FC_MANIFEST_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fc_manifest_format {
  FC_MANIFEST_AUTO = 0,
  FC_MANIFEST_LJSPEECH = 1, /* id|text[|normalized] — audio at <audio_dir>/<id>.wav */
  FC_MANIFEST_KALDI = 2, /* wav.scp: id path */
  FC_MANIFEST_JSONL = 3, /* {"audio_filepath": ..., "text": ..., "id": ...} per line */
  FC_MANIFEST_LIST = 4, /* one audio path per line; id = file name without dir and extension */
  FC_MANIFEST_TSV = 5 /* id<TAB>text (tokenize) */
} fc_manifest_format;

/* For an item with err != 0 any of the strings may be NULL (id is set when it could be read). */
typedef struct fc_item {
  char *id; /* utterance id (NUL-terminated UTF-8, checked by fc_id_check) */
  char *path; /* audio path, resolved; NULL when the manifest has none (tsv) */
  char *text; /* the chosen text column; NULL when none */
  char *text_raw; /* LJSpeech column 2 (raw) when present, else NULL */
  char *text_norm; /* LJSpeech column 3 (normalized) when present, else NULL */
  size_t line; /* 1-based line number in the manifest or stream, 0 for paths from arguments */
  int err; /* 0, or FC_EMANIFEST (missing column, bad JSON, NUL byte, piped wav.scp...),
                      FC_EUTF8 (line or id not UTF-8), FC_EDUPLICATE (2nd and later use of an id),
                      FC_EFORMAT (id over FC_ID_MAX bytes or with a control character) */
  char *why; /* reason when err != 0 */
  /* JSON lines: NeMo's "offset" and "duration" (seconds, numbers) where the line gives them, else
   * 0 ("duration": 0 is none; null is none); one that is no number, or is negative, fails the line
   * (FC_EMANIFEST). They cut a segment out of the file; featurize stores whole files
   * and fails an item whose offset is not 0, or whose file is longer than its duration
   * (docs/featurize.md "Manifests"). */
  double offset;
  double duration;
  /* A line of an LJSpeech or TSV manifest refused before its id was read (err set, id NULL: not
   * UTF-8, no text column, a carriage return inside): its first column as written when that is
   * an id fc_id_check takes (not blank), else NULL. Only to name the line in a report (tokenize
   * --json's failures): no id, held to no duplicate check, nothing recorded under it. */
  char *id_field;
} fc_item;

typedef struct fc_item_list {
  fc_item *items;
  size_t count;
  fc_manifest_format format; /* as detected */
} fc_item_list;

typedef struct fc_manifest_opts {
  fc_manifest_format format; /* FC_MANIFEST_AUTO to detect */
  const char *audio_dir; /* NULL: wavs/ beside an LJSpeech manifest, else the manifest's dir */
  int text_column; /* LJSpeech: 2 raw, 3 normalized (an item error where absent);
                                0 = normalized when present and non-empty, else raw */
  const char *audio_ext; /* LJSpeech audio extension, default ".wav" */
  /* shard_n > 0: only the items of shard shard_k of shard_n (fc_shard_of their id; an item
   * without an id is shard 0), as fc_item_list_shard keeps; the duplicate check sees all ids */
  uint32_t shard_k, shard_n;
  /* Set: fc_manifest_read hands each item to on_item as it reads it, instead of keeping it (out
   * stays empty but for its format): memory is one line and one item, plus the ids read so far
   * for the duplicate check (a copy of each and ~16 bytes), whatever the manifest's length. The
   * item and its strings are valid during the call only. A nonzero return stops the reading;
   * fc_manifest_read returns it. */
  int (*on_item)(const fc_item *it, void *user);
  void *user;
  /* > 0: a line longer than this many bytes (with its LF) is an item that failed (FC_ETOOLONG,
   * "line is N bytes, over the limit of M a line may have"; its id where what fits gives one),
   * read without being held: memory stays this whatever the line (a transcript file that is one
   * long line, a minified JSON). 0: no limit, each line held whole. */
  size_t max_line_bytes;
} fc_manifest_opts;

/* The longest line any manifest (or list of paths) may have, its line break counted: 16 MiB. A
 * line that reaches it without a line break stops the reading (FC_ETOOLONG, "line N has no line
 * break in its first 16 MiB"): a binary file or an endless stream without newlines, not a
 * manifest, which would otherwise be read until memory runs out (or, under max_line_bytes,
 * forever). */
#define FC_MANIFEST_LINE_MAX ((size_t)16 << 20)

/* Read a manifest file ("-" = stdin); opts may be NULL (auto-detect, defaults). Errors that stop
 * everything are returned with a reason in why (may be NULL): errno codes (cannot open: ENOENT,
 * EACCES; EISDIR; ENODEV: a character or block device or a socket, which no manifest is: /dev/zero
 * would be one line without end; read errors), ENOMEM, FC_ECONFIG (bad opts->format). Per-line
 * problems are items with err set. An empty file (or only blank lines) is success with count 0.
 * With FC_MANIFEST_AUTO the format comes from fc_manifest_detect on the name and first non-blank
 * line; a first line that looks like "id path" but names an existing file (a path with a space)
 * makes it a list. *out is owned by the caller: fc_item_list_free (on error it is already
 * empty). */
FC_API int fc_manifest_read(const char *path, const fc_manifest_opts *opts, fc_item_list *out,
                            char *why, size_t why_len);
/* Items from paths (arguments): id = file name without directory and last extension, path as
 * given, line 0; an empty path or a repeated id is an item error. Returns 0, EINVAL or ENOMEM. */
FC_API int fc_items_from_paths(const char *const *paths, size_t n, fc_item_list *out);
/* Items from one path per line of a FILE* (NULL = stdin), with the manifest rules for CRLF, BOM,
 * blank lines, a carriage return inside a line (an item error) and line numbers. Returns 0, or an errno code (read error, ENOMEM). */
FC_API int fc_items_from_stream(void *stdio_file, fc_item_list *out);
/* Frees every string and the array; l itself is the caller's. NULL is fine. */
FC_API void fc_item_list_free(fc_item_list *l);
/* Detect the format of a manifest from its name (may be NULL) and first non-empty line (may be
 * NULL): names ending .scp → kaldi; .json, .jsonl, .ndjson or a line starting with '{' → jsonl;
 * .tsv or a tab → tsv, but kaldi when the tab separates an id from one audio path ("utt1<TAB>
 * a.wav": a wav.scp with tabs); a '|' → ljspeech; .csv → ljspeech; "word path" → kaldi; else
 * list. */
FC_API fc_manifest_format fc_manifest_detect(const char *path, const char *first_line);
/* "auto", "ljspeech", "kaldi", "jsonl", "list", "tsv"; "unknown" otherwise. Static string. */
FC_API const char *fc_manifest_format_name(fc_manifest_format f);
/* "ljspeech", "kaldi", "jsonl", "list", "tsv" → format; FC_MANIFEST_AUTO for "auto"; -1 unknown.
 * Also accepted: "lj"/"csv", "scp"/"wav.scp", "json"/"nemo", "txt"/"paths". */
FC_API int fc_manifest_format_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
