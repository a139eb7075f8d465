/* The STORE words of the tools that take several stores: split stores expanded into their parts,
 * room for their file descriptors, and a store given twice refused. Included at the end of
 * cli.h, whose helpers it uses. */
#ifndef FC_CMD_CLI_STORES_H
#define FC_CMD_CLI_STORES_H

#include "cli_unwritable.h" /* fc_cli_write_refused */
#include "featcache/fc_verify.h"

#include <sys/file.h>
#include <sys/sysmacros.h> /* major, minor */

/* Is the folder a store at path would be made in missing (-o cache/hifigan before mkdir cache)?
 * Then 1, with its name (quoted as names are) in buf. */
static inline int fc_cli_store_folder_missing(const char *store, char *buf, size_t len) {
  size_t n = strlen(store);
  while (n > 1 && store[n - 1] == '/') n--; /* cache/hifigan/ is cache/hifigan */
  while (n > 0 && store[n - 1] != '/') n--;
  while (n > 1 && store[n - 1] == '/') n--; /* the folder: cache, or / */
  char folder[4096];
  if (n == 0 || n >= sizeof folder) return 0; /* in the working directory */
  memcpy(folder, store, n);
  folder[n] = '\0';
  struct stat st;
  if (stat(folder, &st) == 0 || errno != ENOENT) return 0;
  char q[4 * sizeof folder + 8];
  snprintf(buf, len, "%s", fc_cli_quoted(folder, q, sizeof q));
  return 1;
}

/* 1 when the output files a and b are one (the same spelling, the same file, or the same name in
 * the same folder before either exists: out/b.svg and ./out/b.svg): the later rename would
 * replace the other. */
