/* featcache — the readings of a phonemes vocab pass, kept for the run (tok_internal.h "phcache").
 *
 * An entry: u64 line, 16 B text digest, u32 length (NO_READING: the line has none), the reading's
 * bytes. The vocab pass appends them in the order it reads the lines; the run reads them back in
 * that order, its lines being the same lines or a subsequence of them (a shard, a split store's
 * part, the lines not stored yet). So the cache is a log read with a cursor, not a map: memory is
 * mem_bytes at most and nothing in it grows with the corpus beyond that. The entries past
 * mem_bytes go to an unnamed temporary file (O_TMPFILE; else a name unlinked at once), gone with
 * the process whatever ends it. */
#include "libcache/text/tokenize/tok_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/common/alloc.h"

#define HEAD 28 /* u64 line, 16 B digest, u32 length */
#define NO_READING UINT32_MAX

struct tok_phcache {
  char *dir; /* where the file goes; NULL: $TMPDIR */
  size_t mem_max;
  uint8_t *mem; /* the first entries */
  size_t mem_len, mem_cap;
  FILE *file; /* the entries after them, once one did not fit */
  uint64_t file_len, entries;
  int full; /* an add failed: it takes no more */
  int reading; /* rewound: lookups only */
  int broken; /* a read of the file failed: no more lookups */
  /* the cursor: the next entry in memory (mpos < mem_len) or in the file */
  size_t mpos;
  int have; /* the entry at the cursor is read (its head, and in memory its bytes at body) */
  uint64_t line;
  uint8_t digest[16];
  uint32_t len;
  const uint8_t *body;
};

long long tok_phcache_mem_bytes(void) {
  const char *e = getenv("FC_PHONEME_CACHE");
  if (!e || !*e) return 64ll << 20;
  if (strcmp(e, "off") == 0) return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(e, &end, 10);
  int shift = *end == 'K' || *end == 'k'   ? 10
              : *end == 'M' || *end == 'm' ? 20
              : *end == 'G' || *end == 'g' ? 30
                                           : 0;
  if (shift) end++;
  if (shift && strcmp(end, "iB") == 0) end += 2; /* 64MiB, as the tools' sizes are written */
  if (errno || end == e || *end || v > (1ull << 40)) return 64ll << 20; /* as without it */
  return (long long)(v << shift);
}

int tok_phcache_open(const char *dir, size_t mem_bytes, tok_phcache **out) {
  *out = NULL;
  tok_phcache *c = fc_calloc(1, sizeof *c);
  if (!c) return ENOMEM;
  if (dir && !(c->dir = fc_strdup(dir))) {
    free(c);
    return ENOMEM;
  }
  c->mem_max = mem_bytes;
  *out = c;
  return 0;
}

void tok_phcache_free(tok_phcache *c) {
  if (!c) return;
  if (c->file) fclose(c->file);
  free(c->mem);
  free(c->dir);
  free(c);
}

static FILE *open_file(const char *dir) {
  if (!dir) dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  int fd = -1;
#ifdef O_TMPFILE
  fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); /* never seen, gone on exit */
#endif
  if (fd < 0) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/.tokenize-phonemes-XXXXXX", dir) >= (int)sizeof p) return NULL;
    fd = mkstemp(p);
    if (fd >= 0) unlink(p);
  }
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "w+b");
  if (!f) close(fd);
  return f;
}

/* The file's entries are lost (a failed write may have left any of them short): the cache keeps
 * those in memory. */
static void drop_file(tok_phcache *c) {
  if (c->file) fclose(c->file);
  c->file = NULL;
  c->file_len = 0;
  c->full = 1;
}

