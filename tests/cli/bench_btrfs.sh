#!/usr/bin/env bash
# A store on btrfs (a common root filesystem): a file's st_dev there is its subvolume's anonymous
# device, not the one /proc/self/maps and /proc/self/mountinfo name (the superblock's). The store
# library found data.mdb's mapping by device and inode, so every tool that reads the map refused
# the store ('cannot open store: FC_ENOTFOUND: not found in the store': cache-bench,
# cache-verify); and cache-bench's device facts, matched by st_dev, found no mount: no block
# device, no mount point. Needs root, loop devices and mkfs.btrfs; else skipped (77), saying why.
set -u
B=${FC_BIN:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d)
cleanup() { mountpoint -q "$t/mnt" 2>/dev/null && umount "$t/mnt"; rm -rf "$t"; }
trap cleanup EXIT
command -v mkfs.btrfs >/dev/null || { echo "skipped: no mkfs.btrfs (apt-get install btrfs-progs)"; exit 77; }
truncate -s 160M "$t/img" && mkfs.btrfs -q "$t/img" >/dev/null 2>"$t/merr" || {
  echo "skipped: mkfs.btrfs failed: $(head -1 "$t/merr")"
  exit 77
}
mkdir "$t/mnt"
mount -o loop "$t/img" "$t/mnt" 2>"$t/merr" || {
  echo "skipped: cannot mount a btrfs image here (root and a loop device needed): $(head -1 "$t/merr")"
  exit 77
}
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/mnt/s', 6, frames=20)" \
  || fail "fixture"

"$B/cache-bench" -q --json --no-probe -p sequential -s warm -b 2 --duration 0 "$t/mnt/s" >"$t/out" 2>"$t/err" ||
  fail "cache-bench: exit $?: $(cat "$t/err")"
[ "$(grep -c '"record":"pass"' "$t/out")" = 2 ] || fail "cache-bench: want 2 passes: $(cat "$t/out")"
"$B/cache-verify" -q "$t/mnt/s" >/dev/null 2>"$t/err"
grep -q "not found in the store" "$t/err" && fail "cache-verify: $(cat "$t/err")"
echo ok
