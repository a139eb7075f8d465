#!/usr/bin/env bash
# loader-bench --compare-profiles on profiles a hand, another tool or another version made: numbers
# no profiler writes (a negative wait, a share over 100 %, a fraction of a step) are refused,
# naming the file and the field, not turned into "infinitely shorter" or "-0.5× LONGER".
set -u
LB=${FC_BIN:?}/loader-bench
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
prof share.json 20 1.5 2
bad share.json 'share.json: not a featcache profile (data_share 1.5 is not between 0 and 1)'
prof negshare.json 20 -0.1 2
bad negshare.json 'negshare.json: not a featcache profile (data_share -0.1 is not between 0 and 1)'
prof halfstep.json 2.5 0.1 2
bad halfstep.json 'halfstep.json: not a featcache profile ("steps" 2.5 is not a whole number)'

# 0 ms is a real wait (AFTER never waited), and 100 % a real share: both read
prof zero.json 20 0 0
prof all.json 20 1 2
"$LB" --compare-profiles "$tmp/ok.json" "$tmp/zero.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "zero: exit $?: $(cat "$tmp/err")"
"$LB" --compare-profiles "$tmp/ok.json" "$tmp/all.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "100 %: exit $?: $(cat "$tmp/err")"

[ $fails = 0 ] && echo "ok" || exit 1
