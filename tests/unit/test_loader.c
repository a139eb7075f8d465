/* The loader (fc_loader.h): batches against the values written, views inside the map, padding,
 * crops, orders (determinism, epochs, buckets, locality), sharding, dynamic batching, prefetch
 * threads vs none, caller buffers, missing and corrupt records, config selection, lookup.
 *
 * Fixture: store A holds utterances a000..a099 (frames 20..319, i.e. records in overflow pages)
 * plus two short ones (1 and 3 frames: small values, copied by the loader) with tokens; store B
 * holds b000..b009 plus the problem cases: an utterance without features, one whose record header
 * is corrupt, one whose payload is corrupt (seen only with VERIFY), and a text without audio.
 * Every mel value is utt * 10000 + frame * 100 + bin (exact in f32). */
#include "featcache.h"
#include "featcache/fc_loader.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/check.h"

#define N_A 100
#define N_MELS 80
static const char TOK_JSON[] = "{\"kind\":\"tokens\",\"preset\":null,\"tokenizer\":\"chars\"}";

static uint32_t frames_of(int u) {
  if (u == 100) return 1;
  if (u == 101) return 3;
  return 20 + (uint32_t)((u * 37) % 300);
}
static uint32_t ntok_of(int u) { return 5 + (uint32_t)(u % 17); }
static float value(int u, uint32_t t, uint32_t m) { return (float)(u * 10000 + t * 100 + m); }

/* utterance number from an id: a000 → 0, a100 → 100, b003 → 1003 */
static int utt_of(const char *id) { return atoi(id + 1) + (id[0] == 'b' ? 1000 : 0); }

typedef struct fixture {
  fc_digest mel_cfg, tok_cfg;
} fixture;

static void put_utt(fc_store *s, const fixture *fx, const char *id, int u, int feat_mode,
                    int with_text) {
  /* feat_mode: 0 good, 1 none, 2 corrupt header, 3 corrupt payload, 4 a sound record of the
   * config's digest but N_MELS / 2 bins a frame (twice the frames: the same bytes) */
  char src[64];
  snprintf(src, sizeof src, "audio of %s", id);
  fc_audio_entry ae = {.sample_rate = 22050,
                       .channels = 1,
                       .frames = 1000,
                       .source_size = 10,
                       .path = id,
                       .path_len = strlen(id)};
  fc_digest_buffer(src, strlen(src), &ae.digest);
  uint8_t aval[128];
  fc_audio_entry_encode(&ae, aval);
  uint32_t fr = frames_of(u);
  size_t pl = (size_t)fr * N_MELS * 4;
  float *mel = malloc(pl);
  for (uint32_t t = 0; t < fr; t++)
    for (uint32_t m = 0; m < N_MELS; m++) mel[t * N_MELS + m] = value(u, t, m);
  fc_record_header h = {.dtype = FC_DTYPE_F32,
                        .ndim = 2,
                        .dim0 = feat_mode == 4 ? 2 * fr : fr,
                        .dim1 = feat_mode == 4 ? N_MELS / 2 : N_MELS,
                        .config = fx->mel_cfg,
                        .producer = FC_PRODUCER_CPU};
  uint8_t *rec = malloc(64 + pl);
  fc_record_encode(&h, mel, pl, rec);
  if (feat_mode == 2) rec[10] ^= 1;
  if (feat_mode == 3) rec[64 + pl / 2] ^= 1;
  fc_digest fkey;
  fc_record_key(&ae.digest, &fx->mel_cfg, &fkey);
  fc_put puts[4];
  int n = 0;
  puts[n++] = (fc_put){FC_DB_AUDIO, id, strlen(id), aval, fc_audio_entry_size(&ae), 0};
  if (feat_mode != 1) puts[n++] = (fc_put){FC_DB_FEAT, fkey.bytes, 16, rec, 64 + pl, 0};
  char text[32];
  uint8_t tval[64];
  int16_t toks[32];
  uint8_t trec[64 + sizeof toks];
  fc_digest tkey;
  if (with_text) {
    snprintf(text, sizeof text, "text %s", id);
    fc_digest td;
    fc_digest_buffer(text, strlen(text), &td);
    memcpy(tval, td.bytes, 16);
    memcpy(tval + 16, text, strlen(text));
    uint32_t nt = ntok_of(u);
    for (uint32_t j = 0; j < nt; j++) toks[j] = (int16_t)((u % 300) * 100 + (int)j);
    fc_record_header th = {.dtype = FC_DTYPE_I16,
                           .ndim = 1,
                           .dim0 = nt,
                           .dim1 = 1,
                           .config = fx->tok_cfg,
                           .producer = FC_PRODUCER_CPU};
    fc_record_encode(&th, toks, nt * 2, trec);
    fc_record_key(&td, &fx->tok_cfg, &tkey);
    puts[n++] = (fc_put){FC_DB_TEXT, id, strlen(id), tval, 16 + strlen(text), 0};
    puts[n++] = (fc_put){FC_DB_TOK, tkey.bytes, 16, trec, 64 + nt * 2, 0};
  }
  int rc = fc_store_write(s, puts, (size_t)n);
  CHECK(rc == 0, "write %s: %s", id, fc_strerror(rc));
  free(mel);
  free(rec);
}

