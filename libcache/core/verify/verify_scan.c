/* cache-verify, step 4: the records, in parallel over 256 key ranges per db (verify_int.h). */
#include "libcache/core/verify/verify_int.h"

/* ---- step 4: records ------------------------------------------------------------------------- */

static void check_record(vctx *c, int db, const uint8_t *k, size_t kl, const void *v, size_t vl,
                         uint64_t *recs, uint64_t *bytes) {
  char hex[33];
  if (kl != 16) {
    vf_add(c, FC_VERIFY_ERROR, db, (const char *)k, kl, NULL, 0, "key of %zu bytes (want 16)", kl);
    return;
  }
  vf_hex16(k, hex);
  const vexp *x = vf_find_exp(c, k, db);
  const ventry *e = NULL;
  if (x) e = (x->db == FC_DB_FEAT ? c->audio : c->text) + x->entry;
  const char *id = e ? e->id : NULL;
  size_t id_len = e ? e->id_len : 0;
  if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
    vf_add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
           "value of %zu bytes lies outside the file (B-tree damaged)", vl);
    return;
  }
  char why[256];
  int rc = fc_verify_record(v, vl, c->o->finite, why, sizeof why);
  (*recs)++;
  *bytes += vl;
  if (rc == ENOMEM) { /* decoding a coded record: the memory, not the record */
    atomic_store(&c->nomem, 1);
    atomic_store(&c->halt, 1);
    return;
  }
  if (rc) { /* what cache-prune --damaged removes (fc_store_prune), said where it is: the fix */
    int removable = !c->o->finite || fc_verify_record(v, vl, 0, NULL, 0) != 0;
    vf_add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len, "%s%s%s", why,
           removable && x ? ": cache-prune --damaged removes it, and " : "",
           !removable || !x   ? ""
           : db == FC_DB_FEAT ? "featurize run again stores it anew"
                              : "tokenize run again stores it anew");
    return;
  }
  fc_record_header h;
  fc_record_parse(v, vl, &h, NULL, NULL, 0);
  vcfg *cf = vf_find_cfg(c, h.config.bytes);
  if (cf) atomic_store(&cf->has_records, 1);
  char ch[33];
  fc_digest_hex(&h.config, ch);
  if (!cf) {
    vf_add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
           "unknown config %s: the store has no meta cfg/%s", ch, ch);
  } else if (db == FC_DB_FEAT && cf->kind != KIND_MEL) {
    vf_add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len, "feature record made with token config %s",
           ch);
  } else if (db == FC_DB_TOK && cf->kind != KIND_TOK) {
    vf_add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len, "token record made with mel config %s", ch);
  } else if (db == FC_DB_FEAT && cf->usable) {
    if (h.dtype != cf->mel.dtype || h.ndim != 2 || h.dim1 != cf->mel.n_mels)
      vf_add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
             "shape %u x %u of %s (ndim %u), config %s gives [frames x %u] of %s", h.dim0, h.dim1,
             fc_dtype_name(h.dtype), h.ndim, vf_cfg_name(cf), cf->mel.n_mels,
             fc_dtype_name(cf->mel.dtype));
  } else if (db == FC_DB_TOK) {
    int int_dtype = h.dtype == FC_DTYPE_I32 || h.dtype == FC_DTYPE_I16 || h.dtype == FC_DTYPE_U16;
    if (!int_dtype || h.ndim != 1 || (cf->tok_dtype && h.dtype != cf->tok_dtype))
      vf_add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
             "token record of %s with ndim %u (config %s wants ndim 1 of %s)",
             fc_dtype_name(h.dtype), h.ndim, vf_cfg_name(cf),
             cf->tok_dtype ? fc_dtype_name(cf->tok_dtype) : "an integer dtype");
  }
  if (!x)
    vf_add(c, FC_VERIFY_WARNING, db, hex, 32, NULL, 0,
           "orphan: no %s entry refers to this record (config %s %s): cache-prune removes it",
           db == FC_DB_FEAT ? "audio" : "text", cf ? vf_cfg_name(cf) : "unknown", ch);
}

