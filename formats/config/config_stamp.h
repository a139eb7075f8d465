/* A config's meta keys. config_key: "cfg/<32 hex of its digest>" (36 bytes), where its JSON is.
 * config_stamp: when it was first stored: the meta key "created/<32 hex of its digest>" (40 bytes) and
 * the time now in UTC as RFC 3339 ("2026-11-27T14:03:05Z", 20 bytes), each NUL-terminated.
 * Writers put both beside cfg/<hex> with FC_PUT_NOOVERWRITE (docs/FORMAT.md "Configs"); the
 * store's listing reads them back (fc_store_configs). Header-only: the mel component's writer
 * and the store both use it, and it exports nothing. */
#ifndef FC_CONFIG_STAMP_H
#define FC_CONFIG_STAMP_H

#include "featcache/fc_base.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static inline void config_key(const fc_digest *digest, char key[37]) {
  memcpy(key, "cfg/", 4);
  fc_digest_hex(digest, key + 4);
}

static inline void config_stamp(const fc_digest *digest, char key[41], char value[21]) {
  memcpy(key, "created/", 8);
  fc_digest_hex(digest, key + 8);
  time_t now = time(NULL);
  struct tm tm;
  if (!gmtime_r(&now, &tm) || strftime(value, 21, "%Y-%m-%dT%H:%M:%SZ", &tm) != 20)
    snprintf(value, 21, "1970-01-01T00:00:00Z");
}

#endif
