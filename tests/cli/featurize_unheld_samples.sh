#!/usr/bin/env bash
# A WAV whose data chunk states fewer bytes than follow it, in no chunk (a recorder that did not
# update the header, raw samples appended with cat): libsndfile, librosa and sox read what the
# header states, and so does featurize, but the rest was dropped without a word. Now it is stored
# as stated (exit 0, as librosa reads it) with a warning naming the bytes, how long they would
# play and the way to keep them, at the config's rate (read without libsndfile) and at another,
# whatever -q; a few bytes of padding after the data say nothing; a rerun that finds it stored
# says nothing again.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 1 sine 300 && sox -n -r 16000 -b 16 b.wav synth 1 sine 300 ||
  { echo "FAIL: sox failed"; exit 1; }
"$PY" - <<'PY' || { echo "FAIL: could not make the inputs"; exit 1; }
import struct
for src, out, pad in (("a.wav", "short.wav", 0), ("b.wav", "short16.wav", 0), ("a.wav", "pad.wav", 100)):
    d = bytearray(open(src, "rb").read())
    at = d.index(b"data")
    n = struct.unpack_from("<I", d, at + 4)[0]
    assert len(d) == at + 8 + n, src
    if pad:
        d += bytes(pad)
    else:
        struct.pack_into("<I", d, at + 4, n // 4)  # a quarter stated, the rest after it
    open(out, "wb").write(d)
PY
"$FZ" -q --device cpu -o st short.wav short16.wav pad.wav >out 2>err
rc=$?
[ $rc = 0 ] || fail "exit $rc, want 0: $(cat err)"
[ "$(cat err)" = "featurize: short.wav: 33075 bytes (0.75 s as its samples) follow its data chunk and no chunk holds them: stored as its header states, as libsndfile, librosa and sox read it; if they are samples a writer left out of the header, 'sox --ignore-length IN OUT' keeps them
featurize: short16.wav: 24000 bytes (0.75 s as its samples) follow its data chunk and no chunk holds them: stored as its header states, as libsndfile, librosa and sox read it; if they are samples a writer left out of the header, 'sox --ignore-length IN OUT' keeps them" ] ||
  fail "the warnings: $(cat err)"
# stored as the header states: a quarter of a second
"$FZ" -v --device cpu -o st2 short.wav 2>&1 | grep -q "stored as short (21 frames, 0.25 s)" ||
  fail "short.wav not stored as its header states: $("$FZ" -v --device cpu -o st3 short.wav 2>&1)"
# found stored: nothing said
"$FZ" -q --device cpu -o st short.wav short16.wav pad.wav >out 2>err
rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "rerun: exit $rc: $(cat err)"

[ $fails = 0 ] && echo ok
exit $((fails > 0))
