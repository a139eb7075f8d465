#!/bin/bash
# The Makefile template (scripts/scaleout/Makefile) with make -j2: 4 shard rules and a merge rule
# over a generated corpus; the merged store holds exactly the keys and bytes of one plain featurize
# + tokenize run and passes cache-verify; a second make does nothing; touching the manifest
# redoes the shards and the merge, which find everything stored and leave the store as it was;
# another SHARDS into the same WORK makes its own shards, not the stamps of the first run's;
# a wav.scp manifest with TEXT= (no transcripts) runs featurize alone; a bad transcript line
# (empty text) is within MAX_FAILED for tokenize as a bad file is for featurize, MAX_FAILED=0
# stops the shard that holds it, and a --max-failed in TOKENIZE_OPTS is tokenize's own.
set -u
command -v make >/dev/null || { echo "skip: make not installed"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 60 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest c/metadata.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref c/metadata.csv || exit 1

mk() { make -j2 -f "$FC_SRC/scripts/scaleout/Makefile" MANIFEST=c/metadata.csv SHARDS=4 BIN="$FC_BIN" "$@"; }
mk >out 2>err || { echo "FAIL make"; cat out err; fail=1; }
[ "$(grep -c -- '--shard [0-3]/4' out)" = 8 ] || { echo "FAIL want 4 featurize + 4 tokenize commands"; cat out; fail=1; }
same_store ref cache >same.txt || { echo "FAIL merged store differs from one plain run"; cat same.txt; fail=1; }
"$FC_BIN/cache-verify" -q --strict cache >out 2>&1 || { echo "FAIL cache-verify"; cat out; fail=1; }

mk >out 2>err || { echo "FAIL second make"; cat err; fail=1; }
grep -qE "featurize|tokenize|cache-merge" out && { echo "FAIL the second make ran commands"; cat out; fail=1; }
mk -q || { echo "FAIL make -q: not up to date"; fail=1; }

sleep 1; touch c/metadata.csv
mk >out 2>err || { echo "FAIL make after touch"; cat err; fail=1; }
grep -q "cache-merge" out || { echo "FAIL touching the manifest did not redo the merge"; cat out; fail=1; }
same_store ref cache >same.txt || { echo "FAIL the redone merge changed the store"; cat same.txt; fail=1; }

# another number of shards into the same WORK (a new CACHE): the stamps of the run of 4 do not
# stand for shards of 2, which are made (beside what the stores hold) and merged into the corpus
mk SHARDS=2 CACHE=cache2 >out 2>err || { echo "FAIL make SHARDS=2"; cat out err; fail=1; }
[ "$(grep -c -- '--shard [01]/2' out)" = 4 ] || { echo "FAIL SHARDS=2 after 4: want 2 featurize + 2 tokenize"; cat out; fail=1; }
same_store ref cache2 >same.txt || { echo "FAIL SHARDS=2 after 4: merged store differs from one plain run"; cat same.txt; fail=1; }

# a number of shards that is not one: make stops (2) and says so, nothing made
for n in 0 abc 08 -2; do
  mk SHARDS=$n WORK=bad CACHE=badcache >out 2>err; check "SHARDS='$n'" 2 $?
  grep -q "SHARDS='$n' is not a positive number of shards" err || { echo "FAIL SHARDS='$n': message"; cat err; fail=1; }
  [ -e bad ] || [ -e badcache ] && { echo "FAIL SHARDS='$n' made something"; fail=1; }
done

# a Kaldi wav.scp has no transcripts: TEXT= leaves tokenize out, the rest as one plain featurize
for f in c/wavs/*.wav; do b=${f##*/}; echo "${b%.wav} $T/$f"; done >wav.scp
"$FC_BIN/featurize" -q -j2 -o refscp --manifest wav.scp || exit 1
mk MANIFEST=wav.scp TEXT= WORK=wshards CACHE=wcache >out 2>err || { echo "FAIL make over a wav.scp"; cat out err; fail=1; }
grep -q "tokenize" out && { echo "FAIL TEXT= ran tokenize"; cat out; fail=1; }
same_store refscp wcache >same.txt || { echo "FAIL the wav.scp merge differs from one plain featurize"; cat same.txt; fail=1; }

# a bad transcript: tokenize skips the line and the shard passes (MAX_FAILED, 10% by default, is
# tokenize's --max-failed too); the merge equals one plain run that tolerated it. MAX_FAILED=0: the
# shard of that line fails, and with it the make.
sed '7s/|.*/||/' c/metadata.csv >c/bad.csv
"$FC_BIN/featurize" -q -j2 -o refbad --manifest c/bad.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab --max-failed 1 -o refbad c/bad.csv || exit 1
mk MANIFEST=c/bad.csv WORK=bshards CACHE=bcache >out 2>err || { echo "FAIL make with a bad transcript line"; cat out err; fail=1; }
[ "$(grep -c -- "/tokenize -q -j1 --shard [0-3]/4 --max-failed 10% " out)" = 4 ] ||
  { echo "FAIL tokenize was not given --max-failed"; cat out; fail=1; }
grep -q "^tokenize: done: .*, 1 failed, allowed by --max-failed 10%, " err ||
  { echo "FAIL the bad line's shard does not say it was allowed"; cat err; fail=1; }
grep -q "^tokenize: c/bad.csv:7: " err ||
  { echo "FAIL tokenize -q hid the bad line's reason from make's output"; cat err; fail=1; }
same_store refbad bcache >same.txt || { echo "FAIL the merge with a bad line differs from one plain run"; cat same.txt; fail=1; }
mk MANIFEST=c/bad.csv WORK=zshards CACHE=zcache MAX_FAILED=0 >out 2>err && { echo "FAIL MAX_FAILED=0 passed a bad line"; fail=1; }
grep -q "^tokenize: done: .*, 1 failed, more than --max-failed 0, " err ||
  { echo "FAIL MAX_FAILED=0: the shard does not say why it failed"; cat err; fail=1; }
[ -e zcache ] && { echo "FAIL MAX_FAILED=0: merged anyway"; fail=1; }
# tokenize's own tolerance: a --max-failed in TOKENIZE_OPTS comes after MAX_FAILED's and wins
mk MANIFEST=c/bad.csv WORK=oshards CACHE=ocache MAX_FAILED=0 TOKENIZE_OPTS="--build-vocab --max-failed 1" >out 2>err ||
  { echo "FAIL TOKENIZE_OPTS' --max-failed 1 did not win over MAX_FAILED=0"; cat out err; fail=1; }
grep -q "^tokenize: done: .*, 1 failed, allowed by --max-failed 1, " err ||
  { echo "FAIL TOKENIZE_OPTS' --max-failed: $(grep done: err)"; fail=1; }
exit $fail
