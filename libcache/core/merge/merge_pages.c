/* The stores' pages checked before the merge opens them (merge_pages.h). LMDB trusts its pages:
 * an input's leaf node given a flag no featcache db has (a flipped bit) had the merge crash
 * (SIGSEGV) in its walk of that input, and an output whose free list names a page its audio
 * B-tree uses would have the merge's writes handed that page, over the tree. The check is the
 * Loader's (libcache/core/verify/verify_guard.c): of an input, only a page LMDB's reads could
 * crash on refuses it (a damaged free list or meta page is a writer's concern: the merge reads
 * only the B-trees); of the output, which the merge writes, any damage of its pages does. */
#include "libcache/core/merge/merge_pages.h"

#include "formats/common/why.h"
#include "libcache/core/verify/verify_guard.h"

#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>

_Static_assert(sizeof(sig_atomic_t) == sizeof(int), "the stop flag read as an int");

int merge_check_pages(const char *out_dir, const char *const *inputs, size_t n,
                      const fc_merge_opts *o, fc_merge_stats *st, char *why, size_t why_len) {
  volatile const int *stop = (volatile const int *)o->stop;
  vf_page_damage d;
  for (size_t i = 0; i < n; i++) {
    int rc = vf_pages_damaged(inputs[i], 3, o->nolock, stop, &d);
    if (rc == FC_EINTR) return rc;
    if (rc != 1 || !d.unsafe) continue;
    fc_why(why, why_len,
           "%s: damaged (%s): LMDB's reads of that page could crash the merge; nothing merged "
           "(cache-verify says more; merge the other stores without it)",
           FC_WHY_NAME(inputs[i]), d.page);
    st->pages_refused = 1;
    return FC_EFORMAT;
  }
  char mdb[4096];
  struct stat sb;
  if (snprintf(mdb, sizeof mdb, "%s/data.mdb", out_dir) >= (int)sizeof mdb || stat(mdb, &sb) != 0)
    return 0; /* a new output */
  int rc = vf_pages_damaged(out_dir, 1, 0, stop, &d);
  if (rc != 1) return rc;
  fc_why(why, why_len,
         "%s: damaged (env data.mdb: %s): nothing merged into it (cache-verify says more; merge "
         "into a new store)",
         FC_WHY_NAME(out_dir), d.problem);
  st->pages_refused = 1;
  return FC_EFORMAT;
}
