/* The check that stores hold complete sets of shards (shard_sets_check, store_int.h): shards of
 * one N, of several N (intervals of the hash: 1/2 covers 2/4 and 3/4, but 2 and 3 only cover each
 * other where they meet), the output counted as a holder only, two whole sets that are no copy,
 * and the message: ranges, a cap on how many it names. */
#include "libcache/core/store/store_int.h"

#include <stdlib.h>
#include <string.h>

#include "../check.h"

typedef struct said {
  int count;
  uint32_t k, n;
  size_t a, b;
} said;

static void on_twice(uint32_t k, uint32_t n, size_t a, size_t b, void *user) {
  said *s = user;
  s->count++;
  s->k = k, s->n = n, s->a = a, s->b = b;
}

/* stores given as strings of "K/N" separated by spaces, one string per store; cover: the last
 * store counts as a holder only */
static uint64_t run(const char *const *stores, size_t m, int cover_last, said *s, char *why,
                    size_t why_len) {
  shard_mark *sets[8];
  size_t counts[8];
  int cover[8] = {0};
  for (size_t i = 0; i < m; i++) {
    sets[i] = calloc(64, sizeof **sets);
    counts[i] = 0;
    const char *p = stores[i];
    unsigned k, n;
    int used;
    while (sscanf(p, " %u/%u%n", &k, &n, &used) == 2) {
      sets[i][counts[i]++] = (shard_mark){k, n};
      p += used;
    }
  }
  if (cover_last) cover[m - 1] = 1;
  memset(s, 0, sizeof *s);
  uint64_t missing = 99;
  int rc = shard_sets_check((const shard_mark *const *)sets, counts, m, cover, on_twice, s,
                            &missing, why, why_len);
  CHECK(rc == 0, "rc %d", rc);
  for (size_t i = 0; i < m; i++) free(sets[i]);
  return missing;
}

int main(void) {
  char why[256];
  said s;
  { /* one N, complete, in any order */
    const char *st[] = {"2/4", "0/4", "3/4", "1/4"};
    CHECK(run(st, 4, 0, &s, why, sizeof why) == 0 && why[0] == 0 && s.count == 0, "%s", why);
  }
  { /* one missing, one twice */
    const char *st[] = {"0/4", "1/4", "3/4", "1/4"};
    CHECK(run(st, 4, 0, &s, why, sizeof why) == 1);
    CHECK(!strcmp(why, "of 4 shards, 3 given: shard 2 missing"), "got '%s'", why);
    CHECK(s.count == 1 && s.k == 1 && s.n == 4 && s.a == 1 && s.b == 3, "%d %u/%u %zu %zu", s.count,
          s.k, s.n, s.a, s.b);
  }
  { /* no store records any: nothing to say */
    const char *st[] = {"", ""};
    CHECK(run(st, 2, 0, &s, why, sizeof why) == 0 && why[0] == 0);
  }
  { /* 1/2 covers 2/4 and 3/4; 0/4 and 1/2 leave 1/4 */
    const char *full[] = {"0/4", "1/4", "1/2"};
    CHECK(run(full, 3, 0, &s, why, sizeof why) == 0 && s.count == 0, "%s", why);
    const char *gap[] = {"0/4", "1/2"};
    CHECK(run(gap, 2, 0, &s, why, sizeof why) == 1);
    CHECK(!strcmp(why,
                  "shards of 2 and 4 given (the shards of several runs?): the ids of 1 of 4 in "
                  "none"),
          "got '%s'", why);
  }
  { /* 2 and 3 do not divide each other: 0/2 and 2/3 leave [1/2, 2/3), in 1/3 of 3 */
    const char *st[] = {"0/2", "2/3"};
    CHECK(run(st, 2, 0, &s, why, sizeof why) == 1);
    CHECK(strstr(why, "the ids of 1 of 3 in none") != NULL, "got '%s'", why);
    const char *full[] = {"0/2", "1/3", "2/3"};
    CHECK(run(full, 3, 0, &s, why, sizeof why) == 0, "%s", why);
  }
  { /* the output (last) covers and is never a copy */
    const char *st[] = {"2/4 3/4", "0/4 1/4 2/4"};
    CHECK(run(st, 2, 1, &s, why, sizeof why) == 0 && s.count == 0, "%s, %d", why, s.count);
  }
  { /* two whole sets are no copy; a whole set and one shard of it: said */
    const char *st[] = {"0/2 1/2", "1/2 0/2"};
    CHECK(run(st, 2, 0, &s, why, sizeof why) == 0 && s.count == 0, "%d", s.count);
    const char *st2[] = {"0/2 1/2", "1/2"};
    CHECK(run(st2, 2, 0, &s, why, sizeof why) == 0 && s.count == 1 && s.a == 0 && s.b == 1);
  }
  { /* many gaps: 12 ranges named, the rest counted */
    const char *st[] = {
        "0/40 2/40 4/40 6/40 8/40 10/40 12/40 14/40 16/40 18/40 20/40 22/40 24/40 "
        "26/40 28/40 30/40 32/40 34/40 36/40 38/40"};
    CHECK(run(st, 1, 0, &s, why, sizeof why) == 20);
    CHECK(!strcmp(
              why,
              "of 40 shards, 20 given: shards 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23 and 8 more "
              "missing"),
          "got '%s'", why);
  }
  { /* a short buffer is cut, never overrun */
    const char *st[] = {"0/4"};
    char small[12];
    CHECK(run(st, 1, 0, &s, small, sizeof small) == 3 && strlen(small) == sizeof small - 1, "'%s'",
          small);
  }
  return fc_check_result("test_shard_sets");
}
