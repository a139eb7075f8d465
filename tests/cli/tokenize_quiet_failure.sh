#!/usr/bin/env bash
# tokenize -q: quiet drops progress and the per-line warnings, but a run that exits 1 still says
# so with its `done: N of M` summary (exit 1 comes with the summary line, as every tool's page says), as featurize
# does; a clean quiet run prints nothing.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }

printf 'a|hello\nb|\nc|world\n' > "$d/bad.csv"
"$T" -o "$d/s" --manifest "$d/bad.csv" -t chars --build-vocab -q > "$d/out" 2> "$d/err"
rc=$?
[ "$rc" = 1 ] || fail "bad line under -q: exit $rc, want 1"
[ ! -s "$d/out" ] || fail "stdout not empty: $(cat "$d/out")"
grep -qx 'tokenize: done: 2 of 3 (2 new, 0 already stored, 1 failed, 10 tokens)' "$d/err" \
  || fail "no summary line under -q"
grep -q 'bad.csv:2' "$d/err" && fail "-q printed a per-line warning"

printf 'a|hello\nc|world\n' > "$d/good.csv"
"$T" -o "$d/s2" --manifest "$d/good.csv" -t chars --build-vocab -q > "$d/out" 2> "$d/err"
rc=$?
[ "$rc" = 0 ] || fail "clean run under -q: exit $rc"
[ ! -s "$d/err" ] || fail "clean quiet run wrote to stderr"
echo "tokenize_quiet_failure: ok"
