#!/bin/bash
# A tool started with stdin, stdout or stderr closed (`<&-`, `>&-`, `2>&-`, a job runner's closed
# descriptors): the store's files must not take their numbers. Before each tool opened /dev/null
# in their place, a featurize with stdout and stderr closed got data.mdb as fd 2, and its message
# about one bad input was written over the store's meta pages: every record stored before was lost.
# Now the run goes on as with them open (exit 1 for the bad input), the store stays sound, and a
# lost report is still exit 1.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 4 || exit 1
w=c/wavs
"$FC_BIN/featurize" -q --device cpu --writers 1 -o s $w/LJ001-0001.wav $w/LJ001-0002.wav || exit 1
printf 'RIFFjunk' > bad.wav
sound() { # name, what cache-verify's line must hold
  "$FC_BIN/cache-verify" s >out 2>err || { echo "FAIL $1: cache-verify exit $?"; cat out err; fail=1; }
  grep -q -- "$2" out || { echo "FAIL $1: want '$2' in"; cat out; fail=1; }
}
"$FC_BIN/featurize" --device cpu --writers 1 -o s bad.wav $w/LJ001-0003.wav >&- 2>&-
rc=$?; [ $rc = 1 ] || { echo "FAIL featurize >&- 2>&-: exit $rc, want 1 (one bad input)"; fail=1; }
sound featurize "1 recorded failure; 3 records"
"$FC_BIN/featurize" --device cpu --writers 1 -o s bad.wav $w/LJ001-0004.wav 2>&-
rc=$?; [ $rc = 1 ] || { echo "FAIL featurize 2>&-: exit $rc, want 1"; fail=1; }
sound "featurize 2>&-" "1 recorded failure; 4 records"
{ cat c/metadata.csv; echo 'LJ009-0009|only two columns'; echo 'no separator'; } > m.csv
"$FC_BIN/tokenize" --build-vocab -o s m.csv >&- 2>&-
rc=$?; [ $rc = 1 ] || { echo "FAIL tokenize >&- 2>&-: exit $rc, want 1 (a bad line)"; fail=1; }
sound tokenize "5 text entries; 1 mel, 1 token configs"
"$FC_BIN/featurize" --device cpu -o s - <&- >out 2>err
rc=$?; [ $rc = 0 ] || { echo "FAIL featurize - <&-: exit $rc, want 0 (no paths)"; cat out err; fail=1; }
grep -qx "featurize: nothing to do: (stdin) holds no paths" err || { echo "FAIL featurize - <&-: read paths from somewhere"; cat err; fail=1; }
sound "featurize <&-" "4 audio, 5 text entries"
"$FC_BIN/cache-verify" --json s >&-
rc=$?; [ $rc = 1 ] || { echo "FAIL cache-verify --json >&-: exit $rc, want 1 (report lost)"; fail=1; }
"$FC_BIN/cache-merge" -q -o m s >&- 2>&-
rc=$?; [ $rc = 0 ] || { echo "FAIL cache-merge >&- 2>&-: exit $rc"; fail=1; }
"$FC_BIN/cache-verify" m >/dev/null || { echo "FAIL the merged store is not sound"; fail=1; }
sound "the readers" "4 audio, 5 text entries"
exit $fail
