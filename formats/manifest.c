/* Manifest readers: LJSpeech csv, Kaldi wav.scp, JSON lines, plain path lists, TSV.
 *
 * Every line is read whole with getline (no fixed buffers: a 1 MB line is one item), CRLF and a
 * leading UTF-8 BOM are stripped, blank lines skipped. A line that cannot be used becomes an item
 * with err and why set, never a silent drop, so that tools can say "FILE:LINE: reason" and go on.
 * Memory: one line, one item and the ids seen so far (a copy of each, for the duplicate check, and
 * a set of 2 pointers per id); fc_manifest_read keeps the items, unless opts->on_item takes each
 * as it is read. The lines, ids made from file names and the item list are manifest_items.c's. */
#include "featcache/fc_manifest.h"
#include "formats/common/args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "featcache/fc_format.h"
#include "featcache/fc_shard.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"
#include "formats/manifest_int.h"

/* ---- names ------------------------------------------------------------------------------------ */
static const char *const format_names[] = {"auto", "ljspeech", "kaldi", "jsonl", "list", "tsv"};

const char *fc_manifest_format_name(fc_manifest_format f) {
  if ((int)f < 0 || (size_t)f >= sizeof format_names / sizeof format_names[0]) return "unknown";
  return format_names[f];
}

int fc_manifest_format_from_name(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++)
    if (strcmp(name, format_names[i]) == 0) return (int)i;
  /* Common aliases. */
  if (strcmp(name, "lj") == 0 || strcmp(name, "csv") == 0) return FC_MANIFEST_LJSPEECH;
  if (strcmp(name, "scp") == 0 || strcmp(name, "wav.scp") == 0) return FC_MANIFEST_KALDI;
  if (strcmp(name, "json") == 0 || strcmp(name, "nemo") == 0) return FC_MANIFEST_JSONL;
  if (strcmp(name, "txt") == 0 || strcmp(name, "paths") == 0) return FC_MANIFEST_LIST;
  return -1;
}

/* ---- small string helpers ------------------------------------------------------------------- */
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "dir" + "/" + "rel"; rel unchanged when it is absolute or dir is empty or ".". */
static char *join_path(const char *dir, const char *rel, size_t rel_len, const char *ext) {
  size_t ext_len = ext ? strlen(ext) : 0;
  if (rel_len > 0 && rel[0] == '/') dir = NULL;
  if (dir && (dir[0] == '\0' || strcmp(dir, ".") == 0)) dir = NULL;
  size_t dir_len = dir ? strlen(dir) : 0;
  int need_slash = dir_len > 0 && dir[dir_len - 1] != '/';
  char *out = fc_malloc(dir_len + (size_t)need_slash + rel_len + ext_len + 1);
  if (!out) return NULL;
  char *p = out;
  if (dir_len) {
    memcpy(p, dir, dir_len);
    p += dir_len;
  }
  if (need_slash) *p++ = '/';
  memcpy(p, rel, rel_len);
  p += rel_len;
  if (ext_len) {
    memcpy(p, ext, ext_len);
    p += ext_len;
  }
  *p = '\0';
  return out;
}

/* Directory part of a manifest path: "a/b/m.csv" -> "a/b", "m.csv" -> ".", "/m.csv" -> "/". */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return mf_dup_range(".", 1);
  if (slash == path) return mf_dup_range("/", 1);
  return mf_dup_range(path, (size_t)(slash - path));
}

/* ---- detection -------------------------------------------------------------------------------- */
static int has_audio_ext(const char *s, size_t n) {
  static const char *const exts[] = {".wav", ".flac", ".mp3", ".ogg", ".opus", ".aiff", ".aif",
                                     ".au",  ".sph",  ".caf", ".w64", ".m4a",  ".WAV",  ".FLAC"};
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
    size_t m = strlen(exts[i]);
    if (n >= m && memcmp(s + n - m, exts[i], m) == 0) return 1;
  }
  return 0;
}

static int kaldi_by_name(const char *path) {
  const char *name = path ? base_name(path) : "";
  return strcmp(name, "wav.scp") == 0 || ends_with(name, ".scp");
}

/* "id<TAB>path": a wav.scp whose columns a tab separates (Kaldi splits on any white space), not
 * tokenize's id<TAB>text: an id without '/' or audio extension, then one column that names an
 * audio file. */
static int tab_scp(const char *l, const char *tab) {
  size_t w = (size_t)(tab - l);
  if (w == 0 || memchr(l, '/', w) || has_audio_ext(l, w)) return 0;
  const char *rest = tab + 1;
  while (*rest == ' ' || *rest == '\t') rest++;
  size_t rn = strcspn(rest, "\r\n");
  while (rn > 0 && (rest[rn - 1] == ' ' || rest[rn - 1] == '\t')) rn--;
  return rn > 0 && !memchr(rest, '\t', rn) && has_audio_ext(rest, rn);
}

