/* featcache — the BPE tokenizer's private parts, shared by its loader (tok_bpe.c: the
 * tokenizer.json parsed) and its encoder (tok_bpe_encode.c: text to ids). */
#ifndef FC_TOK_BPE_H
#define FC_TOK_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "libcache/text/tokenize/tok_internal.h"

enum { PRE_BYTELEVEL = 1, PRE_WHITESPACE, PRE_WSSPLIT };
enum { NORM_NFC = 1, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWER };
#define MAX_STEPS 8

typedef struct added_token {
  char *content;
  size_t len;
  int32_t id;
  int single_word, lstrip, rstrip, normalized;
} added_token;

struct tok_bpe {
  tok_map vocab;
  tok_pairs merges;
  uint32_t vocab_size;
  int32_t unk_id; /* -1: none */
  int unk_missing; /* unk_token named but not in the vocab */
  int fuse_unk, byte_fallback, ignore_merges;
  char *prefix, *suffix;
  size_t prefix_len, suffix_len;
  int npre, pre[MAX_STEPS], pre_prefix_space[MAX_STEPS], pre_use_regex[MAX_STEPS];
  int nnorm, norm[MAX_STEPS];
  added_token *added;
  size_t nadded;
  tok_ids post_prefix, post_suffix;
  int32_t byte_ids[256]; /* byte_fallback <0xXX> ids, -1 when missing */
  char byte_chars[256][3]; /* ByteLevel: byte → UTF-8 of its printable stand-in */
  uint8_t byte_chars_len[256];
};

static inline int tok_bpe_lookup(const tok_bpe *b, const char *s, size_t len, int32_t *id) {
  return tok_map_get(&b->vocab, s, len, id);
}

/* The tokenizer.json's normalizers applied to s[0, len) in order, into out (tokenizers' order; the
 * loader normalizes the added tokens that match the normalized text with it). 0, ENOMEM, FC_EUTF8. */
int tok_bpe_normalize(const tok_bpe *b, const char *s, size_t len, tok_buf *out);

#endif
