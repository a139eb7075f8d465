/* Every public function that needs a pointer refuses NULL for it instead of crashing: EINVAL (a
 * function that returns no code: NULL, 0 or nothing; fc_mel_config_json and fc_profiler_report,
 * which return a length, FC_ECONFIG), and this thread's fc_last_error names the function and the
 * argument ("fc_store_path: s is NULL"), as does the call's why when it has one. Each function of
 * the ABI is called once with every pointer NULL (and its counts 1, so that a buffer's NULL
 * matters); the functions documented to take NULL (the frees, fc_strerror's table, the parsers
 * that call NULL malformed) are left out. Then one NULL at a time, the other arguments real, for
 * the store, the tokenizer and the loader; and the message is the calling thread's. */
#include "featcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"

/* fc_last_error is "FN: ARG is NULL" */
static int said(const char *fn, const char *arg) {
  char want[256];
  snprintf(want, sizeof want, "%s: %s is NULL", fn, arg);
  return strcmp(fc_last_error(), want) == 0;
}

static void clear(void) { fc_set_last_error(0, "%s", ""); }

#define REFUSED(cond, fn, arg)                                                        \
  CHECK((cond) && said(#fn, arg), "%s: got message '%s', want '%s: %s is NULL'", #fn, \
        fc_last_error(), #fn, arg)
#define INT(fn, arg, ...)            \
  do {                               \
    clear();                         \
    int rc_ = fn(__VA_ARGS__);       \
    REFUSED(rc_ == EINVAL, fn, arg); \
  } while (0)
#define PTR(fn, arg, ...)                      \
  do {                                         \
    clear();                                   \
    REFUSED(fn(__VA_ARGS__) == NULL, fn, arg); \
  } while (0)
#define ZERO(fn, arg, ...)                  \
  do {                                      \
    clear();                                \
    REFUSED(fn(__VA_ARGS__) == 0, fn, arg); \
  } while (0)
#define RET(want, fn, arg, ...)                  \
  do {                                           \
    clear();                                     \
    REFUSED(fn(__VA_ARGS__) == (want), fn, arg); \
  } while (0)
#define VOID(fn, arg, ...) \
  do {                     \
    clear();               \
    fn(__VA_ARGS__);       \
    REFUSED(1, fn, arg);   \
  } while (0)

/* call refuses a NULL element of an array argument: EINVAL, fc_last_error and the call's why (when
 * it takes one and `why` is it: else "") "NAME[I] is NULL" */
#define ELEMENT(call, name)                                                         \
  do {                                                                              \
    clear();                                                                        \
    strcpy(why, "");                                                                \
    const int rc_ = (call);                                                         \
    CHECK(rc_ == EINVAL && strcmp(fc_last_error(), name " is NULL") == 0 &&         \
              (!why[0] || strcmp(why, fc_last_error()) == 0),                       \
          "%s: rc %d, fc_last_error '%s', why '%s', want '%s is NULL'", #call, rc_, \
          fc_last_error(), why, name);                                              \
  } while (0)

static void all_null(void) {
  clear();
  INT(fc_audio_read_file, "path", NULL, 1, NULL, NULL, NULL);
  INT(fc_audio_decode, "bytes", NULL, 1, 1, 1.0, NULL, NULL, NULL, NULL, 1);
  VOID(fc_digest_buffer, "data", NULL, 1, NULL);
  VOID(fc_digest_pieces, "data", NULL, NULL, 1, NULL);
  VOID(fc_digest_hex, "d", NULL, NULL);
  INT(fc_digest_parse, "out", NULL, NULL);
  ZERO(fc_hash64, "data", NULL, 1);
  INT(fc_mq_encode_step, "x", NULL, NULL, 1, 1, 1, NULL, 1, NULL, NULL, 1);
  VOID(fc_mel_config_settle_preset, "cfg", NULL);
  RET(FC_ECONFIG, fc_mel_config_json, "cfg", NULL, NULL, 1);
  VOID(fc_mel_config_digest, "cfg", NULL, NULL);
  INT(fc_mel_config_from_json, "json", NULL, 1, NULL, NULL, 1);
  ZERO(fc_mel_num_frames, "cfg", NULL, 1);
  /* these returned FC_ECONFIG (fc_mel_config_validate: "no config") or NULL, saying nothing */
  INT(fc_mel_preset, "name", NULL, NULL);
  INT(fc_mel_config_validate, "cfg", NULL, NULL, 1);
  INT(fc_mel_config_override, "cfg", NULL, NULL, 1, NULL, 1);
  PTR(fc_mel_config_preset_of, "cfg", NULL, NULL);
  INT(fc_profiler_create, "out", 0, NULL, NULL);
  INT(fc_device_parse, "out", NULL, NULL, NULL, 1);
  INT(fc_device_resolve, "want", NULL, NULL, NULL, 1);
  PTR(fc_device_name, "d", NULL, NULL, 1);
  INT(fc_featurize_choose_device, "want", NULL, NULL, 1, 1, 1.0, NULL, NULL, 1);
  RET(1, fc_featurize_default_writers, "dev", NULL, NULL, 1, 1, 1.0);
  INT(fc_featurize_file, "plan", NULL, NULL, 1.0, NULL, NULL, NULL, 1);
  INT(fc_featurize_memory, "plan", NULL, NULL, 1, 1.0, NULL, NULL, NULL, 1);
  PTR(fc_featurize_bound, "st", NULL, 1);
  VOID(fc_featurize_opts_init, "o", NULL);
  INT(fc_featurize_run, "s", NULL, NULL, NULL, 1, NULL, NULL, NULL, 1);
  VOID(fc_record_header_encode, "h", NULL, NULL);
  INT(fc_record_encode, "h", NULL, NULL, 1, NULL);
  VOID(fc_record_key, "content", NULL, NULL, NULL);
  ZERO(fc_audio_entry_size, "e", NULL);
  VOID(fc_audio_entry_encode, "e", NULL, NULL);
  INT(fc_audio_entry_decode, "e", NULL, 1, NULL);
  INT(fc_id_check, "id", NULL, 1);
  ZERO(fc_utf8_valid, "str", NULL, 1);
  VOID(fc_loader_opts_init, "o", NULL);
  INT(fc_loader_open, "out", NULL, 1, NULL, NULL, NULL, 1);
  INT(fc_loader_info_get, "l", NULL, NULL);
  INT(fc_loader_problem, "l", NULL, 1, NULL, NULL, NULL);
  INT(fc_loader_map_region, "l", NULL, 1, NULL, NULL);
  INT(fc_loader_view_digest, "l", NULL, NULL);
  PTR(fc_loader_config_json, "l", NULL, 1);
  INT(fc_loader_set_epoch, "l", NULL, 1);
  INT(fc_loader_next, "l", NULL, NULL);
  INT(fc_loader_swap_descs, "l", NULL, NULL, 1);
  REFUSED(fc_loader_error(NULL) == fc_last_error(), fc_loader_error, "l");
  INT(fc_loader_set_buffers, "l", NULL, NULL, 1, 1);
  INT(fc_loader_add_buffers, "l", NULL, NULL, 1, 1);
  ZERO(fc_loader_wait_ns, "l", NULL);
  INT(fc_loader_lookup, "l", NULL, NULL, NULL);
  INT(fc_loader_refresh, "l", NULL);
  INT(fc_manifest_read, "path", NULL, NULL, NULL, NULL, 1);
  INT(fc_items_from_paths, "out", NULL, 1, NULL);
  INT(fc_items_from_paths, "paths", NULL, 1, &(fc_item_list){0}); /* was EINVAL, said nothing */
  INT(fc_items_from_stream, "out", NULL, NULL);
  INT(fc_mel_plan_create, "cfg", NULL, NULL);
  INT(fc_mel_plan_clone, "src", NULL, NULL);
  PTR(fc_mel_plan_config, "p", NULL);
  INT(fc_mel_compute, "p", NULL, NULL, 1, NULL);
  ZERO(fc_mel_empty_bands, "cfg", NULL, NULL);
  VOID(fc_mel_filterbank_dense, "p", NULL, NULL);
  VOID(fc_mel_window, "p", NULL, NULL);
  VOID(fc_convert_dtype, "src", NULL, 1, 1, NULL);
  VOID(fc_merge_opts_init, "o", NULL);
  INT(fc_merge_run, "out_dir", NULL, NULL, 1, NULL, NULL, NULL, 1);
  INT(fc_outfile_open, "out", NULL, NULL);
  PTR(fc_outfile_stream, "o", NULL);
  INT(fc_outfile_commit, "o", NULL);
  INT(fc_outfile_write, "data", NULL, NULL, 1);
  VOID(fc_json_write_string, "f", NULL, NULL);
  VOID(fc_profiler_set_clock, "p", NULL, NULL, NULL);
  VOID(fc_profiler_reset, "p", NULL);
  INT(fc_profiler_step_begin, "p", NULL);
  INT(fc_profiler_step_end, "p", NULL);
  INT(fc_profiler_step_cancel, "p", NULL);
  INT(fc_profiler_phase_begin, "p", NULL, NULL);
  INT(fc_profiler_phase_end, "p", NULL);
  INT(fc_profiler_phase_add, "p", NULL, NULL, 1.0);
  INT(fc_profiler_device_add, "p", NULL, NULL, 1.0);
  ZERO(fc_profiler_num_device, "p", NULL);
  PTR(fc_profiler_device_name, "p", NULL, 1);
  PTR(fc_profiler_device_series, "p", NULL, 1);
  INT(fc_profiler_set_gpu_busy, "p", NULL, NULL, 1, 1.0, NULL);
  INT(fc_profiler_set_info, "p", NULL, NULL, 1.0);
  INT(fc_profiler_step_items, "p", NULL, 1.0);
  INT(fc_prof_compare_files, "before", NULL, NULL, 1, NULL, NULL, 1);
  INT(fc_gpu_sampler_start, "out", 1, 1.0, NULL, NULL, 1);
  ZERO(fc_gpu_sampler_samples, "s", NULL, NULL);
  INT(fc_prof_series_stats, "x", NULL, 1, NULL);
  ZERO(fc_profiler_steps, "p", NULL);
  ZERO(fc_profiler_num_phases, "p", NULL);
  PTR(fc_profiler_phase_name, "p", NULL, 1);
  PTR(fc_profiler_series, "p", NULL, 1);
  INT(fc_profiler_stats, "p", NULL, 1, NULL, NULL);
  INT(fc_profiler_verdict, "p", NULL, NULL, NULL, 1);
  RET(FC_ECONFIG, fc_profiler_report, "p", NULL, 1, NULL, 1);
  INT(fc_profiler_write, "p", NULL, 1, NULL);
  INT(fc_profiler_write_traces, "ps", NULL, NULL, 1, NULL);
  INT(fc_profiler_save, "p", NULL, 1, NULL);
  ZERO(fc_shard_of, "id", NULL, 1, 1);
  INT(fc_item_list_shard, "l", NULL, 1, 1);
  INT(fc_store_open, "dir", NULL, 1, NULL);
  PTR(fc_store_path, "s", NULL);
  ZERO(fc_store_open_flags, "s", NULL);
  INT(fc_store_write, "puts", NULL, NULL, 1);
  INT(fc_store_write_kept, "puts", NULL, NULL, 1, NULL);
  INT(fc_store_sync, "s", NULL);
  INT(fc_store_read_begin, "s", NULL, NULL);
  INT(fc_rtxn_renew, "t", NULL);
  INT(fc_rtxn_get, "t", NULL, 1, NULL, 1, NULL, NULL);
  INT(fc_rtxn_count, "t", NULL, 1, NULL);
  INT(fc_cursor_open, "t", NULL, 1, NULL);
  INT(fc_cursor_next, "c", NULL, NULL, NULL, NULL, NULL);
  INT(fc_cursor_seek, "c", NULL, NULL, 1);
  INT(fc_store_put_config, "s", NULL, NULL, NULL, 1);
  INT(fc_rtxn_get_config, "t", NULL, NULL, NULL, NULL);
  INT(fc_store_configs, "s", NULL, 1, NULL, NULL);
  INT(fc_store_drop_config, "s", NULL, NULL, NULL, NULL, NULL);
  INT(fc_store_info_get, "s", NULL, NULL);
  INT(fc_store_map_region, "s", NULL, NULL, NULL);
  ZERO(fc_store_part_of_id, "id", NULL, 1, 1);
  INT(fc_store_split_count, "dir", NULL, NULL);
  INT(fc_store_expand, "dirs", NULL, 1, NULL, NULL, NULL, 1);
  INT(fc_store_open_split, "dir", NULL, 1, 1, NULL, NULL, NULL, 1);
  INT(fc_store_part_of_store, "s", NULL, NULL, NULL);
  VOID(fc_tok_opts_init, "o", NULL, 1);
  INT(fc_tokenizer_create, "o", NULL, NULL, NULL, 1);
  INT(fc_tok_normalize, "nm", NULL, NULL, 1, NULL, NULL);
  INT(fc_tokenizer_symbols, "t", NULL, NULL, 1, NULL, NULL);
  INT(fc_tokenizer_build_vocab, "t", NULL, NULL, 1);
  INT(fc_tokenizer_encode, "t", NULL, NULL, 1, NULL, NULL, NULL, NULL, 1);
  PTR(fc_tokenizer_norm, "t", NULL);
  INT(fc_tokenizer_config, "t", NULL, NULL, NULL, NULL);
  RET((fc_tok_kind)-1, fc_tokenizer_kind, "t", NULL);
  ZERO(fc_tokenizer_vocab_size, "t", NULL);
  ZERO(fc_tokenizer_dtype, "t", NULL);
  INT(fc_tokenizer_vocab_text, "t", NULL, NULL, NULL);
  INT(fc_tokenizer_export_vocab, "t", NULL, NULL);
  INT(fc_tokenize_run, "s", NULL, NULL, NULL, NULL, NULL);
  INT(fc_tokenize_run_split, "parts", NULL, 1, NULL, NULL, NULL, NULL);
  INT(fc_tokenizer_build_vocab_from, "t", NULL, NULL, NULL);
  INT(fc_verify_store, "dir", NULL, NULL, NULL, NULL, 1);
  INT(fc_verify_dataset, "dirs", NULL, 1, NULL, NULL, NULL, 1);
  INT(fc_store_prune, "s", NULL, NULL, NULL, NULL, 1);
}

/* One NULL at a time, the rest real: the calls a program gets wrong (an out pointer forgotten, a
 * handle whose open failed). */
static void one_at_a_time(const char *dir) {
  char why[256];
  fc_store *s = NULL;
  INT(fc_store_open, "out", dir, FC_STORE_CREATE, NULL);
  CHECK(fc_store_open(dir, FC_STORE_CREATE, &s) == 0 && s);
  INT(fc_store_read_begin, "out", s, NULL);
  INT(fc_store_info_get, "info", s, NULL);
  INT(fc_store_configs, "out", s, 0, NULL, &(size_t){0});
  uint8_t v = 1;
  fc_put put = {FC_DB_META, "k", 1, &v, 1, 0};
  INT(fc_store_write, "s", NULL, &put, 1);
  INT(fc_store_write, "puts", s, NULL, 1);
  CHECK(fc_store_write(s, NULL, 0) == 0); /* no puts: nothing to write, no NULL refused */
  fc_rtxn *t = NULL;
  CHECK(fc_store_read_begin(s, &t) == 0);
  INT(fc_rtxn_get, "key", t, FC_DB_META, NULL, 4, &(const void *){0}, &(size_t){0});
  INT(fc_rtxn_count, "count", t, FC_DB_META, NULL);
  INT(fc_cursor_open, "out", t, FC_DB_META, NULL);
  fc_rtxn_end(t);
  const char *path = fc_store_path(s);
  CHECK(path && strcmp(path, dir) == 0);
  fc_store_close(s);
  PTR(fc_store_path, "s", NULL);

  fc_tok_opts o;
  fc_tok_opts_init(&o, FC_TOK_CHARS);
  o.build_vocab = 1;
  clear();
  strcpy(why, "stale");
  CHECK(fc_tokenizer_create(&o, NULL, why, sizeof why) == EINVAL);
  CHECK(strcmp(why, "fc_tokenizer_create: out is NULL") == 0, "why '%s'", why);
  CHECK(said("fc_tokenizer_create", "out"));
  fc_tokenizer *tk = NULL;
  INT(fc_tokenizer_create, "o", NULL, &tk, NULL, 0);
  CHECK(!tk);
  INT(fc_tokenizer_create, "o", NULL, &tk, NULL, 16); /* why NULL with a length: not written */

  const char *paths[] = {dir};
  fc_loader *l = NULL;
  strcpy(why, "stale");
  clear();
  CHECK(fc_loader_open(paths, 1, NULL, NULL, why, sizeof why) == EINVAL);
  CHECK(strcmp(why, "fc_loader_open: out is NULL") == 0, "why '%s'", why);
  INT(fc_loader_open, "paths", NULL, 1, NULL, &l, NULL, 0);
  CHECK(!l);
  const char *no_path[] = {dir, NULL}; /* a NULL among the paths: named by its index */
  ELEMENT(fc_loader_open(no_path, 2, NULL, &l, why, sizeof why), "fc_loader_open: paths[1]");
  CHECK(!l);
  /* the same, by the function called (fc_verify_dataset and fc_merge_run said "(null): Invalid
   * argument" and "(null): cannot open the store: Invalid argument", fc_loader_open named
   * fc_store_expand's dirs) */
  fc_verify_report vr;
  ELEMENT(fc_verify_dataset(no_path, 2, NULL, &vr, why, sizeof why), "fc_verify_dataset: dirs[1]");
  fc_verify_report_free(&vr);
  char merged[300];
  snprintf(merged, sizeof merged, "%s.merged", dir);
  ELEMENT(fc_merge_run(merged, no_path, 2, NULL, NULL, why, sizeof why), "fc_merge_run: inputs[1]");
  char **expanded = NULL;
  size_t n_expanded = 0;
  ELEMENT(fc_store_expand(no_path, 2, &expanded, &n_expanded, why, sizeof why),
          "fc_store_expand: dirs[1]");
  fc_item_list items = {0};
  strcpy(why, "");
  ELEMENT(fc_items_from_paths(no_path, 2, &items), "fc_items_from_paths: paths[1]");
  fc_item_list_free(&items);
  const fc_profiler *no_prof[] = {NULL};
  ELEMENT(fc_profiler_write_traces(no_prof, NULL, 1, stdout), "fc_profiler_write_traces: ps[0]");
  CHECK(fc_tokenizer_create(&o, &tk, why, sizeof why) == 0 && tk, "tokenizer: %s", why);
  fc_store *no_part[] = {NULL, NULL};
  ELEMENT(fc_tokenize_run_split(no_part, 2, tk, &items, NULL, &(fc_tokenize_stats){0}),
          "fc_tokenize_run_split: parts[0]");
  fc_tokenizer_free(tk);
  /* one NULL at a time where an old code was returned */
  fc_mel_config cfg;
  INT(fc_mel_preset, "cfg", "hifigan", NULL);
  CHECK(fc_mel_preset("hifigan", &cfg) == 0);
  INT(fc_mel_config_override, "ov", &cfg, NULL, 1, NULL, 0);
  CHECK(fc_mel_config_override(&cfg, NULL, 0, NULL, 0) == 0); /* no fields: ov may be NULL */
  fc_mel_plan *plan = NULL;
  CHECK(fc_mel_plan_create(&cfg, &plan) == 0);
  float mel[80];
  INT(fc_mel_compute, "samples", plan, NULL, 1024, mel);
  fc_mel_plan_free(plan);
  INT(fc_loader_lookup, "l", NULL, "a", &(fc_loader_item){0});
  fc_loader_release(NULL, NULL); /* nothing to release: no refusal, no crash */
}

/* The message is the thread's: another thread's refusal leaves this one's. */
static void *other_thread(void *arg) {
  (void)arg;
  fc_store_path(NULL);
  return strcmp(fc_last_error(), "fc_store_path: s is NULL") == 0 ? (void *)1 : NULL;
}

static void per_thread(void) {
  clear();
  fc_hash64(NULL, 3);
  CHECK(said("fc_hash64", "data"));
  pthread_t th;
  void *ok = NULL;
  CHECK(pthread_create(&th, NULL, other_thread, NULL) == 0);
  pthread_join(th, &ok);
  CHECK(ok, "the other thread's message");
  CHECK(said("fc_hash64", "data"), "this thread's message after another's refusal: '%s'",
        fc_last_error());
  CHECK(fc_set_last_error(FC_ECONFIG, "x %d", 7) == FC_ECONFIG && !strcmp(fc_last_error(), "x 7"));
  fc_hash64("", 0); /* an empty buffer may be NULL-free: no refusal */
  CHECK(!strcmp(fc_last_error(), "x 7"));
}

int main(void) {
  char dir[] = "/tmp/fc_null_args_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  all_null();
  char store[64];
  snprintf(store, sizeof store, "%s/s", dir);
  one_at_a_time(store);
  per_thread();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return fc_check_result("null_args");
}
