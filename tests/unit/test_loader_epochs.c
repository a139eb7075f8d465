/* The loader across epoch boundaries: prefetch runs on into epoch e+1 while e finishes, and that
 * changes nothing a caller can see. For every order (sequential, random, bucket, locality), views
 * and padded output, count and dynamic batching, random crops, prefetch depths below and above
 * the batches of an epoch, a loader iterating epochs 0..4 back to back yields, batch by batch,
 * exactly what a fresh loader without threads yields after fc_loader_set_epoch(e): same items in
 * the same batches, same crops, same data. Also: skipping an epoch, set_epoch(e+1) in the middle
 * of e, set_epoch of the epoch about to start, caller buffers across boundaries, and that the
 * first batch of the next epoch is ready without waiting once the prefetch threads had time;
 * batch_stride and batch_offset dealing an epoch's batches out among loaders;
 * fc_loader_swap_descs taking several batches a call; batches of 5 MiB (rows the threads copy
 * with streaming stores). Every value of every row and of its padding is checked.
 *
 * Fixture: one store of 61 utterances e000..e060, frames 20..219 (20 + 37u mod 200), values
 * u * 10000 + frame * 100 + bin (exact in f32). */
#include "featcache.h"
#include "featcache/fc_loader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/check.h"

#define N_UTT 61
#define N_MELS 80
#define EPOCHS 5

static uint32_t frames_of(int u) { return 20 + (uint32_t)((u * 37) % 200); }
static float value(int u, uint32_t t, uint32_t m) { return (float)(u * 10000 + t * 100 + m); }

static int make_store(const char *path) {
  fc_store *s;
  int rc = fc_store_open(path, FC_STORE_CREATE | FC_STORE_NOSYNC, &s);
  if (rc) return rc;
  fc_mel_config mc;
  fc_mel_preset("hifigan", &mc);
  char json[1024];
  int jl = fc_mel_config_json(&mc, json, sizeof json);
  fc_digest cfg;
  fc_digest_buffer(json, (size_t)jl, &cfg);
  fc_store_put_config(s, &cfg, json, (size_t)jl);
  for (int u = 0; u < N_UTT && !rc; u++) {
    char id[16], src[32];
    snprintf(id, sizeof id, "e%03d", u);
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
    uint8_t *rec = malloc(64 + pl);
    if (!mel || !rec) return 1;
    for (uint32_t t = 0; t < fr; t++)
      for (uint32_t m = 0; m < N_MELS; m++) mel[t * N_MELS + m] = value(u, t, m);
    fc_record_header h = {.dtype = FC_DTYPE_F32,
                          .ndim = 2,
                          .dim0 = fr,
                          .dim1 = N_MELS,
                          .config = cfg,
                          .producer = FC_PRODUCER_CPU};
    fc_record_encode(&h, mel, pl, rec);
    fc_digest fkey;
    fc_record_key(&ae.digest, &cfg, &fkey);
    fc_put puts[2] = {{FC_DB_AUDIO, id, strlen(id), aval, fc_audio_entry_size(&ae), 0},
                      {FC_DB_FEAT, fkey.bytes, 16, rec, 64 + pl, 0}};
    rc = fc_store_write(s, puts, 2);
    free(mel);
    free(rec);
  }
  fc_store_sync(s);
  fc_store_close(s);
  return rc;
}

/* What a batch showed: enough to compare two loaders batch by batch. */
typedef struct seen {
  uint64_t epoch, index;
  uint32_t size;
  uint64_t items[64];
  uint32_t lens[64], starts[64];
  uint32_t frames;
} seen;

