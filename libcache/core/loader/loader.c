/* The loader: opening stores, choosing configs, building the index, random access.
 *
 * The index is built once at open from one read transaction per store: every utterance's feature
 * (and token) record is looked up and its header checked there, and the index keeps pointers to
 * the records in the map. The transactions stay open until close, so those pointers stay valid
 * and building a batch later is pure memory work: no LMDB call on the hot path, no transaction
 * shared between threads. Stores are shared between the loaders of one process (LMDB must not
 * open an environment twice in a process); see ld_reg. */
#include "libcache/core/loader/loader_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "featcache/fc_config.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"

void fc_loader_opts_init(fc_loader_opts *o) {
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
  if (stat(p, &st) != 0) return errno;
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

/* ---- small helpers ----------------------------------------------------------------------------- */
static int add_problem(fc_loader *l, uint32_t store, const char *id, size_t id_len,
                       const char *reason) {
  if (l->n_problems == l->cap_problems) {
    uint64_t cap = l->cap_problems ? l->cap_problems * 2 : 16;
    ld_problem *p = fc_realloc(l->problems, cap * sizeof *p);
    if (!p) return ENOMEM;
    l->problems = p;
    l->cap_problems = cap;
  }
  ld_problem *p = &l->problems[l->n_problems];
  p->id = fc_strndup(id, id_len);
  p->reason = fc_strdup(reason);
  p->store = store;
  if (!p->id || !p->reason) {
    free(p->id);
    free(p->reason);
    return ENOMEM;
  }
  l->n_problems++;
  return 0;
}

/* ---- the index --------------------------------------------------------------------------------- */
/* Check a record against what the loader expects. 0, or FC_EFORMAT/FC_ECHECKSUM with a reason. */
static int check_record(fc_loader *l, const void *val, size_t len, int tokens, const fc_digest *cfg,
                        fc_record_header *h, char *why, size_t why_len) {
  const void *payload;
  int rc = fc_record_parse(val, len, h, &payload, why, why_len);
  if (rc) return rc;
  if (memcmp(h->config.bytes, cfg->bytes, 16) != 0) {
    fc_why(why, why_len, "record carries another config digest");
    return FC_EFORMAT;
  }
  if (!tokens) {
    int want = l->mel_coded ? FC_DTYPE_MQ : l->mel_dtype;
    if (h->ndim != 2 || h->dim1 != l->n_mels || h->dtype != want) {
      fc_why(why, why_len, "record is %ux%u %s, the config says [frames][%u] %s", h->dim0, h->dim1,
             fc_dtype_name(h->dtype) ? fc_dtype_name(h->dtype) : "?", l->n_mels,
             fc_dtype_name(want));
      return FC_EFORMAT;
    }
    if (h->dim0 == 0) {
      fc_why(why, why_len, "record has 0 frames");
      return FC_EFORMAT;
    }
  } else {
    if (h->ndim != 1 ||
        (h->dtype != FC_DTYPE_I32 && h->dtype != FC_DTYPE_I16 && h->dtype != FC_DTYPE_U16)) {
      fc_why(why, why_len, "token record is not a 1-d integer array");
      return FC_EFORMAT;
    }
    if (l->tok_dtype && h->dtype != l->tok_dtype) {
      fc_why(why, why_len, "token record dtype %s differs from the others' %s",
             fc_dtype_name(h->dtype), fc_dtype_name(l->tok_dtype));
      return FC_EFORMAT;
    }
  }
  return 0;
}

/* Find id's records in store si. 0 and *it filled; FC_ENOTFOUND / FC_EFORMAT / FC_ECHECKSUM with
 * a reason; LMDB codes. The audio entry may be given (cursor walk) or looked up (aval NULL). */
static int find_records(fc_loader *l, uint32_t si, const char *id, size_t id_len, const void *aval,
                        size_t alen, ld_item *it, char *why, size_t why_len) {
  ld_store *st = &l->stores[si];
  fc_store *s = st->reg->s;
  MDB_val k, v;
  int rc;
  if (!aval) {
    k = (MDB_val){id_len, (void *)id};
    rc = mdb_get(st->txn, s->dbi[FC_DB_AUDIO], &k, &v);
    if (rc == MDB_NOTFOUND) {
      fc_why(why, why_len, "no audio entry");
      return FC_ENOTFOUND;
    }
    if (rc) return rc;
    aval = v.mv_data;
    alen = v.mv_size;
  }
  fc_audio_entry ae;
  if (fc_audio_entry_decode(aval, alen, &ae)) {
    fc_why(why, why_len, "corrupt audio entry");
    return FC_EFORMAT;
  }
  fc_digest key;
  fc_record_key(&ae.digest, &st->mel_cfg, &key);
  k = (MDB_val){16, key.bytes};
  rc = mdb_get(st->txn, s->dbi[FC_DB_FEAT], &k, &v);
  if (rc == MDB_NOTFOUND) {
    char hex[33];
    fc_digest_hex(&st->mel_cfg, hex);
    fc_why(why, why_len, "no features for config %s", hex);
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  fc_record_header h;
  char r[200];
  if ((rc = check_record(l, v.mv_data, v.mv_size, 0, &st->mel_cfg, &h, r, sizeof r))) {
    fc_why(why, why_len, "corrupt feature record: %s", r);
    return rc;
  }
  memset(it, 0, sizeof *it);
  it->mel_rec = v.mv_data;
  it->frames = h.dim0;
  it->store = si;
  if (!l->has_tokens) return 0;
  k = (MDB_val){id_len, (void *)id};
  rc = mdb_get(st->txn, s->dbi[FC_DB_TEXT], &k, &v);
  if (rc == MDB_NOTFOUND) {
    fc_why(why, why_len, "no text entry");
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  fc_digest td;
  if (fc_text_entry_decode(v.mv_data, v.mv_size, &td, NULL, NULL)) {
    fc_why(why, why_len, "corrupt text entry");
    return FC_EFORMAT;
  }
  fc_record_key(&td, &st->tok_cfg, &key);
  k = (MDB_val){16, key.bytes};
  rc = mdb_get(st->txn, s->dbi[FC_DB_TOK], &k, &v);
  if (rc == MDB_NOTFOUND) {
    char hex[33];
    fc_digest_hex(&st->tok_cfg, hex);
    fc_why(why, why_len, "no tokens for config %s", hex);
    return FC_ENOTFOUND;
  }
  if (rc) return rc;
  if ((rc = check_record(l, v.mv_data, v.mv_size, 1, &st->tok_cfg, &h, r, sizeof r))) {
    fc_why(why, why_len, "corrupt token record: %s", r);
    return rc;
  }
  it->tok_rec = v.mv_data;
  it->ntok = h.dim0;
  return 0;
}

static int add_item(fc_loader *l, const ld_item *it, const char *id, size_t id_len) {
  if (l->n_items == l->cap_items) {
    uint64_t cap = l->cap_items ? l->cap_items * 2 : 1024;
    ld_item *p = fc_realloc(l->items, cap * sizeof *p);
    if (!p) return ENOMEM;
    l->items = p;
    l->cap_items = cap;
  }
  if (l->ids_len + id_len + 1 > l->ids_cap || l->ids_len + id_len + 1 > UINT32_MAX) {
    size_t cap = l->ids_cap ? l->ids_cap * 2 : 65536;
    while (cap < l->ids_len + id_len + 1) cap *= 2;
    if (l->ids_len + id_len + 1 > UINT32_MAX) return FC_ETOOLONG;
    char *p = fc_realloc(l->ids, cap);
    if (!p) return ENOMEM;
    l->ids = p;
    l->ids_cap = cap;
  }
  ld_item *dst = &l->items[l->n_items++];
  *dst = *it;
  dst->id_off = (uint32_t)l->ids_len;
  memcpy(l->ids + l->ids_len, id, id_len);
  l->ids[l->ids_len + id_len] = '\0';
  l->ids_len += id_len + 1;
  if (it->tok_rec && !l->tok_dtype) l->tok_dtype = it->tok_rec[6];
  return 0;
}

/* Walk store si's audio db (and with tokens its text db) and append its utterances. */
static int index_store(fc_loader *l, uint32_t si, char *why, size_t why_len) {
  ld_store *st = &l->stores[si];
  fc_store *s = st->reg->s;
  int strict = (l->o.flags & FC_LOADER_STRICT) != 0;
  MDB_cursor *c;
  int rc = mdb_cursor_open(st->txn, s->dbi[FC_DB_AUDIO], &c);
  if (rc) return rc;
  MDB_val k, v;
  char r[300];
  for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    ld_item it;
    int e = find_records(l, si, k.mv_data, k.mv_size, v.mv_data, v.mv_size, &it, r, sizeof r);
    if (e == 0) {
      if ((rc = add_item(l, &it, k.mv_data, k.mv_size))) break;
      continue;
    }
    if (e != FC_ENOTFOUND && e != FC_EFORMAT && e != FC_ECHECKSUM) {
      rc = e;
      break;
    }
    if (strict) {
      fc_why(why, why_len, "%s: %.*s: %s", st->path, (int)k.mv_size, (const char *)k.mv_data, r);
      rc = e;
      break;
    }
    if ((rc = add_problem(l, si, k.mv_data, k.mv_size, r))) break;
  }
  mdb_cursor_close(c);
  if (rc != MDB_NOTFOUND) return rc;
  if (!l->has_tokens) return 0;
  /* texts whose utterance has no audio entry are missing their features */
  if ((rc = mdb_cursor_open(st->txn, s->dbi[FC_DB_TEXT], &c))) return rc;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    MDB_val k2 = k, v2;
    int e = mdb_get(st->txn, s->dbi[FC_DB_AUDIO], &k2, &v2);
    if (e == 0) continue;
    if (e != MDB_NOTFOUND) {
      rc = e;
      break;
    }
    if (strict) {
      fc_why(why, why_len, "%s: %.*s: text without audio entry", st->path, (int)k.mv_size,
             (const char *)k.mv_data);
      rc = FC_ENOTFOUND;
      break;
    }
    if ((rc = add_problem(l, si, k.mv_data, k.mv_size, "text without audio entry"))) break;
  }
  mdb_cursor_close(c);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int begin_txn(ld_store *st, MDB_txn **out) {
  fc_store *s = st->reg->s;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, out);
  if (rc == MDB_MAP_RESIZED) {
    /* Another process grew the map. Adopting the new size remaps, which is only safe while no
     * transaction of this process is open on the env: true when we are its only user. */
    pthread_mutex_lock(&reg_mu);
    int alone = st->reg->refs == 1;
    pthread_mutex_unlock(&reg_mu);
    if (!alone) return rc;
    pthread_rwlock_wrlock(&s->map_lock);
    rc = mdb_env_set_mapsize(s->env, 0);
    pthread_rwlock_unlock(&s->map_lock);
    if (!rc) rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, out);
  }
  return rc;
}

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
  if (o->prefetch_threads > 64) BAD("prefetch_threads %u > 64", o->prefetch_threads);
  if (o->prefetch_threads && o->prefetch_depth == 0) BAD("prefetch_depth 0 with prefetch threads");
  if (o->prefetch_depth > 1024) BAD("prefetch_depth %u > 1024", o->prefetch_depth);
  if (o->pad_to && o->crop_frames && o->crop_frames > o->pad_to)
    BAD("crop_frames %u > pad_to %u", o->crop_frames, o->pad_to);
  if (o->pad_to && o->output != FC_OUTPUT_PADDED)
    BAD("pad_to %u pads only padded batches (views cannot be padded): use the padded output, "
        "or crop_frames to crop views",
        o->pad_to);
  if ((o->flags & FC_LOADER_RANDOM_CROP) && (o->flags & FC_LOADER_CENTER_CROP))
    BAD("RANDOM_CROP and CENTER_CROP exclude each other");
  return 0;
