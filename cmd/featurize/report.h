/* featurize's reporting (cmd/featurize/report.c): the messages of a job as it runs and at its
 * end. */
#ifndef FC_CMD_FEATURIZE_REPORT_H
#define FC_CMD_FEATURIZE_REPORT_H
#include "cmd/cli.h"

#include "featcache/fc_featurize.h"

typedef struct fzc_report {
  const char *manifest; /* as its lines are named: "(stdin)" for --manifest - */
  const char *stdin_list; /* "(stdin)" when the paths come from stdin, else NULL */
  uint32_t sample_rate; /* the config's: -v names a resampling */
  int verbose, json;
  int check; /* a store this user may only read: checked, nothing written */
  uint64_t not_stored_lines; /* NOT_STORED events said (the first FC_CLI_NOT_STORED_SAID, -v all) */
  fc_cli_progress progress;
  uint64_t total;
  uint64_t failed_lines; /* FAILED events, each with its line */
  /* FAILED events of inputs computed but lost with a failed commit: the first
   * FC_CLI_NOT_STORED_SAID said (-v all), the rest counted (fzc_unsaid_unstored) */
  uint64_t unstored_lines, unstored_unsaid;
  fc_cli_failures failures; /* what --json lists */
  /* failed inputs by id and path, to tell a duplicate whose id's first input failed (bounded) */
  struct fzc_failed_id {
    char *id, *path;
    int duplicate;
  } * failed_ids;
  size_t n_failed_ids, cap_failed_ids;
} fzc_report;

/* No input at all: say what held none (the manifest, stdin, the shard), not "done: 0 of 0".
 * nargs: the paths given as arguments (0 for stdin); shard_n 0: no --shard. */
void fzc_empty_input(const char *manifest, int nargs, uint32_t shard_k, uint32_t shard_n);
/* fc_featurize_opts.on_event and on_progress, user a fzc_report. */
void fzc_on_event(const fc_featurize_event *ev, void *user);
void fzc_on_progress(const fc_featurize_stats *st, void *user);
/* For each input refused as a duplicate id whose first input failed too, a line that says it was
 * not featurized either, naming both files ("Ids" in docs/featurize.md); frees what was kept. */
void fzc_explain_duplicates(fzc_report *c);
/* After a failed commit: one line for the inputs it lost that were not named each. */
void fzc_unsaid_unstored(const fzc_report *c);
/* Stage accounting as one -v line (docs/featurize.md "Stage accounting"). */
void fzc_print_stages(const fc_featurize_stats *st);
/* The --json object of the job (docs/featurize.md "--json"). */
void fzc_print_json(const fc_featurize_stats *st, const fc_mel_config *cfg, const char *device,
                    const char *store, const fzc_report *rc, const fc_cli_max_failed *mf,
                    int allowed);
/* A job ended before its first input was begun, with exit code `code` (1: a store refused at the
 * page check; 130/143: stopped while its pages were checked or cache-prune held it): with --json
 * its object all the same, every input of total not started and device "none", so that a script
 * reading stdout on exit 1 or 130 reads one (docs/featurize.md "Output"). Returns the code. */
int fzc_end_unbegun(int code, int json, uint64_t total, const fc_mel_config *cfg, const char *store,
                    const fc_cli_max_failed *mf);
#endif
