#!/bin/bash
# cache-verify --expect-preset / --expect-tokens=NAME over the stores of one dataset, one of which
# is empty: a shard no manifest id hashes to (featurize/tokenize --shard K/N over a short
# manifest: a dev set run by the training set's job array), or a split store's part no id was
# routed to. Such a store holds no entries and so no config, and needs none (cache-verify(1), "Several
# stores": the stores with audio entries hold the same mel configs); the check before training,
# `cache-verify --manifest M --expect-preset hifigan shards/s*/ && python train.py`, failed it with
# 'config mismatch: expected preset hifigan ... is not in the store; stored mel configs: none'
# (exit 1) where the same command without --expect-preset passed. A store alone is no dataset: an
# empty one checked by itself still fails the expectation, and a dataset store with entries that
# lacks the expected config still does. The same for a store of features beside one of tokens.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
V="$FC_BIN/cache-verify"
make_corpus c 1 || exit 1
shard_stores c 2 || exit 1
"$FC_BIN/featurize" -q --writers 2 -o sp --manifest c/metadata.csv &&
  "$FC_BIN/tokenize" -q --build-vocab -o sp c/metadata.csv || exit 1
empty=$(for s in s0 s1; do [ "$("$FC_BIN/cache-config" --no-count "$s" | head -1)" = "$s: 0 configs" ] && echo $s; done)
full=$(for s in s0 s1; do [ "$s" = "$empty" ] || echo $s; done)
[ -n "$empty" ] && [ -n "$full" ] || { echo "FAIL: want one empty shard and one full one: '$empty' '$full'"; exit 1; }
hifigan=$("$FC_BIN/cache-config" --json "$full" | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["name"] == "hifigan"))')

# the shards, and the split store's parts, as one dataset: clean
for exp in "--expect-preset hifigan" "--expect-config $hifigan" "--expect-preset hifigan --expect-tokens=chars"; do
  for set in "s0 s1" "sp"; do
    # shellcheck disable=SC2086 # the options' and the stores' words
    "$V" --manifest c/metadata.csv $exp $set >out 2>err; check "$exp $set" 0 $?
    grep -q "config mismatch" out && { echo "FAIL $exp $set: a config mismatch"; cat out; fail=1; }
    [ "$(tail -n 1 err)" = "cache-verify: done: 2 of 2 stores clean; one sound dataset" ] ||
      { echo "FAIL $exp $set: stderr"; cat err; fail=1; }
  done
done
"$V" -q --json --expect-preset hifigan s0 s1 >out 2>err; check "json" 0 $?
"$PY" -c 'import json
objs = [json.loads(l) for l in open("out")]
assert len(objs) == 3 and all(o["ok"] for o in objs), objs' || { echo "FAIL json"; cat out; fail=1; }

# a split store's part is one of a dataset however it is checked: under --separate (each part
# against its share of the manifest), or the empty part alone
emptypart=$(for p in sp/part-0 sp/part-1; do [ "$("$FC_BIN/cache-config" --no-count "$p" | head -1)" = "$p: 0 configs" ] && echo $p; done)
[ -n "$emptypart" ] || { echo "FAIL: want an empty part"; exit 1; }
for set in "--separate sp" "$emptypart"; do
  # shellcheck disable=SC2086 # the options' and the stores' words
  "$V" --manifest c/metadata.csv --expect-preset hifigan --expect-tokens=chars $set >out 2>err
  check "parts: $set" 0 $?
  grep -q "config mismatch" out && { echo "FAIL parts: $set: a config mismatch"; cat out; fail=1; }
done
# features and tokens in two stores read as one dataset: the one without text entries needs no
# token config, the one without audio entries no mel config
"$FC_BIN/featurize" -q -o mel --manifest c/metadata.csv && "$FC_BIN/tokenize" -q --build-vocab -o tok c/metadata.csv || exit 1
"$V" --manifest c/metadata.csv --expect-preset hifigan --expect-tokens=chars mel tok >out 2>err
check "mel tok" 0 $?
grep -q "config mismatch" out && { echo "FAIL mel tok: a config mismatch"; cat out; fail=1; }
# a store alone is no dataset: the empty shard by itself fails the expectation
"$V" -q --expect-preset hifigan "$empty" >out 2>err; check "the empty shard alone" 1 $?
grep -q "^$empty: error: meta cfg/$hifigan: config mismatch: expected preset hifigan (config $hifigan) is not in the store; stored mel configs: none$" out ||
  { echo "FAIL the empty shard alone: report"; cat out; fail=1; }
# a config the full shard lacks is its finding, not the empty shard's
"$V" -q --expect-preset tacotron2 s0 s1 >out 2>err; check "tacotron2" 1 $?
[ "$(grep -c "config mismatch: expected preset tacotron2" out)" = 1 ] &&
  grep -q "^$full: error: meta cfg/[0-9a-f]*: config mismatch: expected preset tacotron2 " out ||
  { echo "FAIL tacotron2: want one mismatch, the full shard's"; cat out; fail=1; }
"$V" -q --expect-tokens=phonemes s0 s1 >out 2>err; check "phonemes" 1 $?
[ "$(grep -c "config mismatch: expected token config phonemes" out)" = 1 ] &&
  grep -q "^$full: error: meta: config mismatch: expected token config phonemes " out ||
  { echo "FAIL phonemes: want one mismatch, the full shard's"; cat out; fail=1; }
exit $fail