fc_manifest_format fc_manifest_detect(const char *path, const char *first_line) {
  const char *name = path ? base_name(path) : "";
  if (kaldi_by_name(path)) return FC_MANIFEST_KALDI;
  if (ends_with(name, ".jsonl") || ends_with(name, ".json") || ends_with(name, ".ndjson"))
    return FC_MANIFEST_JSONL;
  const char *l = first_line ? first_line : "";
  if ((uint8_t)l[0] == 0xEF && (uint8_t)l[1] == 0xBB && (uint8_t)l[2] == 0xBF) l += 3;
  while (*l == ' ' || *l == '\t') l++;
  if (*l == '{') return FC_MANIFEST_JSONL;
  /* The separator that ends the id decides: a TSV text may contain '|', an LJSpeech id no tab. */
  const char *bar = strchr(l, '|'), *tab = strchr(l, '\t');
  if (ends_with(name, ".tsv") || (tab && (!bar || tab < bar)))
    return tab && tab_scp(l, tab) ? FC_MANIFEST_KALDI : FC_MANIFEST_TSV;
  if (bar) return FC_MANIFEST_LJSPEECH;
  if (ends_with(name, ".csv")) return FC_MANIFEST_LJSPEECH;
  /* "id path" (Kaldi) vs a path that contains a space (list): Kaldi when the first word has no
   * '/' and no audio extension, and what follows it looks like an audio path. "my file.wav" is
   * therefore Kaldi here; fc_manifest_read turns it back into a list when a file of that whole
   * name exists. */
  size_t n = strcspn(l, "\r\n");
  size_t w = strcspn(l, " \t");
  if (w > 0 && w < n) {
    const char *rest = l + w;
    while (*rest == ' ' || *rest == '\t') rest++;
    size_t rn = strcspn(rest, "\r\n");
    while (rn > 0 && (rest[rn - 1] == ' ' || rest[rn - 1] == '\t')) rn--;
    int first_is_path = memchr(l, '/', w) != NULL || has_audio_ext(l, w);
    int rest_is_path =
        memchr(rest, '/', rn) != NULL || has_audio_ext(rest, rn) || (rn > 0 && rest[rn - 1] == '|');
    if (!first_is_path && rest_is_path) return FC_MANIFEST_KALDI;
  }
  return FC_MANIFEST_LIST;
}

/* A line that is not UTF-8 fails naming its first bad byte, the character column it is at (as an
 * editor counts), and the usual cause: a manifest saved as Latin-1 or Windows-1252 (an old corpus,
 * a spreadsheet's CSV), whose every accented line fails alike. */
static int mf_item_fail_utf8(fc_item *it, const char *line, size_t n) {
  const unsigned char *s = (const unsigned char *)line;
  size_t i = 0, column = 1;
  while (i < n) {
    const unsigned c = s[i];
    size_t k = c < 0x80             ? 1
               : (c & 0xE0) == 0xC0 ? 2
               : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (k == 0 || k > n - i || !fc_utf8_valid(line + i, k)) break;
    i += k;
    column++;
  }
  if (i >= n) return mf_item_fail(it, FC_EUTF8, "invalid UTF-8");
  return mf_item_fail(it, FC_EUTF8,
                      "invalid UTF-8 (byte 0x%02X at column %zu: Latin-1 or Windows-1252 text? "
                      "convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)",
                      s[i], column);
}

/* A refused line's first column, as fc_item.id_field says: a report names the line by it. */
static int cut_id_field(fc_item *it, const char *line, size_t n, char sep) {
  if (!it->err || it->id || it->err == FC_EDUPLICATE) return 0;
  const char *end = memchr(line, sep, n);
  const size_t len = end ? (size_t)(end - line) : n;
  if (!len || len > FC_ID_MAX || memchr(line, '\0', len) || mf_is_blank(line, len) ||
      fc_id_check(line, len) != 0 ||
      ((uint8_t)line[0] == 0xEF && len >= 3 && (uint8_t)line[1] == 0xBB &&
       (uint8_t)line[2] == 0xBF) ||
      line[strspn(line, " \t")] == '#')
    return 0; /* no id: a comment, a BOM before it, bytes that are not one */
  return (it->id_field = mf_dup_range(line, len)) ? 0 : -ENOMEM;
}

/* ---- per-format line parsers ------------------------------------------------------------------ */
typedef struct parse_ctx {
  const fc_manifest_opts *opts;
  const char *audio_dir; /* resolved base for relative audio paths (may be "." or NULL) */
  const char *ext; /* LJSpeech audio extension */
} parse_ctx;

/* A field quoted as CSV quotes it (pandas' to_csv, Python's csv: in quotes, its quotes doubled, or
 * holding the separator), which would be stored quotes and all: '"He said ""hi"""'. A text that is
 * a quotation, '"Stop!"', or quotes inside ('"Stop!" she said.'), is none. */