/* One key range: the keys whose first byte is b. */
static int scan_range(vctx *c, MDB_txn *txn, MDB_cursor *cur, int db, unsigned b, uint64_t *recs,
                      uint64_t *bytes) {
  uint8_t first = (uint8_t)b, prev[16];
  int have_prev = 0;
  MDB_val k = {1, &first}, v;
  int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  uint64_t local = 0;
  (void)txn;
  while (rc == 0 && ((const uint8_t *)k.mv_data)[0] == b) {
    if (vf_stopping(c)) break;
    const uint8_t *kp = k.mv_data;
    if (have_prev && k.mv_size == 16 && memcmp(prev, kp, 16) >= 0) {
      char hex[33];
      vf_hex16(kp, hex);
      vf_add(c, FC_VERIFY_ERROR, db, hex, 32, NULL, 0,
             "key out of order in its B-tree page (the page is damaged)");
    }
    if (k.mv_size == 16) {
      memcpy(prev, kp, 16);
      have_prev = 1;
    }
    uint64_t before = *bytes;
    check_record(c, db, kp, k.mv_size, v.mv_data, v.mv_size, recs, bytes);
    local += *bytes - before;
    if (local >= (4u << 20)) {
      __atomic_fetch_add(&c->bytes_done, local, __ATOMIC_RELAXED);
      local = 0;
    }
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  __atomic_fetch_add(&c->bytes_done, local, __ATOMIC_RELAXED);
  if (rc && rc != MDB_NOTFOUND) {
    vf_add(c, FC_VERIFY_ERROR, db, NULL, 0, NULL, 0, "%s%s%s while reading keys %02x..",
           vf_damage_code(rc) ? "B-tree damaged (LMDB: " : "LMDB: ", mdb_strerror(rc),
           vf_damage_code(rc) ? ")" : "", b);
    return rc;
  }
  return 0;
}

/* scan_range's arguments, for store_lmdb_guarded; returned: scan_range returned (else LMDB's
 * assertion jumped out of it). */
typedef struct range_args {
  vctx *c;
  MDB_txn *txn;
  MDB_cursor *cur;
  int db;
  unsigned b;
  uint64_t *recs, *bytes;
  int returned;
} range_args;

static int scan_range_call(void *arg) {
  range_args *a = arg;
  int rc = scan_range(a->c, a->txn, a->cur, a->db, a->b, a->recs, a->bytes);
  a->returned = 1;
  return rc;
}

/* scan_range, a damaged page met on the way the range's finding (store_lmdb_assert). Returns
 * scan_range's LMDB error, or -1 after LMDB's assertion. */
static int guarded_range(vctx *c, MDB_txn *txn, MDB_cursor *cur, int db, unsigned b, uint64_t *recs,
                         uint64_t *bytes) {
  range_args ra = {c, txn, cur, db, b, recs, bytes, 0};
  int rc = store_lmdb_guarded(scan_range_call, &ra);
  if (!ra.returned) {
    vf_add(c, FC_VERIFY_ERROR, db, NULL, 0, NULL, 0,
           "B-tree damaged (LMDB: %s) while reading keys %02x..", store_lmdb_why, b);
    return -1;
  }
  return rc;
}

int vf_check_records(vctx *c, int nthreads) {
  int err = 0;
  uint64_t recs = 0, bytes = 0;
  double last = vf_now_s();
#pragma omp parallel num_threads(nthreads) reduction(+ : recs, bytes)
  {
    fc_rtxn *t = c->pool[omp_get_thread_num()];
    MDB_cursor *cur[2] = {NULL, NULL};
    int rc = 0;
    for (int d = 0; d < 2 && !rc; d++)
      rc = mdb_cursor_open(t->txn, c->s->dbi[d ? FC_DB_TOK : FC_DB_FEAT], &cur[d]);
    if (rc) {
#pragma omp critical(verify_err)
      err = rc;
    }
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < 512; i++) {
      if (rc || vf_stopping(c)) continue;
      int d = i / 256;
      int g = guarded_range(c, t->txn, cur[d], d ? FC_DB_TOK : FC_DB_FEAT, (unsigned)(i % 256),
                            &recs, &bytes);
      /* A damaged page (said): the cursor still stands on it — the next range's MDB_SET_RANGE
       * would read it as a page of its B-tree (a crash) — so it starts afresh; and LMDB failed
       * the transaction on MDB_CORRUPTED: renewed on the snapshot, so that the next ranges are
       * read, not each reported as MDB_BAD_TXN. */
      if (g == -1 || vf_damage_code(g)) {
        rc = g == -1 ? 0 : vf_txn_recover(c, t); /* failed: the run stops, and says so */
        for (int e = 0; e < 2 && !rc; e++) rc = mdb_cursor_renew(t->txn, cur[e]);
        if (rc && !vf_stopping(c)) {
#pragma omp critical(verify_err)
          err = rc;
        }
      }
      if (c->o->progress && omp_get_thread_num() == 0) {
        double tn = vf_now_s();
        if (tn - last >= 0.1) {
          last = tn;
          c->o->progress(__atomic_load_n(&c->bytes_done, __ATOMIC_RELAXED), c->bytes_total,
                         c->o->progress_ud);
        }
      }
    }
    for (int d = 0; d < 2; d++)
      if (cur[d]) mdb_cursor_close(cur[d]);
  }
  if (atomic_load(&c->nomem) && !err) err = ENOMEM;
  c->r->records_checked = recs;
  c->r->bytes_checked = bytes;
  if (c->o->progress) c->o->progress(bytes, bytes, c->o->progress_ud);
  return err;
}
