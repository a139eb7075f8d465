#!/bin/bash
# The GNU parallel template (scripts/scaleout/parallel.sh): 4 shards over 2 jobs, then the merge,
# over a generated corpus; the merged store holds exactly the keys and bytes of one plain featurize
# + tokenize run and passes cache-verify; a second run does nothing (every shard and the merge
# say so); jobs on other machines (PARALLEL_OPTS, through a fake ssh) get the settings; a
# wav.scp manifest with TEXT= (no transcripts) runs featurize alone; a bad transcript line is
# within MAX_FAILED (tokenize --max-failed), and MAX_FAILED=0 stops the run.
set -u
command -v parallel >/dev/null || { echo "skip: GNU parallel not installed (scripts/setup installs it)"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 60 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest c/metadata.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref c/metadata.csv || exit 1

export MANIFEST=c/metadata.csv SHARDS=4 JOBS=2 WORK=shards CACHE=cache BIN=$FC_BIN
bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err || { echo "FAIL parallel.sh"; cat out err; fail=1; }
[ "$(ls -d shards/s*/ | wc -l)" = 4 ] || { echo "FAIL want 4 shard stores"; ls shards; fail=1; }
same_store ref cache >same.txt || { echo "FAIL merged store differs from one plain run"; cat same.txt; fail=1; }
"$FC_BIN/cache-verify" -q --strict cache >out 2>&1 || { echo "FAIL cache-verify"; cat out; fail=1; }

bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err || { echo "FAIL parallel.sh rerun"; cat err; fail=1; }
grep -q "^cache-merge: nothing to do: all 249 entries of the 4 stores already in cache$" err \
  || { echo "FAIL rerun: the merge did something"; cat err; fail=1; }
same_store ref cache >same.txt || { echo "FAIL rerun changed the store"; cat same.txt; fail=1; }

# no MANIFEST: a configuration error (2), said, nothing run
env -u MANIFEST WORK=bad bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err; check "no MANIFEST" 2 $?
[ "$(cat err)" = "parallel.sh: set MANIFEST to the corpus manifest (LJSpeech csv, wav.scp, JSONL)" ] ||
  { echo "FAIL no MANIFEST: message"; cat err; fail=1; }
[ -e bad ] && { echo "FAIL no MANIFEST ran shards"; fail=1; }
# a number of shards that is not one: a usage error (2), said, nothing run
for n in 0 abc 08 -2; do
  SHARDS=$n WORK=bad bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err; check "SHARDS='$n'" 2 $?
  grep -q "^parallel.sh: SHARDS='$n' is not a positive number of shards$" err || { echo "FAIL SHARDS='$n': message"; cat err; fail=1; }
  [ -e bad ] && { echo "FAIL SHARDS='$n' ran shards"; fail=1; }
done

# other machines (PARALLEL_OPTS): a fake ssh that runs each job here, in a clean environment and
# another directory, as a login on a node would. With absolute paths every shard reaches WORK and
# the merge equals the plain run; with a relative WORK the shards land in the "node's" home, and
# the script says which shards are missing and merges nothing.
mkdir node
{
  echo '#!/bin/bash'
  echo "echo \"\$*\" >>'$T/ssh.log'"
  echo 'while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done'
  echo 'shift; [ "${1:-}" = -- ] && shift   # the host'
  echo "cd '$T/node' && exec env -i PATH=\"\$PATH\" HOME='$T/node' SHELL=/bin/bash bash -c \"\$*\""
} >fakessh
chmod +x fakessh
export PARALLEL_OPTS="--ssh $T/fakessh -S 2/node1" MANIFEST=$T/c/metadata.csv WORK=$T/rshards CACHE=$T/rcache
bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err || { echo "FAIL parallel.sh on a node"; cat out err; fail=1; }
grep -q "GNU_Parallel_worker" ssh.log 2>/dev/null || { echo "FAIL PARALLEL_OPTS: no job went through the ssh command"; fail=1; }
same_store ref rcache >same.txt || { echo "FAIL merged store from a node differs"; cat same.txt; fail=1; }
WORK=rel CACHE=$T/rel-cache bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err; check "shards on the node only" 1 $?
grep -q "^parallel.sh: 4 of 4 shards not in rel (s0 s1 s2 s3): " err || { echo "FAIL missing shards message"; cat err; fail=1; }
[ -d node/rel/s0 ] && [ ! -e rel-cache ] || { echo "FAIL want the shards on the node and no merge"; ls node; fail=1; }

# a Kaldi wav.scp has no transcripts: TEXT= leaves tokenize out
for f in c/wavs/*.wav; do b=${f##*/}; echo "${b%.wav} $T/$f"; done >wav.scp
"$FC_BIN/featurize" -q -j2 -o refscp --manifest wav.scp || exit 1
PARALLEL_OPTS= MANIFEST=$T/wav.scp TEXT= WORK=$T/wshards CACHE=$T/wcache \
  bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err || { echo "FAIL parallel.sh over a wav.scp"; cat out err; fail=1; }
