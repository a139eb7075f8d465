/* cache-prune's engine (fc_store_prune, fc_verify.h): the records no entry refers to — found by
 * cache-verify's own steps 2-4 (vf_read_meta, vf_collect, vf_build_expected, vf_find_exp), so
 * that the two never disagree on what an orphan is — and the entries of ids a manifest no longer
 * has, removed in bounded write transactions: entries first, then the records; with o->damaged
 * then the records an entry refers to that fail fc_verify_record, their ids leaving the indexes. */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/args.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"

typedef struct pr_orphan {
  uint8_t key[16];
  uint64_t bytes;
  int db; /* FC_DB_FEAT or FC_DB_TOK */
} pr_orphan;

typedef struct pr_drop { /* an id not kept: what it has, as the snapshot showed it */
  char *id; /* a copy */
  size_t len;
  uint64_t bytes; /* its entries' and failure record's value bytes */
  uint8_t audio, text, failed;
} pr_drop;

typedef struct pr_damaged { /* a record an entry refers to that fails fc_verify_record */
  uint8_t key[16];
  uint64_t bytes;
  int db; /* FC_DB_FEAT or FC_DB_TOK */
  size_t ref0, nref; /* the ids referring to it: refs[ref0, ref0 + nref) */
} pr_damaged;

typedef struct pr_ref { /* an id, copied */
  char *id;
  size_t len;
} pr_ref;

