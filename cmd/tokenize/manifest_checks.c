/* tokenize's checks of a manifest before the run: what it would read it as, and the files that
 * would store every line wrongly (no transcripts, comma-separated, pandas' index, extra columns),
 * refused with the way out (docs/tokenize.md "Refused before the run"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/tokenize/manifest_checks.h"

__attribute__((constructor)) static void name_the_tool(void) { fc_cli_tool = "tokenize"; }

/* Can the manifest be read? (The run reads it as it goes: what fc_manifest_read would refuse at
 * once is refused here, before anything is written.) */
int tkm_manifest_readable(const char *path, char *why, size_t why_len) {
  FILE *f = fopen(path, "re");
  struct stat st;
  int rc = f ? 0 : errno;
  if (!rc && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) rc = EISDIR;
  if (f) fclose(f);
  if (rc) snprintf(why, why_len, rc == EISDIR ? "is a directory" : "cannot open: %s", strerror(rc));
  return rc;
}

/* The format a manifest file is read as without --manifest-format (its name and first non-blank
 * line, as fc_manifest_read detects it); FC_MANIFEST_AUTO when it holds no line, or is no regular
 * file: a FIFO (<(...)) is read once, whole, and its items say their format. */
fc_manifest_format tkm_detected_format(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return FC_MANIFEST_AUTO;
  FILE *f = fopen(path, "re");
  char line[1 << 16]; /* a line's first 64 KiB decide (a file of one long line: no more) */
  fc_manifest_format fmt = FC_MANIFEST_AUTO;
  for (int first = 1; f && fgets(line, sizeof line, f); first = 0) {
    const size_t n = strlen(line);
    if (n && line[n - 1] != '\n') { /* the rest of a longer line: read, not kept */
      int c;
      while ((c = getc(f)) != EOF && c != '\n') {}
    }
    char *l = line;
    if (first && n >= 3 && memcmp(l, "\xEF\xBB\xBF", 3) == 0) l += 3;
    l[strcspn(l, "\r\n")] = '\0';
    if (l[strspn(l, " \t")] == '\0' || l[strspn(l, " \t")] == '#') continue; /* a comment fails */
    fmt = fc_manifest_detect(path, l);
    break;
  }
  if (f) fclose(f);
  return fmt;
}

/* A manifest read as a wav.scp or a list of paths holds no text: every line would fail alike. */
void tkm_refuse_textless(const char *manifest, fc_manifest_format fmt) {
  if (fmt != FC_MANIFEST_KALDI && fmt != FC_MANIFEST_LIST) return;
  fc_cli_warn(manifest,
              "holds no transcripts: it reads as %s; tokenize reads LJSpeech (id|text), TSV "
              "(id<TAB>text) and JSON lines with \"text\" (--manifest-format ljspeech, tsv, "
              "jsonl); a Kaldi text file (an id, a space, the words) is TSV after "
              "sed 's/ /\\t/'",
              fmt == FC_MANIFEST_KALDI ? "a Kaldi wav.scp (id path)" : "a list of audio paths");
  exit(FC_EXIT_USAGE);
}

/* The first two non-blank lines of a manifest file (their first 1 KiB, a BOM and the line end
 * removed): how many there are, none for a file of fmt other than LJSpeech or TSV, or no file. */
static int first_lines(const char *manifest, fc_manifest_format fmt, char line[2][1024]) {
  struct stat st; /* a FIFO's lines come once: not read here */
  const int file = stat(manifest, &st) == 0 && S_ISREG(st.st_mode);
  FILE *f = file && (fmt == FC_MANIFEST_LJSPEECH || fmt == FC_MANIFEST_TSV) ? fopen(manifest, "re")
                                                                            : NULL;
  int n = 0;
  while (f && n < 2 && fgets(line[n], sizeof line[n], f)) {
    char *l = line[n];
    if (!strchr(l, '\n')) /* the rest of a longer line: read, not kept */
      for (int c; (c = getc(f)) != EOF && c != '\n';) {}
    if (strncmp(l, "\xEF\xBB\xBF", 3) == 0) memmove(l, l + 3, strlen(l + 3) + 1);
    l[strcspn(l, "\r\n")] = '\0';
    if (l[strspn(l, " \t")] != '\0') n++; /* else blank */
  }
  if (f) fclose(f);
  return n;
}

/* A comma-separated .csv (Hugging Face's audiofolder metadata, file_name,transcription) read as
 * LJSpeech by its name, every line failing for want of its bar: its first two non-blank lines hold
 * commas and no bar. Says so and how to convert it (as featurize refuses it), and exits 2. */
void tkm_refuse_comma_csv(const char *manifest, fc_manifest_format fmt) {
  char line[2][1024];
  if (fmt != FC_MANIFEST_LJSPEECH || first_lines(manifest, fmt, line) < 2) return;
  for (int i = 0; i < 2; i++)
    if (!strchr(line[i], ',') || strchr(line[i], '|')) return;
  char q[4 * 4096 + 8];
  fc_cli_warn(manifest,
              "comma-separated, not LJSpeech's id|text (Hugging Face's audiofolder metadata?): "
              "convert it to JSON lines, its first line (the columns' names) dropped, which "
              "featurize reads too: python3 -c 'import csv,json,sys; "
              "r=csv.reader(open(sys.argv[1],newline=\"\")); next(r); "
              "[print(json.dumps({\"audio_filepath\":l[0],\"text\":l[1]})) for l in r]' "
              "%s >NEW.jsonl",
              fc_cli_quoted(manifest, q, sizeof q));
  exit(FC_EXIT_USAGE);
}