/* Record b and check its data against the fixture's values. */
static void take(const fc_batch *b, const fc_loader_opts *o, seen *out) {
  memset(out, 0, sizeof *out);
  out->epoch = b->epoch;
  out->index = b->index;
  out->size = b->size;
  out->frames = b->frames;
  for (uint32_t i = 0; i < b->size && i < 64; i++) {
    out->items[i] = b->items[i];
    out->lens[i] = b->mel_lengths[i];
    out->starts[i] = b->mel_starts[i];
    int u = atoi(b->ids[i] + 1);
    const float *m = b->mels[i];
    uint32_t n = b->mel_lengths[i], s = b->mel_starts[i];
    int bad = !n;
    for (uint32_t t = 0; t < n && !bad; t++) /* every value */
      for (uint32_t k = 0; k < N_MELS; k++) bad |= m[(size_t)t * N_MELS + k] != value(u, s + t, k);
    CHECK(!bad, "%s: data (start %u, %u frames)", b->ids[i], s, n);
    if (o->output == FC_OUTPUT_PADDED) {
      const float *row = (const float *)b->mel_data + (size_t)i * b->frames * N_MELS;
      CHECK(row == m, "padded mels[%u] points into mel_data", i);
      float pv = isnan(o->pad_value) ? (float)log(1e-5) : o->pad_value;
      int badpad = 0;
      for (size_t x = (size_t)n * N_MELS; x < (size_t)b->frames * N_MELS && !badpad; x++)
        badpad |= row[x] != pv;
      CHECK(!badpad, "%s: padding", b->ids[i]);
    }
  }
}

/* The reference: a fresh loader without threads, epoch e planned by set_epoch. Returns batches. */
static size_t reference(const char *path, const fc_loader_opts *o0, uint64_t e, seen *out,
                        size_t cap) {
  fc_loader_opts o = *o0;
  o.prefetch_threads = 0;
  fc_loader *l;
  char why[256];
  const char *P[] = {path};
  if (fc_loader_open(P, 1, &o, &l, why, sizeof why)) {
    CHECK(0, "open: %s", why);
    return 0;
  }
  CHECK(fc_loader_set_epoch(l, e) == 0, "set_epoch");
  size_t n = 0;
  fc_batch *b;
  while (fc_loader_next(l, &b) == 0 && b) {
    if (n < cap) take(b, &o, &out[n++]);
    fc_loader_release(l, b);
  }
  fc_loader_close(l);
  return n;
}

static int same(const seen *a, const seen *b) {
  if (a->epoch != b->epoch || a->index != b->index || a->size != b->size || a->frames != b->frames)
    return 0;
  for (uint32_t i = 0; i < a->size && i < 64; i++)
    if (a->items[i] != b->items[i] || a->lens[i] != b->lens[i] || a->starts[i] != b->starts[i])
      return 0;
  return 1;
}