static int csv_quoted(const char *t, char sep) {
  size_t tl = strlen(t), pairs = 0, i = 1;
  while (tl >= 2 && t[0] == '"' && t[tl - 1] == '"' && i < tl - 1 &&
         (t[i] != '"' || t[i + 1] == '"'))
    pairs += t[i] == '"' || t[i] == sep, i += t[i] == '"' ? 2 : 1;
  return tl >= 3 && t[0] == '"' && t[tl - 1] == '"' && i == tl - 1 && pairs;
}

/* Fill a text field if the bytes are valid UTF-8 (whole-line check already done). */
static int parse_ljspeech(const parse_ctx *c, fc_item *it, const char *line, size_t n) {
  const char *col[3];
  size_t len[3];
  size_t ncol = 0;
  const char *p = line, *end = line + n;
  for (;;) {
    const char *bar = memchr(p, '|', (size_t)(end - p));
    const char *stop = bar ? bar : end;
    if (ncol < 3) {
      col[ncol] = p;
      len[ncol] = (size_t)(stop - p);
    }
    ncol++;
    if (!bar) break;
    p = bar + 1;
  }
  if (ncol < 2)
    return mf_item_fail(it, FC_EMANIFEST, "missing text column (expected id|text[|normalized])");
  if (ncol > 3)
    return mf_item_fail(it, FC_EMANIFEST, "%zu columns, expected id|text[|normalized]", ncol);
  if (!(it->id = mf_dup_range(col[0], len[0]))) return -ENOMEM;
  if (len[0] == 0) return mf_item_fail(it, FC_EMANIFEST, "empty id");
  if (!(it->text_raw = mf_dup_range(col[1], len[1]))) return -ENOMEM;
  if (ncol == 3 && !(it->text_norm = mf_dup_range(col[2], len[2]))) return -ENOMEM;
  const char *chosen;
  switch (c->opts ? c->opts->text_column : 0) {
  case 2: chosen = it->text_raw; break;
  case 3:
    if (!it->text_norm) return mf_item_fail(it, FC_EMANIFEST, "missing normalized text (column 3)");
    chosen = it->text_norm;
    break;
  default: chosen = (it->text_norm && it->text_norm[0]) ? it->text_norm : it->text_raw; break;
  }
  if (!(it->text = fc_strdup(chosen))) return -ENOMEM;
  if (csv_quoted(it->text, '|')) /* its id is the utterance's: featurize records the failure */
    return mf_item_fail(it, FC_EMANIFEST,
                        "a text quoted as CSV quotes it (in quotes, its quotes doubled: pandas' "
                        "to_csv, Python's csv), but LJSpeech's fields are not quoted: write it "
                        "with quoting=csv.QUOTE_NONE, or as JSON lines");
  /* an id column that names the file with its extension ("a.wav|text"): wavs/a.wav, not
   * wavs/a.wav.wav; the id stays as given */
  const int named = has_audio_ext(col[0], len[0]);
  if (!(it->path = join_path(c->audio_dir, col[0], len[0], named ? NULL : c->ext))) return -ENOMEM;
  return 0;
}

static int parse_kaldi(const parse_ctx *c, fc_item *it, const char *line, size_t n) {
  const char *p = line, *end = line + n;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  const char *id = p;
  while (p < end && *p != ' ' && *p != '\t') p++;
  size_t id_len = (size_t)(p - id);
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
  if (!(it->id = mf_dup_range(id, id_len))) return -ENOMEM;
  if (p == end) return mf_item_fail(it, FC_EMANIFEST, "missing path column (expected: id path)");
  if (end[-1] == '|') { /* Kaldi's "CMD |": the audio is the command's output */
    const char *ce = end - 1;
    while (ce > p && (ce[-1] == ' ' || ce[-1] == '\t')) ce--;
    char cmd[256], q[4 * sizeof cmd + 3];
    const size_t cn = (size_t)(ce - p) < sizeof cmd - 1 ? (size_t)(ce - p) : sizeof cmd - 1;
    memcpy(cmd, p, cn);
    cmd[cn] = '\0';
    fc_quote_name(cmd, q, sizeof q); /* as names are: the line is the user's, the terminal ours */
    return mf_item_fail(it, FC_EMANIFEST,
                        "piped wav.scp entries are not supported: audio is read from files; write "
                        "the command's output to one (%s > %.100s.wav) and list that",
                        q, it->id);
  }
  if (!(it->path = join_path(c->audio_dir, p, (size_t)(end - p), NULL))) return -ENOMEM;
  return 0;
}

