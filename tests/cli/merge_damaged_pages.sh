#!/usr/bin/env bash
# cache-merge on an input with a page LMDB's reads cannot survive (a leaf's node given the flag of
# a duplicate-data node, as a flipped bit does, in a db that has none: LMDB follows a NULL
# pointer): LMDB trusts its pages, and the merge crashed (SIGSEGV) in its walk of the input. Each input's pages are now checked first, as cache-verify's first step checks them
# (fc_verify_opts.pages_only): refused, exit 1 (--json: "status":"refused"), nothing written,
# the input and the page named; the other inputs merge without it.
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
exit $fail
