#!/usr/bin/env bash
# featurize out of memory on a long recording (ulimit -v, a container's limit): a worker holds a
# whole file, its samples and its features at once (docs/featurize.md "Memory"), and the input
# failed with only "big.wav: Cannot allocate memory", which reads as a fault of the file. Now the
# line says it is this process's memory, what bounds it and that a rerun tries the input again
# (nothing is recorded against it). The file is a sparse 2 GB WAV header-and-holes: its buffer
# cannot be had under a 1.5 GB address-space limit, whatever the build, so the failure is exact.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
if [ "${FC_SANITIZE:-0}" = 1 ]; then
  echo "skip: AddressSanitizer reserves terabytes of shadow memory: no ulimit -v can be set under it"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
"$PY" - <<'PY' || exit 1
import struct
n = 2000 * 1000 * 1000  # 16-bit mono 22050 Hz: 12.6 hours, sparse on disk
with open("big.wav", "wb") as f:
    f.write(b"RIFF" + struct.pack("<I", 36 + n) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, 1, 22050, 44100, 2, 16) + b"data" + struct.pack("<I", n))
    f.truncate(44 + n)
PY

(ulimit -v 1500000 && exec "$FZ" -j 2 --device cpu -o s big.wav) >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1"
cat >want <<'TXT'
featurize: big.wav: Cannot allocate memory (this process's memory, not a fault of the file: a worker holds a whole file, its samples and its features at once, ~0.5 GB an hour of 22.05 kHz audio: --max-seconds or fewer -j bound it; a rerun tries it again)
featurize: done: 0 of 1 (0 new, 0 already stored, 1 failed)
TXT
diff -u want err || fail "stderr differs"
# the limit that --max-seconds sets fails it before it is read, as the hint says
(ulimit -v 1500000 && exec "$FZ" -j 2 --device cpu --max-seconds 600 -o s big.wav) 2>err
grep -qx "featurize: big.wav: 45351.5 s long, over the 600.0 s limit" err || fail "--max-seconds: $(cat err)"

[ $fails = 0 ] || exit 1
echo "featurize_out_of_memory: ok"