static int parse_jsonl(const parse_ctx *c, fc_item *it, const char *line, size_t n) {
  json_error_t jerr;
  int nomem;
  json_t *root = fc_json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr, &nomem);
  int rc = 0;
  if (nomem) return -ENOMEM;
  if (!root && json_error_code(&jerr) == json_error_null_character) /* jansson names its flag */
    return mf_item_fail(it, FC_EMANIFEST,
                        "invalid JSON: a \\u0000 (NUL) in a string, which no path, id or text "
                        "may hold (column %d)",
                        jerr.column);
  if (!root) {
    char t[4 * sizeof jerr.text + 8];
    /* Python's json.dumps writes a float NaN or inf (a missing duration in pandas) so */
    const int nan = json_error_code(&jerr) == json_error_invalid_syntax &&
                    (strstr(jerr.text, "near 'NaN'") || strstr(jerr.text, "near 'Infinity'") ||
                     (strstr(jerr.text, "near '-'") && memmem(line, n, "-Infinity", 9)));
    return mf_item_fail(it, FC_EMANIFEST, "invalid JSON: %s (column %d)%s",
                        fc_json_error_text(&jerr, t, sizeof t), jerr.column,
                        nan ? ": NaN and Infinity are not JSON numbers (Python's json.dumps writes "
                              "them; give the number, or leave the field out)"
                            : "");
  }
  if (!json_is_object(root)) {
    rc = mf_item_fail(it, FC_EMANIFEST, "expected a JSON object");
    goto done;
  }
  json_t *audio = json_object_get(root, "audio_filepath");
  json_t *text = json_object_get(root, "text");
  json_t *id = json_object_get(root, "id");
  /* An integer id is its decimal digits (pandas' to_json of an integer id column: 123, not
   * "123"); a real, a bool, null or anything else is refused. */
  const int id_ok = json_is_string(id) || json_is_integer(id);
  char id_digits[24];
  if (json_is_integer(id))
    snprintf(id_digits, sizeof id_digits, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
  if (id && !id_ok) { /* before the text-only check, which would say a string "id" is missing */
    char kind[64];
    rc = mf_item_fail(it, FC_EMANIFEST, "\"id\" must be a string or an integer, got %s",
                      mf_json_kind(id, kind, sizeof kind));
    goto done;
  }
  /* A text-only line (tokenize) names its utterance with "id"; audio tools then see path NULL. */
  if (!audio && !(id_ok && json_is_string(text))) {
    /* perhaps a text-only line whose text (with an "id") or id (with a "text") is missing: say
     * both */
    rc = id_ok ? mf_item_fail(
                     it, FC_EMANIFEST,
                     "missing \"audio_filepath\" (a text-only line with \"id\" needs a string "
                     "\"text\")")
         : json_is_string(text)
             ? mf_item_fail(it, FC_EMANIFEST,
                            "missing \"audio_filepath\" (a text-only line needs a string \"id\")")
             : mf_item_fail(it, FC_EMANIFEST, "missing \"audio_filepath\"");
    goto done;
  }
  if (audio && (!json_is_string(audio) || json_string_length(audio) == 0)) {
    rc = mf_item_fail(it, FC_EMANIFEST, "\"audio_filepath\" must be a non-empty string");
    goto done;
  }
  if (text && !json_is_string(text) && !json_is_null(text)) {
    rc = mf_item_fail(it, FC_EMANIFEST, "\"text\" must be a string");
    goto done;
  }
  /* jansson refuses strings with NUL (no JSON_ALLOW_NUL), so strlen is the length. */
  const char *ap = audio ? json_string_value(audio) : NULL;
  if (ap && !(it->path = join_path(c->audio_dir, ap, strlen(ap), NULL))) goto nomem;
  if (id) {
    if (!(it->id = fc_strdup(json_is_string(id) ? json_string_value(id) : id_digits))) goto nomem;
  } else if (!(it->id = mf_id_from_path(ap, strlen(ap)))) {
    goto nomem;
  }
  if (json_is_string(text) && !(it->text = fc_strdup(json_string_value(text)))) goto nomem;
  rc = mf_json_segment(it, root); /* NeMo's "offset" and "duration" (manifest_segment.c) */
done:
  json_decref(root);
  return rc;
nomem:
  json_decref(root);
  return -ENOMEM;
}

static int parse_list(const parse_ctx *c, fc_item *it, const char *line, size_t n) {
  n = mf_trim_end(line, n);
  if (!(it->path = join_path(c->audio_dir, line, n, NULL))) return -ENOMEM;
  if (mf_list_comment(line, it->path)) {
    free(it->path);
    it->path = NULL;
    return mf_item_fail(it, FC_EMANIFEST, MF_COMMENT_WHY);
  }
  if (!(it->id = mf_id_from_path(line, n))) return -ENOMEM;
  return 0;
}

