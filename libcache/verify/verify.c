/* cache-verify's engine: every check a store must pass before a training run (fc_verify.h).
 *
 * Order matters for safety: LMDB trusts its pages, so before any B-tree page is touched the file
 * is checked to be as long as its last committed page (a truncated data.mdb would otherwise SIGBUS
 * on the first page past the end), and every value is checked to lie inside the file before its
 * bytes are read. Records are checked in parallel over 256 key ranges per db (keys are uniform
 * hashes, so the ranges are balanced), one read transaction per thread (MDB_NOTLS). */
#include "featcache/fc_verify.h"

#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_store.h"
#include "libcache/store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define WHY(...) do { if (why && why_len) snprintf(why, why_len, __VA_ARGS__); } while (0)

enum { DB_ENV = FC_DB_COUNT, DB_MANIFEST = FC_DB_COUNT + 1 };
static const char *const finding_db_names[] = {"meta", "audio", "text", "feat", "tok", "env",
                                               "manifest"};
/* Report order: the environment first, then meta, entries, records, the manifest. */
static const int db_rank[] = {1, 2, 3, 4, 5, 0, 6};

enum { KIND_MEL = 1, KIND_TOK = 2 };

typedef struct vcfg {
  fc_digest digest;
  char hex[33];
  int kind;            /* KIND_MEL / KIND_TOK, 0 when the JSON could not be read */
  int usable;          /* mel: parsed and valid, so frame counts and dims can be checked */
  int expected;        /* every entry of its kind must have a record */
  fc_mel_config mel;
  char label[64];      /* preset or tokenizer name for messages ("" when none) */
  int tok_dtype;       /* token config's dtype when stated, else 0 */
} vcfg;

typedef struct ventry {
  const char *id;      /* into the main transaction's map: valid while it lives */
  size_t id_len;
  const void *val;
  size_t val_len;
  int ok;              /* decoded */
} ventry;

typedef struct vexp {   /* one (entry, config) pair: the key its record must have */
  uint8_t key[16];
  uint32_t entry;
  uint16_t cfg;
  uint8_t db;          /* FC_DB_FEAT / FC_DB_TOK */
  uint8_t pad;
} vexp;

typedef struct vctx {
  const fc_verify_opts *o;
  fc_verify_report *r;
  fc_store *s;
  pthread_mutex_t mu;
  size_t cap;
  volatile int halt;   /* max_errors reached or stop seen */
  uint64_t max_warnings;
  vcfg *cfgs;
  size_t n_cfgs;
  ventry *audio, *text;
  size_t n_audio, n_text;
  vexp *exp;
  size_t n_exp;
  const uint8_t *map_lo, *map_hi; /* values must lie in [lo, hi): the file's bytes */
  uint64_t bytes_done;            /* for progress, updated atomically */
  uint64_t bytes_total;
  double t0;
} vctx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int stopping(vctx *c) {
  if (c->halt) return 1;
  if (c->o->stop && *c->o->stop) {
    c->halt = 1;
    return 1;
  }
  return 0;
}

/* Printable copy of an id or meta key: bytes outside printable ASCII/UTF-8 become \xNN. */
static char *printable(const char *s, size_t len) {
  int utf8 = fc_utf8_valid(s, len);
  char *out = malloc(len * 4 + 1), *q = out;
  if (!out) return NULL;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x20 || ch == 0x7f || (ch >= 0x80 && !utf8) || ch == '\\')
      q += sprintf(q, "\\x%02x", ch);
    else
      *q++ = (char)ch;
  }
  *q = '\0';
  return out;
}

static void hex16(const void *k, char out[33]) {
  fc_digest d;
  memcpy(d.bytes, k, 16);
  fc_digest_hex(&d, out);
}

