#!/usr/bin/env bash
# A failed commit fails every input computed but not committed (a batch of 32 here, and whatever
# the ring held): the first 10 are named a line each, the rest in one line ("N more inputs not
# stored after the failed write"), where each had its own line before (dozens of lines of one
# cause on a full disk); -v names each; --json's failures list them all. The failure must have
# been injected (FC_FAULT_LOG): a build without the countdowns skips (77).
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
rng = np.random.default_rng(12)
for i in range(70):
    sf.write(f"u{i:03d}.wav", (rng.standard_normal(1200) * 3000).astype(np.int16), 22050)
PY

# the count of the inputs a failed write lost, from --json's failures; then what stderr said
for v in "" -v; do
  rm -rf st
  : >log
  FC_FAULT_LOG=$PWD/log FC_FAULT=commit:1 "$B/featurize" --device cpu -j 2 --batch 32 $v --json \
    -o st u*.wav >out 2>err
  rc=$?
  [ $rc = 1 ] || fail "${v:-default}: exit $rc, want 1: $(tail -3 err)"
  grep -qx "commit:1" log || fail "${v:-default}: no failure was injected"
  lost=$("$PY" -c 'import json, sys
d = json.load(open("out"))
print(sum(f["reason"].startswith("not stored: a write to the store failed (") for f in d["failures"]))') ||
    fail "${v:-default}: --json: $(head -c 300 out)"
  [ "${lost:-0}" -gt 10 ] || fail "${v:-default}: $lost inputs lost to the failed write: this tests nothing"
  named=$(grep -c '^featurize: u0[0-9][0-9]\.wav: not stored: a write to the store failed (Input/output error)$' err)
  if [ -z "$v" ]; then
    [ "$named" = 10 ] || fail "default: $named inputs named, want the first 10 of $lost: $(head -3 err)"
    grep -qx "featurize: $((lost - 10)) more inputs not stored after the failed write (-v names each)" err ||
      fail "default: no line for the other $((lost - 10)): $(grep -v 'not stored: a write' err)"
  else
    [ "$named" = "$lost" ] || fail "-v: $named inputs named, want all $lost"
    grep -q 'more inputs not stored' err && fail "-v: a 'more' line beside every input named: $(grep more err)"
  fi
  grep -q '^featurize: st: cannot write to the store: Input/output error' err ||
    fail "${v:-default}: the store's line: $(grep -v 'not stored: a write' err)"
done

[ $fails = 0 ] && echo "ok: a failed write's lost inputs: the first 10 named, the rest counted" && exit 0
exit 1
