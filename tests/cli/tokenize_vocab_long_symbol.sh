#!/usr/bin/env bash
# tokenize -t chars: the greedy longest match tries only the lengths the vocab's symbols have. It
# tried every length from the longest symbol's down to 1 at each position of the text, hashing
# each, so one long line in a vocab (a minified tokenizer.json or a manifest given as --vocab)
# made a line of text cost its length times the symbol's length squared: a 20,000-byte symbol and
# a 20,000-character line took hours, where the match takes milliseconds; and a signal, which
# waits for the batch in flight, could not stop it. The ids are checked too.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
command -v timeout >/dev/null || { echo "skipped: no timeout (coreutils)" >&2; exit 77; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }

long=$(head -c 20000 /dev/zero | tr '\0' 'x')
printf '<pad>\n<unk>\n<bos>\n<eos>\n \na\nab\nb\n%s\n' "$long" > "$d/v.txt"
{ printf 'l1\t'; head -c 20000 /dev/zero | tr '\0' 'a'; printf ' abab xxx\n'; } > "$d/m.tsv"
timeout 60 "$T" -o "$d/s" --manifest "$d/m.tsv" --vocab "$d/v.txt" --json > "$d/out" 2> "$d/err"
rc=$?
[ "$rc" = 124 ] && fail "a 20,000-byte vocab symbol: not done in 60 s (the match tries every length)"
[ "$rc" = 0 ] || fail "exit $rc"
# 20,000 a (id 5), space (4), ab ab (6 6), space, x x x (unk 1: the long symbol needs 20,000)
grep -q '"tokens":20007,"unknown":3,' "$d/out" || fail "ids: $(cat "$d/out")"
[ -n "${FC_PYTHON:-}" ] || { echo ok; exit 0; }
PYTHONPATH=${FC_SRC:?}/tests/reference "$FC_PYTHON" - "$d/s" "$(sed -n 's/.*"config_digest":"\([0-9a-f]*\)".*/\1/p' "$d/out")" <<'PY' || fail "stored ids"
import sys
from test_tokenize_store import read_tokens
ids = read_tokens(sys.argv[1], sys.argv[2])["l1"][1]
want = [5] * 20000 + [4, 6, 6, 4, 1, 1, 1]
assert ids == want, (ids[:5], ids[-8:])
PY
echo ok
