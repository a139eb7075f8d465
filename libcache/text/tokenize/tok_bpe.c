/* featcache — BPE from a Hugging Face tokenizer.json, giving the ids of tokenizers' encode(text)
 * (add_special_tokens=True).
 *
 * Supported: model BPE (merges as "a b" strings or [a, b] pairs, unk_token, fuse_unk,
 * byte_fallback, continuing_subword_prefix, end_of_word_suffix, ignore_merges; no dropout);
 * normalizers NFC/NFD/NFKC/NFKD/Lowercase and Sequences of them; pre-tokenizers ByteLevel (GPT-2
 * regex), Whitespace (\w+|[^\w\s]+), WhitespaceSplit and Sequences of them; added tokens
 * (leftmost-longest, single_word, lstrip, rstrip, normalized); post-processors ByteLevel,
 * TemplateProcessing (single), RobertaProcessing and BertProcessing. Anything else is refused with FC_ETOKENIZER rather than giving
 * different ids. This file reads the tokenizer.json; tok_bpe_encode.c encodes text with it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libcache/text/tokenize/tok_bpe.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"

#define FAIL(code, ...)                     \
  do {                                      \
    tok_set_why(why, why_len, __VA_ARGS__); \
    rc = (code);                            \
    goto out;                               \
  } while (0)

static void byte_level_table(tok_bpe *b) {
  int n = 0;
  for (int c = 0; c < 256; c++) {
    int cp = c;
    int printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
    if (!printable) cp = 256 + n++;
    b->byte_chars_len[c] = (uint8_t)tok_utf8_encode(cp, b->byte_chars[c]);
  }
}

static int parse_normalizer(tok_bpe *b, json_t *n, char *why, size_t why_len) {
  int rc = 0;
  if (!n || json_is_null(n)) return 0;
  const char *type = json_string_value(json_object_get(n, "type"));
  if (!type) FAIL(FC_ETOKENIZER, "normalizer without a type");
  if (strcmp(type, "Sequence") == 0) {
    json_t *list = json_object_get(n, "normalizers");
    size_t i;
    json_t *x;
    if (!json_is_array(list)) FAIL(FC_ETOKENIZER, "normalizer Sequence without normalizers");
    json_array_foreach(list, i, x) if ((rc = parse_normalizer(b, x, why, why_len))) goto out;
    return 0;
  }
  int k = strcmp(type, "NFC") == 0         ? NORM_NFC
          : strcmp(type, "NFD") == 0       ? NORM_NFD
          : strcmp(type, "NFKC") == 0      ? NORM_NFKC
          : strcmp(type, "NFKD") == 0      ? NORM_NFKD
          : strcmp(type, "Lowercase") == 0 ? NORM_LOWER
                                           : 0;
  if (!k) FAIL(FC_ETOKENIZER, "normalizer %s is not supported", type);
  if (b->nnorm == MAX_STEPS) FAIL(FC_ETOKENIZER, "too many normalizers");
  b->norm[b->nnorm++] = k;
out:
  return rc;
}

static int parse_pretok(tok_bpe *b, json_t *p, char *why, size_t why_len) {
  int rc = 0;
  if (!p || json_is_null(p)) return 0;
  const char *type = json_string_value(json_object_get(p, "type"));
  if (!type) FAIL(FC_ETOKENIZER, "pre_tokenizer without a type");
  if (strcmp(type, "Sequence") == 0) {
    json_t *list = json_object_get(p, "pretokenizers");
    size_t i;
    json_t *x;
    if (!json_is_array(list)) FAIL(FC_ETOKENIZER, "pre_tokenizer Sequence without pretokenizers");
    json_array_foreach(list, i, x) if ((rc = parse_pretok(b, x, why, why_len))) goto out;
    return 0;
  }
  int k = strcmp(type, "ByteLevel") == 0         ? PRE_BYTELEVEL
          : strcmp(type, "Whitespace") == 0      ? PRE_WHITESPACE
          : strcmp(type, "WhitespaceSplit") == 0 ? PRE_WSSPLIT
                                                 : 0;
  if (!k) FAIL(FC_ETOKENIZER, "pre_tokenizer %s is not supported", type);
  if (b->npre == MAX_STEPS) FAIL(FC_ETOKENIZER, "too many pre_tokenizers");
  json_t *aps = json_object_get(p, "add_prefix_space"), *ur = json_object_get(p, "use_regex");
  b->pre_prefix_space[b->npre] = aps ? json_is_true(aps) : 1;
  b->pre_use_regex[b->npre] = ur ? json_is_true(ur) : 1;
  b->pre[b->npre++] = k;
out:
  return rc;
}

static int parse_model(tok_bpe *b, json_t *m, char *why, size_t why_len) {
  int rc = 0;
  char *tmp = NULL;
  const char *type = json_string_value(json_object_get(m, "type"));
  if (!json_is_object(m)) FAIL(FC_ETOKENIZER, "no model");
  if (type && strcmp(type, "BPE") != 0)
    FAIL(FC_ETOKENIZER, "model %s is not supported (BPE only)", type);
  json_t *drop = json_object_get(m, "dropout");
  if (drop && !json_is_null(drop) && json_number_value(drop) != 0)
    FAIL(FC_ETOKENIZER, "BPE dropout is random; featcache needs deterministic ids");
  json_t *vocab = json_object_get(m, "vocab"), *merges = json_object_get(m, "merges");
  if (!json_is_object(vocab)) FAIL(FC_ETOKENIZER, "model.vocab is not an object");
  if (!json_is_array(merges)) FAIL(FC_ETOKENIZER, "model.merges is not an array");
  const char *key;
  json_t *val;
  json_object_foreach(vocab, key, val) {
    if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) > INT32_MAX)
      FAIL(FC_ETOKENIZER, "model.vocab[\"%s\"] is not an id", key);
    int32_t id = (int32_t)json_integer_value(val);
    int r = tok_map_put(&b->vocab, key, strlen(key), id, NULL);
    if (r == ENOMEM) FAIL(ENOMEM, "out of memory");
    if ((uint32_t)id + 1 > b->vocab_size) b->vocab_size = (uint32_t)id + 1;
  }
  const char *s;
  if ((s = json_string_value(json_object_get(m, "continuing_subword_prefix"))))
    b->prefix = fc_strdup(s), b->prefix_len = strlen(s);
  if ((s = json_string_value(json_object_get(m, "end_of_word_suffix"))))
    b->suffix = fc_strdup(s), b->suffix_len = strlen(s);
  b->fuse_unk = json_is_true(json_object_get(m, "fuse_unk"));
  b->byte_fallback = json_is_true(json_object_get(m, "byte_fallback"));
  b->ignore_merges = json_is_true(json_object_get(m, "ignore_merges"));
  b->unk_id = -1;
  if ((s = json_string_value(json_object_get(m, "unk_token"))) &&
      !tok_bpe_lookup(b, s, strlen(s), &b->unk_id))
    b->unk_missing = 1;
  for (int c = 0; c < 256; c++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", c);
    if (!tok_bpe_lookup(b, name, 6, &b->byte_ids[c])) b->byte_ids[c] = -1;
  }
  size_t i;
  json_t *mg;
  json_array_foreach(merges, i, mg) {
    const char *a, *bb;
    size_t alen, blen;
    if (json_is_string(mg)) {
      a = json_string_value(mg);
      const char *sp = strchr(a, ' ');
      if (!sp || strchr(sp + 1, ' ')) FAIL(FC_ETOKENIZER, "merge %zu \"%s\" is not \"a b\"", i, a);
      alen = (size_t)(sp - a);
      bb = sp + 1;
      blen = strlen(bb);
    } else if (json_is_array(mg) && json_array_size(mg) == 2 &&
               json_is_string(json_array_get(mg, 0)) && json_is_string(json_array_get(mg, 1))) {
      a = json_string_value(json_array_get(mg, 0));
      bb = json_string_value(json_array_get(mg, 1));
      alen = json_string_length(json_array_get(mg, 0));
      blen = json_string_length(json_array_get(mg, 1));
    } else {
      FAIL(FC_ETOKENIZER, "merge %zu is neither \"a b\" nor [a, b]", i);
    }
    int32_t ia, ib, inew;
    if (!tok_bpe_lookup(b, a, alen, &ia) || !tok_bpe_lookup(b, bb, blen, &ib))
      FAIL(FC_ETOKENIZER, "merge %zu (%.*s %.*s): a part is not in the vocab", i, (int)alen, a,
           (int)blen, bb);
    size_t skip = b->prefix && blen >= b->prefix_len && memcmp(bb, b->prefix, b->prefix_len) == 0
                      ? b->prefix_len
                      : 0;
    free(tmp);
    if (!(tmp = fc_malloc(alen + blen + 1))) FAIL(ENOMEM, "out of memory");
    memcpy(tmp, a, alen);
    memcpy(tmp + alen, bb + skip, blen - skip);
    if (!tok_bpe_lookup(b, tmp, alen + blen - skip, &inew))
      FAIL(FC_ETOKENIZER, "merge %zu: \"%.*s\" is not in the vocab", i, (int)(alen + blen - skip),
           tmp);
    if (tok_pairs_put(&b->merges, (uint32_t)ia, (uint32_t)ib, (int32_t)i, inew) == ENOMEM)
      FAIL(ENOMEM, "out of memory");
  }
out:
  free(tmp);
  return rc;
}

/* A special token's id the post-processor adds, appended to to. tokenizers emits these ids as they
 * are: a negative or non-integer one would reach the store, and one past the model's vocab must
 * still fit the vocab size that is reported. */
