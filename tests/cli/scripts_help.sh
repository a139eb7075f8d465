#!/usr/bin/env bash
# The Python scripts in scripts/ that do not re-run themselves under the project's venv (the
# benchmarks do: benchlib's project_python) answer --help with any python3 — crash-trials and
# powercut_fs.py among them: usage on stdout, exit 0, nothing on stderr. The modules they need for
# their work (numpy, lmdb, a FUSE binding, the featcache package) are imported after the options
# are parsed. Run here with `python -S` (no site-packages: none of those modules importable).
# crash-trials' own usage errors (an empty or unknown --tools item, a count below 1) are said
# before any work, exit 2.
set -u
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
fails=0 seen=0
for f in "$FC_SRC"/scripts/*; do
  [ -f "$f" ] && head -1 "$f" | grep -q '^#!.*python' && ! grep -q project_python "$f" || continue
  seen=$((seen + 1))
  "$FC_PYTHON" -S "$f" --help >"$t/out" 2>"$t/err"; rc=$?
  if [ $rc != 0 ] || [ -s "$t/err" ] || [ ! -s "$t/out" ]; then
    echo "FAIL ${f#"$FC_SRC"/} --help without site-packages: exit $rc: $(tail -1 "$t/err")"
    fails=$((fails + 1))
  fi
done
# a list option with an empty item or an unknown name is a usage error (exit 2), said before any
# work, not skipped: crash-trials --tools featurize,,tokenize
for tools in "featurize,,tokenize" "featurize," "" "featurise"; do
  "$FC_PYTHON" -S "$FC_SRC/scripts/crash-trials" --tools "$tools" --bin "$t/none" >"$t/out" 2>"$t/err"; rc=$?
  if [ $rc != 2 ] || ! grep -q "^crash-trials: error: argument --tools: " "$t/err" || [ -s "$t/out" ]; then
    echo "FAIL crash-trials --tools '$tools': exit $rc (want 2): $(tail -1 "$t/err")"
    fails=$((fails + 1))
  fi
done
# a count of 0 (or not a count) is a usage error too: --trials 0 would pass having tried nothing
for a in "--trials 0" "--files -1" "--batch x"; do
  # shellcheck disable=SC2086 # the option and its value
  "$FC_PYTHON" -S "$FC_SRC/scripts/crash-trials" $a --bin "$t/none" >"$t/out" 2>"$t/err"; rc=$?
  if [ $rc != 2 ] || ! grep -q "^crash-trials: error: argument ${a%% *}: invalid value '${a#* }' (want an integer >= 1)$" "$t/err"; then
    echo "FAIL crash-trials $a: exit $rc (want 2): $(tail -1 "$t/err")"
    fails=$((fails + 1))
  fi
done
[ $seen -ge 3 ] || { echo "FAIL only $seen scripts found (crash-trials, powercut_fs.py, ctest-missing at least)"; fails=1; }
exit $((fails > 0))
