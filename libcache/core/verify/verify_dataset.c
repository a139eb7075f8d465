/* fc_verify_dataset: the checks that concern several stores read as one dataset (shards), beside
 * fc_verify_store's per-store checks. One k-way merge (libcache/core/merge/kmerge.h) over the stores'
 * audio and text dbs, so memory stays at a few words per store plus the manifest's ids:
 *   - an id held by several stores must have the same entry in each (else the loader would serve
 *     whichever store comes first, and a merge would refuse it);
 *   - every store that holds entries holds the same mel and token configs (the loader reads one
 *     config from every store);
 *   - every manifest id is in some store (audio entry; text entry too with expect_tokens_given),
 *     or has a failure record in one (featurize failed it: counted, no error);
 *   - the shards the stores record form complete sets (a warning; shard_sets_check). */
#include "featcache/fc_verify.h"
#include "formats/common/args.h"

#include "featcache/fc_format.h"
#include "featcache/fc_store.h"
#include "libcache/core/merge/kmerge.h"
#include "libcache/core/merge/merge_conflict.h"
#include "libcache/core/verify/verify_int.h"
#include "libcache/core/store/store_int.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

typedef struct dctx {
  fc_verify_report *r;
  size_t cap;
  uint64_t max_errors;
} dctx;

/* A store's name in a message, quoted as the tools quote names (fc_quote_name), into q. */
typedef struct qname {
  char s[1024];
} qname;
static const char *quoted(const char *dir, qname *q) {
  fc_quote_name(dir, q->s, sizeof q->s);
  return q->s;
}

/* The same printable copy as a single store's findings hold (a backslash too becomes \x5c). */
static char *printable(const void *p, size_t len) { return vf_printable(p, len); }

static void add(dctx *c, int sev, const char *db, const void *key, size_t key_len, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));
static void add(dctx *c, int sev, const char *db, const void *key, size_t key_len, const char *fmt,
                ...) {
  fc_verify_report *r = c->r;
  if (sev == FC_VERIFY_ERROR) {
    if (c->max_errors && r->errors >= c->max_errors) {
      r->stopped = 1;
      return;
    }
    r->errors++;
  } else {
    r->warnings++;
  }
  if (r->count == c->cap) {
    size_t nc = c->cap ? 2 * c->cap : 64;
    fc_verify_finding *nf = fc_realloc(r->findings, nc * sizeof *nf);
    if (!nf) return;
    r->findings = nf;
    c->cap = nc;
  }
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fc_verify_finding *f = &r->findings[r->count++];
  f->severity = sev;
  f->db = db;
  f->key = key ? printable(key, key_len) : NULL;
  f->id =
      (key && (strcmp(db, "audio") == 0 || strcmp(db, "text") == 0 || strcmp(db, "manifest") == 0))
          ? printable(key, key_len)
          : NULL;
  f->problem = fc_strdup(msg);
}

/* LMDB key order of the items' ids, for sorting the manifest like the stores' keys. */
static int cmp_id(const void *a, const void *b) {
  const char *x = (*(const fc_item *const *)a)->id, *y = (*(const fc_item *const *)b)->id;
  MDB_val va = {strlen(x), (void *)x}, vb = {strlen(y), (void *)y};
  return kmerge_cmp(&va, &vb);
}

/* The configs of one kind ("mel" or "tokens") a store holds, as a sorted list of 32-hex names. */
/* The configs of kind in a store's meta db (the 32 hex of each); with configs of the kind named
 * in o (--expect-preset, --expect-tokens=NAME), those that answer to them only: the stores need
 * hold what the run reads, each store's own check says which it lacks, and others (one featurized
 * for an experiment in one shard) are no concern of the dataset's, as of one store's. */
