/* cache-verify, steps 3 and 5: the audio and text entries, their sources, the manifest
 * (verify_int.h). */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/stored_text.h"
#include "formats/common/alloc.h"
#include "formats/common/utc.h"
#include "formats/xxh3_int.h"

/* ---- step 3: entries ------------------------------------------------------------------------- */

int vf_collect(vctx *c, fc_rtxn *t, int db, ventry **out, size_t *n_out) {
  fc_cursor *cur;
  int rc = fc_cursor_open(t, db, &cur);
  if (rc) return rc;
  c->cur = cur;
  size_t cap = 0, n = 0;
  ventry *a = NULL;
  const void *k, *v;
  size_t kl, vl;
  while ((rc = fc_cursor_next(cur, &k, &kl, &v, &vl)) == 0 && !vf_stopping(c)) {
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
      vf_add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "value lies outside the file (B-tree damaged)");
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 1024;
      ventry *na = fc_realloc(a, nc * sizeof *na);
      if (!na) {
        rc = ENOMEM;
        break;
      }
      a = na;
      cap = nc;
      *out = a; /* freed by the caller also when a damaged page ends the walk */
    }
    ventry *e = &a[n++];
    *e = (ventry){k, kl, v, vl, 1};
    int idrc = fc_id_check(k, kl);
    if (idrc)
      vf_add(c, FC_VERIFY_ERROR, db, k, kl, NULL, 0, "key is not a valid id (%s)",
             idrc == FC_EUTF8 ? "invalid UTF-8" : "empty, too long, or holds NUL or a newline");
    uint32_t home = c->part_n > 1 ? fc_store_part_of_id(k, kl, c->part_n) : 0;
    if (c->part_n > 1 && home != c->part_k) /* writers and featurize's skip look in its home part */
      vf_add(c, FC_VERIFY_ERROR, db, k, kl, k, kl,
             "in part %u of a split store of %u parts; its id belongs in part %u", c->part_k,
             c->part_n, home);
    if (db == FC_DB_AUDIO) {
      fc_audio_entry ae;
      if (fc_audio_entry_decode(v, vl, &ae)) {
        vf_add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "audio entry of %zu bytes (want at least %d)",
               vl, FC_AUDIO_ENTRY_FIXED);
        e->ok = 0;
      } else if (!ae.sample_rate || !ae.channels) {
        vf_add(c, FC_VERIFY_ERROR, db, k, kl, k, kl,
               "audio entry with sample rate %u and %u channels", ae.sample_rate, ae.channels);
        e->ok = 0;
      }
    } else {
      const char *txt;
      size_t tl;
      fc_digest td, h;
      if (fc_text_entry_decode(v, vl, &td, &txt, &tl)) {
        vf_add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "text entry of %zu bytes (want at least 16)",
               vl);
        e->ok = 0;
      } else if (!fc_utf8_valid(txt, tl)) {
        vf_add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "text is not valid UTF-8");
      } else if (fc_digest_buffer(txt, tl, &h), memcmp(h.bytes, td.bytes, 16) != 0) {
        /* the tok records were made from the text of the digest, not from this one: a damaged
         * transcript (LMDB checksums nothing) would serve tokens of another text */
        char hh[33], th[33];
        fc_digest_hex(&h, hh);
        fc_digest_hex(&td, th);
        vf_add(c, FC_VERIFY_ERROR, db, k, kl, k, kl,
               "transcript hashes to %s, the entry's text digest is %s: its tokens were made "
               "from another text",
               hh, th);
      }
    }
  }
  fc_cursor_close(cur);
  c->cur = NULL;
  *out = a;
  *n_out = n;
  return rc == FC_ENOTFOUND ? 0 : rc;
}

static int cmp_exp(const void *a, const void *b) { return memcmp(a, b, 16); }

