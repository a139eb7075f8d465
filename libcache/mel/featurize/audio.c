/* Reading audio: the file once into memory, libsndfile decode from that memory (virtual I/O), mix
 * to mono, soxr resampling. The numbers reproduce librosa.load(path, sr=target):
 *   - soundfile reads with sf_readf_float and libsndfile's default normalisation (int16 x/32768,
 *     int24 x/2^23, int32 x/2^31, u8 (x-128)/128, float files as stored); we make the same call,
 *     and like soundfile we read at most the frame count the header announces;
 *   - librosa.to_mono is np.mean over channels in float32: numpy's pairwise summation (sequential
 *     below 8 terms, 8 partial sums above), then a float32 division by the channel count;
 *   - librosa.resample(res_type="soxr_hq") calls python-soxr's soxr.resample(quality="HQ") on
 *     float32, which is libsoxr with soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I),
 *     soxr_quality_spec(SOXR_HQ, 0) and the default runtime spec (python-soxr src/soxr_ext.cpp).
 *     soxr's output does not depend on how its input is chunked, so we feed it block by block;
 *   - util.fix_length to ceil(n * (target / source)), zero padding or trimming.
 * 16-bit mono PCM WAV at the target rate (what most TTS corpora hold) is converted here without
 * libsndfile, to the same bits (audio_wav.c); featurize's GPU path takes those samples as they
 * are in the file (audio_pcm16_view, or audio_pcm16_open/finish: read from the file straight into
 * the staging ring) and the GPU converts them the same way. Mono at the target
 * rate in any other format is decoded straight into the output buffer.
 *
 * Memory of one decode: the file bytes (the caller's) + the output samples (4 bytes × output
 * frames) + one 8192-frame interleaved block + soxr's state (tens of KB). The source is never
 * held as float at its own rate and channel count: a 1-hour 44.1 kHz stereo 16-bit WAV (635 MB)
 * resampled to 22.05 kHz holds 635 MB + 318 MB. */
#include "featcache/fc_audio.h"
#include "formats/common/args.h"
#include "libcache/mel/featurize/audio_int.h"
#include "formats/common/alloc.h"
#include "formats/common/fault.h"
#include "formats/common/why.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <math.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define BLOCK_FRAMES 8192

/* ---- reading the file ------------------------------------------------------------------------- */
/* Open path and check what fstat says (*st): 0 with *fd open, or the error (nothing open). A
 * regular file or a pipe (a FIFO's open waits for its writer, as cat's does) is read; a device is
 * ENODEV, and so is a socket, whose open fails with ENXIO ("No such device or address", which
 * names no fault of a file that ls lists). */
static int open_checked(const char *path, uint64_t max_bytes, int *fd, struct stat *st) {
  *fd = fault_hit("open")     ? (errno = EIO, -1)
        : fault_hit("emfile") ? (errno = EMFILE, -1)
                              : open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) {
    const int e = errno;
    return e == ENXIO && stat(path, st) == 0 && S_ISSOCK(st->st_mode) ? ENODEV : e;
  }
  int rc = 0;
  if (fstat(*fd, st) != 0)
    rc = errno;
  else if (S_ISDIR(st->st_mode))
    rc = EISDIR;
  else if (!S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode))
    rc = ENODEV; /* a device: /dev/zero reads without end, a terminal waits for typing */
  else if (S_ISREG(st->st_mode) && st->st_size == 0)
    rc = FC_EEMPTY;
  else if (S_ISREG(st->st_mode) && max_bytes && (uint64_t)st->st_size > max_bytes)
    rc = FC_ETOOLONG;
  else if (S_ISREG(st->st_mode) && (uint64_t)st->st_size >= SIZE_MAX)
    rc = ENOMEM;
  if (rc) {
    close(*fd);
    *fd = -1;
  }
  return rc;
}

