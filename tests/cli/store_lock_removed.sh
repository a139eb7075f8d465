#!/usr/bin/env bash
# lock.mdb removed while a loader reads the store (`rm cache/lock.mdb`, advice for a "stale lock"
# elsewhere). The next open made a new, empty reader table: a cache-config --drop and a featurize
# there reused the pages of the loader's snapshot, and the loader (verify=False) was served other
# records' bytes. Now each open marks data.mdb with the lock.mdb it uses, and an open that finds
# another process's mark of another lock.mdb is refused, exit 2, FC_ELOCKGONE: "cannot open the
# store: FC_ELOCKGONE: lock.mdb was removed while other processes have the store open ...". The
# loader reads on, every batch as before; once it is closed the store opens as usual.
set -u
B=${FC_BIN:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t" || exit 1
"$FC_PYTHON" - <<'PY' || fail "could not write the test WAVs"
import wave
import numpy as np
rng = np.random.default_rng(1)
for i in range(24):
    x = 0.2 * rng.standard_normal(22050 + 2000 * i)
    with wave.open("u%02d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((x * 32767).astype("<i2").tobytes())
PY
"$B/featurize" --device cpu -q -o st u0*.wav u1*.wav || fail "featurize the first 20"
out=$("$FC_PYTHON" - "$B" <<'PY' 2>&1
import os, subprocess, sys
import numpy as np
import featcache
B = sys.argv[1]
def epoch(ld):
    return [(tuple(b.ids), [np.array(m).copy() for m in b.mels]) for b in ld]
ld = featcache.Loader("st", batch_size=4, verify=False)
before = epoch(ld)
os.remove("st/lock.mdb")
r = subprocess.run([B + "/cache-config", "--drop", "hifigan", "st"], capture_output=True, text=True)
print("drop", r.returncode, r.stderr.strip())
r = subprocess.run([B + "/featurize", "--device", "cpu", "-o", "st", "u20.wav", "u21.wav"],
                   capture_output=True, text=True)
print("featurize", r.returncode, r.stderr.strip())
after = epoch(ld)
same = len(before) == len(after) and all(
    a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1], b[1]))
    for a, b in zip(before, after))
print("same batches" if same else "batches changed")
ld.close()
PY
)
echo "$out" | grep -qx "drop 2 cache-config: st: cannot open the store: FC_ELOCKGONE: lock.mdb was removed while other processes have the store open (their readers are in the removed file, where a writer opened now would not see them and would reuse the pages they read): end them (fuser -v STORE/data.mdb lists them), then run again" ||
  fail "cache-config --drop with lock.mdb removed under a loader: $out"
echo "$out" | grep -q "^featurize 2 featurize: st: cannot open the store: FC_ELOCKGONE: " ||
  fail "featurize with lock.mdb removed under a loader: $out"
echo "$out" | grep -qx "same batches" || fail "the loader's batches changed: $out"
# the loader closed: nothing else has the store open
"$B/featurize" --device cpu -q -o st u*.wav || fail "featurize once the loader is closed"
v=$("$B/cache-verify" --json st) || fail "the store fails cache-verify: $v"
grep -q '"ok":true,"records_checked":24,' <<<"$v" || fail "want 24 records: $v"
echo ok
