#!/bin/bash
# cache-merge --nolock: the inputs opened lock-free (MDB_RDONLY | MDB_NOLOCK) even when they are
# writable, as cache-verify --nolock does — for shards on shared storage (NFS, Lustre) that nobody
# writes any more (docs/scale-out.md "File systems"), where a locking reader writes lock.mdb over the
# network or fails where the mount has no file locks. There was no way to ask for it: a writable
# input was always opened with its lock. Seen here by a lock.mdb that cannot be used: a locking
# open fails on it (a directory in its place), a lock-free one never opens it.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 8 || exit 1
for k in 0 1; do
  "$FC_BIN/featurize" -q -j1 --shard $k/2 -o s$k --manifest c/metadata.csv || fail=1
done
"$M" --help >out 2>&1
grep -q -- "--nolock" out || { echo "FAIL --help lacks --nolock"; fail=1; }
# a lock.mdb that cannot be used (a directory here; a mount without file locks fails the same way)
rm -f s0/lock.mdb && mkdir s0/lock.mdb
"$M" -q -o m0 s0 s1 >out 2>err; check locked 2 $?
grep -q "^cache-merge: s0: cannot open the store: " err || { echo "FAIL locked: stderr:"; cat err; fail=1; }
sums=$(md5sum s0/data.mdb s1/data.mdb)
"$M" -q --nolock --json -o m s0 s1 >out 2>err; check nolock 0 $?
[ "$sums" = "$(md5sum s0/data.mdb s1/data.mdb)" ] || { echo "FAIL --nolock: an input changed"; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "done" and r["copied"]["audio"] == 8, r' ||
  { echo "FAIL --nolock json"; cat out; fail=1; }
"$FC_BIN/cache-verify" -q m >out 2>&1 || { echo "FAIL cache-verify of the merge"; cat out; fail=1; }
exit $fail
