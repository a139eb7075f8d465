#!/usr/bin/env bash
# cache-bench --json at the edges: a pass that read the whole order is "complete" even when its
# time or byte bound was reached on the last batch; a run in which no pass was measured reports
# what it does not know as null (never 0: a 0 ms shortest step would say any step keeps up), and
# its exit 1 comes with the done line even under -q; a store with no disk under it (tmpfs) has
# "disk": null in every record (it was "", where JSON says none with null).
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s', 20, frames=10)" \
  || fail "fixture"

# -b 20: the batch-20 pass reads the whole store in its first batch, and both bounds are reached
# there; the batch-1 pass stops after its first record
for bound in "--duration 0.000001" "--duration 0 --bytes 1"; do
  # shellcheck disable=SC2086 # the words of $bound
  "$bin" -q --json --no-probe -p sequential -s warm -b 20 $bound "$t/s" >"$t/out" 2>"$t/err" ||
    fail "$bound: exit $?: $(cat "$t/err")"
  got=$("$FC_PYTHON" -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["record"] == "pass":
        print(o["batch"], o["records"], o["stopped"])' "$t/out")
  want_stop=$([ "$bound" = "--duration 0.000001" ] && echo time || echo bytes)
  [ "$got" = "1 1 $want_stop
20 20 complete" ] || fail "$bound: batch records stopped:
$got"
done

# no pass measured (its allocation fails: FC_FAULT=alloc:N, N = 1, 2, ... until one is the pass's)
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  seen=0
  for n in $(seq 1 60); do
    FC_FAULT=alloc:$n "$bin" -q --json --no-probe -p sequential -s warm -b 1 --duration 0 "$t/s" \
      >"$t/out" 2>"$t/err"
    rc=$?
    grep -q 'pass failed' "$t/err" || continue
    seen=1
    [ $rc -eq 1 ] || fail "alloc:$n: a failed pass, exit $rc"
    # exit 1 comes with its done line, -q or not
    [ "$(tail -1 "$t/err")" = "cache-bench: done: 0 of 1 passes (1 failed)" ] ||
      fail "alloc:$n: -q and a failed pass: no done line: $(cat "$t/err")"
    "$FC_PYTHON" -c '
import json, sys
objs = [json.loads(line) for line in open(sys.argv[1])]
s = [o for o in objs if o["record"] == "summary"]
assert len(s) == 1 and not [o for o in objs if o["record"] == "pass"], objs
s = s[0]
for k in ("batches_per_s", "min_step_ms", "max_gpus", "keeps_up", "warm_batches_per_s",
          "random_vs_sequential", "random_record_ms_p50", "probe"):
    assert s[k] is None, (k, s[k])
assert s["need_batches_per_s"] == 20, s["need_batches_per_s"]
assert s["verdict"].startswith(sys.argv[2] + ": no pass was measured; "), s["verdict"]
' "$t/out" "$t/s" || fail "alloc:$n: summary of no pass: $(cat "$t/out")"
    break
  done
  [ $seen = 1 ] || fail "no FC_FAULT=alloc:N in 1..60 failed the pass"
fi
# min_step_ms is unrounded; a device too slow (a 0.001 ms step) has it in its verdict rounded up to
# 0.1 ms, the step named keeping up (docs/cache-bench.md)
"$bin" -q --json --no-probe -p sequential -s warm -b 4 --duration 0.1 --step-ms 0.001 "$t/s" >"$t/out" 2>"$t/err" ||
  fail "min_step_ms: exit $?: $(cat "$t/err")"
"$FC_PYTHON" -c '
import json, math, re, sys
s = [json.loads(line) for line in open(sys.argv[1])][-1]
m = re.search(r"\(steps of ([0-9.]+) ms or more keep up\)", s["verdict"])
assert s["record"] == "summary" and not s["keeps_up"] and m, s["verdict"]
assert abs(s["min_step_ms"] - 1000 / s["batches_per_s"]) <= 1e-5 * s["min_step_ms"], s
assert m.group(1) == "%.1f" % (math.ceil(s["min_step_ms"] * 10 - 1e-6) / 10), (m.group(1), s["min_step_ms"])
' "$t/out" || fail "min_step_ms and the verdict: $(cat "$t/out")"

# "disk": the whole disk's name where a block device is under the store, null where none is
# (tmpfs: /dev/shm here, and the temp dir where it is one); checked where the store can be made
shm=$(mktemp -d -p /dev/shm 2>/dev/null) && trap 'rm -rf "$t" "$shm"' EXIT
nodisk=0
for d in "$t" ${shm:+"$shm"}; do
  [ "$d" = "$t" ] || "$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$d/s', 20, frames=10)" ||
    fail "fixture in $d"
  "$bin" -q --json --no-probe -p sequential -s warm -b 4 --duration 0.1 "$d/s" >"$t/out" 2>"$t/err" ||
    fail "disk in $d: exit $?: $(cat "$t/err")"
  "$FC_PYTHON" -c '
import json, sys
objs = [json.loads(line) for line in open(sys.argv[1])]
kind = [o for o in objs if o["record"] == "summary"][0]["kind"]
for o in objs:
    if kind == "block":  # (null where sysfs does not say which disk)
        assert o["disk"] is None or (isinstance(o["disk"], str) and o["disk"]), o
    else:
        assert o["disk"] is None, o
print(kind != "block")' "$t/out" >"$t/nodisk" || fail "disk in $d: $(cat "$t/out")"
  [ "$(cat "$t/nodisk")" = True ] && nodisk=1
done
[ $nodisk = 1 ] || echo "note: no tmpfs here (/dev/shm, the temp dir): a store without a disk not checked"
echo ok
