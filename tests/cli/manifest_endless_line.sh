#!/usr/bin/env bash
# A manifest (or a list of paths on stdin) that is an endless stream without a line break —
# `yes | tr -d '\n'`, a binary device behind a pipe, a generator stuck before its newline —: the
# reading stops at the most a manifest line may have (16 MiB, its line break counted) with a
# message naming the manifest and the line, exit 2, nothing done. featurize held the line whole
# and read until memory ran out; tokenize, which keeps 64 KiB of a long line, read on forever.
# A line just under the limit is still one line (it fails alone, as before).
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.3 sine 300 || { echo "FAIL: sox failed"; exit 1; }
# at most 1 GiB of address space (not under ASan, whose shadow memory needs more) and 60 s
run() { (if [ "${FC_SANITIZE:-0}" != 1 ]; then ulimit -v 1048576; fi; exec timeout 60 "$@"); }
endless() { yes 2>/dev/null | tr -d '\n' 2>/dev/null; }
msg='line 1 has no line break in its first 16 MiB (the most a manifest line may have): not a manifest (a binary file? a stream without newlines?); nothing read past it'

endless | run "$B/featurize" -q --device cpu --manifest - -o s >out 2>err
rc=$?
[ $rc = 2 ] || fail "featurize --manifest -: exit $rc, want 2: $(head -c 300 err)"
[ "$(cat err)" = "featurize: (stdin): $msg" ] || fail "featurize --manifest -: $(head -c 300 err)"
[ -e s/data.mdb ] && fail "featurize --manifest -: a store was made"

endless | run "$B/featurize" -q --device cpu -o s - >out 2>err
rc=$?
[ $rc = 2 ] || fail "featurize -: exit $rc, want 2: $(head -c 300 err)"
grep -q "^featurize: stdin is not a list of paths: a line of it has no line break in its first 16 MiB (the most a line may have); nothing done$" err ||
  fail "featurize -: $(head -c 300 err)"

(printf 'u1|first line\nu2|'; endless) | run "$B/tokenize" -q --manifest - --build-vocab -o t >out 2>err
rc=$?
[ $rc = 2 ] || fail "tokenize --manifest -: exit $rc, want 2 (124: read on until killed): $(head -c 300 err)"
[ "$(cat err)" = "tokenize: -: ${msg/line 1/line 2}" ] || fail "tokenize --manifest -: $(head -c 300 err)"

# tokenize reads a manifest file as the run goes: a long line stops the run there (exit 1), said
# with the manifest and its line, not as the store's "FC_ETOOLONG: input longer than the limit"
printf 'u1|first line\n' >t1.csv
"$B/tokenize" -q --manifest t1.csv --build-vocab --export-vocab v.txt -o t2 || fail "tokenize t1.csv"
{ seq -f 'u%g|a line' 2 5000; printf 'x|'; head -c 17000000 /dev/zero | tr '\0' a; echo; } >t.csv
run "$B/tokenize" -q --manifest t.csv --vocab v.txt -o t2 >out 2>err
rc=$?
[ $rc = 1 ] || fail "tokenize --manifest t.csv: exit $rc, want 1: $(head -c 300 err)"
grep -qxF "tokenize: t.csv: line 5000 has no line break in its first 16 MiB (the most a manifest line may have): not a manifest (a binary file? a stream without newlines?); the run stopped there" err ||
  fail "tokenize --manifest t.csv: $(head -c 400 err)"

# a file whose third line is 17 MB long: named with its line; one of 2 MB is a line (it fails)
{ echo a.wav; echo a.wav; head -c 17000000 /dev/zero | tr '\0' x; echo; } >m.txt
run "$B/featurize" -q --device cpu --manifest m.txt -o s >out 2>err
rc=$?
[ $rc = 2 ] && [ "$(cat err)" = "featurize: m.txt: ${msg/line 1/line 3}" ] ||
  fail "featurize --manifest m.txt: exit $rc: $(head -c 300 err)"
{ echo a.wav; head -c 2000000 /dev/zero | tr '\0' x; echo; } >m2.txt
run "$B/featurize" -q --device cpu --manifest m2.txt -o s2 >out 2>err
rc=$?
[ $rc = 1 ] && grep -q '^featurize: m2.txt:2: ' err && grep -q 'done: 1 of 2 (1 new, 0 already stored, 1 failed)' err ||
  fail "featurize, a 2 MB line: exit $rc: $(head -c 300 err)"

[ $fails = 0 ] || exit 1
echo "manifest_endless_line: ok"
