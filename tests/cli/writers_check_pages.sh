#!/usr/bin/env bash
# featurize and tokenize --check-pages: an existing STORE (each part of a split one) checked as
# cache-verify's first step checks it before it is opened for writing. A free list naming a page
# the audio B-tree uses (a flipped bit's worth: the run's writes would be handed that page and
# write over the tree) is refused: exit 1, the part and the damage said, data.mdb unchanged
# (--json: the object all the same, every input not started). A
# sound store, and a new one, are written as without the option. Without it, the free list alone
# is checked: a page number past the file's end (a high bit flipped: featurize exited 0 and left
# a store LMDB could not read, tokenize wrote and failed) or one named twice (LMDB aborted) is
# refused the same way; a page in use is not seen (featurize: LMDB aborts, the store said first).
set -u
PY=${FC_PYTHON:-python3}
FZ=$FC_BIN/featurize
TK=$FC_BIN/tokenize
[ -x "$FZ" ] && [ -x "$TK" ] || { echo "FAIL: featurize or tokenize not built"; exit 1; }
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
. "$FC_SRC/tests/cli/free_list.bash"
"$PY" - <<'PY' || exit 1
import math, struct, wave
for name, f in (("a", 5), ("b", 7), ("c", 9)):
    with wave.open(name + ".wav", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / f))) for i in range(22050)))
PY
printf 'a\thello there\nb\tgood morning\n' >t.tsv
printf 'c\tgood evening\n' >t2.tsv

# what the finding says of writes, and the way out, said once (the refusal said cache-merge twice)
writes="the store reads, but writes fail on it or could overwrite data (featurize, tokenize, cache-config --drop, cache-prune); cache-merge -o NEW STORE copies it into a new store"
want() { # TOOL PART: the refusal line
  echo "$1: $2: damaged (env data.mdb: free list damaged (it names page [0-9]*, which the audio B-tree uses): $writes): nothing written (cache-verify says more)"
}
# a plain store, its free list damaged
"$FZ" -q --device cpu -o st a.wav b.wav || fail "featurize st"
"$TK" -q --build-vocab -o st t.tsv || fail "tokenize st"
free_pages st && free_list_damage st live || fail "damaging st's free list"
cp st/data.mdb before.mdb
# with --json the object all the same (stdout was empty): nothing done, the input not started
unbegun() { # TOOL TOTAL_KEY
  "$PY" -c 'import json, sys
o = json.loads(open("out").read())
assert (o["processed"], o["skipped_existing"], o["failed"], o["not_started"], o[sys.argv[1]]) == (0, 0, 0, 1, 1), o' "$2" ||
    fail "$1 --json on the refusal: $(cat out)"
}
"$FZ" -q --json --device cpu --check-pages -o st c.wav >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx "$(want featurize st)" err || { fail "featurize --check-pages: exit $rc"; cat err; }
unbegun featurize total
"$TK" -q --json --build-vocab --check-pages -o st - <t2.tsv >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx "$(want tokenize st)" err || { fail "tokenize --check-pages: exit $rc"; cat err; }
unbegun tokenize lines
cmp -s st/data.mdb before.mdb || fail "the damaged store was written"
# without the option featurize meets the damage in LMDB's allocator, which aborts the process:
# the store and the damage said first (store_lmdb_assert), nothing committed
(ulimit -c 0; exec "$FZ" -q --device cpu -o st c.wav) >out 2>err
rc=$?
[ $rc = 134 ] && grep -qx "featurize: st: damaged (LMDB stopped at a page it cannot use: mdb\.c:[0-9]*: Assertion .*): the process stops here, its transaction in progress not committed (cache-verify says more; cache-merge -o NEW STORE copies it into a sound one; featurize and tokenize --check-pages refuse such a store before writing)" err ||
  { fail "featurize without --check-pages: exit $rc"; cat err; }
