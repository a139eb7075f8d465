/* featcache — fc_tokenizer: the chars, phonemes and bpe tokenizers and their canonical config. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <utf8proc.h>

#include "featcache/fc_format.h"
#include "formats/common/args.h"
#include "featcache/fc_tokenize.h"
#include "featcache/fc_outfile.h"
#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"

enum { SP_PAD, SP_UNK, SP_BOS, SP_EOS, SP_COUNT };
static const char *const special_keys[SP_COUNT] = {"pad", "unk", "bos", "eos"};
static const char *const special_defaults[SP_COUNT] = {"<pad>", "<unk>", "<bos>", "<eos>"};

struct fc_tokenizer {
  fc_tok_kind kind;
  fc_tok_norm norm;
  int add_bos, add_eos, strict, dtype_opt, dtype;
  char *lang;
  const char *espeak_version;
  char *specials[SP_COUNT];
  int32_t special_ids[SP_COUNT]; /* -1: not in the vocab */
  tok_vocab vocab;
  tok_bpe *bpe;
  char *vocab_text; /* vocab file text (chars, phonemes) or tokenizer.json bytes (bpe) */
  size_t vocab_text_len;
  uint32_t vocab_size;
  int ready;
  char *config;
  size_t config_len;
  fc_digest digest;
  tok_phcache *phcache; /* phonemes: the readings of a vocab pass, for the run's ids */
};

static const char *const kind_names[] = {"chars", "phonemes", "bpe"};

const char *fc_tok_kind_name(fc_tok_kind k) { return (unsigned)k < 3 ? kind_names[k] : NULL; }

int fc_tok_kind_from_name(const char *name) {
  for (int i = 0; i < 3; i++)
    if (name && strcmp(name, kind_names[i]) == 0) return i;
  return -1;
}

void fc_tok_opts_init(fc_tok_opts *o, fc_tok_kind kind) {
  FC_ARGS_OR(, o);
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->norm.unicode = kind == FC_TOK_BPE ? FC_UNICODE_NONE : FC_UNICODE_NFKC;
  o->norm.collapse_space = kind != FC_TOK_BPE;
  o->norm_set = 1;
  o->lang = "en-us";
}

static int read_file(const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return errno;
  struct stat st; /* a directory opens, and its read fails with EISDIR: say that, not EIO */
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return EISDIR;
  }
  tok_buf b = {0};
  char chunk[65536];
  size_t n;
  int rc = 0;
  while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0) rc = tok_buf_put(&b, chunk, n);
  if (!rc && ferror(f)) rc = EIO;
  fclose(f);
  if (!rc && !b.p) rc = tok_buf_put(&b, "", 0);
  if (rc) {
    free(b.p);
    return rc;
  }
  *data = b.p;
  *len = b.len;
  return 0;
}

static int pick_dtype(fc_tokenizer *t, char *why, size_t why_len) {
  uint32_t n = t->vocab_size;
  if (t->dtype_opt == 0) {
    t->dtype = n <= 32768 ? FC_DTYPE_I16 : n <= 65536 ? FC_DTYPE_U16 : FC_DTYPE_I32;
    return 0;
  }
  t->dtype = t->dtype_opt;
  if ((t->dtype == FC_DTYPE_I16 && n > 32768) || (t->dtype == FC_DTYPE_U16 && n > 65536) ||
      (t->dtype != FC_DTYPE_I16 && t->dtype != FC_DTYPE_U16 && t->dtype != FC_DTYPE_I32)) {
    tok_set_why(why, why_len, "dtype %s cannot hold %u ids (use %s)",
                fc_dtype_name(t->dtype) ? fc_dtype_name(t->dtype) : "?", n,
                n <= 65536 ? "u16 or i32" : "i32");
    return FC_ECONFIG;
  }
  return 0;
}

/* The "tokenizer_version" a config of kind gets: this build's (fc_tok_version_of). A test build
 * (FC_FAULT_INJECTION) takes another from FC_FAULT_TOKENIZER_VERSION, so that a test makes the
 * config an older tokenize made (tests/cli/tokenize_old_version.sh); release builds never read it. */
