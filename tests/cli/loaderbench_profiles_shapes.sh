#!/usr/bin/env bash
# loader-bench --compare-profiles on profiles a hand, another tool or another version made: numbers
# no profiler writes (a negative wait or share, a fraction of a step) are refused, naming the file
# and the field, not turned into "infinitely shorter" or "-0.5× LONGER"; a share over 100 %, which
# the profiler writes when time measured elsewhere is added to the data phase, is read.
set -u
LB=${FC_BIN:?}/loader-bench
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# prof FILE STEPS SHARE MEAN [EXTRA]: a minimal profile (EXTRA: more top-level members)
prof() {
  printf '{"steps": %s, "data_phase": "data", "data_share": %s, "phases": {"data": {"mean": %s, "p50": %s}}%s}\n' \
    "$2" "$3" "$4" "$4" "${5:+, $5}" >"$tmp/$1"
}
prof ok.json 20 0.1 2

# refused: exit 2, nothing on stdout, one line naming the file and what is wrong
bad() { # NAME WANT-STDERR: compares ok.json with NAME both ways
  for args in "$tmp/ok.json $tmp/$1" "$tmp/$1 $tmp/ok.json"; do
    "$LB" --compare-profiles $args >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 2 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "loader-bench: $tmp/$2" ] ||
      fail "$1 ($args): exit $rc: $(cat "$tmp/err" "$tmp/out")"
  done
}
prof negmean.json 20 0.1 -2
bad negmean.json 'negmean.json: not a featcache profile (the data phase "data" has a mean of -2 ms)'
prof negshare.json 20 -0.1 2
bad negshare.json 'negshare.json: not a featcache profile (data_share -0.1 is negative)'
prof halfstep.json 2.5 0.1 2
bad halfstep.json 'halfstep.json: not a featcache profile ("steps" 2.5 is not a whole number)'

# a profile of another format version (a later featcache's), or timed in another unit, is not
# read as this one; one saved before profiles named their format is
prof v2.json 20 0.1 2 '"format": "featcache-profile/2"'
bad v2.json 'v2.json: a profile of format featcache-profile/2, which this loader-bench does not read (it reads featcache-profile/1)'
prof us.json 20 0.1 2 '"format": "featcache-profile/1", "unit": "us"'
bad us.json 'us.json: not a featcache profile (its times are in us, not in ms)'
prof v1.json 20 0.1 2 '"format": "featcache-profile/1", "unit": "ms"'
"$LB" --compare-profiles "$tmp/ok.json" "$tmp/v1.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "featcache-profile/1: exit $?: $(cat "$tmp/err")"

# 0 ms is a real wait (AFTER never waited), 100 % a real share, and so is more: a profile whose
# data phase was added up from another thread's times (the C API's fc_profiler_phase_add takes
# 50 ms in steps of far less; StepProfiler.add refuses more than its step has lasted) has a share
# of thousands of percent
prof zero.json 20 0 0
prof all.json 20 1 2
prof added.json 20 44.24 50
# neither waited: no factor (0 / 0), as loader-bench --compare says it; it was 1.00×
"$LB" --compare-profiles "$tmp/zero.json" "$tmp/zero.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "0 / 0: exit $?: $(cat "$tmp/err")"
grep -qx 'shrink factor: none (data wait mean 0 ms -> 0 ms per step)' "$tmp/out" &&
  grep -q '^verdict: the data phase is unchanged (0 ms in both); ' "$tmp/out" ||
  fail "0 / 0: $(tail -2 "$tmp/out")"
"$LB" --compare-profiles --json "$tmp/zero.json" "$tmp/zero.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "0 / 0 json: exit $?: $(cat "$tmp/err")"
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["shrink_factor"] is None, d' \
  "$tmp/out" || fail "0 / 0 json: $(cat "$tmp/out")"
for f in zero.json all.json added.json; do
  "$LB" --compare-profiles "$tmp/ok.json" "$tmp/$f" >"$tmp/out" 2>"$tmp/err" ||
    fail "$f: exit $?: $(cat "$tmp/err")"
done
# ...read, and said: a share over 100 % was no measurement (it read "AFTER is highly input-bound
# (data share 4424.00 %)" and no more); 100 % itself is one
grep -q "; AFTER's data share of 4424 % is more than its steps lasted: times were added to its phases beyond them (seconds or microseconds passed as ms, or another thread's overlapping time), so its share and verdict are not measurements" "$tmp/out" ||
  fail "added.json: the verdict: $(grep '^verdict' "$tmp/out")"
"$LB" --compare-profiles "$tmp/ok.json" "$tmp/all.json" >"$tmp/out" 2>&1
grep -q "not measurements" "$tmp/out" && fail "all.json (100 %): said to be no measurement"

