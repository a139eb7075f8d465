#!/usr/bin/env bash
# A split store through a power cut (scripts/powercut_fs.py, `--cut drop`: every write not synced
# is lost, and every change to a directory's entries not followed by a sync of the directory).
# featurize --writers 3 writes the store's marker (featcache-split) before its parts: a temporary
# file, synced, linked to its name, the directory synced. The cut right after the job exited 0 must
# leave a store that opens and holds every record: without the marker's sync its name survives the
# cut and its bytes do not, an empty marker ("not a split-store marker" to every tool); without
# the directory's, the link is undone, and the store — every part sound — is "not a featcache
# store". Needs /dev/fuse and a FUSE binding for Python; else skipped (77), saying why.
set -uo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$FC_SRC/tests/cli/powercut.bash" # tmp, powercut_mount, powercut_cut
"$FC_PYTHON" - <<'PY' || fail "could not write the test WAVs"
import wave
import numpy as np
rng = np.random.default_rng(4)
for i in range(9):
    x = 0.2 * rng.standard_normal(int(22050 * rng.uniform(0.5, 1.5)))
    with wave.open("u%02d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((x * 32767).astype("<i2").tobytes())
PY
powercut_mount
"$FC_BIN/featurize" -q --device cpu --writers 3 -o m/st u*.wav || fail "featurize --writers 3 on the layer"
powercut_cut
v=$("$FC_BIN/cache-verify" --json b/st 2>&1) || fail "a cut right after featurize --writers 3 exited 0: cache-verify: $v"
n=$(grep -o '"records_checked":[0-9]*' <<<"$v" | awk -F: '{s += $2} END {print s + 0}')
[ "$n" = 9 ] || fail "a cut right after featurize --writers 3 exited 0: $n of 9 records checked: $v"
echo ok
