/* Building batches and the prefetch threads (the padded-buffer pool: loader_buffers.c).
 *
 * Batches carry one sequence number across epochs (loader_int.h). Batch s is built by whichever
 * thread claims it (a prefetch thread, or the caller of fc_loader_next without threads) and
 * parked in slots[s % depth]; the caller takes batches in order. Threads claim s only while
 * s < next_consume + depth, so at most depth batches are ready or in flight.
 *
 * Prefetch crosses epochs: near the end of epoch e a prefetch thread plans epoch e+1 (the plan is
 * a function of seed and epoch only) and goes on building its first batches; fc_loader_set_epoch
 * (e+1) after the last batch of e then keeps them (the sequence continues). Any other
 * set_epoch bumps a generation number and drops what was built: builds of an older generation
 * are dropped when they finish. A build touches only the index and the map (no LMDB call). The
 * caller's buffers are set in loader_caller.c. */
#include "libcache/core/loader/loader_int.h"
#include "formats/common/args.h"
#include "featcache/fc_codec.h"
#include "formats/common/alloc.h"
#include "formats/common/thread_name.h"
#include "formats/common/why.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* ---- batches ----------------------------------------------------------------------------------- */
static void batch_free_locked(fc_loader *l, ld_batch *b) {
  if (!b) return;
  ld_buf_put_locked(l, b->buf);
  free(b->block);
  free(b->errors);
  free(b);
}

/* Give b back; wake: wake the prefetch threads if they have room now (else a later next does,
 * when fewer than two batches are left ready). */
static void release_batch(fc_loader *l, ld_batch *b, int wake) {
  if (l->pid != getpid()) return; /* the parent's batch: its memory is not ours to manage */
  pthread_mutex_lock(&l->mu);
  int caller = b->buf.caller;
  if (caller && l->held_caller) l->held_caller--;
  batch_free_locked(l, b);
  /* room ahead: fc_loader_next may have left the wakeup of the prefetch threads to here */
  int room = l->n_threads && l->next_build < l->next_consume + l->o.prefetch_depth;
  pthread_mutex_unlock(&l->mu);
  if (wake && (caller || room)) pthread_cond_broadcast(&l->cv_space); /* the window grew */
}

void fc_loader_release(fc_loader *l, fc_batch *pub) {
  FC_ARGS_OR(, l || !pub);
  if (pub) release_batch(l, (ld_batch *)pub, 1);
}

/* The bits of v in dtype, in the low bytes. */
static uint32_t pad_pattern(int dtype, double v) {
  uint32_t out = 0;
  if (dtype == FC_DTYPE_F32) {
    float f = (float)v;
    memcpy(&out, &f, 4);
  } else if (dtype == FC_DTYPE_F16) {
    out = fc_f32_to_f16((float)v);
  } else if (dtype == FC_DTYPE_BF16) {
    out = fc_f32_to_bf16((float)v);
  } else if (dtype == FC_DTYPE_I32) {
    int32_t x = (int32_t)v;
    memcpy(&out, &x, 4);
  } else {
    out = (uint16_t)(int16_t)v;
  }
  return out;
}

/* "id: reason\n", and " (in STORE)" before the newline when the loader reads several stores (the
 * one to check or make again) */
static int errors_append(char **errs, const char *id, const char *reason, const char *store) {
  id = FC_WHY_NAME(id); /* quoted when odd, as in every reason */
  const char *st = store ? FC_WHY_NAME(store) : "";
  size_t old = *errs ? strlen(*errs) : 0, add = strlen(id) + strlen(reason) + strlen(st) + 10;
  char *p = fc_realloc(*errs, old + add);
  if (!p) return ENOMEM;
  snprintf(p + old, add, store ? "%s: %s (in %s)\n" : "%s: %s\n", id, reason, st);
  *errs = p;
  return 0;
}

/* Build batch k of plan p (a copy of the current or the next epoch's plan, taken under mu; nxt,
 * maybe empty, is the epoch after p, for the madvise hints) of generation gen. On failure *out is
 * NULL and why says why. */
