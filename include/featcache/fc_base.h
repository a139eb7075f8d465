/* featcache — common types: error codes, digests, dtypes.
 *
 * Error model (one for the whole library): functions return int, 0 is success; our own codes are
 * negative FC_E* in [-31999, -31900]; LMDB's codes (-30800 .. -30780) and errno values (positive)
 * are passed through unchanged. fc_strerror() names every one of them. A NULL given for a pointer
 * a function needs is EINVAL, never a crash, with fc_last_error() naming the argument (below). */
#ifndef FC_BASE_H
#define FC_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FC_API __attribute__((visibility("default")))
#define FC_PRINTF_LIKE(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define FC_API
#define FC_PRINTF_LIKE(fmt, first)
#endif

/* ---- errors ---------------------------------------------------------------------------------- */
enum {
  FC_EFIRST = -31999,
  FC_EFORMAT = -31900, /* a record, entry or store that is not what the format says */
  FC_ECHECKSUM = -31901, /* a checksum does not match */
  FC_ECONFIG = -31902, /* an invalid or inconsistent configuration */
  FC_EDECODE = -31903, /* audio could not be decoded */
  FC_EEMPTY = -31904, /* input has no samples / no text */
  FC_ETOOLONG = -31905, /* input longer than the configured limit */
  FC_EMANIFEST = -31906, /* a manifest line is malformed */
  FC_EUTF8 = -31907, /* invalid UTF-8 */
  FC_ENOTFOUND = -31908, /* a key, id or config is not in the store */
  FC_ENODEVICE = -31909, /* no usable compute device (e.g. no CUDA GPU) */
  FC_ECUDA = -31910, /* a CUDA or cuFFT call failed */
  FC_EINTR = -31911, /* interrupted by a signal; finished work is committed */
  FC_EBADSTATE = -31912, /* handle refuses work after an earlier failure (sticky) */
  FC_EVERSION = -31913, /* store format version this build does not know */
  FC_EDUPLICATE = -31914, /* duplicate id */
  FC_ETOKENIZER = -31915, /* tokenizer definition invalid */
  FC_EUNKNOWN = -31916, /* unknown symbol under --strict */
  FC_ERANGE = -31917, /* a value the mq codec cannot hold (NaN, infinity, |x| >= 4096), or
                        samples fc_mel_compute refuses (NaN, infinite, a power past float32) */
  FC_ESPLIT = -31918, /* a split store (fc_store.h): open its parts, not the directory */
  FC_EPHONEMIZE = -31919, /* espeak-ng died or hung reading this text (in a child process:
                             nothing else is affected; docs/tokenize.md) */
  FC_ECONFLICT = -31930, /* an id's entry differs between stores being merged */
  FC_ENOSTORE = -31931, /* a directory that holds no featcache store (no data.mdb, no split
                           marker): not a featcache store */
  FC_ETRUNCATED = -31932, /* data.mdb ends before its last committed page (a copy cut short):
                             not opened, since reading the missing pages would be a SIGBUS */
  FC_EDROPPED = -31933, /* the config a writer stores under was dropped from the store while it
                           wrote (fc_store_drop_config, cache-config --drop): FC_PUT_REQUIRE */
  FC_EOPENED = -31934, /* the store is open in this process already (another fc_store, a
                          loader): LMDB opens a store once per process (fc_store.h) */
  FC_ELOCKGONE = -31935, /* the store's lock.mdb was removed (or replaced) while other processes
                            had it open: they read through the old one, which a writer here would
                            not see (fc_store.h) */
  FC_ELAST = -31900
};

/* Message for any code returned by this library: FC_E*, LMDB codes, errno values.
 * Returns a static string (never NULL, never to be freed). Our messages start with the code's name. */
FC_API const char *fc_strerror(int err);

/* This thread's message of the last argument a function of this library refused: a pointer it
 * needs (an input, an output, a handle) given NULL. Such a call returns EINVAL (errno's; a
 * function that returns no code returns NULL or 0, or does nothing) instead of crashing, and the
 * message names the function and the argument: "fc_store_open: out is NULL" (also written to the
 * call's why, when it has one). "" before any refusal; a later refusal on the thread replaces it,
 * other calls leave it. Valid until the thread's next refusal; never NULL, never to be freed. */
FC_API const char *fc_last_error(void);
/* Set this thread's fc_last_error message (printf-style, cut at 255 bytes) and return err: how
 * the library's components refuse an argument, and a binding may refuse its own the same way. */
