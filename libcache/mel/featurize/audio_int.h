/* Audio decoding's internals for the featurize pipeline (audio.c). Private to libcache/mel/featurize/. */
#ifndef FC_AUDIO_INT_H
#define FC_AUDIO_INT_H

#include "featcache/fc_audio.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* A little-endian 32-bit field of a header (audio.c's WAV reader, audio_sniff.c's chunk walks). */
static inline uint32_t audio_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* fc_audio_read_file into a buffer the caller keeps from file to file (a worker's): *buf (NULL
 * with *cap 0 at first) is used when it holds the file, else grown (fc_realloc) and *buf, *cap
 * updated; it stays the caller's to free, whatever the outcome. *len: the file's bytes in it.
 * Errors as fc_audio_read_file. */
int audio_read_into(const char *path, uint64_t max_bytes, uint8_t **buf, size_t *cap, size_t *len,
                    fc_audio_info *info);

/* audio_read_into for a caller that refuses audio over max_seconds > 0 (featurize --max-seconds):
 * a regular file is read from its first bytes (4 KiB), and when it is longer and its header states
 * a length over the limit — the frame count fc_audio_decode would read from it, the data not
 * truncated — it fails with FC_ETOOLONG and fc_audio_decode's reason in why, without its data
 * read (a 10 GB recording costs a header, not 10 GB). Anything else — a header that states no
 * length, one that states more data than the file holds, a pipe, a format libsndfile does not
 * open — is read whole, and fc_audio_decode says what it says of it. max_seconds 0:
 * audio_read_into. */
int audio_read_checked(const char *path, double max_seconds, uint8_t **buf, size_t *cap,
                       size_t *len, fc_audio_info *info, char *why, size_t why_len);

/* ---- 16-bit mono PCM WAV without libsndfile (audio_wav.c) ---- */
/* The common case: a RIFF WAVE of 16-bit mono PCM whose chunks are all well formed, "fmt " (plain
 * PCM: 16 bytes, or 18 with no extension) before "data", the data chunk complete and non-empty.
 * Anything else (other encodings, extensible headers, odd or streaming sizes, a big-endian host)
 * goes through libsndfile. Looks at the first avail bytes b of a file of len bytes: 1, where its
 * samples start (*data_off), how many (*frames) and the rate when it is such a WAV, 0 when it is
 * not, -1 when that cannot be told from those bytes. */
int audio_wav_pcm16_scan(const uint8_t *b, size_t avail, uint64_t len, size_t *data_off,
                         size_t *frames, uint32_t *rate);

/* frames little-endian int16 samples at data as floats, v / 32768: libsndfile's bits. */
void audio_wav_decode_pcm16(const uint8_t *data, size_t frames, float *out);

/* The samples of an in-memory file as they are in it, when the file is what fc_audio_decode turns
 * into floats without libsndfile: a well-formed RIFF WAVE of 16-bit mono PCM at target_rate (0:
 * any rate), little-endian host. Returns 1 with *pcm pointing at its data chunk inside bytes
 * (n_samples little-endian int16, 2-byte aligned; valid as long as bytes), info filled as
 * fc_audio_decode fills it; 0 when the file is anything else (decode it); FC_ETOOLONG (negative),
 * with fc_audio_decode's reason in why, when it is longer than max_seconds > 0. Sample v stands for exactly the float
 * fc_audio_decode gives, v / 32768 (fc_cu_i16_to_f32). */
int audio_pcm16_view(const void *bytes, size_t len, uint32_t target_rate, double max_seconds,
                     const void **pcm, size_t *n_samples, fc_audio_info *info, char *why,
                     size_t why_len);

