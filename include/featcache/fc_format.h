/* featcache — store format v1: records, keys, audio and text entries (docs/FORMAT.md).
 * Pure functions over bytes; none of them trusts its input. */
#ifndef FC_FORMAT_H
#define FC_FORMAT_H

#include "fc_base.h"

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FC_FORMAT_NAME "featcache/1"
#define FC_RECORD_MAGIC "FCR1"
#define FC_RECORD_HEADER_SIZE 64
#define FC_ID_MAX 511 /* bytes of an utterance id (LMDB's default max key size) */
#define FC_INDEX_PREFIX "index/" /* + 32 hex of a config digest: that config's index db */
#define FC_INDEX_VALUE_SIZE 20 /* an index value: record key (16), u32 dim0 */

enum { FC_PRODUCER_CPU = 1, FC_PRODUCER_CUDA = 2 };

typedef struct fc_record_header {
  uint8_t dtype; /* fc_dtype */
  uint8_t ndim; /* 1 or 2 */
  uint32_t dim0; /* frames, or tokens */
  uint32_t dim1; /* mel bins; 1 when ndim == 1 */
  uint64_t payload_bytes; /* dim0 * dim1 * dtype size */
  uint64_t payload_hash; /* XXH3-64 of the payload */
  fc_digest config; /* config digest */
  uint32_t flags;
  uint32_t producer; /* FC_PRODUCER_* */
} fc_record_header;

/* Serialize h into out[64], computing the header checksum (bytes 56..63). h->payload_hash and
 * payload_bytes are written as given. */
FC_API void fc_record_header_encode(const fc_record_header *h, uint8_t out[FC_RECORD_HEADER_SIZE]);

/* Encode a whole record into out (64 + payload bytes), filling payload_bytes and payload_hash from
 * the payload. out must hold FC_RECORD_HEADER_SIZE + payload_len bytes. Returns 0 or FC_EFORMAT if
 * dims/dtype disagree with payload_len. */
FC_API int fc_record_encode(fc_record_header *h, const void *payload, size_t payload_len,
                            void *out);

/* Parse and check a record value of len bytes without touching the payload: length >= 64, magic,
 * header size, header checksum, dtype, ndim, dims, dim0*dim1*size == payload_bytes == len - 64.
 * On success fills *h and *payload (points into val). Returns 0, FC_EFORMAT or FC_ECHECKSUM; why
 * (may be NULL) receives a one-line reason. */
FC_API int fc_record_parse(const void *val, size_t len, fc_record_header *h, const void **payload,
                           char *why, size_t why_len);

/* fc_record_parse, then the payload checksum. */
FC_API int fc_record_verify(const void *val, size_t len, fc_record_header *h, const void **payload,
                            char *why, size_t why_len);

/* Keys of the feat and tok dbs: XXH3-128(content digest ‖ config digest). */
FC_API void fc_record_key(const fc_digest *content, const fc_digest *config, fc_digest *key);

/* ---- audio entries (db "audio", key = utterance id) ------------------------------------------ */
#define FC_AUDIO_ENTRY_FIXED 48
typedef struct fc_audio_entry {
  fc_digest digest; /* XXH3-128 of the source file's bytes      offset 0 */
  uint32_t sample_rate; /* of the source                            offset 16 */
  uint32_t channels; /* of the source                            offset 20 */
  uint64_t frames; /* sample frames of the source              offset 24 */
  uint64_t source_size; /* bytes                                    offset 32 */
  int64_t mtime_ns; /* source mtime, ns since the epoch         offset 40 */
  const char *path; /* offset 48 .. end, UTF-8, no terminator in the store */
  size_t path_len;
} fc_audio_entry;

/* Bytes needed to encode e. */
FC_API size_t fc_audio_entry_size(const fc_audio_entry *e);
/* Encode into out (fc_audio_entry_size bytes). */
FC_API void fc_audio_entry_encode(const fc_audio_entry *e, void *out);
/* Decode; e->path points into val (not NUL-terminated; use path_len). 0 or FC_EFORMAT. */
FC_API int fc_audio_entry_decode(const void *val, size_t len, fc_audio_entry *e);

