/* Audio reading without Python: fc_audio_read_file's errors and stat fields, fc_audio_decode on
 * WAVs built here byte by byte (int16 scaling x/32768, u8, float, the channel mean, resampled
 * length ceil(n*target/source), block-boundary lengths), and the broken inputs (empty, text,
 * truncated, header only, 0 samples, too long, float samples that are NaN, infinite or past any
 * PCM scale); a 16-bit file read in place (featurize's staging
 * path: audio_pcm16_open/finish/read_all) against the whole file read and viewed. The numbers
 * against librosa are checked by tests/reference/test_audio_decode.py. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "featcache/fc_audio.h"
#include "libcache/mel/featurize/audio_int.h"

#include "tests/check.h"

static char tmpdir[256];

static void put16(uint8_t *p, unsigned v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  put16(p, v & 0xFFFF);
  put16(p + 2, v >> 16);
}

/* A canonical 44-byte-header WAV. fmt_tag 1 PCM, 3 float. data_bytes as claimed in the header;
 * the returned buffer holds 44 + payload_len bytes. */
static uint8_t *make_wav(unsigned fmt_tag, unsigned channels, uint32_t rate, unsigned bits,
                         const void *payload, size_t payload_len, uint32_t data_bytes,
                         size_t *len) {
  uint8_t *b = calloc(1, 44 + payload_len);
  memcpy(b, "RIFF", 4);
  put32(b + 4, 36 + data_bytes);
  memcpy(b + 8, "WAVEfmt ", 8);
  put32(b + 16, 16);
  put16(b + 20, fmt_tag);
  put16(b + 22, channels);
  put32(b + 24, rate);
  put32(b + 28, rate * channels * bits / 8);
  put16(b + 32, channels * bits / 8);
  put16(b + 34, bits);
  memcpy(b + 36, "data", 4);
  put32(b + 40, data_bytes);
  if (payload_len) memcpy(b + 44, payload, payload_len);
  *len = 44 + payload_len;
  return b;
}

static int decode(const void *b, size_t len, uint32_t target, double max_s, float **y, size_t *n,
                  fc_audio_info *info, char *why) {
  memset(info, 0, sizeof *info);
  return fc_audio_decode(b, len, target, max_s, y, n, info, why, 256);
}

static void test_pcm16(void) {
  int16_t pcm[6] = {0, 16384, -32768, 32767, 1, -1};
  size_t len;
  uint8_t *w = make_wav(1, 1, 16000, 16, pcm, sizeof pcm, sizeof pcm, &len);
  float *y;
  size_t n;
  fc_audio_info info;
  char why[256];
  int rc = decode(w, len, 0, 0, &y, &n, &info, why);
  CHECK(rc == 0, "rc %d %s", rc, why);
  if (rc == 0) {
    CHECK(n == 6 && info.frames == 6 && info.sample_rate == 16000 && info.channels == 1,
          "n %zu frames %llu sr %u ch %u", n, (unsigned long long)info.frames, info.sample_rate,
          info.channels);
    for (int i = 0; i < 6; i++)
      CHECK(y[i] == (float)pcm[i] / 32768.0f, "sample %d: got %.9g, expected %.9g (x/32768)", i,
            y[i], pcm[i] / 32768.0);
    free(y);
  }
  /* Same rate as target: no resampling. */
  rc = decode(w, len, 16000, 0, &y, &n, &info, why);
  CHECK(rc == 0 && n == 6, "target = source: rc %d n %zu", rc, n);
  if (rc == 0) free(y);
  free(w);
}