#undef BAD
}

static int open_stores(const char *const *paths, size_t n, const fc_loader_opts *opts,
                       fc_loader **out, char *why, size_t why_len);

/* A split store (fc_store.h) is read as its parts: several stores as one dataset. */
int fc_loader_open(const char *const *paths, size_t n, const fc_loader_opts *opts, fc_loader **out,
                   char *why, size_t why_len) {
  *out = NULL;
  if (why && why_len) why[0] = '\0';
  char **all = NULL;
  size_t n_all = 0;
  int rc = fc_store_expand(paths, n, &all, &n_all, why, why_len);
  if (rc) return rc;
  rc = open_stores((const char *const *)all, n_all, opts, out, why, why_len);
  fc_store_paths_free(all, n_all);
  return rc;
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
    fc_why(why, why_len, "%s: %s", paths[0], fc_strerror(ENOMEM));
    return ENOMEM;
  }
  l->pid = getpid();
  l->o = *opts;
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
  unsigned sflags = FC_STORE_RDONLY;
  if (opts->flags & FC_LOADER_NOLOCK) sflags |= FC_STORE_NOLOCK;
  if (opts->flags & FC_LOADER_NORDAHEAD) sflags |= FC_STORE_NORDAHEAD;
  for (size_t i = 0; i < n; i++) {
    ld_store *st = &l->stores[i];
    l->n_stores = (uint32_t)i + 1;
    if (!(st->path = fc_strdup(paths[i]))) {
      rc = ENOMEM;
      goto fail;
    }
    if ((rc = reg_acquire(paths[i], sflags, &st->reg))) {
      fc_why(why, why_len, "%s: %s", paths[i], fc_strerror(rc));
      goto fail;
    }
    if ((rc = begin_txn(st, &st->txn))) {
      fc_why(why, why_len, "%s: %s", paths[i], fc_strerror(rc));
      goto fail;
    }
    MDB_dbi meta = st->reg->s->dbi[FC_DB_META];
    char *json = NULL;
    if ((rc = ld_resolve_config(st->txn, meta, st->path, l->o.features, 0, &st->mel_cfg, &json, why,
                                why_len)))
      goto fail;
    if (i == 0) {
      fc_mel_config mc;
      char r[200];
      if ((rc = fc_mel_config_from_json(json, strlen(json), &mc, r, sizeof r))) {
        fc_why(why, why_len, "%s: mel config: %s", st->path, r);
        free(json);
        goto fail;
      }
      l->n_mels = mc.n_mels;
      l->mel_coded = mc.dtype == FC_DTYPE_MQ;
      l->mel_dtype = fc_dtype_decoded(mc.dtype); /* batches hold decoded f32 for mq */
      if (isnan(l->o.pad_value)) {
        if (l->o.output == FC_OUTPUT_PADDED) {
          if ((rc = ld_resolve_pad_value(&mc, &l->o.pad_value, why, why_len))) {
            free(json);
            goto fail;
          }
        } else {
          l->o.pad_value = 0.0f; /* views are never padded */
        }
      }
      l->mel_dsize = fc_dtype_size(l->mel_dtype);
      l->mel_json = json;
    } else {
      free(json);
      if (memcmp(st->mel_cfg.bytes, l->stores[0].mel_cfg.bytes, 16) != 0) {
        fc_why(why, why_len, "%s: its mel config differs from %s's: give a digest", st->path,
               l->stores[0].path);
        rc = FC_ECONFIG;
        goto fail;
      }
    }
    if (l->has_tokens) {
      if ((rc = ld_resolve_config(st->txn, meta, st->path, l->o.tokens, 1, &st->tok_cfg, &json, why,
                                  why_len)))
        goto fail;
      if (i == 0) {
        l->tok_json = json;
      } else {
        free(json);
        if (memcmp(st->tok_cfg.bytes, l->stores[0].tok_cfg.bytes, 16) != 0) {
          fc_why(why, why_len, "%s: its token config differs from %s's: give a digest", st->path,
                 l->stores[0].path);
          rc = FC_ECONFIG;
          goto fail;
        }
      }
    }
  }
  if (!(opts->flags & FC_LOADER_LOOKUP_ONLY)) {
    for (uint32_t i = 0; i < l->n_stores; i++)
      if ((rc = index_store(l, i, why, why_len))) {
        if (why && why_len && !why[0])
          fc_why(why, why_len, "%s: %s", l->stores[i].path, fc_strerror(rc));
        goto fail;
      }
    if (l->tok_dtype) l->tok_dsize = fc_dtype_size(l->tok_dtype);
    if ((rc = fc_loader_set_epoch(l, 0))) {
      fc_why(why, why_len, "%s", l->err);
      goto fail;
    }
  }
  *out = l;
  return 0;
