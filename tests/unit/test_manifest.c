/* Manifest readers: every format, detection, path resolution, CRLF, BOM, a 1 MB line, per-line
 * errors (missing column, bad UTF-8, duplicate id, id of 512 bytes, NUL byte), empty files, paths
 * from arguments and streams, and random bytes in every format (must never crash). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "featcache/fc_format.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_shard.h"

#include "tests/check.h"

static char tmpdir[256];

#define CHECK_STR(got, want)                                                                 \
  do {                                                                                       \
    const char *g_ = (got), *w_ = (want);                                                    \
    if (!((g_ == NULL && w_ == NULL) || (g_ && w_ && strcmp(g_, w_) == 0))) {                \
      failures++;                                                                            \
      fprintf(stderr, "%s:%d: FAIL %s: got '%s', expected '%s'\n", __FILE__, __LINE__, #got, \
              g_ ? g_ : "(null)", w_ ? w_ : "(null)");                                       \
    }                                                                                        \
  } while (0)

/* Write bytes to tmpdir/name; returns the full path (static buffer per call site is enough). */
static const char *write_file(const char *name, const void *data, size_t len) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(2);
  }
  if (len) fwrite(data, 1, len, f);
  fclose(f);
  return path;
}

static const char *write_str(const char *name, const char *s) {
  return write_file(name, s, strlen(s));
}

static char *joined(const char *a, const char *b) {
  static char buf[1024];
  snprintf(buf, sizeof buf, "%s/%s", a, b);
  return buf;
}

static int read_manifest(const char *path, fc_manifest_format fmt, const char *audio_dir,
                         fc_item_list *l) {
  fc_manifest_opts o = {.format = fmt, .audio_dir = audio_dir};
  char why[256] = "";
  int rc = fc_manifest_read(path, &o, l, why, sizeof why);
  if (rc) fprintf(stderr, "  (fc_manifest_read %s: %d %s)\n", path, rc, why);
  return rc;
}

