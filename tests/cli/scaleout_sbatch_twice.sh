#!/bin/bash
# Two runs of one shard at once (a Slurm requeue, or a resubmitted --array=K, while the first
# still runs), and two merge jobs at once, with the Slurm templates run by bash in the environment
# a task gets (scaleout_sbatch.sh has the rest). The first run (A) is held in its copy to WORK by
# an mdb_copy that copies, then waits.
# - On another node (another LOCAL, SLURMD_NODENAME): the second run (B) makes the shard and stores
#   it while A copies; A's temporary in WORK is not touched; A, let go, finds the shard stored,
#   drops its copy and exits 0. WORK holds the shard and nothing else.
# - On the same node with scratch per job (another LOCAL): as on two nodes.
# - On the same node (same LOCAL): B waits for A (a lock in LOCAL), then finds the shard stored
#   and does nothing; LOCAL is left empty.
# - Two merge jobs on two nodes: the second merges, the first, let go, finds CACHE merged, drops
#   its copy, exits 0; the merged store holds exactly the keys and bytes of one plain run.
set -u
command -v mdb_copy >/dev/null || { echo "skip: mdb_copy not installed (scripts/setup installs lmdb-utils)"; exit 77; }
command -v flock >/dev/null || { echo "skip: flock not installed (util-linux)"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d)
held=
trap 'touch "$T/release"; [ -n "$held" ] && wait $held; rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 24 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest "$T/c/metadata.csv" || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref "$T/c/metadata.csv" || exit 1

mkdir fake
cat >fake/mdb_copy <<EOF
#!/bin/bash
# a copy held up: copied, then waits to be let go (as a slow copy to shared storage)
"$(command -v mdb_copy)" "\$@" || exit
touch "$T/copying"
for _ in \$(seq 3000); do [ -e "$T/release" ] && exit 0; sleep 0.1; done
exit 1
EOF
chmod +x fake/mdb_copy
export MANIFEST=$T/c/metadata.csv WORK=$T/shards CACHE=$T/cache BIN=$FC_BIN
export FEATURIZE_OPTS="--preset hifigan -j2"
task() { # ID NODE LOCAL [PATH]: task ID of an array of 2 shards, on NODE with scratch LOCAL
  env ${4:+PATH="$4"} SLURM_ARRAY_JOB_ID=7 SLURM_ARRAY_TASK_ID="$1" SLURM_ARRAY_TASK_MIN=0 \
    SLURM_ARRAY_TASK_MAX=1 SLURM_ARRAY_TASK_COUNT=2 SLURMD_NODENAME="$2" LOCAL="$3" \
    bash "$FC_SRC/scripts/scaleout/featcache-array.sbatch"
}
merge() { # NODE LOCAL [PATH]
  env ${3:+PATH="$3"} SLURMD_NODENAME="$1" LOCAL="$2" bash "$FC_SRC/scripts/scaleout/featcache-merge.sbatch"
}
held_up() { # wait until the held mdb_copy has copied
  for _ in $(seq 3000); do [ -e copying ] && return 0; kill -0 $held 2>/dev/null || break; sleep 0.1; done
  echo "FAIL $1: the held run never reached its copy"; cat errA; fail=1; return 1
}
let_go() { # let the held run finish; its exit status
  touch release; wait $held; local rc=$?
  held=; rm -f release copying
  return $rc
}

