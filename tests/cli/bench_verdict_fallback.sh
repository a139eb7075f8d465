#!/usr/bin/env bash
# The verdict quotes the cold random pass at --batch, falling back to locality, physical and
# sequential, and only then to warm passes (docs/cache-bench.md): the disk question is about cold
# reads. With the cold random pass failed (FC_FAULT=alloc:N, N = 1, 2, ... until it is that pass)
# it quoted the warm random pass, a page-cache rate, ahead of the cold locality one.
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON)"; exit 77; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s', 8, frames=20)" \
  || fail "fixture"
seen=0
for n in $(seq 1 120); do
  FC_FAULT=alloc:$n "$bin" -q --json --no-probe -p random,locality -s cold,warm -b 4 --duration 0 \
    "$t/s" >"$t/out" 2>"$t/err"
  grep -q "random cold pass failed" "$t/err" || continue
  # the failed one must be the batch-4 pass (the verdict's batch), not the batch-1 one
  grep -q '"pattern":"random","cache_state":"cold","io":"mmap","threads":1,"batch":4' "$t/out" && continue
  seen=1
  "$FC_PYTHON" -c '
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if "\"summary\"" in l][0]
assert "(locality order, cold, 1 thread)" in s["verdict"], s["verdict"]
' "$t/out" || fail "alloc:$n: verdict: $(grep -o '"verdict":"[^"]*"' "$t/out")"
  break
done
[ $seen = 1 ] || fail "no FC_FAULT=alloc:N in 1..120 failed the batch-4 cold random pass"
echo ok