static void test_u8_and_float(void) {
  uint8_t u8[4] = {128, 255, 0, 192};
  size_t len;
  uint8_t *w = make_wav(1, 1, 8000, 8, u8, sizeof u8, sizeof u8, &len);
  float *y;
  size_t n;
  fc_audio_info info;
  char why[256];
  int rc = decode(w, len, 0, 0, &y, &n, &info, why);
  CHECK(rc == 0 && n == 4, "u8: rc %d %s", rc, why);
  if (rc == 0) {
    for (int i = 0; i < 4; i++)
      CHECK(y[i] == (float)(u8[i] - 128) / 128.0f, "u8 sample %d: %.9g", i, y[i]);
    free(y);
  }
  free(w);
  float f[3] = {0.25f, -1.5f, 3.0f}; /* float files are not clipped or scaled */
  w = make_wav(3, 1, 8000, 32, f, sizeof f, sizeof f, &len);
  rc = decode(w, len, 0, 0, &y, &n, &info, why);
  CHECK(rc == 0 && n == 3, "float: rc %d %s", rc, why);
  if (rc == 0) {
    for (int i = 0; i < 3; i++) CHECK(y[i] == f[i], "float sample %d: %.9g", i, y[i]);
    free(y);
  }
  free(w);
}

/* Float files holding what no sound is (NaN, an infinity, a value past 2^31, the widest integer
 * PCM's scale) are damaged: an error naming the first such sample, its time and channel, never
 * samples whose features would be NaN, infinite or a frame of silence. Within 2^31 they decode
 * as they are. */
static int float_case(const float *f, size_t n, unsigned channels, uint32_t rate, uint32_t target,
                      const char *want, size_t want_n) {
  size_t len;
  uint8_t *w = make_wav(3, channels, rate, 32, f, n * sizeof *f, (uint32_t)(n * sizeof *f), &len);
  float *y = NULL;
  size_t got = 0;
  fc_audio_info info;
  char why[256];
  int rc = decode(w, len, target, 0, &y, &got, &info, why);
  free(w);
  if (!want) {
    CHECK(rc == 0 && got == want_n, "%zu floats: rc %d '%s', %zu samples (want %zu)", n, rc, why,
          got, want_n);
    if (rc == 0) free(y);
    return rc == 0;
  }
  CHECK(rc == FC_EDECODE && y == NULL && strcmp(why, want) == 0,
        "%zu floats: rc %d '%s', want '%s'", n, rc, why, want);
  if (rc == 0) free(y);
  return rc == FC_EDECODE;
}

static void test_damaged_float(void) {
  const float nan = NAN, inf = INFINITY;
  float a[3] = {0.1f, nan, 0.2f};
  float_case(a, 3, 1, 8000, 0, "damaged float samples: sample 1 (0.000 s) is NaN", 0);
  float b[3] = {0.1f, 0.2f, -inf};
  float_case(b, 3, 1, 8000, 0, "damaged float samples: sample 2 (0.000 s) is -inf", 0);
  float c[2] = {0.5f, 3e38f};
  float_case(c, 2, 1, 8000, 0,
             "damaged float samples: sample 1 (0.000 s) is 3e+38, beyond any PCM scale", 0);
  float d[4] = {1.5f, 32767.0f, -2147483648.0f, 2147483648.0f}; /* loud, not damaged */
  float_case(d, 4, 1, 8000, 0, NULL, 4);
  float e[4] = {0.1f, 0.1f, 0.2f, nan}; /* stereo: frame 1, right channel */
  float_case(e, 4, 2, 8000, 0, "damaged float samples: sample 1 (0.000 s, channel 2) is NaN", 0);
  /* past the first block of 8192 frames, straight into the output and through the resampler */
  enum { LONG = 8192 * 2 + 100 };
  float *l = calloc(LONG, sizeof *l);
  l[8192 + 3000] = inf;
  float_case(l, LONG, 1, 16000, 0, "damaged float samples: sample 11192 (0.700 s) is inf", 0);
  float_case(l, LONG, 1, 16000, 22050, "damaged float samples: sample 11192 (0.700 s) is inf", 0);
  l[8192 + 3000] = 0.25f;
  float_case(l, LONG, 1, 16000, 0, NULL, LONG);
  free(l);
  /* 64-bit floats: a value past float's range reads as an infinity */
  double g[3] = {0.5, -0.25, 1e300};
  size_t len;
  uint8_t *w = make_wav(3, 1, 8000, 64, g, sizeof g, sizeof g, &len);
  float *y = NULL;
  size_t n = 0;
  fc_audio_info info;
  char why[256];
  int rc = decode(w, len, 0, 0, &y, &n, &info, why);
  CHECK(rc == FC_EDECODE && strcmp(why, "damaged float samples: sample 2 (0.000 s) is inf") == 0,
        "double 1e300: rc %d '%s'", rc, why);
  if (rc == 0) free(y);
  free(w);
}