/* Add a finding; key/id given as byte strings (id_len 0 with id NULL: none). Thread-safe. */
static void add(vctx *c, int sev, int db, const char *key, size_t key_len, const char *id,
                size_t id_len, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static void add(vctx *c, int sev, int db, const char *key, size_t key_len, const char *id,
                size_t id_len, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fc_verify_report *r = c->r;
  pthread_mutex_lock(&c->mu);
  if (sev == FC_VERIFY_ERROR) {
    if (c->o->max_errors && r->errors >= c->o->max_errors) {
      r->stopped = 1;
      c->halt = 1;
      goto out;
    }
    r->errors++;
    if (c->o->max_errors && r->errors >= c->o->max_errors) {
      r->stopped = 1;
      c->halt = 1;
    }
  } else {
    r->warnings++;
    if (r->warnings > c->max_warnings) goto out;
  }
  if (r->count == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 64;
    fc_verify_finding *nf = realloc(r->findings, nc * sizeof *nf);
    if (!nf) goto out; /* counted, not kept */
    r->findings = nf;
    c->cap = nc;
  }
  fc_verify_finding *f = &r->findings[r->count];
  f->severity = sev;
  f->db = finding_db_names[db];
  f->key = key ? printable(key, key_len) : NULL;
  f->id = id ? printable(id, id_len) : NULL;
  f->problem = strdup(msg);
  r->count++;
out:
  pthread_mutex_unlock(&c->mu);
}

static int db_index(const char *name) {
  for (int i = 0; i < (int)(sizeof finding_db_names / sizeof finding_db_names[0]); i++)
    if (strcmp(finding_db_names[i], name) == 0) return i;
  return 0;
}

static int cmp_str(const char *a, const char *b) {
  if (!a || !b) return (a != NULL) - (b != NULL);
  return strcmp(a, b);
}

static int cmp_finding(const void *pa, const void *pb) {
  const fc_verify_finding *a = pa, *b = pb;
  if (a->severity != b->severity) return a->severity - b->severity;
  int ra = db_rank[db_index(a->db)], rb = db_rank[db_index(b->db)];
  if (ra != rb) return ra - rb;
  int d = cmp_str(a->key, b->key);
  if (d) return d;
  if ((d = cmp_str(a->id, b->id))) return d;
  return cmp_str(a->problem, b->problem);
}

/* ---- step 1: the environment, read with pread-safe LMDB calls only ------------------------- */

typedef struct reader_scan {
  uint32_t stale;
  char pids[160];
} reader_scan;

static int reader_line(const char *msg, void *ctx) {
  reader_scan *rs = ctx;
  int pid;
  for (const char *line = msg; line && *line;) {
    if (sscanf(line, "%d", &pid) == 1 && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
      size_t n = strlen(rs->pids);
      if (n + 16 < sizeof rs->pids) snprintf(rs->pids + n, sizeof rs->pids - n, "%s%d", n ? " " : "", pid);
      rs->stale++;
    }
    line = strchr(line, '\n');
    if (line) line++;
  }
  return 0;
}

static int want_nolock(const char *dir, int setting) {
  if (setting) return setting > 0;
  char p[4096];
  struct statvfs vfs;
  if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) return 1;
  if (access(dir, W_OK) != 0) return 1;
  /* No lock.mdb: no process has the environment open, and creating one would be a write. */
  if (snprintf(p, sizeof p, "%s/lock.mdb", dir) >= (int)sizeof p || access(p, W_OK) != 0) return 1;
  return 0;
}

/* Open the environment with MDB_NOLOCK (nothing written, no lock taken) and compare the file's
 * length with the last committed page named by the meta pages (read by LMDB with pread; the meta
 * pages are the first two pages, inside any file that opened). 0: safe to open the store; 1: a
 * finding was made and nothing else must be read; or an errno. */
static int preflight(vctx *c, const char *dir, int nolock) {
  fc_verify_report *r = c->r;
  char p[4096];
  struct stat st;
  if (stat(dir, &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  if (snprintf(p, sizeof p, "%s/data.mdb", dir) >= (int)sizeof p) return ENAMETOOLONG;
  if (stat(p, &st) != 0) return errno;
  if (access(p, R_OK) != 0) return errno;
  r->data_size = (uint64_t)st.st_size;
  MDB_env *env = NULL;
  int rc = mdb_env_create(&env);
  if (rc) return rc;
  mdb_env_set_maxdbs(env, 8);
  rc = mdb_env_open(env, dir, MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0664);
  if (rc == EACCES) {
    mdb_env_close(env);
    return rc;
  }
  if (rc) {
    add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
        "not an LMDB environment (%llu bytes; its meta pages are missing or damaged): %s",
        (unsigned long long)st.st_size, mdb_strerror(rc));
    mdb_env_close(env);
    return 1;
  }
  MDB_envinfo ei;
  MDB_stat ms;
  rc = mdb_env_info(env, &ei);
  if (!rc) rc = mdb_env_stat(env, &ms);
  if (rc) {
    mdb_env_close(env);
    return rc;
  }
  r->page_size = ms.ms_psize;
  r->map_size = ei.me_mapsize;
  r->map_used = (uint64_t)(ei.me_last_pgno + 1) * ms.ms_psize;
  r->max_readers = ei.me_maxreaders;
  if ((uint64_t)st.st_size < r->map_used) {
    add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
        "truncated: %llu bytes, but the last committed page (%zu) ends at byte %llu; "
        "nothing else was read",
        (unsigned long long)st.st_size, (size_t)ei.me_last_pgno,
        (unsigned long long)r->map_used);
    mdb_env_close(env);
    return 1;
  }
  mdb_env_close(env);

  if (!nolock) { /* stale reader slots: listed; cleared (mdb_reader_check) only when asked */
    rc = mdb_env_create(&env);
    if (rc) return rc;
    mdb_env_set_maxdbs(env, 8);
    rc = mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS, 0664);
    if (!rc) {
      reader_scan rs = {0, ""};
      MDB_envinfo e2;
      mdb_reader_list(env, reader_line, &rs);
      if (mdb_env_info(env, &e2) == 0) r->num_readers = e2.me_numreaders;
      r->stale_readers = rs.stale;
      int dead = 0;
      if (rs.stale && c->o->clear_stale_readers && mdb_reader_check(env, &dead) == 0 && dead > 0) {
        r->stale_cleared = (uint32_t)dead;
        r->stale_readers = rs.stale > (unsigned)dead ? rs.stale - (unsigned)dead : 0;
        if (mdb_env_info(env, &e2) == 0) r->num_readers = e2.me_numreaders;
      }
      if (r->stale_readers)
        add(c, FC_VERIFY_WARNING, DB_ENV, "lock.mdb", 8, NULL, 0,
            "%u stale reader slot%s (dead pid %s): old pages stay pinned and the file grows; "
            "clear them with cache-verify --clear-stale-readers",
            rs.stale, rs.stale == 1 ? "" : "s", rs.pids);
    }
    mdb_env_close(env);
    if (rc) return rc;
  }
  return 0;
}