static int make_store(const char *path, char prefix, int n, int problems, fixture *fx) {
  fc_store *s;
  int rc = fc_store_open(path, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  if (rc) return rc;
  fc_mel_config mc;
  fc_mel_preset("hifigan", &mc);
  char json[1024];
  int jl = fc_mel_config_json(&mc, json, sizeof json);
  fc_digest_buffer(json, (size_t)jl, &fx->mel_cfg);
  fc_store_put_config(s, &fx->mel_cfg, json, (size_t)jl);
  fc_digest_buffer(TOK_JSON, strlen(TOK_JSON), &fx->tok_cfg);
  fc_store_put_config(s, &fx->tok_cfg, TOK_JSON, strlen(TOK_JSON));
  char id[16];
  for (int i = 0; i < n; i++) {
    snprintf(id, sizeof id, "%c%03d", prefix, i);
    put_utt(s, fx, id, i + (prefix == 'b' ? 1000 : 0), 0, 1);
  }
  if (prefix == 'a') {
    put_utt(s, fx, "a100", 100, 0, 1);
    put_utt(s, fx, "a101", 101, 0, 1);
  }
  if (problems) {
    put_utt(s, fx, "b900", 1900, 1, 1); /* no features */
    put_utt(s, fx, "b901", 1901, 2, 1); /* corrupt header */
    put_utt(s, fx, "b902", 1902, 3, 1); /* corrupt payload */
    put_utt(s, fx, "b904", 1904, 4, 1); /* [2 x frames][40]: not the config's [frames][80] */
    /* text without audio */
    const char *t = "orphan text";
    uint8_t tv[64];
    fc_digest td;
    fc_digest_buffer(t, strlen(t), &td);
    memcpy(tv, td.bytes, 16);
    memcpy(tv + 16, t, strlen(t));
    fc_put p = {FC_DB_TEXT, "b903", 4, tv, 16 + strlen(t), 0};
    fc_store_write(s, &p, 1);
  }
  fc_store_sync(s);
  fc_store_close(s);
  return 0;
}

/* Is [p, p+len) inside a mapping of the file at path (found by inode in /proc/self/maps)? */
static int in_mapping_of(const void *p, size_t len, const char *path) {
  struct stat st;
  if (stat(path, &st)) return 0;
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4608];
  int ok = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off, ino;
    unsigned maj, mn;
    if (sscanf(line, "%lx-%lx %*s %lx %x:%x %lu", &lo, &hi, &off, &maj, &mn, &ino) != 6) continue;
    if (ino == st.st_ino && (uintptr_t)p >= lo && (uintptr_t)p + len <= hi) ok = 1;
  }
  if (f) fclose(f);
  return ok;
}

static fc_loader *open_l(const char *const *paths, size_t n, const fc_loader_opts *o) {
  fc_loader *l = NULL;
  char why[512];
  int rc = fc_loader_open(paths, n, o, &l, why, sizeof why);
  CHECK(rc == 0, "open: %s: %s", fc_strerror(rc), why);
  return l;
}

/* Check one batch's content against the generator; returns the number of utterances. */
static uint32_t check_batch(const fc_batch *b, const fc_loader_opts *o, const char *mdb) {
  for (uint32_t i = 0; i < b->size; i++) {
    int u = utt_of(b->ids[i]);
    uint32_t len = b->mel_lengths[i], st = b->mel_starts[i];
    CHECK(b->src_frames[i] == frames_of(u), "%s: src frames %u", b->ids[i], b->src_frames[i]);
    CHECK(st + len <= frames_of(u), "%s: crop %u+%u", b->ids[i], st, len);
    const float *m = b->mels[i];
    int bad = 0;
    for (uint32_t t = 0; t < len && !bad; t++)
      for (uint32_t k = 0; k < N_MELS; k++)
        if (m[t * N_MELS + k] != value(u, st + t, k)) {
          bad = 1;
          break;
        }
    CHECK(!bad, "%s: mel values differ", b->ids[i]);
    if (o->output == FC_OUTPUT_PADDED) {
      const float *row = (const float *)b->mel_data + (size_t)i * b->frames * N_MELS;
      CHECK(row == m, "%s: mels[i] is the padded row", b->ids[i]);
      int padbad = 0;
      /* the default (NAN): the silence of the fixture's hifigan config, ln(1e-5) */
      float pv = isnan(o->pad_value) ? (float)log(1e-5) : o->pad_value;
      for (size_t x = (size_t)len * N_MELS; x < (size_t)b->frames * N_MELS; x++)
        if (row[x] != pv) padbad = 1;
      CHECK(!padbad, "%s: padding is not %g", b->ids[i], pv);
    } else if (frames_of(u) * N_MELS * 4 > 4096 && mdb) {
      CHECK(in_mapping_of(m, (size_t)len * N_MELS * 4, mdb), "%s: view not in the map", b->ids[i]);
      CHECK(((uintptr_t)m & 15) == 0, "%s: view not 16-byte aligned", b->ids[i]);
    }
    if (b->tokens) {
      CHECK(b->token_lengths[i] == ntok_of(u), "%s: %u tokens", b->ids[i], b->token_lengths[i]);
      const int16_t *t = b->tokens[i];
      for (uint32_t j = 0; j < b->token_lengths[i]; j++)
        if (t[j] != (int16_t)((u % 300) * 100 + (int)j)) {
          CHECK(0, "%s: token %u", b->ids[i], j);
          break;
        }
      if (b->tok_data)
        for (uint32_t j = b->token_lengths[i]; j < b->max_tokens; j++)
          if (t[j] != (int16_t)o->token_pad) {
            CHECK(0, "%s: token pad", b->ids[i]);
            break;
          }
    }
  }
  return b->size;
}

/* Run an epoch; record the item order into seq (may be NULL); returns utterances seen. */
static uint64_t run_epoch(fc_loader *l, const fc_loader_opts *o, uint64_t epoch, uint64_t *seq,
                          const char *mdb, uint64_t *padded_cells, uint64_t *batches) {
  CHECK(fc_loader_set_epoch(l, epoch) == 0, "set_epoch");
  uint64_t n = 0, cells = 0, nb = 0;
  fc_batch *b;
  int rc;
  while ((rc = fc_loader_next(l, &b)) == 0 && b) {
    check_batch(b, o, mdb);
    uint32_t longest = 0;
    for (uint32_t i = 0; i < b->size; i++) {
      if (seq) seq[n + i] = b->items[i];
      if (b->mel_lengths[i] > longest) longest = b->mel_lengths[i];
    }
    if (o->max_frames) {
      uint32_t T = o->output == FC_OUTPUT_PADDED ? b->frames : longest;
      CHECK(b->size == 1 || (uint64_t)b->size * T <= o->max_frames, "batch %u x %u > %llu", b->size,
            T, (unsigned long long)o->max_frames);
    }
    cells += (uint64_t)b->size * longest;
    n += b->size;
    nb++;
    fc_loader_release(l, b);
  }
  CHECK(rc == 0, "next: %s (%s)", fc_strerror(rc), fc_loader_error(l));
  if (padded_cells) *padded_cells = cells;
  if (batches) *batches = nb;
  return n;
}

/* Another thread's lookups (pthread_create's start): a042 found, then yyy not; its reason is
 * its own. Returns non-NULL when that holds. */
