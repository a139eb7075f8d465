#!/usr/bin/env bash
# loader-bench --compare-profiles: two profiles generated through the library's own profiler
# (featcache.profiler over ctypes, a fake clock: every number known) printed side by side, as a
# golden; --json; a missing file, a file that is no profile, a wrong argument count.
set -u
LB=${FC_BIN:?}/loader-bench
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# BEFORE: 20 steps, data 2 ms with every 4th step 10 ms (a queue running dry), compute 20 ms,
# 19.5 ms of it on the device, GPU busy sampled 60/70/65/75 %; its utterances are not counted
# (32 a step assumed). AFTER: data 0.05 ms, no NVML, the utterances delivered counted: 19 batches
# of 32 and a last one of 8 (616 in 401 ms: 1536.2/s, not 20 x 32 / 0.401 s = 1596.0).
"$PY" - "$tmp" <<'PY' || { echo "FAIL generating the profiles"; exit 1; }
import ctypes, sys
from featcache.profiler import load_library
L = load_library()
CLOCK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)
L.fc_profiler_set_clock.argtypes = [ctypes.c_void_p, CLOCK, ctypes.c_void_p]
now = [0]
clock = CLOCK(lambda ctx: now[0])

def profile(path, label, data_ms, gpu, items=None):
    p = ctypes.c_void_p()
    assert L.fc_profiler_create(0, b"data", ctypes.byref(p)) == 0
    L.fc_profiler_set_clock(p, clock, None)
    assert L.fc_profiler_set_info(p, label.encode(), 32.0) == 0
    for k in range(20):
        L.fc_profiler_step_begin(p)
        L.fc_profiler_phase_begin(p, b"data"); now[0] += int(data_ms(k) * 1e6); L.fc_profiler_phase_end(p)
        L.fc_profiler_phase_begin(p, b"compute"); now[0] += 20_000_000; L.fc_profiler_phase_end(p)
        assert L.fc_profiler_device_add(p, b"compute", 19.5) == 0
        if items:
            assert L.fc_profiler_step_items(p, ctypes.c_double(items(k))) == 0
        assert L.fc_profiler_step_end(p) == 0
    if gpu:
        arr = (ctypes.c_double * len(gpu))(*gpu)
        L.fc_profiler_set_gpu_busy(p, arr, len(gpu), 50.0, b"NVML GPU 0")
    else:
        L.fc_profiler_set_gpu_busy(p, None, 0, 0.0, b"NVML not available: no driver in this test")
    assert L.fc_profiler_save(p, 1, path.encode()) == 0
    L.fc_profiler_free(p)

d = sys.argv[1]
profile(d + "/before.json", "on the fly, 7 workers", lambda k: 10.0 if k % 4 == 3 else 2.0,
        [60, 70, 65, 75])
profile(d + "/after.json", "featcache, device=cuda", lambda k: 0.05, None,
        lambda k: 8 if k == 19 else 32)
profile(d + "/zero.json", "no wait", lambda k: 0.0, None)  # the data phase took 0 ms
# a loop that ended before its first step (an empty loader): no steps, the data phase named
p = ctypes.c_void_p()
assert L.fc_profiler_create(0, b"data", ctypes.byref(p)) == 0
L.fc_profiler_step_begin(p); L.fc_profiler_phase_begin(p, b"data"); L.fc_profiler_step_cancel(p)
assert L.fc_profiler_save(p, 1, (d + "/empty.json").encode()) == 0
L.fc_profiler_free(p)
PY

"$LB" --compare-profiles "$tmp/before.json" "$tmp/after.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "exit $rc: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "stderr: $(cat "$tmp/err")"
sed "s|$tmp|TMP|g" "$tmp/out" >"$tmp/got"
cat >"$tmp/want" <<'EOF'
BEFORE: TMP/before.json (on the fly, 7 workers)
AFTER:  TMP/after.json (featcache, device=cuda)
                                         BEFORE              AFTER
steps                                        20                 20
steps/s                                  41.667             49.875
utterances/s                            1333.3*             1536.2
data share (%)                            16.67               0.25
data wait mean (ms)                      4.0000             0.0500
data wait p50 (ms)                       2.0000             0.0500
data wait p95 (ms)                      10.0000             0.0500
data wait p99 (ms)                      10.0000             0.0500
data wait std/mean                         0.87               0.00
data periodicity (lag, r)               4, 0.80               none
step p50 (ms)                            22.000             20.050
compute on device p50 (ms)               19.500             19.500
GPU busy (mean %)                          67.5       not measured
  (AFTER: GPU busy not measured: NVML not available: no driver in this test)
  (*: steps x items per step: the utterances were not counted)
profile verdicts:
  BEFORE: moderately input-bound, unstable
  AFTER:  not input-bound
