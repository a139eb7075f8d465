/* The part of a manifest's transcript that tokenize stores, digests and tokenizes: the text
 * without a UTF-8 byte-order mark before it and a carriage return after it. tokenize makes its
 * text entries of it; cache-verify compares a manifest's text with a stored entry through it, so
 * the two cannot drift apart. */
#ifndef FC_STORED_TEXT_H
#define FC_STORED_TEXT_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void fc_stored_text(const char **text, size_t *len) {
  if (*len >= 3 && memcmp(*text, "\xEF\xBB\xBF", 3) == 0) *text += 3, *len -= 3;
  if (*len && (*text)[*len - 1] == '\r') --*len;
}

/* Unicode White_Space (Python's str.isspace for text in the BMP): what tokenize's white-space
 * collapse takes for space, with U+001C..U+001F (Python's str.split() splits at those too). */
static inline int fc_white_space(uint32_t c) {
  return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

/* 1 when text[0, len) (valid UTF-8) holds nothing but white space (fc_white_space, U+001C..U+001F)
 * once fc_stored_text has taken its BOM and CR: a transcript tokenize fails as empty after
 * normalization (white space collapsed: chars and phonemes by default), which cache-verify says
 * so of rather than asking for a rerun. 0 for any other text, invalid UTF-8 included. */
static inline int fc_text_blank(const char *text, size_t len) {
  fc_stored_text(&text, &len);
  const unsigned char *p = (const unsigned char *)text;
  for (size_t i = 0; i < len;) {
    const unsigned b = p[i];
    const size_t k = b < 0x80             ? 1
                     : (b & 0xE0) == 0xC0 ? 2
                     : (b & 0xF0) == 0xE0 ? 3
                     : (b & 0xF8) == 0xF0 ? 4
                                          : 0;
    if (!k || k > len - i) return 0;
    uint32_t cp = k == 1 ? b : b & (0x7Fu >> k);
    for (size_t j = 1; j < k; j++) {
      if ((p[i + j] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (p[i + j] & 0x3Fu);
    }
    if (!fc_white_space(cp) && !(cp >= 0x1C && cp <= 0x1F)) return 0;
    i += k;
  }
  return 1;
}
#endif