int vf_build_expected(vctx *c) {
  size_t n_mel = 0, n_tok = 0;
  for (size_t i = 0; i < c->n_cfgs; i++) {
    n_mel += c->cfgs[i].kind == KIND_MEL;
    n_tok += c->cfgs[i].kind == KIND_TOK;
  }
  size_t total = c->n_audio * n_mel + c->n_text * n_tok;
  c->exp = fc_malloc((total ? total : 1) * sizeof *c->exp);
  if (!c->exp) return ENOMEM;
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++) {
    ventry *ents = pass ? c->text : c->audio;
    size_t ne = pass ? c->n_text : c->n_audio;
    for (size_t i = 0; i < ne; i++) {
      if (!ents[i].ok) continue;
      fc_digest content;
      memcpy(content.bytes, ents[i].val, 16);
      for (size_t j = 0; j < c->n_cfgs; j++) {
        if (c->cfgs[j].kind != (pass ? KIND_TOK : KIND_MEL)) continue;
        fc_digest key;
        fc_record_key(&content, &c->cfgs[j].digest, &key);
        vexp *x = &c->exp[n++];
        memcpy(x->key, key.bytes, 16);
        x->entry = (uint32_t)i;
        x->cfg = (uint16_t)j;
        x->db = pass ? FC_DB_TOK : FC_DB_FEAT;
        x->pad = 0;
      }
    }
  }
  qsort(c->exp, n, sizeof *c->exp, cmp_exp);
  c->n_exp = n;
  return 0;
}

const vexp *vf_find_exp(vctx *c, const void *key, int db) {
  size_t lo = 0, hi = c->n_exp;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (memcmp(c->exp[mid].key, key, 16) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (; lo < c->n_exp && memcmp(c->exp[lo].key, key, 16) == 0; lo++)
    if (c->exp[lo].db == db) return &c->exp[lo];
  return NULL;
}

/* XXH3-128 of a file, streamed (fc_digest_buffer's of its bytes). */
static int hash_file(const char *path, fc_digest *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const xxh3_impl *x = xxh3_best();
  xxh3_stream st;
  size_t bufsz = 1 << 20;
  char *buf = fc_malloc(bufsz);
  int rc = buf ? 0 : ENOMEM;
  if (!rc) x->reset(&st);
  while (!rc) {
    ssize_t n = read(fd, buf, bufsz);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) rc = errno;
    if (n <= 0) break;
    x->update(&st, buf, (size_t)n);
  }
  if (!rc) {
    uint64_t h[2];
    x->digest(&st, h);
    xxh3_put_digest(h, out);
  }
  free(buf);
  close(fd);
  return rc;
}

/* The source stored as `stored` under the corpus's new directory root: root/T for the longest
 * tail T of stored (its last components) that exists. 0 with the path in out, or ENOENT. */
static int under_root(const char *root, const char *stored, char *out, size_t len,
                      struct stat *st) {
  for (const char *t = stored; t && *t;) {
    while (*t == '/') t++;
    if (!*t) break;
    if (snprintf(out, len, "%s/%s", root, t) < (int)len && stat(out, st) == 0) return 0;
    t = strchr(t, '/');
  }
  return ENOENT;
}

static void check_source(vctx *c, const ventry *e, const fc_audio_entry *ae) {
  char stored[4096], path[4096 + 1024];
  if (ae->path_len == 0 || ae->path_len >= sizeof stored || memchr(ae->path, 0, ae->path_len)) {
    vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
           "source path of %zu bytes cannot be checked", ae->path_len);
    return;
  }
  memcpy(stored, ae->path, ae->path_len);
  stored[ae->path_len] = '\0';
  struct stat st;
  int found;
  if (c->o->source_root) {
    found = under_root(c->o->source_root, stored, path, sizeof path, &st) == 0;
    if (!found) {
      char *sp = vf_quoted(stored, ae->path_len);
      char *rp = vf_quoted(c->o->source_root, strlen(c->o->source_root));
      vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
             "source %s: not under --source-root %s (no tail of its path is there)", sp ? sp : "?",
             rp ? rp : "?");
      free(sp);
      free(rp);
      return;
    }
  } else {
    snprintf(path, sizeof path, "%s", stored);
    found = stat(path, &st) == 0;
  }
  const int err = errno; /* of the stat, before vf_quoted's allocation */
  char *pp = vf_quoted(path, strlen(path));
  if (!found) { /* a file not there: the corpus copied to another disk, most often */
    vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len, "source %s: %s%s",
           pp ? pp : "?", strerror(err),
           err == ENOENT ? " (the corpus moved? --source-root DIR looks for it under DIR)" : "");
    free(pp);
    return;
  }
  int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  int size_changed = (uint64_t)st.st_size != ae->source_size, mtime_changed = mtime != ae->mtime_ns;
  /* both as times, to the nanosecond when either has a fraction (a copy that kept whole seconds) */
  char now[64], then[64];
  fc_utc_pair(mtime, ae->mtime_ns, now, then, sizeof now);
  if (c->o->rehash) {
    fc_digest d;
    int rc = hash_file(path, &d);
    if (rc) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len, "source %s: %s",
             pp ? pp : "?", strerror(rc));
    } else if (memcmp(d.bytes, ae->digest.bytes, 16) != 0) {
      char a[33], b[33];
      fc_digest_hex(&ae->digest, a);
      fc_digest_hex(&d, b);
      vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
             "source changed: %s hashes to %s, its features were made from %s", pp ? pp : "?", b,
             a);
    } else if ((size_changed || mtime_changed) && c->o->sources) {
      vf_add(c, FC_VERIFY_WARNING, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
             "source %s touched (mtime %s, stored %s) but its bytes are unchanged", pp ? pp : "?",
             now, then);
    }
  } else if (size_changed) {
    vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
           "source changed: %s is %lld bytes, its features were made from %llu bytes",
           pp ? pp : "?", (long long)st.st_size, (unsigned long long)ae->source_size);
  } else if (mtime_changed) {
    vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
           "source changed: %s has mtime %s, its features were made from it at mtime %s "
           "(--rehash tells whether its bytes changed)",
           pp ? pp : "?", now, then);
  }
  free(pp);
}

