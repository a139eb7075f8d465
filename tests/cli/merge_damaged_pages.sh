#!/usr/bin/env bash
# cache-merge on an input with a page LMDB's reads cannot survive (a leaf's node given the flag of
# a duplicate-data node, as a flipped bit does, in a db that has none: LMDB follows a NULL
# pointer): LMDB trusts its pages, and the merge crashed (SIGSEGV) in its walk of the input. Each input's pages are now checked first, as cache-verify's first step checks them
# (fc_verify_opts.pages_only): refused, exit 1 (--json: "status":"refused"), nothing written,
# the input and the page named; the other inputs merge without it. And an existing OUT whose
# free list is damaged is refused before the merge writes into it.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "FAIL: $M not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
for s in good bad; do
  "$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make $s --n 40 --min-samples 10240 \
    --max-samples 12000 >/dev/null || { echo "FAIL: the fixture writer failed"; exit 1; }
done
pg=$("$FC_PYTHON" - <<'PY'
import struct
data = bytearray(open("bad/data.mdb", "rb").read())
main_root = max((struct.unpack_from("<Q", data, p + 144)[0], struct.unpack_from("<Q", data, p + 128)[0]) for p in (0, 4096))[1]
def nodes(page):
    for i in range((struct.unpack_from("<H", data, page + 12)[0] - 16) // 2):
        yield page + struct.unpack_from("<H", data, page + 16 + 2 * i)[0]
for n in nodes(main_root * 4096):
    ksize = struct.unpack_from("<H", data, n + 6)[0]
    if bytes(data[n + 8:n + 8 + ksize]) == b"audio":
        page = struct.unpack_from("<Q", data, n + 8 + ksize + 40)[0]
while struct.unpack_from("<H", data, page * 4096 + 10)[0] & 1:  # a branch: its first child
    n = next(nodes(page * 4096))
    page = struct.unpack_from("<H", data, n)[0] | struct.unpack_from("<H", data, n + 2)[0] << 16
node = next(nodes(page * 4096))  # a duplicate-data node (flag 4): LMDB follows a NULL pointer
struct.pack_into("<H", data, node + 4, struct.unpack_from("<H", data, node + 4)[0] | 4)
open("bad/data.mdb", "r+b").write(data)
print(page)
PY
) || { echo "FAIL: damaging a leaf"; exit 1; }
"$M" -o out good bad >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] || { echo "FAIL merge of a damaged input: exit $rc, want 1"; cat err.txt; fail=1; }
[ "$(cat err.txt)" = "cache-merge: bad: damaged (page $pg of the audio db: a node with flags no featcache db's entries have (node 0)): LMDB's reads of that page could crash the merge; nothing merged (cache-verify says more; merge the other stores without it)" ] ||
  { echo "FAIL merge of a damaged input: message"; cat err.txt; fail=1; }
[ -e out ] && { echo "FAIL merge of a damaged input: out written"; fail=1; }
"$M" --json -o out bad >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] && grep -q '"status":"refused"' out.txt ||
  { echo "FAIL --json: exit $rc"; cat out.txt err.txt; fail=1; }
"$M" -q -o out good && "$FC_BIN/cache-verify" -q out >/dev/null ||
  { echo "FAIL the other input without it"; fail=1; }

# An existing OUT whose free list names a page its audio B-tree uses: the merge's writes would be
# handed that page and write over the tree. OUT's pages are checked first: refused, exit 1,
# nothing written; a sound OUT is merged into as before.
. "$FC_SRC/tests/cli/free_list.bash"
# (more: 60 utterances, the first 40 with out's ids and other audio: --prefer last takes them)
"$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make more --n 60 --seed 7 \
  --min-samples 10240 --max-samples 12000 >/dev/null || { echo "FAIL: the fixture writer failed"; exit 1; }
free_pages out && free_list_damage out live || { echo "FAIL: damaging out's free list"; exit 1; }
cp out/data.mdb out.before
"$M" --json --prefer last -o out more >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] && grep -q '"status":"refused"' out.txt ||
  { echo "FAIL merge into a damaged OUT: exit $rc, want 1 and refused"; cat out.txt err.txt; fail=1; }
grep -qx "cache-merge: out: damaged (env data.mdb: free list damaged (it names page [0-9]*, which the audio B-tree uses): .*): nothing merged into it (cache-verify says more; merge into a new store)" err.txt ||
  { echo "FAIL merge into a damaged OUT: message"; cat err.txt; fail=1; }
cmp -s out/data.mdb out.before || { echo "FAIL merge into a damaged OUT: data.mdb changed"; fail=1; }
"$M" -q --prefer last -o good more 2>/dev/null && "$FC_BIN/cache-verify" -q good >/dev/null ||
  { echo "FAIL merge into a sound OUT"; fail=1; }
exit $fail
