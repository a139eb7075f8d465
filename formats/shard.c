/* Shards: id → 0..N-1 by XXH3-64 and a multiply-shift (Lemire's fast range), which spreads
 * a uniform 64-bit hash over N buckets as evenly as a modulo does, for any N, without a division. */
#include "featcache/fc_shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/why.h"

uint32_t fc_shard_of(const char *id, size_t len, uint32_t n) {
  if (n <= 1) return 0;
  uint64_t h = fc_hash64(id, len);
  return (uint32_t)(((unsigned __int128)h * n) >> 64);
}

/* Strict decimal u32: digits only, no sign, no overflow. */
static int parse_u32(const char *s, size_t len, uint32_t *out) {
  if (!len || len > 10) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  return 0;
}

static int env_u32(const char *name, uint32_t *out, int required, char *why, size_t why_len) {
  const char *v = getenv(name);
  if (!v || !*v) {
    if (!required) return 1;
    fc_why(why, why_len,
           "--shard slurm: %s is not set (not in a Slurm array job? "
           "submit with sbatch --array=0-N-1)",
           name);
    return FC_ECONFIG;
  }
  if (parse_u32(v, strlen(v), out)) {
    fc_why(why, why_len, "--shard slurm: %s='%s' is not a number", name, v);
    return FC_ECONFIG;
  }
  return 0;
}

int fc_shard_parse(const char *spec, uint32_t *k, uint32_t *n, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  if (!spec) return FC_ECONFIG;
  if (strcmp(spec, "slurm") == 0) {
    uint32_t id, count, lo = 0, hi = 0;
    int rc = env_u32("SLURM_ARRAY_TASK_ID", &id, 1, why, why_len);
    if (!rc) rc = env_u32("SLURM_ARRAY_TASK_COUNT", &count, 1, why, why_len);
    if (rc) return rc;
    /* MIN and MAX are optional (1 = unset): without MIN the array starts at 0. */
    int no_lo = env_u32("SLURM_ARRAY_TASK_MIN", &lo, 0, why, why_len);
    if (no_lo < 0) return no_lo;
    int no_hi = env_u32("SLURM_ARRAY_TASK_MAX", &hi, 0, why, why_len);
    if (no_hi < 0) return no_hi;
    if (no_lo) lo = 0;
    if (count == 0 || id < lo || id - lo >= count ||
        (!no_hi && (hi < lo || hi - lo + 1 != count))) {
      fc_why(why, why_len,
             "--shard slurm: task %u of an array of %u tasks (min %u) is not one of N contiguous "
             "shards; submit with sbatch --array=0-N-1",
             id, count, lo);
      return FC_ECONFIG;
    }
    *k = id - lo;
    *n = count;
    return 0;
  }
  const char *slash = strchr(spec, '/');
  uint32_t kk, nn;
  if (!slash || parse_u32(spec, (size_t)(slash - spec), &kk) ||
      parse_u32(slash + 1, strlen(slash + 1), &nn)) {
    fc_why(why, why_len, "invalid shard '%s' (want K/N, e.g. 0/16, or slurm)", spec);
    return FC_ECONFIG;
  }
  if (nn == 0 || kk >= nn) {
    fc_why(why, why_len, "invalid shard '%s' (want 0 <= K < N)", spec);
    return FC_ECONFIG;
  }
  *k = kk;
  *n = nn;
  return 0;
}

static void item_free(fc_item *it) {
  free(it->id);
  free(it->path);
  free(it->text);
  free(it->text_raw);
  free(it->text_norm);
  free(it->why);
}

int fc_item_list_shard(fc_item_list *l, uint32_t k, uint32_t n) {
  if (!l || n == 0 || k >= n) return EINVAL;
  size_t kept = 0;
  for (size_t i = 0; i < l->count; i++) {
    fc_item *it = &l->items[i];
    uint32_t s = it->id ? fc_shard_of(it->id, strlen(it->id), n) : 0;
    if (s == k)
      l->items[kept++] = *it;
    else
      item_free(it);
  }
  l->count = kept;
  return 0;
}