/* ---- failure records (db "failed", key = utterance id; docs/FORMAT.md "Failure records") ----- */
/* featurize's record of an utterance it could not store: which config's run, when, why, from which
 * source. One per id (the latest); a later run that stores the id under that config deletes it. */
#define FC_FAILURE_FIXED 32
typedef struct fc_failure {
  fc_digest config; /* the feature config of the run that failed it  offset 0 */
  int64_t time_ns; /* when, ns since the epoch (wall clock)          offset 16 */
  int32_t err; /* the error: FC_E* (negative) or an errno value  offset 24 */
  /* offset 28: u32 source_len */
  const char *source; /* offset 32, source_len bytes: the audio path as stored in audio entries
                          (empty when the manifest line named none) */
  size_t source_len;
  const char *reason; /* the rest: one line of UTF-8, what the tool printed */
  size_t reason_len;
} fc_failure;

/* Bytes needed to encode f. (The failure helpers are inline: a few lines of byte layout, used
 * by featurize, cache-verify and cache-merge, that need not widen the exported ABI.) */
static inline size_t fc_failure_size(const fc_failure *f) {
  return FC_FAILURE_FIXED + f->source_len + f->reason_len;
}

/* Encode into out (fc_failure_size bytes). */
static inline void fc_failure_encode(const fc_failure *f, void *out) {
  uint8_t *p = (uint8_t *)out;
  uint64_t t = (uint64_t)f->time_ns;
  uint32_t e = (uint32_t)f->err, sl = (uint32_t)f->source_len;
  memcpy(p, f->config.bytes, 16);
  for (int i = 0; i < 8; i++) p[16 + i] = (uint8_t)(t >> (8 * i));
  for (int i = 0; i < 4; i++)
    p[24 + i] = (uint8_t)(e >> (8 * i)), p[28 + i] = (uint8_t)(sl >> (8 * i));
  if (f->source_len) memcpy(p + FC_FAILURE_FIXED, f->source, f->source_len);
  if (f->reason_len) memcpy(p + FC_FAILURE_FIXED + f->source_len, f->reason, f->reason_len);
}

/* Decode; source and reason point into val (not NUL-terminated). 0 or FC_EFORMAT (shorter than
 * 32 bytes, or a source length past the end). */
static inline int fc_failure_decode(const void *val, size_t len, fc_failure *f) {
  const uint8_t *p = (const uint8_t *)val;
  if (!p || len < FC_FAILURE_FIXED) return FC_EFORMAT;
  uint64_t t = 0;
  uint32_t e = 0, sl = 0;
  for (int i = 7; i >= 0; i--) t = t << 8 | p[16 + i];
  for (int i = 3; i >= 0; i--) e = e << 8 | p[24 + i], sl = sl << 8 | p[28 + i];
  if (sl > len - FC_FAILURE_FIXED) return FC_EFORMAT;
  memcpy(f->config.bytes, p, 16);
  f->time_ns = (int64_t)t;
  f->err = (int32_t)e;
  f->source = (const char *)p + FC_FAILURE_FIXED;
  f->source_len = sl;
  f->reason = f->source + sl;
  f->reason_len = len - FC_FAILURE_FIXED - sl;
  return 0;
}

/* ---- text entries (db "text", key = utterance id): digest (16 B) then normalized UTF-8 text --- */
FC_API int fc_text_entry_decode(const void *val, size_t len, fc_digest *digest, const char **text,
                                size_t *text_len);

/* Check an utterance id: 1..FC_ID_MAX bytes of valid UTF-8 without NUL or newline.
 * Returns 0, FC_EFORMAT (length) or FC_EUTF8. */
FC_API int fc_id_check(const char *id, size_t len);

/* Validate UTF-8 (strict: no overlongs, surrogates or > U+10FFFF). 1 valid, 0 not. */
FC_API int fc_utf8_valid(const char *str, size_t len);

