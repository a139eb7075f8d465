"""tokenize -t bpe: ids equal to the Hugging Face `tokenizers` library's encode(text).ids (the
version pinned in scripts/setup) for 3,000 sentences shipped in or generated from tests/data/text
(text_corpus.py: numbers, amounts, abbreviations, quotes, capitals, non-ASCII letters, other
scripts and emoji inside sentences) plus lines with added special tokens, on three tokenizer.json
files trained here: BPE + Whitespace (unk, special and non-special added tokens), byte-level
GPT-2 style, and NFKC + Lowercase + WhitespaceSplit with a "##" continuing-subword prefix and a
TemplateProcessing post-processor; then tokenizers for the options the corpus does not reach (Lowercase
over Greek capitals, an added <mask> with lstrip/rstrip next to multi-byte letters and Unicode
white space, a merge listed twice, RoBERTa's and BERT's post-processors, NFKC and NFD over every character with a normalization property,
those newer than tokenizers' Unicode 9.0 tables included). Also: a corrupt tokenizer.json is a
configuration error."""
import json
import os
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(__file__))
from test_tokenize_store import TOKENIZE, read_tokens, run_tokenize, write_tsv  # noqa: E402
import text_corpus  # noqa: E402

try:
    from tokenizers import (AddedToken, Tokenizer, models, normalizers, pre_tokenizers, processors,
                            trainers)
except ImportError as e:  # pragma: no cover
    print(f"FAIL: the oracle is missing ({e}); scripts/setup installs tokenizers")
    sys.exit(1)

SPECIAL = [
    "Special <|sp|> tokens [CLS] inside [SEP] text and featcache words, <|sp|><|sp|>x.",
    "[CLS][SEP] <|sp|>featcache featcachefeatcache [UNK] <|sp|>",
]


def corpus():
    """3,000 distinct sentences, the same on every machine, then the special-token lines."""
    return text_corpus.sentences(3000 - len(text_corpus.EXTRA)) + text_corpus.EXTRA + SPECIAL


def long_words(texts):
    """Words with no space in them, from a few symbols to 20,000 characters (a URL, a run of letters
    with no space): short ones take the merge scan, long ones the heap; both must give tokenizers'
    ids."""
    letters = "".join(ch for ch in "".join(texts) if ch.isalpha())
    packed = "".join(texts).replace(" ", "")
    return [letters[:40], letters[40:89], letters[100:1100], letters[2000:22000], packed[:20000],
            packed[-3000:] + " " + letters[-5000:]]


