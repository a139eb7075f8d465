#!/usr/bin/env bash
# loader-bench interrupted (SIGINT/SIGTERM): exit 130/143, and what was measured is reported — a
# run cut short with the steps it took (it used to print nothing at all), a sweep's finished cells
# and no recommendation (the grid is incomplete) — with the done line's count of steps not started.
# The source is synthetic (each utterance costs a sleep), so the steps take known time.
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
LB=${FC_BIN:?}/loader-bench
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# run ARGS... in the background, send $sig after $after seconds; rc in $rc
run_and_stop() {
  sigint_default "$LB" "$@" >"$tmp/out" 2>"$tmp/err" &
  local pid=$!
  sleep "$after"
  kill -"$sig" $pid
  wait $pid
  rc=$?
}

# one run of 1000 steps of 20 ms, stopped after about 2 s
sig=INT after=2 run_and_stop --source synthetic --synthetic-ms 20 -b 1 --steps 1000 --compute-ms 1
[ $rc = 130 ] || fail "SIGINT: exit $rc, want 130: $(cat "$tmp/err")"
n=$(sed -n 's/^source: synthetic (batch 1, workers 2, prefetch 2, \([0-9]*\) steps, \1 utterances)$/\1/p' "$tmp/out")
if [ -z "$n" ] || [ "$n" -lt 1 ] || [ "$n" -ge 1000 ]; then
  fail "SIGINT: the run cut short is not reported with its steps: $(head -3 "$tmp/out")"
else
  grep -q "^steps: $n (times in ms per step" "$tmp/out" || fail "SIGINT: no table of $n steps"
  grep -q '^verdict: ' "$tmp/out" || fail "SIGINT: no verdict"
  [ "$(tail -1 "$tmp/err")" = "loader-bench: done: $n of 1000 steps, $((1000 - n)) not started (0 utterances failed)" ] ||
    fail "SIGINT: done line: $(tail -1 "$tmp/err")"
fi

# a sweep stopped in its second cell (the first: 20 steps of 5 ms; the second: 320 ms a step)
sig=TERM after=2 run_and_stop --json --source synthetic --synthetic-ms 5 -w 1 --steps 20 \
  --compute-ms 1 --sweep batch=1,64
[ $rc = 143 ] || fail "sweep, SIGTERM: exit $rc, want 143: $(cat "$tmp/err")"
"$PY" - "$tmp/out" <<'PY' || fail "sweep, SIGTERM: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True and d["recommended"] is None, d
s = d["sources"]
assert 1 <= len(s) <= 2 and s[0]["batch"] == 1 and s[0]["steps"] == 20, s
assert len(s) == 1 or (s[1]["batch"] == 64 and 1 <= s[1]["steps"] < 20), s[1]
PY
sig=INT after=2 run_and_stop --source synthetic --synthetic-ms 5 -w 1 --steps 20 --compute-ms 1 \
  --sweep batch=1,64,2
[ $rc = 130 ] || fail "sweep, SIGINT: exit $rc, want 130"
grep -qx "recommended: none: the sweep was interrupted (a cell cut short has fewer steps)" "$tmp/out" ||
  fail "sweep, SIGINT: recommendation line: $(tail -1 "$tmp/out")"
# the steps add up over the whole grid: 3 cells of 20, the third never started (it said 'of 40')
n=$(sed -n 's/^loader-bench: done: \([0-9]*\) of 60 steps, \([0-9]*\) not started (0 utterances failed)$/\1 \2/p' "$tmp/err")
[ -n "$n" ] && [ $((${n% *} + ${n#* })) = 60 ] && [ "${n% *}" -ge 20 ] && [ "${n% *}" -lt 40 ] ||
  fail "sweep, SIGINT: done line: $(tail -1 "$tmp/err")"

# stopped in its warmup: nothing measured, so nothing reported (it crashed: the run's freed
# profile was summarized); a sweep stopped in its second cell's warmup reports the first cell
sig=INT after=1 run_and_stop --source synthetic --synthetic-ms 20 -b 1 --warmup 1000 --steps 5 \
  --compute-ms 1
[ $rc = 130 ] || fail "in warmup: exit $rc, want 130: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "in warmup: a report of nothing measured: $(cat "$tmp/out")"
[ "$(tail -1 "$tmp/err")" = "loader-bench: done: 0 of 5 steps, 5 not started (0 utterances failed)" ] ||
  fail "in warmup: done line: $(tail -1 "$tmp/err")"
sig=INT after=1.5 run_and_stop --json --source synthetic --synthetic-ms 20 -w 1 --steps 5 \
  --compute-ms 1 --sweep batch=1,200
[ $rc = 130 ] || fail "sweep, in warmup: exit $rc, want 130: $(cat "$tmp/err")"
# (the first cell: 6 steps of 20 ms; the second, 4 s a batch, is stopped in its warmup step)
"$PY" - "$tmp/out" <<'PY' || fail "sweep, in warmup: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True and d["recommended"] is None, d
s = d["sources"]
assert len(s) == 1 and s[0]["batch"] == 1 and s[0]["steps"] == 5, s
PY

# not interrupted: "interrupted": false
"$LB" -q --json --source synthetic --synthetic-items 8 --synthetic-ms 0 --compute-ms 0 -b 4 \
  >"$tmp/out" 2>"$tmp/err" || fail "plain run: exit $?: $(cat "$tmp/err")"
grep -q '"interrupted":false' "$tmp/out" || fail "plain run: no \"interrupted\":false"

[ $fails = 0 ] && echo ok || exit 1
