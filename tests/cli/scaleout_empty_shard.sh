#!/bin/bash
# Shards read without merging (docs/scale-out.md), one of them empty: a shard that no id of the
# manifest hashes to (featurize --shard K/N over a short manifest makes an empty store), or a part
# of a split store that no id is routed to. cache-verify and cache-bench take such a store as an
# empty shard; the loader (loader-bench, the Python Loader) must too, where it refused the whole
# dataset ("STORE: the store holds no mel config"). Stores that are all empty are still refused.
# loader-bench --compare takes its audio source's config from the dataset too. loader-bench names
# the store a loader message is about once (it put the first store's name
# before a message about another: "loader-bench: s1: t2: its mel config is ...").
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 1 || exit 1
for k in 0 1; do "$FC_BIN/featurize" -q --shard $k/2 -o s$k --manifest c/metadata.csv || exit 1; done
"$FC_BIN/featurize" -q --writers 2 -o sp --manifest c/metadata.csv || exit 1
full=$("$PY" -c 'import sys, lmdb
for p in sys.argv[1:]:
    e = lmdb.open(p, readonly=True, lock=False, max_dbs=8)
    with e.begin() as t:
        if t.stat(e.open_db(b"audio", txn=t, create=False))["entries"]: print(p)' s0 s1 sp/part-0 sp/part-1)
[ "$(echo "$full" | wc -l)" = 2 ] || { echo "FAIL: want one full shard and one full part: $full"; exit 1; }
"$FC_BIN/cache-verify" -q s0 s1 >out 2>&1 || { echo "FAIL cache-verify s0 s1"; cat out; fail=1; }
for set in "s0 s1" "s1 s0" "sp"; do
  # shellcheck disable=SC2086 # the stores' words
  "$FC_BIN/loader-bench" -q --json --steps 1 --batch 4 --compute-ms 0 $set >out 2>err
  check "loader-bench $set" 0 $?
  grep -q '"utterances":1,' out || { echo "FAIL loader-bench $set: want 1 utterance"; cat out err; fail=1; }
  # shellcheck disable=SC2086
  "$PY" -c 'import sys, featcache
l = featcache.Loader(sys.argv[1:], batch_size=4)
n = sum(len(b.ids) for b in l)
sys.exit(0 if n == 1 else print("got", n, "utterances"))' $set >out 2>err || { echo "FAIL Loader($set)"; cat out err; fail=1; }
done
# no store holds anything: refused, as one empty store is
empty0=$(for s in s0 s1; do echo "$full" | grep -qx $s || echo $s; done)
"$FC_BIN/featurize" -q -o e2 </dev/null || exit 1
"$FC_BIN/loader-bench" -q --steps 1 "$empty0" e2 >out 2>err; check "loader-bench, two empty stores" 2 $?
grep -q "^loader-bench: .*$empty0: the store holds no mel config: no features were stored in it yet (a featurize still running on it stores its config with its first commit: wait for it to finish)$" err || { echo "FAIL two empty stores: message"; cat err; fail=1; }
# loader-bench --compare takes the audio source's config from the dataset, as the loader
# resolves it, not from the first store given (an empty shard holds none)
full0=$(echo "$full" | head -1)
"$FC_BIN/loader-bench" -q --compare --manifest c/metadata.csv --steps 1 --batch 1 --compute-ms 0 \
  "$empty0" "$full0" >out 2>err
check "loader-bench --compare, the empty shard first" 0 $?
# a loader message about another store than the first names that store once, not after the first
"$FC_BIN/featurize" -q --preset tacotron2 -o t2 --manifest c/metadata.csv || exit 1
"$FC_BIN/loader-bench" -q --steps 1 "$full0" t2 >out 2>err; check "loader-bench, two configs" 2 $?
grep -q "^loader-bench: t2: its mel config is " err || { echo "FAIL two configs: message"; cat err; fail=1; }
exit $fail