static inline int fc_cli_same_out(const char *a, const char *b) {
  if (!a || !b) return 0;
  struct stat sa, sb;
  if (strcmp(a, b) == 0) return 1;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');
  ba = ba ? ba + 1 : a;
  bb = bb ? bb + 1 : b;
  char da[4096], db[4096];
  snprintf(da, sizeof da, "%.*s", ba > a ? (int)(ba - a) : 1, ba > a ? a : ".");
  snprintf(db, sizeof db, "%.*s", bb > b ? (int)(bb - b) : 1, bb > b ? b : ".");
  return strcmp(ba, bb) == 0 && stat(da, &sa) == 0 && stat(db, &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* An output file (--svg FILE) that is a file of a store read (its data.mdb or lock.mdb, a split
 * store's marker, or a link to one): written after the run and renamed over it, it replaced the
 * store's data. A usage error before the run. */
static inline void fc_cli_out_not_in_store(const char *opt, const char *out,
                                           const char *const *stores, size_t n) {
  static const char *const files[] = {"data.mdb", "lock.mdb", "featcache-split"};
  if (!out) return;
  const char *base = strrchr(out, '/');
  base = base ? base + 1 : out;
  char dir[4096], p[4200], q1[1024], q2[1024];
  snprintf(dir, sizeof dir, "%.*s", base > out ? (int)(base - out) : 1, base > out ? out : ".");
  struct stat so, sd, ss;
  const int have_out = stat(out, &so) == 0, have_dir = stat(dir, &sd) == 0;
  for (size_t i = 0; i < n; i++)
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
      snprintf(p, sizeof p, "%s/%s", stores[i], files[f]);
      int same = have_out && stat(p, &ss) == 0 && ss.st_dev == so.st_dev && ss.st_ino == so.st_ino;
      if (!same && have_dir && strcmp(base, files[f]) == 0 && stat(stores[i], &ss) == 0)
        same = ss.st_dev == sd.st_dev && ss.st_ino == sd.st_ino; /* not there yet: lock.mdb */
      if (same)
        fc_cli_usage_error(
            "--%s %s: the %s of the store %s: written after the run, it would replace it; give "
            "another file",
            opt, fc_cli_quoted(out, q1, sizeof q1), files[f],
            fc_cli_quoted(stores[i], q2, sizeof q2));
    }
}

/* 1 when the LMDB environment at path has nothing committed (its newer meta page's main db holds
 * no entry, or data.mdb holds no byte): a store whose writer stopped before its first commit,
 * which the writing tools take as new. Read from data.mdb's two meta pages (LMDB 0.9's layout: the page header, then magic,
 * version, address, map size, the free list's and the main db's MDB_db, the last page, the
 * transaction id); 0 when it cannot tell. */
static inline int fc_cli_env_empty(const char *path) {
  enum { META = 16, PSIZE = META + 24, MAIN_ENTRIES = META + 72 + 32, TXNID = META + 128 };
  char p[4096];
  unsigned char pg[2][256];
  uint32_t magic, psize = 0;
  uint64_t entries[2] = {1, 1}, txnid[2] = {0, 0};
  if (snprintf(p, sizeof p, "%s/data.mdb", path) >= (int)sizeof p) return 0;
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat fst;
  if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_size == 0) {
    close(fd);
    return 1; /* LMDB made the file and wrote no page */
  }
  int ok = pread(fd, pg[0], sizeof pg[0], 0) == (ssize_t)sizeof pg[0];
  if (ok) memcpy(&psize, pg[0] + PSIZE, 4);
  ok = ok && psize >= 512 && psize <= 65536 &&
       pread(fd, pg[1], sizeof pg[1], psize) == (ssize_t)sizeof pg[1];
  close(fd);
  for (int i = 0; ok && i < 2; i++) {
    memcpy(&magic, pg[i] + META, 4);
    ok = magic == 0xBEEFC0DEu;
    memcpy(&entries[i], pg[i] + MAIN_ENTRIES, 8);
    memcpy(&txnid[i], pg[i] + TXNID, 8);
  }
  return ok && entries[txnid[1] > txnid[0]] == 0;
}

/* What fc_cli_say_not_a_store says after "path: " when rc means a folder without data.mdb or a
 * path that is no directory, or a shell pattern that matched nothing (shards/s* before any shard
 * was made: the shell passes it as it is) — a --json report's message: cache-verify's "fatal";
 * else NULL. */
static inline const char *fc_cli_not_a_store_why(const char *path, int rc) {
  struct stat st;
  if ((rc == ENOENT || rc == FC_ENOSTORE) && strpbrk(path, "*?[") && stat(path, &st) != 0 &&
      errno == ENOENT)
    return "no such store: a pattern that matched nothing (the shell passes it as it is: no "
           "store made there yet?)";
  if (rc == FC_ENOSTORE || (rc == ENOENT && stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
    return "not a featcache store (no data.mdb)";
  if (rc == ENOTDIR || (rc == ENOENT && stat(path, &st) == 0))
    return "not a featcache store (not a directory)";
  return NULL;
}

/* What fc_cli_say_not_a_store says after "path: " — no data.mdb, not a directory, an environment
 * with nothing committed, not the format — or NULL when rc means none of them. */
static inline const char *fc_cli_not_a_store_says(const char *path, int rc) {
  const char *why = fc_cli_not_a_store_why(path, rc);
  if (why) return why;
  if (rc == FC_EFORMAT && fc_cli_env_empty(path))
    return "an empty store: nothing was ever committed to it (its writer stopped before its "
           "first commit?); featurize, tokenize and cache-merge take it as new";
  if (rc == FC_EFORMAT)
    return "not a featcache store (not an LMDB environment with featcache/1 meta)";
  return NULL;
}

/* Says why path is no featcache store when rc (fc_store_open's) means that (above) and returns 1;
 * else 0. */
static inline int fc_cli_say_not_a_store(const char *path, int rc) {
  const char *why = fc_cli_not_a_store_says(path, rc);
  if (why) fc_cli_warn(path, "%s", why);
  return why != NULL;
}

/* 1 when path is a part of a split store (STORE/part-K, STORE's marker saying 2 or more parts),
 * STORE then in store; else 0. */
static inline int fc_cli_split_of_part(const char *path, char *store, size_t len) {
  const char *slash = strrchr(path, '/');
  unsigned n = 0;
  if (!slash || strncmp(slash + 1, "part-", 5) != 0 || !slash[6] ||
      strspn(slash + 6, "0123456789") != strlen(slash + 6) || (size_t)(slash - path) >= len)
    return 0;
  snprintf(store, len, "%.*s", (int)(slash - path), path);
  return fc_store_split_count(store, &n) == 0 && n >= 2;
}

/* Part path (STORE/part-K) of a split store that its writer never wrote: the job (featurize,
 * tokenize) stopped after the marker and before the part's first commit, leaving an LMDB
 * environment with nothing committed (or a data.mdb of 0 bytes), or the part not made (no
 * directory, or no data.mdb in it). An empty part holds nothing: the tools that list or change
 * the split store work on its other parts, saying it ("PART: an empty part: ...; " then `then`),
 * and 1 is returned. A missing part may also be one moved away, that holds data: a listing
 * (refused NULL) lists the others the same way; a tool that changes the split store refuses it
 * ("PART: missing ...: " then `refused`), and 2 is returned; so is an empty part when `then` is
 * NULL (a tool that reads the parts as a dataset: it would hold less than the store should). 0
 * for a part that holds a store (or something else: its open says what), or a path that is no
 * part of a split store. */
static inline int fc_cli_say_unwritten_part(const char *part, const char *then,
                                            const char *refused) {
  char mdb[4096], store[4096], q[512];
  struct stat st;
  if (snprintf(mdb, sizeof mdb, "%s/data.mdb", part) >= (int)sizeof mdb ||
      !fc_cli_split_of_part(part, store, sizeof store))
    return 0;
  const int missing = stat(mdb, &st) != 0 && errno == ENOENT;
  if (!missing && !fc_cli_env_empty(part)) return 0;
  fc_cli_quoted(store, q, sizeof q);
  if (!missing && !then) {
    fc_cli_warn(part,
                "an empty part: nothing was ever committed to it (its writer stopped before its "
                "first commit?): its utterances are not stored; featurize (or tokenize) -o %s "
                "again mends it; %s",
                q, refused);
    return 2;
  }
  if (missing && refused) {
    fc_cli_warn(part,
                "missing (its writer stopped before making it?): featurize (or tokenize) -o %s "
                "again makes it, or put back the part that was moved away; %s",
                q, refused);
    return 2;
  }
  fc_cli_warn(part, "%s: its utterances are not stored; featurize (or tokenize) -o %s again %s; %s",
              missing ? "missing (its writer stopped before making it?)"
                      : "an empty part: nothing was ever committed to it (its writer stopped "
                        "before its first commit?)",
              q, missing ? "makes it" : "mends it", then);
  return 1;
}

/* The pages of store path as cache-verify's first step checks them (fc_verify_opts.pages_only,
 * docs/cache-verify.md: a page LMDB's reads could crash on, a damaged free list or meta page).
 * 1 when it finds damage: *unsafe set when a page LMDB's reads could crash on, and that finding
 * (else the first) as "db key" into where and its problem into problem; -1 when stopped
 * (Ctrl-C); 0 when sound, or when the store cannot be checked (the caller's own open says why:
 * findings other than the pages' are not counted).
 * Before the caller opens the store: LMDB allows one environment of a file per process. */
static inline int fc_cli_pages_damaged_as(const char *path, int pages_only, int nolock, int *unsafe,
                                          char *where, size_t where_len, char *problem,
                                          size_t problem_len) {
  fc_verify_opts vo;
  fc_verify_opts_init(&vo);
  vo.pages_only = pages_only;
  vo.threads = 1;
  vo.nolock = nolock ? 1 : 0;
  vo.stop = &fc_cli_signal;
  fc_verify_report r;
  int rc = fc_verify_store(path, &vo, &r, NULL, 0), found = 0;
  *unsafe = !rc && r.unsafe_pages;
  for (size_t i = 0; !rc && i < r.count; i++) {
    const fc_verify_finding *f = &r.findings[i];
    if (f->severity != FC_VERIFY_ERROR) continue;
    if (strcmp(f->db, "env") || !f->key || strcmp(f->key, "data.mdb"))
      continue; /* not the pages' (no store, an empty one): the caller's open says it */
    /* unsafe: the finding that stopped the run, told by its words (the findings are sorted by
     * their words, not by when they were made: another page's may come after it); else the first */
    const int stopper = *unsafe && strstr(f->problem, "): LMDB's reads of that page could crash");
    if (found && !stopper) continue;
    snprintf(where, where_len, "%s %s", f->db, f->key ? f->key : "");
    snprintf(problem, problem_len, "%s", f->problem);
    found = 1;
    if (stopper) break;
  }
  fc_verify_report_free(&r);
  return rc == FC_EINTR ? -1 : found;
}
static inline int fc_cli_pages_damaged(const char *path, int nolock, int *unsafe, char *where,
                                       size_t where_len, char *problem, size_t problem_len) {
  return fc_cli_pages_damaged_as(path, 1, nolock, unsafe, where, where_len, problem, problem_len);
}

/* fc_cli_pages_damaged's finding as the tools say it, "damaged (WHERE: PROBLEM)", into said (when
 * it returns 1); returns what fc_cli_pages_damaged does. */
static inline int fc_cli_pages_damage_said_as(const char *path, int pages_only, char *said,
                                              size_t said_len) {
  char where[64], problem[1024];
  int unsafe;
  const int got = fc_cli_pages_damaged_as(path, pages_only, 0, &unsafe, where, sizeof where,
                                          problem, sizeof problem);
  if (got == 1) snprintf(said, said_len, "damaged (%s: %s)", where, problem);
  return got;
}
static inline int fc_cli_pages_damage_said(const char *path, char *said, size_t said_len) {
  return fc_cli_pages_damage_said_as(path, 1, said, said_len);
}

static inline int fc_cli_lock_unwritable(const char *dir);

/* 1 when this user cannot open the store (a part) at dir for writing — its data.mdb not writable
 * (another user's files, a read-only mount), or its lock.mdb (fc_cli_lock_unwritable) —, so that
 * featurize and tokenize check it instead of writing it ("A store you may only read"); else 0. */
static inline int fc_cli_store_unwritable(const char *dir) {
  char p[4200];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  if (access(p, W_OK) != 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) return 1;
  return fc_cli_lock_unwritable(dir);
}

/* The writers' page check (featurize, tokenize): each part of the existing store dir checked
 * before the store is opened for writing. full (--check-pages): as cache-verify's first step
 * checks it (every B-tree page walked); else the meta pages and the free list alone (pages_only
 * 2: milliseconds whatever the store's size). A damaged free list would hand this run's writes a
 * page a B-tree uses (they would write over it), a page past the file's end, or one page twice,
 * or have them fail; a malformed page could crash its lookups. A store this user may only read
 * (a part not writable: the run checks it instead, writing nothing) is read, not written: its
 * free list, which no read touches, is not checked, and full refuses only a page LMDB's reads
 * could crash on (the Loader's check: pages_only 3). Said (exit 1: FC_EXIT_FAIL), nothing written;
 * 0 when every part is sound, or there is no store yet; the signal's code when stopped. */
static inline int fc_cli_check_pages_before_write(const char *dir, int full) {
  struct stat st;
  char **parts = NULL, why[256];
  size_t n = 0;
  if (stat(dir, &st) != 0 || fc_store_expand(&dir, 1, &parts, &n, why, sizeof why) != 0)
    return 0; /* no store yet, or one the open will say what is wrong with */
  int code = 0, read_only = 0;
  for (size_t k = 0; k < n; k++) read_only |= fc_cli_store_unwritable(parts[k]);
  for (size_t k = 0; k < n && !code && (full || !read_only); k++) {
    char where[64], problem[1024];
    int unsafe;
    int got = fc_cli_pages_damaged_as(parts[k],
                                      read_only ? 3
                                      : full    ? 1
                                                : 2,
                                      0, &unsafe, where, sizeof where, problem, sizeof problem);
    if (got == 1 && read_only && !unsafe) got = 0; /* a writer's concern: none writes */
    if (got < 0) {
      fc_cli_warn(dir, "interrupted while checking its pages: nothing done");
      code = fc_cli_signal_exit();
    } else if (got == 1) { /* a page LMDB's reads could crash on: cache-merge refuses to read it;
                              * the way out said once (most findings say it themselves) */
      const int hint = !unsafe && !strstr(problem, "cache-merge -o");
      fc_cli_warn(parts[k], "damaged (%s: %s): nothing written (cache-verify says more%s)", where,
                  problem, hint ? "; cache-merge -o NEW STORE copies it into a sound one" : "");
      code = FC_EXIT_FAIL;
    }
  }
  fc_store_paths_free(parts, n);
  return code;
}

/* Record in s (a store, or part 0 of a split store) that a run over shard k of n writes into it:
 * meta shard/K/N -> "K/N", kept when there (docs/FORMAT.md "Shards"; read by cache-merge and
 * cache-verify, libcache/core/store/store_shards.c). n == 1 (a run without --shard) writes
 * shard/0/1 only when s records some shard already: the store then holds that run's whole list.
 * Returns 0 or a store error. */
static inline int fc_cli_mark_shard(fc_store *s, uint32_t k, uint32_t n) {
  if (n == 1) {
    fc_rtxn *t;
    fc_cursor *c;
    const void *key;
    size_t kl;
    int rc = fc_store_read_begin(s, &t);
    if (rc) return rc;
    if ((rc = fc_cursor_open(t, FC_DB_META, &c)) == 0) {
      if ((rc = fc_cursor_seek(c, "shard/", 6)) == 0) rc = fc_cursor_next(c, &key, &kl, NULL, NULL);
      fc_cursor_close(c);
    }
    fc_rtxn_end(t);
    if (rc == FC_ENOTFOUND || (!rc && (kl < 6 || memcmp(key, "shard/", 6) != 0))) return 0;
    if (rc) return rc;
  }
  char key[40], val[24];
  int kl = snprintf(key, sizeof key, "shard/%u/%u", k, n);
  int vl = snprintf(val, sizeof val, "%u/%u", k, n);
  fc_put p = {FC_DB_META, key, (size_t)kl, val, (size_t)vl, FC_PUT_NOOVERWRITE};
  return fc_store_write(s, &p, 1);
}

/* The type of the file system that holds path — the mount whose point is the longest prefix of its
 * real path (of its nearest existing folder, for a store still to be made) in the mount table
 * (FC_MOUNTINFO, default /proc/self/mountinfo: a test names a table of its own) — into type; 0,
 * or -1 when it cannot be told. */
static inline int fc_cli_fs_type(const char *path, char *type, size_t len) {
  char real[PATH_MAX], probe[PATH_MAX];
  snprintf(probe, sizeof probe, "%s", path);
  while (!realpath(probe, real)) { /* not there yet: the folder it would be made in */
    char *slash = strrchr(probe, '/');
    if (!slash && !realpath(".", real)) return -1;
    if (!slash) break;
    slash[slash == probe] = '\0'; /* "/x" -> "/" */
  }
  const char *table = getenv("FC_MOUNTINFO");
  FILE *f = fopen(table && *table ? table : "/proc/self/mountinfo", "r");
  if (!f) return -1;
  char *line = NULL, *save;
  size_t cap = 0, best = 0;
  int found = -1;
  while (getline(&line, &cap, f) > 0) { /* ID PARENT MAJ:MIN ROOT POINT OPTS ... - TYPE ... */
    char *dash = strstr(line, " - "), *point = NULL, *tok = strtok_r(line, " ", &save);
    if (!dash) continue;
    *dash = '\0';
    for (int i = 0; tok && i < 4; i++) point = tok = strtok_r(NULL, " ", &save);
    if (!point) continue;
    size_t m = 0;
    for (const char *c = point; *c; m++) { /* unescape \NNN (a space is \040) */
      if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] >= '0' && c[2] <= '7' && c[3] >= '0' &&
          c[3] <= '7') {
        point[m] = (char)((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
        c += 4;
      } else {
        point[m] = *c++;
      }
    }
    point[m] = '\0';
    const size_t at = m == 1 ? 0 : m; /* "/" holds every path */
    if (strncmp(real, point, at) != 0 || (real[at] != '/' && real[at] != '\0') || at < best)
      continue;
    const char *t = strtok_r(dash + 3, " ", &save);
    if (!t) continue;
    best = at; /* a later mount over the same point wins */
    found = 0;
    snprintf(type, len, "%s", t);
  }
  free(line);
  fclose(f);
  return found;
}

/* A writer about to open the store at dir on a network file system (NFS, SMB, Lustre, Ceph...)
 * says so, whatever -q: LMDB's lock file and memory map need a local one, and a store written
 * over the network can be corrupted silently (docs/scale-out.md "File systems"). The run goes on
 * (a single writer on some mounts works): said, not refused. */
static inline void fc_cli_warn_network_fs(const char *dir) {
  static const char *const net[] = {"nfs",        "nfs4",      "cifs",
                                    "smb3",       "smbfs",     "lustre",
                                    "ceph",       "9p",        "gpfs",
                                    "beegfs",     "glusterfs", "fuse.glusterfs",
                                    "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse",
                                    "afs",        "davfs",     "fuse.cephfs",
                                    NULL};
  char type[64];
  if (fc_cli_fs_type(dir, type, sizeof type) != 0) return;
  for (int i = 0; net[i]; i++)
    if (strcmp(type, net[i]) == 0) {
      fc_cli_warn(dir,
                  "on a network file system (%s): LMDB writers need a local one, and a store "
                  "written over the network can be corrupted silently: write it on local disk or "
                  "tmpfs and copy it there when done (docs/scale-out.md \"File systems\")",
                  type);
      return;
    }
}

/* A writer about to open dir (a store, or a split store's parts) says so when cache-prune holds
 * the store's writer lock (docs/FORMAT.md "The writer lock"): the open that follows waits for it
 * without a word, and a job that seems hung is worse than a line that says why. Looks with a
 * lock of its own, released at once; nothing is said when the store is new or the lock free. */
/* 1 when data (a data.mdb) is flocked exclusive — a cache-prune runs on it —, told by a shared
 * lock tried and released at once; 0 when not, or it cannot be opened. */
static inline int fc_cli_held_exclusive(const char *data) {
  int fd = open(data, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const int busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd); /* releases the lock taken to look */
  return busy;
}

static inline void fc_cli_note_prune_running(const char *dir) {
  unsigned n = 0;
  if (fc_store_split_count(dir, &n) != 0) return;
  for (unsigned k = 0; k < (n ? n : 1); k++) {
    char part[4096], data[4200];
    if (n && fc_store_part_path(dir, k, part, sizeof part)) return;
    snprintf(data, sizeof data, "%s/data.mdb", n ? part : dir);
    if (fc_cli_held_exclusive(data)) {
      fc_cli_warn(dir, "cache-prune is running on it: waiting until it has finished");
      return;
    }
  }
}

/* The reason, after "STORE: ", that a store is read without its reader lock. */
#define FC_CLI_LOCK_UNWRITABLE \
  "not writable by this user (lock.mdb): LMDB cannot take its reader lock"

/* 1 when dir holds a store this user can read but whose lock.mdb it cannot open for writing (or,
 * with none, cannot create: the directory is not writable) — a teammate's dataset, which LMDB
 * opens only lock-free (MDB_NOLOCK); else 0. The library's check of that case for the loader
 * (store_lock.h), private to it. A read-only mount is not this case (EROFS: no writer there). */
static inline int fc_cli_lock_unwritable(const char *dir) {
  char p[4200];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  if (access(p, R_OK) != 0) return 0;
  snprintf(p, sizeof p, "%s/lock.mdb", dir);
  if (access(p, F_OK) == 0) return access(p, W_OK) != 0 && errno == EACCES;
  return errno == ENOENT && access(dir, W_OK) != 0 && errno == EACCES;
}

/* Open a store only to read it (cache-config's listing, cache-prune --dry-run): flags are
 * FC_STORE_RDONLY and the like. A store whose lock.mdb this user cannot open for writing (a
 * teammate's dataset: LMDB fails its open with EACCES) is read lock-free (MDB_NOLOCK), as
 * cache-verify reads it, and that is said: without the reader lock, a writer committing meanwhile
 * may reuse the pages being read. Only that case is retried; another EACCES (data.mdb itself
 * unreadable) is returned as it is. So is a store on a full copy-on-write disk (ENOSPC, EDQUOT:
 * lock.mdb's page cannot be written, libcache/core/store/store_once.c), read lock-free as
 * cache-verify reads it, and said. Returns fc_store_open's code. */
static inline int fc_cli_open_to_read(const char *path, unsigned flags, fc_store **s) {
  int rc = fc_store_open(path, flags, s);
  if ((rc == ENOSPC || rc == EDQUOT) && (flags & FC_STORE_RDONLY) && !(flags & FC_STORE_NOLOCK)) {
    const int full = rc;
    if ((rc = fc_store_open(path, flags | FC_STORE_NOLOCK, s)) == 0)
      fc_cli_warn(path,
                  "lock.mdb cannot be written (%s): read without it (MDB_NOLOCK), as cache-verify "
                  "reads such a store; a writer committing meanwhile could make what is read wrong",
                  fc_strerror(full));
    return rc ? full : 0;
  }
  if (rc != EACCES || (flags & FC_STORE_NOLOCK) || !fc_cli_lock_unwritable(path)) return rc;
  if ((rc = fc_store_open(path, flags | FC_STORE_NOLOCK, s)) == 0)
    fc_cli_warn(path,
                "%s: read without it (MDB_NOLOCK), as cache-verify reads such a store; a "
                "writer committing meanwhile could make what is read wrong",
                FC_CLI_LOCK_UNWRITABLE);
  return rc;
}

/* A store this user may not write, opened to be checked instead (featurize, tokenize: their pages'
 * "A store you may only read"), as its parts: read-only, with its lock file when this user may
 * write that (a read-only mount: LMDB reads without it), else lock-free (another user's folder).
 * Returns 0 or the open's error (ENOENT, FC_ENOSTORE: no store there to check). */
static inline int fc_cli_open_to_check(const char *dir, fc_store ***parts, unsigned *n) {
  char why[256];
  int rc = fc_store_open_split(dir, FC_STORE_RDONLY, 0, parts, n, why, sizeof why);
  if (rc == EACCES || rc == EPERM)
    rc = fc_store_open_split(dir, FC_STORE_RDONLY | FC_STORE_NOLOCK, 0, parts, n, why, sizeof why);
  return rc;
}

/* A check's first line at most this many of what it lacks, one line each (featurize -v: all). */
#define FC_CLI_NOT_STORED_SAID 10

/* The end of such a check of n inputs of one kind (what: "input", "line"): stored, missing (named
 * above: the first `named` of them), failed; write_err says why the store could not be written.
 * Every one stored (said unless quiet), failures alone (said unless quiet and allowed), or how
 * many are missing and what to do. */
static inline void fc_cli_check_summary(const char *store, const char *what, uint64_t n,
                                        uint64_t stored, uint64_t missing, uint64_t named,
                                        uint64_t failed, int write_err, const fc_cli_max_failed *mf,
                                        int allowed, int quiet) {
  char failures[96] = "";
  if (failed)
    snprintf(failures, sizeof failures, ", %llu failed%s%s%s", (unsigned long long)failed,
             mf->text[0] ? (allowed ? " (allowed by --max-failed " : " (more than --max-failed ")
                         : "",
             mf->text, mf->text[0] ? ")" : "");
  if (missing) {
    char unnamed[64] = "", refused[160];
    if (named < missing)
      snprintf(unnamed, sizeof unnamed, " (%llu not named above)",
               (unsigned long long)(missing - named));
    fc_cli_warn(store,
                "%llu of %llu %s%s not stored%s%s, and the store cannot be written (%s): %s them "
                "into a store you may write, or have its owner run %s",
                (unsigned long long)missing, (unsigned long long)n, what, n == 1 ? "" : "s",
                unnamed, failures, fc_cli_write_refused(store, write_err, refused, sizeof refused),
                fc_cli_tool, fc_cli_tool);
  } else if (failed && (!quiet || !allowed)) {
    fc_cli_warn(store, "%llu of %llu stored%s; checked, nothing written (the store is read-only)",
                (unsigned long long)stored, (unsigned long long)n, failures);
  } else if (!failed && !quiet) {
    fc_cli_warn(store, "every %s is stored (%llu checked; the store is read-only: nothing written)",
                what, (unsigned long long)n);
  }
}

/* Such a check stopped by a signal (what: "input", "line"): how far it got, for nothing is
 * committed by a check (a run's line says "finished work committed"). */
static inline void fc_cli_check_interrupted(const char *what, uint64_t n, uint64_t stored,
                                            uint64_t missing, uint64_t failed,
                                            uint64_t not_started) {
  fprintf(stderr, "%s: interrupted: %llu of %llu %s%s checked (%llu stored, %llu not stored",
          fc_cli_tool, (unsigned long long)(stored + missing + failed), (unsigned long long)n, what,
          n == 1 ? "" : "s", (unsigned long long)stored, (unsigned long long)missing);
  if (failed) fprintf(stderr, ", %llu failed", (unsigned long long)failed);
  fprintf(stderr, "), %llu not started; nothing written (the store is read-only)\n",
          (unsigned long long)not_started);
}

/* Who holds dir's writer lock (an flock of data.mdb, docs/FORMAT.md "The writer lock"), for a
 * refusal to say: *excl 1 when it is held exclusive (a cache-prune runs on it), else 0; the pid
 * of a holder /proc/locks names (the exclusive one, else the first writer) in *pid, 0 when none
 * is seen (no /proc, or a holder in another pid namespace), its command name in comm, and in
 * *others the other holders seen. Without /proc/locks, exclusive or not is told by a shared lock
 * tried and released at once. */
static inline void fc_cli_lock_holder(const char *dir, int *excl, long *pid, char comm[32],
                                      unsigned *others) {
  char p[4200];
  struct stat st;
  *excl = 0;
  *pid = 0;
  *others = 0;
  comm[0] = '\0';
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  if (stat(p, &st) != 0) return;
  FILE *f = fopen("/proc/locks", "r");
  char line[256];
  int seen = 0;
  while (f && fgets(line, sizeof line, f)) {
    char type[16], mode[16];
    long lp;
    unsigned maj, min;
    unsigned long ino;
    /* "3: FLOCK  ADVISORY  WRITE 410 fe:00:11034718 0 EOF"; a waiter's line has "->" for type */
    if (sscanf(line, "%*[^:]: %15s %*s %15s %ld %x:%x:%lu", type, mode, &lp, &maj, &min, &ino) !=
            6 ||
        strcmp(type, "FLOCK") || ino != (unsigned long)st.st_ino || maj != major(st.st_dev) ||
        min != minor(st.st_dev) || lp == (long)getpid())
      continue;
    const int w = strcmp(mode, "WRITE") == 0;
    if (!seen++ || (w && !*excl)) {
      *excl = w;
      *pid = lp > 0 ? lp : 0;
    }
  }
  if (f) fclose(f);
  if (!seen) {
    *excl = fc_cli_held_exclusive(p);
    return;
  }
  *others = *excl ? 0 : (unsigned)seen - 1; /* an exclusive holder is alone */
  if (*pid) {
    snprintf(p, sizeof p, "/proc/%ld/comm", *pid);
    FILE *c = fopen(p, "r");
    if (c && fgets(comm, 32, c)) comm[strcspn(comm, "\n")] = '\0';
    if (c) fclose(c);
  }
}

/* What fc_cli_expand_stores made, freed at exit (the tools return from many places). */
static char **fc_cli_expanded;
static size_t fc_cli_n_expanded;
static const char **fc_cli_argv_copy;

static inline void fc_cli_free_expanded(void) {
  fc_store_paths_free(fc_cli_expanded, fc_cli_n_expanded);
  free(fc_cli_argv_copy);
  fc_cli_expanded = NULL;
  fc_cli_argv_copy = NULL;
}

/* Room for n stores open at once: each holds a few file descriptors (data.mdb, lock.mdb), so a
 * list of some hundreds of shards passes the usual soft limit of 1024 open files (EMFILE). The
 * soft limit is raised as far as they need, at most to the hard limit; past that, the open that
 * fails says "Too many open files". */
static inline void fc_cli_room_for_stores(size_t n) {
  struct rlimit rl;
  rlim_t want = (rlim_t)n * 4 + 64;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
    return;
  rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
  (void)setrlimit(RLIMIT_NOFILE, &rl);
}

/* Before a writer opens dir (featurize, tokenize): room for its parts — writers when given, else
 * its split marker's count — so that a soft limit below what they need (ulimit -Sn 12, a job
 * runner's) is raised before the open, which it failed ("part-2: Too many open files"). */
static inline unsigned fc_cli_parts_to_open(const char *dir, unsigned writers) {
  unsigned n = writers;
  if (!n && fc_store_split_count(dir, &n) != 0) n = 0;
  return n > 1 ? n : 1;
}
static inline void fc_cli_room_for_store(const char *dir, unsigned writers) {
  fc_cli_room_for_stores(fc_cli_parts_to_open(dir, writers));
}

/* A store's open that failed for want of file descriptors (EMFILE; why: the open's words) once
 * fc_cli_room_for_store had raised the soft limit as far as the hard one lets it (ulimit -n 12
 * sets both): said with the hard limit and what to do, nothing done. */
static inline void fc_cli_say_fd_limit(const char *why, const char *dir, unsigned writers) {
  const unsigned n_parts = fc_cli_parts_to_open(dir, writers);
  struct rlimit rl;
  char lim[32] = "a few";
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY)
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)rl.rlim_max);
  fc_cli_warn(NULL,
              "%s: this process may open %s files at most (its hard limit: ulimit -Hn), and a "
              "store of %u part%s holds 3 a part beside the tool's own: raise it (ulimit -n 1024 "
              "in a new shell) and run again; nothing done",
              why, lim, n_parts, n_parts > 1 ? "s" : "");
}

