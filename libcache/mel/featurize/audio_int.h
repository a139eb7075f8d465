/* Audio decoding's internals for the featurize pipeline (audio.c). Private to libcache/mel/featurize/. */
#ifndef FC_AUDIO_INT_H
#define FC_AUDIO_INT_H

#include "featcache/fc_audio.h"

#include <stdint.h>

/* fc_audio_read_file into a buffer the caller keeps from file to file (a worker's): *buf (NULL
 * with *cap 0 at first) is used when it holds the file, else grown (fc_realloc) and *buf, *cap
 * updated; it stays the caller's to free, whatever the outcome. *len: the file's bytes in it.
 * Errors as fc_audio_read_file. */
int audio_read_into(const char *path, uint64_t max_bytes, uint8_t **buf, size_t *cap, size_t *len,
                    fc_audio_info *info);

/* The samples of an in-memory file as they are in it, when the file is what fc_audio_decode turns
 * into floats without libsndfile: a well-formed RIFF WAVE of 16-bit mono PCM at target_rate (0:
 * any rate), little-endian host. Returns 1 with *pcm pointing at its data chunk inside bytes
 * (n_samples little-endian int16, 2-byte aligned; valid as long as bytes), info filled as
 * fc_audio_decode fills it; 0 when the file is anything else (decode it); FC_ETOOLONG (negative),
 * with fc_audio_decode's reason in why, when it is longer than max_seconds > 0. Sample v stands for exactly the float
 * fc_audio_decode gives, v / 32768 (fc_cu_i16_to_f32). */
int audio_pcm16_view(const void *bytes, size_t len, uint32_t target_rate, double max_seconds,
                     const void **pcm, size_t *n_samples, fc_audio_info *info, char *why,
                     size_t why_len);

#endif
