/* cache-verify's --json report of a store (cmd/cache-verify/json.c). */
#ifndef FC_CMD_CACHE_VERIFY_JSON_H
#define FC_CMD_CACHE_VERIFY_JSON_H

#include "featcache/fc_verify.h"

/* The findings of r of one severity (FC_VERIFY_ERROR, _WARNING, _FAILED) as a JSON array on
 * stdout: [{"id","key","db","problem"}], null for an id or key there is none of. */
void cvc_json_findings(const fc_verify_report *r, int severity);
/* The store's report as one JSON object and a newline on stdout; ok: the store passed; fatal:
 * why its check could not be done or finish (a "fatal" member), or NULL. Opens the store again,
 * read-only, for its "configs" (null when it cannot be read). */
void cvc_print_json(const char *store, const fc_verify_report *r, int ok, const char *fatal);

#endif
