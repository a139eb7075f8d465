/* cache-merge: do the inputs' shards form complete sets? (merge_shards.h) */
#include "libcache/core/merge/merge_shards.h"

#include "libcache/core/merge/merge_configs.h"

#include "featcache/fc_tokenize.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"
#include "formats/common/why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct twice_ctx {
  const fc_merge_opts *o;
  fc_merge_stats *st;
  fc_store *const *in;
  MDB_txn *const *txns;
  size_t n; /* inputs; index n: the output */
  fc_store *out;
  MDB_txn *out_txn;
} twice_ctx;

/* What store i (an input, or n: the output) holds: 1 utterances (audio entries), 2 transcripts
 * (text entries), both or none. */
static int holds(const twice_ctx *t, size_t i) {
  fc_store *s = i < t->n ? t->in[i] : t->out;
  MDB_txn *txn = i < t->n ? t->txns[i] : t->out_txn;
  static const int dbs[2] = {FC_DB_AUDIO, FC_DB_TEXT};
  int what = 0;
  for (int d = 0; d < 2; d++) {
    MDB_stat ms;
    if (mdb_stat(txn, s->dbi[dbs[d]], &ms) != 0 || ms.ms_entries) what |= 1 << d;
  }
  return what;
}

/* A shard two stores record: a copy (said) when they hold entries of one kind; the featurize and
 * the tokenize store of one shard, kept apart (one holding utterances only, the other
 * transcripts only), hold no entry twice and are no copy. */
static void on_twice(uint32_t k, uint32_t sn, size_t a, size_t b, void *user) {
  twice_ctx *t = user;
  if (!(holds(t, a) & holds(t, b))) return;
  t->st->shards_twice++;
  if (t->o->on_shard_twice) t->o->on_shard_twice(k, sn, a, b, t->o->user);
}

/* ---- token configs of one name, each held by some stores only ---------------------------- */
typedef struct tokcfg {
  char name[64]; /* what tokens="NAME" answers to: tokenizer, else name, else preset */
  char hex[33];
  size_t holder;
  json_t *o; /* the config, parsed */
} tokcfg;

static int tokcfg_cmp(const void *a, const void *b) {
  const tokcfg *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (!c) c = strcmp(x->hex, y->hex);
  return c ? c : x->holder < y->holder ? -1 : x->holder > y->holder;
}

