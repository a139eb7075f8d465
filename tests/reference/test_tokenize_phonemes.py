"""tokenize -t phonemes: the stored ids, decoded with the exported vocab, equal the phonemes of
the espeak-ng command line (`espeak-ng -q --ipa --sep=_ -v en-us`) for the same texts, split at
the same punctuation marks (kept as symbols), stress marks split off, " " between words."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(__file__))
from test_tokenize_store import TOKENIZE, read_tokens, run_tokenize, write_tsv  # noqa: E402
from test_tokenize_bpe import corpus  # noqa: E402

PUNCT = ".,;:!?\"()[]{}«»“”„…—–¡¿"
STRESS = ("\u02c8", "\u02cc")


def espeak_cli(text, lang):
    p = subprocess.run(["espeak-ng", "-q", "--ipa", "--sep=_", "-v", lang, "--stdin"],
                       input=text, capture_output=True, text=True, check=True)
    return " ".join(line.strip() for line in p.stdout.split("\n") if line.strip())


def symbols(text, lang):
    """The expected unit sequence, computed from the espeak-ng command line."""
    out, pending = [], False

    def emit(s):
        nonlocal pending
        if pending and out:
            out.append(" ")
        pending = False
        out.append(s)

    piece = ""
    for ch in text + "\0":
        if ch != "\0" and ch not in PUNCT:
            piece += ch
            continue
        core = piece.strip(" ")
        if piece[:1] == " ":
            pending = True
        if core:
            for k, word in enumerate(espeak_cli(core, lang).split(" ")):
                if k:
                    pending = True
                for unit in word.split("_"):
                    while unit[:1] in STRESS and unit:
                        emit(unit[0])
                        unit = unit[1:]
                    if unit:
                        emit(unit)
        if piece[-1:] == " ":
            pending = True
        if ch != "\0":
            emit(ch)
        piece = ""
    return out


def main():
    if not os.access(TOKENIZE, os.X_OK) or not shutil.which("espeak-ng"):
        print("skip: tokenize or espeak-ng missing")
        return 77
    texts = [t for t in corpus() if t.isascii() and 20 < len(t) < 160][:30]
    texts += ["Hello, world. Don't stop-believing in 1984!", "He said: \"yes\" (twice); she didn't?",
              "Déjà vu — a naïve café…"]
    with tempfile.TemporaryDirectory() as d:
        rows = [(f"p{i:03d}", t) for i, t in enumerate(texts)]
        man = os.path.join(d, "m.tsv")
        write_tsv(man, rows)
        st, ev = os.path.join(d, "store"), os.path.join(d, "vocab.txt")
        p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "-t", "phonemes",
                         "--build-vocab", "--export-vocab", ev, "--json", "-j", "2")
        s = json.loads(p.stdout)
        assert s["failed"] == 0 and s["processed"] == len(rows), s
        vocab = open(ev, encoding="utf-8").read().split("\n")[:-1]
        got = read_tokens(st, s["config_digest"])
        bad = 0
        for i, t in rows:
            norm = " ".join(unicodedata.normalize("NFKC", t).split())
            want = symbols(norm, "en-us")
            have = [vocab[k] for k in got[i][1]]
            if have != want:
                bad += 1
                print(f"MISMATCH {norm!r}\n  lib {''.join(have)!r}\n  cli {''.join(want)!r}")
        # the same vocab file given back: same config, nothing new; a second language sits beside it
        p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "-t", "phonemes",
                         "--vocab", ev, "--json")
        s2 = json.loads(p.stdout)
        assert s2["config_digest"] == s["config_digest"] and s2["processed"] == 0, s2
        p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "-t", "phonemes",
                         "--vocab", ev, "--json", "--lang", "en-gb", check=False)
        s3 = json.loads(p.stdout)
        assert s3["config_digest"] != s["config_digest"] and s3["processed"] == len(rows), s3
        p = run_tokenize("-o", st, "--manifest", man, "-t", "phonemes", "--build-vocab", "--lang",
                         "xx-nolang", check=False)
        assert p.returncode == 2 and "xx-nolang" in p.stderr, p.stderr
    print(f"{len(rows) - bad} of {len(rows)} phoneme sequences equal the espeak-ng command line")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