def train(kind, texts):
    if kind == "whitespace":
        tok = Tokenizer(models.BPE(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tr = trainers.BpeTrainer(vocab_size=3000, special_tokens=["[UNK]", "[CLS]", "[SEP]"],
                                 show_progress=False)
        tok.train_from_iterator(texts[: len(texts) // 2], trainer=tr)
        tok.add_special_tokens(["<|sp|>"])
        tok.add_tokens(["featcache"])
    elif kind == "bytelevel":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        tr = trainers.BpeTrainer(vocab_size=4000, special_tokens=["<|endoftext|>"],
                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tok.train_from_iterator(texts[: len(texts) // 2], trainer=tr)
        tok.add_special_tokens(["<|sp|>"])
    else:  # lowercase + prefix + template
        tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        tr = trainers.BpeTrainer(vocab_size=2500, special_tokens=["[UNK]", "[CLS]", "[SEP]"],
                                 continuing_subword_prefix="##", show_progress=False)
        tok.train_from_iterator(texts[: len(texts) // 2], trainer=tr)
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    return tok


GREEK = ["ΟΔΟΣ ΣΟΦΟΣ ΑΣ Σ ΣΣ ΝΟΜΟΣ.", "Ο ΚΟΣΜΟΣ ΕΙΝΑΙ ΩΡΑΙΟΣ, ΟΧΙ ΜΟΝΟΣ;", "ΣΗΜΕΡΑ ΟΙ ΑΝΘΡΩΠΟΙ ΤΡΕΧΟΥΝ",
         "ΟΔΟΣ-ΣΟΦΟΣ (ΛΟΓΟΣ) ΠΑΣ·", "σοφος ΣΟΦΟΣ Σοφος"]
MASKED = ["voilà<mask>", "хорошо х<mask>", "a\u00a0<mask>\u00a0b", "Åland <mask> Šibenik",
          "Р<mask>Р", "x <mask>  y", "<mask>", "  <mask>  ", "tab\t<mask>\tend", "日本<mask>語",
          "\u2003<mask>\u3000", "end with <mask>"]


def edge_tokenizers(d, texts):
    """Tokenizers whose options the corpus alone does not reach: Lowercase over Greek capitals (a
    word-final Σ: tokenizers lowercases each character on its own), added tokens with normalized
    true (matched in the normalized text, in their normalized form), byte fallback beside an unk
    (where tokenizers puts the unk), a single_word added token inside a word (dropped, nothing
    shorter matched in its span), an added <mask> that strips
    the white space around it (lstrip/rstrip, RoBERTa's; Unicode white space, next to multi-byte
    letters), and a merge listed twice (the later rank wins). Returns (name, path, Tokenizer,
    lines)."""
    out = []
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tr = trainers.BpeTrainer(vocab_size=400, special_tokens=["[UNK]"], show_progress=False)
    tok.train_from_iterator(GREEK * 20 + texts[:200], trainer=tr)
    out.append(("greek-lowercase", tok, GREEK + [t.upper() for t in GREEK]))
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))  # added tokens matched in normalized text
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(texts[:300], trainer=trainers.BpeTrainer(
        vocab_size=600, special_tokens=["[UNK]"], show_progress=False))
    tok.add_tokens([AddedToken("FeatCache", normalized=True), AddedToken("\ufb01x", normalized=True),
                    AddedToken("Keep", normalized=False)])
    out.append(("normalized-added", tok, [
        "featcache FeatCache FEATCACHE feat cache", "fix \ufb01x FIX", "Keep keep KEEP",
        "xfeatcachex and featcaches", "Keepfeatcache"] + texts[:100]))
    tok = Tokenizer.from_file(os.path.join(d, "bytelevel.json"))
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True)])
    out.append(("mask-strip", tok, MASKED + [t.replace(" ", " <mask> ", 1) for t in texts[:300]]))
    # byte fallback with some byte tokens only, an unk, fused and not: an unknown character's unk
    # is held back until a character of the vocab comes (after another character's bytes)
    vocab = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz.")}
    vocab.update({"[UNK]": len(vocab), "<0xC3>": len(vocab) + 1, "<0xA9>": len(vocab) + 2})
    for fuse in (False, True):
        tok = Tokenizer(models.BPE(vocab=dict(vocab), merges=[], unk_token="[UNK]",
                                   byte_fallback=True, fuse_unk=fuse))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        out.append((f"byte-fallback-fuse{int(fuse)}", tok,
                    ["\u00fc\u00e9", "a\u00fc\u00e9b", "\u00fc\u00fc\u00e9\u00fc", "\u00e9\u00fc\u00e9",
                     "x\u00fc\u00f6\u00e9y z", "\u00e9\u00e9 a \u00fc"]))
    # RoBERTa's and BERT's post-processors (they were refused): cls, the ids, sep
    for name, post in (("roberta", processors.RobertaProcessing(("</s>", 2), ("<s>", 0))),
                       ("bert", processors.BertProcessing(("[SEP]", 70000), ("[CLS]", 9)))):
        tok = Tokenizer.from_file(os.path.join(d, "bytelevel.json"))
        tok.post_processor = post
        out.append((f"post-{name}", tok, texts[:200]))
    # byte fallback with a continuing_subword_prefix and an end_of_word_suffix: tokenizers falls
    # back to the bytes of what it looked up, "##é</w>", not the character's alone
    vocab = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}
    vocab.update({f"<0x{b:02X}>": len(vocab) + b for b in range(256)})
    vocab["[UNK]"] = len(vocab)
    vocab.update({f"##{c}": len(vocab) + i for i, c in enumerate("abc")})
    vocab.update({f"{c}</w>": len(vocab) + i for i, c in enumerate("abc")})
    for kw in ({"continuing_subword_prefix": "##"}, {"end_of_word_suffix": "</w>"},
               {"continuing_subword_prefix": "##", "end_of_word_suffix": "</w>"}):
        tok = Tokenizer(models.BPE(vocab=dict(vocab), merges=[], unk_token="[UNK]",
                                   byte_fallback=True, **kw))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        out.append((f"byte-fallback-{'-'.join(kw)}", tok,
                    ["a\u00e9", "\u00e9a", "a\u00e9b", "\u00e9", "abc", "a\u00fcb c", "ab\u00e9\u00e9 cab"]))
    # a single_word added token inside a word is dropped, and no shorter one matches in its span
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz.")},
                               merges=[]))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_tokens([AddedToken("abc", single_word=True), AddedToken("bc"), AddedToken("cd")])
    out.append(("single-word", tok, ["xabc", "abc", "x abc y", "abcx", "bc", "xbc", "abc abc",
                                     "xabcd", "abcd", "ab abcabc bcd", "a.abc.b"]))
    j = json.loads(open(os.path.join(d, "whitespace.json"), encoding="utf-8").read())
    j["model"]["merges"].append(j["model"]["merges"][0])  # the first merge again, ranked last
    j["model"]["merges"].append(j["model"]["merges"][5])
    tj = os.path.join(d, "dup-merges.json")
    open(tj, "w", encoding="utf-8").write(json.dumps(j))
    out.append(("dup-merges", Tokenizer.from_file(tj), texts[:500]))
    # added_tokens whose ids disagree with what tokenizers gives them (it reads those ids only to
    # warn): one whose content the model's vocab holds under another id, ids with gaps, one past
    # 2**31, the same content twice (tokenize used to store the ids written in the file)
    j = json.loads(open(os.path.join(d, "whitespace.json"), encoding="utf-8").read())
    in_vocab = next(k for k in j["model"]["vocab"] if len(k) > 3 and k.isalpha())
    j["added_tokens"] += [
        {"id": 7, "content": in_vocab, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 90000, "content": "<gap>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 2**31 + 5, "content": "<far>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True},
        {"id": 3, "content": "<gap>", "single_word": False, "lstrip": True, "rstrip": True,
         "normalized": False, "special": True}]
    tj = os.path.join(d, "added-ids.json")
    open(tj, "w", encoding="utf-8").write(json.dumps(j))
    out.append(("added-ids", Tokenizer.from_file(tj),
                [f"{in_vocab} x <gap> y<far>z featcache <|sp|> [CLS]", "a <gap> b", "<far><gap>"]
                + [t.replace(" ", f" {in_vocab} <far> ", 1) for t in texts[:100]]))
    # NFC, NFD, NFKC, NFKD: tokenizers' tables are Unicode 9.0's, utf8proc's newer. Every character
    # Python gives a normalization property (a decomposition, a combining class), alone and between
    # marks it could reorder across or compose with: a newer one (U+32FF, the Arabic mark U+0898,
    # U+1DF6) is left as it is, a starter nothing composes across (utf8proc normalized them)
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    normal = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and chr(c) not in "\ufeff"
              and (unicodedata.decomposition(chr(c)) or unicodedata.combining(chr(c)))]
    lines = normal + [f"a{c}\u0323" for c in normal] + [f"e\u0301{c}\u0334" for c in normal]
    lines += [unicodedata.normalize("NFD", c) for c in normal]
    for name, norm in (("nfkc", normalizers.NFKC()), ("nfd", normalizers.NFD())):
        tok = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(alphabet)}, merges=[]))
        tok.normalizer = norm  # ids: the bytes of the normalized text, one each
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        out.append((f"unicode-{name}", tok, lines))
    return out


