/* featcache — shards: a stable partition of utterances by a hash of their id (docs/scale-out.md).
 *
 * An utterance belongs to shard fc_shard_of(id, N) of N: XXH3-64 of the id's bytes, mapped onto
 * 0..N-1 by the high 64 bits of hash × N. It depends on the id and N only — not on the machine,
 * the input order or the other ids — so the same input list gives the same shards everywhere,
 * rerunning one shard finds its own work already stored, and shards merge without conflicts. */
#ifndef FC_SHARD_H
#define FC_SHARD_H

#include "fc_base.h"
#include "fc_manifest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The shard (0..n-1) of the utterance id of len bytes among n >= 1 shards. */
FC_API uint32_t fc_shard_of(const char *id, size_t len, uint32_t n);

/* Parse a shard spec: "K/N" (0 <= K < N, decimal, no junk), "slurm/N" or "slurm": from a Slurm
 * array job, whose task ids are the shard numbers: K = SLURM_ARRAY_TASK_ID, so that a task keeps
 * its shard in a rerun of some of the array's tasks (--array=3,7). "slurm/N" takes any array of
 * ids below N (SLURM_ARRAY_TASK_MAX too, when set); "slurm" takes N = SLURM_ARRAY_TASK_COUNT, and
 * so only an array of all N shards, ids 0 to N-1 (SLURM_ARRAY_TASK_MIN and _MAX, when set, must
 * agree): a partial, listed, stepped or 1-based array is refused, since its count is not N.
 * Returns 0, or FC_ECONFIG with a reason in why. */
FC_API int fc_shard_parse(const char *spec, uint32_t *k, uint32_t *n, char *why, size_t why_len);

/* Keep the items of shard k of n in l, in their order, and free the others. An item is placed by
 * its id; an item without an id (a manifest line that could not be read far enough) goes to
 * shard 0, so that its error is reported exactly once over all shards. Returns 0 or EINVAL. */
FC_API int fc_item_list_shard(fc_item_list *l, uint32_t k, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif
