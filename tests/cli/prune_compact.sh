#!/usr/bin/env bash
# cache-prune --compact (docs/cache-prune.md "Space"): data.mdb is replaced by a compact copy. The
# summary and --json report its size before and after; the store verifies and holds the same
# keys and values (a dump of every db) as before; a store with nothing to remove is compacted only;
# --dry-run changes nothing. Refused (exit 1, nothing compacted) while another process has the
# store open. A kill -9 before the swap (FC_FAULT_STOP=compact:1) leaves the old store, one after
# it (compact:2) the new one, both verifying with the same records; a failed copy
# (FC_FAULT=compact:1) leaves the old store and no copy. A reader that opens the store while the
# copy is swapped in keeps reading its old snapshot, and the next process to open the store beside
# it reads the new file at either parity of the transaction id lock.mdb holds (the copy's meta
# pages renumbered: compact.c). A writer that opened the store and waited for the lock meanwhile
# writes into the new file, not the replaced one. The py-lmdb parts are skipped, said, without it.
set -u
FZ=${FC_BIN:?}/featurize
TK=$FC_BIN/tokenize
CV=$FC_BIN/cache-verify
CP=$FC_BIN/cache-prune
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; mountpoint -q "$tmp/mnt" && umount "$tmp/mnt"; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
run() { # NAME WANT_RC ARGS...: cache-prune, stdout in out, stderr in err
  local name=$1 want=$2
  shift 2
  "$CP" "$@" >out 2>err
  local rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, want $want"; cat out err; }
}
verify() { # NAME STORE [ARGS...]: cache-verify --strict passes
  local name=$1
  shift
  "$CV" --strict "$@" >vout 2>&1 || { fail "$name: cache-verify --strict"; cat vout; }
}
size() { stat -c %s "$1/data.mdb"; }
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID

mkdir wavs
for i in 1 2 3 4 5 6; do
  sox -n -r 22050 -b 16 "wavs/u$i.wav" synth 1.$i sine $((200 * i)) ||
    { echo "FAIL: sox failed"; exit 1; }
  echo "u$i|word $i.|word $i." >>m.csv
done
"$FZ" -q --writers 1 --device cpu --manifest m.csv -o base || fail "featurize"
"$TK" -q --manifest m.csv --build-vocab --export-vocab v.txt -o base || fail "tokenize"
head -3 m.csv >keep.csv

# --help names it
"$CP" --help | grep -q -- '--compact' || fail "--help lacks --compact"

# a dry run changes nothing and says what is in use
cp -r base s
run dry 0 -n --compact --manifest keep.csv s
grep -Eq '^cache-prune: s: would remove 6 orphan records .*; 3 utterances stay; data\.mdb [0-9.]+ MB, [0-9.]+ MB of it in use before these removals$' err ||
  { fail "dry: summary"; cat err; }
cmp -s s/data.mdb base/data.mdb || fail "dry: data.mdb changed"

# the prune, then the copy swapped in: smaller, verifies, the kept utterances all there
b0=$(size s)
run compact 0 --compact --json --manifest keep.csv s
grep -Eq '^cache-prune: s: removed 6 orphan records .*; 3 utterances stay; data\.mdb compacted from [0-9.]+ MB to [0-9.]+ MB$' err ||
  { fail "compact: summary"; cat err; }
b1=$(size s)
[ "$b1" -lt "$b0" ] || fail "compact: data.mdb $b0 -> $b1 bytes, want smaller"
grep -q "\"compact\":{\"bytes_before\":$b0,\"bytes_after\":$b1}}" out ||
  { fail "compact: --json sizes (want $b0 -> $b1)"; cat out; }
[ "$(stat -c %a s/data.mdb)" = "$(stat -c %a base/data.mdb)" ] || fail "compact: data.mdb's mode changed"
verify compact s --manifest keep.csv --expect-tokens
ls s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "compact: files left beside the store"

# nothing to remove, and no free page to give back: a rerun of a finished compaction does nothing
# and says so (it copied the whole store again, and refused for want of room beside a large one)
ino=$(stat -c %i s/data.mdb)
run again 0 --compact --json s
grep -Eqx "cache-prune: s: removed 0 orphan records .*; data\.mdb already compact \(([0-9.]+) MB\)" err || { fail "again: summary"; cat err; }
[ "$(stat -c %i s/data.mdb)" = "$ino" ] || fail "again: data.mdb copied again"
grep -q "\"compact\":{\"bytes_before\":$b1,\"bytes_after\":$b1}}" out || { fail "again: --json"; cat out; }
verify again s

