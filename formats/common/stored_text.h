/* The part of a manifest's transcript that tokenize stores, digests and tokenizes: the text
 * without a UTF-8 byte-order mark before it and a carriage return after it. tokenize makes its
 * text entries of it; cache-verify compares a manifest's text with a stored entry through it, so
 * the two cannot drift apart. */
#ifndef FC_STORED_TEXT_H
#define FC_STORED_TEXT_H
#include <stddef.h>
#include <string.h>

static inline void fc_stored_text(const char **text, size_t *len) {
  if (*len >= 3 && memcmp(*text, "\xEF\xBB\xBF", 3) == 0) *text += 3, *len -= 3;
  if (*len && (*text)[*len - 1] == '\r') --*len;
}
#endif
