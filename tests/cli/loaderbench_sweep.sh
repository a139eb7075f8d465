#!/usr/bin/env bash
# loader-bench --sweep on the synthetic source, whose cost is known: each utterance costs 1 ms in a
# worker, the step computes 20 ms. batch 8 = 8 ms of work per batch: one worker with a batch
# waiting ahead (prefetch 2) keeps up, with prefetch 1 it cannot overlap (8 ms wait, ~28 %).
# batch 32 = 32 ms per batch needs two workers and a batch ahead. So the smallest setting under
# 5 % data share is workers 1, prefetch 2, batch 8 — margins of >= 8 ms, robust on a loaded box.
set -u
LB=${FC_BIN:?}/loader-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$LB" --source synthetic --synthetic-ms 1 --synthetic-items 4000 --compute-ms 20 --steps 30 \
  --sweep batch=8,32 workers=1,2 prefetch=1,2 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "sweep: exit $rc: $(cat "$tmp/err")"
[ "$(cat "$tmp/err")" = "loader-bench: done: 240 of 240 steps (0 utterances failed)" ] ||
  fail "sweep: stderr: $(cat "$tmp/err")"
[ "$(head -1 "$tmp/out" | tr -s ' ')" = "batch workers prefetch steps data ms step ms data % verdict" ] ||
  fail "sweep: header: $(head -1 "$tmp/out")"
[ "$(grep -c '^[0-9]' "$tmp/out")" = 8 ] || fail "sweep: want 8 grid rows"
grep -q '^recommended: batch 8, workers 1, prefetch 2 (data share ' "$tmp/out" ||
  fail "sweep: recommendation: $(tail -1 "$tmp/out")"
# the serial setting is input-bound: batch 8, 1 worker, prefetch 1 waits ~8 of ~28 ms
awk '$1==8 && $2==1 && $3==1 { if ($7+0 < 15) exit 1 }' "$tmp/out" || fail "sweep: 8/1/1 share"

# the same as JSON
"$LB" --source synthetic --synthetic-ms 1 --synthetic-items 4000 --compute-ms 20 --steps 30 -q \
  --json --sweep batch=8 workers=1 prefetch=1,2 >"$tmp/json" 2>"$tmp/err" || fail "json: exit $?"
"${FC_PYTHON:-python3}" - "$tmp/json" <<'PY' || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
assert [(s["batch"], s["workers"], s["prefetch"]) for s in d["sources"]] == [(8, 1, 1), (8, 1, 2)], d
for s in d["sources"]:
    assert s["source"] == "synthetic" and s["steps"] == 30 and s["utterances"] == 240
    assert set(s["data_ms"]) == {"mean", "std", "p50", "p95", "p99", "max"}
    assert set(s) >= {"compute_ms", "data_share", "variation_ratio", "autocorr", "verdict"}
assert d["sources"][0]["data_share"] > 0.15 and d["sources"][0]["verdict"].startswith("highly")
assert d["recommended"] == {"batch": 8, "workers": 1, "prefetch": 2,
                            "data_share": d["sources"][1]["data_share"]}, d["recommended"]
PY

# nothing under 5 %: said so, exit 0
"$LB" --source synthetic --synthetic-ms 5 --synthetic-items 400 --compute-ms 1 --steps 4 -q \
  --sweep batch=8 workers=1 >"$tmp/out" 2>&1 || fail "none: exit $?"
grep -q '^recommended: none of these settings keeps the data share under 5 %$' "$tmp/out" ||
  fail "none: $(cat "$tmp/out")"

[ $fails = 0 ] && echo "ok" || exit 1