/* A name (a file, a store, an utterance id) as the tools' messages print it: as it is, or — when
 * it holds a control character, a double quote, a backslash, a byte that is no part of a UTF-8
 * character, or a character that would hide or reorder part of the line — in double quotes with C
 * escapes (\t, \n, \", \\, octal \033 for the other ASCII control characters, \xNN in lower-case
 * hex for a byte that is not UTF-8, as an id made from such a file name holds it, \uNNNN for a C1
 * control (U+0080..U+009F: a terminal may take U+009B for an escape), a line or paragraph
 * separator, a direction mark, embedding, override or isolate, and U+FEFF, the BOM, invisible),
 * as git quotes paths (core.quotePath false: UTF-8 stays as it is), so that a message stays one
 * line, shows the name it names, and sends no escape codes to a terminal and no invalid UTF-8 to a
 * log. Writes at most len bytes into buf, always NUL-terminated when len > 0 (cut short if it must
 * be: 4 x strlen(name) + 3 always fits); returns the length of the whole quoted form, as snprintf.
 * Inline: a pure helper, no symbol (docs/HACKING.md). */
static inline void fc_quote_put_(char *buf, size_t len, size_t *o, const char *s, size_t n) {
  for (size_t k = 0; k < n; k++, ++*o)
    if (*o + 1 < len) buf[*o] = s[k];
}
/* The length of the UTF-8 character p starts (1 to 4; strict, as fc_utf8_valid) and its code
 * point in *cp, or 0 when *p is no part of one. p is NUL-terminated. */
static inline size_t fc_quote_utf8_len_(const unsigned char *p, uint32_t *cp) {
  const unsigned c = p[0];
  size_t n;
  uint32_t min;
  *cp = c;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0)
    n = 2, *cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0)
    n = 3, *cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0)
    n = 4, *cp = c & 0x07, min = 0x10000;
  else
    return 0;
  for (size_t k = 1; k < n; k++) {
    if ((p[k] & 0xC0) != 0x80) return 0; /* a NUL stops here too */
    *cp = *cp << 6 | (p[k] & 0x3Fu);
  }
  return *cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF) ? 0 : n;
}
/* 1 for a character a quoted name shows escaped (above). */
static inline int fc_quote_special_(uint32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '"' || c == '\\' || c == 0x200e ||
         c == 0x200f || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}
static inline size_t fc_quote_name(const char *name, char *buf, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)(name ? name : "");
  size_t o = 0, k;
  uint32_t c;
  int quote = 0;
  for (const unsigned char *q = p; *q && !quote; q += k)
    quote = !(k = fc_quote_utf8_len_(q, &c)) || fc_quote_special_(c);
  if (quote) fc_quote_put_(buf, len, &o, "\"", 1);
  for (; *p; p += k) {
    char e[6] = {'\\', 0, 0, 0, 0, 0};
    size_t n = 2;
    k = fc_quote_utf8_len_(p, &c);
    if (k && (!quote || !fc_quote_special_(c))) {
      fc_quote_put_(buf, len, &o, (const char *)p, k);
      continue;
    }
    if (k == 0) /* not UTF-8: \xe9 */
      k = 1, e[1] = 'x', e[2] = hex[*p >> 4], e[3] = hex[*p & 15], n = 4;
    else if (c >= 0x80) /* \u202e */
      e[1] = 'u', e[2] = hex[c >> 12 & 15], e[3] = hex[c >> 8 & 15], e[4] = hex[c >> 4 & 15],
      e[5] = hex[c & 15], n = 6;
    else if (c >= 7 && c <= 13) /* \a \b \t \n \v \f \r */
      e[1] = "abtnvfr"[c - 7];
    else if (c < 0x20 || c == 0x7f) /* octal, \033 */
      e[1] = (char)('0' + (c >> 6)), e[2] = (char)('0' + (c >> 3 & 7)),
      e[3] = (char)('0' + (c & 7)), n = 4;
    else /* \" \\ */
      e[1] = (char)c;
    fc_quote_put_(buf, len, &o, e, n);
  }
  if (quote) fc_quote_put_(buf, len, &o, "\"", 1);
  if (len) buf[o < len ? o : len - 1] = '\0';
  return o;
}

#ifdef __cplusplus
}
#endif
#endif