/* One entry against every stored config of its kind: the record exists when expected, names its
 * config, and (mel) has the frame count the config gives for the entry's samples. */
static void check_entry(vctx *c, fc_rtxn *t, int db, const ventry *e) {
  fc_digest content;
  fc_audio_entry ae;
  memcpy(content.bytes, e->val, 16);
  int audio = db == FC_DB_AUDIO;
  if (audio) fc_audio_entry_decode(e->val, e->val_len, &ae);
  int rdb = audio ? FC_DB_FEAT : FC_DB_TOK;
  for (size_t j = 0; j < c->n_cfgs && !vf_stopping(c); j++) {
    const vcfg *cf = &c->cfgs[j];
    if (cf->kind != (audio ? KIND_MEL : KIND_TOK)) continue;
    fc_digest key;
    char hex[33];
    fc_record_key(&content, &cf->digest, &key);
    fc_digest_hex(&key, hex);
    const void *v;
    size_t vl;
    int rc = fc_rtxn_get(t, rdb, key.bytes, 16, &v, &vl);
    if (rc == FC_ENOTFOUND) {
      vfail *fl = audio ? vf_find_failure(c, e->id, e->id_len) : NULL;
      if (fl && cf->expected && memcmp(fl->f.config.bytes, cf->digest.bytes, 16) == 0) {
        fl->explains = 1; /* featurize failed it under this config: a recorded failure */
        continue;
      }
      if (cf->expected)
        vf_add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len,
               "missing: no %s record for %s config %s %s", audio ? "feature" : "token",
               audio ? "mel" : "token", vf_cfg_name(cf), cf->hex);
      continue;
    }
    if (vf_damage_code(rc)) { /* LMDB failed the transaction: renewed to go on */
      vf_add(c, FC_VERIFY_ERROR, db, e->id, e->id_len, e->id, e->id_len,
             "B-tree damaged (LMDB: %s) while reading its records", mdb_strerror(rc));
      vf_txn_recover(c, t);
      return;
    }
    if (rc) {
      vf_add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len, "LMDB: %s", fc_strerror(rc));
      continue;
    }
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) continue;
    fc_record_header h;
    if (fc_record_parse(v, vl, &h, NULL, NULL, 0)) continue; /* the record scan names it */
    if (memcmp(h.config.bytes, cf->digest.bytes, 16) != 0) {
      char ch[33];
      fc_digest_hex(&h.config, ch);
      vf_add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len,
             "record header names config %s, its key is for config %s %s", ch, vf_cfg_name(cf),
             cf->hex);
      continue;
    }
    if (audio && cf->usable) {
      uint64_t n = fc_resampled_length(ae.frames, ae.sample_rate, cf->mel.sample_rate);
      uint64_t want = fc_mel_num_frames(&cf->mel, n);
      if (h.dim0 != want)
        vf_add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len,
               "%u frames, config %s gives %llu for %llu samples at %u Hz", h.dim0, vf_cfg_name(cf),
               (unsigned long long)want, (unsigned long long)ae.frames, ae.sample_rate);
    }
  }
  if (audio && (c->o->sources || c->o->rehash)) check_source(c, e, &ae);
}

