/* cache-verify, step 2: the configs in meta (verify_int.h). */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"
#include "featcache/fc_tokenize.h"

/* ---- step 2: meta ---------------------------------------------------------------------------- */

static void tok_label(json_t *o, vcfg *cf) {
  static const char *const keys[] = {"tokenizer", "name", "preset"};
  for (size_t i = 0; i < 3; i++) {
    const char *s = json_string_value(json_object_get(o, keys[i]));
    if (s) {
      snprintf(cf->label, sizeof cf->label, "%s", s);
      break;
    }
  }
  cf->tok_dtype = fc_dtype_from_name(json_string_value(json_object_get(o, "dtype")));
}

/* *hit = does the token config json answer to name? 0, or ENOMEM (nothing said about it). */
static int tok_name_matches(const char *json, size_t len, const char *name, int *hit) {
  json_error_t je;
  int nomem;
  json_t *o = fc_json_loadb(json, len, 0, &je, &nomem);
  *hit = 0;
  if (nomem) return ENOMEM;
  static const char *const keys[] = {"tokenizer", "name", "preset"};
  for (size_t i = 0; o && i < 3 && !*hit; i++) {
    const char *s = json_string_value(json_object_get(o, keys[i]));
    *hit = s && strcmp(s, name) == 0;
  }
  json_decref(o);
  return 0;
}

/* A token config names the digest of its vocabulary (chars, phonemes) or tokenizer.json (bpe),
 * which tokenize stores beside it as meta vocab/<hex> or tokenizer/<hex>: what a reader turning
 * ids back into symbols reads (docs/examples/read_tokens.py). Other bytes: an error; missing:
 * said after the record scan (vf_report_tok_files), which tells a job cut short from a loss. */
static const char *const tok_field[] = {"vocab_digest", "tokenizer_json_digest"};
static const char *const tok_prefix[] = {"vocab/", "tokenizer/"};

static void check_tok_file(vctx *c, fc_rtxn *t, json_t *o, vcfg *cf) {
  for (size_t i = 0; i < 2; i++) {
    const char *want = json_string_value(json_object_get(o, tok_field[i]));
    if (!want) continue;
    char key[48];
    int kl = snprintf(key, sizeof key, "%s%s", tok_prefix[i], cf->hex);
    const void *v;
    size_t vl;
    int rc = fc_rtxn_get(t, FC_DB_META, key, (size_t)kl, &v, &vl);
    if (rc == FC_ENOTFOUND) {
      cf->tok_file_missing = (int)i + 1;
      snprintf(cf->tok_file_want, sizeof cf->tok_file_want, "%s", want);
      continue;
    }
    if (rc) continue; /* a read error: the walk of meta says it */
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, key, (size_t)kl, NULL, 0,
             "value lies outside the file (B-tree damaged)");
      continue;
    }
    fc_digest h;
    char hh[33];
    fc_digest_buffer(v, vl, &h);
    fc_digest_hex(&h, hh);
    if (strcmp(hh, want) != 0)
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, key, (size_t)kl, NULL, 0,
             "hashes to %s, but token config %s %s names %s %s", hh,
             cf->label[0] ? cf->label : "(no name)", cf->hex, tok_field[i], want);
  }
}

void vf_report_tok_files(vctx *c) {
  for (size_t i = 0; i < c->n_cfgs; i++) {
    const vcfg *cf = &c->cfgs[i];
    if (!cf->tok_file_missing) continue;
    size_t f = (size_t)cf->tok_file_missing - 1;
    char key[48];
    int kl = snprintf(key, sizeof key, "%s%s", tok_prefix[f], cf->hex);
    int used = atomic_load(&cf->has_records);
    vf_add(c, used ? FC_VERIFY_ERROR : FC_VERIFY_WARNING, FC_DB_META, key, (size_t)kl, NULL, 0,
           "missing: token config %s %s names %s %s, the store does not hold it%s",
           cf->label[0] ? cf->label : "(no name)", cf->hex, tok_field[f], cf->tok_file_want,
           used ? ""
                : " (no record was made with the config: a tokenize or cache-merge cut short "
                  "stores it when run again)");
  }
}

int vf_read_meta(vctx *c, fc_rtxn *t) {
  fc_cursor *cur;
  int rc = fc_cursor_open(t, FC_DB_META, &cur);
  if (rc) return rc;
  c->cur = cur;
  const void *k, *v;
  size_t kl, vl;
  size_t cap = 0;
  while ((rc = fc_cursor_next(cur, &k, &kl, &v, &vl)) == 0) {
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0,
             "value lies outside the file (B-tree damaged)");
      continue;
    }
    if (kl == 4 && memcmp(k, "part", 4) == 0) { /* a part of a split store: "K/N" */
      char b[24], extra;
      unsigned pk, pn;
      if (vl < sizeof b) {
        memcpy(b, v, vl);
        b[vl] = '\0';
      }
      if (vl >= sizeof b || sscanf(b, "%u/%u%c", &pk, &pn, &extra) != 2 || pk >= pn ||
          pn > FC_SPLIT_MAX_PARTS) {
        c->part_unreadable = 1;
        vf_add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0,
               "part of a split store, but its value is not K/N (K < N <= %u)", FC_SPLIT_MAX_PARTS);
      } else
        c->part_k = pk, c->part_n = pn;
      continue;
    }
    if (kl < 4 || memcmp(k, "cfg/", 4) != 0) continue;
    fc_digest d, h;
    char hex[33];
    if (kl != 36 ||
        (memcpy(hex, (const char *)k + 4, 32), hex[32] = '\0', fc_digest_parse(hex, &d))) {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0, "config key is not cfg/<32 hex>");
      continue;
    }
    fc_digest_buffer(v, vl, &h);
    if (memcmp(h.bytes, d.bytes, 16) != 0) {
      char hh[33];
      fc_digest_hex(&h, hh);
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0,
             "config JSON hashes to %s, not to its key", hh);
    }
    if (c->n_cfgs == cap) {
      size_t nc = cap ? cap * 2 : 8;
      vcfg *n = fc_realloc(c->cfgs, nc * sizeof *n);
      if (!n) {
        rc = ENOMEM;
        break;
      }
      c->cfgs = n;
      cap = nc;
    }
    vcfg *cf = &c->cfgs[c->n_cfgs++];
    memset(cf, 0, sizeof *cf);
    cf->digest = d;
    fc_digest_hex(&d, cf->hex);
    json_error_t je;
    int nomem;
    json_t *o = fc_json_loadb(v, vl, 0, &je, &nomem);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    int mrc;
    if (nomem) {
      rc = ENOMEM; /* not the config's fault: nothing said about it */
      c->n_cfgs--;
      break;
    } else if (!o || !kind) {
      char jt[4 * sizeof je.text + 8];
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0,
             "config is not a JSON object with a \"kind\"%s%s", o ? "" : ": ",
             o ? "" : fc_json_error_text(&je, jt, sizeof jt));
    } else if (strcmp(kind, "mel") == 0) {
      char why[256] = "";
      cf->kind = KIND_MEL;
      c->r->mel_configs++;
      const char *pr = json_string_value(json_object_get(o, "preset"));
      if (pr) snprintf(cf->label, sizeof cf->label, "%s", pr);
      json_t *kv = json_object_get(o, "kernel_version");
      if (json_is_integer(kv) && json_integer_value(kv) != FC_KERNEL_VERSION) {
        vf_add(
            c, FC_VERIFY_WARNING, FC_DB_META, k, kl, NULL, 0,
            "mel config of kernel version %lld (this build: %d): its frame counts are not checked",
            (long long)json_integer_value(kv), FC_KERNEL_VERSION);
      } else if ((mrc = fc_mel_config_from_json(v, vl, &cf->mel, why, sizeof why)) == ENOMEM) {
        rc = ENOMEM;
        json_decref(o);
        break;
      } else if (mrc || fc_mel_config_validate(&cf->mel, why, sizeof why)) {
        vf_add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0, "invalid mel config: %s", why);
      } else {
        cf->usable = 1;
        const char *base = pr ? NULL : fc_mel_config_preset_of(&cf->mel, NULL);
        if (base) /* a preset stored in another dtype: its "preset" is null, the name still holds */
          snprintf(cf->label, sizeof cf->label, "%s (%s)", base, fc_dtype_name(cf->mel.dtype));
      }
    } else if (strcmp(kind, "tokens") == 0) {
      cf->kind = KIND_TOK;
      c->r->token_configs++;
      tok_label(o, cf);
      check_tok_file(c, t, o, cf);
      const json_t *tv = json_object_get(o, "tokenizer_version");
      const int now = fc_tok_version_of(json_string_value(json_object_get(o, "tokenizer")));
      if (json_is_integer(tv) && json_integer_value(tv) < now) /* docs/tokenize.md */
        vf_add(c, FC_VERIFY_WARNING, FC_DB_META, k, kl, NULL, 0,
               "token config %s %s was made by an older tokenize (tokenizer_version %lld, where "
               "this one's is %d): its ids are out of date; tokenize again stores every line "
               "anew under a config of its own, then drop this one (cache-config --drop %s)",
               cf->label, cf->hex, (long long)json_integer_value(tv), now, cf->hex);
    } else {
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0, "config of unknown kind \"%s\"", kind);
    }
    json_decref(o);
  }
  fc_cursor_close(cur);
  c->cur = NULL;
  return rc == FC_ENOTFOUND ? 0 : rc;
}