typedef struct pctx {
  vctx c;
  fc_verify_opts vo;
  fc_verify_report rep;
  const fc_prune_opts *o;
  fc_prune_report *r;
  const char **keep; /* sorted copy of o->keep */
  pr_drop *drop;
  size_t n_drop, cap_drop;
  pr_orphan *orph;
  size_t n_orph, cap_orph;
  pr_damaged *dmg; /* with o->damaged */
  size_t n_dmg, cap_dmg;
  pr_ref *refs;
  size_t n_refs, cap_refs;
  uint64_t read_bytes, total_bytes; /* with o->damaged: progress */
  double last_progress;
} pctx;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int kept(const pctx *p, const char *id, size_t len) {
  if (!p->keep) return 1;
  size_t lo = 0, hi = p->o->n_keep;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int d = vf_cmp_lmdb(p->keep[mid], strlen(p->keep[mid]), id, len);
    if (d == 0) return 1;
    if (d < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* Add what an id not kept has in one db (its entries and failure record are found db by db, so
 * an id may be added up to three times: merge_drops makes one of them). */
static int add_drop(pctx *p, const char *id, size_t len, int db, size_t bytes) {
  if (p->n_drop == p->cap_drop) {
    size_t nc = p->cap_drop ? p->cap_drop * 2 : 64;
    pr_drop *n = fc_realloc(p->drop, nc * sizeof *n);
    if (!n) return ENOMEM;
    p->drop = n;
    p->cap_drop = nc;
  }
  char *copy = fc_malloc(len + 1);
  if (!copy) return ENOMEM;
  memcpy(copy, id, len);
  copy[len] = '\0';
  p->drop[p->n_drop++] =
      (pr_drop){copy, len, bytes, db == FC_DB_AUDIO, db == FC_DB_TEXT, db == FC_DB_FAILED};
  return 0;
}

static int cmp_drop(const void *a, const void *b) {
  const pr_drop *x = a, *y = b;
  return vf_cmp_lmdb(x->id, x->len, y->id, y->len);
}

/* The drops in key order, one per id. */
static void merge_drops(pctx *p) {
  if (!p->n_drop) return;
  qsort(p->drop, p->n_drop, sizeof *p->drop, cmp_drop);
  size_t j = 0;
  for (size_t i = 1; i < p->n_drop; i++) {
    pr_drop *d = &p->drop[j], *e = &p->drop[i];
    if (cmp_drop(d, e) == 0) {
      d->bytes += e->bytes;
      d->audio |= e->audio;
      d->text |= e->text;
      d->failed |= e->failed;
      free(e->id);
    } else {
      p->drop[++j] = *e;
    }
  }
  p->n_drop = j + 1;
}

/* Entries of ids not kept: marked not ok (then nothing is expected of them: their records are
 * orphans unless a kept entry shares them) and listed. */
static int mark_dropped(pctx *p, ventry *e, size_t n, int db) {
  for (size_t i = 0; i < n; i++) {
    if (kept(p, e[i].id, e[i].id_len)) continue;
    e[i].ok = 0;
    int rc = add_drop(p, e[i].id, e[i].id_len, db, e[i].val_len);
    if (rc) return rc;
  }
  return 0;
}

static int dropped_failures(pctx *p, fc_rtxn *t) {
  if (!p->c.s->dbi[FC_DB_FAILED]) return 0; /* an older store, opened read-only */
  fc_cursor *cur;
  int rc = fc_cursor_open(t, FC_DB_FAILED, &cur);
  if (rc) return rc;
  p->c.cur = cur; /* closed by the caller if a damaged page ends the walk */
  const void *k, *v;
  size_t kl, vl;
  while ((rc = fc_cursor_next(cur, &k, &kl, &v, &vl)) == 0)
    if (!kept(p, k, kl) && (rc = add_drop(p, k, kl, FC_DB_FAILED, vl)) != 0) break;
  fc_cursor_close(cur);
  p->c.cur = NULL;
  return rc == FC_ENOTFOUND ? 0 : rc;
}

/* Distinct ids of the audio and text entries that stay (both arrays in key order). */
static uint64_t count_kept(const vctx *c) {
  uint64_t n = 0;
  size_t i = 0, j = 0;
  while (i < c->n_audio || j < c->n_text) {
    const ventry *a = i < c->n_audio ? &c->audio[i] : NULL, *b = j < c->n_text ? &c->text[j] : NULL;
    int d = !a ? 1 : !b ? -1 : vf_cmp_lmdb(a->id, a->id_len, b->id, b->id_len);
    int ok = (d <= 0 && a->ok) || (d >= 0 && b->ok);
    n += ok;
    if (d <= 0) i++;
    if (d >= 0) j++;
  }
  return n;
}

/* Grows *v (of *cap items of size sz) to hold one more than n; 0 or ENOMEM. */
static int grow(void **v, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 64;
  void *g = fc_realloc(*v, nc * sz);
  if (!g) return ENOMEM;
  *v = g;
  *cap = nc;
  return 0;
}

/* With o->damaged: record k (its value v, vl bytes), which the entries from x on in c->exp refer
 * to, checked as cache-verify checks it; a damaged one is listed with the ids that refer to it. A
 * value outside the file is the B-tree's damage, not the record's: the prune is refused. */
static int check_damaged(pctx *p, const uint8_t *k, const void *v, size_t vl, int db,
                         const vexp *x) {
  vctx *c = &p->c;
  if (vf_stopping(c)) return FC_EINTR;
  if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi))
    return MDB_CORRUPTED;
  p->read_bytes += vl;
  if (p->o->progress &&
      (p->read_bytes & ~(uint64_t)0xfffff) != ((p->read_bytes - vl) & ~(uint64_t)0xfffff)) {
    const double t = vf_now_s(); /* the clock read each MiB, the callback every 0.1 s */
    if (t - p->last_progress >= 0.1) {
      p->last_progress = t;
      p->o->progress(p->read_bytes, p->total_bytes, p->o->progress_ud);
    }
  }
  char why[256];
  int rc = fc_verify_record(v, vl, 0, why, sizeof why);
  if (rc == ENOMEM || !rc) return rc;
  if ((rc = grow((void **)&p->dmg, &p->cap_dmg, p->n_dmg, sizeof *p->dmg)) != 0) return rc;
  pr_damaged *d = &p->dmg[p->n_dmg++];
  memcpy(d->key, k, 16);
  d->bytes = vl;
  d->db = db;
  d->ref0 = p->n_refs;
  d->nref = 0;
  for (const vexp *e = x; e < c->exp + c->n_exp && memcmp(e->key, k, 16) == 0; e++) {
    if (e->db != db) continue;
    const ventry *en = (db == FC_DB_FEAT ? c->audio : c->text) + e->entry;
    if ((rc = grow((void **)&p->refs, &p->cap_refs, p->n_refs, sizeof *p->refs)) != 0) return rc;
    char *id = fc_malloc(en->id_len + 1);
    if (!id) return ENOMEM;
    memcpy(id, en->id, en->id_len);
    id[en->id_len] = '\0';
    p->refs[p->n_refs++] = (pr_ref){id, en->id_len};
    d->nref++;
  }
  return 0;
}