static int post_id(tok_bpe *b, tok_ids *to, const json_t *id, const char *what, const char *name,
                   char *why, size_t why_len) {
  int rc = 0;
  json_int_t v = json_integer_value(id);
  if (!json_is_integer(id) || v < 0 || v >= INT32_MAX)
    FAIL(FC_ETOKENIZER, "%s: special token %s has an invalid id", what, name);
  if ((uint32_t)v + 1 > b->vocab_size) b->vocab_size = (uint32_t)v + 1;
  if (tok_ids_push(to, (int32_t)v)) FAIL(ENOMEM, "out of memory");
out:
  return rc;
}

/* RobertaProcessing and BertProcessing: one sequence is cls, its ids, sep ("cls": ["<s>", 0]; their
 * trim_offsets and add_prefix_space change offsets, no id). */
static int parse_cls_sep(tok_bpe *b, json_t *p, const char *type, char *why, size_t why_len) {
  int rc = 0;
  json_t *cls = json_object_get(p, "cls"), *sep = json_object_get(p, "sep");
  if (json_array_size(cls) != 2 || json_array_size(sep) != 2 ||
      !json_is_string(json_array_get(cls, 0)) || !json_is_string(json_array_get(sep, 0)))
    FAIL(FC_ETOKENIZER, "%s: cls and sep are not [token, id]", type);
  if (!(rc = post_id(b, &b->post_prefix, json_array_get(cls, 1), type, "cls", why, why_len)))
    rc = post_id(b, &b->post_suffix, json_array_get(sep, 1), type, "sep", why, why_len);
out:
  return rc;
}

