/* The page check a caller runs on a store before it opens it (verify_guard.c): the Loader's
 * (FC_LOADER_CHECK_PAGES, libcache/core/loader/loader_pages.c) and cache-merge's of its inputs and
 * its output (libcache/core/merge/merge.c). Internal: not exported. */
#ifndef FC_VERIFY_GUARD_H
#define FC_VERIFY_GUARD_H

#include <stddef.h>

/* What vf_pages_damaged found. */
typedef struct vf_page_damage {
  /* 1: a page of a data tree LMDB's reads could crash on (a node offset, key or value size past
   * its page; a node flag no featcache db has): the finding that stopped the walk is the one said
   * below. 0: damage a writer meets (the free list, a meta page), the first such finding. */
  int unsafe;
  /* the finding's words, as cache-verify reports them in db "env", key "data.mdb" */
  char problem[1024];
  /* where and what, cache-verify's parenthesis: "page 12 of the audio db: a node with flags no
   * featcache db's entries have (node 0)" when unsafe; else the whole problem */
  char page[1024];
} vf_page_damage;

/* The pages of the store at path checked as cache-verify's first step checks them
 * (fc_verify_opts.pages_only: 1 every page the B-trees use, then the free list and the meta pages;
 * 2 the free list and the meta pages alone; 3 a reader's: as 1 with each record's pages counted
 * from its size), with its own environment, closed again: LMDB allows one environment of a file
 * per process, so this comes before the caller's open. nolock as fc_verify_opts.nolock (-1, 0,
 * 1). Returns 1 when it finds damage (*d said), 0 when the pages are sound or the store cannot be
 * checked (none there, an empty one, not the format, out of memory: the caller's open says what it
 * meets), FC_EINTR when *stop was set during the walk or right after it (nothing said). stop may be
 * NULL. */
int vf_pages_damaged(const char *path, int pages_only, int nolock, volatile const int *stop,
                     vf_page_damage *d);

#endif