static void test_mix_and_resample(void) {
  enum { FRAMES = 22050, CH = 3 };
  int16_t *pcm = malloc(sizeof(int16_t) * FRAMES * CH);
  for (int i = 0; i < FRAMES; i++)
    for (int c = 0; c < CH; c++)
      pcm[i * CH + c] = (int16_t)(8000 * sin(2 * M_PI * 440.0 * i / 22050 + c) + 100 * c);
  size_t len;
  uint8_t *w = make_wav(1, CH, 22050, 16, pcm, sizeof(int16_t) * FRAMES * CH,
                        sizeof(int16_t) * FRAMES * CH, &len);
  float *y;
  size_t n;
  fc_audio_info info;
  char why[256];
  int rc = decode(w, len, 0, 0, &y, &n, &info, why);
  CHECK(rc == 0 && n == FRAMES && info.channels == CH, "3ch: rc %d %s n %zu", rc, why, n);
  if (rc == 0) {
    float worst = 0;
    for (int i = 0; i < FRAMES; i++) {
      float s = 0;
      for (int c = 0; c < CH; c++) s += (float)pcm[i * CH + c] / 32768.0f;
      float d = fabsf(y[i] - s / CH);
      if (d > worst) worst = d;
    }
    CHECK(worst < 1e-7f, "mean of channels: worst %.3g", worst);
    free(y);
  }
  /* Resampled lengths: librosa's ceil(n * target / source). */
  const uint32_t targets[] = {16000, 8000, 44100, 48000, 22051};
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
    rc = decode(w, len, targets[t], 0, &y, &n, &info, why);
    size_t want = (size_t)ceil(FRAMES * ((double)targets[t] / 22050.0));
    CHECK(rc == 0 && n == want, "-> %u Hz: rc %d %s n %zu want %zu", targets[t], rc, why, n, want);
    if (rc == 0) {
      /* A 440 Hz tone stays a tone of about the same level in the middle. */
      double e = 0;
      for (size_t i = n / 4; i < 3 * n / 4; i++) e += (double)y[i] * y[i];
      e = sqrt(e / (double)(n / 2));
      CHECK(e > 0.1 && e < 0.2, "-> %u Hz: RMS %.3f", targets[t], e);
      CHECK(info.frames == FRAMES && info.sample_rate == 22050, "info is the source's");
      free(y);
    }
  }
  free(w);
  free(pcm);
}

static void test_lengths(void) {
  /* Around the 8192-frame decode block and soxr's latency. */
  const size_t lens[] = {1, 2, 3, 8191, 8192, 8193, 16385};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    size_t frames = lens[k];
    int16_t *pcm = calloc(frames, sizeof *pcm);
    for (size_t i = 0; i < frames; i++) pcm[i] = (int16_t)(i * 7919 % 20000 - 10000);
    size_t len;
    uint8_t *w = make_wav(1, 1, 44100, 16, pcm, frames * 2, (uint32_t)frames * 2, &len);
    float *y;
    size_t n;
    fc_audio_info info;
    char why[256];
    int rc = decode(w, len, 0, 0, &y, &n, &info, why);
    CHECK(rc == 0 && n == frames, "%zu frames kept: rc %d n %zu", frames, rc, n);
    if (rc == 0) {
      for (size_t i = 0; i < frames; i++)
        if (y[i] != pcm[i] / 32768.0f) {
          CHECK(0, "%zu frames: sample %zu differs", frames, i);
          break;
        }
      free(y);
    }
    rc = decode(w, len, 16000, 0, &y, &n, &info, why);
    size_t want = (size_t)ceil(frames * (16000.0 / 44100.0));
    CHECK(rc == 0 && n == want, "%zu frames -> 16k: rc %d n %zu want %zu", frames, rc, n, want);
    if (rc == 0) free(y);
    free(w);
    free(pcm);
  }
}

