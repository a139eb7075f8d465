#!/usr/bin/env bash
# A store on btrfs (a common root filesystem): a file's st_dev there is its subvolume's anonymous
# device, not the one /proc/self/maps and /proc/self/mountinfo name (the superblock's). The store
# library found data.mdb's mapping by device and inode, so every tool that reads the map refused
# the store ('cannot open the store: FC_ENOTFOUND: not found in the store': cache-bench,
# cache-verify); and cache-bench's device facts, matched by st_dev, found no mount: 'device: no
# block device (btrfs on )', no rotational flag, no read-ahead, a note saying no local block
# device was behind it. The mount is found by its mount point now, and its source device. Needs root, loop devices and mkfs.btrfs; else skipped (77), saying why.
set -u
B=${FC_BIN:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$FC_SRC/tests/cli/btrfs_image.bash" # $t, a btrfs image mounted on $t/mnt
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/mnt/s', 6, frames=20)" \
  || fail "fixture"

"$B/cache-bench" -q --json --no-probe -p sequential -s warm -b 2 --duration 0 "$t/mnt/s" >"$t/out" 2>"$t/err" ||
  fail "cache-bench: exit $?: $(cat "$t/err")"
[ "$(grep -c '"record":"pass"' "$t/out")" = 2 ] || fail "cache-bench: want 2 passes: $(cat "$t/out")"
# the device facts: the mount and the block device behind it (here a loop device over the image)
"$FC_PYTHON" - "$t/out" "$t/mnt" "$t/img" <<'PY' || fail "cache-bench device facts: $(grep summary "$t/out")"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][0]
want = {"kind": "block", "fs_type": "btrfs", "mount_point": sys.argv[2],
        "note": "loop device over the file " + sys.argv[3]}
bad = {k: s[k] for k in want if s[k] != want[k]}
assert not bad and s["device"].startswith("loop") and s["disk"] == s["device"], (bad, s["device"])
PY
"$B/cache-bench" --no-probe -p sequential -s warm -b 2 --duration 0 "$t/mnt/s" 2>"$t/err" | grep '^device: ' >"$t/dev"
grep -qE "^device: loop[0-9]+ \(.*\), .*, btrfs on $t/mnt, read-ahead [0-9]+ KB$" "$t/dev" ||
  fail "device line: $(cat "$t/dev")"
# two subvolumes of one disk: each has an anonymous st_dev of its own, but one dataset over both
# reads one device; it was warned about as 'on another device (loop0) than ... (loop0)'
if command -v btrfs >/dev/null && btrfs subvolume create "$t/mnt/v" >/dev/null 2>&1; then
  cp -r "$t/mnt/s" "$t/mnt/v/s"
  "$B/cache-bench" --no-probe -p sequential -s warm -b 2 --duration 0 "$t/mnt/s" "$t/mnt/v/s" >/dev/null 2>"$t/err" ||
    fail "two subvolumes: exit $?: $(cat "$t/err")"
  grep -q "another device" "$t/err" && fail "two subvolumes of one disk: $(cat "$t/err")"
fi
"$B/cache-verify" -q "$t/mnt/s" >/dev/null 2>"$t/err"
grep -q "not found in the store" "$t/err" && fail "cache-verify: $(cat "$t/err")"
echo ok
