#!/bin/bash
# loader-bench over the shards of one featurize --shard run: one missing, or one shard in two
# stores (a rerun into another directory), is refused as the loader refuses it (exit 2, the
# missing shard named, the way out said); --partial benches the set as it is; the whole set runs.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
for k in 0 1 2; do "$FC_BIN/featurize" -q --shard $k/3 -o s$k --manifest c/metadata.csv || exit 1; done
lb() { "$FC_BIN/loader-bench" -q --json --steps 1 --batch 2 --compute-ms 0 "$@" >out 2>err; }
lb s0 s2; check "loader-bench s0 s2" 2 $?
# the set's problem, not the first store's: no store name in front of it
grep -q "^loader-bench: incomplete set of shards: of 3 shards, 2 given: shard 1 missing .*loader-bench --partial)$" err ||
  { echo "FAIL s0 s2: message"; cat err; fail=1; }
lb --partial s0 s2; check "loader-bench --partial s0 s2" 0 $?
cp -r s1 s1-again
lb s0 s1 s2 s1-again; check "loader-bench with a shard twice" 2 $?
grep -q "^loader-bench: s1-again: holds shard 1/3, as s1 does" err || { echo "FAIL shard twice: message"; cat err; fail=1; }
lb --partial s0 s1 s2 s1-again; check "loader-bench --partial with a shard twice" 0 $?
lb s0 s1 s2; check "loader-bench, the whole set" 0 $?
grep -q '"utterances":' out || { echo "FAIL whole set: no summary"; cat out err; fail=1; }
exit $fail
