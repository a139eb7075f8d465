/* cache-verify's --json report of a store (docs/cache-verify.md "Output"): one object a line. */
#include "cmd/cache-verify/json.h"

#include "cmd/cache-verify/notes.h" /* cvc_writer_now */

#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_outfile.h"
#include "featcache/fc_store.h"

#include <stdio.h>

void cvc_json_findings(const fc_verify_report *r, int severity) {
  int first = 1;
  putchar('[');
  for (size_t i = 0; i < r->count; i++) {
    const fc_verify_finding *f = &r->findings[i];
    if (f->severity != severity) continue;
    fputs(first ? "{\"id\":" : ",{\"id\":", stdout);
    first = 0;
    if (f->id)
      fc_json_write_string(stdout, f->id);
    else
      fputs("null", stdout);
    fputs(",\"key\":", stdout);
    if (f->key)
      fc_json_write_string(stdout, f->key);
    else
      fputs("null", stdout);
    fputs(",\"db\":", stdout);
    fc_json_write_string(stdout, f->db);
    fputs(",\"problem\":", stdout);
    fc_json_write_string(stdout, f->problem);
    putchar('}');
  }
  putchar(']');
}

/* "configs": each config of the store (digest, kind, name, records, created), as cache-config
 * lists them; null when the store cannot be read. */
static void json_configs(const char *store, const fc_verify_report *r, int readable) {
  fc_store *s = NULL;
  fc_config_info *c = NULL;
  size_t n = 0;
  unsigned flags = FC_STORE_RDONLY | (r->nolock ? FC_STORE_NOLOCK : 0);
  if (!readable || fc_store_open(store, flags, &s) || fc_store_configs(s, 1, &c, &n)) {
    fc_store_close(s);
    fputs(",\"configs\":null", stdout);
    return;
  }
  fc_store_close(s);
  fputs(",\"configs\":[", stdout);
  for (size_t i = 0; i < n; i++) {
    char hex[33];
    fc_digest_hex(&c[i].digest, hex);
    printf("%s{\"digest\":\"%s\",\"kind\":\"%s\",\"name\":", i ? "," : "", hex,
           c[i].kind == FC_CONFIG_MEL      ? "mel"
           : c[i].kind == FC_CONFIG_TOKENS ? "tokens"
                                           : "other");
    if (c[i].name[0])
      fc_json_write_string(stdout, c[i].name);
    else
      fputs("null", stdout);
    printf(",\"records\":%llu,\"created\":", (unsigned long long)c[i].records);
    if (c[i].created[0])
      fc_json_write_string(stdout, c[i].created);
    else
      fputs("null", stdout);
    putchar('}');
  }
  putchar(']');
  fc_configs_free(c, n);
}

void cvc_print_json(const char *store, const fc_verify_report *r, int ok, const char *fatal) {
  fputs("{\"store\":", stdout);
  fc_json_write_string(stdout, store);
  printf(",\"ok\":%s,\"records_checked\":%llu,\"bytes_checked\":%llu,\"errors\":",
         ok ? "true" : "false", (unsigned long long)r->records_checked,
         (unsigned long long)r->bytes_checked);
  cvc_json_findings(r, FC_VERIFY_ERROR);
  fputs(",\"warnings\":", stdout);
  cvc_json_findings(r, FC_VERIFY_WARNING);
  fputs(",\"failures\":", stdout);
  cvc_json_findings(r, FC_VERIFY_FAILED);
  printf(
      ",\"error_count\":%llu,\"warning_count\":%llu,\"failure_count\":%llu,"
      "\"failures_explaining\":%llu,\"stopped\":%s",
      (unsigned long long)r->errors, (unsigned long long)r->warnings,
      (unsigned long long)r->failures, (unsigned long long)r->failures_explaining,
      r->stopped ? "true" : "false");
  printf(",\"entries\":{\"audio\":%llu,\"text\":%llu,\"feat\":%llu,\"tok\":%llu,\"meta\":%llu}",
         (unsigned long long)r->entries[1], (unsigned long long)r->entries[2],
         (unsigned long long)r->entries[3], (unsigned long long)r->entries[4],
         (unsigned long long)r->entries[0]);
  printf(
      ",\"mel_configs\":%llu,\"token_configs\":%llu,\"manifest_items\":%llu,"
      "\"beyond_manifest\":%llu",
      (unsigned long long)r->mel_configs, (unsigned long long)r->token_configs,
      (unsigned long long)r->manifest_items, (unsigned long long)r->beyond_manifest);
  json_configs(store, r, r->opened);
  printf(",\"indexed_configs\":%llu,\"index_entries\":%llu,\"index_missing\":%llu",
         (unsigned long long)r->indexed_configs, (unsigned long long)r->index_entries,
         (unsigned long long)r->index_missing);
  printf(",\"text_only\":%llu,\"audio_only\":%llu", (unsigned long long)r->text_only,
         (unsigned long long)r->audio_only);
  printf(
      ",\"data_size\":%llu,\"map_size\":%llu,\"map_used\":%llu,\"readers\":%u,"
      "\"stale_readers\":%u,\"stale_cleared\":%u,\"nolock\":%s,\"threads\":%d,"
      "\"wall_seconds\":%.6f",
      (unsigned long long)r->data_size, (unsigned long long)r->map_size,
      (unsigned long long)r->map_used, r->num_readers, r->stale_readers, r->stale_cleared,
      r->nolock ? "true" : "false", r->threads, r->wall_seconds);
  char writer[192]; /* who has it open for writing: what that run has not committed is not in it */
  cvc_writer_now(store, writer, sizeof writer);
  fputs(",\"writer\":", stdout);
  writer[0] ? fc_json_write_string(stdout, writer) : (void)fputs("null", stdout);
  if (fatal) {
    fputs(",\"fatal\":", stdout);
    fc_json_write_string(stdout, fatal);
  }
  fputs("}\n", stdout);
}
