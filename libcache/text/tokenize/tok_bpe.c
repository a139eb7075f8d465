/* featcache — BPE from a Hugging Face tokenizer.json, giving the ids of tokenizers' encode(text)
 * (add_special_tokens=True).
 *
 * Supported: model BPE (merges as "a b" strings or [a, b] pairs, unk_token, fuse_unk,
 * byte_fallback, continuing_subword_prefix, end_of_word_suffix, ignore_merges; no dropout);
 * normalizers NFC/NFD/NFKC/NFKD/Lowercase and Sequences of them; pre-tokenizers ByteLevel (GPT-2
 * regex), Whitespace (\w+|[^\w\s]+), WhitespaceSplit and Sequences of them; added tokens
 * (leftmost-longest, single_word, lstrip, rstrip, normalized); post-processors ByteLevel and
 * TemplateProcessing (single). Anything else is refused with FC_ETOKENIZER rather than giving
 * different ids. The steps follow tokenizers' order: split on non-normalized added tokens,
 * normalize the rest, split on normalized added tokens, pre-tokenize each piece, BPE each word. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"
#include "formats/common/json.h"

enum { PRE_BYTELEVEL = 1, PRE_WHITESPACE, PRE_WSSPLIT };
enum { NORM_NFC = 1, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWER };
#define MAX_STEPS 8

typedef struct added_token {
  char *content;
  size_t len;
  int32_t id;
  int single_word, lstrip, rstrip, normalized;
} added_token;

struct tok_bpe {
  tok_map vocab;
  tok_pairs merges;
  uint32_t vocab_size;
  int32_t unk_id; /* -1: none */
  int unk_missing; /* unk_token named but not in the vocab */
  int fuse_unk, byte_fallback, ignore_merges;
  char *prefix, *suffix;
  size_t prefix_len, suffix_len;
  int npre, pre[MAX_STEPS], pre_prefix_space[MAX_STEPS], pre_use_regex[MAX_STEPS];
  int nnorm, norm[MAX_STEPS];
  added_token *added;
  size_t nadded;
  tok_ids post_prefix, post_suffix;
  int32_t byte_ids[256]; /* byte_fallback <0xXX> ids, -1 when missing */
  char byte_chars[256][3]; /* ByteLevel: byte → UTF-8 of its printable stand-in */
  uint8_t byte_chars_len[256];
};

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

static int lookup(const tok_bpe *b, const char *s, size_t len, int32_t *id) {
  return tok_map_get(&b->vocab, s, len, id);
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
      !lookup(b, s, strlen(s), &b->unk_id))
    b->unk_missing = 1;
  for (int c = 0; c < 256; c++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", c);
    if (!lookup(b, name, 6, &b->byte_ids[c])) b->byte_ids[c] = -1;
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
    if (!lookup(b, a, alen, &ia) || !lookup(b, bb, blen, &ib))
      FAIL(FC_ETOKENIZER, "merge %zu (%.*s %.*s): a part is not in the vocab", i, (int)alen, a,
           (int)blen, bb);
    size_t skip = b->prefix && blen >= b->prefix_len && memcmp(bb, b->prefix, b->prefix_len) == 0
                      ? b->prefix_len
                      : 0;
    free(tmp);
    if (!(tmp = fc_malloc(alen + blen + 1))) FAIL(ENOMEM, "out of memory");
    memcpy(tmp, a, alen);
    memcpy(tmp + alen, bb + skip, blen - skip);
    if (!lookup(b, tmp, alen + blen - skip, &inew))
      FAIL(FC_ETOKENIZER, "merge %zu: \"%.*s\" is not in the vocab", i, (int)(alen + blen - skip),
           tmp);
    if (tok_pairs_put(&b->merges, (uint32_t)ia, (uint32_t)ib, (int32_t)i, inew) == ENOMEM)
      FAIL(ENOMEM, "out of memory");
  }
out:
  free(tmp);
  return rc;
}

