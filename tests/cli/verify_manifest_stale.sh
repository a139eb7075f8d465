#!/usr/bin/env bash
# cache-verify --manifest against a store that no longer serves what the manifest says: a
# transcript changed (or emptied) in the manifest after tokenize stored it keeps serving the old
# text's tokens — with --expect-tokens, an error naming the id; a rerun of tokenize refreshes a
# changed one, and an emptied one stays an error. A store whose only mel (token) config was
# dropped serves no features (tokens) for any manifest id: an error, not a pass. The same for a
# split store (its parts checked as one dataset).
set -u
FZ=${FC_BIN:?}/featurize
TK=$FC_BIN/tokenize
CV=$FC_BIN/cache-verify
CC=$FC_BIN/cache-config
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# check NAME WANT_RC ARGS...: cache-verify's report lines, without its summary lines, in got
check() {
  local name=$1 want=$2
  shift 2
  "$CV" "$@" >out 2>err
  local rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, want $want"; cat out err; }
  grep -v '[0-9] errors\?, [0-9]* warnings\?' out | grep -v '^dataset of' | grep -v ': orphan: ' |
    grep -v ': note: [0-9]* stored utterance' >got
}
same() { diff -u want got >/dev/null || { fail "$1:"; diff -u want got; }; }

mkdir wavs
: >m.csv
for i in 1 2 3; do
  espeak-ng -w "wavs/u$i.wav" "utterance number $i" ||
    { echo "FAIL: espeak-ng could not make the test speech (scripts/setup installs it)"; exit 1; }
  echo "u$i|Utterance number $i.|Utterance number $i." >>m.csv
done
"$FZ" -q --device cpu --manifest m.csv -o st || fail "featurize"
"$TK" -q --manifest m.csv --build-vocab --export-vocab v.txt -o st || fail "tokenize"
check clean 0 --manifest m.csv --expect-tokens st
: >want
same clean

# u2's transcript edited, u3's emptied (both columns), after tokenize stored them
sed -i -e 's/^u2|.*/u2|Number utterance 2.|Number utterance 2./' -e 's/^u3|.*/u3||/' m.csv
check changed 1 --manifest m.csv --expect-tokens st
cat >want <<'W'
st: error: text u2: changed: manifest line 2 gives another transcript than the one stored: its tokens are of the old one (run tokenize again)
st: error: text u3: changed: manifest line 3 gives an empty transcript, the store holds an older one: its tokens are of the old one (tokenize fails an empty text: fix the line or drop the id)
W
same changed
cp want want.changed
# without --expect-tokens the manifest asks only for features: no text is compared
check changed-no-tokens 0 --manifest m.csv st
: >want
same changed-no-tokens
# tokenize again with the same vocabulary: u2 is refreshed; u3 fails its line and keeps its old
# entry, so it stays an error
"$TK" -q --manifest m.csv --vocab v.txt -o st >tk.out 2>tk.err
[ $? = 1 ] && grep -q '^tokenize: m.csv:3: ' tk.err || { fail "tokenize rerun"; cat tk.err; }
check refreshed 1 --manifest m.csv --expect-tokens st
grep '^st: error: text u3:' want.changed >want
same refreshed
# u2's old record is no one's now: an orphan (a warning)
grep -q '^st: warning: tok [0-9a-f]*: orphan: no text entry refers to this record' out ||
  { fail "refreshed: no orphan for u2's old tokens"; cat out; }
# a tokenized text the manifest's other LJSpeech column holds is no change (--text-column 2)
printf 'u1|Utterance number 1.|utterance number one\n' >m2.csv
"$TK" -q --manifest m2.csv --text-column 2 --build-vocab -o st2 || fail "tokenize --text-column 2"
"$FZ" -q --device cpu --manifest m2.csv -o st2 || fail "featurize st2"
check other-column 0 --manifest m2.csv --expect-tokens st2
: >want
same other-column

# the only mel config dropped: no manifest id has features any more
cp -r st dropped
mel=$("$CC" --json dropped | python3 -c 'import json,sys; print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"]=="mel"][0])')
"$CC" -q --drop "$mel" dropped || fail "drop the mel config"
check no-mel 1 --manifest m2.csv dropped
cat >want <<'W'
dropped: error: meta: missing: the store holds no mel config: the manifest's 1 id with an audio entry has no features (featurize them again)
W
same no-mel
check no-mel-plain 0 dropped
# the only token config dropped: --expect-tokens finds no tokens
tok=$("$CC" --json dropped | python3 -c 'import json,sys; print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"]=="tokens"][0])')
"$CC" -q --drop "$tok" dropped || fail "drop the token config"
check no-tok 1 --manifest m2.csv --expect-tokens dropped
cat >want <<'W'
dropped: error: meta: missing: the store holds no mel config: the manifest's 1 id with an audio entry has no features (featurize them again)
dropped: error: meta: missing: the store holds no token config: the manifest's 1 id with a text entry has no tokens (tokenize them again)
W
same no-tok

# a split store: its parts are checked as one dataset, the manifest against all of them
"$FZ" -q --device cpu --writers 2 --manifest m.csv -o sp || fail "featurize --writers 2"
sed -i 's/^u2|.*/u2|Utterance number 2.|Utterance number 2./' m.csv
"$TK" -q --manifest m.csv --vocab v.txt -o sp 2>/dev/null
sed -i 's/^u2|.*/u2|Number utterance 2.|Number utterance 2./' m.csv
check split-changed 1 --manifest m.csv --expect-tokens sp
grep -q '^dataset: error: text u2: changed: manifest line 2 gives another transcript' got ||
  { fail "split store: u2's change not reported"; cat got; }
mel=$("$CC" --json sp | python3 -c 'import json,sys; print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"]=="mel"][0])')
"$CC" -q --drop "$mel" sp || fail "drop the split store's mel config"
check split-no-mel 1 --manifest m.csv sp
grep -q '^dataset: error: meta: missing: the stores hold no mel config: ' got ||
  { fail "split store without a mel config passed"; cat got; }

[ $fails = 0 ] && echo PASS
exit $((fails > 0))