static int build_batch(fc_loader *l, uint64_t gen, const ld_plan *p, const ld_plan *nxt, uint64_t k,
                       ld_batch **out, char *why, size_t why_len) {
  *out = NULL;
  int stream = 0;
  uint64_t ahead = (l->o.output == FC_OUTPUT_VIEWS && l->n_threads) ? 0
                   : l->n_threads                                   ? l->o.prefetch_depth
                                                                    : 1;
  if (k == 0 && ahead) ld_willneed(l, p, 0);
  if (k + ahead < p->n_batches)
    ld_willneed(l, p, k + ahead);
  else if (nxt && nxt->order)
    ld_willneed(l, nxt, k + ahead - p->n_batches);
  uint64_t s = p->bstart[k], m = p->bstart[k + 1] - s;
  int padded = l->o.output == FC_OUTPUT_PADDED, verify = !(l->o.flags & FC_LOADER_NO_VERIFY);
  ld_batch *b = fc_calloc(1, sizeof *b);
  if (!b) return ENOMEM;
  b->l = l;
  int rc = 0;
  uint32_t kept = 0;
  char **bad = NULL; /* [m]: why item i of the batch could not be resolved, or NULL */
  int *bad_rc = NULL;
  /* pass 1: which items, their lengths, and the sizes of everything */
  uint64_t *keep = fc_malloc((m ? m : 1) * sizeof *keep);
  if (!keep) {
    rc = ENOMEM;
    goto fail;
  }
  uint32_t longest = 0, max_tok = 0;
  size_t copy_bytes = 0, id_bytes = 0;
  if ((rc = ld_resolve_batch(l, p, k, &bad, &bad_rc))) goto fail; /* (loader_index.c) */
  for (uint64_t i = 0; i < m; i++) {
    uint64_t ix = p->order[s + i];
    const ld_item *it = &l->items[ix];
    char r[200];
    const char *reason = bad && bad[i] ? bad[i] : r; /* records not found, or headers wrong */
    int e = bad && bad[i] ? bad_rc[i] : 0;
    if (!e && verify) {
      fc_record_header h;
      const void *pl;
      size_t mel_len = FC_RECORD_HEADER_SIZE + ld_mel_bytes(l, it);
      e = fc_record_verify(it->mel_rec, mel_len, &h, &pl, r, sizeof r);
      if (!e && it->tok_rec)
        e = fc_record_verify(it->tok_rec, FC_RECORD_HEADER_SIZE + (size_t)it->ntok * l->tok_dsize,
                             &h, &pl, r, sizeof r);
    }
    if (e) { /* skipped and listed; under STRICT, or for an error not of the record, fatal */
      const char *id = l->ids + it->id_off;
      if ((l->o.flags & FC_LOADER_STRICT) ||
          (e != FC_ENOTFOUND && e != FC_EFORMAT && e != FC_ECHECKSUM)) {
        fc_why(why, why_len, "%s: %s: %s", FC_WHY_NAME(l->stores[it->store].path), FC_WHY_NAME(id),
               reason);
        rc = e;
        goto fail;
      }
      if ((rc = errors_append(&b->errors, id, reason,
                              l->n_stores > 1 ? l->stores[it->store].path : NULL)))
        goto fail;
      b->pub.n_errors++;
      continue;
    }
    keep[kept++] = ix;
    id_bytes += strlen(l->ids + it->id_off) + 1;
    uint32_t len = ld_crop_len(l, it);
    if (len > longest) longest = len;
    if (it->ntok > max_tok) max_tok = it->ntok;
    const uint8_t *pl = it->mel_rec + FC_RECORD_HEADER_SIZE;
    /* views of coded records are decoded into the batch's block, like unaligned ones copied */
    if (!padded && (l->mel_coded || ((uintptr_t)pl & 15)))
      copy_bytes += align16((size_t)len * l->n_mels * l->mel_dsize);
    if (l->has_tokens && !padded && ((uintptr_t)(it->tok_rec + FC_RECORD_HEADER_SIZE) & 15))
      copy_bytes += align16((size_t)it->ntok * l->tok_dsize);
  }
  uint32_t T = ld_padded_frames(l, longest);
  size_t B = kept;
  size_t tok_bytes = (l->has_tokens && padded) ? align16(B * max_tok * l->tok_dsize) : 0;
  ld_block_layout lay = ld_block(B, copy_bytes, tok_bytes, id_bytes);
  size_t row = (size_t)T * l->n_mels * l->mel_dsize;
  stream = l->n_threads && padded && B * row >= LD_STREAM_MIN_BYTES;
  if (padded && B) {
    if ((rc = ld_buf_get(l, gen, B * row, &b->buf))) {
      if (rc == FC_ECONFIG)
        snprintf(why, why_len, "a padded batch needs %zu bytes, the caller buffers hold %zu",
                 B * row, l->caller_buf_bytes);
      else if (rc == ENOMEM) { /* each own buffer holds the epoch's largest batch */
        size_t want = B * row > l->plan.max_batch_bytes ? B * row : l->plan.max_batch_bytes;
        snprintf(why, why_len,
                 "out of memory for a padded batch buffer of %.2f GB (each holds the epoch's "
                 "largest batch: its utterances x its longest one's frames x n_mels): crop_frames, "
                 "max_frames, a smaller batch_size or views (not padded) bound it",
                 (double)want / 1e9);
      }
      goto fail;
    }
  }
  /* A caller buffer with room after the mels holds the block too: every array of the batch then
   * lies at the same place in that buffer for every batch of the same shape, so a binding makes
   * its objects over a buffer once and reuses them (fc_loader_swap_desc, FC_DESC_LAYOUT). */
  uint8_t *blk;
  if (b->buf.caller && b->buf.cap >= ld_align64(B * row) + lay.total) {
    blk = (uint8_t *)b->buf.p + ld_align64(B * row);
    b->in_buf = 1;
  } else {
    blk = fc_aligned_alloc(16, lay.total ? lay.total : 16);
    if (!blk) {
      rc = ENOMEM;
      goto fail;
    }
    b->block = blk;
  }
  const char **ids = (const char **)(void *)blk;
  uint64_t *items = (uint64_t *)(void *)(blk + lay.off_items);
  uint32_t *lens = (uint32_t *)(void *)(blk + lay.off_u32), *starts = lens + B, *src = starts + B,
           *tlens = src + B;
  const void **mels = (const void **)(void *)(blk + lay.off_mels),
             **toks = (const void **)(void *)(blk + lay.off_tokp);
  uint8_t *copy = blk + lay.off_copy;
  uint32_t pat = pad_pattern(l->mel_dtype, l->o.pad_value);
  uint32_t tpat = pad_pattern(l->tok_dtype ? l->tok_dtype : FC_DTYPE_I32, l->o.token_pad);
  uint8_t *tokdst = copy + copy_bytes;
  char *idtext = (char *)blk + lay.off_idtext, *idp = idtext;
  for (size_t i = 0; i < B; i++) {
    const ld_item *it = &l->items[keep[i]];
    ids[i] = l->ids + it->id_off;
    size_t idl = strlen(ids[i]) + 1;
    memcpy(idp, ids[i], idl);
    idp += idl;
    items[i] = keep[i];
    lens[i] = ld_crop_len(l, it);
    starts[i] = ld_crop_start(l, p->epoch, keep[i], it);
    src[i] = it->frames;
    size_t fb = (size_t)l->n_mels * l->mel_dsize;
    const uint8_t *pl = it->mel_rec + FC_RECORD_HEADER_SIZE + (size_t)starts[i] * fb;
    if (l->mel_coded) { /* decode the cropped rows straight into the batch (padded or block) */
      uint8_t *dst = padded ? (uint8_t *)b->buf.p + i * row : copy;
      char r[200];
      int e = fc_mq_decode(fc_mq_thread_coder(), it->mel_rec + FC_RECORD_HEADER_SIZE,
                           ld_mel_bytes(l, it), it->frames, l->n_mels, starts[i], lens[i],
                           (float *)(void *)dst, r, sizeof r);
      if (e) { /* checksums off (FC_LOADER_NO_VERIFY): the batch fails */
        fc_why(why, why_len, "%s: %s: %s", FC_WHY_NAME(l->stores[it->store].path),
               FC_WHY_NAME(ids[i]), r);
        rc = e;
        goto fail;
      }
      if (padded && T > lens[i])
        ld_fill_pad(dst + lens[i] * fb, (size_t)(T - lens[i]) * l->n_mels, l->mel_dsize, pat);
      if (!padded) copy += align16(lens[i] * fb);
      mels[i] = dst;
    } else if (padded) {
      uint8_t *dst = (uint8_t *)b->buf.p + i * row;
      ld_copy_rows(dst, pl, lens[i] * fb, stream);
      if (T > lens[i])
        ld_fill_pad(dst + lens[i] * fb, (size_t)(T - lens[i]) * l->n_mels, l->mel_dsize, pat);
      mels[i] = dst;
    } else if ((uintptr_t)pl & 15) {
      memcpy(copy, pl, lens[i] * fb);
      mels[i] = copy;
      copy += align16(lens[i] * fb);
    } else {
      mels[i] = pl;
    }
    if (!l->has_tokens) continue;
    tlens[i] = it->ntok;
    const uint8_t *tp = it->tok_rec + FC_RECORD_HEADER_SIZE;
    size_t tb = (size_t)it->ntok * l->tok_dsize;
    if (padded) {
      uint8_t *dst = tokdst + i * (size_t)max_tok * l->tok_dsize;
      memcpy(dst, tp, tb);
      ld_fill_pad(dst + tb, max_tok - it->ntok, l->tok_dsize, tpat);
      toks[i] = dst;
    } else if ((uintptr_t)tp & 15) {
      memcpy(copy, tp, tb);
      toks[i] = copy;
      copy += align16(tb);
    } else {
      toks[i] = tp;
    }
  }
  free(keep);
  keep = NULL;
  ld_bad_free(bad, bad_rc, m);
  b->pub.epoch = p->epoch;
  b->pub.index = ld_batch_number(l, k);
  b->pub.size = (uint32_t)B;
  b->pub.n_mels = l->n_mels;
  b->pub.mel_dtype = l->mel_dtype;
  b->pub.tok_dtype = l->has_tokens ? l->tok_dtype : 0;
  b->pub.ids = ids;
  b->pub.items = items;
  b->pub.mel_lengths = lens;
  b->pub.mel_starts = starts;
  b->pub.src_frames = src;
  b->pub.mels = mels;
  b->pub.frames = padded ? T : 0;
  b->pub.mel_data = padded ? b->buf.p : NULL;
  if (l->has_tokens) {
    b->pub.token_lengths = tlens;
    b->pub.tokens = toks;
    if (padded) {
      b->pub.max_tokens = max_tok;
      b->pub.tok_data = tokdst;
    }
  }
  b->pub.errors = b->errors;
  b->pub.id_text = idtext;
  b->pub.id_text_len = id_bytes;
  ld_stream_done(stream);
  *out = b;
  return 0;
fail:
  ld_stream_done(stream);
  free(keep);
  ld_bad_free(bad, bad_rc, m);
  pthread_mutex_lock(&l->mu);
  batch_free_locked(l, b);
  pthread_mutex_unlock(&l->mu);
  return rc;
}

