/* Shards (formats/shard.c): the partition is a function of the id and N only, balanced, and the
 * spec parser (K/N, slurm) is strict. */
#include "featcache/fc_shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

enum { N_IDS = 10000, N_SHARDS = 16 };

/* Largest shard's excess over the mean, for 10,000 ids "<prefix><i>" built with fmt. */
static double max_excess(const char *fmt, int a, int stride, unsigned *min_out, unsigned *max_out) {
  unsigned count[N_SHARDS] = {0};
  char id[64];
  for (int i = 0; i < N_IDS; i++) {
    int v = i * stride;
    int n = snprintf(id, sizeof id, fmt, a, v / 1000 + 1, v % 1000 + 1);
    count[fc_shard_of(id, (size_t)n, N_SHARDS)]++;
  }
  unsigned max = 0, min = N_IDS;
  for (int s = 0; s < N_SHARDS; s++) {
    if (count[s] > max) max = count[s];
    if (count[s] < min) min = count[s];
  }
  if (min_out) *min_out = min;
  if (max_out) *max_out = max;
  double mean = N_IDS / (double)N_SHARDS;
  return (max - mean) / mean;
}

static void check_balance(const char *style, const char *fmt, int a, int stride) {
  unsigned min, max;
  double e = max_excess(fmt, a, stride, &min, &max);
  printf("balance %-9s: 10000 ids in 16 shards: %u..%u, mean 625, largest %+.1f %%\n", style, min,
         max, 100 * e);
  CHECK(e <= 0.10, "%s: largest shard %u is %.1f %% above the mean (> 10 %%)", style, max, 100 * e);
}

int main(void) {
  /* 10,000 generated ids as the test corpora (and LJSpeech, LibriSpeech) name them */
  check_balance("ljspeech", "LJ%.0d%03d-%04d", 0, 1);
  check_balance("libri", "%d-198-%04d%04d", 19, 7);

  /* A partition by the id alone is at best a uniform random one, whose largest of 16 shards of
   * 10,000 ids is on average 7.1 % above the mean and above 10 % in 8.4 % of id sets (multinomial,
   * 200,000 draws with numpy). Over 400 id sets the hash must do as well: a weak hash or mapping
   * (clusters on sequential ids) shows as a larger mean excess or more sets over 10 %. */
  double sum = 0;
  int over = 0;
  for (int a = 0; a < 400; a++) {
    double e = max_excess(a % 2 ? "spk%d_utt%d_%d" : "%d-%04d-%04d", a, 1 + a % 5, NULL, NULL);
    sum += e;
    over += e > 0.10;
  }
  printf(
      "balance over 400 id sets: mean largest excess %.2f %% (uniform 7.12 %%), "
      "%d sets over 10 %% (uniform 8.4 %%: 34)\n",
      100 * sum / 400, over);
  CHECK(sum / 400 < 0.080, "mean largest excess %.2f %% (uniform: 7.1 %%)", 100 * sum / 400);
  CHECK(over <= 56, "%d of 400 id sets have a shard > 10 %% above the mean (uniform: 34 +- 6)",
        over);

  /* the same id gives the same shard; it depends on the bytes of the id only */
  CHECK(fc_shard_of("LJ001-0001", 10, 16) == fc_shard_of("LJ001-0001", 10, 16));
  CHECK(fc_shard_of("anything", 8, 1) == 0);
  /* a known answer: XXH3-64("LJ001-0001") * 16 >> 64, so a change of hash or mapping is seen */
  uint64_t h = fc_hash64("LJ001-0001", 10);
  CHECK(fc_shard_of("LJ001-0001", 10, 16) == (uint32_t)(h >> 60), "got %u want %u",
        fc_shard_of("LJ001-0001", 10, 16), (uint32_t)(h >> 60));
  CHECK(fc_shard_of("LJ001-0001", 10, 1000) < 1000);

  /* specs */
  uint32_t k = 99, n = 99;
  char why[256];
  CHECK(fc_shard_parse("3/16", &k, &n, why, sizeof why) == 0 && k == 3 && n == 16);
  CHECK(fc_shard_parse("0/1", &k, &n, why, sizeof why) == 0 && k == 0 && n == 1);
  const char *bad[] = {"16/16", "1/0", "-1/4", "1/4x", "1", "/4", "1/", "a/b", "1/99999999999", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(fc_shard_parse(bad[i], &k, &n, why, sizeof why) == FC_ECONFIG && why[0], "spec '%s'",
          bad[i]);
  CHECK(fc_shard_parse("16/16", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strcmp(why, "invalid shard '16/16' (want 0 <= K < N)") == 0,
        "why: %s", why);

  /* slurm: K = task id - min, N = count; a non-contiguous array is refused */
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  unsetenv("SLURM_ARRAY_TASK_MIN");
  unsetenv("SLURM_ARRAY_TASK_MAX");
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strstr(why, "SLURM_ARRAY_TASK_ID is not set"),
        "why: %s", why);
  setenv("SLURM_ARRAY_TASK_ID", "5", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "8", 1);
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == 0 && k == 5 && n == 8);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  setenv("SLURM_ARRAY_TASK_MAX", "8", 1);
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == 0 && k == 4 && n == 8);
  setenv("SLURM_ARRAY_TASK_MAX", "15", 1); /* --array=1-15:2: 8 tasks, not contiguous */
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == FC_ECONFIG, "non-contiguous array");
  setenv("SLURM_ARRAY_TASK_MAX", "8", 1);
  setenv("SLURM_ARRAY_TASK_ID", "x", 1);
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == FC_ECONFIG && strstr(why, "'x'"));

  /* filtering a list: order kept, the union of all shards is the list, an id-less item in 0 */
  fc_item_list all[4];
  const char *paths[] = {"a/x1.wav", "b/x2.wav", "x3.wav", "x4.flac", "x5.wav", "x6.wav", "x7.wav"};
  size_t total = 0;
  for (uint32_t s = 0; s < 4; s++) {
    CHECK(fc_items_from_paths(paths, 7, &all[s]) == 0);
    free(all[s].items[6].id); /* as a manifest line whose id could not be read */
    all[s].items[6].id = NULL;
    CHECK(fc_item_list_shard(&all[s], s, 4) == 0);
    total += all[s].count;
    for (size_t i = 0; i < all[s].count; i++) {
      const fc_item *it = &all[s].items[i];
      if (it->id)
        CHECK(fc_shard_of(it->id, strlen(it->id), 4) == s);
      else
        CHECK(s == 0, "id-less item in shard %u", s);
      if (i) CHECK(strcmp(it[-1].path, it->path) < 0, "order kept");
    }
  }
  CHECK(total == 7, "got %zu", total);
  for (int s = 0; s < 4; s++) fc_item_list_free(&all[s]);
  CHECK(fc_item_list_shard(&all[0], 4, 4) != 0, "k >= n refused");
  return fc_check_result("test_shard");
}
