#!/usr/bin/env bash
# featurize on a store this user may only read checks it instead of writing (docs/featurize.md "A
# store you may only read"): exit 0 when it holds every input (by a rerun's rules: a touched file
# is still stored, a changed one is not), exit 2 naming what it lacks, a bad input failed as a run
# would (exit 1 unless --max-failed allows it), --json's checked_read_only and not_stored, and
# not one byte of the store written. Through a folder made read-only (no lock file to write: the
# store read without one) and, where mounts may be made, a read-only mount.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# root may write anything: featurize runs without the capabilities that let it (as_owner.bash)
. "$FC_SRC/tests/cli/as_owner.bash"
run=("${as_owner[@]}")

for i in 1 2 3; do sox -n -r 22050 -b 16 a$i.wav synth 0.$((i + 2)) sine $((300 * i)); done
for i in $(seq 10 21); do sox -n -r 22050 -b 16 n$i.wav synth 0.3 sine $((20 * i)); done
echo "not audio" >bad.wav
"$FZ" -q -o st --max-failed 1 a1.wav a2.wav bad.wav 2>err || fail "first run: $(cat err)"
chmod -R a-w st
sum() { md5sum st/* | md5sum; }
before=$(sum)

# every input stored: said, exit 0; -q: nothing said
"${run[@]}" "$FZ" -o st a1.wav a2.wav >out 2>err
rc=$?
cat >want <<'TXT'
featurize: st: cannot write the store (Permission denied): checking that it holds every input instead, writing nothing
featurize: st: every input is stored (2 checked; the store is read-only: nothing written)
TXT
[ $rc = 0 ] || fail "all stored: exit $rc, want 0"
diff -u want err || fail "all stored: stderr differs"
"${run[@]}" "$FZ" -q -o st a1.wav a2.wav >out 2>err
rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "all stored, -q: exit $rc, stderr: $(cat err)"

# a touched file (its audio the same) is stored; its entry, naming the old mtime, left as it is
touch -d '2001-01-01' a1.wav
"${run[@]}" "$FZ" -q -o st a1.wav a2.wav >out 2>err
rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "touched: exit $rc, stderr: $(cat err)"

# one not stored, a bad input: named, exit 2
"${run[@]}" "$FZ" -j 1 -o st a1.wav a2.wav a3.wav bad.wav >out 2>err
rc=$?
cat >want <<'TXT'
featurize: st: cannot write the store (Permission denied): checking that it holds every input instead, writing nothing
featurize: a3.wav: not stored
featurize: bad.wav: not an audio file (libsndfile: Format not recognised.)
featurize: st: 1 of 4 inputs not stored, 1 failed, and the store cannot be written (Permission denied): featurize them into a store you may write, or have its owner run featurize
TXT
[ $rc = 2 ] || fail "one missing: exit $rc, want 2"
diff -u want err || fail "one missing: stderr differs"

# a changed file (other audio under its path) is not stored
cp a3.wav a2.wav
"${run[@]}" "$FZ" -q -o st a2.wav >out 2>err
rc=$?
[ $rc = 2 ] || fail "changed: exit $rc, want 2"
grep -qxF "featurize: a2.wav: not stored" err || fail "changed: $(cat err)"

# a bad input alone: failed as a run fails it (exit 1), or allowed by --max-failed (exit 0)
"${run[@]}" "$FZ" -o st a1.wav bad.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "bad input: exit $rc, want 1"
grep -qxF "featurize: st: 1 of 2 stored, 1 failed; checked, nothing written (the store is read-only)" err ||
  fail "bad input: $(cat err)"
"${run[@]}" "$FZ" -q --max-failed 1 -o st a1.wav bad.wav >out 2>err
rc=$?
[ $rc = 0 ] || fail "bad input allowed: exit $rc, want 0"
grep -qxF "featurize: bad.wav: not an audio file (libsndfile: Format not recognised.)" err &&
  [ "$(wc -l <err)" = 1 ] || fail "bad input allowed, -q: $(cat err)"

# many not stored: ten named, the rest counted; -v names them all
"${run[@]}" "$FZ" -q -o st a1.wav n*.wav >out 2>err
rc=$?
[ $rc = 2 ] || fail "many: exit $rc, want 2"
[ "$(grep -c ': not stored$' err)" = 10 ] || fail "many: want 10 named: $(cat err)"
grep -qF "12 of 13 inputs not stored (2 not named above)," err || fail "many: $(cat err)"
"${run[@]}" "$FZ" -v -o st a1.wav n*.wav >out 2>err
[ "$(grep -c ': not stored$' err)" = 12 ] || fail "many, -v: want 12 named: $(cat err)"
# --progress: a check commits nothing, its items say how far it is (the first at once)
"${run[@]}" "$FZ" --progress -o st a1.wav n*.wav >out 2>err
grep -qE '^featurize: checked 1/13 \([01] not stored\)$' err || fail "--progress, the first: $(cat err)"

# --json
"${run[@]}" "$FZ" -q --json -o st a1.wav a3.wav >out 2>err
rc=$?
[ $rc = 2 ] || fail "json: exit $rc, want 2"
"$PY" - out <<'PY' || fail "json: $(cat out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["checked_read_only"] is True and r["not_stored"] == 1, r
assert r["skipped_existing"] == 1 and r["processed"] == 0 and r["failed"] == 0, r
assert r["device"] == "none" and r["failures_recorded"] == 0, r
PY
"$FZ" -q --json -o st2 a1.wav >out 2>err || fail "json, writable: $(cat err)"
"$PY" -c 'import json,sys; r=json.load(open("out")); assert r["checked_read_only"] is False and r["not_stored"] == 0, r' ||
  fail "json, writable: $(cat out)"

[ "$(sum)" = "$before" ] || fail "the store's files changed"
chmod -R u+w st

# a split store, its inputs from a manifest read as the job goes: its parts checked alike
printf 'a1.wav\na3.wav\n' >list.txt
"$FZ" -q --writers 2 -o sp --manifest list.txt 2>err || fail "split store: $(cat err)"
chmod -R a-w sp
split_before=$(find sp -type f -exec md5sum {} + | sort | md5sum)
"${run[@]}" "$FZ" -q -o sp --manifest list.txt >out 2>err
rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "split store: exit $rc, want 0: $(cat err)"
echo n10.wav >>list.txt
"${run[@]}" "$FZ" -q -o sp --manifest list.txt >out 2>err
rc=$?
[ $rc = 2 ] || fail "split store, one more: exit $rc, want 2"
grep -qxF "featurize: n10.wav: not stored" err || fail "split store, one more: $(cat err)"
[ "$(find sp -type f -exec md5sum {} + | sort | md5sum)" = "$split_before" ] ||
  fail "split store: its files changed"
chmod -R u+w sp

# a read-only mount: LMDB reads without a lock file there (root, a mount namespace of its own)
if unshare -m true 2>/dev/null; then
  unshare -m sh -c "mount --bind st st && mount -o remount,ro,bind st st && \"$FZ\" -o st a1.wav" \
    >out 2>err
  rc=$?
  cat >want <<'TXT'
featurize: st: cannot write the store (Read-only file system): checking that it holds every input instead, writing nothing
featurize: st: every input is stored (1 checked; the store is read-only: nothing written)
TXT
  [ $rc = 0 ] || fail "read-only mount: exit $rc, want 0"
  diff -u want err || fail "read-only mount: stderr differs"
  [ "$(sum)" = "$before" ] || fail "read-only mount: the store's files changed"
else
  echo "note: no mount namespace here (not root): the read-only mount case not run"
fi

# Ctrl-C before the check began (stopped at its second store open, the check's: the first, for
# writing, was refused): a check's line, not "N of M done, ..., finished work committed"
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  . "$FC_SRC/tests/cli/stop_site.bash"
  chmod -R a-w st
  before=$(sum)
  FC_FAULT_STOP=store_open:2 sigint_default "${run[@]}" "$FZ" -o st a1.wav a2.wav a3.wav >out 2>err &
  pid=$!
  if stopped $pid 400; then
    interrupted $pid
    [ $rc = 130 ] && [ "$(tail -n 1 err)" = "featurize: interrupted: 0 of 3 inputs checked (0 stored, 0 not stored), 3 not started; nothing written (the store is read-only)" ] ||
      fail "interrupted check: exit $rc: $(cat err)"
  else
    fail "interrupted check: not stopped: $(cat err)"
    kill -9 $pid
  fi
  [ "$(sum)" = "$before" ] || fail "interrupted check: the store's files changed"
fi

# one of the store's two files read-only (copied or chmod-ed one at a time): the reason names it,
# since the folder and the other file look writable (both, as above: the store is read-only);
# last, since a reader slot taken in lock.mdb changes it
chmod -R u+w st
for f in lock.mdb data.mdb; do
  chmod a-w "st/$f"
  "${run[@]}" "$FZ" -o st a1.wav a3.wav >out 2>err
  rc=$?
  cat >want <<TXT
featurize: st: cannot write the store (Permission denied: $f is read-only for this user): checking that it holds every input instead, writing nothing
featurize: a3.wav: not stored
featurize: st: 1 of 2 inputs not stored, and the store cannot be written (Permission denied: $f is read-only for this user): featurize them into a store you may write, or have its owner run featurize
TXT
  [ $rc = 2 ] || fail "$f read-only: exit $rc, want 2"
  diff -u want err || fail "$f read-only: stderr differs"
  chmod u+w "st/$f"
done

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