/* The rest of an open file (have bytes of it in *buf already, read from its start), then closed. */
static int read_rest(int fd, const struct stat *st, uint64_t max_bytes, size_t have, uint8_t **buf,
                     size_t *cap, size_t *len, fc_audio_info *info) {
  int rc = 0;
  size_t want;
  if (S_ISREG(st->st_mode))
    want = (size_t)st->st_size + 1; /* +1: a file that grew is noticed without a second buffer */
  else
    want = have > (1 << 16) ? have : 1 << 16; /* a pipe: read to EOF */
  if (*cap < want) {
    uint8_t *n = fc_realloc(*buf, want);
    if (!n) {
      rc = ENOMEM;
      goto fail;
    }
    *buf = n;
    *cap = want;
  }
  for (;;) {
    if (have == want) {
      if (S_ISREG(st->st_mode)) break; /* read as many bytes as stat said (and one more) */
      if (have == *cap) {
        size_t ncap = *cap * 2;
        uint8_t *n = fc_realloc(*buf, ncap);
        if (!n) {
          rc = ENOMEM;
          goto fail;
        }
        *buf = n;
        *cap = ncap;
      }
      want = *cap;
    }
    ssize_t got = fault_hit("read") ? (errno = EIO, -1) : read(fd, *buf + have, want - have);
    if (got < 0) {
      if (errno == EINTR) continue;
      rc = errno;
      goto fail;
    }
    if (got == 0) break;
    have += (size_t)got;
    if (max_bytes && have > max_bytes) {
      rc = FC_ETOOLONG;
      goto fail;
    }
  }
  if (have == 0) {
    rc = FC_EEMPTY;
    goto fail;
  }
  close(fd);
  *len = have;
  if (info) {
    info->size = have;
    info->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  }
  return 0;
fail:
  close(fd);
  return rc;
}

/* The first want bytes of an open file into *buf (grown to at least cap_min when shorter than want),
 * by read (not pread: read_rest goes on from there); *have: how many (fewer at its end). */
static int read_head(int fd, size_t want, size_t cap_min, uint8_t **buf, size_t *cap,
                     size_t *have) {
  *have = 0;
  if (*cap < want) {
    uint8_t *n = fc_realloc(*buf, cap_min);
    if (!n) return ENOMEM;
    *buf = n;
    *cap = cap_min;
  }
  while (*have < want) {
    ssize_t k = fault_hit("read") ? (errno = EIO, -1) : read(fd, *buf + *have, want - *have);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    if (k == 0) break;
    *have += (size_t)k;
  }
  return 0;
}

enum { AUDIO_HEAD = 4096 }; /* a first read: a header and its chunks before the data */

int audio_read_checked(const char *path, double max_seconds, uint8_t **buf, size_t *cap,
                       size_t *len, fc_audio_info *info, char *why, size_t why_len) {
  if (max_seconds <= 0) return audio_read_into(path, 0, buf, cap, len, info);
  *len = 0;
  if (info) memset(info, 0, sizeof *info);
  int fd;
  struct stat st;
  size_t have = 0;
  int rc = open_checked(path, 0, &fd, &st);
  if (rc) return rc;
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > AUDIO_HEAD) {
    if ((rc = read_head(fd, AUDIO_HEAD, AUDIO_HEAD, buf, cap, &have))) {
      close(fd);
      return rc;
    }
    if (have == AUDIO_HEAD &&
        audio_header_too_long(fd, (uint64_t)st.st_size, *buf, have, max_seconds, why, why_len)) {
      close(fd);
      return FC_ETOOLONG;
    }
  }
  return read_rest(fd, &st, 0, have, buf, cap, len, info);
}

int audio_read_into(const char *path, uint64_t max_bytes, uint8_t **buf, size_t *cap, size_t *len,
                    fc_audio_info *info) {
  *len = 0;
  if (info) memset(info, 0, sizeof *info);
  int fd;
  struct stat st;
  int rc = open_checked(path, max_bytes, &fd, &st);
  return rc ? rc : read_rest(fd, &st, max_bytes, 0, buf, cap, len, info);
}

