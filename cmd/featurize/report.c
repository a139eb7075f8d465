/* featurize's reporting: what it says of a job as it runs and at its end (docs/featurize.md
 * "Output"): a line per failed input (and per stored one at -v), progress, the stage split, the
 * --json object. */
#include "cmd/featurize/report.h"

#include "featcache/fc_format.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <sys/stat.h>

/* cli.h's name of the tool is one per file: this file's messages are featurize's too. */
__attribute__((constructor)) static void name_the_tool(void) { fc_cli_tool = "featurize"; }

/* No input at all: say what held none (the manifest, stdin, the shard), not "done: 0 of 0".
 * nargs: the paths given as arguments (0 for stdin); shard_n 0: no --shard. */
void fzc_empty_input(const char *manifest, int nargs, uint32_t shard_k, uint32_t shard_n) {
  const char *src = !manifest || strcmp(manifest, "-") == 0 ? "(stdin)" : manifest;
  const char *what = manifest ? "lines" : "paths";
  fprintf(stderr, "%s: nothing to do: ", fc_cli_tool);
  if (!manifest && nargs > 0) /* paths given: only a shard can hold none */
    fprintf(stderr, "shard %u/%u holds none of the %d path%s given\n", shard_k, shard_n, nargs,
            nargs == 1 ? "" : "s");
  else {
    if (shard_n) fprintf(stderr, "shard %u/%u of ", shard_k, shard_n);
    fc_cli_put_name(stderr, src);
    fprintf(stderr, " holds no %s\n", what);
  }
}

/* "; resampled 44100→22050 Hz, 2→1 channels" when the source was converted, else "". */
static void conversions(const fzc_report *c, const fc_featurize_event *ev, char *buf, size_t len) {
  buf[0] = '\0';
  int o = 0;
  if (ev->source_rate && ev->source_rate != c->sample_rate)
    o = snprintf(buf, len, "; resampled %u\u2192%u Hz", ev->source_rate, c->sample_rate);
  if (ev->source_channels > 1 && o >= 0 && (size_t)o < len)
    snprintf(buf + o, len - (size_t)o, "%s%u\u21921 channels", o ? ", " : "; ",
             ev->source_channels);
}

/* Keep a failed input's id and path (at most 10,000: the explanation is a courtesy). */
static void keep_failed_id(fzc_report *c, const fc_featurize_event *ev) {
  if (!ev->id || !ev->path || c->n_failed_ids >= 10000) return;
  if (c->n_failed_ids == c->cap_failed_ids) {
    size_t cap = c->cap_failed_ids ? 2 * c->cap_failed_ids : 16;
    struct fzc_failed_id *n = fc_realloc(c->failed_ids, cap * sizeof *n);
    if (!n) return;
    c->failed_ids = n;
    c->cap_failed_ids = cap;
  }
  struct fzc_failed_id *f = &c->failed_ids[c->n_failed_ids];
  f->id = fc_strdup(ev->id);
  f->path = fc_strdup(ev->path);
  f->duplicate = ev->err == FC_EDUPLICATE;
  if (f->id && f->path)
    c->n_failed_ids++;
  else
    free(f->id), free(f->path);
}

void fzc_explain_duplicates(fzc_report *c) {
  for (size_t i = 0; i < c->n_failed_ids; i++) {
    const struct fzc_failed_id *d = &c->failed_ids[i];
    if (!d->duplicate) continue;
    for (size_t k = 0; k < c->n_failed_ids; k++) {
      const struct fzc_failed_id *f = &c->failed_ids[k];
      if (f->duplicate || strcmp(f->id, d->id) != 0) continue;
      struct stat a, b; /* one file given twice (a.wav ./a.wav): its own failure says it all */
      if (strcmp(f->path, d->path) == 0 || (stat(f->path, &a) == 0 && stat(d->path, &b) == 0 &&
                                            a.st_dev == b.st_dev && a.st_ino == b.st_ino))
        break;
      char q[4 * FC_ID_MAX + 8], id[4 * FC_ID_MAX + 8], first[4 * 4096 + 8];
      fc_cli_quoted(d->id, q, sizeof q);
      if (strcmp(q, d->id) == 0)
        snprintf(id, sizeof id, "'%s'", d->id);
      else
        snprintf(id, sizeof id, "%s", q);
      fc_cli_quoted(f->path, first, sizeof first);
      fc_cli_warn(d->path,
                  "not featurized: its id %s is that of %s, which failed (the first input of an "
                  "id keeps it: fix or leave out %s, or give one of them another id in a manifest)",
                  id, first, first);
      break;
    }
  }
  for (size_t i = 0; i < c->n_failed_ids; i++)
    free(c->failed_ids[i].id), free(c->failed_ids[i].path);
  free(c->failed_ids);
  c->failed_ids = NULL;
  c->n_failed_ids = c->cap_failed_ids = 0;
}

