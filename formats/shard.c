/* Shards: id → 0..N-1 by XXH3-64 and a multiply-shift (Lemire's fast range), which spreads
 * a uniform 64-bit hash over N buckets as evenly as a modulo does, for any N, without a division. */
#include "featcache/fc_shard.h"
#include "formats/common/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/why.h"
#include "formats/manifest_int.h"

uint32_t fc_shard_of(const char *id, size_t len, uint32_t n) {
  FC_ARGS_OR(0, id || !len);
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

static int env_u32(const char *name, uint32_t *out, int required, const char *spec, char *why,
                   size_t why_len) {
  const char *v = getenv(name);
  if (!v || !*v) {
    if (!required) return 1;
    fc_why(why, why_len,
           "--shard %s: %s is %s (not in a Slurm array job? "
           "submit with sbatch --array=0-N-1)",
           spec, name, v ? "empty" : "not set");
    return FC_ECONFIG;
  }
  if (parse_u32(v, strlen(v), out)) {
    fc_why(why, why_len, "--shard %s: %s='%s' is not a number", spec, name, v);
    return FC_ECONFIG;
  }
  return 0;
}

/* "slurm" or "slurm/N". The array's task ids are the shard numbers, 0..N-1, so that a task keeps
 * its shard whatever array runs it: the full one (--array=0-15) or a rerun of some of its tasks
 * (--array=3,7, --array=5, --array=0-15%4). Plain "slurm" takes N = SLURM_ARRAY_TASK_COUNT, which
 * is N only in an array of all the shards, 0..N-1; any other array must say N. */
static int parse_slurm(const char *spec, uint32_t *k, uint32_t *n, char *why, size_t why_len) {
  uint32_t id, count = 0, lo = 0, hi = 0, want = 0;
  int given = spec[5] == '/';
  if (given && (parse_u32(spec + 6, strlen(spec + 6), &want) || want == 0)) {
    fc_why(why, why_len, "invalid shard '%s' (want slurm/N, N >= 1 the number of shards)", spec);
    return FC_ECONFIG;
  }
  int rc = env_u32("SLURM_ARRAY_TASK_ID", &id, 1, spec, why, why_len);
  if (!rc && !given) rc = env_u32("SLURM_ARRAY_TASK_COUNT", &count, 1, spec, why, why_len);
  if (rc) return rc;
  /* MIN and MAX are optional (1 = unset) */
  int no_lo = env_u32("SLURM_ARRAY_TASK_MIN", &lo, 0, spec, why, why_len);
  if (no_lo < 0) return no_lo;
  int no_hi = env_u32("SLURM_ARRAY_TASK_MAX", &hi, 0, spec, why, why_len);
  if (no_hi < 0) return no_hi;
  if (given) {
    /* MAX too: a 1-based array (--array=1-16) fails in every task, not only in its last */
    uint32_t top = no_hi || hi < id ? id : hi;
    if (top >= want) {
      fc_why(why, why_len,
             "--shard %s: the array's task %u is not a shard of %u: task ids are the shard "
             "numbers, 0 to %u (sbatch --array=0-%u, or some of them)",
             spec, top, want, want - 1, want - 1);
      return FC_ECONFIG;
    }
    *k = id;
    *n = want;
    return 0;
  }
  if (count == 0 || (!no_lo && lo != 0) || id >= count || (!no_hi && hi != count - 1)) {
    char ids[48] = "";
    if (!no_lo && !no_hi) snprintf(ids, sizeof ids, ", ids %u to %u", lo, hi);
    fc_why(why, why_len,
           "--shard slurm: task %u of an array of %u tasks%s is not one of all N shards, 0 to "
           "N-1; a rerun of some tasks, or a listed or stepped array, must give the number of "
           "shards: --shard slurm/N",
           id, count, ids);
    return FC_ECONFIG;
  }
  *k = id;
  *n = count;
  return 0;
}

int fc_shard_parse(const char *spec, uint32_t *k, uint32_t *n, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  if (!spec) return FC_ECONFIG;
  FC_ARGS_WHY(k, n);
  if (strncmp(spec, "slurm", 5) == 0 && (spec[5] == '\0' || spec[5] == '/'))
    return parse_slurm(spec, k, n, why, why_len);
  const char *slash = strchr(spec, '/');
  uint32_t kk, nn;
  if (!slash || parse_u32(spec, (size_t)(slash - spec), &kk) ||
      parse_u32(slash + 1, strlen(slash + 1), &nn)) {
    fc_why(why, why_len, "invalid shard '%s' (want K/N, e.g. 0/16, or slurm, slurm/N)", spec);
    return FC_ECONFIG;
  }
  if (nn == 0) {
    fc_why(why, why_len, "invalid shard '%s': N, the number of shards, is at least 1", spec);
    return FC_ECONFIG;
  }
  if (kk >= nn) { /* a 1-based loop (seq 1 16) fails in its last task only */
    fc_why(why, why_len,
           "invalid shard '%s': the shards of %u are 0/%u to %u/%u (K counts from 0: seq 0 %u)",
           spec, nn, nn, nn - 1, nn, nn - 1);
    return FC_ECONFIG;
  }
  *k = kk;
  *n = nn;
  return 0;
}

int fc_item_list_shard(fc_item_list *l, uint32_t k, uint32_t n) {
  FC_ARGS(l);
  if (!l || n == 0 || k >= n) return EINVAL;
  size_t kept = 0;
  for (size_t i = 0; i < l->count; i++) {
    fc_item *it = &l->items[i];
    uint32_t s = it->id ? fc_shard_of(it->id, strlen(it->id), n) : 0;
    if (s == k)
      l->items[kept++] = *it;
    else
      mf_item_clear(it);
  }
  l->count = kept;
  return 0;
}
