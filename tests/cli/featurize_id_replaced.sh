#!/usr/bin/env bash
# One id, two files, two runs (train/a.wav, then dev/a.wav: the id is the file name): the second
# run rewrites the id's audio entry, so the id's features are the dev file's from then on. That is
# said, whatever -q or -v, naming the file the entry named before; the exit status stays 0. Not
# said when the entry named the same path (a file changed in place) or the same audio (a file
# moved or copied), nor for a new id. docs/featurize.md "Ids".
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
mkdir train dev moved
sox -n -r 22050 -b 16 train/a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
sox -n -r 22050 -b 16 dev/a.wav synth 0.5 sine 500 || exit 1
sox -n -r 22050 -b 16 train/b.wav synth 0.5 sine 700 || exit 1
cp train/a.wav moved/a.wav

run() { # run NAME ARGS...: featurize into s, stderr in NAME.err, exit status in NAME.rc
  local name=$1
  shift
  "$FZ" -j 1 --device cpu -o s "$@" >/dev/null 2>"$name.err"
  echo $? >"$name.rc"
}
quiet() { # the lines about an id's entry, nothing else
  grep -e 'named .* before' "$1.err"
}

run first -q train/a.wav train/b.wav
[ "$(cat first.rc)" = 0 ] || fail "first run: exit $(cat first.rc)"
quiet first >/dev/null && fail "first run (new ids): $(cat first.err)"

run moved moved/a.wav # the same audio under another path: the entry follows the file, no word
[ "$(cat moved.rc)" = 0 ] || fail "moved: exit $(cat moved.rc)"
quiet moved >/dev/null && fail "moved (same audio): $(cat moved.err)"

run dev -q dev/a.wav
[ "$(cat dev.rc)" = 0 ] || fail "dev: exit $(cat dev.rc), want 0"
cat >want <<TXT
featurize: dev/a.wav: id a named $tmp/moved/a.wav before, other audio: it names this file now (two files with one id? give each its own, e.g. in a manifest, to keep both)
TXT
quiet dev >got
diff want got >/dev/null || fail "dev over train's id: $(diff want got)"

# back to train's audio: its record is stored (no mel computed), the entry changes: said too
run back -v train/a.wav
grep -q "id a named $tmp/dev/a.wav before, other audio" back.err || fail "back: $(cat back.err)"
grep -q 'same audio as a stored record; entry a added' back.err || fail "back -v: $(cat back.err)"

# the same path with other bytes (a file rewritten in place): no word
sox -n -r 22050 -b 16 train/a.wav synth 0.6 sine 350 || exit 1
run inplace train/a.wav
[ "$(cat inplace.rc)" = 0 ] || fail "in place: exit $(cat inplace.rc)"
quiet inplace >/dev/null && fail "rewritten in place: $(cat inplace.err)"

[ $fails = 0 ] && echo PASS || exit 1
