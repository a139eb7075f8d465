"""tokenize's summary adds up: processed (records written) + skipped_existing + failed = lines,
when one text appears under several ids in one batch (one record, written by its first line; the
others are skipped, as they would be in a later batch or run), when such a text fails (every line
with it fails), with --batch 1 (each copy in its own batch) and on a rerun. The store holds one
tok record per distinct good text, and every id reads back the ids of its text."""
import json
import os
import sys
import tempfile

import lmdb

sys.path.insert(0, os.path.dirname(__file__))
from test_tokenize_store import TOKENIZE, read_tokens, run_tokenize, write_tsv  # noqa: E402

ROWS = [("a1", "The same text."), ("b1", "Another text!"), ("a2", "The same text."),
        ("c1", "A third one"), ("a3", "The same text."), ("e1", " \u3000 "), ("b2", "Another text!"),
        ("e2", " \u3000 "), ("d1", "Last, and different.")]
GOOD = [t for i, t in ROWS if not i.startswith("e")]  # 7 lines, 4 distinct texts
GOOD_TEXTS = set(GOOD)


def tok_records(store):
    env = lmdb.open(store, readonly=True, lock=False, max_dbs=8, subdir=True)
    with env.begin() as txn:
        n = txn.stat(env.open_db(b"tok", txn=txn))["entries"]
    env.close()
    return n


def run(store, vocab, *extra):
    p = run_tokenize("-o", store, "--manifest", MAN, "--manifest-format", "tsv", "--vocab", vocab,
                     "--json", *extra, check=False)
    assert p.returncode == 1, (p.returncode, p.stderr)  # the two empty lines fail
    s = json.loads(p.stdout)
    total = s["processed"] + s["skipped_existing"] + s["failed"]
    assert total == s["lines"] == len(ROWS), s
    assert f"done: {s['processed'] + s['skipped_existing']} of {len(ROWS)}" in p.stderr, p.stderr
    assert p.stderr.count("text is only white space") == 2, p.stderr
    return s


def main():
    global MAN
    if not os.access(TOKENIZE, os.X_OK):
        print(f"FAIL: {TOKENIZE} not built")
        return 1
    with tempfile.TemporaryDirectory() as d:
        MAN = os.path.join(d, "m.tsv")
        write_tsv(MAN, ROWS)
        vocab = os.path.join(d, "v.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in ["<pad>", "<unk>", " ", *"abcdefghijklmnopqrstuvwxyz"]))
        for extra in ([], ["--batch", "1"], ["--batch", "4", "-j", "2"]):
            st = os.path.join(d, "store" + "".join(extra))
            s = run(st, vocab, *extra)
            assert (s["processed"], s["skipped_existing"], s["failed"]) == (len(GOOD_TEXTS), len(GOOD) - len(GOOD_TEXTS), 2), (extra, s)
            assert tok_records(st) == len(GOOD_TEXTS), (extra, tok_records(st))
            got = read_tokens(st, s["config_digest"])
            assert sorted(got) == sorted(i for i, _ in ROWS if not i.startswith("e")), sorted(got)
            by_text = {}
            for i, (text, ids) in got.items():
                assert by_text.setdefault(text, ids) == ids, (i, text)
            again = run(st, vocab, *extra)
            assert (again["processed"], again["skipped_existing"], again["failed"]) == (0, len(GOOD), 2), again
            print(f"{' '.join(extra) or 'one batch'}: {s['processed']} processed + "
                  f"{s['skipped_existing']} skipped + {s['failed']} failed = {len(ROWS)} lines, "
                  f"{tok_records(st)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