fail:
  if (why && why_len && !why[0]) /* out of memory on the way: name the store being opened */
    fc_why(why, why_len, "%s: %s", paths[l->n_stores ? l->n_stores - 1 : 0], fc_strerror(rc));
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
  for (uint32_t i = 0; i < l->n_stores; i++) {
    ld_store *st = &l->stores[i];
    if (same_process) {
      if (st->txn) mdb_txn_abort(st->txn);
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
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv_ready);
  pthread_cond_destroy(&l->cv_space);
  pthread_cond_destroy(&l->cv_idle);
  pthread_cond_destroy(&l->cv_buf);
  free(l->slot_ready);
  free(l);
}

int fc_loader_info_get(const fc_loader *l, fc_loader_info *info) {
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
  uint64_t T = ld_padded_frames(l, longest), rows;
  if (l->o.max_frames) {
    rows = l->o.max_frames > T ? l->o.max_frames : T;
    if (l->o.batch_size && rows > (uint64_t)l->o.batch_size * T)
      rows = (uint64_t)l->o.batch_size * T;
  } else {
    rows = (uint64_t)l->o.batch_size * T;
  }
  info->bound_batch_bytes = rows * l->n_mels * l->mel_dsize;
  if (info->bound_batch_bytes < info->max_batch_bytes)
    info->bound_batch_bytes = info->max_batch_bytes;
  if (l->o.batch_size && l->o.output == FC_OUTPUT_PADDED) {
    /* room for a whole batch: its block after the mels (build_batch, FC_DESC_LAYOUT) */
    size_t B = l->o.batch_size;
    size_t tok = l->has_tokens ? ld_align16(B * max_tok * l->tok_dsize) : 0;
    info->bound_batch_bytes =
        ld_align64(info->bound_batch_bytes) + ld_block(B, 0, tok, B * max_id).total;
  }
  return 0;
}