void fzc_on_event(const fc_featurize_event *ev, void *user) {
  fzc_report *c = user;
  fc_cli_progress_clear(&c->progress);
  const char *label = ev->path ? ev->path : (ev->id ? ev->id : "(no path)");
  if (ev->status == FC_ITEM_FAILED) {
    c->failed_lines++;
    keep_failed_id(c, ev);
    if (c->json) fc_cli_failures_add(&c->failures, ev->id, ev->path, ev->line, ev->err, ev->reason);
    /* a failed commit fails every input in flight (a batch per writer and the ring: dozens of
     * lines of one cause, libcache/mel/featurize/featurize_job.c's reason): the first named */
    static const char unstored[] = "not stored: a write to the store failed";
    if (!strncmp(ev->reason, unstored, sizeof unstored - 1) &&
        c->unstored_lines++ >= FC_CLI_NOT_STORED_SAID && !c->verbose) {
      c->unstored_unsaid++;
      return;
    }
    /* out of memory reads as a fault of the file: say whose it is and what bounds it (not
     * recorded against the input: libcache/mel/featurize/featurize_int.h fz_not_the_input) */
    const char *hint = ev->err != ENOMEM ? ""
                                         : " (this process's memory, not a fault of the file: a "
                                           "worker holds a whole file, its samples and its "
                                           "features at once, ~0.5 GB an hour of 22.05 kHz audio: "
                                           "--max-seconds or fewer -j bound it; a rerun tries it "
                                           "again)";
    /* a manifest's line by its number; a line of a path list on stdin only when it has no path */
    const char *lines = c->manifest ? c->manifest : (!ev->path ? c->stdin_list : NULL);
    if (ev->manifest && lines && ev->line) {
      fprintf(stderr, "%s: ", fc_cli_tool);
      fc_cli_put_name(stderr, lines);
      fprintf(stderr, ":%zu: %s%s\n", ev->line, ev->reason, hint);
    } else
      fc_cli_warn(label, "%s%s", ev->reason, hint);
    return;
  }
  if (ev->status == FC_ITEM_NOT_STORED) { /* a check: the first ones named, -v all */
    if (c->verbose || c->not_stored_lines < FC_CLI_NOT_STORED_SAID)
      fc_cli_warn(label, "not stored");
    c->not_stored_lines++;
    return;
  }
  char id[4 * FC_ID_MAX + 8];
  fc_cli_quoted(ev->id ? ev->id : "", id, sizeof id);
  if (ev->replaced) { /* said whatever -v and -q: the id's features are another file's now */
    char was[4 * 4096 + 8];
    fc_cli_warn(label,
                "id %s named %s before, other audio: it names this file now (two files with one "
                "id? give each its own, e.g. in a manifest, to keep both)",
                id, fc_cli_quoted(ev->replaced, was, sizeof was));
  }
  if (ev->note) fc_cli_warn(label, "%s", ev->note); /* said whatever -v and -q, as above */
  if (!c->verbose) return;
  switch (ev->status) {
  case FC_ITEM_STORED: {
    char conv[96];
    conversions(c, ev, conv, sizeof conv);
    fc_cli_warn(label, "stored as %s (%llu frames, %.2f s%s)", id, (unsigned long long)ev->frames,
                ev->seconds, conv);
    break;
  }
  case FC_ITEM_LINKED:
    fc_cli_warn(label, "same audio as a stored record; entry %s added", id);
    break;
  case FC_ITEM_SKIPPED: fc_cli_warn(label, "already stored as %s", id); break;
  default: break;
  }
}

void fzc_unsaid_unstored(const fzc_report *c) {
  if (c->unstored_unsaid)
    fprintf(stderr, "%s: %llu more input%s not stored after the failed write (-v names each)\n",
            fc_cli_tool, (unsigned long long)c->unstored_unsaid,
            c->unstored_unsaid == 1 ? "" : "s");
}

void fzc_on_progress(const fc_featurize_stats *st, void *user) {
  fzc_report *c = user;
  uint64_t done = st->processed + st->skipped_existing + st->failed + st->not_stored;
  double rt = st->wall_seconds > 0 ? st->audio_seconds / st->wall_seconds : 0;
  if (c->check) { /* nothing computed: how far the check is */
    if (c->total)
      fc_cli_progress_show(&c->progress, "%s: checked %llu/%llu (%llu not stored)", fc_cli_tool,
                           (unsigned long long)done, (unsigned long long)c->total,
                           (unsigned long long)st->not_stored);
    else
      fc_cli_progress_show(&c->progress, "%s: checked %llu (%llu not stored)", fc_cli_tool,
                           (unsigned long long)done, (unsigned long long)st->not_stored);
    return;
  }
  char of[48] = "", rate[64] = "", skipped[48] = "";
  if (c->total) snprintf(of, sizeof of, "/%llu", (unsigned long long)c->total);
  if (st->processed || !st->skipped_existing) /* (a rerun's inputs already stored: no rate) */
    snprintf(rate, sizeof rate, ", %.0f s of audio, %.0fx realtime", st->audio_seconds, rt);
  if (st->skipped_existing)
    snprintf(skipped, sizeof skipped, ", %llu already stored",
             (unsigned long long)st->skipped_existing);
  /* a manifest read as the job goes: its length is known at the end ("N done") */
  fc_cli_progress_show(&c->progress, "%s: %llu%s%s%s", fc_cli_tool, (unsigned long long)done,
                       of[0] ? of : " done", rate, skipped);
}

