/* What a file's bytes say about it, where libsndfile does not say it: what kind of audio it is when
 * libsndfile refuses it (damaged, or a format libsndfile cannot read at all), whether a WAV's data
 * chunk claims more than the file holds, and whether the frame count libsndfile reports is the
 * length a good file decodes to or only an estimate. Private to audio.c (audio_int.h). */
#include "libcache/mel/featurize/audio_int.h"

#include <sndfile.h>
#include <string.h>

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int audio_wav_truncated(const uint8_t *b, size_t len, uint64_t *declared, uint64_t *held) {
  if (len < 12 || memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0) return 0;
  size_t pos = 12;
  unsigned block_align = 0;
  while (pos + 8 <= len) {
    uint32_t size = le32(b + pos + 4);
    if (memcmp(b + pos, "fmt ", 4) == 0 && size >= 16 && pos + 8 + 16 <= len) {
      block_align = (unsigned)b[pos + 8 + 12] | (unsigned)b[pos + 8 + 13] << 8;
    } else if (memcmp(b + pos, "data", 4) == 0) {
      size_t avail = len - (pos + 8);
      if (block_align == 0 || size == 0 || size >= 0x7FFFF000u || size <= avail) return 0;
      *declared = size / block_align;
      *held = avail / block_align;
      return 1;
    }
    if ((uint64_t)size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + (size_t)size + (size & 1);
  }
  return 0;
}

/* An MPEG audio frame header at b (4 bytes): sync, a version and a layer that are not reserved. */
static int mpeg_frame_header(const uint8_t *b) {
  return b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && (b[1] & 0x18) != 0x08 && (b[1] & 0x06) != 0;
}

/* The frame count of the Xing or Info tag that is an MP3's first frame (after an ID3v2 tag),
 * with the samples per MPEG frame in *spf; 0 when there is none. LAME and ffmpeg write it; the
 * tag sits after the first frame's side information. */
static uint32_t mp3_tag_frames(const uint8_t *b, size_t len, unsigned *spf) {
  size_t p = 0;
  if (len >= 10 && memcmp(b, "ID3", 3) == 0)
    p = 10 +
        ((size_t)(b[6] & 0x7F) << 21 | (size_t)(b[7] & 0x7F) << 14 | (size_t)(b[8] & 0x7F) << 7 |
         (size_t)(b[9] & 0x7F)) +
        (b[5] & 0x10 ? 10 : 0);
  if (p + 4 > len || !mpeg_frame_header(b + p) || ((b[p + 1] >> 1) & 3) != 1)
    return 0; /* layer III */
  const int mpeg1 = ((b[p + 1] >> 3) & 3) == 3, mono = (b[p + 3] >> 6) == 3;
  const size_t side = mpeg1 ? (mono ? 17 : 32) : (mono ? 9 : 17);
  const size_t t = p + 4 + (b[p + 1] & 1 ? 0 : 2) + side; /* protection bit 0: a 16-bit CRC */
  if (t + 12 > len || (memcmp(b + t, "Xing", 4) != 0 && memcmp(b + t, "Info", 4) != 0) ||
      !(be32(b + t + 4) & 1))
    return 0;
  *spf = mpeg1 ? 1152 : 576;
  return be32(b + t + 8);
}

int64_t audio_frames_slack(int format, const uint8_t *b, size_t len, int64_t frames) {
  int major = format & SF_FORMAT_TYPEMASK, sub = format & SF_FORMAT_SUBMASK;
  if (major == SF_FORMAT_MPEG || sub == SF_FORMAT_MPEG_LAYER_I || sub == SF_FORMAT_MPEG_LAYER_II ||
      sub == SF_FORMAT_MPEG_LAYER_III) {
    unsigned spf = 0;
    const int64_t n = mp3_tag_frames(b, len, &spf);
    /* mpg123 took the length from the tag when it is n frames less the encoder's delay and
     * padding (LAME's gapless numbers, 12 bits each); otherwise it ignored the tag. */
    if (n == 0 || frames > n * spf || frames < n * spf - 8190) return -1;
    return spf - 1; /* a tag whose count includes itself: a good file one frame short */
  }
  return 0;
}

const char *audio_magic(const uint8_t *b, size_t len) {
  static const struct {
    const char *magic, *name;
  } m[] = {{"RIFF", "WAV"}, {"RIFX", "WAV"}, {"RF64", "WAV"}, {"FORM", "AIFF"}, {"fLaC", "FLAC"},
           {"OggS", "Ogg"}, {"ID3", "MP3"},  {".snd", "AU"},  {"caff", "CAF"},  {"NIST", "NIST"}};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    size_t n = strlen(m[i].magic);
    if (len >= n && memcmp(b, m[i].magic, n) == 0) return m[i].name;
  }
  if (len >= 4 && mpeg_frame_header(b)) return "MPEG";
  return NULL;
}

const char *audio_unsupported(const uint8_t *b, size_t len) {
  if (len >= 12 && memcmp(b + 4, "ftyp", 4) == 0) return "MP4/M4A";
  if (len >= 4 && memcmp(b, "\x1A\x45\xDF\xA3", 4) == 0) return "Matroska/WebM";
  if (len >= 8 && memcmp(b, "\x30\x26\xB2\x75\x8E\x66\xCF\x11", 8) == 0) return "ASF/WMA";
  if (len >= 5 && memcmp(b, "#!AMR", 5) == 0) return "AMR";
  /* ADTS: MPEG's sync with the layer bits 00, which MPEG audio reserves */
  if (len >= 4 && b[0] == 0xFF && (b[1] & 0xF6) == 0xF0) return "AAC (ADTS)";
  return NULL;
}