int fc_loader_problem(const fc_loader *l, uint64_t i, const char **id, const char **store,
                      const char **reason) {
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
  if (i >= l->n_stores) return FC_ENOTFOUND;
  if (l->pid != getpid()) return FC_EBADSTATE;
  /* data.mdb may be mapped more than once in a process (e.g. by Python's lmdb as well): take the
   * mapping that holds this loader's records (one of store i's), else the store's answer */
  for (uint64_t k = 0; k < l->n_items; k++)
    if (l->items[k].store == i && l->items[k].frames > 0) {
      const uint8_t *rec = l->items[k].mel_rec;
      if (mapping_of(rec, base, len) == 0) return 0;
      break;
    }
  return fc_store_map_region(l->stores[i].reg->s, base, len);
}

const char *fc_loader_config_json(const fc_loader *l, int which) {
  return which ? l->tok_json : l->mel_json;
}

const char *fc_loader_error(const fc_loader *l) { return l->err; }

int fc_loader_lookup(fc_loader *l, const char *id, fc_loader_item *out) {
  memset(out, 0, sizeof *out);
  if (l->pid != getpid()) return FC_EBADSTATE;
  size_t len = strlen(id);
  if (fc_id_check(id, len)) return FC_ENOTFOUND;
  pthread_mutex_lock(&l->lookup_mu);
  l->err[0] = '\0';
  int rc = FC_ENOTFOUND;
  char r[400];
  for (uint32_t i = 0; i < l->n_stores; i++) {
    ld_item it;
    rc = find_records(l, i, id, len, NULL, 0, &it, r, sizeof r);
    if (rc == FC_ENOTFOUND && strcmp(r, "no audio entry") == 0) continue;
    if (rc) {
      snprintf(l->err, sizeof l->err, "%s: %s: %s", l->stores[i].path, id, r);
      break;
    }
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
  if (rc == FC_ENOTFOUND && !l->err[0])
    snprintf(l->err, sizeof l->err, "%s: no such utterance", id);
  pthread_mutex_unlock(&l->lookup_mu);
  return rc;
}