shrink factor: 80× (data wait mean 4 ms -> 0.05 ms per step)
verdict: the data phase is 80× shorter with AFTER; AFTER is not input-bound (data share 0.25 %, under 1 %); steps/s +19.7 %
EOF
diff -u "$tmp/want" "$tmp/got" >"$tmp/diff" || fail "golden: $(cat "$tmp/diff")"

# swapped: the data phase grows
"$LB" --compare-profiles "$tmp/after.json" "$tmp/before.json" >"$tmp/out" 2>&1 || fail "swapped: exit $?"
grep -q '^verdict: the data phase is 80.0× LONGER with AFTER; AFTER is moderately input-bound, unstable (data share 16.67 %); steps/s -16.5 %$' "$tmp/out" ||
  fail "swapped: $(tail -1 "$tmp/out")"

# AFTER waited 0 ms: an infinite factor, said in words (not "infinitely0×"); BEFORE 0 ms: LONGER
"$LB" --compare-profiles "$tmp/before.json" "$tmp/zero.json" >"$tmp/out" 2>&1 || fail "zero: exit $?"
grep -q '^shrink factor: infinite (data wait mean 4 ms -> 0 ms per step)$' "$tmp/out" ||
  fail "zero: $(grep shrink "$tmp/out")"
grep -q '^verdict: the data phase is infinitely shorter with AFTER (0 ms); AFTER is not input-bound (data share 0.00 %, under 1 %); steps/s +20.0 %$' "$tmp/out" ||
  fail "zero: $(tail -1 "$tmp/out")"
"$LB" --compare-profiles --json "$tmp/before.json" "$tmp/zero.json" >"$tmp/out" 2>&1 || fail "zero json: exit $?"
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["shrink_factor"] is None and d["verdict"].startswith("the data phase is infinitely shorter with AFTER (0 ms); "), d' "$tmp/out" ||
  fail "zero json: $(cat "$tmp/out")"
"$LB" --compare-profiles "$tmp/zero.json" "$tmp/before.json" >"$tmp/out" 2>&1 || fail "zero before: exit $?"
grep -q '^verdict: the data phase is infinitely LONGER with AFTER (BEFORE waited 0 ms); ' "$tmp/out" ||
  fail "zero before: $(tail -1 "$tmp/out")"
# a profile of no steps is nothing to compare: exit 2 naming it, either side
for args in "$tmp/empty.json $tmp/after.json" "$tmp/after.json $tmp/empty.json"; do
  "$LB" --compare-profiles $args >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 2 ] && [ ! -s "$tmp/out" ] &&
    [ "$(cat "$tmp/err")" = "loader-bench: $tmp/empty.json: the profile has no steps (the loop it profiled ended before its first step)" ] ||
    fail "empty ($args): exit $rc: $(cat "$tmp/err" "$tmp/out")"
done

# --json: the same numbers
"$LB" --compare-profiles --json "$tmp/before.json" "$tmp/after.json" >"$tmp/json" 2>"$tmp/err" ||
  fail "json: exit $?: $(cat "$tmp/err")"
"$PY" - "$tmp/json" <<'PY' || fail "json content"
import json, sys
d = json.load(open(sys.argv[1]))
b, a = d["before"], d["after"]
assert b["label"] == "on the fly, 7 workers" and a["label"] == "featcache, device=cuda"
assert d["shrink_factor"] == 80 and abs(b["data_share"] - 4 / 24) < 1e-8
assert b["data_p95_ms"] == 10 and a["data_p99_ms"] == 0.05
assert b["gpu_busy_mean_pct"] == 67.5 and a["gpu_busy_mean_pct"] is None
assert abs(d["steps_per_s_ratio"] - 24 / 20.05) < 1e-8
assert d["verdict"].startswith("the data phase is 80× shorter with AFTER")
PY

# errors: exit 2, one line naming the file
"$LB" --compare-profiles "$tmp/before.json" "$tmp/none.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] || fail "missing: exit $rc"
[ "$(cat "$tmp/err")" = "loader-bench: $tmp/none.json: No such file or directory" ] ||
  fail "missing: $(cat "$tmp/err")"
echo '{"sources":[]}' >"$tmp/report.json"
"$LB" --compare-profiles "$tmp/report.json" "$tmp/after.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] || fail "report: exit $rc"
grep -q "^loader-bench: $tmp/report.json: a loader-bench --json report, not a profile" "$tmp/err" ||
  fail "report: $(cat "$tmp/err")"
echo '{"steps": 3}' >"$tmp/bad.json"
"$LB" --compare-profiles "$tmp/bad.json" "$tmp/after.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "^loader-bench: $tmp/bad.json: not a featcache profile" "$tmp/err" ||
  fail "bad: $(cat "$tmp/err")"