static int config_version(fc_tok_kind kind) {
  int v = fc_tok_version_of(kind_names[kind]);
#ifdef FC_FAULT_INJECTION
  const char *e = getenv("FC_FAULT_TOKENIZER_VERSION");
  if (e && *e) v = atoi(e);
#endif
  return v;
}

/* Canonical JSON (sorted keys, no spaces) and its digest. Every member is checked: a value that
 * could not be allocated must fail the config, never leave a key out of it (another digest). */
static int make_config(fc_tokenizer *t, char *why, size_t why_len) {
  char hex[33];
  fc_digest vd;
  fc_digest_buffer(t->vocab_text, t->vocab_text_len, &vd);
  fc_digest_hex(&vd, hex);
  json_t *o = json_object();
  int bad = !o;
  bad |= json_object_set_new(o, "kind", json_string("tokens"));
  bad |= json_object_set_new(o, "preset", json_null());
  bad |= json_object_set_new(o, "tokenizer", json_string(kind_names[t->kind]));
  bad |= json_object_set_new(o, "tokenizer_version", json_integer(config_version(t->kind)));
  bad |= json_object_set_new(o, "unicode",
                             json_string(t->norm.unicode == FC_UNICODE_NFKC ? "nfkc" : "none"));
  bad |= json_object_set_new(o, "casefold", json_boolean(t->norm.casefold));
  bad |= json_object_set_new(o, "punct",
                             json_string(t->norm.punct == FC_PUNCT_REMOVE ? "remove" : "keep"));
  bad |= json_object_set_new(o, "whitespace",
                             json_string(t->norm.collapse_space ? "collapse" : "keep"));
  bad |= json_object_set_new(o, "dtype", json_string(fc_dtype_name(t->dtype)));
  bad |= json_object_set_new(o, "vocab_size", json_integer(t->vocab_size));
  if (t->kind == FC_TOK_BPE) {
    bad |= json_object_set_new(o, "tokenizer_json_digest", json_string(hex));
  } else {
    bad |= json_object_set_new(o, "vocab_digest", json_string(hex));
    bad |= json_object_set_new(o, "add_bos", json_boolean(t->add_bos));
    bad |= json_object_set_new(o, "add_eos", json_boolean(t->add_eos));
    json_t *sp = json_object();
    for (int i = 0; i < SP_COUNT && sp; i++) {
      json_t *e = json_object();
      bad |= json_object_set_new(e, "symbol", json_string(t->specials[i]));
      bad |= json_object_set_new(e, "id",
                                 t->special_ids[i] >= 0 ? json_integer(t->special_ids[i])
                                                        : json_null());
      bad |= json_object_set_new(sp, special_keys[i], e);
    }
    bad |= json_object_set_new(o, "specials", sp);
  }
  if (t->kind == FC_TOK_PHONEMES) {
    bad |= json_object_set_new(o, "lang", json_string(t->lang));
    bad |= json_object_set_new(o, "espeak_ng", json_string(t->espeak_version));
    bad |= json_object_set_new(o, "punctuation", json_string(tok_clause_marks));
  }
  int nomem = 1;
  char *s = bad ? NULL : fc_json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS, &nomem);
  json_decref(o);
  if (!s && !nomem) { /* jansson refused a value (not UTF-8): the checks above let none through */
    tok_set_why(why, why_len, "cannot write the token config");
    return FC_ECONFIG;
  }
  if (!s) {
    tok_set_why(why, why_len, "out of memory writing the token config");
    return ENOMEM;
  }
  free(t->config);
  t->config = s;
  t->config_len = strlen(s);
  fc_digest_buffer(s, t->config_len, &t->digest);
  return 0;
}

