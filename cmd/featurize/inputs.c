/* featurize's checks of its inputs before the store is touched: a manifest that is none (an audio
 * file, UTF-16 text, a Kaldi text file), an LJSpeech manifest's audio folder that is not there
 * (or holds FLAC files, not WAV).
 * Each would otherwise fail every input, one line and one failure record each, where the fix is
 * one. */
#include "cmd/featurize/inputs.h"
#include "formats/common/alloc.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* cli.h's name of the tool is one per file: this file's messages are featurize's too. */
__attribute__((constructor)) static void name_the_tool(void) { fc_cli_tool = "featurize"; }

int fzc_first_line_has_nul(const fc_item_list *l) {
  const fc_item *it = l->count ? &l->items[0] : NULL;
  return it && !it->path && it->why && strstr(it->why, "NUL byte");
}

_Noreturn void fzc_refuse_nul_manifest(const char *manifest, int is_file) {
  fc_cli_refuse_nul_manifest(manifest, is_file,
                             "an audio file? give its path as AUDIO, not --manifest");
}

void fzc_check_ljspeech_wavs(const char *manifest, const fc_item_list *items) {
  if (items->format != FC_MANIFEST_LJSPEECH) return;
  const char *slash = strcmp(manifest, "-") == 0 ? NULL : strrchr(manifest, '/');
  char dir[4096];
  if (!slash)
    snprintf(dir, sizeof dir, "wavs");
  else
    snprintf(dir, sizeof dir, "%.*s/wavs", (int)(slash - manifest), manifest);
  struct stat st;
  const int e = stat(dir, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (!e) return;
  const size_t n = strlen(dir);
  for (size_t i = 0; i < items->count; i++) { /* the first path says where the reader looks */
    const char *p = items->items[i].path;
    if (!p) continue;
    if (strncmp(p, dir, n) != 0 || p[n] != '/') return; /* an id that is an absolute path */
    char q[4 * 4096 + 8];
    fc_cli_warn(dir,
                "the audio folder of %s (LJSpeech's wavs/ beside it): %s; give --audio-dir DIR",
                fc_cli_quoted(strcmp(manifest, "-") == 0 ? "(stdin)" : manifest, q, sizeof q),
                strerror(e));
    exit(FC_EXIT_USAGE);
  }
}

static int audio_extension(const char *s, size_t n) { /* as the manifest reader's detection */
  static const char *const exts[] = {".wav", ".flac", ".mp3", ".ogg", ".opus", ".aiff",
                                     ".aif", ".au",   ".sph", ".caf", ".w64",  ".m4a"};
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
    const size_t m = strlen(exts[i]);
    if (n >= m && strncasecmp(s + n - m, exts[i], m) == 0) return 1;
  }
  return 0;
}

void fzc_check_kaldi_text(const char *manifest, const char *audio_dir, const fc_item_list *items) {
  if (items->format != FC_MANIFEST_LIST || !items->count || !items->items[0].path) return;
  const char *path = items->items[0].path, *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  /* the line was name alone (no '/') when the reader's join of its folder and name gives path:
   * --audio-dir, else the manifest's folder ("." for stdin, where it joins nothing) */
  const char *slash = strcmp(manifest, "-") == 0 ? NULL : strrchr(manifest, '/');
  char base[4096];
  if (audio_dir)
    snprintf(base, sizeof base, "%s", audio_dir);
  else if (slash)
    snprintf(base, sizeof base, "%.*s", slash == manifest ? 1 : (int)(slash - manifest), manifest);
  else
    snprintf(base, sizeof base, ".");
  const size_t bn = strlen(base), pn = (size_t)(name - path);
  if (strcmp(base, ".") == 0 || bn == 0
          ? pn != 0
          : pn != bn + (base[bn - 1] != '/') || strncmp(path, base, bn) != 0)
    return;
  const size_t w = strcspn(name, " \t"), n = strlen(name);
  if (w == 0 || w == n || audio_extension(name, w) || audio_extension(name, n)) return;
  struct stat st;
  if (stat(path, &st) == 0 || errno != ENOENT) return; /* a file of that name: a path list */
  fc_cli_warn(strcmp(manifest, "-") == 0 ? "(stdin)" : manifest,
              "a Kaldi text file (utterance id, then its words), not a list of audio paths: "
              "featurize reads audio; give --manifest the wav.scp beside it (id path lines)");
  exit(FC_EXIT_USAGE);
}