/* ---- prefetch threads -------------------------------------------------------------------------- */
/* Plan the epoch after the current one into l->ahead; mu held on entry and exit (released while
 * planning, counted in building so set_epoch waits for it). */
static void plan_ahead_locked(fc_loader *l) {
  uint64_t gen = l->gen, epoch = l->plan.epoch + 1;
  l->ahead_state = 1;
  l->building++;
  pthread_mutex_unlock(&l->mu);
  ld_plan p;
  int rc = ld_plan_epoch(l, epoch, &p);
  pthread_mutex_lock(&l->mu);
  l->building--;
  if (rc) {
    l->ahead_state = 2; /* not retried: the caller's set_epoch plans (and reports) it */
  } else if (gen != l->gen || l->stop || l->ahead_ok) {
    ld_plan_free(&p); /* set_epoch / set_buffers waited for this planning: they reset the state */
    l->ahead_state = 0;
  } else {
    l->ahead = p;
    l->ahead_ok = 1;
    l->ahead_state = 0;
  }
  pthread_cond_broadcast(&l->cv_space);
  if (l->building == 0) pthread_cond_broadcast(&l->cv_idle);
}

/* Claim the next batch within the prefetch window and build it into its slot (or plan the next
 * epoch when near the end of this one); mu held on entry and exit, released while building.
 * Returns 1 when it did something, 0 when there is nothing to claim now (the window is full,
 * the epoch's batches are all claimed, or an earlier failure is sticky). */
