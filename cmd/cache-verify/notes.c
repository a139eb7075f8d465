/* cache-verify's notes on its findings (docs/cache-verify.md "Output"): what many errors of one
 * kind most likely mean, and what to do. */
#include "cmd/cache-verify/notes.h"

#include "cmd/cli_stores.h" /* fc_cli_lock_holder */

#include <string.h>

/* cli.h's name of the tool is one per file: this file's messages are cache-verify's too. */
__attribute__((constructor)) static void name_the_tool(void) { fc_cli_tool = "cache-verify"; }

/* The errors of records missing under one config, many of them the mark of a run that stopped
 * before it finished that config (a second preset being added, killed): a note per config, with
 * what to do (verify_entries.c words the errors). One record gone is more likely damage. */
int cvc_missing_notes(const char *store, const fc_verify_report *r, const char *writer) {
  static const char *const pre[2] = {"missing: no feature record for mel config ",
                                     "missing: no token record for token config "};
  const char *problem[16];
  uint64_t count[16];
  int kind[16], n = 0;
  for (size_t i = 0; i < r->count; i++) {
    const char *p = r->findings[i].problem;
    const int k = r->findings[i].severity != FC_VERIFY_ERROR ? -1
                  : !strncmp(p, pre[0], strlen(pre[0]))      ? 0
                  : !strncmp(p, pre[1], strlen(pre[1]))      ? 1
                                                             : -1;
    int j = 0;
    while (k >= 0 && j < n && strcmp(problem[j], p) != 0) j++;
    if (k >= 0 && j == n && n < 16) problem[n] = p, count[n] = 0, kind[n++] = k;
    if (k >= 0 && j < n) count[j]++;
  }
  int said = 0;
  for (int j = 0; j < n; j++) {
    const char *cfg = problem[j] + strlen(pre[kind[j]]); /* "NAME HEX" */
    if (count[j] < 2) continue;
    fc_cli_put_name(stdout, store);
    fputs(": ", stdout);
    said++;
    if (writer[0]) { /* a run still writing: a drop would fail it (FC_EDROPPED) */
      printf(
          "note: %llu of %llu %s entries have no %s record of %s config %s (the errors above): "
          "%s has the store open for writing: a run still writing it has not committed them "
          "yet? check the store again when it has finished\n",
          (unsigned long long)count[j], (unsigned long long)r->entries[kind[j] ? 2 : 1],
          kind[j] ? "text" : "audio", kind[j] ? "token" : "feature", kind[j] ? "token" : "mel", cfg,
          writer);
      continue;
    }
    printf(
        "note: %llu of %llu %s entries have no %s record of %s config %s (the errors above): a "
        "%s run under it stopped before it finished, or a newer config replaced it? complete it "
        "(run that again) or drop it (cache-config --drop %s ",
        (unsigned long long)count[j], (unsigned long long)r->entries[kind[j] ? 2 : 1],
        kind[j] ? "text" : "audio", kind[j] ? "token" : "feature", kind[j] ? "token" : "mel", cfg,
        kind[j] ? "tokenize" : "featurize", strrchr(cfg, ' ') ? strrchr(cfg, ' ') + 1 : cfg);
    char split[4096]; /* a drop from a split store's part alone is refused: the split store's */
    fc_cli_put_name(stdout, fc_cli_split_of_part(store, split, sizeof split) ? split : store);
    fputs(")\n", stdout);
  }
  return said;
}

void cvc_writer_note(const char *store, const fc_verify_report *r, const char *writer) {
  if (!writer[0] || !r->errors) return;
  fc_cli_put_name(stdout, store);
  printf(
      ": note: %s has the store open for writing: this check read the store as its last commit "
      "left it, and what that run has not committed yet is not in it; check the store again "
      "when it has finished\n",
      writer);
}

void cvc_unpaired_notes(const char *store, const fc_verify_report *r) {
  for (int text = 1; text >= 0; text--) {
    uint64_t n = text ? r->text_only : r->audio_only;
    const char *first = text ? r->text_only_first : r->audio_only_first;
    if (!n) continue;
    fc_cli_put_name(stdout, store);
    static const char *const has[2][2] = {{"has an audio entry", "have audio entries"},
                                          {"has a text entry", "have text entries"}};
    printf(": note: %llu utterance%s %s but no %s entry (", (unsigned long long)n,
           n == 1 ? "" : "s", has[text][n > 1], text ? "audio" : "text");
    fc_cli_put_name(stdout, first ? first : "?");
    if (n > 1) fputs(" first", stdout);
    if (text)
      printf(
          "): a loader reading features and tokens leaves %s out (its problems() name %s); "
          "featurize %s audio for training on %s\n",
          n == 1 ? "it" : "them", n == 1 ? "it" : "them", n == 1 ? "its" : "their",
          n == 1 ? "it" : "them");
    else
      printf(
          "): a loader reading tokens leaves %s out (its problems() name %s); tokenize %s "
          "transcript%s into the store for training on %s\n",
          n == 1 ? "it" : "them", n == 1 ? "it" : "them", n == 1 ? "its" : "their",
          n == 1 ? "" : "s", n == 1 ? "it" : "them");
  }
}

/* Who has store open for writing now (its writer lock, docs/FORMAT.md): "process 1234
 * (featurize)", "another process", or "" when none is seen. */
void cvc_writer_now(const char *store, char *who, size_t n) {
  int excl;
  long pid;
  char comm[32], q[4 * 32 + 3];
  unsigned others;
  who[0] = '\0';
  fc_cli_lock_holder(store, &excl, &pid, comm, &others);
  if (pid) /* its command name quoted as names are (any process names itself) */
    snprintf(who, n, "process %ld%s%s%s", pid, comm[0] ? " (" : "",
             fc_cli_quoted(comm, q, sizeof q), comm[0] ? ")" : "");
  else if (excl || others)
    snprintf(who, n, "another process");
}

/* Reader slots of dead processes cleared on request (--clear-stale-readers): a note, as the
 * warning says the ones cleared because the table was full. */
void cvc_stale_note(const char *store, const fc_verify_report *r) {
  if (!r->stale_cleared) return;
  for (size_t i = 0; i < r->count; i++)
    if (r->findings[i].problem && strstr(r->findings[i].problem, "the reader table was full"))
      return; /* said by its warning */
  fc_cli_put_name(stdout, store);
  printf(": note: %u stale reader slot%s of dead processes cleared (--clear-stale-readers)\n",
         r->stale_cleared, r->stale_cleared == 1 ? "" : "s");
}
