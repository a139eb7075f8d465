#!/usr/bin/env bash
# featurize's stage accounting (docs/featurize.md "Stage accounting"): --json carries busy seconds
# per stage (setup, read, hash, decode, staging, compute, write; thread CPU time), the waits on each side of the queue
# (the workers' split by what they waited on: the writer, or a GPU's staging chunk on the device), the
# workers and the bound; -v prints the same as one line. Checked: every field present and >= 0;
# worker stages within workers x wall, the writer's within wall; the bound is the one the
# documented rule gives for these numbers; -v and --json agree; a rerun (all skipped) does no
# decode or compute; counts add up (processed + skipped + failed + not_started = total);
# cpu_computed is every record of a CPU run, none of a rerun.
# Inputs made with Python's standard library only, so this runs on a GPU machine too.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

"$PY" - <<'PY' || exit 1
import math, struct, wave
for k in range(12):
    with wave.open(f"u{k:02d}.wav", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        n = 11025 + 2000 * k
        w.writeframes(b"".join(struct.pack("<h", int(6000 * math.sin(2 * math.pi * (200 + 30 * k) * i / 22050)))
                               for i in range(n)))
open("bad.wav", "w").write("not audio\n")
PY

"$FZ" -v --json -j 2 --device cpu -o st u*.wav bad.wav >out 2>err
rc=$?
[ $rc = 1 ] || { echo "FAIL first run: exit $rc (want 1: one bad input): $(cat err)"; exit 1; }
"$FZ" -v --json -j 2 --device cpu -o st u*.wav >out2 2>err2 ||
  { echo "FAIL rerun: exit $?: $(cat err2)"; exit 1; }

"$PY" - out err out2 <<'PY'
import json, re, sys
fails = 0
def fail(msg):
    global fails
    fails += 1
    print("FAIL", msg)

def bound(j):  # the rule of docs/featurize.md, restated
    s, w = j["stages"], j["workers"]
    pool = s["read"] + s["hash"] + s["decode"] + s["staging"] + s["compute"]
    run = j["wall_seconds"] - s["setup"]
    if pool + s["write"] <= 0 or w == 0:
        return "idle"
    if s["setup"] > run:
        return "start-up-bound"
    wt = j["waits"]
    ring = j["device"].startswith("cuda")  # the staging ring: what held the workers' waits
    if ring:
        held = wt["workers_on_writer"] + wt["workers_on_device"]
        if held > pool - s["compute"]:
            return "GPU-bound" if wt["workers_on_device"] * 2 > held else "write-bound"
    elif s["write"] / max(j["writers"], 1) >= pool / w:
        return "write-bound"
    order = ["read", "hash", "decode", "staging"] + ([] if ring else ["compute"])
    name = max(order, key=lambda k: (s[k], -order.index(k)))
    return {"compute": "GPU-bound" if j["device"].startswith("cuda") else "compute-bound"}.get(name, name + "-bound")

for path in (sys.argv[1], sys.argv[3]):
    j = json.load(open(path))
    for k in ("processed", "skipped_existing", "failed", "not_started", "total", "cpu_computed",
              "stages", "waits", "workers", "bound", "wall_seconds", "fell_back_to_cpu"):
        if k not in j:
            fail(f"{path}: no {k}")
    if fails:
        sys.exit(1)
    if j["fell_back_to_cpu"] is not False:  # a CPU job never falls back
        fail(f"{path}: fell_back_to_cpu {j['fell_back_to_cpu']!r}, want false")
    if j["processed"] + j["skipped_existing"] + j["failed"] + j["not_started"] != j["total"]:
        fail(f"{path}: counts do not add up: {j}")
    st, wt = j["stages"], j["waits"]
    if sorted(st) != ["compute", "decode", "hash", "read", "setup", "staging", "write"]:
        fail(f"{path}: stages {sorted(st)}")
    if sorted(wt) != ["workers_on_device", "workers_on_writer", "writer_on_workers"]:
        fail(f"{path}: waits {sorted(wt)}")
    if not j["device"].startswith("cuda") and wt["workers_on_device"] != 0:
        fail(f"{path}: waits on a device on the CPU: {wt}")
    if any(v < 0 for v in list(st.values()) + list(wt.values())):
        fail(f"{path}: a negative time: {st} {wt}")
    pool = st["read"] + st["hash"] + st["decode"] + st["staging"] + st["compute"] + wt["workers_on_writer"] + wt["workers_on_device"]
    wall = j["wall_seconds"]
    if pool > j["workers"] * wall + 0.01:
        fail(f"{path}: worker stages {pool:.4f} s exceed {j['workers']} x {wall:.4f} s")
    if st["write"] + wt["writer_on_workers"] > wall + 0.01 or st["setup"] > wall + 0.01:
        fail(f"{path}: writer or setup beyond the wall time: {st} {wt} {wall}")
    if j["bound"] != bound(j):
        fail(f"{path}: bound {j['bound']}, the rule gives {bound(j)} for {st}")

first, rerun = json.load(open(sys.argv[1])), json.load(open(sys.argv[3]))
if (first["processed"], first["failed"], first["workers"]) != (12, 1, 2):
    fail(f"first run: {first}")
if first["stages"]["compute"] <= 0 or first["stages"]["decode"] <= 0 or first["stages"]["write"] <= 0:
    fail(f"first run: no compute/decode/write time: {first['stages']}")
if first["stages"]["staging"] != 0:
    fail(f"first run (the CPU): staging time: {first['stages']}")
if first["cpu_computed"] != 12:  # the CPU computed every record of a CPU run
    fail(f"first run: cpu_computed {first['cpu_computed']}, want 12")
if rerun["skipped_existing"] != 12 or rerun["stages"]["decode"] != 0 or rerun["stages"]["compute"] != 0 \
        or rerun["cpu_computed"] != 0:
    fail(f"rerun (all stored): decoded or computed: {rerun}")
line = [l for l in open(sys.argv[2]) if l.startswith("featurize: stages ")]
if len(line) != 1:
    fail(f"-v: {len(line)} stages lines")
else:
    m = re.search(r"start-up ([\d.]+), read ([\d.]+), hash ([\d.]+), decode ([\d.]+), staging ([\d.]+), compute ([\d.]+), "
                  r"write ([\d.]+); waits \(s\): workers on the writer ([\d.]+), workers on the device ([\d.]+), "
                  r"writer on the workers ([\d.]+); (\d+) workers?, (\d+) writers?, ([\d.]+) s wall: (\S+)$", line[0])
    if not m:
        fail(f"-v line: {line[0]!r}")
    else:
        got = [float(x) for x in m.groups()[:10]]
        want = [first["stages"][k] for k in ("setup", "read", "hash", "decode", "staging", "compute", "write")] + \
               [first["waits"][k] for k in ("workers_on_writer", "workers_on_device", "writer_on_workers")]
        if any(abs(a - b) > 0.0006 for a, b in zip(got, want)) or m.group(14) != first["bound"] \
                or int(m.group(12)) != first["writers"] or first["writers"] != 1:
            fail(f"-v and --json disagree: {line[0]!r} vs {first}")
print("stages:", first["stages"], first["waits"], first["bound"])
sys.exit(1 if fails else 0)
PY
