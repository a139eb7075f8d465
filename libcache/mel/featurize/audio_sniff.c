/* What a file's bytes say about it, where libsndfile does not say it: what kind of audio it is when
 * libsndfile refuses it (damaged, or a format libsndfile cannot read at all), whether a header
 * claims more data than the file holds, and whether the frame count libsndfile reports is the
 * length a good file decodes to or only an estimate. Private to audio.c (audio_int.h). */
#include "libcache/mel/featurize/audio_int.h"

#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t le64(const uint8_t *p) { return audio_le32(p) | (uint64_t)audio_le32(p + 4) << 32; }

/* A stated data size: 0 and 0x7FFFF000 or more are "length unknown" (32-bit sizes of streams). */
static int size_stated(uint64_t size) { return size != 0 && size < 0x7FFFF000u; }

/* The same for 64-bit sizes (RF64's ds64, W64): ffmpeg writing W64 to a pipe leaves all ones. */
static int size64_stated(uint64_t size) { return size != 0 && size < (1ull << 48); }

/* Declared and held frames of data stated as `size` bytes of frames `frame` bytes each, `avail`
 * of them in the file: 1 when the file holds fewer frames (the bytes of a frame's part that a size
 * not a multiple of frames states, missing, take none of them away). */
static int cut(uint64_t size, uint64_t avail, uint64_t frame, uint64_t *declared, uint64_t *held) {
  if (frame == 0 || size <= avail) return 0;
  *declared = size / frame;
  *held = avail / frame;
  return *held < *declared;
}

/* What a WAV's fmt chunk says of its frames: PCM, float, A-law and u-law (also under
 * WAVE_FORMAT_EXTENSIBLE) hold a frame in block_align bytes; a compressed codec (ADPCM, GSM 6.10,
 * G.721) holds a block of samples_per_block frames there, or bits per sample when it states none. */
typedef struct wav_fmt {
  unsigned block_align, channels, bits, samples_per_block;
  int compressed;
} wav_fmt;

static void wav_read_fmt(const uint8_t *f, uint64_t size, wav_fmt *w) {
  unsigned tag = f[0] | f[1] << 8;
  w->channels = f[2] | f[3] << 8;
  w->block_align = f[12] | f[13] << 8;
  w->bits = f[14] | f[15] << 8;
  w->samples_per_block =
      size >= 20 && (f[16] | f[17] << 8) >= 2 ? (unsigned)(f[18] | f[19] << 8) : 0;
  if (tag == 0xFFFE && size >= 40) tag = f[24] | f[25] << 8; /* the sub-format GUID's first two */
  w->compressed = tag != 1 && tag != 3 && tag != 6 && tag != 7 && tag != 0xFFFE;
}

/* Declared and held frames of a compressed WAV's data, stated as size bytes, room of them in the
 * file: the fact chunk's count (fact, 0: none) and its share of the bytes there, else whole blocks,
 * else bits; 0 when the header tells no frames. */
static int wav_cut_compressed(const wav_fmt *w, uint64_t fact, uint64_t size, uint64_t room,
                              uint64_t *declared, uint64_t *held) {
  if (size <= room) return 0;
  if (fact) {
    *declared = fact;
    *held = fact * room / size;
  } else if (w->samples_per_block && w->block_align) {
    *declared = size / w->block_align * w->samples_per_block;
    *held = room / w->block_align * w->samples_per_block;
  } else if (w->bits && w->channels) {
    *declared = size * 8 / (w->bits * w->channels);
    *held = room * 8 / (w->bits * w->channels);
  } else {
    return 0;
  }
  return *held < *declared;
}

