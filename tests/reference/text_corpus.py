"""Text corpora for the tokenizer tests, shipped in tests/data/text (never read from the machine):
hand.txt (written for these tests: numbers, amounts, dates, times, abbreviations, list labels,
quotes, brackets, capitals, non-ASCII letters, contractions) and generated.txt (template sentences
drawn with a fixed seed by make_lines.py). sentences(n) recombines their words into n more
sentences, deterministically, for tests that want thousands."""
import os
import random

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "text")

# Lines a phonemizer or BPE sees rarely in transcripts but must not break on.
EXTRA = [
    "Café déjà vu — naïve façade, Ærøskøbing, Straße, İstanbul.",
    "Москва — столица России. Ελληνικά γράμματα. עברית מימין לשמאל.",
    "日本語のテキストと中文文本，还有한국어 문장。",
    "Emoji: 😀🎉👍🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 and ❤️ hearts!",
    "Numbers 3.14159, 1,000,000 and ½ ⅔ ² ³ with tabs\u00a0nbsp and   spaces.",
    "She said: “it's fine”, didn't she? We'll see; they'd know. I'm sure you've heard.",
    "  leading and trailing spaces  ",
    "mixed\u2003em\u2009thin\u3000ideographic spaces",
    "Ⓐⓑⓒ circled, ﬁ ligature, ＦＵＬＬＷＩＤＴＨ letters, x²+y²=z²",
    "ALL CAPS SHOUTING, MiXeD cAsE, and lower case.",
    "Reactions: 👍 great, 😂 funny, 🙏 thanks, 🚀 launch, 🍕🍺 party — 100% 🔥!",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "Příliš žluťoučký kůň úpěl ďábelské ódy; Pchnąć w tę łódź jeża.",
    "Ça va? Où est la bibliothèque, s'il vous plaît? À bientôt!",
]


def lines(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [s for s in f.read().split("\n") if s.strip()]


def shipped():
    """hand.txt then generated.txt, in file order."""
    return lines("hand.txt") + lines("generated.txt")


def sentences(n, seed=4):
    """The shipped lines, then sentences made by a seeded word-bigram walk over them and EXTRA
    (so emoji and other scripts turn up inside sentences), n in all, distinct and none of them
    a line of EXTRA."""
    base = shipped()
    follow = {}
    for s in base + EXTRA:
        words = s.split()
        for a, b in zip(["<s>"] + words, words + ["</s>"]):
            follow.setdefault(a, []).append(b)
    rng = random.Random(seed)
    out, seen = [], set(EXTRA)  # a walk can give back a line of EXTRA, which callers add
    for s in base:
        if s not in seen:
            seen.add(s)
            out.append(s)
    tries = 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        words, w = [], "<s>"
        while len(words) < 40:
            w = rng.choice(follow[w])
            if w == "</s>":
                break
            words.append(w)
        s = " ".join(words)
        if len(words) >= 3 and s not in seen:
            seen.add(s)
            out.append(s)
    return out[:n]
