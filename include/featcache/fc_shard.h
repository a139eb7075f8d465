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

/* Parse a shard spec: "K/N" (0 <= K < N, decimal, no junk) or "slurm": K and N from a Slurm
 * array job's environment, K = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (0 when MIN is unset),
 * N = SLURM_ARRAY_TASK_COUNT; an array that is not contiguous (--array=0-30:2, 1,5,9) is refused,
 * since its task ids do not name N shards. Returns 0, or FC_ECONFIG with a reason in why. */
FC_API int fc_shard_parse(const char *spec, uint32_t *k, uint32_t *n, char *why, size_t why_len);

/* Keep the items of shard k of n in l, in their order, and free the others. An item is placed by
 * its id; an item without an id (a manifest line that could not be read far enough) goes to
 * shard 0, so that its error is reported exactly once over all shards. Returns 0 or EINVAL. */
FC_API int fc_item_list_shard(fc_item_list *l, uint32_t k, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif
