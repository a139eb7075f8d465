#!/usr/bin/env bash
# scripts/bench-host and its harness (scripts/bench-host-harness.c) on a tiny corpus.
#   - the harness, each row over the same 8 files (16-bit mono at the rate, one at 16 kHz and one
#     stereo, which take the float path): every file stored, the figures present and sane; the
#     cpu row's records are featurize --device cpu's, byte for byte; cpu-nomel's hold the fill;
#     staging-null's went through the staging ring (producer 2) with the fill of its device;
#   - the floor row over the 16-bit mono files at the rate: their features' bytes written, exactly
#     the cpu row's payloads for those files; a stereo file refused (exit 1, named);
#   - a 16-bit file read straight into staging costs two reads, the first 4 KiB and the rest
#     (FC_FAULT=read:3, where the build has fault countdowns, is never reached; read:2 is);
#   - staging-null's ring is the CUDA backend's: by default one chunk of 2 Mi samples per worker,
#     4 to 16 (1 and 2 workers: 4, 7: 7, 20: 16), refilled early; FC_CUDA_RING sets it as it sets
#     the CUDA backend's: one chunk of 64 Ki samples (reused many times over) stores the same
#     records, refilled once the device is done with it (no suffix, ":early") or once committed
#     (":late"); a malformed value stops the run naming the variable;
#   - the script: --json gives one object per row with the documented fields, the table mode
#     prints the rows and the four ratios; --floor adds the floor row and its ceiling line; --ring
#     reaches the harness; --sched fifo runs every row's process under SCHED_FIFO (where this
#     test may: root), which the harness's JSON reports, or stops saying why; bad options exit 2.
# No timing is asserted: the figures are the benchmark's (docs/BENCHMARKS.md).
set -u
PY=${FC_PYTHON:-python3}
missing=$("$PY" -c 'import importlib.util as u; print(" ".join(m for m in ("numpy", "scipy") if not u.find_spec(m)))' 2>&1)
[ -z "$missing" ] || { echo "skip: $PY lacks $missing"; exit 77; }
H=${FC_BIN:?}/bench-host-harness
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
export FC_PYTHON=$PY
cd "$tmp" || exit 1

"$PY" - <<'PY' || exit 1
import math, struct, wave
def write(name, rate, ch, n, f):
    with wave.open(name, "wb") as w:
        w.setnchannels(ch); w.setsampwidth(2); w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<" + "h" * ch, *[int(8000 * math.sin(2 * math.pi * (f + 40 * c) * i / rate)) for c in range(ch)])
                               for i in range(n)))
for k in range(6):
    write(f"u{k}.wav", 22050, 1, 4000 + 3001 * k, 150 + 20 * k)