static int build_ahead_locked(fc_loader *l, char *why, size_t why_len) {
  uint64_t depth = l->o.prefetch_depth, seq = l->next_build, rel = seq - l->base;
  uint64_t n = l->plan.n_batches, window = depth;
  if (l->n_caller_bufs && l->o.output == FC_OUTPUT_PADDED) {
    /* caller buffers: claim no more batches than there are buffers the caller does not hold,
     * else builds of later batches could take them all while the next one waits (deadlock) */
    size_t avail = l->n_caller_bufs > l->held_caller ? l->n_caller_bufs - l->held_caller : 0;
    if (avail < window) window = avail;
  }
  if (l->sticky || seq >= l->next_consume + window) return 0;
  /* within depth of the epoch's end: plan the next epoch (once) */
  if (!l->ahead_ok && l->ahead_state == 0 && rel + depth >= n) {
    plan_ahead_locked(l);
    return 1;
  }
  ld_plan p, nxt;
  uint64_t k;
  memset(&nxt, 0, sizeof nxt);
  if (rel < n) {
    p = l->plan;
    k = rel;
    if (l->ahead_ok) nxt = l->ahead;
  } else if (l->ahead_ok && rel - n < l->ahead.n_batches) {
    p = l->ahead;
    k = rel - n;
  } else {
    return 0;
  }
  uint64_t gen = l->gen;
  l->next_build++;
  l->building++;
  pthread_mutex_unlock(&l->mu);
  ld_batch *b = NULL;
  why[0] = '\0';
  int rc = build_batch(l, gen, &p, &nxt, k, &b, why, why_len);
  pthread_mutex_lock(&l->mu);
  l->building--;
  if (gen != l->gen || l->stop || rc == EAGAIN) {
    batch_free_locked(l, b);
  } else {
    size_t slot = seq % depth;
    l->slots[slot] = b;
    l->slot_err[slot] = rc;
    free(l->slot_why[slot]);
    l->slot_why[slot] = rc ? fc_strdup(why[0] ? why : fc_strerror(rc)) : NULL;
    l->slot_ready[slot] = 1;
    pthread_cond_broadcast(&l->cv_ready);
  }
  if (l->building == 0) pthread_cond_broadcast(&l->cv_idle);
  return 1;
}