/* A 16-bit file read in place, for featurize's staging path: its samples straight from the file
 * into the staging ring, with no copy through a buffer. audio_pcm16_open opens it (the errors of
 * audio_read_into: it cannot be opened, is a directory, is empty) and reads its first bytes into
 * *buf (grown to hold them, as audio_read_into grows it). *shape 1: they show a file that
 * audio_pcm16_view takes whole (its data chunk's header within them): f says where its n_samples
 * samples are, info is filled as audio_read_into and audio_pcm16_view fill it, and
 * audio_pcm16_finish reads the samples into `samples` (n_samples int16, the part the first read
 * took copied) and the bytes after them into *buf after the first read's (grown as needed), so
 * that the file's bytes are *buf[0, data_off), the samples, then *buf[tail_off, tail_off +
 * tail_len); it returns 0, EAGAIN when the file is not what its first read said (it shrank or
 * grew) or another WAV or data chunk follows its samples (audio_riff_after: files joined with
 * cat, two data chunks, which fc_audio_decode refuses): read it again as usual, ENOMEM, or the read's error. *shape 0: anything else;
 * audio_pcm16_read_all reads the whole file into *buf as audio_read_into would have (from the
 * bytes read so far: a pipe is read once). Either call closes the file; audio_pcm16_close closes
 * it without reading more. */
typedef struct audio_pcm16_file {
  int fd;
  struct stat st;
  size_t head; /* bytes of the first read, in *buf */
  size_t data_off; /* where the samples start */
  size_t n_samples;
} audio_pcm16_file;

int audio_pcm16_open(const char *path, uint32_t target_rate, uint8_t **buf, size_t *cap,
                     audio_pcm16_file *f, fc_audio_info *info, int *shape);
int audio_pcm16_finish(audio_pcm16_file *f, void *samples, uint8_t **buf, size_t *cap,
                       size_t *tail_off, size_t *tail_len);
int audio_pcm16_read_all(audio_pcm16_file *f, uint8_t **buf, size_t *cap, size_t *len,
                         fc_audio_info *info);
void audio_pcm16_close(audio_pcm16_file *f);

/* ---- a file's length from its header (audio_length.c) ---- */
/* libsndfile's opens, serialized: a failed open leaves its reason in libsndfile's one global
 * error, which the next open in any thread overwrites. */
extern pthread_mutex_t audio_sf_open_mu;

/* "3.0 s long, over the 2.0 s limit" into why: fc_audio_decode's reason for FC_ETOOLONG. */
void audio_too_long(char *why, size_t why_len, double seconds, double limit);

/* 1, with audio_too_long's reason in why, when the file open at fd (size bytes, regular; its
 * first head_len bytes in head) states a length over max_seconds > 0 in its header, read through
 * libsndfile as fc_audio_decode reads it, and is not truncated (audio_truncated); 0 otherwise
 * (a longer file, a header that says no length, a truncated one: fc_audio_decode decides).
 * Reads the header's bytes past head with pread: fd's offset is unchanged. */
int audio_header_too_long(int fd, uint64_t size, const uint8_t *head, size_t head_len,
                          double max_seconds, char *why, size_t why_len);

/* ---- what a file's bytes say (audio_sniff.c) ---- */
/* A file whose header states more data than the file holds — a WAV's (or RF64's, W64's) data
 * chunk, AIFF's SSND, AU's data size, NIST SPHERE's sample count: libsndfile quietly reads what is
 * there, librosa too, but a cut-off download is not an utterance. Returns 1 and the frame counts
 * when truncated, 0 when not. 32-bit sizes of 0 and >= 0x7FFFF000 are "length unknown" markers
 * written by streaming writers (ffmpeg to a pipe writes 0xFFFFFFFF), not claims. b holds the
 * first avail bytes of a file of len: -1 when those are too few to tell (the whole file in b:
 * avail = len, never -1). */
int audio_truncated(const uint8_t *b, size_t avail, uint64_t len, uint64_t *declared,
                    uint64_t *held);

