/* Internal: what differs between two values of one key that cache-merge reports as a conflict
 * (merge_conflict.c), for fc_merge_conflict.detail. */
#ifndef FC_MERGE_CONFLICT_H
#define FC_MERGE_CONFLICT_H

#include <stddef.h>

#include "libcache/core/store/store_int.h"

/* One line into buf (len bytes, NUL-terminated): for db FC_DB_AUDIO the audio digests, or with one
 * digest the source paths, or with one path the mtimes; for FC_DB_TEXT the transcripts (short ones
 * whole, long ones from near their first difference), quoted, with C escapes; for FC_DB_META the
 * sizes. x and y are the two values. */
void merge_describe(int db, const MDB_val *x, const MDB_val *y, char *buf, size_t len);

#endif
