#!/bin/bash
# loader-bench on a whisper store: the silence of a whisper config depends on each utterance's
# maximum, so the loader wants a pad value for padded batches, and loader-bench failed with the
# library's 'give pad_value' — an option it did not have: no whisper store could be benched
# (cache source, --compare) but with --views. --pad-value V gives it (the timing does not depend
# on it); without it the message says what to give. It applies to the cache source's padded
# batches only: beside --views or another source it is a usage error.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
"$FC_BIN/featurize" -q --preset whisper -o wh --manifest c/metadata.csv || exit 1
lb() { "$FC_BIN/loader-bench" -q --steps 2 --batch 2 --compute-ms 0 "$@" >out 2>err; }
try="Try 'loader-bench --help' for more information."
lb wh; check "whisper store, no --pad-value" 2 $?
[ "$(cat err)" = "loader-bench: wh: pad_value: the silence of a whisper config ((max(x, max - 8) + 4) / 4) depends on each utterance's maximum: give --pad-value V (what your training pads with; the timing does not depend on it), or --views" ] ||
  { echo "FAIL no --pad-value: stderr: $(cat err)"; fail=1; }
lb --json --pad-value -1.5 wh; check "whisper store, --pad-value -1.5" 0 $?
grep -q '"steps":2,' out || { echo "FAIL --pad-value: $(cat out)"; fail=1; }
lb --compare --manifest c/metadata.csv --pad-value 0 wh; check "--compare, --pad-value 0" 0 $?
lb --pad-value 0 --views wh; check "--pad-value --views" 2 $?
[ "$(cat err)" = "loader-bench: --pad-value applies to padded batches: --views yields none
$try" ] || { echo "FAIL --views: stderr: $(cat err)"; fail=1; }
lb --pad-value 0 --source synthetic; check "--pad-value synthetic" 2 $?
[ "$(cat err)" = "loader-bench: --pad-value applies to the cache source only
$try" ] || { echo "FAIL synthetic: stderr: $(cat err)"; fail=1; }
lb --pad-value nan wh; check "--pad-value nan" 2 $?
exit $fail