int tok_phcache_add(tok_phcache *c, uint64_t line, const fc_digest *text, const char *reading,
                    size_t len) {
  if (c->reading) return FC_EBADSTATE;
  if (c->full) return 0; /* said once */
  if (reading && len >= NO_READING) {
    c->full = 1;
    return FC_ETOOLONG;
  }
  uint8_t head[HEAD];
  uint32_t n = reading ? (uint32_t)len : NO_READING;
  memcpy(head, &line, 8);
  memcpy(head + 8, text->bytes, 16);
  memcpy(head + 24, &n, 4);
  const size_t size = HEAD + (reading ? len : 0);
  if (!c->file && size <= c->mem_max - c->mem_len) {
    if (c->mem_len + size > c->mem_cap) {
      size_t cap = c->mem_cap ? 2 * c->mem_cap : 1 << 16;
      while (cap < c->mem_len + size) cap *= 2;
      if (cap > c->mem_max) cap = c->mem_max;
      uint8_t *m = fc_realloc(c->mem, cap);
      if (!m) {
        c->full = 1;
        return ENOMEM;
      }
      c->mem = m;
      c->mem_cap = cap;
    }
    memcpy(c->mem + c->mem_len, head, HEAD);
    if (reading && len) memcpy(c->mem + c->mem_len + HEAD, reading, len);
    c->mem_len += size;
    c->entries++;
    return 0;
  }
  /* from the first entry that does not fit on, every entry goes to the file: the order holds */
  if (!c->file && !(c->file = open_file(c->dir))) {
    int e = errno ? errno : EIO;
    c->full = 1;
    return e;
  }
  if (fwrite(head, 1, HEAD, c->file) != HEAD ||
      (reading && len && fwrite(reading, 1, len, c->file) != len)) {
    int e = errno ? errno : EIO;
    drop_file(c);
    return e;
  }
  c->file_len += size;
  c->entries++;
  return 0;
}

void tok_phcache_rewind(tok_phcache *c) {
  if (!c->reading && c->file && fflush(c->file) != 0) drop_file(c); /* a full disk, say */
  c->reading = 1;
  c->mpos = 0;
  c->have = 0;
  if (c->file && fseeko(c->file, 0, SEEK_SET) != 0) c->broken = 1;
}

/* Read the head of the entry at the cursor (once): 1, or 0 at the end or after a failed read. */
static int peek(tok_phcache *c) {
  if (c->have) return 1;
  if (c->broken || !c->reading) return 0;
  uint8_t head[HEAD];
  if (c->mpos < c->mem_len) {
    memcpy(head, c->mem + c->mpos, HEAD);
    c->body = c->mem + c->mpos + HEAD;
  } else if (!c->file) {
    return 0;
  } else {
    size_t k = fread(head, 1, HEAD, c->file);
    if (k != HEAD) { /* the end; or short: read past what was written (never seen) */
      if (k || ferror(c->file)) c->broken = 1;
      return 0;
    }
    c->body = NULL;
  }
  memcpy(&c->line, head, 8);
  memcpy(c->digest, head + 8, 16);
  memcpy(&c->len, head + 24, 4);
  c->have = 1;
  return 1;
}

/* Past the entry at the cursor, its bytes unread. */
static void skip(tok_phcache *c) {
  const uint32_t n = c->len == NO_READING ? 0 : c->len;
  c->have = 0;
  if (c->body)
    c->mpos += HEAD + n;
  else if (n && fseeko(c->file, n, SEEK_CUR) != 0)
    c->broken = 1;
}

int tok_phcache_find(tok_phcache *c, uint64_t line, const fc_digest *text, char **reading,
                     size_t *len) {
  *reading = NULL;
  *len = 0;
  /* the lines before this one, and another text under its number (a manifest changed between
   * the passes; for lines without numbers, all 0, the lines left out of this run) */
  while (peek(c) &&
         (c->line < line || (c->line == line && memcmp(c->digest, text->bytes, 16) != 0)))
    skip(c);
  if (!c->have || c->line != line) return 0; /* not here: a later line may be */
  if (c->len == NO_READING) {
    skip(c);
    return 0;
  }
  char *r = fc_malloc((size_t)c->len + 1);
  if (!r) { /* this line is read again by espeak-ng */
    skip(c);
    return 0;
  }
  if (c->body) {
    memcpy(r, c->body, c->len);
    c->mpos += HEAD + c->len;
  } else if (c->len && fread(r, 1, c->len, c->file) != c->len) {
    free(r);
    c->broken = 1;
    c->have = 0;
    return 0;
  }
  c->have = 0;
  r[c->len] = '\0';
  *reading = r;
  *len = c->len;
  return 1;
}

void tok_phcache_stats(const tok_phcache *c, uint64_t *entries, uint64_t *mem_bytes,
                       uint64_t *file_bytes) {
  *entries = c->entries;
  *mem_bytes = c->mem_len;
  *file_bytes = c->file_len;
}