cmp -s st/data.mdb before.mdb || fail "the damaged store was written without --check-pages"
# a split store: the damaged part named
"$FZ" -q --device cpu --writers 2 -o sp a.wav b.wav || fail "featurize sp"
part=$("$PY" - <<'PY'
import lmdb
for k in (0, 1):  # a part whose audio db holds an entry (ids are routed by a hash)
    e = lmdb.open("sp/part-%d" % k, max_dbs=8, readonly=True, lock=False)
    with e.begin() as t:
        if t.stat(e.open_db(b"audio", txn=t, create=False))["entries"]:
            print("sp/part-%d" % k)
            break
PY
)
free_pages "$part" && free_list_damage "$part" live || fail "damaging $part's free list"
"$FZ" -q --device cpu --check-pages -o sp c.wav >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx "$(want featurize "$part")" err || { fail "featurize --check-pages (split): exit $rc"; cat err; }
# without the option: the free list alone (its page numbers in the file, each named once)
for mode in past twice; do
  case $mode in
  past) finding="it names page [0-9]*, not a page of the file (2\.\.[0-9]*)" ;;
  twice) finding="it names page [0-9]* twice" ;;
  esac
  for tool in featurize tokenize; do
    rm -rf d && "$FZ" -q --device cpu -o d a.wav b.wav && "$TK" -q --build-vocab -o d t.tsv ||
      fail "$mode $tool: the store"
    free_pages d && free_list_damage d $mode || fail "$mode: damaging d's free list"
    cp d/data.mdb d.mdb
    if [ $tool = featurize ]; then
      (ulimit -c 0; exec "$FZ" -q --device cpu -o d c.wav) >out 2>err
    else
      (ulimit -c 0; exec "$TK" -q --build-vocab -o d t2.tsv) >out 2>err
    fi
    rc=$?
    [ $rc = 1 ] && grep -qx "$tool: d: damaged (env data.mdb: free list damaged ($finding): $writes): nothing written (cache-verify says more)" err ||
      { fail "$mode $tool without --check-pages: exit $rc"; cat err; }
    cmp -s d/data.mdb d.mdb || fail "$mode $tool without --check-pages: the damaged store was written"
  done
done
# a page LMDB's reads could crash on (a leaf node of the audio db given a duplicate-data flag):
# refused, and not sent to cache-merge, which refuses to read such a store (it said "cache-merge
# -o NEW STORE copies it into a sound one")
"$FZ" -q --device cpu -o us a.wav b.wav || fail "featurize us"
"$PY" - us <<'PY' || fail "damaging us"
import struct, sys
data = bytearray(open(sys.argv[1] + "/data.mdb", "rb").read())
def nodes(page):
    for i in range((struct.unpack_from("<H", data, page * 4096 + 12)[0] - 16) // 2):
        yield page * 4096 + struct.unpack_from("<H", data, page * 4096 + 16 + 2 * i)[0]
meta = max((struct.unpack_from("<Q", data, p + 144)[0], p) for p in (0, 4096))[1]
for n in nodes(struct.unpack_from("<Q", data, meta + 128)[0]):
    k = struct.unpack_from("<H", data, n + 6)[0]
    if bytes(data[n + 8:n + 8 + k]) == b"audio":
        page = struct.unpack_from("<Q", data, n + 8 + k + 40)[0]
assert not struct.unpack_from("<H", data, page * 4096 + 10)[0] & 1  # a leaf: two entries
n = next(nodes(page))
struct.pack_into("<H", data, n + 4, struct.unpack_from("<H", data, n + 4)[0] | 4)
open(sys.argv[1] + "/data.mdb", "r+b").write(data)
PY
cp us/data.mdb us.mdb
for tool in featurize tokenize; do
  if [ $tool = featurize ]; then
    "$FZ" -q --device cpu --check-pages -o us c.wav >out 2>err
  else
    "$TK" -q --build-vocab --check-pages -o us t2.tsv >out 2>err
  fi
  rc=$?
  [ $rc = 1 ] && grep -qx "$tool: us: damaged (env data\.mdb: B-tree damaged (page [0-9]* of the audio db: a node with flags no featcache db's entries have (node 0)): .*: restore it from a copy, or make it again (featurize, tokenize)): nothing written (cache-verify says more)" err ||
    { fail "$tool --check-pages on a page reads could crash on: exit $rc"; cat err; }
done
"$FC_BIN/cache-merge" -q -o copied us >out 2>err && fail "cache-merge read the store it is not sent to"
cmp -s us/data.mdb us.mdb || fail "the store with a malformed page was written"
# a B-tree page whose header names another page (a flipped bit): LMDB's reads do not look, but the
# write that changes the page frees the number in its header (here past the file's end, which the
# next write is handed); --check-pages passed it and featurize wrote, cache-verify said clean
misnumber() { # DIR: the audio db's root page given another page's number in its header
  "$PY" - "$1" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1] + "/data.mdb", "rb").read())