int fc_audio_read_file(const char *path, uint64_t max_bytes, void **bytes, size_t *len,
                       fc_audio_info *info) {
  FC_ARGS(path, bytes, len);
  uint8_t *buf = NULL;
  size_t cap = 0;
  int rc = audio_read_into(path, max_bytes, &buf, &cap, len, info);
  if (rc) {
    free(buf);
    buf = NULL;
  }
  *bytes = buf;
  return rc;
}

/* ---- libsndfile virtual I/O over a memory buffer --------------------------------------------- */
typedef struct mem_file {
  const uint8_t *data;
  sf_count_t len, pos;
  int no_end; /* an MP3: its end is not seekable (audio_mp3_stream) */
} mem_file;

static sf_count_t vio_get_filelen(void *user) { return ((mem_file *)user)->len; }

static sf_count_t vio_seek(sf_count_t offset, int whence, void *user) {
  mem_file *m = user;
  if (whence == SEEK_END && m->no_end) return -1;
  sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->len;
  sf_count_t pos = base + offset;
  if (pos < 0) return -1;
  m->pos = pos; /* past the end is allowed, as with lseek; reads there return 0 */
  return pos;
}

static sf_count_t vio_read(void *ptr, sf_count_t count, void *user) {
  mem_file *m = user;
  if (count <= 0 || m->pos >= m->len) return 0;
  sf_count_t n = m->len - m->pos < count ? m->len - m->pos : count;
  memcpy(ptr, m->data + m->pos, (size_t)n);
  m->pos += n;
  return n;
}

static sf_count_t vio_write(const void *ptr, sf_count_t count, void *user) {
  (void)ptr, (void)count, (void)user;
  return 0;
}

static sf_count_t vio_tell(void *user) { return ((mem_file *)user)->pos; }

/* ---- a 16-bit file read in place (featurize's staging path) ------------------------------------ */

int audio_pcm16_open(const char *path, uint32_t target_rate, uint8_t **buf, size_t *cap,
                     audio_pcm16_file *f, fc_audio_info *info, int *shape) {
  *shape = 0;
  memset(f, 0, sizeof *f);
  if (info) memset(info, 0, sizeof *info);
  int rc = open_checked(path, 0, &f->fd, &f->st);
  if (rc) return rc;
  if (!S_ISREG(f->st.st_mode)) return 0; /* a pipe: read as usual, from the start */
  const uint64_t size = (uint64_t)f->st.st_size;
  const size_t want = size + 1 < AUDIO_HEAD ? (size_t)size + 1 : AUDIO_HEAD;
  if ((rc = read_head(f->fd, want, AUDIO_HEAD, buf, cap, &f->head))) {
    audio_pcm16_close(f);
    return rc;
  }
  uint32_t rate = 0;
  size_t off = 0, frames = 0;
  if (f->head > size || (f->head < want && f->head < size) || /* it changed since fstat */
      audio_wav_pcm16_scan(*buf, f->head, size, &off, &frames, &rate) != 1 ||
      (target_rate != 0 && rate != target_rate))
    return 0;
  if (off + 2 * frames < f->head &&
      audio_riff_after(*buf + off + 2 * frames, f->head - off - 2 * frames, 0, 1) >= 0)
    return 0; /* another file or data chunk after the samples, in the first read: refused as usual */
  f->data_off = off;
  f->n_samples = frames;
  if (info) {
    info->sample_rate = rate;
    info->channels = 1;
    info->frames = frames;
    info->format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
    info->size = size;
    info->mtime_ns = (int64_t)f->st.st_mtim.tv_sec * 1000000000 + f->st.st_mtim.tv_nsec;
  }
  *shape = 1;
  return 0;
}

int audio_pcm16_read_all(audio_pcm16_file *f, uint8_t **buf, size_t *cap, size_t *len,
                         fc_audio_info *info) {
  *len = 0;
  if (info) memset(info, 0, sizeof *info);
  int fd = f->fd;
  f->fd = -1;
  return read_rest(fd, &f->st, 0, f->head, buf, cap, len, info);
}

