/* Replay of the fuzz target tests/fuzz/fuzz_audio.c without libFuzzer: WAV seeds of the shapes
 * corpora hold (16-bit mono at 22.05 kHz plain, with chunks before and after the samples, with its
 * samples starting at, just before and past the in-place reader's first 4 KiB, with streaming
 * sizes, cut off, with stray bytes; 16-bit at 16 kHz and stereo; 8- and 24-bit; 32- and 64-bit
 * float, one with a NaN; WAVE_FORMAT_EXTENSIBLE), each decoded to 22.05 kHz, to 16 kHz and at its
 * own rate, then seeded random mutations of each (the generic ones, and a header field of the
 * "fmt " or "data" chunk set to an edge value). A crash, a sanitizer report or a broken invariant
 * (abort) fails the test. With FC_FUZZ_SEED_DIR set, the seeds are also written there as a corpus
 * for tests/fuzz/build.sh. */
#include "tests/fuzz/fuzz_audio.c"
#include "tests/fuzz/replay.h"

typedef struct wav_seed {
  unsigned tag, channels, bits;
  uint32_t rate, frames;
  uint32_t junk; /* a JUNK chunk of this many bytes before "fmt " */
  uint32_t after; /* a LIST chunk of this many bytes after the samples (odd: padded) */
  uint32_t trailing; /* bytes after the last chunk */
  int streaming; /* RIFF and data sizes 0xFFFFFFFF */
  uint32_t cut; /* the file cut this many bytes short */
  int nan_at; /* >= 0: that float sample is NaN */
} wav_seed;

static size_t put(uint8_t *p, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
  return at + (size_t)bytes;
}