static int parse_post(tok_bpe *b, json_t *p, char *why, size_t why_len) {
  int rc = 0;
  if (!p || json_is_null(p)) return 0;
  const char *type = json_string_value(json_object_get(p, "type"));
  if (type && strcmp(type, "ByteLevel") == 0) return 0; /* offsets only */
  if (type && (strcmp(type, "RobertaProcessing") == 0 || strcmp(type, "BertProcessing") == 0))
    return parse_cls_sep(b, p, type, why, why_len);
  if (type && strcmp(type, "Sequence") == 0) {
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(p, "processors"), i,
                       x) if ((rc = parse_post(b, x, why, why_len))) goto out;
    return 0;
  }
  if (!type || strcmp(type, "TemplateProcessing") != 0)
    FAIL(FC_ETOKENIZER, "post_processor %s is not supported", type ? type : "(untyped)");
  json_t *single = json_object_get(p, "single"), *specials = json_object_get(p, "special_tokens");
  size_t i;
  json_t *item;
  int seen_seq = 0;
  json_array_foreach(single, i, item) {
    json_t *st = json_object_get(item, "SpecialToken");
    if (json_object_get(item, "Sequence")) {
      seen_seq = 1;
      continue;
    }
    const char *name = json_string_value(json_object_get(st, "id"));
    json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids");
    if (!name || !json_is_array(ids))
      FAIL(FC_ETOKENIZER, "TemplateProcessing: unknown special token");
    size_t k;
    json_t *id;
    json_array_foreach(ids, k, id) {
      rc = post_id(b, seen_seq ? &b->post_suffix : &b->post_prefix, id, "TemplateProcessing", name,
                   why, why_len);
      if (rc) goto out;
    }
  }