/* Stage accounting as one -v line (docs/featurize.md "Stage accounting"). */
void fzc_print_stages(const fc_featurize_stats *st) {
  fprintf(stderr,
          "%s: stages (busy s): start-up %.3f, read %.3f, hash %.3f, decode %.3f, staging %.3f, "
          "compute %.3f, "
          "write %.3f; waits (s): workers on the writer %.3f, workers on the device %.3f, writer "
          "on the workers %.3f; %u worker%s, %u writer%s, %.3f s wall: %s\n",
          fc_cli_tool, st->setup_seconds, st->read_seconds, st->hash_seconds, st->decode_seconds,
          st->staging_seconds, st->compute_seconds, st->write_seconds,
          st->queue_wait_seconds - st->device_wait_seconds, st->device_wait_seconds,
          st->writer_wait_seconds, st->workers, st->workers == 1 ? "" : "s", st->writers,
          st->writers == 1 ? "" : "s", st->wall_seconds, st->bound);
}

void fzc_print_json(const fc_featurize_stats *st, const fc_mel_config *cfg, const char *device,
                    const char *store, const fzc_report *rc, const fc_cli_max_failed *mf,
                    int allowed) {
  fc_digest d;
  char hex[33];
  fc_mel_config_digest(cfg, &d);
  fc_digest_hex(&d, hex);
  printf(
      "{\"processed\":%llu,\"skipped_existing\":%llu,\"failed\":%llu,\"not_started\":%llu,"
      "\"total\":%llu,\"cpu_computed\":%llu,\"audio_seconds\":%.3f,\"wall_seconds\":%.6f,"
      "\"stages\":{\"setup\":%.6f,\"read\":%.6f,\"hash\":%.6f,\"decode\":%.6f,\"staging\":%.6f,"
      "\"compute\":%.6f,\"write\":%.6f},\"waits\":{\"workers_on_writer\":%.6f,"
      "\"workers_on_device\":%.6f,\"writer_on_workers\":%.6f},\"workers\":%u,\"writers\":%u,"
      "\"bound\":\"%s\",\"config_digest\":\"%s\",\"preset\":",
      (unsigned long long)st->processed, (unsigned long long)st->skipped_existing,
      (unsigned long long)st->failed, (unsigned long long)st->not_started,
      (unsigned long long)st->total, (unsigned long long)st->cpu_computed, st->audio_seconds,
      st->wall_seconds, st->setup_seconds, st->read_seconds, st->hash_seconds, st->decode_seconds,
      st->staging_seconds, st->compute_seconds, st->write_seconds,
      st->queue_wait_seconds - st->device_wait_seconds, st->device_wait_seconds,
      st->writer_wait_seconds, st->workers, st->writers, st->bound, hex);
  if (cfg->preset[0])
    fc_json_write_string(stdout, cfg->preset);
  else
    fputs("null", stdout);
  fputs(",\"device\":", stdout);
  fc_json_write_string(stdout, device);
  printf(",\"fell_back_to_cpu\":%s,\"checked_read_only\":%s,\"not_stored\":%llu",
         st->fell_back_to_cpu ? "true" : "false", rc->check ? "true" : "false",
         (unsigned long long)st->not_stored);
  fputs(",\"store\":", stdout);
  fc_json_write_string(stdout, store);
  printf(",\"failures_recorded\":%llu,\"failures_cleared\":%llu,\"max_failed\":",
         (unsigned long long)st->failures_recorded, (unsigned long long)st->failures_cleared);
  fc_json_write_string(stdout, mf->text[0] ? mf->text : "0");
  printf(",\"failed_allowed\":%s,", allowed ? "true" : "false");
  fc_cli_failures_json(stdout, &rc->failures);
  fputs("}\n", stdout);
}

int fzc_end_unbegun(int code, int json, uint64_t total, const fc_mel_config *cfg, const char *store,
                    const fc_cli_max_failed *mf) {
  if (!json) return code;
  fc_featurize_stats st = {.total = total, .not_started = total, .bound = "idle"};
  const fzc_report none = {.json = 1};
  fzc_print_json(&st, cfg, "none", store, &none, mf, 0);
  return fc_cli_stdout_status(code);
}
