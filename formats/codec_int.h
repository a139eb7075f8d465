/* Internal: one mq coder per thread, for the library's own decoders and encoders (the loader's
 * prefetch threads, verify, bench, featurize's workers). Not part of the public API. */
#ifndef FC_CODEC_INT_H
#define FC_CODEC_INT_H

#include "featcache/fc_codec.h"

/* This thread's coder, made on first use and freed when the thread exits; NULL when out of memory
 * (the fc_mq_* functions then make a temporary one). */
__attribute__((visibility("hidden"))) fc_mq_coder *fc_mq_thread_coder(void);

#endif
