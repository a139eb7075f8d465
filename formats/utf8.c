/* UTF-8 and id validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
#include "featcache/fc_format.h"
#include "formats/common/args.h"

int fc_utf8_valid(const char *str, size_t len) {
  FC_ARGS_OR(0, str || !len);
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    unsigned min;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
      min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
      min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
      min = 0x10000;
    } else
      return 0;
    if (len - i <= n) return 0;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += n + 1;
  }
  return 1;
}

int fc_id_check(const char *id, size_t len) {
  FC_ARGS(id || !len);
  if (len == 0 || len > FC_ID_MAX) return FC_EFORMAT;
  for (size_t i = 0; i < len; i++)
    if (id[i] == '\0' || id[i] == '\n' || id[i] == '\r') return FC_EFORMAT;
  return fc_utf8_valid(id, len) ? 0 : FC_EUTF8;
}
