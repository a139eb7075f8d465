/* cache-verify: the failure records of the `failed` db (verify_int.h; docs/FORMAT.md "Failure
 * record"). featurize wrote one for each utterance it could not store; they are collected before
 * the entry checks, so that a missing feature record or a manifest id without an audio entry that
 * a record explains is no error, and each is reported at the end as an FC_VERIFY_FAILED finding:
 * apart from damage and unexplained gaps. */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/alloc.h"
#include "formats/common/utc.h"

int vf_collect_failures(vctx *c, fc_rtxn *t) {
  fc_cursor *cur;
  int rc = fc_cursor_open(t, FC_DB_FAILED, &cur); /* a store without the db: no records */
  if (rc) return rc;
  c->cur = cur;
  size_t cap = 0;
  const void *k, *v;
  size_t kl, vl;
  while ((rc = fc_cursor_next(cur, &k, &kl, &v, &vl)) == 0 && !vf_stopping(c)) {
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_FAILED, k, kl, k, kl,
             "value lies outside the file (B-tree damaged)");
      continue;
    }
    fc_failure f;
    if (fc_failure_decode(v, vl, &f) != 0) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_FAILED, k, kl, k, kl,
             "failure record of %zu bytes does not decode (want at least %d, and its source "
             "length within them)",
             vl, FC_FAILURE_FIXED);
      continue;
    }
    if (fc_id_check(k, kl) != 0) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_FAILED, k, kl, NULL, 0, "key is not a valid id");
      continue;
    }
    uint32_t home = c->part_n > 1 ? fc_store_part_of_id(k, kl, c->part_n) : 0;
    if (c->part_n > 1 && home != c->part_k) /* featurize clears a record in the id's part only */
      vf_add(c, FC_VERIFY_ERROR, FC_DB_FAILED, k, kl, k, kl,
             "in part %u of a split store of %u parts; its id belongs in part %u, where a run "
             "that stores it clears its failure record",
             c->part_k, c->part_n, home);
    if (c->n_fails == cap) {
      size_t nc = cap ? cap * 2 : 64;
      vfail *nf = fc_realloc(c->fails, nc * sizeof *nf);
      if (!nf) {
        rc = ENOMEM;
        break;
      }
      c->fails = nf;
      cap = nc;
    }
    c->fails[c->n_fails++] = (vfail){k, kl, f, 0};
  }
  fc_cursor_close(cur);
  c->cur = NULL;
  return rc == FC_ENOTFOUND ? 0 : rc;
}

vfail *vf_find_failure(vctx *c, const char *id, size_t len) {
  size_t lo = 0, hi = c->n_fails;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int d = vf_cmp_lmdb(c->fails[mid].id, c->fails[mid].id_len, id, len);
    if (d == 0) return &c->fails[mid];
    if (d < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

void vf_report_failures(vctx *c, fc_rtxn *t) {
  for (size_t i = 0; i < c->n_fails; i++) {
    const vfail *fl = &c->fails[i];
    const vcfg *cf = vf_find_cfg(c, fl->f.config.bytes);
    char hex[33], when[64];
    fc_digest_hex(&fl->f.config, hex);
    fc_utc(fl->f.time_ns, 0, when, sizeof when);
    char *reason = vf_printable(fl->f.reason, fl->f.reason_len);
    char *source = vf_quoted(fl->f.source, fl->f.source_len);
    /* Stored under that config all the same (it failed after it was stored): say its features
     * are those of the file as it was. */
    const char *kept = "";
    const ventry *e = vf_find_entry(c->audio, c->n_audio, fl->id, fl->id_len);
    if (e && e->ok) {
      fc_digest content, key;
      memcpy(content.bytes, e->val, 16);
      fc_record_key(&content, &fl->f.config, &key);
      if (fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, NULL, NULL) == 0)
        kept = "; its features stored before are kept";
    }
    if (fl->explains) c->r->failures_explaining++;
    vf_add(c, FC_VERIFY_FAILED, FC_DB_FAILED, fl->id, fl->id_len, fl->id, fl->id_len,
           "featurize failed it: %s (source %s; config %s %s; %s)%s", reason ? reason : "?",
           fl->f.source_len ? (source ? source : "?") : "none",
           cf ? vf_cfg_name(cf) : "not in this store", hex, when, kept);
    free(reason);
    free(source);
  }
}
