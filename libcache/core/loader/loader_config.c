/* The loader's config resolution: which stored mel/token config a selector (NULL, a name, or a
 * 32-hex digest) means in a store, and the padding value a config's silence has. Split from
 * loader.c (which opens stores and builds the index). */
#include "libcache/core/loader/loader_int.h"

#include "formats/common/why.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"
#include "featcache/fc_tokenize.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pad_value NAN: the value a silent frame has in config mc. Returns 0, or FC_ECONFIG (why says
 * so) when that depends on each utterance. */
int ld_resolve_pad_value(const fc_mel_config *mc, float *out, char *why, size_t why_len) {
  double f = mc->log_floor > 0 ? mc->log_floor : 0;
  switch (mc->log) {
  case FC_LOG_NONE: *out = 0.0f; return 0;
  case FC_LOG_LN:
    if (f > 0) {
      *out = (float)log(f);
      return 0;
    }
    break;
  case FC_LOG_LOG10:
    if (f > 0) {
      *out = (float)log10(f);
      return 0;
    }
    break;
  case FC_LOG_DB:
    if (f > 0 && mc->top_db <= 0) {
      *out = (float)(10 * log10(f));
      return 0;
    }
    fc_why(why, why_len,
           "pad_value: the silence of this config (power_to_db with top_db %g) "
           "depends on each utterance's maximum: give pad_value",
           mc->top_db);
    return FC_ECONFIG;
  case FC_LOG_WHISPER:
    fc_why(why, why_len,
           "pad_value: the silence of a whisper config ((max(x, max - 8) + 4) / 4) "
           "depends on each utterance's maximum: give pad_value");
    return FC_ECONFIG;
  default: break;
  }
  fc_why(why, why_len, "pad_value: the config has no silence value (log floor %g): give pad_value",
         mc->log_floor);
  return FC_ECONFIG;
}

static int is_hex32(const char *s) {
  if (strlen(s) != 32) return 0;
  for (int i = 0; i < 32; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
          (s[i] >= 'A' && s[i] <= 'F')))
      return 0;
  return 1;
}

/* ---- config resolution ------------------------------------------------------------------------- */
/* How well does config JSON object o answer to name? 2: by its own field (mel: "preset"; tokens:
 * "preset", "name", "tokenizer" or "tokenizer_kind"); 1: a mel config with every parameter of
 * that preset but the storage dtype (fc_mel_config_preset_of); 0: not at all. */
static int cfg_matches(json_t *o, const char *json, size_t len, const char *name, int tokens) {
  static const char *const mel_keys[] = {"preset", NULL};
  static const char *const tok_keys[] = {"preset", "name", "tokenizer", "tokenizer_kind", NULL};
  for (const char *const *k = tokens ? tok_keys : mel_keys; *k; k++) {
    const char *v = json_string_value(json_object_get(o, *k));
    if (v && strcmp(v, name) == 0) return 2;
  }
  fc_mel_config mc;
  if (!tokens && json_is_null(json_object_get(o, "preset")) &&
      fc_mel_config_from_json(json, len, &mc, NULL, 0) == 0) {
    const char *p = fc_mel_config_preset_of(&mc, NULL);
    if (!p) return 0;
    if (strcmp(p, name) == 0) return 1;
    char listed[64]; /* the name it is listed under (cache-config, the errors): "kaldi (mq)" */
    snprintf(listed, sizeof listed, "%s (%s)", p, fc_dtype_name(mc.dtype));
    if (strcmp(listed, name) == 0) return 2;
  }
  return 0;
}

/* Resolve selector sel (NULL, a name, or 32 hex) to a config digest of kind "mel"/"tokens" in
 * store t. On success *json is a malloc'd NUL-terminated copy of the config. */