out:
  return rc;
}

/* The file's strings reach the message (a type, a vocab key, a merge): its control characters as
 * octal escapes (\033), as the tools quote names, so that no escape sequence from a downloaded
 * tokenizer.json reaches the terminal. Cut short to why_len, as the message was. */
static void why_escape(char *why, size_t why_len) {
  size_t n = strnlen(why, why_len), o = 0;
  char *tmp = fc_malloc(4 * n + 1);
  if (!tmp) return;
  for (size_t k = 0; k < n; k++) {
    unsigned char c = (unsigned char)why[k];
    if (c < 0x20 || c == 0x7f)
      o += (size_t)sprintf(tmp + o, "\\%03o", c);
    else
      tmp[o++] = (char)c;
  }
  tmp[o] = '\0';
  snprintf(why, why_len, "%s", tmp);
  free(tmp);
}

int tok_bpe_load(const char *data, size_t len, tok_bpe **out, char *why, size_t why_len) {
  int rc = 0;
  json_error_t jerr;
  int nomem;
  json_t *root = fc_json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr, &nomem);
  tok_map added_ids = {0}; /* an added token's content -> its index in b->added */
  tok_bpe *b = fc_calloc(1, sizeof *b);
  *out = NULL;
  if (!b || nomem) FAIL(ENOMEM, "out of memory reading tokenizer.json");
  char wide[200]; /* a file in UTF-16 (jansson: "unable to decode byte 0xff") */
  if (!root && tok_wide_text(data, len, 64, "tokenizer.json", wide, sizeof wide))
    FAIL(FC_ETOKENIZER, "%s", wide);
  if (!root && len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) /* jansson: near '<the mark>' */
    FAIL(FC_ETOKENIZER,
         "UTF-8 with a byte-order mark (EF BB BF), which JSON does not allow (Hugging "
         "Face tokenizers refuses it too): remove it: sed -i '1s/^\\xEF\\xBB\\xBF//' FILE");
  if (!root) FAIL(FC_ETOKENIZER, "%d:%d: %s", jerr.line, jerr.column, jerr.text);
  if (!json_is_object(root)) FAIL(FC_ETOKENIZER, "not a JSON object");
  json_t *tr = json_object_get(root, "truncation"), *pad = json_object_get(root, "padding");
  if (tr && !json_is_null(tr))
    FAIL(FC_ETOKENIZER, "truncation is set: featcache stores whole sequences");
  if (pad && !json_is_null(pad)) FAIL(FC_ETOKENIZER, "padding is set: the loader pads batches");
  byte_level_table(b);
  if ((rc = parse_model(b, json_object_get(root, "model"), why, why_len))) goto out;
  if ((rc = parse_normalizer(b, json_object_get(root, "normalizer"), why, why_len))) goto out;
  if ((rc = parse_pretok(b, json_object_get(root, "pre_tokenizer"), why, why_len))) goto out;
  if ((rc = parse_post(b, json_object_get(root, "post_processor"), why, why_len))) goto out;
  json_t *added = json_object_get(root, "added_tokens");
  if (added && !json_is_array(added)) FAIL(FC_ETOKENIZER, "added_tokens is not an array");
  if (json_array_size(added)) {
    b->added = fc_calloc(json_array_size(added), sizeof *b->added);
    if (!b->added) FAIL(ENOMEM, "out of memory");
  }
  /* tokenizers reads the ids of added_tokens only to warn: it adds the tokens in order, each
   * with its content's id in the model's vocab, else its id from an earlier entry of the same
   * content (one token, the later flags), else the next one: the model's vocab size (its number
   * of entries) for the first, then one past the largest added id (or the vocab size while that
   * is below it). The same here, so that a file whose ids disagree gives tokenizers' ids. */
  const size_t model_len =
      json_object_size(json_object_get(json_object_get(root, "model"), "vocab"));
  int64_t max_added = -1;
  size_t i;
  json_t *t;
  json_array_foreach(added, i, t) {
    json_t *c = json_object_get(t, "content"), *id = json_object_get(t, "id");
    if (!json_is_string(c) || !json_is_integer(id) || json_string_length(c) == 0)
      FAIL(FC_ETOKENIZER, "added_tokens[%zu] needs a content and an id", i);
    /* tokenizers refuses the file when an id is not a u32 */
    if (json_integer_value(id) < 0 || json_integer_value(id) > UINT32_MAX)
      FAIL(FC_ETOKENIZER, "added_tokens[%zu] has an invalid id %" JSON_INTEGER_FORMAT, i,
           json_integer_value(id));
    const char *raw = json_string_value(c);
    const size_t raw_len = json_string_length(c);
    int32_t first = -1, tid;
    int r = tok_map_put(&added_ids, raw, raw_len, (int32_t)b->nadded, &first);
    if (r == ENOMEM) FAIL(ENOMEM, "out of memory");
    added_token *a;
    if (r == 1) { /* the same content again: its token, with these flags */
      a = &b->added[first];
      free(a->content);
    } else {
      a = &b->added[b->nadded++];
      if (tok_bpe_lookup(b, raw, raw_len, &tid)) {
        a->id = tid;
      } else {
        int64_t next = max_added < 0                                        ? (int64_t)model_len
                       : (uint64_t)max_added >= model_len || model_len == 0 ? max_added + 1
                                                                            : (int64_t)model_len;
        if (next > INT32_MAX) FAIL(FC_ETOKENIZER, "added_tokens[%zu]: too many ids", i);
        a->id = (int32_t)next;
      }
      if (a->id > max_added) max_added = a->id;
    }
    a->len = raw_len;
    a->content = fc_malloc(a->len + 1);
    if (!a->content) FAIL(ENOMEM, "out of memory");
    memcpy(a->content, raw, a->len + 1);
    a->single_word = json_is_true(json_object_get(t, "single_word"));
    a->lstrip = json_is_true(json_object_get(t, "lstrip"));
    a->rstrip = json_is_true(json_object_get(t, "rstrip"));
    a->normalized = json_is_true(json_object_get(t, "normalized"));
    if (a->normalized && b->nnorm) { /* matched in the normalized text: normalized, as tokenizers */
      tok_buf nt = {0};
      if (tok_bpe_normalize(b, a->content, a->len, &nt)) {
        free(nt.p);
        FAIL(ENOMEM, "out of memory");
      }
      free(a->content);
      a->content = nt.p;
      a->len = nt.len;
    }
    if ((uint32_t)a->id + 1 > b->vocab_size) b->vocab_size = (uint32_t)a->id + 1;
  }
  if (b->vocab_size == 0) FAIL(FC_ETOKENIZER, "the vocab is empty");
  *out = b;
  b = NULL;
out:
  tok_map_free(&added_ids);
  json_decref(root);
  if (b) tok_bpe_free(b);
  if (rc && why && why_len) why_escape(why, why_len);
  return rc;
}

void tok_bpe_free(tok_bpe *b) {
  if (!b) return;
  tok_map_free(&b->vocab);
  tok_pairs_free(&b->merges);
  for (size_t i = 0; i < b->nadded; i++) free(b->added[i].content);
  free(b->added);
  free(b->prefix);
  free(b->suffix);
  free(b->post_prefix.p);
  free(b->post_suffix.p);
  free(b);
}

uint32_t tok_bpe_vocab_size(const tok_bpe *b) { return b->vocab_size; }
