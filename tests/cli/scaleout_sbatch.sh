#!/bin/bash
# The Slurm templates (scripts/scaleout/featcache-array.sbatch, featcache-merge.sbatch) run by bash
# with the environment an array job gives its tasks, no cluster needed (scaleout_slurm.sh runs them
# under a real one): an array of 2 shards (--array=0-1) over split stores (FEATURIZE_OPTS with
# --writers 2), one task killed while it copies its shard to WORK (a fake mdb_copy that writes
# half a file and fails) and rerun alone (sbatch --array=1, another array job), which makes the
# same shard 1 of 2 (N from WORK/.shards) and resumes from its local store. A 1-based or partial
# array with no N known is refused, and so is a run with another N into the same WORK (by
# slurm-submit too, before it queues anything, as it refuses an N that is not a number, and a
# MANIFEST or TEXT it cannot read). The merge then reads the N shards of the run (WORK/.shards),
# not a shard s5 an earlier run left in WORK, and names those missing; one whose check fails
# removes its local store; killed while it copies, and queued again, it resumes its local store;
# the merged store holds exactly the keys and bytes of one plain featurize + tokenize run. A task
# whose shard holds a bad transcript line passes under the default MAX_FAILED (tokenize
# --max-failed), and fails under MAX_FAILED=0. A local store kept by a killed task of a run of
# another N, or by a killed merge of other shards, is not resumed by a later run into the same
# WORK or CACHE path.
set -u
command -v mdb_copy >/dev/null || { echo "skip: mdb_copy not installed (scripts/setup installs lmdb-utils)"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 40 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest "$T/c/metadata.csv" || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref "$T/c/metadata.csv" || exit 1

mkdir -p local fake
cat >fake/mdb_copy <<'EOF'
#!/bin/bash
# a copy cut short: half of data.mdb, then the task dies
head -c $(($(stat -c %s "$1/data.mdb") / 2)) "$1/data.mdb" >"$2/data.mdb"
exit 1
EOF
chmod +x fake/mdb_copy
export MANIFEST=$T/c/metadata.csv WORK=$T/shards CACHE=$T/cache BIN=$FC_BIN LOCAL=$T/local
export FEATURIZE_OPTS="--preset hifigan --writers 2"
task() { # ID [PATH]: array task ID of an array (ARRAY="MIN MAX COUNT", default 0-1) of job JOB
  local a
  read -ra a <<<"${ARRAY:-0 1 2}"
  env ${2:+PATH="$2"} SLURM_ARRAY_JOB_ID="${JOB:-7}" SLURM_ARRAY_TASK_ID="$1" \
    SLURM_ARRAY_TASK_MIN="${a[0]}" SLURM_ARRAY_TASK_MAX="${a[1]}" SLURM_ARRAY_TASK_COUNT="${a[2]}" \
    bash "$FC_SRC/scripts/scaleout/featcache-array.sbatch" >out 2>err
}
ARRAY="1 2 2" WORK=$T/onebased task 1; check "an array numbered from 1" 2 $?
grep -q "^featcache: task 1 of an array that is not all the shards 0 to N-1 (ids 1 to 2), .*: set SHARDS=N$" err ||
  { echo "FAIL an array numbered from 1: message"; cat err; fail=1; }
[ -e onebased/s0 ] || [ -e onebased/.shards ] && { echo "FAIL an array numbered from 1 did work"; fail=1; }
task 0; check task0 0 $?
grep -q "^featcache: shard 0 of 2 stored in $T/shards/s0$" err || { echo "FAIL task 0 is shard 0"; cat err; fail=1; }
[ "$(cat shards/.shards)" = 2 ] || { echo "FAIL WORK/.shards: $(cat shards/.shards)"; fail=1; }
task 1 "$T/fake:$PATH"; check "task 1 killed while copying" 1 $?
[ -e shards/s1 ] && { echo "FAIL a task that died while copying left shards/s1"; fail=1; }
JOB=9 ARRAY="1 1 1" task 1; check "task 1 rerun alone (--array=1)" 0 $?
grep -q "^featurize: nothing to do" err || { echo "FAIL the rerun task did not resume from its local store"; cat err; fail=1; }
grep -q "^featcache: shard 1 of 2 stored in $T/shards/s1$" err || { echo "FAIL the rerun task 1 is not shard 1 of 2"; cat err; fail=1; }
[ "$(ls -A shards | tr "\n" " ")" = ".shards s0 s1 " ] || { echo "FAIL shards: $(ls -A shards)"; fail=1; }
[ -e shards/s1/featcache-split ] || { echo "FAIL shard 1 is not a split store: $(ls shards/s1)"; fail=1; }
task 1; check "task 1 once more" 0 $?
grep -q "already in $T/shards/s1; nothing to do" err || { echo "FAIL a finished split shard was redone"; cat err; fail=1; }
SHARDS=3 ARRAY="0 2 3" task 2; check "a run of 3 shards into a WORK of 2" 2 $?
grep -q "^featcache: $T/shards holds the shards of a run of 2 ($T/shards/.shards), not 3: " err ||
  { echo "FAIL another N into the same WORK: message"; cat err; fail=1; }
[ -e shards/s2 ] && { echo "FAIL a run with another N stored a shard"; fail=1; }
# a shard removed in part (WORK/s0 left with a file, no store): said before any work, not after it
mkdir -p part/s0 && printf '2\n' >part/.shards && touch part/s0/lock.mdb
before=$(ls -A local)
WORK=$T/part task 0; check "a shard removed in part" 2 $?
grep -qF "featcache: $T/part/s0 holds no store (no data.mdb, no featcache-split) but is not empty: a shard removed in part? remove it (rm -rf $T/part/s0) and run the task again" err ||
  { echo "FAIL a shard removed in part: message"; cat err; fail=1; }
[ "$(ls part/s0)" = lock.mdb ] && [ "$(ls -A local)" = "$before" ] ||
  { echo "FAIL a shard removed in part: work done or WORK/s0 touched: $(ls part/s0 local)"; fail=1; }
# slurm-submit (a fake sbatch that logs its arguments): a bad N, or another N than WORK's shards,
# is refused before anything is queued
mkdir fakesb && printf '#!/bin/sh\necho "$*" >>%s/sbatch.log; echo 42\n' "$T" >fakesb/sbatch && chmod +x fakesb/sbatch
for n in 0 abc 08 -1 ""; do
  PATH="$T/fakesb:$PATH" bash "$FC_SRC/scripts/scaleout/slurm-submit" $n >out 2>err; check "slurm-submit '$n'" 2 $?
  grep -q "^slurm-submit: .*usage: slurm-submit N" err || { echo "FAIL slurm-submit '$n': message"; cat err; fail=1; }
done
PATH="$T/fakesb:$PATH" bash "$FC_SRC/scripts/scaleout/slurm-submit" 3 >out 2>err; check "slurm-submit 3 into a WORK of 2" 2 $?
grep -q "^slurm-submit: $T/shards holds the shards of a run of 2 ($T/shards/.shards), not 3: .*nothing queued$" err ||
  { echo "FAIL slurm-submit 3 into a WORK of 2: message"; cat err; fail=1; }
[ -e sbatch.log ] && { echo "FAIL slurm-submit queued: $(cat sbatch.log)"; fail=1; }
# SHARDS that is not a number of shards: refused before WORK/.shards records it for the run
for n in abc 0 08 " 2"; do
  SHARDS=$n WORK=$T/badn task 0; check "array task, SHARDS='$n'" 2 $?
  grep -q "^featcache: SHARDS='$n' is not a positive number of shards$" err ||
    { echo "FAIL array task, SHARDS='$n': message"; cat err; fail=1; }
  [ -e badn/.shards ] && { echo "FAIL SHARDS='$n' was recorded: $(cat badn/.shards)"; rm -rf badn; fail=1; }
done
SHARDS=08 bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err; check "merge, SHARDS=08" 2 $?
[ "$(cat err)" = "featcache: SHARDS='08' is not a positive number of shards" ] ||
  { echo "FAIL merge, SHARDS=08: message"; cat err; fail=1; }
# a setting not given is a configuration error (exit 2) that says which, by each script
env -u CACHE PATH="$T/fakesb:$PATH" bash "$FC_SRC/scripts/scaleout/slurm-submit" 2 >out 2>err
check "slurm-submit, no CACHE" 2 $?
[ "$(cat err)" = "slurm-submit: set CACHE to the merged store to create; nothing queued" ] ||
  { echo "FAIL slurm-submit, no CACHE: message"; cat err; fail=1; }
env -u MANIFEST SLURM_ARRAY_TASK_ID=0 bash "$FC_SRC/scripts/scaleout/featcache-array.sbatch" >out 2>err
check "array task, no MANIFEST" 2 $?
[ "$(cat err)" = "featcache: set MANIFEST to the corpus manifest (LJSpeech csv, wav.scp, JSONL)" ] ||
  { echo "FAIL array task, no MANIFEST: message"; cat err; fail=1; }
env -u SLURM_ARRAY_TASK_ID bash "$FC_SRC/scripts/scaleout/featcache-array.sbatch" >out 2>err
check "array task outside an array" 2 $?
[ "$(cat err)" = "featcache: not in a Slurm array job (sbatch --array=0-N-1): no SLURM_ARRAY_TASK_ID" ] ||
  { echo "FAIL array task outside an array: message"; cat err; fail=1; }
env -u WORK bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err
check "merge, no WORK" 2 $?
[ "$(cat err)" = "featcache: set WORK to the directory of the shard stores" ] ||
  { echo "FAIL merge, no WORK: message"; cat err; fail=1; }
# no mdb_copy on the node: said before the work (the copy comes after it), nothing done
PATH=/nonexistent SLURM_ARRAY_TASK_ID=0 "$BASH" "$FC_SRC/scripts/scaleout/featcache-array.sbatch" >out 2>err
check "array task, no mdb_copy" 2 $?
[ "$(cat err)" = "featcache: mdb_copy not found: it copies the finished shard to WORK (lmdb-utils)" ] ||
  { echo "FAIL array task, no mdb_copy: message"; cat err; fail=1; }
PATH=/nonexistent "$BASH" "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err
check "merge, no mdb_copy" 2 $?
[ "$(cat err)" = "featcache: mdb_copy not found: it copies the merged store to CACHE (lmdb-utils)" ] ||
  { echo "FAIL merge, no mdb_copy: message"; cat err; fail=1; }
# a MANIFEST (or TEXT) that cannot be read would fail every task of the array: refused first
MANIFEST=$T/c/nope.csv PATH="$T/fakesb:$PATH" bash "$FC_SRC/scripts/scaleout/slurm-submit" 2 >out 2>err
check "slurm-submit, no such MANIFEST" 2 $?
grep -q "^slurm-submit: MANIFEST $T/c/nope.csv: cannot be read: .*nothing queued$" err ||
  { echo "FAIL slurm-submit, no such MANIFEST: message"; cat err; fail=1; }
TEXT=$T/c/nope.tsv PATH="$T/fakesb:$PATH" bash "$FC_SRC/scripts/scaleout/slurm-submit" 2 >out 2>err
check "slurm-submit, no such TEXT" 2 $?
grep -q "^slurm-submit: TEXT $T/c/nope.tsv: cannot be read: .*nothing queued$" err ||
  { echo "FAIL slurm-submit, no such TEXT: message"; cat err; fail=1; }
[ -e sbatch.log ] && { echo "FAIL slurm-submit queued: $(cat sbatch.log)"; fail=1; }
PATH="$T/fakesb:$PATH" bash "$FC_SRC/scripts/scaleout/slurm-submit" 2 >out 2>err; check "slurm-submit 2" 0 $?
grep -q -- "--array=0-1 " sbatch.log || { echo "FAIL slurm-submit 2: $(cat sbatch.log)"; fail=1; }

mkdir extra && cp c/wavs/LJ001-0001.wav extra/stale.wav   # a shard of an earlier run with more shards
"$FC_BIN/featurize" -q -o shards/s5 extra/stale.wav || exit 1
SHARDS=3 bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err; check "merge, SHARDS=3 into a WORK of 2" 2 $?
grep -q "^featcache: $T/shards holds the shards of a run of 2 ($T/shards/.shards), not SHARDS=3$" err ||
  { echo "FAIL merge with another N: message"; cat err; fail=1; }
mkdir -p part && cp -r shards/s0 shards/.shards part/ && echo 4 >part/.shards   # s1, s2, s3 missing
WORK=$T/part bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err; check "merge with shards missing" 1 $?
grep -q "^featcache: 3 of 4 shards not in $T/part (s1 s2 s3): rerun their tasks (sbatch --array=1,2,3 featcache-array.sbatch); nothing merged$" err ||
  { echo "FAIL merge with shards missing: message"; cat err; fail=1; }
[ -e cache ] && { echo "FAIL merged with shards missing"; fail=1; }
mkdir fakebin && ln -s "$FC_BIN/cache-merge" fakebin/ && printf '#!/bin/sh\nexit 1\n' >fakebin/cache-verify
chmod +x fakebin/cache-verify
SLURM_JOB_ID=11 BIN=$T/fakebin bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err
check "merge whose check fails" 1 $?
[ -z "$(ls -A local)" ] && [ ! -e cache ] || { echo "FAIL a merge that failed its check left $(ls -A local) $(ls -d cache)"; fail=1; }
SLURM_JOB_ID=8 PATH="$T/fake:$PATH" bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err
check "merge killed while copying" 1 $?
[ -e cache ] && { echo "FAIL a merge that died while copying left cache"; fail=1; }
SLURM_JOB_ID=10 bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err; check merge 0 $?
grep -q "^cache-merge: nothing to do: " err || { echo "FAIL the merge queued again did not resume"; cat err; fail=1; }
grep -q "^featcache: merged 2 shards into $T/cache$" err || { echo "FAIL merge message"; cat err; fail=1; }
same_store ref cache >same.txt || { echo "FAIL merged store differs from one plain run"; cat same.txt; fail=1; }
"$FC_BIN/cache-verify" -q --strict cache >out 2>&1 || { echo "FAIL cache-verify"; cat out; fail=1; }
[ -z "$(ls -A local)" ] || { echo "FAIL local scratch not cleaned: $(ls -A local)"; fail=1; }

# a bad transcript line (empty text) in task 0's shard: tolerated by the default MAX_FAILED (10%)
id=$("$PY" - shards/s0/part-*/ <<'PY'
import sys, lmdb
for p in sys.argv[1:]:  # shard 0 is a split store: an id of its first part that has one
    env = lmdb.open(p, readonly=True, lock=False, max_dbs=8)
    with env.begin() as t:
        for k, _ in t.cursor(db=env.open_db(b"text", txn=t, create=False)):
            sys.exit(print(bytes(k).decode()))
PY
)
sed "s/^$id|.*/$id||/" c/metadata.csv >c/bad.csv
grep -qx "$id||" c/bad.csv || { echo "FAIL no bad line for $id"; fail=1; }
MANIFEST=$T/c/bad.csv WORK=$T/bshards task 0; check "a task with a bad transcript line" 0 $?
grep -q "^tokenize: done: .*, 1 failed, allowed by --max-failed 10%, " err ||
  { echo "FAIL the task does not say the bad line was allowed"; cat err; fail=1; }
[ -e bshards/s0 ] || { echo "FAIL the task with a bad line stored no shard"; fail=1; }
MAX_FAILED=0 MANIFEST=$T/c/bad.csv WORK=$T/zshards task 0; check "MAX_FAILED=0, a bad transcript line" 1 $?
grep -q "^tokenize: done: .*, 1 failed, more than --max-failed 0, " err ||
  { echo "FAIL MAX_FAILED=0: the task does not say why it failed"; cat err; fail=1; }
[ -e zshards/s0 ] && { echo "FAIL MAX_FAILED=0: the shard was copied to WORK"; fail=1; }
# a local store kept by a task of a run of 2 shards, killed while copying, is not resumed by task 1
# of a run of 3 into the same WORK path (WORK removed in between): shard 1 of 3 holds its own ids
"$FC_BIN/featurize" -q --shard 1/3 -o ref13 --manifest "$T/c/metadata.csv" || exit 1
"$FC_BIN/tokenize" -q --build-vocab --shard 1/3 -o ref13 "$T/c/metadata.csv" || exit 1
export FEATURIZE_OPTS="--preset hifigan" LOCAL=$T/local3 WORK=$T/again
task 1 "$T/fake:$PATH"; check "task 1 of 2 killed while copying" 1 $?
rm -rf again
SHARDS=3 ARRAY="0 2 3" task 1; check "task 1 of 3 into the same WORK path" 0 $?
grep -q "^featurize: nothing to do" err && { echo "FAIL task 1 of 3 resumed the local store of task 1 of 2"; cat err; fail=1; }
same_store ref13 again/s1 >same.txt || { echo "FAIL shard 1 of 3 differs from featurize --shard 1/3"; cat same.txt; fail=1; }
# a merge's local store kept by a merge job killed while copying is not resumed by a merge of
# other shards into the same CACHE path (CACHE never made): the merge holds those shards alone
mkdir -p other && echo 1 >other/.shards && cp -r again/s1 other/s0
# (a shard of 3 given as the one shard of 1 is refused as such: a run over its whole list into it
# makes it a shard of 1 too, docs/FORMAT.md "Shards")
"$FC_BIN/featurize" -q --shard 0/1 -o other/s0 </dev/null || fail=1
SLURM_JOB_ID=12 CACHE=$T/cache3 WORK=$T/shards PATH="$T/fake:$PATH" bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err
check "merge of shards/ killed while copying" 1 $?
compgen -G "local3/featcache-merge-*" >/dev/null || { echo "FAIL the merge killed while copying kept no local store"; fail=1; }
SLURM_JOB_ID=13 CACHE=$T/cache3 WORK=$T/other bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch" >out 2>err
check "merge of other shards into the same CACHE path" 0 $?
same_store other/s0 cache3 >same.txt || { echo "FAIL the merge of other/ holds more than its shard"; cat same.txt; fail=1; }
exit $fail
