/* libFuzzer target: the loader opening a hostile store. Each input is a little program that
 * writes a store: the hifigan config under its digest (coded, dtype mq, when the first input byte
 * has bit 7), then ops read from the input —
 *   0 raw put: db, key, value — anything anywhere (meta format, configs, entries, records);
 *   1 utterance with raw record bytes: an audio entry for an id, and the value under that id's
 *     feat key (so the loader reaches the record checks);
 *   2 utterance with a record whose header is sealed by fc_record_encode around fuzzed dims and
 *     payload (so the loader reaches the payload with valid checksums); under an mq config, a coded
 *     record: values from the input encoded by mq_encode, then one byte of the payload changed
 *     at a fuzzed place before sealing (so the decoder meets lying zstd frames and escapes behind a
 *     valid checksum), or the input's own bytes as the coded payload;
 *   3 the config's JSON replaced by fuzzed bytes under the same digest;
 * then opens it with fc_loader (views or padded, verify or not, prefetch or not, from the first
 * input byte) and reads a whole epoch. Anything may be refused; nothing may crash, hang, leak or
 * read outside what it was given, and every batch must be consistent: lengths within the record,
 * views inside the map, padded data of the announced size.
 *
 * One environment in /dev/shm serves every input: a writer opened once (MDB_NOLOCK: it alone
 * writes, and never while the loader reads) empties the five dbs and writes the next program in
 * one transaction, and the loader opens the directory anew for each input, as a user's process
 * would. (A fresh store per input cost ~2 ms of environment set-up and teardown, most of it
 * ASan's large allocations; see docs/RELIABILITY.md "Fuzzing".)
 *
 * Built with libFuzzer by tests/fuzz/build.sh (linking the sources); replayed without libFuzzer by
 * tests/fuzz/replay_loader.c. */
#include "featcache.h"
#include "formats/codec_int.h"
#include "featcache/fc_codec.h"
#include "libcache/core/store/store_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_assert.h"

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;
static int take(reader *r, size_t k, const uint8_t **out) {
  if (r->n < k) return 0;
  *out = r->p;
  r->p += k;
  r->n -= k;
  return 1;
}
static int take_u8(reader *r, unsigned *v) {
  const uint8_t *b;
  if (!take(r, 1, &b)) return 0;
  *v = b[0];
  return 1;
}
static int take_u16(reader *r, unsigned *v) {
  const uint8_t *b;
  if (!take(r, 2, &b)) return 0;
  *v = b[0] | (unsigned)b[1] << 8;
  return 1;
}

enum { MAX_PUTS = 64, MAX_OWNED = MAX_PUTS * 2 + 8 };
typedef struct program {
  fc_put puts[MAX_PUTS];
  size_t n;
  void *owned[MAX_OWNED];
  size_t n_owned;
} program;

static void *own(program *pg, size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p || pg->n_owned == MAX_OWNED) abort(); /* the op loop stops before (4 a time at most) */
  pg->owned[pg->n_owned++] = p;
  return p;
}
static void put(program *pg, int db, const void *k, size_t kl, const void *v, size_t vl) {
  if (pg->n < MAX_PUTS) pg->puts[pg->n++] = (fc_put){db, k, kl, v, vl, 0};
}

/* audio entry for id (digest of the id's bytes) and the feat key it leads to under cfg */
static void utterance(program *pg, const fc_digest *cfg, const uint8_t *id, size_t id_len,
                      const void *rec, size_t rec_len) {
  fc_audio_entry e = {{{0}}, 22050, 1, 22050, 44, 0, "x.wav", 5};
  fc_digest_buffer(id, id_len, &e.digest);
  size_t es = fc_audio_entry_size(&e);
  uint8_t *ev = own(pg, es);
  fc_audio_entry_encode(&e, ev);
  fc_digest *key = own(pg, sizeof *key);
  fc_record_key(&e.digest, cfg, key);
  put(pg, FC_DB_AUDIO, id, id_len, ev, es);
  put(pg, FC_DB_FEAT, key, sizeof *key, rec, rec_len);
}

static void check_batch(const fc_batch *b, const fc_loader_info *info, int padded) {
  FUZZ_ASSERT(b->size >= 1 || b->n_errors >= 1); /* all of a batch may be skipped (VERIFY) */
  for (uint32_t i = 0; i < b->size; i++) {
    FUZZ_ASSERT(b->ids[i] != NULL);
    FUZZ_ASSERT(b->mel_starts[i] + b->mel_lengths[i] <= b->src_frames[i]);
    if (padded) FUZZ_ASSERT(b->mel_lengths[i] <= b->frames);
  }
  FUZZ_ASSERT(b->n_mels == info->n_mels);
  if (padded && b->size && b->frames) {
    /* touch every byte of the padded batch: ASan sees a short buffer */
    size_t es = fc_dtype_size(b->mel_dtype), bytes = (size_t)b->size * b->frames * b->n_mels * es;
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < bytes; i += 61) sum ^= ((const uint8_t *)b->mel_data)[i];
    (void)sum;
  } else if (!padded) {
    for (uint32_t i = 0; i < b->size; i++) {
      if (!b->mel_lengths[i]) continue;
      size_t es = fc_dtype_size(b->mel_dtype), bytes = (size_t)b->mel_lengths[i] * b->n_mels * es;
      volatile uint8_t x =
          ((const uint8_t *)b->mels[i])[0] ^ ((const uint8_t *)b->mels[i])[bytes - 1];
      (void)x;
    }
  }
}

