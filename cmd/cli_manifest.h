/* A manifest that is none — a UTF-16 or UTF-32 file, binary data, a JSON document that is no JSON
 * lines — refused before anything is done, for cmd/cli.h (which includes it after the helpers for
 * paths on the command line). Header-only, as cli.h. */
#ifndef FC_CMD_CLI_MANIFEST_H
#define FC_CMD_CLI_MANIFEST_H

#include "featcache/fc_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- a manifest that is none ----------------------------------------------------------------- */
/* Does a regular file's first line (its first 64 KiB at most) hold a NUL byte? 0 when it holds
 * none, or is no regular file, or cannot be read (the reader says why). */
static inline int fc_cli_first_line_has_nul(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char buf[1 << 16];
  const size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  for (size_t i = 0; i < n && buf[i] != '\n'; i++)
    if (!buf[i]) return 1;
  return 0;
}

/* The UTF-16 or UTF-32 encoding that text starting with b[0..n) is in, as iconv names it: by its
 * byte-order mark ("UTF-32" before "UTF-16": FF FE 00 00 begins both), else by the NUL bytes of
 * ASCII characters in the first 32 bytes (a file saved without a mark: "UTF-16LE"...); NULL when
 * it is neither (an audio file). *bom: the bytes of its mark (0 without one). */
static inline const char *fc_cli_wide_text(const unsigned char *b, size_t n, size_t *bom) {
  static const struct {
    const char *name;
    unsigned char mark[4];
    size_t len;
  } marks[] = {{"UTF-32", {0xFF, 0xFE, 0, 0}, 4},
               {"UTF-32", {0, 0, 0xFE, 0xFF}, 4},
               {"UTF-16", {0xFF, 0xFE}, 2},
               {"UTF-16", {0xFE, 0xFF}, 2}};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (n >= marks[i].len && memcmp(b, marks[i].mark, marks[i].len) == 0)
      return *bom = marks[i].len, marks[i].name;
  *bom = 0;
  static const char *const names[] = {"UTF-32LE", "UTF-32BE", "UTF-16LE", "UTF-16BE"};
  for (int k = 0; k < 4; k++) { /* unit 4 or 2 bytes; the ASCII byte first (LE) or last (BE) */
    const size_t unit = k < 2 ? 4 : 2, lo = k % 2 ? unit - 1 : 0, len = n < 32 ? n - n % unit : 32;
    int ok = len >= 2 * unit;
    for (size_t i = 0; i < len && ok; i++) ok = (i % unit == lo) == (b[i] != 0) && b[i] < 0x80;
    if (ok) return names[k];
  }
  return NULL;
}

/* A manifest whose first line holds a NUL byte, refused (exit 2) before anything is done, since
 * every line would fail alike: UTF-16 or UTF-32 text, said with the iconv that converts it (when
 * its first bytes can be read again: is_file), or not text at all (hint: what it may be). */
static inline _Noreturn void fc_cli_refuse_nul_manifest(const char *manifest, int is_file,
                                                        const char *hint) {
  const char *name = strcmp(manifest, "-") == 0 ? "(stdin)" : manifest;
  unsigned char head[32];
  FILE *f = is_file ? fopen(manifest, "rb") : NULL;
  const size_t n = f ? fread(head, 1, sizeof head, f) : 0;
  if (f) fclose(f);
  size_t bom;
  const char *enc = fc_cli_wide_text(head, n, &bom);
  if (enc) {
    char q[4 * 4096 + 8], mark[40] = "no byte-order mark";
    if (bom)
      snprintf(mark, sizeof mark, "its byte-order mark %02X %02X%s", head[0], head[1],
               bom == 4 ? (head[0] ? " 00 00" : " FE FF") : "");
    fc_cli_warn(name,
                "not a manifest in UTF-8: %s text (%s); convert it: iconv -f %s -t UTF-8 %s >NEW",
                enc, mark, enc, fc_cli_quoted(manifest, q, sizeof q));
  } else {
    fc_cli_warn(name, "not a manifest: its first line holds a NUL byte (%s)", hint);
  }
  exit(FC_EXIT_USAGE);
}

/* A JSON manifest that is no JSON lines (a manifest file read as JSON lines whose first non-blank
 * line opens an array, what json.dump of a list writes, or is a lone "{", an object spread over
 * lines by indent=2): each line would fail as invalid JSON, and a line that holds a whole object
 * be read alone. Refused (exit 2) before anything is done, with the jq that converts it. */
static inline void fc_cli_refuse_json_document(const char *manifest, fc_manifest_format fmt) {
  struct stat st;
  if (fmt != FC_MANIFEST_JSONL || !manifest || strcmp(manifest, "-") == 0 ||
      stat(manifest, &st) != 0 || !S_ISREG(st.st_mode))
    return;
  FILE *f = fopen(manifest, "re");
  char line[256];
  const char *kind = NULL;
  for (int first = 1; f && fgets(line, sizeof line, f); first = 0) {
    char *l = line + (first && memcmp(line, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0);
    l += strspn(l, " \t\r\n");
    if (!*l && strchr(line, '\n')) continue; /* a blank line */
    if (*l == '[')
      kind = "a JSON array";
    else if (*l == '{' && !l[1 + strspn(l + 1, " \t\r\n")])
      kind = "JSON objects spread over lines";
    break;
  }
  if (f) fclose(f);
  if (!kind) return;
  char q[4 * 4096 + 8];
  fc_cli_quoted(manifest, q, sizeof q);
  fc_cli_warn(manifest,
              "%s, not JSON lines (one object a line, as NeMo's manifests): convert it: jq -c %s "
              "%s >NEW.jsonl",
              kind, kind[0] == 'a' ? "'.[]'" : ".", q);
  exit(FC_EXIT_USAGE);
}

/* The same document read whole from stdin or a pipe (--manifest -, <(...), a list on stdin): no name
 * says JSON there, and a format detected as a list of paths (or a wav.scp) took its first line,
 * "[..." or "{...", for a path. Refused as for a file, exit 2 (manifest: as given, "-" for
 * stdin; name: as said). */
static inline void fc_cli_refuse_json_stream(const char *manifest, const char *name,
                                             const fc_item_list *items, fc_manifest_format fmt) {
  if ((fmt != FC_MANIFEST_LIST && fmt != FC_MANIFEST_KALDI) || !items->count) return;
  const fc_item *it = &items->items[0];
  const char *first = fmt == FC_MANIFEST_LIST ? it->path : it->id, *slash = strrchr(manifest, '/');
  const size_t dir = slash ? (size_t)(slash - manifest) + 1 : 0; /* a path is made the folder's */
  if (first && fmt == FC_MANIFEST_LIST && dir && strncmp(first, manifest, dir) == 0) first += dir;
  if (!first || (first[0] != '[' && first[0] != '{')) return;
  const int array = first[0] == '[';
  fc_cli_warn(name,
              "%s, not JSON lines (one object a line, as NeMo's manifests): convert it: jq -c %s "
              "FILE >NEW.jsonl",
              array ? "a JSON array" : "JSON objects spread over lines", array ? "'.[]'" : ".");
  exit(FC_EXIT_USAGE);
}

#endif