# two nodes, task 0 twice
mkdir n1 n2 n3
task 0 n1 "$T/n1" "$T/fake:$PATH" >outA 2>errA &
held=$!
if held_up "task 0 on two nodes"; then
  tmpA=$(ls -d shards/.s0.tmp.* 2>/dev/null)
  task 0 n2 "$T/n2" >out 2>err; check "task 0 again on another node" 0 $?
  grep -q "^featcache: shard 0 of 2 stored in $T/shards/s0$" err || { echo "FAIL task 0 on n2: message"; cat err; fail=1; }
  [ -n "$tmpA" ] && [ -d "$tmpA" ] || { echo "FAIL task 0 on n2 removed the copy of task 0 on n1 ($tmpA)"; fail=1; }
  let_go; check "task 0 on n1, let go after task 0 on n2 stored the shard" 0 $?
  grep -q "^featcache: shard 0 already stored in $T/shards/s0 by another task; this one's copy dropped$" errA ||
    { echo "FAIL task 0 on n1: message"; cat errA; fail=1; }
  [ "$(ls -A shards | tr '\n' ' ')" = ".shards s0 " ] || { echo "FAIL WORK after task 0 twice: $(ls -A shards)"; fail=1; }
  [ -z "$(ls -A n1)" ] && [ -z "$(ls -A n2)" ] || { echo "FAIL local scratch left: $(ls -A n1 n2)"; fail=1; }
  "$FC_BIN/cache-verify" -q --strict shards/s0 >out 2>&1 || { echo "FAIL cache-verify s0"; cat out; fail=1; }
fi

# one node, task 0 twice, each with scratch of its own (a TMPDIR per job): the second sees no
# lock, and must not take the first's temporary in WORK for one left by a killed task
mkdir j1 j2
WORK=$T/shards2 task 0 n1 "$T/j1" "$T/fake:$PATH" >outA 2>errA &
held=$!
if held_up "task 0 twice on one node, scratch per job"; then
  tmpA=$(ls -d shards2/.s0.tmp.* 2>/dev/null)
  WORK=$T/shards2 task 0 n1 "$T/j2" >out 2>err; check "task 0 again on the same node, its own scratch" 0 $?
  [ -n "$tmpA" ] && [ -d "$tmpA" ] || { echo "FAIL the second task 0 on n1 removed the first's copy ($tmpA)"; fail=1; }
  let_go; check "task 0 on n1, let go after the second stored the shard" 0 $?
  [ "$(ls -A shards2 | tr '\n' ' ')" = ".shards s0 " ] || { echo "FAIL WORK after task 0 twice on n1: $(ls -A shards2)"; fail=1; }
fi

# one node, task 1 twice: the second waits for the first
task 1 n3 "$T/n3" "$T/fake:$PATH" >outA 2>errA &
held=$!
if held_up "task 1 twice on one node"; then
  task 1 n3 "$T/n3" >out 2>err &
  second=$!
  for _ in $(seq 600); do grep -q "waiting" err && break; sleep 0.1; done
  grep -q "^featcache: shard 1: another task of it runs on this node (lock $T/n3/featcache-.*-s1.of2.lock); waiting for it$" err ||
    { echo "FAIL task 1 on the same node does not say it waits"; cat err; fail=1; }
  [ -e shards/s1 ] && { echo "FAIL shard 1 stored while its first task was still copying"; fail=1; }
  let_go; check "task 1, first" 0 $?
  wait $second; check "task 1, second on the same node" 0 $?
  grep -q "^featcache: shard 1 already in $T/shards/s1; nothing to do$" err || { echo "FAIL task 1 second: message"; cat err; fail=1; }
  [ -z "$(ls -A n3)" ] || { echo "FAIL local scratch left: $(ls -A n3)"; fail=1; }
fi

# two merge jobs at once on two nodes
merge n1 "$T/n1" "$T/fake:$PATH" >outA 2>errA &
held=$!
if held_up "merge twice"; then
  merge n2 "$T/n2" >out 2>err; check "merge on n2" 0 $?
  let_go; check "merge on n1, let go after the merge on n2" 0 $?
  grep -q "^featcache: $T/cache already merged by another job; this one's copy dropped$" errA ||
    { echo "FAIL merge on n1: message"; cat errA; fail=1; }
  [ -z "$(find . -maxdepth 1 -name '.cache.tmp*')" ] || { echo "FAIL merge temporaries left: $(ls -A .)"; fail=1; }
  [ -z "$(ls -A n1)" ] && [ -z "$(ls -A n2)" ] || { echo "FAIL local scratch left: $(ls -A n1 n2)"; fail=1; }
  same_store ref cache >same.txt || { echo "FAIL merged store differs from one plain run"; cat same.txt; fail=1; }
fi
exit $fail