int ld_resolve_config(MDB_txn *txn, MDB_dbi meta, const char *store, const char *sel, int tokens,
                      fc_digest *out, char **json, char *why, size_t why_len) {
  const char *kind = tokens ? "tokens" : "mel";
  MDB_cursor *c;
  int rc = mdb_cursor_open(txn, meta, &c);
  if (rc) return rc;
  MDB_val k = {4, (void *)"cfg/"}, v;
  int found = 0, n_kind = 0, n_other = 0, best = 0; /* best: the match level of those found
                                                      * (cfg_matches); n_other: of the other kind */
  char names[256] = "", hexes[640] = "";
  fc_digest d1, dsel;
  const char *want_hex = NULL;
  if (sel && is_hex32(sel)) {
    want_hex = sel;
    fc_digest_parse(sel, &dsel);
  }
  *json = NULL;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (k.mv_size < 4 || memcmp(k.mv_data, "cfg/", 4) != 0) break;
    if (k.mv_size != 36) continue;
    char hex[33];
    memcpy(hex, (const char *)k.mv_data + 4, 32);
    hex[32] = '\0';
    fc_digest d;
    if (fc_digest_parse(hex, &d)) continue;
    json_error_t jerr;
    int nomem;
    json_t *o = fc_json_loadb(v.mv_data, v.mv_size, 0, &jerr, &nomem);
    if (nomem) {
      fc_why(why, why_len, "%s: out of memory reading its %s configs", FC_WHY_NAME(store), kind);
      rc = ENOMEM;
      break;
    }
    const char *kv = o ? json_string_value(json_object_get(o, "kind")) : NULL;
    if (!kv || strcmp(kv, kind) != 0) {
      n_other += kv != NULL;
      json_decref(o);
      continue;
    }
    n_kind++;
    const char *pn = json_string_value(json_object_get(o, "preset"));
    if (!pn) pn = json_string_value(json_object_get(o, "name"));
    if (!pn) pn = json_string_value(json_object_get(o, "tokenizer"));
    char variant[64] = ""; /* a preset stored in another dtype: "kaldi (mq)" */
    fc_mel_config mc;
    if (!pn && !tokens && fc_mel_config_from_json(v.mv_data, v.mv_size, &mc, NULL, 0) == 0 &&
        fc_mel_config_preset_of(&mc, NULL))
      snprintf(variant, sizeof variant, "%s (%s)", fc_mel_config_preset_of(&mc, NULL),
               fc_dtype_name(mc.dtype));
    if (!pn && variant[0]) pn = variant;
    size_t nl = strlen(names);
    snprintf(names + nl, sizeof names - nl, "%s%s", nl ? ", " : "", pn ? pn : hex);
    int match = want_hex ? 2 * (memcmp(d.bytes, dsel.bytes, 16) == 0)
                : sel    ? cfg_matches(o, v.mv_data, v.mv_size, sel, tokens)
                         : 2;
    char stale[96] = ""; /* a token config an older tokenize made, said so among several */
    const json_t *tv = json_object_get(o, "tokenizer_version");
    const int now = fc_tok_version_of(json_string_value(json_object_get(o, "tokenizer")));
    if (tokens && json_is_integer(tv) && json_integer_value(tv) < now)
      snprintf(stale, sizeof stale,
               " (made by an older tokenize, tokenizer_version %lld, where this one's is %d: "
               "out of date)",
               (long long)json_integer_value(tv), now);
    json_decref(o);
    if (match < best || !match) continue;
    if (match > best) { /* a config named exactly so wins over one that differs in dtype only */
      best = match;
      found = 0;
      hexes[0] = '\0';
    }
    if (found++ == 0) {
      d1 = d;
      free(*json);
      *json = fc_strndup(v.mv_data, v.mv_size);
      if (!*json) {
        rc = ENOMEM;
        break;
      }
    }
    size_t hl = strlen(hexes);
    snprintf(hexes + hl, sizeof hexes - hl, "%s%s%s", hl ? ", " : "", hex, stale);
  }
  mdb_cursor_close(c);
  if (rc && rc != MDB_NOTFOUND) goto fail;
  if (!sel && found > 1 && !tokens) {
    /* no selector and several mel configs: the default preset, if present exactly once */
    free(*json);
    *json = NULL;
    rc = ld_resolve_config(txn, meta, store, "hifigan", 0, out, json, why, why_len);
    if (rc == FC_ENOTFOUND) /* the caller asked for none: say why one must be chosen */
      fc_why(why, why_len,
             "%s: the store holds %d mel configs and none is the default (hifigan): choose one "
             "with features (it has: %s)",
             FC_WHY_NAME(store), found, names);
    return rc;
  }
  if (found == 0) {
    if (want_hex)
      fc_why(why, why_len, "%s: no %s config %s in the store", FC_WHY_NAME(store), kind, sel);
    else if (sel && tokens && !n_kind) /* none at all: what stores them */
      fc_why(why, why_len,
             "%s: no tokens config named '%s' in the store (it has none: no token ids were "
             "stored in it; tokenize --manifest FILE -o %s stores them)",
             FC_WHY_NAME(store), sel, FC_WHY_NAME(store));
    else if (sel)
      fc_why(why, why_len, "%s: no %s config named '%s' in the store (it has: %s)",
             FC_WHY_NAME(store), kind, sel, n_kind ? names : "none");
    else if (n_other && !tokens) /* what is missing, and what stores it */
      fc_why(
          why, why_len,
          "%s: the store holds no mel config: token ids only (tokenize's), no features "
          "(featurize -o %s stores them into it: the loader reads each utterance's features from "
          "the store that holds it, not from another given beside it)",
          FC_WHY_NAME(store), FC_WHY_NAME(store));
    else
      fc_why(why, why_len,
             "%s: the store holds no %s config: no features were stored in it yet (a featurize "
             "still running on it stores its config with its first commit: wait for it to finish)",
             FC_WHY_NAME(store), kind);
    rc = FC_ENOTFOUND;
    goto fail;
  }
  if (found > 1) {
    fc_why(why, why_len, "%s: several %s configs are named '%s': choose one by digest (%s)",
           FC_WHY_NAME(store), kind, sel ? sel : "?", hexes);
    rc = FC_ECONFIG;
    goto fail;
  }
  *out = d1;
  return 0;
fail:
  free(*json);
  *json = NULL;
  return rc;
}
