#!/usr/bin/env bash
# cache-bench --separate when a pass fails in one store only (--direct where one filesystem
# refuses O_DIRECT; here an allocation failed on purpose: FC_FAULT=alloc:N, N = 1, 2, ... until
# it is the second store's first pass): the side-by-side table and chart matched the stores'
# passes by position, so the second store's later passes slid up into the wrong rows, under
# another pass's name. The failed pass is a gap ("-", no bar) in its own row now.
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON)"; exit 77; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/a', 8, frames=20); f.make_store('$t/b', 8, frames=20, seed=2)" \
  || fail "fixture"

seen=0
for n in $(seq 1 80); do
  FC_FAULT=alloc:$n "$bin" --separate --no-probe -p sequential,random -s warm -b 1 --duration 0 \
    --svg "$t/c.svg" "$t/a" "$t/b" >"$t/out" 2>"$t/err"
  grep -q "^cache-bench: $t/b: sequential warm pass failed" "$t/err" || continue
  seen=1
  row() { grep -E "^$1 +warm +mmap +1 +1 " "$t/out" | awk '{print $6, $7, $8, $9}'; }
  seq=$(row sequential) rnd=$(row random)
  [[ $seq =~ ^[0-9.]+\ [0-9.]+\ -\ -$ ]] || fail "alloc:$n: sequential row: '$seq', want store 2 '- -'
$(cat "$t/out")"
  [[ $rnd =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+\ [0-9.]+$ ]] || fail "alloc:$n: random row: '$rnd', want both stores
$(cat "$t/out")"
  # the chart: store 2's one bar is in the random row (the second), with its tooltip
  ids=$(grep -o 'id="pass-[0-9]*-[0-9]*"' "$t/c.svg" | tr '\n' ' ')
  [ "$ids" = 'id="pass-1-1" id="pass-1-2" id="pass-2-2" ' ] || fail "alloc:$n: chart bars: $ids"
  grep -q "id=\"pass-2-2\".*<title>$t/b: random warm mmap" "$t/c.svg" || fail "alloc:$n: bar 2-2 is not b's random pass"
  break
done
[ $seen = 1 ] || fail "no FC_FAULT=alloc:N in 1..80 failed the second store's first pass"

# the mirror case: the FIRST store's first pass fails. Rows were made in the first store's order
# and a pass only another store ran was put last: sequential came after random in the table, and
# a chart of more patterns showed one pattern's group twice. Rows follow the plan (-p, -s, -t,
# batch) whichever store ran them.
seen=0
for n in $(seq 1 80); do
  FC_FAULT=alloc:$n "$bin" --separate --no-probe -p sequential,random -s warm -b 1 --duration 0 \
    --svg "$t/c.svg" "$t/a" "$t/b" >"$t/out" 2>"$t/err"
  grep -q "^cache-bench: $t/a: sequential warm pass failed" "$t/err" || continue
  seen=1
  rows=$(grep -E '^(sequential|random) +warm +mmap +1 +1 ' "$t/out" | awk '{print $1, $6, $7, $8, $9}')
  [[ $rows =~ ^sequential\ -\ -\ [0-9.]+\ [0-9.]+$'\n'random\ [0-9.]+\ [0-9.]+\ [0-9.]+\ [0-9.]+$ ]] ||
    fail "alloc:$n: rows out of the plan's order (want sequential with store 1 '- -', then random):
$(cat "$t/out")"
  ids=$(grep -o 'id="pass-[0-9]*-[0-9]*"' "$t/c.svg" | tr '\n' ' ')
  [ "$ids" = 'id="pass-2-1" id="pass-1-2" id="pass-2-2" ' ] || fail "alloc:$n: chart bars: $ids"
  groups=$(grep -o 'font-weight="bold">[a-z]*</text>' "$t/c.svg" | sed 's/.*">//; s/<.*//' | grep -v legend | tr '\n' ' ')
  [ "$groups" = 'sequential random ' ] || fail "alloc:$n: chart groups: $groups"
  break
done
[ $seen = 1 ] || fail "no FC_FAULT=alloc:N in 1..80 failed the first store's first pass"
echo ok