write("r16k.wav", 16000, 1, 9000, 300)
write("st.wav", 22050, 2, 7001, 220)
PY
ls "$tmp"/*.wav >list

for row in cpu cpu-nomel staging-null; do
  "$H" "$row" list "st-$row" 2 0 f32 >"$row.json" 2>"$row.err" || fail "$row: exit $?: $(cat "$row.err")"
done
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  ls "$tmp"/u0.wav >list1 # 16-bit mono at the rate, more than 4 KiB
  FC_FAULT=read:3 "$H" staging-null list1 st-read3 1 0 f32 >read3.json 2>read3.err ||
    fail "a third read of one staged file: $(cat read3.err)"
  FC_FAULT=read:2 "$H" staging-null list1 st-read2 1 0 f32 >/dev/null 2>read2.err &&
    fail "FC_FAULT=read:2 did not fail the staged read of one file"
  grep -q "1 failed" read2.err || fail "FC_FAULT=read:2: $(cat read2.err)"
fi
for j in 1 7 20; do
  "$H" staging-null list "st-j$j" $j 1 f32 >"j$j.json" 2>"j$j.err" || fail "-j $j: exit $?: $(cat "j$j.err")"
done
FC_CUDA_RING=1x64K "$H" staging-null list st-ring1 2 0 f32 >ring1.json 2>ring1.err ||
  fail "FC_CUDA_RING=1x64K: exit $?: $(cat ring1.err)"
FC_CUDA_RING=1x64K:early "$H" staging-null list st-ring1e 2 0 f32 >ring1e.json 2>ring1e.err ||
  fail "FC_CUDA_RING=1x64K:early: exit $?: $(cat ring1e.err)"
FC_CUDA_RING=1x64K:late "$H" staging-null list st-ring1l 2 0 f32 >ring1l.json 2>ring1l.err ||
  fail "FC_CUDA_RING=1x64K:late: exit $?: $(cat ring1l.err)"
FC_CUDA_RING=1x64K:commit "$H" staging-null list st-ring1c 2 0 f32 >ring1c.json 2>ring1c.err ||
  fail "FC_CUDA_RING=1x64K:commit: exit $?: $(cat ring1c.err)"
FC_CUDA_RING=1x64K:late:commit "$H" staging-null list st-ring1lc 2 0 f32 >ring1lc.json \
  2>ring1lc.err || fail "FC_CUDA_RING=1x64K:late:commit: exit $?: $(cat ring1lc.err)"
for bad in 4x 0x4M 17x1M 4x32K 4x4G x4M 4y4M 4x4M:soon 4x4M: 4x4M:early: :early 4x4M:late:early \
           4x4M:commit:early 4x4M:commit:commit 4x4M:commitx :commit; do
  FC_CUDA_RING=$bad "$H" staging-null list "st-bad$bad" 2 0 f32 >/dev/null 2>bad.err &&
    fail "FC_CUDA_RING=$bad: the run went on"
  grep -qF "FC_CUDA_RING '$bad': want CHUNKSxSAMPLES[:early|:late][:commit], 1 to 16 chunks of 64K to 32M samples" bad.err ||
    fail "FC_CUDA_RING=$bad: $(cat bad.err)"
done
"$FC_BIN/featurize" -q --device cpu -j 2 -o st-ref - <list || fail "featurize: exit $?"
ls "$tmp"/u*.wav >list-mono
"$H" floor list-mono st-floor 2 0 f32 >floor.json 2>floor.err || fail "floor: exit $?: $(cat floor.err)"
"$H" cpu list-mono st-mono 2 0 f32 >/dev/null 2>&1 || fail "cpu row over the mono files: exit $?"
"$H" floor list st-floor2 2 0 f32 >/dev/null 2>floor2.err
[ $? = 1 ] && grep -q "floor" floor2.err || fail "floor over a stereo file: not refused: $(cat floor2.err)"
"$H" bogus list st-x 2 0 f32 >/dev/null 2>&1
[ $? = 2 ] || fail "an unknown row: not a usage error"

"$PY" - "$FC_SRC/tests" <<'PY' || fail "harness rows"
import json, struct, sys
sys.path.insert(0, sys.argv[1])
from fc_records import records
bad = 0
def check(ok, msg):
    global bad
    if not ok:
        bad += 1
        print("FAIL", msg)
for row in ("cpu", "cpu-nomel", "staging-null"):
    j = json.load(open(f"{row}.json"))
    check(j["name"] == row and j["utterances"] == 8, f"{row}: {j}")
    for k in ("x_realtime", "host_cpu_s_per_audio_hour", "ctx_switches_per_utt", "wall_seconds",
              "audio_seconds", "user_seconds", "sys_seconds", "cores_busy"):
        check(isinstance(j.get(k), (int, float)) and j[k] >= 0, f"{row}: {k} = {j.get(k)}")
    check(j["sched"] == "other" and j["cpu_computed"] == (8 if row != "staging-null" else j["cpu_computed"]),
          f"{row}: sched {j['sched']}, cpu_computed {j['cpu_computed']}")
    busy = (j["user_seconds"] + j["sys_seconds"]) / j["wall_seconds"]
    slack = 2.1e-4 / j["wall_seconds"] + 1e-3  # user and sys are printed to 1e-4 s
    check(abs(j["cores_busy"] - busy) <= slack, f"{row}: cores_busy {j['cores_busy']}, CPU / wall {busy}")
    check(j["host_cpu_s_per_audio_hour"] > 0 and j["x_realtime"] > 0, f"{row}: {j}")
    for k in ("read", "hash", "decode", "staging", "compute", "write"):
        check(j["stages"].get(k, -1) >= 0, f"{row}: stage {k}: {j['stages']}")
ref, cpu = records("st-ref"), records("st-cpu")
check(ref == cpu and len(ref) == 8, f"cpu row: {len(cpu)} records, equal to featurize's: {ref == cpu}")
fill = struct.pack("<f", -11.5129)
for k, (h, p) in records("st-cpu-nomel").items():
    check(h["producer"] == 1 and p == fill * (len(p) // 4) and k in ref, f"cpu-nomel record {k.hex()}: {h}")
fl = json.load(open("floor.json"))
check(fl["name"] == "floor" and fl["utterances"] == 6 and fl["host_cpu_s_per_audio_hour"] > 0
      and fl["stages"]["read"] >= 0 and fl["stages"]["write"] >= 0, f"floor: {fl}")
import os
want = sum(len(p) for h, p in records("st-mono").values())
got = os.path.getsize("st-floor/floor.data")
check(got == want and want > 0, f"floor wrote {got} bytes, the cpu row's payloads are {want}")
sn = records("st-staging-null")
check(set(sn) == set(ref), "staging-null: other keys than the CPU path's")
for k, (h, p) in sn.items():
    check(h["producer"] == 2 and (h["dim0"], h["dim1"]) == (ref[k][0]["dim0"], ref[k][0]["dim1"])
          and p == b"\x3c" * len(p), f"staging-null record {k.hex()}: {h}")
j, j1 = json.load(open("staging-null.json")), json.load(open("ring1.json"))
check((j["ring_chunks"], j["ring_samples"]) == (4, 2 << 20), f"default ring at -j 2: {j}")
for w, want in ((1, 4), (7, 7), (20, 16)):
    jw = json.load(open(f"j{w}.json"))
    check((jw["ring_chunks"], jw["ring_samples"], jw["ring_refill"]) == (want, 2 << 20, "early")
          and records(f"st-j{w}") == sn, f"default ring at -j {w}: {jw}")
check((j1["ring_chunks"], j1["ring_samples"]) == (1, 64 << 10), f"FC_CUDA_RING=1x64K: {j1}")
check(j1["commits"] >= 2 and records("st-ring1") == sn, f"one 64 Ki chunk: other records ({j1})")
j2, j3 = json.load(open("ring1e.json")), json.load(open("ring1l.json"))
check((j["ring_refill"], j1["ring_refill"], j2["ring_refill"], j3["ring_refill"])
      == ("early", "early", "early", "late")
      and (j2["ring_chunks"], j2["ring_samples"]) == (1, 64 << 10)
      and (j3["ring_chunks"], j3["ring_samples"]) == (1, 64 << 10), f"1x64K:early/:late: {j2} {j3}")
check(j2["commits"] >= 2 and records("st-ring1e") == sn, f"1x64K:early: other records ({j2})")
check(j3["commits"] >= 2 and records("st-ring1l") == sn, f"1x64K:late: other records ({j3})")
# each utterance holds its chunk until its record is made, or with ":commit" until its batch's commit
j4, j5 = json.load(open("ring1c.json")), json.load(open("ring1lc.json"))
check([x["ring_hold"] for x in (j, j1, j2, j3, j4, j5)] == ["record"] * 4 + ["commit"] * 2
      and (j4["ring_refill"], j5["ring_refill"]) == ("early", "late"), f":commit: {j4} {j5}")
check(j4["commits"] >= 2 and records("st-ring1c") == sn, f"1x64K:commit: other records ({j4})")
check(j5["commits"] >= 2 and records("st-ring1lc") == sn, f"1x64K:late:commit: other records ({j5})")
sys.exit(1 if bad else 0)
PY

"$FC_SRC/scripts/bench-host" --hours 0.01 -j 2 --reps 1 --work "$tmp/w" --json >bh.json 2>bh.err ||
  fail "bench-host --json: exit $?: $(cat bh.err)"
"$PY" - <<'PY' || fail "bench-host --json: $(cat bh.json)"
import json
rows = [json.loads(l) for l in open("bh.json")]
assert [r["name"] for r in rows] == ["cpu", "cpu-nomel", "staging-null"], rows
for r in rows:
    for k in ("x_realtime", "host_cpu_s_per_audio_hour", "ctx_switches_per_utt"):
        assert r[k] > 0 or k == "ctx_switches_per_utt", (k, r)
    assert set(r["stages"]) >= {"read", "hash", "decode", "staging", "compute", "write"}, r
PY
grep -q "^- staging-null realtime factor / cpu's: [0-9.]* (target >= 5.0: " bh.err ||
  fail "no ratio lines on stderr: $(cat bh.err)"
grep -q "making" bh.err || fail "the corpus was not made: $(cat bh.err)"
"$FC_SRC/scripts/bench-host" --hours 0.01 -j 2 --reps 1 --work "$tmp/w" >bh.md 2>bh.err2 ||
  fail "bench-host: exit $?: $(cat bh.err2)"
grep -q "making" bh.err2 && fail "the corpus was made again"
grep -q ", ring 4 x 2,097,152 samples, refilled early, held to the record (staging-null), " bh.md ||
  fail "no ring in the header: $(cat bh.md)"
grep -q "round by round" bh.md && fail "a round-by-round line from one round: $(cat bh.md)"
"$FC_SRC/scripts/bench-host" --hours 0.01 -j 2 --reps 2 --work "$tmp/w" --ring 2x1M:early --json >br.json 2>br.err ||
  fail "bench-host --ring 2x1M:early: exit $?: $(cat br.err)"
"$PY" -c 'import json,sys; r=[json.loads(l) for l in open("br.json")][2]; sys.exit((r["ring_chunks"], r["ring_samples"], r["ring_refill"]) != (2, 1 << 20, "early"))' ||
  fail "bench-host --ring 2x1M:early: $(cat br.json)"
grep -qE "^- staging-null realtime factor / cpu's, round by round: [0-9.]+, [0-9.]+ \([0-2] of 2 at 5.0 or more\)$" br.err ||
  fail "no round-by-round ratios from two rounds: $(cat br.err)"
"$FC_SRC/scripts/bench-host" --ring 4by4 >/dev/null 2>&1
[ $? = 2 ] || fail "--ring 4by4: not a usage error"
for row in cpu cpu-nomel staging-null; do
  grep -qE "^\| $row \| [0-9,]+x \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| " bh.md || fail "no row $row: $(cat bh.md)"
done
[ "$(grep -c '^- .*(target ' bh.md)" = 4 ] || fail "not four ratio lines: $(cat bh.md)"
# the realtime ratio taken apart: CPU cost ratio x busy cores ratio, their product the ratio itself
"$PY" - <<'PY' || fail "the ratio taken apart: $(cat bh.md)"
import re
t = open("bh.md").read()
rt = float(re.search(r"^- staging-null realtime factor / cpu's: ([0-9.]+) \(target", t, re.M)[1])
m = re.search(r"^- staging-null realtime factor / cpu's as CPU cost times busy cores: the cpu row's "
              r"CPU per audio hour / staging-null's ([0-9.]+), staging-null's cores busy / the cpu "
              r"row's ([0-9.]+) \(([0-9.]+)\)$", t, re.M)
assert m, "no line"
cost, busy, prod = map(float, m.groups())
# each factor is printed to 2 decimals: its rounding (0.005) times the other is the product's
assert abs(cost * busy - prod) <= 0.005 * (cost + busy) + 0.01 and abs(prod - rt) <= 0.02 * rt + 0.01, \
    (cost, busy, prod, rt)
PY
"$FC_SRC/scripts/bench-host" --hours 0.01 -j 2 --reps 1 --work "$tmp/w" --floor --json >bf.json 2>bf.err ||
  fail "bench-host --floor: exit $?: $(cat bf.err)"
"$PY" -c 'import json,sys; n=[json.loads(l)["name"] for l in open("bf.json")]; sys.exit(n != ["cpu", "cpu-nomel", "staging-null", "floor"])' ||
  fail "bench-host --floor --json rows: $(cat bf.json)"
grep -qE "^- the data's own cost \(floor\): [0-9.]+ CPU s per audio hour, .* which kept [0-9.]+ of 2 cores busy; .* at most [0-9,]+x realtime, [0-9.]+x the cpu row" bf.err ||
  fail "no ceiling line: $(cat bf.err)"
"$FC_SRC/scripts/bench-host" --hours 0.01 -j 2 --reps 1 --work "$tmp/w" --sched fifo --json >bs.json 2>bs.err
rc=$?
if "$PY" -c 'import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))' 2>/dev/null; then
  [ $rc = 0 ] || fail "bench-host --sched fifo: exit $rc: $(cat bs.err)"
  "$PY" -c 'import json,sys; s=[json.loads(l)["sched"] for l in open("bs.json")]; sys.exit(s != ["fifo"] * 3)' ||
    fail "bench-host --sched fifo: rows not under SCHED_FIFO: $(cat bs.json)"
  grep -q ", under SCHED_FIFO, 1 runs each" bs.err || fail "--sched fifo: not in the header: $(cat bs.err)"
else
  [ $rc = 1 ] && grep -q "^bench-host: --sched fifo: cannot run the rows under SCHED_FIFO" bs.err ||
    fail "bench-host --sched fifo without the right: exit $rc: $(cat bs.err)"
fi
"$FC_SRC/scripts/bench-host" --sched idle >/dev/null 2>&1
[ $? = 2 ] || fail "--sched idle: not a usage error"
"$FC_SRC/scripts/bench-host" --dtype f64 >/dev/null 2>&1
[ $? = 2 ] || fail "--dtype f64: not a usage error"
"$FC_SRC/scripts/bench-host" --bogus >/dev/null 2>&1
[ $? = 2 ] || fail "--bogus: not a usage error"
if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
