/* An audio file's length from its header, before its data is read: featurize --max-seconds
 * refuses a 10 GB recording for what its header says, as fc_audio_decode would after reading it
 * whole. libsndfile opens the file through virtual I/O over the bytes already read and pread for
 * the rest of its header (a WAV's chunks after its data, an Ogg file's last page): the frame count
 * it reports is the one fc_audio_decode checks. Private to libcache/mel/featurize/ (audio_int.h). */
#include "libcache/mel/featurize/audio_int.h"
#include "formats/common/why.h"

#include <errno.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pthread_mutex_t audio_sf_open_mu = PTHREAD_MUTEX_INITIALIZER;

/* The limit with as many decimals as it was given with (at least one: 0.25, not "0.2"; 0.04, not
 * "0.0"), and the length with as many as tell the two apart (a 3.0 s file over a 2.99 s limit is
 * "3.00 s long, over the 2.99 s limit"; one sample over a 0.1 s limit at 48 kHz "0.10002 s long,
 * over the 0.10000 s limit"). Nine decimals tell a sample apart at any rate. */
void audio_too_long(char *why, size_t why_len, double seconds, double limit) {
  enum { MAX_DECIMALS = 9 };
  char a[48], b[48];
  int p = 1;
  for (; p < MAX_DECIMALS; p++) { /* the fewest decimals that give the limit back */
    snprintf(b, sizeof b, "%.*f", p, limit);
    if (strtod(b, NULL) == limit) break;
  }
  for (; p < MAX_DECIMALS; p++) {
    snprintf(a, sizeof a, "%.*f", p, seconds);
    snprintf(b, sizeof b, "%.*f", p, limit);
    if (strcmp(a, b) != 0) break;
  }
  fc_why(why, why_len, "%.*f s long, over the %.*f s limit", p, seconds, p, limit);
}

/* ---- libsndfile virtual I/O: the head in memory, the rest of the file by pread ---------------- */
typedef struct lazy_file {
  int fd;
  const uint8_t *head;
  sf_count_t head_len, len, pos;
  int no_end; /* as fc_audio_decode's (audio_mp3_stream): no estimate, mpg123 kept quiet */
} lazy_file;

static sf_count_t lazy_get_filelen(void *user) { return ((lazy_file *)user)->len; }

static sf_count_t lazy_seek(sf_count_t offset, int whence, void *user) {
  lazy_file *f = user;
  if (whence == SEEK_END && f->no_end) return -1;
  sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f->pos : f->len;
  if (base + offset < 0) return -1;
  f->pos = base + offset; /* past the end is allowed, as with lseek; reads there return 0 */
  return f->pos;
}

static sf_count_t lazy_read(void *ptr, sf_count_t count, void *user) {
  lazy_file *f = user;
  if (count <= 0 || f->pos >= f->len) return 0;
  if (count > f->len - f->pos) count = f->len - f->pos;
  sf_count_t got = 0;
  if (f->pos < f->head_len) {
    got = f->head_len - f->pos < count ? f->head_len - f->pos : count;
    memcpy(ptr, f->head + f->pos, (size_t)got);
  }
  while (got < count) {
    ssize_t k = pread(f->fd, (uint8_t *)ptr + got, (size_t)(count - got), (off_t)(f->pos + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break; /* an error or a file that shrank: libsndfile reads what there is */
    got += k;
  }
  f->pos += got;
  return got;
}

static sf_count_t lazy_write(const void *ptr, sf_count_t count, void *user) {
  (void)ptr, (void)count, (void)user;
  return 0;
}

static sf_count_t lazy_tell(void *user) { return ((lazy_file *)user)->pos; }

int audio_header_too_long(int fd, uint64_t size, const uint8_t *head, size_t head_len,
                          double max_seconds, char *why, size_t why_len) {
  uint64_t declared, held;
  const int mp3 = audio_mp3_stream(head, head_len); /* -1: not known from the head */
  if (max_seconds <= 0 || mp3 < 0 || audio_truncated(head, head_len, size, &declared, &held) != 0)
    return 0;
  lazy_file f = {.fd = fd,
                 .head = head,
                 .head_len = (sf_count_t)head_len,
                 .len = (sf_count_t)size,
                 .no_end = mp3};
  SF_VIRTUAL_IO vio = {lazy_get_filelen, lazy_seek, lazy_read, lazy_write, lazy_tell};
  SF_INFO sfi;
  memset(&sfi, 0, sizeof sfi);
  pthread_mutex_lock(&audio_sf_open_mu);
  SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &sfi, &f);
  pthread_mutex_unlock(&audio_sf_open_mu);
  if (!sf) return 0; /* fc_audio_decode says why */
  sf_close(sf);
  /* fc_audio_decode's checks, in its order: a header without channels or rate is its to refuse */
  if (sfi.channels <= 0 || sfi.samplerate <= 0 || sfi.frames < 0 || sfi.frames >= SF_COUNT_MAX ||
      (double)sfi.frames <= max_seconds * sfi.samplerate)
    return 0;
  audio_too_long(why, why_len, (double)sfi.frames / sfi.samplerate, max_seconds);
  return 1;
}
