#!/bin/bash
# A real single-node Slurm cluster on loopback (Debian's slurm-wlm and munge): the test writes a
# slurm.conf for localhost, starts munged, slurmctld and slurmd as root in the foreground (-D /
# --foreground, no systemd needed) with everything in a temporary directory, submits the array job
# template (scripts/scaleout/slurm-submit: sbatch --array=0-3 featcache-array.sbatch, then the
# merge job with --dependency=afterok) over a generated corpus, waits, and checks that the merged
# store holds exactly the keys and bytes of one plain featurize + tokenize run and passes
# cache-verify. Resubmitting does nothing (each task and the merge say so). An array with a
# failing shard gets its merge job cancelled, not left pending; the cause fixed, a rerun of the
# failed task beside a finished one (sbatch --array=F,D) makes the shards they had in the array. Everything is torn down in a trap.
# Skips (77) only when this machine cannot host the cluster: not root, or slurm-wlm/munge not
# installed (scripts/setup installs them). A daemon that does not come up, or a job that fails,
# is a failure, shown with the daemons' logs.
set -u
[ "$(id -u)" = 0 ] || { echo "skip: needs root to start munged, slurmctld and slurmd"; exit 77; }
# slurmd (22.05) initializes its cgroup plugin whatever the config says: without a cgroup file
# system (a bare chroot or container) it cannot start, which is the machine's setup, not ours
grep -qE ' /sys/fs/cgroup (cgroup2?|tmpfs) ' /proc/self/mounts ||
  { echo "skip: no cgroup file system at /sys/fs/cgroup (slurmd cannot start without one)"; exit 77; }
for b in munged slurmctld slurmd sbatch squeue scontrol mdb_copy; do
  command -v $b >/dev/null || { echo "skip: $b not installed (scripts/setup installs slurm-wlm, munge, lmdb-utils)"; exit 77; }
done
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d /tmp/fc_slurm.XXXXXX)
chmod 755 "$T"
pids=()
teardown() {
  if [ -n "${SLURM_CONF:-}" ] && [ -e "$SLURM_CONF" ]; then
    scancel --quiet --user=root 2>/dev/null || true
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$T"
}
trap teardown EXIT
cd "$T" || exit 1
fail=0
show_logs() { for f in munged.log slurmctld.log slurmd.log; do echo "--- $f"; tail -20 "$T/$f" 2>/dev/null; done; }

# free TCP ports for slurmctld and slurmd (another cluster on this machine keeps its own)
read -r pc pd < <("$PY" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')

# munge: a key and a socket of our own
mkdir -p munge state spool
dd if=/dev/urandom of=munge/munge.key bs=1024 count=1 status=none
chmod 400 munge/munge.key
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
  --pid-file="$T/munge/munged.pid" --seed-file="$T/munge/seed" --log-file="$T/munged.log" \
  >>"$T/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$T/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$T/munge/munge.sock" ] || { echo "FAIL munged did not start"; show_logs; exit 1; }

ncpu=$(nproc)
cat >slurm.conf <<EOF
ClusterName=fctest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$pc
SlurmdPort=$pd
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
MailProg=/bin/true
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$ncpu State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$T/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >>"$T/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >>"$T/slurmd.log" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 150); do
  state=$(sinfo -h -n localhost -o %t 2>/dev/null)
  case "$state" in idle*|mix*|alloc*) up=1; break ;; esac
  sleep 0.2
done
[ $up = 1 ] || { echo "FAIL the cluster did not come up (node state '${state:-none}')"; show_logs; exit 1; }

# the corpus and one plain run (the same manifest path: audio entries record the source path)
make_corpus c 60 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest "$T/c/metadata.csv" || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref "$T/c/metadata.csv" || exit 1

export MANIFEST=$T/c/metadata.csv WORK=$T/shards CACHE=$T/cache BIN=$FC_BIN LOCAL=$T/local
export SBATCH_OPTS="--cpus-per-task=1 --chdir=$T --output=$T/job-%A_%a.log"
mkdir -p local
wait_jobs() { # job ids...: until none is queued or running (120 s at most)
  for _ in $(seq 600); do
    [ -z "$(squeue -h -j "$(IFS=,; echo "$*")" 2>/dev/null)" ] && return 0
    sleep 0.2
  done
  echo "FAIL jobs $* still queued after 120 s"; squeue; show_logs; return 1
}
ids=$(bash "$FC_SRC/scripts/scaleout/slurm-submit" 4) || { echo "FAIL slurm-submit"; show_logs; exit 1; }
read -r array merge <<<"$ids"
wait_jobs "$array" "$merge" || exit 1
for k in 0 1 2 3; do
  grep -q "featcache: shard $k of 4 stored in $T/shards/s$k" job-"$array"_$k.log \
    || { echo "FAIL array task $k"; cat job-"$array"_$k.log; fail=1; }
