/* Store format v1: the 64-byte record header, keys, audio and text entries (docs/FORMAT.md;
 * failure records: inline in fc_format.h).
 * Everything is explicit little-endian byte by byte, so the layout does not depend on the host. */
#include "formats/common/why.h"
#include "formats/common/args.h"
#include "featcache/fc_format.h"
#include "formats/codec_int.h"
#include "featcache/fc_codec.h"

#include <stdio.h>
#include <string.h>

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) {
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void fc_record_header_encode(const fc_record_header *h, uint8_t out[FC_RECORD_HEADER_SIZE]) {
  FC_ARGS_OR(, h, out);
  memcpy(out, FC_RECORD_MAGIC, 4);
  put16(out + 4, FC_RECORD_HEADER_SIZE);
  out[6] = h->dtype;
  out[7] = h->ndim;
  put32(out + 8, h->dim0);
  put32(out + 12, h->dim1);
  put64(out + 16, h->payload_bytes);
  put64(out + 24, h->payload_hash);
  memcpy(out + 32, h->config.bytes, 16);
  put32(out + 48, h->flags);
  put32(out + 52, h->producer);
  put64(out + 56, fc_hash64(out, 56));
}

int fc_record_encode(fc_record_header *h, const void *payload, size_t payload_len, void *out) {
  FC_ARGS(h, payload || !payload_len, out);
  if (h->dtype == FC_DTYPE_MQ) {
    if (h->ndim != 2 || mq_check(payload, payload_len, h->dim0, h->dim1, NULL, 0))
      return FC_EFORMAT;
  } else {
    size_t es = fc_dtype_size(h->dtype);
    if (!es || h->ndim < 1 || h->ndim > 2 || (h->ndim == 1 && h->dim1 != 1)) return FC_EFORMAT;
    if ((uint64_t)h->dim0 * h->dim1 * es != payload_len) return FC_EFORMAT;
  }
  h->payload_bytes = payload_len;
  h->payload_hash = fc_hash64(payload, payload_len);
  fc_record_header_encode(h, out);
  if (payload_len) memcpy((uint8_t *)out + FC_RECORD_HEADER_SIZE, payload, payload_len);
  return 0;
}

int fc_record_parse(const void *val, size_t len, fc_record_header *h, const void **payload,
                    char *why, size_t why_len) {
  const uint8_t *p = val;
  if (!p || len < FC_RECORD_HEADER_SIZE) {
    fc_why(why, why_len, "record of %zu bytes is shorter than its 64-byte header", len);
    return FC_EFORMAT;
  }
  if (memcmp(p, FC_RECORD_MAGIC, 4) != 0) {
    fc_why(why, why_len, "bad magic %02x%02x%02x%02x (want FCR1)", p[0], p[1], p[2], p[3]);
    return FC_EFORMAT;
  }
  uint64_t hh = get64(p + 56);
  if (fc_hash64(p, 56) != hh) {
    fc_why(why, why_len, "header checksum mismatch");
    return FC_ECHECKSUM;
  }
  if (get16(p + 4) != FC_RECORD_HEADER_SIZE) {
    fc_why(why, why_len, "header size %u (want 64)", get16(p + 4));
    return FC_EFORMAT;
  }
  fc_record_header t;
  t.dtype = p[6];
  t.ndim = p[7];
  t.dim0 = get32(p + 8);
  t.dim1 = get32(p + 12);
  t.payload_bytes = get64(p + 16);
  t.payload_hash = get64(p + 24);
  memcpy(t.config.bytes, p + 32, 16);
  t.flags = get32(p + 48);
  t.producer = get32(p + 52);
  size_t es = fc_dtype_size(t.dtype);
  if (!es && t.dtype != FC_DTYPE_MQ) {
    fc_why(why, why_len, "unknown dtype %u", t.dtype);
    return FC_EFORMAT;
  }
  if (t.ndim != 1 && t.ndim != 2) {
    fc_why(why, why_len, "ndim %u (want 1 or 2)", t.ndim);
    return FC_EFORMAT;
  }
  if (t.ndim == 1 && t.dim1 != 1) {
    fc_why(why, why_len, "ndim 1 with dim1 %u (want 1)", t.dim1);
    return FC_EFORMAT;
  }
  /* dim0, dim1 < 2^32 and es <= 4: the product fits in 66 bits only if we are careless, so check
   * against the value length first — it bounds everything we will ever touch. */
  uint64_t body = (uint64_t)len - FC_RECORD_HEADER_SIZE;
  if (t.payload_bytes != body) {
    fc_why(why, why_len, "header says %llu payload bytes, value holds %llu",
           (unsigned long long)t.payload_bytes, (unsigned long long)body);
    return FC_EFORMAT;
  }
  if (t.dtype == FC_DTYPE_MQ) { /* a coded payload: its own header says how it fills the bytes */
    if (t.ndim != 2 || t.dim1 == 0) {
      fc_why(why, why_len, "mq record with ndim %u, dim1 %u (want 2, >= 1)", t.ndim, t.dim1);
      return FC_EFORMAT;
    }
    int rc = mq_check(p + FC_RECORD_HEADER_SIZE, (size_t)body, t.dim0, t.dim1, why, why_len);
    if (rc) return rc;
  } else if (t.dim1 == 0 || (uint64_t)t.dim0 > body / es / t.dim1 ||
             (uint64_t)t.dim0 * t.dim1 * es != body) {
    fc_why(why, why_len, "shape %u x %u of %s does not fill %llu payload bytes", t.dim0, t.dim1,
           fc_dtype_name(t.dtype), (unsigned long long)body);
    return FC_EFORMAT;
  }
  if (h) *h = t;
  if (payload) *payload = p + FC_RECORD_HEADER_SIZE;
  return 0;
}

int fc_record_verify(const void *val, size_t len, fc_record_header *h, const void **payload,
                     char *why, size_t why_len) {
  fc_record_header t;
  const void *pl;
  int rc = fc_record_parse(val, len, &t, &pl, why, why_len);
  if (rc) return rc;
  if (fc_hash64(pl, t.payload_bytes) != t.payload_hash) {
    fc_why(why, why_len, "payload checksum mismatch");
    return FC_ECHECKSUM;
  }
  if (h) *h = t;
  if (payload) *payload = pl;
  return 0;
}

void fc_record_key(const fc_digest *content, const fc_digest *config, fc_digest *key) {
  FC_ARGS_OR(, content, config, key);
  uint8_t buf[32];
  memcpy(buf, content->bytes, 16);
  memcpy(buf + 16, config->bytes, 16);
  fc_digest_buffer(buf, sizeof buf, key);
}

size_t fc_audio_entry_size(const fc_audio_entry *e) {
  FC_ARGS_OR(0, e);
  return FC_AUDIO_ENTRY_FIXED + e->path_len;
}

void fc_audio_entry_encode(const fc_audio_entry *e, void *out) {
  FC_ARGS_OR(, e, out);
  FC_ARGS_OR(, e->path || !e->path_len);
  uint8_t *p = out;
  memcpy(p, e->digest.bytes, 16);
  put32(p + 16, e->sample_rate);
  put32(p + 20, e->channels);
  put64(p + 24, e->frames);
  put64(p + 32, e->source_size);
  put64(p + 40, (uint64_t)e->mtime_ns);
  if (e->path_len) memcpy(p + FC_AUDIO_ENTRY_FIXED, e->path, e->path_len);
}

int fc_audio_entry_decode(const void *val, size_t len, fc_audio_entry *e) {
  FC_ARGS(e);
  const uint8_t *p = val;
  if (!p || len < FC_AUDIO_ENTRY_FIXED) return FC_EFORMAT;
  memcpy(e->digest.bytes, p, 16);
  e->sample_rate = get32(p + 16);
  e->channels = get32(p + 20);
  e->frames = get64(p + 24);
  e->source_size = get64(p + 32);
  e->mtime_ns = (int64_t)get64(p + 40);
  e->path = (const char *)p + FC_AUDIO_ENTRY_FIXED;
  e->path_len = len - FC_AUDIO_ENTRY_FIXED;
  return 0;
}

int fc_text_entry_decode(const void *val, size_t len, fc_digest *digest, const char **text,
                         size_t *text_len) {
  if (!val || len < 16) return FC_EFORMAT;
  if (digest) memcpy(digest->bytes, val, 16);
  if (text) *text = (const char *)val + 16;
  if (text_len) *text_len = len - 16;
  return 0;
}