/* After the vocab is known (file or built): specials, sizes, dtype, config. */
static int finish_symbols(fc_tokenizer *t, char *why, size_t why_len) {
  for (int i = 0; i < SP_COUNT; i++) {
    if (!tok_map_get(&t->vocab.map, t->specials[i], strlen(t->specials[i]), &t->special_ids[i]))
      t->special_ids[i] = -1;
    else if (tok_vocab_unmatch(&t->vocab, t->specials[i]))
      return ENOMEM;
  }
  if (t->add_bos && t->special_ids[SP_BOS] < 0) {
    tok_set_why(why, why_len, "the vocab has no bos symbol '%s' to add to each text",
                t->specials[SP_BOS]);
    return FC_ECONFIG;
  }
  if (t->add_eos && t->special_ids[SP_EOS] < 0) {
    tok_set_why(why, why_len, "the vocab has no eos symbol '%s' to add to each text",
                t->specials[SP_EOS]);
    return FC_ECONFIG;
  }
  tok_buf b = {0};
  for (size_t i = 0; i < t->vocab.n; i++)
    if (tok_buf_put(&b, t->vocab.syms[i], strlen(t->vocab.syms[i])) || tok_buf_put(&b, "\n", 1)) {
      free(b.p);
      return ENOMEM;
    }
  free(t->vocab_text);
  t->vocab_text = b.p;
  t->vocab_text_len = b.len;
  t->vocab_size = (uint32_t)t->vocab.n;
  int rc = pick_dtype(t, why, why_len);
  if (!rc) rc = make_config(t, why, why_len);
  if (!rc) t->ready = 1;
  return rc;
}

/* Is every white space of s a single U+0020, as the collapsed text's are? */
static int spaces_collapsed(const char *s, size_t len) {
  int prev_space = 0;
  for (size_t i = 0; i < len;) {
    int32_t cp;
    i += tok_utf8_next(s + i, len - i, &cp);
    const int sp = tok_is_space(cp) || (cp >= 0x1C && cp <= 0x1F); /* as fc_tok_normalize's */
    if (sp && (cp != ' ' || prev_space)) return 0;
    prev_space = sp;
  }
  return 1;
}

/* The option whose normalization never leaves vocab symbol s in the text (NULL: none): a letter
 * that case folding changes, punctuation removed, white space collapsed; for phonemes, white space
 * in a symbol of more than one character (espeak-ng's phonemes hold none: " " is a symbol alone). */
static const char *unreachable_by(const fc_tokenizer *t, const char *s) {
  const size_t len = strlen(s);
  const int chars = t->kind == FC_TOK_CHARS; /* phonemes: espeak-ng's symbols, but its clause
                                                marks come from the text's punctuation */
  if (chars && t->norm.casefold) { /* the text's folding (fc_tok_normalize): does it change s? */
    int flags = UTF8PROC_STABLE | UTF8PROC_CASEFOLD;
    if (t->norm.unicode == FC_UNICODE_NFKC) flags |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    char *f = NULL;
    size_t flen = 0;
    const int changed =
        tok_utf8_map(s, len, flags, &f, &flen) == 0 && (flen != len || memcmp(f, s, len) != 0);
    free(f);
    if (changed) return "--case fold";
  }
  for (size_t k = 0; k < len && t->norm.punct == FC_PUNCT_REMOVE;) {
    int32_t cp;
    k += tok_utf8_next(s + k, len - k, &cp);
    if (tok_is_punct(cp)) return "--punct remove";
  }
  if (chars && t->norm.collapse_space && !spaces_collapsed(s, len)) return "--whitespace collapse";
  for (size_t k = 0; !chars && len > 1 && k < len;) { /* "aɪ ": a space an editor left */
    int32_t cp;
    k += tok_utf8_next(s + k, len - k, &cp);
    if (tok_is_space(cp)) return "white space, which no phoneme holds";
  }
  return NULL;
}

/* chars with a vocab file: the symbols the normalized text never holds keep ids that are never
 * produced (kept as written, as a Hugging Face tokenizer's normalizer leaves its vocab): why gets
 * "path: N symbols can never match ...: 'A' (line 6, --case fold), ...", the first few named.
 * Phonemes: the clause marks, under punct remove. */
