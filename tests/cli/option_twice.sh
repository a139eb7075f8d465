#!/usr/bin/env bash
# An option that names a run's one input given twice with two values (`--manifest train.csv
# --manifest dev.csv`, a script's option and then the user's): the last one counted, as for a
# setting, and the first was left out without a word, exit 0: featurize, tokenize, cache-verify and
# loader-bench read only dev.csv, and cache-prune removed every utterance only train.csv names.
# Now a usage error naming both, nothing done (exit 2); the same value twice is one run. Likewise
# cache-config --drop A --drop B (it dropped B alone, or said "nothing to drop" of B, exit 0).
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
B=${FC_BIN:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
"$B/featurize" -q --device cpu -o s --manifest c/metadata.csv || exit 1
"$B/tokenize" -q --build-vocab -o s c/metadata.csv || exit 1
head -3 c/metadata.csv >c/train.csv
tail -3 c/metadata.csv >c/dev.csv
try() { echo "Try '$1 --help' for more information."; }
# usage TOOL ARGS...: exit 2, stderr the message, nothing on stdout
usage() {
  local tool=$1
  shift
  "$B/$tool" "$@" >out 2>err
  check "$tool $*" 2 $?
  [ -s out ] && { echo "FAIL $tool $*: stdout: $(cat out)"; fail=1; }
}
want() { [ "$(cat err)" = "$1" ] || { echo "FAIL stderr:"; cat err; echo "want:"; echo "$1"; fail=1; }; }
two="--manifest given twice (c/train.csv, then c/dev.csv): one manifest per run: run once for\
 each, or give one file that names them all"

cp -r s p
usage cache-prune --manifest c/train.csv --manifest c/dev.csv p
want "cache-prune: --manifest given twice (c/train.csv, then c/dev.csv): one manifest per run, and\
 the utterances it lacks are removed: give one file that names every utterance to keep (cat them\
 into one)
$(try cache-prune)"
"$B/cache-verify" p >out 2>err || { echo "FAIL cache-verify p"; cat out err; fail=1; }
grep -q "; 6 audio, 6 text entries;" out || { echo "FAIL cache-prune removed utterances:"; cat out; fail=1; }
"$B/cache-prune" -q --manifest c/train.csv --manifest=c/train.csv p >out 2>err
check "cache-prune, the same manifest twice" 0 $?
"$B/cache-verify" p >out 2>err
grep -q "; 3 audio, 3 text entries;" out || { echo "FAIL cache-prune --manifest A --manifest=A:"; cat out err; fail=1; }

usage featurize --device cpu -o f --manifest c/train.csv --manifest c/dev.csv
want "featurize: $two
$(try featurize)"
[ -e f ] && { echo "FAIL featurize made its store"; fail=1; }
usage tokenize --build-vocab -o t --manifest c/train.csv --manifest=c/dev.csv
want "tokenize: $two
$(try tokenize)"
[ -e t ] && { echo "FAIL tokenize made its store"; fail=1; }
usage cache-verify --manifest c/train.csv --manifest c/dev.csv s
want "cache-verify: $two
$(try cache-verify)"
usage loader-bench --steps 1 --manifest c/train.csv --audio c/dev.csv s
want "loader-bench: $two
$(try loader-bench)"
"$B/cache-verify" --manifest c/dev.csv --manifest c/dev.csv s >out 2>err
check "cache-verify, the same manifest twice" 0 $?

cp -r s d
usage cache-config --drop chars --drop hifigan d
want "cache-config: --drop given twice (chars, then hifigan): one config per run: run --drop once\
 for each
$(try cache-config)"
"$B/cache-config" d >out 2>err
[ "$(grep -c '  tokens  \|  mel  ' out)" = 2 ] || { echo "FAIL cache-config dropped a config:"; cat out; fail=1; }
exit $fail
