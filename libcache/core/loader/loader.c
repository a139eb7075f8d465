/* The loader: opening stores, choosing configs, building the index, random access.
 *
 * The index is built once at open from one read transaction per store: every utterance's feature
 * (and token) record is looked up and its header checked there, and the index keeps pointers to
 * the records in the map. The transactions stay open until close, so those pointers stay valid
 * and building a batch later is pure memory work: no LMDB call on the hot path, no transaction
 * shared between threads. Stores are shared between the loaders of one process (LMDB must not
 * open an environment twice in a process); see ld_reg. */
#include "libcache/core/loader/loader_int.h"
#include "formats/common/args.h"
#include "libcache/core/store/store_lock.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "featcache/fc_config.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"

void fc_loader_opts_init(fc_loader_opts *o) {
  FC_ARGS_OR(, o);
  memset(o, 0, sizeof *o);
  o->order = FC_ORDER_SEQUENTIAL;
  o->output = FC_OUTPUT_VIEWS;
  o->batch_size = 32;
  o->world_size = 1;
  o->shard = FC_SHARD_PAD;
  o->bucket_batches = 64;
  o->prefetch_threads = 2;
  o->prefetch_depth = 4;
  o->pad_value = NAN; /* the config's silence (ld_resolve_pad_value) */
}

/* ---- registry: one fc_store per data.mdb per process ----------------------------------------- */
typedef struct ld_reg {
  struct ld_reg *next;
  dev_t dev;
  ino_t ino;
  pid_t pid;
  fc_store *s;
  unsigned refs;
} ld_reg;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static ld_reg *reg_head;