void audio_pcm16_close(audio_pcm16_file *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}

int audio_pcm16_finish(audio_pcm16_file *f, void *samples, uint8_t **buf, size_t *cap,
                       size_t *tail_off, size_t *tail_len) {
  const size_t size = (size_t)f->st.st_size;
  const size_t data_end = f->data_off + 2 * f->n_samples; /* within size (audio_wav_pcm16_scan) */
  size_t in_head = 0;
  int rc = 0;
  if (f->head > f->data_off) { /* the samples the first read took */
    in_head = (f->head < data_end ? f->head : data_end) - f->data_off;
    memcpy(samples, *buf + f->data_off, in_head);
  }
  /* The rest of the file in one read: the samples the first read did not take, then the bytes
   * after them (and one more: a file that grew) into the buffer after its head, so that *buf from
   * tail_off holds all the bytes after the samples. A read that returns every byte the file had
   * at its open and not the one more ends it: a regular file's read stops short only at its end,
   * so asking again for the one byte would only hear the end once more. */
  const size_t from = data_end > f->head ? data_end : f->head;
  const size_t rest = 2 * f->n_samples - in_head, tail = size - from;
  if (f->head + tail + 1 > *cap) {
    uint8_t *n = fc_realloc(*buf, f->head + tail + 1);
    if (!n)
      rc = ENOMEM;
    else
      *buf = n, *cap = f->head + tail + 1;
  }
  struct iovec iov[2] = {{(uint8_t *)samples + in_head, rest}, {*buf + f->head, tail + 1}};
  size_t got = 0, want = rest + tail;
  unsigned k = rest ? 0 : 1; /* the first iovec with bytes left */
  const uint64_t off = f->data_off + in_head < f->head ? f->head : f->data_off + in_head;
  while (!rc && k < 2) {
    ssize_t g = fault_hit("read") ? (errno = EIO, -1)
                                  : preadv(f->fd, iov + k, (int)(2 - k), (off_t)(off + got));
    if (g < 0) {
      if (errno == EINTR) continue;
      rc = errno;
      break;
    }
    if (g == 0) break;
    got += (size_t)g;
    for (size_t left = (size_t)g; left && k < 2;) { /* step over what this read filled */
      size_t step = left < iov[k].iov_len ? left : iov[k].iov_len;
      iov[k].iov_base = (uint8_t *)iov[k].iov_base + step;
      iov[k].iov_len -= step;
      left -= step;
      if (!iov[k].iov_len) k++;
    }
    if (got == want) break; /* all of it, and not the one more: the file's end */
  }
  if (!rc && got != want) rc = EAGAIN; /* shorter or longer than it was: read it as usual */
  audio_pcm16_close(f);
  *tail_off = data_end < f->head ? data_end : f->head;
  *tail_len = f->head + tail - *tail_off;
  if (!rc && audio_riff_after(*buf + *tail_off, *tail_len, 0, 1) >= 0)
    rc = EAGAIN; /* another file or data chunk after this one's samples: refused as usual */
  return rc;
}

/* Float sources (32- and 64-bit float PCM in any container) can hold what no sound is: NaN, an
 * infinity, or a value far past any PCM scale (a 64-bit value past float's range reads as an
 * infinity). Their features would be NaN or infinite, or a frame of silence where the log's
 * floor hides a NaN — stored without a word and found in training. A sample beyond 2^31 (the
 * widest integer PCM's full scale) is such damage; anything within it (a float file at int16's
 * scale, say) gives finite features. Returns the index of the first bad value of p[0, n), or n. */
#define AUDIO_MAX_ABS 2147483648.0f
static int float_source(int format) {
  const int sub = format & SF_FORMAT_SUBMASK;
  return sub == SF_FORMAT_FLOAT || sub == SF_FORMAT_DOUBLE;
}

static size_t first_bad_sample(const float *p, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad |= !(fabsf(p[i]) <= AUDIO_MAX_ABS); /* NaN: not <= */
  for (size_t i = 0; bad && i < n; i++)
    if (!(fabsf(p[i]) <= AUDIO_MAX_ABS)) return i;
  return n;
}