static int config_set(MDB_txn *txn, MDB_dbi meta, const char *kind, const fc_verify_opts *o,
                      char (**out)[33], size_t *n) {
  *out = NULL;
  *n = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, meta, &cur);
  if (rc) return rc;
  MDB_val k = {4, (void *)"cfg/"}, v;
  char want[32];
  int wl = snprintf(want, sizeof want, "\"kind\":\"%s\"", kind);
  size_t cap = 0;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 36 || memcmp(k.mv_data, "cfg/", 4)) break;
    if (!memmem(v.mv_data, v.mv_size, want, (size_t)wl)) continue;
    const int tokens = strcmp(kind, "mel") != 0;
    if (tokens ? o->n_expect_tok : o->n_expect_mel) {
      char hex[33];
      int yes;
      memcpy(hex, (const char *)k.mv_data + 4, 32);
      hex[32] = '\0';
      if ((rc = vf_config_answers(o, tokens, hex, v.mv_data, v.mv_size, &yes)) != 0) break;
      if (!yes) continue;
    }
    if (*n == cap) {
      cap = cap ? 2 * cap : 8;
      char(*nl)[33] = fc_realloc(*out, cap * sizeof **out);
      if (!nl) {
        rc = ENOMEM;
        break;
      }
      *out = nl;
    }
    memcpy((*out)[*n], (const char *)k.mv_data + 4, 32);
    (*out)[(*n)++][32] = '\0';
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Config hex's JSON in meta of txn (a jansson object, or NULL: not there or not JSON). */
static json_t *config_json(MDB_txn *txn, MDB_dbi meta, const char *hex, int *nomem) {
  char key[37];
  snprintf(key, sizeof key, "cfg/%s", hex);
  MDB_val k = {36, key}, v;
  json_error_t je;
  *nomem = 0;
  if (mdb_get(txn, meta, &k, &v) != 0) return NULL;
  json_t *o = fc_json_loadb(v.mv_data, v.mv_size, 0, &je, nomem);
  if (o && !json_is_object(o)) {
    json_decref(o);
    o = NULL;
  }
  return o;
}

/* Fields a config's pair is not told by (fc_json_diff_lists' skip): a mel config's name, which
 * follows its values; a token config's name, and its vocabulary's fields (said apart). */
static int mel_name_field(const char *key) { return !strcmp(key, "preset"); }
static int token_name_or_vocab(const char *key) {
  static const char *const keys[] = {"tokenizer", "vocab_digest", "vocab_size", "specials",
                                     "tokenizer_json_digest"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(key, keys[i])) return 1;
  return 0;
}

/* Config b (of one store) beside the reference store's a, both of one kind: when they have one
 * name (a mel config's "preset", a token config's "tokenizer"), the fields that make them two, to
 * out as " (REF's chars config 189222372b47, but add_bos true where that has false)" (at most 3
 * fields, as cache-merge lists them; a vocabulary or tokenizer.json of its own said so); "" when
 * they are not of one name.
 * A mel config whose options overrode its preset's values is named by none (null): it pairs with
 * the reference's mel config whatever that one's name. 0, or ENOMEM. */
static int config_diff(MDB_txn *tb, MDB_dbi mb, const char *b, MDB_txn *ta, MDB_dbi ma,
                       const char *a, const char *ref, char *out, size_t len) {
  int nomem_a, nomem_b;
  json_t *ob = config_json(tb, mb, b, &nomem_b), *oa = config_json(ta, ma, a, &nomem_a);
  out[0] = '\0';
  /* their names: a mel config's preset (null once an option overrode one of its values), a
   * token config's tokenizer; two of other names are no pair */
  const char *kind = oa ? json_string_value(json_object_get(oa, "kind")) : NULL;
  const int mel = kind && !strcmp(kind, "mel");
  const char *name_key = mel ? "preset" : "tokenizer";
  const char *na = oa ? json_string_value(json_object_get(oa, name_key)) : NULL;
  const char *nb = ob ? json_string_value(json_object_get(ob, name_key)) : NULL;
  const int pair = oa && ob && (na && nb ? !strcmp(na, nb) : mel);
  if (!na) na = nb ? nb : "mel";
  if (pair) {
    char vocab[64] = "", mine[200] = "", theirs[200] = "";
    static const char *const own[] = {"vocab_digest", "tokenizer_json_digest"};
    static const char *const says[] = {"another vocabulary", "another tokenizer.json"};
    for (int i = 0; i < 2; i++) { /* a vocabulary of its own: said so, not as two digests */
      json_t *x = json_object_get(ob, own[i]), *y = json_object_get(oa, own[i]);
      if ((x || y) && !(x && y && json_equal(x, y)))
        snprintf(vocab + strlen(vocab), sizeof vocab - strlen(vocab), "%s%s", vocab[0] ? ", " : "",
                 says[i]);
    }
    const int said = fc_json_diff_lists(ob, oa, mel ? mel_name_field : token_name_or_vocab, 3, mine,
                                        sizeof mine, theirs, sizeof theirs);
    if ((vocab[0] || said) &&
        snprintf(out, len, " (%s's %s config %.12s, but %s%s%s%s%s)", ref, na, a, vocab,
                 vocab[0] && said ? ", " : "", mine, said ? " where that has " : "",
                 said ? theirs : "") >= (int)len)
      out[len - 1] = '\0'; /* cut short: still said */
  }
  json_decref(oa);
  json_decref(ob);
  return nomem_a || nomem_b ? ENOMEM : 0;
}

