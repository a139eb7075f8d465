/* tokenize's word on the store's token configs (docs/tokenize.md "A second config of one name"):
 * which configs a store holds, and the line that says a run added a second one of a name. */
#include "cmd/tokenize/configs.h"

#include <stdlib.h>
#include <string.h>

#include "formats/common/alloc.h"

/* cli.h's name of the tool is one per file: this file's messages are tokenize's too. */
__attribute__((constructor)) static void name_the_tool(void) { fc_cli_tool = "tokenize"; }

void tkc_list(fc_store **parts, unsigned n_parts, tkc_cfgs *out) {
  out->n = 0;
  for (unsigned k = 0; k < n_parts; k++) {
    fc_config_info *c;
    size_t m;
    if (fc_store_configs(parts[k], 0, &c, &m)) continue;
    for (size_t i = 0; i < m; i++) {
      size_t j = 0;
      while (j < out->n && memcmp(out->d[j].bytes, c[i].digest.bytes, 16)) j++;
      if (c[i].kind != FC_CONFIG_TOKENS || j < out->n || out->n == 64) continue;
      out->d[out->n] = c[i].digest;
      out->json[out->n] = c[i].json ? fc_strdup(c[i].json) : NULL;
      memcpy(out->name[out->n++], c[i].name, sizeof c[i].name);
    }
    fc_configs_free(c, m);
  }
}

void tkc_free(tkc_cfgs *c) {
  for (size_t i = 0; i < c->n; i++) free(c->json[i]);
  c->n = 0;
}

/* The value of a top-level key of a canonical config JSON (sorted keys, no spaces), as written:
 * 1 with *v and *n, 0 when the key is not there. A key of a nested object (a special's "id") is
 * preceded by '{' or ',' too, but none of those looked for here is one. */
static int field(const char *json, const char *key, const char **v, size_t *n) {
  char pat[48];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  for (const char *p = json; json && (p = strstr(p, pat)) != NULL; p++) {
    if (p == json || (p[-1] != ',' && p[-1] != '{')) continue; /* inside a string */
    const char *s = p + strlen(pat), *e = s;
    int depth = 0, in_str = 0;
    for (; *e; e++) {
      if (in_str) {
        if (*e == '\\' && e[1])
          e++;
        else if (*e == '"')
          in_str = 0;
      } else if (*e == '"') {
        in_str = 1;
      } else if (*e == '{' || *e == '[') {
        depth++;
      } else if (*e == '}' || *e == ']' || *e == ',') {
        if (!depth) break;
        if (*e != ',') depth--;
      }
    }
    *v = s, *n = (size_t)(e - s);
    return 1;
  }
  return 0;
}