/* check_entry, a damaged page met on the way the entry's finding (store_lmdb_assert). */
static void guarded_entry(vctx *c, fc_rtxn *t, int db, const ventry *e) {
  sigjmp_buf jb, *outer = store_lmdb_jump;
  if (sigsetjmp(jb, 0)) {
    store_lmdb_jump = outer;
    vf_add(c, FC_VERIFY_ERROR, db, e->id, e->id_len, e->id, e->id_len,
           "B-tree damaged (LMDB: %s) while reading its records", store_lmdb_why);
    return;
  }
  store_lmdb_jump = &jb;
  check_entry(c, t, db, e);
  store_lmdb_jump = outer;
}

int vf_check_entries(vctx *c, int nthreads) {
  int err = 0;
  size_t total = c->n_audio + c->n_text;
#pragma omp parallel num_threads(nthreads)
  {
    fc_rtxn *t = c->pool[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 64)
    for (size_t i = 0; i < total; i++) {
      if (!t || vf_stopping(c)) continue;
      int audio = i < c->n_audio;
      const ventry *e = audio ? &c->audio[i] : &c->text[i - c->n_audio];
      if (e->ok) guarded_entry(c, t, audio ? FC_DB_AUDIO : FC_DB_TEXT, e);
    }
  }
  return err;
}

/* ---- step 5: the manifest -------------------------------------------------------------------- */

/* One manifest text as tokenize stores it (fc_stored_text) hashes to digest: 1; else 0. */
static int text_is(const char *t, const uint8_t *digest) {
  size_t n = strlen(t);
  fc_stored_text(&t, &n);
  fc_digest d;
  fc_digest_buffer(t, n, &d);
  return memcmp(d.bytes, digest, 16) == 0;
}

int vf_text_changed(const fc_item *it, const void *entry, size_t len) {
  const char *texts[3] = {it->text, it->text_raw, it->text_norm};
  int any = 0, empty = 1;
  if (len < 16) return 0; /* a damaged entry: step 3 says so */
  for (int i = 0; i < 3; i++) {
    if (!texts[i]) continue;
    any = 1;
    if (text_is(texts[i], entry)) return 0; /* tokenize read this column (--text-column) */
    if (!fc_text_blank(texts[i], strlen(texts[i]))) empty = 0; /* what tokenize fails as empty */
  }
  return !any ? 0 : empty ? 2 : 1;
}

const char *vf_text_change_msg(int how) {
  return how == 2 ? "gives an empty transcript, the store holds an older one: its tokens are of "
                    "the old one (tokenize fails an empty text: fix the line or drop the id)"
                  : "gives another transcript than the one stored: its tokens are of the old one "
                    "(run tokenize again)";
}

