#!/usr/bin/env bash
# loader-bench --json carries every figure of the table — each row (data, compute, (other),
# (step)) with mean, std, min, p50, p95, p99, max and its share — and they are the statistics of
# the steps the run took: recomputed here with numpy (population std, linear percentiles) from
# the same run's --trace, one event per step and per phase.
set -u
LB=${FC_BIN:?}/loader-bench
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$LB" -q --json --source synthetic --synthetic-items 40 --synthetic-ms 0.5 -b 4 -w 1 --prefetch 1 \
  --compute-ms 1 --trace "$tmp/t.json" >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL: exit $?: $(cat "$tmp/err")"; exit 1; }
"$PY" - "$tmp/out" "$tmp/t.json" <<'PY' || exit 1
import json, sys
import numpy as np
(run,) = json.load(open(sys.argv[1]))["sources"]
ev = json.load(open(sys.argv[2]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
steps = {e["args"]["step"]: e["dur"] / 1e3 for e in ev if e.get("cat") == "step"}
assert len(steps) == run["steps"] == 10, (len(steps), run["steps"])
phase = {"data": dict.fromkeys(steps, 0.0), "compute": dict.fromkeys(steps, 0.0)}
for e in ev:
    if e.get("cat") == "phase" and e["name"] in phase:
        phase[e["name"]][e["args"]["step"]] += e["dur"] / 1e3
series = {k: np.array([v[s] for s in sorted(steps)]) for k, v in phase.items()}
series["step"] = np.array([steps[s] for s in sorted(steps)])
series["other"] = series["step"] - series["data"] - series["compute"]
total = series["step"].sum()
bad = []
for name, x in series.items():
    got = run.get(name + "_ms")
    if got is None:
        bad.append(f"{name}_ms missing")
        continue
    want = {"mean": x.mean(), "std": x.std(), "min": x.min(), "max": x.max(),
            **dict(zip(("p50", "p95", "p99"), np.percentile(x, [50, 95, 99])))}
    if set(got) != set(want):
        bad.append(f"{name}_ms keys {sorted(got)}")
        continue
    # the trace rounds to a nanosecond: 'other' (a difference of three) to a few
    bad += [f"{name}_ms.{k}: {got[k]} want {v}" for k, v in want.items()
            if abs(got[k] - v) > 1e-5 + 1e-6 * abs(v)]
    if name != "step":
        share = run.get(name + "_share")
        if share is None or abs(share - x.sum() / total) > 1e-6:
            bad.append(f"{name}_share: {share} want {x.sum() / total}")
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY
echo ok