/* Iterate the rest of the current epoch of l, comparing with ref[from..n). */
static void run_rest(fc_loader *l, const fc_loader_opts *o, const seen *ref, size_t from, size_t n,
                     const char *what) {
  fc_batch *b;
  size_t k = from;
  int rc;
  while ((rc = fc_loader_next(l, &b)) == 0 && b) {
    seen s;
    take(b, o, &s);
    CHECK(k < n && same(&s, &ref[k]),
          "%s: batch %zu (epoch %llu index %llu) differs from a fresh "
          "loader's",
          what, k, (unsigned long long)s.epoch, (unsigned long long)s.index);
    k++;
    fc_loader_release(l, b);
  }
  CHECK(rc == 0, "%s: next: %s (%s)", what, fc_strerror(rc), fc_loader_error(l));
  CHECK(k == n, "%s: %zu batches, a fresh loader gives %zu", what, k, n);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(void) {
  char dir[] = "/tmp/fc_test_loader_epochs_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char path[300];
  snprintf(path, sizeof path, "%s/s", dir);
  CHECK(make_store(path) == 0, "make store");
  const char *P[] = {path};
  static seen ref[EPOCHS][64];
  size_t nref[EPOCHS];
  char why[256];

  /* back-to-back epochs == fresh loaders, over the option grid */
  const uint32_t orders[] = {FC_ORDER_SEQUENTIAL, FC_ORDER_RANDOM, FC_ORDER_BUCKET,
                             FC_ORDER_LOCALITY};
  const uint32_t depths[] = {1, 3, 16}; /* 16 > the 9 batches of an epoch */
  int cases = 0;
  for (size_t oi = 0; oi < 4; oi++)
    for (uint32_t out = 0; out <= 1; out++)
      for (size_t di = 0; di < 3; di++)
        for (int variant = 0; variant < 2; variant++) {
          fc_loader_opts o;
          fc_loader_opts_init(&o);
          o.order = orders[oi];
          o.output = out;
          o.seed = 11 + oi;
          o.batch_size = 7;
          o.bucket_batches = 2;
          o.locality_run = 10;
          o.pad_value = -3.0f;
          o.prefetch_threads = di == 1 ? 3 : 2;
          o.prefetch_depth = depths[di];
          if (variant) { /* dynamic batching, random crops (the crop start depends on the epoch) */
            o.max_frames = 900;
            o.crop_frames = 150;
            o.flags = FC_LOADER_RANDOM_CROP;
          }
          char what[96];
          snprintf(what, sizeof what, "order %u output %u depth %u variant %d", o.order, out,
                   o.prefetch_depth, variant);
          for (uint64_t e = 0; e < EPOCHS; e++) nref[e] = reference(path, &o, e, ref[e], 64);
          fc_loader *l;
          if (fc_loader_open(P, 1, &o, &l, why, sizeof why)) {
            CHECK(0, "%s: open: %s", what, why);
            continue;
          }
          for (uint64_t e = 0; e < EPOCHS; e++) {
            /* the loader opens at epoch 0: set_epoch(0) before any batch keeps its prefetch */
            CHECK(fc_loader_set_epoch(l, e) == 0, "%s: set_epoch %llu", what,
                  (unsigned long long)e);
            run_rest(l, &o, ref[e], 0, nref[e], what);
          }
          fc_loader_close(l);
          cases++;
        }
  CHECK(cases == 48, "%d cases ran", cases);

  /* batch_stride / batch_offset (a DataLoader worker's part of its rank's epoch): loader w of S
   * takes batches w, w + S, ... of the epoch one loader has (the same batches, numbered as
   * there), over epochs back to back, with ranks, drop_last, and dynamic batching whose counts
   * the ranks equalize; an offset not below the stride is refused */
  for (int variant = 0; variant < 4; variant++)
    for (uint32_t S = 2; S <= 3; S++) {
      fc_loader_opts o;
      fc_loader_opts_init(&o);
      o.order = variant == 2 ? FC_ORDER_BUCKET : variant == 3 ? FC_ORDER_LOCALITY : FC_ORDER_RANDOM;
      o.output = (uint32_t)(variant & 1);
      o.seed = 40 + (uint64_t)variant;
      o.batch_size = 5;
      o.bucket_batches = 2;
      o.locality_run = 10;
      o.drop_last = variant == 1;
      o.world_size = variant ? 2 : 1;
      o.rank = variant == 3;
      if (variant == 2) {
        o.batch_size = 0;
        o.max_frames = 700;
      }
      for (uint64_t e = 0; e < EPOCHS; e++) nref[e] = reference(path, &o, e, ref[e], 64);
      o.batch_stride = S;
      size_t taken = 0;
      for (uint32_t w = 0; w < S; w++) {
        char what[96];
        snprintf(what, sizeof what, "variant %d batch %u of every %u", variant, w, S);
        o.batch_offset = w;
        static seen part[EPOCHS][64];
        size_t np[EPOCHS];
        for (uint64_t e = 0; e < EPOCHS; e++) {
          np[e] = 0;
          for (size_t k = w; k < nref[e]; k += S) part[e][np[e]++] = ref[e][k];
          taken += np[e];
        }
        fc_loader *l;
        if (fc_loader_open(P, 1, &o, &l, why, sizeof why)) {
          CHECK(0, "%s: open: %s", what, why);
          continue;
        }
        for (uint64_t e = 0; e < EPOCHS; e++) {
          CHECK(fc_loader_set_epoch(l, e) == 0, "%s: set_epoch", what);
          fc_loader_info info;
          fc_loader_info_get(l, &info);
          CHECK(info.epoch_batches == np[e], "%s: epoch_batches %llu of %zu", what,
                (unsigned long long)info.epoch_batches, np[e]);
          run_rest(l, &o, part[e], 0, np[e], what);
        }
        fc_loader_close(l);
      }
      size_t all = 0;
      for (uint64_t e = 0; e < EPOCHS; e++) all += nref[e];
      CHECK(taken == all && all >= 5 * EPOCHS, "variant %d: %zu batches of %zu", variant, taken,
            all);
      fc_loader *l = NULL;
      o.batch_offset = S;
      CHECK(fc_loader_open(P, 1, &o, &l, why, sizeof why) == FC_ECONFIG &&
                strstr(why, "batch_offset") != NULL,
            "batch_offset %u of stride %u: %s", S, S, why);
      fc_loader_close(l);
    }

  /* the same loader driven irregularly: skip an epoch, jump mid-epoch, repeat an epoch */
  for (uint32_t out = 0; out <= 1; out++) {
    fc_loader_opts o;
    fc_loader_opts_init(&o);
    o.order = FC_ORDER_RANDOM;
    o.output = out;
    o.seed = 5;
    o.batch_size = 7;
    o.prefetch_threads = 2;
    o.prefetch_depth = 4;
    for (uint64_t e = 0; e < EPOCHS; e++) nref[e] = reference(path, &o, e, ref[e], 64);
    fc_loader *l;
    if (fc_loader_open(P, 1, &o, &l, why, sizeof why)) {
      CHECK(0, "open: %s", why);
      continue;
    }
    run_rest(l, &o, ref[0], 0, nref[0], "epoch 0");
    sleep_ms(50); /* let the threads run into epoch 1 */
    CHECK(fc_loader_set_epoch(l, 2) == 0, "skip to 2");
    run_rest(l, &o, ref[2], 0, nref[2], "epoch 2 after 0");
    CHECK(fc_loader_set_epoch(l, 3) == 0, "3");
    fc_batch *b;
    for (int i = 0; i < 3; i++) { /* three batches of 3, then jump to 4 */
      CHECK(fc_loader_next(l, &b) == 0 && b, "next");
      fc_loader_release(l, b);
    }
    sleep_ms(20);
    CHECK(fc_loader_set_epoch(l, 4) == 0, "4 in the middle of 3");
    run_rest(l, &o, ref[4], 0, nref[4], "epoch 4 from the middle of 3");
    sleep_ms(20);
    CHECK(fc_loader_set_epoch(l, 4) == 0, "4 again after 4");
    run_rest(l, &o, ref[4], 0, nref[4], "epoch 4 again");
    CHECK(fc_loader_set_epoch(l, 1) == 0, "back to 1");
    run_rest(l, &o, ref[1], 0, nref[1], "epoch 1 after 4");
    fc_loader_close(l);
  }

  /* batches of 4 MiB and more (LD_STREAM_MIN_BYTES): the prefetch threads copy their rows with
   * streaming stores, a fresh loader without threads with memcpy; the same values either way,
   * the loader's own buffers and caller buffers */
  for (int caller = 0; caller <= 1; caller++) {
    fc_loader_opts o;
    fc_loader_opts_init(&o);
    o.order = FC_ORDER_RANDOM;
    o.output = FC_OUTPUT_PADDED;
    o.seed = 21;
    o.batch_size = 8;
    o.pad_to = 2048; /* 8 x 2048 x 80 x 4 bytes: 5 MiB */
    o.prefetch_threads = 2;
    o.prefetch_depth = 3;
    size_t bytes = 8u * 2048 * N_MELS * 4 + 65536;
    void *bufs[5] = {0};
    for (uint64_t e = 0; e < 2; e++) nref[e] = reference(path, &o, e, ref[e], 64);
    fc_loader *l;
    if (fc_loader_open(P, 1, &o, &l, why, sizeof why)) {
      CHECK(0, "open: %s", why);
      continue;
    }
    if (caller) {
      for (int i = 0; i < 5; i++) bufs[i] = malloc(bytes);
      CHECK(fc_loader_set_buffers(l, bufs, 5, bytes) == 0, "set buffers: %s", fc_loader_error(l));
    }
    for (uint64_t e = 0; e < 2; e++) {
      CHECK(fc_loader_set_epoch(l, e) == 0, "set_epoch");
      run_rest(l, &o, ref[e], 0, nref[e],
               caller ? "5 MiB batches, caller buffers" : "5 MiB batches");
    }
    fc_loader_close(l);
    for (int i = 0; i < 5; i++) free(bufs[i]);
  }

  /* caller buffers across boundaries: two buffers big enough for every epoch's batches */
  {
    fc_loader_opts o;
    fc_loader_opts_init(&o);
    o.order = FC_ORDER_RANDOM;
    o.output = FC_OUTPUT_PADDED;
    o.seed = 9;
    o.batch_size = 7;
    o.prefetch_threads = 2;
    o.prefetch_depth = 4;
    size_t bytes = 7u * 220 * N_MELS * 4;
    void *bufs[2] = {malloc(bytes), malloc(bytes)};
    for (uint64_t e = 0; e < EPOCHS; e++) nref[e] = reference(path, &o, e, ref[e], 64);
    fc_loader *l;
    if (fc_loader_open(P, 1, &o, &l, why, sizeof why) == 0) {
      CHECK(fc_loader_set_buffers(l, bufs, 2, bytes) == 0, "set buffers: %s", fc_loader_error(l));
      for (uint64_t e = 0; e < EPOCHS; e++) {
        CHECK(fc_loader_set_epoch(l, e) == 0, "set_epoch");
        fc_batch *b;
        size_t k = 0;
        while (fc_loader_next(l, &b) == 0 && b) {
          seen s;
          take(b, &o, &s);
          CHECK(b->mel_data == bufs[0] || b->mel_data == bufs[1], "in a caller buffer");
          CHECK(k < nref[e] && same(&s, &ref[e][k]), "caller buffers: epoch %llu batch %zu",
                (unsigned long long)e, k);
          k++;
          fc_loader_release(l, b);
        }
        CHECK(k == nref[e], "caller buffers: epoch %llu: %zu batches", (unsigned long long)e, k);
      }
      fc_loader_close(l);
    } else {
      CHECK(0, "open: %s", why);
    }
    free(bufs[0]);
    free(bufs[1]);
  }

  /* fc_loader_swap_descs, several batches a call (a binding's hand-off): the batches a fresh
   * loader gives, in order, each once, over epochs, views and caller buffers (fewer than taken
   * a call); those given back with the call go back; entries not taken are 0; and once the
   * threads had time a call takes more than one (a few tries, growing pauses) */
  for (int caller = 0; caller <= 1; caller++) {
    fc_loader_opts o;
    fc_loader_opts_init(&o);
    o.order = FC_ORDER_RANDOM;
    o.output = caller ? FC_OUTPUT_PADDED : FC_OUTPUT_VIEWS;
    o.seed = 3;
    o.batch_size = 7;
    o.prefetch_threads = 2;
    o.prefetch_depth = 4;
    size_t bytes = 7u * 220 * N_MELS * 4;
    void *bufs[2] = {malloc(bytes), malloc(bytes)};
    for (uint64_t e = 0; e < EPOCHS; e++) nref[e] = reference(path, &o, e, ref[e], 64);
    fc_loader *l;
    if (fc_loader_open(P, 1, &o, &l, why, sizeof why)) {
      CHECK(0, "open: %s", why);
      continue;
    }
    if (caller) CHECK(fc_loader_set_buffers(l, bufs, 2, bytes) == 0, "set buffers");
    enum { TAKE = 3 };
    uint64_t d[TAKE * FC_DESC_LEN];
    memset(d, 0, sizeof d);
    size_t most = 0, calls = 0, batches = 0;
    long pause = 0;
    for (uint64_t e = 0; e < EPOCHS; e++, pause = pause ? pause * 2 : 5) {
      CHECK(fc_loader_set_epoch(l, e) == 0, "swap_descs: set_epoch");
      size_t k = 0;
      for (;;) {
        sleep_ms(pause); /* a step: the threads go ahead */
        int rc = fc_loader_swap_descs(l, d, TAKE); /* gives back what the last call took */
        calls++;
        CHECK(rc == 0, "swap_descs: %s (%s)", fc_strerror(rc), fc_loader_error(l));
        size_t got = 0;
        while (got < TAKE && d[got * FC_DESC_LEN + FC_DESC_BATCH]) got++;
        for (size_t i = got; i < TAKE; i++)
          CHECK(d[i * FC_DESC_LEN + FC_DESC_BATCH] == 0, "swap_descs: entry %zu after the taken",
                i);
        if (rc || !got) break;
        if (got > most) most = got;
        CHECK(!caller || got <= 2, "swap_descs: %zu batches in 2 caller buffers", got);
        for (size_t i = 0; i < got; i++, k++) {
          const fc_batch *b = (const fc_batch *)(uintptr_t)d[i * FC_DESC_LEN + FC_DESC_BATCH];
          seen s;
          take(b, &o, &s);
          CHECK(k < nref[e] && same(&s, &ref[e][k]), "swap_descs: epoch %llu batch %zu",
                (unsigned long long)e, k);
          CHECK(d[i * FC_DESC_LEN + FC_DESC_INDEX] == b->index &&
                    d[i * FC_DESC_LEN + FC_DESC_SIZE] == b->size,
                "swap_descs: descriptor %zu packs its batch", i);
        }
        batches += got;
        if (got < TAKE)
          CHECK(d[got * FC_DESC_LEN + FC_DESC_INDEX] == nref[e] - k,
                "swap_descs: %llu batches left said, %zu are",
                (unsigned long long)d[got * FC_DESC_LEN + FC_DESC_INDEX], nref[e] - k);
      }
      CHECK(k == nref[e], "swap_descs: epoch %llu: %zu batches of %zu", (unsigned long long)e, k,
            nref[e]);
    }
    CHECK(most > 1, "swap_descs: never more than one batch a call (%zu calls, %zu batches)", calls,
          batches);
    fc_loader_close(l);
    free(bufs[0]);
    free(bufs[1]);
  }

  /* the point of it all: once the threads had time, the next epoch's first batch is ready when
   * the caller asks (no wait at all). Timing on a shared machine: a few tries, growing pauses. */
  {
    fc_loader_opts o;
    fc_loader_opts_init(&o);
    o.order = FC_ORDER_RANDOM;
    o.output = FC_OUTPUT_PADDED;
    o.batch_size = 7;
    o.prefetch_threads = 2;
    o.prefetch_depth = 2;
    fc_loader *l;
    if (fc_loader_open(P, 1, &o, &l, why, sizeof why) == 0) {
      int ok = 0;
      long pause = 100;
      for (uint64_t e = 0; e < 4 && !ok; e++, pause *= 4) {
        CHECK(fc_loader_set_epoch(l, e) == 0, "set_epoch");
        fc_batch *b;
        while (fc_loader_next(l, &b) == 0 && b) fc_loader_release(l, b);
        sleep_ms(pause);
        uint64_t w0 = fc_loader_wait_ns(l);
        CHECK(fc_loader_set_epoch(l, e + 1) == 0 && fc_loader_next(l, &b) == 0 && b, "next");
        ok = fc_loader_wait_ns(l) == w0;
        fc_loader_release(l, b);
      }
      CHECK(ok, "the first batch of the next epoch was never ready in advance");
      fc_loader_close(l);
    }
  }

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
