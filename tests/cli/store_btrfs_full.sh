#!/usr/bin/env bash
# A store on a full btrfs disk, and on a btrfs subvolume whose quota (qgroup) is used up. btrfs
# copies on write: every page written anew needs a new block, allocated ahead or not, and LMDB
# writes lock.mdb's header (the locks every open and transaction take) through a shared map, so
# its first write there was SIGBUS: featurize, tokenize, cache-verify, cache-merge reading the
# store and the Python loader all died (exit 135, not a word), the store itself sound. Now a
# writer (and any open through the store library: the loader, cache-config) is refused, exit 2,
# "cannot open the store: No space left on device" (or "Disk quota exceeded"), the loader raises
# FeatcacheError saying so, cache-verify and cache-merge's inputs read it without the lock (as a
# store on read-only media), cache-config lists it without the lock and says so (it refused: exit
# 2, "cannot open the store"), and once there is room the rerun completes. Needs root, loop devices
# and mkfs.btrfs; else skipped (77), saying why.
set -u
B=${FC_BIN:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$FC_SRC/tests/cli/btrfs_image.bash" # $t, a btrfs image mounted on $t/mnt
cd "$t" || exit 1
btrfs_test_wavs 12 2 || fail "could not write the test WAVs"
printf 'u%02d|word %d.\n' 0 0 1 1 2 2 >t.csv
first=(u0[0-7].wav)
all=(u*.wav)

full_checks() { # STORE REASON: what each tool does on the store with no block to be had
  local st=$1 why=$2 out rc
  out=$("$B/featurize" --device cpu -o "$st" "${all[@]}" 2>&1); rc=$?
  [ $rc = 2 ] && [ "$out" = "featurize: $st: cannot open the store: $why" ] ||
    fail "featurize on $st: exit $rc, want 2 and the reason: $out"
  out=$("$B/tokenize" --build-vocab -o "$st" t.csv 2>&1); rc=$?
  [ $rc = 2 ] && [ "$out" = "tokenize: $st: cannot open the store: $why" ] ||
    fail "tokenize on $st: exit $rc, want 2 and the reason: $out"
  out=$("$B/cache-verify" --json "$st" 2>&1); rc=$?
  [ $rc = 0 ] && grep -q '"ok":true,"records_checked":8,' <<<"$out" ||
    fail "cache-verify on $st: exit $rc, want 0 and its 8 records: $out"
  out=$("$B/cache-config" "$st" 2>"$t/cerr"); rc=$?
  [ $rc = 0 ] && grep -q "hifigan" <<<"$out" && [ "$(cat "$t/cerr")" = "cache-config: $st: lock.mdb cannot be written ($why): read without it (MDB_NOLOCK), as cache-verify reads such a store; a writer committing meanwhile could make what is read wrong" ] ||
    fail "cache-config on $st: exit $rc, want 0, its config listed lock-free and said: $out / $(cat "$t/cerr")"
  rm -rf "$t/merged"
  out=$("$B/cache-merge" -q -o "$t/merged" "$st" 2>&1) || fail "cache-merge from $st: exit $?: $out"
  "$B/cache-verify" -q "$t/merged" >/dev/null || fail "the store merged from $st fails cache-verify"
  out=$("$FC_PYTHON" -c '
import sys, featcache
try:
    featcache.Loader(sys.argv[1])
except featcache.FeatcacheError as e:
    print(e)
' "$st" 2>&1); rc=$?
  [ $rc = 0 ] && grep -q "$why" <<<"$out" ||
    fail "the loader on $st: exit $rc, want FeatcacheError saying '$why': $out"
}

# a full disk: the store's first 8 records, then a file that takes every block left
"$B/featurize" --device cpu -q -o mnt/st "${first[@]}" || fail "featurize the first 8"
fallocate -l 100M mnt/fill 2>/dev/null
dd if=/dev/zero of=mnt/fill2 bs=1M 2>/dev/null
sync
full_checks mnt/st "No space left on device"
rm -f mnt/fill mnt/fill2 && sync
out=$("$B/featurize" --device cpu -o mnt/st "${all[@]}" 2>&1) || fail "featurize once there is room: exit $?: $out"
v=$("$B/cache-verify" --json mnt/st) || fail "the store fails cache-verify after the rerun: $v"
grep -q '"ok":true,"records_checked":12,' <<<"$v" || fail "the rerun did not complete the store: $v"

# a subvolume over its quota
if btrfs quota enable mnt 2>/dev/null && btrfs subvolume create mnt/sv >/dev/null 2>&1 &&
  btrfs qgroup limit 6M mnt/sv 2>/dev/null; then
  "$B/featurize" --device cpu -q -o mnt/sv/st "${first[@]}" || fail "featurize the first 8 into the subvolume"
  dd if=/dev/zero of=mnt/sv/fill bs=64k 2>/dev/null
  sync
  full_checks mnt/sv/st "Disk quota exceeded"
  rm -f mnt/sv/fill && sync
  "$B/featurize" --device cpu -q -o mnt/sv/st "${all[@]}" || fail "featurize into the subvolume once under its quota"
else
  echo "note: no btrfs quotas here; the quota part was not run"
fi
echo ok
