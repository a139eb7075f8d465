#!/usr/bin/env bash
# cache-bench: inputs that cannot be benched get one clear line each and exit 2, nothing on stdout;
# a value repeated in a list option runs once.
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
fixture="import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f"

mkdir "$t/emptydir"
echo hello >"$t/file"
"$FC_PYTHON" -c "$fixture; f.make_foreign_env('$t/foreign'); f.make_empty_store('$t/empty'); f.make_store('$t/good', 4, frames=10)" \
  || fail "fixture"
mkdir "$t/garbage" && head -c 65536 /dev/urandom >"$t/garbage/data.mdb"

expect() { # want-stderr args...
  local want=$1; shift
  "$bin" -q --duration 0.2 "$@" >"$t/out" 2>"$t/err"; local rc=$?
  [ $rc -eq 2 ] || fail "$* → exit $rc, want 2 (stderr: $(cat "$t/err"))"
  [ -s "$t/out" ] && fail "$*: wrote to stdout: $(head -3 "$t/out")"
  [ "$(cat "$t/err")" = "$want" ] || fail "$*: stderr
got:  $(cat "$t/err")
want: $want"
}
expect "cache-bench: $t/nope: cannot open the store: No such file or directory" "$t/nope"
expect "cache-bench: $t/emptydir: not a featcache store (no data.mdb)" "$t/emptydir"
expect "cache-bench: $t/file: not a featcache store (not a directory)" "$t/file"
expect "cache-bench: $t/foreign: not a featcache store (not an LMDB environment with featcache/1 meta)" "$t/foreign"
expect "cache-bench: $t/garbage: not a featcache store (not an LMDB environment with featcache/1 meta)" "$t/garbage"
expect "cache-bench: $t/empty: store has no feature records (db feat is empty): nothing to bench" "$t/empty"
# one bad store among good ones benched separately: nothing is run (as one dataset an empty store
# is an empty shard: tests/cli/bench_dataset.sh)
expect "cache-bench: $t/empty: store has no feature records (db feat is empty): nothing to bench" --separate "$t/good" "$t/empty"
expect "cache-bench: $t/garbage: not a featcache store (not an LMDB environment with featcache/1 meta)" "$t/good" "$t/garbage"
# a missing FIRST store of a dataset: its one line only (a warning that the good store was "on
# another device (vda) than .../nope ()" came first)
"$bin" --no-probe --duration 0.2 "$t/nope" "$t/good" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && [ ! -s "$t/out" ] &&
  [ "$(cat "$t/err")" = "cache-bench: $t/nope: cannot open the store: No such file or directory" ] ||
  fail "missing first store of two: exit $rc, stderr: $(cat "$t/err")"
# the good store alone works
"$bin" -q --duration 0.2 -p sequential "$t/good" >/dev/null 2>"$t/err" || fail "good store: $(cat "$t/err")"
# a value repeated in a list option counts once (-t 1,1 is one pass, not the same pass twice)
"$bin" -q --json --duration 0 -p sequential,sequential -s warm,warm -t 1,1 -b 2 "$t/good" >"$t/out" 2>"$t/err" ||
  fail "-t 1,1: $(cat "$t/err")"
[ "$(grep -o '"threads":[0-9]*,"batch":[0-9]*' "$t/out" | tr '\n' ' ')" = '"threads":1,"batch":1 "threads":1,"batch":2 ' ] ||
  fail "-t 1,1: passes $(grep -o '"threads":[0-9]*,"batch":[0-9]*' "$t/out" | tr '\n' ' '), want batch 1 and 2 once each"
# reader buffers past the memory there is (-t 256 -b 4096 of 640 kB records: 671 GB) refused
# before any pass, saying how much and what to change; it ran until the kernel killed it
"$FC_PYTHON" -c "$fixture; f.make_store('$t/big', 2, frames=2000)" || fail "fixture big"
"$bin" -q --no-probe -t 1,256 -b 4096 "$t/big" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && [ ! -s "$t/out" ] || fail "-t 256 -b 4096: exit $rc, want 2: $(cat "$t/err")"
grep -qE "^cache-bench: 256 reader threads with a batch of 4096 records of up to 640 kB \(the largest payload\) need 671\.1 GB, more than the [0-9.]+ [GM]B of memory available: fewer threads \(-t\) or a smaller batch \(-b\)$" "$t/err" ||
  fail "-t 256 -b 4096: stderr: $(cat "$t/err")"
"$bin" -q --no-probe --duration 0 -p sequential -s warm -t 2 -b 4 "$t/big" >/dev/null 2>"$t/err" ||
  fail "-t 2 -b 4 on the same store: exit $?: $(cat "$t/err")"
# its report lost (a full disk): exit 1 with the reason, never a silent 0
if [ -w /dev/full ]; then
  "$bin" -q --json --duration 0.05 -p sequential -s warm -t 1 "$t/good" >/dev/full 2>"$t/err"; rc=$?
  [ $rc -eq 1 ] && [ "$(cat "$t/err")" = "cache-bench: stdout: cannot write: No space left on device
cache-bench: done: 2 of 2 passes; the report not written (stdout)" ] ||
    fail "--json into a full disk: exit $rc: $(cat "$t/err")" # -q: exit 1 comes with its done line
  # without -q the done line follows: it says the report is lost ("16 of 16 passes" read as a pass)
  "$bin" --no-probe --json --duration 0.05 -p sequential -s warm -t 1 "$t/good" >/dev/full 2>"$t/err"
  rc=$?
  [ $rc -eq 1 ] && grep -qx "cache-bench: done: \([0-9]*\) of \1 passes; the report not written (stdout)" "$t/err" ||
    fail "--json into a full disk, its done line: exit $rc: $(cat "$t/err")"
  # the chart into a full disk: the reason is the write's (it was said 'Input/output error', as
  # of a failing disk)
  "$bin" -q --no-probe --duration 0.05 -p sequential -s warm -t 1 --svg /dev/full "$t/good" >/dev/null 2>"$t/err"; rc=$?
  [ $rc -eq 1 ] && [ "$(cat "$t/err")" = "cache-bench: /dev/full: cannot write the chart: No space left on device
cache-bench: done: 2 of 2 passes; the chart not written" ] ||
    fail "--svg into a full disk: exit $rc: $(cat "$t/err")"
fi
echo ok