/* RIFF WAVE and RF64 (whose ds64 chunk holds the data size when the data chunk says 0xFFFFFFFF). */
static int wav_cut(const uint8_t *b, size_t avail, uint64_t len, uint64_t *declared,
                   uint64_t *held) {
  const int rf64 = memcmp(b, "RF64", 4) == 0;
  uint64_t pos = 12;
  wav_fmt fmt = {0};
  uint64_t ds64_data = 0, fact = 0;
  while (pos + 8 <= len) {
    if (pos + 8 + 16 > avail && avail < len) return -1; /* past the bytes at hand */
    uint64_t size = audio_le32(b + pos + 4);
    if (memcmp(b + pos, "fmt ", 4) == 0 && size >= 16 && pos + 8 + 16 <= len) {
      if (pos + 8 + (size < 40 ? size : 40) > avail && avail < len) return -1;
      wav_read_fmt(b + pos + 8, pos + 8 + size <= avail ? size : 16, &fmt);
    } else if (memcmp(b + pos, "fact", 4) == 0 && size >= 4 && pos + 12 <= len) {
      fact = audio_le32(b + pos + 8);
    } else if (rf64 && memcmp(b + pos, "ds64", 4) == 0 && size >= 16 && pos + 8 + 16 <= len) {
      ds64_data = le64(b + pos + 8 + 8);
    } else if (memcmp(b + pos, "data", 4) == 0) {
      if (rf64 && size == 0xFFFFFFFFu) {
        size = ds64_data;
        if (!size64_stated(size)) return 0;
      } else if (!size_stated(size)) {
        return 0;
      }
      if (fmt.compressed)
        return wav_cut_compressed(&fmt, fact, size, len - (pos + 8), declared, held);
      return cut(size, len - (pos + 8), fmt.block_align, declared, held);
    }
    if (size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + size + (size & 1);
  }
  return 0;
}

uint64_t audio_unsized_data(const uint8_t *b, size_t len) {
  if (len < 12 || (memcmp(b, "RIFF", 4) != 0 && memcmp(b, "RF64", 4) != 0) ||
      memcmp(b + 8, "WAVE", 4) != 0)
    return 0;
  const int rf64 = b[1] == 'F';
  uint64_t ds64_data = 1; /* none: not 0 */
  for (size_t pos = 12; pos + 8 <= len;) {
    uint64_t size = audio_le32(b + pos + 4);
    if (rf64 && memcmp(b + pos, "ds64", 4) == 0 && size >= 16 && size <= len - pos - 8)
      ds64_data = le64(b + pos + 8 + 8);
    if (rf64 && memcmp(b + pos, "data", 4) == 0 && size == 0xFFFFFFFFu) size = ds64_data;
    if (memcmp(b + pos, "data", 4) == 0) return size == 0 ? len - (pos + 8) : 0;
    if (size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + (size_t)size + (size & 1);
  }
  return 0;
}

/* Sony Wave64: 16-byte GUID chunk ids (the first 4 bytes name them), 64-bit sizes that count the
 * 24-byte chunk header, chunks 8-byte aligned. */
static int w64_cut(const uint8_t *b, size_t avail, uint64_t len, uint64_t *declared,
                   uint64_t *held) {
  uint64_t pos = 40;
  unsigned block_align = 0;
  while (pos + 24 <= len) {
    if (pos + 24 + 16 > avail && avail < len) return -1;
    uint64_t size = le64(b + pos + 16);
    if (size < 24) return 0;
    if (memcmp(b + pos, "fmt ", 4) == 0 && size >= 24 + 16 && pos + 24 + 16 <= len) {
      block_align = (unsigned)b[pos + 24 + 12] | (unsigned)b[pos + 24 + 13] << 8;
    } else if (memcmp(b + pos, "data", 4) == 0) {
      if (!size64_stated(size - 24)) return 0;
      return cut(size - 24, len - (pos + 24), block_align, declared, held);
    }
    uint64_t step = (size + 7) & ~(uint64_t)7;
    if (step > len - pos) return 0;
    pos += step;
  }
  return 0;
}

/* AIFF and AIFC: COMM states the frame count, SSND the data's size (after its offset and block
 * size fields, and `offset` bytes more). Frames are counted in COMM's terms, so that a compressed
 * AIFC (u-law, say) says what it would for PCM. */
static int aiff_cut(const uint8_t *b, size_t avail, uint64_t len, uint64_t *declared,
                    uint64_t *held) {
  uint64_t pos = 12;
  uint64_t frames = 0;
  while (pos + 8 <= len) {
    if (pos + 8 + 18 > avail && avail < len) return -1;
    uint64_t size = be32(b + pos + 4);
    if (memcmp(b + pos, "COMM", 4) == 0 && size >= 18 && pos + 8 + 18 <= len) {
      frames = be32(b + pos + 8 + 2);
    } else if (memcmp(b + pos, "SSND", 4) == 0 && pos + 16 <= len) {
      uint64_t offset = be32(b + pos + 8);
      if (!frames || !size_stated(size) || size < 8 + offset || pos + 16 + offset > len) return 0;
      uint64_t data = size - 8 - offset, room = len - (pos + 16 + offset);
      if (data <= room || data < frames) return 0;
      *declared = frames;
      *held = (uint64_t)((double)frames * (double)room / (double)data);
      return 1;
    }
    if (size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + size + (size & 1);
  }
  return 0;
}

/* Sun/NeXT AU: a header of its own size, the data size (0xFFFFFFFF: unknown), the encoding. */
static int au_cut(const uint8_t *b, size_t avail, uint64_t len, uint64_t *declared,
                  uint64_t *held) {
  if (len < 24) return 0;
  if (avail < 24) return -1;
  uint64_t off = be32(b + 4), size = be32(b + 8), enc = be32(b + 12), ch = be32(b + 20);
  static const unsigned bytes[28] =
      {[1] = 1, [2] = 1, [3] = 2, [4] = 3, [5] = 4, [6] = 4, [7] = 8, [27] = 1};
  if (size == 0xFFFFFFFFu || off > len || enc >= 28 || !bytes[enc] || ch == 0 || ch > 1024)
    return 0;
  return cut(size, len - off, bytes[enc] * ch, declared, held);
}

/* NIST SPHERE (TIMIT, say): a text header of the size its second line gives, with
 * "sample_count -i N", "channel_count -i C" and "sample_n_bytes -i B" (uncompressed samples). */
static uint64_t nist_field(const char *h, size_t n, const char *name) {
  size_t k = strlen(name);
  for (size_t i = 0; i + k + 4 <= n; i++) {
    if ((i == 0 || h[i - 1] == '\n') && memcmp(h + i, name, k) == 0 &&
        memcmp(h + i + k, " -i ", 4) == 0) {
      uint64_t v = 0;
      for (size_t j = i + k + 4; j < n && h[j] >= '0' && h[j] <= '9' && v < (1ull << 40); j++)
        v = v * 10 + (uint64_t)(h[j] - '0');
      return v;
    }
  }
  return 0;
}

static int nist_cut(const uint8_t *b, size_t avail, uint64_t len, uint64_t *declared,
                    uint64_t *held) {
  uint64_t hsize = 0;
  for (size_t i = 8; i < 16 && i < avail; i++)
    if (b[i] >= '0' && b[i] <= '9') hsize = hsize * 10 + (uint64_t)(b[i] - '0');
  if (hsize < 16 || hsize > len || hsize > (1 << 20)) return 0;
  if (hsize > avail) return -1;
  const char *h = (const char *)b;
  uint64_t n = nist_field(h, hsize, "sample_count"), c = nist_field(h, hsize, "channel_count"),
           w = nist_field(h, hsize, "sample_n_bytes");
  if (!n || !c || !w || c > 1024 || w > 8) return 0;
  for (size_t i = 0; i + 7 <= hsize; i++) /* compressed samples: the count says nothing of bytes */
    if (memcmp(h + i, "shorten", 7) == 0 || memcmp(h + i, "wavpack", 7) == 0) return 0;
  return cut(n * c * w, len - hsize, c * w, declared, held);
}

int audio_truncated(const uint8_t *b, size_t avail, uint64_t len, uint64_t *declared,
                    uint64_t *held) {
  if (avail < len && avail < 64) return -1; /* the magic and the first chunks are not there */
  if (len >= 12 && (memcmp(b, "RIFF", 4) == 0 || memcmp(b, "RF64", 4) == 0) &&
      memcmp(b + 8, "WAVE", 4) == 0)
    return wav_cut(b, avail, len, declared, held);
  if (len >= 40 && memcmp(b, "riff", 4) == 0 && memcmp(b + 24, "wave", 4) == 0)
    return w64_cut(b, avail, len, declared, held);
  if (len >= 12 && memcmp(b, "FORM", 4) == 0 &&
      (memcmp(b + 8, "AIFF", 4) == 0 || memcmp(b + 8, "AIFC", 4) == 0))
    return aiff_cut(b, avail, len, declared, held);
  if (len >= 4 && memcmp(b, ".snd", 4) == 0) return au_cut(b, avail, len, declared, held);
  if (len >= 16 && memcmp(b, "NIST_1A\n", 8) == 0) return nist_cut(b, avail, len, declared, held);
  return 0;
}

/* An MPEG audio frame header at b (4 bytes): sync, a version and a layer that are not reserved. */
static int mpeg_frame_header(const uint8_t *b) {
  return b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && (b[1] & 0x18) != 0x08 && (b[1] & 0x06) != 0;
}

/* Where the ID3v2 tag that begins b ends (its header, size and footer), 0 when none begins it. */
static size_t id3v2_end(const uint8_t *b, size_t len) {
  if (len < 10 || memcmp(b, "ID3", 3) != 0) return 0;
  return 10 +
         ((size_t)(b[6] & 0x7F) << 21 | (size_t)(b[7] & 0x7F) << 14 | (size_t)(b[8] & 0x7F) << 7 |
          (size_t)(b[9] & 0x7F)) +
         (b[5] & 0x10 ? 10 : 0);
}

/* The frame count of the Xing or Info tag that is an MP3's first frame (after an ID3v2 tag),
 * with the samples per MPEG frame in *spf; 0 when there is none. LAME and ffmpeg write it; the
 * tag sits after the first frame's side information. */
static uint32_t mp3_tag_frames(const uint8_t *b, size_t len, unsigned *spf) {
  size_t p = id3v2_end(b, len);
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

int audio_mp3_stream(const uint8_t *b, size_t len) {
  if (len >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WAVE", 4) == 0) {
    unsigned tag = 0; /* MPEG in a WAV (format tag 0x50 or 0x55): its data chunk is the stream */
    for (size_t pos = 12; pos + 8 <= len;) {
      uint64_t size = audio_le32(b + pos + 4);
      if (memcmp(b + pos, "fmt ", 4) == 0 && pos + 10 <= len) tag = b[pos + 8] | b[pos + 9] << 8;
      if (memcmp(b + pos, "data", 4) == 0)
        return tag != 0x50 && tag != 0x55 ? 0 : audio_mp3_stream(b + pos + 8, len - pos - 8);
      if (size + (size & 1) > len - pos - 8) return tag == 0x50 || tag == 0x55 ? -1 : 0;
      pos += 8 + (size_t)size + (size & 1);
    }
    return tag == 0x50 || tag == 0x55 ? -1 : 0;
  }
  const size_t p = id3v2_end(b, len);
  if (p + 4 > len) return p ? -1 : 0;
  return mpeg_frame_header(b + p);
}

static int ogg_chained(const uint8_t *b, size_t len) {
  int data = 0; /* a page of a stream's data seen: a beginning-of-stream page after it chains */
  for (size_t pos = 0; pos + 27 <= len;) {
    if (memcmp(b + pos, "OggS", 4) != 0) return 0; /* damage: libsndfile's to find */
    const size_t nseg = b[pos + 26];
    size_t body = 0;
    if (pos + 27 + nseg > len) return 0;
    for (size_t i = 0; i < nseg; i++) body += b[pos + 27 + i];
    if (!(b[pos + 5] & 2))
      data = 1;
    else if (data)
      return 1;
    pos += 27 + nseg + body;
  }
  return 0;
}

/* An MP3 whose first frame's Xing or Info tag states the stream's bytes, and where those end
 * another stream begins (its ID3v2 tag or an MPEG frame): files joined with cat. */
static int mp3_joined(const uint8_t *b, size_t len) {
  const size_t p = id3v2_end(b, len);
  unsigned spf;
  if (p + 64 > len || mp3_tag_frames(b, len, &spf) == 0) return 0;
  size_t t = p + 4; /* the tag, after the header, a CRC and the side information */
  while (t + 16 <= p + 64 && memcmp(b + t, "Xing", 4) != 0 && memcmp(b + t, "Info", 4) != 0) t++;
  if (t + 16 > p + 64) return 0;
  const uint32_t flags = be32(b + t + 4);
  if (!(flags & 2)) return 0; /* no byte count */
  size_t q = p + be32(b + t + 8 + (flags & 1 ? 4 : 0));
  if (q >= len || q <= p) return 0;
  q += id3v2_end(b + q, len - q);
  return q + 4 <= len && mpeg_frame_header(b + q);
}

/* Sony Wave64's "riff" and "wave" GUIDs: a W64 file's first 16 bytes, and its bytes 24..40. */
static const uint8_t w64_riff[16] = {'r',  'i',  'f',  'f',  0x2E, 0x91, 0xCF, 0x11,
                                     0xA5, 0xD6, 0x28, 0xDB, 0x04, 0xC1, 0x00, 0x00};
static const uint8_t w64_wave[16] = {'w',  'a',  'v',  'e',  0xF3, 0xAC, 0xD3, 0x11,
                                     0x8C, 0xD1, 0x00, 0xC0, 0x4F, 0x8E, 0xDB, 0x8A};

/* The header of a WAV-family file that begins b (n bytes), "RIFF WAVE", "RF64 WAVE" or "Wave64";
 * NULL when none does. */
static const char *wav_header_at(const uint8_t *b, size_t n) {
  if (n >= 12 && memcmp(b + 8, "WAVE", 4) == 0) {
    if (memcmp(b, "RIFF", 4) == 0) return "RIFF WAVE";
    if (memcmp(b, "RF64", 4) == 0) return "RF64 WAVE";
  }
  if (n >= 40 && memcmp(b, w64_riff, 16) == 0 && memcmp(b + 24, w64_wave, 16) == 0) return "Wave64";
  return NULL;
}

/* Where in b[from, len) a WAV-family file's header with its first chunk begins ("RIFF....WAVEfmt
 * ", "RF64....WAVEds64", W64's GUIDs): the search of a data chunk that states no size, read to
 * the file's end. 0 when none does. */
static uint64_t wav_header_in(const uint8_t *b, size_t from, size_t len) {
  uint64_t at = 0; /* the first of the two searches' finds (memmem: this runs over all the data) */
  if (from + 16 > len) return 0;
  for (const uint8_t *q = b + from + 8;
       q < b + len && (q = memmem(q, (size_t)(b + len - q), "WAVE", 4)); q += 4)
    if (q + 8 <= b + len && ((memcmp(q - 8, "RIFF", 4) == 0 && memcmp(q + 4, "fmt ", 4) == 0) ||
                             (memcmp(q - 8, "RF64", 4) == 0 && memcmp(q + 4, "ds64", 4) == 0))) {
      at = (uint64_t)(q - 8 - b);
      break;
    }
  const uint8_t *end = b + (at ? at : len);
  if (from + 40 > len) return at;
  for (const uint8_t *q = b + from + 24;
       q < end && (q = memmem(q, (size_t)(end - q), w64_wave, 16)); q++)
    if (memcmp(q - 24, w64_riff, 16) == 0) return (uint64_t)(q - 24 - b);
  return at;
}

int64_t audio_riff_after(const uint8_t *b, size_t n, int odd, int data) {
  size_t pos = 0;
  for (int k = 0; k < 64;
       k++) { /* a few chunks (LIST, id3) may follow the data: not a walk of all */
    for (size_t p = pos; p <= pos + (size_t)odd; p++) /* unpadded, then padded */
      if (p < n &&
          (wav_header_at(b + p, n - p) || (data && n - p >= 8 && memcmp(b + p, "data", 4) == 0)))
        return (int64_t)p;
    pos += (size_t)odd;
    if (pos + 8 > n) return -1;
    const uint64_t size = audio_le32(b + pos + 4);
    if (size > n - pos - 8) return -1;
    odd = (int)(size & 1);
    pos += 8 + (size_t)size;
  }
  return -1;
}

/* audio_wav_joined, where data also finds a second data chunk (audio_riff_after's). */
static uint64_t wav_after_data(const uint8_t *b, size_t len, int data) {
  if (len < 12 || (memcmp(b, "RIFF", 4) != 0 && memcmp(b, "RF64", 4) != 0) ||
      memcmp(b + 8, "WAVE", 4) != 0)
    return 0;
  const int rf64 = b[1] == 'F';
  uint64_t ds64_data = 0;
  for (size_t pos = 12; pos + 8 <= len;) {
    uint64_t size = audio_le32(b + pos + 4);
    if (rf64 && memcmp(b + pos, "ds64", 4) == 0 && size >= 16 && size <= len - pos - 8)
      ds64_data = le64(b + pos + 8 + 8);
    if (memcmp(b + pos, "data", 4) == 0) {
      if (rf64 && size == 0xFFFFFFFFu) size = size64_stated(ds64_data) ? ds64_data : 0;
      /* a streaming writer's size (RF64's in ds64): the data runs to the end, read whole */
      if (rf64 ? size == 0 : !size_stated(size)) return data ? 0 : wav_header_in(b, pos + 8, len);
      if (size > len - pos - 8) return 0;
      const size_t end = pos + 8 + (size_t)size;
      const int64_t at = audio_riff_after(b + end, len - end, (int)(size & 1), data);
      return at < 0 ? 0 : end + (uint64_t)at;
    }
    if (size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + (size_t)size + (size & 1);
  }
  return 0;
}

uint64_t audio_wav_joined(const uint8_t *b, size_t len) { return wav_after_data(b, len, 0); }

/* The same for a Sony Wave64 file: where a WAV-family header begins after its data chunk (at the
 * 8-byte boundary its chunks keep, or where its unpadded data ends, or after chunks that follow it:
 * GUID ids, sizes that count their 24-byte header) or, for a data chunk that states no size
 * (ffmpeg's to a pipe), within the data. 0 when none does. */
static uint64_t w64_joined(const uint8_t *b, size_t len) {
  if (len < 40 || wav_header_at(b, len) == NULL || b[0] != 'r') return 0;
  for (uint64_t pos = 40; pos + 24 <= len;) {
    const uint64_t size = le64(b + pos + 16);
    if (size < 24) return 0;
    if (memcmp(b + pos, "data", 4) == 0 && !size64_stated(size - 24))
      return wav_header_in(b, (size_t)pos + 24, len);
    if (size > len - pos) return 0;
    if (memcmp(b + pos, "data", 4) == 0) {
      for (uint64_t q = pos + size, k = 0; k < 64 && q < len; k++) {
        for (uint64_t p = q; p <= ((q + 7) & ~(uint64_t)7) && p < len; p++)
          if (wav_header_at(b + p, len - p)) return p;
        q = (q + 7) & ~(uint64_t)7; /* a chunk after the data */
        if (q + 24 > len || le64(b + q + 16) < 24 || le64(b + q + 16) > len - q) return 0;
        q += le64(b + q + 16);
      }
      return 0;
    }
    const uint64_t step = (size + 7) & ~(uint64_t)7;
    if (step > len - pos) return 0;
    pos += step;
  }
  return 0;
}

/* Where a second FLAC stream begins in b[0, len), a FLAC file (after any ID3v2 tag): its "fLaC"
 * marker and the STREAMINFO block header that must follow it (8 bytes no frame's data holds by
 * chance), after the first stream's; 0 when none does. */
static uint64_t flac_joined(const uint8_t *b, size_t len) {
  const size_t p = id3v2_end(b, len);
  if (p + 8 > len || memcmp(b + p, "fLaC", 4) != 0) return 0;
  for (const uint8_t *q = b + p + 4; (q = memmem(q, (size_t)(b + len - q), "fLaC", 4)); q += 4)
    if (q + 8 <= b + len && (q[4] & 0x7F) == 0 && q[5] == 0 && q[6] == 0 && q[7] == 0x22)
      return (uint64_t)(q - b);
  return 0;
}

/* Where a second AIFF (FORM ... AIFF or AIFC) or AU (.snd) file begins right after the first one's
 * stated end (its FORM size; its data offset and size); 0 when none does. */
static uint64_t aiff_au_joined(const uint8_t *b, size_t len) {
  if (len >= 12 && memcmp(b, "FORM", 4) == 0) {
    const uint64_t end = 8 + (uint64_t)be32(b + 4), padded = end + (end & 1);
    for (uint64_t e = end; e <= padded; e++)
      if (e + 12 <= len && memcmp(b + e, "FORM", 4) == 0 &&
          (memcmp(b + e + 8, "AIFF", 4) == 0 || memcmp(b + e + 8, "AIFC", 4) == 0))
        return e;
  }
  if (len >= 12 && memcmp(b, ".snd", 4) == 0 && be32(b + 8) != 0xFFFFFFFFu) {
    const uint64_t end = (uint64_t)be32(b + 4) + be32(b + 8);
    if (end > 12 && end + 4 <= len && memcmp(b + end, ".snd", 4) == 0) return end;
  }
  return 0;
}

const char *audio_joined(int format, const uint8_t *b, size_t len, char *buf, size_t n) {
  if ((format & SF_FORMAT_TYPEMASK) == SF_FORMAT_OGG && ogg_chained(b, len))
    return "a chained Ogg file (one stream after another: files joined with cat?), and libsndfile "
           "reads only the first: make it one stream (ffmpeg -i IN OUT.flac)";
  if ((format & SF_FORMAT_TYPEMASK) == SF_FORMAT_MPEG && mp3_joined(b, len))
    return "MP3 streams one after another (files joined with cat?), and libsndfile reads only the "
           "frames the first one's tag states: make it one stream (ffmpeg -i IN OUT.flac)";
  static const struct {
    const char *kind, *header, *ext;
  } k[] = {{"WAV", "RIFF WAVE", "wav"}, {"FLAC", "FLAC", "flac"},     {"AIFF", "FORM", "aiff"},
           {"AU", ".snd", "au"},        {"RF64", "RF64 WAVE", "wav"}, {"W64", "Wave64", "w64"}};
  uint64_t at = 0;
  size_t i = 0;
  if ((at = audio_wav_joined(b, len)))
    i = b[1] == 'F' ? 4 : 0;
  else if ((at = w64_joined(b, len)))
    i = 5;
  else if ((at = flac_joined(b, len)))
    i = 1;
  else if ((at = aiff_au_joined(b, len)))
    i = b[0] == 'F' ? 2 : 3;
  else if ((at = wav_after_data(b, len, 1))) { /* a data chunk, then another: no header */
    snprintf(buf, n,
             "two data chunks (a WAV file holds one): a second at byte %llu, which readers "
             "disagree on (libsndfile refuses the file, sox reads the first, ffmpeg the last): "
             "rewrite it (sox IN OUT.wav keeps the first)",
             (unsigned long long)at);
    return buf;
  } else
    return NULL;
  const char *header = i == 0 || i >= 4 ? wav_header_at(b + at, len - at) : k[i].header;
  snprintf(buf, n,
           "%s files one after another (files joined with cat?): a second %s header at byte %llu, "
           "after the first one's data, and libsndfile does not read them as one: join the "
           "originals with sox (sox A.%s B.%s OUT.%s)",
           k[i].kind, header, (unsigned long long)at, k[i].ext, k[i].ext, k[i].ext);
  return buf;
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
  } m[] = {{"FORM", "AIFF"}, {"fLaC", "FLAC"}, {"OggS", "Ogg"}, {"ID3", "MP3"},
           {".snd", "AU"},   {"caff", "CAF"},  {"NIST", "NIST"}};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    size_t n = strlen(m[i].magic);
    if (len >= n && memcmp(b, m[i].magic, n) == 0) return m[i].name;
  }
  if (len >= 12 &&
      (memcmp(b, "RIFF", 4) == 0 || memcmp(b, "RIFX", 4) == 0 || memcmp(b, "RF64", 4) == 0) &&
      memcmp(b + 8, "WAVE", 4) == 0)
    return "WAV";
  if (len >= 4 && mpeg_frame_header(b)) return "MPEG";
  return NULL;
}

const char *audio_unsupported(const uint8_t *b, size_t len) {
  if (len >= 12 && memcmp(b + 4, "ftyp", 4) == 0) return "MP4/M4A";
  if (len >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "AVI ", 4) == 0) return "AVI";
  if (len >= 4 && memcmp(b, "\x1A\x45\xDF\xA3", 4) == 0) return "Matroska/WebM";
  if (len >= 8 && memcmp(b, "\x30\x26\xB2\x75\x8E\x66\xCF\x11", 8) == 0) return "ASF/WMA";
  if (len >= 5 && memcmp(b, "#!AMR", 5) == 0) return "AMR";
  if (len >= 4 && memcmp(b, "wvpk", 4) == 0) return "WavPack";
  if (len >= 4 && memcmp(b, "TTA1", 4) == 0) return "TTA";
  if (len >= 4 && memcmp(b, "MAC ", 4) == 0) return "Monkey's Audio (APE)";
  if (len >= 4 && memcmp(b, "\x0B\x77", 2) == 0) return "AC-3"; /* a raw stream's sync word */
  if (len >= 4 && memcmp(b, "\x7F\xFE\x80\x01", 4) == 0) return "DTS";
  /* ADTS: MPEG's sync with the layer bits 00, which MPEG audio reserves */
  if (len >= 4 && b[0] == 0xFF && (b[1] & 0xF6) == 0xF0) return "AAC (ADTS)";
  return NULL;
}

/* The codecs of the WAV format tags (RFC 2361, and ffmpeg's) a corpus may hold and libsndfile
 * does not decode; it reads PCM, float, A-law, u-law, IMA and MS ADPCM, GSM 6.10, G.721 and MP3. */
static const char *wav_codec_name(unsigned tag) {
  static const struct {
    unsigned tag;
    const char *name;
  } c[] = {{0x0010, "OKI ADPCM"},  {0x0014, "G.723 ADPCM"},  {0x0020, "Yamaha ADPCM"},
           {0x0022, "TrueSpeech"}, {0x0042, "G.723.1"},      {0x0045, "G.726 ADPCM"},
           {0x0050, "MP2"},        {0x0064, "G.726 ADPCM"},  {0x0065, "G.722 ADPCM"},
           {0x00FF, "AAC"},        {0x0160, "WMA"},          {0x0161, "WMA"},
           {0x0162, "WMA Pro"},    {0x0163, "WMA Lossless"}, {0x028F, "G.722 ADPCM"},
           {0x1610, "AAC"},        {0x2000, "AC-3"},         {0x2001, "DTS"},
           {0xF1AC, "FLAC"}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    if (c[i].tag == tag) return c[i].name;
  return NULL;
}

static const char *audio_wav_codec(const uint8_t *b, size_t len, unsigned *tag) {
  if (len < 12 || (memcmp(b, "RIFF", 4) != 0 && memcmp(b, "RF64", 4) != 0) ||
      memcmp(b + 8, "WAVE", 4) != 0)
    return NULL;
  for (size_t pos = 12; pos + 8 <= len;) {
    const uint64_t size = audio_le32(b + pos + 4);
    if (memcmp(b + pos, "fmt ", 4) == 0) {
      if (size < 2 || size > len - pos - 8) return NULL;
      const uint8_t *f = b + pos + 8;
      unsigned t = f[0] | f[1] << 8;
      /* WAVE_FORMAT_EXTENSIBLE: the tag is the first two bytes of the sub-format's GUID */
      if (t == 0xFFFE && size >= 40 &&
          memcmp(f + 26, "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71", 14) == 0)
        t = f[24] | f[25] << 8;
      *tag = t;
      return wav_codec_name(t);
    }
    if (size + (size & 1) > len - pos - 8) return NULL;
    pos += 8 + (size_t)size + (size & 1);
  }
  return NULL;
}

static int rate_said(char *buf, size_t n, const char *rate) {
  snprintf(buf, n, ": its header states a sample rate of %s Hz", rate);
  return 1;
}

int audio_bad_rate(const uint8_t *b, size_t len, char *buf, size_t n) {
  char r[64];
  if (len >= 20 && memcmp(b, ".snd", 4) == 0) { /* AU: a big-endian rate at byte 16 */
    const uint32_t rate = be32(b + 16);
    if (rate != 0 && rate <= INT32_MAX) return 0;
    snprintf(r, sizeof r, "%lu", (unsigned long)rate);
    return rate_said(buf, n, r);
  }
  if (len >= 8 && memcmp(b, "caff", 4) == 0) { /* CAF: the desc chunk's big-endian double */
    for (size_t pos = 8; pos + 12 <= len;) {
      const uint64_t size = (uint64_t)be32(b + pos + 4) << 32 | be32(b + pos + 8);
      if (memcmp(b + pos, "desc", 4) == 0) {
        if (size < 8 || size > len - pos - 12) return 0;
        const uint64_t bits = (uint64_t)be32(b + pos + 12) << 32 | be32(b + pos + 16);
        double rate;
        memcpy(&rate, &bits, sizeof rate);
        if (rate >= 0.5 && rate < 2147483647.5) return 0; /* libsndfile rounds it to an int */
        snprintf(r, sizeof r, "%g", rate);
        return rate_said(buf, n, r);
      }
      if (size > len - pos - 12) return 0;
      pos += 12 + (size_t)size;
    }
    return 0;
  }
  if (len >= 12 && memcmp(b, "FORM", 4) == 0 &&
      (memcmp(b + 8, "AIFF", 4) == 0 || memcmp(b + 8, "AIFC", 4) == 0)) {
    for (size_t pos = 12; pos + 8 <= len;) { /* COMM: an 80-bit extended rate at byte 8 */
      const uint64_t size = be32(b + pos + 4);
      if (memcmp(b + pos, "COMM", 4) == 0) {
        if (size < 18 || size > len - pos - 8) return 0;
        const uint8_t *x = b + pos + 16;
        const uint64_t mant = (uint64_t)be32(x + 2) << 32 | be32(x + 6);
        if (mant == 0) return rate_said(buf, n, "0"); /* libsndfile reads 0 as 1 Hz */
        if (!(x[0] & 0x80)) return 0; /* negative: libsndfile leaves it unset */
        const int e = ((x[0] & 0x7f) << 8 | x[1]) - 16383 - 63;
        snprintf(r, sizeof r, "-%g", ldexp((double)mant, e < -1100 ? -1100 : e > 1100 ? 1100 : e));
        return rate_said(buf, n, r);
      }
      if (size + (size & 1) > len - pos - 8) return 0;
      pos += 8 + (size_t)size + (size & 1);
    }
    return 0;
  }
  if (len < 12 || (memcmp(b, "RIFF", 4) != 0 && memcmp(b, "RF64", 4) != 0) ||
      memcmp(b + 8, "WAVE", 4) != 0)
    return 0;
  for (size_t pos = 12; pos + 8 <= len;) {
    const uint64_t size = audio_le32(b + pos + 4);
    if (memcmp(b + pos, "fmt ", 4) == 0) {
      if (size < 16 || size > len - pos - 8) return 0;
      const uint32_t rate = audio_le32(b + pos + 12);
      if (rate != 0 && rate <= INT32_MAX) return 0; /* libsndfile's int: past it, negative */
      snprintf(r, sizeof r, "%lu", (unsigned long)rate);
      return rate_said(buf, n, r);
    }
    if (size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + (size_t)size + (size & 1);
  }
  return 0;
}

const char *audio_stand_in(const uint8_t *b, size_t len) {
  static const char lfs[] = "version https://git-lfs.github.com/spec/v1";
  if (len >= sizeof lfs - 1 && memcmp(b, lfs, sizeof lfs - 1) == 0)
    return "a Git LFS pointer (its repository was cloned without the LFS files: git lfs pull)";
  if (len >= 4 && memcmp(b, "\x00\x05\x16\x07", 4) == 0) /* ._a.wav beside a.wav */
    return "macOS metadata (an AppleDouble ._ file a Mac's archive left beside the audio: leave "
           "them out, find DIR -name '*.wav' ! -name '._*')";
  size_t i = len >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) i++;
  const char *p = (const char *)b + i;
  const size_t n = len - i;
  if ((n >= 14 && strncasecmp(p, "<!doctype html", 14) == 0) ||
      (n >= 5 && strncasecmp(p, "<html", 5) == 0))
    return "an HTML page (a download that got a sign-in or error page?)";
  if (n >= 5 && memcmp(p, "<?xml", 5) == 0)
    return "an XML document (a download that got a storage service's error reply?)";
  return NULL;
}

/* The codec of an Ogg file's first stream (its first page's packet) that libsndfile does not
 * decode: it reads Vorbis and Opus. */
static const char *ogg_codec(const uint8_t *b, size_t len) {
  if (len < 27 + 8 || memcmp(b, "OggS", 4) != 0) return NULL;
  const size_t p = 27 + (size_t)b[26];
  if (p + 8 > len) return NULL;
  if (memcmp(b + p, "Speex   ", 8) == 0) return "Speex";
  if (memcmp(b + p,
             "\x7F"
             "FLAC",
             5) == 0)
    return "FLAC (libsndfile reads FLAC files, not FLAC in Ogg)";
  if (memcmp(b + p, "\x80theora", 7) == 0) return "Theora (a video)";
  return NULL;
}

/* A NIST SPHERE file's compressed sample_coding (LDC's corpora, WSJ and Switchboard say, hold
 * Shorten-compressed SPHERE), which libsndfile does not decode: "Shorten compression
 * (sample_coding pcm,embedded-shorten-v2.00...)" into buf; NULL for PCM, u-law, A-law. */
static const char *nist_codec(const uint8_t *b, size_t len, char *buf, size_t n) {
  if (len < 16 || memcmp(b, "NIST_1A\n", 8) != 0) return NULL;
  const size_t h = len < 4096 ? len : 4096; /* the header: 1024 bytes, as a rule */
  static const char key[] = "\nsample_coding -s";
  const uint8_t *k = memmem(b, h, key, sizeof key - 1);
  if (!k) return NULL;
  const char *v = (const char *)k + sizeof key - 1;
  const char *end = (const char *)b + h;
  while (v < end && *v >= '0' && *v <= '9') v++;
  if (v < end && *v == ' ') v++;
  size_t vn = 0;
  while (v + vn < end && v[vn] > ' ' && v[vn] < 0x7F && vn < 64) vn++;
  const char *what = memmem(v, vn, "shorten", 7)     ? "Shorten compression"
                     : memmem(v, vn, "wavpack", 7)   ? "WavPack compression"
                     : memmem(v, vn, "shortpack", 9) ? "Shortpack compression"
                                                     : NULL;
  if (!what) return NULL;
  snprintf(buf, n, "%s (sample_coding %.*s; LDC's sph2pipe -f wav IN OUT.wav decodes it)", what,
           (int)vn, v);
  return buf;
}

const char *audio_codec_unread(const uint8_t *b, size_t len, char *buf, size_t n) {
  unsigned tag = 0;
  const char *c = audio_wav_codec(b, len, &tag);
  if (c) {
    snprintf(buf, n, "a WAV file: %s (format tag 0x%04X)", c, tag);
    return buf;
  }
  char nist[160];
  if ((c = nist_codec(b, len, nist, sizeof nist))) {
    snprintf(buf, n, "a NIST SPHERE file: %s", c);
    return buf;
  }
  if ((c = ogg_codec(b, len))) {
    snprintf(buf, n, "an Ogg file: %s", c);
    return buf;
  }
  return NULL;
}

/* Bytes at the end of b[0, n) (what follows a WAV's data chunk; odd: its size was odd, its pad
 * byte there or left out) that no chunk holds: from the first place where no chunk header (an id
 * of 4 printable ASCII bytes, a size within the bytes) begins. */
static uint64_t unheld_after(const uint8_t *b, size_t n, int odd) {
  size_t pos = 0;
  for (int k = 0; k < 64 && pos < n; k++) {
    for (size_t p = pos; p <= pos + (size_t)odd && p + 8 <= n; p++) {
      int id = 1;
      for (int c = 0; c < 4; c++) id &= b[p + (size_t)c] >= 0x20 && b[p + (size_t)c] < 0x7F;
      if (id && audio_le32(b + p + 4) <= n - p - 8) {
        pos = p;
        goto chunk;
      }
    }
    return odd && n - pos == 1 ? 0 : n - pos; /* (a pad byte alone is none) */
  chunk:;
    const uint32_t size = audio_le32(b + pos + 4);
    odd = (int)(size & 1);
    pos += 8 + (size_t)size;
  }
  return 0;
}

int audio_unheld_note(const uint8_t *tail, size_t n, int odd, uint32_t byte_rate, char *buf,
                      size_t len) {
  const uint64_t unheld = unheld_after(tail, n, odd);
  if (unheld < AUDIO_UNHELD_MIN || byte_rate == 0) return 0;
  snprintf(buf, len,
           "%llu bytes (%.2f s as its samples) follow its data chunk and no chunk holds them: "
           "stored as its header states, as libsndfile, librosa and sox read it; if they are "
           "samples a writer left out of the header, 'sox --ignore-length IN OUT' keeps them",
           (unsigned long long)unheld, (double)unheld / byte_rate);
  return 1;
}

int audio_wav_unheld_note(const uint8_t *b, size_t len, char *buf, size_t n) {
  if (len < 12 || memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0) return 0;
  uint32_t byte_rate = 0;
  for (size_t pos = 12; pos + 8 <= len;) {
    const uint64_t size = audio_le32(b + pos + 4);
    if (memcmp(b + pos, "fmt ", 4) == 0 && size >= 16 && pos + 24 <= len)
      byte_rate = audio_le32(b + pos + 16);
    if (memcmp(b + pos, "data", 4) == 0) {
      if (!size_stated(size) || size > len - pos - 8) return 0; /* read to the end; cut short */
      const size_t end = pos + 8 + (size_t)size;
      return audio_unheld_note(b + end, len - end, (int)(size & 1), byte_rate, buf, n);
    }
    if (size + (size & 1) > len - pos - 8) return 0;
    pos += 8 + (size_t)size + (size & 1);
  }
  return 0;
}