# a split store is compacted part by part, reported as one
"$FZ" -q --writers 2 --device cpu --manifest m.csv -o split || fail "featurize split"
run split 0 --compact --json --manifest keep.csv split
grep -q '"parts":2,.*"compact":{"bytes_before":' out || { fail "split: --json"; cat out err; }
verify split split --manifest keep.csv

# data.mdb a symbolic link (to another disk): refused, the link stays
rm -rf s l && cp -r base s && mkdir l && mv s/data.mdb l/ && ln -s "$tmp/l/data.mdb" s/data.mdb
run symlink 1 --compact s
grep -q '^cache-prune: s: data.mdb is a symbolic link: .*nothing compacted' err || { fail "symlink: message"; cat err; }
[ -L s/data.mdb ] || fail "symlink: the link was replaced"
ls s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "symlink: a copy left"

# a store whose folder this user cannot write (a teammate's; data.mdb and lock.mdb writable):
# --compact is refused before anything is removed, exit 2 (it pruned, then failed "cannot write
# the compact copy ... run again to finish", which no rerun could); a dry run still reads it
. "$FC_SRC/tests/cli/as_owner.bash"
rm -rf s && cp -r base s && chmod a-w s
"${as_owner[@]}" "$CP" --compact --manifest keep.csv s >out 2>err
rc=$?
"${as_owner[@]}" "$CP" -n --compact --manifest keep.csv s >/dev/null 2>&1 || fail "read-only folder: a dry run failed"
chmod u+w s
[ $rc = 2 ] || { fail "read-only folder: exit $rc, want 2"; cat err; }
grep -qx "cache-prune: s: cannot compact: the store's folder is not writable by this user (Permission denied), and --compact writes its copy of data.mdb there; nothing removed from any STORE (without --compact, the prune alone runs)" err ||
  { fail "read-only folder: message"; cat err; }
cmp -s s/data.mdb base/data.mdb || fail "read-only folder: data.mdb changed"

# data.mdb with another hard link (cp -al): compacted, and said that the old file stays under the
# link with its space (the prune's writes went into it too: one file until the swap); -q: silent
rm -rf s bk && cp -r base s && mkdir bk && ln s/data.mdb bk/data.mdb
b0=$(size s) i0=$(stat -c %i s/data.mdb)
run hardlink 0 --compact --manifest keep.csv s
grep -qE '^cache-prune: s: data.mdb had 1 other hard link \(made by cp -al or rsync --link-dest\?\): the old file stays there, so its [0-9]+\.[0-9] MB come back only when that link goes$' err ||
  { fail "hardlink: message"; cat err; }
[ "$(stat -c %i bk/data.mdb)" = "$i0" ] && [ "$(stat -c %i s/data.mdb)" != "$i0" ] ||
  fail "hardlink: the link does not keep the old file"
[ "$(size s)" -lt "$b0" ] || fail "hardlink: not compacted"
rm -rf s && cp -r base s && ln -f s/data.mdb bk/data.mdb
run hardlink-q 0 -q --compact --manifest keep.csv s
[ -s err ] && { fail "hardlink, -q: said something"; cat err; }
rm -rf bk

# past RLIMIT_FSIZE: said, the old data.mdb stays, no copy left
rm -rf s && cp -r base s
"$CP" -q --manifest keep.csv s || fail "fsize: prune"
b=$(size s)
(ulimit -f $((b / 1024 / 4)); "$CP" --compact s) >out 2>err
rc=$?
[ $rc = 1 ] || { fail "fsize: exit $rc, want 1"; cat err; }
grep -q '^cache-prune: s: cannot write the compact copy: File too large; nothing compacted' err ||
  { fail "fsize: message"; cat err; }
[ "$(size s)" = "$b" ] || fail "fsize: data.mdb changed"
ls s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "fsize: a copy left"