static int parse_tsv(const parse_ctx *c, fc_item *it, const char *line, size_t n) {
  (void)c;
  const char *tab = memchr(line, '\t', n);
  if (!tab) {
    if (!(it->id = mf_dup_range(line, n))) return -ENOMEM;
    return mf_item_fail(it, FC_EMANIFEST, "missing text column (expected id<TAB>text)");
  }
  if (!(it->id = mf_dup_range(line, (size_t)(tab - line)))) return -ENOMEM;
  if (!(it->text = mf_dup_range(tab + 1, n - (size_t)(tab + 1 - line)))) return -ENOMEM;
  if (csv_quoted(it->text, '\t'))
    return mf_item_fail(it, FC_EMANIFEST,
                        "a text quoted as CSV quotes it (in quotes, its quotes doubled: pandas' "
                        "to_csv, Python's csv), but a TSV's fields are not quoted: write it with "
                        "quoting=csv.QUOTE_NONE, or as JSON lines");
  return 0;
}

/* A header line (pandas' to_csv writes one by default): an id column and a text column named as
 * such, "id|text|normalized_text", "file_name<TAB>transcription". No utterance has both: the line
 * is skipped, where it was an input whose audio (wavs/id.wav) is nowhere. */
static int header_word(const char *s, size_t n, const char *const *words) {
  for (; *words; words++)
    if (strlen(*words) == n && strncasecmp(s, *words, n) == 0) return 1;
  return 0;
}

static int header_line(const char *line, size_t n, char sep) {
  static const char *const ids[] =
      {"id",       "utt",        "utt_id",     "uttid",          "utterance_id", "file",
       "filename", "file_name",  "file_id",    "fileid",         "name",         "audio",
       "audio_id", "audio_file", "audio_path", "audio_filepath", "path",         "wav",
       "wav_id",   "key",        NULL};
  static const char *const texts[] = {"text",       "transcript",      "transcription",
                                      "sentence",   "normalized_text", "raw_text",
                                      "normalized", "label",           "words",
                                      NULL};
  const char *a = memchr(line, sep, n);
  if (!a) return 0;
  const char *b = memchr(a + 1, sep, n - (size_t)(a + 1 - line));
  const size_t tn = (size_t)((b ? b : line + n) - (a + 1));
  return header_word(line, (size_t)(a - line), ids) && header_word(a + 1, tn, texts);
}

/* ---- reading, one item at a time ------------------------------------------------------------ */
enum { MF_AHEAD = 16 }; /* lines read ahead at most, to find where a quoted field ends */
typedef struct reader {
  FILE *f;
  int is_stdin;
  char *path, *dir, *audio_dir, *opt_audio_dir, *ext;
  fc_manifest_opts opts;
  fc_manifest_format fmt;
  parse_ctx c;
  char *buf;
  size_t cap, lineno;
  int first;
  int data_seen; /* a line other than a blank one was read: no header after it */
  /* The lines read ahead (a quoted field's continuation looked for, below), oldest first. */
  struct ahead {
    char *s;
    ssize_t got; /* mf_next_line's: -1 at the end, -2 a read error (err its errno) */
    size_t whole;
    int err;
  } ahead[MF_AHEAD];
  size_t ahead_at, ahead_n;
  /* A field quoted as CSV quotes it, holding a line break: the line that opened it, the line that
   * closes it, and how many of the lines after the opening one are its continuation. */
  size_t quote_from, quote_to, quote_left;
  fc_item_list one; /* the item handed out last */
  list_builder b;
  arena ids;
} reader;

static void reader_close(reader *r) {
  if (!r) return;
  if (r->f && !r->is_stdin) fclose(r->f);
  for (size_t i = 0; i < r->ahead_n; i++) free(r->ahead[(r->ahead_at + i) % MF_AHEAD].s);
  fc_item_list_free(&r->one);
  mf_builder_done(&r->b);
  mf_arena_free(&r->ids);
  free(r->buf);
  free(r->path);
  free(r->dir);
  free(r->audio_dir);
  free(r->opt_audio_dir);
  free(r->ext);
  free(r);
}