static void *other_thread_lookups(void *arg) {
  fc_loader *l = arg;
  fc_loader_item it;
  int ok = fc_loader_lookup(l, "a042", &it) == 0 && fc_loader_lookup(l, "yyy", &it) != 0 &&
           strstr(fc_loader_error(l), "yyy") != NULL;
  return ok ? l : NULL;
}

int main(void) {
  char dir[] = "/tmp/fc_test_loader_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char pa[300], pb[300], mdb[320];
  snprintf(pa, sizeof pa, "%s/a", dir);
  snprintf(pb, sizeof pb, "%s/b", dir);
  snprintf(mdb, sizeof mdb, "%s/data.mdb", pa);
  fixture fx;
  CHECK(make_store(pa, 'a', N_A, 0, &fx) == 0, "make a");
  CHECK(make_store(pb, 'b', 10, 1, &fx) == 0, "make b");
  const char *A[] = {pa}, *AB[] = {pa, pb};
  const uint64_t NA = N_A + 2;

  /* sequential views, no threads: every utterance once, in id order, data and views right */
  fc_loader_opts o;
  fc_loader_opts_init(&o);
  o.prefetch_threads = 0;
  o.batch_size = 7;
  fc_loader *l = open_l(A, 1, &o);
  if (!l) return 1;
  fc_loader_info info;
  fc_loader_info_get(l, &info);
  CHECK(info.items == NA && info.skipped == 0 && info.n_mels == 80 &&
            info.mel_dtype == FC_DTYPE_F32,
        "info items %llu skipped %llu", (unsigned long long)info.items,
        (unsigned long long)info.skipped);
  CHECK(info.epoch_batches == (NA + 6) / 7, "batches %llu", (unsigned long long)info.epoch_batches);
  uint64_t *seq = calloc(4 * NA, sizeof *seq), *seq2 = calloc(4 * NA, sizeof *seq2);
  CHECK(run_epoch(l, &o, 0, seq, mdb, NULL, NULL) == NA, "sequential count");
  for (uint64_t i = 0; i < NA; i++)
    CHECK(seq[i] == i, "sequential order at %llu", (unsigned long long)i);
  fc_loader_item it;
  CHECK(fc_loader_lookup(l, "a042", &it) == 0 && it.frames == frames_of(42) &&
            ((const float *)it.mel)[81] == value(42, 1, 1) && it.tokens == NULL,
        "lookup a042");
  CHECK(fc_loader_lookup(l, "zzz", &it) == FC_ENOTFOUND, "lookup missing");
  /* an id no store can hold: not found, and the error says so (not the last lookup's reason) */
  CHECK(fc_loader_lookup(l, "", &it) == FC_ENOTFOUND &&
            strstr(fc_loader_error(l), "not an id a store can hold") != NULL,
        "lookup of an empty id: error '%s'", fc_loader_error(l));
  /* the reason is the calling thread's: lookups another thread makes meanwhile (one finding its
   * id cleared it, one failing replaced it with its own) leave it */
  CHECK(fc_loader_lookup(l, "zzz", &it) == FC_ENOTFOUND, "lookup zzz");
  pthread_t th;
  void *other_ok = NULL;
  CHECK(pthread_create(&th, NULL, other_thread_lookups, l) == 0 &&
            pthread_join(th, &other_ok) == 0 && other_ok != NULL,
        "the other thread's lookups and their reason");
  CHECK(strstr(fc_loader_error(l), ": zzz: ") != NULL,
        "zzz's reason after another thread's lookups: '%s'", fc_loader_error(l));
  CHECK(strstr(fc_loader_config_json(l, 0), "\"preset\":\"hifigan\"") != NULL, "mel json");
  fc_loader_close(l);

  /* views with tokens and 2 prefetch threads, two stores as one dataset */
  fc_loader_opts_init(&o);
  o.tokens = "chars";
  o.batch_size = 8;
  l = open_l(AB, 2, &o);
  if (!l) return 1;
  fc_loader_info_get(l, &info);
  CHECK(info.items == NA + 10 + 1 /* b902: payload corrupt, header fine */ && info.skipped == 4,
        "two stores: %llu items, %llu skipped", (unsigned long long)info.items,
        (unsigned long long)info.skipped);
  const char *pid, *pst, *preason;
  int saw[4] = {0};
  for (uint64_t i = 0; fc_loader_problem(l, i, &pid, &pst, &preason) == 0; i++) {
    if (!strcmp(pid, "b900")) saw[0] = strstr(preason, "no features for config") != NULL;
    if (!strcmp(pid, "b901")) saw[1] = strstr(preason, "corrupt feature record") != NULL;
    if (!strcmp(pid, "b903")) saw[2] = strstr(preason, "text without audio") != NULL;
    if (!strcmp(pid, "b904")) saw[3] = strstr(preason, "the config says [frames][80]") != NULL;
    CHECK(!strcmp(pst, pb), "problem store %s", pst);
  }
  CHECK(saw[0] && saw[1] && saw[2] && saw[3], "problems reported: %d %d %d %d", saw[0], saw[1],
        saw[2], saw[3]);
  CHECK(info.tok_dtype == FC_DTYPE_I16, "tok dtype");
  /* b902's payload is corrupt: the default payload checksum skips it and says so in its batch */
  fc_batch *b;
  uint64_t n = 0, n_err = 0;
  while (fc_loader_next(l, &b) == 0 && b) {
    n_err += b->n_errors;
    if (b->n_errors)
      CHECK(b->errors && strstr(b->errors, "b902: "), "the batch's error: %s", b->errors);
    for (uint32_t i = 0; i < b->size; i++) {
      CHECK(strcmp(b->ids[i], "b902") != 0, "b902 (a damaged payload) served by default");
      fc_batch one = *b;
      one.size = 1;
      one.ids += i;
      one.mel_lengths += i;
      one.mel_starts += i;
      one.src_frames += i;
      one.mels += i;
      one.token_lengths += i;
      one.tokens += i;
      check_batch(&one, &o, NULL);
    }
    n += b->size;
    fc_loader_release(l, b);
  }
  CHECK(n == info.items - 1 && n_err == 1, "two stores: %llu seen, %llu skipped",
        (unsigned long long)n, (unsigned long long)n_err);
  fc_loader_close(l);

  /* NO_VERIFY: b902 is served as it is (header checks only) */
  fc_loader_opts_init(&o);
  o.flags = FC_LOADER_NO_VERIFY;
  o.batch_size = 4;
  const char *B[] = {pb};
  l = open_l(B, 1, &o);
  n = n_err = 0;
  int served_902 = 0;
  while (l && fc_loader_next(l, &b) == 0 && b) {
    for (uint32_t i = 0; i < b->size; i++) served_902 |= !strcmp(b->ids[i], "b902");
    n += b->size;
    n_err += b->n_errors;
    fc_loader_release(l, b);
  }
  CHECK(served_902 && n == 11 && n_err == 0, "no verify: b902 served (%d), %llu served", served_902,
        (unsigned long long)n);
  fc_loader_close(l);

  /* the default (as FC_LOADER_VERIFY): b902 skipped and reported in its batch; STRICT: next
   * fails with the id */
  fc_loader_opts_init(&o);
  o.batch_size = 4;
  l = open_l(B, 1, &o);
  int saw_err = 0;
  n = 0;
  while (l && fc_loader_next(l, &b) == 0 && b) {
    if (b->n_errors) saw_err = b->errors && strstr(b->errors, "b902: ") != NULL;
    n += check_batch(b, &o, NULL);
    fc_loader_release(l, b);
  }
  CHECK(saw_err && n == 10, "verify skipped b902 (%d), %llu served", saw_err,
        (unsigned long long)n);
  fc_loader_close(l);
  /* fc_loader_next_desc: the same batches, their fields packed (errors included) */
  l = open_l(B, 1, &o);
  {
    uint64_t d[FC_DESC_LEN];
    uint64_t got = 0;
    int saw_desc_err = 0;
#define U(p) ((uint64_t)(uintptr_t)(p))
    while (l && fc_loader_next_desc(l, d) == 0 && d[FC_DESC_BATCH]) {
      fc_batch *x = (fc_batch *)(uintptr_t)d[FC_DESC_BATCH];
      CHECK(d[FC_DESC_EPOCH] == x->epoch && d[FC_DESC_INDEX] == x->index &&
                d[FC_DESC_SIZE] == x->size && d[FC_DESC_N_MELS] == x->n_mels &&
                d[FC_DESC_MEL_DTYPE] == (uint64_t)x->mel_dtype &&
                d[FC_DESC_TOK_DTYPE] == (uint64_t)x->tok_dtype && d[FC_DESC_FRAMES] == x->frames &&
                d[FC_DESC_MAX_TOKENS] == x->max_tokens,
            "desc scalars of batch %llu", (unsigned long long)x->index);
      CHECK(d[FC_DESC_IDS] == U(x->ids) && d[FC_DESC_ITEMS] == U(x->items) &&
                d[FC_DESC_MEL_LENGTHS] == U(x->mel_lengths) &&
                d[FC_DESC_MEL_STARTS] == U(x->mel_starts) &&
                d[FC_DESC_SRC_FRAMES] == U(x->src_frames) && d[FC_DESC_MELS] == U(x->mels) &&
                d[FC_DESC_MEL_DATA] == U(x->mel_data) &&
                d[FC_DESC_TOKEN_LENGTHS] == U(x->token_lengths) &&
                d[FC_DESC_TOKENS] == U(x->tokens) && d[FC_DESC_TOK_DATA] == U(x->tok_data) &&
                d[FC_DESC_N_ERRORS] == x->n_errors && d[FC_DESC_ERRORS] == U(x->errors) &&
                d[FC_DESC_ID_TEXT] == U(x->id_text) && d[FC_DESC_ID_TEXT_LEN] == x->id_text_len &&
                d[FC_DESC_LEN - 1] == 0,
            "desc pointers of batch %llu", (unsigned long long)x->index);
      if (x->n_errors) saw_desc_err = 1;
      got += check_batch(x, &o, NULL);
      fc_loader_release(l, x);
    }
#undef U
    int zero = 1;
    for (int i = 0; i < FC_DESC_LEN; i++) zero &= d[i] == 0;
    CHECK(zero && saw_desc_err && got == 10, "desc: end all zero (%d), errors (%d), %llu served",
          zero, saw_desc_err, (unsigned long long)got);
  }
  fc_loader_close(l);
  o.flags = FC_LOADER_VERIFY | FC_LOADER_STRICT;
  fc_loader *ls = NULL;
  char why[512];
  int rc = fc_loader_open(B, 1, &o, &ls, why, sizeof why);
  CHECK(rc == FC_ENOTFOUND && strstr(why, "b900: no features for config"), "strict open: %s", why);
  o.flags = FC_LOADER_VERIFY;
  o.prefetch_threads = 2;
  l = open_l(B, 1, &o);
  fc_loader_close(l); /* close with prefetch never started */
  for (int threads = 0; threads <= 2; threads += 2) {
    /* a store with only the corrupt-payload problem: strict verify fails in next() */
    char pc[320];
    snprintf(pc, sizeof pc, "%s/c%d", dir, threads);
    fc_store *s;
    fc_store_open(pc, FC_STORE_CREATE, &s);
    fc_mel_config mc;
    fc_mel_preset("hifigan", &mc);
    char json[1024];
    int jl = fc_mel_config_json(&mc, json, sizeof json);
    fc_store_put_config(s, &fx.mel_cfg, json, (size_t)jl);
    put_utt(s, &fx, "c000", 0, 0, 0);
    put_utt(s, &fx, "c001", 1, 3, 0);
    fc_store_close(s);
    fc_loader_opts_init(&o);
    o.flags = FC_LOADER_VERIFY | FC_LOADER_STRICT;
    o.batch_size = 1;
    o.prefetch_threads = (uint32_t)threads;
    const char *C[] = {pc};
    l = open_l(C, 1, &o);
    if (!l) continue;
    CHECK(fc_loader_next(l, &b) == 0 && b && !strcmp(b->ids[0], "c000"), "c000 served");
    fc_loader_release(l, b);
    rc = fc_loader_next(l, &b);
    CHECK(rc == FC_ECHECKSUM && b == NULL && strstr(fc_loader_error(l), "c001: ") &&
              strstr(fc_loader_error(l), "payload"),
          "strict verify (%d threads): %s, %s", threads, fc_strerror(rc), fc_loader_error(l));
    CHECK(fc_loader_next(l, &b) == FC_EBADSTATE, "sticky after failure");
    CHECK(fc_loader_set_epoch(l, 0) == 0 && fc_loader_next(l, &b) == 0 && b, "set_epoch resets");
    fc_loader_release(l, b);
    fc_loader_close(l);
  }

  /* padded batches, pad value, tokens padded, caller buffers, prefetch == no prefetch */
  for (int threads = 0; threads <= 3; threads += 3) {
    fc_loader_opts_init(&o);
    o.output = FC_OUTPUT_PADDED;
    o.pad_value = -11.5f;
    o.token_pad = -1;
    o.tokens = "chars";
    o.batch_size = 16;
    o.order = FC_ORDER_RANDOM;
    o.seed = 7;
    o.prefetch_threads = (uint32_t)threads;
    o.prefetch_depth = 3;
    l = open_l(A, 1, &o);
    if (!l) continue;
    uint64_t got = run_epoch(l, &o, 3, threads ? seq2 : seq, NULL, NULL, NULL);
    CHECK(got == NA, "padded epoch: %llu", (unsigned long long)got);
    if (threads) CHECK(!memcmp(seq, seq2, NA * sizeof *seq), "threads give the same order");
    fc_loader_info_get(l, &info);
    /* caller buffers: 2 buffers, hold both → ENOBUFS; release → continues */
    CHECK(fc_loader_set_epoch(l, 4) == 0, "epoch 4");
    fc_loader_info_get(l, &info);
    size_t bytes = info.max_batch_bytes;
    void *bufs[2] = {aligned_alloc(64, (bytes + 63) & ~(size_t)63),
                     aligned_alloc(64, (bytes + 63) & ~(size_t)63)};
    CHECK(fc_loader_set_buffers(l, bufs, 2, bytes - 1) == FC_ECONFIG, "small buffers refused");
    CHECK(fc_loader_set_buffers(l, bufs, 2, bytes) == 0, "set buffers: %s", fc_loader_error(l));
    fc_batch *b1, *b2, *b3;
    CHECK(fc_loader_next(l, &b1) == 0 && b1 && (b1->mel_data == bufs[0] || b1->mel_data == bufs[1]),
          "batch in a caller buffer");
    CHECK(fc_loader_next(l, &b2) == 0 && b2 && b2->mel_data != b1->mel_data, "second buffer");
    CHECK(fc_loader_next(l, &b3) == ENOBUFS, "all buffers held");
    check_batch(b1, &o, NULL);
    fc_loader_release(l, b1);
    fc_loader_release(l, b2);
    (void)b3;
    fc_loader_close(l);
    free(bufs[0]);
    free(bufs[1]);
  }

  /* whole batches in caller buffers of info.bound_batch_bytes: every array of a batch lies in
   * its buffer, the layout key says where (the same key, the same addresses); swap_desc gives one
   * back and takes the next; add_buffers grows the set when the caller holds them all */
  for (int threads = 0; threads <= 2; threads += 2) {
    fc_loader_opts_init(&o);
    o.output = FC_OUTPUT_PADDED;
    o.tokens = "chars";
    o.batch_size = 16;
    o.pad_to = 40;
    o.prefetch_threads = (uint32_t)threads;
    o.prefetch_depth = 2;
    l = open_l(A, 1, &o);
    if (!l) continue;
    fc_loader_info_get(l, &info);
    size_t bytes = info.bound_batch_bytes, nb = 3;
    void *bufs[4];
    for (size_t i = 0; i < 4; i++) bufs[i] = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    CHECK(fc_loader_add_buffers(l, bufs, 1, bytes) == FC_EBADSTATE, "add before set refused");
    CHECK(fc_loader_set_buffers(l, bufs, nb, bytes) == 0, "set buffers: %s", fc_loader_error(l));
    CHECK(fc_loader_set_epoch(l, 0) == 0, "epoch 0");
    uint64_t desc[FC_DESC_LEN], keys[8] = {0}, lens_at[8] = {0}, seen = 0;
    memset(desc, 0, sizeof desc);
    for (;;) {
      int src = fc_loader_swap_desc(l, desc); /* gives back the previous batch */
      CHECK(src == 0, "swap_desc: %s", fc_loader_error(l));
      if (src || !desc[FC_DESC_BATCH]) break;
      const fc_batch *sb = (const fc_batch *)(uintptr_t)desc[FC_DESC_BATCH];
      check_batch(sb, &o, NULL);
      uint64_t key = desc[FC_DESC_LAYOUT];
      size_t which = nb;
      for (size_t i = 0; i < nb; i++)
        if (sb->mel_data == bufs[i]) which = i;
      CHECK(which < nb && key, "batch %llu: in a caller buffer with a layout key (%llx)",
            (unsigned long long)sb->index, (unsigned long long)key);
      if (which >= nb) continue;
      const uint8_t *lo = bufs[which], *hi = lo + bytes;
      const void *arrays[] = {sb->mel_lengths, sb->mel_starts, sb->token_lengths, sb->tok_data,
                              sb->id_text,     sb->ids,        sb->items};
      for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        CHECK((const uint8_t *)arrays[k] >= lo + (size_t)sb->size * 40 * N_MELS * 4 &&
                  (const uint8_t *)arrays[k] < hi,
              "array %zu of batch %llu after the mels in its buffer", k,
              (unsigned long long)sb->index);
      CHECK((key >> 1 & 127) == which && (key >> 8 & 0xffff) == sb->size &&
                (key >> 24 & 0xffffff) == sb->frames && key >> 48 == sb->max_tokens,
            "layout key %llx", (unsigned long long)key);
      for (size_t k = 0; k < 8; k++) /* the same key: the same place */
        if (keys[k] == key) {
          CHECK(lens_at[k] == (uint64_t)(uintptr_t)sb->mel_lengths, "same key, same lengths");
          break;
        } else if (!keys[k]) {
          keys[k] = key;
          lens_at[k] = (uint64_t)(uintptr_t)sb->mel_lengths;
          break;
        }
      seen += sb->size;
    }
    CHECK(seen == NA, "swap_desc epoch: %llu of %llu", (unsigned long long)seen,
          (unsigned long long)NA);
    /* every buffer held: the threads park for want of room; swap_desc gives one back (no
     * wakeup) and must still get the next batch (next wakes them before it waits) — a hang
     * here ends in SIGALRM */
    CHECK(fc_loader_set_epoch(l, 2) == 0, "epoch 2");
    fc_batch *hb[3] = {0};
    for (size_t i = 0; i < nb; i++) CHECK(fc_loader_next(l, &hb[i]) == 0 && hb[i], "hold %zu", i);
    usleep(20000); /* the threads find no room and park */
    alarm(30);
    memset(desc, 0, sizeof desc);
    desc[FC_DESC_BATCH] = (uint64_t)(uintptr_t)hb[0];
    CHECK(fc_loader_swap_desc(l, desc) == 0 && desc[FC_DESC_BATCH], "swap with every buffer held");
    alarm(0);
    fc_loader_release(l, (fc_batch *)(uintptr_t)desc[FC_DESC_BATCH]);
    for (size_t i = 1; i < nb; i++) fc_loader_release(l, hb[i]);
    /* hold every buffer: ENOBUFS; one more buffer: the next batch comes */
    CHECK(fc_loader_set_epoch(l, 1) == 0, "epoch 1");
    fc_batch *h[4] = {0};
    for (size_t i = 0; i < nb; i++) CHECK(fc_loader_next(l, &h[i]) == 0 && h[i], "hold %zu", i);
    fc_batch *x = NULL;
    CHECK(fc_loader_next(l, &x) == ENOBUFS, "all buffers held");
    CHECK(fc_loader_add_buffers(l, bufs + nb, 1, bytes - 1) == FC_ECONFIG, "smaller refused");
    CHECK(fc_loader_add_buffers(l, bufs + nb, 1, bytes) == 0, "add: %s", fc_loader_error(l));
    CHECK(fc_loader_set_epoch(l, 1) == 0, "epoch 1 again");
    for (size_t i = 0; i < nb; i++) fc_loader_release(l, h[i]);
    for (size_t i = 0; i < nb + 1; i++)
      CHECK(fc_loader_next(l, &h[i]) == 0 && h[i], "hold %zu of %zu", i, nb + 1);
    int added_used = 0; /* (which batch lands in it depends on the threads' order) */
    for (size_t i = 0; i < nb + 1; i++) added_used += h[i] && h[i]->mel_data == bufs[nb];
    CHECK(added_used == 1, "the added buffer used");
    for (size_t i = 0; i < nb + 1; i++) fc_loader_release(l, h[i]);
    fc_loader_close(l);
    for (size_t i = 0; i < 4; i++) free(bufs[i]);
  }

  /* random order: seeded, same on reopen, differs by epoch and seed, a permutation */
  fc_loader_opts_init(&o);
  o.order = FC_ORDER_RANDOM;
  o.seed = 42;
  o.batch_size = 10;
  l = open_l(A, 1, &o);
  run_epoch(l, &o, 0, seq, mdb, NULL, NULL);
  run_epoch(l, &o, 1, seq + NA, mdb, NULL, NULL);
  fc_loader_close(l);
  l = open_l(A, 1, &o);
  run_epoch(l, &o, 0, seq2, NULL, NULL, NULL);
  fc_loader_close(l);
  CHECK(!memcmp(seq, seq2, NA * sizeof *seq), "same seed, same epoch: same order");
  CHECK(memcmp(seq, seq + NA, NA * sizeof *seq), "epoch 1 differs from epoch 0");
  int sorted = 1;
  for (uint64_t i = 0; i < NA; i++) sorted &= seq[i] == i;
  CHECK(!sorted, "random order is not the index order");
  char *mark = calloc(NA, 1);
  for (uint64_t i = 0; i < NA; i++) mark[seq[i]]++;
  for (uint64_t i = 0; i < NA; i++)
    CHECK(mark[i] == 1, "item %llu seen %d times", (unsigned long long)i, mark[i]);

  /* sharding: UNEVEN partitions exactly; PAD equal counts covering all; DROP equal, disjoint */
  for (int mode = 0; mode < 3; mode++) {
    memset(mark, 0, NA);
    uint64_t counts[3];
    for (uint32_t r = 0; r < 3; r++) {
      fc_loader_opts_init(&o);
      o.order = FC_ORDER_RANDOM;
      o.seed = 5;
      o.batch_size = 4;
      o.world_size = 3;
      o.rank = r;
      o.shard = (uint32_t)mode;
      l = open_l(A, 1, &o);
      counts[r] = run_epoch(l, &o, 2, seq, NULL, NULL, NULL);
      for (uint64_t i = 0; i < counts[r]; i++) mark[seq[i]]++;
      fc_loader_close(l);
    }
    uint64_t total = counts[0] + counts[1] + counts[2];
    if (mode == FC_SHARD_UNEVEN) {
      CHECK(total == NA, "uneven total %llu", (unsigned long long)total);
      for (uint64_t i = 0; i < NA; i++)
        CHECK(mark[i] == 1, "uneven: item %llu x%d", (unsigned long long)i, mark[i]);
    } else if (mode == FC_SHARD_PAD) {
      CHECK(counts[0] == 34 && counts[1] == 34 && counts[2] == 34, "pad counts");
      for (uint64_t i = 0; i < NA; i++)
        CHECK(mark[i] >= 1, "pad: item %llu missing", (unsigned long long)i);
    } else {
      CHECK(counts[0] == 34 && counts[1] == 34 && counts[2] == 34 && total == 102, "drop counts");
      for (uint64_t i = 0; i < NA; i++)
        CHECK(mark[i] <= 1, "drop: item %llu twice", (unsigned long long)i);
    }
  }

  /* buckets pad less than random; drop_last; dynamic batching bound */
  uint64_t cells_rand, cells_buck, nb;
  fc_loader_opts_init(&o);
  o.order = FC_ORDER_RANDOM;
  o.batch_size = 8;
  l = open_l(A, 1, &o);
  run_epoch(l, &o, 0, NULL, NULL, &cells_rand, &nb);
  fc_loader_close(l);
  o.order = FC_ORDER_BUCKET;
  o.bucket_batches = 4;
  l = open_l(A, 1, &o);
  CHECK(run_epoch(l, &o, 0, seq, NULL, &cells_buck, &nb) == NA, "bucket covers");
  fc_loader_close(l);
  uint64_t data_cells = 0;
  for (int u = 0; u < (int)NA; u++) data_cells += frames_of(u);
  CHECK(cells_buck - data_cells < (cells_rand - data_cells) / 2,
        "bucket padding %llu vs random %llu", (unsigned long long)(cells_buck - data_cells),
        (unsigned long long)(cells_rand - data_cells));
  o.drop_last = 1;
  o.order = FC_ORDER_SEQUENTIAL;
  l = open_l(A, 1, &o);
  CHECK(run_epoch(l, &o, 0, NULL, NULL, NULL, &nb) == 96 && nb == 12, "drop_last: 96 in 12");
  fc_loader_close(l);
  fc_loader_opts_init(&o);
  o.max_frames = 2000;
  o.batch_size = 0;
  o.order = FC_ORDER_BUCKET;
  o.output = FC_OUTPUT_PADDED;
  o.pad_multiple = 8;
  l = open_l(A, 1, &o);
  CHECK(run_epoch(l, &o, 1, NULL, NULL, NULL, &nb) == NA, "dynamic batches cover");
  fc_loader_close(l);

  /* locality: reads go forward in the map far more often than random order */
  fc_loader_opts_init(&o);
  o.order = FC_ORDER_LOCALITY;
  o.batch_size = 8;
  o.locality_run = 32;
  o.seed = 3;
  l = open_l(A, 1, &o);
  run_epoch(l, &o, 0, seq, NULL, NULL, NULL);
  run_epoch(l, &o, 1, seq2, NULL, NULL, NULL);
  CHECK(memcmp(seq, seq2, NA * sizeof *seq), "locality order changes by epoch");
  uint64_t fwd = 0;
  for (uint64_t i = 1; i < NA; i++) {
    fc_loader_item a, c;
    char ida[8], idc[8];
    snprintf(ida, sizeof ida, "a%03llu", (unsigned long long)seq[i - 1]);
    snprintf(idc, sizeof idc, "a%03llu", (unsigned long long)seq[i]);
    fc_loader_lookup(l, ida, &a);
    fc_loader_lookup(l, idc, &c);
    fwd += (const char *)c.mel > (const char *)a.mel;
  }
  CHECK(fwd * 10 >= (NA - 1) * 8, "locality: %llu of %llu steps forward", (unsigned long long)fwd,
        (unsigned long long)(NA - 1));
  fc_loader_close(l);

  /* crops: pad_to fixes T and crops; random crops are seeded and inside the record */
  fc_loader_opts_init(&o);
  o.output = FC_OUTPUT_PADDED;
  o.pad_to = 64;
  o.flags = FC_LOADER_RANDOM_CROP;
  o.seed = 9;
  l = open_l(A, 1, &o);
  uint32_t starts0[NA], starts1[NA];
  int nonzero = 0;
  for (int e = 0; e < 2; e++) {
    fc_loader_set_epoch(l, (uint64_t)e);
    while (fc_loader_next(l, &b) == 0 && b) {
      check_batch(b, &o, NULL);
      CHECK(b->frames == 64, "pad_to: T %u", b->frames);
      for (uint32_t i = 0; i < b->size; i++) {
        CHECK(b->mel_lengths[i] ==
                  (frames_of((int)b->items[i]) < 64 ? frames_of((int)b->items[i]) : 64),
              "crop length");
        (e ? starts1 : starts0)[b->items[i]] = b->mel_starts[i];
        nonzero += b->mel_starts[i] != 0;
      }
      fc_loader_release(l, b);
    }
  }
  CHECK(nonzero > 50 && memcmp(starts0, starts1, sizeof starts0), "random crops vary (%d)",
        nonzero);
  fc_loader_close(l);

  /* centred crops: the middle segment; pad_to pads short mels (default pad: ln(1e-5), the
   * hifigan config's silence); the bound covers every epoch's batches */
  fc_loader_opts_init(&o);
  o.output = FC_OUTPUT_PADDED;
  o.pad_to = 64;
  o.batch_size = 7;
  o.flags = FC_LOADER_CENTER_CROP;
  l = open_l(A, 1, &o);
  fc_loader_info inf;
  fc_loader_info_get(l, &inf);
  CHECK(inf.pad_value == (float)log(1e-5), "default pad value %g, want ln(1e-5)", inf.pad_value);
  /* the mels, then room for a batch's block (7 ids, lengths, pointers) */
  CHECK(inf.bound_batch_bytes > 7ull * 64 * N_MELS * 4 &&
            inf.bound_batch_bytes <= 7ull * 64 * N_MELS * 4 + 2048 &&
            inf.max_batch_bytes <= inf.bound_batch_bytes,
        "bound %llu, max %llu", (unsigned long long)inf.bound_batch_bytes,
        (unsigned long long)inf.max_batch_bytes);
  int short_seen = 0;
  while (fc_loader_next(l, &b) == 0 && b) {
    check_batch(b, &o, NULL);
    CHECK(b->frames == 64, "pad_to with centre crops: T %u", b->frames);
    for (uint32_t i = 0; i < b->size; i++) {
      uint32_t f = frames_of((int)b->items[i]);
      CHECK(b->mel_starts[i] == (f > 64 ? (f - 64) / 2 : 0), "%s: centre crop starts at %u of %u",
            b->ids[i], b->mel_starts[i], f);
      short_seen += f < 64;
    }
    fc_loader_release(l, b);
  }
  CHECK(short_seen > 0, "the fixture has mels shorter than pad_to");
  fc_loader_close(l);
  o.flags = FC_LOADER_CENTER_CROP | FC_LOADER_RANDOM_CROP;
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "exclude each other"), "two crop modes: %s", why);
  /* a bit no flag has: refused, naming it, not ignored */
  o.flags = FC_LOADER_NOLOCK | (1u << 20);
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why,
                                   "flags 0x100001 holds bits no FC_LOADER_* flag of this "
                                   "library has: 0x100000"),
        "unknown flag bit: %s", why);
  /* pad_to with views: refused, not silently only cropped */
  fc_loader_opts_init(&o);
  o.pad_to = 64;
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "pad_to 64 pads only padded batches"), "pad_to views: %s",
        why);
  /* pad_multiple with views: refused, not silently ignored (views are never padded) */
  o.pad_to = 0;
  o.pad_multiple = 16;
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "pad_multiple 16 pads only padded batches"),
        "pad_multiple views: %s", why);
  o.pad_to = 64;
  o.pad_multiple = 0;
  /* pad_to and a pad_multiple it is no multiple of: refused (pad_multiple was ignored) */
  o.output = FC_OUTPUT_PADDED;
  o.pad_multiple = 48;
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "pad_to 64 is not a multiple of pad_multiple 48"),
        "pad_to and pad_multiple: %s", why);
  o.pad_multiple = 32; /* one it is a multiple of: taken */
  l = open_l(A, 1, &o);
  fc_loader_close(l);
  /* bound of a variable-length, dynamic batching epoch: every epoch's batches fit */
  fc_loader_opts_init(&o);
  o.output = FC_OUTPUT_PADDED;
  o.order = FC_ORDER_RANDOM;
  o.max_frames = 1000;
  o.batch_size = 0;
  l = open_l(A, 1, &o);
  fc_loader_info_get(l, &inf);
  for (int e = 0; e < 4; e++) {
    fc_loader_set_epoch(l, (uint64_t)e);
    fc_loader_info inf2;
    fc_loader_info_get(l, &inf2);
    CHECK(inf2.max_batch_bytes <= inf.bound_batch_bytes, "epoch %d: %llu > bound %llu", e,
          (unsigned long long)inf2.max_batch_bytes, (unsigned long long)inf.bound_batch_bytes);
  }
  fc_loader_close(l);
  {
    /* the default pad value of each preset's config: its silence, or a clear refusal */
    char pc[300];
    snprintf(pc, sizeof pc, "%s/c", dir);
    fc_store *s;
    CHECK(fc_store_open(pc, FC_STORE_CREATE | FC_STORE_NOSYNC, &s) == 0, "make c");
    const char *names[] = {"tacotron2", "librosa", "kaldi", "whisper"};
    for (int i = 0; i < 4; i++) {
      fc_mel_config mc;
      fc_mel_preset(names[i], &mc);
      char json[1024];
      int jl = fc_mel_config_json(&mc, json, sizeof json);
      fc_digest d;
      fc_digest_buffer(json, (size_t)jl, &d);
      fc_store_put_config(s, &d, json, (size_t)jl);
    }
    fc_store_sync(s);
    fc_store_close(s);
    const char *C[] = {pc};
    const float want[] = {(float)log(1e-5), 0.0f, (float)log(1.1920928955078125e-07)};
    for (int i = 0; i < 4; i++) {
      fc_loader_opts_init(&o);
      o.output = FC_OUTPUT_PADDED;
      o.features = names[i];
      rc = fc_loader_open(C, 1, &o, &l, why, sizeof why);
      if (i < 3) {
        CHECK(rc == 0, "%s: open: %s", names[i], why);
        if (!rc) {
          fc_loader_info_get(l, &inf);
          CHECK(inf.pad_value == want[i], "%s: pad value %.9g, want %.9g", names[i], inf.pad_value,
                want[i]);
          fc_loader_close(l);
        }
        /* views are never padded, but info.pad_value still says the config's silence (for a
         * collate that pads views itself); it said 0, a loud frame in a log config */
        o.output = FC_OUTPUT_VIEWS;
        l = open_l(C, 1, &o);
        fc_loader_info_get(l, &inf);
        CHECK(inf.pad_value == want[i], "%s views: pad value %.9g, want %.9g", names[i],
              inf.pad_value, want[i]);
        fc_loader_close(l);
      } else {
        CHECK(rc == FC_ECONFIG && strstr(why, "whisper") && strstr(why, "give pad_value"),
              "whisper: %s", why);
        o.pad_value = -1.5f;
        l = open_l(C, 1, &o);
        fc_loader_info_get(l, &inf);
        CHECK(inf.pad_value == -1.5f, "whisper explicit pad %g", inf.pad_value);
        fc_loader_close(l);
        o.output = FC_OUTPUT_VIEWS;
        o.pad_value = NAN;
        l = open_l(C, 1, &o); /* views are never padded: no value needed */
        fc_loader_info_get(l, &inf);
        CHECK(isnan(inf.pad_value), "whisper views: pad value %g, want NAN (no silence)",
              inf.pad_value);
        fc_loader_close(l);
      }
    }
  }

  /* config selection */
  fc_loader_opts_init(&o);
  o.features = "tacotron2";
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ENOTFOUND && strstr(why, "no mel config named 'tacotron2'") &&
            strstr(why, "hifigan"),
        "unknown preset: %s", why);
  char hex[33];
  fc_digest_hex(&fx.mel_cfg, hex);
  o.features = hex;
  l = open_l(A, 1, &o);
  fc_loader_close(l);
  o.features = NULL;
  o.tokens = "bpe";
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ENOTFOUND && strstr(why, "no tokens config named 'bpe'"), "unknown tokens: %s",
        why);
  {
    /* a second config carrying the preset name hifigan (e.g. another kernel version) */
    fc_store *s;
    fc_store_open(pb, 0, &s);
    const char *j2 = "{\"kind\":\"mel\",\"n_mels\":80,\"preset\":\"hifigan\",\"x\":1}";
    fc_digest d2;
    fc_digest_buffer(j2, strlen(j2), &d2);
    fc_store_put_config(s, &d2, j2, strlen(j2));
    fc_store_close(s);
    fc_loader_opts_init(&o);
    o.features = "hifigan";
    rc = fc_loader_open(B, 1, &o, &l, why, sizeof why);
    CHECK(rc == FC_ECONFIG && strstr(why, "several mel configs are named 'hifigan'") &&
              strstr(why, hex),
          "ambiguous preset: %s", why);
  }
  fc_loader_opts_init(&o);
  o.rank = 2;
  o.world_size = 2;
  rc = fc_loader_open(A, 1, &o, &l, why, sizeof why);
  CHECK(rc == FC_ECONFIG && strstr(why, "rank 2"), "bad rank: %s", why);
  const char *nowhere[] = {"/nonexistent/store"};
  rc = fc_loader_open(nowhere, 1, NULL, &l, why, sizeof why);
  CHECK(rc == ENOENT && strstr(why, "/nonexistent/store"), "no store: %s", why);

  free(seq);
  free(seq2);
  free(mark);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
