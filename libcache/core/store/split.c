/* Split stores: one store directory holding N stores, its parts, each written by its own writer
 * (docs/FORMAT.md "Split stores").
 *
 *   DIR/featcache-split   the marker: "featcache-split/1 N\n" (N = 2..FC_SPLIT_MAX_PARTS)
 *   DIR/part-K            part K (0 <= K < N): a store of the plain format, meta part = "K/N"
 *
 * An utterance id lives in part fc_shard_of(id, len, N) (formats/shard.c): its audio and text
 * entries and its feat and tok records are in that part, written in one transaction there, so each
 * part is a valid store by itself and readers take the parts as several stores read as one. The
 * marker is written before any part is made, so a directory with parts always says how many it
 * should have; a part missing under a marker is created by the next writer (a job killed during
 * creation) and named by readers.
 *
 * Creation is exclusive: the marker is linked into place (link(2) fails when the name exists, on
 * NFS too), never renamed over another, so of two jobs creating one split store at once, the one
 * whose marker landed first sets N and the other opens the same N parts or, asking for another N,
 * fails with both counts named. The decision between a store of one part (data.mdb) and a split
 * store is made under an flock(2) of the directory (store_create_lock, also taken by
 * fc_store_open when it creates data.mdb), so one process cannot create data.mdb while another
 * writes a marker beside it. */
#include "libcache/core/store/store_int.h"
#include "formats/common/args.h"

#include "featcache/fc_format.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MARKER "featcache-split"
#define MARKER_MAGIC "featcache-split/"
#define MARKER_VERSION "featcache-split/1 "

static int join(char *buf, size_t len, const char *dir, const char *name) {
  return snprintf(buf, len, "%s/%s", dir, name) >= (int)len ? ENAMETOOLONG : 0;
}

/* "DIR/featcache-split: REASON" into why: the marker's path quoted as names are (fc_quote_name). */
static void marker_why(char *why, size_t why_len, const char *dir, int rc) {
  char p[4096];
  (void)join(p, sizeof p, dir, MARKER); /* (too long: cut short, as a name in a reason is) */
  fc_why(why, why_len, "%s: %s", FC_WHY_NAME(p),
         rc == FC_EFORMAT ? "not a split-store marker (featcache-split/1 N)" : fc_strerror(rc));
}

/* Parse the marker's bytes: "featcache-split/1 N\n", N decimal without leading zeros. */
static int parse_marker(const char *b, size_t len, unsigned *n) {
  const size_t pl = strlen(MARKER_VERSION), ml = strlen(MARKER_MAGIC);
  if (len < pl || memcmp(b, MARKER_VERSION, pl) != 0) {
    /* "featcache-split/<v>" with another version v: a later format; anything else: not ours */
    if (len > ml && memcmp(b, MARKER_MAGIC, ml) == 0 &&
        !(b[ml] == '1' && (len == ml + 1 || b[ml + 1] < '0' || b[ml + 1] > '9')))
      return FC_EVERSION;
    return FC_EFORMAT;
  }
  size_t i = pl;
  unsigned v = 0;
  if (i >= len || b[i] < '1' || b[i] > '9') return FC_EFORMAT;
  while (i < len && b[i] >= '0' && b[i] <= '9') {
    v = v * 10 + (unsigned)(b[i++] - '0');
    if (v > FC_SPLIT_MAX_PARTS) return FC_EFORMAT;
  }
  if (i + 1 != len || b[i] != '\n' || v < 2) return FC_EFORMAT;
  *n = v;
  return 0;
}

int fc_store_split_count(const char *dir, unsigned *n) {
  FC_ARGS(dir, n);
  *n = 0;
  char p[4096];
  int rc = join(p, sizeof p, dir, MARKER);
  if (rc) return rc;
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  /* no marker (or no directory: the store's own open says what is wrong with the path) */
  if (fd < 0) return (errno == ENOENT || errno == ENOTDIR) ? 0 : errno;
  char b[64];
  ssize_t got = read(fd, b, sizeof b);
  int err = got < 0 ? errno : 0;
  close(fd);
  if (err) return err;
  return parse_marker(b, (size_t)got, n);
}

