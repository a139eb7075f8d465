/* Replay of tests/fuzz/fuzz_parsers.c without libFuzzer (tests/fuzz/replay.h): seeds of every
 * manifest format, tokenizer.json files of every supported shape, vocab files and texts, each
 * mutated 3,000 times. */
#include "tests/fuzz/fuzz_parsers.c"
#include "tests/fuzz/replay.h"

static const char bpe_whitespace[] =
    "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":0,\"content\":\"[UNK]\",\"single_word\":false,"
    "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},{\"type\":\"Lowercase\"}]},"
    "\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"post_processor\":null,\"decoder\":null,"
    "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":null,"
    "\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,"
    "\"vocab\":{\"[UNK]\":0,\"h\":1,\"e\":2,\"l\":3,\"o\":4,\"he\":5,\"ll\":6,\"hell\":7,\"hello\":8,\",\":9,"
    "\"w\":10,\"r\":11,\"d\":12,\"a\":13},"
    "\"merges\":[\"h e\",\"l l\",\"he ll\",\"hell o\"]}}";
static const char bpe_bytelevel[] =
    "{\"added_tokens\":[{\"id\":5,\"content\":\"<|end|>\",\"single_word\":false,\"lstrip\":false,"
    "\"rstrip\":false,\"normalized\":false,\"special\":true}],\"normalizer\":null,"
    "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true},"
    "\"post_processor\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":false,\"use_regex\":true},"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"\\u0120\":2,\"ab\":3,\"\\u0120a\":4,\"<|end|>\":5},"
    "\"merges\":[[\"a\",\"b\"],[\"\\u0120\",\"a\"]],\"byte_fallback\":false,\"ignore_merges\":true}}";
