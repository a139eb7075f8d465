/* The utterances a loader's epochs hold when its options name them: the ids of a manifest and a
 * list of ids (a train / dev split of one store). The index (loader_index.c) asks ld_wanted for
 * each id it walks, before it becomes an item or a problem; after the walks, the ids of the
 * subset that no store held (ld_subset_unseen) become problems of their own (loader.c). The
 * subset is kept during open only. */
#include "libcache/core/loader/loader_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/alloc.h"
#include "formats/common/why.h"

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int ld_subset_begin(fc_loader *l, const fc_loader_opts *o, char *why, size_t why_len) {
  if (!o->manifest && !o->ids) return 0;
  if (o->manifest) {
    char w[400] = "";
    int rc = fc_manifest_read(o->manifest, NULL, &l->want_list, w, sizeof w);
    if (rc) {
      fc_why(why, why_len, "manifest %s: %s", FC_WHY_NAME(o->manifest), w[0] ? w : fc_strerror(rc));
      return rc;
    }
  }
  size_t cap = l->want_list.count + o->n_ids;
  l->want = fc_malloc((cap ? cap : 1) * sizeof *l->want);
  if (!l->want) return ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < l->want_list.count; i++) { /* a line featurize refuses is none */
    const fc_item *it = &l->want_list.items[i];
    if (!it->err && it->id && it->id[0]) l->want[n++] = it->id;
  }
  for (size_t i = 0; i < o->n_ids; i++) {
    if (!o->ids[i]) {
      fc_why(why, why_len, "ids[%zu] is NULL", i);
      return FC_ECONFIG;
    }
    l->want[n++] = o->ids[i];
  }
  qsort(l->want, n, sizeof *l->want, str_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || strcmp(l->want[m - 1], l->want[i]) != 0) l->want[m++] = l->want[i];
  l->n_want = m;
  l->want_seen = fc_calloc(m ? m : 1, 1);
  if (!l->want_seen) return ENOMEM;
  if (!o->manifest || !o->n_ids) return 0;
  /* both: which ids came from the ids (an unstored one is said "asked for", not "in the
   * manifest"): the ids sorted apart, each want looked up among them */
  const char **asked = fc_malloc(o->n_ids * sizeof *asked);
  l->want_asked = fc_calloc(m ? m : 1, 1);
  if (!asked || !l->want_asked) {
    free(asked);
    return ENOMEM;
  }
  memcpy(asked, o->ids, o->n_ids * sizeof *asked);
  qsort(asked, o->n_ids, sizeof *asked, str_cmp);
  for (size_t i = 0; i < m; i++)
    l->want_asked[i] = bsearch(&l->want[i], asked, o->n_ids, sizeof *asked, str_cmp) != NULL;
  free(asked);
  return 0;
}

int ld_wanted(fc_loader *l, const void *id, size_t id_len) {
  if (!l->want) return 1;
  size_t lo = 0, hi = l->n_want;
  while (lo < hi) { /* the first want >= id (ids are UTF-8 without NUL: strcmp's order) */
    size_t mid = lo + (hi - lo) / 2;
    const char *w = l->want[mid];
    size_t wl = strlen(w);
    int c = memcmp(w, id, wl < id_len ? wl : id_len);
    if (c == 0) c = wl < id_len ? -1 : wl > id_len;
    if (c == 0) {
      l->want_seen[mid] = 1;
      return 1;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

const char *ld_subset_unseen(const fc_loader *l, size_t *i) {
  while (*i < l->n_want && l->want_seen[*i]) ++*i;
  return *i < l->n_want ? l->want[(*i)++] : NULL;
}

const fc_item *ld_subset_refused(const fc_loader *l, size_t *i) {
  while (*i < l->want_list.count) {
    const fc_item *it = &l->want_list.items[(*i)++];
    if (!it->err || it->err == FC_EDUPLICATE || !it->id || !it->id[0]) continue;
    if (!bsearch(&it->id, l->want, l->n_want, sizeof *l->want, str_cmp)) return it;
  }
  return NULL;
}

const char *ld_subset_source(const fc_loader *l, size_t i) {
  int asked = l->want_asked ? l->want_asked[i - 1] : !l->want_list.count;
  return asked ? "asked for" : "in the manifest";
}

void ld_subset_free(fc_loader *l) {
  free(l->want);
  free(l->want_seen);
  free(l->want_asked);
  fc_item_list_free(&l->want_list);
  l->want = NULL;
  l->want_seen = NULL;
  l->want_asked = NULL;
  l->n_want = 0;
}