static void test_ljspeech(void) {
  fc_item_list l;
  const char *p = write_str("metadata.csv",
                            "LJ001-0001|Printing, in the only sense|Printing, in the only sense\n"
                            "LJ001-0002|Dr. Smith|Doctor Smith\n"
                            "LJ001-0003|raw only\n"
                            "LJ001-0004|raw|\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.format == FC_MANIFEST_LJSPEECH, "format %d", l.format);
  CHECK(l.count == 4, "count %zu", l.count);
  if (l.count == 4) {
    CHECK_STR(l.items[0].id, "LJ001-0001");
    CHECK_STR(l.items[0].path, joined(tmpdir, "wavs/LJ001-0001.wav"));
    CHECK_STR(l.items[1].text, "Doctor Smith");
    CHECK_STR(l.items[1].text_raw, "Dr. Smith");
    CHECK_STR(l.items[1].text_norm, "Doctor Smith");
    CHECK_STR(l.items[2].text, "raw only");
    CHECK(l.items[2].text_norm == NULL, "no column 3");
    CHECK_STR(l.items[3].text, "raw"); /* empty normalized column: the raw text */
    for (size_t i = 0; i < l.count; i++) {
      CHECK(l.items[i].err == 0, "item %zu err %d %s", i, l.items[i].err, l.items[i].why);
      CHECK(l.items[i].line == i + 1, "line %zu", l.items[i].line);
    }
  }
  fc_item_list_free(&l);

  /* a header line (pandas' to_csv): the columns' names, skipped; line numbers stay the file's */
  const char *h = write_str("header.csv", "\nID|Text|normalized_text\nLJ1|one|one\nid|text\n");
  CHECK(read_manifest(h, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.count == 2, "header: count %zu", l.count);
  if (l.count == 2) {
    CHECK_STR(l.items[0].id, "LJ1");
    CHECK(l.items[0].line == 3, "header: line %zu", l.items[0].line);
    CHECK_STR(l.items[1].id, "id"); /* not the first line: an utterance */
  }
  fc_item_list_free(&l);
  h = write_str("header.tsv", "file_name\ttranscription\nu1\thello\n");
  CHECK(read_manifest(h, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 1, "tsv header: %zu",
        l.count);
  if (l.count == 1) CHECK_STR(l.items[0].id, "u1");
  fc_item_list_free(&l);
  h = write_str("named.csv", "a.wav|one\n"); /* an id that names its file: wavs/a.wav */
  CHECK(read_manifest(h, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 1, "named: %zu", l.count);
  if (l.count == 1) {
    CHECK_STR(l.items[0].id, "a.wav");
    CHECK_STR(l.items[0].path, joined(tmpdir, "wavs/a.wav"));
  }
  fc_item_list_free(&l);
  h = write_str("noheader.csv", "id|hello there\n"); /* an id "id" with a real transcript */
  CHECK(read_manifest(h, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 1, "no header: %zu",
        l.count);
  fc_item_list_free(&l);

  /* text_column 2, audio_dir and audio_ext. */
  fc_manifest_opts o = {.format = FC_MANIFEST_LJSPEECH,
                        .audio_dir = "/data/lj",
                        .text_column = 2,
                        .audio_ext = ".flac"};
  char why[256];
  CHECK(fc_manifest_read(p, &o, &l, why, sizeof why) == 0, "read");
  if (l.count >= 2) {
    CHECK_STR(l.items[1].text, "Dr. Smith");
    CHECK_STR(l.items[1].path, "/data/lj/LJ001-0002.flac");
  }
  fc_item_list_free(&l);

  /* Missing column, too many columns, empty id. */
  p = write_str("bad.csv", "only-an-id\na|b|c|d\n|text\nok|fine\n");
  CHECK(read_manifest(p, FC_MANIFEST_LJSPEECH, NULL, &l) == 0, "read");
  CHECK(l.count == 4, "count %zu", l.count);
  if (l.count == 4) {
    CHECK(l.items[0].err == FC_EMANIFEST && strstr(l.items[0].why, "missing text column"),
          "missing column: %d %s", l.items[0].err, l.items[0].why);
    CHECK(l.items[1].err == FC_EMANIFEST, "4 columns: %d", l.items[1].err);
    CHECK(l.items[2].err == FC_EMANIFEST && strstr(l.items[2].why, "empty id"), "empty id: %s",
          l.items[2].why);
    CHECK(l.items[3].err == 0, "good line after bad ones: %d", l.items[3].err);
  }
  fc_item_list_free(&l);
}

/* A field quoted as CSV quotes it (Python's csv, pandas' to_csv) that holds a line break: each
 * physical line was read as one, the second stored under the id 'A second line"'. The lines from
 * the one that opens the quote through the one that closes it fail: the first with its id, the
 * others without one. A quote that LJSpeech opens and does not close (its transcripts have them),
 * the next line an id, is read as before. */
static void test_quoted_line_break(void) {
  fc_item_list l;
  const char *p = write_str("q.csv",
                            "LJ1|one|one\n"
                            "LJ2|\"in being modern.\nA second line\"|\"in being modern.\n"
                            "A second line\"\n"
                            "LJ3|\"The rules were|\"The rules were\n"
                            "LJ4|strict, he said.\"|strict, he said.\"\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 6, "count %zu", l.count);
  if (l.count == 6) {
    CHECK_STR(l.items[1].id, "LJ2");
    CHECK(l.items[1].err == FC_EMANIFEST &&
              strstr(l.items[1].why, "its text opens a quote that line 4 closes: CSV quoting") &&
              strstr(l.items[1].why, "LJSpeech's fields are not quoted"),
          "opening line: %d %s", l.items[1].err, l.items[1].why);
    for (size_t i = 2; i < 4; i++) {
      CHECK(l.items[i].id == NULL && l.items[i].err == FC_EMANIFEST &&
                strstr(l.items[i].why, "continues line 2's quoted text"),
            "line %zu: %s %s", l.items[i].line, l.items[i].id, l.items[i].why);
    }
    for (size_t i = 0; i < 6; i += i == 0 ? 4 : 1) /* LJ1, LJ3 and LJ4 */
      CHECK(l.items[i].err == 0, "line %zu: %s", l.items[i].line, l.items[i].why);
    CHECK_STR(l.items[4].text, "\"The rules were");
    CHECK_STR(l.items[5].id, "LJ4");
  }
  fc_item_list_free(&l);
  /* two columns, two line breaks and a blank line in the field; a TSV; a quote never closed */
  p = write_str("q2.csv", "a|\"x\n\ny\nz\"\nb|ok\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 4, "count %zu", l.count);
  if (l.count == 4) {
    CHECK(l.items[0].err && strstr(l.items[0].why, "that line 4 closes"), "%s", l.items[0].why);
    CHECK(l.items[1].line == 3 && l.items[2].line == 4 && !l.items[1].id && !l.items[2].id &&
              strstr(l.items[2].why, "continues line 1's"),
          "%zu %zu %s", l.items[1].line, l.items[2].line, l.items[2].why);
    CHECK(l.items[3].err == 0 && l.items[3].line == 5, "b: %s", l.items[3].why);
  }
  fc_item_list_free(&l);
  p = write_str("q.tsv", "a\t\"x\ny\"\nb\tok\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 3, "count %zu", l.count);
  if (l.count == 3) {
    CHECK(l.items[0].err && strstr(l.items[0].why, "a TSV's fields are not quoted"), "%s",
          l.items[0].why);
    CHECK(l.items[1].err && !l.items[1].id && l.items[2].err == 0, "%s", l.items[1].why);
  }
  fc_item_list_free(&l);
  p = write_str("q4.csv",
                "a|\"He said \"\"hi\"\"\"|\"He said \"\"hi\"\"\"\nb|\"Stop!\" he said.\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 2, "count %zu", l.count);
  if (l.count == 2) { /* one line quoted as CSV quotes it: fails; a quotation in a text: read */
    CHECK(l.items[0].err == FC_EMANIFEST && strstr(l.items[0].why, "LJSpeech's fields are not"),
          "%s", l.items[0].why);
    CHECK_STR(l.items[0].id, "a");
    CHECK(l.items[1].err == 0, "%s", l.items[1].why);
  }
  fc_item_list_free(&l);
  p = write_str("q3.csv", "a|\"x\nfoo\nbar\n"); /* never closed: each line as before */
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 3, "count %zu", l.count);
  if (l.count == 3) {
    CHECK(l.items[0].err == 0, "%s", l.items[0].why);
    CHECK(l.items[1].err && strstr(l.items[1].why, "missing text column"), "%s", l.items[1].why);
  }
  fc_item_list_free(&l);
}

static void test_kaldi(void) {
  fc_item_list l;
  const char *p = write_str("wav.scp",
                            "utt1 /abs/a.wav\n"
                            "utt2\trel/b.flac  \n"
                            "utt3\n"
                            "utt4 sox x.wav -t wav - |\n"
                            "utt5  dir with space/c.wav\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.format == FC_MANIFEST_KALDI, "format %d", l.format);
  CHECK(l.count == 5, "count %zu", l.count);
  if (l.count == 5) {
    CHECK_STR(l.items[0].id, "utt1");
    CHECK_STR(l.items[0].path, "/abs/a.wav");
    CHECK_STR(l.items[1].path, joined(tmpdir, "rel/b.flac"));
    CHECK(l.items[1].text == NULL, "no text");
    CHECK(l.items[2].err == FC_EMANIFEST && strstr(l.items[2].why, "missing path"), "%s",
          l.items[2].why);
    CHECK(l.items[3].err == FC_EMANIFEST &&
              strcmp(l.items[3].why,
                     "piped wav.scp entries are not supported: audio is read from files; write "
                     "the command's output to one (sox x.wav -t wav - > utt4.wav) and list that") ==
                  0,
          "%s", l.items[3].why);
    CHECK_STR(l.items[4].path, joined(tmpdir, "dir with space/c.wav"));
  }
  fc_item_list_free(&l);
  /* audio_dir overrides the manifest's directory for relative paths only. */
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, "/corpus", &l) == 0, "read");
  if (l.count == 5) {
    CHECK_STR(l.items[0].path, "/abs/a.wav");
    CHECK_STR(l.items[1].path, "/corpus/rel/b.flac");
  }
  fc_item_list_free(&l);
}

static void test_jsonl(void) {
  fc_item_list l;
  const char *p = write_str(
      "train_manifest.json",
      "{\"audio_filepath\": \"clips/x1.wav\", \"text\": \"hello\", \"duration\": 1.5}\n"
      "{\"audio_filepath\": \"/abs/y.flac\", \"text\": \"caf\\u00e9\", \"id\": \"spk1/y\", "
      "\"offset\": 2.5, \"duration\": 3}\n"
      "{\"text\": \"no audio\"}\n"
      "{\"audio_filepath\": \"z.wav\", \"text\": \n"
      "[1, 2]\n"
      "{\"audio_filepath\": 3}\n"
      "{\"audio_filepath\": \"n.wav\", \"id\": 7}\n"
      "{\"audio_filepath\": \"nt.wav\"}\n"
      "{\"audio_filepath\": \"q.wav\", \"id\": \"a\\nb\"}\n"
      "{\"id\": \"t1\", \"text\": \"text only\"}\n"
      "{\"id\": \"t2\", \"text\": null}\n"
      "{\"audio_filepath\": \"r.wav\", \"id\": 7.5}\n"
      "{\"id\": -12, \"text\": \"integer id, text only\"}\n"
      "{\"id\": 1.5, \"text\": \"real id, text only\"}\n"
      "{\"id\": true, \"text\": \"boolean id, text only\"}\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.format == FC_MANIFEST_JSONL, "format %d", l.format);
  CHECK(l.count == 15, "count %zu", l.count);
  if (l.count == 15) {
    CHECK_STR(l.items[0].id, "x1");
    CHECK_STR(l.items[0].text, "hello");
    CHECK_STR(l.items[0].path, joined(tmpdir, "clips/x1.wav"));
    CHECK_STR(l.items[1].id, "spk1/y");
    CHECK_STR(l.items[1].text, "caf\xc3\xa9");
    CHECK_STR(l.items[1].path, "/abs/y.flac");
    /* NeMo's segment: "offset" and "duration" kept (featurize fails it); none given: 0 */
    CHECK(l.items[0].offset == 0 && l.items[0].duration == 1.5 && l.items[1].offset == 2.5 &&
              l.items[1].duration == 3 && l.items[2].duration == 0,
          "offset, duration: %g %g, %g %g", l.items[0].offset, l.items[0].duration,
          l.items[1].offset, l.items[1].duration);
    /* text but neither audio nor id: a text-only line (tokenize's) that lacks its id says so */
    CHECK(l.items[2].err == FC_EMANIFEST &&
              strcmp(l.items[2].why,
                     "missing \"audio_filepath\" (a text-only line needs a string \"id\")") == 0,
          "%s", l.items[2].why);
    CHECK(l.items[3].err == FC_EMANIFEST && strstr(l.items[3].why, "invalid JSON"), "%s",
          l.items[3].why);
    CHECK(l.items[4].err == FC_EMANIFEST && strstr(l.items[4].why, "object"), "%s", l.items[4].why);
    CHECK(l.items[5].err == FC_EMANIFEST, "non-string path");
    /* an integer id (pandas' to_json of an integer column) is its digits; a real is refused */
    CHECK(l.items[6].err == 0, "integer id: %s", l.items[6].why ? l.items[6].why : "");
    CHECK_STR(l.items[6].id, "7");
    CHECK(l.items[11].err == FC_EMANIFEST &&
              strcmp(l.items[11].why,
                     "\"id\" must be a string or an integer, got a real number (7.5)") == 0,
          "%s", l.items[11].why ? l.items[11].why : "(no error)");
    /* a text-only line whose id is of another kind says so (it said a string "id" is missing) */
    CHECK(l.items[13].err == FC_EMANIFEST &&
              strcmp(l.items[13].why,
                     "\"id\" must be a string or an integer, got a real number (1.5)") == 0,
          "%s", l.items[13].why ? l.items[13].why : "(no error)");
    CHECK(l.items[14].err == FC_EMANIFEST &&
              strcmp(l.items[14].why, "\"id\" must be a string or an integer, got a boolean") == 0,
          "%s", l.items[14].why ? l.items[14].why : "(no error)");
    CHECK(l.items[12].err == 0 && l.items[12].path == NULL, "integer id, text only: %s",
          l.items[12].why ? l.items[12].why : "");
    CHECK_STR(l.items[12].id, "-12");
    CHECK(l.items[7].err == 0 && l.items[7].text == NULL, "text is optional");
    CHECK(l.items[8].err == FC_EFORMAT, "newline in a JSON id: %d", l.items[8].err);
    /* a text-only line (tokenize's use) names its id and has no audio path */
    CHECK(l.items[9].err == 0 && l.items[9].path == NULL, "text-only line: %s", l.items[9].why);
    CHECK_STR(l.items[9].id, "t1");
    CHECK_STR(l.items[9].text, "text only");
    /* an id and a null text: a text-only line without its text, and the reason says so */
    CHECK(l.items[10].err == FC_EMANIFEST &&
              strcmp(l.items[10].why,
                     "missing \"audio_filepath\" (a text-only line with \"id\" "
                     "needs a string \"text\")") == 0,
          "%s", l.items[10].why);
  }
  fc_item_list_free(&l);
}

/* NeMo's "offset" and "duration" that are no number of seconds fail the line (a string was taken as
 * none: the whole file stored under the segment's id); a string that reads whole as a finite
 * number is one (a CSV turned JSON holds "3.2": NeMo reads it with float()); null is none; the id
 * stays the line's */
static void test_jsonl_segment_values(void) {
  fc_item_list l;
  const char *p =
      write_str("seg.jsonl",
                "{\"audio_filepath\": \"a.wav\", \"id\": \"a\", \"offset\": \"2.5s\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"b\", \"duration\": -0.5}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"c\", \"duration\": {}}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"d\", \"offset\": null, "
                "\"duration\": null}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"e\", \"offset\": NaN}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"f\", \"offset\": \"0\", "
                "\"duration\": \" 3.2 \"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"g\", \"duration\": \"1e1\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"h\", \"duration\": \".5\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"i\", \"duration\": \"\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"j\", \"duration\": \"inf\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"k\", \"duration\": \"1e999\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"l\", \"duration\": \"0x10\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"m\", \"duration\": \"-1\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"n\", \"duration\": \"1,5\"}\n"
                "{\"audio_filepath\": \"a.wav\", \"id\": \"o\", \"duration\": \"1.\"}\n");
  CHECK(read_manifest(p, FC_MANIFEST_JSONL, NULL, &l) == 0, "read");
  CHECK(l.count == 15, "count %zu", l.count);
  if (l.count == 15) {
    CHECK(l.items[0].err == FC_EMANIFEST, "junk string offset: err %d", l.items[0].err);
    CHECK_STR(l.items[0].why, "\"offset\" must be a number (seconds), got a string (\"2.5s\")");
    CHECK_STR(l.items[0].id, "a");
    CHECK_STR(l.items[1].why, "\"duration\" must be 0 or more seconds, got -0.5");
    CHECK_STR(l.items[2].why, "\"duration\" must be a number (seconds), got an object");
    CHECK(l.items[3].err == 0 && l.items[3].offset == 0 && l.items[3].duration == 0,
          "null: err %d, %g %g", l.items[3].err, l.items[3].offset, l.items[3].duration);
    CHECK(l.items[4].err == FC_EMANIFEST && l.items[4].why &&
              strstr(l.items[4].why, "NaN and Infinity are not JSON numbers"),
          "NaN: %s", l.items[4].why ? l.items[4].why : "(no error)");
    CHECK(l.items[5].err == 0 && l.items[5].offset == 0 && l.items[5].duration == 3.2,
          "numeric strings: err %d (%s), %g %g", l.items[5].err,
          l.items[5].why ? l.items[5].why : "", l.items[5].offset, l.items[5].duration);
    CHECK(l.items[6].err == 0 && l.items[6].duration == 10, "\"1e1\": %d %g", l.items[6].err,
          l.items[6].duration);
    CHECK(l.items[7].err == 0 && l.items[7].duration == 0.5, "\".5\": %d %g", l.items[7].err,
          l.items[7].duration);
    CHECK_STR(l.items[8].why, "\"duration\" must be a number (seconds), got an empty string");
    CHECK_STR(l.items[9].why, "\"duration\" must be a number (seconds), got a string (\"inf\")");
    CHECK_STR(l.items[10].why, "\"duration\" must be a number (seconds), got a string (\"1e999\")");
    CHECK_STR(l.items[11].why, "\"duration\" must be a number (seconds), got a string (\"0x10\")");
    CHECK_STR(l.items[12].why, "\"duration\" must be 0 or more seconds, got -1");
    CHECK_STR(l.items[13].why, "\"duration\" must be a number (seconds), got a string (\"1,5\")");
    CHECK(l.items[14].err == 0 && l.items[14].duration == 1, "\"1.\": %d %g", l.items[14].err,
          l.items[14].duration);
    CHECK_STR(l.items[8].id, "i");
  }
  fc_item_list_free(&l);
}

/* jansson's "near" text is the line's own bytes: a control character there (an escape sequence
 * after the object, a stray byte) is written as a quoted name writes it (\033), never sent to the
 * terminal as it is */
static void test_jsonl_control_near(void) {
  fc_item_list l;
  const char *p = write_str("ctl.jsonl",
                            "{\"audio_filepath\": \"a.wav\", \"id\": \"y\"} \x1b[2J\n"
                            "{\"audio_filepath\": \"a.wav\", \"id\": 5\x01}\n"
                            "{\"audio_filepath\": \"a.wav\"} \xc2\x9b[2J\n");
  CHECK(read_manifest(p, FC_MANIFEST_JSONL, NULL, &l) == 0, "read");
  CHECK(l.count == 3, "count %zu", l.count);
  if (l.count == 3) {
    CHECK_STR(l.items[0].why, "invalid JSON: end of file expected near '\\033' (column 40)");
    CHECK_STR(l.items[1].why, "invalid JSON: '}' expected near '\\001' (column 36)");
    CHECK_STR(l.items[2].why, "invalid JSON: end of file expected near '\\u009b' (column 29)");
  }
  fc_item_list_free(&l);
}

static void test_list_and_tsv(void) {
  fc_item_list l;
  const char *p = write_str("files.txt", "a/b/c.wav\n/abs/d.e.flac\nnoext\nmy file.wav\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.format == FC_MANIFEST_LIST, "format %d", l.format);
  CHECK(l.count == 4, "count %zu", l.count);
  if (l.count == 4) {
    CHECK_STR(l.items[0].id, "c");
    CHECK_STR(l.items[0].path, joined(tmpdir, "a/b/c.wav"));
    CHECK_STR(l.items[1].id, "d.e");
    CHECK_STR(l.items[1].path, "/abs/d.e.flac");
    CHECK_STR(l.items[2].id, "noext");
    CHECK_STR(l.items[3].id, "my file");
  }
  fc_item_list_free(&l);

  /* First line "my file.wav": a list when that file exists beside the manifest, else Kaldi. */
  p = write_str("spaces.txt", "my file.wav\nother.wav\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.format == FC_MANIFEST_KALDI, "no such file: format %d", l.format);
  if (l.count == 2) CHECK_STR(l.items[0].id, "my");
  fc_item_list_free(&l);
  write_str("my file.wav", "RIFF");
  p = write_str("spaces.txt", "my file.wav\nother.wav\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.format == FC_MANIFEST_LIST, "file exists: format %d", l.format);
  if (l.count == 2) CHECK_STR(l.items[0].id, "my file");
  fc_item_list_free(&l);

  p = write_str("text.tsv", "id1\thello world\nid2\nid3\ta\tb\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.format == FC_MANIFEST_TSV, "format %d", l.format);
  CHECK(l.count == 3, "count %zu", l.count);
  if (l.count == 3) {
    CHECK_STR(l.items[0].text, "hello world");
    CHECK(l.items[0].path == NULL, "tsv has no audio");
    CHECK(l.items[1].err == FC_EMANIFEST && strstr(l.items[1].why, "missing text column"), "%s",
          l.items[1].why);
    CHECK_STR(l.items[2].text, "a\tb");
  }
  fc_item_list_free(&l);
}

static void test_detect(void) {
  CHECK(fc_manifest_detect("x/wav.scp", "a b") == FC_MANIFEST_KALDI, "wav.scp");
  CHECK(fc_manifest_detect("x/segments.scp", "") == FC_MANIFEST_KALDI, ".scp");
  CHECK(fc_manifest_detect("m.jsonl", "") == FC_MANIFEST_JSONL, ".jsonl");
  CHECK(fc_manifest_detect("m.txt", "id1\tsome | text") == FC_MANIFEST_TSV, "tab before bar");
  CHECK(fc_manifest_detect("m.txt", "id1|text\twith tab") == FC_MANIFEST_LJSPEECH,
        "bar before tab");
  CHECK(fc_manifest_detect("m.txt", "  {\"audio_filepath\": 1}") == FC_MANIFEST_JSONL, "{");
  CHECK(fc_manifest_detect("metadata.csv", "LJ|a|b") == FC_MANIFEST_LJSPEECH, "csv bar");
  CHECK(fc_manifest_detect("other", "LJ|a") == FC_MANIFEST_LJSPEECH, "bar");
  CHECK(fc_manifest_detect("metadata.csv", "") == FC_MANIFEST_LJSPEECH, "empty csv");
  CHECK(fc_manifest_detect("t.tsv", "a b") == FC_MANIFEST_TSV, ".tsv");
  CHECK(fc_manifest_detect("t", "id\ttext") == FC_MANIFEST_TSV, "tab");
  /* a wav.scp with a tab between its columns (Kaldi splits on any white space) */
  CHECK(fc_manifest_detect("t", "utt1\t/data/a b.wav\r\n") == FC_MANIFEST_KALDI, "id<TAB>path");
  CHECK(fc_manifest_detect("t.tsv", "utt1\ta.flac") == FC_MANIFEST_KALDI, ".tsv id<TAB>path");
  CHECK(fc_manifest_detect("t", "utt1\tsaid a/b") == FC_MANIFEST_TSV, "a text with '/'");
  CHECK(fc_manifest_detect("t", "utt1\tx\ty.wav") == FC_MANIFEST_TSV, "three columns");
  CHECK(fc_manifest_detect("t", "d/a.wav\tb.wav") == FC_MANIFEST_TSV, "a path first");
  CHECK(fc_manifest_detect("list", "utt1 /data/a.wav") == FC_MANIFEST_KALDI, "id path");
  CHECK(fc_manifest_detect("list", "utt1 a.flac") == FC_MANIFEST_KALDI, "id file");
  /* Ambiguous by content alone; fc_manifest_read looks for the file (test_list_and_tsv). */
  CHECK(fc_manifest_detect("list", "my file.wav") == FC_MANIFEST_KALDI, "space in a path");
  CHECK(fc_manifest_detect("list", "/data/my dir/a.wav") == FC_MANIFEST_LIST, "space in a dir");
  CHECK(fc_manifest_detect("list", "data/a.wav") == FC_MANIFEST_LIST, "path");
  CHECK(fc_manifest_detect(NULL, NULL) == FC_MANIFEST_LIST, "nothing");
  CHECK(fc_manifest_detect("x", "\xEF\xBB\xBF{}") == FC_MANIFEST_JSONL, "BOM then {");

  CHECK(fc_manifest_format_from_name("ljspeech") == FC_MANIFEST_LJSPEECH, "name");
  CHECK(fc_manifest_format_from_name("kaldi") == FC_MANIFEST_KALDI, "name");
  CHECK(fc_manifest_format_from_name("jsonl") == FC_MANIFEST_JSONL, "name");
  CHECK(fc_manifest_format_from_name("list") == FC_MANIFEST_LIST, "name");
  CHECK(fc_manifest_format_from_name("tsv") == FC_MANIFEST_TSV, "name");
  CHECK(fc_manifest_format_from_name("auto") == FC_MANIFEST_AUTO, "name");
  CHECK(fc_manifest_format_from_name("xml") == -1, "unknown");
  CHECK(fc_manifest_format_from_name(NULL) == -1, "NULL");
  for (int f = FC_MANIFEST_AUTO; f <= FC_MANIFEST_TSV; f++)
    CHECK(fc_manifest_format_from_name(fc_manifest_format_name((fc_manifest_format)f)) == f,
          "round trip %d", f);
}

static void test_crlf_bom_blank(void) {
  fc_item_list l;
  const char *p = write_str("crlf.csv",
                            "\xEF\xBB\xBF"
                            "a1|text one|norm one\r\n"
                            "\r\n"
                            "   \n"
                            "a2|text two\r\n"
                            "a3|no newline at end");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.count == 3, "count %zu", l.count);
  if (l.count == 3) {
    CHECK_STR(l.items[0].id, "a1"); /* BOM gone */
    CHECK_STR(l.items[0].text, "norm one");
    CHECK_STR(l.items[1].text, "text two"); /* CR gone */
    CHECK(l.items[1].line == 4, "line numbers count skipped lines: %zu", l.items[1].line);
    CHECK_STR(l.items[2].text, "no newline at end");
  }
  fc_item_list_free(&l);
  /* A BOM is only skipped at the start of the file; one that begins a later line (a file joined
   * after another with cat) fails it, where it began its id unseen. */
  p = write_str("bom2.tsv", "x\ty\n\xEF\xBB\xBFz\tw\n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.count == 2, "count %zu", l.count);
  if (l.count == 2) {
    CHECK(l.items[1].err == FC_EMANIFEST && l.items[1].why &&
              strstr(l.items[1].why, "a byte-order mark (U+FEFF) begins the line") ==
                  l.items[1].why,
          "a later line's BOM: err %d, why %s", l.items[1].err,
          l.items[1].why ? l.items[1].why : "(none)");
    CHECK(l.items[1].id == NULL, "a later line's BOM: id %s", l.items[1].id);
  }
  fc_item_list_free(&l);
  /* CR-only line ends (old Mac files): one line with carriage returns inside, failed with a reason
   * that says so, never read as one utterance with a long text */
  p = write_str("cr.csv", "c1|one\rc2|two\rc3|three\r");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.count == 1 && l.items[0].err == FC_EMANIFEST &&
            strstr(l.items[0].why, "carriage return inside the line"),
        "CR-only: count %zu, err %d, why %s", l.count, l.count ? l.items[0].err : 0,
        l.count ? l.items[0].why : "");
  fc_item_list_free(&l);
}

static void test_long_line(void) {
  size_t n = 1 << 20;
  char *buf = malloc(n + 64);
  size_t k = (size_t)sprintf(buf, "big|");
  memset(buf + k, 'x', n);
  k += n;
  k += (size_t)sprintf(buf + k, "\nsmall|y\n");
  const char *p = write_file("big.csv", buf, k);
  fc_item_list l;
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.count == 2, "count %zu", l.count);
  if (l.count == 2) {
    CHECK(l.items[0].err == 0 && l.items[0].text && strlen(l.items[0].text) == n,
          "1 MB text kept whole: %zu", l.items[0].text ? strlen(l.items[0].text) : 0);
    CHECK_STR(l.items[1].text, "y");
  }
  fc_item_list_free(&l);
  free(buf);
}

/* max_line_bytes: a line of that many bytes with its LF (or CRLF) is read; one more fails
 * FC_ETOOLONG with its length and its id (a TSV's id comes before the cut), unheld; the lines
 * after it read as before; a last line without LF counts its bytes alone. */
static void test_max_line(void) {
  /* "a\t" + 14 x + "\n" = 17; "b\t" + 15 x + "\n" = 18; "c\t" + 14 x + "\r\n" = 18 */
  const char *p = write_str("max.tsv",
                            "a\txxxxxxxxxxxxxx\nb\txxxxxxxxxxxxxxx\nc\txxxxxxxxxxxxxx\r\n"
                            "d\ty\ne\txxxxxxxxxxxxxxxxxxxx");
  fc_manifest_opts o = {.format = FC_MANIFEST_TSV, .max_line_bytes = 17};
  fc_item_list l;
  char why[256] = "";
  CHECK(fc_manifest_read(p, &o, &l, why, sizeof why) == 0 && l.count == 5, "read: %s, %zu", why,
        l.count);
  if (l.count == 5) {
    CHECK(l.items[0].err == 0 && l.items[0].text && strlen(l.items[0].text) == 14, "at the limit");
    CHECK(l.items[1].err == FC_ETOOLONG && l.items[1].id && !strcmp(l.items[1].id, "b") &&
              l.items[1].why &&
              !strcmp(l.items[1].why, "line is 18 bytes, over the limit of 17 a line may have"),
          "one over: %d %s", l.items[1].err, l.items[1].why ? l.items[1].why : "");
    CHECK(l.items[2].err == FC_ETOOLONG, "CRLF counted: %d", l.items[2].err);
    CHECK(l.items[3].err == 0 && l.items[3].line == 4, "the next line: %d", l.items[3].err);
    CHECK_STR(l.items[3].text, "y");
    CHECK(l.items[4].err == FC_ETOOLONG && l.items[4].why && strstr(l.items[4].why, "is 22 bytes"),
          "last line without LF: %s", l.items[4].why ? l.items[4].why : "");
  }
  fc_item_list_free(&l);
  o.max_line_bytes = 0; /* no limit: every line whole */
  CHECK(fc_manifest_read(p, &o, &l, why, sizeof why) == 0 && l.count == 5 && !l.items[1].err &&
            !l.items[4].err,
        "unlimited");
  fc_item_list_free(&l);
}

static void test_bad_lines(void) {
  fc_item_list l;
  /* Bad UTF-8, duplicate ids (2nd and 3rd flagged), NUL byte, ids of 511 and 512 bytes. */
  char id511[512], id512[513];
  memset(id511, 'a', 511);
  id511[511] = '\0';
  memset(id512, 'b', 512);
  id512[512] = '\0';
  char content[4096];
  size_t k = 0;
  k += (size_t)sprintf(content + k, "u1|caf\xff\n");
  k += (size_t)sprintf(content + k, "u2|ok\n");
  k += (size_t)sprintf(content + k, "u2|again\n");
  k += (size_t)sprintf(content + k, "u2|and again\n");
  memcpy(content + k, "u3|nul\0byte\n", 12);
  k += 12;
  k += (size_t)sprintf(content + k, "%s|t\n%s|t\n", id511, id512);
  k += (size_t)sprintf(content + k, "\xc0\xaf|overlong slash\n");
  const char *p = write_file("bad_lines.csv", content, k);
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "read");
  CHECK(l.count == 8, "count %zu", l.count);
  if (l.count == 8) {
    CHECK(l.items[0].err == FC_EUTF8, "bad UTF-8: %d", l.items[0].err);
    CHECK(l.items[1].err == 0, "first u2 fine: %d", l.items[1].err);
    CHECK(l.items[2].err == FC_EDUPLICATE && strstr(l.items[2].why, "u2"), "dup: %d",
          l.items[2].err);
    CHECK(l.items[3].err == FC_EDUPLICATE, "third u2: %d", l.items[3].err);
    CHECK(l.items[4].err == FC_EMANIFEST && strstr(l.items[4].why, "NUL"), "NUL: %d",
          l.items[4].err);
    CHECK(l.items[5].err == 0, "511-byte id: %d %s", l.items[5].err, l.items[5].why);
    CHECK(l.items[6].err == FC_EFORMAT && strstr(l.items[6].why, "512 bytes"), "512: %d %s",
          l.items[6].err, l.items[6].why);
    CHECK(l.items[7].err == FC_EUTF8, "overlong: %d", l.items[7].err);
    /* a line refused before its id was read names its first column, when that is an id */
    CHECK(!l.items[0].id && l.items[0].id_field && !strcmp(l.items[0].id_field, "u1"),
          "bad UTF-8: id_field %s", l.items[0].id_field ? l.items[0].id_field : "(null)");
    CHECK(!l.items[4].id && l.items[4].id_field && !strcmp(l.items[4].id_field, "u3"),
          "NUL: id_field %s", l.items[4].id_field ? l.items[4].id_field : "(null)");
    CHECK(!l.items[7].id_field, "overlong: its first column is no id");
    CHECK(!l.items[2].id_field && !l.items[1].id_field, "an item with an id has no id_field");
    for (size_t i = 0; i < l.count; i++)
      CHECK(l.items[i].err == 0 || (l.items[i].why && l.items[i].why[0]), "item %zu has a reason",
            i);
  }
  fc_item_list_free(&l);
}

static void test_empty_and_missing(void) {
  fc_item_list l;
  const char *p = write_str("empty.csv", "");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0, "empty file reads");
  CHECK(l.count == 0 && l.format == FC_MANIFEST_LJSPEECH, "count %zu format %d", l.count, l.format);
  fc_item_list_free(&l);
  p = write_str("blank.txt", "\n\r\n  \n");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 0, "blank lines only");
  fc_item_list_free(&l);
  p = write_str("bom_only.txt", "\xEF\xBB\xBF");
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &l) == 0 && l.count == 0, "BOM only");
  fc_item_list_free(&l);
  char why[256] = "";
  fc_manifest_opts o = {0};
  CHECK(fc_manifest_read(joined(tmpdir, "nope.csv"), &o, &l, why, sizeof why) == ENOENT,
        "missing file");
  CHECK(why[0] != '\0', "reason for missing file");
  CHECK(fc_manifest_read(tmpdir, &o, &l, why, sizeof why) == EISDIR, "directory: %s", why);
  CHECK(fc_manifest_read(tmpdir, NULL, &l, NULL, 0) == EISDIR, "NULL opts and why");
}

static void test_paths_and_stream(void) {
  fc_item_list l;
  const char *paths[] = {"data/wavs/LJ001.wav", "x/LJ001.flac", "/abs/y", "", "z.tar.gz"};
  CHECK(fc_items_from_paths(paths, 5, &l) == 0, "from paths");
  CHECK(l.count == 5, "count %zu", l.count);
  if (l.count == 5) {
    CHECK_STR(l.items[0].id, "LJ001");
    CHECK_STR(l.items[0].path, "data/wavs/LJ001.wav");
    CHECK(l.items[0].line == 0, "args have no line");
    CHECK(l.items[1].err == FC_EDUPLICATE, "same id from another dir: %d", l.items[1].err);
    CHECK_STR(l.items[2].id, "y");
    CHECK(l.items[3].err == FC_EMANIFEST, "empty path: %d", l.items[3].err);
    CHECK_STR(l.items[4].id, "z.tar");
  }
  fc_item_list_free(&l);
  CHECK(fc_items_from_paths(NULL, 0, &l) == 0 && l.count == 0, "no paths");
  fc_item_list_free(&l);
  /* a folder's id is its name, whatever slashes end it; slashes alone are "/" */
  const char *dirs[] = {"corpus/", "a//b.d//", "/", "//"};
  const char *dir_ids[] = {"corpus", "b", "/", "/"};
  for (size_t i = 0; i < 4; i++) {
    CHECK(fc_items_from_paths(&dirs[i], 1, &l) == 0 && l.count == 1, "%s", dirs[i]);
    if (l.count == 1) CHECK_STR(l.items[0].id, dir_ids[i]);
    fc_item_list_free(&l);
  }
  /* dots that begin a name are the name's, never an extension's (Python's splitext): "..wav" was
   * stored as ".", a name no utterance has ("..." as ".."); a later dot still begins one */
  const char *dotted[] = {"a/..wav", "b/...flac", ".hidden", "c/.x.wav", "..a.wav", "b..wav"};
  const char *dotted_ids[] = {"..wav", "...flac", ".hidden", ".x", "..a", "b."};
  CHECK(fc_items_from_paths(dotted, 6, &l) == 0 && l.count == 6, "dotted: %zu", l.count);
  for (size_t i = 0; i < l.count && i < 6; i++) {
    CHECK(l.items[i].err == 0, "%s: err %d", dotted[i], l.items[i].err);
    CHECK_STR(l.items[i].id, dotted_ids[i]);
  }
  fc_item_list_free(&l);

  static const char input[] = "a/one.wav\r\n\n/b/two.flac\n";
  FILE *f = fmemopen((void *)input, sizeof input - 1, "r");
  CHECK(fc_items_from_stream(f, &l) == 0, "from stream");
  fclose(f);
  CHECK(l.count == 2, "count %zu", l.count);
  if (l.count == 2) {
    CHECK_STR(l.items[0].id, "one");
    CHECK_STR(l.items[0].path, "a/one.wav");
    CHECK_STR(l.items[1].path, "/b/two.flac");
    CHECK(l.items[1].line == 3, "stream line %zu", l.items[1].line);
  }
  fc_item_list_free(&l);
  fc_item_list_free(NULL);

  /* CR line endings (old Mac): the whole list is one line, said as --manifest's path list says it
   * (it was "id contains a carriage return", or a file not found) */
  static const char cr[] = "a/one.wav\rb/two.wav\r";
  f = fmemopen((void *)cr, sizeof cr - 1, "r");
  CHECK(fc_items_from_stream(f, &l) == 0, "CR stream");
  fclose(f);
  CHECK(l.count == 1 && l.items[0].err == FC_EMANIFEST && l.items[0].why &&
            strstr(l.items[0].why, "CR line endings?") && !l.items[0].path,
        "CR stream: %zu items, %s", l.count, l.count ? l.items[0].why : "");
  fc_item_list_free(&l);
}

/* Ids from names that are not UTF-8, or that hold a backslash: each stray byte is \xNN, and a
 * backslash that "x" and two hex digits follow is \x5c, so that a name spelled a\xe9 with a real
 * backslash and the Latin-1 name a<e9> have two ids (they had one: the second was a duplicate,
 * and across runs one replaced the other), and undoing the escapes gives the name back. */
static void test_escaped_ids(void) {
  fc_item_list l;
  const char *paths[] = {"d/caf\xe9.wav",    "e/caf\\xe9.wav", "f/a\\b.wav", "g/a\\x5c.wav",
                         "h/x\\xZ9\\x4.wav", "i/\\\xe9.wav",   "j/\\XE9.wav"};
  const char *want[] = {"caf\\xe9",   "caf\\x5cxe9", "a\\b", "a\\x5cx5c",
                        "x\\xZ9\\x4", "\\\\xe9",     "\\XE9"};
  const size_t n = sizeof paths / sizeof paths[0];
  CHECK(fc_items_from_paths(paths, n, &l) == 0 && l.count == n, "from paths: %zu", l.count);
  for (size_t i = 0; i < l.count && i < n; i++) {
    CHECK(l.items[i].err == 0, "%s: err %d (%s)", paths[i], l.items[i].err,
          l.items[i].why ? l.items[i].why : "");
    CHECK_STR(l.items[i].id, want[i]);
  }
  fc_item_list_free(&l);

  /* a Latin-1 name of 200 bytes gives an id of 800: the reason says why, and what to do (it said
   * "id is 800 bytes" of a 200-byte name) */
  char name[208] = "d/", *p = name + 2;
  memset(p, 0xe9, 200);
  strcpy(p + 200, ".wav");
  const char *one[] = {name};
  CHECK(fc_items_from_paths(one, 1, &l) == 0 && l.count == 1, "long Latin-1 name");
  if (l.count == 1)
    CHECK(l.items[0].err == FC_EFORMAT && l.items[0].why &&
              strstr(l.items[0].why, "id is 800 bytes") && strstr(l.items[0].why, "\\xNN") &&
              strstr(l.items[0].why, "manifest"),
          "long Latin-1 name: %s", l.items[0].why ? l.items[0].why : "");
  fc_item_list_free(&l);
}

/* Random bytes (with newlines, bars, tabs, braces, quotes) in every format: no crash, no leak
 * (ASan in the sanitizer build), every item either valid or with a reason. */
static void test_random_bytes(void) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  static const char alphabet[] = "|\t \n\r{}\":,/.\\aZ\xff\xc3\xa9\0";
  for (int round = 0; round < 200; round++) {
    size_t n = (size_t)(round * 37 % 3000);
    char *buf = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      buf[i] = (s >> 40) % 3 ? alphabet[(s >> 8) % (sizeof alphabet - 1)] : (char)(s >> 24);
    }
    const char *p = write_file("fuzz", buf, n);
    for (int fmt = FC_MANIFEST_AUTO; fmt <= FC_MANIFEST_TSV; fmt++) {
      fc_item_list l;
      fc_manifest_opts o = {.format = (fc_manifest_format)fmt};
      char why[128];
      int rc = fc_manifest_read(p, &o, &l, why, sizeof why);
      CHECK(rc == 0, "fuzz round %d format %d: %d %s", round, fmt, rc, why);
      for (size_t i = 0; i < l.count; i++) {
        const fc_item *it = &l.items[i];
        if (it->err) {
          CHECK(it->why != NULL, "reason");
        } else {
          CHECK(it->id && fc_id_check(it->id, strlen(it->id)) == 0, "valid id");
          CHECK(fmt == FC_MANIFEST_TSV || it->path != NULL || l.format == FC_MANIFEST_TSV,
                "path present");
        }
      }
      fc_item_list_free(&l);
    }
    free(buf);
  }
}

static void remove_tree(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* fc_manifest_read with on_item: the items it keeps otherwise, handed over one at a time (the
 * duplicate check over the whole stream); a nonzero return stops it and is returned; a shard
 * filter keeps what fc_item_list_shard keeps. */
typedef struct stream_ctx {
  const fc_item_list *want;
  size_t n, dup, bad;
  size_t stop_at;
} stream_ctx;

static int on_item(const fc_item *it, void *user) {
  stream_ctx *c = user;
  const fc_item *w = c->n < c->want->count ? &c->want->items[c->n] : NULL;
  if (!(w && same_str(it->id, w->id) && same_str(it->path, w->path) &&
        same_str(it->text, w->text) && it->err == w->err && it->line == w->line))
    c->bad++;
  c->dup += it->err == FC_EDUPLICATE;
  return ++c->n == c->stop_at ? 42 : 0;
}

static void test_stream(void) {
  char text[65536];
  size_t len = 0;
  for (int i = 0; i < 600; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, "u%03d|text %d|text %d\n", i % 500, i,
                            i); /* ids 0..99 again after 500 lines: duplicates far apart */
  len += (size_t)snprintf(text + len, sizeof text - len, "broken line\n");
  const char *p = write_str("stream.csv", text);
  fc_item_list all, none;
  CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &all) == 0 && all.count == 601, "read whole");
  stream_ctx c = {.want = &all};
  fc_manifest_opts o = {.on_item = on_item, .user = &c};
  char why[256];
  CHECK(fc_manifest_read(p, &o, &none, why, sizeof why) == 0 && none.count == 0 &&
            none.format == FC_MANIFEST_LJSPEECH,
        "streamed: %s", why);
  CHECK(c.n == 601 && c.dup == 100 && c.bad == 0, "%zu items, %zu duplicates, %zu differ", c.n,
        c.dup, c.bad);
  c = (stream_ctx){.want = &all, .stop_at = 10};
  CHECK(fc_manifest_read(p, &o, &none, why, sizeof why) == 42 && c.n == 10, "stopped: %zu", c.n);
  /* three shards: each item in exactly the one fc_item_list_shard keeps, in order */
  size_t seen = 0;
  for (uint32_t k = 0; k < 3; k++) {
    fc_item_list want;
    CHECK(read_manifest(p, FC_MANIFEST_AUTO, NULL, &want) == 0);
    fc_item_list_shard(&want, k, 3);
    c = (stream_ctx){.want = &want};
    fc_manifest_opts so = {.shard_k = k, .shard_n = 3, .on_item = on_item, .user = &c};
    CHECK(fc_manifest_read(p, &so, &none, why, sizeof why) == 0);
    CHECK(c.n == want.count && c.bad == 0, "shard %u: %zu of %zu items, %zu differ", k, c.n,
          want.count, c.bad);
    seen += c.n;
    fc_item_list_free(&want);
  }
  CHECK(seen == 601, "the shards hold %zu of 601", seen);
  fc_item_list_free(&all);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/fc_manifest_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 2;
  }
  test_ljspeech();
  test_quoted_line_break();
  test_kaldi();
  test_jsonl();
  test_jsonl_control_near();
  test_jsonl_segment_values();
  test_list_and_tsv();
  test_detect();
  test_crlf_bom_blank();
  test_long_line();
  test_max_line();
  test_bad_lines();
  test_empty_and_missing();
  test_paths_and_stream();
  test_escaped_ids();
  test_random_bytes();
  test_stream();
  remove_tree(tmpdir);
  if (failures) {
    fprintf(stderr, "test_manifest: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_manifest: ok\n");
  return 0;
}
