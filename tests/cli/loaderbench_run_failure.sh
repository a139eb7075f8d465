#!/usr/bin/env bash
# loader-bench's exit status for a run that fails while running — memory that runs out part-way
# (FC_FAULT=alloc:N: the N-th allocation of the library fails), in the loader's batches or before
# — is 1, a run-time failure, as for every tool; 2 stays for what the options or the stores got
# wrong before anything ran (a config the store does not hold). It was 2 for any error of a run:
# a Makefile that retries on 1 and stops on 2 ("fix the command") took an out-of-memory run for
# a wrong command line.
set -u
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
B=$FC_BIN
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for i in 1 2 3 4 5 6 7 8; do
  sox -n -r 22050 -b 16 "a$i.wav" synth 0.3 sine $((100 * i + 100)) || { echo "FAIL: sox failed"; exit 1; }
done
"$B/featurize" -q --device cpu -o st a*.wav || fail "featurize"
"$B/loader-bench" -q -b 2 -w 0 --steps 8 st >/dev/null 2>err || fail "the run without a fault: $(cat err)"

# every allocation failed in turn: each run that says it ran out of memory exits 1, never 2
oom=0 begun=0
for n in $(seq 1 120); do
  FC_FAULT=alloc:$n "$B/loader-bench" -q -b 2 -w 0 --steps 8 st >out 2>err
  rc=$?
  grep -qi 'cannot allocate memory\|out of memory' err || continue
  oom=$((oom + 1))
  grep -q 'done: [1-9][0-9]* of 8 steps' err && begun=$((begun + 1))
  [ $rc = 1 ] || fail "FC_FAULT=alloc:$n: exit $rc, want 1 (a run-time failure): $(cat err)"
done
[ $oom -ge 3 ] || fail "only $oom runs ran out of memory: the fault site moved?"
[ $begun -ge 1 ] || fail "no run ran out of memory after its first step: the fault site moved?"

# a configuration error is still 2, nothing run
"$B/loader-bench" -q --features whisper st >out 2>err
rc=$?
[ $rc = 2 ] || fail "--features whisper: exit $rc, want 2: $(cat err)"
grep -q "no mel config named 'whisper' in the store" err || fail "--features whisper: $(cat err)"

[ $fails = 0 ] || exit 1
echo "loaderbench_run_failure: ok ($oom runs out of memory, $begun after their first step)"