static void *prefetch_main(void *arg) {
  fc_loader *l = arg;
  char why[512];
  fc_thread_name("prefetch", -1);
  /* SCHED_BATCH: waking a prefetch thread never preempts the training thread (on a busy machine
   * the wakeup in fc_loader_next would otherwise hand the caller's CPU to the build). Best
   * effort: ignored where not permitted. */
  struct sched_param sp = {0};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
  pthread_mutex_lock(&l->mu);
  while (!l->stop)
    if (!build_ahead_locked(l, why, sizeof why)) pthread_cond_wait(&l->cv_space, &l->mu);
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

int ld_threads_start(fc_loader *l) {
  uint32_t n = l->o.prefetch_threads;
  if (!n || l->n_threads) return 0;
  l->threads = fc_calloc(n, sizeof *l->threads);
  if (!l->threads) return ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    int rc = pthread_create(&l->threads[i], NULL, prefetch_main, l);
    if (rc) {
      ld_threads_stop(l);
      return rc;
    }
    l->n_threads = i + 1;
  }
  return 0;
}

void ld_threads_stop(fc_loader *l) {
  pthread_mutex_lock(&l->mu);
  l->stop = 1;
  pthread_cond_broadcast(&l->cv_space);
  pthread_cond_broadcast(&l->cv_buf);
  pthread_mutex_unlock(&l->mu);
  for (uint32_t i = 0; i < l->n_threads; i++) pthread_join(l->threads[i], NULL);
  free(l->threads);
  l->threads = NULL;
  l->n_threads = 0;
  pthread_mutex_lock(&l->mu);
  l->stop = 0;
  pthread_mutex_unlock(&l->mu);
}

/* Free the ready, unconsumed batches; mu held (or no other thread running). */
void ld_drop_ready(fc_loader *l) {
  for (uint32_t i = 0; l->slots && i < l->o.prefetch_depth; i++) {
    if (l->slot_ready[i]) batch_free_locked(l, l->slots[i]);
    l->slots[i] = NULL;
    l->slot_ready[i] = 0;
    free(l->slot_why[i]);
    l->slot_why[i] = NULL;
  }
}

/* ---- the public iteration ---------------------------------------------------------------------- */
static int lookup_only(fc_loader *l) { /* next, set_epoch: no index to iterate */
  snprintf(l->err, sizeof l->err, "a LOOKUP_ONLY loader has no index: fc_loader_lookup only");
  return FC_EBADSTATE;
}