uint32_t fc_store_part_of_id(const char *id, size_t len, uint32_t n) {
  FC_ARGS_OR(0, id || !len);
  if (n <= 1) return 0;
  /* the low 32 bits of the id's XXH3-64: independent of fc_shard_of's range of the high bits, so a
   * --shard K/N job spreads its ids over all the parts of its split store */
  return (uint32_t)(((fc_hash64(id, len) & 0xffffffffu) * (uint64_t)n) >> 32);
}

void fc_store_paths_free(char **paths, size_t n) {
  if (!paths) return;
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
}

int fc_store_expand(const char *const *dirs, size_t n, char ***out, size_t *n_out, char *why,
                    size_t why_len) {
  FC_ARGS_WHY(dirs || !n, out, n_out);
  *out = NULL;
  *n_out = 0;
  FC_ARGS_EACH_WHY(dirs, n); /* not "(null)/featcache-split: Invalid argument" */
  size_t cap = n ? n : 1, cnt = 0;
  char **v = fc_calloc(cap, sizeof *v);
  if (!v) return ENOMEM;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    unsigned parts;
    if ((rc = fc_store_split_count(dirs[i], &parts)) != 0) {
      marker_why(why, why_len, dirs[i], rc);
      break;
    }
    size_t add = parts ? parts : 1;
    if (cnt + add > cap) {
      size_t nc = (cnt + add) * 2;
      char **nv = fc_realloc(v, nc * sizeof *nv);
      if (!nv) {
        rc = ENOMEM;
        break;
      }
      v = nv;
      cap = nc;
    }
    for (size_t k = 0; k < add && !rc; k++) {
      char p[4096];
      if (parts && (rc = fc_store_part_path(dirs[i], (unsigned)k, p, sizeof p)) != 0) break;
      if (!(v[cnt] = fc_strdup(parts ? p : dirs[i])))
        rc = ENOMEM;
      else
        cnt++;
    }
  }
  if (rc) {
    fc_store_paths_free(v, cnt);
    return rc;
  }
  *out = v;
  *n_out = cnt;
  return 0;
}

static int write_all(int fd, const char *b, size_t len) {
  while (len > 0) {
    ssize_t k = write(fd, b, len);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    if (k == 0) return EIO; /* a write that makes no progress and says nothing */
    b += k;
    len -= (size_t)k; /* a short write: the next call says why it stopped (ENOSPC, EFBIG) */
  }
  return 0;
}

/* Write the marker for n parts, exclusively: a temporary file, fsynced, linked to the name (which
 * fails when a marker is there already), the directory fsynced, so that a crash leaves either no
 * marker or a whole one. *have: n when ours landed, else the count of the marker found there. */
static int write_marker(const char *dir, unsigned n, unsigned *have) {
  char p[4096], tmp[4096], b[64];
  *have = 0;
  int rc = join(p, sizeof p, dir, MARKER);
  if (!rc &&
      snprintf(tmp, sizeof tmp, "%s/.%s.%ld", dir, MARKER, (long)getpid()) >= (int)sizeof tmp)
    rc = ENAMETOOLONG;
  if (rc) return rc;
  int len = snprintf(b, sizeof b, MARKER_VERSION "%u\n", n);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0664);
  if (fd < 0) return errno;
  rc = write_all(fd, b, (size_t)len);
  if (!rc && fsync(fd) != 0) rc = errno;
  if (close(fd) != 0 && !rc) rc = errno;
  if (!rc && link(tmp, p) != 0) rc = errno;
  unlink(tmp);
  if (rc == EEXIST) return fc_store_split_count(dir, have); /* another creator's marker */
  if (rc) return rc;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    if (fsync(dfd) != 0) rc = errno; /* the name is what makes the marker durable */
    close(dfd);
  }
  if (!rc) *have = n;
  return rc;
}

