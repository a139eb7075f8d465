#!/usr/bin/env bash
# A bulk load (tokenize's first run of several batches into an empty store) commits its records,
# then its text entries, batch by batch at its end. When a commit of that merge fails (a full disk;
# here FC_FAULT=commit:n for n = 1, 2, ... until the run succeeds), the lines whose text entries
# were committed before are stored — cache-verify counts them, a rerun skips them — and the summary
# must say so: it used to count every line as failed ("40 lines not stored after the failure",
# "done: 0 of 40") whatever the merge had committed. After each failed run: exit 1, `done: N of 40`
# with N the text entries in the store, new + already stored = N, failed = 40 - N, the same in
# --json, tokens only when N > 0, and cache-verify passes; the rerun completes. Skipped (77) in a
# build without the fault countdowns.
set -uo pipefail
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for i in $(seq 10 49); do echo "u$i|Line number $i, said $((i % 7)) times.|"; done >m.csv

partial=0
for n in $(seq 1 40); do
  rm -rf st log
  FC_FAULT_LOG=$PWD/log FC_FAULT=commit:$n "$FC_BIN/tokenize" --json --build-vocab --batch 8 \
    --manifest m.csv -o st >out 2>err
  rc=$?
  if [ ! -s log ]; then # nothing injected: the run went through
    [ $rc = 0 ] || fail "commit:$n: nothing injected, exit $rc: $(cat err)"
    break
  fi
  [ $rc = 1 ] || { fail "commit:$n: exit $rc, want 1: $(cat err)"; continue; }
  v=$("$FC_BIN/cache-verify" --json st 2>/dev/null)
  [ -d st ] && [ -s st/data.mdb ] && { grep -q '"ok":true' <<<"$v" || fail "commit:$n: cache-verify: ${v:0:400}"; }
  stored=$(sed -n 's/.*"entries":{"audio":[0-9]*,"text":\([0-9]*\),.*/\1/p' <<<"$v")
  stored=${stored:-0}
  line=$(grep '^tokenize: done:' err)
  read -r ok total new old failed tokens < <(sed -n 's/^tokenize: done: \([0-9]*\) of \([0-9]*\) (\([0-9]*\) new, \([0-9]*\) already stored, \([0-9]*\) failed, \([0-9]*\) tokens).*/\1 \2 \3 \4 \5 \6/p' <<<"$line")
  [ "${ok:-}" = "$stored" ] && [ "$total" = 40 ] && [ $((new + old)) = "$stored" ] &&
    [ "$failed" = $((40 - stored)) ] || fail "commit:$n: $stored lines stored, the summary says: $line"
  { [ "$stored" = 0 ] && [ "$tokens" = 0 ]; } || { [ "$stored" -gt 0 ] && [ "$tokens" -gt 0 ]; } ||
    fail "commit:$n: $stored lines stored, $tokens tokens: $line"
  if [ "$stored" != 40 ] && ! grep -qx "tokenize: $((40 - stored)) lines not stored after the failure, counted as failed" err; then
    fail "commit:$n: $stored lines stored: $(cat err)"
  fi
  "$FC_PYTHON" - "$stored" out <<'PY' || fail "commit:$n: --json: $(cat out)"
import json, sys
j = json.load(open(sys.argv[2]))
n = int(sys.argv[1])
assert j["processed"] + j["skipped_existing"] == n and j["failed"] == 40 - n and j["lines"] == 40, j
PY
  [ "$stored" -gt 0 ] && [ "$stored" -lt 40 ] && partial=$((partial + 1))
  out=$("$FC_BIN/tokenize" --build-vocab --batch 8 --manifest m.csv -o st 2>&1) ||
    fail "commit:$n: the rerun: $out"
  grep -q "^tokenize: done: 40 of 40 ([0-9]* new, [0-9]* already stored, 0 failed" <<<"$out" ||
    fail "commit:$n: the rerun: $out"
  "$FC_BIN/cache-verify" -q st >/dev/null 2>&1 || fail "commit:$n: cache-verify after the rerun"
done
[ "$partial" -ge 2 ] || fail "only $partial failed runs stored some lines and not all (the merge's entry batches were not reached)"
[ $fails = 0 ] && echo "ok: a bulk load whose merge failed counts the lines it committed ($partial runs stored part of them)"
[ $fails = 0 ]