int fc_loader_set_epoch(fc_loader *l, uint64_t epoch) {
  FC_ARGS(l);
  ld_not_lookup(l);
  if (l->pid != getpid()) return FC_EBADSTATE;
  if (l->o.flags & FC_LOADER_LOOKUP_ONLY) return lookup_only(l);
  uint32_t depth = l->o.prefetch_depth;
  pthread_mutex_lock(&l->mu);
  if (!l->slots) {
    l->slots = fc_calloc(depth, sizeof *l->slots);
    l->slot_err = fc_calloc(depth, sizeof *l->slot_err);
    l->slot_why = fc_calloc(depth, sizeof *l->slot_why);
    l->slot_ready = fc_calloc(depth, 1);
    if (!l->slots || !l->slot_err || !l->slot_why || !l->slot_ready) { /* all or none */
      free(l->slots);
      free(l->slot_err);
      free(l->slot_why);
      free(l->slot_ready);
      l->slots = NULL;
      l->slot_err = NULL;
      l->slot_why = NULL;
      l->slot_ready = NULL;
      pthread_mutex_unlock(&l->mu);
      return ENOMEM;
    }
  } else if (!l->sticky && l->plan.order) {
    if (l->ahead_ok && epoch == l->ahead.epoch && l->next_consume - l->base == l->plan.n_batches) {
      /* the current epoch is done and its successor is planned: keep what was prefetched of it,
       * the sequence runs on (builds in flight hold their own copy of the plan) */
      l->base += l->plan.n_batches;
      ld_plan_free(&l->plan);
      l->plan = l->ahead;
      memset(&l->ahead, 0, sizeof l->ahead);
      l->ahead_ok = 0;
      l->ahead_state = 0;
      pthread_mutex_unlock(&l->mu);
      pthread_cond_broadcast(&l->cv_space);
      return 0;
    }
    if (epoch == l->plan.epoch && l->next_consume == l->base) {
      /* the epoch about to start (nothing taken yet): what was prefetched is what it yields */
      pthread_mutex_unlock(&l->mu);
      return 0;
    }
  }
  l->gen++;
  pthread_cond_broadcast(&l->cv_buf);
  while (l->building) pthread_cond_wait(&l->cv_idle, &l->mu);
  ld_drop_ready(l);
  ld_plan plan;
  int rc = 0;
  if (l->ahead_ok && l->ahead.epoch == epoch) {
    plan = l->ahead;
    memset(&l->ahead, 0, sizeof l->ahead);
  } else {
    rc = ld_plan_epoch(l, epoch, &plan);
  }
  ld_plan_free(&l->ahead);
  l->ahead_ok = 0;
  l->ahead_state = 0;
  if (rc) {
    snprintf(l->err, sizeof l->err, "planning epoch %llu: %s", (unsigned long long)epoch,
             fc_strerror(rc));
    l->sticky = 1;
  } else {
    ld_plan_free(&l->plan);
    l->plan = plan;
    l->base = l->next_build = l->next_consume = 0;
    l->sticky = 0;
  }
  pthread_cond_broadcast(&l->cv_space);
  pthread_mutex_unlock(&l->mu);
  return rc;
}

/* This process's id without a system call per batch: read once, refreshed in fork children. */
static pid_t cur_pid_value;
static pthread_once_t cur_pid_once = PTHREAD_ONCE_INIT;
static void cur_pid_child(void) { cur_pid_value = getpid(); }
static void cur_pid_init(void) {
  cur_pid_value = getpid();
  pthread_atfork(NULL, NULL, cur_pid_child);
}
static pid_t cur_pid(void) {
  pthread_once(&cur_pid_once, cur_pid_init);
  return cur_pid_value;
}

