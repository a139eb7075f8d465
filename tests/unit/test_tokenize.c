/* Unit tests for the tokenizers: normalization known answers, vocab parsing errors, a tiny BPE,
 * the config digest's dependence on what defines a tokenizer, and encode on 1 vs N threads; in a
 * fault-injection build, every allocation of a tokenizer's creation failing in turn. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "featcache/fc_format.h"
#include "featcache/fc_tokenize.h"

#include "formats/common/fault.h"
#include "tests/check.h"

static void norm_case(int nfkc, int fold, int punct, int collapse, const char *in, const char *want,
                      int want_rc) {
  fc_tok_norm n = {nfkc ? FC_UNICODE_NFKC : FC_UNICODE_NONE, fold,
                   punct ? FC_PUNCT_REMOVE : FC_PUNCT_KEEP, collapse};
  char *out = NULL;
  size_t len = 0;
  int rc = fc_tok_normalize(&n, in, strlen(in), &out, &len);
  CHECK(rc == want_rc, "normalize(%s): rc %d (%s), want %d", in, rc, fc_strerror(rc), want_rc);
  if (!rc && want)
    CHECK(len == strlen(want) && memcmp(out, want, len) == 0, "normalize(%s) = '%s', want '%s'", in,
          out, want);
  free(out);
}

static char *write_tmp(const char *name, const char *text) {
  static char path[8][256];
  static int k;
  char *p = path[k++ % 8];
  snprintf(p, 256, "/tmp/fc_test_tok_%d_%s", (int)getpid(), name);
  FILE *f = fopen(p, "wb");
  fputs(text, f);
  fclose(f);
  return p;
}

static fc_tokenizer *make(fc_tok_kind kind, const char *file, char *why) {
  fc_tok_opts o;
  fc_tok_opts_init(&o, kind);
  if (kind == FC_TOK_BPE)
    o.tokenizer_json = file;
  else
    o.vocab_path = file;
  fc_tokenizer *t = NULL;
  int rc = fc_tokenizer_create(&o, &t, why, 512);
  return rc ? NULL : t;
}

int main(void) {
  /* normalization known answers */
  norm_case(1, 0, 0, 1, "\xEF\xAC\x81ne  caf\x65\xCC\x81 \xC2\xBD",
            "fine caf\xC3\xA9 1\xE2\x81\x84"
            "2",
            0);
  norm_case(1, 1, 0, 1,
            "Stra\xC3\x9F"
            "e \xCE\xA3",
            "strasse \xCF\x83", 0);
  norm_case(1, 0, 1, 1, "Hello, (world)! \xE2\x80\x9Cok\xE2\x80\x9D", "Hello world ok", 0);
  norm_case(0, 0, 0, 1, " \t a \xE2\x80\x83 b\r\n", "a b", 0);
  norm_case(0, 0, 0, 0, " a  b ", " a  b ", 0);
  norm_case(1, 0, 0, 1, "   \t ", NULL, FC_EEMPTY);
  norm_case(1, 0, 1, 1, "?!", NULL, FC_EEMPTY);
  norm_case(1, 0, 0, 1, "bad \xC3\x28", NULL, FC_EUTF8);
  norm_case(1, 0, 0, 1, "surrogate \xED\xA0\x80", NULL, FC_EUTF8);

  char why[512] = "";
  /* success: why is empty, or a warning naming the vocab symbols the normalization never leaves
   * in the text (kept as written: their ids are never produced) */
  {
    const char *vf = write_tmp("fold", "<pad>\n<unk>\n \na\nA\nb\n");
    fc_tok_opts o;
    fc_tok_opts_init(&o, FC_TOK_CHARS);
    o.vocab_path = vf;
    fc_tokenizer *t = NULL;
    strcpy(why, "stale");
    CHECK(fc_tokenizer_create(&o, &t, why, sizeof why) == 0 && why[0] == 0, "keep: '%s'", why);
    fc_tokenizer_free(t);
    o.norm.casefold = 1;
    t = NULL;
    CHECK(fc_tokenizer_create(&o, &t, why, sizeof why) == 0 &&
              strstr(why, ": 1 symbol can never match") && strstr(why, "'A' (line 5, --case fold)"),
          "fold: '%s'", why);
    int32_t *ids = NULL;
    size_t n = 0, unknown = 0;
    CHECK(t && fc_tokenizer_encode(t, "ab", 2, &ids, &n, &unknown, why, sizeof why) == 0 &&
              n == 2 && ids[0] == 3 && ids[1] == 5 && unknown == 0,
          "fold: encode 'ab'");
    free(ids);
    fc_tokenizer_free(t);
  }
  /* vocab errors name the line */
  CHECK(!make(FC_TOK_CHARS, write_tmp("dup", "a\nb\na\n"), why) &&
            strstr(why, ":3: duplicate symbol 'a' (first at line 1)"),
        "%s", why);
  CHECK(!make(FC_TOK_CHARS, write_tmp("empty", "a\n\nb\n"), why) && strstr(why, ":2: empty line"),
        "%s", why);
  CHECK(!make(FC_TOK_CHARS, write_tmp("utf8", "a\n\xFF\n"), why) &&
            strstr(why, ":2: invalid UTF-8"),
        "%s", why);
  /* options refused are named as a C caller set them, fc_tok_opts' fields (the tool's flags are
   * tokenize's to say) */
  {
    const char *vf = write_tmp("opts", "<pad>\n<unk>\na\n");
    fc_tok_opts o;
    fc_tokenizer *t = NULL;
    fc_tok_opts_init(&o, FC_TOK_CHARS);
    CHECK(fc_tokenizer_create(&o, &t, why, sizeof why) == FC_ECONFIG &&
              !strcmp(why, "chars takes exactly one of vocab_path and build_vocab"),
          "neither: %s", why);
    o.vocab_path = vf;
    o.add_bos = 1;
    CHECK(fc_tokenizer_create(&o, &t, why, sizeof why) == FC_ECONFIG &&
              !strcmp(why, "the vocab has no bos symbol '<bos>' to add to each text"),
          "add_bos: %s", why);
    o.add_bos = 0;
    o.pad = "";
    CHECK(fc_tokenizer_create(&o, &t, why, sizeof why) == FC_ECONFIG &&
              !strcmp(why, "the pad symbol is empty (pad \"\"; NULL gives the default <pad>)"),
          "pad \"\": %s", why);
    fc_tok_opts_init(&o, FC_TOK_BPE);
    o.tokenizer_json = vf;
    o.add_eos = 1;
    CHECK(fc_tokenizer_create(&o, &t, why, sizeof why) == FC_ECONFIG &&
              strstr(why,
                     "bpe takes tokenizer_json and none of vocab_path, build_vocab, add_bos") &&
              !strstr(why, "--"),
          "bpe add_eos: %s", why);
    CHECK(t == NULL, "no tokenizer made");
    unlink(vf);
  }
  /* the vocab's or tokenizer.json's name in a reason is quoted as the tools quote names: a newline
   * or an escape in it cannot forge a second line or reach the terminal (printed raw before) */
  {
    char want[512];
    const char *odd = write_tmp("odd\n\033[1m", "a\nb\na\n");
    const int pid = (int)getpid();
    snprintf(want, sizeof want,
             "\"/tmp/fc_test_tok_%d_odd\\n\\033[1m\":3: duplicate symbol 'a' (first at line 1)",
             pid);
    CHECK(!make(FC_TOK_CHARS, odd, why) && strcmp(why, want) == 0, "got: %s\nwant: %s", why, want);
    snprintf(want, sizeof want, "\"/tmp/fc_test_tok_%d_odd\\n\\033[1m\": 1 symbol can never match",
             pid);
    fc_tok_opts o;
    fc_tok_opts_init(&o, FC_TOK_CHARS);
    o.vocab_path = write_tmp("odd\n\033[1m", "<pad>\n<unk>\n \na\nA\n");
    o.norm.casefold = 1;
    fc_tokenizer *t = NULL;
    CHECK(fc_tokenizer_create(&o, &t, why, sizeof why) == 0 &&
              strncmp(why, want, strlen(want)) == 0,
          "got: %s\nwant: %s...", why, want);
    fc_tokenizer_free(t);
    unlink(odd);
    snprintf(want, sizeof want, "\"/tmp/fc_test_tok_%d_odd\\n\\033[1m\": %s", pid,
             strerror(ENOENT));
    CHECK(!make(FC_TOK_CHARS, odd, why) && strcmp(why, want) == 0, "got: %s\nwant: %s", why, want);
    CHECK(!make(FC_TOK_BPE, odd, why) && strcmp(why, want) == 0, "got: %s\nwant: %s", why, want);
    snprintf(want, sizeof want, "\"/tmp/fc_test_tok_%d_odd\\n\\033[1m\": ", pid);
    CHECK(!make(FC_TOK_BPE, write_tmp("odd\n\033[1m", "{"), why) &&
              strncmp(why, want, strlen(want)) == 0,
          "got: %s\nwant: %s...", why, want);
    unlink(odd);
  }
  /* CRLF and a BOM do not change a vocab: same config digest */
  fc_tokenizer *t1 = make(FC_TOK_CHARS, write_tmp("lf", "<pad>\n<unk>\n \na\nb\nab\n"), why);
  fc_tokenizer *t2 =
      make(FC_TOK_CHARS, write_tmp("crlf", "\xEF\xBB\xBF<pad>\r\n<unk>\r\n \r\na\r\nb\r\nab\r\n"),
           why);
  fc_tokenizer *t3 = make(FC_TOK_CHARS, write_tmp("other", "<pad>\n<unk>\n \na\nb\nba\n"), why);
  CHECK(t1 && t2 && t3, "%s", why);
  if (t1 && t2 && t3) {
    fc_digest d1, d2, d3;
    fc_tokenizer_config(t1, NULL, NULL, &d1);
    fc_tokenizer_config(t2, NULL, NULL, &d2);
    fc_tokenizer_config(t3, NULL, NULL, &d3);
    CHECK(memcmp(&d1, &d2, 16) == 0, "CRLF/BOM vocab changed the config digest");
    CHECK(memcmp(&d1, &d3, 16) != 0, "a different vocab kept the config digest");
    CHECK(fc_tokenizer_dtype(t1) == FC_DTYPE_I16, "dtype %d", fc_tokenizer_dtype(t1));
    int32_t *ids;
    size_t n, unk;
    int rc = fc_tokenizer_encode(t1, "aab b<unk>", 10, &ids, &n, &unk, why, sizeof why);
    /* longest match: a, ab, ' ', b, then '<' 'u' 'n' 'k' '>' unknown (specials never match text) */
    int32_t want[] = {3, 5, 2, 4, 1, 1, 1, 1, 1};
    CHECK(rc == 0 && n == 9 && memcmp(ids, want, sizeof want) == 0 && unk == 5, "rc %d n %zu", rc,
          n);
    free(ids);
  }
  fc_tokenizer_free(t1);
  fc_tokenizer_free(t2);
  fc_tokenizer_free(t3);

  /* a tiny BPE: merges in rank order, added tokens, Whitespace pre-tokenizer, unk */
  const char *bpe_json =
      "{\"added_tokens\":[{\"id\":6,\"content\":\"<s>\",\"special\":true}],"
      "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"post_processor\":null,"
      "\"model\":{\"type\":\"BPE\",\"unk_token\":\"?\",\"vocab\":{\"?\":0,\"a\":1,\"b\":2,\"c\":3,"
      "\"ab\":4,\"abc\":5},\"merges\":[\"a b\",[\"ab\",\"c\"]]}}";
  fc_tokenizer *b = make(FC_TOK_BPE, write_tmp("bpe.json", bpe_json), why);
  CHECK(b != NULL, "%s", why);
  if (b) {
    int32_t *ids;
    size_t n;
    const char *text = "abc ab<s>ba cx";
    int rc = fc_tokenizer_encode(b, text, strlen(text), &ids, &n, NULL, why, sizeof why);
    int32_t want[] = {5, 4, 6, 2, 1, 3, 0};
    CHECK(rc == 0 && n == 7 && memcmp(ids, want, sizeof want) == 0, "bpe rc %d n %zu", rc, n);
    /* the same ids from many threads at once */
    int bad = 0;
#pragma omp parallel for reduction(+ : bad)
    for (int i = 0; i < 256; i++) {
      int32_t *v;
      size_t m;
      bad += fc_tokenizer_encode(b, text, strlen(text), &v, &m, NULL, NULL, 0) != 0 || m != n ||
             memcmp(v, ids, n * sizeof *v) != 0;
      free(v);
    }
    CHECK(bad == 0, "%d threaded encodes differ", bad);
    free(ids);
    /* 'x' is not in the vocab: mapped to unk and counted, as chars counts its unknown symbols */
    size_t unknown = 99;
    rc = fc_tokenizer_encode(b, text, strlen(text), &ids, &n, &unknown, why, sizeof why);
    CHECK(rc == 0 && unknown == 1, "bpe unknown: rc %d, %zu counted", rc, unknown);
    if (!rc) free(ids);
    rc = fc_tokenizer_encode(b, "abc ab", 6, &ids, &n, &unknown, why, sizeof why);
    CHECK(rc == 0 && unknown == 0, "bpe with no unknown: rc %d, %zu counted", rc, unknown);
    if (!rc) free(ids);
    fc_tokenizer_free(b);
    /* --strict: an unknown character fails the line, naming it */
    fc_tok_opts so;
    fc_tok_opts_init(&so, FC_TOK_BPE);
    so.tokenizer_json = write_tmp("bpe.json", bpe_json);
    so.strict = 1;
    fc_tokenizer *bs = NULL;
    CHECK(fc_tokenizer_create(&so, &bs, why, sizeof why) == 0, "%s", why);
    if (bs) {
      why[0] = '\0';
      rc = fc_tokenizer_encode(bs, text, strlen(text), &ids, &n, NULL, why, sizeof why);
      CHECK(rc == FC_EUNKNOWN && strstr(why, "'x'"), "bpe --strict: rc %d: %s", rc, why);
      if (!rc) free(ids);
      fc_tokenizer_free(bs);
    }
  }
  CHECK(!make(FC_TOK_BPE, write_tmp("trunc.json", "{\"model\":{\"type\":\"BPE\""), why) &&
            strstr(why, "trunc.json"),
        "%s", why);
  CHECK(!make(FC_TOK_BPE, write_tmp("uni.json", "{\"model\":{\"type\":\"Unigram\"}}"), why) &&
            strstr(why, "Unigram"),
        "%s", why);

  /* Out of memory while a tokenizer is created (fault-injection builds: FC_FAULT=alloc:N, jansson's
   * builders of the token config on the countdown too): ENOMEM, or the very config of a clean
   * run. The config used to be built with unchecked json_object_set_new: a value that could not
   * be allocated left its key out, and the store got another config digest, silently. */
  if (fault_built()) {
    const char *vf = write_tmp("oom", "<pad>\n<unk>\n \na\nb\nab\n");
    char log[256];
    snprintf(log, sizeof log, "/tmp/fc_test_tok_%d_faultlog", (int)getpid());
    fc_tokenizer *c0 = make(FC_TOK_CHARS, vf, why);
    fc_digest d0;
    CHECK(c0 && fc_tokenizer_config(c0, NULL, NULL, &d0) == 0, "clean tokenizer: %s", why);
    int n, failed = 0;
    for (n = 1; n < 1000 && c0; n++) {
      char spec[32];
      snprintf(spec, sizeof spec, "alloc:%d", n);
      unlink(log);
      setenv("FC_FAULT_LOG", log, 1);
      setenv("FC_FAULT", spec, 1);
      fc_tok_opts o;
      fc_tok_opts_init(&o, FC_TOK_CHARS);
      o.vocab_path = vf;
      fc_tokenizer *t = NULL;
      int rc = fc_tokenizer_create(&o, &t, why, 512);
      unsetenv("FC_FAULT");
      int injected = access(log, F_OK) == 0;
      if (rc) {
        CHECK(rc == ENOMEM, "alloc:%d: %s (%s), want ENOMEM", n, fc_strerror(rc), why);
        failed++;
      } else {
        fc_digest d;
        CHECK(fc_tokenizer_config(t, NULL, NULL, &d) == 0 && memcmp(d.bytes, d0.bytes, 16) == 0,
              "alloc:%d: the tokenizer's config is not a clean run's", n);
        fc_tokenizer_free(t);
      }
      if (!injected) break; /* the N-th allocation no longer happens */
    }
    CHECK(failed > 10, "only %d allocations failed in %d", failed, n);
    printf("tokenizer create: %d of %d injected allocation failures gave ENOMEM\n", failed, n - 1);
    unsetenv("FC_FAULT_LOG");
    unlink(log);
    fc_tokenizer_free(c0);
  }

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -f /tmp/fc_test_tok_%d_*", (int)getpid());
  if (system(cmd)) {}
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("ok: tokenizer unit tests\n");
  return failures ? 1 : 0;
}
