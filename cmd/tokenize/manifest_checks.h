/* tokenize's checks of a manifest before the run (cmd/tokenize/manifest_checks.c). */
#ifndef FC_CMD_TOKENIZE_MANIFEST_CHECKS_H
#define FC_CMD_TOKENIZE_MANIFEST_CHECKS_H
#include "cmd/cli.h"

#include "featcache/fc_manifest.h"

/* Can the manifest be read? (The run reads it as it goes: what fc_manifest_read would refuse at
 * once is refused before anything is written.) 0, or an errno with why (a sentence) set. */
int tkm_manifest_readable(const char *path, char *why, size_t why_len);

/* The format a manifest file is read as without --manifest-format (its name and first non-blank
 * line); FC_MANIFEST_AUTO when it holds no line, or is no regular file. */
fc_manifest_format tkm_detected_format(const char *path);

/* Each says what is wrong with a manifest read as fmt, and the way out, and exits 2; or returns:
 * read as a wav.scp or a list of paths (no transcripts); a comma-separated .csv read as LJSpeech;
 * pandas' to_csv without index=False; a first line naming a column after the text. */
void tkm_refuse_textless(const char *manifest, fc_manifest_format fmt);
void tkm_refuse_comma_csv(const char *manifest, fc_manifest_format fmt);
void tkm_refuse_pandas_index(const char *manifest, fc_manifest_format fmt);
void tkm_refuse_extra_columns(const char *manifest, fc_manifest_format fmt, int text_column);

/* A run over the manifest file streamed (NULL: read whole before) stopped with rc: a line with no
 * line break in its first FC_MANIFEST_LINE_MAX bytes, or a read error of the manifest (reading it
 * again fails with rc: EIO is the manifest's, not the store's), said, naming the manifest (and the
 * line), and what became of the lines before it (stored; nothing, when build_vocab: the vocab pass
 * met it), and 1; else 0, nothing said. */
int tkm_said_long_line(const char *streamed, int rc, int build_vocab);

#endif
