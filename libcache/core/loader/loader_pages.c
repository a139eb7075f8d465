/* FC_LOADER_CHECK_PAGES: a store's pages checked before the loader opens it. LMDB trusts its
 * pages: a node offset, key or value size that a flipped bit points past its page, or a node
 * flag no featcache db has, has its reads run off the page — a training run's loader crashed
 * there, hours in, where cache-verify reports the page. The check is cache-verify's first step
 * (fc_verify_opts.pages_only 3: every branch and leaf page the B-trees use read through the map,
 * each one's node layout checked, a record's pages counted from its size as the loader's reads
 * take them); only a page the reads could crash on fails the open — a damaged free list or
 * meta page is a writer's concern, not a reader's. May call: verify/ (fc_verify.h), libc. */
#include "libcache/core/loader/loader_int.h"

#include "featcache/fc_verify.h"
#include "formats/common/why.h"

#include <string.h>

int ld_check_pages(const char *path, int nolock, volatile const int *stop, char *why,
                   size_t why_len) {
  fc_verify_opts vo;
  fc_verify_opts_init(&vo);
  vo.pages_only = 3; /* a record's pages counted from its size: its first page not read */
  vo.threads = 1;
  vo.nolock = nolock ? 1 : 0;
  vo.stop = stop; /* a big store's walk from a cold disk takes minutes: Ctrl-C ends it */
  fc_verify_report r;
  int rc = fc_verify_store(path, &vo, &r, NULL, 0);
  if (rc == FC_EINTR || (stop && *stop)) { /* (a stop after the walk: nothing opened either) */
    fc_verify_report_free(&r);
    fc_why(why, why_len, "%s: interrupted while checking its pages: not opened", FC_WHY_NAME(path));
    return FC_EINTR;
  }
  if (rc || !r.unsafe_pages) { /* sound, or not checkable: the open says what it meets */
    fc_verify_report_free(&r);
    return 0;
  }
  const char *problem = "a page LMDB's reads could crash on";
  for (size_t i = 0; i < r.count; i++) /* the finding that stopped the walk, told by its words */
    if (r.findings[i].severity == FC_VERIFY_ERROR &&
        strstr(r.findings[i].problem, "): LMDB's reads of that page could crash"))
      problem = r.findings[i].problem;
  fc_why(why, why_len, "%s: damaged (%s): not opened (cache-verify says more)", FC_WHY_NAME(path),
         problem);
  fc_verify_report_free(&r);
  return FC_EFORMAT;
}