static int reg_acquire(const char *dir, unsigned flags, ld_reg **out) {
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/data.mdb", dir) >= (int)sizeof p) return ENAMETOOLONG;
  if (stat(dir, &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  if (stat(p, &st) != 0) return errno == ENOENT ? FC_ENOSTORE : errno;
  pid_t pid = getpid();
  pthread_mutex_lock(&reg_mu);
  /* Entries inherited over fork belong to the parent: forget them, never close them here (closing
   * would clear the parent's reader slots in the shared lock table). */
  for (ld_reg **pp = &reg_head; *pp;) {
    if ((*pp)->pid != pid)
      *pp = (*pp)->next;
    else
      pp = &(*pp)->next;
  }
  ld_reg *r = reg_head;
  while (r && !(r->dev == st.st_dev && r->ino == st.st_ino)) r = r->next;
  int rc = 0;
  if (r) {
    r->refs++;
  } else if (!(r = fc_calloc(1, sizeof *r))) {
    rc = ENOMEM;
  } else if ((rc = fc_store_open(dir, flags, &r->s)) != 0) {
    free(r);
    r = NULL;
  } else {
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    r->pid = pid;
    r->refs = 1;
    r->next = reg_head;
    reg_head = r;
  }
  pthread_mutex_unlock(&reg_mu);
  *out = r;
  return rc;
}

static void reg_release(ld_reg *r) {
  if (!r) return;
  pthread_mutex_lock(&reg_mu);
  if (r->pid == getpid() && --r->refs == 0) {
    for (ld_reg **pp = &reg_head; *pp; pp = &(*pp)->next)
      if (*pp == r) {
        *pp = r->next;
        break;
      }
    fc_store_close(r->s);
    free(r);
  }
  pthread_mutex_unlock(&reg_mu);
}

/* A loader's snapshot: a read transaction kept open from open to close, whose pointers into the
 * map outlive every call (the index, views, lookups, and the arrays over them). It holds no lock,
 * but counts in s->pinned, so that no resize of the map (store_adopt_map) runs while it is open. A
 * map another process grew is adopted when no other is open (nor a transaction of this thread),
 * else MDB_MAP_RESIZED. */
static int pinned_begin(fc_store *s, MDB_txn **out) {
  *out = NULL;
  for (int tries = 0;; tries++) {
    pthread_rwlock_rdlock(&s->map_lock);
    int rc = store_txn_begin_read(s->env, out);
    if (!rc) atomic_fetch_add(&s->pinned, 1); /* before a resize could take the lock */
    pthread_rwlock_unlock(&s->map_lock);
    if (rc != MDB_MAP_RESIZED || tries == 4 || (rc = store_adopt_map(s)) != 0) {
      if (rc) *out = NULL;
      return rc;
    }
  }
}

static void pinned_end(fc_store *s, MDB_txn *txn) {
  if (!txn) return;
  store_txn_abort(txn);
  atomic_fetch_sub(&s->pinned, 1);
}

/* why a grown store cannot be read in this process now */
#define MAP_HELD                                                                                \
  " (written since this process mapped it, and the map cannot move while a loader of the "      \
  "store, an array of its batches or one featcache.get returned is held: let them go, or copy " \
  "them, and open it again)"

static int check_options(const fc_loader_opts *o, char *why, size_t why_len) {
#define BAD(...)                       \
  do {                                 \
    fc_why(why, why_len, __VA_ARGS__); \
    return FC_ECONFIG;                 \
  } while (0)
  if (o->order > FC_ORDER_LOCALITY) BAD("unknown order %u", o->order);
  if (o->output > FC_OUTPUT_PADDED) BAD("unknown output %u", o->output);
  if (o->shard > FC_SHARD_UNEVEN) BAD("unknown shard mode %u", o->shard);
  if (o->world_size == 0 || o->rank >= o->world_size)
    BAD("rank %u is not below world_size %u", o->rank, o->world_size);
  if (o->batch_size == 0 && o->max_frames == 0) BAD("batch_size 0 without max_frames");
  if (o->batch_offset && o->batch_offset >= o->batch_stride)
    BAD("batch_offset %u is not below batch_stride %u", o->batch_offset, o->batch_stride);
  if (o->prefetch_threads > 64) BAD("prefetch_threads %u > 64", o->prefetch_threads);
  if (o->prefetch_threads && o->prefetch_depth == 0) BAD("prefetch_depth 0 with prefetch threads");
  if (o->prefetch_depth > 1024) BAD("prefetch_depth %u > 1024", o->prefetch_depth);
  if (o->pad_to && o->crop_frames && o->crop_frames > o->pad_to)
    BAD("crop_frames %u > pad_to %u", o->crop_frames, o->pad_to);
  if (o->pad_to && o->output != FC_OUTPUT_PADDED)
    BAD("pad_to %u pads only padded batches (views cannot be padded): use the padded output, "
        "or crop_frames to crop views",
        o->pad_to);
  if (o->pad_multiple > 1 && o->output != FC_OUTPUT_PADDED)
    BAD("pad_multiple %u pads only padded batches (views cannot be padded): use the padded output",
        o->pad_multiple);
  if (o->pad_to && o->pad_multiple > 1 && o->pad_to % o->pad_multiple)
    BAD("pad_to %u is not a multiple of pad_multiple %u (pad_to fixes the padded frame count: "
        "give one of them)",
        o->pad_to, o->pad_multiple);
  /* a bit of no FC_LOADER_* flag (a program built against other headers, a typo'd mask) would
   * otherwise be ignored, and the reading it asked for silently not done */
  const unsigned known = (unsigned)FC_LOADER_CHECK_PAGES * 2 - 1;
  if (o->flags & ~known)
    BAD("flags 0x%x holds bits no FC_LOADER_* flag of this library has: 0x%x", o->flags,
        o->flags & ~known);
  if ((o->flags & FC_LOADER_RANDOM_CROP) && (o->flags & FC_LOADER_CENTER_CROP))
    BAD("RANDOM_CROP and CENTER_CROP exclude each other");
  return 0;
#undef BAD
}

static int open_stores(const char *const *paths, size_t n, const fc_loader_opts *opts,
                       fc_loader **out, char *why, size_t why_len);

/* Store st resolved the selector to another config than the first store: say which two, and
 * whether st holds the first store's too (its digest then chooses it in both). */
static void config_mismatch(const ld_store *st, const ld_store *first, MDB_dbi meta, int tokens,
                            char *why, size_t why_len) {
  char h0[33], h1[33], r[256];
  fc_digest_hex(tokens ? &first->tok_cfg : &first->mel_cfg, h0);
  fc_digest_hex(tokens ? &st->tok_cfg : &st->mel_cfg, h1);
  fc_digest d;
  char *json = NULL;
  int has = ld_resolve_config(st->txn, meta, st->path, h0, tokens, &d, &json, r, sizeof r) == 0;
  free(json);
  const char *kind = tokens ? "token" : "mel", *opt = tokens ? "tokens" : "features";
  if (has)
    fc_why(why, why_len,
           "%s: its %s config is %s, %s's is %s, which it holds too: choose it by "
           "digest (%s %s)",
           FC_WHY_NAME(st->path), kind, h1, FC_WHY_NAME(first->path), h0, opt, h0);
  else
    fc_why(why, why_len,
           "%s: its %s config is %s, %s's is %s, which it does not hold: stores "
           "read as one dataset need the same %s config",
           FC_WHY_NAME(st->path), kind, h1, FC_WHY_NAME(first->path), h0, kind);
}

/* No entries and no records in any of st's dbs: an empty shard (a --shard K/N that no id of
 * the manifest hashes to, a split store's part that no id is routed to). 0 or 1. */
static int store_is_empty(const ld_store *st) {
  static const int dbs[] = {FC_DB_AUDIO, FC_DB_TEXT, FC_DB_FEAT, FC_DB_TOK};
  for (size_t k = 0; k < sizeof dbs / sizeof dbs[0]; k++) {
    MDB_stat ms;
    if (mdb_stat(st->txn, st->reg->s->dbi[dbs[k]], &ms) != 0 || ms.ms_entries) return 0;
  }
  return 1;
}

/* A split store (fc_store.h) is read as its parts: several stores as one dataset. */
int fc_loader_open(const char *const *paths, size_t n, const fc_loader_opts *opts, fc_loader **out,
                   char *why, size_t why_len) {
  FC_ARGS_WHY(out, paths || !n);
  *out = NULL;
  if (why && why_len) why[0] = '\0';
  FC_ARGS_EACH_WHY(paths, n);
  char **all = NULL;
  size_t n_all = 0;
  int rc = fc_store_expand(paths, n, &all, &n_all, why, why_len);
  if (rc) return rc;
  for (size_t i = 0; i < n_all && !rc && opts && (opts->flags & FC_LOADER_CHECK_PAGES); i++)
    rc = ld_check_pages(all[i], (opts->flags & FC_LOADER_NOLOCK) != 0, opts->stop, why, why_len);
  if (!rc) rc = open_stores((const char *const *)all, n_all, opts, out, why, why_len);
  fc_store_paths_free(all, n_all);
  return rc;
}

/* The ids of the options' subset (manifest, ids) that no store holds: each a problem, "not
 * stored" or the failure featurize recorded for it; then the manifest's refused lines that name
 * an id; with STRICT the first fails the open. */
static int subset_problems(fc_loader *l, char *why, size_t why_len) {
  char r[400];
  size_t i = 0;
  for (const char *id; (id = ld_subset_unseen(l, &i));) {
    uint32_t s = ld_recorded_failure(l, id, strlen(id), "not stored", r, sizeof r);
    if (s == l->n_stores) {
      s = 0; /* no store to name: the first */
      fc_why(r, sizeof r, "not stored: %s, in none of the stores", ld_subset_source(l, i));
    }
    if (l->o.flags & FC_LOADER_STRICT) { /* store: id: reason, as the index's refusals say */
      fc_why(why, why_len, "%s: %s: %s", FC_WHY_NAME(l->stores[s].path), FC_WHY_NAME(id), r);
      return FC_ENOTFOUND;
    }
    int rc = ld_add_problem(l, s, id, strlen(id), r);
    if (rc) return rc;
  }
  /* a line featurize refuses names its id, yet says nothing true of it (a record stored under it
   * may be another cut of the file): skipped, as cache-verify skips it, and said */
  i = 0;
  for (const fc_item *it; (it = ld_subset_refused(l, &i));) {
    fc_why(r, sizeof r, "not read: manifest line %zu skipped: %s", it->line,
           it->why ? it->why : fc_strerror(it->err));
    if (l->o.flags & FC_LOADER_STRICT) {
      fc_why(why, why_len, "%s: %s: %s", FC_WHY_NAME(l->stores[0].path), FC_WHY_NAME(it->id), r);
      return FC_ENOTFOUND;
    }
    int rc = ld_add_problem(l, 0, it->id, strlen(it->id), r);
    if (rc) return rc;
  }
  return 0;
}

static int open_stores(const char *const *paths, size_t n, const fc_loader_opts *opts,
                       fc_loader **out, char *why, size_t why_len) {
  fc_loader_opts defaults;
  if (!opts) {
    fc_loader_opts_init(&defaults);
    opts = &defaults;
  }
  if (n == 0 || n > UINT32_MAX) {
    fc_why(why, why_len, "no store given");
    return EINVAL;
  }
  int rc = check_options(opts, why, why_len);
  if (rc) return rc;
  fc_loader *l = fc_calloc(1, sizeof *l);
  if (!l) {
    fc_why(why, why_len, "%s: %s", FC_WHY_NAME(paths[0]), fc_strerror(ENOMEM));
    return ENOMEM;
  }
  l->pid = getpid();
  static uint64_t serials;
  l->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
  l->o = *opts;
  l->o.ids = NULL, l->o.n_ids = 0; /* read at open only (ld_subset_begin): not kept */
  l->o.stop = NULL; /* read by the open's page check only: the flag need not outlive the open */
  if (l->o.locality_run == 0) l->o.locality_run = 16 * (l->o.batch_size ? l->o.batch_size : 32);
  if (l->o.bucket_batches == 0) l->o.bucket_batches = 1;
  if (l->o.prefetch_depth == 0) l->o.prefetch_depth = 1;
  if (opts->flags & FC_LOADER_NO_WILLNEED)
    l->willneed = 0;
  else if (opts->flags & FC_LOADER_WILLNEED)
    l->willneed = 1;
  else
    l->willneed =
        (opts->flags & FC_LOADER_NORDAHEAD) != 0; /* docs/BENCHMARKS.md, the loader section */
  pthread_mutex_init(&l->lookup_mu, NULL);
  pthread_mutex_init(&l->resolve_mu, NULL);
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv_ready, NULL);
  pthread_cond_init(&l->cv_space, NULL);
  pthread_cond_init(&l->cv_idle, NULL);
  pthread_cond_init(&l->cv_buf, NULL);
  l->features_sel = opts->features ? fc_strdup(opts->features) : NULL;
  l->tokens_sel = opts->tokens ? fc_strdup(opts->tokens) : NULL;
  l->o.features = l->features_sel;
  l->o.tokens = l->tokens_sel;
  l->has_tokens = opts->tokens != NULL;
  l->stores = fc_calloc(n, sizeof *l->stores);
  if (!l->stores || (opts->features && !l->features_sel) || (opts->tokens && !l->tokens_sel)) {
    rc = ENOMEM;
    goto fail;
  }
  /* opened without read-ahead, for a page at a time while opening (ld_advise_open) */
  size_t ref = n; /* the first store that is not empty: its configs are the dataset's */
  int any_full = 0;
  /* with headroom: a writer's growth of the store is read by the next loader of the process (and
   * fc_loader_refresh) without moving the map under the snapshots open */
  unsigned sflags = FC_STORE_RDONLY | FC_STORE_NORDAHEAD | STORE_OPEN_HEADROOM;
  if (opts->flags & FC_LOADER_NOLOCK) sflags |= FC_STORE_NOLOCK;
  for (size_t i = 0; i < n; i++) {
    ld_store *st = &l->stores[i];
    l->n_stores = (uint32_t)i + 1;
    if (!(st->path = fc_strdup(paths[i]))) {
      rc = ENOMEM;
      goto fail;
    }
    if ((rc = reg_acquire(paths[i], sflags, &st->reg))) {
      char split[4096];
      const int unwritten = rc == EACCES ? 0 : store_part_unwritten(paths[i], split, sizeof split);
      if (unwritten) /* its writer stopped before making it, or before its first commit */
        fc_why(why, why_len,
               "%s: %s (its writer stopped before %s?): its utterances are not stored; featurize "
               "(or tokenize) -o %s again %s",
               FC_WHY_NAME(paths[i]),
               unwritten == 1 ? "a missing part of a split store"
                              : "an empty part of a split store: nothing was ever committed to it",
               unwritten == 1 ? "making it" : "its first commit", FC_WHY_NAME(split),
               unwritten == 1 ? "makes it" : "mends it");
      else if (rc == FC_EFORMAT && store_env_unwritten(paths[i])) /* as the tools say it */
        fc_why(why, why_len,
               "%s: an empty store: nothing was ever committed to it (its writer stopped before "
               "its first commit?): it holds no utterance; featurize (or tokenize) -o %s stores "
               "them",
               FC_WHY_NAME(paths[i]), FC_WHY_NAME(paths[i]));
      else if (rc == FC_EFORMAT) /* a data.mdb that is damaged, or another program's LMDB */
        fc_why(why, why_len,
               "%s: FC_EFORMAT: not a featcache store (not an LMDB environment with featcache/1 "
               "meta: damaged, or another program's); cache-verify %s says what it holds",
               FC_WHY_NAME(paths[i]), FC_WHY_NAME(paths[i]));
      else if (rc == EACCES && !(sflags & FC_STORE_NOLOCK) && store_lock_unwritable(paths[i]))
        fc_why(why, why_len,
               "%s: " STORE_LOCK_UNWRITABLE
               "; open it with nolock (FC_LOADER_NOLOCK, "
               "nolock=True) when no one writes it meanwhile",
               FC_WHY_NAME(paths[i]));
      else
        fc_why(why, why_len, "%s: %s", FC_WHY_NAME(paths[i]), fc_strerror(rc));
      goto fail;
    }
    st->s = st->reg->s;
    if (fc_store_map_region(st->s, &st->map, &st->map_len) == 0)
      madvise((void *)st->map, st->map_len, MADV_RANDOM); /* (a store another loader opened) */
    else
      st->map = NULL;
    /* indexes another process made since this process opened the store: their handles must
     * exist before the transaction begins for it to read them */
    if ((rc = store_index_refresh(st->reg->s)) || (rc = pinned_begin(st->s, &st->txn))) {
      fc_why(why, why_len, "%s: %s%s", FC_WHY_NAME(paths[i]), fc_strerror(rc),
             rc == MDB_MAP_RESIZED ? MAP_HELD : "");
      goto fail;
    }
    st->empty = n > 1 && store_is_empty(st);
    any_full |= !st->empty;
  }
  /* among several stores an empty one is an empty shard (as cache-verify and cache-bench take
   * it): it needs no config, and gets the dataset's below; one store, or all, empty: each is
   * read as it is (no config: refused, as before) */
  for (size_t i = 0; i < n && !any_full; i++) l->stores[i].empty = 0;
  for (size_t i = 0; i < n; i++) {
    ld_store *st = &l->stores[i];
    if (st->empty) continue;
    MDB_dbi meta = st->reg->s->dbi[FC_DB_META];
    char *json = NULL;
    if ((rc = ld_resolve_config(st->txn, meta, st->path, l->o.features, 0, &st->mel_cfg, &json, why,
                                why_len)))
      goto fail;
    if (ref == n) {
      fc_mel_config mc;
      char r[200];
      if ((rc = fc_mel_config_from_json(json, strlen(json), &mc, r, sizeof r))) {
        fc_why(why, why_len, "%s: mel config: %s", FC_WHY_NAME(st->path), r);
        free(json);
        goto fail;
      }
      l->n_mels = mc.n_mels;
      l->mel_coded = mc.dtype == FC_DTYPE_MQ;
      l->mel_dtype = fc_dtype_decoded(mc.dtype); /* batches hold decoded f32 for mq */
      if (isnan(l->o.pad_value)) {
        if (l->o.output == FC_OUTPUT_PADDED) {
          char pw[256] = "";
          if ((rc = ld_resolve_pad_value(&mc, &l->o.pad_value, pw, sizeof pw))) {
            fc_why(why, why_len, "%s: %s", FC_WHY_NAME(st->path), pw); /* the store it is of */
            free(json);
            goto fail;
          }
        } else if (ld_resolve_pad_value(&mc, &l->o.pad_value, NULL, 0)) {
          /* views are never padded, but info says the silence to a caller padding them itself;
           * where it depends on each utterance (whisper) there is none: NAN */
          l->o.pad_value = NAN;
        }
      }
      l->mel_dsize = fc_dtype_size(l->mel_dtype);
      l->mel_json = json;
    } else {
      free(json);
      if (memcmp(st->mel_cfg.bytes, l->stores[ref].mel_cfg.bytes, 16) != 0) {
        config_mismatch(st, &l->stores[ref], meta, 0, why, why_len);
        rc = FC_ECONFIG;
        goto fail;
      }
    }
    if (l->has_tokens) {
      if ((rc = ld_resolve_config(st->txn, meta, st->path, l->o.tokens, 1, &st->tok_cfg, &json, why,
                                  why_len)))
        goto fail;
      if (ref == n) {
        l->tok_json = json;
      } else {
        free(json);
        if (memcmp(st->tok_cfg.bytes, l->stores[ref].tok_cfg.bytes, 16) != 0) {
          config_mismatch(st, &l->stores[ref], meta, 1, why, why_len);
          rc = FC_ECONFIG;
          goto fail;
        }
      }
    }
    if (ref == n) ref = i;
  }
  if (!(opts->flags & FC_LOADER_LOOKUP_ONLY) && (rc = ld_check_set(l, why, why_len))) goto fail;
  for (size_t i = 0; i < n; i++)
    if (l->stores[i].empty) {
      l->stores[i].mel_cfg = l->stores[ref].mel_cfg;
      l->stores[i].tok_cfg = l->stores[ref].tok_cfg;
    }
  if (!(opts->flags & FC_LOADER_LOOKUP_ONLY)) {
    if ((rc = ld_subset_begin(l, opts, why, why_len))) goto fail;
    for (uint32_t i = 0; i < l->n_stores; i++) {
      if (l->stores[i].empty) continue; /* nothing to index */
      int used = 0;
      rc = ld_index_store(l, i, &used, why, why_len);
      if (!rc && !used) rc = ld_index_store_lookups(l, i, why, why_len);
      if (rc) {
        if (why && why_len && !why[0])
          fc_why(why, why_len, "%s: %s", FC_WHY_NAME(l->stores[i].path), fc_strerror(rc));
        goto fail;
      }
    }
    if ((rc = ld_drop_duplicates(l)) || (rc = subset_problems(l, why, why_len))) goto fail;
    ld_subset_free(l);
    l->o.manifest = NULL; /* read at open only: not kept */
    if (l->tok_dtype) l->tok_dsize = fc_dtype_size(l->tok_dtype);
    if ((rc = fc_loader_set_epoch(l, 0))) {
      fc_why(why, why_len, "%s", l->err);
      goto fail;
    }
    /* the first batch's records found and checked while reads are a page each, and its
     * payloads asked for, exactly (madvise WILLNEED, adjacent records in one request): the
     * store's read-around (read_ahead_kb around each fault) would read that much around each of
     * them, in a shuffled order a window per record (32 x 8 MiB for a batch of 32 here) */
    char **bad = NULL;
    int *bad_rc = NULL;
    if (l->plan.n_batches && ld_resolve_batch(l, &l->plan, 0, &bad, &bad_rc) == 0) {
      ld_bad_free(bad, bad_rc, l->plan.bstart[1]);
      ld_hint_batch(l, &l->plan, 0);
    }
    ld_advise_open(l, 0);
  }
  *out = l;
  return 0;
fail:
  ld_advise_open(l, 0);
  if (why && why_len && !why[0]) /* out of memory on the way: name the store being opened */
    fc_why(why, why_len, "%s: %s", FC_WHY_NAME(paths[l->n_stores ? l->n_stores - 1 : 0]),
           fc_strerror(rc));
  fc_loader_close(l);
  return rc;
}

void fc_loader_close(fc_loader *l) {
  if (!l) return;
  int same_process = l->pid == getpid();
  if (same_process) ld_threads_stop(l);
  ld_drop_ready(l);
  ld_bufs_free(l);
  ld_plan_free(&l->plan);
  ld_plan_free(&l->ahead);
  ld_subset_free(l);
  for (uint32_t i = 0; i < l->n_stores; i++) {
    ld_store *st = &l->stores[i];
    if (same_process) {
      pinned_end(st->s, st->txn);
      reg_release(st->reg);
    }
    free(st->path);
  }
  for (uint64_t i = 0; i < l->n_problems; i++) {
    free(l->problems[i].id);
    free(l->problems[i].reason);
  }
  free(l->problems);
  free(l->stores);
  free(l->items);
  free(l->ids);
  free(l->mel_json);
  free(l->tok_json);
  free(l->features_sel);
  free(l->tokens_sel);
  free(l->slots);
  free(l->slot_err);
  free(l->slot_why);
  pthread_mutex_destroy(&l->lookup_mu);
  pthread_mutex_destroy(&l->resolve_mu);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv_ready);
  pthread_cond_destroy(&l->cv_space);
  pthread_cond_destroy(&l->cv_idle);
  pthread_cond_destroy(&l->cv_buf);
  free(l->slot_ready);
  free(l);
}

