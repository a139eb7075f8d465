/* The source of the featurize pipeline, its first stage: the workers (jobs threads). Each takes
 * the next item, reads its file once into the worker's buffer, hashes it, looks the key and the
 * id's audio entry up in a short read transaction (skipping what is stored), decodes it (mono,
 * resampled) — or, on a staging device, takes a 16-bit file's samples as they are — and hands the
 * utterance to the device: into the staging ring (featurize_stage.c) or computed here on the CPU
 * (featurize_compute.c), then to the writers (featurize_sink.c).
 *
 * Why workers also compute on the CPU: the CPU backend's cost per utterance is dominated by the
 * FFTs, and a worker that keeps its samples in cache from decode to mel is faster than a hand-off.
 *
 * Read transactions are short (begin, two gets, end) and never held across a blocking call: a
 * writer that must grow the map waits for readers of this process to finish theirs.
 * Calls down the line only: device (stage, compute), sink, job (featurize_int.h). */
#include "featcache/fc_audio.h"
#include "featcache/fc_format.h"
#include "libcache/mel/featurize/audio_int.h"
#include "libcache/mel/featurize/featurize_int.h"
#include "formats/common/alloc.h"
#include "formats/common/why.h"
#include "formats/common/thread_name.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utf8proc.h>

static int stop_requested(const fz_run *r) { return r->o.stop && *r->o.stop; }

static void report_skipped(fz_run *r, size_t i) {
  fc_featurize_event ev = {.status = FC_ITEM_SKIPPED, .index = i};
  pthread_mutex_lock(&r->ev_mu);
  r->st.skipped_existing++;
  fz_emit(r, &ev);
  pthread_mutex_unlock(&r->ev_mu);
}

/* A check (opts.check_only): the item's file reads and decodes, but the store lacks its record or
 * its id's audio entry. */
static void report_not_stored(fz_run *r, size_t i) {
  fc_featurize_event ev = {.status = FC_ITEM_NOT_STORED, .index = i};
  pthread_mutex_lock(&r->ev_mu);
  r->st.not_stored++;
  fz_emit(r, &ev);
  pthread_mutex_unlock(&r->ev_mu);
}

/* Only the id's failure record to delete (the id was skipped: stored under this config). A check
 * writes nothing: the record stays. */
static void queue_clear(fz_run *r, size_t i, double *waited) {
  if (r->o.check_only) return;
  fz_job *j = fz_job_new(r, i);
  if (!j) return; /* the record stays: a later run deletes it */
  j->kind = FZ_JOB_CLEAR;
  if (fz_queue_push(r, j, waited)) fz_job_free(j);
}

/* Does the id have a failure record of this run's config? (t: a read transaction on its part) */
static int has_failure(fz_run *r, fc_rtxn *t, const char *id, int *rc) {
  const void *v;
  size_t vlen;
  fc_failure f;
  int grc = fc_rtxn_get(t, FC_DB_FAILED, id, strlen(id), &v, &vlen);
  if (grc != 0 && grc != FC_ENOTFOUND) *rc = grc;
  return grc == 0 && fc_failure_decode(v, vlen, &f) == 0 &&
         memcmp(f.config.bytes, r->cfg_digest.bytes, sizeof f.config.bytes) == 0;
}

/* A record of this run found stored at a lookup (t: a read transaction on part p): when the
 * config is there with it, the part's commits require it from now on (fz_part cfg_seen), so that
 * a drop between this lookup and the run's first commit fails the run (FC_EDROPPED) rather than
 * having the commit store the config anew, the record this lookup counted stored gone. */
static void found_stored(fz_run *r, fz_part *p, fc_rtxn *t) {
  const char *json;
  size_t len;
  if (!atomic_load_explicit(&p->cfg_seen, memory_order_relaxed) &&
      fc_rtxn_get_config(t, &r->cfg_digest, &json, &len) == 0)
    atomic_store(&p->cfg_seen, 1);
}

/* The source's identity as its audio entry stores it: path (absolute: fz_source_path), size,
 * mtime. */
static int same_source(const fc_audio_entry *e, const char *path, uint64_t size, int64_t mtime_ns) {
  return e->source_size == size && e->mtime_ns == mtime_ns && e->path_len == strlen(path) &&
         memcmp(e->path, path, e->path_len) == 0;
}

