/* featcache — symbol vocabularies for the chars and phonemes tokenizers: one symbol per line,
 * id = line index; greedy longest match of text over the symbols. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "featcache/fc_format.h"
#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"

void tok_vocab_free(tok_vocab *v) {
  for (size_t i = 0; i < v->n; i++) free(v->syms[i]);
  free(v->syms);
  free(v->lens);
  tok_map_free(&v->map);
  tok_map_free(&v->match);
  memset(v, 0, sizeof *v);
}

static int cmp_len_desc(const void *a, const void *b) {
  const size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* v->lens: the distinct lengths of the symbols in v->match, longest first; v->max_len. */
static int match_lengths(tok_vocab *v) {
  size_t n = 0, *lens = fc_malloc((v->match.count ? v->match.count : 1) * sizeof *lens);
  if (!lens) return ENOMEM;
  for (size_t i = 0; i < v->match.cap; i++)
    if (v->match.slots[i].key) lens[n++] = v->match.slots[i].len;
  qsort(lens, n, sizeof *lens, cmp_len_desc);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!k || lens[k - 1] != lens[i]) lens[k++] = lens[i];
  free(v->lens);
  v->lens = lens;
  v->n_lens = k;
  v->max_len = k ? lens[0] : 0;
  return 0;
}

/* changed (may be NULL): which symbols normalization changed, to say why two are one */
static int vocab_build(tok_vocab *v, char **syms, size_t n, const unsigned char *changed, char *why,
                       size_t why_len) {
  memset(v, 0, sizeof *v);
  v->syms = syms;
  v->n = n;
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(syms[i]);
    int32_t first;
    int rc = tok_map_put(&v->map, syms[i], len, (int32_t)i, &first);
    if (rc == 1) {
      /* a symbol holding a control character in double quotes with C escapes, as the tools
       * quote names: no escape sequence from a vocab file reaches the terminal */
      char q[160];
      int plain = fc_quote_name(syms[i], q, sizeof q) == len;
      const char *nf = changed && (changed[i] || changed[first])
                           ? "; the two are one symbol under NFKC normalization, as the text is"
                           : "";
      tok_set_why(why, why_len,
                  plain ? "%zu: duplicate symbol '%s' (first at line %d%s)"
                        : "%zu: duplicate symbol %s (first at line %d%s)",
                  i + 1, plain ? syms[i] : q, (int)first + 1, nf);
      rc = FC_ETOKENIZER;
    }
    if (!rc) rc = tok_map_put(&v->match, syms[i], len, (int32_t)i, NULL);
    if (rc) {
      tok_vocab_free(v);
      return rc;
    }
  }
  int rc = match_lengths(v);
  if (rc) tok_vocab_free(v);
  return rc;
}

int tok_vocab_from_syms(tok_vocab *v, char **syms, size_t n, char *why, size_t why_len) {
  return vocab_build(v, syms, n, NULL, why, why_len);
}

/* A table of symbols and numbers, not a vocab: every line a symbol, white space and a number
 * ("<unk> 1": Kaldi's words.txt, icefall's tokens.txt; "h 1234": fairseq's dict.txt, a count).
 * Read as a vocab, its symbols ("h 5") match no text. Said as FC_ETOKENIZER, with the way out. */
static int id_table(char *const *syms, size_t n, char *why, size_t why_len) {
  int in_order = 1;
  for (size_t i = 0; i < n; i++) {
    const char *s = syms[i], *num;
    const size_t sym = strcspn(s, " \t"), gap = strspn(s + sym, " \t");
    const size_t digits = strspn(num = s + sym + gap, "0123456789");
    if (n < 2 || !sym || !gap || !digits || num[digits]) return 0;
    if (digits > 18 || strtoull(num, NULL, 10) != i) in_order = 0;
  }
  char q[160];
  const int plain = fc_quote_name(syms[0], q, sizeof q) == strlen(syms[0]);
  const int tab = syms[0][strcspn(syms[0], " \t")] == '\t';
  tok_set_why(why, why_len,
              "1: every line is a symbol and a number (%s%s%s), %s, but a vocab holds one symbol "
              "a line, its id the line's index: %s",
              plain ? "'" : "", plain ? syms[0] : q, plain ? "'" : "",
              in_order ? "the ids of a table such as Kaldi's words.txt or icefall's tokens.txt"
                       : "not the line's index (fairseq's dict.txt holds counts)",
              !in_order ? "write the symbols one a line, in the order of their ids"
              : tab     ? "cut the numbers off with cut -f1"
                        : "cut the numbers off with cut -d' ' -f1");
  return FC_ETOKENIZER;
}

