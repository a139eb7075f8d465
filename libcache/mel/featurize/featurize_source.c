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

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int stop_requested(const fz_run *r) { return r->o.stop && *r->o.stop; }

static void report_skipped(fz_run *r, size_t i) {
  fc_featurize_event ev = {.status = FC_ITEM_SKIPPED, .index = i};
  pthread_mutex_lock(&r->ev_mu);
  r->st.skipped_existing++;
  fz_emit(r, &ev);
  pthread_mutex_unlock(&r->ev_mu);
}

/* The source's identity as its audio entry stores it: path as given, size, mtime. */
static int same_source(const fc_audio_entry *e, const char *path, uint64_t size, int64_t mtime_ns) {
  return e->source_size == size && e->mtime_ns == mtime_ns && e->path_len == strlen(path) &&
         memcmp(e->path, path, e->path_len) == 0;
}

/* Is the record stored, and does the id's audio entry hold this digest? (In the id's part.)
 * *stale: it does, but names the source otherwise (another path, size or mtime: a touched or
 * copied file); *old then holds its facts (path excepted). */
static int lookup(fz_run *r, size_t i, const fc_digest *key, const fc_digest *audio,
                  const fc_audio_info *src, int *have_feat, int *have_entry, int *stale,
                  fc_audio_entry *old) {
  const char *id = r->items[i].id;
  *have_feat = *have_entry = *stale = 0;
  fc_rtxn *t;
  int rc = fc_store_read_begin(r->parts[fz_part_of(r, i)].s, &t);
  if (rc) return rc;
  rc = fc_rtxn_get(t, FC_DB_FEAT, key->bytes, sizeof key->bytes, NULL, NULL);
  if (rc == 0) *have_feat = 1;
  if (rc == FC_ENOTFOUND) rc = 0;
  if (!rc) {
    const void *v;
    size_t vlen;
    int grc = fc_rtxn_get(t, FC_DB_AUDIO, id, strlen(id), &v, &vlen);
    if (grc == 0 && fc_audio_entry_decode(v, vlen, old) == 0 &&
        memcmp(old->digest.bytes, audio->bytes, sizeof audio->bytes) == 0) {
      *have_entry = 1;
      *stale = !same_source(old, r->items[i].path, src->size, src->mtime_ns);
      old->path = NULL;
    } else if (grc != 0 && grc != FC_ENOTFOUND) {
      rc = grc;
    }
  }
  fc_rtxn_end(t);
  return rc;
}

/* A rerun that skips by the source's identity (docs/featurize.md "Reruns"): when the id's audio
 * entry names this path with the file's size and mtime, the digest it holds is taken for the
 * file's bytes, which are not read; the item is stored when that digest's record under this
 * config is. 1: stored, skip it; 0: read and hash the file. */
static int stored_by_identity(fz_run *r, size_t i) {
  const fc_item *it = &r->items[i];
  struct stat st;
  if (stat(it->path, &st) != 0 || !S_ISREG(st.st_mode)) return 0; /* the read says why */
  int64_t mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  fc_rtxn *t;
  if (fc_store_read_begin(r->parts[fz_part_of(r, i)].s, &t)) return 0;
  const void *v;
  size_t vlen;
  fc_audio_entry e;
  int stored = 0;
  if (fc_rtxn_get(t, FC_DB_AUDIO, it->id, strlen(it->id), &v, &vlen) == 0 &&
      fc_audio_entry_decode(v, vlen, &e) == 0 &&
      same_source(&e, it->path, (uint64_t)st.st_size, mtime_ns)) {
    fc_digest key;
    fc_record_key(&e.digest, &r->cfg_digest, &key);
    stored = fc_rtxn_get(t, FC_DB_FEAT, key.bytes, 16, NULL, NULL) == 0;
  }
  fc_rtxn_end(t);
  return stored;
}

/* The job's audio entry (FORMAT.md): the content digest, the source's facts and its path. */
static int encode_entry(fz_job *j, const fc_digest *audio, const fc_audio_info *info,
                        const char *path) {
  fc_audio_entry e = {.digest = *audio,
                      .sample_rate = info->sample_rate,
                      .channels = info->channels,
                      .frames = info->frames,
                      .source_size = info->size,
                      .mtime_ns = info->mtime_ns,
                      .path = path,
                      .path_len = strlen(path)};
  j->entry_len = fc_audio_entry_size(&e);
  if (!(j->entry = fc_malloc(j->entry_len))) return ENOMEM;
  fc_audio_entry_encode(&e, j->entry);
  return 0;
}

