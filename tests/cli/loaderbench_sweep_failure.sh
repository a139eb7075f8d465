#!/usr/bin/env bash
# A loader-bench --sweep whose later cell fails while running (memory that runs out: FC_FAULT=alloc:N
# fails the N-th allocation of the library) reports the cells measured before it — their rows,
# and "recommended: none: the sweep stopped at batch B, workers W, prefetch P, which failed ..."
# (JSON: "recommended": null, "failed_cell" that cell) — and exits 1 with the summary counting
# the cells not run. It printed nothing on stdout: minutes of a grid's measurements were lost
# with its last cell.
set -u
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
B=$FC_BIN
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for i in 1 2 3 4 5 6 7 8; do
  sox -n -r 22050 -b 16 "a$i.wav" synth 0.3 sine $((100 * i + 100)) || { echo "FAIL: sox failed"; exit 1; }
done
"$B/featurize" -q --device cpu -o st a*.wav || fail "featurize"
run() { "$B/loader-bench" -q --sweep batch=2,4 workers=0 --steps 8 --compute-ms 1 "$@" st; }
run >out 2>err || fail "the sweep without a fault: $(cat err)"
[ "$(grep -c '^[24] ' out)" = 2 ] || fail "the sweep without a fault: not two rows: $(cat out)"

# the first allocation whose failure falls in the second cell (the first cell's 8 steps done)
found=0
for n in $(seq 1 400); do
  FC_FAULT=alloc:$n run >out 2>err
  rc=$?
  grep -q 'done: 8 of 16 steps, 8 not started' err || continue
  grep -qi 'cannot allocate memory' err || continue
  found=$n
  [ $rc = 1 ] || fail "alloc:$n: exit $rc, want 1: $(cat err)"
  grep -q '^2  *0  *2  *8 ' out || fail "alloc:$n: the first cell's row is not reported: $(cat out)"
  grep -q '^4 ' out && fail "alloc:$n: the failed cell has a row: $(cat out)"
  grep -qx 'recommended: none: the sweep stopped at batch 4, workers 0, prefetch 2, which failed (its error is on stderr); the cells after it were not run' out ||
    fail "alloc:$n: the stop is not said: $(cat out)"
  FC_FAULT=alloc:$n run --json >out 2>err
  rc=$?
  [ $rc = 1 ] || fail "alloc:$n --json: exit $rc, want 1: $(cat err)"
  "$FC_PYTHON" - out <<'PY' || fail "alloc:$n --json: $(cat out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert [s["batch"] for s in r["sources"]] == [2], r["sources"]
assert r["recommended"] is None and r["interrupted"] is False, r
assert r["failed_cell"] == {"batch": 4, "workers": 0, "prefetch": 2}, r["failed_cell"]
PY
  break
done
[ $found != 0 ] || fail "no allocation failed in the second cell: the fault site moved?"
# a whole sweep's JSON says no cell failed
run --json >out 2>err || fail "the sweep --json: $(cat err)"
grep -q '"failed_cell":null' out || fail "the whole sweep's failed_cell: $(cat out)"

[ $fails = 0 ] || exit 1
echo "loaderbench_sweep_failure: ok (alloc:$found fails the second cell)"