static int find_orphans(pctx *p, fc_rtxn *t, int db) {
  fc_cursor *cur;
  int rc = fc_cursor_open(t, db, &cur);
  if (rc) return rc;
  p->c.cur = cur;
  const void *k, *v;
  size_t kl, vl;
  while ((rc = fc_cursor_next(cur, &k, &kl, &v, &vl)) == 0) {
    if (kl != 16) continue; /* a key of another size: not ours */
    const vexp *x = vf_find_exp(&p->c, k, db);
    if (x && p->o->damaged && (rc = check_damaged(p, k, v, vl, db, x)) != 0) break;
    if (x) continue;
    if ((rc = grow((void **)&p->orph, &p->cap_orph, p->n_orph, sizeof *p->orph)) != 0) break;
    pr_orphan *o = &p->orph[p->n_orph++];
    memcpy(o->key, k, 16);
    o->bytes = vl;
    o->db = db;
  }
  fc_cursor_close(cur);
  p->c.cur = NULL;
  return rc == FC_ENOTFOUND ? 0 : rc;
}

/* What the snapshot says is to go: the orphans and, with o->keep, the ids not kept. Refused
 * (FC_EFORMAT, why) when meta or an entry is damaged. */
static int survey(pctx *p, fc_rtxn *t, char *why, size_t why_len) {
  vctx *c = &p->c;
  char mdb[4096];
  struct stat st;
  const void *base;
  size_t maplen;
  int rc = fc_store_map_region(c->s, &base, &maplen);
  if (rc) return rc;
  snprintf(mdb, sizeof mdb, "%s/data.mdb", fc_store_path(c->s));
  if (stat(mdb, &st) != 0) return errno;
  c->map_lo = base;
  c->map_hi = (const uint8_t *)base + (maplen < (size_t)st.st_size ? maplen : (size_t)st.st_size);
  c->snapshot = mdb_txn_id(t->txn);
  /* the pages first, as cache-verify checks them (verify_pages.c): a malformed page LMDB's reads
   * could crash on, and a free list that would hand this run's writes a page a B-tree uses, or
   * that they would fail on: refused before anything is read or written */
  int lost = 0;
  if ((rc = vf_check_pages(c, t, &lost)) != 0) return rc;
  if (p->rep.errors) {
    const fc_verify_finding *f = p->rep.findings;
    while (f->severity != FC_VERIFY_ERROR) f++; /* not a warning (pages neither used nor free) */
    fc_why(why, why_len, "damaged (%s %s: %s): %s", f->db, f->key ? f->key : "", f->problem,
           p->o->compact ? "nothing removed, nothing compacted" : "nothing removed");
    return FC_EFORMAT;
  }
  if (!rc) rc = vf_read_meta(c, t);
  if (!rc) rc = vf_collect(c, t, FC_DB_AUDIO, &c->audio, &c->n_audio);
  if (!rc) rc = vf_collect(c, t, FC_DB_TEXT, &c->text, &c->n_text);
  if (rc) return rc;
  if (p->rep.errors) {
    const fc_verify_finding *f = p->rep.count ? &p->rep.findings[0] : NULL;
    fc_why(why, why_len,
           "damaged (%s%s%s: %s): its records could look like orphans; nothing removed "
           "(cache-verify says more)",
           f ? f->db : "?", f && f->key ? " " : "", f && f->key ? f->key : "",
           f ? f->problem : "?");
    return FC_EFORMAT;
  }
  if (vf_stopping(c)) return FC_EINTR;
  if (p->keep) {
    if (!rc) rc = mark_dropped(p, c->audio, c->n_audio, FC_DB_AUDIO);
    if (!rc) rc = mark_dropped(p, c->text, c->n_text, FC_DB_TEXT);
    if (!rc) rc = dropped_failures(p, t);
    merge_drops(p);
  }
  p->r->kept_ids = count_kept(c);
  if (!rc) rc = vf_build_expected(c);
  MDB_envinfo ei; /* the bytes in use, for progress (no transaction of its own: one is open) */
  MDB_stat es;
  if (p->o->damaged && !mdb_env_info(c->s->env, &ei) && !mdb_env_stat(c->s->env, &es))
    p->total_bytes = ((uint64_t)ei.me_last_pgno + 1) * es.ms_psize;
  if (!rc) rc = find_orphans(p, t, FC_DB_FEAT);
  if (!rc) rc = find_orphans(p, t, FC_DB_TOK);
  if (!rc && p->o->damaged && p->o->progress)
    p->o->progress(p->read_bytes, p->total_bytes, p->o->progress_ud);
  return rc;
}