static void note_unreachable(const fc_tokenizer *t, const char *path, char *why, size_t why_len) {
  if (t->kind == FC_TOK_BPE || !why_len) return;
  size_t n = 0;
  char list[320];
  size_t o = 0;
  list[0] = 0;
  for (size_t i = 0; i < t->vocab.n; i++) {
    const char *s = t->vocab.syms[i], *by;
    int special = 0;
    for (int k = 0; k < SP_COUNT; k++) special |= t->special_ids[k] == (int32_t)i;
    if (special || !(by = unreachable_by(t, s))) continue; /* specials never match anyway */
    if (n++ >= 6) continue;
    char q[64], name[72];
    const unsigned c0 = (unsigned char)s[0];
    if (s[1] == 0 && (c0 < 0x20 || c0 == 0x7F)) /* a control character by its number */
      snprintf(name, sizeof name, "U+%04X", c0);
    else if (fc_quote_name(s, q, sizeof q) == strlen(s))
      snprintf(name, sizeof name, "'%s'", q);
    else /* in double quotes with C escapes, as names are: no escape reaches a terminal */
      snprintf(name, sizeof name, "%s", q);
    int w = snprintf(list + o, sizeof list - o, "%s%s (line %zu, %s)", n > 1 ? ", " : "", name,
                     i + 1, by);
    if (w > 0) o = o + (size_t)w < sizeof list ? o + (size_t)w : sizeof list - 1;
  }
  if (n)
    tok_set_why(why, why_len,
                "%s: %zu symbol%s can never match the normalized text (kept as written, as a "
                "Hugging Face tokenizer keeps its vocab: %s never produced): %s%s",
                FC_WHY_NAME(path), n, n == 1 ? "" : "s", n == 1 ? "its id is" : "their ids are",
                list, n > 6 ? ", ..." : "");
}

