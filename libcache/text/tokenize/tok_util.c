/* featcache — small helpers for the tokenizers: buffers, hash maps, UTF-8, Unicode classes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>
#include <xxhash.h>

#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"
#include "formats/common/stored_text.h"

int tok_buf_put(tok_buf *b, const void *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = fc_realloc(b->p, cap);
    if (!p) return ENOMEM;
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}

int tok_ids_push(tok_ids *v, int32_t id) {
  if (v->len == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    int32_t *p = fc_realloc(v->p, cap * sizeof *p);
    if (!p) return ENOMEM;
    v->p = p;
    v->cap = cap;
  }
  v->p[v->len++] = id;
  return 0;
}

/* ---- string map: open addressing, linear probing, load ≤ 1/2 ---------------------------------- */
static int map_grow(tok_map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  tok_map_slot *s = fc_calloc(cap, sizeof *s);
  if (!s) return ENOMEM;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    size_t j = m->slots[i].hash & (cap - 1);
    while (s[j].key) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return 0;
}

int tok_map_put(tok_map *m, const char *key, size_t len, int32_t val, int32_t *existing) {
  if ((m->count + 1) * 2 > m->cap && map_grow(m)) return ENOMEM;
  uint64_t h = XXH3_64bits(key, len);
  size_t j = h & (m->cap - 1);
  for (; m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
    tok_map_slot *s = &m->slots[j];
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) {
      if (existing) *existing = s->val;
      return 1;
    }
  }
  char *k = fc_malloc(len + 1);
  if (!k) return ENOMEM;
  memcpy(k, key, len);
  k[len] = 0;
  m->slots[j] = (tok_map_slot){k, (uint32_t)len, val, h};
  m->count++;
  return 0;
}

int tok_map_get(const tok_map *m, const char *key, size_t len, int32_t *val) {
  if (!m->cap) return 0;
  uint64_t h = XXH3_64bits(key, len);
  for (size_t j = h & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
    const tok_map_slot *s = &m->slots[j];
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) {
      *val = s->val;
      return 1;
    }
  }
  return 0;
}

void tok_map_free(tok_map *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->slots[i].key);
  free(m->slots);
  memset(m, 0, sizeof *m);
}

/* ---- pair map ---------------------------------------------------------------------------------- */
static uint64_t pair_hash(uint64_t k) { return XXH3_64bits(&k, sizeof k); }

static int pairs_grow(tok_pairs *m) {
  size_t cap = m->cap ? m->cap * 2 : 1024;
  tok_pair_slot *s = fc_calloc(cap, sizeof *s);
  if (!s) return ENOMEM;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    size_t j = pair_hash(m->slots[i].key) & (cap - 1);
    while (s[j].key) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return 0;
}

int tok_pairs_put(tok_pairs *m, uint32_t a, uint32_t b, int32_t rank, int32_t id) {
  if ((m->count + 1) * 2 > m->cap && pairs_grow(m)) return ENOMEM;
  uint64_t k = ((uint64_t)a << 32 | b) + 1;
  size_t j = pair_hash(k) & (m->cap - 1);
  for (; m->slots[j].key; j = (j + 1) & (m->cap - 1))
    if (m->slots[j].key == k) {
      /* a merge listed twice: the later one's rank wins, as in tokenizers (its merges are
       * collected into a HashMap in list order, each insert replacing the one before) */
      m->slots[j].rank = rank;
      m->slots[j].id = id;
      return 1;
    }
  m->slots[j] = (tok_pair_slot){k, rank, id};
  m->count++;
  return 0;
}

int tok_pairs_get(const tok_pairs *m, uint32_t a, uint32_t b, int32_t *rank, int32_t *id) {
  if (!m->cap) return 0;
  uint64_t k = ((uint64_t)a << 32 | b) + 1;
  for (size_t j = pair_hash(k) & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1))
    if (m->slots[j].key == k) {
      *rank = m->slots[j].rank;
      *id = m->slots[j].id;
      return 1;
    }
  return 0;
}

