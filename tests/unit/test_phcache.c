/* Unit tests for tok_phcache (libcache/text/tokenize/tok_phcache.c), the readings a phonemes vocab
 * pass keeps for the run: the same entries found whatever the memory bound (all in memory, all in
 * the file, split between them), in the same order, for a subsequence of the lines (a shard, a
 * split store's parts, lines already stored), with lines that have no reading, lines the vocab
 * pass never saw, lines without numbers (0), and a text changed under its number (not found,
 * never another text's reading). A phonemes vocab pass for a run over one shard keeps the
 * readings of that shard's lines only (espeak-ng data is needed for it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featcache/fc_format.h"
#include "featcache/fc_shard.h"
#include "featcache/fc_tokenize.h"
#include "libcache/text/tokenize/tok_internal.h"

#include "tests/check.h"

enum { N = 500 };

static fc_digest digest_of(const char *s) {
  fc_digest d;
  fc_digest_buffer(s, strlen(s), &d);
  return d;
}

static void text_of(int i, char *out, size_t n) { snprintf(out, n, "text %d", i % 97); }

/* reading i: long enough that the file holds many entries; empty for i % 50 == 7; none (the line
 * failed in the vocab pass) for i % 50 == 13 */
static void reading_of(int i, char *out, size_t n) {
  if (i % 50 == 7) {
    out[0] = '\0';
    return;
  }
  snprintf(out, n,
           "r%d_\xCB\x88"
           "a\n.\nph%0*d\n\n",
           i, 10 + i % 200, i);
}

static tok_phcache *filled(size_t mem, int numbered) {
  tok_phcache *c = NULL;
  CHECK(tok_phcache_open(NULL, mem, &c) == 0);
  if (!c) return NULL;
  for (int i = 0; i < N; i++) {
    char t[32], r[512];
    text_of(i, t, sizeof t);
    reading_of(i, r, sizeof r);
    fc_digest d = digest_of(t);
    CHECK(tok_phcache_add(c, numbered ? (uint64_t)i + 1 : 0, &d, i % 50 == 13 ? NULL : r,
                          strlen(r)) == 0,
          "entry %d", i);
  }
  return c;
}

/* Look up the lines i with keep(i), in order: each must find its reading (or none, for a line
 * without one). */
static void walk(tok_phcache *c, int numbered, int (*keep)(int), const char *what, size_t mem) {
  tok_phcache_rewind(c);
  for (int i = 0; i < N; i++) {
    if (!keep(i)) continue;
    char t[32], want[512], *got = NULL;
    size_t len = 0;
    text_of(i, t, sizeof t);
    reading_of(i, want, sizeof want);
    fc_digest d = digest_of(t);
    int hit = tok_phcache_find(c, numbered ? (uint64_t)i + 1 : 0, &d, &got, &len);
    if (i % 50 == 13)
      CHECK(!hit && !got, "%s (mem %zu): line %d has no reading, found one", what, mem, i);
    else
      CHECK(hit && len == strlen(want) && got && memcmp(got, want, len) == 0 && got[len] == 0,
            "%s (mem %zu): line %d: hit %d, got '%s', want '%s'", what, mem, i, hit,
            got ? got : "(null)", want);
    free(got);
  }
}

static int all(int i) { return (void)i, 1; }
static int odd(int i) { return i % 2; }
static int third(int i) { return i % 3 == 1; }
static int sparse(int i) { return i % 61 == 0 || i == N - 1; }

/* fc_tokenizer_build_vocab_from with o->shard_n: the vocab of every line, the readings of shard
 * shard_k's lines (an item without an id is shard 0's), not the whole corpus's. */
static void vocab_pass_shard(uint32_t k, uint32_t n) {
  enum { LINES = 90 };
  fc_item items[LINES];
  char ids[LINES][16], texts[LINES][48];
  size_t want = 0;
  for (int i = 0; i < LINES; i++) {
    snprintf(ids[i], sizeof ids[i], "u%03d", i);
    snprintf(texts[i], sizeof texts[i], "line %d, said %s.", i, i % 2 ? "twice" : "once");
    memset(&items[i], 0, sizeof items[i]);
    items[i].id = i == 5 ? NULL : ids[i];
    items[i].text = texts[i];
    items[i].line = (size_t)i + 1;
    const uint32_t s = items[i].id ? fc_shard_of(ids[i], strlen(ids[i]), n ? n : 1) : 0;
    want += !n || s == k;
  }
  fc_item_list list = {items, LINES, FC_MANIFEST_TSV};
  fc_tok_opts to;
  fc_tok_opts_init(&to, FC_TOK_PHONEMES);
  to.build_vocab = 1;
  fc_tokenizer *t = NULL;
  char why[256] = "";
  int rc = fc_tokenizer_create(&to, &t, why, sizeof why);
  CHECK(rc == 0, "phonemes tokenizer: %s %s", fc_strerror(rc), why);
  if (rc) return;
  fc_tokenize_run_opts o = {0};
  o.threads = 2;
  o.batch = 16;
  o.shard_k = k;
  o.shard_n = n;
  CHECK((rc = fc_tokenizer_build_vocab_from(t, &list, &o)) == 0, "vocab pass: %s", fc_strerror(rc));
  tok_phcache *c = tok_tokenizer_phcache(t);
  CHECK(c != NULL, "no readings kept");
  if (c) {
    uint64_t entries, in_mem, in_file;
    tok_phcache_stats(c, &entries, &in_mem, &in_file);
    CHECK(entries == want, "shard %u/%u: %llu readings kept, want the shard's %zu", k, n,
          (unsigned long long)entries, want);
  }
  fc_tokenizer_free(t);
}