/* ---- mixing ----------------------------------------------------------------------------------- */
/* numpy's pairwise_sum for float32 (numpy/_core/src/umath/loops_utils.h.src), which np.mean uses
 * along the channel axis of soundfile's (frames, channels) array: the same additions in the same
 * order give the same float32 result. */
static float pairwise_sum(const float *a, size_t n) {
  if (n < 8) {
    float res = -0.0f;
    for (size_t i = 0; i < n; i++) res += a[i];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; j++) r[j] = a[j];
    size_t i;
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += a[i + (size_t)j];
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

static void mix_to_mono(const float *in, size_t frames, unsigned channels, float *out) {
  if (channels == 1) {
    memcpy(out, in, frames * sizeof *out);
    return;
  }
  const float c = (float)channels;
  for (size_t i = 0; i < frames; i++) out[i] = pairwise_sum(in + i * channels, channels) / c;
}

/* ---- the output buffer ------------------------------------------------------------------------ */
typedef struct sample_buf {
  float *v;
  size_t n, cap;
} sample_buf;

static int sample_buf_reserve(sample_buf *b, size_t extra) {
  if (b->cap - b->n >= extra) return 0;
  size_t need = b->n + extra;
  if (need < b->n) return ENOMEM;
  size_t ncap = b->cap ? b->cap : 4096;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / sizeof(float)) return ENOMEM;
    ncap *= 2;
  }
  float *v = fc_realloc(b->v, ncap * sizeof *v);
  if (!v) return ENOMEM;
  b->v = v;
  b->cap = ncap;
  return 0;
}

/* Push in_len mono samples through soxr into out (in NULL: flush the tail). */
static int resample_push(soxr_t s, const float *in, size_t in_len, double ratio, sample_buf *out,
                         char *why, size_t why_len) {
  size_t used = 0;
  for (;;) {
    /* Offer soxr only about what this input can produce: it misbehaves when given gigabytes of
     * output room (found by fuzzing a FLAC header that claims 2^31 frames). */
    size_t room = (size_t)ceil((double)(in_len - used) * ratio) + 1024;
    if (sample_buf_reserve(out, room)) return ENOMEM;
    size_t idone = 0, odone = 0;
    soxr_error_t e = soxr_process(s, in ? in + used : NULL, in ? in_len - used : 0,
                                  in ? &idone : NULL, out->v + out->n, room, &odone);
    if (e) {
      fc_why(why, why_len, "resampling failed: %s", e);
      return FC_EDECODE;
    }
    out->n += odone;
    used += idone;
    if (in ? used >= in_len : odone == 0) return 0;
    if (in && idone == 0 && odone == 0) return 0; /* cannot happen with room to spare */
  }
}

