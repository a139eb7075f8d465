#!/usr/bin/env bash
# featurize's default writers (docs/featurize.md "Several writers", fc_featurize_default_writers):
# a small job makes a plain store whatever -j; a large one (here: --gpu-min-seconds 0, every job is
# large) on the CPU gets one writer per four workers (-j 8: a split store of 2 parts, -j 2: plain);
# a store that exists keeps its layout (a plain store stays plain under -j 8, a split one is written
# as its parts); --writers given always wins. The GPU's rule (one per two workers, at least 2) is
# checked through the library call, which needs no GPU.
# Inputs made with Python's standard library only, so this runs on a GPU machine too.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$PY" - <<'PY' || exit 1
import math, struct, wave
for k in range(6):
    with wave.open(f"u{k}.wav", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes(b"".join(struct.pack("<h", int(5000 * math.sin(2 * math.pi * (180 + 25 * k) * i / 22050)))
                               for i in range(8000 + 1000 * k)))
PY
ls u*.wav >list

writers() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["writers"])' "$1"; }
layout() { # "split N" or "plain"
  if [ -f "$1/featcache-split" ]; then echo "split $(cut -d' ' -f2 "$1/featcache-split")"; elif [ -f "$1/data.mdb" ]; then echo plain; else echo none; fi
}
run() { # name, then featurize's options; --json into name.json
  local name=$1
  shift
  "$FZ" -q --json --device cpu "$@" -o "$name" - <list >"$name.json" 2>"$name.err" ||
    fail "$name: exit $?: $(cat "$name.err")"
}

run small -j 8
[ "$(layout small)" = plain ] && [ "$(writers small.json)" = 1 ] ||
  fail "a small job at -j 8: $(layout small), $(writers small.json) writers (want plain, 1)"
run large8 -j 8 --gpu-min-seconds 0
[ "$(layout large8)" = "split 2" ] && [ "$(writers large8.json)" = 2 ] ||
  fail "a large job at -j 8: $(layout large8), $(writers large8.json) writers (want split 2)"
run large2 -j 2 --gpu-min-seconds 0
[ "$(layout large2)" = plain ] || fail "a large job at -j 2: $(layout large2) (want plain)"
run small -j 8 --gpu-min-seconds 0 # the plain store exists: it stays plain
[ "$(layout small)" = plain ] && [ "$(writers small.json)" = 1 ] ||
  fail "an existing plain store under a large job's default: $(layout small)"
run large8 -j 16 --gpu-min-seconds 0 # the split store exists: written as its 2 parts
[ "$(layout large8)" = "split 2" ] && [ "$(writers large8.json)" = 2 ] ||
  fail "an existing split store: $(layout large8), $(writers large8.json) writers"
run given -j 8 --gpu-min-seconds 0 --writers 3
[ "$(layout given)" = "split 3" ] || fail "--writers 3: $(layout given)"

# -j's default is the CPUs this process may run on (taskset, a Slurm job's or a container's cpuset),
# as nproc counts them: a 4-CPU Slurm task on a 128-CPU node ran 128 workers (and, for a large job,
# a split store of 8 parts), the machine's online CPUs
workers() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["workers"])' "$1"; }
command -v taskset >/dev/null || fail "taskset missing (util-linux)"
cpu0=$(taskset -p $$ | awk '{print $NF}' | "$PY" -c 'import sys; m = int(sys.stdin.read(), 16); print((m & -m).bit_length() - 1)')
taskset -c "$cpu0" "$FZ" --device cpu --json -o cpus1 u0.wav >cpus1.json 2>err ||
  fail "one CPU: exit $?: $(cat err)"
[ "$(workers cpus1.json)" = 1 ] || fail "taskset -c $cpu0: $(workers cpus1.json) workers, want 1"
"$FZ" --device cpu --json -o cpus u0.wav >cpus.json 2>err || fail "every CPU: exit $?: $(cat err)"
[ "$(workers cpus.json)" = "$(nproc)" ] || fail "$(workers cpus.json) workers, want nproc's $(nproc)"

# The rule itself, GPU included, through the library (no GPU needed to ask).
"$PY" - "${FC_BIN}/libfeatcache.so.0" "$tmp/u0.wav" <<'PY' || fail "fc_featurize_default_writers"
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
class Dev(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("index", ctypes.c_int)]
f = lib.fc_featurize_default_writers
f.restype = ctypes.c_uint
f.argtypes = [ctypes.POINTER(Dev), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_double]
bad = 0
for kind, table in ((2, {1: 2, 2: 2, 3: 2, 4: 2, 6: 3, 16: 8, 64: 8}), (1, {1: 1, 2: 1, 4: 1, 8: 2, 16: 4, 64: 8})):
    for jobs, want in table.items():
        got = f(ctypes.byref(Dev(kind, 0)), None, 0, jobs, -1.0)  # < 0: any job is large
        if got != want:
            print(f"device {kind}, -j {jobs}: {got} writers, want {want}")
            bad += 1
    if f(ctypes.byref(Dev(kind, 0)), None, 0, 16, 0.0) != 1:  # no inputs: a small job
        print(f"device {kind}: an empty job is not small")
        bad += 1
sys.exit(1 if bad else 0)
PY
if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