static const char bpe_template[] =
    "{\"added_tokens\":[{\"id\":3,\"content\":\"<s>\",\"special\":true,\"normalized\":false,"
    "\"single_word\":false,\"lstrip\":false,\"rstrip\":false}],\"normalizer\":{\"type\":\"NFC\"},"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"}]},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\","
    "\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":{\"<s>\":"
    "{\"id\":\"<s>\",\"ids\":[3],\"tokens\":[\"<s>\"]}}},"
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"x\",\"fuse_unk\":true,\"continuing_subword_prefix\":\"##\","
    "\"vocab\":{\"x\":0,\"a\":1,\"##a\":2,\"<s>\":3},\"merges\":[]}}";

static void mutate_json_value(uint8_t *buf, size_t *n, size_t cap, uint64_t k) {
  /* overwrite a string's first character with a quote or a value with an edge case */
  (void)cap;
  static const char *const edge[] = {"null", "-1", "1e309", "\"\"", "[]", "{}", "true", "0.5"};
  const char *e = edge[(k >> 16) % 8];
  size_t el = strlen(e), at = *n > 1 ? 1 + (size_t)((k >> 32) % (*n - 1)) : 0;
  if (at && at + el < *n) memcpy(buf + at, e, el);
}

int main(void) {
  /* manifests: target byte = format (0 auto ... 5 tsv) */
  fuzz_add_seed_str(0,
                    "LJ001-0001|Printing, in the only sense|Printing, in the only sense\n"
                    "LJ001-0002|in being comparatively modern.|in being comparatively modern.\n");
  fuzz_add_seed_str(1, "a|b|c\r\nd|\xc3\xa9t\xc3\xa9|\n\n|no id\n");
  fuzz_add_seed_str(2, "utt1 /data/a.wav\nutt2 sox b.flac -t wav - |\nutt3\n");
  fuzz_add_seed_str(
      3,
      "{\"audio_filepath\": \"a.wav\", \"text\": \"hi\", \"id\": \"u1\"}\n"
      "{\"audio_filepath\": \"b.wav\", \"text\": \"x\\u00e9\"}\n{\"text\": 3}\nnot json\n");
  fuzz_add_seed_str(4,
                    "\xef\xbb\xbf"
                    "data/wavs/a.wav\n/abs/b.flac\r\nc\n\n");
  fuzz_add_seed_str(5, "u1\thello there\nu2\t\nu3 no tab\n");
  fuzz_add_seed_str(0, "{\"audio_filepath\": \"a.wav\"}\n");
  fuzz_add_seed_str(0, "x /y\n");
  /* tokenizer.json */
  fuzz_add_seed_str(T_BPE, bpe_whitespace);
  fuzz_add_seed_str(T_BPE, bpe_bytelevel);
  fuzz_add_seed_str(T_BPE, bpe_template);
  /* vocab files */
  fuzz_add_seed_str(T_VOCAB, "<pad>\n<unk>\na\nb\n \n\xc3\xa9\nab\n");
  fuzz_add_seed_str(T_VOCAB, "h\ne\nl\no\n,\n \nw\nr\nd\nT\n3\n\xe2\x80\x94\n");
  /* normalization: first byte = option bits */
  fuzz_add_seed(T_NORMALIZE,
                "\x0f"
                "Caf\xc3\xa9, \xef\xac\x81 \xe2\x84\x8c  x",
                18);
  fuzz_add_seed(T_NORMALIZE,
                "\x01"
                "\xc3\x9f\xc3\x9f"
                "A\xcc\x8a",
                8);
  /* --shard specs; slurm: NUL, then SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _MAX (NUL-separated) */
  fuzz_add_seed_str(T_SHARD, "0/16");
  fuzz_add_seed_str(T_SHARD, "15/16");
  fuzz_add_seed_str(T_SHARD, "0000000003/4294967295");
  fuzz_add_seed(T_SHARD,
                "slurm\0"
                "5\0"
                "8\0"
                "0\0"
                "7",
                13);
  fuzz_add_seed(T_SHARD, /* a rerun of two tasks of a 16-shard array: --array=3,7 */
                "slurm/16\0"
                "7\0"
                "2\0"
                "3\0"
                "7",
                16);
  fuzz_add_seed(T_SHARD,
                "slurm\0"
                "0\0"
                "4",
                9);
  /* every seed must be accepted before mutation: the replay must reach the deep paths */
  int bad = 0;
  for (size_t i = 0; i < fuzz_n_seeds; i++) {
    const uint8_t *p = fuzz_seeds[i].p + 1;
    size_t n = fuzz_seeds[i].n - 1;
    char why[256] = "";
    if (fuzz_seeds[i].p[0] == T_BPE) {
      tok_bpe *b = NULL;
      if (tok_bpe_load((const char *)p, n, &b, why, sizeof why)) {
        fprintf(stderr, "seed %zu: tokenizer.json refused: %s\n", i, why);
        bad = 1;
      }
      tok_bpe_free(b);
    } else if (fuzz_seeds[i].p[0] == T_SHARD && memcmp(p, "slurm", 5) != 0) {
      uint32_t k, cnt;
      char *spec = strndup((const char *)p, n); /* the seed has no NUL */
      if (!spec || fc_shard_parse(spec, &k, &cnt, why, sizeof why)) {
        fprintf(stderr, "seed %zu: shard spec refused: %s\n", i, why);
        bad = 1;
      }
      free(spec);
    } else if (fuzz_seeds[i].p[0] == T_VOCAB) {
      tok_vocab v;
      memset(&v, 0, sizeof v);
      if (tok_vocab_parse(&v, (const char *)p, n, (int)(n & 1), why, sizeof why)) {
        fprintf(stderr, "seed %zu: vocab refused: %s\n", i, why);
        bad = 1;
      }
      tok_vocab_free(&v);
    }
  }
  /* Regression (found by this fuzzer): a TemplateProcessing special token whose id lies past the
   * model's vocab was emitted as is, beyond the vocab size the tokenizer reported, and a negative
   * id reached the ids. Now the size covers it and a negative or non-integer id is refused. */
  {
    char js[sizeof bpe_template + 16], why[256] = "";
    tok_bpe *b = NULL;
    const char *at = strstr(bpe_template, "\"ids\":[3]");
    size_t pre = (size_t)(at - bpe_template);
    snprintf(js, sizeof js, "%.*s\"ids\":[6]%s", (int)pre, bpe_template, at + 9);
    if (tok_bpe_load(js, strlen(js), &b, why, sizeof why) || tok_bpe_vocab_size(b) != 7) {
      fprintf(stderr, "template id 6 past a vocab of 4: load '%s', vocab size %u (want 7)\n", why,
              b ? tok_bpe_vocab_size(b) : 0);
      bad = 1;
    }
    tok_bpe_free(b);
    b = NULL;
    fuzz_add_seed_str(T_BPE, js);
    snprintf(js, sizeof js, "%.*s\"ids\":[-1]%s", (int)pre, bpe_template, at + 9);
    if (tok_bpe_load(js, strlen(js), &b, why, sizeof why) != FC_ETOKENIZER ||
        !strstr(why, "invalid id")) {
      fprintf(stderr, "template id -1: want FC_ETOKENIZER 'invalid id', got '%s'\n", why);
      bad = 1;
    }
    tok_bpe_free(b);
  }
  if (bad) return 1;
  return fuzz_replay("parsers", 3000, mutate_json_value);
}