int fc_loader_info_get(const fc_loader *l, fc_loader_info *info) {
  FC_ARGS(l, info);
  memset(info, 0, sizeof *info);
  info->items = l->n_items;
  info->skipped = l->n_problems;
  info->epoch_items = l->plan.n_order;
  info->epoch_batches = l->plan.n_batches;
  info->max_batch_bytes = l->plan.max_batch_bytes;
  info->n_mels = l->n_mels;
  info->mel_dtype = l->mel_dtype;
  info->tok_dtype = l->tok_dtype;
  if (l->n_stores) {
    info->mel_config = l->stores[0].mel_cfg;
    info->tok_config = l->stores[0].tok_cfg;
  }
  info->n_stores = l->n_stores;
  info->pad_value = l->o.pad_value;
  /* the largest buffer any epoch can need: the batch cap times the longest cropped length */
  uint32_t longest = 0, max_tok = 0;
  size_t max_id = 0;
  for (uint64_t i = 0; i < l->n_items; i++) {
    uint32_t len = ld_crop_len(l, &l->items[i]);
    if (len > longest) longest = len;
    if (l->items[i].ntok > max_tok) max_tok = l->items[i].ntok;
    size_t idl = strlen(l->ids + l->items[i].id_off) + 1;
    if (idl > max_id) max_id = idl;
  }
  /* no batch holds more rows than there are utterances: a cap above them (one batch of
   * everything) must not ask the caller for buffers of cap x T */
  uint64_t cap = l->o.batch_size;
  if (l->n_items < cap) cap = l->n_items ? l->n_items : 1;
  uint64_t T = ld_padded_frames(l, longest), rows;
  if (l->o.max_frames) {
    rows = l->o.max_frames > T ? l->o.max_frames : T;
    uint64_t most = (l->o.batch_size ? cap : (l->n_items ? l->n_items : 1)) * T;
    if (rows > most) rows = most;
  } else {
    rows = cap * T;
  }
  info->bound_batch_bytes = rows * l->n_mels * l->mel_dsize;
  if (info->bound_batch_bytes < info->max_batch_bytes)
    info->bound_batch_bytes = info->max_batch_bytes;
  if (l->o.batch_size && l->o.output == FC_OUTPUT_PADDED) {
    /* room for a whole batch: its block after the mels (build_batch, FC_DESC_LAYOUT) */
    size_t B = cap;
    size_t tok = l->has_tokens ? ld_align16(B * max_tok * l->tok_dsize) : 0;
    info->bound_batch_bytes =
        ld_align64(info->bound_batch_bytes) + ld_block(B, 0, tok, B * max_id).total;
  }
  return 0;
}

