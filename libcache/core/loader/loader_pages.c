/* FC_LOADER_CHECK_PAGES: a store's pages checked before the loader opens it. LMDB trusts its
 * pages: a node offset, key or value size that a flipped bit points past its page, or a node
 * flag no featcache db has, has its reads run off the page — a training run's loader crashed
 * there, hours in, where cache-verify reports the page. The check is cache-verify's first step
 * (vf_pages_damaged, pages_only 3: every branch and leaf page the B-trees use read through the
 * map, each one's node layout checked, a record's pages counted from its size as the loader's
 * reads take them), the one cache-merge runs on its inputs; only a page the reads could crash on
 * fails the open — a damaged free list or meta page is a writer's concern, not a reader's.
 * May call: verify/ (verify_guard.h), libc. */
#include "libcache/core/loader/loader_int.h"

#include "formats/common/why.h"
#include "libcache/core/verify/verify_guard.h"

int ld_check_pages(const char *path, int nolock, volatile const int *stop, char *why,
                   size_t why_len) {
  vf_page_damage d;
  int rc = vf_pages_damaged(path, 3, nolock ? 1 : 0, stop, &d);
  if (rc == FC_EINTR) {
    fc_why(why, why_len, "%s: interrupted while checking its pages: not opened", FC_WHY_NAME(path));
    return FC_EINTR;
  }
  if (rc != 1 || !d.unsafe) return 0; /* sound, or not checkable: the open says what it meets */
  fc_why(why, why_len, "%s: damaged (%s): not opened (cache-verify says more)", FC_WHY_NAME(path),
         d.problem);
  return FC_EFORMAT;
}
