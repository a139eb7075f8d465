/* The index (docs/FORMAT.md "Index", fc_store.h): kept by the store in the transactions that
 * change entries and configs, read by the loader instead of a lookup and a header per utterance.
 *
 *   - fc_store_write: a new config gets an (empty) index; each entry put sets its id from the
 *     records of the same transaction, whatever the order of the puts; an entry whose content
 *     changed is re-pointed or dropped; a record put alone indexes nothing until its entry is
 *     written again; a config stored again keeps its index; an index another process made is
 *     kept by this one's writes (fork); a failed put or commit (fault sites) leaves the index as
 *     the last commit did, and a store opened again reads it;
 *   - the loader: a store read through its indexes gives the same items, lengths, problems and
 *     batch bytes as the same store read without them (index dbs removed: the fallback), a
 *     store whose index misses ids (a count that differs) is read with lookups for those;
 *     records a wrong index points at are reported by the batch that meets them, never served;
 *   - the loader reads a cold store's index trees ahead of its walk (loader_warm.c): every branch
 *     page read and every leaf found (LMDB's own counts), the same epoch as without; a store in
 *     memory is left alone after a sample; pages that do not read as LMDB's end the warming, not
 *     the open;
 *   - cache-merge writes the output's indexes (from indexed inputs and from old ones);
 *   - cache-verify finds a wrong dim0, a wrong key, an id without an entry (errors) and counts an
 *     id missing from an index. */
#include "featcache.h"
#include "libcache/core/store/store_int.h"
#include "libcache/core/loader/loader_int.h"
#include "formats/common/fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

#define N_MELS 80
static const char TOK_JSON[] = "{\"kind\":\"tokens\",\"preset\":null,\"tokenizer\":\"chars\"}";
static char dir[256];
static fc_digest mel_cfg, tok_cfg;
static char mel_json[2048];
static size_t mel_json_len;

static uint32_t frames_of(int u, int version) { return 10 + (uint32_t)((u * 7 + version) % 90); }

/* Everything one utterance needs, kept alive until its write. */
typedef struct utt {
  char id[32];
  uint8_t aval[128];
  size_t alen;
  fc_digest fkey;
  uint8_t *rec;
  size_t rec_len;
  uint8_t tval[64];
  size_t tlen;
  fc_digest tkey;
  uint8_t trec[64 + 64];
  size_t trec_len;
} utt;

/* Utterance u in content version `version` (another version: other audio, other frames). */
static void make_utt(utt *x, const char *prefix, int u, int version, int text) {
  snprintf(x->id, sizeof x->id, "%s%04d", prefix, u);
  char src[64];
  snprintf(src, sizeof src, "audio %s v%d", x->id, version);
  uint32_t fr = frames_of(u, version);
  fc_audio_entry ae = {.sample_rate = 22050,
                       .channels = 1,
                       .frames = fr * 256u,
                       .source_size = 9,
                       .path = x->id,
                       .path_len = strlen(x->id)};
  fc_digest_buffer(src, strlen(src), &ae.digest);
  fc_audio_entry_encode(&ae, x->aval);
  x->alen = fc_audio_entry_size(&ae); /* hifigan: samples / 256 frames */
  size_t pl = (size_t)fr * N_MELS * 4;
  float *mel = calloc(1, pl);
  for (size_t i = 0; i < (size_t)fr * N_MELS; i++) mel[i] = (float)(u + i);
  fc_record_header h = {.dtype = FC_DTYPE_F32,
                        .ndim = 2,
                        .dim0 = fr,
                        .dim1 = N_MELS,
                        .config = mel_cfg,
                        .producer = FC_PRODUCER_CPU};
  x->rec = malloc(64 + pl);
  fc_record_encode(&h, mel, pl, x->rec);
  free(mel);
  x->rec_len = 64 + pl;
  fc_record_key(&ae.digest, &mel_cfg, &x->fkey);
  x->tlen = 0;
  if (!text) return;
  char t[32];
  int tl = snprintf(t, sizeof t, "text %s v%d", x->id, version);
  fc_digest td;
  fc_digest_buffer(t, (size_t)tl, &td);
  memcpy(x->tval, td.bytes, 16);
  memcpy(x->tval + 16, t, (size_t)tl);
  x->tlen = 16 + (size_t)tl;
  int16_t toks[24];
  uint32_t nt = 3 + (uint32_t)(u % 20);
  for (uint32_t j = 0; j < nt; j++) toks[j] = (int16_t)(u + (int)j);
  fc_record_header th = {.dtype = FC_DTYPE_I16,
                         .ndim = 1,
                         .dim0 = nt,
                         .dim1 = 1,
                         .config = tok_cfg,
                         .producer = FC_PRODUCER_CPU};
  fc_record_encode(&th, toks, nt * 2, x->trec);
  x->trec_len = 64 + nt * 2;
  fc_record_key(&td, &tok_cfg, &x->tkey);
}