/* Is the record stored, does the id's audio entry hold this digest, and does the id have a
 * failure record of this config? (In the id's part.) *stale: the entry holds the digest, but names
 * the source otherwise (another path, size or mtime: a touched or copied file); *old then holds
 * its facts (path excepted). abs: the source path as stored. *replaced (the caller's to free):
 * the path the id's entry names when that is another file with other audio, else NULL. */
static int lookup(fz_run *r, size_t i, const fc_digest *key, const fc_digest *audio,
                  const fc_audio_info *src, const char *abs, int *have_feat, int *have_entry,
                  int *stale, int *have_fail, fc_audio_entry *old, char **replaced) {
  const char *id = fz_item(r, i)->id;
  *have_feat = *have_entry = *stale = *have_fail = 0;
  *replaced = NULL;
  fc_rtxn *t;
  fz_part *p = &r->parts[fz_part_of(r, i)];
  int rc = fc_store_read_begin(p->s, &t);
  if (rc) return rc;
  rc = fc_rtxn_get(t, FC_DB_FEAT, key->bytes, sizeof key->bytes, NULL, NULL);
  if (rc == 0) {
    *have_feat = 1;
    found_stored(r, p, t);
  }
  if (rc == FC_ENOTFOUND) rc = 0;
  if (!rc) {
    const void *v;
    size_t vlen;
    int grc = fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vlen);
    if (grc == 0 && fc_audio_entry_decode(v, vlen, old) == 0) {
      if (memcmp(old->digest.bytes, audio->bytes, sizeof audio->bytes) == 0) {
        *have_entry = 1;
        *stale = !same_source(old, abs, src->size, src->mtime_ns);
      } else if (old->path_len &&
                 (old->path_len != strlen(abs) || memcmp(old->path, abs, old->path_len) != 0)) {
        *replaced = fc_strndup(old->path, old->path_len); /* NULL without memory: no note */
      }
      old->path = NULL; /* the transaction's memory */
    } else if (grc != 0 && grc != FC_ENOTFOUND) {
      rc = grc;
    }
  }
  if (!rc) *have_fail = has_failure(r, t, id, &rc);
  fc_rtxn_end(t);
  return rc;
}

/* Why an input's look-up in the store failed. A full disk (ENOSPC, EDQUOT: LMDB could not write
 * lock.mdb, libcache/core/store/store_int.h store_txn_begin) leaves the store unusable: every
 * input in flight fails so, as after a failed write, and is said as one (cmd/featurize/report.c). */
static void store_read_why(int rc, char *why, size_t len) {
  if (rc == ENOSPC || rc == EDQUOT)
    fc_why(why, len, "not stored: a write to the store failed (%s)", fc_strerror(rc));
  else
    fc_why(why, len, "cannot read the store: %s", fc_strerror(rc));
}

/* A rerun that skips by the source's identity (docs/featurize.md "Reruns"): when the id's audio
 * entry names this path (abs, as stored) with the file's size and mtime, the digest it holds is
 * taken for the file's bytes, which are not read; the item is stored when that digest's record
 * under this config is. 1: stored, skip it (*have_fail: it has a failure record of this config);
 * 0: read and hash the file. */
static int stored_by_identity(fz_run *r, size_t i, const char *abs, int *have_fail) {
  const fc_item *it = fz_item(r, i);
  struct stat st;
  *have_fail = 0;
  if (r->parts[fz_part_of(r, i)].no_entries) return 0; /* a new store: nothing stored by identity */
  if (stat(it->path, &st) != 0 || !S_ISREG(st.st_mode)) return 0; /* the read says why */
  int64_t mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  fc_rtxn *t;
  if (fc_store_read_begin(r->parts[fz_part_of(r, i)].s, &t)) return 0;
  const void *v;
  size_t vlen;
  fc_audio_entry e;
  int stored = 0, rc = 0;
  if (fc_rtxn_get(t, FC_DB_AUDIO, it->id, strlen(it->id), &v, &vlen) == 0 &&
      fc_audio_entry_decode(v, vlen, &e) == 0 &&
      same_source(&e, abs, (uint64_t)st.st_size, mtime_ns)) {
    fc_digest key;
    fc_record_key(&e.digest, &r->cfg_digest, &key);
    stored = fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, NULL, NULL) == 0;
    if (stored) {
      found_stored(r, &r->parts[fz_part_of(r, i)], t);
      *have_fail = has_failure(r, t, it->id, &rc);
    }
  }
  fc_rtxn_end(t);
  return stored && !rc;
}