/* The STORE words (n of them) could not be listed, fc_store_expand's rc and why (its words, or
 * ""): said, and the exit code returned, the same in every tool. Out of memory (ENOMEM) is no
 * usage error — a rerun may get past it —: 1, with the summary every exit 1 has, "done: 0 of N
 * stores (N not started)"; a split store's marker that cannot be read is 2. Nothing is done
 * either way. */
static inline int fc_cli_say_listing_failed(int rc, const char *why, size_t n) {
  if (rc == ENOMEM) {
    fc_cli_warn(NULL,
                "%s while listing the stores: done: 0 of %zu store%s (%zu not started), "
                "nothing done",
                why && why[0] ? why : fc_strerror(rc), n, n == 1 ? "" : "s", n);
    return FC_EXIT_FAIL;
  }
  fc_cli_warn(NULL, "%s", why && why[0] ? why : fc_strerror(rc));
  return FC_EXIT_USAGE;
}

/* The stores to open for the STORE words stores[0..*n): each split store (fc_store.h) replaced by
 * its parts, others kept. Returns a new array (freed at exit; one call per process) and sets *n;
 * exits as fc_cli_say_listing_failed says when they cannot be listed. */
static inline const char **fc_cli_expand_stores(const char *const *stores, size_t *n) {
  char why[512] = "";
  int rc = fc_store_expand(stores, *n, &fc_cli_expanded, &fc_cli_n_expanded, why, sizeof why);
  if (rc) exit(fc_cli_say_listing_failed(rc, why, *n));
  atexit(fc_cli_free_expanded);
  *n = fc_cli_n_expanded;
  fc_cli_room_for_stores(*n);
  return (const char **)fc_cli_expanded;
}