/* Puts of x: entries first when entries_first (the store indexes at the end of the batch). */
static size_t utt_puts(const utt *x, fc_put *p, int entries_first, int records, int entries) {
  size_t n = 0;
  fc_put e[2], r[2];
  size_t ne = 0, nr = 0;
  e[ne++] = (fc_put){FC_DB_AUDIO, x->id, strlen(x->id), x->aval, x->alen, 0};
  r[nr++] = (fc_put){FC_DB_FEAT, x->fkey.bytes, 16, x->rec, x->rec_len, FC_PUT_NOOVERWRITE};
  if (x->tlen) {
    e[ne++] = (fc_put){FC_DB_TEXT, x->id, strlen(x->id), x->tval, x->tlen, 0};
    r[nr++] = (fc_put){FC_DB_TOK, x->tkey.bytes, 16, x->trec, x->trec_len, FC_PUT_NOOVERWRITE};
  }
  for (int pass = 0; pass < 2; pass++) {
    int want_entries = entries_first ? pass == 0 : pass == 1;
    if (want_entries && entries)
      for (size_t i = 0; i < ne; i++) p[n++] = e[i];
    if (!want_entries && records)
      for (size_t i = 0; i < nr; i++) p[n++] = r[i];
  }
  return n;
}

static int put_configs(fc_store *s) {
  int rc = fc_store_put_config(s, &mel_cfg, mel_json, mel_json_len);
  return rc ? rc : fc_store_put_config(s, &tok_cfg, TOK_JSON, strlen(TOK_JSON));
}

/* n utterances prefix0000.. in batches of 16; odd batches put entries before records. */
static int fill(fc_store *s, const char *prefix, int n, int text) {
  int rc = put_configs(s);
  for (int b0 = 0; b0 < n && !rc; b0 += 16) {
    utt xs[16];
    fc_put puts[64];
    size_t np = 0;
    int m = n - b0 < 16 ? n - b0 : 16;
    for (int i = 0; i < m; i++) {
      make_utt(&xs[i], prefix, b0 + i, 0, text);
      np += utt_puts(&xs[i], puts + np, (b0 / 16) % 2, 1, 1);
    }
    rc = fc_store_write(s, puts, np);
    for (int i = 0; i < m; i++) free(xs[i].rec);
  }
  return rc;
}

/* What cfg's index says about id: 1 and *e, 0 not indexed, -1 no index. */
static int indexed(fc_store *s, const fc_digest *cfg, const char *id, store_ix *e) {
  store_index x;
  MDB_txn *t;
  if (store_index_find(s, cfg, &x)) return -1;
  if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t)) return -2;
  MDB_val k = {strlen(id), (void *)id}, v;
  int rc = mdb_get(t, x.dbi, &k, &v);
  if (!rc) rc = store_index_decode(v.mv_data, v.mv_size, e);
  mdb_txn_abort(t);
  return rc == 0 ? 1 : rc == MDB_NOTFOUND ? 0 : -2;
}

static uint64_t index_count(fc_store *s, const fc_digest *cfg) {
  store_index x;
  MDB_txn *t;
  MDB_stat st;
  if (store_index_find(s, cfg, &x) || mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t)) return 0;
  int rc = mdb_stat(t, x.dbi, &st);
  mdb_txn_abort(t);
  return rc ? 0 : st.ms_entries;
}

static void path_of(char *out, size_t len, const char *name) {
  snprintf(out, len, "%s/%s", dir, name);
}

