#!/usr/bin/env bash
# A messy corpus's inputs: a file name that is not UTF-8 (Latin-1 from an old archive) is
# featurized by every route (argument, path list, wav.scp), its id holding each byte that is no
# part of a UTF-8 character as \xNN, and a name spelled with a real backslash, x and two hex digits
# (caf\xe9.wav) has another id (caf\x5cxe9: it had the Latin-1 name's, a duplicate in one run and
# the other file's features across runs); a path list's line that ends in spaces or tabs names the file
# without them (as wav.scp's path column); an id of only spaces or tabs is refused by its line;
# two files with one id: the first in input order has it, the second fails naming both, and no
# failure record is written under the id (it is stored: cache-verify stays clean run after run);
# one file under two spellings is said to be one file given twice.
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
lat=$(printf 'caf\351')
cp a.wav "$lat.wav"
cp a.wav b.wav

# an argument
"$FZ" -v --device cpu -o s1 "$lat.wav" b.wav 2>err
rc=$?
[ $rc = 0 ] || fail "argument: exit $rc: $(cat -v err)"
grep -qF 'stored as "caf\\xe9" (43 frames' err || fail "argument id: $(cat -v err)"

# a path list on stdin, a line with a trailing space, one with a tab and a CR
printf '%s\n%s \n%s\t\r\n' "$PWD/$lat.wav" "$PWD/a.wav" "$PWD/b.wav" | "$FZ" --device cpu -o s2 - 2>err
rc=$?
[ $rc = 0 ] || fail "stdin list: exit $rc: $(cat -v err)"
grep -qx 'featurize: done: 3 of 3 (3 new, 0 already stored, 0 failed)' err || fail "stdin: $(cat -v err)"
# a path list on stdin with CR line endings: one line, said as --manifest says it
printf '%s\r%s\r' "$PWD/a.wav" "$PWD/b.wav" | "$FZ" --device cpu -o s2cr - 2>err
grep -qx 'featurize: (stdin):1: a carriage return inside the line (CR line endings? convert them to LF)' err ||
  fail "stdin list with CRs: $(cat -v err)"
# a path list given as --manifest
printf '%s\n%s \n' "$PWD/b.wav" "$PWD/$lat.wav" >list.txt
"$FZ" --device cpu -o s3 --manifest list.txt 2>err
rc=$?
[ $rc = 0 ] || fail "--manifest list: exit $rc: $(cat -v err)"

# wav.scp: the path column holds any bytes, the id is the manifest's
printf 'x %s\n' "$PWD/$lat.wav" >wav.scp
"$FZ" --device cpu -o s4 --manifest wav.scp 2>err
rc=$?
[ $rc = 0 ] || fail "wav.scp: exit $rc: $(cat -v err)"
# an id in wav.scp that is not UTF-8 is refused by its line
printf '%s %s\n' "$lat" "$PWD/a.wav" >bad.scp
"$FZ" --device cpu -o s5 --manifest bad.scp 2>err
grep -qx 'featurize: bad.scp:1: id is not valid UTF-8' err || fail "wav.scp id: $(cat -v err)"

# an id of only spaces or tabs
printf ' |hello\n\t|tab\na|ok\n' >m.csv
"$FZ" --device cpu -o s6 --manifest m.csv --audio-dir . 2>err
rc=$?
[ $rc = 1 ] || fail "blank id: exit $rc"
grep -qx 'featurize: m.csv:1: id is only spaces or tabs' err || fail "blank id 1: $(cat err)"
grep -qx 'featurize: m.csv:2: id is only spaces or tabs' err || fail "blank id 2: $(cat err)"
grep -qx 'featurize: done: 1 of 3 (1 new, 0 already stored, 2 failed)' err || fail "blank: $(cat err)"

# two files, one id
mkdir d1 d2 && cp a.wav d1/a.wav && sox -n -r 22050 -b 16 d2/a.wav synth 0.3 sine 500
for run in 1 2; do
  "$FZ" --device cpu -o s7 d1/a.wav d2/a.wav 2>err
  rc=$?
  [ $rc = 1 ] || fail "duplicate, run $run: exit $rc"
  grep -qx "featurize: d2/a.wav: duplicate id 'a' (also the id of d1/a.wav)" err ||
    fail "duplicate, run $run: $(cat err)"
  "$FC_BIN/cache-verify" s7 >out 2>&1 || fail "duplicate, run $run: verify: $(cat out)"
done
"$FC_BIN/cache-verify" --json s7 | grep -q '"failure_count":0,' || fail "a failure record for a stored id"
printf 'x d1/a.wav\nx d2/a.wav\n' >dup.scp
"$FZ" --device cpu -o s8 --manifest dup.scp 2>err
grep -qx "featurize: dup.scp:2: duplicate id 'x' (also the id of d1/a.wav)" err ||
  fail "duplicate in wav.scp: $(cat err)"
# one file given twice under two spellings (overlapping globs, a folder and its link): said to be
# the same file, where "(also the id of d1/a.wav)" read as two files of one name
"$FZ" --device cpu -o s8b d1/a.wav ./d1/../d1/a.wav 2>err
rc=$?
[ $rc = 1 ] || fail "one file twice: exit $rc"
grep -qx "featurize: ./d1/../d1/a.wav: duplicate id 'a' (the same file as d1/a.wav, given twice: leave one out)" err ||
  fail "one file twice: $(cat err)"

# a name spelled caf\xe9.wav with a backslash: its own id, in one run and across runs
sox -n -r 22050 -b 16 'caf\xe9.wav' synth 0.3 sine 500
"$FZ" -v --device cpu -o s9 "$lat.wav" 'caf\xe9.wav' 2>err
rc=$?
[ $rc = 0 ] || fail "backslash name, one run: exit $rc: $(cat -v err)"
grep -qxF 'featurize: "caf\\xe9.wav": stored as "caf\\x5cxe9" (25 frames, 0.30 s)' err ||
  fail "backslash name: $(cat -v err)"
"$FZ" --device cpu -o s10 "$lat.wav" 2>err && "$FZ" --device cpu -o s10 'caf\xe9.wav' 2>err
rc=$?
[ $rc = 0 ] || fail "backslash name, a later run: exit $rc: $(cat -v err)"
grep -q 'before' err && fail "backslash name, a later run: $(cat -v err)"
printf '%s x.wav\n' 'caf\xe9' 'caf\x5cxe9' >both.scp # both ids are in the store
"$FC_BIN/cache-verify" --manifest both.scp s10 >out 2>&1 || fail "backslash name, ids: $(cat out)"

[ $fails = 0 ] || exit 1
echo "featurize_corpus_inputs: ok"