/* utterances the last input's epoch yielded (the replay checks its valid seeds with it) */
static size_t fuzz_loader_items_read;

/* The one store every input is written into, and its writer (open between inputs). */
static char fuzz_dir[128];
static fc_store *fuzz_writer;

static void fuzz_store_remove(void) {
  char p[192];
  if (fuzz_writer) fc_store_close(fuzz_writer);
  fuzz_writer = NULL;
  if (!fuzz_dir[0]) return;
  snprintf(p, sizeof p, "%s/data.mdb", fuzz_dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/lock.mdb", fuzz_dir);
  unlink(p);
  rmdir(fuzz_dir);
}

/* The store emptied: the five dbs without entries, meta holding only the format name (what
 * fc_store_open writes into a new store). 0, or -1 when no store could be had. */
static int fuzz_store_reset(void) {
  if (!fuzz_dir[0]) {
    snprintf(fuzz_dir, sizeof fuzz_dir, "/dev/shm/fc-fuzz-loader-%d", (int)getpid());
    atexit(fuzz_store_remove);
  }
  if (!fuzz_writer) {
    fuzz_store_remove(); /* a directory left by an earlier failure */
    if (fc_store_open(fuzz_dir, FC_STORE_CREATE | FC_STORE_NOSYNC | FC_STORE_NOLOCK, &fuzz_writer))
      return -1;
  }
  MDB_txn *t;
  int rc = mdb_txn_begin(fuzz_writer->env, NULL, 0, &t);
  for (int i = 0; !rc && i < FC_DB_COUNT; i++) rc = mdb_drop(t, fuzz_writer->dbi[i], 0);
  MDB_val k = {6, (void *)"format"}, v = {strlen(FC_FORMAT_NAME), (void *)FC_FORMAT_NAME};
  if (!rc) rc = mdb_put(t, fuzz_writer->dbi[FC_DB_META], &k, &v, 0);
  if (!rc) {
    rc = mdb_txn_commit(t);
  } else {
    mdb_txn_abort(t);
  }
  if (rc) { /* start again from a new store next time */
    fuzz_store_remove();
    return -1;
  }
  return 0;
}

/* op 2 under an mq config: a coded record of dim0 x dim1 values. b bit 7 clear: values from the
 * input (one byte each, log-mel-like, cycled when the input is short), encoded, then payload byte
 * at a fuzzed place xored with a fuzzed byte (0: none) before sealing; set: the input's bytes as
 * the payload, sealed when mq_check takes them. NULL when nothing could be sealed. */
static void *mq_record(program *pg, reader *r, const fc_digest *cd, unsigned b, uint32_t dim0,
                       uint32_t dim1, size_t *len) {
  fc_record_header h = {0};
  h.dtype = FC_DTYPE_MQ, h.ndim = 2, h.dim0 = dim0, h.dim1 = dim1, h.config = *cd, h.producer = 1;
  const uint8_t *v;
  unsigned c, at, x;
  if (b & 0x80) {
    if (!take_u16(r, &c) || !take(r, c % 8192, &v)) return NULL;
    uint8_t *rec = own(pg, 64 + c % 8192);
    if (fc_record_encode(&h, v, c % 8192, rec) != 0) return NULL;
    *len = 64 + c % 8192;
    return rec;
  }
  size_t n = (size_t)dim0 * dim1, m = n < r->n ? n : r->n;
  if (!take(r, m, &v) || !take_u16(r, &at) || !take_u8(r, &x)) return NULL;
  float *vals = malloc(n * sizeof *vals + 1);
  size_t cap = fc_mq_bound(dim0, dim1), pl = 0;
  uint8_t *rec = own(pg, 64 + cap);
  if (!vals) abort();
  for (size_t i = 0; i < n; i++) vals[i] = m ? (float)(int8_t)v[i % m] / 16.0f - 4.0f : -4.0f;
  int rc = mq_encode(fc_mq_thread_coder(), vals, dim0, dim1, rec + 64, cap, &pl, NULL, 0);
  free(vals);
  if (rc != 0) return NULL;
  uint8_t *payload = malloc(pl + 1);
  if (!payload) abort();
  memcpy(payload, rec + 64, pl);
  if (pl) payload[at % pl] ^= (uint8_t)x;
  if (fc_record_encode(&h, payload, pl, rec) != 0) { /* the change broke the fixed header */
    payload[at % pl] ^= (uint8_t)x;
    rc = fc_record_encode(&h, payload, pl, rec);
  }
  free(payload);
  if (rc != 0) return NULL;
  *len = 64 + pl;
  return rec;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  reader r = {data + 1, size - 1};
  unsigned mode = data[0];
  program pg;
  pg.n = pg.n_owned = 0;
  fuzz_loader_items_read = 0;

  fc_mel_config cfg;
  fc_mel_preset("hifigan", &cfg);
  if (mode & 128) cfg.dtype = FC_DTYPE_MQ;
  fc_digest cd;
  fc_mel_config_digest(&cfg, &cd);
  char *js = own(&pg, 2048);
  int jl = fc_mel_config_json(&cfg, js, 2048);
  const void *cfg_json = js;
  size_t cfg_len = (size_t)jl;

  unsigned op;
  while (pg.n + 2 <= MAX_PUTS && pg.n_owned + 4 <= MAX_OWNED && take_u8(&r, &op)) {
    unsigned a, b, c, d;
    const uint8_t *k, *v;
    switch (op % 4) {
    case 0:
      if (!take_u8(&r, &a) || !take_u8(&r, &b) || !take(&r, b % 80, &k) || !take_u16(&r, &c) ||
          !take(&r, c % 4096, &v) || b % 80 == 0)
        break;
      put(&pg, (int)(a % FC_DB_COUNT), k, b % 80, v, c % 4096);
      break;
    case 1:
      if (!take_u8(&r, &a) || !take(&r, a % 40, &k) || !take_u16(&r, &c) || !take(&r, c % 8192, &v))
        break;
      utterance(&pg, &cd, k, a % 40, v, c % 8192);
      break;
    case 2: {
      /* dtype, ndim, dim0, dim1, then the payload (as long as the dims say, if the input has it) */
      if (!take_u8(&r, &a) || !take(&r, a % 40, &k) || !take_u8(&r, &b) || !take_u16(&r, &c) ||
          !take_u8(&r, &d))
        break;
      if (mode & 128) {
        size_t len = 0;
        void *rec = mq_record(&pg, &r, &cd, b, c % 512, (b & 0x40) ? 80 : d, &len);
        if (rec) utterance(&pg, &cd, k, a % 40, rec, len);
        break;
      }
      fc_record_header h = {0};
      h.dtype = (uint8_t)(1 + b % 6);
      h.ndim = (uint8_t)(1 + (b >> 3) % 2);
      h.dim0 = c % 512;
      h.dim1 = h.ndim == 1 ? 1 : (b & 0x40) ? 80 : d;
      h.config = cd;
      h.producer = 1;
      size_t pl = (size_t)h.dim0 * h.dim1 * fc_dtype_size(h.dtype);
      if (pl > r.n) pl = r.n; /* a short payload: encode is told the truth, the header the dims */
      if (!take(&r, pl, &v)) break;
      uint8_t *rec = own(&pg, 64 + pl);
      if (fc_record_encode(&h, v, pl, rec) != 0) break;
      utterance(&pg, &cd, k, a % 40, rec, 64 + pl);
      break;
    }
    default:
      if (!take_u16(&r, &c) || !take(&r, c % 2048, &v)) break;
      cfg_json = v;
      cfg_len = c % 2048;
      break;
    }
  }

  int ok = fuzz_store_reset() == 0;
  if (ok) {
    char name[64] = "cfg/";
    fc_digest_hex(&cd, name + 4);
    fc_put all[MAX_PUTS + 1];
    all[0] = (fc_put){FC_DB_META, name, 36, cfg_json, cfg_len, 0};
    memcpy(all + 1, pg.puts, pg.n * sizeof *all);
    ok = fc_store_write(fuzz_writer, all, pg.n + 1) == 0;
    if (!ok) fuzz_store_remove(); /* a failed write leaves the handle refusing writes */
  }
  if (ok) {
    fc_loader_opts o;
    fc_loader_opts_init(&o);
    int padded = mode & 1;
    o.output = padded ? FC_OUTPUT_PADDED : FC_OUTPUT_VIEWS;
    o.flags = ((mode & 2) ? FC_LOADER_VERIFY : 0) | ((mode & 32) ? FC_LOADER_STRICT : 0);
    o.prefetch_threads = (mode & 4) ? 2 : 0;
    o.order = (mode >> 3) & 3;
    o.batch_size = 3;
    if (mode & 64) o.crop_frames = 5;
    const char *paths[1] = {fuzz_dir};
    fc_loader *l = NULL;
    char why[256];
    if (fc_loader_open(paths, 1, &o, &l, why, sizeof why) == 0) {
      fc_loader_info info;
      FUZZ_ASSERT(fc_loader_info_get(l, &info) == 0);
      fc_batch *b;
      size_t seen = 0;
      while (fc_loader_next(l, &b) == 0 && b) {
        check_batch(b, &info, padded);
        seen += b->size;
        fc_loader_release(l, b);
        FUZZ_ASSERT(seen <= info.epoch_items);
      }
      fuzz_loader_items_read = seen;
      fc_loader_close(l);
    }
  }
  for (size_t i = 0; i < pg.n_owned; i++) free(pg.owned[i]);
  return 0;
}