/* pandas' to_csv without index=False: a first line of columns' names after an empty one (the
 * index's, "<TAB>file_name<TAB>text"), then a number. Each line would be stored under it, its text
 * the file's name and the transcript: says so and how to drop the column, and exits 2. */
void tkm_refuse_pandas_index(const char *manifest, fc_manifest_format fmt) {
  char line[2][1024];
  const char sep = fmt == FC_MANIFEST_TSV ? '\t' : '|';
  if (first_lines(manifest, fmt, line) < 2 || line[0][0] != sep) return;
  static const char name[] = "0123456789 -_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  int names = 0;
  const char *p;
  for (p = line[0]; *p == sep; names++) { /* each a column's name: a letter or '_', then a word */
    if (!*++p || !strchr(name + 12, *p)) return;
    p += strspn(p, name);
  }
  const size_t digits = strspn(line[1], "0123456789");
  if (*p || names < 2 || !digits || line[1][digits] != sep) return;
  char q[4 * 4096 + 8];
  fc_cli_warn(manifest,
              "its first column is pandas' index (to_csv without index=False: its first line, "
              "the columns' names, begins with %s, the next with a number): every line would be "
              "stored under that number, not its id; write it with to_csv(..., index=False), or "
              "drop the column: cut %s-f2- %s >NEW",
              sep == '\t' ? "a TAB" : "'|'", sep == '\t' ? "" : "-d'|' ",
              fc_cli_quoted(manifest, q, sizeof q));
  exit(FC_EXIT_USAGE);
}

/* A header line that names a column after the text ("file_name<TAB>transcription<TAB>speaker",
 * "id|text|speaker"): skipped as the columns' names, but a TSV's text is the rest of its line, and
 * LJSpeech's third column the normalized text. Says which columns, the way out, and exits 2. */
void tkm_refuse_extra_columns(const char *manifest, fc_manifest_format fmt, int text_column) {
  static const char *const texts[] = {"text", "transcri", "sentence", "normali", "label", "words"};
  char line[2][1024], *col[8], names[1100] = "", q[4 * 4096 + 8];
  const char sep = fmt == FC_MANIFEST_TSV ? '\t' : '|';
  int n = 0, text[8] = {0};
  if (first_lines(manifest, fmt, line) < 1) return;
  for (char *p = line[0]; p && n < 8; p = p ? p + 1 : NULL) {
    col[n] = p;
    if ((p = strchr(p, sep)) != NULL) *p = '\0';
    if (!*col[n] || col[n][strspn(col[n],
                                  "_- abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789")])
      return; /* no column's name: a line of data */
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
      text[n] |= strcasestr(col[n], texts[k]) != NULL;
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", n ? ", " : "", col[n]);
    n++;
  }
  if (n < 3 || !text[1] || strchr(col[1], ' ')) return; /* a transcript has spaces */
  fc_cli_quoted(manifest, q, sizeof q);
  if (fmt == FC_MANIFEST_TSV)
    fc_cli_warn(manifest,
                "its first line names %d columns (%s), but a TSV's text is the rest of the line: "
                "each transcript would be stored with the columns after it; keep the id and the "
                "text: cut -f1,2 %s >NEW",
                n, names, q);
  else if (n == 3 && !text[2] && text_column != 2)
    fc_cli_warn(
        manifest,
        "its first line names the columns %s|%s|%s, and the third is read as the "
        "normalized text, but '%s' is none: give --text-column 2 (the text), or keep the id "
        "and the text: cut -d'|' -f1,2 %s >NEW",
        col[0], col[1], col[2], col[2], q);
  else
    return;
  exit(FC_EXIT_USAGE);
}

/* A run over a manifest file read as it goes (streamed: NULL when it was read whole before) that
 * stopped with rc FC_ETOOLONG met a line with no line break in its first FC_MANIFEST_LINE_MAX
 * bytes: said with the manifest and the line (the library's run returns the code alone), and 1;
 * 0 for any other stop. */
/* Does reading path to its end fail with rc (a read error of the manifest, not of the store)? */
static int read_fails(const char *path, int rc) {
  FILE *f = fopen(path, "re");
  if (!f) return errno == rc;
  char buf[1 << 16];
  while (fread(buf, 1, sizeof buf, f) == sizeof buf) {}
  const int e = ferror(f) ? errno : 0;
  fclose(f);
  return e == rc;
}

int tkm_said_long_line(const char *streamed, int rc, int build_vocab) {
  const char *kept = build_vocab
                         ? ", nothing stored (--build-vocab: the vocab is the whole manifest's)"
                         : ", the lines before it stored";
  if (streamed && rc > 0 && rc != FC_ETOOLONG && rc != ENOMEM && read_fails(streamed, rc)) {
    fc_cli_warn(streamed, "cannot read it: %s; the run stopped there%s", strerror(rc), kept);
    return 1;
  }
  if (rc != FC_ETOOLONG || !streamed) return 0;
  FILE *f = fopen(streamed, "re");
  size_t line = 1, len = 0, at = 0;
  int c;
  while (f && !at && (c = getc(f)) != EOF) {
    if (c == '\n')
      line++, len = 0;
    else if (++len >= FC_MANIFEST_LINE_MAX)
      at = line;
  }
  if (f) fclose(f);
  char where[48] = "a line";
  if (at) snprintf(where, sizeof where, "line %zu", at);
  fc_cli_warn(streamed,
              "%s has no line break in its first %zu MiB (the most a manifest line may have): not "
              "a manifest (a binary file? a stream without newlines?); the run stopped there%s",
              where, FC_MANIFEST_LINE_MAX >> 20, kept);
  return 1;
}
