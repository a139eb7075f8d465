#!/usr/bin/env bash
# A manifest transcript blank only in Unicode white space (U+3000 ideographic space, U+00A0
# no-break space) is one tokenize fails ("text is only white space": its white-space
# collapse takes Unicode White_Space), so cache-verify --expect-tokens must say so ("tokenize fails
# an empty text: fix the line or drop the id"), as it does of ASCII blanks — not "run tokenize
# again", which changes nothing. A BOM before blanks is blank too (tokenize drops the BOM).
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
mkdir wavs
for i in 1 2 3 4 5; do
  sox -n -r 22050 -b 16 "wavs/u$i.wav" synth 0.$i sine 300 || { echo "FAIL: sox failed"; exit 1; }
  echo "u$i|Utterance number $i." >>m.csv
done
"$B/featurize" -q --device cpu --manifest m.csv -o st || fail "featurize"
"$B/tokenize" -q --manifest m.csv --build-vocab --export-vocab v.txt -o st || fail "tokenize"
# the transcripts blanked after tokenize stored them
{
  printf 'u1|\xe3\x80\x80\xe3\x80\x80\n'   # U+3000 U+3000
  printf 'u2|\xc2\xa0\n'                   # U+00A0
  printf 'u3| \t \n'                       # ASCII blanks
  printf 'u4|\xe2\x80\x83x\n'              # U+2003 then a letter: another transcript
  printf 'u5|\xef\xbb\xbf \n'              # a BOM, a space
} >m.csv
"$B/cache-verify" --manifest m.csv --expect-tokens st >out 2>err
[ $? = 1 ] || fail "verify: exit, want 1"
empty="gives an empty transcript, the store holds an older one: its tokens are of the old one (tokenize fails an empty text: fix the line or drop the id)"
other="gives another transcript than the one stored: its tokens are of the old one (run tokenize again)"
cat >want <<W
st: error: text u1: changed: manifest line 1 $empty
st: error: text u2: changed: manifest line 2 $empty
st: error: text u3: changed: manifest line 3 $empty
st: error: text u4: changed: manifest line 4 $other
st: error: text u5: changed: manifest line 5 $empty
W
grep ': changed: ' out | diff -u want - || fail "verify's lines differ"
# what tokenize does with them: the blank ones fail (so verify's advice holds), u4 is stored
"$B/tokenize" --manifest m.csv --vocab v.txt -o st >tk.out 2>tk.err
[ $? = 1 ] || fail "tokenize: exit, want 1"
cat >want <<'W'
tokenize: m.csv:1: text is only white space
tokenize: m.csv:2: text is only white space
tokenize: m.csv:3: text is only white space
tokenize: m.csv:5: text is only white space
W
grep -v -e 'done:' -e 'unknown symbol' tk.err | diff -u want - || fail "tokenize's lines differ"
exit $((fails > 0))