static int reader_open(const char *path, const fc_manifest_opts *opts, reader **out, char *why,
                       size_t why_len) {
  *out = NULL;
  if (!path) return EINVAL;
  fc_manifest_format fmt = opts ? opts->format : FC_MANIFEST_AUTO;
  if ((int)fmt < FC_MANIFEST_AUTO || fmt > FC_MANIFEST_TSV) {
    fc_why(why, why_len, "unknown manifest format %d", (int)fmt);
    return FC_ECONFIG;
  }
  if (opts && opts->shard_n && opts->shard_k >= opts->shard_n) {
    fc_why(why, why_len, "shard %u of %u", opts->shard_k, opts->shard_n);
    return FC_ECONFIG;
  }
  reader *r = fc_calloc(1, sizeof *r);
  if (!r) goto nomem;
  if (opts) r->opts = *opts;
  r->fmt = fmt;
  r->first = 1;
  r->is_stdin = strcmp(path, "-") == 0;
  r->b.out = &r->one;
  r->b.ids = &r->ids;
  if (!(r->path = fc_strdup(path)) || !(r->dir = r->is_stdin ? fc_strdup(".") : dir_of(path)) ||
      !(r->ext = fc_strdup(opts && opts->audio_ext ? opts->audio_ext : ".wav")) ||
      (opts && opts->audio_dir && !(r->opt_audio_dir = fc_strdup(opts->audio_dir))))
    goto nomem;
  r->opts.audio_dir = r->opt_audio_dir;
  r->opts.audio_ext = r->ext;
  r->c.opts = &r->opts;
  r->c.ext = r->ext;
  struct stat pst; /* a device (/dev/zero: one line without end) or a socket: no manifest */
  if (!r->is_stdin && stat(path, &pst) == 0 &&
      (S_ISCHR(pst.st_mode) || S_ISBLK(pst.st_mode) || S_ISSOCK(pst.st_mode))) {
    fc_why(why, why_len, "not a regular file or a pipe (a %s)",
           S_ISSOCK(pst.st_mode) ? "socket" : "device");
    reader_close(r);
    return ENODEV;
  }
  r->f = r->is_stdin ? stdin : fopen(path, "re");
  if (!r->f) {
    int e = errno;
    fc_why(why, why_len, "cannot open: %s", strerror(e));
    reader_close(r);
    return e;
  }
  struct stat st;
  if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fc_why(why, why_len, "is a directory");
    reader_close(r);
    return EISDIR;
  }
  *out = r;
  return 0;
nomem:
  fc_why(why, why_len, "out of memory");
  reader_close(r);
  return ENOMEM;
}

static fc_manifest_format reader_format(const reader *r) {
  return r->fmt == FC_MANIFEST_AUTO ? fc_manifest_detect(r->is_stdin ? NULL : r->path, "") : r->fmt;
}

/* Drop the item handed out before (its strings; the array stays for the next). */
static void one_clear(reader *r) {
  for (size_t i = 0; i < r->one.count; i++) mf_item_clear(&r->one.items[i]);
  r->one.count = 0;
}

/* The next line (mf_next_line's result and *whole) into r->buf: the oldest read ahead, else the
 * file's next. */
static ssize_t reader_line(reader *r, size_t *whole) {
  if (!r->ahead_n)
    return mf_next_line(r->f, &r->buf, &r->cap, &r->first, r->opts.max_line_bytes, whole);
  struct ahead *a = &r->ahead[r->ahead_at];
  const ssize_t got = a->got;
  r->ahead_at = (r->ahead_at + 1) % MF_AHEAD;
  r->ahead_n--;
  *whole = a->whole;
  errno = a->err;
  if (got >= 0) {
    if (r->cap < (size_t)got + 1) {
      char *nb = fc_realloc(r->buf, (size_t)got + 1);
      if (!nb) {
        free(a->s);
        errno = ENOMEM;
        return -2;
      }
      r->buf = nb;
      r->cap = (size_t)got + 1;
    }
    memcpy(r->buf, a->s, (size_t)got + 1);
  }
  free(a->s);
  a->s = NULL;
  return got;
}

/* Reads one more line ahead (kept for reader_line). 0 when it is a line, else -1: at the end or a
 * read error (kept, for reader_line to return in its turn), or MF_AHEAD lines read ahead. */
static int read_ahead(reader *r) {
  if (r->ahead_n == MF_AHEAD) return -1;
  struct ahead *a = &r->ahead[(r->ahead_at + r->ahead_n) % MF_AHEAD];
  char *buf = NULL;
  size_t cap = 0;
  a->got = mf_next_line(r->f, &buf, &cap, &r->first, r->opts.max_line_bytes, &a->whole);
  a->err = errno;
  a->s = buf;
  r->ahead_n++;
  return a->got >= 0 ? 0 : -1;
}

/* Line r->lineno (its n bytes in r->buf) ends inside a field it opened with a quote: reads ahead
 * for the lines that continue the field, each a line of no separator that does not close it, or
 * one that closes it before its first separator (its first field the field's end, as CSV writes
 * it: 'line two"|...'), through the one that closes it and opens no other. Found, the lines from
 * the opening one through the closing one are one line of CSV, broken up (r->quote_*). Real
 * LJSpeech opens quotes it does not close ('LJ002-0100|"The rules were'), the next line an id: no
 * continuation. */
static void find_quoted_break(reader *r, char sep) {
  size_t lines = 0;
  for (size_t i = 0; i < MF_AHEAD; i++) {
    if (i == r->ahead_n && read_ahead(r) != 0) return; /* an error: reader_line says it in turn */
    const struct ahead *a = &r->ahead[(r->ahead_at + i) % MF_AHEAD];
    if (a->got < 0 || (r->opts.max_line_bytes && a->whole > r->opts.max_line_bytes)) return;
    const size_t n = (size_t)a->got;
    if (mf_is_blank(a->s, n)) continue; /* a blank line inside the field */
    lines++;
    size_t lead;
    const int open = mf_csv_quote_open(a->s, n, sep, 1, &lead);
    if (memchr(a->s, sep, lead) || memchr(a->s, '\0', n)) return; /* a line of its own */
    if (!open) {
      r->quote_from = r->lineno;
      r->quote_to = r->lineno + i + 1;
      r->quote_left = lines;
      return;
    }
  }
}

