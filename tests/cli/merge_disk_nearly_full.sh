#!/bin/bash
# cache-merge onto a disk with less room than its write-back allocates ahead (256 MiB, fallocate
# FALLOC_FL_KEEP_SIZE: libcache/core/merge/writeback.c). ext4 keeps what a fallocate that fails
# with ENOSPC allocated, and the merge, taking the failure for "nothing allocated", never freed
# it: a 1 MB merge into a 55 MB ext4 left data.mdb at 0.9 MB by ls and 54 MB by du, the disk
# 100 % full, and a rerun that had nothing to do did the same. Now the blocks beyond the file's
# end are freed when the merge ends, and no more is allocated ahead than leaves the disk half of
# its free room. An ext4 image this test makes and mounts (root, mkfs.ext4, a loop device;
# skipped without them).
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: not root (the test mounts an ext4 image)"; exit 77; }
command -v mkfs.ext4 >/dev/null || { echo "skip: mkfs.ext4 not installed"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d)
mnt=$T/mnt
cleanup() { mountpoint -q "$mnt" && umount "$mnt"; rm -rf "$T"; }
trap cleanup EXIT
cd "$T" || exit 1
fail=0
truncate -s 64M img && mkfs.ext4 -q -F img || { echo "FAIL: mkfs.ext4"; exit 1; }
mkdir "$mnt"
mount -o loop img "$mnt" 2>/dev/null || { echo "skip: cannot mount a loop device here"; exit 77; }
make_corpus c 20 || exit 1
for k in 0 1; do
  "$FC_BIN/featurize" -q -j1 --shard $k/2 -o s$k --manifest c/metadata.csv || fail=1
done
free_kb() { df -k --output=avail "$mnt" | tail -1 | tr -d ' '; }
before=$(free_kb)
# the blocks of data.mdb beyond its size, in KiB
beyond() { echo $(($(du -k "$mnt/m/data.mdb" | cut -f1) - ($(stat -c %s "$mnt/m/data.mdb") + 1023) / 1024)); }
"$M" -q -o "$mnt/m" s0 s1 >out 2>err; check merge 0 $?
[ "$(beyond)" -le 64 ] || { echo "FAIL merge: $(beyond) KiB allocated beyond data.mdb's end"; fail=1; }
[ "$(free_kb)" -gt $((before / 2)) ] || { echo "FAIL merge: $(free_kb) KiB free of $before"; df -k "$mnt"; fail=1; }
"$M" -o "$mnt/m" s0 s1 >out 2>err; check rerun 0 $?
grep -q "^cache-merge: nothing to do: " err || { echo "FAIL rerun: stderr:"; cat err; fail=1; }
[ "$(beyond)" -le 64 ] || { echo "FAIL rerun: $(beyond) KiB allocated beyond data.mdb's end"; fail=1; }
"$FC_BIN/cache-verify" -q "$mnt/m" >out 2>&1 || { echo "FAIL cache-verify"; cat out; fail=1; }
exit $fail