/* survey, a damaged page met on the way (LMDB's error, or its assertion: store_lmdb_assert) a
 * refusal, not an abort. */
static int survey_guarded(pctx *p, fc_rtxn *t, char *why, size_t why_len) {
  sigjmp_buf jb, *outer = store_lmdb_jump;
  mdb_env_set_assert(p->c.s->env, store_lmdb_assert);
  if (sigsetjmp(jb, 0)) {
    store_lmdb_jump = outer;
    fc_why(why, why_len, "damaged (B-tree: LMDB: %s): nothing removed (cache-verify says more)",
           store_lmdb_why);
    return FC_EFORMAT;
  }
  store_lmdb_jump = &jb;
  int rc = survey(p, t, why, why_len);
  store_lmdb_jump = outer;
  if (vf_damage_code(rc)) {
    fc_why(why, why_len, "damaged (B-tree: LMDB: %s): nothing removed (cache-verify says more)",
           mdb_strerror(rc));
    rc = FC_EFORMAT;
  }
  return rc;
}

/* A damaged record deleted: each id that referred to it indexed again from its entry, which
 * takes it out of that config's index (docs/FORMAT.md "Index": the record is no longer stored). */
static int del_damaged(pctx *p, MDB_txn *txn, const pr_damaged *d) {
  fc_store *s = p->c.s;
  MDB_val k = {16, (void *)d->key};
  int rc = fault_hit("put") ? EIO : mdb_del(txn, s->dbi[d->db], &k, NULL);
  if (rc == MDB_NOTFOUND) rc = 0;
  const int edb = d->db == FC_DB_FEAT ? FC_DB_AUDIO : FC_DB_TEXT;
  for (size_t j = 0; j < d->nref && !rc; j++) {
    const pr_ref *f = &p->refs[d->ref0 + j];
    MDB_val ik = {f->len, f->id}, ev;
    if ((rc = mdb_get(txn, s->dbi[edb], &ik, &ev)) != 0) break; /* the exclusive lock: it is */
    void *entry = fc_malloc(ev.mv_size ? ev.mv_size : 1); /* valid only until the next put */
    if (!entry) return ENOMEM;
    memcpy(entry, ev.mv_data, ev.mv_size);
    rc = store_index_entry(s, txn, edb, f->id, f->len, entry, ev.mv_size, NULL, NULL);
    free(entry);
  }
  return rc;
}

/* One transaction's deletes: items [from, to) of the drops (phase 0), the orphans (1) or the
 * damaged records (2). */
static int del_batch(pctx *p, MDB_txn *txn, int phase, size_t from, size_t to) {
  fc_store *s = p->c.s;
  int rc = 0;
  for (size_t i = from; i < to && !rc; i++) {
    if (phase == 2) {
      rc = del_damaged(p, txn, &p->dmg[i]);
      continue;
    }
    if (phase == 1) {
      MDB_val k = {16, p->orph[i].key};
      rc = fault_hit("put") ? EIO : mdb_del(txn, s->dbi[p->orph[i].db], &k, NULL);
      if (rc == MDB_NOTFOUND) rc = 0;
      continue;
    }
    const pr_drop *d = &p->drop[i];
    static const int dbs[] = {FC_DB_AUDIO, FC_DB_TEXT, FC_DB_FAILED};
    for (int j = 0; j < 3 && !rc; j++) {
      if (!s->dbi[dbs[j]]) continue;
      MDB_val k = {d->len, d->id};
      rc = fault_hit("put") ? EIO : mdb_del(txn, s->dbi[dbs[j]], &k, NULL);
      if (rc == MDB_NOTFOUND) rc = 0;
      /* the id leaves every index of the entry's kind with it (docs/FORMAT.md "Index") */
      if (!rc && j < 2) rc = store_index_entry(s, txn, dbs[j], d->id, d->len, NULL, 0, NULL, NULL);
    }
  }
  return rc;
}