/* Does some store hold a failure record for id (featurize failed it and said so)? */
static int recorded_failure(fc_store **st, MDB_txn **txns, size_t n, const char *id) {
  MDB_val k = {strlen(id), (void *)id}, v;
  for (size_t i = 0; i < n; i++)
    if (st[i]->dbi[FC_DB_FAILED] && mdb_get(txns[i], st[i]->dbi[FC_DB_FAILED], &k, &v) == 0)
      return 1;
  return 0;
}

/* A manifest id that no store has an entry for: an error, unless it is a recorded failure (each
 * store's own report lists those). */
static void missing_id(dctx *c, fc_store **st, MDB_txn **txns, size_t n, const char *id, int db) {
  if (db == FC_DB_AUDIO && recorded_failure(st, txns, n, id)) {
    c->r->failures_explaining++;
    return;
  }
  add(c, FC_VERIFY_ERROR, "manifest", id, strlen(id),
      "missing: the manifest names it, no store has a%s entry",
      db == FC_DB_AUDIO ? "n audio" : " text");
}

/* A manifest line that names no usable id: a warning, as fc_verify_store says it of one store
 * (--strict fails on it), keyed by its line number, with the id it named when it named one. */
static void skipped_line(dctx *c, const fc_item *it) {
  char line[32];
  snprintf(line, sizeof line, "%zu", it->line);
  size_t before = c->r->count;
  add(c, FC_VERIFY_WARNING, "manifest", line, strlen(line), "line skipped: %s",
      it->why ? it->why : fc_strerror(it->err));
  if (c->r->count == before) return;
  fc_verify_finding *f = &c->r->findings[before];
  free((char *)f->id);
  f->id = it->id && it->id[0] ? printable(it->id, strlen(it->id)) : NULL; /* "": none */
}

/* What a walk holds that a damaged page may leave behind (freed by the caller). */
typedef struct dwalk {
  char (*set)[33];
  char *gone; /* of the first store's configs of a kind, those some store with entries lacks */
  const fc_item **ids;
  fc_kmerge *km;
} dwalk;

/* The configs, the entries and the manifest across the opened stores. */
/* The shards the stores record (meta shard/K/N, docs/FORMAT.md "Shards"): when two or more
 * record some, a set with shards missing (the dataset lacks their ids) or a shard two of them
 * record is a warning. One store alone (a shard checked by itself, a split store's parts) is
 * not: a shard is a part of a corpus by design. */
typedef struct shard_twice_ctx {
  dctx *c;
  const char *const *dirs;
} shard_twice_ctx;

static void shard_twice(uint32_t k, uint32_t n, size_t a, size_t b, void *user) {
  shard_twice_ctx *t = user;
  qname q1, q2;
  add(t->c, FC_VERIFY_WARNING, "meta", NULL, 0,
      "%s holds shard %u/%u, as %s does: the dataset reads its ids from the first",
      quoted(t->dirs[b], &q1), k, n, quoted(t->dirs[a], &q2));
}

static int check_shards(dctx *c, const char *const *dirs, size_t n, fc_store **st, MDB_txn **txns) {
  shard_mark **sets = fc_calloc(n, sizeof *sets);
  size_t *counts = fc_calloc(n, sizeof *counts);
  int rc = sets && counts ? 0 : ENOMEM;
  size_t recording = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    rc = store_shards_txn(txns[i], st[i]->dbi[FC_DB_META], &sets[i], &counts[i]);
    recording += counts[i] > 0;
  }
  if (!rc && recording > 1) {
    char gap[768];
    uint64_t missing;
    shard_twice_ctx t = {c, dirs};
    rc = shard_sets_check((const shard_mark *const *)sets, counts, n, NULL, shard_twice, &t,
                          &missing, gap, sizeof gap);
    if (!rc && missing)
      add(c, FC_VERIFY_WARNING, "meta", NULL, 0,
          "incomplete set of shards: %s (the dataset lacks their ids; cache-merge refuses "
          "them without --partial)",
          gap);
  }
  for (size_t i = 0; sets && i < n; i++) free(sets[i]);
  free(sets);
  free(counts);
  return rc;
}