/* ---- step 2: meta ---------------------------------------------------------------------------- */

static void tok_label(json_t *o, vcfg *cf) {
  static const char *const keys[] = {"tokenizer", "name", "preset"};
  for (size_t i = 0; i < 3; i++) {
    const char *s = json_string_value(json_object_get(o, keys[i]));
    if (s) {
      snprintf(cf->label, sizeof cf->label, "%s", s);
      break;
    }
  }
  cf->tok_dtype = fc_dtype_from_name(json_string_value(json_object_get(o, "dtype")));
}

static int tok_name_matches(const vcfg *cf, const char *json, size_t len, const char *name) {
  json_t *o = json_loadb(json, len, 0, NULL);
  int hit = 0;
  static const char *const keys[] = {"tokenizer", "name", "preset"};
  for (size_t i = 0; o && i < 3 && !hit; i++) {
    const char *s = json_string_value(json_object_get(o, keys[i]));
    hit = s && strcmp(s, name) == 0;
  }
  json_decref(o);
  (void)cf;
  return hit;
}

static int read_meta(vctx *c, fc_rtxn *t) {
  fc_cursor *cur;
  int rc = fc_cursor_open(t, FC_DB_META, &cur);
  if (rc) return rc;
  const void *k, *v;
  size_t kl, vl;
  size_t cap = 0;
  while ((rc = fc_cursor_next(cur, &k, &kl, &v, &vl)) == 0) {
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
      add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0,
          "value lies outside the file (B-tree damaged)");
      continue;
    }
    if (kl < 4 || memcmp(k, "cfg/", 4) != 0) continue;
    fc_digest d, h;
    char hex[33];
    if (kl != 36 || (memcpy(hex, (const char *)k + 4, 32), hex[32] = '\0', fc_digest_parse(hex, &d))) {
      add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0, "config key is not cfg/<32 hex>");
      continue;
    }
    fc_digest_buffer(v, vl, &h);
    if (memcmp(h.bytes, d.bytes, 16) != 0) {
      char hh[33];
      fc_digest_hex(&h, hh);
      add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0,
          "config JSON hashes to %s, not to its key", hh);
    }
    if (c->n_cfgs == cap) {
      size_t nc = cap ? cap * 2 : 8;
      vcfg *n = realloc(c->cfgs, nc * sizeof *n);
      if (!n) { rc = ENOMEM; break; }
      c->cfgs = n;
      cap = nc;
    }
    vcfg *cf = &c->cfgs[c->n_cfgs++];
    memset(cf, 0, sizeof *cf);
    cf->digest = d;
    fc_digest_hex(&d, cf->hex);
    json_error_t je;
    json_t *o = json_loadb(v, vl, 0, &je);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    if (!o || !kind) {
      add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0, "config is not a JSON object with a \"kind\"%s%s",
          o ? "" : ": ", o ? "" : je.text);
    } else if (strcmp(kind, "mel") == 0) {
      char why[256] = "";
      cf->kind = KIND_MEL;
      c->r->mel_configs++;
      const char *pr = json_string_value(json_object_get(o, "preset"));
      if (pr) snprintf(cf->label, sizeof cf->label, "%s", pr);
      json_t *kv = json_object_get(o, "kernel_version");
      if (json_is_integer(kv) && json_integer_value(kv) != FC_KERNEL_VERSION) {
        add(c, FC_VERIFY_WARNING, FC_DB_META, k, kl, NULL, 0,
            "mel config of kernel version %lld (this build: %d): its frame counts are not checked",
            (long long)json_integer_value(kv), FC_KERNEL_VERSION);
      } else if (fc_mel_config_from_json(v, vl, &cf->mel, why, sizeof why) ||
                 fc_mel_config_validate(&cf->mel, why, sizeof why)) {
        add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0, "invalid mel config: %s", why);
      } else {
        cf->usable = 1;
      }
    } else if (strcmp(kind, "tokens") == 0) {
      cf->kind = KIND_TOK;
      c->r->token_configs++;
      tok_label(o, cf);
    } else {
      add(c, FC_VERIFY_ERROR, FC_DB_META, k, kl, NULL, 0, "config of unknown kind \"%s\"", kind);
    }
    json_decref(o);
  }
  fc_cursor_close(cur);
  return rc == FC_ENOTFOUND ? 0 : rc;
}

static vcfg *find_cfg(vctx *c, const void *digest) {
  for (size_t i = 0; i < c->n_cfgs; i++)
    if (memcmp(c->cfgs[i].digest.bytes, digest, 16) == 0) return &c->cfgs[i];
  return NULL;
}

static void list_cfgs(vctx *c, int kind, char *out, size_t len) {
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < c->n_cfgs && n < len; i++) {
    if (c->cfgs[i].kind != kind) continue;
    int w = snprintf(out + n, len - n, "%s%s %s", n ? ", " : "",
                     c->cfgs[i].label[0] ? c->cfgs[i].label : "(no name)", c->cfgs[i].hex);
    if (w > 0) n += (size_t)w;
  }
  if (!out[0]) snprintf(out, len, "none");
}

/* Mark the expected configs. Names that cannot mean anything are usage errors (FC_ECONFIG); a
 * well-formed expectation the store does not meet is a finding. */