static void test_write_rules(void) {
  char p[512];
  path_of(p, sizeof p, "rules");
  fc_store *s;
  CHECK(fc_store_open(p, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0);
  CHECK(fill(s, "u", 40, 1) == 0, "fill");
  store_ix e;
  utt x;
  make_utt(&x, "u", 17, 0, 1);
  CHECK(indexed(s, &mel_cfg, "u0017", &e) == 1 && !memcmp(e.key.bytes, x.fkey.bytes, 16) &&
            e.dim0 == frames_of(17, 0),
        "u0017 under the mel config: key and frames of its record (dim0 %u)", e.dim0);
  CHECK(indexed(s, &tok_cfg, "u0017", &e) == 1 && !memcmp(e.key.bytes, x.tkey.bytes, 16) &&
            e.dim0 == 3 + 17 % 20,
        "u0017 under the token config (dim0 %u)", e.dim0);
  CHECK(index_count(s, &mel_cfg) == 40 && index_count(s, &tok_cfg) == 40, "40 ids each");
  free(x.rec);

  /* u0003's audio changes and its new record comes with it: re-pointed */
  fc_put puts[8];
  make_utt(&x, "u", 3, 1, 0);
  size_t np = utt_puts(&x, puts, 1, 1, 1);
  CHECK(fc_store_write(s, puts, np) == 0);
  CHECK(indexed(s, &mel_cfg, "u0003", &e) == 1 && !memcmp(e.key.bytes, x.fkey.bytes, 16) &&
            e.dim0 == frames_of(3, 1),
        "u0003 re-pointed to its new record");
  free(x.rec);
  /* u0004's audio changes and no record comes: dropped from the index */
  make_utt(&x, "u", 4, 1, 0);
  np = utt_puts(&x, puts, 0, 0, 1);
  CHECK(fc_store_write(s, puts, np) == 0);
  CHECK(indexed(s, &mel_cfg, "u0004", &e) == 0, "u0004 dropped: its entry names no record");
  /* its record alone indexes nothing; the entry written again does */
  np = utt_puts(&x, puts, 0, 1, 0);
  CHECK(fc_store_write(s, puts, np) == 0);
  CHECK(indexed(s, &mel_cfg, "u0004", &e) == 0, "a record alone indexes nothing");
  np = utt_puts(&x, puts, 0, 0, 1);
  CHECK(fc_store_write(s, puts, np) == 0);
  CHECK(indexed(s, &mel_cfg, "u0004", &e) == 1 && e.dim0 == frames_of(4, 1),
        "the entry written again indexes it");
  free(x.rec);
  /* the configs stored again: their indexes stay */
  CHECK(put_configs(s) == 0 && index_count(s, &mel_cfg) == 40, "a config stored again");
  fc_store_close(s);
  /* opened again: the indexes are read from the store */
  CHECK(fc_store_open(p, FC_STORE_RDONLY, &s) == 0);
  CHECK(indexed(s, &mel_cfg, "u0039", &e) == 1 && e.dim0 == frames_of(39, 0), "reopened");
  fc_digest other;
  fc_digest_buffer("no such config", 14, &other);
  CHECK(indexed(s, &other, "u0039", &e) == -1, "a config without index");
  fc_store_close(s);
}

/* Another process creates a config (and its index) in a store this one holds open; this one's
 * next write of an entry keeps that index. */
static void test_other_process(void) {
  char p[512];
  path_of(p, sizeof p, "other");
  fc_store *s;
  CHECK(fc_store_open(p, FC_STORE_CREATE, &s) == 0);
  fc_store_put_config(s, &mel_cfg, mel_json, mel_json_len);
  utt x;
  make_utt(&x, "v", 1, 0, 1);
  fc_put puts[8];
  size_t np = utt_puts(&x, puts, 0, 1, 1);
  pid_t pid = fork();
  if (pid == 0) { /* the child: its own environment on the same files */
    fc_store *c;
    int ok = fc_store_open(p, 0, &c) == 0 &&
             fc_store_put_config(c, &tok_cfg, TOK_JSON, strlen(TOK_JSON)) == 0;
    if (c) fc_store_close(c);
    _exit(ok ? 0 : 1);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child made the token config");
  CHECK(fc_store_write(s, puts, np) == 0);
  store_ix e;
  CHECK(indexed(s, &tok_cfg, "v0001", &e) == 1 && !memcmp(e.key.bytes, x.tkey.bytes, 16),
        "the other process's index kept by this one's write");
  free(x.rec);
  fc_store_close(s);
}

/* A put or a commit failing (FC_FAULT) leaves the index as the last commit left it. */
static void test_faults(void) {
  if (!fault_built()) {
    printf("fault part not run: the library was built without -DFC_FAULT_INJECTION=ON\n");
    return;
  }
  const char *sites[] = {"put", "commit"};
  for (int si = 0; si < 2; si++) {
    for (int n = 1; n < 200; n++) {
      char p[512], spec[32];
      snprintf(p, sizeof p, "%s/fault-%s-%d", dir, sites[si], n);
      fc_store *s;
      CHECK(fc_store_open(p, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0);
      CHECK(put_configs(s) == 0);
      snprintf(spec, sizeof spec, "%s:%d", sites[si], n);
      setenv("FC_FAULT", spec, 1);
      int rc = fill(s, "f", 20, 1);
      setenv("FC_FAULT", "", 1);
      fc_store_close(s);
      CHECK(fc_store_open(p, FC_STORE_RDONLY, &s) == 0);
      fc_store_info info;
      fc_store_info_get(s, &info);
      uint64_t nm = index_count(s, &mel_cfg), nt = index_count(s, &tok_cfg);
      CHECK(nm == info.entries[FC_DB_AUDIO] && nt == info.entries[FC_DB_TEXT] &&
                (rc != 0 || nm == 20),
            "%s: %llu audio entries, %llu indexed; %llu text, %llu indexed (write: %s)", spec,
            (unsigned long long)info.entries[FC_DB_AUDIO], (unsigned long long)nm,
            (unsigned long long)info.entries[FC_DB_TEXT], (unsigned long long)nt, fc_strerror(rc));
      fc_store_close(s);
      if (rc == 0) {
        printf("%s faults: %d runs until the writes went through; index as committed after each\n",
               sites[si], n);
        break;
      }
    }
  }
}

/* Remove the index dbs of a store (what a store written before indexes looks like). */
static void drop_indexes(const char *p) {
  fc_store *s;
  CHECK(fc_store_open(p, 0, &s) == 0);
  MDB_txn *t;
  CHECK(mdb_txn_begin(s->env, NULL, 0, &t) == 0);
  for (int k = 0; k < 2; k++) {
    store_index x;
    if (store_index_find(s, k ? &tok_cfg : &mel_cfg, &x) == 0) CHECK(mdb_drop(t, x.dbi, 1) == 0);
  }
  CHECK(mdb_txn_commit(t) == 0);
  fc_store_close(s);
}

/* Every batch of a loader over paths as text: ids, lengths, a checksum of the bytes, errors. */
static char *epoch_text(const char *const *paths, size_t n, int tokens, int padded,
                        uint64_t *problems) {
  fc_loader_opts o;
  fc_loader_opts_init(&o);
  o.batch_size = 7;
  o.tokens = tokens ? "chars" : NULL;
  o.output = padded ? FC_OUTPUT_PADDED : FC_OUTPUT_VIEWS;
  o.prefetch_threads = padded ? 2 : 0;
  fc_loader *l;
  char why[512];
  int rc = fc_loader_open(paths, n, &o, &l, why, sizeof why);
  CHECK(rc == 0, "open: %s", why);
  if (rc) return strdup("");
  fc_loader_info info;
  fc_loader_info_get(l, &info);
  *problems = info.skipped;
  size_t cap = 1 << 20, len = 0;
  char *out = calloc(1, cap);
  fc_batch *b;
  while (fc_loader_next(l, &b) == 0 && b) {
    for (uint32_t i = 0; i < b->size; i++) {
      uint64_t sum = 0;
      const uint8_t *m =
          padded ? (const uint8_t *)b->mel_data + (size_t)i * b->frames * N_MELS * 4 : b->mels[i];
      for (size_t j = 0; j < (size_t)b->mel_lengths[i] * N_MELS * 4; j++) sum = sum * 31 + m[j];
      len += (size_t)snprintf(out + len, cap - len, "%s %u %u %llx;", b->ids[i], b->mel_lengths[i],
                              tokens ? b->token_lengths[i] : 0, (unsigned long long)sum);
    }
    if (b->errors) len += (size_t)snprintf(out + len, cap - len, "[%s]", b->errors);
    fc_loader_release(l, b);
  }
  for (uint64_t i = 0;; i++) {
    const char *id, *st, *reason;
    if (fc_loader_problem(l, i, &id, &st, &reason)) break;
    len += (size_t)snprintf(out + len, cap - len, "{%s: %s}", id, reason);
  }
  fc_loader_close(l);
  return out;
}

static void test_loader(void) {
  char a[512], b[512], a2[512], b2[512], cmd[2200];
  path_of(a, sizeof a, "la");
  path_of(b, sizeof b, "lb");
  fc_store *s;
  CHECK(fc_store_open(a, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0);
  CHECK(fill(s, "a", 50, 1) == 0);
  fc_store_close(s);
  /* b: ids without features, without text, a text without audio: the counts differ */
  CHECK(fc_store_open(b, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0);
  CHECK(fill(s, "b", 30, 1) == 0);
  utt x;
  fc_put puts[8];
  make_utt(&x, "c", 1, 0, 0); /* audio, no record, no text */
  size_t np = utt_puts(&x, puts, 0, 0, 1);
  CHECK(fc_store_write(s, puts, np) == 0);
  free(x.rec);
  make_utt(&x, "c", 2, 0, 0); /* features, no text */
  np = utt_puts(&x, puts, 0, 1, 1);
  CHECK(fc_store_write(s, puts, np) == 0);
  free(x.rec);
  make_utt(&x, "c", 3, 0, 1); /* text only */
  puts[0] = (fc_put){FC_DB_TEXT, x.id, strlen(x.id), x.tval, x.tlen, 0};
  CHECK(fc_store_write(s, puts, 1) == 0);
  free(x.rec);
  fc_store_close(s);
  path_of(a2, sizeof a2, "la-old");
  path_of(b2, sizeof b2, "lb-old");
  snprintf(cmd, sizeof cmd, "cp -r %s %s && cp -r %s %s", a, a2, b, b2);
  CHECK(system(cmd) == 0);
  drop_indexes(a2);
  drop_indexes(b2);
  for (int tokens = 0; tokens < 2; tokens++)
    for (int padded = 0; padded < 2; padded++) {
      const char *pn[2] = {a, b}, *po[2] = {a2, b2};
      uint64_t pn_n, po_n;
      char *tn = epoch_text(pn, 2, tokens, padded, &pn_n);
      char *to = epoch_text(po, 2, tokens, padded, &po_n);
      CHECK(strcmp(tn, to) == 0 && pn_n == po_n && strlen(tn) > 100,
            "tokens %d padded %d: through the index and without it differ (%llu, %llu "
            "problems):\n%.400s\n%.400s",
            tokens, padded, (unsigned long long)pn_n, (unsigned long long)po_n, tn, to);
      CHECK(pn_n == (tokens ? 3u : 1u), "problems: %llu", (unsigned long long)pn_n);
      free(tn);
      free(to);
    }
  /* a wrong index: u's entry says other frames, another names a record the store lacks */
  CHECK(fc_store_open(a, 0, &s) == 0);
  MDB_txn *t;
  store_index xi;
  CHECK(store_index_find(s, &mel_cfg, &xi) == 0 && mdb_txn_begin(s->env, NULL, 0, &t) == 0);
  uint8_t v[FC_INDEX_VALUE_SIZE];
  MDB_val k = {5, (void *)"a0010"}, val, nv = {sizeof v, v};
  CHECK(mdb_get(t, xi.dbi, &k, &val) == 0);
  memcpy(v, val.mv_data, sizeof v);
  v[16] ^= 1;
  CHECK(mdb_put(t, xi.dbi, &k, &nv, 0) == 0);
  k.mv_data = (void *)"a0011";
  CHECK(mdb_get(t, xi.dbi, &k, &val) == 0);
  memcpy(v, val.mv_data, sizeof v);
  v[0] ^= 1;
  CHECK(mdb_put(t, xi.dbi, &k, &nv, 0) == 0);
  CHECK(mdb_txn_commit(t) == 0);
  fc_store_close(s);
  const char *pa[1] = {a};
  uint64_t np2;
  char *ta = epoch_text(pa, 1, 0, 1, &np2);
  CHECK(strstr(ta, "a0010: the index says") &&
            strstr(ta,
                   "a0011: the index names a feature "
                   "record the store does not hold") &&
            !strstr(ta, "a0010 ") && !strstr(ta, "a0011 ") && strstr(ta, "a0012 "),
        "wrong index entries reported by their batch, never served: %.300s", ta);
  free(ta);
  /* strict: the batch fails */
  fc_loader_opts o;
  fc_loader_opts_init(&o);
  o.flags = FC_LOADER_STRICT;
  o.prefetch_threads = 0;
  fc_loader *l;
  char why[512];
  CHECK(fc_loader_open(pa, 1, &o, &l, why, sizeof why) == 0, "%s", why);
  fc_batch *bt;
  int rc = 0;
  while ((rc = fc_loader_next(l, &bt)) == 0 && bt) fc_loader_release(l, bt);
  CHECK(rc == FC_EFORMAT && strstr(fc_loader_error(l), "a0010"), "strict: %s / %s", fc_strerror(rc),
        fc_loader_error(l));
  fc_loader_close(l);

  /* cache-verify names each wrong entry; one missing from the index is a warning */
  CHECK(fc_store_open(a, 0, &s) == 0 && mdb_txn_begin(s->env, NULL, 0, &t) == 0);
  k.mv_data = (void *)"a0020";
  CHECK(mdb_del(t, xi.dbi, &k, NULL) == 0);
  k = (MDB_val){5, (void *)"zzzzz"};
  CHECK(mdb_put(t, xi.dbi, &k, &nv, 0) == 0);
  CHECK(mdb_txn_commit(t) == 0);
  fc_store_close(s);
  fc_verify_report r;
  char w[256];
  CHECK(fc_verify_store(a, NULL, &r, w, sizeof w) == 0, "%s", w);
  int dim0 = 0, key = 0, noent = 0, missing = 0;
  for (size_t i = 0; i < r.count; i++) {
    const fc_verify_finding *f = &r.findings[i];
    if (strcmp(f->db, "index") != 0) continue;
    int err = f->severity == FC_VERIFY_ERROR;
    if (err && !strcmp(f->id, "a0010") && strstr(f->problem, "frames")) dim0++;
    if (err && !strcmp(f->id, "a0011") && strstr(f->problem, "not the one")) key++;
    if (err && !strcmp(f->id, "zzzzz") && strstr(f->problem, "no audio entry")) noent++;
  }
  missing = (int)r.index_missing;
  CHECK(r.errors == 3 && dim0 == 1 && key == 1 && noent == 1 && missing == 1,
        "verify: %llu errors (dim0 %d, key %d, no entry %d), missing %d",
        (unsigned long long)r.errors, dim0, key, noent, missing);
  fc_verify_report_free(&r);
}

/* cache-merge: the output's indexes, from indexed inputs and from one written before indexes */
/* The loader's counts of its index read-ahead over store p (tokens too). */
static ld_warm_stats warm_of(const char *p) {
  fc_loader_opts o;
  fc_loader_opts_init(&o);
  o.tokens = "chars";
  o.output = FC_OUTPUT_VIEWS;
  o.prefetch_threads = 0;
  fc_loader *l;
  char why[512];
  ld_warm_stats w;
  memset(&w, 0, sizeof w);
  CHECK(fc_loader_open(&p, 1, &o, &l, why, sizeof why) == 0, "open %s: %s", p, why);
  if (!l) return w;
  w = l->warm;
  fc_loader_close(l);
  return w;
}

/* Is any page of file f in memory? */
static int any_resident(const char *f) {
  int fd = open(f, O_RDONLY);
  struct stat sb;
  int any = -1;
  if (fd < 0 || fstat(fd, &sb)) return -1;
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = ((size_t)sb.st_size + pg - 1) / pg;
  void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
  unsigned char *v = malloc(n);
  if (m != MAP_FAILED && v && mincore(m, (size_t)sb.st_size, v) == 0) {
    any = 0;
    for (size_t i = 0; i < n; i++) any |= v[i] & 1;
  }
  free(v);
  if (m != MAP_FAILED) munmap(m, (size_t)sb.st_size);
  close(fd);
  return any;
}

static void test_warm(void) {
  if (!fault_built()) { /* FC_FAULT_LOADER_WARM, which makes the counts exact, is read only there */
    printf("read-ahead part not run: the library was built without -DFC_FAULT_INJECTION=ON\n");
    return;
  }
  char p[512], f[600];
  path_of(p, sizeof p, "warm");
  snprintf(f, sizeof f, "%s/data.mdb", p);
  fc_store *s;
  CHECK(fc_store_open(p, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0);
  CHECK(fill(s, "w", 4000, 1) == 0);
  /* LMDB's own counts of the two index trees, and the mel index's root */
  uint64_t branch = 0, leaf = 0, root = 0;
  unsigned depth = 99, psize = 0;
  MDB_txn *t;
  CHECK(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t) == 0);
  for (int k = 0; k < 2; k++) {
    store_index x;
    MDB_stat ms;
    CHECK(store_index_find(s, k ? &tok_cfg : &mel_cfg, &x) == 0 && mdb_stat(t, x.dbi, &ms) == 0);
    branch += ms.ms_branch_pages;
    leaf += ms.ms_leaf_pages;
    if (ms.ms_depth < depth) depth = ms.ms_depth;
    psize = ms.ms_psize;
    if (k == 0) {
      char name[64] = FC_INDEX_PREFIX;
      fc_digest_hex(&mel_cfg, name + strlen(name));
      MDB_val key = {strlen(name), name}, v;
      CHECK(mdb_get(t, 1, &key, &v) == 0 && v.mv_size == 48);
      if (v.mv_size == 48) memcpy(&root, (const uint8_t *)v.mv_data + 40, 8);
    }
  }
  mdb_txn_abort(t);
  fc_store_close(s);
  CHECK(depth >= 2 && leaf >= 64 && root >= 2, "trees: depth %u, %llu leaves, root %llu", depth,
        (unsigned long long)leaf, (unsigned long long)root);
  const char *pa[1] = {p};
  uint64_t n0, n1;
  char *plain = epoch_text(pa, 1, 1, 0, &n0);

  /* all (test builds: a store in memory too, to the end): every branch page read, every leaf
   * found and asked for, the same epoch */
  setenv("FC_FAULT_LOADER_WARM", "all", 1);
  ld_warm_stats w = warm_of(p);
  CHECK(w.started == 1 && w.gave_up == 0 && w.branch_pages == branch && w.leaf_pages == leaf &&
            w.leaves_asked == leaf && w.requests <= branch + leaf,
        "all: started %u gave_up %u, %llu of %llu branch pages, %llu of %llu leaves, %llu "
        "asked for in %llu requests",
        w.started, w.gave_up, (unsigned long long)w.branch_pages, (unsigned long long)branch,
        (unsigned long long)w.leaf_pages, (unsigned long long)leaf,
        (unsigned long long)w.leaves_asked, (unsigned long long)w.requests);
  char *all = epoch_text(pa, 1, 1, 0, &n1);
  CHECK(strcmp(plain, all) == 0 && n0 == n1 && strlen(plain) > 1000,
        "the epoch with the index read ahead differs");
  free(all);
  unsetenv("FC_FAULT_LOADER_WARM");

  /* in memory: the sample says so, the leaves are left alone (the warming run to its end: the
   * walk of a store in memory would stop it sooner) */
  setenv("FC_FAULT_LOADER_WARM", "finish", 1);
  w = warm_of(p);
  CHECK(w.started == 1 && w.cold == 0 && w.gave_up == 0 && w.leaf_pages == leaf &&
            w.leaves_asked == 0,
        "in memory: started %u cold %u gave_up %u, %llu leaves, %llu asked for", w.started, w.cold,
        w.gave_up, (unsigned long long)w.leaf_pages, (unsigned long long)w.leaves_asked);

  /* dropped from the page cache, where the file system can (not tmpfs): cold, leaves asked for
   * (the warming run before the walk: run beside it on a loaded machine, the walk could fault the
   * sampled leaves in first, and the sample would find the store in memory) */
  setenv("FC_FAULT_LOADER_WARM", "sync", 1);
  int fd = open(f, O_RDONLY);
  CHECK(fd >= 0 && fsync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  if (fd >= 0) close(fd);
  if (any_resident(f) == 0) {
    w = warm_of(p);
    CHECK(w.started == 1 && w.cold == 1 && w.leaf_pages == leaf && w.leaves_asked == leaf,
          "cold: started %u cold %u, %llu leaves, %llu asked for", w.started, w.cold,
          (unsigned long long)w.leaf_pages, (unsigned long long)w.leaves_asked);
  } else {
    printf("test_index: cold read-ahead not checked: %s keeps its pages in memory\n", f);
  }
  unsetenv("FC_FAULT_LOADER_WARM");

  /* the mel index's root page with another page number in its header (LMDB does not read it):
   * the warming ends there, nothing is asked for, the open and the epoch are as before */
  fd = open(f, O_RDWR);
  uint64_t bad = root ^ 1;
  CHECK(fd >= 0 && pwrite(fd, &bad, 8, (off_t)(root * psize)) == 8);
  if (fd >= 0) close(fd);
  setenv("FC_FAULT_LOADER_WARM", "all", 1);
  w = warm_of(p);
  unsetenv("FC_FAULT_LOADER_WARM");
  CHECK(w.started == 1 && w.gave_up == 1 && w.leaves_asked == 0,
        "a page not as LMDB writes it: started %u gave_up %u, %llu leaves asked for", w.started,
        w.gave_up, (unsigned long long)w.leaves_asked);
  char *after = epoch_text(pa, 1, 1, 0, &n1);
  CHECK(strcmp(plain, after) == 0 && n0 == n1, "the epoch after the warming gave up differs");
  free(after);
  free(plain);
}

static void test_merge(void) {
  char a[512], b[512], out[512], out2[512], why[512];
  path_of(a, sizeof a, "ma");
  path_of(b, sizeof b, "mb");
  path_of(out, sizeof out, "mout");
  path_of(out2, sizeof out2, "mout2");
  fc_store *s;
  CHECK(fc_store_open(a, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0);
  CHECK(fill(s, "m", 30, 1) == 0);
  fc_store_close(s);
  CHECK(fc_store_open(b, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0);
  CHECK(fill(s, "n", 20, 1) == 0);
  fc_store_close(s);
  drop_indexes(b);
  fc_merge_opts o;
  fc_merge_opts_init(&o);
  o.batch_records = 7;
  fc_merge_stats st;
  const char *in[2] = {a, b};
  CHECK(fc_merge_run(out, in, 2, &o, &st, why, sizeof why) == 0, "merge: %s", why);
  CHECK(fc_store_open(out, FC_STORE_RDONLY, &s) == 0);
  CHECK(index_count(s, &mel_cfg) == 50 && index_count(s, &tok_cfg) == 50,
        "merged: %llu, %llu ids indexed (want 50)", (unsigned long long)index_count(s, &mel_cfg),
        (unsigned long long)index_count(s, &tok_cfg));
  fc_store_close(s);
  fc_verify_report r;
  CHECK(fc_verify_store(out, NULL, &r, why, sizeof why) == 0 && r.errors == 0 && r.warnings == 0 &&
            r.indexed_configs == 2 && r.index_entries == 100,
        "merged store verifies: %llu errors, %llu warnings, %llu index entries",
        (unsigned long long)r.errors, (unsigned long long)r.warnings,
        (unsigned long long)r.index_entries);
  fc_verify_report_free(&r);
  /* into an existing store holding the configs without indexes: they stay unindexed */
  const char *in2[1] = {a};
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "cp -r %s %s", b, out2);
  CHECK(system(cmd) == 0);
  CHECK(fc_merge_run(out2, in2, 1, &o, &st, why, sizeof why) == 0, "merge: %s", why);
  CHECK(fc_store_open(out2, FC_STORE_RDONLY, &s) == 0);
  store_ix e;
  CHECK(indexed(s, &mel_cfg, "m0001", &e) == -1, "an old config stays unindexed");
  fc_store_close(s);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/fc_test_index_%d", (int)getpid());
  mkdir(dir, 0777);
  fc_mel_config mc;
  fc_mel_preset("hifigan", &mc);
  int jl = fc_mel_config_json(&mc, mel_json, sizeof mel_json);
  mel_json_len = (size_t)jl;
  fc_digest_buffer(mel_json, mel_json_len, &mel_cfg);
  fc_digest_buffer(TOK_JSON, strlen(TOK_JSON), &tok_cfg);
  test_write_rules();
  test_other_process();
  test_faults();
  test_loader();
  test_warm();
  test_merge();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (!getenv("KEEP") && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return fc_check_result("test_index");
}