void tok_pairs_free(tok_pairs *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

/* ---- UTF-8 ------------------------------------------------------------------------------------- */
size_t tok_utf8_next(const char *s, size_t len, int32_t *cp) {
  const unsigned char *u = (const unsigned char *)s;
  if (u[0] < 0x80 || len < 2) {
    *cp = u[0];
    return 1;
  }
  if (u[0] < 0xE0) {
    *cp = (int32_t)((u[0] & 0x1F) << 6 | (u[1] & 0x3F));
    return 2;
  }
  if (u[0] < 0xF0 || len < 4) {
    if (len < 3) {
      *cp = u[0];
      return 1;
    }
    *cp = (int32_t)((u[0] & 0x0F) << 12 | (u[1] & 0x3F) << 6 | (u[2] & 0x3F));
    return 3;
  }
  *cp = (int32_t)((u[0] & 0x07) << 18 | (u[1] & 0x3F) << 12 | (u[2] & 0x3F) << 6 | (u[3] & 0x3F));
  return 4;
}

int tok_utf8_map(const char *s, size_t len, int flags, char **out, size_t *out_len) {
  /* what utf8proc_map does (utf8proc 2.x): decompose once for the size, once into the buffer,
   * then compose and re-encode in place (UTF-8 needs at most the 4 bytes of each code point) */
  const utf8proc_uint8_t *u = (const utf8proc_uint8_t *)s;
  utf8proc_option_t o = (utf8proc_option_t)flags;
  *out = NULL;
  utf8proc_ssize_t n = utf8proc_decompose(u, (utf8proc_ssize_t)len, NULL, 0, o);
  if (n < 0) return n == UTF8PROC_ERROR_NOMEM ? ENOMEM : FC_EUTF8;
  utf8proc_int32_t *buf = fc_malloc((size_t)n * sizeof *buf + 1);
  if (!buf) return ENOMEM;
  n = utf8proc_decompose(u, (utf8proc_ssize_t)len, buf, n, o);
  if (n >= 0) n = utf8proc_reencode(buf, n, o);
  if (n < 0) {
    free(buf);
    return n == UTF8PROC_ERROR_NOMEM ? ENOMEM : FC_EUTF8;
  }
  *out = (char *)buf;
  *out_len = (size_t)n;
  return 0;
}

size_t tok_utf8_encode(int32_t cp, char out[4]) {
  return (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)out);
}

/* ---- Unicode classes ---------------------------------------------------------------------------- */
int tok_is_space(int32_t c) { return c >= 0 && fc_white_space((uint32_t)c); }

int tok_is_punct(int32_t c) {
  utf8proc_category_t k = utf8proc_category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

int tok_is_letter(int32_t c) {
  utf8proc_category_t k = utf8proc_category(c);
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

int tok_is_number(int32_t c) {
  utf8proc_category_t k = utf8proc_category(c);
  return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

int tok_is_word(int32_t c) {
  utf8proc_category_t k = utf8proc_category(c);
  if (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ME) return 1; /* L*, M* */
  if (k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_PC) return 1;
  if (c == 0x200C || c == 0x200D) return 1; /* Join_Control */
  /* Other_Alphabetic symbols (circled and squared Latin letters) */
  return (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
         (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

int tok_wide_text(const char *data, size_t len, size_t scan, const char *what, char *why,
                  size_t why_len) {
  static const struct { /* UTF-32's mark first: FF FE 00 00 begins with UTF-16's */
    const char *mark, *enc, *hex;
    size_t len;
  } marks[] = {{"\xFF\xFE\0\0", "UTF-32", "FF FE 00 00", 4},
               {"\0\0\xFE\xFF", "UTF-32", "00 00 FE FF", 4},
               {"\xFF\xFE", "UTF-16", "FF FE", 2},
               {"\xFE\xFF", "UTF-16", "FE FF", 2}};
  for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++)
    if (len >= marks[k].len && memcmp(data, marks[k].mark, marks[k].len) == 0) {
      tok_set_why(why, why_len,
                  "%s text (its byte-order mark %s), not UTF-8: convert it with iconv -f %s -t "
                  "UTF-8",
                  marks[k].enc, marks[k].hex, marks[k].enc);
      return 1;
    }
  if (!memchr(data, 0, scan < len ? scan : len)) return 0;
  tok_set_why(why, why_len,
              "a NUL byte: UTF-16 or UTF-32 text without a byte-order mark? A %s is UTF-8: "
              "convert it with iconv -f UTF-16LE (or UTF-16BE, UTF-32LE, UTF-32BE) -t UTF-8",
              what);
  return 1;
}
