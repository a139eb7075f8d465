/* libFuzzer target over the audio readers featurize runs on every input file: fc_audio_decode
 * (its own 16-bit WAV reader, the truncation check, then libsndfile, mixing and soxr) and the
 * staging path's read of a 16-bit WAV in place (audio_pcm16_open, then audio_pcm16_finish into a
 * buffer of exactly the samples, or audio_pcm16_read_all). The first input byte picks the target
 * rate of the decode (bit 0: 22.05 kHz; bit 1: 16 kHz; neither: the file's own); the rest is the
 * file's bytes (the in-place read takes 16-bit mono at 22.05 kHz). Invariants beyond "no crash, no leak, no OOB":
 *   - decode gives samples that are all finite, or an error with a reason (out of memory aside);
 *   - the in-place read agrees with the whole file: a file it takes in place is one
 *     audio_pcm16_view takes whole, with the same samples at the same place, and the three pieces
 *     it leaves (the bytes before the samples, the samples, the bytes after them) are the file's
 *     bytes, so their digest is the whole file's; a file it does not take is read whole, byte for
 *     byte, and is one the view does not take or whose samples start past the first read; one
 *     it takes that the view does not (another file or a second data chunk after the samples,
 *     past the first read) is found so when the rest is read (EAGAIN: read again as usual).
 *
 * Built with libFuzzer by tests/fuzz/build.sh; replayed without libFuzzer (seeds + seeded
 * mutations) by tests/fuzz/replay_audio.c. */
#include "featcache/fc_audio.h"
#include "featcache/fc_format.h"
#include "libcache/mel/featurize/audio_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_assert.h"

enum { FIRST_READ = 4096 }; /* audio_pcm16_open's first read */

/* The file the in-place reader opens (a memfd, by its /proc/self/fd path: a regular file in
 * tmpfs), written anew for each input. */
static int file_fd = -1;
static char file_path[64];

static void put_file(const uint8_t *d, size_t n) {
  if (file_fd < 0) {
    file_fd = memfd_create("fuzz_audio", 0);
    FUZZ_ASSERT(file_fd >= 0);
    snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
  }
  FUZZ_ASSERT(ftruncate(file_fd, 0) == 0);
  for (size_t off = 0; off < n;) {
    ssize_t k = pwrite(file_fd, d + off, n - off, (off_t)off);
    FUZZ_ASSERT(k > 0);
    off += (size_t)k;
  }
}

static void check_decode(const uint8_t *d, size_t n, uint32_t target) {
  float *y = NULL;
  size_t ny = 0;
  fc_audio_info info;
  char why[256];
  int rc = fc_audio_decode(d, n, target, 0, &y, &ny, &info, why, sizeof why);
  if (rc == 0) {
    FUZZ_ASSERT(y != NULL && ny > 0);
    for (size_t i = 0; i < ny; i++) FUZZ_ASSERT(isfinite(y[i]));
    free(y);
  } else {
    FUZZ_ASSERT(y == NULL && ny == 0);
    FUZZ_ASSERT(rc == ENOMEM || why[0] != '\0');
  }
}

static void check_in_place(const uint8_t *d, size_t n) {
  put_file(d, n);
  const void *pcm = NULL;
  size_t nv = 0;
  fc_audio_info vi;
  char why[256];
  const int view = audio_pcm16_view(d, n, 22050, 0, &pcm, &nv, &vi, why, sizeof why);
  FUZZ_ASSERT(view == 0 || view == 1);
  static uint8_t *buf;
  static size_t cap;
  audio_pcm16_file f;
  fc_audio_info pi;
  int shape = -1;
  int rc = audio_pcm16_open(file_path, 22050, &buf, &cap, &f, &pi, &shape);
  if (n == 0) {
    FUZZ_ASSERT(rc == FC_EEMPTY);
    return;
  }
  FUZZ_ASSERT(rc == 0);
  if (shape == 1 && view == 0) { /* a file or data chunk after the samples, past the first read */
    uint8_t *samples = malloc(f.n_samples * 2 + 1);
    FUZZ_ASSERT(samples != NULL);
    size_t toff = 0, tlen = 0;
    rc = audio_pcm16_finish(&f, samples, &buf, &cap, &toff, &tlen);
    FUZZ_ASSERT(rc == EAGAIN); /* found when its bytes are read: read again as usual */
    free(samples);
  } else if (shape == 1) {
    FUZZ_ASSERT(view == 1 && f.n_samples == nv && (const uint8_t *)pcm == d + f.data_off);
    FUZZ_ASSERT(pi.frames == vi.frames && pi.sample_rate == vi.sample_rate && pi.size == n);
    uint8_t *samples = malloc(nv * 2); /* exactly the samples: ASan sees a write past them */
    FUZZ_ASSERT(samples != NULL);
    size_t toff = 0, tlen = 0;
    rc = audio_pcm16_finish(&f, samples, &buf, &cap, &toff, &tlen);
    FUZZ_ASSERT(rc == 0); /* the file does not change */
    FUZZ_ASSERT(memcmp(buf, d, f.data_off) == 0);
    FUZZ_ASSERT(memcmp(samples, pcm, nv * 2) == 0);
    FUZZ_ASSERT(f.data_off + nv * 2 + tlen == n);
    FUZZ_ASSERT(tlen == 0 || memcmp(buf + toff, d + f.data_off + nv * 2, tlen) == 0);
    fc_digest whole, pieces;
    fc_digest_buffer(d, n, &whole);
    const void *parts[3] = {buf, samples, buf + toff};
    const size_t lens[3] = {f.data_off, nv * 2, tlen};
    fc_digest_pieces(parts, lens, 3, &pieces);
    FUZZ_ASSERT(memcmp(whole.bytes, pieces.bytes, sizeof whole.bytes) == 0);
    free(samples);
  } else {
    FUZZ_ASSERT(shape == 0);
    /* taken whole: the view does not take it, or its samples start past the first read */
    FUZZ_ASSERT(view == 0 || (size_t)((const uint8_t *)pcm - d) > FIRST_READ - 8);
    size_t got = 0;
    rc = audio_pcm16_read_all(&f, &buf, &cap, &got, &pi);
    FUZZ_ASSERT(rc == 0 && got == n && memcmp(buf, d, n) == 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const uint32_t target = mode & 1 ? 22050 : mode & 2 ? 16000 : 0;
  /* a private copy of exactly the file's bytes, so ASan sees any read past them */
  const size_t n = size - 1;
  uint8_t *d = malloc(n ? n : 1);
  FUZZ_ASSERT(d != NULL);
  if (n) memcpy(d, data + 1, n);
  check_decode(d, n, target);
  check_in_place(d, n);
  free(d);
  return 0;
}