int fc_tokenizer_create(const fc_tok_opts *o, fc_tokenizer **out, char *why, size_t why_len) {
  FC_ARGS_WHY(o, out);
  int rc = 0;
  *out = NULL;
  if (why && why_len) why[0] = 0; /* success: a warning, or nothing */
  char note[320] = "";
  fc_tokenizer *t = fc_calloc(1, sizeof *t);
  if (!t) return ENOMEM;
  fc_tok_opts d;
  fc_tok_opts_init(&d, o->kind);
  t->kind = o->kind;
  t->norm = o->norm_set ? o->norm : d.norm;
  t->add_bos = o->add_bos;
  t->add_eos = o->add_eos;
  t->strict = o->strict;
  t->dtype_opt = o->dtype;
  const char *sp_opt[SP_COUNT] = {o->pad, o->unk, o->bos, o->eos};
  for (int i = 0; i < SP_COUNT; i++) {
    const char *s = sp_opt[i] ? sp_opt[i] : special_defaults[i];
    if (!*s) { /* tokenize --pad "$PAD" with PAD unset: the tool says so in its options' names */
      tok_set_why(why, why_len, "the %s symbol is empty (%s \"\"; NULL gives the default %s)",
                  special_keys[i], special_keys[i], special_defaults[i]);
      rc = FC_ECONFIG;
      goto out;
    }
    if (strpbrk(s, "\r\n") || !fc_utf8_valid(s, strlen(s))) { /* a vocab line holds no CR */
      tok_set_why(why, why_len, "the %s symbol must be one line of UTF-8", special_keys[i]);
      rc = FC_ECONFIG;
      goto out;
    }
    if (!(t->specials[i] = fc_strdup(s))) {
      rc = ENOMEM;
      goto out;
    }
  }
  if ((unsigned)t->kind > FC_TOK_BPE) {
    tok_set_why(why, why_len, "unknown tokenizer kind %d", (int)t->kind);
    rc = FC_ECONFIG;
    goto out;
  }
  if (t->kind == FC_TOK_BPE) {
    /* its ids and special tokens are the tokenizer.json's: a special symbol would be ignored */
    if (!o->tokenizer_json || o->vocab_path || o->build_vocab || o->add_bos || o->add_eos ||
        o->pad || o->unk || o->bos || o->eos) {
      tok_set_why(why, why_len,
                  "bpe takes tokenizer_json and none of vocab_path, build_vocab, add_bos, add_eos, "
                  "pad, unk, bos, eos (its special tokens are the tokenizer.json's)");
      rc = FC_ECONFIG;
      goto out;
    }
    if ((rc = read_file(o->tokenizer_json, &t->vocab_text, &t->vocab_text_len))) {
      tok_set_why(why, why_len, "%s: %s", FC_WHY_NAME(o->tokenizer_json), strerror(rc));
      goto out;
    }
    char sub[400];
    if ((rc = tok_bpe_load(t->vocab_text, t->vocab_text_len, &t->bpe, sub, sizeof sub))) {
      tok_set_why(why, why_len, "%s: %s", FC_WHY_NAME(o->tokenizer_json), sub);
      goto out;
    }
    t->vocab_size = tok_bpe_vocab_size(t->bpe);
    if (!(rc = pick_dtype(t, why, why_len)) && !(rc = make_config(t, why, why_len))) t->ready = 1;
    goto out;
  }
  if (t->kind == FC_TOK_PHONEMES) {
    if (!(t->lang = fc_strdup(o->lang ? o->lang : "en-us"))) {
      rc = ENOMEM;
      goto out;
    }
    /* de, de-DE and German select one voice: the config records its one name */
    char canon[64];
    if ((rc = tok_espeak_init(t->lang, canon, sizeof canon, &t->espeak_version, why, why_len)))
      goto out;
    if (why_len) { /* a note (a voice of a related language): the first line of what is said */
      snprintf(note, sizeof note, "%s", why);
      why[0] = 0;
    }
    if (strcmp(canon, t->lang) != 0) {
      free(t->lang);
      if (!(t->lang = fc_strdup(canon))) {
        rc = ENOMEM;
        goto out;
      }
    }
  }
  if (!!o->vocab_path == !!o->build_vocab) {
    tok_set_why(why, why_len, "%s takes exactly one of vocab_path and build_vocab",
                kind_names[t->kind]);
    rc = FC_ECONFIG;
    goto out;
  }
  if (o->vocab_path) {
    char *data = NULL;
    size_t len = 0;
    if ((rc = read_file(o->vocab_path, &data, &len))) {
      tok_set_why(why, why_len, "%s: %s", FC_WHY_NAME(o->vocab_path), strerror(rc));
      goto out;
    }
    char sub[400];
    /* chars: the symbols match the normalized text, so they are normalized the same way (an NFD
     * vocab would otherwise never match); phonemes match espeak-ng's IPA, which NFKC would change
     * (U+02B0 to h) */
    int nfkc = t->kind == FC_TOK_CHARS && t->norm.unicode == FC_UNICODE_NFKC;
    rc = tok_vocab_parse(&t->vocab, data, len, nfkc, sub, sizeof sub);
    free(data);
    if (rc) {
      tok_set_why(why, why_len, "%s:%s", FC_WHY_NAME(o->vocab_path), sub);
      goto out;
    }
    rc = finish_symbols(t, why, why_len);
    if (!rc) note_unreachable(t, o->vocab_path, why, why_len);
  }
out:
  if (rc) {
    fc_tokenizer_free(t);
    return rc;
  }
  if (note[0]) {
    char rest[1024];
    snprintf(rest, sizeof rest, "%s", why);
    snprintf(why, why_len, "%s%s%s", note, rest[0] ? "\n" : "", rest);
  }
  *out = t;
  return 0;
}