static int resolve_expected(vctx *c, fc_rtxn *t, char *why, size_t why_len) {
  const fc_verify_opts *o = c->o;
  char have[1024];
  if (!o->n_expect_mel)
    for (size_t i = 0; i < c->n_cfgs; i++) c->cfgs[i].expected |= c->cfgs[i].kind == KIND_MEL;
  for (size_t e = 0; e < o->n_expect_mel; e++) {
    const char *name = o->expect_mel[e];
    fc_digest d;
    int is_digest = fc_digest_parse(name, &d) == 0;
    if (!is_digest) {
      fc_mel_config pc;
      if (fc_mel_preset(name, &pc) != 0) {
        WHY("unknown preset '%s' (want a preset name or a 32-hex config digest)", name);
        return FC_ECONFIG;
      }
      fc_mel_config_digest(&pc, &d);
    }
    vcfg *cf = find_cfg(c, d.bytes);
    char hex[33], key[37];
    fc_digest_hex(&d, hex);
    snprintf(key, sizeof key, "cfg/%s", hex);
    if (cf && cf->kind == KIND_MEL) {
      cf->expected = 1;
      continue;
    }
    list_cfgs(c, KIND_MEL, have, sizeof have);
    if (cf)
      add(c, FC_VERIFY_ERROR, FC_DB_META, key, 36, NULL, 0,
          "expected mel config %s is a token config; stored mel configs: %s", name, have);
    else if (is_digest)
      add(c, FC_VERIFY_ERROR, FC_DB_META, key, 36, NULL, 0,
          "config mismatch: expected mel config %s is not in the store; stored mel configs: %s",
          hex, have);
    else
      add(c, FC_VERIFY_ERROR, FC_DB_META, key, 36, NULL, 0,
          "config mismatch: expected preset %s (config %s) is not in the store; stored mel "
          "configs: %s",
          name, hex, have);
  }
  if (!o->n_expect_tok)
    for (size_t i = 0; i < c->n_cfgs; i++) c->cfgs[i].expected |= c->cfgs[i].kind == KIND_TOK;
  for (size_t e = 0; e < o->n_expect_tok; e++) {
    const char *name = o->expect_tok[e];
    fc_digest d;
    int hit = 0;
    if (fc_digest_parse(name, &d) == 0) {
      vcfg *cf = find_cfg(c, d.bytes);
      if (cf && cf->kind == KIND_TOK) cf->expected = hit = 1;
    } else {
      for (size_t i = 0; i < c->n_cfgs; i++) {
        const char *json;
        size_t len;
        if (c->cfgs[i].kind != KIND_TOK) continue;
        if (fc_rtxn_get_config(t, &c->cfgs[i].digest, &json, &len) == 0 &&
            tok_name_matches(&c->cfgs[i], json, len, name))
          c->cfgs[i].expected = hit = 1;
      }
    }
    if (!hit) {
      list_cfgs(c, KIND_TOK, have, sizeof have);
      add(c, FC_VERIFY_ERROR, FC_DB_META, NULL, 0, NULL, 0,
          "config mismatch: expected token config %s is not in the store; stored token "
          "configs: %s",
          name, have);
    }
  }
  return 0;
}

/* ---- step 3: entries ------------------------------------------------------------------------- */

static int collect(vctx *c, fc_rtxn *t, int db, ventry **out, size_t *n_out) {
  fc_cursor *cur;
  int rc = fc_cursor_open(t, db, &cur);
  if (rc) return rc;
  size_t cap = 0, n = 0;
  ventry *a = NULL;
  const void *k, *v;
  size_t kl, vl;
  while ((rc = fc_cursor_next(cur, &k, &kl, &v, &vl)) == 0 && !stopping(c)) {
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
      add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "value lies outside the file (B-tree damaged)");
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 1024;
      ventry *na = realloc(a, nc * sizeof *na);
      if (!na) { rc = ENOMEM; break; }
      a = na;
      cap = nc;
    }
    ventry *e = &a[n++];
    *e = (ventry){k, kl, v, vl, 1};
    int idrc = fc_id_check(k, kl);
    if (idrc)
      add(c, FC_VERIFY_ERROR, db, k, kl, NULL, 0, "key is not a valid id (%s)",
          idrc == FC_EUTF8 ? "invalid UTF-8" : "empty, too long, or holds NUL or a newline");
    if (db == FC_DB_AUDIO) {
      fc_audio_entry ae;
      if (fc_audio_entry_decode(v, vl, &ae)) {
        add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "audio entry of %zu bytes (want at least %d)",
            vl, FC_AUDIO_ENTRY_FIXED);
        e->ok = 0;
      } else if (!ae.sample_rate || !ae.channels) {
        add(c, FC_VERIFY_ERROR, db, k, kl, k, kl,
            "audio entry with sample rate %u and %u channels", ae.sample_rate, ae.channels);
        e->ok = 0;
      }
    } else {
      const char *txt;
      size_t tl;
      if (fc_text_entry_decode(v, vl, NULL, &txt, &tl)) {
        add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "text entry of %zu bytes (want at least 16)", vl);
        e->ok = 0;
      } else if (!fc_utf8_valid(txt, tl)) {
        add(c, FC_VERIFY_ERROR, db, k, kl, k, kl, "text is not valid UTF-8");
      }
    }
  }
  fc_cursor_close(cur);
  *out = a;
  *n_out = n;
  return rc == FC_ENOTFOUND ? 0 : rc;
}