static void count_done(pctx *p, int phase, size_t from, size_t to) {
  fc_prune_report *r = p->r;
  for (size_t i = from; i < to; i++) {
    if (phase == 2) {
      const pr_damaged *d = &p->dmg[i];
      *(d->db == FC_DB_FEAT ? &r->damaged_feat : &r->damaged_tok) += 1;
      r->damaged_bytes += d->bytes;
      r->damaged_ids += d->nref;
      continue;
    }
    if (phase == 1) {
      const pr_orphan *o = &p->orph[i];
      *(o->db == FC_DB_FEAT ? &r->feat_records : &r->tok_records) += 1;
      *(o->db == FC_DB_FEAT ? &r->feat_bytes : &r->tok_bytes) += o->bytes;
      continue;
    }
    const pr_drop *d = &p->drop[i];
    r->ids++;
    r->audio_entries += d->audio;
    r->text_entries += d->text;
    r->failures += d->failed;
    r->entry_bytes += d->bytes;
  }
}

/* The deletes, in transactions of o->batch. Each transaction must follow the snapshot (and our
 * own commits) directly: a commit of another process in between may have made an orphan
 * referred to again. */
static int remove_all(pctx *p, uint64_t snapshot, char *why, size_t why_len) {
  fc_store *s = p->c.s;
  const size_t batch = p->o->batch ? p->o->batch : 4096;
  int rc = 0;
  pthread_mutex_lock(&s->write_mu);
  if (s->broken) rc = FC_EBADSTATE;
  for (int phase = 0; phase < 3 && !rc; phase++) {
    const size_t n = phase == 2 ? p->n_dmg : phase ? p->n_orph : p->n_drop;
    for (size_t from = 0; from < n && !rc;) {
      fault_stop("prune"); /* test builds: FC_FAULT_STOP=prune:N (tests/cli/prune_faults.sh) */
      if (p->o->stop && *p->o->stop) {
        rc = FC_EINTR;
        break;
      }
      const size_t to = n - from > batch ? from + batch : n;
      MDB_txn *txn;
      pthread_rwlock_rdlock(&s->map_lock);
      rc = store_txn_begin(s->env, 0, &txn);
      pthread_rwlock_unlock(&s->map_lock);
      if (rc == MDB_MAP_RESIZED && !(rc = store_adopt_map(s))) continue;
      if (rc) break;
      if (mdb_txn_id(txn) != snapshot + 1 + p->r->transactions) {
        store_txn_abort(txn);
        fc_why(why, why_len,
               "another process wrote to the store meanwhile (a writer that took no lock: an "
               "older featcache?); run cache-prune again when it has finished");
        rc = FC_ECONFLICT;
        break;
      }
      rc = store_index_begin(s, txn);
      if (!rc) rc = del_batch(p, txn, phase, from, to);
      if (rc) {
        store_txn_abort(txn);
        store_index_end(s, 0);
        if (rc == MDB_MAP_FULL && !(rc = store_grow_map(s, 0)))
          continue; /* a delete copies pages */
        break;
      }
      rc = fault_hit("commit") ? (store_txn_abort(txn), EIO) : store_txn_commit(txn);
      store_index_end(s, rc == 0);
      if (rc == MDB_MAP_FULL && !(rc = store_grow_map(s, 0))) continue;
      if (rc) {
        s->broken = 1; /* a failed commit: as fc_store_write, refuse further writes */
        rc = store_explain_write_error(s, rc, 0);
        break;
      }
      p->r->transactions++;
      count_done(p, phase, from, to);
      from = to;
    }
  }
  pthread_mutex_unlock(&s->write_mu);
  return rc;
}