int fc_loader_next(fc_loader *l, fc_batch **out) {
  FC_ARGS(l, out);
  *out = NULL;
  ld_not_lookup(l);
  if (l->pid != cur_pid()) {
    snprintf(l->err, sizeof l->err, "loader opened in another process: open it again after fork");
    return FC_EBADSTATE;
  }
  if (l->o.flags & FC_LOADER_LOOKUP_ONLY) return lookup_only(l);
  /* The first call builds its batch itself, then starts the prefetch threads: on a store not in
   * memory their reads of the batches after it (the kernel's read-around of each fault) would
   * otherwise queue beside the first batch's own and delay it (0.4 s of 8 MiB reads at 300k). */
  const int start = l->o.prefetch_threads && !l->n_threads;
  pthread_mutex_lock(&l->mu);
  int rc = 0, wake = 0;
  ld_batch *b = NULL;
  if (l->sticky) {
    rc = FC_EBADSTATE;
    goto out;
  }
  if (l->next_consume - l->base >= l->plan.n_batches) goto out;
  if (l->n_caller_bufs && l->o.output == FC_OUTPUT_PADDED && l->held_caller >= l->n_caller_bufs) {
    snprintf(l->err, sizeof l->err, "all %zu caller buffers are held: release a batch first",
             l->n_caller_bufs);
    rc = ENOBUFS;
    goto out;
  }
  uint64_t k = l->next_consume;
  if (!l->n_threads) {
    uint64_t gen = l->gen;
    ld_plan p = l->plan;
    l->next_consume++;
    if (start) l->next_build = l->next_consume; /* the threads go on from the next batch */
    pthread_mutex_unlock(&l->mu);
    char why[512] = "";
    const uint64_t t0 = start ? now_ns() : 0;
    rc = build_batch(l, gen, &p, NULL, k - l->base, &b, why, sizeof why);
    pthread_mutex_lock(&l->mu);
    if (start) l->wait_ns += now_ns() - t0; /* as a build here with the threads running is */
    if (rc) snprintf(l->err, sizeof l->err, "%s", why[0] ? why : fc_strerror(rc));
  } else if (!l->slot_ready[k % l->o.prefetch_depth] && l->next_build == k &&
             !(l->n_caller_bufs && l->o.output == FC_OUTPUT_PADDED)) {
    /* no thread has taken this batch yet (they are busy, or not awake): build it here rather
     * than wait for a wakeup — for views a build is a few µs, a wakeup tens. Counted as waiting.
     * Not with caller buffers: a thread could take the free buffer this build needs. */
    uint64_t t0 = now_ns(), gen = l->gen;
    ld_plan p = l->plan, nxt;
    memset(&nxt, 0, sizeof nxt);
    if (l->ahead_ok) nxt = l->ahead;
    l->next_build++;
    l->next_consume++;
    l->building++;
    pthread_mutex_unlock(&l->mu);
    char why[512] = "";
    rc = build_batch(l, gen, &p, &nxt, k - l->base, &b, why, sizeof why);
    pthread_mutex_lock(&l->mu);
    l->building--;
    if (l->building == 0) pthread_cond_broadcast(&l->cv_idle);
    if (rc) snprintf(l->err, sizeof l->err, "%s", why[0] ? why : fc_strerror(rc));
    l->wait_ns += now_ns() - t0;
    wake = 1;
  } else {
    size_t slot = k % l->o.prefetch_depth;
    if (!l->slot_ready[slot]) {
      uint64_t t0 = now_ns();
      /* the threads may be parked for want of room that a batch given back without a wakeup
       * (fc_loader_swap_desc) made: wake them before waiting for one of them */
      pthread_cond_broadcast(&l->cv_space);
      /* and rather than sleep while a thread builds this one, build the next batch nobody has
       * claimed (this one, if none has): with no step between batches the caller is a builder
       * too, so prefetch threads never make a loop slower than building inline */
      char hwhy[512];
      while (!l->slot_ready[slot])
        if (!build_ahead_locked(l, hwhy, sizeof hwhy)) pthread_cond_wait(&l->cv_ready, &l->mu);
      l->wait_ns += now_ns() - t0;
    }
    b = l->slots[slot];
    rc = l->slot_err[slot];
    if (rc) snprintf(l->err, sizeof l->err, "%s", l->slot_why[slot] ? l->slot_why[slot] : "");
    l->slots[slot] = NULL;
    l->slot_ready[slot] = 0;
    l->next_consume++;
    /* Wake the prefetch threads to refill only when fewer than two batches are left ready;
     * otherwise fc_loader_release (the caller giving back an earlier batch, typically during its
     * step) or a later next wakes them. A wakeup here costs the caller a futex call and, on a
     * small machine, a thread copying megabytes beside it while it returns with the batch. */
    uint32_t depth = l->o.prefetch_depth;
    wake = depth < 3 || !l->slot_ready[(k + 1) % depth] || !l->slot_ready[(k + 2) % depth];
  }
  if (rc) {
    l->sticky = 1;
    b = NULL;
  } else if (b && b->buf.caller) {
    l->held_caller++;
  }
out:
  pthread_mutex_unlock(&l->mu);
  /* after unlocking: a woken prefetch thread does not block at once on mu */
  if (wake) pthread_cond_broadcast(&l->cv_space);
  /* threads that fail to start are tried again by the next call; batches are built here till then */
  if (start && b) (void)ld_threads_start(l);
  if (b) *out = &b->pub;
  return rc;
}

uint64_t fc_loader_wait_ns(const fc_loader *l) {
  FC_ARGS_OR(0, l);
  return l->wait_ns;
}

