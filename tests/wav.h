/* The tests' WAV writer: 16-bit mono PCM files, byte by byte (no libsndfile, so a
 * decoder bug cannot hide in the fixture). */
#ifndef FC_TESTS_WAV_H
#define FC_TESTS_WAV_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline void put_le(FILE *f, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; i++) fputc((int)((v >> (8 * i)) & 0xff), f);
}

/* The 44-byte header of a 16-bit mono file of n samples at rate sr. */
static inline void wav_header16(FILE *f, uint32_t sr, uint32_t n) {
  fwrite("RIFF", 1, 4, f);
  put_le(f, 36 + 2 * n, 4);
  fwrite("WAVEfmt ", 1, 8, f);
  put_le(f, 16, 4);
  put_le(f, 1, 2);
  put_le(f, 1, 2);
  put_le(f, sr, 4);
  put_le(f, 2 * sr, 4);
  put_le(f, 2, 2);
  put_le(f, 16, 2);
  fwrite("data", 1, 4, f);
  put_le(f, 2 * n, 4);
}

/* n samples of a tone whose pitch depends on k (distinct bytes for distinct k). Exits on error. */
static inline void write_wav(const char *path, int k, uint32_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  wav_header16(f, 22050, n);
  for (uint32_t i = 0; i < n; i++)
    put_le(f, (uint32_t)(int16_t)(8000 * sin(2 * M_PI * (200 + 37 * k) * i / 22050.0)), 2);
  fclose(f);
}

#endif
