/* featcache — the `mq` mel codec (record dtype 7, docs/FORMAT.md "The mq payload").
 *
 * A lossy codec for log-mel records: every value is quantized to a multiple of a step 2^-s (so the
 * decoded value is within 2^-(s+1) of the original), predicted from its neighbours (planar:
 * left + up - up-left), the residual zigzagged into one byte per value (larger ones escaped), and
 * the bytes entropy-coded by zstd. Deterministic for a given zstd version; decodes to float32
 * [dim0][dim1].
 * Values must be finite with |x| < 4096 (FC_MQ_MAX_ABS); anything else is refused (FC_ERANGE). */
#ifndef FC_CODEC_H
#define FC_CODEC_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FC_MQ_STEP_LOG2 7 /* step = 2^-7: mq_encode's, and featurize's for ln */
#define FC_MQ_MAX_ERROR (1.0 / 256) /* max |decoded - original| at step 2^-7 */
#define FC_MQ_STEP_LOG2_MAX 12 /* payloads carry s in [0, 12]; larger is refused */
/* max |decoded - original| at step 2^-s */
#define FC_MQ_ERROR(s) (1.0 / (double)(2u << (s)))
#define FC_MQ_MAX_ABS 4096.0f /* encodable values: finite, |x| < 4096 */
#define FC_MQ_HEADER 8 /* a constant array's whole payload; coded: 20 */
#define FC_MQ_MAX_VALUES 0x7fffffffu /* dim0 * dim1 at most */

/* Scratch for encoding and decoding (zstd contexts, plane buffers). One per thread; reusing it
 * saves allocations (formats/codec_int.h makes and frees one; users take fc_mq_thread_coder). */
typedef struct fc_mq_coder fc_mq_coder;
/* This thread's coder, made on first use, owned by the library and freed when the thread exits
 * (never free it); NULL when out of memory (pass it anyway: the fc_mq_* functions then make a
 * temporary one). What the loader's prefetch threads, cache-verify, cache-bench and featurize use. */
FC_API fc_mq_coder *fc_mq_thread_coder(void);

/* Most payload bytes mq_encode can write for dim0 x dim1 values (0 when over FC_MQ_MAX_VALUES). */
FC_API size_t fc_mq_bound(uint32_t dim0, uint32_t dim1);

/* The step exponent s featurize codes a config's log output with (fc_config.h fc_log): the same
 * precision in every unit, max error <= 0.0045 in nats (ln units): ln 7 (max error 2^-8 =
 * 0.0039 nats), log10 8 (2^-9 = 0.0020 log10 = 0.0045 nats), db 5 (2^-6 = 0.0156 dB = 0.0036
 * nats), whisper 10 (2^-11 = 0.00049 = 0.0045 nats: a whisper unit is 4 log10). 0 for
 * FC_LOG_NONE and unknown values (the codec is refused without a log). */
FC_API unsigned fc_mq_step_log2(int log);

/* The same at step 2^-step_log2 (<= FC_MQ_STEP_LOG2_MAX, else FC_ECONFIG); mq_encode is this at
 * FC_MQ_STEP_LOG2. The payload records the step; fc_mq_decode reads it. */
FC_API int fc_mq_encode_step(fc_mq_coder *c, const float *x, uint32_t dim0, uint32_t dim1,
                             unsigned step_log2, void *out, size_t cap, size_t *len, char *why,
                             size_t why_len);

/* Decode rows [first, first + count) of a payload into out (count * dim1 floats, row-major).
 * Rows before first are decoded too (prediction runs from row 0) but not written; the symbols are
 * decompressed only as far as row first + count - 1. c may be NULL. Returns 0; FC_EFORMAT
 * (mq_check fails; a frame is not exactly one zstd frame declaring its size or does not
 * decompress to it; escape symbols and escapes disagree in number); FC_ECONFIG (rows out of
 * range); ENOMEM. Nothing outside out[0, count*dim1) is written, whatever the payload.
 * out NULL: decode rows [0, first + count) and write nothing (a check: cache-verify decodes every
 * coded record with first 0, count dim0). */
FC_API int fc_mq_decode(fc_mq_coder *c, const void *payload, size_t len, uint32_t dim0,
                        uint32_t dim1, uint32_t first, uint32_t count, float *out, char *why,
                        size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