void fzc_ljspeech_audio_ext(const char *manifest, fc_item_list *items, fc_manifest_opts *mo,
                            int verbose) {
  /* upper case: a corpus copied from Windows (TIMIT's .WAV) */
  static const char *const exts[] = {".flac", ".mp3", ".ogg", ".opus", ".WAV", ".FLAC"};
  static const char *const names[] = {"FLAC", "MP3", "Ogg", "Opus", "WAV", "FLAC"};
  if (items->format != FC_MANIFEST_LJSPEECH || mo->audio_ext) return;
  const char *first = NULL;
  for (size_t i = 0; i < items->count && !first; i++) first = items->items[i].path;
  const size_t n = first ? strlen(first) : 0;
  struct stat st;
  if (n < 4 || strcmp(first + n - 4, ".wav") != 0 || stat(first, &st) == 0 || errno != ENOENT)
    return;
  char found[4096];
  size_t k = 0;
  for (; k < sizeof exts / sizeof exts[0]; k++) {
    snprintf(found, sizeof found, "%.*s%s", (int)(n - 4), first, exts[k]);
    if (stat(found, &st) == 0 && S_ISREG(st.st_mode)) break;
  }
  if (k == sizeof exts / sizeof exts[0]) return;
  if (verbose) {
    char q[4 * sizeof found + 8], w[4 * sizeof found + 8];
    fc_cli_warn(strcmp(manifest, "-") == 0 ? "(stdin)" : manifest, "its audio is %s: %s (no %s)",
                names[k], fc_cli_quoted(found, q, sizeof q), fc_cli_quoted(first, w, sizeof w));
  }
  for (size_t i = 0; i < items->count; i++) { /* the reader's paths: wavs/<id>.wav */
    char **p = &items->items[i].path;
    const size_t m = *p ? strlen(*p) : 0;
    if (m < 4 || strcmp(*p + m - 4, ".wav") != 0) continue;
    char *e = fc_realloc(*p, m - 4 + strlen(exts[k]) + 1);
    if (!e) {
      fc_cli_warn(NULL, "out of memory");
      exit(FC_EXIT_USAGE);
    }
    strcpy(e + m - 4, exts[k]);
    *p = e;
  }
  mo->audio_ext = exts[k];
}

void fzc_check_stdin_list(const fc_item_list *items) {
  const char *p = NULL;
  for (size_t i = 0; i < items->count && !p; i++) p = items->items[i].path;
  struct stat st;
  if (!p || stat(p, &st) == 0 || errno != ENOENT) return;
  const char *what = NULL;
  switch (fc_manifest_detect(NULL, p)) {
  case FC_MANIFEST_KALDI: { /* "my take.wav" missing is a path still, unless "take.wav" is there */
    const char *rest = p + strcspn(p, " \t");
    rest += strspn(rest, " \t");
    if (stat(rest, &st) != 0) return;
    what = "a Kaldi wav.scp (id path)";
    break;
  }
  case FC_MANIFEST_LJSPEECH: what = "an LJSpeech manifest (id|text)"; break;
  case FC_MANIFEST_JSONL: what = "a JSON lines manifest"; break;
  case FC_MANIFEST_LIST: fzc_check_kaldi_text("-", NULL, items); return;
  default: return; /* id<TAB>text names no audio: each line's failure says enough */
  }
  fc_cli_warn("(stdin)",
              "not a list of paths: its first line is one of %s; give it as --manifest -", what);
  exit(FC_EXIT_USAGE);
}