int tok_vocab_parse(tok_vocab *v, const char *data, size_t len, int nfkc, char *why,
                    size_t why_len) {
  size_t cap = 256, n = 0;
  char **syms = fc_malloc(cap * sizeof *syms);
  unsigned char *changed = fc_calloc(cap, 1);
  if (!syms || !changed) {
    free(syms);
    free(changed);
    return ENOMEM;
  }
  if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) data += 3, len -= 3; /* BOM */
  size_t i = 0;
  int rc = 0;
  char wide[200];
  if (tok_wide_text(data, len, 0, "vocab", wide, sizeof wide)) { /* a file of another encoding */
    tok_set_why(why, why_len, "1: %s", wide);
    rc = FC_ETOKENIZER;
    i = len;
  }
  while (i < len) {
    const char *nl = memchr(data + i, '\n', len - i);
    size_t end = nl ? (size_t)(nl - data) : len;
    size_t l = end - i;
    if (l && data[i + l - 1] == '\r') l--;
    if (l == 0) {
      tok_set_why(why, why_len, "%zu: empty line (a space symbol is a line holding one space)",
                  n + 1);
      rc = FC_ETOKENIZER;
      break;
    }
    if (memchr(data + i, 0, l) && tok_wide_text(data + i, l, l, "vocab", wide, sizeof wide)) {
      tok_set_why(why, why_len, "%zu: %s", n + 1, wide);
      rc = FC_ETOKENIZER;
      break;
    }
    if (!fc_utf8_valid(data + i, l)) {
      tok_set_why(why, why_len, "%zu: invalid UTF-8", n + 1);
      rc = FC_ETOKENIZER;
      break;
    }
    /* a byte-order mark glued to a symbol after the first line (a file saved with one joined to
     * the vocab: cat a.txt b.txt) would make the symbol one no text holds; a line of U+FEFF alone
     * is that symbol (--build-vocab exports one from a text holding it) */
    if (l > 3 && memcmp(data + i, "\xEF\xBB\xBF", 3) == 0) {
      char sym[64], q[160]; /* the symbol, quoted as names are when it holds a control character */
      snprintf(sym, sizeof sym, "%.*s", (int)(l - 3 < 63 ? l - 3 : 63), data + i + 3);
      const int plain = fc_quote_name(sym, q, sizeof q) == strlen(sym);
      tok_set_why(why, why_len,
                  "%zu: begins with a byte-order mark (EF BB BF) before its symbol %s%s%s (a file "
                  "saved with one, joined to the vocab after its first line?): remove it: "
                  "sed -i 's/^\\xEF\\xBB\\xBF//' FILE",
                  n + 1, plain ? "'" : "", plain ? sym : q, plain ? "'" : "");
      rc = FC_ETOKENIZER;
      break;
    }
    if (n == cap) {
      char **p = fc_realloc(syms, cap * 2 * sizeof *syms);
      if (p) syms = p;
      unsigned char *c = p ? fc_realloc(changed, cap * 2) : NULL;
      if (!c) {
        rc = ENOMEM;
        break;
      }
      memset(c + cap, 0, cap);
      changed = c;
      cap *= 2;
    }
    if (nfkc) { /* as fc_tok_normalize maps the text, so that an NFD vocab matches */
      size_t nl2;
      rc = tok_utf8_map(data + i, l, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, &syms[n],
                        &nl2);
      if (rc) {
        if (rc != ENOMEM) tok_set_why(why, why_len, "%zu: invalid UTF-8", n + 1);
        if (rc != ENOMEM) rc = FC_ETOKENIZER;
        break;
      }
      changed[n] = nl2 != l || memcmp(syms[n], data + i, l) != 0;
    } else if (!(syms[n] = fc_strndup(data + i, l))) {
      rc = ENOMEM;
      break;
    }
    n++;
    i = end + 1;
  }
  if (!rc && n == 0) {
    tok_set_why(why, why_len, "1: the vocab is empty");
    rc = FC_ETOKENIZER;
  }
  if (!rc) rc = id_table(syms, n, why, why_len);
  if (rc) {
    for (size_t k = 0; k < n; k++) free(syms[k]);
    free(syms);
    free(changed);
    return rc;
  }
  rc = vocab_build(v, syms, n, changed, why, why_len);
  free(changed);
  return rc;
}

int tok_vocab_unmatch(tok_vocab *v, const char *sym) {
  int32_t id;
  if (!tok_map_get(&v->match, sym, strlen(sym), &id)) return 0;
  /* rebuild the match map without sym: specials are few and this runs once */
  tok_map m = {0};
  for (size_t i = 0; i < v->match.cap; i++) {
    tok_map_slot *s = &v->match.slots[i];
    if (!s->key || strcmp(s->key, sym) == 0) continue;
    int rc = tok_map_put(&m, s->key, s->len, s->val, NULL);
    if (rc) { /* keep the old map whole rather than lose symbols */
      tok_map_free(&m);
      return rc;
    }
  }
  tok_map old = v->match;
  v->match = m;
  int rc = match_lengths(v);
  if (rc) { /* the old map and lengths, whole */
    tok_map_free(&m);
    v->match = old;
    return rc;
  }
  tok_map_free(&old);
  return 0;
}

int tok_vocab_map(const tok_vocab *v, const char *s, size_t len, int32_t unk, int strict,
                  tok_ids *out, size_t *unknown, char *why, size_t why_len) {
  size_t i = 0;
  while (i < len) {
    int32_t id = -1;
    size_t l = 0;
    for (size_t k = 0; k < v->n_lens; k++) { /* the symbols' lengths, longest first */
      l = v->lens[k];
      /* only whole code points: l must end on a boundary */
      if (l > len - i || (i + l < len && ((unsigned char)s[i + l] & 0xC0) == 0x80)) {
        l = 0;
        continue;
      }
      if (tok_map_get(&v->match, s + i, l, &id)) break;
      l = 0;
    }
    if (l == 0) {
      int32_t cp;
      l = tok_utf8_next(s + i, len - i, &cp);
      if (strict || unk < 0) {
        const char *none = unk < 0 ? " and there is no unk symbol" : "";
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) /* a control character: by its number alone,
                                                        so that no escape reaches a terminal */
          tok_set_why(why, why_len, "symbol U+%04X (a control character) is not in the vocab%s",
                      (unsigned)cp, none);
        else
          tok_set_why(why, why_len, "symbol '%.*s' (U+%04X) is not in the vocab%s", (int)l, s + i,
                      (unsigned)cp, none);
        return FC_EUNKNOWN;
      }
      id = unk;
      if (unknown) (*unknown)++;
    }
    if (tok_ids_push(out, id)) return ENOMEM;
    i += l;
  }
  return 0;
}