typedef struct fc_cli_dir_id {
  dev_t dev;
  ino_t ino;
  size_t i;
} fc_cli_dir_id;

static int fc_cli_dir_id_cmp(const void *a, const void *b) {
  const fc_cli_dir_id *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Which STORE word each store of fc_store_expand(words[0..nw)) came from: word w's are stores
 * first[w] .. first[w + 1] - 1 (a split store's parts in part order, or the word itself); first
 * has nw + 1 entries. Returns 0, or -1 when the words no longer expand to n stores (a split
 * store's marker changed meanwhile). */
static inline int fc_cli_store_groups(const char *const *words, size_t nw, size_t n,
                                      size_t *first) {
  size_t k = 0;
  for (size_t w = 0; w < nw; w++) {
    unsigned parts = 0;
    if (fc_store_split_count(words[w], &parts) != 0) parts = 0;
    first[w] = k;
    k += parts ? parts : 1;
  }
  first[nw] = k;
  return k == n ? 0 : -1;
}

/* A store named twice among stores[0..n), the fc_store_expand of the STORE words words[0..nw):
 * another spelling of one directory, a split store given twice, or a split store and one of its
 * parts. LMDB allows one open of an environment per process (closing one handle drops the
 * process's locks on it), so the tools that open them all refuse that. Returns 0, or 1 with
 * `WORD: given twice (also as WORD)` in msg for the first store (in the order given) that repeats
 * one before it, both named as given: `sp/part-1: given twice (also as part 1 of sp)`. A path
 * that cannot be stat'ed is left to the open that follows. Sorts, so thousands of shards cost no
 * more than their stat calls. */
static inline int fc_cli_store_twice(const char *const *words, size_t nw, const char *const *stores,
                                     size_t n, char *msg, size_t len) {
  fc_cli_dir_id *v = malloc((n ? n : 1) * sizeof *v);
  size_t *word = malloc((n ? n : 1) * sizeof *word), *first = malloc((nw + 1) * sizeof *first);
  long *part = malloc((n ? n : 1) * sizeof *part);
  size_t m = 0;
  int found = 0, named = 0;
  if (!v || !word || !first || !part) goto out;
  if (fc_cli_store_groups(words, nw, n, first) == 0) { /* each store's word, and its part */
    named = 1;
    for (size_t w = 0; w < nw; w++)
      for (size_t k = first[w]; k < first[w + 1]; k++)
        word[k] = w, part[k] = strcmp(stores[k], words[w]) != 0 ? (long)(k - first[w]) : -1;
  }
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(stores[i], &st) == 0) v[m++] = (fc_cli_dir_id){st.st_dev, st.st_ino, i};
  }
  qsort(v, m, sizeof *v, fc_cli_dir_id_cmp);
  size_t bi = 0, bj = SIZE_MAX; /* of each run of one directory its first two, the earliest pair */
  for (size_t a = 1; a < m; a++)
    if (v[a].dev == v[a - 1].dev && v[a].ino == v[a - 1].ino &&
        (a < 2 || v[a - 2].dev != v[a].dev || v[a - 2].ino != v[a].ino) && v[a].i < bj)
      bi = v[a - 1].i, bj = v[a].i;
  if (bj != SIZE_MAX && named) {
    char wi[1024], wj[1024]; /* quoted as names are; the message cut short past len */
    fc_cli_quoted(words[word[bi]], wi, sizeof wi);
    fc_cli_quoted(words[word[bj]], wj, sizeof wj);
    int w;
    if (part[bj] < 0 && part[bi] >= 0)
      w = snprintf(msg, len, "%s: given twice (also as part %ld of %s)", wj, part[bi], wi);
    else if (part[bj] >= 0 && part[bi] < 0)
      w = snprintf(msg, len, "%s: given twice (its part %ld also as %s)", wj, part[bj], wi);
    else
      w = snprintf(msg, len, "%s: given twice (also as %s)", wj, wi);
    found = w >= 0;
  } else if (bj != SIZE_MAX) { /* words and stores do not match: name the stores */
    char si[1024], sj[1024];
    found =
        snprintf(msg, len, "%s: given twice (also as %s)", fc_cli_quoted(stores[bj], sj, sizeof sj),
                 fc_cli_quoted(stores[bi], si, sizeof si)) >= 0;
  }
out:
  free(v);
  free(word);
  free(first);
  free(part);
  return found;
}

/* fc_cli_expand_stores over argv[first..*argc): *argv and *argc then name the stores to open after
 * the first `first` words (argv[0] and the options stay). */
static inline void fc_cli_expand_argv(int *argc, char ***argv, int first) {
  size_t ns = (size_t)(*argc - first);
  const char **st = fc_cli_expand_stores((const char *const *)(*argv + first), &ns);
  if (!(fc_cli_argv_copy = malloc((first + ns + 1) * sizeof *fc_cli_argv_copy)))
    exit(fc_cli_say_listing_failed(ENOMEM, NULL, (size_t)(*argc - first)));
  memcpy(fc_cli_argv_copy, *argv, first * sizeof *fc_cli_argv_copy);
  memcpy(fc_cli_argv_copy + first, st, ns * sizeof *fc_cli_argv_copy);
  fc_cli_argv_copy[first + ns] = NULL;
  *argv = (char **)fc_cli_argv_copy;
  *argc = first + (int)ns;
}

#endif
