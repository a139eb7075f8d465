#!/usr/bin/env bash
# cache-prune: --help, --version, usage errors and bad input — a missing store, a folder that is
# no store, a file, an unreadable manifest, a read-only store (a read-only bind mount, where this
# sandbox allows one), a damaged store or B-tree (refused: its records could look like orphans) —
# each a clear line naming the file, with the exit status of the neighbours (docs/cache-prune.md).
set -u
CP=${FC_BIN:?}/cache-prune
FZ=$FC_BIN/featurize
CV=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
[ -x "$CP" ] || { echo "FAIL: $CP not built"; exit 1; }
tmp=$(mktemp -d)
cleanup() { mountpoint -q "$tmp/ro" 2>/dev/null && umount "$tmp/ro"; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
run() { # NAME WANT_RC ARGS...: stdout in out, stderr in err
  local name=$1 want=$2
  shift 2
  "$CP" "$@" >out 2>err
  local rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, want $want"; cat out err; }
}
expect_err() { [ "$(cat err)" = "$2" ] || { fail "$1: stderr:"; cat err; echo "want:"; echo "$2"; }; }
# the summary that ends every exit 1, one STORE's too (it ended at the refusal)
one="cache-prune: done: 0 of 1 store pruned (1 failed)"
try="Try 'cache-prune --help' for more information."

run help 0 --help
[ "$(head -1 out)" = "Usage: cache-prune [options] STORE..." ] || fail "help: first line: $(head -1 out)"
for o in --manifest --manifest-format --dry-run --batch --json --quiet --help --version; do
  grep -q -- "$o" out || fail "help lacks $o"
done
[ -s err ] && fail "help wrote to stderr"
run version 0 --version
grep -Eq '^cache-prune \(featcache\) [0-9]+\.[0-9]+\.[0-9]+$' out || { fail "version"; cat out; }

run no-store 2
expect_err no-store "cache-prune: no STORE given
$try"
run batch-0 2 --batch 0 s
expect_err batch-0 "cache-prune: invalid value '0' for --batch (want an integer in 1..16777216)
$try"
run bogus 2 --bogus s
expect_err bogus "cache-prune: unknown option '--bogus'
$try"
run empty-store 2 ""
expect_err empty-store "cache-prune: '' names no STORE (an empty path: an unset variable?)
$try"
run format 2 --manifest-format xml s
expect_err format "cache-prune: invalid value 'xml' for --manifest-format (want one of auto, ljspeech, kaldi, jsonl, list, tsv)
$try"

run missing 2 nope
expect_err missing "cache-prune: nope: cannot open the store: No such file or directory"
mkdir plain
run not-a-store 2 plain
expect_err not-a-store "cache-prune: plain: not a featcache store (no data.mdb)"
: >file
run a-file 2 file
expect_err a-file "cache-prune: file: not a featcache store (not a directory)"

sox -n -r 22050 -b 16 a.wav synth 0.4 sine 300 || { echo "FAIL: sox failed"; exit 1; }
sox -n -r 22050 -b 16 b.wav synth 0.4 sine 500 || exit 1
"$FZ" -q --writers 1 --device cpu -o s a.wav b.wav || fail "featurize"
run no-manifest 2 --manifest nope.csv s
expect_err no-manifest "cache-prune: nope.csv: cannot open: No such file or directory"
mkdir mdir
run manifest-dir 2 --manifest mdir s
expect_err manifest-dir "cache-prune: mdir: is a directory"
cp -r s s.before
cmp -s s/data.mdb s.before/data.mdb || fail "a refused run changed the store"

# several STOREs, one of them mistyped, not a store, or not ours to write: exit 2 with nothing
# removed from any (the STOREs before it were pruned, then exit 2, "nothing done")
"$PY" - <<'PY' || fail "making the orphan"
import lmdb
e = lmdb.open("s", max_dbs=8)
with e.begin(write=True) as t:
    t.put(b"\x01" * 16, b"an orphan record", db=e.open_db(b"feat", txn=t))
PY
cp s/data.mdb with-orphan.mdb
for bad in nope plain file; do
  run "several, $bad" 2 s "$bad"
  cmp -s s/data.mdb with-orphan.mdb || { fail "several, $bad: s was pruned before $bad was refused"; cp with-orphan.mdb s/data.mdb; }
done
expect_err "several, file" "cache-prune: file: not a featcache store (not a directory)"
cp s.before/data.mdb s/data.mdb

# a read-only store: refused, exit 2; --dry-run reads it
mkdir ro
if mount --bind s ro 2>merr && mount -o remount,ro,bind ro 2>>merr; then
  run read-only 2 ro
  expect_err read-only "cache-prune: ro: cannot open the store for writing: Read-only file system (--dry-run only reads it)"
  run read-only-dry 0 -n ro
  umount ro
else
  echo "note: read-only case not run: cannot make a read-only bind mount here: $(head -1 merr)"
fi

# a store this user cannot write (a teammate's dataset: no lock.mdb can be opened for writing):
# refused, exit 2, saying why; --dry-run reads it lock-free, as cache-verify does. Root reads and
# writes anything: as_owner.bash drops the capabilities that let it.
cp -r s theirs && chmod a-w theirs theirs/*
. "$FC_SRC/tests/cli/as_owner.bash"
as_user=("${as_owner[@]}")
"${as_user[@]}" "$CP" theirs >out 2>err
rc=$?
[ $rc = 2 ] || fail "theirs: exit $rc, want 2"
expect_err theirs "cache-prune: theirs: cannot open the store for writing: Permission denied (--dry-run only reads it)"
"${as_user[@]}" "$CP" -n theirs >out 2>err
rc=$?
[ $rc = 0 ] || fail "theirs --dry-run: exit $rc, want 0"
# read lock-free, and said (it was silent): a writer committing meanwhile may reuse the pages read
expect_err theirs-dry "cache-prune: theirs: not writable by this user (lock.mdb): LMDB cannot take its reader lock: read without it (MDB_NOLOCK), as cache-verify reads such a store; a writer committing meanwhile could make what is read wrong
cache-prune: theirs: would remove 0 orphan records (0 feat, 0 tok; 0.0 MB); 2 utterances stay"
chmod -R u+w theirs
# another EACCES — data.mdb itself unreadable, its lock.mdb ours — is not that case: no lock-free
# retry, and no "--dry-run only reads it" (a dry run cannot read it either)
cp -r s unread && chmod 000 unread/data.mdb
for a in -n ""; do
  # shellcheck disable=SC2086 # "" is a run that writes
  "${as_user[@]}" "$CP" $a unread >out 2>err
  rc=$?
  [ $rc = 2 ] || fail "unreadable data.mdb '$a': exit $rc, want 2"
  expect_err "unreadable data.mdb '$a'" "cache-prune: unread: cannot open the store: Permission denied"
done
chmod -R u+rw unread

# a damaged text entry (its transcript no longer hashes to its digest): refused, nothing removed
"$PY" - <<'PY' || fail "making the damaged store"
import lmdb
e = lmdb.open("s", max_dbs=8)
text = e.open_db(b"text")
with e.begin(write=True) as t:
    t.put(b"zz", b"\x00" * 16 + b"not this", db=text)
PY
"$CV" s >/dev/null 2>&1 && fail "cache-verify passes the damaged store"
run damaged 1 s
expect_err damaged "cache-prune: s: damaged (text zz: transcript hashes to d4eb407cc0af94e1da4a5b0796dc9272, the entry's text digest is 00000000000000000000000000000000: its tokens were made from another text): its records could look like orphans; nothing removed (cache-verify says more)
$one"

# a page of the audio entries zeroed (a copy with a hole): LMDB meets a page of the wrong type (and
# asserts, then aborts, on some): refused, exit 1, nothing removed — not an abort
sox -n -r 22050 -b 16 c.wav synth 0.4 sine 700 || exit 1
"$FZ" -q --writers 1 --device cpu -o z a.wav c.wav || fail "featurize z"
"$PY" - <<'PY' || fail "zeroing a page"
data = bytearray(open("z/data.mdb", "rb").read())
page = data.find(b"c.wav") // 4096 * 4096
data[page:page + 4096] = bytes(4096)
open("z/data.mdb", "wb").write(data)
PY
run zeroed 1 --json z
grep -q "^cache-prune: z: damaged (B-tree: LMDB: .*): nothing removed (cache-verify says more)$" err ||
  { fail "zeroed: message"; cat err; }
grep -q '"status":"damaged"' out || { fail "zeroed: --json status"; cat out; }

# LMDB's free list damaged: no read touches it, so a prune that read only the B-trees went on and
# met it in its first write (exit 1, "met by a write", what was removed before staying removed),
# or, were it a page a B-tree uses, would have had its write put data over that tree. The survey
# checks the pages first, as cache-verify does (docs/cache-verify.md, step 1): refused, nothing
# written, --compact too. Damage that comes after the survey is still met by the write, or by the
# compact copy (FC_FAULT_STOP=prune:1 / prune_compact:1 stop cache-prune there, and the damage
# is made then).
"$FZ" -q --writers 1 --device cpu -o flbase a.wav c.wav || fail "featurize flbase"
. "$FC_SRC/tests/cli/free_list.bash"
free_pages flbase || fail "freeing pages"
echo a >keep-a.list
rm -rf fl && cp -r flbase fl && free_list_damage fl zero || fail "zeroing the free list"
cp fl/data.mdb fl.before
run free-list 1 --json --manifest-format list --manifest keep-a.list fl
expect_err free-list "cache-prune: fl: damaged (env data.mdb: free list damaged (LMDB: MDB_CORRUPTED: Located page was wrong type): the store reads, but writes fail on it or could overwrite data (featurize, tokenize, cache-config --drop, cache-prune); cache-merge -o NEW STORE copies it into a new store): nothing removed
$one"
grep -q '"status":"damaged"' out || { fail "free list: --json status"; cat out; }
cmp -s fl/data.mdb fl.before || fail "free list: data.mdb changed"
run free-list-compact 1 --compact fl
expect_err free-list-compact "cache-prune: fl: damaged (env data.mdb: free list damaged (LMDB: MDB_CORRUPTED: Located page was wrong type): the store reads, but writes fail on it or could overwrite data (featurize, tokenize, cache-config --drop, cache-prune); cache-merge -o NEW STORE copies it into a new store): nothing removed, nothing compacted
$one"
ls fl | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "free list: a copy left"
cmp -s fl/data.mdb fl.before || fail "free list --compact: data.mdb changed"
rm -rf fl && cp -r flbase fl && free_list_damage fl live || fail "a live page on the free list"
cp fl/data.mdb fl.before
run free-list-live 1 --manifest-format list --manifest keep-a.list fl
grep -qx "cache-prune: fl: damaged (env data.mdb: free list damaged (it names page [0-9]*, which the audio B-tree uses): .*): nothing removed" err ||
  { fail "free list naming a live page: message"; cat err; }
cmp -s fl/data.mdb fl.before || fail "free list naming a live page: data.mdb changed"
# the same on a store made before failure records (no failed db), which an open for writing gives
# one, committing: the pages are checked before cache-prune opens any store for writing, with one
# store or with two (each checked first, the second one sound)
rm -rf fl && cp -r flbase fl && "$PY" - fl <<'PY' || fail "dropping the failed db"
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=8)
with env.begin(write=True) as t:
    t.drop(env.open_db(b"failed", txn=t), delete=True)
PY
free_list_damage fl live || fail "a live page on the free list (no failed db)"
cp fl/data.mdb fl.before
rm -rf fl2 && cp -r flbase fl2
for stores in "fl" "fl2 fl"; do
  # shellcheck disable=SC2086
  run "old store, free list naming a live page ($stores)" 1 --json --manifest-format list \
    --manifest keep-a.list $stores
  grep -qx "cache-prune: fl: damaged (env data.mdb: free list damaged (it names page [0-9]*, which the audio B-tree uses): .*): nothing removed" err ||
    { fail "old store, free list naming a live page ($stores): message"; cat err; }
  grep -q '"status":"damaged"' out || { fail "old store ($stores): --json status"; cat out; }
  cmp -s fl/data.mdb fl.before || fail "old store, free list naming a live page ($stores): data.mdb changed"
done
# after the survey: SIGSTOP at the stop site, the damage, SIGCONT
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID
for site in prune prune_compact; do
  rm -rf fl && cp -r flbase fl
  if [ $site = prune ]; then set -- --manifest-format list --manifest keep-a.list fl; else set -- --compact fl; fi
  FC_FAULT_STOP=$site:1 "$CP" "$@" >out 2>err &
  pid=$!
  if ! stopped $pid; then
    fail "FC_FAULT_STOP=$site:1: cache-prune never stopped there"; kill -9 $pid; wait $pid
    continue
  fi
  free_list_damage fl zero || fail "zeroing the free list"
  kill -CONT $pid
  wait $pid
  rc=$?
  [ $rc = 1 ] || { fail "damage after the survey ($site): exit $rc, want 1"; cat err; }
  if [ $site = prune ]; then
    want="cache-prune: fl: damaged (B-tree: LMDB: MDB_CORRUPTED: Located page was wrong type, met by a write): nothing removed (cache-verify says more)"
  else
    want="cache-prune: fl: damaged (B-tree: LMDB: MDB_CORRUPTED: Located page was wrong type, met by the compact copy): nothing compacted (cache-verify says more)"
  fi
  [ "$(cat err)" = "$want
$one" ] || { fail "damage after the survey ($site): message"; cat err; }
done

[ $fails = 0 ] && echo "prune_usage: ok"
exit $((fails > 0))