/* Does the id's audio entry name audio whose record under this config is stored? Then
 * --max-seconds leaves its file to be read and hashed (a touched file, --rehash): stored audio is
 * found stored whatever its length, as without the limit; only audio not stored is refused from
 * its header. 1 too when the store cannot be read (the usual way says why). */
static int id_has_record(fz_run *r, size_t i) {
  if (r->parts[fz_part_of(r, i)].no_entries) return 0; /* a new store */
  const char *id = fz_item(r, i)->id;
  fc_rtxn *t;
  if (fc_store_read_begin(r->parts[fz_part_of(r, i)].s, &t)) return 1;
  const void *v;
  size_t vlen;
  fc_audio_entry e;
  int stored = 0;
  if (fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vlen) == 0 &&
      fc_audio_entry_decode(v, vlen, &e) == 0) {
    fc_digest key;
    fc_record_key(&e.digest, &r->cfg_digest, &key);
    stored = fc_rtxn_get(t, FC_DB_FEAT, key.bytes, sizeof key.bytes, NULL, NULL) == 0;
  }
  fc_rtxn_end(t);
  return stored;
}

/* The job's audio entry (FORMAT.md): the content digest, the source's facts and its path (abs:
 * absolute, fz_source_path). */
static int encode_entry(fz_job *j, const fc_digest *audio, const fc_audio_info *info,
                        const char *abs) {
  j->source_rate = info->sample_rate;
  j->source_channels = info->channels;
  fc_audio_entry e = {.digest = *audio,
                      .sample_rate = info->sample_rate,
                      .channels = info->channels,
                      .frames = info->frames,
                      .source_size = info->size,
                      .mtime_ns = info->mtime_ns,
                      .path = abs,
                      .path_len = strlen(abs)};
  j->entry_len = fc_audio_entry_size(&e);
  if (!(j->entry = fc_malloc(j->entry_len))) return ENOMEM;
  fc_audio_entry_encode(&e, j->entry);
  return 0;
}

/* An item whose record and audio entry (with this digest) are stored: skipped; when the entry
 * names the source otherwise (stale: a touched or copied file), the entry is rewritten for this
 * source (info: its size and mtime; the rest from old), so that the next rerun need not read the
 * file. Returns 0, or ENOMEM (nothing queued). */
static int settle_stored(fz_run *r, fz_worker *w, size_t i, const fc_digest *key,
                         const fc_digest *audio, fc_audio_info *info, const char *abs, int stale,
                         int have_fail, const fc_audio_entry *old) {
  fz_times *tm = &w->t;
  if (!stale || r->o.check_only) { /* a check leaves the entry as it is: stored all the same */
    report_skipped(r, i);
    if (have_fail) queue_clear(r, i, &tm->queue_wait);
    return 0;
  }
  info->sample_rate = old->sample_rate;
  info->channels = old->channels;
  info->frames = old->frames;
  fz_job *j = fz_job_new(r, i);
  if (!j) return ENOMEM;
  j->key = *key;
  j->refresh = 1;
  j->clear_fail = have_fail;
  if (encode_entry(j, audio, info, abs)) {
    fz_job_free(j);
    return ENOMEM;
  }
  int rc = fz_queue_push(r, j, &tm->queue_wait);
  if (rc) {
    fz_job_free(j);
    fz_report_unstored(r, i, rc);
  }
  return 0;
}

/* A file's digest (fc_digest_buffer's) from its bytes in three pieces, in order. */
static void digest3(const void *a, size_t na, const void *b, size_t nb, const void *c, size_t nc,
                    fc_digest *out) {
  const void *const data[3] = {a, b, c};
  const size_t len[3] = {na, nb, nc};
  fc_digest_pieces(data, len, 3, out);
}

/* On a staging device, a 16-bit mono WAV at the config's rate whose record is not stored is read
 * straight into the ring: its header first, then room reserved in the chunk being filled and its
 * samples read into that room (no copy through the worker's buffer), the bytes after them, the
 * digest over the three pieces, the store looked up — and the room given up again when the record
 * is stored after all (or the file cannot be read). Returns 1 when the item is done with (queued
 * into the ring, skipped, or failed with its line); 2 when it is another format, read whole into
 * the worker's buffer (*len bytes, *info_all) for the usual way; 0 when the usual way reads it
 * again: a length the ring or the job does not take, another format under --max-seconds (the usual
 * way reads its header first), a record stored under another id or another identity of the
 * source, a file that changed while it was read. Its time from t0 (thread CPU
 * seconds) goes to the worker's stages. */
