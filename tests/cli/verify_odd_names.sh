#!/usr/bin/env bash
# Names with a newline or a tab in cache-verify's report lines and tokenize's own: quoted as every
# tool quotes names (git's way: "st\nore", "tab\there"), so that one finding stays one line whose
# STORE and KEY a script can tell apart. cache-verify printed the store, the key and the id as
# they are (a store named st<newline>ore split every line in two) and ids as the library's
# printable copy (tab\x09here); tokenize printed its --vocab FILE as it is. The library's own
# reasons quote the same way: a duplicate id, a store named in a dataset finding.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
here=$(pwd -P) # featurize stores absolute paths as getcwd gives them
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
nl=$'\n'
printf 'tab\there|Hello there.\nplain|Fine.\n' >m.csv
printf 'junk' >$'bad\tid.wav'
"$B/featurize" -q -o "st${nl}ore" $'bad\tid.wav' 2>/dev/null # a recorded failure, id bad<TAB>id
"$B/tokenize" -q -o "st${nl}ore" --manifest m.csv --manifest-format ljspeech --build-vocab ||
  fail "tokenize into st<newline>ore"
"$B/tokenize" -q -o st2 --manifest m.csv --manifest-format ljspeech --build-vocab || fail "tokenize into st2"

"$B/cache-verify" --manifest m.csv --manifest-format ljspeech "st${nl}ore" >out 2>err
rc=$?
[ $rc = 1 ] || fail "verify: exit $rc, want 1"
cat >want <<'TXT'
"st\nore": error: audio plain: missing: manifest line 2 names it, the store has no audio entry (no features)
"st\nore": error: audio "tab\there": missing: manifest line 1 names it, the store has no audio entry (no features)
TXT
head -n 2 out | diff -u want - || fail "finding lines differ"
sed -n 3p out | grep -qF "\"st\\nore\": recorded failure: \"bad\\tid\": featurize failed it: not an audio file (libsndfile: Format not recognised.) (source \"$here/bad\\tid.wav\"; config hifigan " ||
  fail "recorded failure line: $(sed -n 3p out)"
sed -n 4p out | grep -q '^"st\\nore": 2 errors, 0 warnings, 1 recorded failure; ' || fail "summary: $(sed -n 4p out)"
[ "$(wc -l <out)" = 4 ] || fail "$(wc -l <out) lines on stdout, want 4"

"$B/cache-verify" --manifest m.csv --manifest-format ljspeech "st${nl}ore" st2 >out 2>err
[ $? = 1 ] || fail "dataset verify: exit, want 1"
cat >want <<'TXT'
dataset: error: manifest plain: missing: the manifest names it, no store has an audio entry
dataset: error: manifest "tab\there": missing: the manifest names it, no store has an audio entry
TXT
grep '^dataset: ' out | diff -u want - || fail "dataset finding lines differ"
grep -c '^"st\\nore": ' out | grep -qx 2 || fail "store lines: $(cat out)"

# a duplicate id that holds a tab, in the reason the manifest reader gives (every tool prints it)
{ cat m.csv; printf 'tab\there|Again.\n'; } >m3.csv
"$B/tokenize" -q -o st4 --manifest m3.csv --manifest-format ljspeech --build-vocab 2>err
[ "$(grep ':3: ' err)" = 'tokenize: m3.csv:3: duplicate id "tab\there"' ] || fail "duplicate id: $(cat err)"
"$B/cache-verify" --manifest m3.csv --manifest-format ljspeech st4 >out 2>err
grep -qxF 'st4: warning: manifest 3 (id "tab\there"): line skipped: duplicate id "tab\there"' out ||
  fail "verify, duplicate id: $(cat out)"
# a store name inside a dataset finding: two stores of other token configs
"$B/tokenize" -q -o st5 --manifest m.csv --manifest-format ljspeech --build-vocab --whitespace keep ||
  fail "tokenize into st5"
"$B/cache-verify" "st${nl}ore" st5 >out 2>err
grep -q '^dataset: error: meta: st5 lacks the tokens config [0-9a-f]\{32\} that "st\\nore" holds: ' out ||
  fail "dataset meta line: $(grep '^dataset' out)"

# source paths in problems: a source gone (--sources), and two stores' entries of one id
sox -n -r 22050 -b 16 $'g\tood.wav' synth 0.3 sine 300 && mkdir $'d\t1' $'d\t2' &&
  sox -n -r 22050 -b 16 $'d\t1/x.wav' synth 0.3 sine 300 && sox -n -r 22050 -b 16 $'d\t2/x.wav' synth 0.3 sine 500 ||
  fail "sox"
"$B/featurize" -q -o st6 $'g\tood.wav' && rm $'g\tood.wav' || fail "featurize st6"
"$B/cache-verify" --sources st6 >out 2>err
grep -qxF "st6: error: audio \"g\\tood\": source \"$here/g\\tood.wav\": No such file or directory (the corpus moved? --source-root DIR looks for it under DIR)" out ||
  fail "--sources: $(cat out)"
"$B/featurize" -q -o st7 $'d\t1/x.wav' && "$B/featurize" -q -o st8 $'d\t2/x.wav' || fail "featurize st7, st8"
"$B/cache-verify" st7 st8 >out 2>err
line=$(grep "^dataset: error: audio x: in st7 and st8 with different entries: different audio: digest " out)
[ "${line#*: different audio: digest }" != "$line" ] && grep -qE '^[0-9a-f]{12}\.\.\. \(' <<<"${line#*: digest }" &&
  grep -qF "... (\"$here/d\\t1/x.wav\") vs " <<<"$line" &&
  grep -qF "... (\"$here/d\\t2/x.wav\") (cache-merge would refuse it)" <<<"$line" ||
  fail "dataset audio line: $(grep '^dataset' out)"
# one file stored in two stores with two modification times: the times, as cache-merge says it
"$B/featurize" -q -o st9 $'d\t1/x.wav' && touch -d '2020-01-02 03:04:05 UTC' $'d\t1/x.wav' &&
  "$B/featurize" -q -o st10 $'d\t1/x.wav' || fail "featurize st9, st10"
"$B/cache-verify" st9 st10 >out 2>err
grep -qE "^dataset: error: audio x: in st9 and st10 with different entries: same audio \(digest [0-9a-f]{12}\.\.\.\) from the same source \"$here/d\\\\t1/x.wav\", modified at other times: 20[0-9-]+ [0-9:.]+ UTC vs 2020-01-02 03:04:05(\.000000000)? UTC \(cache-merge would refuse it\)$" out ||
  fail "dataset mtime line: $(grep '^dataset' out)"

printf 'a\na\n' >$'v\tdup'
"$B/tokenize" -q -o st3 --manifest m.csv --vocab $'vo\tcab' 2>err
[ $? = 2 ] || fail "missing --vocab: exit, want 2"
[ "$(cat err)" = 'tokenize: "vo\tcab": No such file or directory' ] || fail "missing --vocab: $(cat err)"
"$B/tokenize" -q -o st3 --manifest m.csv --vocab $'v\tdup' 2>err
[ "$(cat err)" = "tokenize: \"v\\tdup\":2: duplicate symbol 'a' (first at line 1)" ] || fail "bad --vocab: $(cat err)"
exit $((fails > 0))
