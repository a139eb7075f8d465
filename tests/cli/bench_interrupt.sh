#!/usr/bin/env bash
# cache-bench interrupted (docs/cache-bench.md "Exit status"): 130 for SIGINT, 143 for SIGTERM; the
# passes finished are reported, the one cut short is not, and the done line counts them. The
# signal is sent at a known point: FC_FAULT_STOP=store_open:N stops the process (SIGSTOP) at its
# N-th store open — 1 is the open of the store, then one per eviction: before each probe read and
# each cold pass — and the test sends the signal, then SIGCONT. An interrupt in the HDD-or-SSD
# probe is said in the verdict ("HDD or SSD not measured (interrupted)"); it said nothing of why.
set -u
bin=${FC_BIN:?}/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
t=$(mktemp -d "$PWD/bench_interrupt.XXXXXX") # the build tree: a disk (the probe skips tmpfs)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$t"; }
trap cleanup EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s', 8, frames=20)" \
  || fail "fixture"
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID TRIES
# interrupt SIG N ARGS...: run cache-bench, stopped at its N-th store open, then SIG and SIGCONT
interrupt() {
  local sig=$1 n=$2
  shift 2
  FC_FAULT_STOP=store_open:$n sigint_default "$bin" "$@" "$t/s" >"$t/out" 2>"$t/err" &
  pid=$!
  stopped $pid 400 || fail "$*: not stopped at store_open:$n: $(cat "$t/err")"
  kill -s "$sig" $pid
  kill -CONT $pid
  wait $pid
  rc=$?
  pid=
}

# SIGINT before the second cold pass (open 3): the first is reported, the second is not
interrupt INT 3 --no-probe --json -p random -s cold -b 2 --duration 0
[ $rc = 130 ] || fail "SIGINT: exit $rc: $(cat "$t/err")"
[ "$(grep -c '"record":"pass"' "$t/out")" = 1 ] && grep -q '"record":"pass".*"batch":1,' "$t/out" ||
  fail "SIGINT: want the batch-1 pass alone: $(cat "$t/out")"
grep -q '"record":"summary"' "$t/out" || fail "SIGINT: no summary: $(cat "$t/out")"
[ "$(tail -n 1 "$t/err")" = "cache-bench: done: 1 of 2 passes" ] || fail "SIGINT: done line: $(cat "$t/err")"

# SIGTERM in the probe (open 2: before its first read), on a disk: nothing measured, and the
# verdict says the probe was interrupted
interrupt TERM 2 -p random -s cold -b 2 --duration 0
[ $rc = 143 ] || fail "SIGTERM: exit $rc: $(cat "$t/err")"
if [ "$(stat -f -c %T "$t")" != tmpfs ]; then
  grep -qE "^verdict: $t/s: no pass was measured; disk .*: HDD or SSD not measured \(interrupted\)$" "$t/out" ||
    fail "SIGTERM in the probe: verdict: $(grep verdict "$t/out")"
fi
[ "$(tail -n 1 "$t/err")" = "cache-bench: done: 0 of 2 passes" ] || fail "SIGTERM: done line: $(cat "$t/err")"
echo ok