int main(void) {
  const size_t mems[] = {0, 1000, 20000, 1u << 20};
  for (size_t k = 0; k < sizeof mems / sizeof *mems; k++) {
    for (int numbered = 1; numbered >= 0; numbered--) {
      tok_phcache *c = filled(mems[k], numbered);
      if (!c) continue;
      uint64_t entries, in_mem, in_file;
      tok_phcache_stats(c, &entries, &in_mem, &in_file);
      CHECK(entries == N, "%llu entries", (unsigned long long)entries);
      CHECK(in_mem <= mems[k], "%llu bytes in memory, bound %zu", (unsigned long long)in_mem,
            mems[k]);
      CHECK(mems[k] != 0 || (in_mem == 0 && in_file > 0), "mem 0: all in the file");
      CHECK(mems[k] < (1u << 20) || in_file == 0, "1 MiB: none in the file");
      walk(c, numbered, all, numbered ? "all lines" : "all lines, unnumbered", mems[k]);
      walk(c, numbered, all, "all lines again", mems[k]); /* a second run (a split store's part) */
      walk(c, numbered, odd, numbered ? "odd lines" : "odd lines, unnumbered", mems[k]);
      walk(c, numbered, third, "a third", mems[k]);
      walk(c, numbered, sparse, "sparse", mems[k]);
      /* an add after the run began is refused; the entries stay */
      char r[8] = "x\n\n";
      fc_digest d = digest_of("late");
      CHECK(tok_phcache_add(c, 9999, &d, r, 3) != 0);
      walk(c, numbered, all, "after a refused add", mems[k]);
      tok_phcache_free(c);
    }
    /* a text changed under its line number, lines never seen: not found, and the lines after are */
    tok_phcache *c = filled(mems[k], 1);
    if (!c) continue;
    tok_phcache_rewind(c);
    char *got = NULL;
    size_t len;
    fc_digest other = digest_of("another text");
    CHECK(tok_phcache_find(c, 3, &other, &got, &len) == 0 && !got, "changed text found");
    CHECK(tok_phcache_find(c, 100000, &other, &got, &len) == 0, "a line past the end found");
    tok_phcache_rewind(c);
    CHECK(tok_phcache_find(c, 3, &other, &got, &len) == 0);
    char t[32], want[512];
    text_of(4, t, sizeof t);
    reading_of(4, want, sizeof want);
    fc_digest d = digest_of(t);
    CHECK(tok_phcache_find(c, 5, &d, &got, &len) == 1 && strcmp(got, want) == 0,
          "the line after a changed one: %s", got ? got : "(null)");
    free(got);
    tok_phcache_free(c);
  }
  vocab_pass_shard(0, 0);
  vocab_pass_shard(0, 4);
  vocab_pass_shard(3, 4);
  /* FC_PHONEME_CACHE */
  unsetenv("FC_PHONEME_CACHE");
  CHECK(tok_phcache_mem_bytes() == 64ll << 20);
  setenv("FC_PHONEME_CACHE", "off", 1);
  CHECK(tok_phcache_mem_bytes() == -1);
  setenv("FC_PHONEME_CACHE", "0", 1);
  CHECK(tok_phcache_mem_bytes() == 0);
  setenv("FC_PHONEME_CACHE", "3K", 1);
  CHECK(tok_phcache_mem_bytes() == 3072);
  setenv("FC_PHONEME_CACHE", "2M", 1);
  CHECK(tok_phcache_mem_bytes() == 2ll << 20);
  setenv("FC_PHONEME_CACHE", "2MiB", 1); /* as the tools' sizes are written (it fell back to 64M) */
  CHECK(tok_phcache_mem_bytes() == 2ll << 20);
  setenv("FC_PHONEME_CACHE", "1GiB", 1);
  CHECK(tok_phcache_mem_bytes() == 1ll << 30);
  setenv("FC_PHONEME_CACHE", "2MB", 1);
  CHECK(tok_phcache_mem_bytes() == 64ll << 20);
  setenv("FC_PHONEME_CACHE", "12x", 1);
  CHECK(tok_phcache_mem_bytes() == 64ll << 20);
  return fc_check_result("test_phcache");
}
