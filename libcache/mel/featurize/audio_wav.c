/* 16-bit mono PCM WAV, the common case, read without libsndfile: the RIFF chunk walk that tells such
 * a file from any other, and its samples as floats, the same bits libsndfile gives. Private to
 * libcache/mel/featurize/ (audio_int.h). */
#include "libcache/mel/featurize/audio_int.h"

#include <sndfile.h>
#include <string.h>

/* For exactly the files audio_wav_pcm16_scan takes libsndfile reads size / 2 frames and returns
 * sample * (1.0f / 0x8000) (pcm.c, normalisation on), which is what audio_wav_decode_pcm16
 * computes: the same bits, without libsndfile's block copies and scalar conversion. */
int audio_wav_pcm16_scan(const uint8_t *b, size_t avail, uint64_t len, size_t *data_off,
                         size_t *frames, uint32_t *rate) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (avail < 12) return len < 12 ? 0 : -1;
  if (memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0) return 0;
  uint64_t pos = 12;
  uint32_t sr = 0;
  while (pos + 8 <= len) {
    if (pos + 8 > avail) return -1;
    const uint8_t *c = b + pos;
    uint32_t size = audio_le32(c + 4);
    if ((uint64_t)size > len - pos - 8) return 0;
    if (memcmp(c, "fmt ", 4) == 0) {
      if (sr || (size != 16 && size != 18)) return 0;
      if (pos + 8 + size > avail) return -1;
      const uint8_t *f = c + 8;
      unsigned tag = f[0] | f[1] << 8, ch = f[2] | f[3] << 8, align = f[12] | f[13] << 8,
               bits = f[14] | f[15] << 8;
      uint32_t r = audio_le32(f + 4), byte_rate = audio_le32(f + 8);
      if (tag != 1 || ch != 1 || align != 2 || bits != 16 || r == 0 || byte_rate != 2 * r) return 0;
      if (size == 18 && (f[16] | f[17]) != 0) return 0;
      sr = r;
    } else if (memcmp(c, "data", 4) == 0) {
      if (!sr || size == 0 || size % 2 || size >= 0x7FFFF000u) return 0;
      *data_off = (size_t)pos + 8;
      *frames = size / 2;
      *rate = sr;
      return 1;
    }
    if ((uint64_t)size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + (uint64_t)size + (size & 1);
  }
#else
  (void)b, (void)avail, (void)len, (void)data_off, (void)frames, (void)rate;
#endif
  return 0;
}

static int wav_pcm16_mono(const uint8_t *b, size_t len, const uint8_t **data, size_t *frames,
                          uint32_t *rate) {
  size_t off;
  if (audio_wav_pcm16_scan(b, len, len, &off, frames, rate) != 1) return 0;
  /* another file after the samples (cat), a second data chunk: fc_audio_decode refuses it */
  if (audio_riff_after(b + off + 2 * *frames, len - off - 2 * *frames, 0, 1) >= 0) return 0;
  *data = b + off;
  return 1;
}

void audio_wav_decode_pcm16(const uint8_t *data, size_t frames, float *out) {
  const float norm = 1.0f / 32768.0f; /* libsndfile's 1.0 / ((float) 0x8000) */
  for (size_t i = 0; i < frames; i++) {
    int16_t v;
    memcpy(&v, data + 2 * i, sizeof v);
    out[i] = (float)v * norm;
  }
}

int audio_pcm16_view(const void *bytes, size_t len, uint32_t target_rate, double max_seconds,
                     const void **pcm, size_t *n_samples, fc_audio_info *info, char *why,
                     size_t why_len) {
  const uint8_t *data;
  size_t frames;
  uint32_t rate;
  *pcm = NULL;
  *n_samples = 0;
  if (!bytes || !wav_pcm16_mono(bytes, len, &data, &frames, &rate) ||
      (target_rate != 0 && target_rate != rate))
    return 0;
  if (info) {
    info->sample_rate = rate;
    info->channels = 1;
    info->frames = frames;
    info->format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  }
  if (max_seconds > 0 && (double)frames > max_seconds * rate) {
    if (info) info->frames = 0;
    audio_too_long(why, why_len, (double)frames / rate, max_seconds);
    return FC_ETOOLONG;
  }
  *pcm = data;
  *n_samples = frames;
  return 1;
}