static int walk(dctx *c, dwalk *w, const char *const *dirs, size_t n, const fc_verify_opts *o,
                fc_store **st, MDB_txn **txns, MDB_dbi *dbis, char (**ref_sets)[33]) {
  int rc = 0;
  const fc_item **ids = NULL;
  size_t nids = 0;
  uint64_t matched[2] = {0, 0}; /* manifest ids with an audio (text) entry */
  int any_cfg[2] = {0, 0}; /* some store with entries holds a mel (token) config */
  size_t ref_n[2] = {0, 0};
  long ref_store[2] = {-1, -1};
  fc_verify_report *out = c->r;
  qname q1, q2; /* store names in messages */
  /* configs: every store with entries holds the same set of each kind as the first such store */
  static const char *const kinds[2] = {"mel", "tokens"};
  static const int entry_db[2] = {FC_DB_AUDIO, FC_DB_TEXT};
  for (int k = 0; k < 2 && !rc; k++) {
    for (size_t i = 0; i < n && !rc; i++) {
      MDB_stat ms;
      if ((rc = mdb_stat(txns[i], st[i]->dbi[entry_db[k]], &ms)) != 0) break;
      if (!ms.ms_entries) continue;
      char(*set)[33];
      size_t sn;
      if ((rc = config_set(txns[i], st[i]->dbi[FC_DB_META], kinds[k], o, &w->set, &sn)) != 0) break;
      set = w->set;
      any_cfg[k] |= sn > 0;
      if (ref_store[k] < 0) {
        ref_sets[k] = set;
        w->set = NULL;
        ref_n[k] = sn;
        ref_store[k] = (long)i;
        free(w->gone);
        if (!(w->gone = fc_calloc(sn ? sn : 1, 1))) return ENOMEM;
        if (k == 0)
          out->mel_configs = sn;
        else
          out->token_configs = sn;
        continue;
      }
      for (size_t a = 0; a < ref_n[k]; a++) {
        size_t b = 0;
        while (b < sn && strcmp(set[b], ref_sets[k][a])) b++;
        if (b < sn) continue;
        if (!w->gone[a]) { /* the dataset's count: the configs in every store with entries */
          w->gone[a] = 1;
          if (k == 0)
            out->mel_configs--;
          else
            out->token_configs--;
        }
        add(c, FC_VERIFY_ERROR, "meta", NULL, 0,
            "%s lacks the %s config %s that %s holds: the stores cannot be read as one dataset "
            "with it",
            quoted(dirs[i], &q1), kinds[k], ref_sets[k][a], quoted(dirs[ref_store[k]], &q2));
      }
      for (size_t b = 0; b < sn && !rc; b++) {
        size_t a = 0;
        while (a < ref_n[k] && strcmp(set[b], ref_sets[k][a])) a++;
        if (a < ref_n[k]) continue;
        /* beside a config of the reference's it lacks, of one name: what makes them two */
        char diff[600] = "";
        const long r = ref_store[k];
        quoted(dirs[r], &q2);
        for (size_t x = 0; x < ref_n[k] && !diff[0] && !rc; x++) {
          size_t y = 0;
          while (y < sn && strcmp(set[y], ref_sets[k][x])) y++;
          if (y == sn)
            rc = config_diff(txns[i], st[i]->dbi[FC_DB_META], set[b], txns[r],
                             st[r]->dbi[FC_DB_META], ref_sets[k][x], q2.s, diff, sizeof diff);
        }
        add(c, FC_VERIFY_ERROR, "meta", NULL, 0,
            "%s holds the %s config %s that %s lacks%s: the stores cannot be read as one "
            "dataset with it",
            quoted(dirs[i], &q1), kinds[k], set[b], q2.s, diff);
      }
      if (rc) break;
      free(set);
      w->set = NULL;
    }
  }
  if (!rc) rc = check_shards(c, dirs, n, st, txns);
  if (rc) return rc;

  /* the manifest's ids, sorted in key order, joined with the merged key streams */
  const fc_item_list *m = o->manifest;
  if (m) {
    ids = w->ids = fc_malloc((m->count ? m->count : 1) * sizeof *ids);
    if (!ids) return ENOMEM;
    for (size_t i = 0; i < m->count; i++)
      if (m->items[i].err)
        skipped_line(c, &m->items[i]);
      else if (m->items[i].id)
        ids[nids++] = &m->items[i];
    qsort(ids, nids, sizeof *ids, cmp_id);
    out->manifest_items = nids;
  }
  for (int k = 0; k < 2 && !rc; k++) {
    int db = entry_db[k];
    for (size_t i = 0; i < n; i++) dbis[i] = st[i]->dbi[db];
    fc_kmerge *km;
    if ((rc = kmerge_open(txns, dbis, n, NULL, &w->km)) != 0) break;
    km = w->km;
    MDB_val key;
    size_t cnt, mi = 0;
    const size_t *src;
    const MDB_val *vals;
    int need_manifest = m && (db == FC_DB_AUDIO || o->expect_tokens_given);
    while ((rc = kmerge_next(km, &key, &cnt, &src, &vals)) == 0) {
      if (o->stop && *o->stop) {
        rc = FC_EINTR;
        break;
      }
      out->entries[db]++; /* the dataset's ids: one held by several stores counts once */
      for (size_t j = 1; j < cnt; j++) {
        if (vals[j].mv_size == vals[0].mv_size &&
            !memcmp(vals[j].mv_data, vals[0].mv_data, vals[0].mv_size))
          continue;
        char d[1024]; /* as cache-merge says the conflict */
        merge_describe(db, &vals[0], &vals[j], d, sizeof d);
        add(c, FC_VERIFY_ERROR, fc_db_name(db), key.mv_data, key.mv_size,
            "in %s and %s with different entries: %s (cache-merge would refuse it)",
            quoted(dirs[src[0]], &q1), quoted(dirs[src[j]], &q2), d);
        break;
      }
      int named = 0; /* the manifest has this key's id */
      while (need_manifest && mi < nids) { /* ids before this key are in no store */
        const char *id = ids[mi]->id;
        MDB_val mk = {strlen(id), (void *)id};
        int cmp = kmerge_cmp(&mk, &key);
        if (cmp > 0) break;
        if (cmp < 0) missing_id(c, st, txns, n, id, db);
        if (cmp == 0) {
          named = 1;
          matched[k]++;
          /* its tokens were made from the stored text: the manifest's is not served */
          int how =
              db == FC_DB_TEXT ? vf_text_changed(ids[mi], vals[0].mv_data, vals[0].mv_size) : 0;
          if (how)
            add(c, FC_VERIFY_ERROR, "text", id, strlen(id), "changed: manifest line %zu %s",
                ids[mi]->line, vf_text_change_msg(how));
        }
        mi++;
      }
      if (m && db == FC_DB_AUDIO && !named) out->beyond_manifest++;
    }
    kmerge_close(km);
    w->km = NULL;
    if (rc != MDB_NOTFOUND) break;
    rc = 0;
    for (; need_manifest && mi < nids; mi++) missing_id(c, st, txns, n, ids[mi]->id, db);
  }
  /* every config of a kind dropped from every store: the entries remain, nothing is served (with
   * expected configs named, each store's config mismatch says it) */
  if (!rc && matched[0] && !any_cfg[0] && !o->n_expect_mel)
    add(c, FC_VERIFY_ERROR, "meta", NULL, 0, "%s", vf_no_config_msg(0, n > 1, matched[0]));
  if (!rc && matched[1] && !any_cfg[1] && !o->n_expect_tok)
    add(c, FC_VERIFY_ERROR, "meta", NULL, 0, "%s", vf_no_config_msg(1, n > 1, matched[1]));
  return rc;
}