meta = max((struct.unpack_from("<Q", data, p + 144)[0], p) for p in (0, 4096))[1]
main = struct.unpack_from("<Q", data, meta + 128)[0] * 4096
for i in range((struct.unpack_from("<H", data, main + 12)[0] - 16) // 2):
    n = main + struct.unpack_from("<H", data, main + 16 + 2 * i)[0]
    k = struct.unpack_from("<H", data, n + 6)[0]
    if bytes(data[n + 8:n + 8 + k]) == b"audio":
        page = struct.unpack_from("<Q", data, n + 8 + k + 40)[0]
struct.pack_into("<Q", data, page * 4096, page + 1000)
open(sys.argv[1] + "/data.mdb", "r+b").write(data)
PY
}
"$FZ" -q --device cpu -o mn a.wav b.wav || fail "featurize mn"
misnumber mn || fail "damaging mn"
cp mn/data.mdb mn.mdb
"$FZ" -q --device cpu --check-pages -o mn c.wav >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx "featurize: mn: damaged (env data\.mdb: B-tree damaged (page \([0-9]*\) of the audio db: its header names page [0-9]*): LMDB's reads do not look, but a write that changes the page frees page [0-9]* in its place; .*): nothing written (.*)" err ||
  { fail "featurize --check-pages on a misnumbered page: exit $rc"; cat err; }
cmp -s mn/data.mdb mn.mdb || fail "the store with a misnumbered page was written"
# both on one page, misnumbered and a node reads could crash on: the refusals name the node, the
# finding that stopped the walk (they named the other, sorted after it, as one reads could crash on)
cp -r us two && misnumber two || fail "damaging two"
"$FZ" -q --device cpu --check-pages -o two c.wav >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx "featurize: two: damaged (env data\.mdb: B-tree damaged (page [0-9]* of the audio db: a node with flags no featcache db's entries have (node 0)): .*): nothing written (cache-verify says more)" err ||
  { fail "featurize --check-pages, two damages on a page: exit $rc"; cat err; }
"$FC_BIN/cache-merge" -q -o merged two >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx "cache-merge: two: damaged (page [0-9]* of the audio db: a node with flags no featcache db's entries have (node 0)): LMDB's reads of that page could crash the merge; .*" err ||
  { fail "cache-merge, two damages on a page: exit $rc"; cat err; }
# a store this user may only read is checked, not written ("A store you may only read"): its
# free list, which no read touches, is no reason to refuse (the Makefile step of a complete
# read-only cache failed, exit 1, "nothing written"); a page LMDB's reads could crash on still is
. "$FC_SRC/tests/cli/as_owner.bash"
cp -r st ro && cp -r d rod && cp -r us rous && chmod -R a-w ro rod rous # free lists: live, twice
for r in ro rod; do
  for opt in "" --check-pages; do
    "${as_owner[@]}" "$FZ" -q --device cpu $opt -o $r a.wav b.wav >out 2>err
    rc=$?
    [ $rc = 0 ] && [ ! -s err ] || { fail "featurize $opt on read-only $r, its free list damaged: exit $rc"; cat err; }
    "${as_owner[@]}" "$TK" -q --build-vocab $opt -o $r t.tsv >out 2>err
    rc=$?
    [ $rc = 0 ] && [ ! -s err ] || { fail "tokenize $opt on read-only $r, its free list damaged: exit $rc"; cat err; }
  done
done
"${as_owner[@]}" "$FZ" --device cpu -o ro a.wav b.wav c.wav >out 2>err
rc=$?
[ $rc = 2 ] && grep -qx "featurize: ro: 1 of 3 inputs not stored, and the store cannot be written (Permission denied): .*" err ||
  { fail "featurize on a read-only store that lacks an input: exit $rc"; cat err; }
"${as_owner[@]}" "$FZ" -q --device cpu --check-pages -o rous a.wav >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx "featurize: rous: damaged (env data\.mdb: B-tree damaged (page [0-9]* of the audio db: .*): nothing written (cache-verify says more)" err ||
  { fail "featurize --check-pages on a read-only store with a malformed page: exit $rc"; cat err; }
cmp -s ro/data.mdb st/data.mdb && cmp -s rod/data.mdb d/data.mdb && cmp -s rous/data.mdb us.mdb ||
  fail "a read-only store was written"
chmod -R u+w ro rod rous
# sound and new stores: written as without the option
"$FZ" -q --device cpu -o ok a.wav || fail "featurize ok"
"$FZ" -q --device cpu --check-pages -o ok b.wav || fail "featurize --check-pages on a sound store: exit $?"
"$TK" -q --build-vocab --check-pages -o ok t.tsv || fail "tokenize --check-pages on a sound store: exit $?"
"$FZ" -q --device cpu --check-pages -o new a.wav || fail "featurize --check-pages on a new store: exit $?"
"$FC_BIN/cache-verify" -q ok new >/dev/null || fail "the stores written with --check-pages do not verify"

[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
