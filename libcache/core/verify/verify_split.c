/* cache-verify: a split store as a whole, and each part's place in it (verify_int.h, fc_verify.h).
 *
 * A reader finds a split store's parts by the marker's N alone (part-0 .. part-N-1): a part that
 * says it is K/N' with N' != N, or sits in another part-J, or a part-K with K >= N, holds records
 * that no reader of the split store sees or routes to. Those are what these checks name. */
#include "libcache/core/verify/verify_int.h"
#include "libcache/core/store/store_int.h"
#include "formats/common/alloc.h"
#include "formats/common/why.h"

#include <dirent.h>
#include <limits.h>

/* "part-K" (K decimal, no leading zeros unless K is 0) -> 1 and *k; anything else 0. */
static int part_name(const char *name, unsigned *k) {
  if (strncmp(name, "part-", 5) != 0) return 0;
  const char *d = name + 5;
  if (!*d || (d[0] == '0' && d[1])) return 0;
  unsigned long v = 0;
  for (; *d; d++) {
    if (*d < '0' || *d > '9') return 0;
    v = v * 10 + (unsigned long)(*d - '0');
    if (v > UINT_MAX) return 0;
  }
  *k = (unsigned)v;
  return 1;
}

/* A store with data but without meta part in a split store's part-K (K < N): no writer made it
 * (a part gets meta part right after meta format, before anything else: a job killed between the
 * two leaves an empty part, which the next writer completes); a plain store copied in holds ids
 * of other parts. Said, and its ids then checked against part K of N, as readers take it. */
static void check_unmarked_part(vctx *c, char *p, char *slash, const char *base) {
  unsigned k, n = 0;
  const uint64_t *e = c->r->entries;
  if (!(e[FC_DB_AUDIO] || e[FC_DB_TEXT] || e[FC_DB_FEAT] || e[FC_DB_TOK])) return;
  if (!part_name(base, &k)) return;
  const char *parent = ".";
  if (slash == p)
    parent = "/";
  else if (slash)
    *slash = '\0', parent = p;
  if (fc_store_split_count(parent, &n) != 0 || n < 2 || k >= n) return;
  vf_add(c, FC_VERIFY_ERROR, FC_DB_META, "part", 4, NULL, 0,
         "missing: the store lies in part-%u of the split store %s of %u parts, but does not say "
         "it is a part (a store copied in from elsewhere?): readers take it as part %u",
         k, parent, n, k);
  c->part_k = k, c->part_n = n;
}

void vf_check_part_place(vctx *c, const char *dir) {
  char p[4096];
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/') len--;
  if (len >= sizeof p) return;
  memcpy(p, dir, len);
  p[len] = '\0';
  char *slash = strrchr(p, '/');
  const char *base = slash ? slash + 1 : p;
  if (c->part_n < 2) {
    if (!c->part_unreadable) check_unmarked_part(c, p, slash, base);
    return;
  }
  unsigned k;
  if (!part_name(base, &k) || k != c->part_k) {
    vf_add(c, FC_VERIFY_ERROR, FC_DB_META, "part", 4, NULL, 0,
           "says it is part %u of %u, but lies in a directory named %s: readers of the split "
           "store look for part %u in part-%u",
           c->part_k, c->part_n, base, c->part_k, c->part_k);
    return;
  }
  const char *parent = ".";
  if (slash == p)
    parent = "/";
  else if (slash)
    *slash = '\0', parent = p;
  unsigned n = 0;
  int rc = fc_store_split_count(parent, &n);
  if (rc || n == 0)
    vf_add(c, FC_VERIFY_WARNING, FC_DB_META, "part", 4, NULL, 0,
           "part %u of a split store of %u parts, but %s/featcache-split %s: give the split "
           "store's directory",
           c->part_k, c->part_n, parent, rc ? fc_strerror(rc) : "does not exist");
  else if (n != c->part_n)
    vf_add(c, FC_VERIFY_ERROR, FC_DB_META, "part", 4, NULL, 0,
           "says it is part %u of %u, but the split store's marker says %u parts: its ids are "
           "routed to other parts than the ones they are in",
           c->part_k, c->part_n, n);
}

int vf_verify_split(vctx *c, const char *dir, unsigned n, char *why, size_t why_len) {
  fc_verify_report *out = c->r;
  out->opened = 1;
  unsigned char *seen = fc_calloc(n, 1);
  DIR *d = seen ? opendir(dir) : NULL;
  if (!seen || !d) {
    int rc = seen ? errno : ENOMEM;
    fc_why(why, why_len, "%s: %s", FC_WHY_NAME(dir), fc_strerror(rc));
    free(seen);
    return rc;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    unsigned k;
    if (!part_name(e->d_name, &k)) continue;
    if (k >= n)
      vf_add(c, FC_VERIFY_ERROR, DB_ENV, e->d_name, strlen(e->d_name), NULL, 0,
             "a part beyond the marker's %u parts: its records are hidden from every reader of "
             "the split store",
             n);
    else
      seen[k] = 1;
  }
  closedir(d);
  for (unsigned k = 0; k < n; k++) {
    char name[32], p[4096];
    int nl = snprintf(name, sizeof name, "part-%u", k);
    struct stat st;
    if (seen[k] && fc_store_part_path(dir, k, p, sizeof p) == 0 &&
        snprintf(p + strlen(p), sizeof p - strlen(p), "/data.mdb") > 0 && stat(p, &st) == 0)
      continue;
    vf_add(c, FC_VERIFY_ERROR, DB_ENV, name, (size_t)nl, NULL, 0,
           "missing: the marker says %u parts (a writer creates it; until then its ids are not "
           "stored)",
           n);
  }
  free(seen);
  return 0;
}
