/* cache-merge: mel configs that not every store holds (merge_configs.h). One preset featurized
 * with different configs in different shards (nodes on different featcache versions, a --fmax
 * given to one) merges into configs that each cover some ids only: the loader then fails on the
 * name (several configs of it) or skips the other ids, and cache-verify reports them missing.
 * The same of token configs (shards tokenized with other tokenizers) and the text entries. */
#include "libcache/core/merge/merge_configs.h"

#include "libcache/core/merge/kmerge.h"

#include "featcache/fc_config.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/json.h"
#include "formats/common/why.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct melcfg {
  char hex[33];
  size_t holder; /* an input's index, or n: the output */
  json_t *o; /* the config, parsed */
  char name[64]; /* what features="NAME" answers to: its preset, "kaldi (f16)", or "" */
} melcfg;

static int melcfg_cmp(const void *a, const void *b) {
  const melcfg *x = a, *y = b;
  int c = strcmp(x->hex, y->hex);
  return c ? c : x->holder < y->holder ? -1 : x->holder > y->holder;
}

int merge_each_config(MDB_txn *txn, MDB_dbi meta, merge_config_fn fn, void *ctx) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, meta, &cur);
  if (rc) return rc;
  MDB_val k = {4, (void *)"cfg/"}, val;
  for (rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
    if (k.mv_size < 4 || memcmp(k.mv_data, "cfg/", 4)) break;
    if (k.mv_size != 36) continue;
    json_error_t je;
    int nomem;
    json_t *o = fc_json_loadb(val.mv_data, val.mv_size, 0, &je, &nomem);
    if (nomem) {
      rc = ENOMEM;
      break;
    }
    char hex[33];
    memcpy(hex, (const char *)k.mv_data + 4, 32);
    hex[32] = '\0';
    const char *kind = json_string_value(json_object_get(o, "kind"));
    int r = kind ? fn(hex, kind, o, val.mv_data, val.mv_size, ctx) : 0;
    if (r != 1) json_decref(o);
    if (r > 1 || r < 0) {
      rc = r;
      break;
    }
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* mel_configs' context: the vector the configs of holder h are appended to; tokens: the token
 * configs instead of the mel ones. */
typedef struct mel_walk {
  melcfg **v;
  size_t *n, *cap, h;
  int tokens;
} mel_walk;

static int add_mel_config(const char *hex, const char *kind, json_t *o, const void *json,
                          size_t len, void *ctx) {
  mel_walk *w = ctx;
  if (strcmp(kind, w->tokens ? "tokens" : "mel")) return 0;
  if (*w->n == *w->cap) {
    size_t nc = *w->cap ? 2 * *w->cap : 16;
    melcfg *g = fc_realloc(*w->v, nc * sizeof *g);
    if (!g) return ENOMEM;
    *w->v = g;
    *w->cap = nc;
  }
  melcfg *t = &(*w->v)[(*w->n)++];
  memcpy(t->hex, hex, 33);
  t->holder = w->h;
  t->o = o;
  t->name[0] = '\0';
  static const char *const tok_keys[] = {"tokenizer", "name", "preset"}; /* tokens="NAME" */
  for (size_t i = 0; w->tokens && i < 3 && !t->name[0]; i++) {
    const char *tn = json_string_value(json_object_get(o, tok_keys[i]));
    if (tn) snprintf(t->name, sizeof t->name, "%s", tn);
  }
  if (w->tokens) return 1;
  const char *pn = json_string_value(json_object_get(o, "preset"));
  fc_mel_config mc; /* as the loader names it (loader_config.c): a preset in another dtype */
  if (pn)
    snprintf(t->name, sizeof t->name, "%s", pn);
  else if (fc_mel_config_from_json(json, len, &mc, NULL, 0) == 0 &&
           fc_mel_config_preset_of(&mc, NULL))
    snprintf(t->name, sizeof t->name, "%s (%s)", fc_mel_config_preset_of(&mc, NULL),
             fc_dtype_name(mc.dtype));
  return 1; /* t->o keeps it */
}

/* The mel (tokens: token) configs in the meta db of txn, appended to *v (holder h). */
static int mel_configs(MDB_txn *txn, MDB_dbi meta, size_t h, int tokens, melcfg **v, size_t *n,
                       size_t *cap) {
  mel_walk w = {v, n, cap, h, tokens};
  return merge_each_config(txn, meta, add_mel_config, &w);
}

/* Appends to buf (len bytes); what does not fit is cut off (a cut line is still said). */
__attribute__((format(printf, 3, 4))) static void append(char *buf, size_t len, const char *fmt,
                                                         ...) {
  size_t at = strlen(buf);
  if (at + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + at, len - at, fmt, ap);
  va_end(ap);
}
#define APPEND(buf, ...) append((buf), sizeof(buf), __VA_ARGS__)

/* What config c differs in from the reference r, e.g. "fmax 7600, kernel_version 3 where
 * 1a2b3c4d5e6f has 8000, 4" (at most 3 fields; "preset" aside: it follows the others). */
static int preset_field(const char *key) { return !strcmp(key, "preset"); }

static void describe_diff(const melcfg *c, const melcfg *r, char *out, size_t len) {
  char mine[160] = "", theirs[160] = "";
  fc_json_diff_lists(c->o, r->o, preset_field, 3, mine, sizeof mine, theirs, sizeof theirs);
  snprintf(out, len, "%s: %s where %.12s has %s", c->name[0] ? c->name : "no preset", mine, r->hex,
           theirs);
}

/* Config v[a] (held by v[a..b)) in detail: "1a2b3c4d5e6f (hifigan) in s0, s1, s2 and 3 more",
 * what it differs in from the reference v[ref] said unless it is the reference; after 4 configs
 * "; ..." once. */
static void say_config(char *detail, size_t len, const melcfg *v, size_t a, size_t b, size_t ref,
                       size_t n, const char *const *paths, const char *out_dir, size_t *listed) {
  if ((*listed)++ >= 4) {
    if (*listed == 5) append(detail, len, "; ...");
    return;
  }
  char what[400];
  if (a == ref)
    snprintf(what, sizeof what, "%s", v[a].name[0] ? v[a].name : "no preset");
  else
    describe_diff(&v[a], &v[ref], what, sizeof what);
  append(detail, len, "%s%.12s (%s) in ", *listed > 1 ? "; " : "", v[a].hex, what);
  for (size_t x = a; x < b; x++) {
    if (x - a == 3) {
      append(detail, len, " and %zu more", b - x);
      break;
    }
    append(detail, len, "%s%s", x > a ? ", " : "",
           FC_WHY_NAME(v[x].holder < n ? paths[v[x].holder] : out_dir));
  }
}

/* Which ids each config lacks: a walk over the audio keys of the m stores (txns[i], dbis[i]),
 * an id lacking config g when none of the stores holding it holds g. gid[x]: the config of
 * v[x], of groups; lack[g]: the ids config g lacks; ref_lack[i]: store i holds an id that config
 * refg lacks. Two stores of one corpus with a config each lack nothing: the walk tells them from
 * shards, which the stores' config lists alone do not. The walk over a large merge's ids takes
 * as long as the first pass over them, so it stops as that pass does (*stop set: FC_EINTR). */
static int ids_lacking(MDB_txn *const *txns, const MDB_dbi *dbis, size_t m, const melcfg *v,
                       size_t nv, const size_t *gid, size_t groups, size_t refg, uint64_t *lack,
                       char *ref_lack, const volatile sig_atomic_t *stop) {
  char *holds = fc_calloc(groups * m, 1);
  if (!holds) return ENOMEM;
  for (size_t x = 0; x < nv; x++) holds[gid[x] * m + v[x].holder] = 1;
  fc_kmerge *k;
  int rc = kmerge_open(txns, dbis, m, NULL, &k);
  if (rc) {
    free(holds);
    return rc;
  }
  MDB_val key;
  size_t hm;
  const size_t *src;
  const MDB_val *vals;
  while ((rc = kmerge_next(k, &key, &hm, &src, &vals)) == 0) {
    fault_stop("merge_ids"); /* test builds: FC_FAULT_STOP=merge_ids:N (cli/merge_configs_apart) */
    if (stop && *stop) {
      rc = FC_EINTR;
      break;
    }
    for (size_t g = 0; g < groups; g++) {
      int held = 0;
      for (size_t j = 0; j < hm && !held; j++) held = holds[g * m + src[j]];
      if (held) continue;
      lack[g]++;
      if (g == refg)
        for (size_t j = 0; j < hm; j++) ref_lack[src[j]] = 1;
    }
  }
  kmerge_close(k);
  free(holds);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The check of merge_check_mel_configs, of the mel configs and the audio entries, or (tokens) of
 * the token configs and the text entries. */
static int check_apart(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                       MDB_txn *out_txn, const char *const *paths, const char *out_dir,
                       const fc_merge_opts *o, fc_merge_stats *st, int tokens) {
  const int entry_db = tokens ? FC_DB_TEXT : FC_DB_AUDIO;
  size_t m = n + (out ? 1 : 0), nv = 0, cap = 0, utter = 0; /* utter: stores with entries */
  melcfg *v = NULL;
  char *has = fc_calloc(m ? m : 1, 1); /* the store holds audio (tokens: text) entries */
  int rc = has ? 0 : ENOMEM;
  for (size_t i = 0; i < m && !rc; i++) {
    MDB_txn *t = i < n ? txns[i] : out_txn;
    fc_store *s = i < n ? in[i] : out;
    MDB_stat ms;
    if ((rc = mdb_stat(t, s->dbi[entry_db], &ms)) != 0) break;
    if ((has[i] = ms.ms_entries > 0)) utter++;
    rc = mel_configs(t, s->dbi[FC_DB_META], i, tokens, &v, &nv, &cap);
  }
  if (rc || nv == 0) goto done;
  qsort(v, nv, sizeof *v, melcfg_cmp);
  /* the configs (runs of one hex): apart when a store holding utterances lacks it */
  size_t groups = 0, apart = 0, ref = 0, ref_holders = 0;
  for (size_t a = 0, b; a < nv; a = b) {
    size_t with = 0;
    for (b = a; b < nv && !strcmp(v[b].hex, v[a].hex); b++) with += has[v[b].holder];
    groups++;
    apart += with < utter;
    /* the reference: the most held; of as many, one the loader takes by name (a preset) */
    if (b - a > ref_holders || (b - a == ref_holders && v[a].name[0] && !v[ref].name[0]))
      ref = a, ref_holders = b - a;
  }
  if (!apart) goto done; /* every store holding utterances holds every config */
  /* which ids each config lacks, and the stores whose ids the reference lacks */
  size_t *gid = fc_malloc(nv * sizeof *gid), refg = 0;
  uint64_t *lack = fc_calloc(groups, sizeof *lack);
  char *ref_lack = fc_calloc(m, 1);
  MDB_txn **tx = fc_malloc(m * sizeof *tx);
  MDB_dbi *dbis = fc_malloc(m * sizeof *dbis);
  if (gid && lack && ref_lack && tx && dbis) {
    for (size_t a = 0, b, g = 0; a < nv; a = b, g++) {
      for (b = a; b < nv && !strcmp(v[b].hex, v[a].hex); b++) gid[b] = g;
      if (a == ref) refg = g;
    }
    for (size_t i = 0; i < m; i++) {
      tx[i] = i < n ? txns[i] : out_txn;
      dbis[i] = (i < n ? in[i] : out)->dbi[entry_db];
    }
    rc = ids_lacking(tx, dbis, m, v, nv, gid, groups, refg, lack, ref_lack, o->stop);
  } else {
    rc = ENOMEM;
  }
  apart = 0;
  for (size_t g = 0; g < groups && !rc; g++) apart += lack[g] > 0;
  uint64_t ref_lacks = lack ? lack[refg] : 0;
  free(gid);
  free(lack);
  free(tx);
  free(dbis);
  if (rc || !apart) {
    free(ref_lack);
    goto done;
  }
  if (tokens)
    st->token_configs_held_apart += apart;
  else
    st->mel_configs_apart += apart;
  void (*tell)(const char *, const char *, int, void *) =
      tokens ? o->on_token_configs_held_apart : o->on_mel_configs;
  const char *arg = tokens ? "tokens" : "features"; /* the loader's argument */
  if (tell) {
    char detail[1024], loader[512] = "";
    snprintf(detail, sizeof detail, "%zu %s configs that not every store holds: ", groups,
             tokens ? "token" : "mel");
    size_t listed = 0, named = 0; /* named: configs that answer to the reference's name */
    for (size_t a = 0, b; a < nv; a = b) {
      for (b = a; b < nv && !strcmp(v[b].hex, v[a].hex); b++) {}
      if (v[a].name[0] && !strcmp(v[a].name, v[ref].name)) named++;
    }
    /* the reference first, then the others in order of their digests */
    say_config(detail, sizeof detail, v, ref, ref + ref_holders, ref, n, paths, out_dir, &listed);
    for (size_t a = 0, b; a < nv; a = b) {
      for (b = a; b < nv && !strcmp(v[b].hex, v[a].hex); b++) {}
      if (a != ref) say_config(detail, sizeof detail, v, a, b, ref, n, paths, out_dir, &listed);
    }
    /* what the loader makes of the reference's name (loader_config.c) */
    if (named > 1)
      snprintf(loader, sizeof loader,
               "the loader's %s=\"%s\" would fail: %zu configs answer to it (choose one by "
               "digest), and each lacks the ids of the stores without it (cache-verify reports "
               "them missing)",
               arg, v[ref].name, named);
    else if (!ref_lacks)
      snprintf(loader, sizeof loader,
               "the loader's %s=\"%s\" takes %.12s, which every id has; the others lack some "
               "(cache-verify reports them missing)",
               arg, v[ref].name[0] ? v[ref].name : v[ref].hex, v[ref].hex);
    else {
      snprintf(loader, sizeof loader, "the loader's %s=\"%s\" takes %.12s and skips the ids of ",
               arg, v[ref].name[0] ? v[ref].name : v[ref].hex, v[ref].hex);
      size_t said = 0;
      for (size_t i = 0; i < m; i++) {
        if (!ref_lack[i]) continue;
        if (said++ == 3) {
          APPEND(loader, ", ...");
          break;
        }
        APPEND(loader, "%s%s", said > 1 ? ", " : "", FC_WHY_NAME(i < n ? paths[i] : out_dir));
      }
      APPEND(loader, " (not stored; cache-verify reports them missing)");
    }
    tell(detail, loader, o->strict, o->user);
  }
  free(ref_lack);
  if (o->strict) rc = FC_ECONFIG;
done:
  for (size_t i = 0; i < nv; i++) json_decref(v[i].o);
  free(v);
  free(has);
  return rc;
}

int merge_check_mel_configs(fc_store *const *in, MDB_txn *const *txns, size_t n, fc_store *out,
                            MDB_txn *out_txn, const char *const *paths, const char *out_dir,
                            const fc_merge_opts *o, fc_merge_stats *st) {
  return check_apart(in, txns, n, out, out_txn, paths, out_dir, o, st, 0);
}

int merge_check_token_configs_apart(fc_store *const *in, MDB_txn *const *txns, size_t n,
                                    fc_store *out, MDB_txn *out_txn, const char *const *paths,
                                    const char *out_dir, const fc_merge_opts *o,
                                    fc_merge_stats *st) {
  return check_apart(in, txns, n, out, out_txn, paths, out_dir, o, st, 1);
}
