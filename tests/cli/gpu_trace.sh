#!/usr/bin/env bash
# scripts/gpu-trace on a trace written here in the documented columns (docs/cuda.md "Tracing a
# run"): the timeline with and without the process's start and end, the ring's realtime factor
# and the GPU's busy time (the union of overlapping chunks), the per-chunk medians and a chunk's
# turn (chunk 0 launched at 9.999, seen done at 10.005, launched again at 10.009) split by the
# ring's opened, sealed and released lines; chunk 0 opened again before its release (FC_CUDA_RING's
# :early): its staging back at 10.006, and no turn after a release counted; a trace that
# cannot be read, or that has no chunk, exits 2 saying so.
set -u
PY=${FC_PYTHON:-python3}
GT=$FC_SRC/scripts/gpu-trace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# 3 chunks of 2,205,000 samples (100 s at 22.05 kHz each); chunks 0 and 1 overlap on the device
# (busy 10.000-10.004 and 10.003-10.007: 7 ms in all), chunk 2 at 10.010-10.012: 9 ms busy.
cat >"$tmp/t.csv" <<'CSV'
kind,slot,utterances,samples_int16,samples_float,output_bytes,t0,t1,t2,t3,t4,t5
plan,-1,1,4,4194304,0,9.800000,9.950000,,,,
grow,1,0,0,0,0,9.950000,9.960000,,,,
opened,0,0,0,0,0,9.995500,,,,,
sealed,0,0,0,0,0,9.998000,,,,,
chunk,0,10,2205000,0,100,9.999000,10.000000,10.001000,10.003000,10.004000,10.005000
opened,1,0,0,0,0,9.999500,,,,,
sealed,1,0,0,0,0,10.001000,,,,,
chunk,1,12,2200000,5000,100,10.002000,10.003000,10.004000,10.006000,10.007000,10.008000
released,0,0,0,0,0,10.007000,,,,,
opened,0,0,0,0,0,10.007500,,,,,
sealed,0,0,0,0,0,10.008500,,,,,
chunk,0,8,2205000,0,100,10.009000,10.010000,10.010500,10.011500,10.012000,10.014000
released,1,0,0,0,0,10.009500,,,,,
released,0,0,0,0,0,10.016000,,,,,
free,-1,0,0,0,0,10.020000,10.070000,,,,
CSV
cat >"$tmp/want" <<'OUT'
gpu-trace: 3 chunks, 30 utterances, 0.08 h at 22050 Hz

| timeline | s |
| --- | ---: |
| process start → plan begun | 0.300 |
| plan made (context, chunk 0) | 0.150 |
| plan made → first chunk launched | 0.049 |
| the ring: first launch → last chunk seen done | 0.015 |
| last chunk seen → plan freed begun | 0.006 |
| plan freed | 0.050 |
| plan freed → process end | 0.130 |
| process, start to end | 0.700 |

the ring: 20,000x realtime over its span; the GPU busy 0.009 s of it (60 %)

| per chunk (median) | |
| --- | ---: |
| copy up + int16 conversion | 1.000 ms |
| kernels | 2.000 ms |
| copy back | 1.000 ms |
| launch → on the device | 1.000 ms |
| done on the device → seen by the host | 1.000 ms |
| between launches | 5.000 ms |
| a chunk's turn: launched → seen done | 6.000 ms |
| a chunk's turn: seen done → launched again (writers, refill) | 4.000 ms |
| a chunk's use: opened → sealed (filled by the workers) | 1.500 ms |
| a chunk's use: sealed → launched (last writes, the launch thread; early refill: the writers of its use before) | 1.000 ms |
| a chunk's use: seen done → released (the writers' copy and commit) | 2.000 ms |
| a chunk's use: seen done → opened again (its staging back to the workers) | 2.500 ms |
| a chunk's use: released → opened again (its turn in the ring) | 0.500 ms |
OUT
"$PY" "$GT" "$tmp/t.csv" --process 9.5 10.2 >"$tmp/out" 2>"$tmp/err" || fail "exit $?: $(cat "$tmp/err")"
diff -u "$tmp/want" "$tmp/out" >"$tmp/diff" || fail "output differs: $(cat "$tmp/diff")"
# without --process: the lines that need it are left out
"$PY" "$GT" "$tmp/t.csv" >"$tmp/out2" 2>&1 || fail "no --process: exit $?"
grep -q "process" "$tmp/out2" && fail "no --process, yet a process line: $(cat "$tmp/out2")"
grep -qxF "| plan freed | 0.050 |" "$tmp/out2" || fail "no --process: $(cat "$tmp/out2")"
# bad input
"$PY" "$GT" "$tmp/none.csv" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc = 2 ] && grep -qxF "gpu-trace: $tmp/none.csv: No such file or directory" "$tmp/e" ||
  fail "missing file: exit $rc, $(cat "$tmp/e")"
# early refill: chunk 0's next use opened at 10.006, before its release at 10.007
sed 's/^opened,0,0,0,0,0,10.007500/opened,0,0,0,0,0,10.006000/' "$tmp/t.csv" >"$tmp/early.csv"
"$PY" "$GT" "$tmp/early.csv" >"$tmp/out3" 2>"$tmp/err3" || fail "early: exit $?: $(cat "$tmp/err3")"
grep -qxF "| a chunk's use: seen done → opened again (its staging back to the workers) | 1.000 ms |" \
  "$tmp/out3" || fail "early: $(cat "$tmp/out3")"
grep -q "released → opened again" "$tmp/out3" && fail "early: a turn after a release: $(cat "$tmp/out3")"
head -3 "$tmp/t.csv" >"$tmp/nochunk.csv"
"$PY" "$GT" "$tmp/nochunk.csv" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc = 2 ] && grep -qF "no plan or no chunk lines" "$tmp/e" || fail "no chunks: exit $rc, $(cat "$tmp/e")"
if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