FC_API int fc_set_last_error(int err, const char *fmt, ...) FC_PRINTF_LIKE(2, 3);

/* Library version, "MAJOR.MINOR.PATCH". Static string. */
FC_API const char *fc_version(void);
/* The version of these headers: for #if, and for a program to compare with fc_version() (the
 * library it runs with). While MAJOR is 0 a MINOR release may change the ABI: option and info
 * structs grow (fc_loader_opts, fc_loader_info, ...) under the same soname, libfeatcache.so.0,
 * so a program is rebuilt against the headers of the library it runs with. */
#define FC_VERSION_MAJOR 0
#define FC_VERSION_MINOR 1
#define FC_VERSION_PATCH 0

/* ---- digests --------------------------------------------------------------------------------- */
/* A 128-bit digest as stored: XXH3-128 low 64 bits little-endian, then high 64 bits little-endian. */
typedef struct fc_digest {
  uint8_t bytes[16];
} fc_digest;

/* XXH3-128 of a buffer, in stored byte order. */
FC_API void fc_digest_buffer(const void *data, size_t len, fc_digest *out);
/* XXH3-128 of n buffers one after the other (data[i], len[i] bytes): fc_digest_buffer of their
 * concatenation, without making it (a file's header, samples and tail read to different places). */
FC_API void fc_digest_pieces(const void *const *data, const size_t *len, size_t n, fc_digest *out);
/* 32 lowercase hex chars of the 16 stored bytes in order, plus NUL: out must hold 33 bytes. */
FC_API void fc_digest_hex(const fc_digest *d, char out[33]);
/* Parse 32 hex chars (upper or lower case). Returns 0, or FC_ECONFIG if malformed. */
FC_API int fc_digest_parse(const char *hex, fc_digest *out);
/* XXH3-64 of a buffer (record checksums). */
FC_API uint64_t fc_hash64(const void *data, size_t len);

/* ---- dtypes (record header byte 6) ------------------------------------------------------------ */
typedef enum fc_dtype {
  FC_DTYPE_F32 = 1,
  FC_DTYPE_F16 = 2,
  FC_DTYPE_BF16 = 3,
  FC_DTYPE_I32 = 4,
  FC_DTYPE_I16 = 5,
  FC_DTYPE_U16 = 6,
  FC_DTYPE_MQ = 7 /* mel codec (fc_codec.h): a coded payload that decodes to f32 */
} fc_dtype;

/* Size in bytes of one stored element; 0 for an unknown dtype and for FC_DTYPE_MQ (a coded
 * payload has no fixed element size: see fc_dtype_decoded). Inline: no symbol. */
static inline size_t fc_dtype_size(int dtype) {
  switch (dtype) {
  case FC_DTYPE_F32:
  case FC_DTYPE_I32: return 4;
  case FC_DTYPE_F16:
  case FC_DTYPE_BF16:
  case FC_DTYPE_I16:
  case FC_DTYPE_U16: return 2;
  default: return 0;
  }
}
/* The dtype a reader gets after decoding: FC_DTYPE_F32 for FC_DTYPE_MQ, dtype itself otherwise
 * (0 for an unknown dtype). Inline: no symbol. */
static inline int fc_dtype_decoded(int dtype) {
  if (dtype == FC_DTYPE_MQ) return FC_DTYPE_F32;
  return fc_dtype_size(dtype) ? dtype : 0;
}
/* "f32", "f16", "bf16", "i32", "i16", "u16", "mq"; NULL for an unknown dtype. Static string.
 * Inline, as is its inverse: no symbol. */
static inline const char *fc_dtype_name(int dtype) {
  static const char *const names[] = {NULL, "f32", "f16", "bf16", "i32", "i16", "u16", "mq"};
  return (dtype >= 1 && dtype <= 7) ? names[dtype] : NULL;
}
/* Inverse of fc_dtype_name; returns 0 for an unknown name. */
static inline int fc_dtype_from_name(const char *name) {
  for (int i = 1; name && i <= 7; i++) {
    const char *n = fc_dtype_name(i), *a = name;
    while (*n && *n == *a) n++, a++;
    if (!*n && !*a) return i;
  }
  return 0;
}

/* Round-to-nearest-even float conversions used for f16/bf16 records (CPU and CUDA agree). */
FC_API uint16_t fc_f32_to_f16(float f);
FC_API float fc_f16_to_f32(uint16_t h);
FC_API uint16_t fc_f32_to_bf16(float f);
FC_API float fc_bf16_to_f32(uint16_t b);

#ifdef __cplusplus
}
#endif
#endif
