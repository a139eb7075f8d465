/* featcache — BPE encoding: text to the ids of tokenizers' encode(text) for a tokenizer.json that
 * tok_bpe.c loaded. The steps follow tokenizers' order: split on non-normalized added tokens,
 * normalize the rest, split on normalized added tokens, pre-tokenize each piece, BPE each word. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "libcache/text/tokenize/tok_bpe.h"
#include "formats/common/alloc.h"

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
  if (b->ignore_merges && tok_bpe_lookup(b, w, len, &id)) return tok_ids_push(out, id);
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
    if (tok_bpe_lookup(b, tmp.p, tmp.len, &id)) {
      if (unk_pending) rc = tok_ids_push(&syms, b->unk_id);
      unk_pending = 0;
      if (!rc) rc = tok_ids_push(&syms, id);
    } else {
      int done = 0;
      if (b->byte_fallback) { /* the bytes of what was looked up, as tokenizers takes them: the
                               * continuing_subword_prefix and end_of_word_suffix with the character */
        int all = 1;
        for (size_t j = 0; j < tmp.len; j++) all &= b->byte_ids[(unsigned char)tmp.p[j]] >= 0;
        if (all) {
          for (size_t j = 0; j < tmp.len && !rc; j++)
            rc = tok_ids_push(&syms, b->byte_ids[(unsigned char)tmp.p[j]]);
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
/* tokenizers' NFC, NFD, NFKC and NFKD (its unicode-normalization-alignments crate) use Unicode 9.0's
 * tables; utf8proc has Unicode 15's. These are the code points assigned since 9.0 that utf8proc
 * decomposes, composes or gives a combining class: tokenizers leaves each as it is, a starter that
 * no mark is reordered across and nothing composes with (U+0898 is no mark to it, U+32FF no
 * square 令和, U+11938 never made of U+11935 U+11930). Found by comparing, for every code point with
 * a normalization property, utf8proc with tokenizers (reference/test_tokenize_bpe checks them).
 * The characters older than 9.0 are normalized alike: Unicode never changes a character's mappings
 * or combining class once assigned. */
static const int32_t newer_than_tokenizers[][2] =
    {{0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},
     {0xC3C, 0xC3C},     {0xD3B, 0xD3C},     {0xEBA, 0xEBA},     {0x1715, 0x1715},
     {0x1ABF, 0x1ACE},   {0x1DF6, 0x1DFA},   {0x32FF, 0x32FF},   {0xA7F2, 0xA7F4},
     {0xA82C, 0xA82C},   {0xAB69, 0xAB69},   {0x10781, 0x10785}, {0x10787, 0x107B0},
     {0x107B2, 0x107BA}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
     {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x1133B, 0x1133B},
     {0x1145E, 0x1145E}, {0x11839, 0x1183A}, {0x11930, 0x11930}, {0x11935, 0x11935},
     {0x11938, 0x11938}, {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0},
     {0x11A34, 0x11A34}, {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42},
     {0x11D44, 0x11D45}, {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1},
     {0x1E030, 0x1E06D}, {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE},
     {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF}, {0x1F16C, 0x1F16C}, {0x1FBF0, 0x1FBF9}};

static int is_newer_than_tokenizers(int32_t cp) {
  size_t lo = 0, hi = sizeof newer_than_tokenizers / sizeof *newer_than_tokenizers;
  if (cp < newer_than_tokenizers[0][0]) return 0;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cp < newer_than_tokenizers[mid][0])
      hi = mid;
    else if (cp > newer_than_tokenizers[mid][1])
      lo = mid + 1;
    else
      return 1;
  }
  return 0;
}

/* s[0, len) normalized with utf8proc's flags into out (empty), as tokenizers normalizes it: the
 * text between the code points newer than its tables normalized, each of those kept as it is (a
 * starter to tokenizers: nothing before it reorders or composes with anything after it). */
static int unicode9_map(const char *s, size_t len, int flags, tok_buf *out) {
  int rc = 0;
  size_t from = 0, i = 0;
  for (;;) {
    int32_t cp = 0;
    size_t k = 0;
    while (i < len && (k = tok_utf8_next(s + i, len - i, &cp), !is_newer_than_tokenizers(cp)))
      i += k;
    char *d;
    size_t n;
    if ((rc = tok_utf8_map(s + from, i - from, flags, &d, &n))) return rc;
    if (from == 0 && i == len) { /* none in the text: utf8proc's result as it is */
      out->p = d;
      out->len = n;
      out->cap = n + 1;
      return 0;
    }
    rc = tok_buf_put(out, d, n);
    free(d);
    if (rc || i == len) return rc;
    if ((rc = tok_buf_put(out, s + i, k))) return rc; /* the newer code point, as it is */
    from = i += k;
  }
}

int tok_bpe_normalize(const tok_bpe *b, const char *s, size_t len, tok_buf *out) {
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
    tok_buf in = *out;
    *out = (tok_buf){0};
    rc = unicode9_map(in.p, in.len, flags, out);
    free(in.p);
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
      rc = tok_bpe_normalize(b, s + from, ms - from, &norm);
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
