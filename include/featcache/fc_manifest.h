/* featcache — manifests: LJSpeech csv, Kaldi wav.scp, JSON lines, plain path lists.
 *
 * A manifest is read into a list of items (id, audio path resolved against the audio dir, text).
 * Malformed lines are reported one by one through the item list (an item with err != 0 and a
 * reason), never silently dropped, so tools can say "featurize: FILE:LINE: reason" and go on. */
#ifndef FC_MANIFEST_H
#define FC_MANIFEST_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fc_manifest_format {
  FC_MANIFEST_AUTO = 0,
  FC_MANIFEST_LJSPEECH = 1, /* id|text[|normalized] — audio at <audio_dir>/<id>.wav */
  FC_MANIFEST_KALDI = 2,    /* wav.scp: id path */
  FC_MANIFEST_JSONL = 3,    /* {"audio_filepath": ..., "text": ..., "id": ...} per line */
  FC_MANIFEST_LIST = 4,     /* one audio path per line; id = file name without dir and extension */
  FC_MANIFEST_TSV = 5       /* id<TAB>text (tokenize) */
} fc_manifest_format;

typedef struct fc_item {
  char *id;        /* utterance id (NUL-terminated UTF-8) */
  char *path;      /* audio path, resolved; NULL when the manifest has none (tsv) */
  char *text;      /* the chosen text column; NULL when none */
  char *text_raw;  /* LJSpeech column 2 (raw) when present, else NULL */
  char *text_norm; /* LJSpeech column 3 (normalized) when present, else NULL */
  size_t line;     /* 1-based line number in the manifest, 0 for paths from args/stdin */
  int err;         /* 0, or FC_EMANIFEST / FC_EUTF8 / FC_EDUPLICATE / FC_EFORMAT for this line */
  char *why;       /* reason when err != 0 */
} fc_item;

typedef struct fc_item_list {
  fc_item *items;
  size_t count;
  fc_manifest_format format; /* as detected */
} fc_item_list;

typedef struct fc_manifest_opts {
  fc_manifest_format format; /* FC_MANIFEST_AUTO to detect */
  const char *audio_dir;     /* NULL: wavs/ beside an LJSpeech manifest, else the manifest's dir */
  int text_column;           /* LJSpeech: 2 raw, 3 normalized; 0 = normalized when present else raw */
  const char *audio_ext;     /* LJSpeech audio extension, default ".wav" */
} fc_manifest_opts;

/* Read a manifest file ("-" = stdin). Errors that stop everything (cannot open, not UTF-8 at
 * all...) are returned; per-line problems are items with err set. Duplicate ids: the second and
 * later get FC_EDUPLICATE. *out is owned by the caller: fc_item_list_free. */
FC_API int fc_manifest_read(const char *path, const fc_manifest_opts *opts, fc_item_list *out,
                            char *why, size_t why_len);
/* Items from paths (arguments, or lines read from a FILE* such as stdin when paths is NULL):
 * id = file name without directory and extension. */
FC_API int fc_items_from_paths(const char *const *paths, size_t n, fc_item_list *out);
FC_API int fc_items_from_stream(void *stdio_file, fc_item_list *out);
FC_API void fc_item_list_free(fc_item_list *l);
/* Detect the format of a manifest from its name and first non-empty line. */
FC_API fc_manifest_format fc_manifest_detect(const char *path, const char *first_line);
FC_API const char *fc_manifest_format_name(fc_manifest_format f);
/* "ljspeech", "kaldi", "jsonl", "list", "tsv" → format; FC_MANIFEST_AUTO for "auto"; -1 unknown. */
FC_API int fc_manifest_format_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