static void process_item(fz_run *r, fz_worker *w, size_t i) {
  const fc_item *it = &r->items[i];
  const fc_mel_config *cfg = r->cfg;
  char why[320];
  why[0] = '\0';
  if (it->err) {
    fz_report_failed(r, i, it->err, it->why);
    return;
  }
  if (!it->path || !it->path[0] || !it->id) {
    fz_report_failed(r, i, FC_EMANIFEST, !it->id ? "no id" : "no audio path");
    return;
  }
  const uint8_t *bytes = NULL; /* the worker's buffer (w->buf) */
  size_t len = 0;
  float *x = NULL;
  fz_job *j = NULL;
  fc_audio_info info;
  fz_times *tm = &w->t;
  double t0 = fz_cpu_now(), t1;
  if (!r->o.rehash && stored_by_identity(r, i)) {
    tm->hash += fz_cpu_now() - t0;
    report_skipped(r, i);
    return;
  }
  int rc = audio_read_into(it->path, 0, &w->buf, &w->buf_cap, &len, &info);
  bytes = w->buf;
  tm->read += (t1 = fz_cpu_now()) - t0;
  if (rc) {
    fz_report_failed(r, i, rc, plain_reason(rc));
    return;
  }
  fc_digest audio, key;
  fc_digest_buffer(bytes, len, &audio);
  fc_record_key(&audio, &r->cfg_digest, &key);
  int have_feat, have_entry, stale;
  fc_audio_entry old;
  rc = lookup(r, i, &key, &audio, &info, &have_feat, &have_entry, &stale, &old);
  tm->hash += (t0 = fz_cpu_now()) - t1;
  if (rc) {
    fc_why(why, sizeof why, "cannot read the store: %s", fc_strerror(rc));
    goto fail;
  }
  if (have_feat && have_entry && !stale) {
    report_skipped(r, i);
    return;
  }
  if (have_feat && have_entry) { /* the same bytes under another identity: the entry says so now,
                                    so that the next rerun need not read the file */
    info.sample_rate = old.sample_rate;
    info.channels = old.channels;
    info.frames = old.frames;
    if (!(j = fc_calloc(1, sizeof *j))) goto nomem;
    j->index = i;
    j->key = key;
    j->refresh = 1;
    if (encode_entry(j, &audio, &info, it->path)) goto nomem;
    if ((rc = fz_queue_push(r, j, &tm->queue_wait))) {
      fz_job_free(j);
      fz_report_unstored(r, i, rc);
    }
    return;
  }
  size_t n = 0;
  /* On a staging device (a GPU), 16-bit mono PCM at the config's rate goes from the file's bytes
   * into staging as it is: the device converts it (v / 32768, as the decode below would). */
  const void *pcm16 = NULL;
  if (r->batching && !have_feat) {
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

  if (!(j = fc_calloc(1, sizeof *j))) goto nomem;
  j->index = i;
  j->key = key;
  j->seconds = info.sample_rate ? (double)info.frames / info.sample_rate : 0;
  if (!have_feat) {
    uint64_t frames = fc_mel_num_frames(cfg, n);
    if (frames == 0) {
      rc = FC_EEMPTY;
      fc_why(why, sizeof why, "too short: %zu samples at %u Hz give no frames", n,
             cfg->sample_rate);
      goto fail;
    }
    if (frames > UINT32_MAX ||
        frames > (SIZE_MAX - FC_RECORD_HEADER_SIZE) / r->dsize / cfg->n_mels / sizeof(float)) {
      rc = FC_ETOOLONG;
      fc_why(why, sizeof why, "too long: %llu frames", (unsigned long long)frames);
      goto fail;
    }
    j->frames = frames;
    if (r->batching && fz_stage_fits(r, n)) {
      /* into the staging ring; a writer makes the record from the device's output */
      if (encode_entry(j, &audio, &info, it->path)) goto nomem;
      fz_stage_put(r, j, pcm16 ? pcm16 : (const void *)x, n, pcm16 != NULL, tm);
      free(x);
      return;
    }
    if ((rc = fz_compute_record(r, w, j, x, n, why, sizeof why))) goto fail;
  }
  free(x);
  x = NULL;
  if (encode_entry(j, &audio, &info, it->path)) goto nomem;
  if ((rc = fz_queue_push(r, j, &tm->queue_wait))) {
    fz_job_free(j);
    fz_report_unstored(r, i, rc);
  }
  return;

nomem:
  rc = ENOMEM;
  fc_why(why, sizeof why, "out of memory");
fail:
  free(x);
  fz_job_free(j);
  fz_report_failed(r, i, rc, why);
}

void *fz_worker_main(void *arg) {
  fz_worker *w = arg;
  fz_run *r = w->r;
  for (;;) {
    if (atomic_load(&r->halt)) break;
    if (stop_requested(r)) {
      if (atomic_load(&r->next) < r->n) atomic_store(&r->interrupted, 1);
      break;
    }
    size_t i = atomic_fetch_add(&r->next, 1);
    if (i >= r->n) break;
    process_item(r, w, i);
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
