/* featcache — files the tools export (a vocab, a chart, a trace, a profile), written whole or not
 * at all: the bytes go to a temporary file beside the target (TARGET.tmp.PID.N, created with mode
 * 0666 less the umask), which is flushed, synced and renamed over the target only when every write
 * succeeded. A failure at any step removes the temporary and leaves the target as it was (absent,
 * or its previous contents). A target that exists and is not a regular file (a FIFO, a terminal)
 * is written in place: there is nothing to rename over; so is one that names an open descriptor
 * (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), through a dup of it, whatever it is: a
 * regular file (`> vocab.txt`) keeps its offset and append mode, and /dev is never written.
 * Fault-injection builds (formats/common/fault.h) fail these steps at the `write` site: the open, the
 * write (flush), the sync, the close and the rename each count one call. */
#ifndef FC_OUTFILE_H
#define FC_OUTFILE_H

#include <stdio.h>

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fc_outfile fc_outfile;

/* Begin writing `path`. On success *out is the caller's to end with fc_outfile_commit or
 * fc_outfile_abort (exactly one). Returns 0 or an errno value (the temporary could not be created:
 * EACCES, ENOENT for a missing directory, ENOSPC ...). */
FC_API int fc_outfile_open(const char *path, fc_outfile **out);
/* The stream to write to; valid until the commit or abort. Write errors are kept by the stream
 * (ferror) and reported by fc_outfile_commit. */
FC_API FILE *fc_outfile_stream(fc_outfile *o);
/* Flush, sync, close and rename over the target; frees o. Returns 0, or the errno value of the
 * step that failed (a write error of the stream included), and then the target is untouched. */
FC_API int fc_outfile_commit(fc_outfile *o);
/* Close and remove the temporary, leaving the target untouched; frees o. NULL is ignored. */
FC_API void fc_outfile_abort(fc_outfile *o);
/* One buffer as the whole file: open, write, commit. Returns 0 or an errno value. */
FC_API int fc_outfile_write(const char *path, const void *data, size_t len);

/* Print s (NUL-terminated; NULL prints "") to f as a JSON string literal: '"' and '\\' escaped,
 * newline, tab and carriage return as \n \t \r, other bytes below 0x20 as \u00XX, UTF-8
 * characters as they are, and each byte that is no part of one (a Latin-1 file name) as \ufffd,
 * so that the output is valid UTF-8 and parses whatever s holds. The one string writer of every
 * JSON the tools and the library print (--json reports, profiles, charts' data); write errors stay
 * in f (ferror). */
FC_API void fc_json_write_string(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif

#endif
