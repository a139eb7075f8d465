#!/bin/bash
# Many shards at once under the usual soft limit of 1024 open files: 600 stores (copies of one
# small store) read together by cache-merge, cache-verify and cache-bench. Each open store holds
# file descriptors, so 600 of them pass 1024; the tools raise the soft limit as far as the stores
# need (never past the hard limit), where they failed with "Too many open files" (exit 2), though
# docs/scale-out.md sends thousands of shards to cache-merge.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 4000 ] ||
  { echo "skip: the hard limit of open files ($(ulimit -Hn)) is below what 600 stores need"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 3 || exit 1
"$FC_BIN/featurize" -q -j1 -o one --manifest c/metadata.csv || exit 1
mkdir shards
for k in $(seq 0 599); do cp -r one shards/s$k; done
ulimit -Sn 1024
"$FC_BIN/cache-merge" -q -o m shards/s*/ >out 2>err; check merge 0 $?
same_store one m >same.txt || { echo "FAIL the merge of 600 copies differs from one"; cat same.txt; fail=1; }
"$FC_BIN/cache-verify" -q shards/s*/ >out 2>err; check verify 0 $?
"$FC_BIN/cache-bench" -p sequential -s warm shards/s*/ >out 2>err; check bench 0 $?
exit $fail
