#!/usr/bin/env bash
# featurize on RF64 and Sony Wave64 (W64) files joined with cat, as the WAV, FLAC, AU and AIFF ones
# are refused (featurize_joined_wav.sh). An RF64 pair (ffmpeg -rf64 always) was stored as its first
# file alone without a word (libsndfile reads the data size ds64 states), and a W64 pair (sox -t
# w64) as one utterance with the second file's 104-byte header read as 52 samples, a click between
# them. Now each is refused, named, with where the second file begins, and recorded as failed;
# so are the ones ffmpeg wrote to a pipe (sizes that state no length: the data searched for a
# second header), a WAV followed by an RF64 (the 16-bit path read the first alone) and a W64
# followed by a WAV; odd-sized data (8-bit mono) too. Each file alone is stored.
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v ffmpeg >/dev/null || { echo "FAIL: ffmpeg missing (scripts/setup installs it)"; exit 1; }
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }

espeak-ng -w a.wav "the first file" && espeak-ng -w b.wav "and the second one" ||
  { echo "FAIL: espeak-ng failed"; exit 1; }
for x in a b; do
  ff -i $x.wav -rf64 always $x.rf64.wav && sox $x.wav -t w64 $x.w64 &&
    ff -i $x.wav -rf64 always -f wav - >p$x.rf64.wav && ff -i $x.wav -f w64 - >p$x.w64 &&
    sox $x.wav -b 8 -e unsigned -t w64 ${x}8.w64 trim 0 2001s &&
    ff -i $x.wav -af atrim=end_sample=2001 -c:a pcm_u8 -rf64 always ${x}8.rf64.wav ||
    { echo "FAIL: ffmpeg or sox failed"; exit 1; }
done
cat a.rf64.wav b.rf64.wav >ab.rf64.wav
cat a.w64 b.w64 >ab.w64
cat pa.rf64.wav pb.rf64.wav >pab.rf64.wav
cat pa.w64 pb.w64 >pab.w64
cat a.wav b.rf64.wav >a_brf64.wav
cat a.w64 b.wav >aw64_b.w64
cat a8.w64 b8.w64 >ab8.w64
cat a8.rf64.wav b8.rf64.wav >ab8.rf64.wav
sz() { stat -c %s "$1"; }

"$FZ" -v -j 2 --device cpu -o st a.rf64.wav a.w64 pa.w64 a8.w64 a8.rf64.wav ab.rf64.wav ab.w64 \
  pab.rf64.wav pab.w64 a_brf64.wav aw64_b.w64 ab8.w64 ab8.rf64.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1: $(cat err)"
for f in ab.rf64.wav:RF64:"RF64 WAVE":a.rf64.wav:wav pab.rf64.wav:RF64:"RF64 WAVE":pa.rf64.wav:wav \
  ab8.rf64.wav:RF64:"RF64 WAVE":a8.rf64.wav:wav ab.w64:W64:Wave64:a.w64:w64 \
  pab.w64:W64:Wave64:pa.w64:w64 ab8.w64:W64:Wave64:a8.w64:w64 \
  a_brf64.wav:WAV:"RF64 WAVE":a.wav:wav aw64_b.w64:W64:"RIFF WAVE":a.w64:w64; do
  IFS=: read -r name kind header first ext <<<"$f"
  grep -qxF "featurize: $name: $kind files one after another (files joined with cat?): a second $header header at byte $(sz "$first"), after the first one's data, and libsndfile does not read them as one: join the originals with sox (sox A.$ext B.$ext OUT.$ext)" err ||
    fail "$name: not refused as two files joined: $(grep -F "$name" err)"
done
for f in a.rf64.wav:a.rf64 a.w64:a pa.w64:pa a8.w64:a8 a8.rf64.wav:a8.rf64; do
  grep -qE "^featurize: ${f%%:*}: stored as ${f##*:} \(" err || fail "${f%%:*} not stored: $(grep -F "${f%%:*}" err)"
done
grep -qx 'featurize: done: 5 of 13 (5 new, 0 already stored, 8 failed)' err || fail "summary: $(grep done: err)"

[ $fails = 0 ] && echo ok
exit $((fails > 0))
