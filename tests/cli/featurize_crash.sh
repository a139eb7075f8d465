#!/usr/bin/env bash
# featurize crash safety: SIGKILL mid-run several times; after each kill the store opens, every
# record validates, and every audio entry has its record (they are committed in one transaction).
# A final rerun completes the job with exactly the expected records. Then SIGINT: exit 130, the
# finished work (including the utterance in flight) committed, the rest not started.
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
missing=$("$PY" -c 'import importlib.util as u; print(" ".join(m for m in ("numpy", "soundfile", "lmdb", "xxhash") if not u.find_spec(m)))' 2>&1)
[ -z "$missing" ] || { echo "skip: $PY lacks $missing (a GPU machine has no soundfile or lmdb)"; exit 77; }
tmp=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# 300 short distinct files (0.5-3 s of tones and noise), made in one Python call.
"$PY" - <<'PY' || exit 1
import numpy as np, soundfile as sf
rng = np.random.default_rng(7)
for i in range(300):
    n = int(rng.integers(11025, 66150))
    t = np.arange(n) / 22050
    x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * t) + 0.05 * rng.standard_normal(n)
    sf.write(f"u{i:03d}.wav", x.astype(np.float32), 22050, subtype="PCM_16")
PY
ls u*.wav >list

# check STORE [EXPECT_N]: records valid, every entry's record present; prints the entry count.
check() {
  "$PY" - "$@" <<'PY'
import struct, sys, lmdb, xxhash
import os
data = os.path.join(sys.argv[1], "data.mdb")
if not os.path.exists(data) or os.path.getsize(data) == 0:  # killed before the store was made
    print(0)
    sys.exit(0 if len(sys.argv) < 3 or sys.argv[2] == "0" else 1)
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
try:
    meta, audio, feat = (env.open_db(n, create=False) for n in (b"meta", b"audio", b"feat"))
except lmdb.NotFoundError:  # killed while the store was being created: nothing committed in it
    with env.begin() as t:
        n = sum(1 for _ in t.cursor())
    print(0)
    sys.exit(1 if n or (len(sys.argv) > 2 and sys.argv[2] != "0") else 0)
problems = []
with env.begin() as t:
    cfgs = [bytes(k) for k, _ in t.cursor(db=meta) if bytes(k).startswith(b"cfg/")]
    records = {}
    for k, v in t.cursor(db=feat):
        v = bytes(v)
        magic, hs, dt, nd, d0, d1, pb, ph = struct.unpack_from("<4sHBBIIQQ", v)
        if not (magic == b"FCR1" and len(v) == 64 + pb == 64 + d0 * d1 * 4
                and xxhash.xxh3_64_intdigest(v[64:]) == ph
                and xxhash.xxh3_64_intdigest(v[:56]) == struct.unpack_from("<Q", v, 56)[0]):
            problems.append(f"record {bytes(k).hex()} invalid")
        records[bytes(k)] = v[32:48]
    n = 0
    for k, v in t.cursor(db=audio):
        n += 1
        for c in cfgs:  # key = XXH3-128(audio digest ‖ config digest), stored little-endian
            cd = bytes.fromhex(c[4:].decode())
            key = xxhash.xxh3_128_intdigest(bytes(v[:16]) + cd).to_bytes(16, "little")
            if key not in records:
                problems.append(f"entry {bytes(k).decode()} has no record")
    if records and len(cfgs) != 1:
        problems.append(f"{len(cfgs)} configs stored")
    if len(records) > n:  # records without an entry: impossible with one transaction per batch
        problems.append(f"{len(records)} records but {n} entries")
for p in problems[:10]:
    print(p, file=sys.stderr)
if len(sys.argv) > 2 and n != int(sys.argv[2]):
    print(f"{n} entries, want {sys.argv[2]}", file=sys.stderr)
    sys.exit(1)
print(n)
sys.exit(1 if problems else 0)
PY
}

# Kill at fractions of the time a clean run takes here (sanitizer builds are slower).
t0=$(date +%s.%N)
"$FZ" -q -j 2 -o scratch - <list 2>/dev/null || fail "clean run failed"
t1=$(date +%s.%N)
rm -rf scratch
last=0
for f in 0.15 0.25 0.35 0.45 0.55; do
  d=$(echo "($t1 - $t0) * $f" | bc -l)
  "$FZ" -q -j 2 -o st - <list >/dev/null 2>err &
  pid=$!
  sleep "$d"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  n=$(check st) || fail "after SIGKILL at ${d}s: store inconsistent"
  echo "killed after $(printf %.2f "$d") s: ${n:-?} of 300 stored"
  [ "${n:-0}" -ge "$last" ] || fail "entries went down from $last to $n"
  last=${n:-0}
done
"$FZ" -j 2 -o st - <list >out 2>err
rc=$?
[ $rc = 0 ] || fail "final rerun: exit $rc: $(cat err)"
check st 300 >/dev/null || fail "final store is not exactly the 300 records"
"$FZ" -o st - <list 2>err
[ "$(cat err)" = "featurize: nothing to do: all 300 already stored" ] || fail "second rerun: $(cat err)"

# SIGINT with -j 1: the worker blocks opening a FIFO (item 51) after 50 items; the writer commits
# those (1 s batch bound); SIGINT arrives; then the FIFO delivers a real file, which is finished
# and committed; items 52.. are never started. Exit 130. The signal is acknowledged at once, with
# the way to stop without waiting.
mkfifo fifo.wav
{ head -n 50 list; echo fifo.wav; tail -n +51 list | head -n 49; } >list2
sigint_default "$FZ" -j 1 -o st2 - <list2 >out 2>err &
pid=$!
for _ in $(seq 100); do [ -e st2/data.mdb ] && [ "$(check st2 2>/dev/null)" = 50 ] && break; sleep 0.1; done
kill -INT "$pid"
sleep 0.2
timeout 20 sh -c "cat u299.wav >fifo.wav" || fail "SIGINT: nobody read the FIFO"
wait "$pid"
rc=$?
[ $rc = 130 ] || fail "SIGINT: exit $rc, want 130"
[ "$(cat err)" = "featurize: interrupted: stopping after the work in flight (interrupt again to stop at once)
featurize: interrupted: 51 of 100 done, 49 not started, finished work committed" ] ||
  fail "SIGINT: stderr: $(cat err)"
check st2 51 >/dev/null || fail "SIGINT: want exactly the 51 finished utterances stored"

# SIGTERM → 143 (same path). The signal is sent once the first 5 items are committed, so the
# worker is blocked on the FIFO (item 6) whatever the device's start-up time; the FIFO then
# delivers a real file, which is finished and committed.
{ head -n 5 list; echo fifo.wav; tail -n +6 list | head -n 5; } >list3
"$FZ" -j 1 -o st3 - <list3 >out 2>err &
pid=$!
for _ in $(seq 100); do [ -e st3/data.mdb ] && [ "$(check st3 2>/dev/null)" = 5 ] && break; sleep 0.1; done
kill -TERM "$pid"
sleep 0.2
timeout 20 sh -c "cat u298.wav >fifo.wav" || fail "SIGTERM: nobody read the FIFO"
wait "$pid"
rc=$?
[ $rc = 143 ] || fail "SIGTERM: exit $rc, want 143"
[ "$(cat err)" = "featurize: interrupted: stopping after the work in flight (interrupt again to stop at once)
featurize: interrupted: 6 of 11 done, 5 not started, finished work committed" ] ||
  fail "SIGTERM: stderr: $(cat err)"
check st3 6 >/dev/null || fail "SIGTERM: want the 6 finished utterances stored"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