/* The bytes after a RIFF WAVE data chunk that states 0 bytes (a writer that did not finish leaves
 * the sizes 0: it writes them last), or an RF64's whose ds64 chunk states 0 data bytes (ffmpeg
 * -rf64 to a pipe), which libsndfile, librosa and ffmpeg read as no samples; 0 when the file is
 * not such a WAV. */
uint64_t audio_unsized_data(const uint8_t *b, size_t len);

/* How many frames short of the frame count libsndfile reports (frames, of a file in format whose
 * bytes are b[0, len)) a good file may decode to: 0 where the count is exact (WAV, FLAC and the
 * other stored counts; Ogg Vorbis and Opus, whose last granule position is the length, whatever
 * wrote them), so that fewer frames mean a damaged or cut file; less than one MPEG frame for an
 * MP3 whose first frame is a Xing or Info tag with a frame count (LAME, ffmpeg), from which mpg123
 * takes the length; -1 where the count is an estimate (an MP3 without the tag: mpg123 guesses
 * from the file size and the first frame's bitrate, and a good file decodes short of it). */
int64_t audio_frames_slack(int format, const uint8_t *b, size_t len, int64_t frames);

/* 1 when b[0, len) (a file's first bytes, after any ID3v2 tag, or a WAV's data chunk of MPEG) is
 * MPEG audio: a file whose virtual I/O cannot seek to its end, and is read an MPEG frame at a time.
 * One whose first frame is no Xing or Info tag with a frame count states no length (libsndfile
 * reads no WAV's fact chunk for MPEG): mpg123 would estimate one from the file's size and its first
 * frame's (a VBR file's estimate can be a third of it, or more than it), and libsndfile read no
 * further than the estimate; without the end mpg123 makes none, and libsndfile reads it to its end
 * (frames SF_COUNT_MAX), the same samples. One with such a tag keeps the tag's length; with the
 * end there mpg123 would compare the tag's byte count with the file's size, and print its own
 * unprefixed "Warning: Xing stream size off by more than 1%" on stderr for a cut file (libsndfile
 * gives no way to make mpg123 quiet). 0 otherwise; -1 when an ID3v2 tag or a WAV's chunks run past
 * the len bytes at hand (b is a file's head): whether one follows cannot be told from them. */
int audio_mp3_stream(const uint8_t *b, size_t len);

/* Files joined with cat, of which libsndfile reads only the first (and reports its length as the
 * file's: the rest would be left out without a word; ffmpeg reads them all): an Ogg file of
 * streams one after another (a beginning-of-stream page after a stream's data; multiplexed
 * streams have their first pages first), an MP3 whose first frame's Xing/Info tag states the
 * stream's bytes and another stream begins where they end, a RIFF WAVE with another RIFF WAVE
 * header after its data chunk (audio_wav_joined; libsndfile refuses some such files as damaged,
 * and the 16-bit path of audio_wav.c would read the first), an RF64 or Sony Wave64 file the same
 * (libsndfile reads an RF64's first, a W64's two as one, the second header as samples; a second
 * file of any of the three kinds counts), a FLAC file with a second stream's
 * "fLaC" and STREAMINFO header in it, an AIFF or AU file with a second one's header where the
 * first one's stated size ends; and a RIFF WAVE or RF64 file with a second data chunk after the
 * first (no second file: readers disagree on it, audio_riff_after). fc_audio_decode's reason for refusing
 * the file (b[0, len), format libsndfile's, 0 when it did not open it), in buf (n bytes) or a
 * constant, or NULL. */
const char *audio_joined(int format, const uint8_t *b, size_t len, char *buf, size_t n);

/* Where in b[0, len), a RIFF WAVE or RF64 file whose data chunk states its size (an RF64's in its
 * ds64 chunk), a second RIFF WAVE, RF64 or W64 header begins after that chunk (at its end, its pad
 * byte there or left out, or after chunks that follow it): the file is two joined with cat. A data
 * chunk that states no size (0, 0xFFFFFFFF, an RF64's ds64 0: a streaming writer's, ffmpeg's to a
 * pipe), which is read to the file's end, is searched for a "RIFF....WAVEfmt ", "RF64....WAVEds64"
 * or W64 header (ffmpeg -f wav - >> all.wav in a loop). 0 when none is. */