# no room beside the store for the copy (a small tmpfs, root only): refused before it is written
if mkdir mnt && mount -t tmpfs -o size=2m tmpfs mnt 2>/dev/null; then
  cp -r base mnt/s
  avail=$(df -k --output=avail mnt | tail -1)
  fallocate -l $(((avail - 200) * 1024)) mnt/filler || fail "no room: fallocate"
  run "no room" 1 --compact mnt/s
  grep -q '^cache-prune: mnt/s: no room beside data.mdb for its compact copy: about [0-9.]* MB needed and 1 MB to spare, [0-9.]* MB free; nothing compacted' err ||
    { fail "no room: message"; cat err; }
  ls mnt/s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "no room: a copy left"
  verify "no room" mnt/s
  # more free than the copy needs, less than that and the 1 MB kept spare: the message names the
  # spare (it read "about 0.1 MB needed, 0.6 MB free" and refused)
  rm mnt/filler
  avail=$(df -k --output=avail mnt | tail -1)
  "$CP" -n --compact mnt/s 2>err
  need=$(sed -n 's/.*, \([0-9.]*\) MB of it in use.*/\1/p' err)
  fallocate -l $(((avail - ${need%.*} * 1000 - 600) * 1024)) mnt/filler || fail "spare: fallocate"
  run "spare" 1 --compact mnt/s
  free=$(sed -n 's/.* MB to spare, \([0-9.]*\) MB free.*/\1/p' err)
  grep -q "^cache-prune: mnt/s: no room beside data.mdb for its compact copy: about $need MB needed and 1 MB to spare, [0-9.]* MB free; nothing compacted" err &&
    awk -v f="$free" -v n="$need" 'BEGIN { exit !(f > n) }' || { fail "spare: message"; cat err; }
  umount mnt
else
  echo "note: cannot mount a tmpfs here: no room for the copy not tested"
fi

# a build without the countdowns ignores FC_FAULT: skip the rest
rm -rf p && cp -r base p
FC_FAULT=compact:1 "$CP" -q --compact p >/dev/null 2>&1
if [ $? = 0 ]; then echo "skip: built without -DFC_FAULT_INJECTION=ON"; [ $fails = 0 ] || exit 1; exit 77; fi

# a failed copy: exit 1, said; the prune stays done, the old data.mdb stays, no copy left
rm -rf s && cp -r base s
FC_FAULT=compact:1 "$CP" --compact --manifest keep.csv s >out 2>err
rc=$?
[ $rc = 1 ] || { fail "failed copy: exit $rc, want 1"; cat err; }
grep -q '^cache-prune: s: cannot write the compact copy: .*nothing compacted' err ||
  { fail "failed copy: message"; cat err; }
ls s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "failed copy: a copy left"
verify "failed copy" s --manifest keep.csv

if ! "$PY" -c 'import lmdb' 2>/dev/null; then
  echo "note: $PY has no lmdb module: the dumps, readers and races are not tested"
  [ $fails = 0 ] && echo "ok" || exit 1
  exit 0
fi
dump() { # STORE: a digest of every db's keys and values
  "$PY" - "$1" <<'PY'
import hashlib, lmdb, sys
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=256)
h = hashlib.sha256()
with env.begin() as t:
    for name, _ in list(t.cursor()):
        for k, v in t.cursor(db=env.open_db(name, txn=t, create=False)):
            h.update(b"%d %d %s %s" % (len(k), len(v), k, v))
print(h.hexdigest())
PY
}
txnid() { "$PY" -c 'import lmdb,sys; print(lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=256).info()["last_txnid"])' "$1"; }
bump() { # STORE: one commit that changes nothing
  "$PY" - "$1" <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=256)
with env.begin(write=True, db=env.open_db(b"meta", create=False)) as t:
    t.put(b"x-bump", b"1")
    t.delete(b"x-bump")
PY
}
# holder STORE READY GO OUT: opens the store (with lock.mdb, as the loader does), touches READY,
# and once GO exists dumps it through that same environment into OUT (made whole at once); then
# sleeps
holder() {
  "$PY" - "$@" <<'PY' &
import hashlib, lmdb, os, sys, time
store, ready, go, out = sys.argv[1:5]
if len(sys.argv) > 5:  # a command name of its own
    open("/proc/self/comm", "w").write(sys.argv[5])
env = lmdb.open(store, readonly=True, max_dbs=256)
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.02)
h = hashlib.sha256()
with env.begin() as t:
    for name, _ in list(t.cursor()):
        for k, v in t.cursor(db=env.open_db(name, txn=t, create=False)):
            h.update(b"%d %d %s %s" % (len(k), len(v), k, v))
