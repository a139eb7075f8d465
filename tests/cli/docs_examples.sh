#!/usr/bin/env bash
# The Examples sections of featurize(1), tokenize(1) and cache-verify(1), run as a user copies
# them: each command of a page's Examples (a line ending in '\' or '|' joined to the next), in a
# folder holding the files they name (data/wavs/*.wav, data/metadata.csv, metadata.csv,
# train.jsonl, a.wav), must exit 0 (cache-verify's on the store the others made). Left out: a
# command that needs a GPU (--device cuda), a BPE tokenizer.json, jq, a training script or a
# corpus moved to /mnt. featurize(1)'s Makefile rule is written out as the page shows it and run by
# make: it builds the store, a second make finds it up to date, a touched WAV runs the rule again.
# docs/scale-out.md's GNU parallel one-liner runs in a fresh folder (metadata.csv, wavs/): it
# makes the shards and their merge, which cache-verify passes.
set -u
B=${FC_BIN:?}
SRC=${FC_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v make >/dev/null || { echo "FAIL: make not installed (scripts/setup installs it)"; exit 1; }
export PATH=$B:$PATH

# ---- the corpus the examples name ----
mkdir -p data/wavs
for i in 1 2 3; do
  id=LJ001-000$i text="This is sentence number $i of the example corpus."
  espeak-ng -w "data/wavs/$id.wav" "$text" || { echo "FAIL: espeak-ng failed"; exit 1; }
  echo "$id|$text|$text" >>data/metadata.csv
  echo "{\"audio_filepath\": \"data/wavs/$id.wav\", \"text\": \"$text\"}" >>train.jsonl
done
cp data/metadata.csv metadata.csv
mkdir -p wavs && cp data/wavs/*.wav wavs/ # metadata.csv's WAVs: wavs/ beside it
cp data/wavs/LJ001-0001.wav a.wav

# the first code block of a page's "## Examples" section, one command a line
examples() { # page
  awk '/^## / { p = ($0 == "## Examples"); next }
    p && /^    / { sub(/^    /, ""); print; seen = 1; next }
    p && seen && !/^$/ { exit }' "$SRC/docs/$1.md" |
    awk '{ if (cont) line = line " " $0; else line = $0 }
      { cont = sub(/[ ]*\\$/, "", line) || line ~ /\|$/ }
      !cont { print line }'
}

for page in featurize tokenize cache-verify; do
  n=0
  while IFS= read -r cmd; do
    case $cmd in
    '#'* | '') continue ;;
    *--device\ cuda* | *'-t bpe'* | *jq\ * | *python\ * | *' /mnt/'*) continue ;;
    esac
    n=$((n + 1))
    bash -c "$cmd" >out 2>err
    rc=$?
    [ $rc = 0 ] || fail "$page(1) example exits $rc: $cmd: $(head -c 400 err)"
  done < <(examples "$page")
  [ $n -ge 3 ] || fail "$page(1): only $n examples found"
done

# ---- docs/scale-out.md's GNU parallel one-liner, as the page shows it, in a fresh folder ----
command -v parallel >/dev/null || { echo "FAIL: GNU parallel not installed (scripts/setup installs it)"; exit 1; }
mkdir so && cp metadata.csv so/ && cp -r wavs so/
cmd=$(sed -n 's/^ *\(.*| parallel .*\)$/\1/p' "$SRC/docs/scale-out.md" | head -n 1)
case $cmd in
*featurize*tokenize*cache-merge*) ;;
*) fail "no GNU parallel one-liner found in docs/scale-out.md: '$cmd'" ;;
esac
(cd so && bash -c "$cmd") >out 2>err || fail "scale-out's parallel one-liner exits $?: $(head -c 400 err)"
(cd so && "$B/cache-verify" -q --manifest metadata.csv --expect-preset hifigan cache/) >out 2>&1 ||
  fail "cache-verify after scale-out's parallel one-liner: $(head -c 400 out)"

# ---- featurize(1)'s Makefile rule, as the page shows it ----
rm -rf cache
awk '/^A Makefile rule/ { m = 1; next }
  m && /^    / { sub(/^    /, ""); print; seen = 1; next }
  m && seen { exit }' "$SRC/docs/featurize.md" >Makefile
grep -q 'featurize' Makefile || fail "no Makefile rule found in featurize(1)'s Examples"
target=$(sed -n 's/^\([^[:space:]]*\):.*/\1/p' Makefile | head -n 1)
make >out 2>err
rc=$?
[ $rc = 0 ] || { fail "the Makefile rule: make exits $rc: $(cat out err)"; exit 1; }
[ -e "$target" ] && [ -s cache/data.mdb ] || fail "the Makefile rule made no store: $(cat out err)"
make >out 2>err
grep -q 'up to date' out || fail "a second make is not up to date: $(cat out err)"
# newer than the stamp on any file system, whatever its timestamp resolution
touch -d "@$(($(date +%s) + 2))" data/wavs/LJ001-0002.wav
make >out 2>err || fail "make after a touched WAV exits $?: $(cat err)"
grep -q featurize out || fail "make after a touched WAV did not run featurize: $(cat out err)"
"$B/cache-verify" -q --manifest data/metadata.csv --expect-preset hifigan cache/ ||
  fail "cache-verify after the Makefile rule"

[ $fails = 0 ] && echo "ok: the Examples of featurize(1), tokenize(1), cache-verify(1), the Makefile rule, scale-out's parallel one-liner" && exit 0
exit 1
