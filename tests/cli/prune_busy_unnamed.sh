#!/usr/bin/env bash
# cache-prune refused by a holder of the store's writer lock that /proc/locks does not show it —
# a process of another pid namespace (a container sharing the volume; here cache-prune runs in a
# new one), or one that let the store go between the refusal and the look, another cache-prune as
# well — said every tool that could have held it, cache-prune among them. It said "another process
# has it open for writing (featurize, tokenize, cache-merge, cache-config --drop)", leaving out the
# cache-prune that a second one run at once (make -j) meets. A holder seen exclusive is named a
# cache-prune, seen or not.
set -u
unshare -pf --mount-proc true 2>/dev/null ||
  { echo "skipped: cannot make a pid namespace (unshare -p: not root?)"; exit 77; }
tmp=$(mktemp -d)
trap 'kill $h 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
h=
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
"$FC_BIN/featurize" -q --device cpu -o s a.wav || fail "featurize"
# hold MODE (sh, ex): a process that holds s/data.mdb's flock itself (flock(1) runs a child that
# inherits it and outlives a kill)
hold() {
  "$FC_PYTHON" -c 'import fcntl, sys, time
f = open("s/data.mdb")
fcntl.flock(f, fcntl.LOCK_SH if sys.argv[1] == "sh" else fcntl.LOCK_EX)
time.sleep(60)' "$1" &
  h=$!
}
waitheld() { for _ in $(seq 100); do grep -q ":$(stat -c %i s/data.mdb) " /proc/locks && return 0; sleep 0.05; done; return 1; }

# a writer's shared lock, its holder out of sight
hold sh
waitheld || fail "the holder never took the lock"
unshare -pf --mount-proc "$FC_BIN/cache-prune" s >out 2>err
rc=$?
[ $rc = 1 ] || fail "shared, unseen: exit $rc, want 1"
grep -qxF "cache-prune: s: in use: a process this one cannot name (of another pid namespace, or one that let it go a moment ago) had it open: featurize, tokenize, cache-merge, cache-config --drop or another cache-prune; nothing removed: run cache-prune when it has finished" err ||
  fail "shared, unseen: $(cat err)"
# seen, it is named
"$FC_BIN/cache-prune" s >out 2>err
grep -qxF "cache-prune: s: in use: process $h ($(cat /proc/$h/comm)) has it open for writing; nothing removed: run cache-prune when it has finished" err ||
  fail "shared, seen: $(cat err)"
kill $h
wait $h 2>/dev/null

# exclusive (what a cache-prune holds), out of sight: a cache-prune
hold ex
waitheld || fail "the holder never took the lock"
unshare -pf --mount-proc "$FC_BIN/cache-prune" s >out 2>err
rc=$?
[ $rc = 1 ] || fail "exclusive, unseen: exit $rc, want 1"
grep -qxF "cache-prune: s: in use: another cache-prune runs on it; nothing removed: run cache-prune when it has finished" err ||
  fail "exclusive, unseen: $(cat err)"
kill $h
wait $h 2>/dev/null
"$FC_BIN/cache-prune" -q s || fail "once let go: cache-prune"

[ "$fails" = 0 ] && echo "the holders out of sight said"
exit "$fails"