static int size_cmp(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

/* token_configs' context: the vector the configs of holder h are appended to. */
typedef struct tok_walk {
  tokcfg **v;
  size_t *n, *cap, h;
} tok_walk;

static int add_token_config(const char *hex, const char *kind, json_t *o, const void *json,
                            size_t len, void *ctx) {
  (void)json, (void)len;
  tok_walk *w = ctx;
  const char *name = NULL;
  static const char *const keys[] = {"tokenizer", "name", "preset"};
  for (size_t i = 0; !strcmp(kind, "tokens") && i < 3 && !name; i++)
    name = json_string_value(json_object_get(o, keys[i]));
  if (!name) return 0;
  if (*w->n == *w->cap) {
    size_t nc = *w->cap ? 2 * *w->cap : 16;
    tokcfg *g = fc_realloc(*w->v, nc * sizeof *g);
    if (!g) return ENOMEM;
    *w->v = g;
    *w->cap = nc;
  }
  tokcfg *t = &(*w->v)[(*w->n)++];
  snprintf(t->name, sizeof t->name, "%s", name);
  memcpy(t->hex, hex, 33);
  t->holder = w->h;
  t->o = o;
  return 1; /* t->o keeps it */
}

static void tokcfgs_free(tokcfg *v, size_t n) {
  for (size_t i = 0; i < n; i++) json_decref(v[i].o);
  free(v);
}

/* The fields of a token config that are its vocabulary (built from the text, or read from a
 * file): configs of one name that differ in these alone were built apart; in others, tokenized
 * with other options (--add-bos, --case fold in one shard). */
static int vocab_field(const char *key) {
  static const char *const keys[] = {"vocab_digest", "vocab_size", "specials",
                                     "tokenizer_json_digest"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(key, keys[i])) return 1;
  return 0;
}

/* The fields other than the vocabulary's that config c differs in from the reference r, appended
 * to out as "add_bos true, casefold true where 150988de11d1 has false, false" (at most 3); the
 * number of such fields. */
static int options_diff(const tokcfg *c, const tokcfg *r, char *out, size_t len) {
  char mine[200] = "", theirs[200] = "";
  const int said =
      fc_json_diff_lists(c->o, r->o, vocab_field, 3, mine, sizeof mine, theirs, sizeof theirs);
  if (said) {
    size_t at = strlen(out);
    snprintf(out + at, len - at, "%s%.12s: %s where %.12s has %s", at ? "; " : "", c->hex, mine,
             r->hex, theirs);
  }
  return said;
}

/* 1 when c was made by an older tokenize (its tokenizer_version below this build's for its
 * tokenizer: its ids are out of date), with *was and *now; else 0. */
static int made_older(const tokcfg *c, long long *was, int *now) {
  const json_t *tv = json_object_get(c->o, "tokenizer_version");
  *now = fc_tok_version_of(json_string_value(json_object_get(c->o, "tokenizer")));
  *was = json_is_integer(tv) ? json_integer_value(tv) : 0;
  return json_is_integer(tv) && *was < *now;
}

/* The token configs in the meta db of txn, appended to *v (holder h). */
static int token_configs(MDB_txn *txn, MDB_dbi meta, size_t h, tokcfg **v, size_t *n, size_t *cap) {
  tok_walk w = {v, n, cap, h};
  return merge_each_config(txn, meta, add_token_config, &w);
}

/* Several token configs of one name where a store holding one of them lacks another (each shard
 * built its own vocabulary): said for each name; FC_ECONFIG when a store involved records shards
 * (a merge of shards is one corpus), else 0 (stores built apart: said, merged). */
static int check_token_configs(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                               MDB_txn *out_txn, const size_t *shard_counts,
                               const char *const *paths, const char *out_dir,
                               const fc_merge_opts *o, fc_merge_stats *st) {
  tokcfg *v = NULL;
  size_t nv = 0, cap = 0;
  int rc = 0;
  for (size_t i = 0; i < n + (out ? 1 : 0) && !rc; i++)
    rc = i < n ? token_configs(txns[i], in[i]->dbi[FC_DB_META], i, &v, &nv, &cap)
               : token_configs(out_txn, out->dbi[FC_DB_META], i, &v, &nv, &cap);
  if (rc || nv < 2) {
    tokcfgs_free(v, nv);
    return rc;
  }
  qsort(v, nv, sizeof *v, tokcfg_cmp);
  int refuse = 0;
  for (size_t a = 0; a < nv;) {
    size_t b = a, configs = 0, holders = 0;
    while (b < nv && !strcmp(v[b].name, v[a].name)) b++;
    for (size_t x = a; x < b; x++)
      if (x == a || strcmp(v[x].hex, v[x - 1].hex)) configs++;
    /* a store holding some of the name's configs but not all: the configs cover other ids */
    int apart = 0, shards = 0, in_agree = 1;
    size_t in_configs = 0, out_own = 0; /* configs an input holds; the output's that none holds */
    for (size_t x = a, y; x < b; x = y) {
      int by_in = 0, by_out = 0;
      for (y = x; y < b && !strcmp(v[y].hex, v[x].hex); y++)
        v[y].holder < n ? (by_in = 1) : (by_out = 1);
      in_configs += by_in;
      out_own += by_out && !by_in;
    }
    if (configs > 1) { /* the group's holders in order: a run per holder, its configs of the name */
      size_t *hs = fc_malloc((b - a) * sizeof *hs);
      if (!hs) {
        rc = ENOMEM;
        break;
      }
      for (size_t x = a; x < b; x++) hs[x - a] = v[x].holder;
      qsort(hs, b - a, sizeof *hs, size_cmp);
      for (size_t x = 0; x < b - a;) {
        size_t y = x;
        while (y < b - a && hs[y] == hs[x]) y++;
        holders++;
        if (y - x < configs) apart = 1;
        if (hs[x] < n && y - x != in_configs) in_agree = 0;
        if (hs[x] < n && shard_counts[hs[x]]) shards = 1;
        x = y;
      }
      free(hs);
    }
    if (apart) {
      st->token_configs_apart++;
      refuse |= shards;
      /* not built apart: the output holds an older one (a former run's vocabulary), or the
       * inputs each hold one more than the output (built again after the manifest grew) */
      void (*by_out)(const char *, const char *, const char *, int, void *) =
          !in_agree ? NULL
          : out_own ? o->on_output_token_configs
                    : o->on_output_lacks_token_configs;
      if (by_out) {
        char out_hex[4 * 34 + 8] = "", in_hex[4 * 34 + 8] = "";
        for (size_t x = a, y; x < b; x = y) {
          int by_in = 0, held_out = 0;
          for (y = x; y < b && !strcmp(v[y].hex, v[x].hex); y++)
            v[y].holder < n ? (by_in = 1) : (held_out = 1);
          /* out_own: the output's own vs the inputs'; else the output's vs those it lacks */
          char *l = (out_own ? by_in : !held_out) ? in_hex : out_hex;
          size_t at = strlen(l);
          if (at + 40 < sizeof in_hex) /* at most 4 of each: "..." after */
            snprintf(l + at, sizeof in_hex - at, "%s%s", at ? ", " : "", v[x].hex);
          else if (!strstr(l, "..."))
            snprintf(l + at, sizeof in_hex - at, ", ...");
        }
        by_out(v[a].name, out_hex, in_hex, shards, o->user);
      } else if (o->on_token_configs) {
        char line[640];
        int at = snprintf(line, sizeof line, "%zu different '%s' token configs, in %zu stores (",
                          configs, v[a].name, holders);
        size_t said = 0;
        for (size_t x = a, y; x < b && at > 0 && (size_t)at < sizeof line; x = y) {
          for (y = x; y < b && !strcmp(v[y].hex, v[x].hex); y++) {} /* its holders: [x, y) */
          if (said++ == 4) {
            at += snprintf(line + at, sizeof line - (size_t)at, ", ...");
            break;
          }
          at += snprintf(line + at, sizeof line - (size_t)at, "%s%.12s in ", said > 1 ? "; " : "",
                         v[x].hex);
          for (size_t h = x; h < y && at > 0 && (size_t)at < sizeof line; h++) {
            if (h - x == 3) { /* each config's holders, not only its first (the rest counted) */
              at += snprintf(line + at, sizeof line - (size_t)at, " and %zu more", y - h);
              break;
            }
            at += snprintf(line + at, sizeof line - (size_t)at, "%s%s", h > x ? ", " : "",
                           FC_WHY_NAME(v[h].holder < n ? paths[v[h].holder] : out_dir));
          }
        }
        if (at > 0 && (size_t)at < sizeof line) snprintf(line + at, sizeof line - (size_t)at, ")");
        /* tokenized with other options, not a vocabulary built apart: what differs from the
         * config most stores hold */
        char diff[512] = "";
        size_t ref = a, ref_count = 0;
        for (size_t x = a, y; x < b; x = y) {
          for (y = x; y < b && !strcmp(v[y].hex, v[x].hex); y++) {}
          if (y - x > ref_count) ref = x, ref_count = y - x;
        }
        int options = 0, listed = 0;
        for (size_t x = a, y; x < b; x = y) {
          for (y = x; y < b && !strcmp(v[y].hex, v[x].hex); y++) {}
          if (x != ref && listed < 3 && options_diff(&v[x], &v[ref], diff, sizeof diff)) {
            options = 1;
            listed++;
          }
        }
        /* one made by an older tokenize (a shard tokenized before an upgrade): its ids are out
         * of date, and no option given makes it one with the others */
        char stale[4 * 40 + 8] = "", ver[96] = "";
        for (size_t x = a, y; x < b; x = y) {
          for (y = x; y < b && !strcmp(v[y].hex, v[x].hex); y++) {}
          long long was;
          int now;
          size_t sl = strlen(stale);
          if (made_older(&v[x], &was, &now) && sl + 40 < sizeof stale) {
            snprintf(stale + sl, sizeof stale - sl, "%s%s", sl ? ", " : "", v[x].hex);
            snprintf(ver, sizeof ver, "tokenizer_version %lld, where this one's is %d", was, now);
          }
        }
        if (stale[0] && o->on_token_configs_stale)
          o->on_token_configs_stale(v[a].name, line, stale, ver, shards, o->user);
        else if (options && o->on_token_configs_options)
          o->on_token_configs_options(v[a].name, line, diff, shards, o->user);
        else
          o->on_token_configs(v[a].name, line, shards, o->user);
      }
    } else if (configs > 1 && o->on_token_configs_together) {
      /* every store holding one holds them all (a tokenize run again into each shard with
       * another vocabulary, or configs made so on purpose): merged as they are, each whole, but
       * tokens="NAME" would not say which; one an older tokenize made is marked out of date */
      char hexes[4 * 120 + 8] = "";
      size_t said = 0;
      for (size_t x = a, y; x < b; x = y) {
        for (y = x; y < b && !strcmp(v[y].hex, v[x].hex); y++) {}
        size_t at = strlen(hexes);
        if (said++ == 4) {
          snprintf(hexes + at, sizeof hexes - at, ", ...");
          break;
        }
        long long was;
        int now;
        char stale[80] = "";
        if (made_older(&v[x], &was, &now))
          snprintf(stale, sizeof stale,
                   " (made by an older tokenize, tokenizer_version %lld: out of date)", was);
        snprintf(hexes + at, sizeof hexes - at, "%s%s%s", at ? ", " : "", v[x].hex, stale);
      }
      o->on_token_configs_together(v[a].name, configs, hexes, o->user);
    }
    a = b;
  }
  tokcfgs_free(v, nv);
  return rc ? rc : refuse ? FC_ECONFIG : 0;
}

int merge_check_shards(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                       MDB_txn *out_txn, const char *const *paths, const char *out_dir,
                       const fc_merge_opts *o, fc_merge_stats *st, char *why, size_t why_len) {
  size_t m = n + (out ? 1 : 0);
  shard_mark **sets = fc_calloc(m, sizeof *sets);
  size_t *counts = fc_calloc(m, sizeof *counts);
  int *cover_only = fc_calloc(m, sizeof *cover_only);
  int rc = sets && counts && cover_only ? 0 : ENOMEM;
  int inputs_say = 0;
  for (size_t i = 0; i < m && !rc; i++) {
    rc = i < n ? store_shards_txn(txns[i], in[i]->dbi[FC_DB_META], &sets[i], &counts[i])
               : store_shards_txn(out_txn, out->dbi[FC_DB_META], &sets[i], &counts[i]);
    if (i < n && counts[i]) inputs_say = 1;
    if (i == n) cover_only[i] = 1;
  }
  if (!rc && inputs_say) { /* an output's own shards alone are not this merge's business */
    twice_ctx t = {o, st, in, txns, n, out, out_txn};
    char gap[768];
    rc = shard_sets_check((const shard_mark *const *)sets, counts, m, cover_only, on_twice, &t,
                          &st->shards_missing, gap, sizeof gap);
    if (!rc && st->shards_missing && !o->partial) {
      fc_why(why, why_len, "incomplete set of shards: %s", gap);
      rc = FC_ECONFIG;
    }
  }
  if (!rc) /* per-shard vocabularies */
    rc = check_token_configs(in, txns, n, out, out_txn, counts, paths, out_dir, o, st);
  if (!rc && !st->token_configs_apart) /* token configs of other names some stores lack */
    rc = merge_check_token_configs_apart(in, txns, n, out, out_txn, paths, out_dir, o, st);
  if (!rc) /* mel configs that some stores lack (merge_configs.c) */
    rc = merge_check_mel_configs(in, txns, n, out, out_txn, paths, out_dir, o, st);
  for (size_t i = 0; sets && i < m; i++) free(sets[i]);
  free(sets);
  free(counts);
  free(cover_only);
  return rc;
}