int fc_loader_problem(const fc_loader *l, uint64_t i, const char **id, const char **store,
                      const char **reason) {
  FC_ARGS(l);
  if (i >= l->n_problems) return FC_ENOTFOUND;
  if (id) *id = l->problems[i].id;
  if (store) *store = l->stores[l->problems[i].store].path;
  if (reason) *reason = l->problems[i].reason;
  return 0;
}

/* The mapping of /proc/self/maps that holds address p: 0, or FC_ENOTFOUND. */
static int mapping_of(const void *p, const void **base, size_t *len) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return errno;
  char line[4608];
  int rc = FC_ENOTFOUND;
  uintptr_t a = (uintptr_t)p;
  while (rc && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= a && a < hi) {
      *base = (const void *)lo;
      *len = hi - lo;
      rc = 0;
    }
  }
  fclose(f);
  return rc;
}

int fc_loader_map_region(const fc_loader *l, uint32_t i, const void **base, size_t *len) {
  FC_ARGS(l, base, len);
  if (i >= l->n_stores) return FC_ENOTFOUND;
  if (l->pid != getpid()) return FC_EBADSTATE;
  /* data.mdb may be mapped more than once in a process (e.g. by Python's lmdb as well): take the
   * mapping that holds this loader's records (one of store i's), else the store's answer */
  for (uint64_t k = 0; k < l->n_items; k++)
    if (l->items[k].store == i && l->items[k].frames > 0) {
      const uint8_t *rec;
      size_t rec_len;
      pthread_mutex_lock(&((fc_loader *)l)->resolve_mu);
      int e = ld_locate((fc_loader *)l, &l->items[k], &rec, &rec_len);
      pthread_mutex_unlock(&((fc_loader *)l)->resolve_mu);
      if (!e && mapping_of(rec, base, len) == 0) return 0;
      break;
    }
  return fc_store_map_region(l->stores[i].reg->s, base, len);
}

