#!/usr/bin/env bash
# File names with a newline, a carriage return, a tab, an escape, a double quote or a backslash in featurize's
# stderr lines: quoted as git quotes them (core.quotePath=false) — in double quotes, with C
# escapes (\n, \t, \", \\, octal \033 for the others) — so that one input's line stays one line, a
# terminal is not sent escape codes, and a script that reads `featurize: PATH: reason` can tell
# the name from the reason. UTF-8 names and plain ones are printed as they are. --json holds the
# names as given (JSON's own escapes). tokenize names its manifest the same way.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
nl=$'\n'
mkdir "dir${nl}x" && cp a.wav "dir${nl}x/good.wav"
cp a.wav "é.wav"
printf 'junk' >"bad${nl}name.wav"
printf 'junk' >'q"uote.wav'
printf 'junk' >'back\slash.wav'
printf 'junk' >$'cr\rname.wav'
printf 'junk' >$'esc\033[31m.wav'
printf 'junk' >$'tab\there.wav'

"$FZ" -v -j 1 --device cpu -o s "dir${nl}x/good.wav" "é.wav" "bad${nl}name.wav" 'q"uote.wav' \
  'back\slash.wav' $'esc\033[31m.wav' $'tab\there.wav' $'cr\rname.wav' >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1"
# failures are reported before the writer commits the stored ones: compare sorted, summary last
sort >want <<'TXT'
featurize: "dir\nx/good.wav": stored as good (43 frames, 0.50 s)
featurize: é.wav: stored as é (43 frames, 0.50 s)
featurize: "bad\nname.wav": id contains a newline
featurize: "cr\rname.wav": id contains a carriage return
featurize: "q\"uote.wav": not an audio file (libsndfile: Format not recognised.)
featurize: "back\\slash.wav": not an audio file (libsndfile: Format not recognised.)
featurize: "esc\033[31m.wav": not an audio file (libsndfile: Format not recognised.)
featurize: "tab\there.wav": not an audio file (libsndfile: Format not recognised.)
TXT
grep -v -e '^featurize: device:' -e '^featurize: stages' -e '^featurize: failure records' \
  -e '^featurize: done:' err | sort | diff -u want - || fail "stderr differs"
grep -qx 'featurize: done: 2 of 8 (2 new, 0 already stored, 6 failed)' err || fail "summary"

# the manifest's name in `MANIFEST:LINE: reason`, and --json: the names as given
printf '%s\n' "$PWD/a.wav" "$PWD/a.wav" >"list${nl}.txt"
"$FZ" --device cpu -o s2 --manifest "list${nl}.txt" >out 2>err
grep -qx "featurize: \"list\\\\n.txt\":2: duplicate id 'a'" err ||
  fail "manifest name: $(cat err)"
"$FZ" --json --device cpu -o s3 "bad${nl}name.wav" >out 2>/dev/null
"$PY" -c 'import json, sys; r = json.load(open("out")); assert r["failures"][0]["source"] == "bad\nname.wav", r' ||
  fail "--json: $(cat out)"

# an id holds what its file name holds (any character but NUL, CR and LF): -v quotes it too
cp a.wav $'bold\033[1m.wav'
"$FZ" -v --device cpu -o s6 $'bold\033[1m.wav' 2>err
grep -qxF 'featurize: "bold\033[1m.wav": stored as "bold\033[1m" (43 frames, 0.50 s)' err ||
  fail "-v id: $(cat -v err)"

# stdin that is no path list: `find -print0` (the NUL-separated names are one line) or an audio
# file (`featurize -o S - < a.wav`, each run of its bytes taken for a path): a usage error that
# says what to do, exit 2, no store (it said "(no path): line contains a NUL byte", or dozens of
# such lines and "done: 0 of 57")
want="featurize: stdin is not a list of paths: its first line holds a NUL byte (from find -print0? use -print; an audio file? give its path as AUDIO)
Try 'featurize --help' for more information."
printf '%s\0%s\0' a.wav "é.wav" | "$FZ" --device cpu -o s5 - 2>err
rc=$?
[ $rc = 2 ] && [ "$(cat err)" = "$want" ] && [ ! -e s5 ] || fail "-print0: exit $rc: $(cat err)"
"$FZ" --device cpu -o s5 - <a.wav 2>err
rc=$?
[ $rc = 2 ] && [ "$(cat err)" = "$want" ] && [ ! -e s5 ] || fail "< a.wav: exit $rc: $(cat err | head -3)"
# a NUL on a later line is that line's failure, said by its number
printf '%s\n%s\0x\n' a.wav b.wav | "$FZ" --device cpu -o s5b - 2>err
grep -qx "featurize: (stdin):2: line contains a NUL byte (paths come one per line: find -print, not -print0)" err ||
  fail "a NUL on line 2: $(cat err)"

# a name that is not UTF-8 (Latin-1 from an old archive): --json stays valid UTF-8, each byte
# that is no part of a UTF-8 character given as U+FFFD (it wrote the byte, and the whole object
# failed to parse: Python's json, jq)
printf 'junk' >"$(printf 'caf\351.wav')"
"$FZ" --json --device cpu -o s7 "$(printf 'caf\351.wav')" "bad${nl}name.wav" >out 2>/dev/null
"$PY" -c 'import json, sys; r = json.loads(open("out", "rb").read().decode("utf-8")); assert sorted(f["source"] for f in r["failures"]) == ["bad\nname.wav", "caf\ufffd.wav"], r' ||
  fail "--json of a Latin-1 name: $(cat -v out | head -c 600)"

# featurize's empty input and tokenize's lines name the manifest the same way
: >"empty${nl}.csv"
"$FZ" --device cpu -o s4 --manifest "empty${nl}.csv" 2>err
[ "$(cat err)" = 'featurize: nothing to do: "empty\n.csv" holds no lines' ] || fail "empty: $(cat err)"
"$FC_BIN/tokenize" --build-vocab -o t --manifest "empty${nl}.csv" 2>err
[ "$(cat err)" = 'tokenize: nothing to do: "empty\n.csv" holds no lines' ] || fail "tokenize empty: $(cat err)"
printf 'a|x\na|y\n' >"m${nl}.csv"
"$FC_BIN/tokenize" --build-vocab -o t --manifest "m${nl}.csv" 2>err
grep -qx "tokenize: \"m\\\\n.csv\":2: duplicate id 'a'" err || fail "tokenize: $(cat err)"

[ $fails = 0 ] || exit 1
echo "featurize_odd_names: ok"
