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
  /* a 1-based loop (seq 1 16) fails in its last task only: the message says K counts from 0 */
  CHECK(fc_shard_parse("16/16", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strcmp(why,
                   "invalid shard '16/16': the shards of 16 are 0/16 to 15/16 (K counts "
                   "from 0: seq 0 15)") == 0,
        "why: %s", why);
  CHECK(fc_shard_parse("1/0", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strcmp(why, "invalid shard '1/0': N, the number of shards, is at least 1") == 0,
        "why: %s", why);

  /* slurm: the task ids are the shard numbers, as Slurm sets the variables for each array */
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  unsetenv("SLURM_ARRAY_TASK_MIN");
  unsetenv("SLURM_ARRAY_TASK_MAX");
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strstr(why, "SLURM_ARRAY_TASK_ID is not set"),
        "why: %s", why);
  CHECK(fc_shard_parse("slurm/16", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strstr(why, "--shard slurm/16: SLURM_ARRAY_TASK_ID is not set"),
        "why: %s", why);
  /* set but empty (ID=$UNSET in a script): it said "is not set" */
  setenv("SLURM_ARRAY_TASK_ID", "", 1);
  CHECK(fc_shard_parse("slurm/16", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strstr(why, "--shard slurm/16: SLURM_ARRAY_TASK_ID is empty (not in a Slurm array"),
        "why: %s", why);
  unsetenv("SLURM_ARRAY_TASK_ID");
  struct {
    const char *array, *id, *count, *min, *max;
    uint32_t k, n; /* of plain "slurm"; n 0: refused */
  } arrays[] = {
      {"0-7 (no MIN, MAX)", "5", "8", NULL, NULL, 5, 8},
      {"0-7", "5", "8", "0", "7", 5, 8},
      {"0-15%2", "9", "16", "0", "15", 9, 16}, /* a throttle changes nothing */
      {"3,7 (a rerun)", "7", "2", "3", "7", 0, 0},
      {"5 (a rerun)", "5", "1", "5", "5", 0, 0},
      {"3-5 (a rerun)", "4", "3", "3", "5", 0, 0},
      {"0,2 (a rerun)", "2", "2", "0", "2", 0, 0},
      {"0-14:2", "6", "8", "0", "14", 0, 0},
      {"1-8", "1", "8", "1", "8", 0, 0},
  };
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
    setenv("SLURM_ARRAY_TASK_ID", arrays[i].id, 1);
    setenv("SLURM_ARRAY_TASK_COUNT", arrays[i].count, 1);
    if (arrays[i].min)
      setenv("SLURM_ARRAY_TASK_MIN", arrays[i].min, 1);
    else
      unsetenv("SLURM_ARRAY_TASK_MIN");
    if (arrays[i].max)
      setenv("SLURM_ARRAY_TASK_MAX", arrays[i].max, 1);
    else
      unsetenv("SLURM_ARRAY_TASK_MAX");
    uint32_t id = (uint32_t)atoi(arrays[i].id);
    k = n = 99;
    int rc = fc_shard_parse("slurm", &k, &n, why, sizeof why);
    if (arrays[i].n)
      CHECK(rc == 0 && k == arrays[i].k && n == arrays[i].n, "--array=%s: rc %d, %u/%u",
            arrays[i].array, rc, k, n);
    else
      CHECK(rc == FC_ECONFIG && strstr(why, "must give the number of shards: --shard slurm/N"),
            "--array=%s: rc %d, %u/%u, why: %s", arrays[i].array, rc, k, n, why);
    /* slurm/16: every one of these tasks is shard id/16, the shard it had in --array=0-15 */
    k = n = 99;
    rc = fc_shard_parse("slurm/16", &k, &n, why, sizeof why);
    CHECK(rc == 0 && k == id && n == 16, "--array=%s slurm/16: rc %d, %u/%u, why: %s",
          arrays[i].array, rc, k, n, why);
  }
  setenv("SLURM_ARRAY_TASK_ID", "5", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "1", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "5", 1);
  setenv("SLURM_ARRAY_TASK_MAX", "5", 1);
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strcmp(why,
                   "--shard slurm: task 5 of an array of 1 tasks, ids 5 to 5 is not one of "
                   "all N shards, 0 to N-1; a rerun of some tasks, or a listed or stepped "
                   "array, must give the number of shards: --shard slurm/N") == 0,
        "why: %s", why);
  CHECK(fc_shard_parse("slurm/5", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strcmp(why,
                   "--shard slurm/5: the array's task 5 is not a shard of 5: task ids are "
                   "the shard numbers, 0 to 4 (sbatch --array=0-4, or some of them)") == 0,
        "why: %s", why);
  /* --array=1-16 with slurm/16: refused in every task (MAX is 16), not only in task 16 */
  setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "16", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  setenv("SLURM_ARRAY_TASK_MAX", "16", 1);
  CHECK(fc_shard_parse("slurm/16", &k, &n, why, sizeof why) == FC_ECONFIG &&
            strstr(why, "task 16 is not a shard of 16"),
        "why: %s", why);
  const char *bad_slurm[] = {"slurm/0",           "slurm/", "slurm/x", "slurm/-1", "slurm/16x",
                             "slurm/99999999999", "slurmx", "slurm16"};
  for (size_t i = 0; i < sizeof bad_slurm / sizeof bad_slurm[0]; i++)
    CHECK(fc_shard_parse(bad_slurm[i], &k, &n, why, sizeof why) == FC_ECONFIG &&
              strstr(why, "invalid shard"),
          "spec '%s': %s", bad_slurm[i], why);
  setenv("SLURM_ARRAY_TASK_ID", "x", 1);
  CHECK(fc_shard_parse("slurm", &k, &n, why, sizeof why) == FC_ECONFIG && strstr(why, "'x'"));
  CHECK(fc_shard_parse("slurm/4", &k, &n, why, sizeof why) == FC_ECONFIG && strstr(why, "'x'"));

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