static int cmp_exp(const void *a, const void *b) { return memcmp(a, b, 16); }

static int build_expected(vctx *c) {
  size_t n_mel = 0, n_tok = 0;
  for (size_t i = 0; i < c->n_cfgs; i++) {
    n_mel += c->cfgs[i].kind == KIND_MEL;
    n_tok += c->cfgs[i].kind == KIND_TOK;
  }
  size_t total = c->n_audio * n_mel + c->n_text * n_tok;
  c->exp = malloc((total ? total : 1) * sizeof *c->exp);
  if (!c->exp) return ENOMEM;
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++) {
    ventry *ents = pass ? c->text : c->audio;
    size_t ne = pass ? c->n_text : c->n_audio;
    for (size_t i = 0; i < ne; i++) {
      if (!ents[i].ok) continue;
      fc_digest content;
      memcpy(content.bytes, ents[i].val, 16);
      for (size_t j = 0; j < c->n_cfgs; j++) {
        if (c->cfgs[j].kind != (pass ? KIND_TOK : KIND_MEL)) continue;
        fc_digest key;
        fc_record_key(&content, &c->cfgs[j].digest, &key);
        vexp *x = &c->exp[n++];
        memcpy(x->key, key.bytes, 16);
        x->entry = (uint32_t)i;
        x->cfg = (uint16_t)j;
        x->db = pass ? FC_DB_TOK : FC_DB_FEAT;
        x->pad = 0;
      }
    }
  }
  qsort(c->exp, n, sizeof *c->exp, cmp_exp);
  c->n_exp = n;
  return 0;
}

static const vexp *find_exp(vctx *c, const void *key, int db) {
  size_t lo = 0, hi = c->n_exp;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (memcmp(c->exp[mid].key, key, 16) < 0) lo = mid + 1;
    else hi = mid;
  }
  for (; lo < c->n_exp && memcmp(c->exp[lo].key, key, 16) == 0; lo++)
    if (c->exp[lo].db == db) return &c->exp[lo];
  return NULL;
}

static const char *cfg_name(const vcfg *cf) { return cf->label[0] ? cf->label : "(no name)"; }

/* XXH3-128 of a file, streamed. */
static int hash_file(const char *path, fc_digest *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  XXH3_state_t *st = XXH3_createState();
  size_t bufsz = 1 << 20;
  char *buf = malloc(bufsz);
  int rc = (st && buf) ? 0 : ENOMEM;
  if (!rc) XXH3_128bits_reset(st);
  while (!rc) {
    ssize_t n = read(fd, buf, bufsz);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) rc = errno;
    if (n <= 0) break;
    XXH3_128bits_update(st, buf, (size_t)n);
  }
  if (!rc) {
    XXH128_hash_t h = XXH3_128bits_digest(st);
    for (int i = 0; i < 8; i++) {
      out->bytes[i] = (uint8_t)(h.low64 >> (8 * i));
      out->bytes[8 + i] = (uint8_t)(h.high64 >> (8 * i));
    }
  }
  free(buf);
  XXH3_freeState(st);
  close(fd);
  return rc;
}

static void check_source(vctx *c, const ventry *e, const fc_audio_entry *ae) {
  char path[4096];
  if (ae->path_len == 0 || ae->path_len >= sizeof path || memchr(ae->path, 0, ae->path_len)) {
    add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
        "source path of %zu bytes cannot be checked", ae->path_len);
    return;
  }
  memcpy(path, ae->path, ae->path_len);
  path[ae->path_len] = '\0';
  char *pp = printable(path, ae->path_len);
  struct stat st;
  if (stat(path, &st) != 0) {
    add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len, "source %s: %s",
        pp ? pp : "?", strerror(errno));
    free(pp);
    return;
  }
  int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  int size_changed = (uint64_t)st.st_size != ae->source_size, mtime_changed = mtime != ae->mtime_ns;
  if (c->o->rehash) {
    fc_digest d;
    int rc = hash_file(path, &d);
    if (rc) {
      add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len, "source %s: %s",
          pp ? pp : "?", strerror(rc));
    } else if (memcmp(d.bytes, ae->digest.bytes, 16) != 0) {
      char a[33], b[33];
      fc_digest_hex(&ae->digest, a);
      fc_digest_hex(&d, b);
      add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
          "source changed: %s hashes to %s, its features were made from %s", pp ? pp : "?", b, a);
    } else if ((size_changed || mtime_changed) && c->o->sources) {
      add(c, FC_VERIFY_WARNING, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
          "source %s touched (mtime %lld, stored %lld) but its bytes are unchanged", pp ? pp : "?",
          (long long)mtime, (long long)ae->mtime_ns);
    }
  } else if (size_changed) {
    add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
        "source changed: %s is %lld bytes, its features were made from %llu bytes", pp ? pp : "?",
        (long long)st.st_size, (unsigned long long)ae->source_size);
  } else if (mtime_changed) {
    add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, e->id, e->id_len, e->id, e->id_len,
        "source changed: %s has mtime %lld ns, its features were made at %lld ns (--rehash "
        "tells whether its bytes changed)",
        pp ? pp : "?", (long long)mtime, (long long)ae->mtime_ns);
  }
  free(pp);
}