vcfg *vf_find_cfg(vctx *c, const void *digest) {
  for (size_t i = 0; i < c->n_cfgs; i++)
    if (memcmp(c->cfgs[i].digest.bytes, digest, 16) == 0) return &c->cfgs[i];
  return NULL;
}

static void list_cfgs(vctx *c, int kind, char *out, size_t len) {
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < c->n_cfgs && n < len; i++) {
    if (c->cfgs[i].kind != kind) continue;
    int w = snprintf(out + n, len - n, "%s%s %s", n ? ", " : "",
                     c->cfgs[i].label[0] ? c->cfgs[i].label : "(no name)", c->cfgs[i].hex);
    if (w > 0) n += (size_t)w;
  }
  if (!out[0]) snprintf(out, len, "none");
}

/* The config a preset's listed name "PRESET (DTYPE)" stands for ("kaldi (mq)": how cache-config,
 * the loader and the findings name a preset stored in another dtype): the config featurize stores
 * for --preset PRESET --dtype DTYPE. 0, or FC_ECONFIG when name is no such name. */
static int listed_preset(const char *name, fc_mel_config *c) {
  const char *open = strstr(name, " (");
  size_t nl = strlen(name), bl = open ? (size_t)(open - name) : 0;
  char base[32], dt[16];
  if (!open || name[nl - 1] != ')' || bl >= sizeof base || nl - bl - 3 >= sizeof dt)
    return FC_ECONFIG;
  memcpy(base, name, bl);
  base[bl] = '\0';
  memcpy(dt, open + 2, nl - bl - 3);
  dt[nl - bl - 3] = '\0';
  int dtype = fc_dtype_from_name(dt);
  if (!dtype || fc_mel_preset(base, c) != 0) return FC_ECONFIG;
  c->dtype = dtype;
  fc_mel_config_settle_preset(c);
  return fc_mel_config_validate(c, NULL, 0) ? FC_ECONFIG : 0;
}

int vf_config_answers(const fc_verify_opts *o, int tokens, const char *hex, const char *json,
                      size_t len, int *yes) {
  const char *const *names = tokens ? o->expect_tok : o->expect_mel;
  const size_t n = tokens ? o->n_expect_tok : o->n_expect_mel;
  fc_mel_config mc;
  int parsed = 0; /* mc: 1 read, -1 not a mel config this build reads */
  *yes = 0;
  for (size_t e = 0; e < n && !*yes; e++) {
    fc_digest d;
    char h[33];
    if (fc_digest_parse(names[e], &d) == 0) {
      fc_digest_hex(&d, h);
      *yes = strcmp(h, hex) == 0;
      continue;
    }
    if (tokens) {
      if (tok_name_matches(json, len, names[e], yes)) return ENOMEM;
      continue;
    }
    fc_mel_config pc;
    if (fc_mel_preset(names[e], &pc) == 0 || listed_preset(names[e], &pc) == 0) {
      fc_mel_config_digest(&pc, &d);
      fc_digest_hex(&d, h);
      if ((*yes = strcmp(h, hex) == 0) != 0) continue;
    }
    if (!parsed) { /* a preset stored in another dtype answers to the preset's name */
      char why[256];
      int rc = fc_mel_config_from_json(json, len, &mc, why, sizeof why);
      if (rc == ENOMEM) return ENOMEM;
      parsed = rc ? -1 : 1;
    }
    const char *base = parsed > 0 && !mc.preset[0] ? fc_mel_config_preset_of(&mc, NULL) : NULL;
    *yes = base && strcmp(base, names[e]) == 0;
  }
  return 0;
}

/* Mark the expected configs. Names that cannot mean anything are usage errors (FC_ECONFIG); a
 * well-formed expectation the store does not meet is a finding. */
