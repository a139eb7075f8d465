#!/usr/bin/env bash
# LMDB asserts, and would abort the process, on some damaged pages: a leaf zeroed in the middle of
# a B-tree, which a cursor walking MDB_NEXT reaches from its left sibling (`IS_LEAF(mp)` in
# mdb_cursor_next). The tools catch the assertion (store_lmdb_assert, a sigsetjmp guard around
# each walk) and report the damage; the damage tests elsewhere reach those walks through LMDB's
# error codes only (a zeroed root or first leaf), so without these cases a guard could go and no
# test would notice. Here: cache-verify's free-list walk (its free list made of many leaves: a
# reader held open across 600 commits), cache-prune's survey of the audio entries (a store of
# 400 utterances), each a report and exit 1, never exit 134, and nothing written; the Python
# loader's walks at its open, each a FeatcacheError.
set -u
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# zero DIR DB N: zero the N-th child (a leaf) of db DB's root branch page ("free": LMDB's free
# list), found from the newest meta page as LMDB 0.9 lays pages out
zero() {
  "$PY" - "$@" <<'PY' || fail "zero $*"
import struct, sys
path, which, nth = sys.argv[1] + "/data.mdb", sys.argv[2], int(sys.argv[3])
data = bytearray(open(path, "rb").read())
PS = 4096
txnid, meta = max((struct.unpack_from("<Q", data, p + 144)[0], p) for p in (0, PS))
def db_record(name):  # where its MDB_db lies: in the meta page, or a node of the main db's root
    if name == "free":
        return meta + 16 + 24
    pg = struct.unpack_from("<Q", data, meta + 16 + 24 + 48 + 40)[0] * PS
    for i in range((struct.unpack_from("<H", data, pg + 12)[0] - 16) // 2):
        node = pg + struct.unpack_from("<H", data, pg + 16 + 2 * i)[0]
        ksize = struct.unpack_from("<H", data, node + 6)[0]
        if bytes(data[node + 8:node + 8 + ksize]) == name.encode():
            return node + 8 + ksize
    raise SystemExit("no db " + name)
root = struct.unpack_from("<Q", data, db_record(which) + 40)[0] * PS
assert struct.unpack_from("<H", data, root + 10)[0] & 1, which + ": its root is no branch page"
node = root + struct.unpack_from("<H", data, root + 16 + 2 * nth)[0]
lo, hi, fl = struct.unpack_from("<HHH", data, node)
child = (lo | hi << 16 | fl << 32) * PS
assert struct.unpack_from("<H", data, child + 10)[0] & 2, which + ": the child is no leaf"
data[child:child + PS] = bytes(PS)
open(path, "r+b").write(data)
PY
}
assertion="LMDB: mdb\.c:[0-9]*: Assertion 'IS_LEAF(mp)' failed in mdb_cursor_next()"

# the free list
sox -n -r 22050 -b 16 a.wav synth 1.0 sine 440 || { echo "FAIL: sox"; exit 1; }
"$FC_BIN/featurize" -q --device cpu -o fl a.wav || fail "featurize"
"$PY" - fl <<'PY' || fail "a free list of many leaves"
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=200)
reader = env.begin()  # holds what each later commit frees: one free-list entry a commit
audio = env.open_db(b"audio")
with env.begin() as t:
    k, v = next(iter(t.cursor(audio)))
for _ in range(600):
    with env.begin(write=True) as t:
        t.put(k, v, db=audio)  # the same bytes: the store unchanged, its pages copied
reader.abort()
PY
"$FC_BIN/cache-verify" -q fl || fail "the store before the damage"
zero fl free 1
"$FC_BIN/cache-verify" fl >out 2>err
rc=$?
[ $rc = 1 ] || { fail "free list: cache-verify exit $rc, want 1"; cat out err; }
grep -q "^fl: error: env data.mdb: free list damaged ($assertion): the store reads, but writes fail on it" out ||
  { fail "free list: the finding"; cat out; }

# prune's survey of the audio entries
FC_BIN=$FC_BIN "$PY" "$FC_SRC/tests/reference/test_verify_store.py" make st --n 400 \
  --min-samples 1024 --max-samples 2048 >/dev/null || { echo "FAIL: the fixture writer"; exit 1; }
# the fixture writer predates failure records: their db made now, as a writer's open would make it
# (a write of its own), so that what prune writes, if anything, is its own doing
"$PY" -c 'import lmdb, sys; e = lmdb.open(sys.argv[1], max_dbs=200); e.open_db(b"failed")' st ||
  fail "the failed db"
zero st audio 1
cp st/data.mdb before.mdb
for dry in -n ""; do
  # shellcheck disable=SC2086 # the option or nothing
  "$FC_BIN/cache-prune" $dry st >out 2>err
  rc=$?
  [ $rc = 1 ] || { fail "prune ${dry:-(writing)}: exit $rc, want 1"; cat err; }
  grep -qx "cache-prune: st: damaged (B-tree: $assertion): nothing removed (cache-verify says more)" err ||
    { fail "prune ${dry:-(writing)}: stderr"; cat err; }
done
cmp -s st/data.mdb before.mdb || fail "prune changed the damaged store"
"$FC_BIN/cache-verify" st >out 2>err
[ $? = 1 ] && grep -q "^st: error: env data.mdb: B-tree damaged ($assertion); the checks after it were not made" out ||
  { fail "verify of the zeroed audio leaf"; cat out err; }

# The loader's walks at its open: of a store without indexes (st: the lookups walk of the audio
# entries) and of a featurize store's mel index (the index walk); a Python training script died
# there (exit 134, no traceback): now FeatcacheError naming the store and the damage
mkdir w && sox -n -r 22050 -b 16 w/a.wav synth 0.05 sine 440 || fail "sox"
for i in $(seq -w 1 400); do ln -s a.wav "w/u$i.wav"; done
"$FC_BIN/featurize" -q --device cpu -o ix w/u*.wav || fail "featurize 400 utterances"
ixdb=$("$PY" -c 'import lmdb, sys
e = lmdb.open(sys.argv[1], max_dbs=200, readonly=True, lock=False)
print(next(k.decode() for k, _ in e.begin().cursor() if k.startswith(b"index/")))' ix) ||
  fail "the index db"
zero ix "$ixdb" 1
for s in st ix; do
  "$PY" - "$s" >out 2>err <<'PY'
import sys
import featcache
try:
    featcache.Loader(sys.argv[1])
    print("opened")
except featcache.FeatcacheError as e:
    print(e)
PY
  rc=$?
  [ $rc = 0 ] && grep -q "^featcache: $s: damaged (LMDB stopped at a page it cannot use: $(echo "$assertion" | sed 's/^LMDB: //')): cache-verify says more" out ||
    { fail "Loader on $s: exit $rc"; cat out err; }
done

[ "$fails" = 0 ] && echo "ok: LMDB's assertions in the free-list walk, prune's survey and the loader's walks reported, no abort"
exit $((fails > 0))
