/* The page check before an open (verify_guard.h): cache-verify's first step alone, and of its
 * findings the one a caller refuses on. LMDB trusts its pages: a flipped bit that puts a node's
 * offset or size past its page has LMDB's reads run off it — a training run's loader crashed
 * there, hours in, and cache-merge crashed walking an input — so a reader (the Loader, cache-merge
 * of its inputs) checks them first, and a writer (cache-merge into an existing store) also checks
 * the free list its writes would take pages from. One function for both, so that they refuse the
 * same stores and name the same finding: the one that stopped the walk (the findings are sorted by
 * their words, not by when they were made: another page's may come before it). */
#include "libcache/core/verify/verify_guard.h"

#include "featcache/fc_verify.h"

#include <stdio.h>
#include <string.h>

/* The words cache-verify's step 1 gives the finding that stopped its walk (verify_pages.c): "B-tree
 * damaged (PAGE): LMDB's reads of that page could crash, ..." */
static const char unsafe_open[] = "B-tree damaged (",
                  unsafe_close[] = "): LMDB's reads of that page could crash";

int vf_pages_damaged(const char *path, int pages_only, int nolock, volatile const int *stop,
                     vf_page_damage *d) {
  memset(d, 0, sizeof *d);
  fc_verify_opts vo;
  fc_verify_opts_init(&vo);
  vo.pages_only = pages_only;
  vo.threads = 1;
  vo.nolock = nolock;
  vo.stop = stop; /* a big store's walk from a cold disk takes minutes: Ctrl-C ends it */
  fc_verify_report r;
  int rc = fc_verify_store(path, &vo, &r, NULL, 0), found = 0;
  if (rc == FC_EINTR || (stop && *stop)) { /* (a stop after the walk: nothing opened either) */
    fc_verify_report_free(&r);
    return FC_EINTR;
  }
  if (rc) { /* not checkable: the caller's open says what it meets */
    fc_verify_report_free(&r);
    return 0;
  }
  d->unsafe = r.unsafe_pages != 0;
  for (size_t i = 0; i < r.count; i++) {
    const fc_verify_finding *f = &r.findings[i];
    if (f->severity != FC_VERIFY_ERROR || strcmp(f->db, "env") || !f->key ||
        strcmp(f->key, "data.mdb"))
      continue; /* not the pages' (an empty store, no meta): the caller's open says it */
    const int stopper = d->unsafe && strstr(f->problem, unsafe_close);
    if (found && !stopper) continue;
    snprintf(d->problem, sizeof d->problem, "%s", f->problem);
    found = 1;
    if (stopper) break;
  }
  fc_verify_report_free(&r);
  if (!found && d->unsafe) /* the stopping finding not kept (never so): still refused */
    snprintf(d->problem, sizeof d->problem, "a page LMDB's reads could crash on");
  const char *at = strncmp(d->problem, unsafe_open, sizeof unsafe_open - 1) == 0
                       ? d->problem + sizeof unsafe_open - 1
                       : NULL;
  const char *end = at ? strstr(at, unsafe_close) : NULL;
  if (end)
    snprintf(d->page, sizeof d->page, "%.*s", (int)(end - at), at);
  else
    snprintf(d->page, sizeof d->page, "%s", d->problem);
  return found || d->unsafe;
}