const char *fc_loader_config_json(const fc_loader *l, int which) {
  FC_ARGS_OR(NULL, l);
  return which ? l->tok_json : l->mel_json;
}

const char *fc_loader_error(const fc_loader *l) {
  FC_ARGS_OR(fc_last_error(), l);
  return ld_lookup_serial == l->serial ? ld_lookup_why : l->err;
}

int fc_loader_lookup(fc_loader *l, const char *id, fc_loader_item *out) {
  FC_ARGS(l, id, out);
  memset(out, 0, sizeof *out);
  if (l->pid != getpid() || l->refresh_failed) return FC_EBADSTATE;
  size_t len = strlen(id);
  char *err = ld_lookup_why; /* this thread's: fc_loader_error */
  const size_t err_len = sizeof ld_lookup_why;
  ld_lookup_serial = l->serial;
  err[0] = '\0';
  pthread_mutex_lock(&l->lookup_mu);
  if (fc_id_check(id, len)) { /* no store holds it: said, not an earlier lookup's reason */
    snprintf(err, err_len, "not an id a store can hold (1 to %d bytes of UTF-8, no CR or LF)",
             FC_ID_MAX);
    pthread_mutex_unlock(&l->lookup_mu);
    return FC_ENOTFOUND;
  }
  int rc = FC_ENOTFOUND, first = 0;
  char r[400];
  for (uint32_t i = 0; i < l->n_stores; i++) {
    ld_item it;
    pthread_mutex_lock(&l->resolve_mu); /* the transactions are the batch builders' too */
    rc = ld_find_records(l, i, id, len, NULL, 0, &it, r, sizeof r);
    pthread_mutex_unlock(&l->resolve_mu);
    if (rc == FC_ENOTFOUND && strcmp(r, "no audio entry") == 0) {
      rc = first ? first : rc;
      continue;
    }
    if (rc == FC_ENOTFOUND || rc == FC_EFORMAT || rc == FC_ECHECKSUM) {
      /* a later store may hold the records (as the index serves them): the first store's
       * reason is the answer only when none does */
      if (!first) {
        first = rc;
        fc_why(err, err_len, "%s: %s: %s", FC_WHY_NAME(l->stores[i].path), FC_WHY_NAME(id), r);
      }
      rc = first;
      continue;
    }
    if (rc) {
      fc_why(err, err_len, "%s: %s: %s", FC_WHY_NAME(l->stores[i].path), FC_WHY_NAME(id), r);
      break;
    }
    err[0] = '\0';
    out->mel = it.mel_rec + FC_RECORD_HEADER_SIZE;
    out->frames = it.frames;
    out->n_mels = l->n_mels;
    out->mel_dtype = l->mel_coded ? FC_DTYPE_MQ : l->mel_dtype;
    out->mel_bytes = ld_mel_bytes(l, &it);
    if (it.tok_rec) {
      out->tokens = it.tok_rec + FC_RECORD_HEADER_SIZE;
      out->n_tokens = it.ntok;
      out->tok_dtype = it.tok_rec[6];
    }
    break;
  }
  if (rc == FC_ENOTFOUND && !err[0]) {
    /* no store has its entry: featurize may have failed it, and recorded why */
    pthread_mutex_lock(&l->resolve_mu);
    uint32_t s = ld_recorded_failure(l, id, len, "not stored", r, sizeof r);
    pthread_mutex_unlock(&l->resolve_mu);
    if (s < l->n_stores)
      fc_why(err, err_len, "%s: %s: %s", FC_WHY_NAME(l->stores[s].path), FC_WHY_NAME(id), r);
    else if (l->n_stores == 1) /* named with its store, as a recorded failure is */
      fc_why(err, err_len, "%s: %s: no such utterance", FC_WHY_NAME(l->stores[0].path),
             FC_WHY_NAME(id));
    else
      fc_why(err, err_len, "%s: no such utterance in any of the %u stores", FC_WHY_NAME(id),
             (unsigned)l->n_stores);
  }
  pthread_mutex_unlock(&l->lookup_mu);
  return rc;
}

