#!/usr/bin/env bash
# scripts/ctest-missing (gpu-check's reading of its ctest log) on a log of ctest -j written here:
# the results and the next tests' starts interleave, a failed test's output runs up to the next
# result, "Start" or summary line — not into the tests after it —; a failure for a missing command
# or Python module is "not run here, needs WHAT" (the last test before the summary too), any other
# failure is real (an assertion, a timeout with no output, a module named only in another test's
# output), a skipped test is neither; a log with nothing failed gives "REAL 0"; usage errors exit 2.
set -u
PY=${FC_PYTHON:-python3}
CM=$FC_SRC/scripts/ctest-missing
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

cat >"$tmp/log" <<'LOG'
Test project /src/featcache/build-gpu
      Start  4: unit/test_cuda_api
      Start 54: cli/featurize_failures
      Start 60: cli/featurize_split
 1/7 Test  #4: unit/test_cuda_api ...................   Passed    0.14 sec
 2/7 Test #54: cli/featurize_failures ...............***Failed    0.01 sec
/src/featcache/tests/cli/featurize_failures.sh: line 26: espeak-ng: command not found
FAIL: espeak-ng failed
 3/7 Test #60: cli/featurize_split ..................***Failed    0.49 sec
Traceback (most recent call last):
ModuleNotFoundError: No module named 'soundfile'
      Start 61: cli/featurize_stages
 4/7 Test #61: cli/featurize_stages .................***Failed    0.40 sec
FAIL: stage split: compute 0 on a GPU run
 5/7 Test #53: cli/featurize_crash ..................***Skipped   0.09 sec
 6/7 Test #62: cli/featurize_hang ...................***Timeout 300.01 sec
 7/7 Test #56: cli/featurize_interrupt ..............***Failed   25.22 sec
ModuleNotFoundError: No module named 'lmdb'
FAIL: SIGINT: the first 10 inputs were not committed

29% tests passed, 5 tests failed out of 7

The following tests did not run:
	 53 - cli/featurize_crash (Skipped)

The following tests FAILED:
	 54 - cli/featurize_failures (Failed)                   cli
	 60 - cli/featurize_split (Failed)                      cli
	 61 - cli/featurize_stages (Failed)                     cli
	 62 - cli/featurize_hang (Timeout)                      cli
	 56 - cli/featurize_interrupt (Failed)                  cli
Errors while running CTest
LOG
"$PY" "$CM" "$tmp/log" >"$tmp/out" 2>"$tmp/err" || fail "exit $?: $(cat "$tmp/err")"
cat >"$tmp/want" <<'OUT'
cli/featurize_failures: not run here, needs espeak-ng
cli/featurize_split: not run here, needs soundfile
cli/featurize_interrupt: not run here, needs lmdb
REAL 2 cli/featurize_stages cli/featurize_hang
OUT
diff "$tmp/want" "$tmp/out" >/dev/null || fail "the log read otherwise: $(diff "$tmp/want" "$tmp/out")"

# a real failure whose output comes after a missing module's, with no Start line between
sed -n '1,3p' "$tmp/log" >"$tmp/log2"
cat >>"$tmp/log2" <<'LOG'
 1/2 Test #60: cli/featurize_split ..................***Failed    0.49 sec
ModuleNotFoundError: No module named 'soundfile'
 2/2 Test #54: cli/featurize_failures ...............***Failed    0.01 sec
FAIL: a record differs

0% tests passed, 2 tests failed out of 2

The following tests FAILED:
	 60 - cli/featurize_split (Failed)                      cli
	 54 - cli/featurize_failures (Failed)                   cli
LOG
out=$("$PY" "$CM" "$tmp/log2")
[ "$out" = "cli/featurize_split: not run here, needs soundfile
REAL 1 cli/featurize_failures" ] || fail "a block ran into the next test's: $out"

printf 'Test project x\n 1/1 Test #1: unit/a ... Passed 0.1 sec\n\n100%% tests passed, 0 tests failed out of 1\n' >"$tmp/ok"
out=$("$PY" "$CM" "$tmp/ok")
[ "$out" = "REAL 0" ] || fail "nothing failed: $out"

"$PY" "$CM" >/dev/null 2>&1
[ $? = 2 ] || fail "no log: not a usage error"
"$PY" "$CM" "$tmp/none" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "ctest-missing: $tmp/none: No such file or directory" "$tmp/err" ||
  fail "a missing log: $(cat "$tmp/err")"
"$PY" "$CM" --help | grep -q "^ctest-missing — which failed tests" || fail "--help"
[ $fails = 0 ] && echo "ctest_missing: ok"
exit $((fails > 0))