static int reader_next(reader *r, const fc_item **it, char *why, size_t why_len) {
  *it = NULL;
  one_clear(r);
  for (;;) {
    size_t line_bytes = 0;
    ssize_t got = reader_line(r, &line_bytes);
    if (got == -1) return 0;
    if (got == -2) {
      int rc = errno ? errno : EIO;
      if (rc == FC_ETOOLONG) /* an endless stream would be read until memory runs out */
        fc_why(why, why_len,
               "line %zu has no line break in its first %zu MiB (the most a manifest line may "
               "have): not a manifest (a binary file? a stream without newlines?); nothing read "
               "past it",
               r->lineno + 1, FC_MANIFEST_LINE_MAX >> 20);
      else
        fc_why(why, why_len, "read error after line %zu: %s", r->lineno, strerror(rc));
      return rc;
    }
    r->lineno++;
    size_t n = (size_t)got;
    char *buf = r->buf;
    if (mf_is_blank(buf, n)) continue;
    if (r->fmt == FC_MANIFEST_AUTO && buf[strspn(buf, " \t")] == '#') { /* a comment first */
      char *whole = join_path(r->opts.audio_dir ? r->opts.audio_dir : r->dir, buf, n, NULL);
      if (!whole) goto nomem;
      const int comment = mf_list_comment(buf, whole); /* else a file named "#..." */
      free(whole);
      if (comment) { /* the format is the next line's; an item without id is shard 0's */
        fc_item *item = mf_new_item(&r->b, r->lineno);
        if (!item || mf_item_fail(item, FC_EMANIFEST, MF_COMMENT_WHY) < 0) goto nomem;
        if (r->opts.shard_n && r->opts.shard_k != 0) {
          one_clear(r);
          continue;
        }
        *it = item;
        return 1;
      }
    }
    if (r->fmt == FC_MANIFEST_AUTO) {
      const char *mpath = r->is_stdin ? NULL : r->path;
      /* The first line decides; a NUL in it just ends what detection sees. */
      r->fmt = fc_manifest_detect(mpath, buf);
      /* "id path" and a path with a space look alike: a file by that whole name settles it. */
      if (r->fmt == FC_MANIFEST_KALDI && !kaldi_by_name(mpath)) {
        const char *base = r->opts.audio_dir ? r->opts.audio_dir : r->dir;
        char *whole = join_path(base, buf, strlen(buf), NULL);
        struct stat fst;
        if (!whole) goto nomem;
        if (stat(whole, &fst) == 0 && S_ISREG(fst.st_mode)) r->fmt = FC_MANIFEST_LIST;
        free(whole);
      }
    }
    if (!r->audio_dir) {
      if (r->opts.audio_dir)
        r->audio_dir = fc_strdup(r->opts.audio_dir);
      else if (r->fmt == FC_MANIFEST_LJSPEECH)
        r->audio_dir = join_path(r->dir, "wavs", 4, NULL);
      else
        r->audio_dir = fc_strdup(r->dir);
      if (!r->audio_dir) goto nomem;
      r->c.audio_dir = r->audio_dir;
    }
    if (!r->data_seen++ && (r->fmt == FC_MANIFEST_LJSPEECH || r->fmt == FC_MANIFEST_TSV) &&
        header_line(buf, (size_t)got, r->fmt == FC_MANIFEST_TSV ? '\t' : '|'))
      continue; /* id|text: the columns' names */
    fc_item *item = mf_new_item(&r->b, r->lineno);
    if (!item) goto nomem;
    int prc = 0;
    size_t body = n; /* the line without its LF or CRLF */
    if (body && buf[body - 1] == '\n') body--;
    if (body && buf[body - 1] == '\r') body--;
    const char sep = r->fmt == FC_MANIFEST_TSV ? '\t' : '|';
    const int columns = r->fmt == FC_MANIFEST_LJSPEECH || r->fmt == FC_MANIFEST_TSV;
    int opens = 0; /* this line opens a quoted field that lines after it continue */
    const int continues = r->quote_left != 0;
    if (continues) { /* no line of its own: no id, no failure record (a comment's way) */
      r->quote_left--;
      prc = mf_item_fail(item, FC_EMANIFEST,
                         "continues line %zu's quoted text (CSV quoting of a text with a line "
                         "break): not a line of its own",
                         r->quote_from);
    } else if (columns && !(r->opts.max_line_bytes && line_bytes > r->opts.max_line_bytes) &&
               !memchr(buf, '\0', n) && mf_csv_quote_open(buf, n, sep, 0, NULL)) {
      find_quoted_break(r, sep);
      opens = r->quote_left != 0;
    }
    if (continues) {
    } else if (memchr(buf, '\0', n)) {
      prc = mf_item_fail(item, FC_EMANIFEST, "line contains a NUL byte");
    } else if (memchr(buf, '\r', body)) { /* old Mac line ends: the file would be one line */
      prc = mf_item_fail(item, FC_EMANIFEST,
                         "a carriage return inside the line (CR line endings? convert them to LF)");
    } else if (r->fmt != FC_MANIFEST_LIST && body >= 3 && (uint8_t)buf[0] == 0xEF &&
               (uint8_t)buf[1] == 0xBB && (uint8_t)buf[2] == 0xBF) {
      /* the first line's BOM is gone (mf_next_line): this one began a file joined to the first,
       * and would begin the id, unseen (a path list's line names a file: its failure shows it) */
      prc =
          mf_item_fail(item, FC_EMANIFEST,
                       "a byte-order mark (U+FEFF) begins the line: a file joined after another "
                       "(cat a.csv b.csv keeps b.csv's)? remove them: sed 's/^\\xEF\\xBB\\xBF//'");
    } else if (r->fmt != FC_MANIFEST_LIST && buf[strspn(buf, " \t")] == '#') {
      prc = mf_item_fail(item, FC_EMANIFEST, MF_COMMENT_WHY);
    } else if (r->fmt != FC_MANIFEST_LIST && r->fmt != FC_MANIFEST_KALDI &&
               !fc_utf8_valid(buf, n)) { /* a path column holds any bytes; ids are checked */
      prc = mf_item_fail_utf8(item, buf, n);
    } else {
      switch (r->fmt) {
      case FC_MANIFEST_LJSPEECH: prc = parse_ljspeech(&r->c, item, buf, n); break;
      case FC_MANIFEST_KALDI: prc = parse_kaldi(&r->c, item, buf, n); break;
      case FC_MANIFEST_JSONL: prc = parse_jsonl(&r->c, item, buf, n); break;
      case FC_MANIFEST_TSV: prc = parse_tsv(&r->c, item, buf, n); break;
      default: prc = parse_list(&r->c, item, buf, n); break;
      }
    }
    if (prc == 0 && opens && !item->err) /* its id is the utterance's: its failure is recorded */
      prc =
          mf_item_fail(item, FC_EMANIFEST,
                       "its text opens a quote that line %zu closes: CSV quoting (pandas' to_csv, "
                       "Python's csv) of a text with a line break, read as separate lines; %s "
                       "fields are not quoted: write them with quoting=csv.QUOTE_NONE, no line "
                       "breaks, or as JSON lines",
                       r->quote_to, sep == '\t' ? "a TSV's" : "LJSpeech's");
    if (prc == 0 && r->opts.max_line_bytes && line_bytes > r->opts.max_line_bytes) /* id parsed */
      prc = mf_item_fail(item, FC_ETOOLONG,
                         "line is %zu bytes, over the limit of %zu a line may have", line_bytes,
                         r->opts.max_line_bytes);
    if (prc == 0) prc = mf_item_finish(&r->b, item);
    if (prc == 0 && columns && !continues) prc = cut_id_field(item, buf, body, sep);
    if (prc < 0) goto nomem;
    /* a shard's items only (the duplicate check saw every id): as fc_item_list_shard */
    if (r->opts.shard_n && (item->id ? fc_shard_of(item->id, strlen(item->id), r->opts.shard_n)
                                     : 0) != r->opts.shard_k) {
      one_clear(r);
      continue;
    }
    *it = item;
    return 1;
  }
nomem:
  fc_why(why, why_len, "out of memory");
  return ENOMEM;
}

int fc_manifest_read(const char *path, const fc_manifest_opts *opts, fc_item_list *out, char *why,
                     size_t why_len) {
  FC_ARGS_WHY(path, out);
  memset(out, 0, sizeof *out);
  reader *r;
  int rc = reader_open(path, opts, &r, why, why_len);
  if (rc) return rc;
  list_builder b = {.out = out};
  const fc_item *it;
  while ((rc = reader_next(r, &it, why, why_len)) == 1) {
    if (opts && opts->on_item) { /* handed over as read, not kept */
      if ((rc = opts->on_item(it, opts->user)) != 0) break;
      continue;
    }
    fc_item *dst = mf_new_item(&b, 0);
    if (!dst) {
      fc_why(why, why_len, "out of memory");
      rc = ENOMEM;
      break;
    }
    *dst = *it; /* the strings move to out */
    r->one.count = 0;
  }
  out->format = reader_format(r);
  reader_close(r);
  if (rc) fc_item_list_free(out);
  return rc;
}
