/* The merge output's page cache (libcache/core/merge/writeback.c): written back to the disk as commits
 * go, by a helper thread, and dropped once on the disk behind a window at the file's end, so that
 * the merge reuses a few MiB of page cache instead of taking fresh memory for every page; the
 * file's blocks allocated ahead of the writes. */
#ifndef FC_MERGE_WRITEBACK_H
#define FC_MERGE_WRITEBACK_H

#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>

typedef struct fc_writeback {
  MDB_env *env;
  int fd; /* the output's data.mdb; -1: nothing to do */
  uint64_t psize; /* LMDB's page size */
  uint64_t step; /* committed bytes between two passes */
  uint64_t unkicked; /* bytes committed since the last pass was asked for */
  /* shared with the helper thread, under mu (the thread's own: dropping, dropped_to) */
  int dropping; /* 1: drop written pages; 0 after a failure or where unsupported */
  uint64_t dropped_to; /* the file's pages below this offset were dropped by the last pass */
  int allocating; /* 1: allocate blocks ahead; 0 after a failure (ENOSPC), where unsupported, or
                     when a step ahead is more than half the disk's free room */
  uint64_t allocated_to; /* blocks were allocated up to here, or tried to be (a failed fallocate
                            may keep some): beyond the file's end, trimmed */
  int threaded, quit, err;
  uint64_t asked, done; /* file ends: the last pass asked for, the last pass finished */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
} fc_writeback;

/* Set w up for env's data file, a pass every `step` committed bytes (0: 16 MiB), the last 4 ×
 * step of the file kept in the page cache. Never fails: without the file's descriptor, on a file
 * system that keeps pages in memory only (tmpfs), w does nothing; without a thread, the passes
 * run in the caller. writeback_end must be called before env is closed. */
void writeback_init(fc_writeback *w, MDB_env *env, uint64_t step);

/* After each commit of `bytes`: every `step` bytes, asks for a pass (started at once, not awaited):
 * blocks are allocated up to 16 × step beyond the file's end (fallocate, the size kept) when
 * fewer than 8 × step are left, write-back of everything committed is started, then the pages
 * more than 4 × step below the file's end are waited for and dropped from the page cache. Waits
 * only when the passes lag 16 × step behind, so that the page cache stays bounded. Returns 0, or
 * the errno of a failed write-back (EIO, ENOSPC; sticky): the commits are in the page cache, the
 * disk refused them. */
int writeback_committed(fc_writeback *w, uint64_t bytes);

/* Stops the helper thread (after its current pass; passes asked for and not begun are left to the
 * caller's sync), frees the blocks allocated beyond the file's end (in a write transaction, so that
 * no other writer is extending the file), and returns the sticky error, or 0. May be called
 * again, and on a zeroed w. A killed merge leaves those blocks (at most 16 × step) until the next
 * merge into the same store ends. */
int writeback_end(fc_writeback *w);

#endif
