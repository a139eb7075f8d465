/* Internal: cache-merge's check of the stores' pages before it opens them (merge_pages.c). */
#ifndef FC_MERGE_PAGES_H
#define FC_MERGE_PAGES_H

#include "featcache/fc_merge.h"

/* Each input's pages checked as a reader's (vf_pages_damaged, pages_only 3), then an existing
 * out_dir's as a writer's (every page, the free list and the meta pages): 0 when sound (or not
 * checkable: the opens say what they meet); FC_EFORMAT with st->pages_refused and why naming the
 * store and the page when an input has a page LMDB's reads could crash on, or the output any
 * damage; FC_EINTR when *o->stop was set. Before any store is opened: LMDB allows one
 * environment of a file per process. */
int merge_check_pages(const char *out_dir, const char *const *inputs, size_t n,
                      const fc_merge_opts *o, fc_merge_stats *st, char *why, size_t why_len);

#endif
