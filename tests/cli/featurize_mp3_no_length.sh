#!/usr/bin/env bash
# featurize on VBR MP3s without a Xing/Info tag, which state no length. mpg123 estimates one from
# the file size and the first frame's size, and libsndfile read no further than the estimate:
# a file that starts loud (large frames) then goes quiet was stored cut to its first 1.0 s of 6,
# without a word (`stored as loud (87 frames, 1.02 s; ...)`), and one that starts silent was
# refused under --max-seconds 6.5 for the 8.1 s its estimate says; a WAV holding the loud one's
# stream (format tag 0x55) was cut as that one was. Now each is read to its end: the 6 s are stored, and a limit counts what decodes (a 3 s limit refuses the loud one).
# A cut MP3 without the tag is still stored with what decodes (featurize_damaged_audio.sh).
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v ffmpeg >/dev/null || { echo "FAIL: ffmpeg missing (scripts/setup installs it)"; exit 1; }

"$PY" - <<'PY' || { echo "FAIL: could not make the inputs"; exit 1; }
import numpy as np
import soundfile as sf
rate = 44100
rng = np.random.default_rng(8)
loud = np.clip(0.5 * rng.standard_normal(rate), -0.99, 0.99)
t = np.arange(5 * rate) / rate
quiet = 0.02 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))
sf.write("loud.wav", np.concatenate([loud, quiet]), rate, subtype="PCM_16")
sf.write("silent.wav", np.concatenate([np.zeros(5 * rate), loud]), rate, subtype="PCM_16")
PY
for f in loud silent; do
  ffmpeg -hide_banner -loglevel error -y -i $f.wav -c:a libmp3lame -q:a 2 -write_xing 0 $f.mp3 ||
    { echo "FAIL: ffmpeg could not make $f.mp3"; exit 1; }
done
# the same stream in a WAV (format tag 0x55): libsndfile takes its length from mpg123 too
ffmpeg -hide_banner -loglevel error -y -i loud.wav -c:a libmp3lame -q:a 2 inwav.wav ||
  { echo "FAIL: ffmpeg could not make inwav.wav"; exit 1; }

# seconds FILE: the length featurize -v says it stored FILE with
seconds() { sed -n "s/^featurize: $1: stored as ${1%.*} ([0-9]* frames, \([0-9.]*\) s;.*/\1/p" err; }

"$FZ" -v --device cpu -j 1 --max-seconds 6.5 -o st loud.mp3 silent.mp3 inwav.wav >out 2>err
rc=$?
[ $rc = 0 ] || fail "exit $rc, want 0: $(grep -v stages err)"
for f in loud.mp3 silent.mp3 inwav.wav; do
  s=$(seconds $f)
  # 6 s, the encoder's delay and the last frame's padding: 6.00 to 6.06 s
  case "$s" in
    6.0[0-6]) ;;
    *) fail "$f: stored with '${s:-nothing}' s, want its 6.0 s: $(grep "$f" err)" ;;
  esac
done

"$FZ" -q --device cpu -j 1 --max-seconds 3 -o st2 loud.mp3 >out 2>err
rc=$?
[ $rc = 1 ] || fail "--max-seconds 3: exit $rc, want 1: $(cat err)"
# a file that states no length is refused when its decode passes the limit, as a pipe is
grep -qxE 'featurize: loud.mp3: at least 3\.[0-9]{2} s long \(its header states no length\), over the 3 s limit' err ||
  fail "--max-seconds 3: want loud.mp3 refused, over the limit: $(cat err)"

[ $fails = 0 ] && echo ok
exit $((fails > 0))