/* The meta part value of a store: 0 and *k, *n when present, FC_ENOTFOUND when absent. */
static int read_part(fc_store *s, unsigned *k, unsigned *n) {
  fc_rtxn *t;
  int rc = fc_store_read_begin(s, &t);
  if (rc) return rc;
  const void *v;
  size_t vl;
  rc = fc_rtxn_get(t, FC_DB_META, "part", 4, &v, &vl);
  if (!rc) {
    char b[32];
    unsigned kk, nn;
    char extra;
    if (vl >= sizeof b) {
      rc = FC_EFORMAT;
    } else {
      memcpy(b, v, vl);
      b[vl] = '\0';
      if (sscanf(b, "%u/%u%c", &kk, &nn, &extra) != 2 || kk >= nn)
        rc = FC_EFORMAT;
      else
        *k = kk, *n = nn;
    }
  }
  fc_rtxn_end(t);
  return rc;
}

int fc_store_part_of_store(fc_store *s, unsigned *k, unsigned *n) {
  FC_ARGS(s, k, n);
  *k = 0;
  *n = 1;
  int rc = read_part(s, k, n);
  return rc == FC_ENOTFOUND ? 0 : rc;
}

void fc_store_close_split(fc_store **parts, unsigned n) {
  if (!parts) return;
  for (unsigned i = 0; i < n; i++) fc_store_close(parts[i]);
  free(parts);
}

/* Open part k of n under dir (created with FC_STORE_CREATE) and check or write its meta part. */
static int open_part(const char *dir, unsigned k, unsigned n, unsigned flags, fc_store **out,
                     char *why, size_t why_len) {
  char p[4096];
  int rc = fc_store_part_path(dir, k, p, sizeof p);
  if (!rc) rc = fc_store_open(p, flags, out);
  if (rc) {
    fc_why(why, why_len, "%s: %s", FC_WHY_NAME(p), fc_strerror(rc));
    return rc;
  }
  unsigned kk, nn;
  rc = read_part(*out, &kk, &nn);
  if (rc == FC_ENOTFOUND && !(flags & FC_STORE_RDONLY)) {
    char b[32];
    int bl = snprintf(b, sizeof b, "%u/%u", k, n);
    fc_put put = {FC_DB_META, "part", 4, b, (size_t)bl, FC_PUT_NOOVERWRITE};
    rc = fc_store_write(*out, &put, 1);
    if (!rc) rc = read_part(*out, &kk, &nn);
  }
  if (!rc && (kk != k || nn != n)) {
    rc = FC_EFORMAT;
    fc_why(why, why_len, "%s: it says it is part %u of %u, the split store's part %u of %u",
           FC_WHY_NAME(p), kk, nn, k, n);
  } else if (rc) {
    fc_why(why, why_len, "%s: meta part: %s", FC_WHY_NAME(p),
           rc == FC_ENOTFOUND ? "missing (not a part of a split store)" : fc_strerror(rc));
  }
  if (rc) {
    fc_store_close(*out);
    *out = NULL;
  }
  return rc;
}

