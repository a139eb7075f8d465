#!/usr/bin/env bash
# featurize on WAV files joined with cat (two RIFF WAVE files back to back). A 16-bit mono one at
# the config's rate, which is read without libsndfile, was stored as its first file alone, without
# a word; the others failed as 'damaged WAV file (libsndfile: Error in WAV file. No 'RIFF' chunk
# marker.)'. Now each is refused as the chained Ogg and joined MP3 files are: named, with where the
# second file begins, recorded as failed; the run goes on with the rest and exits 1. A WAV with a
# chunk after its data (LIST) is stored, and one of those joined to another is refused too. FLAC
# files joined so (LibriSpeech's chapters) were stored as their first alike: refused the same way.
# WAVs that ffmpeg wrote to a pipe (sizes 0xFFFFFFFF: the data runs to the end) appended one after
# another were read as one, the second's header a click among the samples: refused too; one such
# WAV alone is stored.
# A WAV with a second data chunk after its first (no second file: readers disagree on it) was
# stored as its first at the config's rate and refused at another: refused at every rate.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

espeak-ng -w a.wav "the first file" && espeak-ng -w b.wav "and the second one" ||
  { echo "FAIL: espeak-ng failed"; exit 1; }
sox a.wav -r 44100 -c 2 -b 24 a24.wav && sox b.wav -r 44100 -c 2 -b 24 b24.wav ||
  { echo "FAIL: sox failed"; exit 1; }
"$PY" - <<'PY' || { echo "FAIL: could not make the inputs"; exit 1; }
import struct
d = open("a.wav", "rb").read()
assert d[36:40] == b"data" and len(d) == 44 + struct.unpack_from("<I", d, 40)[0]
info = b"INFOISFT" + struct.pack("<I", 5) + b"espe\0" + b"\0"  # odd: padded
listed = bytearray(d + b"LIST" + struct.pack("<I", len(info) - 1) + info)
struct.pack_into("<I", listed, 4, len(listed) - 8)
open("listed.wav", "wb").write(listed)
open("listed_b.wav", "wb").write(bytes(listed) + open("b.wav", "rb").read())
PY
sox a.wav a.flac && sox b.wav b.flac || { echo "FAIL: sox failed"; exit 1; }
cat a.flac b.flac >abf.flac
command -v ffmpeg >/dev/null || { echo "FAIL: ffmpeg missing (scripts/setup installs it)"; exit 1; }
ffmpeg -hide_banner -loglevel error -i a.wav -f wav - >piped.wav &&
  ffmpeg -hide_banner -loglevel error -i b.wav -f wav - >>pipes.wav ||
  { echo "FAIL: ffmpeg failed"; exit 1; }
cat piped.wav pipes.wav >loop.wav
cat a.wav b.wav >ab.wav
cat a24.wav b24.wav >ab24.wav
a=$(stat -c %s a.wav) a24=$(stat -c %s a24.wav) listed=$(stat -c %s listed.wav)
aflac=$(stat -c %s a.flac) piped=$(stat -c %s piped.wav)

"$FZ" -v -j 2 --device cpu -o st ab.wav a.wav ab24.wav listed.wav listed_b.wav b.wav abf.flac loop.wav piped.wav \
  >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1: $(cat err)"
for f in ab.wav:$a ab24.wav:$a24 listed_b.wav:$listed loop.wav:$piped; do
  grep -qxF "featurize: ${f%%:*}: WAV files one after another (files joined with cat?): a second RIFF WAVE header at byte ${f##*:}, after the first one's data, and libsndfile does not read them as one: join the originals with sox (sox A.wav B.wav OUT.wav)" err ||
    fail "${f%%:*}: not refused as two files joined: $(grep "${f%%:*}" err)"
done
for f in a b listed piped; do
  grep -qE "^featurize: $f\.wav: stored as $f \(" err || fail "$f.wav not stored: $(grep "$f.wav" err)"
done
grep -qxF "featurize: abf.flac: FLAC files one after another (files joined with cat?): a second FLAC header at byte $aflac, after the first one's data, and libsndfile does not read them as one: join the originals with sox (sox A.flac B.flac OUT.flac)" err ||
  fail "abf.flac: not refused as two files joined: $(grep abf.flac err)"
grep -qx 'featurize: done: 4 of 9 (4 new, 0 already stored, 5 failed)' err || fail "summary: $(grep done: err)"
grep -qx 'featurize: failure records: 5 written, 0 deleted (stored now)' err ||
  fail "failure records: $(grep 'failure records' err)"

# a WAV with two data chunks (a WAV holds one; no second file): libsndfile refuses it, sox reads
# the first, ffmpeg the last. At the config's rate (22.05 kHz, 16-bit mono, read without
# libsndfile) it was stored as its first chunk, at another rate refused as "damaged WAV file
# (libsndfile: Internal error : SF_INFO struct incomplete.)": now refused at every rate, saying so
sox a.wav -r 16000 a16.wav || { echo "FAIL: sox failed"; exit 1; }
"$PY" - <<'PY' || { echo "FAIL: could not make the inputs"; exit 1; }
import struct
for src, out in (("a.wav", "two.wav"), ("a16.wav", "two16.wav"), ("a24.wav", "two24.wav")):
    d = bytearray(open(src, "rb").read())
    at = d.index(b"data")
    n = struct.unpack_from("<I", d, at + 4)[0]
    assert len(d) == at + 8 + n, src
    d += b"data" + struct.pack("<I", 600) + bytes(600)
    struct.pack_into("<I", d, 4, len(d) - 8)
    open(out, "wb").write(d)
PY
"$FZ" -j 2 --device cpu -o st2 two.wav two16.wav two24.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "two data chunks: exit $rc, want 1: $(cat err)"
for f in two.wav two16.wav two24.wav; do
  grep -qE "^featurize: $f: two data chunks \(a WAV file holds one\): a second at byte [0-9]+, which readers disagree on \(libsndfile refuses the file, sox reads the first, ffmpeg the last\): rewrite it \(sox IN OUT.wav keeps the first\)$" err ||
    fail "$f: not refused as two data chunks: $(grep "$f" err)"
done
grep -qx 'featurize: done: 0 of 3 (0 new, 0 already stored, 3 failed)' err || fail "two data chunks: $(grep done: err)"

# the record under ab is not a's: a later run fails it again, the others are already stored
"$FZ" -q -j 1 --device cpu -o st ab.wav a.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "second run: exit $rc, want 1: $(cat err)"
grep -q '^featurize: ab.wav: WAV files one after another' err || fail "second run: $(cat err)"

[ $fails = 0 ] && echo ok
exit $((fails > 0))