# profiles of different shapes: the device row compares a series of one name on both sides (BEFORE
# timed "compute" on the device, AFTER only "forward": AFTER has no "compute" to show, and its
# "forward" is not passed off as one)
prof dev_c.json 20 0.1 2 '"device_phases": {"compute": {"p50": 19.5}}'
prof dev_f.json 20 0.1 2 '"device_phases": {"forward": {"p50": 3}}'
prof dev_cf.json 20 0.1 2 '"device_phases": {"forward": {"p50": 4}, "compute": {"p50": 18}}'
devrow() { # BEFORE AFTER WANT: the device row(s) of the comparison
  "$LB" --compare-profiles "$tmp/$1" "$tmp/$2" >"$tmp/out" 2>"$tmp/err" ||
    fail "$1 $2: exit $?: $(cat "$tmp/err")"
  got=$(grep 'on device' "$tmp/out" | tr -s ' ')
  [ "$got" = "$3" ] || fail "$1 $2: device row: '$got', want '$3'"
}
devrow dev_c.json dev_f.json 'compute on device p50 (ms) 19.500 -'
devrow dev_f.json dev_c.json 'forward on device p50 (ms) 3.000 -'
devrow dev_c.json dev_cf.json 'compute on device p50 (ms) 19.500 18.000'
devrow ok.json dev_f.json 'forward on device p50 (ms) - 3.000'
"$LB" --compare-profiles "$tmp/ok.json" "$tmp/ok.json" >"$tmp/out" 2>&1
grep -q 'on device' "$tmp/out" && fail "no device series: a device row: $(grep 'on device' "$tmp/out")"

# a profile that neither counted its utterances nor said how many a step holds (StepProfiler()
# with explicit steps) has no utterances/s: '-' in the table and null in --json, not 0/s
"$PY" - "$tmp/uncounted.json" <<'PY' || fail "generating uncounted.json"
import sys
from featcache.profiler import StepProfiler
p = StepProfiler()
for _ in range(3):
    with p.step():
        with p.phase("data"):
            pass
p.save(sys.argv[1])
PY
"$LB" --compare-profiles "$tmp/uncounted.json" "$tmp/ok.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "uncounted: exit $?: $(cat "$tmp/err")"
got=$(grep '^utterances/s' "$tmp/out" | tr -s ' ')
[ "$got" = "utterances/s - -" ] || fail "uncounted: '$got'"
"$LB" --compare-profiles --json "$tmp/uncounted.json" "$tmp/ok.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "uncounted json: exit $?: $(cat "$tmp/err")"
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["before"]["items_per_s"] is None and d["after"]["items_per_s"] is None, d' \
  "$tmp/out" || fail "uncounted json: $(cat "$tmp/out")"

# the strings a profile carries (its label, verdict, GPU note, device series and data phase names)
# are quoted as names are: a newline in a label split the BEFORE line, an escape in it reached the
# terminal
"$PY" - "$tmp" <<'PY' || fail "generating odd.json"
import json, sys
d = sys.argv[1]
odd = "two\nlines\x1b[31m"
json.dump({"steps": 20, "data_phase": "data", "data_share": 0.1, "label": odd, "verdict": odd,
           "phases": {"data": {"mean": 2}}, "device_phases": {"gpu" + odd: {"p50": 1}},
           "gpu_busy": {"measured": False, "note": odd}}, open(d + "/odd.json", "w"))
json.dump({"steps": 20, "data_phase": odd, "data_share": 0.1, "phases": {odd: {"p50": 2}}},
          open(d + "/oddphase.json", "w"))
PY
"$LB" --compare-profiles "$tmp/odd.json" "$tmp/ok.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "odd strings: exit $?: $(cat "$tmp/err")"
grep -q $'\033' "$tmp/out" && fail "odd strings: an escape reached stdout"
grep -qx "BEFORE: $tmp/odd.json (\"two\\\\nlines\\\\033\[31m\")" "$tmp/out" ||
  fail "odd strings: label: $(grep -a '^BEFORE' "$tmp/out")"
grep -qx '  BEFORE: "two\\nlines\\033\[31m"' "$tmp/out" || fail "odd strings: verdict: $(cat "$tmp/out")"
grep -q '^  (BEFORE: GPU busy not measured: "two\\nlines\\033\[31m")$' "$tmp/out" ||
  fail "odd strings: GPU note: $(cat "$tmp/out")"
grep -q '^"gputwo\\nlines\\033\[31m" on device' "$tmp/out" ||
  fail "odd strings: device name: $(cat "$tmp/out")"
"$LB" --compare-profiles "$tmp/oddphase.json" "$tmp/ok.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ "$(cat "$tmp/err")" = "loader-bench: $tmp/oddphase.json: not a featcache profile (the data phase \"two\\nlines\\033[31m\" has no mean)" ] ||
  fail "odd data phase: $(cat -A "$tmp/err")"

[ $fails = 0 ] && echo "ok" || exit 1