/* ---- decode ----------------------------------------------------------------------------------- */
int fc_audio_decode(const void *bytes, size_t len, uint32_t target_rate, double max_seconds,
                    float **samples, size_t *n_samples, fc_audio_info *info, char *why,
                    size_t why_len) {
  FC_ARGS_WHY(bytes || !len, samples, n_samples);
  *samples = NULL;
  *n_samples = 0;
  if (why && why_len) why[0] = '\0';
  if (!bytes || len == 0) {
    fc_why(why, why_len, "empty file");
    return FC_EEMPTY;
  }
  const void *pcm;
  size_t pcm_frames;
  const int view =
      audio_pcm16_view(bytes, len, target_rate, max_seconds, &pcm, &pcm_frames, info, why, why_len);
  if (view < 0) return view;
  if (view == 1) {
    float *v = fc_malloc(pcm_frames * sizeof *v);
    if (!v) return ENOMEM;
    audio_wav_decode_pcm16(pcm, pcm_frames, v);
    *samples = v;
    *n_samples = pcm_frames;
    return 0;
  }
  mem_file mem = {bytes, (sf_count_t)len, 0, audio_mp3_stream(bytes, len) == 1};
  SF_VIRTUAL_IO vio = {vio_get_filelen, vio_seek, vio_read, vio_write, vio_tell};
  SF_INFO sfi;
  memset(&sfi, 0, sizeof sfi);
  /* opens are serialized (audio_sf_open_mu) so that the reason read is this file's */
  char sf_reason[128] = "";
  int sf_code = 0;
  pthread_mutex_lock(&audio_sf_open_mu);
  SNDFILE *sf = fault_hit("decode") ? NULL : sf_open_virtual(&vio, SFM_READ, &sfi, &mem);
  if (!sf) {
    snprintf(sf_reason, sizeof sf_reason, "%s", sf_strerror(NULL));
    sf_code = sf_error(NULL);
  }
  pthread_mutex_unlock(&audio_sf_open_mu);
  char joined_why[256];
  const char *joined = audio_joined(sf ? sfi.format : 0, bytes, len, joined_why, sizeof joined_why);
  if (!sf) {
    const char *kind = audio_magic(bytes, len), *other = audio_unsupported(bytes, len);
    char codec[256];
    if (joined) /* libsndfile finds the second file's header where it looks for a chunk */
      fc_why(why, why_len, "%s", joined);
    else if (audio_codec_unread(bytes, len, codec, sizeof codec))
      fc_why(why, why_len, "unsupported encoding in %s: convert it, to FLAC say", codec);
    else if (other)
      fc_why(why, why_len,
             "unsupported audio format: %s; libsndfile reads WAV, FLAC, Ogg (Vorbis, Opus), MP3 "
             "and uncompressed formats (AIFF, AU, CAF, ...): convert it, to FLAC say",
             other);
    else if (kind && sf_code == SF_ERR_UNSUPPORTED_ENCODING) /* Opus in CAF, say: not damage */
      fc_why(why, why_len,
             "unsupported encoding in a %s file (libsndfile: %s): convert it, to FLAC say", kind,
             sf_reason);
    else if (kind && audio_bad_rate(bytes, len, codec, sizeof codec))
      fc_why(why, why_len, "damaged %s file%s (libsndfile: %s)", kind, codec, sf_reason);
    else if (kind)
      fc_why(why, why_len, "damaged %s file (libsndfile: %s)", kind, sf_reason);
    else if (audio_stand_in(bytes, len))
      fc_why(why, why_len, "not an audio file: %s", audio_stand_in(bytes, len));
    else
      fc_why(why, why_len, "not an audio file (libsndfile: %s)", sf_reason);
    return FC_EDECODE;
  }

  int rc = 0;
  float *block = NULL, *mono = NULL;
  soxr_t rs = NULL;
  sample_buf out = {0};
  const unsigned channels = sfi.channels > 0 ? (unsigned)sfi.channels : 0;
  const uint32_t src_rate = sfi.samplerate > 0 ? (uint32_t)sfi.samplerate : 0;
  const uint32_t dst_rate = target_rate ? target_rate : src_rate;
  const int frames_known = sfi.frames >= 0 && sfi.frames < SF_COUNT_MAX;
  if (info) {
    info->sample_rate = src_rate;
    info->channels = channels;
    info->frames = 0;
    info->format = sfi.format;
  }
  if (channels == 0 || src_rate == 0) {
    fc_why(why, why_len, "invalid header: %d channels at %d Hz", sfi.channels, sfi.samplerate);
    rc = FC_EDECODE;
    goto done;
  }
  uint64_t declared, held;
  if (joined || audio_truncated(bytes, len, len, &declared, &held) == 1) {
    if (joined)
      fc_why(why, why_len, "%s", joined);
    else
      fc_why(why, why_len, "truncated: header says %llu frames, file holds %llu",
             (unsigned long long)declared, (unsigned long long)held);
    rc = FC_EDECODE;
    goto done;
  }
  const double max_frames = max_seconds > 0 ? max_seconds * src_rate : INFINITY;
  if (frames_known && (double)sfi.frames > max_frames) {
    audio_too_long(why, why_len, (double)sfi.frames / src_rate, max_seconds);
    rc = FC_ETOOLONG;
    goto done;
  }
  if (frames_known && sfi.frames == 0) {
    const uint64_t unsized = audio_unsized_data(bytes, len);
    if (unsized && ((const uint8_t *)bytes)[1] == 'F')
      fc_why(why, why_len,
             "no samples: its ds64 chunk states 0 data bytes and %llu follow its data chunk "
             "(ffmpeg writes RF64 so to a pipe, where it cannot go back to fill in the size; 'sox "
             "--ignore-length IN OUT' rewrites the header)",
             (unsigned long long)unsized);
    else if (unsized)
      fc_why(why, why_len,
             "no samples: the data chunk states 0 bytes and %llu follow it (a writer that did not "
             "finish leaves it so; 'sox --ignore-length IN OUT' rewrites the header)",
             (unsigned long long)unsized);
    else
      fc_why(why, why_len, "no samples");
    rc = FC_EEMPTY;
    goto done;
  }

  const double ratio =
      (double)dst_rate / (double)src_rate; /* librosa: float(target_sr) / orig_sr */
  if (ratio > 64.0 || ratio < 1.0 / 256.0) {
    /* Not speech audio (a damaged header says 3 Hz, say): a few bytes must not become gigabytes. */
    char said[96];
    if (audio_bad_rate(bytes, len, said,
                       sizeof said)) /* an AIFF's 0 Hz, which libsndfile reads 1 */
      fc_why(why, why_len, "damaged %s file%s", audio_magic(bytes, len), said);
    else
      fc_why(why, why_len, "unsupported sample rate conversion: %u Hz to %u Hz", src_rate,
             dst_rate);
    rc = FC_EDECODE;
    goto done;
  }
  if (dst_rate != src_rate) {
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    rs = fault_hit("resample")
             ? NULL
             : soxr_create((double)src_rate, (double)dst_rate, 1, &e, &io, &q, NULL);
    if (!rs || e) {
      fc_why(why, why_len, "cannot resample %u Hz to %u Hz: %s", src_rate, dst_rate,
             e ? e : "soxr_create failed");
      rc = FC_EDECODE;
      goto done;
    }
  }
  if (frames_known) { /* one allocation in the usual case; a header is only a hint */
    double hint = fmin((double)sfi.frames, 16.0 * (double)len);
    double want = ceil(hint * ratio) + 1024;
    if (want < (double)(SIZE_MAX / sizeof(float)) && sample_buf_reserve(&out, (size_t)want)) {
      rc = ENOMEM;
      goto done;
    }
  }
  /* libsndfile caps channels at 1024, so the block is at most 32 MB. */
  if (!(block = fc_malloc((size_t)BLOCK_FRAMES * channels * sizeof *block)) ||
      !(mono = fc_malloc(BLOCK_FRAMES * sizeof *mono))) {
    rc = ENOMEM;
    goto done;
  }

  /* Like soundfile's read(): at most the frames the header announces. */
  const sf_count_t limit = frames_known ? sfi.frames : SF_COUNT_MAX;
  const int check_floats = float_source(sfi.format);
  sf_count_t decoded = 0;
  while (decoded < limit) {
    sf_count_t want = limit - decoded < BLOCK_FRAMES ? limit - decoded : BLOCK_FRAMES;
    if (mem.no_end && want > 1152)
      want = 1152; /* an MPEG frame: all a read failing at a cut loses */
    /* Mono at the target rate (the usual case) decodes straight into the output: no block, no
     * mix, no copy. */
    const int direct = channels == 1 && !rs;
    if (direct && sample_buf_reserve(&out, (size_t)want)) {
      rc = ENOMEM;
      goto done;
    }
    sf_count_t got = sf_readf_float(sf, direct ? out.v + out.n : block, want);
    if (got <= 0) break;
    if (check_floats) {
      const size_t values = (size_t)got * (direct ? 1 : channels);
      const float *p = direct ? out.v + out.n : block;
      const size_t bad = first_bad_sample(p, values);
      if (bad < values) {
        const unsigned long long at = (unsigned long long)decoded + bad / (direct ? 1 : channels);
        char ch[32] = "";
        if (channels > 1) snprintf(ch, sizeof ch, ", channel %u", (unsigned)(bad % channels) + 1);
        if (isnan(p[bad]))
          fc_why(why, why_len, "damaged float samples: sample %llu (%.3f s%s) is NaN", at,
                 (double)at / src_rate, ch);
        else
          fc_why(why, why_len, "damaged float samples: sample %llu (%.3f s%s) is %g%s", at,
                 (double)at / src_rate, ch, (double)p[bad],
                 isinf(p[bad]) ? "" : ", beyond any PCM scale");
        rc = FC_EDECODE;
        goto done;
      }
    }
    decoded += got;
    if ((double)decoded > max_frames) {
      fc_why(why, why_len,
             "at least %.2f s long (its header states no length), over the %g s limit",
             (double)decoded / src_rate, max_seconds);
      rc = FC_ETOOLONG;
      goto done;
    }
    if (direct) {
      out.n += (size_t)got;
      continue;
    }
    mix_to_mono(block, (size_t)got, channels, mono);
    if (rs) {
      if ((rc = resample_push(rs, mono, (size_t)got, ratio, &out, why, why_len))) goto done;
    } else {
      if (sample_buf_reserve(&out, (size_t)got)) {
        rc = ENOMEM;
        goto done;
      }
      memcpy(out.v + out.n, mono, (size_t)got * sizeof *mono);
      out.n += (size_t)got;
    }
  }
  int sf_err = sf_error(sf);
  if (mem.no_end && mem.pos >= mem.len && decoded > 0) sf_err = 0; /* mpg123 at a cut end */
  const int64_t slack = frames_known ? audio_frames_slack(sfi.format, bytes, len, sfi.frames) : -1;
  if (slack >= 0 && decoded + slack < sfi.frames) {
    /* Not "truncated": a file of full size with one bad byte stops a FLAC decoder just the same. */
    fc_why(why, why_len, "damaged or cut short: header says %lld frames, only %lld decode%s%s%s",
           (long long)sfi.frames, (long long)decoded, sf_err ? " (libsndfile: " : "",
           sf_err ? sf_strerror(sf) : "", sf_err ? ")" : "");
    rc = FC_EDECODE;
    goto done;
  }
  if (sf_err != SF_ERR_NO_ERROR) {
    fc_why(why, why_len, "decode error after %lld frames: %s", (long long)decoded, sf_strerror(sf));
    rc = FC_EDECODE;
    goto done;
  }
  if (info) info->frames = (uint64_t)decoded;
  if (decoded == 0) {
    fc_why(why, why_len, "no samples");
    rc = FC_EEMPTY;
    goto done;
  }

  size_t n_out = (size_t)decoded;
  if (rs) {
    if ((rc = resample_push(rs, NULL, 0, ratio, &out, why, why_len))) goto done;
    n_out = (size_t)ceil((double)decoded * ratio); /* librosa: int(np.ceil(n * ratio)) */
    if (n_out > out.n) { /* fix_length: zero-pad */
      if (sample_buf_reserve(&out, n_out - out.n)) {
        rc = ENOMEM;
        goto done;
      }
      memset(out.v + out.n, 0, (n_out - out.n) * sizeof *out.v);
    }
    out.n = n_out; /* or trim */
  }
  if (out.cap > out.n + out.n / 8 + 4096) { /* give back a generous over-allocation */
    float *v = fc_realloc(out.v, out.n * sizeof *v);
    if (v) out.v = v;
  }
  *samples = out.v;
  *n_samples = out.n;
  out.v = NULL;

done:
  if (rs) soxr_delete(rs);
  free(mono);
  free(block);
  free(out.v);
  sf_close(sf);
  return rc;
}
