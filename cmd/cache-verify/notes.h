/* cache-verify's notes on its findings (cmd/cache-verify/notes.c). */
#ifndef FC_CMD_CACHE_VERIFY_NOTES_H
#define FC_CMD_CACHE_VERIFY_NOTES_H
#include "cmd/cli.h"

#include "featcache/fc_verify.h"

/* After a store's finding lines: for each config under which two or more records are missing
 * (the mark of a run that stopped before it finished that config), a note on stdout saying how
 * many, what likely happened and what to do (run it again, or cache-config --drop). */
void cvc_missing_notes(const char *store, const fc_verify_report *r);
/* Utterances with a text entry and no audio entry, or the converse (fc_verify_report's
 * text_only, audio_only): a note each, since a loader reading features and tokens leaves them
 * out. */
void cvc_unpaired_notes(const char *store, const fc_verify_report *r);

#endif