def compare_store(kind, tok, tj, rows, d):
    """tokenize with tj over rows; the lines whose ids differ from tok.encode's (printed)."""
    man = os.path.join(d, f"m-{kind}.tsv")
    write_tsv(man, rows)
    st = os.path.join(d, f"store-{kind}")
    p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "-t", "bpe",
                     "--tokenizer-json", tj, "--json", "-j", "2")
    s = json.loads(p.stdout)
    assert s["failed"] == 0 and s["processed"] == len(rows), (s, p.stderr[-2000:])
    got = read_tokens(st, s["config_digest"])
    bad = 0
    for i, t in rows:
        want = tok.encode(t).ids
        if got[i][1] != want:
            bad += 1
            if bad <= 5:
                print(f"MISMATCH [{kind}] {t!r}\n  got  {got[i][1]}\n  want {want}\n"
                      f"  tokens {tok.encode(t).tokens}")
    return bad


def bad_merge(j):
    j["model"]["merges"].insert(0, ["zzzq", "qqqz"])
    return j


def added_id(j, v):
    """An added token whose id tokenizers refuses (not a u32): tokenize took -1 (the token
    vanished from every line) and 2**32 + 1 (stored as id 1) before."""
    j["added_tokens"][-1]["id"] = v
    return j


def main():
    if not os.access(TOKENIZE, os.X_OK):
        print(f"FAIL: {TOKENIZE} not built")
        return 1
    texts = corpus()
    assert len(texts) >= 3000, len(texts)
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        rows = [(f"s{i:05d}", t) for i, t in enumerate(texts + long_words(texts))]
        man = os.path.join(d, "m.tsv")
        write_tsv(man, rows)
        for kind in ("whitespace", "bytelevel", "lowercase"):
            tok = train(kind, texts)
            tj = os.path.join(d, f"{kind}.json")
            tok.save(tj)
            bad = compare_store(kind, tok, tj, rows, d)
            non_ascii = sum(1 for _, t in rows if not t.isascii())
            print(f"{kind}: {len(rows) - bad} of {len(rows)} equal ({non_ascii} non-ASCII lines,"
                  f" {len(long_words(texts))} long words, vocab {tok.get_vocab_size()})")
            fails += bad
        for kind, tok, lines in edge_tokenizers(d, texts):
            tj = os.path.join(d, f"{kind}.json")
            if not os.path.exists(tj):
                tok.save(tj)
            erows = [(f"e{i:05d}", t) for i, t in enumerate(dict.fromkeys(lines))]
            bad = compare_store(kind, tok, tj, erows, d)
            print(f"{kind}: {len(erows) - bad} of {len(erows)} equal")
            fails += bad
        # corrupt tokenizer.json files: configuration errors (exit 2), nothing stored
        good = open(os.path.join(d, "bytelevel.json"), encoding="utf-8").read()
        cases = {"truncated": good[: len(good) // 2],
                 "not-bpe": json.dumps({**json.loads(good), "model": {"type": "Unigram", "vocab": []}}),
                 "bad-merge": json.dumps(bad_merge(json.loads(good))),
                 "added-negative-id": json.dumps(added_id(json.loads(good), -1)),
                 "added-id-over-u32": json.dumps(added_id(json.loads(good), 2**32 + 1)),
                 "roberta-without-cls": json.dumps({**json.loads(good), "post_processor": {
                     "type": "RobertaProcessing", "sep": ["</s>", 2]}})}
        for name, text in cases.items():
            tj = os.path.join(d, f"corrupt-{name}.json")
            open(tj, "w", encoding="utf-8").write(text)
            p = run_tokenize("-o", os.path.join(d, "c"), "--manifest", man, "-t", "bpe",
                             "--tokenizer-json", tj, check=False)
            assert p.returncode == 2, (name, p.returncode, p.stderr)
            assert tj in p.stderr and "\n" == p.stderr[-1], p.stderr
            print(f"corrupt {name}: {p.stderr.strip()}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