static void test_broken(void) {
  float *y = NULL;
  size_t n = 7;
  fc_audio_info info;
  char why[256];
  CHECK(decode("", 0, 0, 0, &y, &n, &info, why) == FC_EEMPTY && y == NULL && n == 0, "no bytes");
  const char *text = "This is a text file that somebody named utterance.wav.\n";
  int rc = decode(text, strlen(text), 0, 0, &y, &n, &info, why);
  CHECK(rc == FC_EDECODE && strstr(why, "not an audio file"), "text: %d %s", rc, why);

  int16_t pcm[1000] = {0};
  size_t len;
  uint8_t *w = make_wav(1, 1, 16000, 16, pcm, 500 * 2, 1000 * 2, &len); /* header: 1000 */
  rc = decode(w, len, 0, 0, &y, &n, &info, why);
  CHECK(rc == FC_EDECODE && strcmp(why, "truncated: header says 1000 frames, file holds 500") == 0,
        "truncated: %d %s", rc, why);
  rc = decode(w, 30, 0, 0, &y, &n, &info, why);
  CHECK(rc == FC_EDECODE && strstr(why, "WAV"), "cut in the header: %d %s", rc, why);
  free(w);

  w = make_wav(1, 1, 100, 16, pcm, sizeof pcm, sizeof pcm, &len); /* 100 Hz -> 16 kHz: 160x */
  rc = decode(w, len, 16000, 0, &y, &n, &info, why);
  CHECK(rc == FC_EDECODE && strstr(why, "sample rate"), "100 Hz: %d %s", rc, why);
  rc = decode(w, len, 0, 0, &y, &n, &info, why); /* kept at its own rate it is fine */
  CHECK(rc == 0 && n == 1000, "100 Hz kept: %d %s", rc, why);
  if (rc == 0) free(y);
  free(w);

  w = make_wav(1, 1, 16000, 16, NULL, 0, 0, &len);
  rc = decode(w, len, 16000, 0, &y, &n, &info, why);
  CHECK(rc == FC_EEMPTY && strstr(why, "no samples"), "0 samples: %d %s", rc, why);
  free(w);

  w = make_wav(1, 1, 16000, 16, pcm, sizeof pcm, sizeof pcm, &len); /* 1000 frames = 62.5 ms */
  rc = decode(w, len, 0, 0.05, &y, &n, &info, why);
  CHECK(rc == FC_ETOOLONG && y == NULL, "too long: %d %s", rc, why);
  rc = decode(w, len, 0, 0.0624, &y, &n, &info, why); /* as many decimals as tell them apart */
  CHECK(rc == FC_ETOOLONG && strcmp(why, "0.0625 s long, over the 0.0624 s limit") == 0,
        "just too long: %d '%s'", rc, why);
  /* the limit as given (0.04, not rounded to "0.0"), the length as precisely */
  rc = decode(w, len, 0, 0.04, &y, &n, &info, why);
  CHECK(rc == FC_ETOOLONG && strcmp(why, "0.06 s long, over the 0.04 s limit") == 0,
        "limit with two decimals: %d '%s'", rc, why);
  rc = decode(w, len, 0, 0.07, &y, &n, &info, why);
  CHECK(rc == 0 && n == 1000, "under the limit: %d %s", rc, why);
  if (rc == 0) free(y);
  free(w);
  /* one sample over a round limit at 48 kHz: 4801 frames, 0.1000208 s, are not "0.1000 s long,
   * over the 0.1000 s limit" */
  static int16_t pcm48[4801];
  w = make_wav(1, 1, 48000, 16, pcm48, sizeof pcm48, sizeof pcm48, &len);
  rc = decode(w, len, 0, 0.1, &y, &n, &info, why);
  CHECK(rc == FC_ETOOLONG && strcmp(why, "0.10002 s long, over the 0.10000 s limit") == 0,
        "one sample over: %d '%s'", rc, why);
  rc = fc_audio_decode(w, len, 0, 0, &y, &n, NULL, NULL, 0); /* info and why are optional */
  CHECK(rc == 0, "NULL info/why: %d", rc);
  if (rc == 0) free(y);
  free(w);
}