static void add_wav(const wav_seed *w) {
  const int ext = w->tag == 0xFFFE;
  const uint32_t fmt = ext ? 40 : 16, align = w->channels * w->bits / 8;
  const uint32_t data = w->frames * align;
  const size_t cap =
      12 + (w->junk ? 8 + w->junk : 0) + 8 + fmt + 8 + data + 1 + 8 + w->after + 1 + w->trailing;
  uint8_t *b = calloc(1, cap);
  size_t at = 0;
  memcpy(b, "RIFF", 4);
  at = 8;
  memcpy(b + at, "WAVE", 4);
  at += 4;
  if (w->junk) {
    memcpy(b + at, "JUNK", 4);
    at = put(b, at + 4, w->junk, 4) + w->junk;
  }
  memcpy(b + at, "fmt ", 4);
  at = put(b, at + 4, fmt, 4);
  at = put(b, at, w->tag, 2);
  at = put(b, at, w->channels, 2);
  at = put(b, at, w->rate, 4);
  at = put(b, at, w->rate * align, 4);
  at = put(b, at, align, 2);
  at = put(b, at, w->bits, 2);
  if (ext) { /* cbSize 22, valid bits, channel mask, KSDATAFORMAT_SUBTYPE_PCM */
    static const uint8_t guid[16] = {1,    0, 0, 0,    0, 0,    0x10, 0,
                                     0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71};
    at = put(b, at, 22, 2);
    at = put(b, at, w->bits, 2);
    at = put(b, at, w->channels == 1 ? 4 : 3, 4);
    memcpy(b + at, guid, 16);
    at += 16;
  }
  memcpy(b + at, "data", 4);
  at = put(b, at + 4, w->streaming ? 0xFFFFFFFFu : data, 4);
  uint32_t s = 12345u + w->frames;
  for (uint32_t i = 0; i < w->frames * w->channels; i++) {
    s = s * 1664525u + 1013904223u;
    const double v = 0.4 * sin(0.03 * i) + ((double)(s >> 20) - 2048) / 20000.0;
    if (w->tag == 3 && w->bits == 32) {
      float f = (int)i == w->nan_at ? NAN : (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      at = put(b, at, u, 4);
    } else if (w->tag == 3) {
      double x = v;
      uint64_t u;
      memcpy(&u, &x, 8);
      at = put(b, at, (uint32_t)u, 4);
      at = put(b, at, (uint32_t)(u >> 32), 4);
    } else if (w->bits == 8) {
      at = put(b, at, (uint32_t)(128 + lrint(v * 127)), 1);
    } else {
      at = put(b, at, (uint32_t)lrint(v * (w->bits == 24 ? 8388607.0 : 32767.0)), (int)w->bits / 8);
    }
  }
  if (data % 2) at++;
  if (w->after) {
    memcpy(b + at, "LIST", 4);
    at = put(b, at + 4, w->after, 4);
    memcpy(b + at, "INFOISFT", w->after < 8 ? w->after : 8);
    at += w->after + w->after % 2;
  }
  for (uint32_t i = 0; i < w->trailing; i++) b[at++] = 0xA5;
  put(b, 4, w->streaming ? 0xFFFFFFFFu : (uint32_t)(at - 8), 4);
  const size_t len = at > w->cut ? at - w->cut : 0;
  for (uint8_t mode = 0; mode < 3; mode++) fuzz_add_seed(mode, b, len); /* own, 22.05k, 16k */
  free(b);
}

/* A field of the "fmt " or "data" chunk's header set to an edge value. */
static void header_edge(uint8_t *buf, size_t *np, size_t cap, uint64_t k) {
  (void)cap;
  static const uint32_t edge[] = {0,     1,           2,           3,          8,       16,
                                  24,    32,          64,          0xFFFF,     0x10000, 22050,
                                  44100, 0x7FFFF000u, 0x7FFFFFFFu, 0xFFFFFFFFu};
  const size_t n = *np;
  const char *chunk = (k >> 8) & 1 ? "data" : "fmt ";
  for (size_t i = 1; i + 8 <= n && i < 8192; i++) {
    if (memcmp(buf + i, chunk, 4) != 0) continue;
    /* data: its size; fmt: its size or one of tag, channels, rate, byte rate, align, bits */
    static const unsigned off[] = {4, 8, 10, 12, 16, 20, 22};
    static const unsigned wid[] = {4, 2, 2, 4, 4, 2, 2};
    const unsigned f = chunk[0] == 'd' ? 0 : (unsigned)((k >> 16) % 7);
    if (i + off[f] + wid[f] > n) return;
    const uint32_t v = edge[(k >> 24) % (sizeof edge / sizeof *edge)];
    put(buf, i + off[f], v, (int)wid[f]);
    return;
  }
}

int main(void) {
  /* tag, channels, bits, rate, frames, junk, after, trailing, streaming, cut, nan_at */
  const wav_seed seeds[] = {
      {1, 1, 16, 22050, 1500, 0, 0, 0, 0, 0, -1}, /* plain, within the first read */
      {1, 1, 16, 22050, 5000, 0, 5, 0, 0, 0, -1}, /* an odd LIST chunk after the samples */
      {1, 1, 16, 22050, 900, 0, 40, 0, 0, 0, -1}, /* ... all within the first read */
      {1, 1, 16, 22050, 3000, 4044, 0, 0, 0, 0, -1}, /* samples from byte 4096 */
      {1, 1, 16, 22050, 3000, 4042, 0, 0, 0, 0, -1}, /* one sample within the first read */
      {1, 1, 16, 22050, 2000, 5000, 0, 0, 0, 0, -1}, /* a header past the first read */
      {1, 1, 16, 22050, 2000, 0, 0, 3, 0, 0, -1}, /* stray bytes at the end */
      {1, 1, 16, 22050, 2500, 0, 0, 0, 1, 0, -1}, /* streaming sizes */
      {1, 1, 16, 22050, 3000, 0, 0, 0, 0, 2001, -1}, /* cut off */
      {1, 1, 16, 16000, 3000, 0, 0, 0, 0, 0, -1},
      {1, 2, 16, 22050, 2000, 0, 0, 0, 0, 0, -1},
      {1, 1, 8, 8000, 2000, 0, 0, 0, 0, 0, -1},
      {1, 1, 24, 48000, 2000, 0, 0, 0, 0, 0, -1},
      {3, 1, 32, 22050, 2000, 0, 0, 0, 0, 0, -1},
      {3, 2, 32, 44100, 2000, 0, 0, 0, 0, 0, 1501}, /* a NaN */
      {3, 1, 64, 16000, 1000, 0, 0, 0, 0, 0, -1},
      {0xFFFE, 1, 16, 22050, 2000, 0, 0, 0, 0, 0, -1}, /* WAVE_FORMAT_EXTENSIBLE */
  };
  for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) add_wav(&seeds[i]);
  fuzz_add_seed(0, "", 0);
  fuzz_add_seed_str(1, "RIFF\x24\x00\x00\x00WAVEfmt ");
  fuzz_add_seed_str(1, "not audio at all, a line of text\n");
  /* what the sniffers of a refused file read (audio_sniff.c): a compressed WAV cut short (IMA
   * ADPCM, 505 samples a 256-byte block, a fact chunk), a WAV of a codec libsndfile does not decode
   * (AC-3), an Ogg page of Speex, and what stands in for audio: a Git LFS pointer, macOS's
   * AppleDouble, an HTML page */
  static const uint8_t ima[] =
      "RIFF\x64\x02\x00\x00WAVEfmt \x14\x00\x00\x00\x11\x00\x01\x00"
      "\x40\x1f\x00\x00\xd7\x0f\x00\x00\x00\x01\x04\x00\x02\x00"
      "\xf9\x01"
      "fact\x04\x00\x00\x00\xf2\x03\x00\x00"
      "data\x00\x02"
      "\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08";
  static const uint8_t ac3[] =
      "RIFF\x30\x00\x00\x00WAVEfmt \x12\x00\x00\x00\x00\x20\x02\x00"
      "\x44\xac\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "data\x08\x00\x00\x00\x0b\x77\x01\x02\x03\x04\x05\x06";
  static const uint8_t spx[] =
      "OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03"
      "\x04\x00\x00\x00\x00\x00\x00\x00\x00\x01\x50Speex   1.2.1";
  static const uint8_t dbl[] = "\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        \x00\x02";
  fuzz_add_seed(0, ima, sizeof ima - 1);
  fuzz_add_seed(0, ac3, sizeof ac3 - 1);
  fuzz_add_seed(0, spx, sizeof spx - 1);
  fuzz_add_seed(0, dbl, sizeof dbl - 1);
  fuzz_add_seed_str(0, "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 9\n");
  fuzz_add_seed_str(0, "<!DOCTYPE html>\n<html></html>\n");
  return fuzz_replay("audio", 1000, header_edge);
}