int vf_resolve_expected(vctx *c, fc_rtxn *t, char *why, size_t why_len) {
  const fc_verify_opts *o = c->o;
  char have[1024];
  /* an empty shard of a dataset needs no config of a kind it has no entries of (in_dataset); a
   * split store's part is one of a dataset however it is checked (its readers read every part) */
  const int one_of = o->in_dataset || c->part_n >= 2;
  const int need_mel = !one_of || c->r->entries[FC_DB_AUDIO] > 0;
  const int need_tok = !one_of || c->r->entries[FC_DB_TEXT] > 0;
  if (!o->n_expect_mel)
    for (size_t i = 0; i < c->n_cfgs; i++) c->cfgs[i].expected |= c->cfgs[i].kind == KIND_MEL;
  for (size_t e = 0; e < o->n_expect_mel; e++) {
    const char *name = o->expect_mel[e];
    fc_digest d;
    int is_digest = fc_digest_parse(name, &d) == 0;
    if (!is_digest) {
      fc_mel_config pc;
      if (fc_mel_preset(name, &pc) != 0 && listed_preset(name, &pc) != 0) {
        char list[128] = ""; /* the presets there are, as featurize names them: a typo shows */
        const char *const *p = fc_mel_preset_names();
        for (int i = 0; p[i]; i++) {
          size_t l = strlen(list);
          snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", p[i]);
        }
        fc_why(why, why_len,
               "unknown preset '%s' (want one of %s; one stored in another dtype as cache-config "
               "lists it, 'kaldi (mq)'; or a 32-hex config digest)",
               name, list);
        return FC_ECONFIG;
      }
      fc_mel_config_digest(&pc, &d);
    }
    vcfg *cf = vf_find_cfg(c, d.bytes);
    char hex[33], key[37];
    fc_digest_hex(&d, hex);
    snprintf(key, sizeof key, "cfg/%s", hex);
    if (cf && cf->kind == KIND_MEL) {
      cf->expected = 1;
      continue;
    }
    int variants = 0; /* the preset stored in another dtype answers to its name */
    for (size_t i = 0; !is_digest && !cf && i < c->n_cfgs; i++) {
      vcfg *vc = &c->cfgs[i];
      const char *base = vc->kind == KIND_MEL && vc->usable && !vc->mel.preset[0]
                             ? fc_mel_config_preset_of(&vc->mel, NULL)
                             : NULL;
      if (base && strcmp(base, name) == 0) vc->expected = 1, variants++;
    }
    if (variants || !need_mel) continue;
    list_cfgs(c, KIND_MEL, have, sizeof have);
    if (cf)
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, key, 36, NULL, 0,
             "expected mel config %s is a token config; stored mel configs: %s", name, have);
    else if (is_digest)
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, key, 36, NULL, 0,
             "config mismatch: expected mel config %s is not in the store; stored mel configs: %s",
             hex, have);
    else
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, key, 36, NULL, 0,
             "config mismatch: expected preset %s (config %s) is not in the store; stored mel "
             "configs: %s",
             name, hex, have);
  }
  if (!o->n_expect_tok)
    for (size_t i = 0; i < c->n_cfgs; i++) c->cfgs[i].expected |= c->cfgs[i].kind == KIND_TOK;
  for (size_t e = 0; e < o->n_expect_tok; e++) {
    const char *name = o->expect_tok[e];
    fc_digest d;
    int hit = 0;
    if (fc_digest_parse(name, &d) == 0) {
      vcfg *cf = vf_find_cfg(c, d.bytes);
      if (cf && cf->kind == KIND_TOK) cf->expected = hit = 1;
    } else {
      char hexes[160] = "";
      for (size_t i = 0; i < c->n_cfgs; i++) {
        const char *json;
        size_t len;
        if (c->cfgs[i].kind != KIND_TOK) continue;
        int match = 0;
        if (fc_rtxn_get_config(t, &c->cfgs[i].digest, &json, &len) == 0 &&
            tok_name_matches(json, len, name, &match))
          return ENOMEM;
        if (!match) continue;
        c->cfgs[i].expected = 1;
        size_t hl = strlen(hexes);
        snprintf(hexes + hl, sizeof hexes - hl, "%s%s", hit++ ? ", " : "", c->cfgs[i].hex);
      }
      if (hit > 1) /* all are checked; but the loader refuses a name that several answer to */
        vf_add(c, FC_VERIFY_WARNING, FC_DB_META, NULL, 0, NULL, 0,
               "%d token configs answer to '%s' (%s): a loader given tokens=\"%s\" refuses the "
               "name; give it one of these digests",
               hit, name, hexes, name);
    }
    if (!hit && need_tok) {
      list_cfgs(c, KIND_TOK, have, sizeof have);
      vf_add(c, FC_VERIFY_ERROR, FC_DB_META, NULL, 0, NULL, 0,
             "config mismatch: expected token config %s is not in the store; stored token "
             "configs: %s",
             name, have);
    }
  }
  return 0;
}
