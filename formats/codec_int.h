/* The mq codec's internals (codec.c): what the library and the tests call, not the ABI. Public
 * part: include/featcache/fc_codec.h. */
#ifndef FC_CODEC_INT_H
#define FC_CODEC_INT_H

#include "featcache/fc_codec.h"

/* A coder of one's own (most callers take fc_mq_thread_coder). Free with mq_coder_free. */
int mq_coder_new(fc_mq_coder **out);
void mq_coder_free(fc_mq_coder *c);

/* Encode x[dim0][dim1] into out (cap bytes; fc_mq_bound is always enough); *len gets the payload
 * size. c may be NULL (a temporary coder). Returns 0; FC_ERANGE (a NaN, an infinity or
 * |x| >= 4096: why names the first such value), FC_ECONFIG (too many values, cap too small),
 * ENOMEM. Same input and zstd version → same bytes. */
int mq_encode(fc_mq_coder *c, const float *x, uint32_t dim0, uint32_t dim1, void *out, size_t cap,
              size_t *len, char *why, size_t why_len);

/* Check the fixed part of a payload of len bytes for dim0 x dim1 (its first 8 or 20 bytes only, so
 * a cold record is not paged in): step (<= FC_MQ_STEP_LOG2_MAX), mode, reserved bytes, escape count, frame sizes adding up to
 * len. The frames themselves are checked by fc_mq_decode. Returns 0 or FC_EFORMAT with a reason. */
int mq_check(const void *payload, size_t len, uint32_t dim0, uint32_t dim1, char *why,
             size_t why_len);

#endif
