/* loader-bench --compare over several stores: the order the loader documents for them (stores in
 * the order given, ids in byte order within each; docs/loader.md "Orders"), found from each
 * store's audio db, so that the on-the-fly run can go in that order and the cache run be checked
 * against it. */
#include "cmd/loader-bench/loaderbench.h"

#include "featcache/fc_store.h"
#include "formats/common/alloc.h"
#include "formats/common/why.h"
#include "libcache/core/store/store_lock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int lb_store_unwritable(const char *dir) { return store_lock_unwritable(dir); }

int lb_dataset_order(const char *const *stores, size_t n_stores, int nolock,
                     const fc_digest *mel_config, const lb_item *items, size_t n_items,
                     lb_item **out, size_t *n_out, size_t *missing, char *why, size_t why_len) {
  *out = NULL;
  *n_out = *missing = 0;
  if (why && why_len) why[0] = '\0';
  /* an id may be held by several stores (a shard given twice, under --partial): the loader reads
   * it once, from the first store given that holds it (docs/loader.md "Which utterances") */
  size_t cap = n_items ? n_items : 1;
  lb_item *o = fc_malloc(cap * sizeof *o);
  unsigned char *held = fc_calloc(n_items ? n_items : 1, 1);
  int rc = o && held ? 0 : ENOMEM;
  size_t n = 0;
  for (size_t s = 0; s < n_stores && !rc; s++) {
    fc_store *st = NULL;
    fc_rtxn *t = NULL;
    rc = fc_store_open(stores[s], FC_STORE_RDONLY | (nolock ? FC_STORE_NOLOCK : 0), &st);
    if (!rc) rc = fc_store_read_begin(st, &t);
    for (size_t i = 0; i < n_items && !rc; i++) {
      if (held[i]) continue; /* an earlier store holds it */
      const void *v;
      size_t vl;
      int g = fc_rtxn_get(t, FC_DB_AUDIO, items[i].id, strlen(items[i].id), &v, &vl);
      if (g == FC_ENOTFOUND) continue;
      if (!g && mel_config) { /* the loader yields an utterance that has features of the config */
        fc_audio_entry e;
        fc_digest key;
        if ((g = fc_audio_entry_decode(v, vl, &e)) == 0) {
          fc_record_key(&e.digest, mel_config, &key);
          g = fc_rtxn_get(t, FC_DB_FEAT, key.bytes, sizeof key.bytes, &v, &vl);
          if (g == FC_ENOTFOUND) continue;
        }
      }
      if (g) {
        rc = g;
        break;
      }
      if (n == cap) {
        lb_item *p = fc_realloc(o, 2 * cap * sizeof *o);
        if (!p) {
          rc = ENOMEM;
          break;
        }
        o = p;
        cap *= 2;
      }
      o[n++] = items[i];
      held[i] = 1;
    }
    if (rc && why && why_len && !why[0])
      fc_why(why, why_len, "%s: %s", FC_WHY_NAME(stores[s]), fc_strerror(rc)); /* quoted */
    fc_rtxn_end(t);
    fc_store_close(st);
  }
  /* ids no store holds go last: the loader cannot yield them (the caller says so, and checks its
   * order against the others only) */
  for (size_t i = 0; i < n_items && !rc; i++) {
    if (held[i]) continue;
    if (n == cap) {
      lb_item *p = fc_realloc(o, (cap + n_items) * sizeof *o);
      if (!p) {
        rc = ENOMEM;
        break;
      }
      o = p;
      cap += n_items;
    }
    o[n++] = items[i];
    (*missing)++;
  }
  free(held);
  if (rc) {
    free(o);
    *missing = 0;
    return rc;
  }
  *out = o;
  *n_out = n;
  return 0;
}