same_store refscp wcache >same.txt || { echo "FAIL the wav.scp merge differs from one plain featurize"; cat same.txt; fail=1; }

# a bad transcript line (empty text): its shard passes under the default MAX_FAILED (10%), the
# merge equals one plain run that tolerated it; MAX_FAILED=0 stops the run before the merge
sed '7s/|.*/||/' c/metadata.csv >c/bad.csv
"$FC_BIN/featurize" -q -j2 -o refbad --manifest c/bad.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab --max-failed 1 -o refbad c/bad.csv || exit 1
PARALLEL_OPTS= MANIFEST=$T/c/bad.csv WORK=$T/bshards CACHE=$T/bcache \
  bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err || { echo "FAIL parallel.sh with a bad transcript line"; cat out err; fail=1; }
grep -q "^tokenize: done: .*, 1 failed, allowed by --max-failed 10%, " err ||
  { echo "FAIL the bad line's shard does not say it was allowed"; cat err; fail=1; }
same_store refbad bcache >same.txt || { echo "FAIL the merge with a bad line differs from one plain run"; cat same.txt; fail=1; }
PARALLEL_OPTS= MANIFEST=$T/c/bad.csv WORK=$T/zshards CACHE=$T/zcache MAX_FAILED=0 \
  bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err && { echo "FAIL MAX_FAILED=0 passed a bad line"; fail=1; }
grep -q "^tokenize: done: .*, 1 failed, more than --max-failed 0, " err ||
  { echo "FAIL MAX_FAILED=0: the shard does not say why it failed"; cat err; fail=1; }
[ -e zcache ] && { echo "FAIL MAX_FAILED=0: merged anyway"; fail=1; }

# a file replaced under its id: the merge into CACHE refuses it (exit 1); MERGE_OPTS="--prefer
# first" takes the shards' audio, and after cache-prune CACHE equals one plain run
set -- c/wavs/*.wav
cp "$2" "$1"
PARALLEL_OPTS= MANIFEST=$T/wav.scp TEXT= WORK=$T/wshards CACHE=$T/wcache \
  bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err && { echo "FAIL a replaced file merged without a word"; fail=1; }
grep -q "^cache-merge: .*differs from .*: different audio: " err || { echo "FAIL replaced: the conflict unsaid"; cat err; fail=1; }
PARALLEL_OPTS= MANIFEST=$T/wav.scp TEXT= WORK=$T/wshards CACHE=$T/wcache MERGE_OPTS="--prefer first" \
  bash "$FC_SRC/scripts/scaleout/parallel.sh" >out 2>err || { echo "FAIL MERGE_OPTS=\"--prefer first\""; cat out err; fail=1; }
"$FC_BIN/cache-prune" -q wcache wshards/s*/ >out 2>&1 || { echo "FAIL prune orphans"; cat out; fail=1; }
rm -rf refscp && "$FC_BIN/featurize" -q -j2 -o refscp --manifest wav.scp || exit 1
same_store refscp wcache >same.txt || { echo "FAIL replaced: differs from one plain run"; cat same.txt; fail=1; }
exit $fail
