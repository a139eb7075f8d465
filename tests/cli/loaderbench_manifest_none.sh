#!/bin/bash
# loader-bench --manifest with the cache source, when none of the manifest's utterances is in the
# stores (a manifest of another corpus, or of ids the stores were not made for): it said
# 'loader-bench: st: no utterances with features in the store' of a store that holds plenty,
# naming neither the manifest nor why; with several stores, 'no utterances with features in the
# store' with no name at all. The manifest is named now, and how many of its utterances are in
# none of the stores (exit 2, nothing run). Some of them in the stores: those are read (exit 0).
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
"$FC_BIN/featurize" -q -o st --manifest c/metadata.csv || exit 1
for k in 0 1; do "$FC_BIN/featurize" -q --shard $k/2 -o s$k --manifest c/metadata.csv || exit 1; done
printf 'XX001-0001|a|a\nXX001-0002|b|b\n' >other.csv
lb() { "$FC_BIN/loader-bench" -q --steps 1 --batch 2 --compute-ms 0 "$@" >out 2>err; }
lb --manifest other.csv st; check "other corpus, one store" 2 $?
[ "$(cat err)" = "loader-bench: other.csv: none of its 2 utterances has features in the store st" ] ||
  { echo "FAIL one store: stderr: $(cat err)"; fail=1; }
[ -s out ] && { echo "FAIL one store: stdout: $(cat out)"; fail=1; }
lb --manifest other.csv s0 s1; check "other corpus, two shards" 2 $?
[ "$(cat err)" = "loader-bench: other.csv: none of its 2 utterances has features in any of the 2 stores" ] ||
  { echo "FAIL two shards: stderr: $(cat err)"; fail=1; }
# one of the manifest's utterances in the store: it is read
head -1 c/metadata.csv >>other.csv
lb --json --manifest other.csv st; check "one utterance known" 0 $?
grep -q '"utterances":1,' out || { echo "FAIL one utterance known: $(cat out)"; fail=1; }
exit $fail