/* The batch's fields packed into desc (FC_DESC_*); b NULL: all 0. */
static void fill_desc(const fc_batch *b, uint64_t *desc) {
  memset(desc, 0, FC_DESC_LEN * sizeof *desc);
  if (!b) return;
#define A(p) ((uint64_t)(uintptr_t)(p))
  desc[FC_DESC_BATCH] = A(b);
  desc[FC_DESC_EPOCH] = b->epoch;
  desc[FC_DESC_INDEX] = b->index;
  desc[FC_DESC_SIZE] = b->size;
  desc[FC_DESC_N_MELS] = b->n_mels;
  desc[FC_DESC_MEL_DTYPE] = (uint64_t)b->mel_dtype;
  desc[FC_DESC_TOK_DTYPE] = (uint64_t)b->tok_dtype;
  desc[FC_DESC_FRAMES] = b->frames;
  desc[FC_DESC_MAX_TOKENS] = b->max_tokens;
  desc[FC_DESC_IDS] = A(b->ids);
  desc[FC_DESC_ITEMS] = A(b->items);
  desc[FC_DESC_MEL_LENGTHS] = A(b->mel_lengths);
  desc[FC_DESC_MEL_STARTS] = A(b->mel_starts);
  desc[FC_DESC_SRC_FRAMES] = A(b->src_frames);
  desc[FC_DESC_MELS] = A(b->mels);
  desc[FC_DESC_MEL_DATA] = A(b->mel_data);
  desc[FC_DESC_TOKEN_LENGTHS] = A(b->token_lengths);
  desc[FC_DESC_TOKENS] = A(b->tokens);
  desc[FC_DESC_TOK_DATA] = A(b->tok_data);
  desc[FC_DESC_N_ERRORS] = b->n_errors;
  desc[FC_DESC_ERRORS] = A(b->errors);
  desc[FC_DESC_ID_TEXT] = A(b->id_text);
  desc[FC_DESC_ID_TEXT_LEN] = b->id_text_len;
#undef A
  /* the layout key: equal for two batches exactly when their arrays lie at the same addresses
   * with the same shapes (the same caller buffer, block inside it, same B, T, max tokens) */
  const ld_batch *lb = (const ld_batch *)b;
  if (lb->in_buf && lb->buf.index < 127 && b->size < (1u << 16) && b->frames < (1u << 24) &&
      b->max_tokens < (1u << 16))
    desc[FC_DESC_LAYOUT] = 1 | (uint64_t)lb->buf.index << 1 | (uint64_t)b->size << 8 |
                           (uint64_t)b->frames << 24 | (uint64_t)b->max_tokens << 48;
}

/* The next batch of the current epoch when a prefetch thread has built it already (never one
 * that failed: fc_loader_next reports that one); mu held. 1 and *out, else 0. */
static int take_ready_locked(fc_loader *l, ld_batch **out) {
  if (!l->n_threads || l->sticky || l->next_consume - l->base >= l->plan.n_batches) return 0;
  size_t slot = l->next_consume % l->o.prefetch_depth;
  if (!l->slot_ready[slot] || l->slot_err[slot] || !l->slots[slot]) return 0;
  ld_batch *b = l->slots[slot];
  l->slots[slot] = NULL;
  l->slot_ready[slot] = 0;
  l->next_consume++;
  if (b->buf.caller) l->held_caller++;
  *out = b;
  return 1;
}

int fc_loader_swap_descs(fc_loader *l, uint64_t *descs, size_t n) {
  FC_ARGS(l, descs || !n);
  /* no wakeup for the batches given back: the next below wakes the threads when fewer than two
   * batches are left ready, so a hand-off costs the caller no futex call while they are ahead */
  for (size_t i = 0; i < n; i++)
    if (descs[i * FC_DESC_LEN + FC_DESC_BATCH])
      release_batch(l, (ld_batch *)(uintptr_t)descs[i * FC_DESC_LEN + FC_DESC_BATCH], 0);
  if (n == 0) return 0;
  fc_batch *b = NULL;
  int rc = fc_loader_next(l, &b);
  fill_desc(b, descs);
  size_t got = b != NULL;
  if (got && n > 1) {
    ld_batch *lb;
    uint64_t left;
    pthread_mutex_lock(&l->mu);
    while (got < n && take_ready_locked(l, &lb)) fill_desc(&lb->pub, descs + FC_DESC_LEN * got++);
    left = l->plan.n_batches - (l->next_consume - l->base);
    pthread_mutex_unlock(&l->mu);
    if (got > 1) pthread_cond_broadcast(&l->cv_space); /* the window has room for them again */
    if (got < n) { /* after the taken: how many batches the epoch has left */
      memset(descs + FC_DESC_LEN * got, 0, FC_DESC_LEN * sizeof *descs);
      descs[FC_DESC_LEN * got + FC_DESC_INDEX] = left;
    }
  }
  for (size_t i = got ? got : 1; i < n; i++) descs[i * FC_DESC_LEN + FC_DESC_BATCH] = 0;
  return rc;
}