int fc_store_prune(fc_store *s, const fc_prune_opts *o, fc_prune_report *r, char *why,
                   size_t why_len) {
  FC_ARGS_WHY(s, r);
  fc_prune_opts defaults = {0};
  if (!o) o = &defaults;
  memset(r, 0, sizeof *r);
  if (why && why_len) why[0] = '\0';
  const unsigned fl = fc_store_open_flags(s);
  if (!o->dry_run && ((fl & FC_STORE_RDONLY) || !(fl & FC_STORE_EXCLUSIVE))) {
    fc_why(why, why_len, "the store must be open for writing with FC_STORE_EXCLUSIVE");
    return EINVAL;
  }
  pctx *p = fc_calloc(1, sizeof *p);
  if (!p) return ENOMEM;
  p->o = o;
  p->r = r;
  p->vo.stop = o->stop;
  p->vo.max_errors = 1; /* the first damage refuses the prune */
  p->c.o = &p->vo;
  p->c.r = &p->rep;
  p->c.s = s;
  p->c.max_warnings = 1;
  pthread_mutex_init(&p->c.mu, NULL);
  int rc = 0;
  if (o->keep) {
    if (!(p->keep = fc_malloc((o->n_keep ? o->n_keep : 1) * sizeof *p->keep))) rc = ENOMEM;
    for (size_t i = 0; !rc && i < o->n_keep; i++) p->keep[i] = o->keep[i];
    if (!rc) qsort(p->keep, o->n_keep, sizeof *p->keep, cmp_str);
  }
  struct stat st0;
  int fd0;
  const uint64_t size0 =
      mdb_env_get_fd(s->env, &fd0) == 0 && fstat(fd0, &st0) == 0 ? (uint64_t)st0.st_size : 0;
  fc_rtxn *t = NULL;
  if (!rc) rc = fc_store_read_begin(s, &t);
  uint64_t snapshot = t ? mdb_txn_id(t->txn) : 0;
  if (!rc) rc = survey_guarded(p, t, why, why_len);
  fc_cursor_close(p->c.cur); /* left open by a walk cut short */
  fc_rtxn_end(t); /* the ids to drop are copies: the snapshot's pages are free to reuse */
  if (!rc && o->dry_run) {
    count_done(p, 0, 0, p->n_drop);
    count_done(p, 1, 0, p->n_orph);
    count_done(p, 2, 0, p->n_dmg);
  } else if (!rc) {
    rc = remove_all(p, snapshot, why, why_len);
    /* stopped or failed part-way: the ids whose removal did not come (the drops go first, in
     * order: r->ids of them done) are in the store still */
    for (size_t i = (size_t)r->ids; rc && i < p->n_drop; i++)
      r->kept_ids += p->drop[i].audio || p->drop[i].text;
    if (vf_damage_code(rc)) { /* a page the survey did not read: LMDB's free list, which a
                                * write reads (cache-verify walks it) */
      fc_why(why, why_len,
             "damaged (B-tree: LMDB: %s, met by a write): %s (cache-verify says more)",
             mdb_strerror(rc),
             r->transactions ? "what was removed stays removed" : "nothing removed");
      rc = FC_EFORMAT;
    }
    store_compact_leftovers(fc_store_path(s)); /* a killed --compact's copy: garbage */
  }
  if (!rc && o->compact && o->stop && *o->stop) rc = FC_EINTR; /* no copy begun once stopped */
  if (!rc && o->compact && o->dry_run)
    rc = store_compact_size(s, &r->bytes_before, &r->bytes_after);
  else if (!rc && o->compact && (fault_stop("prune_compact"), 1)) /* test builds: FC_FAULT_STOP */
    rc = store_compact(s, o->stop, &r->bytes_before, &r->bytes_after, why, why_len);
  if (o->compact && !o->dry_run) r->bytes_before = size0; /* before the prune grew it */
  for (size_t i = 0; i < p->n_drop; i++) free(p->drop[i].id);
  free(p->drop);
  free(p->orph);
  for (size_t i = 0; i < p->n_refs; i++) free(p->refs[i].id);
  free(p->refs);
  free(p->dmg);
  free(p->keep);
  free(p->c.audio);
  free(p->c.text);
  free(p->c.exp);
  free(p->c.cfgs);
  fc_verify_report_free(&p->rep);
  pthread_mutex_destroy(&p->c.mu);
  free(p);
  return rc;
}