const char *tkc_difference(const char *a, const char *b, char *buf, size_t len) {
  static const struct {
    const char *key, *what; /* what: "%s" is b's value, then a's; NULL: not valued */
  } keys[] = {
      {"tokenizer_version", /* said apart below when both have one */
       "made by another version of tokenize (tokenizer_version %s, where "
       "the old one has %s)"},
      {"espeak_ng", "another espeak-ng (%s, where the old one has %s)"},
      {"lang", "another --lang: %s, where the old one has %s"},
      {"tokenizer_json_digest", "another --tokenizer-json file"},
      {"unicode", "another normalization: --unicode %s, where the old one has %s"},
      {"casefold", "another normalization: --case %s, where the old one has %s"},
      {"punct", "another normalization: --punct %s, where the old one has %s"},
      {"whitespace", "another normalization: --whitespace %s, where the old one has %s"},
      {"specials", "other special symbols (--pad, --unk, --bos, --eos)"},
      {"add_bos", "another --add-bos"},
      {"add_eos", "another --add-eos"},
      {"dtype", "another --dtype: %s, where the old one has %s"},
  };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const char *va = NULL, *vb = NULL;
    size_t na = 0, nb = 0;
    const int ha = field(a, keys[i].key, &va, &na), hb = field(b, keys[i].key, &vb, &nb);
    if (ha == hb && (!ha || (na == nb && memcmp(va, vb, na) == 0))) continue;
    char sa[48] = "none", sb[48] = "none"; /* the values, a string's without its quotes */
    const char *vs[2] = {vb, va};
    const size_t ns[2] = {nb, na};
    char *out[2] = {sb, sa};
    for (int k = 0; k < 2; k++) {
      if (!vs[k]) continue;
      const char *v = vs[k];
      size_t n = ns[k];
      if (n >= 2 && v[0] == '"') v++, n -= 2;
      if (!strcmp(keys[i].key, "casefold")) v = !strncmp(v, "true", n) ? "fold" : "keep", n = 4;
      snprintf(out[k], 48, "%.*s", (int)(n < 40 ? n : 40), v);
    }
    if (i == 0 && va && vb) { /* a version bump: which of the two is out of date */
      const int older = atoi(sa) < atoi(sb);
      snprintf(buf, len,
               "the old one was made by %s tokenize, tokenizer_version %s, where this run's is "
               "%s%s",
               older ? "an older" : "a newer", sa, sb, older ? ": its ids are out of date" : "");
      return buf;
    }
    snprintf(buf, len, keys[i].what, sb, sa);
    return buf;
  }
  return NULL;
}

void tkc_say_second_config(const char *store, const tkc_cfgs *before, fc_store **parts,
                           unsigned n_parts, const fc_digest *cfg) {
  tkc_cfgs after;
  tkc_list(parts, n_parts, &after);
  size_t j = 0, k = 0;
  while (j < after.n && memcmp(after.d[j].bytes, cfg->bytes, 16)) j++;
  while (k < before->n && memcmp(before->d[k].bytes, cfg->bytes, 16)) k++;
  if (j == after.n || k < before->n || !after.name[j][0]) { /* not stored, or not new */
    tkc_free(&after);
    return;
  }
  /* its twin: one there before the run, or one another run stored meanwhile (two runs at once,
   * neither seeing the other's config at its start: each would end silent) */
  for (size_t i = 0; i < after.n; i++) {
    if (i == j || strcmp(after.name[i], after.name[j]) != 0) continue;
    k = 0;
    while (k < before->n && memcmp(before->d[k].bytes, after.d[i].bytes, 16)) k++;
    const int meanwhile = k == before->n;
    char hex[33], old[33], q[4 * 4096 + 8], why[200], pick[120] = "";
    fc_digest_hex(cfg, hex);
    fc_digest_hex(&after.d[i], old);
    /* a config made another on purpose (--case fold, another --lang) is chosen by its digest */
    const char *what = tkc_difference(after.json[i], after.json[j], why, sizeof why);
    if (what) snprintf(pick, sizeof pick, " (give it a digest: tokens=\"%s\" for this one)", hex);
    fc_cli_quoted(store, q, sizeof q);
    if (meanwhile)
      fc_cli_warn(store,
                  "this run's token config %s %s is a second one named '%s' beside %s, which "
                  "another run stored meanwhile (%s): the loader's tokens=\"%s\" cannot tell them "
                  "apart%s, and cache-verify fails the lines each lacks; keep one (cache-config "
                  "--drop %s %s, or --drop %s %s)",
                  after.name[j], hex, after.name[j], old,
                  what ? what : "another vocab: built from other text, or another --vocab",
                  after.name[j], pick, old, q, hex, q);
    else
      fc_cli_warn(store,
                  "this run's token config %s %s is a second one named '%s' beside %s (%s): the "
                  "loader's tokens=\"%s\" cannot tell them apart%s, and cache-verify fails the "
                  "lines the old one lacks; drop the old one once it is not needed (cache-config "
                  "--drop %s %s)",
                  after.name[j], hex, after.name[j], old,
                  what ? what : "another vocab: built from other text, or another --vocab",
                  after.name[j], pick, old, q);
    break;
  }
  tkc_free(&after);
}
