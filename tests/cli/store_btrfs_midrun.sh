#!/usr/bin/env bash
# A btrfs disk that fills while a store is open. LMDB writes lock.mdb through a shared map (its
# mutexes, reader slots, the last transaction's id) at each transaction's begin and end: once the
# kernel has written that page back, the next write into it needs a new block (copy on write),
# and with none left it is SIGBUS. featurize died there mid-run (exit 135, not a word, with -j 4
# in a worker's read) and the loader at its close; the store stayed at its last commit. Now the
# fault is the store's error: featurize says the disk is full and to make room (exit 1, its
# summary), the store passes cache-verify with what was committed, a rerun with room completes
# it, a loader closed on the full disk ends its process normally, and a process whose handle
# faulted outside LMDB's mutexes opens the store again once there is room. A `sync` loop beside the
# writer writes lock.mdb back often, as the kernel's flusher does every few seconds. Needs root,
# loop devices and mkfs.btrfs; else skipped (77), saying why.
set -u
B=${FC_BIN:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$FC_SRC/tests/cli/btrfs_image.bash" # $t, a btrfs image mounted on $t/mnt
cd "$t" || exit 1
btrfs_test_wavs 240 3 || fail "could not write the test WAVs"
room="make room on the disk, then run again (what was committed stays; the rerun stores only what is missing)"
fill_leaving() { # KB: a file that takes all but KB of the disk
  local avail
  avail=$(df -k --output=avail mnt | tail -1)
  fallocate -l $(((avail - $1) * 1024)) mnt/fill || fail "fallocate"
  sync
}
"$B/featurize" --device cpu -q -o mnt/st u00*.wav || fail "featurize the first 10"
fill_leaving 6000 # about 100 of the 240 records' room
(while sleep 0.2; do sync; done) &
syncer=$!
out=$("$B/featurize" --device cpu -j 4 -o mnt/st u*.wav 2>&1)
rc=$?
kill $syncer
wait $syncer 2>/dev/null
[ $rc = 1 ] || fail "featurize on a btrfs disk that fills: exit $rc, want 1: $out"
grep -qx "featurize: mnt/st: cannot write to the store: No space left on device: $room" <<<"$out" ||
  fail "the full disk is not said: $out"
grep -q "^featurize: done: [0-9]* of 240 " <<<"$out" || fail "no summary: $out"
v=$("$B/cache-verify" --json mnt/st) || fail "the store fails cache-verify after the disk filled: $v"
n=$(sed -n 's/.*"ok":true,"records_checked":\([0-9]*\),.*/\1/p' <<<"$v")
[ -n "$n" ] && [ "$n" -ge 10 ] && [ "$n" -lt 240 ] ||
  fail "committed records lost, or the disk never filled (want 10..239 checked): $v"

# a loader open while the disk fills: its close writes its reader slot
rm -f mnt/fill && sync
out=$("$FC_PYTHON" - mnt/st <<'PY' 2>&1
import subprocess, sys, featcache
ld = featcache.Loader(sys.argv[1], batch_size=4)
next(iter(ld))
with open(sys.argv[1] + "/../fill2", "wb") as f:
    try:
        while True:
            f.write(b"\0" * (1 << 20))
    except OSError:
        pass
subprocess.run(["sync"])
ld.close()
print("closed")
PY
)
rc=$?
[ $rc = 0 ] && [ "$(tail -1 <<<"$out")" = closed ] ||
  fail "a loader closed on the full disk: exit $rc, want 0: $out"

# featcache.get's handle let go on the full disk (its close faults writing its reader slot, no
# mutex of lock.mdb held): once there is room the same process opens the store again (a
# long-lived process, a training loop, met FC_EOPENED until it exited)
out=$("$FC_PYTHON" - mnt/st <<'PY' 2>&1
import os, subprocess, sys, featcache
st, fill = sys.argv[1], sys.argv[1] + "/../fill2"
os.remove(fill)
subprocess.run(["sync"])
featcache.get(st, "u000")
with open(fill, "wb") as f:
    try:
        while True:
            f.write(b"\0" * (1 << 20))
    except OSError:
        pass
subprocess.run(["sync"])
featcache.release_get_handles()
os.remove(fill)
subprocess.run(["sync"])
featcache.get(st, "u001")
featcache.release_get_handles()
print("reopened")
PY
)
rc=$?
[ $rc = 0 ] && [ "$(tail -1 <<<"$out")" = reopened ] ||
  fail "the store opened again in the process that let it go on the full disk: exit $rc: $out"
sync
out=$("$B/featurize" --device cpu -j 4 -o mnt/st u*.wav 2>&1) || fail "featurize once there is room: exit $?: $out"
v=$("$B/cache-verify" --json mnt/st) || fail "the store fails cache-verify after the rerun: $v"
grep -q '"ok":true,"records_checked":240,' <<<"$v" || fail "the rerun did not complete the store: $v"
echo ok
