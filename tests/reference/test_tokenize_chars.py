"""tokenize -t chars: ids checked against an independent Python computation of the same
normalization (unicodedata NFKC, str.casefold, category P*, str.split) and vocab (a given file
with a multi-character symbol, a space line and specials; and --build-vocab), on 1,500 sentences
shipped in or generated from tests/data/text (text_corpus.py)."""
import json
import os
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(__file__))
from test_tokenize_store import TOKENIZE, read_meta, read_tokens, run_tokenize, write_tsv  # noqa: E402
import text_corpus  # noqa: E402


def normalize(s, fold=False, punct_remove=False, collapse=True):
    t = unicodedata.normalize("NFKC", s)
    if fold:
        t = unicodedata.normalize("NFKC", t.casefold())
    if punct_remove:
        t = "".join(c for c in t if not unicodedata.category(c).startswith("P"))
    if collapse:
        t = " ".join(t.split())
    return t


def encode(text, vocab, specials=("<pad>", "<unk>", "<bos>", "<eos>")):
    """Greedy longest match over the vocab's symbols (specials never match text)."""
    ids = {s: i for i, s in enumerate(vocab)}
    match = {s for s in vocab if s not in specials}
    longest = max(len(s) for s in match)
    out, i = [], 0
    while i < len(text):
        for n in range(min(longest, len(text) - i), 0, -1):
            if text[i:i + n] in match:
                out.append(ids[text[i:i + n]])
                i += n
                break
        else:
            out.append(ids["<unk>"])
            i += 1
    return out


def compare_fold_with_hf(d, texts):
    try:
        from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
    except ImportError as e:  # pragma: no cover
        raise AssertionError(f"{e} (scripts/setup installs it)")
    vocab = ["<pad>", "<unk>", "<bos>", "<eos>", " ", *"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
             *"abcdefghijklmnopqrstuvwxyz", *".,;:!?'-"]
    vf = os.path.join(d, "vocab-upper.txt")
    with open(vf, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in vocab))
    hf = Tokenizer(models.WordLevel({s: i for i, s in enumerate(vocab)}, unk_token="<unk>"))
    hf.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    hf.pre_tokenizer = pre_tokenizers.Split(Regex("."), "isolated")
    # ASCII lines with single spaces, so that featcache's collapse and NFKC change nothing more
    rows = [(f"f{i:05d}", t) for i, t in enumerate(texts)
            if t.isascii() and t.strip() and " ".join(t.split()) == t]
    assert len(rows) > 500, len(rows)
    man = os.path.join(d, "m-fold.tsv")
    write_tsv(man, rows)
    st = os.path.join(d, "store-fold")
    p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "--vocab", vf,
                     "--case", "fold", "--json")
    s = json.loads(p.stdout)
    assert "26 symbols can never match" in p.stderr and "'Z' (line 31, --case fold)" not in p.stderr \
        and "'A' (line 6, --case fold)" in p.stderr, p.stderr
    got = read_tokens(st, s["config_digest"])
    for i, t in rows:
        want = hf.encode(t).ids
        assert got[i][1] == want, (t, got[i][1], want)
        assert not any(5 <= x < 31 for x in want), "an upper-case symbol produced"
    return len(rows)


def main():
    if not os.access(TOKENIZE, os.X_OK):
        print(f"FAIL: {TOKENIZE} not built")
        return 1
    texts = text_corpus.sentences(1500 - len(text_corpus.EXTRA)) + text_corpus.EXTRA
    checked = 0
    with tempfile.TemporaryDirectory() as d:
        rows = [(f"c{i:05d}", t) for i, t in enumerate(texts)]
        man = os.path.join(d, "m.tsv")
        write_tsv(man, rows)
        # 1. a given vocab: specials, a space line, a digraph, lowercase letters and some marks
        vocab = ["<pad>", "<unk>", "<bos>", "<eos>", " ", "th", *"abcdefghijklmnopqrstuvwxyz", *".,;:!?'-", "é"]
        vf = os.path.join(d, "vocab.txt")
        with open(vf, "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in vocab))
        for flags, kw in (([], {}), (["--case", "fold", "--punct", "remove"], {"fold": True, "punct_remove": True})):
            st = os.path.join(d, "store-" + "-".join(flags))
            p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "--vocab", vf,
                             "--json", *flags, check=False)
            s = json.loads(p.stdout)
            empties = sum(1 for _, t in rows if not normalize(t, **kw))
            assert s["failed"] == empties and p.returncode == (1 if empties else 0), (s, p.returncode)
            got = read_tokens(st, s["config_digest"])
            for i, t in rows:
                n = normalize(t, **kw)
                if not n:
                    assert i not in got
                    continue
                want = encode(n, vocab)
                assert got[i][1] == want, (flags, t, n, got[i][1], want)
                checked += 1
            assert s["unknown"] > 0, "uppercase letters map to unk without --case fold"
        # 2. --build-vocab: specials then the distinct code points in UTF-8 byte order
        st = os.path.join(d, "store-built")
        ev = os.path.join(d, "exported.txt")
        p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "--build-vocab",
                         "--export-vocab", ev, "--json", "--add-eos")
        s = json.loads(p.stdout)
        norm = [normalize(t) for _, t in rows]
        want_vocab = ["<pad>", "<unk>", "<bos>", "<eos>"] + sorted({c for n in norm for c in n},
                                                                   key=lambda c: c.encode())
        exported = open(ev, encoding="utf-8").read().split("\n")[:-1]
        assert exported == want_vocab, "exported vocab"
        assert read_meta(st, "vocab/" + s["config_digest"]).decode() == open(ev, encoding="utf-8").read()
        got = read_tokens(st, s["config_digest"])
        for (i, _), n in zip(rows, norm):
            assert got[i][1] == [want_vocab.index(c) for c in n] + [3], n
            checked += 1
        assert s["unknown"] == 0
        # 3. the exported vocab reused with --vocab gives the same config digest: nothing new
        p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "--vocab", ev,
                         "--json", "--add-eos")
        s2 = json.loads(p.stdout)
        assert s2["config_digest"] == s["config_digest"] and s2["processed"] == 0, s2
        # 4. --case fold over a vocab with upper-case letters: the vocab is kept as written, as the
        # Hugging Face tokenizers library keeps it under a Lowercase normalizer (its ids equal
        # that of a per-character WordLevel model on ASCII text, where lower() is casefold()):
        # the upper-case symbols are never produced, and the run names them
        checked += compare_fold_with_hf(d, texts)
    print(f"ok: {checked} chars encodings equal the Python computation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