int fc_loader_refresh(fc_loader *l) {
  FC_ARGS(l);
  ld_not_lookup(l);
  if (l->pid != getpid() || l->refresh_failed) return FC_EBADSTATE;
  if (!(l->o.flags & FC_LOADER_LOOKUP_ONLY)) return FC_ECONFIG; /* the index is of its snapshot */
  int rc = 0;
  pthread_mutex_lock(&l->lookup_mu);
  pthread_mutex_lock(&l->resolve_mu);
  l->err[0] = '\0';
  for (uint32_t i = 0; i < l->n_stores && !rc; i++) {
    ld_store *st = &l->stores[i];
    /* lock.mdb names the snapshot a reader takes, and the newest in data.mdb is that one but
     * while a writer is between its two steps of a commit (a few tries), or when data.mdb was
     * written over in place, not by LMDB: its snapshots are of another history, which only a new
     * environment reads as they are */
    for (int tries = 0; tries < 8; tries++) {
      pinned_end(st->s, st->txn); /* first: a grown map is adopted only when none is open */
      st->txn = NULL;
      if ((rc = pinned_begin(st->s, &st->txn))) {
        fc_why(l->err, sizeof l->err, "%s: %s%s", FC_WHY_NAME(st->path), fc_strerror(rc),
               rc == MDB_MAP_RESIZED ? MAP_HELD : "");
        break;
      }
      MDB_envinfo ei;
      rc = mdb_env_info(st->s->env, &ei);
      if (!rc && ei.me_last_txnid == mdb_txn_id(st->txn)) {
        st->map = NULL; /* (it may have moved; only an open uses it, and reading it is a file) */
        break;
      }
      rc = rc ? rc : ESTALE;
      fc_why(l->err, sizeof l->err,
             "%s: data.mdb's newest snapshot is not the one lock.mdb names (written over in "
             "place?): open the store anew",
             FC_WHY_NAME(st->path));
    }
  }
  if (rc) l->refresh_failed = 1;
  pthread_mutex_unlock(&l->resolve_mu);
  pthread_mutex_unlock(&l->lookup_mu);
  return rc;
}