open(out + ".tmp", "w").write(h.hexdigest() + "\n")
os.rename(out + ".tmp", out)  # whole when it appears: waitfile tests that it exists
time.sleep(60)
PY
  pids+=($!)
}
waitfile() { for _ in $(seq 300); do [ -e "$1" ] && return 0; sleep 0.02; done; return 1; }

# compacted: the same keys and values
rm -rf s && cp -r base s
"$CP" -q --manifest keep.csv s || fail "prune"
want=$(dump s)
"$CP" -q --compact s || fail "compact"
[ "$(dump s)" = "$want" ] || fail "compact: the dump differs"

# another process has the store open: a store already compact is nothing to do (exit 0); one
# with pages to give back is refused, nothing compacted
rm -f ready go
holder s ready go hout
waitfile ready || fail "holder: never opened the store"
run "in use, already compact" 0 --compact s
grep -q "data\.mdb already compact" err || { fail "in use, already compact: message"; cat err; }
kill -9 $!
wait $! 2>/dev/null
rm -rf s && cp -r base s
"$CP" -q --manifest keep.csv s || fail "in use: prune"
rm -f ready go
holder s ready go hout
waitfile ready || fail "holder: never opened the store"
b=$(size s)
run "in use" 1 --compact s
# the holder named by its pid and command name (the pid alone said little)
grep -q "^cache-prune: s: in use: process $! ($(cat /proc/$!/comm)) has it open .*nothing compacted" err || { fail "in use: message"; cat err; }
[ "$(size s)" = "$b" ] || fail "in use: data.mdb changed"
kill -9 $!
wait $! 2>/dev/null
# a command name that holds an escape (any process names itself) is quoted as names are: it
# reached the terminal as it was
rm -f ready go
holder s ready go hout "h$(printf '\033')[2J"
waitfile ready || fail "holder: never opened the store"
run "in use, odd name" 1 --compact s
grep -q "^cache-prune: s: in use: process $! (\"h\\\\033\[2J\") has it open .*nothing compacted" err ||
  { fail "in use, odd name: message"; cat -v err; }
kill -9 $!
wait $! 2>/dev/null

# a kill -9 just before the swap and just after it
for n in 1 2; do
  rm -rf s && cp -r base s
  "$CP" -q --manifest keep.csv s || fail "kill $n: prune"
  want=$(dump s)
  b=$(size s)
  FC_FAULT_STOP=compact:$n "$CP" -q --compact s &
  pid=$!
  stopped $pid || fail "kill $n: never stopped at compact:$n"
  if [ $n = 1 ]; then
    # a second cache-prune meanwhile names the process that holds the store (it named featurize,
    # tokenize, cache-merge and cache-config --drop, none of which had it); cache-verify
    # meanwhile says nothing of the copy being written
    run "kill 1: busy" 1 s
    grep -qx "cache-prune: s: in use: process $pid (cache-prune) holds it exclusively: a cache-prune runs on it; nothing removed: run cache-prune when it has finished" err ||
      { fail "kill 1: busy: message"; cat err; }
    "$CV" s >vout 2>&1 || { fail "kill 1: cache-verify during the copy"; cat vout; }
    grep -q 'compact-' vout && { fail "kill 1: cache-verify reports the copy being written"; cat vout; }
  fi
  kill -9 $pid
  wait $pid 2>/dev/null
  if [ $n = 1 ]; then
    # the copy the kill left is a warning (it takes room; it was not reported), saying what removes it
    "$CV" s >vout 2>&1 || { fail "kill 1: cache-verify"; cat vout; }
    grep -qE "^s: warning: env data\.mdb\.compact-[A-Za-z0-9]{6}: a compact copy a killed cache-prune --compact left \([0-9.]+ MB\): the next cache-prune that is not a dry run removes it$" vout ||
      { fail "kill 1: cache-verify does not report the copy left"; cat vout; }
    "$CV" --strict s >/dev/null 2>&1 && fail "kill 1: cache-verify --strict passes beside the copy left"
  else
    verify "kill $n" s --manifest keep.csv --expect-tokens
  fi
  [ "$(dump s)" = "$want" ] || fail "kill $n: the dump differs"
  if [ $n = 1 ]; then
    [ "$(size s)" = "$b" ] || fail "kill 1: data.mdb replaced before the swap"
    ls s | grep -q '^data.mdb.compact-' || fail "kill 1: no copy left (the kill came too late?)"
    "$CP" -q s || fail "kill 1: the rerun"
    verify "kill 1: the rerun" s --manifest keep.csv --expect-tokens
    ls s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "kill 1: a plain rerun left the copy"
    "$CP" -q --compact s || fail "kill 1: the rerun with --compact"
    [ "$(dump s)" = "$want" ] || fail "kill 1: the rerun's dump differs"
  else
    [ "$(size s)" -lt "$b" ] || fail "kill 2: data.mdb not replaced"
  fi