uint64_t audio_wav_joined(const uint8_t *b, size_t len);

/* The same test on the n bytes b that follow a WAV's data chunk (odd: its size was odd, so its pad
 * byte may be there or left out): where a RIFF WAVE, RF64 or W64 header begins at one of their
 * chunk boundaries, or -1. Looks at a few chunk headers, never the bytes within them. data: a
 * second data chunk there counts too (a WAV holds one: libsndfile refuses such a file, sox reads
 * the first, ffmpeg the last; audio_joined says so), for the 16-bit path, which would read the
 * first. */
int64_t audio_riff_after(const uint8_t *b, size_t n, int odd, int data);

/* A RIFF WAVE whose data chunk states fewer bytes than follow it, the rest in no chunk (a writer
 * that did not update the header, raw samples appended with cat): libsndfile, librosa and sox read
 * what the header states, and so does featurize, but the rest is audio dropped without a word. When
 * AUDIO_UNHELD_MIN bytes or more follow so (fewer: padding), a warning into buf (n bytes) saying
 * how many (and how long at byte_rate, the fmt chunk's) and the way to keep them; returns 1 when it
 * wrote one. audio_unheld_note takes the bytes after the data chunk (tail, n; odd: the chunk's size
 * was odd), audio_wav_unheld_note a whole file. */
enum { AUDIO_UNHELD_MIN = 4096 };
int audio_unheld_note(const uint8_t *tail, size_t n, int odd, uint32_t byte_rate, char *buf,
                      size_t len);
int audio_wav_unheld_note(const uint8_t *b, size_t len, char *buf, size_t n);

/* The container the first bytes show ("WAV", "FLAC", "MP3", ...; NULL: none), for telling a damaged
 * audio file from one that is not audio when libsndfile refuses it. */
const char *audio_magic(const uint8_t *b, size_t len);

/* The name of an audio format libsndfile cannot read at all ("MP4/M4A", "AVI", "AAC (ADTS)",
 * "Matroska/WebM", "ASF/WMA", "AMR", "WavPack", "TTA", APE, raw AC-3 and DTS) when the first bytes
 * show one; NULL otherwise. */
const char *audio_unsupported(const uint8_t *b, size_t len);

/* The codec of a file in a container libsndfile reads, when the codec is one it does not decode,
 * written into buf (n bytes) with the container: "a WAV file: G.726 ADPCM (format tag 0x0045)"
 * (a RIFF WAVE's fmt chunk; a tag that names no codec is damage), "an Ogg file: Speex" (the first
 * stream's); NULL otherwise: for telling such a file from a damaged one when libsndfile refuses it. */
const char *audio_codec_unread(const uint8_t *b, size_t len, char *buf, size_t n);

/* What a file that is no audio holds in its place when a download or a clone left it there: a Git
 * LFS pointer, an HTML page, an XML error reply, a Mac's AppleDouble ._ file (said with what to
 * do); NULL otherwise. */
const char *audio_stand_in(const uint8_t *b, size_t len);
/* 1 when b is a WAV (RIFF or RF64) or AU whose header states a sample rate of 0, or one past
 * 2^31 - 1 (libsndfile's int reads it negative), or a CAF whose desc chunk states one that does not
 * round to 1 .. 2^31 - 1 Hz, or an AIFF whose COMM chunk states 0 (libsndfile reads 1 Hz) or a
 * negative one, with ": its header states a sample rate of R Hz" in buf:
 * libsndfile refuses such a file as "Internal error : SF_INFO struct incomplete.", which reads as
 * a fault of the tool, not of the file. 0 otherwise. */
int audio_bad_rate(const uint8_t *b, size_t len, char *buf, size_t n);

#endif
