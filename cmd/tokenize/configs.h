/* tokenize's word on the store's token configs (cmd/tokenize/configs.c). */
#ifndef FC_CMD_TOKENIZE_CONFIGS_H
#define FC_CMD_TOKENIZE_CONFIGS_H
#include "cmd/cli.h"

#include "featcache/fc_store.h"

/* The token configs of a store's parts (digest, name and canonical JSON), or of those that could
 * be listed; at most 64. */
typedef struct tkc_cfgs {
  fc_digest d[64];
  char name[64][64];
  char *json[64]; /* NULL when it could not be copied */
  size_t n;
} tkc_cfgs;

void tkc_list(fc_store **parts, unsigned n_parts, tkc_cfgs *out);
void tkc_free(tkc_cfgs *c);

/* What makes config JSON b another config than a of the same name, in words for a message
 * ("another normalization: --case fold, where the old one has keep"), in buf; NULL when only
 * their vocab differs (or nothing that is said apart). */
const char *tkc_difference(const char *a, const char *b, char *buf, size_t len);

/* This run stored config cfg, new to the store, under the name of one of `before` (the store's
 * configs before the run): one line on stderr says so, what made it another and the way out. */
void tkc_say_second_config(const char *store, const tkc_cfgs *before, fc_store **parts,
                           unsigned n_parts, const fc_digest *cfg);

#endif