done

# Ctrl-C during the copy: not swapped in, the copy removed, exit 130
rm -rf s && cp -r base s
b=$(size s)
FC_FAULT_STOP=compact:1 sigint_default "$CP" --compact s >out 2>err &
pid=$!
stopped $pid || fail "sigint: never stopped"
kill -INT $pid
kill -CONT $pid
wait $pid
rc=$?
[ $rc = 130 ] || { fail "sigint: exit $rc, want 130"; cat err; }
grep -q '^cache-prune: s: interrupted' err || { fail "sigint: message"; cat err; }
[ "$(size s)" = "$b" ] || fail "sigint: data.mdb replaced"
ls s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "sigint: a copy left"

# A reader that opens the store while the copy is swapped in (after the in-use check) keeps its
# snapshot; the next process to open the store beside it reads the copy, at either parity of the
# transaction id lock.mdb keeps.
rm -rf s && cp -r base s
"$CP" -q --manifest keep.csv s || fail "race: prune"
want=$(dump s)
last=
for round in 1 2; do
  [ "$(($(txnid s) % 2))" = "$last" ] && bump s
  last=$(($(txnid s) % 2))
  FC_FAULT_STOP=compact:1 "$CP" -q --compact s &
  pid=$!
  stopped $pid || fail "race $round: never stopped"
  rm -f ready go hout
  holder s ready go hout
  hp=$!
  waitfile ready || fail "race $round: holder never opened the store"
  kill -CONT $pid
  wait $pid || fail "race $round (txnid parity $last): cache-prune"
  verify "race $round (txnid parity $last)" s --manifest keep.csv --expect-tokens
  "$PY" - s <<'PY' || fail "race $round (txnid parity $last): a reader beside the old one"
import lmdb, sys
env = lmdb.open(sys.argv[1], readonly=True, max_dbs=256)
with env.begin() as t:
    assert t.get(b"meta") is not None, "no meta db: an empty environment"
PY
  touch go
  waitfile hout || fail "race $round: the old reader never read"
  [ "$(cat hout)" = "$want" ] || fail "race $round: the old reader's snapshot differs ($(cat hout), want $want)"
  kill -9 $hp
  wait $hp 2>/dev/null
done

# A writer that opened the store and waited for the lock while the copy was swapped in writes
# into the new data.mdb: its text is there afterwards.
rm -rf s && cp -r base s
"$CP" -q --manifest keep.csv s || fail "writer: prune"
sed 's/^u1|.*/u1|changed one.|changed one./' keep.csv >keep2.csv
FC_FAULT_STOP=compact:1 "$CP" -q --compact s &
pid=$!
stopped $pid || fail "writer: never stopped"
"$TK" --manifest keep2.csv --vocab v.txt -o s >tout 2>terr &
tp=$!
for _ in $(seq 200); do grep -q 'cache-prune is running on it' terr && break; sleep 0.05; done
grep -q 'cache-prune is running on it' terr || { fail "writer: tokenize did not wait"; cat terr; }
kill -CONT $pid
wait $pid || fail "writer: cache-prune"
wait $tp || { fail "writer: tokenize"; cat terr; }
"$CV" --manifest keep2.csv --expect-tokens s >vout 2>&1 || { fail "writer: its text is not in the store"; cat vout; }

[ $fails = 0 ] && echo "ok" || exit 1
