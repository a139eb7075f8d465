#!/usr/bin/env bash
# scripts/bench-gpu's parts that need no GPU, on a tiny corpus: the corpus maker (files, list,
# reused on a second run), the CPU rows (default flags --reps times with each run's figure, the
# --writers sweep, -j 1) with their stage split, featurize's own wall time and bound from
# featurize --json, the table and the CPU path's scaling line; and its parity step
# (benchlib.parity) on CPU-made stores: f16 against f32, a split store against a plain one, and a
# store of other values, which it must call different. Without a GPU the full benchmark exits 2
# saying so; with one, that part is the benchmark itself (not run here: it takes minutes).
set -u
PY=${FC_PYTHON:-python3}
missing=$("$PY" -c 'import importlib.util as u; print(" ".join(m for m in ("numpy", "scipy") if not u.find_spec(m)))' 2>&1)
[ -z "$missing" ] || { echo "skip: $PY lacks $missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
export FC_PYTHON=$PY

"$FC_SRC/scripts/bench-gpu" --cpu-only --hours 0.01 --work "$tmp/w" --writers 2 --reps 3 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "--cpu-only: exit $rc: $(cat "$tmp/err")"
n=$(wc -l <"$tmp/w/wavs/list")
[ "$n" -ge 4 ] || fail "corpus: $n files in the list"
"$PY" - "$tmp/w/wavs/list" <<'PY' || fail "corpus files"
import sys, wave
total = 0
for p in open(sys.argv[1]).read().split():
    with wave.open(p) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 22050), p
        total += w.getnframes() / 22050
assert 36 <= total <= 36 + 12, total  # at least 0.01 h, and less than one file more
PY
ncpu=$(nproc)
grep -q '^| run | wall s | realtime factor | GPU busy % | stage split (busy s) | bound |$' "$tmp/out" ||
  fail "no table header: $(cat "$tmp/out")"
split='setup [0-9.]+, read [0-9.]+, hash [0-9.]+, decode [0-9.]+, (staging [0-9.]+, )?compute [0-9.]+, write [0-9.]+; waits: workers on the writers [0-9.]+, on the device [0-9.]+, writers [0-9.]+'
check_row() { # label (a regex), -j and writers in its split
  grep -qE "^\| featurize --device cpu $1 \| [0-9.]+ \| [0-9,]+x \| - \| $split; -j $2, $3 writers; featurize's own wall [0-9.]+ s \| [a-zA-Z-]+-bound \|$" "$tmp/out" ||
    fail "no row '$1': $(cat "$tmp/out")"
}
check_row '\(default flags\) \(median of 3: [0-9,]+x / [0-9,]+x / [0-9,]+x\)' "$ncpu" '[0-9]+'
check_row "-j $ncpu --writers 2" "$ncpu" 2
check_row '-j 1' 1 1
grep -qE "^- --device cpu default / -j 1: [0-9.,]+ \(target >= 12: (met|NOT met)\)$" "$tmp/out" ||
  fail "no scaling line: $(cat "$tmp/out")"
grep -q "device cuda" "$tmp/out" && fail "--cpu-only ran a GPU row: $(cat "$tmp/out")"
# the corpus is reused, not remade
"$FC_SRC/scripts/bench-gpu" --cpu-only --hours 0.01 --work "$tmp/w" >/dev/null 2>"$tmp/err2" || fail "second run"
grep -q "making" "$tmp/err2" && fail "the corpus was made again"

# the parity step on stores made here: the same audio as f32, f16, a split f32 store, and f32
# with other mel bands' edges (other values, the same frame counts)
FZ=$FC_BIN/featurize
list=$tmp/w/wavs/list
"$FZ" -q --device cpu -o "$tmp/s32" --manifest "$list" &&
  "$FZ" -q --device cpu --dtype f16 -o "$tmp/s16" --manifest "$list" &&
  "$FZ" -q --device cpu --writers 2 -o "$tmp/split" --manifest "$list" &&
  "$FZ" -q --device cpu --fmin 40 -o "$tmp/other" --manifest "$list" || fail "featurize the parity stores"
export FEATCACHE_LIBRARY=${FEATCACHE_LIBRARY:-$FC_BIN/libfeatcache.so.0}
"$PY" - "$FC_SRC/scripts" "$tmp" "$(wc -l <"$list")" <<'PY' >"$tmp/parity" 2>&1 ||
  fail "parity: $(cat "$tmp/parity")"
import re, sys
sys.path.insert(0, sys.argv[1])
from benchlib.parity import compare_stores
t, n = sys.argv[2], int(sys.argv[3])
def check(other, dt, want):
    line = compare_stores(f"{t}/s32", f"{t}/{other}", dt)
    assert line.startswith(want + ":"), (other, dt, line)
    assert re.match(rf"{want}: {n} records, utterances and frame counts identical, max error ", line), line
    return line
print(check("s16", "f16", "same"))
print(check("split", "f32", "same"))
print(check("other", "f32", "DIFFERENT"))
assert " 0.0e+00 (worst" in check("split", "f32", "same"), "a split store's copy is not exact"
PY

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  "$FC_SRC/scripts/bench-gpu" --hours 0.01 --work "$tmp/w" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 2 ] && grep -q "^bench-gpu: no GPU here" "$tmp/err" && [ ! -s "$tmp/out" ] ||
    fail "without a GPU: exit $rc, stderr $(cat "$tmp/err")"
fi
if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
