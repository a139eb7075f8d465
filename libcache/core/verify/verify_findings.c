/* Findings and the run's stop flags, at the bottom of cache-verify's engine: every step
 * (verify.c's environment, verify_meta.c, verify_entries.c, verify_scan.c, verify_dataset.c) adds
 * its findings here and asks here whether to stop, or to renew a transaction that met a damaged
 * page (vf_txn_recover); this file calls none of them. */
#include "libcache/core/verify/verify_int.h"
#include "formats/common/alloc.h"

const char *const vf_db_names[VF_N_DBS] = {"meta",   "audio", "text",     "feat", "tok",
                                           "failed", "env",   "manifest", "index"};

double vf_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int vf_stopping(vctx *c) {
  if (atomic_load(&c->halt)) return 1;
  if (c->o->stop && *c->o->stop) {
    atomic_store(&c->halt, 1);
    return 1;
  }
  return 0;
}

int vf_env_read(const char *dir, vf_env *e) {
  char p[4096];
  struct stat st;
  memset(e, 0, sizeof *e);
  if (stat(dir, &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  if (snprintf(p, sizeof p, "%s/data.mdb", dir) >= (int)sizeof p) return ENAMETOOLONG;
  if (stat(p, &st) != 0) return errno == ENOENT ? FC_ENOSTORE : errno;
  if (access(p, R_OK) != 0) return errno;
  e->file_size = (uint64_t)st.st_size;
  MDB_env *env = NULL;
  int rc = mdb_env_create(&env);
  if (rc) return rc;
  mdb_env_set_maxdbs(env, 8);
  rc = mdb_env_open(env, dir, MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0664);
  e->not_lmdb = rc && rc != EACCES;
  MDB_envinfo ei;
  MDB_stat ms;
  if (!rc) rc = mdb_env_info(env, &ei);
  if (!rc) rc = mdb_env_stat(env, &ms);
  /* the file's length taken after its meta was read, from the file LMDB read it from: a writer
   * writes a commit's pages before its meta, so the pages a meta names are in the file by then
   * (a length taken before could be a commit short of the meta: "truncated" while it wrote) */
  mdb_filehandle_t fd;
  if (!rc && mdb_env_get_fd(env, &fd) == 0 && fstat(fd, &st) == 0)
    e->file_size = (uint64_t)st.st_size;
  if (!rc) {
    e->page_size = ms.ms_psize;
    e->map_size = ei.me_mapsize;
    e->last_pgno = ei.me_last_pgno;
    e->used = (uint64_t)(ei.me_last_pgno + 1) * ms.ms_psize;
    e->max_readers = ei.me_maxreaders;
  }
  store_env_close(env);
  return rc;
}

int vf_env_truncated(const char *dir, const vf_env *e) {
  if (e->file_size >= e->used) return 0;
  /* a file that ends before its meta's last page may still be whole: pages LMDB allocated and
   * freed in one transaction are named by the meta and never written; the store's open proves
   * it from the free list, and refuses a file truly cut (FC_ETRUNCATED) */
  fc_store *s;
  if (fc_store_open(dir, FC_STORE_RDONLY | FC_STORE_NOLOCK, &s) != 0) return 1;
  fc_store_close(s);
  return 0;
}

/* Printable copy of an id or meta key: bytes outside printable ASCII/UTF-8 become \xNN. */
char *vf_printable(const char *s, size_t len) {
  int utf8 = fc_utf8_valid(s, len);
  char *out = fc_malloc(len * 4 + 1), *q = out;
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

char *vf_quoted(const char *s, size_t len) {
  char *copy = fc_strndup(s, len); /* a NUL inside ends the name */
  if (!copy) return NULL;
  size_t n = fc_quote_name(copy, NULL, 0);
  char *out = fc_malloc(n + 1);
  if (out) fc_quote_name(copy, out, n + 1);
  free(copy);
  return out;
}

void vf_hex16(const void *k, char out[33]) {
  fc_digest d;
  memcpy(d.bytes, k, 16);
  fc_digest_hex(&d, out);
}

/* Add a finding; key/id given as byte strings (id_len 0 with id NULL: none). Thread-safe. */
void vf_add(vctx *c, int sev, int db, const char *key, size_t key_len, const char *id,
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
      atomic_store(&c->halt, 1);
      goto out;
    }
    r->errors++;
    if (c->o->max_errors && r->errors >= c->o->max_errors) {
      r->stopped = 1;
      atomic_store(&c->halt, 1);
    }
  } else if (sev == FC_VERIFY_FAILED) {
    r->failures++;
    if (r->failures > c->max_warnings) goto out;
  } else {
    r->warnings++;
    if (r->warnings > c->max_warnings) goto out;
  }
  if (r->count == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 64;
    fc_verify_finding *nf = fc_realloc(r->findings, nc * sizeof *nf);
    if (!nf) goto out; /* counted, not kept */
    r->findings = nf;
    c->cap = nc;
  }
  fc_verify_finding *f = &r->findings[r->count];
  f->severity = sev;
  f->db = vf_db_names[db];
  f->key = key ? vf_printable(key, key_len) : NULL;
  f->id = id ? vf_printable(id, id_len) : NULL;
  f->problem = fc_strdup(msg);
  r->count++;
out:
  pthread_mutex_unlock(&c->mu);
}

const char *vf_cfg_name(const vcfg *cf) { return cf->label[0] ? cf->label : "(no name)"; }

int vf_cmp_lmdb(const char *a, size_t al, const char *b, size_t bl) {
  int d = memcmp(a, b, al < bl ? al : bl);
  return d ? d : (al < bl ? -1 : al > bl);
}

const ventry *vf_find_entry(const ventry *a, size_t n, const char *id, size_t len) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int d = vf_cmp_lmdb(a[mid].id, a[mid].id_len, id, len);
    if (d == 0) return &a[mid];
    if (d < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* A transaction that met a damaged page (verify_int.h): here, below the steps that call it. */
int vf_damage_code(int rc) { return rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND; }

int vf_txn_recover(vctx *c, fc_rtxn *t) {
  /* reset and renewed: the reader slot is kept (MDB_NOTLS): nothing else is taken */
  int rc = store_txn_renew(t->txn);
  if (!rc && mdb_txn_id(t->txn) == c->snapshot) return 0;
  if (!rc) rc = MDB_BAD_TXN; /* a writer committed since the snapshot began: not the same store */
  atomic_store(&c->halt, 1);
  if (atomic_exchange(&c->lost, 1) == 0)
    vf_add(c, FC_VERIFY_ERROR, DB_ENV, "data.mdb", 8, NULL, 0,
           "B-tree damaged; the checks after it were not made (a read transaction could not be "
           "renewed on the snapshot: %s)",
           mdb_strerror(rc));
  return rc;
}
