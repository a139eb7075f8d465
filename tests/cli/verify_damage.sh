#!/bin/bash
# cache-verify on stores damaged in each way it claims to catch, bytes flipped inside data.mdb
# (payload, header, key), a truncated data.mdb, values rewritten with valid checksums (huge shape,
# NaN), LMDB's free list (a hole, a page past the file, a page a B-tree uses, a page twice, a page
# left off), a meta page's transaction id and last page number: the exact report line and exit
# code of each. The ASan build runs this too.
set -u
V="$FC_BIN/cache-verify"
[ -x "$V" ] || { echo "FAIL: $V not built"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail=0
mk() { rm -rf s; "$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make s --n 40 \
         --min-samples 10240 --max-samples 12000 >keys ||
         { echo "FAIL: the fixture writer (test_verify_store.py make) failed"; exit 1; }; }
key_of() { awk -v id="$1" '$1 == id {print $2}' keys; }
# flip ID OFFSET BIT: flip a bit OFFSET bytes from the start of utterance ID's record (found by its
# header bytes) — or, with OFFSET "key", in the last byte of its key — inside data.mdb
flip() {
  "$FC_PYTHON" - "$(key_of "$1")" "$2" "$3" <<'PY'
import lmdb, sys
key, where, bit = bytes.fromhex(sys.argv[1]), sys.argv[2], int(sys.argv[3])
env = lmdb.open("s", max_dbs=8, readonly=True, lock=False)
with env.begin() as t:
    val = bytes(t.get(key, db=env.open_db(b"feat", txn=t, create=False)))
env.close()
data = bytearray(open("s/data.mdb", "rb").read())
if where == "key":
    at = data.find(key) + 15
else:
    at = data.find(val[:64]) + int(where)
assert data.count(val[:64] if where != "key" else key) == 1
data[at] ^= 1 << bit
open("s/data.mdb", "r+b").write(data)
PY
}
run() { # name want_rc [args]: run on s, report lines (summary dropped) in got
  local name=$1 want=$2; shift 2
  "$V" "$@" s >out 2>err; local rc=$?
  [ "$rc" = "$want" ] || { echo "FAIL $name: exit $rc, want $want"; cat out err; fail=1; }
  grep -v ' errors\?, [0-9]* warnings\?;' out >got
}
same() { # name: got vs want
  diff -u want got >/dev/null || { echo "FAIL $1:"; diff -u want got; fail=1; }
}

mk; k=$(key_of utt00001); flip utt00001 1000 2
run payload 1
echo "s: error: feat $k (id utt00001): payload checksum mismatch: cache-prune --damaged removes it, and featurize run again stores it anew" >want; same payload
"$V" --status s >out 2>err; rc=$?
[ $rc = 1 ] && [ ! -s out ] && [ ! -s err ] || { echo "FAIL payload --status: exit $rc"; fail=1; }

mk; k=$(key_of utt00002); flip utt00002 9 0
run header 1 --json -q
"$FC_PYTHON" - "$k" <<'PY' || fail=1
import json, sys
r = json.load(open("out"))
assert r["ok"] is False and r["error_count"] == 1, r
assert r["errors"] == [{"id": "utt00002", "key": sys.argv[1], "db": "feat",
                        "problem": "header checksum mismatch: cache-prune --damaged removes it, and featurize run again stores it anew"}], r["errors"]
PY

mk; k=$(key_of utt00000); flip utt00000 key 0
k2=$("$FC_PYTHON" -c "import sys; b=bytearray.fromhex(sys.argv[1]); b[15]^=1; print(b.hex())" "$k")
run key 1
cfg=$(grep -o 'hifigan [0-9a-f]\{32\}' out | head -1)
cat >want <<W
s: error: feat $k (id utt00000): missing: no feature record for mel config $cfg
s: warning: feat $k2: orphan: no audio entry refers to this record (config $cfg): cache-prune removes it
W
same key
run key-strict 1 --strict   # still 1; and a warning alone fails only with --strict (below)

mk; size=$(stat -c %s s/data.mdb); truncate -s $((size / 2)) s/data.mdb
run truncated 1
grep -q "^s: error: env data.mdb: truncated: $((size / 2)) bytes, but the last committed page ([0-9]*) ends at byte [0-9]*; nothing else was read$" got \
  || { echo "FAIL truncated:"; cat got; fail=1; }
[ "$(wc -l <got)" = 1 ] || { echo "FAIL truncated: more than one line"; cat got; fail=1; }
# the page of the audio entries zeroed (a copy with a hole): LMDB meets a page of the wrong type
# (and asserts, then aborts, on some): a finding, exit 1 — not exit 2 as a run that could not be
# made, nor an abort
mk
cp -r s s2
"$FC_PYTHON" - "$(awk 'NR == 1 {print $1}' keys)" <<'PY'
import sys
data = bytearray(open("s/data.mdb", "rb").read())
page = data.find(sys.argv[1].encode()) // 4096 * 4096
data[page:page + 4096] = bytes(4096)
open("s/data.mdb", "wb").write(data)
PY
run zeroed 1
grep -q "^s: error: env data.mdb: B-tree damaged (LMDB: .*); the checks after it were not made$" got \
  || { echo "FAIL zeroed:"; cat got; fail=1; }
# with a sound copy, as one dataset: the merged walk meets the page too
"$V" s s2 >out 2>err; rc=$?
[ $rc = 1 ] && grep -q "^dataset: error: env: B-tree damaged (LMDB: .*): the stores were not checked as one dataset$" out ||
  { echo "FAIL zeroed dataset: exit $rc"; cat out err; fail=1; }
rm -rf s2
# a leaf page of small feature records zeroed: LMDB fails the reading transaction on it
# (MDB_CORRUPTED) or asserts in a cursor step; each is a finding, the other records are still
# checked — with one thread (every later read was MDB_BAD_TXN: exit 2, nothing reported) and with
# several (the cursor left on the page crashed the next range's seek)
rm -rf s; "$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make s --n 300 \
  --min-samples 256 --max-samples 700 >keys || { echo "FAIL: the fixture writer failed"; exit 1; }
"$FC_PYTHON" - "$(key_of utt00150)" <<'PY'
import sys
key = bytes.fromhex(sys.argv[1])
data = bytearray(open("s/data.mdb", "rb").read())
assert data.count(key) == 1
page = data.find(key) // 4096 * 4096
data[page:page + 4096] = bytes(4096)
open("s/data.mdb", "r+b").write(data)
PY
for j in 1 4; do
  run "zeroed-feat-j$j" 1 -j $j
  grep -q "^s: error: audio utt00150: B-tree damaged (LMDB: MDB_CORRUPTED: .*) while reading its records$" got &&
    grep -q "^s: error: feat: B-tree damaged (LMDB: .*) while reading keys [0-9a-f][0-9a-f]\.\.$" got &&
    ! grep -q "MDB_BAD_TXN\|checks after it were not made" got ||
    { echo "FAIL zeroed-feat-j$j:"; cat got; fail=1; }
  grep -q "s: [0-9]* errors, 0 warnings; 29[0-9] records" out || { echo "FAIL zeroed-feat-j$j: the other records"; cat out; fail=1; }
  [ $j = 1 ] && cp got got1 || { diff -u got1 got || { echo "FAIL zeroed-feat: -j 4 reports otherwise"; fail=1; }; }
done

# values rewritten through lmdb with valid checksums: a huge shape, and NaN (found with --finite)
mk
"$FC_PYTHON" - "$(key_of utt00003)" "$(key_of utt00004)" <<'PY'
import importlib.util, lmdb, os, struct, sys
spec = importlib.util.spec_from_file_location("f", os.path.join(os.environ["FC_SRC"], "tests/reference/test_verify_store.py"))
f = importlib.util.module_from_spec(spec); spec.loader.exec_module(f)
env = lmdb.open("s", max_dbs=8)
feat = env.open_db(b"feat")
with env.begin(write=True) as t:
    k3, k4 = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
    v = bytes(t.get(k3, db=feat))
    head = bytearray(v[:56])
    struct.pack_into("<IIQ", head, 8, 0xffffffff, 80, 0xffffffff * 320)
    t.put(k3, bytes(head) + struct.pack("<Q", f.h64(bytes(head))) + v[64:], db=feat)
    v = bytes(t.get(k4, db=feat))
    frames, bins = struct.unpack_from("<II", v, 8)
    pay = bytearray(v[64:]); struct.pack_into("<f", pay, 4 * (bins * 10 + 79), float("inf"))
    t.put(k4, f.record(bytes(pay), 1, frames, bins, 2, v[32:48]), db=feat)
env.close()
PY
run values 1 --finite
grep -q "^s: error: feat $(key_of utt00003) (id utt00003): header says 1374389534400 payload bytes, value holds [0-9]*: cache-prune --damaged removes it, and featurize run again stores it anew$" got \
  || { echo "FAIL huge shape"; cat got; fail=1; }
grep -q "^s: error: feat $(key_of utt00004) (id utt00004): payload holds Inf at element 879 (frame 10, bin 79)$" got \
  || { echo "FAIL inf"; cat got; fail=1; }
[ "$(wc -l <got)" = 2 ] || { echo "FAIL values: want 2 lines"; cat got; fail=1; }
run values-no-finite 1
[ "$(wc -l <got)" = 1 ] || { echo "FAIL values without --finite: want 1 line"; cat got; fail=1; }
run max-errors 1 --finite --max-errors 1
grep -q '^s: stopped after 1 error (--max-errors)$' got || { echo "FAIL max-errors"; cat got; fail=1; }

# LMDB's free list (db 0: the pages freed, which the next write reuses) damaged: no read touches it,
# so the store passed while featurize, tokenize, cache-config --drop and cache-prune (--compact
# too) all failed on it, or would put data where no page is. Its root page zeroed (a hole), then a
# page number in it past the file's last page: each one error, the other checks made.
. "$FC_SRC/tests/cli/free_list.bash"
free_list() { # zero | far | live | twice | lost: pages freed first (a value written, then
  # deleted), then the damage
  free_pages s || return 1
  "$FC_PYTHON" - "$1" <<'PY'
import struct, sys
data = bytearray(open("s/data.mdb", "rb").read())
# the meta page of the later transaction (id at 144), its free db's root (at 80)
txnid, root = max((struct.unpack_from("<Q", data, p + 144)[0], struct.unpack_from("<Q", data, p + 80)[0]) for p in (0, 4096))
page = root * 4096
def leaf_nodes(page):  # (node offset, flags, key) of a leaf page's nodes
    lower = struct.unpack_from("<H", data, page + 12)[0]
    assert lower > 16 and struct.unpack_from("<H", data, page + 10)[0] == 2, "no leaf page"
    for i in range((lower - 16) // 2):
        node = page + struct.unpack_from("<H", data, page + 16 + 2 * i)[0]
        flags, ksize = struct.unpack_from("<HH", data, node + 4)
        yield node, flags, bytes(data[node + 8:node + 8 + ksize])
if sys.argv[1] == "zero":
    data[page:page + 4096] = bytes(4096)
else:  # the first node of the root leaf: 8-byte header, its key (a transaction id), its ids
    node, flags, key = next(leaf_nodes(page))
    ids = node + 8 + len(key)
    if flags & 1:  # the ids on an overflow page
        ids = struct.unpack_from("<Q", data, ids)[0] * 4096 + 16
    count = struct.unpack_from("<Q", data, ids)[0]
    assert count >= 2, count
    if sys.argv[1] == "far":
        struct.pack_into("<Q", data, ids + 8, (1 << 40) - 1)
    elif sys.argv[1] == "twice":
        struct.pack_into("<Q", data, ids + 16, struct.unpack_from("<Q", data, ids + 8)[0])
    elif sys.argv[1] == "lost":  # its last id dropped: the list (count, then ids) one shorter
        size = struct.unpack_from("<H", data, node)[0] | struct.unpack_from("<H", data, node + 2)[0] << 16
        struct.pack_into("<HH", data, node, (size - 8) & 0xFFFF, (size - 8) >> 16)
        struct.pack_into("<Q", data, ids, count - 1)
    else:  # live: its first id the root page of the feat db (the main db's root leaf names it)
        main_root = max((struct.unpack_from("<Q", data, p + 144)[0], struct.unpack_from("<Q", data, p + 128)[0]) for p in (0, 4096))[1]
        feat = [n for n, f, k in leaf_nodes(main_root * 4096) if k == b"feat"][0]
        feat_root = struct.unpack_from("<Q", data, feat + 8 + 4 + 40)[0]
        struct.pack_into("<Q", data, ids + 8, feat_root)
        print(feat_root)
open("s/data.mdb", "r+b").write(data)
PY
}
mk
free_list zero || { echo "FAIL: damaging the free list"; fail=1; }
run free-list-zeroed 1
[ "$(cat got)" = "s: error: env data.mdb: free list damaged (LMDB: MDB_CORRUPTED: Located page was wrong type): the store reads, but writes fail on it or could overwrite data (featurize, tokenize, cache-config --drop, cache-prune); cache-merge -o NEW STORE copies it into a new store" ] ||
  { echo "FAIL free list zeroed"; cat got; fail=1; }
grep -q "^s: 1 error, 0 warnings; 40 records" out || { echo "FAIL free list zeroed: the records unchecked"; cat out; fail=1; }
mk
free_list far || { echo "FAIL: damaging the free list"; fail=1; }
run free-list-far 1
grep -qx "s: error: env data.mdb: free list damaged (it names page 1099511627775, not a page of the file (2\.\.[0-9]*)): the store reads, but writes fail on it .*" got ||
  { echo "FAIL free list page number"; cat got; fail=1; }
# a page number in it that the feat db's B-tree uses (a flipped bit): the next write would be
# handed that page and write over the B-tree; a page named twice would be handed out twice; a page
# left off it (neither in a B-tree nor free) is space no write reuses. No read reaches any of them.
mk
pg=$(free_list live) || { echo "FAIL: damaging the free list"; fail=1; }
run free-list-live 1
[ "$(cat got)" = "s: error: env data.mdb: free list damaged (it names page $pg, which the feat B-tree uses): the store reads, but writes fail on it or could overwrite data (featurize, tokenize, cache-config --drop, cache-prune); cache-merge -o NEW STORE copies it into a new store" ] ||
  { echo "FAIL free list names a live page"; cat got; fail=1; }
grep -q "^s: 1 error, 0 warnings; 40 records" out || { echo "FAIL free list live: the records unchecked"; cat out; fail=1; }
"$FC_BIN/cache-merge" -q -o new s && "$V" -q new >/dev/null 2>&1 ||
  { echo "FAIL free list live: cache-merge -o NEW STORE did not give a sound store"; fail=1; }
rm -rf new
mk
free_list twice || { echo "FAIL: damaging the free list"; fail=1; }
run free-list-twice 1
grep -qx "s: error: env data.mdb: free list damaged (it names page [0-9]* twice): the store reads, .*" got ||
  { echo "FAIL free list names a page twice"; cat got; fail=1; }
mk
free_list lost || { echo "FAIL: damaging the free list"; fail=1; }
run free-list-lost 0
[ "$(cat got)" = "s: warning: env data.mdb: 1 page (0.0 MB) neither in a B-tree nor on the free list: space no write reuses (the pages LMDB counted do not add up); cache-merge -o NEW STORE copies the store into a new one" ] ||
  { echo "FAIL a page off the free list"; cat got; fail=1; }

# a page of a data tree that LMDB's reads would run off (a key size made huge: its reads of that
# leaf crashed cache-verify, SIGSEGV), and a page two trees reach (the text db's root made the
# audio db's). The pages are walked before LMDB reads any: the first stops the run, said; the
# second is said, the checks go on.
tree() { # huge-key | shared
  "$FC_PYTHON" - "$1" <<'PY'
import struct, sys
data = bytearray(open("s/data.mdb", "rb").read())
main_root = max((struct.unpack_from("<Q", data, p + 144)[0], struct.unpack_from("<Q", data, p + 128)[0]) for p in (0, 4096))[1]
def nodes(page):
    lower = struct.unpack_from("<H", data, page + 12)[0]
    for i in range((lower - 16) // 2):
        yield page + struct.unpack_from("<H", data, page + 16 + 2 * i)[0]
def db_root(name):  # its MDB_db in the main db's root leaf: the root at 40
    for n in nodes(main_root * 4096):
        ksize = struct.unpack_from("<H", data, n + 6)[0]
        if bytes(data[n + 8:n + 8 + ksize]) == name:
            return n + 8 + ksize + 40
root_at = db_root(b"audio")
if sys.argv[1] == "huge-key":
    page = struct.unpack_from("<Q", data, root_at)[0]
    while struct.unpack_from("<H", data, page * 4096 + 10)[0] & 1:  # a branch: its first child
        n = next(nodes(page * 4096))
        page = struct.unpack_from("<H", data, n)[0] | struct.unpack_from("<H", data, n + 2)[0] << 16
    struct.pack_into("<H", data, next(nodes(page * 4096)) + 6, 0xFFFF)
    print(page)
else:
    struct.pack_into("<Q", data, db_root(b"text"), struct.unpack_from("<Q", data, root_at)[0])
    print(struct.unpack_from("<Q", data, root_at)[0])
open("s/data.mdb", "r+b").write(data)
PY
}
mk
pg=$(tree huge-key) || { echo "FAIL: damaging a leaf"; fail=1; }
run leaf-key-size 1
[ "$(cat got)" = "s: error: env data.mdb: B-tree damaged (page $pg of the audio db: a key that runs past the page's end (node 0)): LMDB's reads of that page could crash, so the checks after it were not made; the store cannot be read safely: restore it from a copy, or make it again (featurize, tokenize)" ] ||
  { echo "FAIL a leaf's key size"; cat got err; fail=1; }
mk
pg=$(tree shared) || { echo "FAIL: damaging the main db"; fail=1; }
run shared-page 1
grep -qx "s: error: env data.mdb: B-tree damaged (page $pg is reached twice, the second time from the text db): a write to one of its trees frees it while the other still reads it; cache-merge -o NEW STORE copies the store into a new one" got ||
  { echo "FAIL a page two trees reach"; cat got err; fail=1; }

# the newer meta page's transaction id lowered by a flipped bit: LMDB reads the store as of the
# older one, and the newer commit (a value put) is lost, unseen by any read. The next commit
# writes over that page: sound again.
lower_meta_txnid() { # flip | two: a value put (a commit naming more pages), then the newer meta
  # page's transaction id lowered, its top bit flipped or by two
  "$FC_PYTHON" - "$1" <<'PY'
import lmdb, struct, sys
env = lmdb.open("s", max_dbs=8)
with env.begin(write=True) as t:
    t.put(b"scratch", b"x" * 40000, db=env.open_db(b"meta", txn=t))
env.close()
data = bytearray(open("s/data.mdb", "rb").read())
txnid, at = max((struct.unpack_from("<Q", data, p + 144)[0], p + 144) for p in (0, 4096))
if sys.argv[1] == "flip":
    bit = 1 << (txnid.bit_length() - 1)
    assert bit > 1, txnid
    struct.pack_into("<Q", data, at, txnid ^ bit)
else:
    assert txnid >= 2, txnid
    struct.pack_into("<Q", data, at, txnid - 2)
open("s/data.mdb", "r+b").write(data)
PY
}
mk
lower_meta_txnid flip || { echo "FAIL: flipping the meta page's transaction id"; fail=1; }
run meta-txnid 1
grep -qx "s: error: env data.mdb: meta page damaged (page [01] names transaction [0-9]*, page [01] [0-9]*; commits leave two in a row, page id % 2 holding id): the store reads as of transaction [0-9]*; the other page, the newer (it names more pages), is the damaged one: its commit is lost, and featurize or tokenize run again stores what that commit held" got ||
  { echo "FAIL meta page's transaction id"; cat got; fail=1; }
grep -q "^s: 1 error, 0 warnings; 40 records" out || { echo "FAIL meta page: the records unchecked"; cat out; fail=1; }
"$FC_PYTHON" -c '
import lmdb
env = lmdb.open("s", max_dbs=8)
with env.begin(write=True) as t:
    assert t.get(b"scratch", db=env.open_db(b"meta", txn=t)) is None  # the lost commit
    t.put(b"scratch", b"y", db=env.open_db(b"meta", txn=t))
' || { echo "FAIL meta page: the next commit"; fail=1; }
run meta-txnid-rewritten 0
[ -s got ] && { echo "FAIL meta page: not sound after the next commit"; cat got; fail=1; }
# ... and lowered to exactly one below the other page's (3 to 1 beside 2: the ids still look like
# two commits in a row, and every check passed while that commit was lost): the older page names
# more pages than the newer, which no two commits in a row do
mk
lower_meta_txnid two || { echo "FAIL: lowering the meta page's transaction id by two"; fail=1; }
run meta-txnid-in-row 1
grep -qx "s: error: env data.mdb: meta page damaged (page [01] names transaction [0-9]* and [0-9]* pages, page [01] transaction [0-9]* and [0-9]* pages; a commit never names fewer pages than the one before it, so page [01] held a later commit and its transaction id was lowered): the store reads as of transaction [0-9]*; that later commit is lost, and featurize or tokenize run again stores what it held" got ||
  { echo "FAIL meta page's transaction id lowered by two"; cat got; fail=1; }

# the newest meta page's last page number lowered by 3 (a flipped bit there) on a store featurize
# made (its indexes written last): the pages above it that the B-trees hold read as LMDB's error,
# which failed the snapshot's transaction, and the index step's read then failed as MDB_BAD_TXN:
# exit 2, "not checked", that code's text alone. Now an error of the store (exit 1) that
# cache-merge -o NEW STORE gets past.
mkdir w
for i in 1 2 3 4 5 6; do
  sox -n -r 22050 -b 16 "w/u$i.wav" synth 1.$i sine $((150 * i)) || { echo "FAIL: sox"; exit 1; }
done
rm -rf s && "$FC_BIN/featurize" -q --writers 1 --device cpu -o s w/*.wav || fail=1
"$FC_PYTHON" - <<'PY' || { echo "FAIL: lowering the last page"; fail=1; }
import struct
data = bytearray(open("s/data.mdb", "rb").read())
txnid, at = max((struct.unpack_from("<Q", data, p + 144)[0], p + 136) for p in (0, 4096))
struct.pack_into("<Q", data, at, struct.unpack_from("<Q", data, at)[0] - 3)
open("s/data.mdb", "r+b").write(data)
PY
run last-page-lowered 1
grep -qx "s: error: env data.mdb: B-tree damaged (LMDB failed a read of the snapshot: a page past the last page its meta page gives, or a page of the wrong kind); the checks after it were not made" got ||
  { echo "FAIL last page lowered"; cat got out; fail=1; }
"$FC_BIN/cache-merge" -q -o new s && "$V" -q new >/dev/null 2>&1 ||
  { echo "FAIL last page lowered: cache-merge -o NEW STORE did not give a sound store"; fail=1; }
exit $fail
