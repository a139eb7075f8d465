#!/usr/bin/env bash
# A split store through a power cut (scripts/powercut_fs.py, `--cut drop`: every write not synced
# is lost; names reach the disk at once). featurize --writers 3 writes the store's marker
# (featcache-split) before its parts: a temporary file, synced, linked to its name. The cut right
# after the job exited 0 must leave a store that opens and holds every record: without the
# marker's sync its name survives the cut and its bytes do not, an empty marker, and the store —
# every part sound — reads as "not a split-store marker" to every tool. Needs /dev/fuse and a FUSE
# binding for Python; else skipped (77), saying why.
set -uo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -c /dev/fuse ] || { echo "skipped: no /dev/fuse here (the power-cut layer is a FUSE file system)" >&2; exit 77; }
"$FC_PYTHON" -c 'import fusepy' 2>/dev/null || "$FC_PYTHON" -c 'import fuse' 2>/dev/null ||
  fail "no FUSE binding for Python (python3-fusepy: scripts/setup installs it)"
tmp=$(mktemp -d)
lp=
cleanup() {
  mountpoint -q "$tmp/m" 2>/dev/null && fusermount -u -z "$tmp/m"
  [ -n "$lp" ] && kill "$lp" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
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
mkdir b m s
"$FC_PYTHON" "$FC_SRC/scripts/powercut_fs.py" b m s --cut drop 2>layer.err &
lp=$!
for _ in $(seq 200); do mountpoint -q m && break; kill -0 $lp 2>/dev/null || break; sleep 0.05; done
if ! mountpoint -q m; then
  grep -qi "fuse: device not found\|permission denied\|operation not permitted" layer.err &&
    { echo "skipped: this sandbox refuses a FUSE mount: $(tail -c 300 layer.err)" >&2; exit 77; }
  fail "the power-cut layer did not mount: $(tail -c 300 layer.err)"
fi
"$FC_BIN/featurize" -q --device cpu --writers 3 -o m/st u*.wav || fail "featurize --writers 3 on the layer"
for _ in $(seq 100); do fusermount -u m 2>/dev/null && break; sleep 0.05; done
mountpoint -q m && fusermount -u -z m
wait "$lp"
lp=
[ -f s/report.json ] || fail "the layer ended without applying its cut: $(tail -c 500 layer.err)"
v=$("$FC_BIN/cache-verify" --json b/st 2>&1) || fail "a cut right after featurize --writers 3 exited 0: cache-verify: $v"
n=$(grep -o '"records_checked":[0-9]*' <<<"$v" | awk -F: '{s += $2} END {print s + 0}')
[ "$n" = 9 ] || fail "a cut right after featurize --writers 3 exited 0: $n of 9 records checked: $v"
echo ok
