#!/bin/bash
# cache-verify over the shards of one dataset with the configs the training run reads named
# (--expect-preset, --expect-config, --expect-tokens=NAME): the stores need hold those in every
# store with entries, not the same others. One shard that also holds a config featurized for an
# experiment (kaldi over shard 0 only) failed the check before training ('dataset: error: meta:
# s1 lacks the mel config ... that s0 holds', exit 1) though the loader's features="hifigan"
# reads every id, and the same stores merged into one pass `cache-verify --expect-preset hifigan`.
# Unnamed, every config is still held to it; and configs that answer to a named one still are
# (two 'chars' token configs, one per shard: tokens="chars" would not say which).
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
V="$FC_BIN/cache-verify"
make_corpus c 12 || exit 1
shard_stores c 2 || exit 1
"$FC_BIN/featurize" -q --preset kaldi --shard 0/2 -o s0 --manifest c/metadata.csv || exit 1
kaldi=$("$FC_BIN/cache-config" --json s0 | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["name"] == "kaldi"))')
hifigan=$("$FC_BIN/cache-config" --json s0 | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["name"] == "hifigan"))')

# the configs the run reads, named: one sound dataset
for exp in "--expect-preset hifigan" "--expect-config $hifigan" "--expect-preset hifigan --expect-tokens=chars"; do
  # shellcheck disable=SC2086 # the options' words
  "$V" --manifest c/metadata.csv $exp s0 s1 >out 2>err; check "$exp" 0 $?
  grep -q "lacks the mel config" out && { echo "FAIL $exp: a config said missing"; cat out; fail=1; }
  [ "$(tail -n 1 err)" = "cache-verify: done: 2 of 2 stores clean; one sound dataset" ] ||
    { echo "FAIL $exp: stderr"; cat err; fail=1; }
done
# as the merged store passes
"$FC_BIN/cache-merge" -q -o m s0 s1 2>/dev/null || { echo "FAIL: merge"; fail=1; }
"$V" -q --manifest c/metadata.csv --expect-preset hifigan m >out 2>&1; check "merged" 0 $?

# nothing named: every config is held to it, kaldi too
"$V" -q --manifest c/metadata.csv s0 s1 >out 2>err; check "unnamed" 1 $?
grep -qx "dataset: error: meta: s1 lacks the mel config $kaldi that s0 holds: the stores cannot be read as one dataset with it" out ||
  { echo "FAIL unnamed: want kaldi said"; cat out; fail=1; }
# and the dataset's line counts the configs in every store: hifigan, not kaldi (it said 2 mel)
grep -q "^dataset of 2 stores: 1 error; 12 audio, 12 text entries; 1 mel, 1 token configs in every store; " out ||
  { echo "FAIL unnamed: the dataset's line"; cat out; fail=1; }
# kaldi named: s1 lacks it (its own check says so)
"$V" -q --expect-preset kaldi s0 s1 >out 2>err; check "kaldi" 1 $?
grep -q "^s1: error: meta cfg/$kaldi: config mismatch: expected preset kaldi" out ||
  { echo "FAIL kaldi: want s1's mismatch"; cat out; fail=1; }

# two 'chars' token configs, one in each shard (s1 tokenized again with --case fold, its first
# config dropped): each store answers to --expect-tokens=chars, the dataset does not
"$FC_BIN/cache-config" -q --drop chars s1 && "$FC_BIN/tokenize" -q --build-vocab --case fold --shard 1/2 -o s1 c/metadata.csv ||
  { echo "FAIL: s1's other vocabulary"; exit 1; }
"$V" -q --expect-preset hifigan --expect-tokens=chars s0 s1 >out 2>err; check "chars apart" 1 $?
grep -q "^dataset: error: meta: s1 lacks the tokens config [0-9a-f]\{32\} that s0 holds: " out ||
  { echo "FAIL chars apart: want the token configs said"; cat out; fail=1; }
exit $fail
