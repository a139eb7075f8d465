/* featcache — reading audio: libsndfile decode, mix to mono, soxr resampling (librosa's recipe). */
#ifndef FC_AUDIO_H
#define FC_AUDIO_H

#include "fc_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fc_audio_info {
  uint32_t sample_rate; /* of the source */
  uint32_t channels; /* of the source */
  uint64_t frames; /* sample frames of the source as decoded (before resampling) */
  uint64_t size; /* file size in bytes */
  int64_t mtime_ns; /* file mtime */
  int format; /* libsndfile SF_FORMAT_* of the file */
} fc_audio_info;

/* Read path fully into memory (*bytes, *len; free() it) and stat it: info (may be NULL) is zeroed,
 * then info->size and info->mtime_ns are set. A pipe is read to EOF (a FIFO's open waits for its
 * writer); a device (/dev/zero, a terminal) is refused with ENODEV.
 * Errors: errno codes (ENOENT, EACCES, EISDIR, ENODEV, EIO...), FC_EEMPTY (0 bytes), FC_ETOOLONG
 * when the file is larger than max_bytes (0 = no limit), ENOMEM; on error *bytes is NULL. The
 * bytes are hashed for the audio digest and then decoded from memory, so each file is read once. */
FC_API int fc_audio_read_file(const char *path, uint64_t max_bytes, void **bytes, size_t *len,
                              fc_audio_info *info);

/* Decode an in-memory file (any format libsndfile reads: WAV 8/16/24/32-bit int and 32/64-bit
 * float, FLAC, OGG/Vorbis/Opus, MP3...) exactly as librosa.load(path, sr=target_rate) does:
 * libsndfile's float read (int16 as x/32768...), at most the frames the header announces (as
 * soundfile), mono by np.mean's float32 pairwise sum over channels, soxr HQ with float32 I/O
 * (python-soxr's soxr_hq), then the length fixed to ceil(frames * target / source) by zero-padding
 * or trimming. target_rate 0 keeps the source rate. Tested bit-exact against librosa for WAV,
 * FLAC, 1-8 channels and 8-192 kHz (tests/reference/test_audio_decode.py).
 * info (may be NULL): sample_rate, channels, format of the source; frames decoded at its rate.
 * max_seconds > 0 rejects longer audio with FC_ETOOLONG from the header, before decoding.
 * *samples is malloc'd float32 (free() it), *n_samples its length; NULL/0 on error.
 * A file that states a length it does not hold is refused where librosa loads what there is: a
 * header stating more data than the file holds (WAV, RF64, W64, AIFF, AU, NIST SPHERE), or fewer
 * frames decoded than an exact length states (FLAC, Ogg, an MP3 with a Xing/Info frame count).
 * Errors: FC_EDECODE with a reason in why (may be NULL): "not an audio file (libsndfile: ...)"
 * ("not an audio file: a Git LFS pointer (...)", an HTML page, an XML document: what a download or
 * a clone left in its place),
 * "unsupported audio format: MP4/M4A; ..." (AVI, AAC (ADTS), Matroska/WebM, ASF/WMA, AMR too),
 * "unsupported encoding in a CAF file (libsndfile: ...): ..." (a codec it does not read;
 * "unsupported encoding in a WAV file: G.726 ADPCM (format tag 0x0045): ..." in a WAV),
 * "damaged WAV file (...)", "truncated: header says N frames, file holds M", "damaged or cut
 * short: header says N frames, only M decode[ (libsndfile: ...)]", "decode error ...",
 * "unsupported sample rate conversion" (target/source outside 1/256..64: a damaged header),
 * "damaged float samples: sample N (T s[, channel C]) is NaN|inf|V[, beyond any PCM scale]" (a
 * float source with a sample that is NaN, infinite or beyond 2^31 in magnitude: where librosa
 * raises or gives NaN features); FC_EEMPTY ("no samples"), FC_ETOOLONG, ENOMEM.
 * Memory: the caller's bytes + 4 bytes per output sample + one 8192-frame block + soxr state; the
 * source is never held as float at its own rate and channel count.
 * Thread-safe for distinct buffers (the reason for a file libsndfile cannot open comes from its
 * global error string: opens here are serialized, but another caller of libsndfile in the process
 * may overwrite it; the code is still right). */
FC_API int fc_audio_decode(const void *bytes, size_t len, uint32_t target_rate, double max_seconds,
                           float **samples, size_t *n_samples, fc_audio_info *info, char *why,
                           size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