int fc_store_open_split(const char *dir, unsigned flags, unsigned want, fc_store ***parts,
                        unsigned *n_out, char *why, size_t why_len) {
  FC_ARGS_WHY(dir, parts, n_out);
  *parts = NULL;
  *n_out = 0;
  if (why && why_len) why[0] = '\0';
  if (!dir || !*dir || want > FC_SPLIT_MAX_PARTS) return EINVAL;
  unsigned n;
  int rc = fc_store_split_count(dir, &n);
  if (rc) {
    marker_why(why, why_len, dir, rc);
    return rc;
  }
  char p[4096];
  struct stat st;
  if ((rc = join(p, sizeof p, dir, "data.mdb")) != 0) return rc;
  const int plain = stat(p, &st) == 0;
  if (n == 0 && (plain || want <= 1)) { /* a store of one part: today's format */
    fc_store **v = fc_calloc(1, sizeof *v);
    if (!v) return ENOMEM;
    if ((rc = fc_store_open(dir, flags, &v[0])) != 0) {
      free(v);
      /* Another job made it a split store since the marker was looked for (featurize --writers
       * started beside this tokenize or featurize on a new directory): open its parts. The
       * marker is never removed, so this retries once. */
      if (rc == FC_ESPLIT && !plain && fc_store_split_count(dir, &n) == 0 && n > 0)
        return fc_store_open_split(dir, flags, want, parts, n_out, why, why_len);
      return rc;
    }
    unsigned k, pn;
    if ((rc = fc_store_part_of_store(v[0], &k, &pn)) == 0 && pn > 1) {
      rc = FC_ECONFIG;
      fc_why(why, why_len,
             "%s is part %u of a split store of %u parts: give the split store's "
             "directory",
             FC_WHY_NAME(dir), k, pn);
    } else if (!rc && want > 1) {
      rc = FC_ECONFIG;
      fc_why(why, why_len, "%s is a store of one part (not split): %u writers need a new directory",
             FC_WHY_NAME(dir), want);
    }
    if (rc) {
      fc_store_close_split(v, 1);
      return rc;
    }
    *parts = v;
    *n_out = 1;
    return 0;
  }
  if (n == 0) { /* a new split store: the marker first, then the parts */
    if (plain || !(flags & FC_STORE_CREATE) || (flags & FC_STORE_RDONLY)) return ENOENT;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return errno;
    int lk = store_create_lock(dir);
    if (lk < 0) {
      fc_why(why, why_len, "%s: cannot lock the directory: %s", FC_WHY_NAME(dir), fc_strerror(-lk));
      return -lk;
    }
    if (stat(p, &st) == 0) { /* created meanwhile by a job with one writer */
      store_create_unlock(lk);
      fc_why(why, why_len,
             "%s is a store of one part (not split), created by another job meanwhile: %u "
             "writers need a new directory",
             FC_WHY_NAME(dir), want);
      return FC_ECONFIG;
    }
    rc = write_marker(dir, want, &n);
    store_create_unlock(lk);
    if (rc) {
      char m[4096];
      (void)join(m, sizeof m, dir, MARKER);
      fc_why(why, why_len, "%s: cannot write the marker: %s", FC_WHY_NAME(m),
             rc == FC_EFORMAT ? "another marker is there, not of this format" : fc_strerror(rc));
      return rc;
    }
    if (n != want) { /* another job made it first, with another number of parts */
      fc_why(why, why_len,
             "%s was split into %u parts by another job meanwhile, not %u: give %u writers or none",
             FC_WHY_NAME(dir), n, want, n);
      return FC_ECONFIG;
    }
  } else if (plain) {
    fc_why(why, why_len, "%s holds both a store (data.mdb) and a split-store marker",
           FC_WHY_NAME(dir));
    return FC_EFORMAT;
  } else if (want > 1 && want != n) {
    fc_why(why, why_len, "%s is split into %u parts, not %u: give %u writers or none",
           FC_WHY_NAME(dir), n, want, n);
    return FC_ECONFIG;
  }
  fc_store **v = fc_calloc(n, sizeof *v);
  if (!v) return ENOMEM;
  for (unsigned k = 0; k < n; k++) {
    if ((rc = open_part(dir, k, n, flags, &v[k], why, why_len)) != 0) {
      fc_store_close_split(v, k);
      return rc;
    }
  }
  *parts = v;
  *n_out = n;
  return 0;
}

int store_part_unwritten(const char *dir, char *store, size_t store_len) {
  const char *slash = strrchr(dir, '/');
  unsigned n = 0, k;
  char mdb[4096];
  struct stat st;
  if (!slash || strncmp(slash + 1, "part-", 5) != 0 || sscanf(slash + 6, "%u", &k) != 1 ||
      snprintf(store, store_len, "%.*s", (int)(slash - dir), dir) >= (int)store_len ||
      fc_store_split_count(store, &n) != 0 || n < 2 || join(mdb, sizeof mdb, dir, "data.mdb"))
    return 0;
  if (stat(mdb, &st) != 0) return errno == ENOENT;
  return store_env_unwritten(dir) ? 2 : 0;
}

int store_env_unwritten(const char *dir) {
  char mdb[4096];
  struct stat st;
  if (join(mdb, sizeof mdb, dir, "data.mdb") || stat(mdb, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  if (st.st_size == 0) return 1;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  MDB_stat ms;
  int empty = 0;
  if (mdb_env_create(&env)) return 0;
  if (!mdb_env_open(env, dir, MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0) &&
      !store_txn_begin(env, MDB_RDONLY, &txn)) {
    empty = !mdb_dbi_open(txn, NULL, 0, &dbi) && !mdb_stat(txn, dbi, &ms) && ms.ms_entries == 0;
    store_txn_abort(txn);
  }
  store_env_close(env);
  return empty;
}
