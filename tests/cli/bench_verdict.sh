#!/usr/bin/env bash
# cache-bench's verdict, one line: does the store keep up with --gpus GPUs at a step of --step-ms
# through the loader's prefetch (a rate: batches/s delivered against gpus x 1000 / step), and
# does the disk read like an HDD or an SSD by its measured behaviour (the O_DIRECT probe: single
# records in file order and in random order), not by its rotational flag. Checked here: the rate
# model at both ends (a step so long any disk keeps up, one so short none does), the
# classification against the probe's own numbers on whatever disk this test runs on (RAM for
# tmpfs), --no-probe, a store too small to tell, the JSON fields, --gpus usage errors.
set -u
bin=${FC_BIN:?}/cache-bench
PY=${FC_PYTHON:-python3}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# 70 MiB of records (a store smaller than 64 MiB cannot tell an HDD from an SSD: a disk's own
# cache holds it), and a tiny one
"$PY" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/big', 450, frames=500); f.make_store('$t/tiny', 8, frames=100)" ||
  { echo "FAIL: fixture"; exit 1; }
summary() { "$PY" -c 'import json, sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1]) if "\"summary\"" in l][0]))' "$1"; }
field() { "$PY" -c 'import json, sys; v = json.loads(open(sys.argv[1]).read())
for k in sys.argv[2:]: v = v[k]
print(json.dumps(v) if not isinstance(v, str) else v)' "$@"; }

# a step of 10^6 ms: one batch in 1000 s is enough, any disk keeps up
"$bin" -q --json -p random -s cold -b 8 --duration 1 --step-ms 1000000 "$t/big" >"$t/j1" 2>"$t/err" ||
  fail "long step: exit $?: $(cat "$t/err")"
summary "$t/j1" >"$t/s1"
[ "$(field "$t/s1" keeps_up)" = true ] && [ "$(field "$t/s1" gpus)" = 1 ] &&
  [ "$(field "$t/s1" need_batches_per_s)" = 0.001 ] || fail "long step: $(cat "$t/s1")"
# (on tmpfs, where nothing can be evicted, the quoted pass says it was not cold)
grep -qE "keeps up with 1 GPU at a 1e\+06 ms step: it delivers [0-9.]* batches/s of 8 \(random order, cold, 1 thread(, but not cold: [0-9.]+% of data.mdb was resident)?\) where 0.0/s are needed" "$t/s1" ||
  fail "long step verdict: $(field "$t/s1" verdict)"

# 65536 GPUs at a step of 1 us need 6.5e10 batches/s: no disk keeps up, and the verdict says
# which step would
"$bin" -q -p random -s cold -b 8 --duration 1 --gpus 65536 --step-ms 0.001 "$t/big" >"$t/out" 2>"$t/err" ||
  fail "short step: exit $?: $(cat "$t/err")"
grep -qE "^verdict: $t/big is too slow for 65536 GPUs at a 0.001 ms step: it delivers [0-9.]+ batches/s of 8 \(random order, cold, 1 thread(, but not cold: [0-9.]+% of data.mdb was resident)?\) where 65536000000.0/s are needed \(steps of [0-9.]+ ms or more keep up\)" "$t/out" ||
  fail "short step verdict: $(grep verdict "$t/out")"
[ "$(grep -c '^verdict: ' "$t/out")" = 1 ] || fail "not one verdict line: $(cat "$t/out")"
# ... and when the warm passes are short too ("from the page cache ... still short"), copying the
# cache to RAM is no remedy: it was recommended all the same ("copy the cache to RAM (e.g. cp -r
# to /dev/shm) ..."). The recommendation quotes the verdict's warm rate. Without a warm pass
# nothing says RAM is short, and copying to RAM is still recommended.
"$bin" -q --no-probe -p random -b 8 --duration 1 --gpus 65536 --step-ms 0.001 "$t/tiny" >"$t/out" 2>"$t/err" ||
  fail "short step, warm too: exit $?: $(cat "$t/err")"
w=$(sed -nE 's/^verdict: .* from the page cache \(data.mdb fits in RAM: the second epoch on\) ([0-9.]+)\/s, still short; .*/\1/p' "$t/out")
[ -n "$w" ] || fail "short step, warm too: verdict: $(grep verdict "$t/out")"
grep -qF "recommendation: copying the cache to RAM would not be enough: read from the page cache it delivers $w batches/s where 65536000000.0/s are needed; the reading itself is the limit: more prefetch threads (compare -t 1,2,4) or a longer step" "$t/out" ||
  fail "short step, warm too: recommendations: $(grep recommendation "$t/out")"
grep -q '^recommendation: copy the cache to RAM' "$t/out" && fail "short step, warm too: RAM recommended: $(cat "$t/out")"
"$bin" -q --no-probe -p random -s cold -b 8 --duration 1 --gpus 65536 --step-ms 0.001 "$t/tiny" >"$t/out" 2>"$t/err" ||
  fail "short step, cold only: exit $?: $(cat "$t/err")"
grep -q '^recommendation: copy the cache to RAM (e.g. cp -r to /dev/shm) or let the page cache keep it after the first epoch: ' "$t/out" ||
  fail "short step, cold only: recommendations: $(grep recommendation "$t/out")"

# HDD-like or SSD-like follows from the probe's numbers: single random reads >= 3x slower than
# sequential and >= 2 ms each is a disk that seeks; on tmpfs there is no disk and no probe
"$PY" - "$t/s1" "$(stat -f -c %T "$t")" >"$t/why" <<'PY' || fail "disk behaviour: $(cat "$t/why")"
import json, sys
s = json.load(open(sys.argv[1]))
fs = sys.argv[2]
if fs in ("tmpfs", "ramfs"):
    ok = s["disk_behaviour"] == "ram" and s["probe"] is None and "in RAM" in s["verdict"]
else:
    p = s["probe"]
    seq, rnd = p["sequential"], p["random"]
    ratio = seq["mb_per_s"] / rnd["mb_per_s"]
    want = "hdd-like" if ratio >= 3 and rnd["record_ms_p50"] >= 2 else "ssd-like"
    ok = (s["disk_behaviour"] == want and seq["records"] > 0 and rnd["records"] > 0
          and abs(s["random_vs_sequential"] - ratio) <= 1e-4 * ratio
          and s["random_record_ms_p50"] == rnd["record_ms_p50"]
          and ("HDD-like" if want == "hdd-like" else "SSD-like") in s["verdict"])
print(s["disk_behaviour"], s["verdict"])
sys.exit(0 if ok else 1)
PY

# --no-probe: not measured, said so; a tiny store: cannot be told
"$bin" -q --json --no-probe -p random -s cold -b 8 --duration 1 "$t/big" >"$t/j2" 2>"$t/err" || fail "--no-probe: exit $?"
summary "$t/j2" >"$t/s2"
if [ "$(stat -f -c %T "$t")" != tmpfs ]; then
  [ "$(field "$t/s2" disk_behaviour)" = unknown ] && [ "$(field "$t/s2" probe)" = null ] &&
    grep -q "HDD or SSD not measured (--no-probe)" "$t/s2" || fail "--no-probe: $(cat "$t/s2")"
  "$bin" -q -p random -s cold -b 4 --duration 1 "$t/tiny" >"$t/out" 2>"$t/err" || fail "tiny: exit $?"
  grep -q "HDD or SSD cannot be told on a store of 0.[0-9] MB (a disk's own cache holds that much): bench one of at least 64 MiB" "$t/out" ||
    fail "tiny store: $(grep verdict "$t/out")"
  # --direct: the cold pass the verdict quotes read with O_DIRECT, not through the map as the
  # loader reads; the verdict said "random order, cold, 1 thread" as for an mmap pass
  "$bin" -q --no-probe --direct -p random -s cold -b 4 --duration 1 "$t/tiny" >"$t/out" 2>"$t/err"; rc=$?
  if ! grep -q "data.mdb cannot be opened with O_DIRECT" "$t/err"; then
    [ $rc = 0 ] || fail "--direct: exit $rc: $(cat "$t/err")"
    grep -qE "^verdict: $t/tiny keeps up with 1 GPU at a 50 ms step: it delivers [0-9.]+ batches/s of 4 \(random order, cold, O_DIRECT, 1 thread\) where " "$t/out" ||
      fail "--direct verdict: $(grep verdict "$t/out")"
  fi
fi

# a store of fewer records than a batch (one huge record): the loader's batches hold what the
# store has, so the verdict's rate is of batches of that many, and says so. It quoted "batches/s
# of 32", records/s divided by 32 — a rate of batches no pass read and no training run gets —
# and called a store that delivers 100+ batches a second too slow for a 50 ms step.
"$PY" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/one', 1, frames=20000)" ||
  fail "fixture: one record"
"$bin" -q --json --no-probe -p random -s cold -b 32 --duration 1 "$t/one" >"$t/j3" 2>"$t/err" || fail "one record: exit $?: $(cat "$t/err")"
summary "$t/j3" >"$t/s3"
"$PY" - "$t/j3" "$t/s3" <<'PY' || fail "one record: $(cat "$t/s3")"
import json, sys
passes = [json.loads(l) for l in open(sys.argv[1]) if '"pass"' in l]
s = json.load(open(sys.argv[2]))
ref = [p for p in passes if p["pattern"] == "random" and p["cache_state"] == "cold" and p["batch"] == 32][0]
assert s["batch"] == 32 and s["batch_records"] == 1, s
assert abs(s["batches_per_s"] - ref["records_per_s"]) <= 1e-4 * ref["records_per_s"], (s, ref)
assert " batches/s of 1 (random order, cold, 1 thread" in s["verdict"], s["verdict"]
assert "; all the store's 1 record: a batch of 32 holds no more)" in s["verdict"], s["verdict"]
assert "of 32 (" not in s["verdict"], s["verdict"]
PY
"$bin" -q --no-probe -p random -s cold -b 32 --duration 1 "$t/tiny" >"$t/out" 2>"$t/err" || fail "tiny, -b 32: exit $?"
grep -qE "^verdict: $t/tiny .* batches/s of 8 \(random order, cold, 1 thread(, but not cold: [0-9.]+% of data.mdb was resident)?; all the store's 8 records: a batch of 32 holds no more\) where " "$t/out" ||
  fail "tiny, -b 32: $(grep verdict "$t/out")"

# usage
out=$("$bin" --gpus 0 "$t/big" 2>&1); rc=$?
[ $rc = 2 ] && [ "$out" = "cache-bench: invalid value '0' for --gpus (want an integer in 1..65536)
Try 'cache-bench --help' for more information." ] || fail "--gpus 0: exit $rc: $out"

[ $fails = 0 ] && echo "ok: $(cat "$t/why")" && exit 0
exit 1
