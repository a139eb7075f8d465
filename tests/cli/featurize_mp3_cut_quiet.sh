#!/usr/bin/env bash
# A cut MP3 whose first frame is a Xing/Info tag (LAME and ffmpeg write one): libmpg123, the
# decoder libsndfile reads MP3 with, compared the tag's byte count with the file's size and printed
# its own line on stderr, `Warning: Xing stream size off by more than 1%, fuzzy seeking may be even
# more fuzzy than by design!`, naming neither the tool nor the file, beside featurize's verdict
# (with --max-seconds too, whose header check opens the file first). libsndfile gives no
# way to make mpg123 quiet; featurize's reader now hides the end of every MP3 from it, as it did for
# an MP3 without the tag, so it has no size to compare: every line on stderr is featurize's, the
# verdict unchanged, and the good files' features the same.
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v ffmpeg >/dev/null || { echo "FAIL: ffmpeg missing (scripts/setup installs it)"; exit 1; }

ffmpeg -hide_banner -loglevel error -y -f lavfi -i "sine=f=300:d=3" -ar 22050 good.mp3 &&
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i "sine=f=500:d=3" -ar 22050 -c:a libmp3lame \
    inwav.wav ||
  { echo "FAIL: ffmpeg could not make the inputs"; exit 1; }
head -c 9000 good.mp3 >cut.mp3
head -c 9000 inwav.wav >cutwav.wav

for opts in "" "--max-seconds 100"; do
  # shellcheck disable=SC2086 # opts is words
  "$FZ" $opts --device cpu -j 2 -o "st$opts" good.mp3 cut.mp3 inwav.wav >out 2>err
  rc=$?
  [ $rc = 1 ] || fail "$opts: exit $rc, want 1: $(cat err)"
  grep -qx "featurize: cut.mp3: damaged or cut short: header says 66150 frames, only [0-9]* decode" err ||
    fail "$opts: want cut.mp3 refused as cut short: $(cat err)"
  grep -qx "featurize: done: 2 of 3 (2 new, 0 already stored, 1 failed)" err ||
    fail "$opts: want a 2 of 3 summary: $(cat err)"
  if grep -v '^featurize: ' err >stray; then
    fail "$opts: lines on stderr that are not featurize's: $(cat stray)"
  fi
done

# a WAV holding MPEG (format tag 0x55), cut: the same stream, the same silence from mpg123
"$FZ" --device cpu -j 1 -o st2 cutwav.wav >out 2>err
if grep -v '^featurize: ' err >stray; then
  fail "MP3 in a WAV: lines on stderr that are not featurize's: $(cat stray)"
fi

[ $fails = 0 ] && echo ok
exit $((fails > 0))