/* A JSON line with an "offset" over 0 (name: the manifest as said, no: its line): says so, exits 2. */
static void segment_line(const char *name, const char *line, size_t no) {
  const char *k = strstr(line, "\"offset\"");
  if (!k) return;
  k += strlen("\"offset\"") + strspn(k + strlen("\"offset\""), " \t");
  if (*k != ':') return;
  k++;
  k += strspn(k, " \t");
  const int quoted = *k == '"'; /* "2.5", a CSV's column turned JSON: a number of seconds too */
  k += quoted;
  if (quoted) k += strspn(k, " \t"); /* " 2.5": read so too (manifest_segment.c) */
  char *end;
  const double v = strtod(k, &end);
  /* not a segment: 0, no number ("2.5s"), a negative or past a double's range: the line's own
   * failure says what is wrong with it */
  if (end == k || !(v > 0) || isinf(v) ||
      (quoted &&
       (end[strspn(end, " \t")] != '"' || strspn(k, "0123456789.+-eE") < (size_t)(end - k))))
    return;
  char q[4 * 4096 + 8];
  fprintf(stderr,
          "%s: %s:%zu: \"offset\": %.*s: a segment of its audio file (NeMo's offset and "
          "duration), but featurize stores whole files; cut each segment into a file of its own "
          "(sox IN OUT trim OFFSET DURATION) and list those\n",
          fc_cli_tool, fc_cli_quoted(name, q, sizeof q), no, (int)(end - k), k);
  exit(FC_EXIT_USAGE);
}

enum { SEGMENT_LINES = 1000 }; /* the lines looked at */

void fzc_check_segments(const char *manifest, const fc_item_list *items) {
  struct stat st;
  if (items->format != FC_MANIFEST_JSONL || stat(manifest, &st) != 0 || !S_ISREG(st.st_mode))
    return;
  FILE *f = fopen(manifest, "r");
  if (!f) return;
  char *line = NULL;
  size_t cap = 0;
  for (size_t no = 1; no <= SEGMENT_LINES && getline(&line, &cap, f) >= 0; no++)
    segment_line(manifest, line, no);
  free(line);
  fclose(f);
}

/* Hands a pipe's first bytes, then the rest of it, to the pipe put in its place. */
typedef struct head_tee {
  int in, out;
  char *head;
  size_t n;
} head_tee;

