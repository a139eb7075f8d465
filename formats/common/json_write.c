/* JSON string literals for everything the tools and the library print (fc_outfile.h). */
#include "featcache/fc_outfile.h"
#include "formats/common/args.h"

#include <stdint.h>

/* Bytes of the UTF-8 character at p (RFC 3629: no overlong form, surrogate or code point above
 * U+10FFFF; a NUL ends it), or 0 when p does not start one. */
static int utf8_char_len(const unsigned char *p) {
  int n;
  uint32_t cp, min;
  if ((p[0] & 0xE0) == 0xC0)
    n = 2, cp = p[0] & 0x1F, min = 0x80;
  else if ((p[0] & 0xF0) == 0xE0)
    n = 3, cp = p[0] & 0x0F, min = 0x800;
  else if ((p[0] & 0xF8) == 0xF0)
    n = 4, cp = p[0] & 0x07, min = 0x10000;
  else
    return 0;
  for (int k = 1; k < n; k++) {
    if ((p[k] & 0xC0) != 0x80) return 0; /* a NUL stops here too */
    cp = cp << 6 | (p[k] & 0x3F);
  }
  return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : n;
}

void fc_json_write_string(FILE *f, const char *s) {
  FC_ARGS_OR(, f);
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') {
      fprintf(f, "\\%c", *p);
    } else if (*p == '\n') {
      fputs("\\n", f);
    } else if (*p == '\t') {
      fputs("\\t", f);
    } else if (*p == '\r') {
      fputs("\\r", f);
    } else if (*p < 0x20) {
      fprintf(f, "\\u%04x", *p);
    } else if (*p < 0x80) {
      fputc(*p, f);
    } else { /* a UTF-8 character as it is; a byte of none (a Latin-1 name) as U+FFFD */
      int n = utf8_char_len(p);
      if (n) {
        fwrite(p, 1, (size_t)n, f);
        p += n - 1;
      } else {
        fputs("\\ufffd", f);
      }
    }
  }
  fputc('"', f);
}