/* One entry against every stored config of its kind: the record exists when expected, names its
 * config, and (mel) has the frame count the config gives for the entry's samples. */
static void check_entry(vctx *c, fc_rtxn *t, int db, const ventry *e) {
  fc_digest content;
  fc_audio_entry ae;
  memcpy(content.bytes, e->val, 16);
  int audio = db == FC_DB_AUDIO;
  if (audio) fc_audio_entry_decode(e->val, e->val_len, &ae);
  int rdb = audio ? FC_DB_FEAT : FC_DB_TOK;
  for (size_t j = 0; j < c->n_cfgs && !stopping(c); j++) {
    const vcfg *cf = &c->cfgs[j];
    if (cf->kind != (audio ? KIND_MEL : KIND_TOK)) continue;
    fc_digest key;
    char hex[33];
    fc_record_key(&content, &cf->digest, &key);
    fc_digest_hex(&key, hex);
    const void *v;
    size_t vl;
    int rc = fc_rtxn_get(t, rdb, key.bytes, 16, &v, &vl);
    if (rc == FC_ENOTFOUND) {
      if (cf->expected)
        add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len, "missing: no %s record for %s config %s %s",
            audio ? "feature" : "token", audio ? "mel" : "token", cfg_name(cf), cf->hex);
      continue;
    }
    if (rc) {
      add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len, "LMDB: %s", fc_strerror(rc));
      continue;
    }
    if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) continue;
    fc_record_header h;
    if (fc_record_parse(v, vl, &h, NULL, NULL, 0)) continue; /* the record scan names it */
    if (memcmp(h.config.bytes, cf->digest.bytes, 16) != 0) {
      char ch[33];
      fc_digest_hex(&h.config, ch);
      add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len,
          "record header names config %s, its key is for config %s %s", ch, cfg_name(cf), cf->hex);
      continue;
    }
    if (audio && cf->usable) {
      uint64_t n = fc_resampled_length(ae.frames, ae.sample_rate, cf->mel.sample_rate);
      uint64_t want = fc_mel_num_frames(&cf->mel, n);
      if (h.dim0 != want)
        add(c, FC_VERIFY_ERROR, rdb, hex, 32, e->id, e->id_len,
            "%u frames, config %s gives %llu for %llu samples at %u Hz", h.dim0, cfg_name(cf),
            (unsigned long long)want, (unsigned long long)ae.frames, ae.sample_rate);
    }
  }
  if (audio && (c->o->sources || c->o->rehash)) check_source(c, e, &ae);
}

static int check_entries(vctx *c, int nthreads) {
  int err = 0;
  size_t total = c->n_audio + c->n_text;
#pragma omp parallel num_threads(nthreads)
  {
    fc_rtxn *t = NULL;
    int rc = fc_store_read_begin(c->s, &t);
    if (rc) {
#pragma omp critical(verify_err)
      err = rc;
    }
#pragma omp for schedule(dynamic, 64)
    for (size_t i = 0; i < total; i++) {
      if (!t || stopping(c)) continue;
      int audio = i < c->n_audio;
      const ventry *e = audio ? &c->audio[i] : &c->text[i - c->n_audio];
      if (e->ok) check_entry(c, t, audio ? FC_DB_AUDIO : FC_DB_TEXT, e);
    }
    fc_rtxn_end(t);
  }
  return err;
}

/* ---- step 4: records ------------------------------------------------------------------------- */

static void check_record(vctx *c, int db, const uint8_t *k, size_t kl, const void *v, size_t vl,
                         uint64_t *recs, uint64_t *bytes) {
  char hex[33];
  if (kl != 16) {
    add(c, FC_VERIFY_ERROR, db, (const char *)k, kl, NULL, 0, "key of %zu bytes (want 16)", kl);
    return;
  }
  hex16(k, hex);
  const vexp *x = find_exp(c, k, db);
  const ventry *e = NULL;
  if (x) e = (x->db == FC_DB_FEAT ? c->audio : c->text) + x->entry;
  const char *id = e ? e->id : NULL;
  size_t id_len = e ? e->id_len : 0;
  if (!((const uint8_t *)v >= c->map_lo && (const uint8_t *)v + vl <= c->map_hi)) {
    add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
        "value of %zu bytes lies outside the file (B-tree damaged)", vl);
    return;
  }
  char why[256];
  int rc = fc_verify_record(v, vl, c->o->finite, why, sizeof why);
  (*recs)++;
  *bytes += vl;
  if (rc) {
    add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len, "%s", why);
    return;
  }
  fc_record_header h;
  fc_record_parse(v, vl, &h, NULL, NULL, 0);
  const vcfg *cf = find_cfg(c, h.config.bytes);
  char ch[33];
  fc_digest_hex(&h.config, ch);
  if (!cf) {
    add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
        "unknown config %s: the store has no meta cfg/%s", ch, ch);
  } else if (db == FC_DB_FEAT && cf->kind != KIND_MEL) {
    add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len, "feature record made with token config %s", ch);
  } else if (db == FC_DB_TOK && cf->kind != KIND_TOK) {
    add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len, "token record made with mel config %s", ch);
  } else if (db == FC_DB_FEAT && cf->usable) {
    if (h.dtype != cf->mel.dtype || h.ndim != 2 || h.dim1 != cf->mel.n_mels)
      add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
          "shape %u x %u of %s (ndim %u), config %s gives [frames x %u] of %s", h.dim0, h.dim1,
          fc_dtype_name(h.dtype), h.ndim, cfg_name(cf), cf->mel.n_mels,
          fc_dtype_name(cf->mel.dtype));
  } else if (db == FC_DB_TOK) {
    int int_dtype = h.dtype == FC_DTYPE_I32 || h.dtype == FC_DTYPE_I16 || h.dtype == FC_DTYPE_U16;
    if (!int_dtype || h.ndim != 1 || (cf->tok_dtype && h.dtype != cf->tok_dtype))
      add(c, FC_VERIFY_ERROR, db, hex, 32, id, id_len,
          "token record of %s with ndim %u (config %s wants ndim 1 of %s)", fc_dtype_name(h.dtype),
          h.ndim, cfg_name(cf), cf->tok_dtype ? fc_dtype_name(cf->tok_dtype) : "an integer dtype");
  }
  if (!x)
    add(c, FC_VERIFY_WARNING, db, hex, 32, NULL, 0,
        "orphan: no %s entry refers to this record (config %s %s)",
        db == FC_DB_FEAT ? "audio" : "text", cf ? cfg_name(cf) : "unknown", ch);
}