/* Is path Kaldi's FILE:OFFSET (an archive entry, a wav.scp's "utt1 a.ark:1234"), the FILE there? */
static int kaldi_offset(const char *path) {
  const char *colon = strrchr(path, ':');
  if (!colon || colon == path || !colon[1] || colon[1 + strspn(colon + 1, "0123456789")]) return 0;
  char file[4096];
  if ((size_t)(colon - path) >= sizeof file) return 0;
  memcpy(file, path, (size_t)(colon - path));
  file[colon - path] = '\0';
  struct stat st;
  return stat(file, &st) == 0 && S_ISREG(st.st_mode);
}

/* A file there under path's name in Unicode's other normal form (a corpus copied from macOS, whose
 * names are decomposed, NFD, listed by a manifest written composed, NFC, or the reverse): the
 * form found (its name written into to, n bytes), or NULL. Allocates nothing: utf8proc's decompose
 * and re-encode in a buffer here. */
static const char *other_form(const char *path, char *to, size_t n) {
  enum { CAP = 1024 }; /* code points: a longer path is not looked at */
  static const struct {
    utf8proc_option_t opt;
    const char *name;
  } forms[] = {{UTF8PROC_STABLE | UTF8PROC_COMPOSE, "NFC"},
               {UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, "NFD"}};
  const size_t len = strlen(path);
  size_t ascii = 0;
  while (ascii < len && (unsigned char)path[ascii] < 0x80) ascii++;
  if (ascii == len || len >= CAP) return NULL; /* one form only */
  utf8proc_int32_t cp[CAP];
  struct stat st;
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    utf8proc_ssize_t k = utf8proc_decompose((const utf8proc_uint8_t *)path, (utf8proc_ssize_t)len,
                                            cp, CAP, forms[f].opt);
    if (k < 0 || k > CAP) continue; /* not UTF-8, or too long */
    k = utf8proc_reencode(cp, k, forms[f].opt); /* UTF-8 bytes, in cp's memory */
    if (k < 0 || (size_t)k >= n) continue;
    memcpy(to, cp, (size_t)k);
    to[k] = '\0';
    if (strcmp(to, path) != 0 && stat(to, &st) == 0 && !S_ISDIR(st.st_mode)) return forms[f].name;
  }
  return NULL;
}

/* 1 when following the symbolic links from path comes back to a link it passed (a loop), 0 when
 * the chain ends or is only long (more links than the system follows, 40 on Linux). */