static void *tee_run(void *arg) {
  head_tee *t = arg;
  char buf[65536];
  const char *s = t->head;
  size_t n = t->n;
  for (;;) {
    while (n) { /* SIGPIPE is blocked here: a reader gone is EPIPE, the end */
      const ssize_t w = write(t->out, s, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) goto done;
      s += w, n -= (size_t)w;
    }
    const ssize_t r = read(t->in, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    s = buf, n = (size_t)r;
  }
done:
  close(t->out), close(t->in), free(t->head), free(t);
  return NULL;
}

void fzc_check_piped_segments(const char *manifest, const char *name, int format) {
  int fd = -1, end = 0;
  if (strcmp(manifest, "-") == 0 || strcmp(manifest, "/dev/stdin") == 0)
    fd = STDIN_FILENO;
  else if ((sscanf(manifest, "/dev/fd/%d%n", &fd, &end) != 1 &&
            sscanf(manifest, "/proc/self/fd/%d%n", &fd, &end) != 1) ||
           manifest[end] != '\0')
    return; /* a named FIFO: its lines go to the reader alone */
  struct stat st;
  if ((format != FC_MANIFEST_AUTO && format != FC_MANIFEST_JSONL) || fd < 0 ||
      fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode)))
    return;
  const int pipe_in = S_ISFIFO(st.st_mode); /* else a file on stdin: read where it stands */
  const off_t at = pipe_in ? 0 : lseek(fd, 0, SEEK_CUR);
  size_t n = 0, cap = 0, lines = 0;
  char *head = NULL;
  while (lines < SEGMENT_LINES && n < (16u << 20)) {
    if (cap - n < 65536) {
      char *h = fc_realloc(head, cap = 2 * cap + 65536);
      if (!h) break; /* no check rather than no run: what was read is handed on */
      head = h;
    }
    const ssize_t r =
        pipe_in ? read(fd, head + n, cap - n) : pread(fd, head + n, cap - n, at + (off_t)n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    for (const char *p = head + n; (p = memchr(p, '\n', (size_t)(head + n + r - p))); p++) lines++;
    n += (size_t)r;
  }
  char *line = fc_malloc(n + 1);
  for (size_t i = 0, no = 1; line && i < n && no <= SEGMENT_LINES; no++) {
    const char *nl = memchr(head + i, '\n', n - i);
    const size_t l = nl ? (size_t)(nl - head - i) : n - i;
    memcpy(line, head + i, l);
    line[l] = '\0';
    const char *b = line + strspn(line, " \t");
    b += strncmp(b, "\xef\xbb\xbf", 3) == 0 ? 3 : 0; /* a BOM */
    if (*b == '{') segment_line(name, line, no); /* a JSON line, whatever the format found */
    i += l + 1;
  }
  free(line);
  if (!pipe_in) {
    free(head);
    return;
  }
  /* the bytes read are the reader's: a pipe of ours in the pipe's place (fd 0, /dev/fd/N) gives
   * them, then the rest, copied by a thread that ends with the pipe */
  head_tee *t = fc_malloc(sizeof *t);
  int p[2] = {-1, -1};
  const int in = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  sigset_t all, old;
  sigfillset(&all);
  pthread_t th;
  int rc = !t || in < 0 || pipe2(p, O_CLOEXEC) != 0 || dup2(p[0], fd) < 0 ? errno : 0;
  if (!rc) {
    *t = (head_tee){in, p[1], head, n};
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&th, NULL, tee_run, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  if (rc) {
    fc_cli_warn(name, "cannot read the manifest: %s", strerror(rc ? rc : ENOMEM));
    exit(FC_EXIT_USAGE);
  }
  pthread_detach(th);
  close(p[0]);
}

void fzc_check_jsonl_transcript(const char *name, const fc_item_list *items) {
  if (items->format != FC_MANIFEST_JSONL || !items->count) return;
  const fc_item *l1 = &items->items[0]; /* the audio under another key ("path": an export) */
  if (l1->err == FC_EMANIFEST && !l1->path && l1->why &&
      strstr(l1->why, "missing \"audio_filepath\"")) {
    char q[4 * 4096 + 8];
    fprintf(stderr,
            "%s: %s:%zu: no \"audio_filepath\": featurize reads each line's audio file from it, "
            "NeMo's key (a manifest that names the file under another key, \"path\" or \"audio\" "
            "say, needs it renamed: jq -c '. + {audio_filepath: .path}')\n",
            fc_cli_tool, fc_cli_quoted(name, q, sizeof q), l1->line);
    exit(FC_EXIT_USAGE);
  }
  const fc_item *first = NULL; /* the first line that parsed: a bad line says its own */
  for (size_t i = 0; i < items->count && !first; i++)
    if (!items->items[i].err) first = &items->items[i];
  if (!first || first->path) return;
  fc_cli_warn(name,
              "JSON lines of \"id\" and \"text\" name no audio (a transcript, tokenize's "
              "manifest); featurize reads the audio file each line's \"audio_filepath\" names");
  exit(FC_EXIT_USAGE);
}

void fzc_warn_kaldi_segments(const char *manifest, const fc_item_list *items, int quiet) {
  if (quiet || items->format != FC_MANIFEST_KALDI || strcmp(manifest, "-") == 0) return;
  const char *slash = strrchr(manifest, '/');
  char seg[4096], q[4 * 4096 + 8], m[4 * 4096 + 8];
  snprintf(seg, sizeof seg, "%.*ssegments", slash ? (int)(slash - manifest + 1) : 0, manifest);
  struct stat st;
  if (stat(seg, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
  fc_cli_warn(NULL,
              "%s: cuts the recordings of %s into utterances, but featurize stores whole files, "
              "under the recordings' ids (cut each segment into a file of its own first: Kaldi's "
              "extract-segments, or sox IN OUT trim START =END)",
              fc_cli_quoted(seg, q, sizeof q), fc_cli_quoted(manifest, m, sizeof m));
}

void fzc_check_comma_csv(const char *manifest, const fc_item_list *items) {
  struct stat st;
  if (items->format != FC_MANIFEST_LJSPEECH || stat(manifest, &st) != 0 || !S_ISREG(st.st_mode))
    return;
  FILE *f = fopen(manifest, "r");
  if (!f) return;
  char *line = NULL;
  size_t cap = 0;
  int commas = 0, lines = 0;
  ssize_t n;
  while (lines < 2 && (n = getline(&line, &cap, f)) >= 0) {
    if (strspn(line, " \t\r\n") == (size_t)n) continue; /* blank */
    lines++;
    commas += strchr(line, ',') && !strchr(line, '|');
  }
  free(line);
  fclose(f);
  if (commas < 2) return;
  fc_cli_warn(manifest,
              "comma-separated, not LJSpeech's id|text (Hugging Face's audiofolder metadata?): "
              "give its audio files as paths (find DIR -name '*.wav' | featurize -o STORE -), or a "
              "wav.scp or JSON lines manifest");
  exit(FC_EXIT_USAGE);
}

static int first_path(const fc_item *it, void *user) {
  if (!it->path) return 0;
  snprintf(user, 4096, "%s", it->path);
  return -1; /* one is enough */
}

void fzc_check_cwd_relative(const char *manifest, const fc_manifest_opts *mo,
                            const fc_item_list *items) {
  if (mo->audio_dir || items->format == FC_MANIFEST_LJSPEECH) return;
  const char *p = NULL;
  for (size_t i = 0; i < items->count && !p; i++) p = items->items[i].path;
  struct stat st;
  if (!p || stat(p, &st) == 0 || errno != ENOENT) return;
  char here[4096] = "", why[256];
  if (stat(manifest, &st) == 0 && S_ISFIFO(st.st_mode)) {
    /* a pipe (<(grep ...): its folder is /dev/fd), read once: the line's path is the item's after
     * the manifest's folder */
    const char *slash = strrchr(manifest, '/');
    const size_t n = slash ? (size_t)(slash - manifest) + 1 : 0;
    if (n == 0 || strncmp(p, manifest, n) != 0) return;
    snprintf(here, sizeof here, "%s", p + n);
  } else {
    fc_manifest_opts o = *mo;
    o.audio_dir = "."; /* the line's path as it is: the reader joins nothing to "." */
    o.format = items->format;
    o.on_item = first_path;
    o.user = here;
    fc_item_list none;
    if (fc_manifest_read(manifest, &o, &none, why, sizeof why) != -1) return;
  }
  if (strcmp(here, p) == 0 || stat(here, &st) != 0 || !S_ISREG(st.st_mode)) return;
  char q[4 * 4096 + 8], w[4 * 4096 + 8];
  fc_cli_warn(manifest,
              "its audio paths are relative to the working directory (%s is there, %s beside the "
              "manifest is not): give --audio-dir .",
              fc_cli_quoted(here, q, sizeof q), fc_cli_quoted(p, w, sizeof w));
  exit(FC_EXIT_USAGE);
}

int fzc_store_folder_missing(const char *store, char *buf, size_t len) {
  return fc_cli_store_folder_missing(store, buf, len);
}

int fzc_store_dangling_link(const char *store, char *buf, size_t len) {
  char link[4096], target[4096], full[8192];
  size_t n = strlen(store);
  while (n > 1 && store[n - 1] == '/') n--; /* cache/ is cache */
  if (n >= sizeof link) return 0;
  memcpy(link, store, n);
  link[n] = '\0';
  struct stat st;
  if (lstat(link, &st) != 0 || !S_ISLNK(st.st_mode) || stat(link, &st) == 0 || errno != ENOENT)
    return 0;
  const ssize_t t = readlink(link, target, sizeof target - 1);
  if (t <= 0) return 0;
  target[t] = '\0';
  const char *slash = strrchr(link, '/'); /* a relative target is read from the link's folder */
  snprintf(full, sizeof full, "%.*s%s", target[0] != '/' && slash ? (int)(slash - link + 1) : 0,
           link, target);
  char q[4 * sizeof full + 8];
  snprintf(buf, len, "%s", fc_cli_quoted(full, q, sizeof q));
  return 1;
}

const char *fzc_manifest_dir_hint(const char *manifest, int rc, char *buf, size_t len) {
  static const char *const inside[] = {"metadata.csv", "wav.scp", "manifest.jsonl", "manifest.json",
                                       NULL};
  char p[4096], q[4 * sizeof p + 8];
  size_t n = strlen(manifest);
  while (n > 1 && manifest[n - 1] == '/') n--; /* LJSpeech-1.1/ is LJSpeech-1.1 */
  buf[0] = '\0';
  if (rc != EISDIR || n >= sizeof p - 32) return buf;
  struct stat st;
  for (int i = 0; inside[i]; i++) {
    snprintf(p, sizeof p, "%.*s/%s", (int)n, manifest, inside[i]);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      snprintf(buf, len, " (its manifest: --manifest %s)", fc_cli_quoted(p, q, sizeof q));
      return buf;
    }
  }
  snprintf(p, sizeof p, "%.*s", (int)n, manifest);
  snprintf(buf, len,
           " (--manifest reads a file; a folder of audio: find %s -name '*.wav' | featurize -o "
           "STORE -)",
           fc_cli_quoted(p, q, sizeof q));
  return buf;
}

typedef struct first_ctx {
  fc_item_list *out;
  size_t max;
} first_ctx;

static int take_first(const fc_item *it, void *user) {
  first_ctx *c = user;
  fc_item *d = &c->out->items[c->out->count++];
  d->err = it->err;
  d->line = it->line;
  if ((it->id && !(d->id = fc_strdup(it->id))) || (it->path && !(d->path = fc_strdup(it->path))) ||
      (it->why && !(d->why = fc_strdup(it->why))))
    return ENOMEM;
  return c->out->count == c->max ? -1 : 0; /* enough: stop reading */
}

int fzc_first_items(const char *path, const fc_manifest_opts *mo, size_t max, fc_item_list *out,
                    char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  if (!(out->items = fc_calloc(max, sizeof *out->items))) return ENOMEM;
  first_ctx c = {out, max};
  fc_manifest_opts o = *mo;
  o.on_item = take_first;
  o.user = &c;
  fc_item_list none;
  int rc = fc_manifest_read(path, &o, &none, why, why_len);
  out->format = none.format;
  if (rc == -1) rc = 0;
  if (rc) fc_item_list_free(out);
  return rc;
}

uint32_t fzc_jobs_for_fds(uint32_t jobs, unsigned n_parts, int quiet) {
  enum { FIXED = 16 }; /* stdio, a manifest, a self-pipe, libraries' own, a GPU's device files */
  const rlim_t store = 3 * (rlim_t)n_parts, need = FIXED + store + jobs; /* data.mdb x2, lock */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
    return jobs;
  const rlim_t was = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = was;
  if (rl.rlim_cur >= need) return jobs;
  const uint32_t fit = rl.rlim_cur > FIXED + store ? (uint32_t)(rl.rlim_cur - FIXED - store) : 1;
  char parts[32] = "";
  if (n_parts > 1) snprintf(parts, sizeof parts, "'s %u parts", n_parts);
  if (!quiet)
    fc_cli_warn(NULL,
                "-j %u: %llu open files allowed (ulimit -n): running %u worker%s (each holds its "
                "file open; the store%s %u files)",
                jobs, (unsigned long long)rl.rlim_cur, fit, fit == 1 ? "" : "s", parts,
                (unsigned)store);
  return fit;
}