/* One key range: the keys whose first byte is b. */
static int scan_range(vctx *c, MDB_txn *txn, MDB_cursor *cur, int db, unsigned b, uint64_t *recs,
                      uint64_t *bytes) {
  uint8_t first = (uint8_t)b, prev[16];
  int have_prev = 0;
  MDB_val k = {1, &first}, v;
  int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  uint64_t local = 0;
  (void)txn;
  while (rc == 0 && ((const uint8_t *)k.mv_data)[0] == b) {
    if (stopping(c)) break;
    const uint8_t *kp = k.mv_data;
    if (have_prev && k.mv_size == 16 && memcmp(prev, kp, 16) >= 0) {
      char hex[33];
      hex16(kp, hex);
      add(c, FC_VERIFY_ERROR, db, hex, 32, NULL, 0,
          "key out of order in its B-tree page (the page is damaged)");
    }
    if (k.mv_size == 16) {
      memcpy(prev, kp, 16);
      have_prev = 1;
    }
    uint64_t before = *bytes;
    check_record(c, db, kp, k.mv_size, v.mv_data, v.mv_size, recs, bytes);
    local += *bytes - before;
    if (local >= (4u << 20)) {
      __atomic_fetch_add(&c->bytes_done, local, __ATOMIC_RELAXED);
      local = 0;
    }
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  __atomic_fetch_add(&c->bytes_done, local, __ATOMIC_RELAXED);
  if (rc && rc != MDB_NOTFOUND) {
    add(c, FC_VERIFY_ERROR, db, NULL, 0, NULL, 0, "LMDB: %s while reading keys %02x..",
        mdb_strerror(rc), b);
    return 0;
  }
  return 0;
}

static int check_records(vctx *c, int nthreads) {
  int err = 0;
  uint64_t recs = 0, bytes = 0;
  double last = now_s();
#pragma omp parallel num_threads(nthreads) reduction(+ : recs, bytes)
  {
    fc_rtxn *t = NULL;
    MDB_cursor *cur[2] = {NULL, NULL};
    int rc = fc_store_read_begin(c->s, &t);
    for (int d = 0; d < 2 && !rc; d++)
      rc = mdb_cursor_open(t->txn, c->s->dbi[d ? FC_DB_TOK : FC_DB_FEAT], &cur[d]);
    if (rc) {
#pragma omp critical(verify_err)
      err = rc;
    }
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < 512; i++) {
      if (rc || stopping(c)) continue;
      int d = i / 256;
      scan_range(c, t->txn, cur[d], d ? FC_DB_TOK : FC_DB_FEAT, (unsigned)(i % 256), &recs, &bytes);
      if (c->o->progress && omp_get_thread_num() == 0) {
        double tn = now_s();
        if (tn - last >= 0.1) {
          last = tn;
          c->o->progress(__atomic_load_n(&c->bytes_done, __ATOMIC_RELAXED), c->bytes_total,
                         c->o->progress_ud);
        }
      }
    }
    for (int d = 0; d < 2; d++)
      if (cur[d]) mdb_cursor_close(cur[d]);
    fc_rtxn_end(t);
  }
  c->r->records_checked = recs;
  c->r->bytes_checked = bytes;
  if (c->o->progress) c->o->progress(bytes, bytes, c->o->progress_ud);
  return err;
}

/* ---- step 5: the manifest -------------------------------------------------------------------- */

/* LMDB's default key order: bytes compared over the shorter length, then the shorter first. */
static int cmp_lmdb(const char *a, size_t al, const char *b, size_t bl) {
  int d = memcmp(a, b, al < bl ? al : bl);
  return d ? d : (al < bl ? -1 : al > bl);
}

