#!/bin/bash
# cache-verify over stores that overlap (a store beside one of its shards, or shards made twice
# over: the same ids with the same entries, which the loader serves once): the dataset line and
# --json's "entries" count the dataset's ids, each once. They summed the stores' entries, 18
# audio entries for a dataset of 12 utterances.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
shard_stores c 2 || exit 1
"$FC_BIN/featurize" -q -o all --manifest c/metadata.csv &&
  "$FC_BIN/tokenize" -q --build-vocab -o all c/metadata.csv || exit 1
"$FC_BIN/cache-verify" --manifest c/metadata.csv all s0 >out 2>err; check "all + s0" 0 $?
grep -q '^dataset of 2 stores: 0 errors; 12 audio, 12 text entries; ' out ||
  { echo "FAIL the dataset line of all + s0 (12 ids)"; cat out; fail=1; }
"$FC_BIN/cache-verify" --json all s0 s1 >out 2>err; check "all + s0 + s1 --json" 0 $?
"$PY" -c 'import json, sys
d = [json.loads(l) for l in open("out")][-1]
assert d["entries"] == {"audio": 12, "text": 12}, d["entries"]' || { echo "FAIL --json entries"; cat out; fail=1; }
# disjoint shards: their sum, as before
"$FC_BIN/cache-verify" s0 s1 >out 2>err; check "s0 + s1" 0 $?
grep -q '^dataset of 2 stores: 0 errors; 12 audio, 12 text entries; ' out ||
  { echo "FAIL the dataset line of s0 + s1"; cat out; fail=1; }
exit $fail
