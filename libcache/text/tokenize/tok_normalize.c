/* featcache — text normalization for the tokenizers: NFKC (utf8proc), case folding, punctuation
 * removal, white-space collapse. Python equivalent (tests/reference/test_tokenize_chars.py):
 *   t = NFKC(s); if casefold: t = NFKC(t.casefold()); drop P* when punct=remove;
 *   if collapse: t = " ".join(t.split()) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "featcache/fc_format.h"
#include "formats/common/args.h"
#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"

/* White space as Python's str.split() sees it: Unicode White_Space plus U+001C..U+001F. */
static int is_space_py(int32_t c) { return tok_is_space(c) || (c >= 0x1C && c <= 0x1F); }

int fc_tok_normalize(const fc_tok_norm *nm, const char *text, size_t len, char **out,
                     size_t *out_len) {
  FC_ARGS(nm, text || !len, out, out_len);
  *out = NULL;
  *out_len = 0;
  if (!fc_utf8_valid(text, len)) return FC_EUTF8;
  char *a = NULL;
  size_t alen = 0;
  int rc;
  if (nm->unicode == FC_UNICODE_NFKC) {
    rc = tok_utf8_map(text, len, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, &a, &alen);
    if (rc) return rc;
  } else {
    a = fc_malloc(len + 1);
    if (!a) return ENOMEM;
    memcpy(a, text, len);
    a[len] = 0;
    alen = len;
  }
  if (nm->casefold) {
    char *b;
    size_t blen;
    int flags = UTF8PROC_STABLE | UTF8PROC_CASEFOLD;
    if (nm->unicode == FC_UNICODE_NFKC) flags |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    rc = tok_utf8_map(a, alen, flags, &b, &blen);
    free(a);
    if (rc) return rc;
    a = b;
    alen = blen;
  }
  if (nm->punct == FC_PUNCT_REMOVE || nm->collapse_space) {
    /* one pass, in place: the output never grows */
    size_t w = 0;
    int pending_space = 0;
    for (size_t i = 0; i < alen;) {
      int32_t cp;
      size_t k = tok_utf8_next(a + i, alen - i, &cp);
      if (nm->punct == FC_PUNCT_REMOVE && tok_is_punct(cp)) {
        i += k;
        continue;
      }
      if (nm->collapse_space && is_space_py(cp)) {
        pending_space = w > 0;
        i += k;
        continue;
      }
      if (pending_space) a[w++] = ' ';
      pending_space = 0;
      memmove(a + w, a + i, k);
      w += k;
      i += k;
    }
    alen = w;
    a[alen] = 0;
  }
  if (alen == 0) {
    free(a);
    return FC_EEMPTY;
  }
  *out = a;
  *out_len = alen;
  return 0;
}

/* Why normalization (nm) left nothing of text s: what is true of it as the manifest gives it. */
const char *tok_norm_why(int rc, const fc_tok_norm *nm, const char *s, size_t len) {
  if (rc != FC_EEMPTY) return rc == FC_EUTF8 ? "text is not valid UTF-8" : NULL;
  if (len == 0) return "text is empty";
  int space = 0, punct = 0, other = 0;
  for (size_t i = 0; i < len;) { /* valid UTF-8: checked before */
    int32_t cp;
    i += tok_utf8_next(s + i, len - i, &cp);
    if (is_space_py(cp)) /* as the collapse's */
      space = 1;
    else if (tok_is_punct(cp))
      punct = 1;
    else
      other = 1;
  }
  if (!punct && !other) return "text is only white space";
  if (!other && nm->punct == FC_PUNCT_REMOVE)
    return space ? "text is only punctuation (which --punct remove drops) and white space"
                 : "text is only punctuation, which --punct remove drops";
  return "text is empty after normalization";
}