done
grep -q "featcache: merged 4 shards into $T/cache" job-"$merge"_*.log job-"$merge".log 2>/dev/null \
  || { echo "FAIL merge job"; cat job-"$merge"*.log; show_logs; fail=1; }
same_store ref cache >same.txt || { echo "FAIL merged store differs from one plain run"; cat same.txt; fail=1; }
"$FC_BIN/cache-verify" -q --strict cache >out 2>&1 || { echo "FAIL cache-verify"; cat out; fail=1; }

# resubmitting: every task and the merge find their work done
ids=$(bash "$FC_SRC/scripts/scaleout/slurm-submit" 4) || { echo "FAIL second slurm-submit"; exit 1; }
read -r array2 merge2 <<<"$ids"
wait_jobs "$array2" "$merge2" || exit 1
for k in 0 1 2 3; do
  grep -q "already in" job-"$array2"_$k.log || { echo "FAIL resubmitted task $k did work"; cat job-"$array2"_$k.log; fail=1; }
done
grep -q "already merged; nothing to do" job-"$merge2"*.log || { echo "FAIL resubmitted merge"; cat job-"$merge2"*.log; fail=1; }
same_store ref cache >same.txt || { echo "FAIL the resubmission changed the store"; fail=1; }

# a shard that fails (an empty file, MAX_FAILED=0): the merge queued after the array can never
# run, and is cancelled (--kill-on-invalid-dep) rather than left pending for ever
cp -r c cbad && : >cbad/wavs/LJ001-0001.wav
ids=$(MANIFEST=$T/cbad/metadata.csv WORK=$T/shards-bad CACHE=$T/cache-bad MAX_FAILED=0 \
  bash "$FC_SRC/scripts/scaleout/slurm-submit" 4) || { echo "FAIL third slurm-submit"; exit 1; }
read -r array3 merge3 <<<"$ids"
wait_jobs "$array3" || exit 1
gone=0
for _ in $(seq 100); do
  [ -z "$(squeue -h -j "$merge3" 2>/dev/null)" ] && { gone=1; break; }
  sleep 0.2
done
[ $gone = 1 ] || { echo "FAIL the merge after a failed array is still queued:"; squeue -j "$merge3" -o '%i %T %r'; fail=1; }
[ -e cache-bad ] && { echo "FAIL a merge ran after a failed array"; fail=1; }

# the file fixed, the failed task is rerun with a finished one as a listed array (--array=F,D,
# sbatch as a user types it, no SHARDS): each makes the shard it had in the array of 4 (N from
# WORK/.shards), and the merge then holds exactly one plain run's keys and bytes
cp c/wavs/LJ001-0001.wav cbad/wavs/
failed=$(for k in 0 1 2 3; do [ -e shards-bad/s$k ] || echo $k; done)
[ "$(echo "$failed" | wc -w)" = 1 ] || { echo "FAIL want one failed shard, not '$failed'"; exit 1; }
done_k=$(( (failed + 1) % 4 ))
rerun=$(MANIFEST=$T/cbad/metadata.csv WORK=$T/shards-bad sbatch --parsable --export=ALL \
  --cpus-per-task=1 --chdir="$T" --output="$T/job-%A_%a.log" --array="$failed,$done_k" \
  "$FC_SRC/scripts/scaleout/featcache-array.sbatch") || { echo "FAIL sbatch --array=$failed,$done_k"; exit 1; }
rerun=${rerun%%;*}
wait_jobs "$rerun" || exit 1
grep -q "featcache: shard $failed of 4 stored in $T/shards-bad/s$failed" job-"$rerun"_"$failed".log ||
  { echo "FAIL rerun task $failed is not shard $failed of 4"; cat job-"$rerun"_"$failed".log; fail=1; }
grep -q "featcache: shard $done_k already in $T/shards-bad/s$done_k; nothing to do" job-"$rerun"_"$done_k".log ||
  { echo "FAIL rerun task $done_k"; cat job-"$rerun"_"$done_k".log; fail=1; }
merge4=$(WORK=$T/shards-bad CACHE=$T/cache-bad sbatch --parsable --export=ALL --cpus-per-task=1 \
  --chdir="$T" --output="$T/job-%j.log" "$FC_SRC/scripts/scaleout/featcache-merge.sbatch")
wait_jobs "${merge4%%;*}" || exit 1
grep -q "featcache: merged 4 shards into $T/cache-bad" job-"${merge4%%;*}".log ||
  { echo "FAIL merge after the rerun"; cat job-"${merge4%%;*}".log; fail=1; }
"$FC_BIN/featurize" -q -j2 -o refbad --manifest "$T/cbad/metadata.csv" || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o refbad "$T/cbad/metadata.csv" || exit 1
same_store refbad cache-bad >same.txt || { echo "FAIL merge after the rerun differs from one plain run"; cat same.txt; fail=1; }
exit $fail
