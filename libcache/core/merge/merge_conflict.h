/* Internal: what differs between two values of one key that cache-merge reports as a conflict
 * (merge_conflict.c), for fc_merge_conflict.detail; and an entry too damaged to merge. */
#ifndef FC_MERGE_CONFLICT_H
#define FC_MERGE_CONFLICT_H

#include <stddef.h>

#include "libcache/core/store/store_int.h"

/* One line into buf (len bytes, NUL-terminated): for db FC_DB_AUDIO the audio digests, or with one
 * digest the source paths, or with one path the mtimes; for FC_DB_TEXT the transcripts (short ones
 * whole, long ones from near their first difference), quoted, with C escapes; for FC_DB_META the
 * sizes. x and y are the two values. */
void merge_describe(int db, const MDB_val *x, const MDB_val *y, char *buf, size_t len);

/* 1 when entry v of db FC_DB_AUDIO or FC_DB_TEXT is damaged as cache-verify's entry check finds it
 * (too short to decode; an audio entry with no sample rate or channels; a transcript that is not
 * UTF-8, or that does not hash to the entry's text digest: its tokens were made from another
 * text), said in one line into why; else 0. */
int merge_entry_damaged(int db, const MDB_val *v, char *why, size_t len);

#endif
