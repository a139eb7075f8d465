/* cache-verify's notes on its findings (cmd/cache-verify/notes.c). */
#ifndef FC_CMD_CACHE_VERIFY_NOTES_H
#define FC_CMD_CACHE_VERIFY_NOTES_H
#include "cmd/cli.h"

#include "featcache/fc_verify.h"

/* After a store's finding lines: for each config under which two or more records are missing
 * (the mark of a run that stopped before it finished that config), a note on stdout saying how
 * many, what likely happened and what to do (run it again, or cache-config --drop). writer: who
 * has the store open for writing now ("process 1234 (featurize)"), or "": then the records may be
 * those a run still under way has not committed, and the note says to check again when it has
 * finished instead. Returns the notes said. */
int cvc_missing_notes(const char *store, const fc_verify_report *r, const char *writer);
/* Who has store open for writing now (its writer lock, docs/FORMAT.md): "process 1234
 * (featurize)", "another process", or "" when none is seen. */
void cvc_writer_now(const char *store, char *who, size_t n);
/* A store with errors that writer (not "") has open for writing: a note that what the run has
 * not committed is not in the check (an empty store its first commit has not reached yet). */
void cvc_writer_note(const char *store, const fc_verify_report *r, const char *writer);
/* Utterances with a text entry and no audio entry, or the converse (fc_verify_report's
 * text_only, audio_only): a note each, since a loader reading features and tokens leaves them
 * out. */
void cvc_unpaired_notes(const char *store, const fc_verify_report *r);
/* Reader slots of dead processes cleared on request (--clear-stale-readers), not because the
 * table was full (its warning says those): a note saying how many. */
void cvc_stale_note(const char *store, const fc_verify_report *r);

#endif
