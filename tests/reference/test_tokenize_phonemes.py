"""tokenize -t phonemes against the espeak-ng command line on the same whole lines.

Corpus: the shipped lines of tests/data/text (hand.txt, generated.txt: numbers, decimals,
ordinals, years, ranges, amounts, percentages, dates, times, Mr./Dr./e.g./etc., list labels,
quotes, brackets, non-ASCII letters), for en-us and en-gb. For every line, with the ids decoded
by the exported vocab:
  - with punctuation and white space removed from both sides, the stored sequence equals what
    `espeak-ng -q --ipa -v VOICE` prints for the whole line (the rule of docs/tokenize.md);
  - stricter: the words (" "-separated) equal the command line's words (on every 5th line also
    their phonemes, as `--sep=_` separates them, stress marks split off), and every kept mark sits
    where the command line ends a clause (its output lines) and is a character of the line (or
    "…" for "...").
Also: each mark of the config's "punctuation" ends an espeak-ng clause; the config says
tokenizer_version 5; the vocab given back keeps the digest, another voice changes it, an unknown
voice is a configuration error; docs/tokenize.md shows three lines as its reader
(docs/examples/read_tokens.py) prints them from a store, next to espeak-ng's output. Lines in which
espeak-ng switches language for a word (an English word in Russian, French, Korean text: its
command line prints "(en)...(ru)") are stored without the flags, as the command line's output with
the flags removed (version 4 stored "(en)" as a symbol, k o e n under a vocab of characters)."""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(__file__))
from test_tokenize_store import TOKENIZE, read_meta, read_tokens, run_tokenize, write_tsv  # noqa: E402
import text_corpus  # noqa: E402

STRESS = ("\u02c8", "\u02cc")
VOICES = ("en-us", "en-gb")


def espeak(text, lang, sep=False):
    """Output lines of the espeak-ng command line for the whole text (one line per clause)."""
    args = ["espeak-ng", "-q", "--ipa", "-v", lang, "--stdin"] + (["--sep=_"] if sep else [])
    p = subprocess.run(args, input=text, capture_output=True, text=True, check=True)
    return [ln.strip() for ln in p.stdout.split("\n") if ln.strip()]


def strip(s):
    return "".join(c for c in s if not unicodedata.category(c).startswith("P")
                   and not c.isspace() and c != "_")


def units(word):
    out = []
    for u in word.split("_"):
        while u[:1] in STRESS and u:
            out.append(u[0])
            u = u[1:]
        if u:
            out.append(u)
    return out


def words_and_ends(lines, split):
    """[(words, clause ends)] of command-line output lines: words as unit lists, and after how
    many words each clause (output line) ends."""
    words, ends = [], set()
    for ln in lines:
        words += [split(w) for w in ln.split(" ") if strip(w)]
        ends.add(len(words))
    return words, ends


def check_line(text, have, marks, lang, with_sep):
    """Problems of one line (empty when it agrees with the command line)."""
    bad = []
    plain = espeak(text, lang)
    if strip("".join(have)) != strip("".join(plain)):
        bad.append(f"whole line\n    lib {''.join(have)!r}\n    cli {' | '.join(plain)!r}")
    lib_words, cur, lib_marks = [], [], []
    for u in have + [" "]:
        if u == " " or u in marks:
            if cur:
                lib_words.append(cur)
                cur = []
            if u in marks:
                lib_marks.append((len(lib_words), u))
        else:
            cur.append(u)
    # words (and, on some lines, the phonemes in them as --sep=_ separates them)
    if with_sep:
        cli_words, clause_ends = words_and_ends(espeak(text, lang, sep=True), units)
        have_words = lib_words
    else:
        cli_words, clause_ends = words_and_ends(plain, lambda w: w)
        have_words = ["".join(w) for w in lib_words]
    if have_words != cli_words:
        bad.append(f"words\n    lib {have_words}\n    cli {cli_words}")
    for at, m in lib_marks:
        if at not in clause_ends:
            bad.append(f"mark {m!r} after word {at}, not at a clause end {sorted(clause_ends)}")
        if m not in text and not (m == "\u2026" and "..." in text):
            bad.append(f"mark {m!r} is not in the text")
    return bad


SWITCHES = [("ru", "Привет computer мир"), ("fr", "le weekend à Paris"),
            ("ko", "hello 안녕하세요")]
FLAG = re.compile(r"\([a-z0-9-]+\)")


def check_switches(d):
    """espeak-ng's language-switch flags are not stored: each line's sequence is the command
    line's output with the flags removed, and no symbol of the built vocab holds a parenthesis;
    a vocab of single characters (the built vocab's, split) gives no '(' either."""
    bad = 0
    for k, (lang, text) in enumerate(SWITCHES):
        cli = espeak(text, lang)
        if not FLAG.search(" ".join(cli)):
            bad += 1
            print(f"SWITCH espeak-ng -v {lang} no longer switches language in {text!r}: {cli}")
        man, st = os.path.join(d, f"sw{k}.tsv"), os.path.join(d, f"sw{k}")
        write_tsv(man, [("s", text)])
        ev = os.path.join(d, f"sw{k}.txt")
        p = run_tokenize("-o", st, "-t", "phonemes", "--lang", lang, "--build-vocab",
                         "--export-vocab", ev, "--json", "-q", man)
        s = json.loads(p.stdout)
        vocab = open(ev, encoding="utf-8").read().split("\n")[:-1]
        have = [vocab[i] for i in read_tokens(st, s["config_digest"])["s"][1]]
        want = strip(FLAG.sub("", "".join(cli)))
        if any("(" in u or ")" in u for u in vocab) or strip("".join(have)) != want:
            bad += 1
            print(f"SWITCH {lang} {text!r}\n    lib {have}\n    cli {cli}")
        # a vocab of single characters: the flags' letters were ids of their own
        chars = sorted({c for u in vocab[4:] for c in u} | {" "})
        cv = os.path.join(d, f"sw{k}-chars.txt")
        with open(cv, "w", encoding="utf-8") as f:
            f.write("".join(f"{u}\n" for u in vocab[:4] + chars))
        p = run_tokenize("-o", st, "-t", "phonemes", "--lang", lang, "--vocab", cv, "--json", "-q",
                         man)
        s = json.loads(p.stdout)
        vc = open(cv, encoding="utf-8").read().split("\n")[:-1]
        have = "".join(vc[i] for i in read_tokens(st, s["config_digest"])["s"][1])
        if s["unknown"] or strip(have) != want:
            bad += 1
            print(f"SWITCH {lang} {text!r}, single characters\n    lib {have!r}\n    cli {cli}")
    return bad


THREE = [("l1", "version 2.0, January 2004"), ("l2", "Mr. Smith paid $3,000.50 on Jan. 5th"),
         ("l3", "see section 4(d) and (a) below")]


def check_docs(d):
    """docs/tokenize.md shows three lines as docs/examples/read_tokens.py prints them from a store,
    and espeak-ng's output for them: both must be what they are today. Compared word for word: the
    page wraps long lines to fit its man page's 80 columns."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    docs = open(os.path.join(src, "docs", "tokenize.md"), encoding="utf-8").read()
    man, st = os.path.join(d, "three.tsv"), os.path.join(d, "three")
    write_tsv(man, THREE)
    run_tokenize("-o", st, "-t", "phonemes", "--build-vocab", "-q", man)
    p = subprocess.run([sys.executable, os.path.join(src, "docs", "examples", "read_tokens.py"), st,
                        "phonemes"], capture_output=True, text=True, check=True)
    block = "".join(f"    {ln}\n" for ln in p.stdout.splitlines())
    words = " ".join(docs.split())
    bad = 0
    if " ".join(block.split()) not in words:
        bad += 1
        print(f"DOCS docs/tokenize.md does not show the reader's output:\n{block}")
    for _, text in THREE:
        want = f"    espeak-ng: {' | '.join(espeak(text, 'en-us'))}\n"
        if " ".join(want.split()) not in words:
            bad += 1
            print(f"DOCS docs/tokenize.md does not show espeak-ng's line:\n{want}")
    return bad


def main():
    if not os.access(TOKENIZE, os.X_OK) or not shutil.which("espeak-ng"):
        print("FAIL: tokenize not built or espeak-ng missing (scripts/setup installs espeak-ng)")
        return 1
    texts = text_corpus.shipped()
    assert len(texts) >= 300, len(texts)
    rows = [(f"p{i:04d}", t) for i, t in enumerate(texts)]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        man = os.path.join(d, "m.tsv")
        write_tsv(man, rows)
        st = os.path.join(d, "store")
        digests = {}
        for lang in VOICES:
            ev = os.path.join(d, f"vocab-{lang}.txt")
            p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "-t", "phonemes",
                             "--lang", lang, "--build-vocab", "--export-vocab", ev, "--json", "-j", "2")
            s = json.loads(p.stdout)
            assert s["failed"] == 0 and s["processed"] == len(rows), s
            digests[lang] = s["config_digest"]
            cfg = json.loads(read_meta(st, "cfg/" + s["config_digest"]))
            assert cfg["tokenizer"] == "phonemes" and cfg["tokenizer_version"] == 5, cfg
            assert cfg["lang"] == lang, cfg
            marks = set(cfg["punctuation"])
            vocab = open(ev, encoding="utf-8").read().split("\n")[:-1]
            got = read_tokens(st, s["config_digest"])
            norm = {i: " ".join(unicodedata.normalize("NFKC", t).split()) for i, t in rows}
            with concurrent.futures.ThreadPoolExecutor(4) as ex:
                results = list(ex.map(lambda r: check_line(
                    norm[r[0]], [vocab[k] for k in got[r[0]][1]], marks, lang, r[0][-1] in "04"),
                    rows))
            bad = 0
            for (i, _), probs in zip(rows, results):
                if probs:
                    bad += 1
                    if bad <= 10:
                        print(f"MISMATCH {lang} {norm[i]!r}\n  " + "\n  ".join(probs))
            print(f"{lang}: {len(rows) - bad} of {len(rows)} lines equal the espeak-ng command line "
                  f"on the whole line")
            failures += bad
            if lang == "en-us":
                # every mark the config lists ends a clause of espeak-ng's own
                for m in cfg["punctuation"]:
                    n = len(espeak(f"one{m} Two", lang))
                    if n != 2:
                        failures += 1
                        print(f"MARK {m!r} (U+{ord(m):04X}): espeak-ng gives {n} clause(s), not 2")
                # the same vocab file given back: same config, nothing new
                p = run_tokenize("-o", st, "--manifest", man, "--manifest-format", "tsv", "-t",
                                 "phonemes", "--vocab", ev, "--json")
                s2 = json.loads(p.stdout)
                assert s2["config_digest"] == s["config_digest"] and s2["processed"] == 0, s2
        assert digests["en-us"] != digests["en-gb"], digests
        p = run_tokenize("-o", st, "--manifest", man, "-t", "phonemes", "--build-vocab", "--lang",
                         "xx-nolang", check=False)
        assert p.returncode == 2 and "xx-nolang" in p.stderr, p.stderr
        failures += check_docs(d)
        failures += check_switches(d)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
