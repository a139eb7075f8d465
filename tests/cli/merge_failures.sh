#!/usr/bin/env bash
# cache-merge and featurize's failure records: the shards' records reach the merged store (so
# cache-verify --manifest on it explains the gaps), the latest of an id's records wins without a
# conflict, a shard that now stores the id clears the merged store's record, and stores without a
# failed db merge as before.
set -u
FZ=${FC_BIN:?}/featurize
M=$FC_BIN/cache-merge
V=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ids() { # STORE: the ids of its failure records, one line
  "$PY" - "$1" <<'PY'
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    try:
        db = env.open_db(b"failed", txn=t, create=False)
    except lmdb.NotFoundError:
        sys.exit()
    print(" ".join(bytes(k).decode() for k, _ in t.cursor(db=db)))
PY
}

mkdir wavs
for i in 0 1 2 3 4 5; do espeak-ng -w wavs/u$i.wav "utterance number $i" || exit 1; done
: >wavs/bad0.wav
: >wavs/bad1.wav
for f in wavs/*.wav; do b=${f##*/}; echo "${b%.wav}|Text."; done >metadata.csv
for k in 0 1; do
  "$FZ" -q -j1 --device cpu --shard $k/2 --manifest metadata.csv -o s$k --max-failed 100% 2>/dev/null
done
[ "$(ids s0) $(ids s1)" != " " ] || fail "the shards recorded no failures"

# 1. The merged store holds both records; cache-verify --manifest explains the gaps.
"$M" -q -o cache s0 s1 2>err || fail "merge: $(cat err)"
[ "$(ids cache)" = "bad0 bad1" ] || fail "merged records: '$(ids cache)'"
"$V" -q --manifest metadata.csv cache >out || fail "verify the merged store: $(grep error out)"
[ "$(grep -c ': recorded failure: ' out)" = 2 ] || fail "recorded failures listed: $(cat out)"

# 2. Two inputs with records for one id: the latest wins, no conflict.
"$PY" - s0 s1 <<'PY'
import struct, sys, lmdb
for i, path in enumerate(sys.argv[1:]):
    env = lmdb.open(path, max_dbs=8)
    with env.begin(write=True) as t:
        db = env.open_db(b"failed", txn=t)
        why = f"reason {i}".encode()
        t.put(b"twice", bytes(16) + struct.pack("<qiI", 1000 + i, -31903, 0) + why, db=db)
PY
"$M" -q -o c2 s0 s1 2>err || fail "merge with one id failed in two inputs: $(cat err)"
"$PY" - c2 <<'PY' || fail "the latest record did not win"
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    v = bytes(t.get(b"twice", db=env.open_db(b"failed", txn=t, create=False)))
assert v.endswith(b"reason 1"), v
PY

# 3. bad0 is fixed and its shard reruns: the shard stores it, the merge clears cache's record.
espeak-ng -w wavs/bad0.wav "fixed now"
for k in 0 1; do
  "$FZ" -q -j1 --device cpu --shard $k/2 --manifest metadata.csv -o s$k --max-failed 100% 2>/dev/null
done
"$M" -q -o cache s0 s1 2>err || fail "second merge: $(cat err)"
[ "$(ids cache)" = "bad1 twice" ] || fail "after the fix: '$(ids cache)'"
"$V" -q --manifest metadata.csv cache >out || fail "verify after the fix: $(grep error out)"

# 4. Inputs made before failure records (no failed db) merge as before.
"$PY" - old <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=8)
with env.begin(write=True) as t:
    t.put(b"format", b"featcache/1", db=env.open_db(b"meta", txn=t))
    for n in (b"audio", b"text", b"feat", b"tok"):
        env.open_db(n, txn=t)
PY
# (--partial: s1 is one of 2 shards, merged alone on purpose)
"$M" -q --partial -o c3 old s1 2>err || fail "merge with an old input: $(cat err)"
[ "$(ids c3)" = "$(ids s1)" ] || fail "old + s1: '$(ids c3)' vs '$(ids s1)'"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
