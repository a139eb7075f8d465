/* featcache — reading audio: libsndfile decode, mix to mono, soxr resampling (librosa's recipe). */
#ifndef FC_AUDIO_H
#define FC_AUDIO_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fc_audio_info {
  uint32_t sample_rate; /* of the source */
  uint32_t channels;    /* of the source */
  uint64_t frames;      /* sample frames of the source as decoded */
  uint64_t size;        /* file size in bytes */
  int64_t mtime_ns;     /* file mtime */
  int format;           /* libsndfile SF_FORMAT_* of the file */
} fc_audio_info;

/* Read path fully into memory (*bytes, *len; free() it), stat it into info->size/mtime_ns.
 * Errors: errno codes (ENOENT, EACCES, EISDIR), FC_EEMPTY (0 bytes), FC_ETOOLONG when the file is
 * larger than max_bytes (0 = no limit). The bytes are hashed for the audio digest and then decoded
 * from memory, so each file is read once. */
FC_API int fc_audio_read_file(const char *path, uint64_t max_bytes, void **bytes, size_t *len,
                              fc_audio_info *info);

/* Decode an in-memory file (any format libsndfile reads: WAV, FLAC, OGG/Vorbis/Opus, MP3...),
 * mix to mono by averaging channels, resample to target_rate with soxr HQ (as librosa.load's
 * default soxr_hq) and fix the length to ceil(frames * target / source) as librosa does.
 * target_rate 0 keeps the source rate. Fills info->sample_rate/channels/frames/format.
 * max_seconds > 0 rejects longer audio with FC_ETOOLONG before decoding it all.
 * *samples is malloc'd float32 (free() it), *n_samples its length.
 * Errors: FC_EDECODE with a reason in why (e.g. "not an audio file: ..."), FC_EEMPTY (0 samples),
 * FC_ETOOLONG, ENOMEM. */
FC_API int fc_audio_decode(const void *bytes, size_t len, uint32_t target_rate, double max_seconds,
                           float **samples, size_t *n_samples, fc_audio_info *info, char *why,
                           size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
