#!/usr/bin/env bash
# A failed commit in one writer of a split store (featurize --writers 3): the n-th commit of the
# job fails (FC_FAULT=commit:n; the first 3 create the parts' meta part). The run exits 1 (inputs
# not stored, each named, and a done line) or 2 (the store could not be opened, said why), every
# part that exists passes cache-verify, and a clean rerun completes the split store. Each failure
# must have been injected (FC_FAULT_LOG says so): a build without the countdowns skips (77), and one
# whose countdown never fires fails, never passes having tested nothing.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$B/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$PY" - <<'PY' || { echo "FAIL: cannot make the test audio (numpy, soundfile: scripts/setup)"; exit 1; }
import numpy as np, soundfile as sf
rng = np.random.default_rng(11)
for i in range(61):
    n = int(rng.integers(6615, 44100))
    t = np.arange(n) / 22050
    x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * t) + 0.05 * rng.standard_normal(n)
    sf.write(f"u{i:03d}.wav", x.astype(np.float32), 22050, subtype="PCM_16")
PY
ls u*.wav >list

for n in 1 2 3 4 5 6; do
  rm -rf fs
  : >log
  FC_FAULT_LOG=$PWD/log FC_FAULT=commit:$n "$B/featurize" --device cpu -j 2 --writers 3 -o fs - <list >out 2>err
  rc=$?
  case $rc in
  1) grep -q '^featurize: done: [0-9]* of 61 ([0-9]* new, [0-9]* already stored, [0-9]* failed)' err &&
    grep -q 'not stored: a write to the store failed' err ||
    fail "commit:$n: exit 1 without the lines: $(head -3 err)" ;;
  2) grep -q 'fs/part-[0-2]: meta part: ' err || fail "commit:$n: exit 2 without a reason: $(cat err)" ;;
  *) fail "commit:$n: exit $rc: $(head -3 err)" ;;
  esac
  grep -qx "commit:$n" log || fail "commit:$n: no failure was injected (exit $rc)"
  for d in fs/part-*; do
    [ -e "$d/data.mdb" ] || continue
    "$B/cache-verify" -q "$d" >/dev/null 2>&1 || fail "commit:$n: $d fails cache-verify"
  done
  "$B/featurize" -q --device cpu -j 2 --writers 3 -o fs - <list 2>err || fail "commit:$n: rerun: $(cat err)"
  "$B/cache-verify" -q fs >/dev/null 2>&1 || fail "commit:$n: the completed split store fails cache-verify"
done

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