static const ventry *find_entry(const ventry *a, size_t n, const char *id, size_t len) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int d = cmp_lmdb(a[mid].id, a[mid].id_len, id, len);
    if (d == 0) return &a[mid];
    if (d < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static void check_manifest(vctx *c) {
  const fc_item_list *m = c->o->manifest;
  for (size_t i = 0; i < m->count && !stopping(c); i++) {
    const fc_item *it = &m->items[i];
    char line[32];
    snprintf(line, sizeof line, "%zu", it->line);
    if (it->err) {
      add(c, FC_VERIFY_WARNING, DB_MANIFEST, line, strlen(line), it->id, it->id ? strlen(it->id) : 0,
          "line skipped: %s", it->why ? it->why : fc_strerror(it->err));
      continue;
    }
    c->r->manifest_items++;
    size_t len = strlen(it->id);
    if (!find_entry(c->audio, c->n_audio, it->id, len))
      add(c, FC_VERIFY_ERROR, FC_DB_AUDIO, it->id, len, it->id, len,
          "missing: manifest line %zu names it, the store has no audio entry (no features)",
          it->line);
    if (c->o->expect_tokens_given && !find_entry(c->text, c->n_text, it->id, len))
      add(c, FC_VERIFY_ERROR, FC_DB_TEXT, it->id, len, it->id, len,
          "missing: manifest line %zu names it, the store has no text entry (no tokens)", it->line);
  }
}

/* ---- the whole run --------------------------------------------------------------------------- */

void fc_verify_opts_default(fc_verify_opts *o) { memset(o, 0, sizeof *o); }

void fc_verify_report_free(fc_verify_report *r) {
  if (!r) return;
  for (size_t i = 0; i < r->count; i++) {
    free((char *)r->findings[i].key);
    free((char *)r->findings[i].id);
    free((char *)r->findings[i].problem);
  }
  free(r->findings);
  memset(r, 0, sizeof *r);
}

int fc_verify_store(const char *dir, const fc_verify_opts *o, fc_verify_report *out, char *why,
                    size_t why_len) {
  fc_verify_opts defaults;
  if (!o) {
    fc_verify_opts_default(&defaults);
    o = &defaults;
  }
  memset(out, 0, sizeof *out);
  if (why && why_len) why[0] = '\0';
  vctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.r = out;
  c.max_warnings = o->max_warnings ? o->max_warnings : 10000;
  c.t0 = now_s();
  pthread_mutex_init(&c.mu, NULL);
  int nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
  out->threads = nthreads;
  fc_rtxn *t = NULL;
  int rc;
  if (!dir || !*dir) { rc = EINVAL; goto done; }

  int nolock = want_nolock(dir, o->nolock);
  out->nolock = nolock;
  rc = preflight(&c, dir, nolock);
  if (rc == 1) { rc = 0; goto done; }
  if (rc) goto done;

  rc = fc_store_open(dir, FC_STORE_RDONLY | (nolock ? FC_STORE_NOLOCK : 0), &c.s);
  if (rc == FC_EFORMAT || rc == FC_EVERSION || rc == MDB_INVALID || rc == MDB_CORRUPTED ||
      rc == MDB_PAGE_NOTFOUND) {
    add(&c, FC_VERIFY_ERROR, FC_DB_META, "format", 6, NULL, 0, "%s",
        rc == FC_EVERSION ? "a featcache store of a format version this build does not know "
                            "(it reads " FC_FORMAT_NAME ")"
        : rc == FC_EFORMAT ? "not a featcache store: no meta db with format " FC_FORMAT_NAME
                           : mdb_strerror(rc));
    rc = 0;
    goto done;
  }
  if (rc) goto done;
  const void *base;
  size_t maplen;
  if ((rc = fc_store_map_region(c.s, &base, &maplen)) != 0) goto done;
  c.map_lo = base;
  c.map_hi = (const uint8_t *)base + (maplen < out->data_size ? maplen : out->data_size);
  fc_store_info info;
  if ((rc = fc_store_info_get(c.s, &info)) != 0) goto done;
  for (int i = 0; i < FC_DB_COUNT; i++) out->entries[i] = info.entries[i];
  out->map_size = info.map_size;
  out->map_used = info.map_used;
  c.bytes_total = info.map_used;
  out->opened = 1;

  if ((rc = fc_store_read_begin(c.s, &t)) != 0) goto done;
  if ((rc = read_meta(&c, t)) != 0) goto done;
  if ((rc = resolve_expected(&c, t, why, why_len)) != 0) goto done;
  if ((rc = collect(&c, t, FC_DB_AUDIO, &c.audio, &c.n_audio)) != 0) goto done;
  if ((rc = collect(&c, t, FC_DB_TEXT, &c.text, &c.n_text)) != 0) goto done;
  if ((rc = build_expected(&c)) != 0) goto done;
  if (!stopping(&c) && (rc = check_entries(&c, nthreads)) != 0) goto done;
  if (!stopping(&c) && (rc = check_records(&c, nthreads)) != 0) goto done;
  if (!stopping(&c) && o->manifest) check_manifest(&c);
  if (o->stop && *o->stop) rc = FC_EINTR;

done:
  if (rc && rc != FC_EINTR && why && why_len && !why[0]) snprintf(why, why_len, "%s", fc_strerror(rc));
  fc_rtxn_end(t);
  fc_store_close(c.s);
  free(c.audio);
  free(c.text);
  free(c.exp);
  free(c.cfgs);
  pthread_mutex_destroy(&c.mu);
  if (out->count) qsort(out->findings, out->count, sizeof *out->findings, cmp_finding);
  out->wall_seconds = now_s() - c.t0;
  return rc;
}