void vf_check_manifest(vctx *c) {
  const fc_item_list *m = c->o->manifest;
  uint64_t with_audio = 0, with_text = 0;
  uint8_t *named = fc_calloc(c->n_audio ? c->n_audio : 1, 1); /* audio entries the manifest has */
  for (size_t i = 0; i < m->count && !vf_stopping(c); i++) {
    const fc_item *it = &m->items[i];
    char line[32];
    snprintf(line, sizeof line, "%zu", it->line);
    if (it->err) { /* an empty id names none: no "(id )" */
      const char *id = it->id && it->id[0] ? it->id : NULL;
      vf_add(c, FC_VERIFY_WARNING, DB_MANIFEST, line, strlen(line), id, id ? strlen(id) : 0,
             "line skipped: %s", it->why ? it->why : fc_strerror(it->err));
      continue;
    }
    size_t len = strlen(it->id);
    /* a part of a split store checked on its own answers for its share of the manifest: an id
     * of another part is looked for there, by every reader and writer */
    if (c->part_n > 1 && fc_store_part_of_id(it->id, len, c->part_n) != c->part_k) continue;
    c->r->manifest_items++;
    const ventry *ae = vf_find_entry(c->audio, c->n_audio, it->id, len);
    if (ae) {
      with_audio++;
      if (named) named[ae - c->audio] = 1;
    } else {
      vfail *fl = vf_find_failure(c, it->id, len);
      if (fl)
        fl->explains = 1; /* no audio entry: featurize failed it, and said so */
      else
        vf_add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, it->id, len, it->id, len,
               "missing: manifest line %zu names it, the store has no audio entry (no features)",
               it->line);
    }
    if (!c->o->expect_tokens_given) continue;
    const ventry *te = vf_find_entry(c->text, c->n_text, it->id, len);
    if (!te) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_TEXT, it->id, len, it->id, len,
             "missing: manifest line %zu names it, the store has no text entry (no tokens)",
             it->line);
      continue;
    }
    with_text++;
    int how = te->ok ? vf_text_changed(it, te->val, te->val_len) : 0;
    if (how) /* its tokens were made from the stored text: the manifest's is not served */
      vf_add(c, FC_VERIFY_ERROR, FC_DB_TEXT, it->id, len, it->id, len,
             "changed: manifest line %zu %s", it->line, vf_text_change_msg(how));
  }
  if (named && !vf_stopping(c))
    for (size_t i = 0; i < c->n_audio; i++) c->r->beyond_manifest += !named[i];
  free(named);
  /* every config of a kind dropped (cache-config --drop): the entries remain, nothing is served;
   * with expected configs named, their config mismatch says it */
  size_t n_mel = 0, n_tok = 0;
  for (size_t j = 0; j < c->n_cfgs; j++) {
    n_mel += c->cfgs[j].kind == KIND_MEL;
    n_tok += c->cfgs[j].kind == KIND_TOK;
  }
  if (!vf_stopping(c) && with_audio && !n_mel && !c->o->n_expect_mel)
    vf_add(c, FC_VERIFY_ERROR, FC_DB_META, NULL, 0, NULL, 0, "%s",
           vf_no_config_msg(0, 0, with_audio));
  if (!vf_stopping(c) && with_text && !n_tok && !c->o->n_expect_tok)
    vf_add(c, FC_VERIFY_ERROR, FC_DB_META, NULL, 0, NULL, 0, "%s",
           vf_no_config_msg(1, 0, with_text));
}

void vf_count_unpaired(vctx *c) {
  size_t n_mel = 0, n_tok = 0;
  for (size_t j = 0; j < c->n_cfgs; j++) {
    n_mel += c->cfgs[j].kind == KIND_MEL;
    n_tok += c->cfgs[j].kind == KIND_TOK;
  }
  /* a store of one kind (features only, token ids only) pairs nothing; a split store's part is
   * one of a store featurize made, whose audio its ids need even where that part holds none */
  if (!(n_mel || c->part_n > 1) || !n_tok) return;
  fc_verify_report *r = c->r;
  for (int text = 0; text < 2; text++) {
    const ventry *a = text ? c->text : c->audio, *b = text ? c->audio : c->text;
    size_t na = text ? c->n_text : c->n_audio, nb = text ? c->n_audio : c->n_text;
    uint64_t *count = text ? &r->text_only : &r->audio_only;
    const char **first = text ? &r->text_only_first : &r->audio_only_first;
    for (size_t i = 0; i < na && !vf_stopping(c); i++) {
      if (vf_find_entry(b, nb, a[i].id, a[i].id_len)) continue;
      if (text && vf_find_failure(c, a[i].id, a[i].id_len)) continue; /* featurize failed it */
      if (!*count) *first = vf_printable(a[i].id, a[i].id_len); /* NULL: out of memory */
      ++*count;
    }
  }
}

const char *vf_no_config_msg(int tokens, int several, uint64_t n) {
  static _Thread_local char buf[256];
  snprintf(buf, sizeof buf,
           "missing: the store%s hold%s no %s config: the manifest's %llu id%s with a%s entry "
           "ha%s no %s (%s them again)",
           several ? "s" : "", several ? "" : "s", tokens ? "token" : "mel", (unsigned long long)n,
           n == 1 ? "" : "s", tokens ? " text" : "n audio", n == 1 ? "s" : "ve",
           tokens ? "tokens" : "features", tokens ? "tokenize" : "featurize");
  return buf;
}