/* walk, with LMDB's assertions on damaged pages caught (store_lmdb_assert): a finding. */
static int walk_guarded(dctx *c, dwalk *w, const char *const *dirs, size_t n,
                        const fc_verify_opts *o, fc_store **st, MDB_txn **txns, MDB_dbi *dbis,
                        char (**ref_sets)[33]) {
  sigjmp_buf jb, *outer = store_lmdb_jump;
  if (sigsetjmp(jb, 0)) {
    store_lmdb_jump = outer;
    add(c, FC_VERIFY_ERROR, "env", NULL, 0,
        "B-tree damaged (LMDB: %s): the stores were not checked as one dataset", store_lmdb_why);
    return 0;
  }
  store_lmdb_jump = &jb;
  int rc = walk(c, w, dirs, n, o, st, txns, dbis, ref_sets);
  store_lmdb_jump = outer;
  return rc;
}

int fc_verify_dataset(const char *const *dirs, size_t n, const fc_verify_opts *o,
                      fc_verify_report *out, char *why, size_t why_len) {
  FC_ARGS_WHY(dirs || !n, out);
  qname q1; /* a store's name in why */
  fc_verify_opts defaults;
  if (!o) {
    fc_verify_opts_init(&defaults);
    o = &defaults;
  }
  memset(out, 0, sizeof *out);
  if (why && why_len) why[0] = '\0';
  FC_ARGS_EACH_WHY(dirs, n); /* not an open's "(null): Invalid argument" */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  dctx c = {out, 0, o->max_errors};
  fc_store **st = fc_calloc(n ? n : 1, sizeof *st);
  fc_rtxn **rt = fc_calloc(n ? n : 1, sizeof *rt);
  MDB_txn **txns = fc_calloc(n ? n : 1, sizeof *txns);
  MDB_dbi *dbis = fc_calloc(n ? n : 1, sizeof *dbis);
  char(*ref_sets[2])[33] = {NULL, NULL};
  int rc = (st && rt && txns && dbis) ? 0 : ENOMEM;
  size_t unread = 0;
  for (size_t i = 0; i < n && !rc;
       i++) { /* as fc_verify_store: LMDB touches no page past the end */
    vf_env e;
    int erc = vf_env_read(dirs[i], &e);
    if ((erc && e.not_lmdb) || (!erc && vf_env_truncated(dirs[i], &e))) {
      add(&c, FC_VERIFY_ERROR, "env", dirs[i], strlen(dirs[i]),
          "%s: the stores were not checked as one dataset",
          erc ? "data.mdb is not an LMDB environment" : "data.mdb is truncated");
      unread++;
    }
  }
  const size_t bad_files = unread; /* none is opened: LMDB would read past a file's end */
  for (size_t i = 0; i < n && !rc && !bad_files; i++) {
    unsigned fl = FC_STORE_RDONLY | (store_wants_nolock(dirs[i], o->nolock) ? FC_STORE_NOLOCK : 0);
    rc = fc_store_open(dirs[i], fl, &st[i]);
    if (!rc) mdb_env_set_assert(st[i]->env, store_lmdb_assert);
    if (rc == FC_EFORMAT || rc == FC_EVERSION || rc == FC_ETRUNCATED || rc == MDB_INVALID ||
        rc == MDB_CORRUPTED ||
        rc == MDB_PAGE_NOTFOUND) { /* a damaged store: its own report says what (exit 1) */
      add(&c, FC_VERIFY_ERROR, "env", dirs[i], strlen(dirs[i]),
          "%s: the stores were not checked as one dataset", fc_strerror(rc));
      unread++;
      rc = 0;
      continue;
    }
    if (rc) {
      if (why && why_len) snprintf(why, why_len, "%s: %s", quoted(dirs[i], &q1), fc_strerror(rc));
      break;
    }
    if ((rc = fc_store_read_begin(st[i], &rt[i])) != 0) break;
    txns[i] = rt[i]->txn;
  }
  if (rc) goto done;
  out->opened = 1;
  if (unread) goto done;

  dwalk w = {NULL, NULL, NULL, NULL};
  rc = walk_guarded(&c, &w, dirs, n, o, st, txns, dbis, ref_sets);
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) {
    add(&c, FC_VERIFY_ERROR, "env", NULL, 0,
        "B-tree damaged (LMDB: %s): the stores were not checked as one dataset", mdb_strerror(rc));
    rc = 0;
  }
  free(w.set);
  free(w.gone);
  free(w.ids);
  kmerge_close(w.km);
  if (o->stop && *o->stop && !rc) rc = FC_EINTR;

done:
  if (rc && rc != FC_EINTR && why && why_len && !why[0])
    snprintf(why, why_len, "%s", fc_strerror(rc));
  for (size_t i = 0; i < n && rt; i++) fc_rtxn_end(rt[i]);
  for (size_t i = 0; i < n && st; i++) fc_store_close(st[i]);
  free(st);
  free(rt);
  free(txns);
  free(dbis);
  free(ref_sets[0]);
  free(ref_sets[1]);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  out->wall_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  return rc;
}