void fc_tokenizer_free(fc_tokenizer *t) {
  if (!t) return;
  for (int i = 0; i < SP_COUNT; i++) free(t->specials[i]);
  tok_vocab_free(&t->vocab);
  tok_bpe_free(t->bpe);
  free(t->lang);
  free(t->vocab_text);
  free(t->config);
  tok_phcache_free(t->phcache);
  free(t);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int fc_tokenizer_build_vocab(fc_tokenizer *t, const char *const *syms, size_t n) {
  FC_ARGS(t, syms || !n);
  if (t->kind == FC_TOK_BPE || t->ready) return FC_EBADSTATE;
  const char **sorted = fc_malloc((n ? n : 1) * sizeof *sorted);
  char **out = fc_malloc((n + SP_COUNT) * sizeof *out);
  size_t m = 0;
  int rc = 0;
  if (!sorted || !out) {
    rc = ENOMEM;
    goto fail;
  }
  memcpy(sorted, syms, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, cmp_str);
  for (int i = 0; i < SP_COUNT; i++) {
    int dup = 0;
    for (size_t k = 0; k < m; k++) dup |= strcmp(out[k], t->specials[i]) == 0;
    if (!dup && !(out[m++] = fc_strdup(t->specials[i]))) {
      rc = ENOMEM;
      goto fail;
    }
  }
  for (size_t i = 0; i < n; i++) {
    const char *s = sorted[i];
    if (!*s || strchr(s, '\n') || strchr(s, '\r') || (i > 0 && strcmp(s, sorted[i - 1]) == 0))
      continue;
    int dup = 0;
    for (int k = 0; k < SP_COUNT; k++) dup |= strcmp(s, t->specials[k]) == 0;
    if (dup) { /* the text's symbol would take the special's id and never be produced: <unk> */
      rc = FC_ECONFIG;
      goto fail;
    }
    if (!(out[m++] = fc_strdup(s))) {
      rc = ENOMEM;
      goto fail;
    }
  }
  free(sorted);
  if ((rc = tok_vocab_from_syms(&t->vocab, out, m, NULL, 0))) return rc;
  return finish_symbols(t, NULL, 0);
fail:
  if (out)
    for (size_t k = 0; k < m; k++) free(out[k]);
  free(out);
  free(sorted);
  return rc;
}

int fc_tokenizer_symbols(fc_tokenizer *t, const char *norm, size_t len, fc_tok_symbol_fn cb,
                         void *ud) {
  FC_ARGS(t, norm || !len, cb);
  if (t->kind == FC_TOK_PHONEMES) return tok_phonemize(t->lang, norm, len, cb, ud);
  if (t->kind != FC_TOK_CHARS) return FC_ECONFIG;
  for (size_t i = 0; i < len;) {
    int32_t cp;
    size_t k = tok_utf8_next(norm + i, len - i, &cp);
    cb(norm + i, k, ud);
    i += k;
  }
  return 0;
}

typedef struct phon_ctx {
  const fc_tokenizer *t;
  tok_ids *ids;
  size_t *unknown;
  char *why;
  size_t why_len;
  int rc;
} phon_ctx;

static void phon_symbol(const char *s, size_t len, void *ud) {
  phon_ctx *c = ud;
  if (c->rc) return;
  const fc_tokenizer *t = c->t;
  c->rc = tok_vocab_map(&t->vocab, s, len, t->special_ids[SP_UNK], t->strict, c->ids, c->unknown,
                        c->why, c->why_len);
}

/* fc_tokenizer_encode; phonemes: from reading (rlen bytes, tok_espeak_clauses') when not NULL. */
static int encode(fc_tokenizer *t, const char *norm, size_t len, const char *reading, size_t rlen,
                  int32_t **ids, size_t *n, size_t *unknown, char *why, size_t why_len) {
  *ids = NULL;
  *n = 0;
  if (!t->ready) return FC_EBADSTATE;
  tok_ids v = {0};
  size_t unk = 0;
  int rc = 0;
  if (t->kind == FC_TOK_BPE) {
    rc = tok_bpe_encode(t->bpe, norm, len, &v, why, why_len);
    unk = v.unknown;
    if (!rc && unk && t->strict) {
      const unsigned char *u = (const unsigned char *)v.first_unknown;
      const unsigned c1 = u[0] == 0xC2 && u[1] >= 0x80 && u[1] <= 0x9F ? u[1] : 0;
      if (u[0] < 0x20 || u[0] == 0x7F || c1) /* a control character: by its number alone */
        tok_set_why(why, why_len,
                    "U+%04X (a control character) is not in the tokenizer.json's vocab (%zu such "
                    "character%s)",
                    c1 ? c1 : u[0], unk, unk == 1 ? "" : "s");
      else
        tok_set_why(why, why_len,
                    "'%s' is not in the tokenizer.json's vocab (%zu such character%s)",
                    v.first_unknown, unk, unk == 1 ? "" : "s");
      rc = FC_EUNKNOWN;
    }
  } else {
    if (t->add_bos) rc = tok_ids_push(&v, t->special_ids[SP_BOS]);
    if (!rc && t->kind == FC_TOK_CHARS) {
      rc = tok_vocab_map(&t->vocab, norm, len, t->special_ids[SP_UNK], t->strict, &v, &unk, why,
                         why_len);
    } else if (!rc) {
      phon_ctx c = {t, &v, &unk, why, why_len, 0};
      if (reading)
        tok_phoneme_units(reading, rlen, phon_symbol, &c);
      else
        rc = tok_phonemize(t->lang, norm, len, phon_symbol, &c);
      if (!rc) rc = c.rc;
    }
    if (!rc && t->add_eos) rc = tok_ids_push(&v, t->special_ids[SP_EOS]);
  }
  if (rc) {
    free(v.p);
    return rc;
  }
  *ids = v.p;
  *n = v.len;
  if (unknown) *unknown = unk;
  return 0;
}

int fc_tokenizer_encode(fc_tokenizer *t, const char *norm, size_t len, int32_t **ids, size_t *n,
                        size_t *unknown, char *why, size_t why_len) {
  FC_ARGS_WHY(t, norm || !len, ids, n);
  return encode(t, norm, len, NULL, 0, ids, n, unknown, why, why_len);
}

int tok_tokenizer_reading(const fc_tokenizer *t, const char *norm, size_t len, tok_buf *out) {
  return t->kind == FC_TOK_PHONEMES ? tok_espeak_clauses(t->lang, norm, len, out) : FC_ECONFIG;
}

int tok_tokenizer_encode_reading(fc_tokenizer *t, const char *reading, size_t rlen, int32_t **ids,
                                 size_t *n, size_t *unknown, char *why, size_t why_len) {
  if (t->kind != FC_TOK_PHONEMES) return FC_ECONFIG;
  return encode(t, NULL, 0, reading, rlen, ids, n, unknown, why, why_len);
}

tok_phcache *tok_tokenizer_phcache(const fc_tokenizer *t) { return t->phcache; }

void tok_tokenizer_set_phcache(fc_tokenizer *t, tok_phcache *c) {
  if (t->phcache != c) tok_phcache_free(t->phcache);
  t->phcache = c;
}

const fc_tok_norm *fc_tokenizer_norm(const fc_tokenizer *t) {
  FC_ARGS_OR(NULL, t);
  return &t->norm;
}

int fc_tokenizer_config(const fc_tokenizer *t, const char **json, size_t *len, fc_digest *digest) {
  FC_ARGS(t);
  if (!t->ready) return FC_EBADSTATE;
  if (json) *json = t->config;
  if (len) *len = t->config_len;
  if (digest) *digest = t->digest;
  return 0;
}

fc_tok_kind fc_tokenizer_kind(const fc_tokenizer *t) {
  FC_ARGS_OR((fc_tok_kind)-1, t);
  return t->kind;
}
uint32_t fc_tokenizer_vocab_size(const fc_tokenizer *t) {
  FC_ARGS_OR(0, t);
  return t->vocab_size;
}
int fc_tokenizer_dtype(const fc_tokenizer *t) {
  FC_ARGS_OR(0, t);
  return t->dtype;
}

int fc_tokenizer_vocab_text(const fc_tokenizer *t, const char **text, size_t *len) {
  FC_ARGS(t, text, len);
  if (!t->ready) return FC_EBADSTATE;
  *text = t->vocab_text;
  *len = t->vocab_text_len;
  return 0;
}

int fc_tokenizer_export_vocab(const fc_tokenizer *t, const char *path) {
  FC_ARGS(t, path);
  const char *text;
  size_t len;
  int rc = fc_tokenizer_vocab_text(t, &text, &len);
  return rc ? rc : fc_outfile_write(path, text, len);
}