# a data phase without its mean (cut by hand): not "infinitely shorter"
echo '{"steps": 3, "data_phase": "data", "data_share": 0.1, "phases": {"data": {}}}' >"$tmp/nomean.json"
"$LB" --compare-profiles "$tmp/before.json" "$tmp/nomean.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "^loader-bench: $tmp/nomean.json: not a featcache profile (the data phase \"data\" has no mean)$" "$tmp/err" ||
  fail "no mean: $(cat "$tmp/err" "$tmp/out")"
# jansson's "near" is the file's bytes: an escape there is written \033, not sent to the terminal
printf '{} \033[2J' >"$tmp/esc.json"
"$LB" --compare-profiles "$tmp/before.json" "$tmp/esc.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ "$(cat "$tmp/err")" = "loader-bench: $tmp/esc.json: not JSON: line 1: end of file expected near '\033'" ] ||
  fail "esc: $(cat -v "$tmp/err")"
echo 'not json' >"$tmp/text.json"
"$LB" --compare-profiles "$tmp/before.json" "$tmp/text.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "^loader-bench: $tmp/text.json: not JSON: line 1: " "$tmp/err" ||
  fail "text: $(cat "$tmp/err")"
# an option of the synthetic loop does nothing here: refused, not silently dropped (--svg made no
# chart, -b changed nothing)
for opt in "--svg $tmp/c.svg" "-b 4" "--trace $tmp/t.json" "--steps 5" "--source cache" "--read-only"; do
  "$LB" --compare-profiles $opt "$tmp/before.json" "$tmp/after.json" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  name=${opt%% *}
  [ "$name" = -b ] && name=--batch
  [ $rc = 2 ] && [ ! -s "$tmp/out" ] &&
    grep -q "^loader-bench: --compare-profiles compares two saved profiles: $name does not apply" "$tmp/err" ||
    fail "$opt: exit $rc: $(cat "$tmp/err")"
done
[ -e "$tmp/c.svg" ] && fail "--svg: a chart was written"
"$LB" --compare-profiles -q --json "$tmp/before.json" "$tmp/after.json" >/dev/null 2>"$tmp/err" ||
  fail "-q --json: exit $?: $(cat "$tmp/err")"
# a directory is said to be one
"$LB" --compare-profiles "$tmp" "$tmp/after.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ "$(cat "$tmp/err")" = "loader-bench: $tmp: Is a directory" ] ||
  fail "directory: $(cat "$tmp/err")"
# a file's name, in a message and in the head of the table, is quoted as every tool quotes names
# when it holds a newline or an escape: it was printed raw, the line split in two, the escape
# sequence sent to the terminal
nl=$'\n' esc=$'\033'
"$LB" --compare-profiles "$tmp/before.json" "$tmp/no${nl}such${esc}[1m.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ "$(cat "$tmp/err")" = "loader-bench: \"$tmp/no\\nsuch\\033[1m.json\": No such file or directory" ] ||
  fail "odd name: $(cat -v "$tmp/err")"
echo '{"steps": 2.5, "data_phase": "data", "data_share": 0.1, "phases": {"data": {"mean": 1}}}' >"$tmp/c${nl}d.json"
"$LB" --compare-profiles "$tmp/before.json" "$tmp/c${nl}d.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ "$(cat "$tmp/err")" = "loader-bench: \"$tmp/c\\nd.json\": not a featcache profile (\"steps\" 2.5 is not a whole number)" ] ||
  fail "odd name, a number no profiler writes: $(cat -v "$tmp/err")"
cp "$tmp/after.json" "$tmp/a${nl}b${esc}[1m.json"
"$LB" --compare-profiles "$tmp/before.json" "$tmp/a${nl}b${esc}[1m.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 0 ] && [ "$(sed -n 2p "$tmp/out")" = "AFTER:  \"$tmp/a\\nb\\033[1m.json\" (featcache, device=cuda)" ] ||
  fail "odd name in the table: $(cat -v "$tmp/out" "$tmp/err")"
"$LB" --compare-profiles "$tmp/before.json" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "wants two profiles: BEFORE.json AFTER.json" "$tmp/err" || fail "one: $(cat "$tmp/err")"
# the comparison lost (a full disk) is exit 1 with the reason, not a silent 0
if [ -w /dev/full ]; then
  "$LB" --compare-profiles "$tmp/before.json" "$tmp/after.json" >/dev/full 2>"$tmp/err"
  [ $? = 1 ] && [ "$(cat "$tmp/err")" = "loader-bench: stdout: cannot write: No space left on device" ] ||
    fail "into a full disk: $(cat "$tmp/err")"
fi

[ $fails = 0 ] && echo "ok" || exit 1
