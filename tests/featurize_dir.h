/* The unit tests' store maker: featurize paths[0..n) into the store at dir (made if need be) with
 * cfg, through the library (no CLI), the store opened without syncs. 0, or the error. */
#ifndef FC_TESTS_FEATURIZE_DIR_H
#define FC_TESTS_FEATURIZE_DIR_H

#include "featcache/fc_featurize.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_store.h"

static inline int featurize_dir(const char *dir, const fc_mel_config *cfg, const char *const *paths,
                                size_t n) {
  fc_item_list items;
  int rc = fc_items_from_paths(paths, n, &items);
  if (rc) return rc;
  fc_store *s;
  if ((rc = fc_store_open(dir, FC_STORE_CREATE | FC_STORE_NOSYNC, &s)) == 0) {
    fc_featurize_opts o;
    fc_featurize_opts_init(&o);
    fc_featurize_stats st;
    char why[256];
    rc = fc_featurize_run(s, cfg, items.items, items.count, &o, &st, why, sizeof why);
    fc_store_close(s);
  }
  fc_item_list_free(&items);
  return rc;
}

#endif