static int parse_post(tok_bpe *b, json_t *p, char *why, size_t why_len) {
  int rc = 0;
  if (!p || json_is_null(p)) return 0;
  const char *type = json_string_value(json_object_get(p, "type"));
  if (type && strcmp(type, "ByteLevel") == 0) return 0; /* offsets only */
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
      /* tokenizers emits these ids as they are: a negative or non-integer one would reach the
       * store, and one past the model's vocab must still fit the vocab size that is reported */
      json_int_t v = json_integer_value(id);
      if (!json_is_integer(id) || v < 0 || v >= INT32_MAX)
        FAIL(FC_ETOKENIZER, "TemplateProcessing: special token %s has an invalid id", name);
      if ((uint32_t)v + 1 > b->vocab_size) b->vocab_size = (uint32_t)v + 1;
      if (tok_ids_push(seen_seq ? &b->post_suffix : &b->post_prefix, (int32_t)v))
        FAIL(ENOMEM, "out of memory");
    }
  }
out:
  return rc;
}

static int normalize(const tok_bpe *b, const char *s, size_t len, tok_buf *out);

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
      if (lookup(b, raw, raw_len, &tid)) {
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
      if (normalize(b, a->content, a->len, &nt)) {
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

/* ---- BPE of one word ------------------------------------------------------------------------- */
typedef struct sym {
  int32_t id;
} sym;

/* Merge the lowest-ranked adjacent pair, leftmost first, until none applies: tokenizers' order.
 * A word of a few symbols is scanned for its best pair at each merge; a longer one (a URL, a run
 * of letters with no space: the scan is quadratic, 23 s for 64,000 letters) keeps its pairs in a
 * heap ordered by (rank, position), as tokenizers does, and skips an entry whose pair has changed
 * since it was pushed. Both give the same merges: the heap's least entry still standing is the
 * scan's pick. */
enum { MERGE_SCAN_MAX = 48 };

static int merge_scan(const tok_bpe *b, tok_ids *syms) {
  while (syms->len > 1) {
    int32_t best = INT32_MAX, best_id = 0, r, nid;
    size_t at = 0;
    for (size_t i = 0; i + 1 < syms->len; i++)
      if (tok_pairs_get(&b->merges, (uint32_t)syms->p[i], (uint32_t)syms->p[i + 1], &r, &nid) &&
          r < best)
        best = r, best_id = nid, at = i;
    if (best == INT32_MAX) break;
    syms->p[at] = best_id;
    memmove(syms->p + at + 1, syms->p + at + 2, (syms->len - at - 2) * sizeof *syms->p);
    syms->len--;
  }
  return 0;
}

typedef struct merge_entry {
  int32_t rank, pos, id;
} merge_entry;

static int entry_less(const merge_entry *x, const merge_entry *y) {
  return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void heap_push(merge_entry *h, size_t *n, merge_entry e) {
  size_t i = (*n)++;
  while (i > 0 && entry_less(&e, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = e;
}

static merge_entry heap_pop(merge_entry *h, size_t *n) {
  merge_entry top = h[0], last = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && entry_less(&h[c + 1], &h[c])) c++;
    if (!entry_less(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = last;
  return top;
}

/* Push the pair starting at symbol `at` (next[at] its right neighbour), if a merge takes it. */
static void pair_push(const tok_bpe *b, const int32_t *id, const int32_t *next, int32_t at,
                      merge_entry *h, size_t *n) {
  int32_t r, nid;
  if (at >= 0 && next[at] >= 0 &&
      tok_pairs_get(&b->merges, (uint32_t)id[at], (uint32_t)id[next[at]], &r, &nid))
    heap_push(h, n, (merge_entry){r, at, nid});
}

static int merge_heap(const tok_bpe *b, tok_ids *syms) {
  size_t len = syms->len;
  int32_t *id = syms->p, *next = fc_malloc(2 * len * sizeof *next);
  /* each merge pushes at most two entries: len - 1 at the start, 2 per merge after */
  merge_entry *h = fc_malloc(3 * len * sizeof *h);
  if (!next || !h) {
    free(next);
    free(h);
    return ENOMEM;
  }
  int32_t *prev = next + len;
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    prev[i] = (int32_t)i - 1;
    next[i] = i + 1 < len ? (int32_t)i + 1 : -1;
  }
  for (size_t i = 0; i + 1 < len; i++) pair_push(b, id, next, (int32_t)i, h, &n);
  while (n) {
    merge_entry e = heap_pop(h, &n);
    int32_t r, nid, nx = next[e.pos];
    /* gone (merged into its left neighbour: prev -2), at the end, or its pair changed */
    if (prev[e.pos] == -2 || nx < 0 ||
        !tok_pairs_get(&b->merges, (uint32_t)id[e.pos], (uint32_t)id[nx], &r, &nid) ||
        r != e.rank || nid != e.id)
      continue;
    id[e.pos] = nid;
    next[e.pos] = next[nx];
    if (next[nx] >= 0) prev[next[nx]] = e.pos;
    prev[nx] = -2;
    pair_push(b, id, next, prev[e.pos], h, &n);
    pair_push(b, id, next, e.pos, h, &n);
  }
  size_t o = 0;
  for (int32_t i = 0; i >= 0; i = next[i]) id[o++] = id[i];
  syms->len = o;
  free(next);
  free(h);
  return 0;
}

static int bpe_word(const tok_bpe *b, const char *w, size_t len, tok_ids *out, char *why,
                    size_t why_len) {
  int32_t id;
  if (b->ignore_merges && lookup(b, w, len, &id)) return tok_ids_push(out, id);
  tok_ids syms = {0};
  tok_buf tmp = {0};
  /* An unknown character's unk is held back, as tokenizers holds it, until a character of the
   * vocab comes (then the unk, then it) or the word ends: a byte-fallback character's bytes go
   * before it, and a fused unk goes on across them. */
  int rc = 0, unk_pending = 0;
  for (size_t i = 0; i < len && !rc;) {
    int32_t cp;
    size_t k = tok_utf8_next(w + i, len - i, &cp);
    tmp.len = 0;
    if (i > 0 && b->prefix) rc = tok_buf_put(&tmp, b->prefix, b->prefix_len);
    if (!rc) rc = tok_buf_put(&tmp, w + i, k);
    if (!rc && i + k == len && b->suffix) rc = tok_buf_put(&tmp, b->suffix, b->suffix_len);
    if (rc) break;
    if (lookup(b, tmp.p, tmp.len, &id)) {
      if (unk_pending) rc = tok_ids_push(&syms, b->unk_id);
      unk_pending = 0;
      if (!rc) rc = tok_ids_push(&syms, id);
    } else {
      int done = 0;
      if (b->byte_fallback) {
        int all = 1;
        for (size_t j = 0; j < k; j++) all &= b->byte_ids[(unsigned char)w[i + j]] >= 0;
        if (all) {
          for (size_t j = 0; j < k && !rc; j++)
            rc = tok_ids_push(&syms, b->byte_ids[(unsigned char)w[i + j]]);
          done = 1;
        }
      }
      if (!done && b->unk_missing) {
        tok_set_why(why, why_len, "'%.*s' is not in the vocab and unk_token is not either", (int)k,
                    w + i);
        rc = FC_EUNKNOWN;
      } else if (!done && b->unk_id >= 0) {
        if (unk_pending && !b->fuse_unk) rc = tok_ids_push(&syms, b->unk_id);
        unk_pending = 1;
      } /* no unk token: tokenizers drops the character */
      if (!done && !rc && out->unknown++ == 0 && k < sizeof out->first_unknown) {
        memcpy(out->first_unknown, w + i, k);
        out->first_unknown[k] = '\0';
      }
    }
    i += k;
  }
  if (!rc && unk_pending) rc = tok_ids_push(&syms, b->unk_id);
  if (!rc) rc = syms.len > MERGE_SCAN_MAX ? merge_heap(b, &syms) : merge_scan(b, &syms);
  for (size_t i = 0; i < syms.len && !rc; i++) rc = tok_ids_push(out, syms.p[i]);
  free(syms.p);
  free(tmp.p);
  return rc;
}

/* ---- pre-tokenizers -------------------------------------------------------------------------- */
static int pretok(const tok_bpe *b, int level, const char *s, size_t len, tok_ids *out, char *why,
                  size_t why_len);

static size_t cp_at(const char *s, size_t len, size_t i, int32_t *cp) {
  return tok_utf8_next(s + i, len - i, cp);
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t gpt2_match(const char *s, size_t len, size_t i) {
  static const char *const contr[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
  if (s[i] == '\'')
    for (int k = 0; k < 7; k++) {
      size_t l = strlen(contr[k]);
      if (i + l <= len && memcmp(s + i, contr[k], l) == 0) return l;
    }
  int32_t c;
  size_t j = i, k;
  for (int cls = 0; cls < 3; cls++) {
    j = i;
    if (s[j] == ' ' && j + 1 < len) j++;
    for (int pass = 0; pass < 2; pass++) {
      size_t e = j;
      while (e < len) {
        k = cp_at(s, len, e, &c);
        int in = cls == 0   ? tok_is_letter(c)
                 : cls == 1 ? tok_is_number(c)
                            : !tok_is_space(c) && !tok_is_letter(c) && !tok_is_number(c);
        if (!in) break;
        e += k;
      }
      if (e > j) return e - i;
      if (j == i) break;
      j = i; /* the optional space did not lead to a match: try without it */
    }
  }
  /* white space */
  size_t e = i, last = i;
  while (e < len) {
    k = cp_at(s, len, e, &c);
    if (!tok_is_space(c)) break;
    last = e;
    e += k;
  }
  if (e == i) return cp_at(s, len, i, &c); /* cannot happen: every class is covered */
  if (e == len) return e - i; /* \s+(?!\S) at the end */
  if (last > i) return last - i; /* \s+(?!\S): leave one for the next word */
  return e - i; /* \s+ */
}

static int byte_level(const tok_bpe *b, int level, const char *s, size_t len, tok_ids *out,
                      char *why, size_t why_len) {
  tok_buf pre = {0}, m = {0};
  int rc = 0;
  if (b->pre_prefix_space[level] && (len == 0 || s[0] != ' ')) {
    if ((rc = tok_buf_put(&pre, " ", 1)) || (rc = tok_buf_put(&pre, s, len))) goto out;
    s = pre.p;
    len = pre.len;
  }
  for (size_t i = 0; i < len && !rc;) {
    size_t l = b->pre_use_regex[level] ? gpt2_match(s, len, i) : len - i;
    m.len = 0;
    for (size_t j = i; j < i + l && !rc; j++)
      rc = tok_buf_put(&m, b->byte_chars[(unsigned char)s[j]],
                       b->byte_chars_len[(unsigned char)s[j]]);
    if (!rc) rc = pretok(b, level + 1, m.p, m.len, out, why, why_len);
    i += l;
  }
out:
  free(pre.p);
  free(m.p);
  return rc;
}

static int pretok(const tok_bpe *b, int level, const char *s, size_t len, tok_ids *out, char *why,
                  size_t why_len) {
  if (len == 0) return 0;
  if (level == b->npre) return bpe_word(b, s, len, out, why, why_len);
  if (b->pre[level] == PRE_BYTELEVEL) return byte_level(b, level, s, len, out, why, why_len);
  int rc = 0;
  for (size_t i = 0; i < len && !rc;) {
    int32_t c;
    size_t k = cp_at(s, len, i, &c);
    if (tok_is_space(c)) {
      i += k;
      continue;
    }
    size_t e = i;
    int word = tok_is_word(c);
    while (e < len) {
      k = cp_at(s, len, e, &c);
      if (tok_is_space(c)) break;
      if (b->pre[level] == PRE_WHITESPACE && tok_is_word(c) != word) break;
      e += k;
    }
    rc = pretok(b, level + 1, s + i, e - i, out, why, why_len);
    i = e;
  }
  return rc;
}

/* ---- normalizer -------------------------------------------------------------------------------- */
static int normalize(const tok_bpe *b, const char *s, size_t len, tok_buf *out) {
  out->len = 0;
  int rc = tok_buf_put(out, s, len);
  for (int k = 0; k < b->nnorm && !rc; k++) {
    if (b->norm[k] == NORM_LOWER) {
      /* tokenizers' Lowercase: each character's char::to_lowercase on its own — simple mappings
       * plus İ → i̇ — so a word-final Σ is σ (str::to_lowercase's final-sigma rule looks at the
       * characters around it; char::to_lowercase does not) */
      tok_buf t = {0};
      for (size_t i = 0; i < out->len && !rc;) {
        int32_t c;
        size_t l = tok_utf8_next(out->p + i, out->len - i, &c);
        char e[4];
        if (c == 0x130)
          rc = tok_buf_put(&t, "i\xCC\x87", 3);
        else
          rc = tok_buf_put(&t, e, tok_utf8_encode(utf8proc_tolower(c), e));
        i += l;
      }
      free(out->p);
      *out = t;
      if (!out->p) rc = rc ? rc : tok_buf_put(out, "", 0);
      continue;
    }
    int flags = UTF8PROC_STABLE;
    if (b->norm[k] == NORM_NFC || b->norm[k] == NORM_NFKC)
      flags |= UTF8PROC_COMPOSE;
    else
      flags |= UTF8PROC_DECOMPOSE;
    if (b->norm[k] == NORM_NFKC || b->norm[k] == NORM_NFKD) flags |= UTF8PROC_COMPAT;
    char *d;
    size_t n;
    if ((rc = tok_utf8_map(out->p, out->len, flags, &d, &n))) return rc;
    free(out->p);
    out->p = d;
    out->len = out->cap = n;
    out->cap++;
  }
  return rc;
}

/* ---- added tokens ------------------------------------------------------------------------------- */
static int is_wordchar_before(const char *s, size_t i) {
  if (i == 0) return 0;
  size_t j = i - 1;
  while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
  int32_t c;
  tok_utf8_next(s + j, i - j, &c);
  return tok_is_word(c);
}

/* Leftmost-longest match of the added tokens with normalized == which; returns 1 and the span. As
 * tokenizers' matcher: at the leftmost position where any matches, the longest; a single_word one
 * inside a word is dropped and the search goes on after it (never a shorter one in its span). */
static int find_added(const tok_bpe *b, int which, const char *s, size_t len, size_t from,
                      size_t *ms, size_t *me, int32_t *id) {
  for (size_t i = from; i < len; i++) {
    if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
    const added_token *best = NULL;
    for (size_t k = 0; k < b->nadded; k++) {
      const added_token *a = &b->added[k];
      if (a->normalized != which || !a->len || a->len > len - i || (best && a->len <= best->len))
        continue;
      if (memcmp(s + i, a->content, a->len) == 0) best = a;
    }
    if (!best) continue;
    if (best->single_word) {
      int32_t c = 0;
      if (is_wordchar_before(s, i) ||
          (i + best->len < len &&
           (tok_utf8_next(s + i + best->len, len - i - best->len, &c), tok_is_word(c)))) {
        i += best->len - 1; /* dropped: the search resumes after it */
        continue;
      }
    }
    /* lstrip / rstrip take the white space (Unicode's, a code point at a time) around it */
    size_t st = i, en = i + best->len;
    while (best->lstrip && st > from) {
      size_t j = st - 1;
      while (j > from && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
      int32_t c = 0;
      tok_utf8_next(s + j, st - j, &c);
      if (!tok_is_space(c)) break;
      st = j;
    }
    while (best->rstrip && en < len) {
      int32_t c = 0;
      size_t l = tok_utf8_next(s + en, len - en, &c);
      if (!tok_is_space(c)) break;
      en += l;
    }
    *ms = st;
    *me = en;
    *id = best->id;
    return 1;
  }
  return 0;
}

static int encode_normalized(const tok_bpe *b, const char *s, size_t len, tok_ids *out, char *why,
                             size_t why_len) {
  size_t from = 0, ms, me;
  int32_t id;
  int rc = 0;
  while (!rc && from < len) {
    if (!find_added(b, 1, s, len, from, &ms, &me, &id)) ms = me = len, id = -1;
    rc = pretok(b, 0, s + from, ms - from, out, why, why_len);
    if (!rc && id >= 0) rc = tok_ids_push(out, id);
    from = me;
  }
  return rc;
}

int tok_bpe_encode(const tok_bpe *b, const char *s, size_t len, tok_ids *out, char *why,
                   size_t why_len) {
  size_t from = 0, ms, me;
  int32_t id;
  int rc = 0;
  tok_buf norm = {0};
  for (size_t i = 0; i < b->post_prefix.len && !rc; i++)
    rc = tok_ids_push(out, b->post_prefix.p[i]);
  while (!rc && from < len) {
    if (!find_added(b, 0, s, len, from, &ms, &me, &id)) ms = me = len, id = -1;
    if (ms > from) {
      rc = normalize(b, s + from, ms - from, &norm);
      if (!rc) rc = encode_normalized(b, norm.p, norm.len, out, why, why_len);
    }
    if (!rc && id >= 0) rc = tok_ids_push(out, id);
    from = me;
  }
  for (size_t i = 0; i < b->post_suffix.len && !rc; i++)
    rc = tok_ids_push(out, b->post_suffix.p[i]);
  free(norm.p);
  return rc;
}
