#!/usr/bin/env bash
# A loader killed with SIGKILL (the OOM killer, a job's time limit) leaves its reader slot in
# lock.mdb, and while another process keeps the store open LMDB never resets the table: the slot
# pins the snapshot it read, so no page freed since could be reused, and the store's writers grew
# data.mdb with every rewrite (three drops and refeaturizes of one config: 8.8 MB → 35 MB) until
# someone ran cache-verify --clear-stale-readers. The writers clear the slots of dead processes
# now (mdb_reader_check, a write to lock.mdb only): at their open and before each write, so the
# pages freed since are reused. A live reader's slot stays. docs/RELIABILITY.md, Concurrency.
set -u
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
keep=
live=
trap '[ -n "$keep" ] && kill "$keep" 2>/dev/null; [ -n "$live" ] && kill "$live" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
"$PY" - <<'PY' || { echo "FAIL: cannot write the WAVs"; exit 1; }
import wave
import numpy as np
rng = np.random.default_rng(7)
for i in range(80):
    x = 0.2 * rng.standard_normal(22050)
    with wave.open("u%02d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((x * 32767).astype("<i2").tobytes())
PY
"$FC_BIN/featurize" -q -j 1 -o st u*.wav || { echo "FAIL: featurize"; exit 1; }

stale() { # the store's stale reader slots (cache-verify --json)
  "$FC_BIN/cache-verify" --json st 2>/dev/null |
    "$PY" -c 'import json, sys; print(json.loads(sys.stdin.readline())["stale_readers"])'
}
slots() { # PID: the reader slots PID holds (LMDB's reader list)
  "$PY" -c 'import lmdb, sys
e = lmdb.open(sys.argv[1], readonly=True, max_dbs=8)
print(sum(1 for l in e.readers().splitlines()[1:] if l.split() and l.split()[0] == sys.argv[2]))' st "$1"
}
# a process that keeps the store open holding no snapshot (as a writer between its commits
# does): the reader table is not reset while it lives
mkfifo kin lin
"$PY" -c 'import lmdb, sys
e = lmdb.open(sys.argv[1], readonly=True, max_dbs=8, lock=True)
print("open", flush=True)
sys.stdin.read()' st <kin >keep.out &
keep=$!
exec 7>kin
for _ in $(seq 200); do grep -q open keep.out && break; sleep 0.05; done
grep -q open keep.out || { echo "FAIL: the holder did not start"; exit 1; }
killed() { # a loader killed holding a batch: its slot stays, stale
  "$PY" -c 'import os, sys, featcache
ld = featcache.Loader(sys.argv[1], batch_size=4, prefetch_threads=0)
b = next(iter(ld))
os.kill(os.getpid(), 9)' st
}
killed
s0=$(stale)
[ "$s0" = 1 ] || { echo "FAIL: no stale slot to begin with (stale: $s0)"; exit 1; }

size() { stat -c %s st/data.mdb; }
before=$(size)
for r in 1 2 3; do # a config rewritten whole: its pages freed, then written again
  "$FC_BIN/cache-config" -q --drop hifigan st || fail "drop $r"
  "$FC_BIN/featurize" -q -j 1 -o st u*.wav || fail "featurize $r"
done
after=$(size)
[ $((after * 2)) -le $((before * 3)) ] ||
  fail "data.mdb grew from $before to $after bytes over three rewrites (the killed loader's slot pinned the freed pages)"
s1=$(stale)
[ "$s1" = 0 ] || fail "the writers left $s1 stale reader slot(s)"

# a live reader (a training run's loader, holding a batch) beside another killed one: a writer's
# open clears the dead one's slot, not the live one's
"$PY" -c 'import sys, featcache
ld = featcache.Loader(sys.argv[1], batch_size=4, prefetch_threads=0)
b = next(iter(ld))
print("reading", flush=True)
sys.stdin.read()' st <lin >live.out &
live=$!
exec 8>lin
for _ in $(seq 200); do grep -q reading live.out && break; sleep 0.05; done
grep -q reading live.out || { echo "FAIL: the live reader did not start"; exit 1; }
killed
s2=$(stale)
n2=$(slots "$live")
[ "$s2" = 1 ] && [ "$n2" -ge 1 ] || fail "a live and a killed reader: $s2 stale, $n2 live slots; want 1 and at least 1"
"$FC_BIN/featurize" -q -j 1 -o st u*.wav || fail "featurize beside the live reader"
s3=$(stale)
n3=$(slots "$live")
[ "$s3" = 0 ] && [ "$n3" = "$n2" ] || fail "after a writer: $s3 stale, $n3 live slots; want 0 and $n2 (the live reader's kept)"
kill -0 "$live" 2>/dev/null || fail "the live reader died"

# a loader killed during a long run, after the writer's open: cleared at its next write (test
# builds: the run stopped before its second commit, FC_FAULT_STOP=featurize_batch:2)
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  . "$FC_SRC/tests/cli/stop_site.bash"
  "$FC_BIN/cache-config" -q --drop hifigan st || fail "drop before the long run"
  FC_FAULT_STOP=featurize_batch:2 "$FC_BIN/featurize" -q -j 1 --batch 10 -o st u*.wav &
  run=$!
  stopped $run || fail "the long run never stopped"
  killed
  s4=$(stale)
  kill -CONT $run
  wait $run || fail "the long run: exit $?"
  s5=$(stale)
  [ "$s4" = 1 ] && [ "$s5" = 0 ] || fail "a loader killed during a run: $s4 stale, then $s5 after the run; want 1, then 0"
fi

[ $fails = 0 ] && echo "writers_stale_readers: ok (data.mdb $before -> $after bytes)" || exit 1
