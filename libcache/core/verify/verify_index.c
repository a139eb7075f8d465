/* Step 6 of cache-verify (fc_verify.h): the index of each config (docs/FORMAT.md "Index") against
 * the entries and records it describes. An index entry must name the id's record under that
 * config (the key its entry's digest gives), a record the store holds, with the same dim0: a
 * reader trusts it for the length and the key without reading either, so a wrong one is an
 * error (a record missing where the config is expected, or of a length its entry does not give,
 * is step 3's finding, not repeated here).
 * Ids whose record is there but that the config's index lacks are counted (index_missing), not
 * reported: readers look them up (a slower open, the same answer), and a record stored for
 * another id with the same content is one such, by the format's rules. */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/alloc.h"

/* The index of config cf, walked in id order beside the entries of its kind (both sorted). */
static int check_one(vctx *c, fc_rtxn *t, const vcfg *cf, const store_index *x, uint64_t *n_ix) {
  MDB_txn *txn = t->txn;
  const int edb = x->entry_db, rdb = x->record_db;
  const ventry *ents = edb == FC_DB_AUDIO ? c->audio : c->text;
  const size_t n_ents = edb == FC_DB_AUDIO ? c->n_audio : c->n_text;
  const char *what = rdb == FC_DB_FEAT ? "frames" : "tokens";
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, x->dbi, &cur);
  if (rc) return rc;
  c->ix_cur = cur;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && !vf_stopping(c);
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    ++*n_ix;
    store_ix ie;
    if (store_index_decode(v.mv_data, v.mv_size, &ie)) {
      vf_add(c, FC_VERIFY_ERROR, DB_INDEX, k.mv_data, k.mv_size, k.mv_data, k.mv_size,
             "index of config %s: value of %zu bytes (want %d)", cf->hex, v.mv_size,
             FC_INDEX_VALUE_SIZE);
      continue;
    }
    const ventry *e = vf_find_entry(ents, n_ents, k.mv_data, k.mv_size);
    if (!e) {
      vf_add(c, FC_VERIFY_ERROR, DB_INDEX, k.mv_data, k.mv_size, k.mv_data, k.mv_size,
             "index of config %s names an utterance with no %s entry", cf->hex, fc_db_name(edb));
      continue;
    }
    if (!e->ok || e->val_len < 16) continue; /* step 3 reported the entry */
    fc_digest content, key;
    memcpy(content.bytes, e->val, 16);
    fc_record_key(&content, &cf->digest, &key);
    char hex[33];
    vf_hex16(ie.key.bytes, hex);
    if (memcmp(key.bytes, ie.key.bytes, 16) != 0) {
      vf_add(c, FC_VERIFY_ERROR, DB_INDEX, k.mv_data, k.mv_size, k.mv_data, k.mv_size,
             "index of config %s names record %s, not the one of the %s entry's content", cf->hex,
             hex, fc_db_name(edb));
      continue;
    }
    MDB_val rk = {16, ie.key.bytes}, rv;
    int g = mdb_get(txn, c->s->dbi[rdb], &rk, &rv);
    if (vf_damage_code(g)) { /* step 3 named the id; LMDB failed the transaction: renewed */
      char id[FC_ID_MAX + 1];
      MDB_val at = {k.mv_size < sizeof id ? k.mv_size : sizeof id, id};
      memcpy(id, k.mv_data, at.mv_size);
      if ((rc = vf_txn_recover(c, t)) != 0 || (rc = mdb_cursor_renew(txn, cur)) != 0 ||
          (rc = mdb_cursor_get(cur, &at, &v, MDB_SET_KEY)) != 0)
        break;
      continue;
    }
    if (g == MDB_NOTFOUND) {
      if (!cf->expected) /* (else step 3 said it: no record for an expected config) */
        vf_add(c, FC_VERIFY_ERROR, DB_INDEX, k.mv_data, k.mv_size, k.mv_data, k.mv_size,
               "index of config %s names record %s, which the store does not hold", cf->hex, hex);
      continue;
    }
    if (g) {
      rc = g;
      break;
    }
    fc_record_header h;
    const void *pl;
    if (fc_record_parse(rv.mv_data, rv.mv_size, &h, &pl, NULL, 0))
      continue; /* step 4 reported the record */
    fc_audio_entry ae;
    if (rdb == FC_DB_FEAT && cf->usable && fc_audio_entry_decode(e->val, e->val_len, &ae) == 0 &&
        h.dim0 != fc_mel_num_frames(&cf->mel, fc_resampled_length(ae.frames, ae.sample_rate,
                                                                  cf->mel.sample_rate)))
      continue; /* the record is wrong for its entry: step 3 said it */
    if (h.dim0 != ie.dim0)
      vf_add(c, FC_VERIFY_ERROR, DB_INDEX, k.mv_data, k.mv_size, k.mv_data, k.mv_size,
             "index of config %s says %u %s, record %s holds %u", cf->hex, ie.dim0, what, hex,
             h.dim0);
  }
  mdb_cursor_close(cur);
  c->ix_cur = NULL;
  return rc == MDB_NOTFOUND || rc == 0 ? 0 : rc;
}

/* Ids whose record under cf is there and that cf's index lacks: *missing. */
static int count_missing(vctx *c, fc_rtxn *t, const vcfg *cf, const store_index *x,
                         uint64_t *missing) {
  MDB_txn *txn = t->txn;
  const int edb = x->entry_db, rdb = x->record_db;
  const ventry *ents = edb == FC_DB_AUDIO ? c->audio : c->text;
  const size_t n_ents = edb == FC_DB_AUDIO ? c->n_audio : c->n_text;
  for (size_t i = 0; i < n_ents && !vf_stopping(c); i++) {
    const ventry *e = &ents[i];
    if (!e->ok || e->val_len < 16) continue;
    MDB_val ik = {e->id_len, (void *)e->id}, iv;
    int g = mdb_get(txn, x->dbi, &ik, &iv);
    if (g == 0) continue;
    if (g != MDB_NOTFOUND) return g;
    fc_digest content, key;
    memcpy(content.bytes, e->val, 16);
    fc_record_key(&content, &cf->digest, &key);
    MDB_val rk = {16, key.bytes}, rv;
    if ((g = mdb_get(txn, c->s->dbi[rdb], &rk, &rv)) == MDB_NOTFOUND) continue;
    if (vf_damage_code(g) && (g = vf_txn_recover(c, t)) == 0) continue; /* step 3 named it */
    if (g) return g;
    ++*missing;
  }
  return 0;
}

int vf_check_index(vctx *c, fc_rtxn *t) {
  int rc = 0;
  for (size_t i = 0; i < c->n_cfgs && !rc && !vf_stopping(c); i++) {
    const vcfg *cf = &c->cfgs[i];
    store_index x;
    if (cf->kind != KIND_MEL && cf->kind != KIND_TOK) continue;
    if (store_index_find(c->s, &cf->digest, &x)) continue; /* a config stored before indexes */
    MDB_stat st;
    if (mdb_stat(t->txn, x.dbi, &st)) continue;
    uint64_t n_ix = 0;
    if (!(rc = check_one(c, t, cf, &x, &n_ix)))
      rc = count_missing(c, t, cf, &x, &c->r->index_missing);
    c->r->index_entries += n_ix;
    c->r->indexed_configs++;
  }
  return rc;
}
