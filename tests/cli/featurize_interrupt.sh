#!/usr/bin/env bash
# featurize stopped by SIGINT / SIGTERM where featurize_crash.sh does not look: a split store
# (--writers 3) filled from a manifest read as the job goes. The contract (docs/featurize.md, exit
# status): no new input is started, the inputs in flight are finished and committed, exit 130 /
# 143, `interrupted: N of M done, K not started`, with M every line of the manifest; the parts
# hold exactly the N, cache-verify passes, and a rerun stores the rest. As in featurize_crash.sh,
# the worker (-j 1) is held on a FIFO (input 11) while the signal arrives, and the FIFO then
# delivers a real file.
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; [ -f err ] && sed 's/^/  stderr: /' err | head -20; exit 1; }
"$PY" - <<'PY' || fail "cannot write the test audio"
import wave, numpy as np
rng = np.random.default_rng(11)
for i in range(30):
    x = 0.2 * rng.standard_normal(int(rng.integers(8000, 20000)))
    with wave.open("u%02d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((x * 32767).astype("<i2").tobytes())
PY
# entries STORE: audio entries over the split store's parts (0 before any part exists)
entries() {
  "$PY" - "$1" <<'PY'
import glob, os, sys, lmdb
n = 0
for p in sorted(glob.glob(os.path.join(sys.argv[1], "part-*"))):
    if not os.path.exists(os.path.join(p, "data.mdb")):
        continue
    env = lmdb.open(p, readonly=True, lock=False, max_dbs=8)
    try:
        with env.begin() as t:
            n += t.stat(env.open_db(b"audio", txn=t, create=False))["entries"]
    except lmdb.Error:
        pass
    env.close()
print(n)
PY
}
mkfifo fifo.wav
{ ls u0*.wav; echo fifo.wav; ls u1*.wav u2*.wav | head -n 19; } >list.txt # 10 + FIFO + 19 = 30

for sig in INT TERM; do
  want=$((128 + $(kill -l $sig)))
  sigint_default "$B/featurize" -j 1 --writers 3 --batch 4 -o "st$sig" --manifest list.txt --json >out 2>err &
  pid=$!
  for _ in $(seq 200); do [ "$(entries "st$sig" 2>/dev/null)" = 10 ] && break; sleep 0.05; done
  [ "$(entries "st$sig")" = 10 ] || fail "SIG$sig: the first 10 inputs were not committed"
  kill -$sig $pid
  sleep 0.2
  timeout 20 sh -c "cat u29.wav >fifo.wav" || fail "SIG$sig: nobody read the FIFO"
  wait $pid
  rc=$?
  [ $rc = $want ] || fail "SIG$sig: exit $rc, want $want"
  grep -qx "featurize: interrupted: 11 of 30 done, 19 not started, finished work committed" err ||
    fail "SIG$sig: want 11 of 30 done (the one in flight finished), 19 not started"
  grep -q '"processed":11,"skipped_existing":0,"failed":0,"not_started":19,"total":30,' out ||
    fail "SIG$sig: --json: $(cat out)"
  [ "$(entries "st$sig")" = 11 ] || fail "SIG$sig: the parts hold $(entries "st$sig") entries, want 11"
  "$B/cache-verify" -q "st$sig" >/dev/null 2>verr || fail "SIG$sig: cache-verify: $(cat verr)"
  grep -v fifo.wav list.txt >rest.txt # (the FIFO's input is stored, as id fifo)
  "$B/featurize" -o "st$sig" --manifest rest.txt 2>err || fail "SIG$sig: rerun: exit $?"
  grep -qx "featurize: done: 29 of 29 (19 new, 10 already stored, 0 failed)" err || fail "SIG$sig: rerun"
  [ "$(entries "st$sig")" = 30 ] || fail "SIG$sig: after the rerun $(entries "st$sig") entries, want 30"
done
echo "featurize_interrupt: ok"
