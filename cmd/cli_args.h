/* The command line's words, for cmd/cli.h (which includes it after fc_cli_usage_error): an option
 * that names a run's one input given twice. Header-only, as cli.h. */
#ifndef FC_CMD_CLI_ARGS_H
#define FC_CMD_CLI_ARGS_H

#include <string.h>

/* An option that names a run's one input (--manifest FILE, cache-config's --drop CONFIG) given
 * again with another value: a usage error, its hint saying what to do instead. The last one
 * counting, as it does for a setting (a Makefile's options, then the user's), left the first out
 * without a word: the first manifest was not featurized, tokenized or checked, and cache-prune
 * --manifest train.csv --manifest dev.csv removed every utterance only train.csv names, exit 0.
 * The same value again is the same run. Returns value. */
static inline const char *fc_cli_once(const char *opt, const char *prev, const char *value,
                                      const char *hint) {
  char a[512], b[512];
  if (prev && strcmp(prev, value) != 0)
    fc_cli_usage_error("--%s given twice (%s, then %s): %s", opt, fc_cli_quoted(prev, a, sizeof a),
                       fc_cli_quoted(value, b, sizeof b), hint);
  return value;
}

static inline const char *fc_cli_path(const char *opt, const char *value); /* cli.h */

/* --manifest FILE: fc_cli_path, then fc_cli_once (featurize, tokenize, cache-verify, loader-bench:
 * a run reads one manifest). Returns value. */
static inline const char *fc_cli_manifest_arg(const char *prev, const char *value) {
  return fc_cli_once("manifest", prev, fc_cli_path("manifest", value),
                     "one manifest per run: run once for each, or give one file that names them "
                     "all");
}

#endif