static int link_loops(const char *path) {
  enum { STEPS = 64 };
  ino_t seen_ino[STEPS];
  dev_t seen_dev[STEPS];
  char cur[4096], to[4096];
  struct stat st;
  if (strlen(path) >= sizeof cur) return 0;
  strcpy(cur, path);
  for (int k = 0; k < STEPS; k++) {
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return 0;
    for (int i = 0; i < k; i++)
      if (seen_ino[i] == st.st_ino && seen_dev[i] == st.st_dev) return 1;
    seen_ino[k] = st.st_ino, seen_dev[k] = st.st_dev;
    ssize_t n = readlink(cur, to, sizeof to - 1);
    if (n <= 0) return 0;
    to[n] = '\0';
    const char *slash = strrchr(cur, '/'); /* a relative target is named from the link's folder */
    const size_t dir = to[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
    if (dir + (size_t)n >= sizeof cur) return 0;
    memcpy(cur + dir, to, (size_t)n + 1);
  }
  return 0;
}

/* An input's failure to open, as plain_reason says it; a missing file that is a symbolic link (a
 * corpus linked from a disk that moved) names its target, the file ls lists being there. */
static const char *open_reason(const char *path, int rc, char *buf, size_t len) {
  struct stat st;
  char to[1024], q[4 * sizeof to + 3];
  ssize_t n;
  if (rc == ENOENT && kaldi_offset(path)) {
    fc_quote_name(path, q, sizeof q);
    fc_why(buf, len,
           "%s (a Kaldi archive entry, FILE:OFFSET? audio is read from files: extract it first, "
           "wav-copy %s OUT.wav)",
           plain_reason(rc), q);
    return buf;
  }
  if (rc == ENOENT && strpbrk(path, "*?") && lstat(path, &st) != 0) /* an unmatched glob */
    return "No such file or directory (a shell pattern that matched no file? the shell passes one "
           "on as it is)";
  if (rc == EISDIR) /* featurize corpus/ */
    return "Is a directory (featurize reads files, not folders: find DIR -name '*.wav' | "
           "featurize -o STORE -)";
  if (rc == ENOENT && strstr(path, "://")) /* a remote manifest's https://, s3:// */
    return "No such file or directory (a URL? featurize reads files: download it first)";
  const char *var = strchr(path, '$'); /* $DATA/a.wav, ${DATA}/a.wav read as they are */
  if (rc == ENOENT && var && (isalpha((unsigned char)var[1]) || var[1] == '_' || var[1] == '{'))
    return "No such file or directory (a $VARIABLE that no shell expanded: manifests are read as "
           "they are; expand it first: envsubst <MANIFEST >NEW)";
  if (rc == ENOENT && (strncmp(path, "~/", 2) == 0 || strstr(path, "/~/")))
    return "No such file or directory (a ~ that no shell expanded: give the path from / or $HOME)";
  const char *bs = rc == ENOENT ? strchr(path, '\\') : NULL; /* a manifest written on Windows */
  if (bs && bs > path + 1 && bs[-1] == ':' && isalpha((unsigned char)bs[-2]))
    return "No such file or directory (a Windows path: give the files' paths on this machine)";
  if (bs && strlen(path) < sizeof to) {
    for (size_t k = 0; (to[k] = path[k] == '\\' ? '/' : path[k]); k++) {}
    if (stat(to, &st) == 0 && S_ISREG(st.st_mode)) {
      fc_quote_name(to, q, sizeof q);
      fc_why(buf, len,
             "%s (a Windows path? with / for each \\ it names %s, which is there: convert the "
             "manifest's separators, sed 's#\\\\#/#g')",
             plain_reason(rc), q);
      return buf;
    }
  }
  const char *form = rc == ENOENT ? other_form(path, to, sizeof to) : NULL;
  if (form && strcmp(form, "NFD") == 0)
    return "No such file or directory (a file is there whose name is this one in Unicode NFD, "
           "decomposed, as macOS writes names; it is not read for it: rename the files to NFC, "
           "convmv -r -f utf8 -t utf8 --nfc --notest DIR)";
  if (form)
    return "No such file or directory (a file is there whose name is this one in Unicode NFC; it "
           "is not read for it: the name given is decomposed (NFD, as macOS writes names): convert "
           "the manifest to NFC, uconv -x any-nfc IN >OUT)";
  if (rc == ENODEV && stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
    return "not a regular file or a pipe (a socket)"; /* audio.c open_checked */
  if ((rc != ENOENT && rc != ELOOP) || lstat(path, &st) != 0 || !S_ISLNK(st.st_mode) ||
      (n = readlink(path, to, sizeof to - 1)) <= 0)
    return plain_reason(rc);
  to[n] = '\0';
  if (rc == ELOOP) { /* a link to itself, or to a link back to it; or a chain past the system's */
    fc_quote_name(to, q, sizeof q);
    fc_why(buf, len,
           link_loops(path)
               ? "%s (symbolic links in a loop: it links to %s, which leads back to it)"
               : "%s (a chain of more symbolic links than the system follows: it "
                 "links to %s)",
           plain_reason(rc), q);
    return buf;
  }
  if (strncmp(to, ".git/annex/objects/", 19) == 0 || strstr(to, "/.git/annex/objects/"))
    return "No such file or directory (a git-annex file whose content is not here: git annex get, "
           "or datalad get)"; /* a DataLad dataset installed without its content */
  fc_quote_name(to, q, sizeof q);
  fc_why(buf, len, "%s (a symbolic link to %s)", plain_reason(rc), q);
  return buf;
}

/* A JSON line's NeMo segment (fc_item offset, duration): featurize stores whole files, so a line
 * whose offset is not 0, or whose file (seconds long; < 0: not known yet) is longer than its
 * duration by more than a rounding's slack, fails, its line and what to do said in why; NULL for a
 * whole file. The tool refuses a manifest whose first lines have an offset before it begins. */
#define SEGMENT_SLACK_SECONDS 0.1
static const char *segment_why(const fc_item *it, double seconds, char *why, size_t why_len) {
  char what[96], line[32] = "";
  if (it->line) snprintf(line, sizeof line, " (line %zu)", it->line);
  if (it->offset != 0)
    snprintf(what, sizeof what, "\"offset\": %g%s", it->offset, line);
  else if (it->duration > 0 && seconds > it->duration + SEGMENT_SLACK_SECONDS)
    snprintf(what, sizeof what, "\"duration\": %g%s of a %.2f s file", it->duration, line, seconds);
  else
    return NULL;
  fc_why(why, why_len,
         "%s: a segment of its audio file (NeMo's offset and duration), but featurize stores "
         "whole files; cut each segment into a file of its own (sox IN OUT trim OFFSET DURATION) "
         "and list those",
         what);
  return why;
}

static int read_staged(fz_run *r, fz_worker *w, size_t i, const char *abs, double t0, size_t *len,
                       fc_audio_info *info_all) {
  const fc_mel_config *cfg = r->cfg;
  fz_times *tm = &w->t;
  audio_pcm16_file f;
  fc_audio_info info;
  int shape;
  double t1;
  int rc = audio_pcm16_open(fz_item(r, i)->path, cfg->sample_rate, &w->buf, &w->buf_cap, &f, &info,
                            &shape);
  if (!rc && !shape && r->o.max_seconds > 0) { /* the usual way reads its header first */
    audio_pcm16_close(&f);
    return 0;
  }
  if (!rc && !shape) /* another format: the whole file, for the usual way */
    rc = audio_pcm16_read_all(&f, &w->buf, &w->buf_cap, len, info_all);
  tm->read += (t1 = fz_cpu_now()) - t0;
  if (rc) {
    char why[320];
    if (fz_not_the_input(rc))
      fz_report_failed(r, i, rc, plain_reason(rc));
    else
      fz_input_failed(r, i, rc, open_reason(fz_item(r, i)->path, rc, why, sizeof why));
    return 1;
  }
  if (!shape) return 2;
  const size_t n = f.n_samples;
  const uint64_t frames = fc_mel_num_frames(cfg, n);
  char seg[320];
  if (frames == 0 || !fz_stage_fits(r, n) ||
      segment_why(fz_item(r, i), (double)n / info.sample_rate, seg, sizeof seg) ||
      (r->o.max_seconds > 0 && (double)n > r->o.max_seconds * info.sample_rate)) {
    audio_pcm16_close(&f); /* the usual way says why, or computes it on the CPU */
    return 0;
  }
  fz_slot slot;
  void *dst = fz_stage_reserve(r, n, frames, 1, &slot, tm);
  tm->staging += (t0 = fz_cpu_now()) - t1;
  size_t tail_off, tail_len;
  rc = audio_pcm16_finish(&f, dst, &w->buf, &w->buf_cap, &tail_off, &tail_len);
  tm->read += (t1 = fz_cpu_now()) - t0;
  if (rc) {
    fz_stage_commit(r, &slot, NULL);
    if (rc == EAGAIN) return 0;
    if (fz_not_the_input(rc))
      fz_report_failed(r, i, rc, plain_reason(rc));
    else
      fz_input_failed(r, i, rc, plain_reason(rc));
    return 1;
  }
  fc_digest audio, key;
  digest3(w->buf, f.data_off, dst, 2 * n, w->buf + tail_off, tail_len, &audio);
  fc_record_key(&audio, &r->cfg_digest, &key);
  int have_feat, have_entry, stale, have_fail;
  fc_audio_entry old;
  char *replaced;
  rc = lookup(r, i, &key, &audio, &info, abs, &have_feat, &have_entry, &stale, &have_fail, &old,
              &replaced);
  tm->hash += fz_cpu_now() - t1;
  fz_job *j = NULL;
  if (rc || have_feat) {
    free(replaced); /* stored already: the usual way (below) looks again */
    fz_stage_commit(r, &slot, NULL);
    if (rc) {
      char why[320];
      store_read_why(rc, why, sizeof why);
      fz_report_failed(r, i, rc, why);
      return 1;
    }
    if (!have_entry) return 0; /* stored under another id: the usual way makes its entry */
    if (settle_stored(r, w, i, &key, &audio, &info, abs, stale, have_fail, &old)) goto nomem;
    return 1;
  }
  if (!(j = fz_job_new(r, i))) {
    free(replaced);
    goto nomem_slot;
  }
  j->replaced = replaced;
  char note[320];
  if (audio_unheld_note(w->buf + tail_off, tail_len, 0, 2 * info.sample_rate, note, sizeof note) &&
      !(j->note = fc_strdup(note)))
    goto nomem_slot;
  j->clear_fail = have_fail;
  j->entry_there = have_entry && !stale; /* as the usual way's (report_committed) */
  j->audio_there = have_entry;
  j->key = key;
  j->seconds = (double)info.frames / info.sample_rate;
  j->frames = frames;
  if (encode_entry(j, &audio, &info, abs)) goto nomem_slot;
  fz_stage_commit(r, &slot, j);
  return 1;
nomem_slot:
  fz_stage_commit(r, &slot, NULL);
  fz_job_free(j);
nomem:
  fz_report_failed(r, i, ENOMEM, "out of memory");
  return 1;
}

static void process_item(fz_run *r, fz_worker *w, size_t i) {
  const fc_item *it = fz_item(r, i);
  const fc_mel_config *cfg = r->cfg;
  char why[320];
  why[0] = '\0';
  if (it->err) {
    fz_input_failed(r, i, it->err, it->why);
    return;
  }
  if (!it->path || !it->path[0] || !it->id) {
    fz_input_failed(r, i, FC_EMANIFEST, !it->id ? "no id" : "no audio path");
    return;
  }
  if (segment_why(it, -1, why, sizeof why)) { /* an offset: no need to read the file */
    fz_input_failed(r, i, FC_EMANIFEST, why);
    return;
  }
  int input = 1; /* a failure below is the input's (its file): recorded in the store */
  const uint8_t *bytes = NULL; /* the worker's buffer (w->buf) */
  size_t len = 0;
  float *x = NULL;
  fz_job *j = NULL;
  char *replaced = NULL; /* lookup's: the job's once it is made */
  fc_audio_info info;
  fz_times *tm = &w->t;
  int rc, have_fail;
  double t0 = fz_cpu_now(), t1;
  char *abs = fz_source_path(r, it->path); /* as the audio entry stores it */
  if (!abs) {
    fz_report_failed(r, i, ENOMEM, "out of memory");
    return;
  }
  if (!r->o.rehash && stored_by_identity(r, i, abs, &have_fail)) {
    tm->hash += fz_cpu_now() - t0;
    report_skipped(r, i);
    if (have_fail) queue_clear(r, i, &tm->queue_wait);
    free(abs);
    return;
  }
  const int staging = fz_staging(r); /* once per item: the ring may become ready meanwhile */
  int staged = staging ? read_staged(r, w, i, abs, t0, &len, &info) : 0;
  if (staged == 1) {
    free(abs);
    return;
  }
  if (staging) t0 = fz_cpu_now(); /* read_staged counted its time */
  t1 = t0;
  rc = 0;
  if (staged == 0) {
    /* with --max-seconds, a file whose header states a longer length is refused unread, unless
     * its id holds stored audio (it may be this file's) */
    const double limit = r->o.max_seconds > 0 && !id_has_record(r, i) ? r->o.max_seconds : 0;
    rc = audio_read_checked(it->path, limit, &w->buf, &w->buf_cap, &len, &info, why, sizeof why);
    tm->read += (t1 = fz_cpu_now()) - t0;
  }
  bytes = w->buf;
  if (rc) {
    if (fz_not_the_input(rc))
      fz_report_failed(r, i, rc, why[0] ? why : plain_reason(rc));
    else
      fz_input_failed(r, i, rc, why[0] ? why : open_reason(it->path, rc, why, sizeof why));
    free(abs);
    return;
  }
  fc_digest audio, key;
  fc_digest_buffer(bytes, len, &audio);
  fc_record_key(&audio, &r->cfg_digest, &key);
  int have_feat, have_entry, stale;
  fc_audio_entry old;
  rc = lookup(r, i, &key, &audio, &info, abs, &have_feat, &have_entry, &stale, &have_fail, &old,
              &replaced);
  tm->hash += (t0 = fz_cpu_now()) - t1;
  if (rc) {
    input = 0;
    store_read_why(rc, why, sizeof why);
    goto fail;
  }
  if (have_feat && have_entry) { /* the entry holds this audio: replaced is NULL */
    if (settle_stored(r, w, i, &key, &audio, &info, abs, stale, have_fail, &old)) goto nomem;
    free(abs);
    return;
  }
  size_t n = 0;
  /* On a staging device (a GPU), 16-bit mono PCM at the config's rate goes from the file's bytes
   * into staging as it is: the device converts it (v / 32768, as the decode below would). */
  const void *pcm16 = NULL;
  if (staging && !have_feat) {
    rc = audio_pcm16_view(bytes, len, cfg->sample_rate, r->o.max_seconds, &pcm16, &n, &info, why,
                          sizeof why);
    if (rc < 0) goto fail;
    rc = 0;
    if (pcm16 && !fz_stage_fits(r, n)) pcm16 = NULL; /* computed on the CPU: decoded below */
  }
  if (!pcm16) {
    /* The record is there under another id: decode only for the entry's facts (no resampling). */
    rc = fc_audio_decode(bytes, len, have_feat ? 0 : cfg->sample_rate, r->o.max_seconds, &x, &n,
                         &info, why, sizeof why);
  }
  tm->decode += (t1 = fz_cpu_now()) - t0;
  if (rc) goto fail;
  if (info.sample_rate &&
      segment_why(it, (double)info.frames / info.sample_rate, why, sizeof why)) {
    rc = FC_EMANIFEST;
    goto fail;
  }

  if (!(j = fz_job_new(r, i))) goto nomem;
  j->replaced = replaced;
  replaced = NULL;
  if (!have_feat && audio_wav_unheld_note(bytes, len, why, sizeof why) &&
      !(j->note = fc_strdup(why)))
    goto nomem;
  why[0] = '\0';
  j->clear_fail = have_fail;
  j->entry_there = have_entry && !stale;
  j->audio_there = have_entry;
  j->key = key;
  j->seconds = info.sample_rate ? (double)info.frames / info.sample_rate : 0;
  if (!have_feat) {
    uint64_t frames = fc_mel_num_frames(cfg, n);
    if (frames == 0) {
      rc = FC_EEMPTY;
      fc_why(why, sizeof why, "too short: %zu sample%s at %u Hz give%s no frames", n,
             n == 1 ? "" : "s", cfg->sample_rate, n == 1 ? "s" : "");
      goto fail;
    }
    if (frames > UINT32_MAX ||
        frames > (SIZE_MAX - FC_RECORD_HEADER_SIZE) / r->dsize / cfg->n_mels / sizeof(float)) {
      rc = FC_ETOOLONG;
      fc_why(why, sizeof why, "too long: %llu frames", (unsigned long long)frames);
      goto fail;
    }
    j->frames = frames;
    if (r->o.check_only) {
      /* a check computes nothing: said below */
    } else if (staging && fz_stage_fits(r, n)) {
      /* into the staging ring; a writer makes the record from the device's output */
      if (encode_entry(j, &audio, &info, abs)) goto nomem;
      fz_stage_put(r, j, pcm16 ? pcm16 : (const void *)x, n, pcm16 != NULL, tm);
      free(x);
      free(abs);
      return;
    }
    if ((rc = fz_compute_record(r, w, j, x, n, why, sizeof why))) {
      /* too long for the codec, or features past f16's range: the input's; else the device's */
      input = rc == FC_ETOOLONG || rc == ERANGE;
      goto fail;
    }
  }
  free(x);
  x = NULL;
  if (r->o.check_only) { /* it reads and decodes: a run would compute (or link) it */
    fz_job_free(j);
    free(abs);
    report_not_stored(r, i);
    return;
  }
  if (encode_entry(j, &audio, &info, abs)) goto nomem;
  if ((rc = fz_queue_push(r, j, &tm->queue_wait))) {
    fz_job_free(j);
    fz_report_unstored(r, i, rc);
  }
  free(abs);
  return;

nomem:
  rc = ENOMEM;
  input = 0;
  fc_why(why, sizeof why, "out of memory");
fail:
  free(x);
  free(abs);
  free(replaced);
  fz_job_free(j);
  if (input && !fz_not_the_input(rc))
    fz_input_failed(r, i, rc, why);
  else
    fz_report_failed(r, i, rc, why);
}

void *fz_worker_main(void *arg) {
  fz_worker *w = arg;
  fz_run *r = w->r;
  fc_thread_name("worker", (int)w->index);
  for (;;) {
    if (atomic_load(&r->halt)) break;
    if (stop_requested(r)) {
      if (fz_more(r)) atomic_store(&r->interrupted, 1);
      break;
    }
    size_t i;
    if (!fz_take(r, &i)) break;
    process_item(r, w, i);
    fz_item_release(r, i); /* its jobs, if any, hold it on */
    if (w->buf_cap > FZ_KEEP_BUFFER) { /* a long file's buffer is not kept for the next ones */
      free(w->buf);
      w->buf = NULL;
      w->buf_cap = 0;
    }
  }
  free(w->buf);
  w->buf = NULL;
  if (r->batching) fz_stage_submitter_done(r);
  fz_queue_producer_done(r);
  return NULL;
}