/* Damaged headers and cut-off files must give an error or samples, never a crash (ASan build).
 * (A wider mutation run over WAV, FLAC, Ogg and MP3 was done by hand; libvorbis leaks on some
 * damaged Ogg files, so it is not part of the suite.) */
static void test_mutations(void) {
  int16_t pcm[3000];
  for (int i = 0; i < 3000; i++) pcm[i] = (int16_t)(i * 2654435761u >> 16);
  size_t len;
  uint8_t *w = make_wav(1, 2, 22050, 16, pcm, sizeof pcm, sizeof pcm, &len);
  uint8_t *m = malloc(len);
  uint64_t s = 0x243F6A8885A308D3ull;
  int ok = 0;
  for (int r = 0; r < 3000; r++) {
    memcpy(m, w, len);
    for (int k = 0; k <= r % 4; k++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      m[(s >> 8) % 48] = (uint8_t)(s >> 32); /* the header and the first samples */
    }
    size_t mlen = r % 5 == 4 ? (size_t)(s >> 20) % len + 1 : len;
    float *y = NULL;
    size_t n = 0;
    fc_audio_info info;
    char why[256];
    int rc = decode(m, mlen, 16000, 600, &y, &n, &info, why);
    CHECK(rc != 0 || (y && n > 0), "round %d: success without samples", r);
    CHECK(rc == 0 || (y == NULL && n == 0 && why[0]), "round %d: error %d without a reason", r, rc);
    if (rc == 0) ok++;
    free(y);
  }
  CHECK(ok > 0, "some mutated files still decode");
  free(m);
  free(w);
}

/* fc_audio_read_file(path) in a child that has dropped CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
 * from its effective set (which needs no privilege): root reads anything otherwise. It keeps its
 * uid, so the file's owner bits decide. Returns its rc, or -1 if the child could not say. */
static int read_without_dac_override(const char *path) {
  pid_t pid = fork();
  if (pid == 0) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0) _exit(255);
    d[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    if (syscall(SYS_capset, &h, d) != 0) _exit(255);
    void *bytes = NULL;
    size_t len = 0;
    int rc = fc_audio_read_file(path, 0, &bytes, &len, NULL);
    _exit(rc >= 0 && rc < 255 ? rc : 254);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) >= 254) return -1;
  return WEXITSTATUS(st);
}

static void test_read_file(void) {
  char path[512];
  void *bytes;
  size_t len;
  fc_audio_info info;
  snprintf(path, sizeof path, "%s/missing.wav", tmpdir);
  CHECK(fc_audio_read_file(path, 0, &bytes, &len, &info) == ENOENT, "missing");
  CHECK(fc_audio_read_file(tmpdir, 0, &bytes, &len, &info) == EISDIR, "directory");
  snprintf(path, sizeof path, "%s/empty.wav", tmpdir);
  fclose(fopen(path, "wb"));
  CHECK(fc_audio_read_file(path, 0, &bytes, &len, &info) == FC_EEMPTY && bytes == NULL, "empty");
  snprintf(path, sizeof path, "%s/some.wav", tmpdir);
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 100000; i++) fputc(i & 0xFF, f);
  fclose(f);
  int rc = fc_audio_read_file(path, 0, &bytes, &len, &info);
  struct stat st;
  stat(path, &st);
  CHECK(rc == 0 && len == 100000 && info.size == 100000 &&
            info.mtime_ns == (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
        "read: rc %d len %zu size %llu", rc, len, (unsigned long long)info.size);
  if (rc == 0) {
    CHECK(((uint8_t *)bytes)[99999] == (99999 & 0xFF), "content");
    free(bytes);
  }
  CHECK(fc_audio_read_file(path, 99999, &bytes, &len, &info) == FC_ETOOLONG, "max_bytes");
  rc = fc_audio_read_file(path, 100000, &bytes, &len, NULL);
  CHECK(rc == 0, "max_bytes exactly, NULL info: %d", rc);
  if (rc == 0) free(bytes);
  chmod(path, 0);
  CHECK(read_without_dac_override(path) == EACCES, "unreadable: want EACCES");
  unlink(path);
  snprintf(path, sizeof path, "%s/empty.wav", tmpdir);
  unlink(path);
}

