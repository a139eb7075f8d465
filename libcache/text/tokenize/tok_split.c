/* featcache — the tokenize pipeline into a split store (fc_tokenize_run_split): every line to the
 * part of its id, one part after the other, each run by tok_run_store (tokenize.c); a vocab built
 * from all the lines first, so that every part holds one config. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "featcache/fc_shard.h"
#include "formats/common/args.h"
#include "featcache/fc_tokenize.h"
#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"

typedef struct split_progress {
  const fc_tokenize_run_opts *o;
  fc_tokenize_stats done; /* the parts before this one */
} split_progress;

static void add_stats(fc_tokenize_stats *a, const fc_tokenize_stats *b) {
  a->lines += b->lines;
  a->processed += b->processed;
  a->skipped_existing += b->skipped_existing;
  a->entries += b->entries;
  a->failed += b->failed;
  a->not_started += b->not_started;
  a->not_stored += b->not_stored;
  a->tokens += b->tokens;
  a->unknown += b->unknown;
}

static void on_part_progress(const fc_tokenize_stats *st, void *ud) {
  split_progress *sp = ud;
  fc_tokenize_stats all = sp->done;
  add_stats(&all, st);
  sp->o->progress(&all, sp->o->progress_ud);
}

int fc_tokenize_run_split(fc_store *const *parts, unsigned n_parts, fc_tokenizer *t,
                          const fc_item_list *items, const fc_tokenize_run_opts *o,
                          fc_tokenize_stats *st) {
  FC_ARGS(parts, t, items);
  FC_ARGS_EACH(parts, n_parts ? n_parts : 1);
  if (n_parts < 2) return fc_tokenize_run(parts[0], t, items, o, st);
  memset(st, 0, sizeof *st);
  if (o && o->manifest) return FC_ECONFIG; /* a manifest read as it goes: one store only */
  fc_tokenize_run_opts defaults = {0};
  if (!o) o = &defaults;
  int rc = 0, stopped = 0; /* stopped: by the stop flag or --strict, in the part last run */
  /* The vocab of a build_vocab tokenizer comes from all the lines, so every part has one config. */
  split_progress sp = {.o = o};
  fc_item_list sub = {.items = NULL, .format = items->format};
  if (fc_tokenizer_config(t, NULL, NULL, NULL) == FC_EBADSTATE &&
      (rc = tok_build_vocab_from(t, items, o, fc_store_path(parts[0]), 0)))
    goto out;
  if (!(sub.items = fc_malloc((items->count ? items->count : 1) * sizeof(fc_item)))) {
    rc = ENOMEM;
    goto out;
  }
  fc_tokenize_run_opts po = *o;
  if (o->progress) {
    po.progress = on_part_progress;
    po.progress_ud = &sp;
  }
  for (unsigned k = 0; k < n_parts && !rc; k++) {
    sub.count = 0;
    for (size_t i = 0; i < items->count; i++) { /* an item without an id: part 0 (fc_shard.h) */
      const fc_item *it = &items->items[i];
      unsigned part = it->id ? fc_store_part_of_id(it->id, strlen(it->id), n_parts) : 0;
      if (part == k) sub.items[sub.count++] = *it;
    }
    fc_tokenize_stats ps;
    rc = tok_run_store(parts[k], t, &sub, &po, &ps, &stopped);
    add_stats(&sp.done, &ps);
  }
out:
  /* every line counted once: those of the parts never run failed with the run, or were not
   * started when it was stopped on purpose (as fc_tokenize_run counts its own): --strict's bad
   * line may be the last of its part's, which then has none not started */
  sp.done.lines = items->count;
  uint64_t counted = sp.done.processed + sp.done.skipped_existing + sp.done.failed +
                     sp.done.not_started + sp.done.not_stored;
  if (counted < items->count) {
    if (rc == FC_EINTR || stopped)
      sp.done.not_started += items->count - counted;
    else
      sp.done.failed += items->count - counted;
  }
  *st = sp.done;
  free(sub.items); /* shallow copies: the strings belong to items */
  tok_tokenizer_set_phcache(t, NULL);
  return rc;
}
