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
[ "$(cat err)" = "tokenize: (stdin): ${msg/line 1/line 2}" ] || fail "tokenize --manifest -: $(head -c 300 err)"

# tokenize reads a manifest file as the run goes: a long line stops the run there (exit 1), said
# with the manifest and its line, not as the store's "FC_ETOOLONG: input longer than the limit"
printf 'u1|first line\n' >t1.csv
"$B/tokenize" -q --manifest t1.csv --build-vocab --export-vocab v.txt -o t2 || fail "tokenize t1.csv"
{ seq -f 'u%g|a line' 2 5000; printf 'x|'; head -c 17000000 /dev/zero | tr '\0' a; echo; } >t.csv
run "$B/tokenize" -q --manifest t.csv --vocab v.txt -o t2 >out 2>err
rc=$?
[ $rc = 1 ] || fail "tokenize --manifest t.csv: exit $rc, want 1: $(head -c 300 err)"
stopped="tokenize: t.csv: line 5000 has no line break in its first 16 MiB (the most a manifest line may have): not a manifest (a binary file? a stream without newlines?); the run stopped there"
grep -qxF "$stopped, the lines before it stored" err ||
  fail "tokenize --manifest t.csv: $(head -c 400 err)"
# the lines read before it are stored, the last short batch's too (4999 = 4096 + 903: those 903
# were dropped); in a bulk load too (a first run into a new store, more than one batch), whose
# records go in at its end: it stored none of them, 0 of 4999
head -n 4999 t.csv >good.csv
"$B/tokenize" --manifest good.csv --vocab v.txt -o t2 >out 2>err ||
  fail "tokenize good.csv into t2: exit $?: $(cat err)"
grep -qx "tokenize: nothing to do: all 4999 lines already stored (config [0-9a-f]*)" err ||
  fail "the lines before the long one not all stored: $(cat err)"
run "$B/tokenize" -q --manifest t.csv --vocab v.txt --batch 1000 -o t3 >out 2>err
rc=$?
[ $rc = 1 ] && grep -qxF "$stopped, the lines before it stored" err &&
  grep -qx "tokenize: done: 4999 of 5000 (1 new, 4998 already stored, 1 failed, 6 tokens), stopped at a manifest line it could not read, the lines after it not read" err ||
  fail "tokenize --batch 1000 (a bulk load) t.csv: exit $rc: $(head -c 600 err)"
"$B/tokenize" --manifest good.csv --vocab v.txt -o t3 >out 2>err ||
  fail "tokenize good.csv into t3: exit $?: $(cat err)"
grep -qx "tokenize: nothing to do: all 4999 lines already stored (config [0-9a-f]*)" err ||
  fail "a bulk load cut short by a long line stored not all the lines before it: $(cat err)"
# the line that stopped the run counts as a failed one (N of M shows the run cut short: it said
# "4999 of 4999 (..., 0 failed)"), in --json too
run "$B/tokenize" -q --json --manifest t.csv --vocab v.txt -o t3b >out 2>err
[ $? = 1 ] && "$FC_PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["lines"], d["failed"], d["processed"] + d["skipped_existing"]) == (5000, 1, 4999), d' out ||
  fail "tokenize --json t.csv: the stopping line not counted: $(head -c 600 out err)"
# --build-vocab reads the whole manifest for its vocab first: there the line stops the run with
# nothing stored (a vocab of the lines before it would be another config than the fixed file's)
run "$B/tokenize" -q --manifest t.csv --build-vocab -o t4 >out 2>err
rc=$?
[ $rc = 1 ] && grep -qxF "$stopped, nothing stored (--build-vocab: the vocab is the whole manifest's)" err ||
  fail "tokenize --build-vocab t.csv: exit $rc: $(head -c 600 err)"

# a manifest file that cannot be read (EIO: /proc/self/mem reads so at its start) stops the run
# the same way, said as the manifest's: it was "tokenize: t5: Input/output error", the store named
run "$B/tokenize" -q --manifest /proc/self/mem --vocab v.txt -o t5 >out 2>err
rc=$?
[ $rc = 1 ] && grep -qxF "tokenize: /proc/self/mem: cannot read it: Input/output error; the run stopped there, the lines before it stored" err &&
  grep -qx "tokenize: done: 0 of 1 (0 new, 0 already stored, 1 failed, 0 tokens), stopped at a manifest line it could not read, the lines after it not read" err ||
  fail "tokenize --manifest /proc/self/mem: exit $rc: $(head -c 600 err)"

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

# featurize reads a manifest file as the run goes once its first item is read (--device cpu into
# an existing store): a long line met there stops the run (exit 1), said as the manifest's (it was
# named as the store's: "featurize: s: m3.txt: line 4 ..."), the lines before it stored, and the
# done line counts that line as failed and says the run stopped: it read "done: 3 of 3 (...,
# 0 failed)", a finished run to a script comparing N and M
{ echo a.wav; cp a.wav b.wav; echo b.wav; cp a.wav c.wav; echo c.wav
  head -c 17000000 /dev/zero | tr '\0' x; echo; echo a.wav; } >m3.txt
"$B/featurize" -q --device cpu -o s3 a.wav || fail "featurize a.wav into s3"
run "$B/featurize" --device cpu --manifest m3.txt -o s3 >out 2>err
rc=$?
[ $rc = 1 ] && [ "$(cat err)" = "featurize: m3.txt: ${msg/line 1/line 4}; the run stopped there, the lines before it stored
featurize: done: 3 of 4 (2 new, 1 already stored, 1 failed), stopped at a manifest line it could not read, the lines after it not read" ] ||
  fail "featurize --manifest m3.txt, a long line mid-run: exit $rc: $(head -c 600 err)"
run "$B/featurize" -q --device cpu --manifest m3.txt -o s3 --json >out 2>err
rc=$?
[ $rc = 1 ] && "$FC_PYTHON" -c '
import json, sys
d = json.load(open("out"))
assert (d["total"], d["skipped_existing"], d["processed"], d["failed"]) == (4, 3, 0, 1), d' ||
  fail "featurize --json, a long line mid-run: exit $rc: $(head -c 300 out) $(head -c 300 err)"

# the same on a store this user may only read (a check: nothing is stored): said as the check's
. "$FC_SRC/tests/cli/as_owner.bash"
chmod -R a-w s3
"${as_owner[@]}" "$B/featurize" -q --device cpu --manifest m3.txt -o s3 >out 2>err
rc=$?
chmod -R u+w s3
[ $rc = 1 ] && grep -qxF "featurize: m3.txt: ${msg/line 1/line 4}; the check stopped there, the lines before it checked" err ||
  fail "featurize --manifest m3.txt, a read-only store: exit $rc: $(head -c 600 err)"

[ $fails = 0 ] || exit 1
echo "manifest_endless_line: ok"