/* A 16-bit file read in place (audio_pcm16_open, then audio_pcm16_finish or audio_pcm16_read_all)
 * gives what audio_read_into and audio_pcm16_view give for the whole file: the same shape
 * decision, samples, info, and the file's bytes in its three pieces; whatever the chunks before
 * and after the data and wherever the first read (4096 bytes) ends. */
static void write_layout(const char *path, uint32_t rate, unsigned ch, uint32_t before, uint32_t n,
                         uint32_t after) {
  FILE *f = fopen(path, "wb");
  uint8_t h[8];
  fwrite("RIFF", 1, 4, f);
  put32(h, 4 + 24 + (before ? 8 + before + (before & 1) : 0) + 8 + 2 * n * ch +
               (after ? 8 + after + (after & 1) : 0));
  fwrite(h, 1, 4, f);
  fwrite("WAVEfmt ", 1, 8, f);
  uint8_t fmt[20];
  put32(fmt, 16);
  put16(fmt + 4, 1);
  put16(fmt + 6, ch);
  put32(fmt + 8, rate);
  put32(fmt + 12, rate * 2 * ch);
  put16(fmt + 16, 2 * ch);
  put16(fmt + 18, 16);
  fwrite(fmt, 1, 20, f);
  for (int part = 0; part < 3; part++) {
    const uint32_t size = part == 0 ? before : part == 1 ? 2 * n * ch : after;
    if (part != 1 && !size) continue;
    fwrite(part == 1 ? "data" : "LIST", 1, 4, f);
    put32(h, size);
    fwrite(h, 1, 4, f);
    for (uint32_t i = 0; i < size; i++) fputc((int)((i * 7 + part * 13 + n) & 0xFF), f);
    if (part != 1 && (size & 1)) fputc(0, f);
  }
  fclose(f);
}

