#!/usr/bin/env bash
# tokenize -q, as featurize -q: quiet drops the progress line and the summary of a clean run, but
# never a bad line's reason (`tokenize: FILE:LINE: reason`, the only place it is said: tokenize
# keeps no record of it), and a run with failures still ends with its `done: N of M` summary
# (exit 1 comes with the summary line, as every tool's page says); a clean quiet run prints
# nothing.
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
grep -qx "tokenize: $d/bad.csv:2: text is empty" "$d/err" \
  || fail "-q hid the bad line's reason"
[ "$(wc -l < "$d/err")" = 2 ] || fail "-q printed more than the reason and the summary"

# within --max-failed: exit 0, and still the reason and the summary
"$T" -o "$d/s1" --manifest "$d/bad.csv" -t chars --build-vocab -q --max-failed 1 > "$d/out" 2> "$d/err"
rc=$?
[ "$rc" = 0 ] || fail "bad line within --max-failed under -q: exit $rc, want 0"
[ "$(cat "$d/err")" = "tokenize: $d/bad.csv:2: text is empty
tokenize: done: 2 of 3 (2 new, 0 already stored, 1 failed, allowed by --max-failed 1, 10 tokens)" ] \
  || fail "-q --max-failed 1: stderr"

printf 'a|hello\nc|world\n' > "$d/good.csv"
"$T" -o "$d/s2" --manifest "$d/good.csv" -t chars --build-vocab -q > "$d/out" 2> "$d/err"
rc=$?
[ "$rc" = 0 ] || fail "clean run under -q: exit $rc"
[ ! -s "$d/err" ] || fail "clean quiet run wrote to stderr"
echo "tokenize_quiet_failure: ok"