static void test_pcm16_in_place(void) {
  static const struct {
    uint32_t rate;
    unsigned ch;
    uint32_t before, n, after;
    int view, shape; /* audio_pcm16_view of the whole file; in place */
  } cases[] = {
      {22050, 1, 0, 3000, 0, 1, 1}, /* the plain 44-byte header */
      {22050, 1, 0, 10, 0, 1, 1}, /* all of it in the first read */
      {22050, 1, 0, 10, 33, 1, 1}, /* and a chunk after the data, in the first read too */
      {22050, 1, 0, 5000, 101, 1, 1}, /* a chunk after the data, beyond the first read */
      {22050, 1, 4044, 900, 0, 1, 1}, /* the data chunk's header ends at byte 4096 exactly */
      {22050, 1, 4046, 900, 0, 1, 0}, /* its header crosses byte 4096: read as usual */
      {22050, 1, 5000, 3000, 7, 1, 0}, /* after a chunk longer than the first read */
      {22050, 2, 0, 3000, 0, 0, 0}, /* stereo */
      {16000, 1, 0, 3000, 0, 0, 0}, /* another rate than the target's */
      {22050, 1, 2047, 2000, 5, 1, 1}, /* an odd-sized chunk before, the first read mid-data */
  };
  char path[512];
  snprintf(path, sizeof path, "%s/inplace.wav", tmpdir);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    write_layout(path, cases[c].rate, cases[c].ch, cases[c].before, cases[c].n, cases[c].after);
    void *whole;
    size_t len, n_view = 0;
    fc_audio_info wi, vi, pi;
    CHECK(fc_audio_read_file(path, 0, &whole, &len, &wi) == 0, "case %zu: read", c);
    const void *pcm = NULL;
    char why[256];
    vi = wi;
    const int view = audio_pcm16_view(whole, len, 22050, 0, &pcm, &n_view, &vi, why, sizeof why);
    CHECK(view == cases[c].view, "case %zu: audio_pcm16_view says %d", c, view);
    uint8_t *buf = NULL;
    size_t cap = 0;
    audio_pcm16_file f;
    int shape = -1;
    int rc = audio_pcm16_open(path, 22050, &buf, &cap, &f, &pi, &shape);
    CHECK(rc == 0 && shape == cases[c].shape, "case %zu: open rc %d, shape %d", c, rc, shape);
    if (rc == 0 && shape == 1) {
      int16_t *samples = malloc(2 * f.n_samples + 1);
      size_t toff, tlen;
      const size_t data_off = f.data_off, n = f.n_samples;
      rc = audio_pcm16_finish(&f, samples, &buf, &cap, &toff, &tlen);
      CHECK(rc == 0 && n == n_view && memcmp(samples, pcm, 2 * n) == 0, "case %zu: samples", c);
      CHECK(data_off + 2 * n + tlen == len && memcmp(buf, whole, data_off) == 0 &&
                memcmp(buf + toff, (uint8_t *)whole + data_off + 2 * n, tlen) == 0,
            "case %zu: the file's bytes in three pieces (%zu + %zu + %zu of %zu)", c, data_off,
            2 * n, tlen, len);
      CHECK(pi.sample_rate == vi.sample_rate && pi.channels == vi.channels &&
                pi.frames == vi.frames && pi.format == vi.format && pi.size == vi.size &&
                pi.mtime_ns == vi.mtime_ns,
            "case %zu: info", c);
      free(samples);
    } else if (rc == 0) {
      size_t got = 0;
      rc = audio_pcm16_read_all(&f, &buf, &cap, &got, &pi);
      CHECK(rc == 0 && got == len && memcmp(buf, whole, len) == 0 && pi.size == wi.size &&
                pi.mtime_ns == wi.mtime_ns,
            "case %zu: read whole: rc %d, %zu bytes of %zu", c, rc, got, len);
    }
    free(buf);
    free(whole);
  }
  /* The errors audio_read_into gives, and a file shorter than its first read said. */
  uint8_t *buf = NULL;
  size_t cap = 0;
  audio_pcm16_file f;
  fc_audio_info info;
  int shape;
  CHECK(audio_pcm16_open(tmpdir, 22050, &buf, &cap, &f, &info, &shape) == EISDIR, "directory");
  snprintf(path, sizeof path, "%s/inplace_missing.wav", tmpdir);
  CHECK(audio_pcm16_open(path, 22050, &buf, &cap, &f, &info, &shape) == ENOENT, "missing");
  snprintf(path, sizeof path, "%s/inplace.wav", tmpdir);
  fclose(fopen(path, "wb"));
  CHECK(audio_pcm16_open(path, 22050, &buf, &cap, &f, &info, &shape) == FC_EEMPTY, "empty");
  write_layout(path, 22050, 1, 0, 6000, 0);
  CHECK(audio_pcm16_open(path, 22050, &buf, &cap, &f, &info, &shape) == 0 && shape == 1, "open");
  CHECK(truncate(path, 8000) == 0, "truncate");
  int16_t *samples = malloc(2 * 6000);
  size_t toff, tlen;
  CHECK(audio_pcm16_finish(&f, samples, &buf, &cap, &toff, &tlen) == EAGAIN,
        "a file cut short after its first read: EAGAIN");
  write_layout(path, 22050, 1, 0, 6000, 0);
  CHECK(audio_pcm16_open(path, 22050, &buf, &cap, &f, &info, &shape) == 0 && shape == 1, "open");
  FILE *g = fopen(path, "ab");
  fputc(1, g);
  fclose(g);
  CHECK(audio_pcm16_finish(&f, samples, &buf, &cap, &toff, &tlen) == EAGAIN,
        "a file grown after its first read: EAGAIN");
  free(samples);
  free(buf);
  unlink(path);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/fc_audio_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 2;
  }
  test_pcm16();
  test_u8_and_float();
  test_damaged_float();
  test_mix_and_resample();
  test_lengths();
  test_broken();
  test_mutations();
  test_read_file();
  test_pcm16_in_place();
  rmdir(tmpdir);
  if (failures) {
    fprintf(stderr, "test_audio: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_audio: ok\n");
  return 0;
}
