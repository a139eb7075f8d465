#!/usr/bin/env bash
# A flipped bit in a page the store's open itself reads through LMDB — the main db's root (the
# dbs' names), the meta db's root (its format key) — killed every tool that opened the store with
# SIGBUS (a leaf's flags read as a branch's: its values taken for child page numbers past the
# file's end; a node offset past its page) — cache-verify, the tool that says what is wrong,
# cache-merge's check of its inputs, the Loader's check_pages among them. The open now checks
# those pages first (libcache/core/store/extent.c): cache-verify reports the damage (exit 1),
# cache-merge refuses the input as damaged (exit 1, nothing written), featurize into it fails
# with a message naming the store; none crashes.
set -u
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
"$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make good --n 30 --min-samples 4096 \
  --max-samples 6000 >/dev/null || { echo "FAIL: the fixture writer failed"; exit 1; }
"$FC_PYTHON" - <<'PY' || { echo "FAIL: the fixture writer failed"; exit 1; }
import shutil, struct
def damage(name, what):
    shutil.copytree("good", name)
    data = bytearray(open(name + "/data.mdb", "rb").read())
    meta = max((struct.unpack_from("<Q", data, p + 144)[0], p) for p in (0, 4096))[1]
    main = struct.unpack_from("<Q", data, meta + 128)[0]
    page = main
    if what.startswith("meta"):
        lower = struct.unpack_from("<H", data, main * 4096 + 12)[0]
        for i in range((lower - 16) // 2):
            n = main * 4096 + struct.unpack_from("<H", data, main * 4096 + 16 + 2 * i)[0]
            k = struct.unpack_from("<H", data, n + 6)[0]
            if bytes(data[n + 8:n + 8 + k]) == b"meta":
                page = struct.unpack_from("<Q", data, n + 8 + k + 40)[0]
    if what.endswith("flags"):  # every flag bit flipped: a leaf read as a branch
        data[page * 4096 + 10] ^= 0xFF
    else:  # the first node's offset past its page
        data[page * 4096 + 17] ^= 0xFF
    open(name + "/data.mdb", "r+b").write(data)
for what in ("main-flags", "main-offset", "meta-flags", "meta-offset"):
    damage(what, what)
PY
for s in main-flags main-offset meta-flags meta-offset; do
  "$FC_BIN/cache-verify" $s >out 2>err
  rc=$?
  [ $rc = 1 ] && grep -q "^$s: error: env data.mdb: B-tree damaged (a page of the main db or the meta db, which opening the store reads: LMDB: MDB_CORRUPTED: .*): LMDB's reads of that page could crash" out ||
    { echo "FAIL cache-verify $s: exit $rc"; cat out err; fail=1; }
  "$FC_BIN/cache-merge" -o "out-$s" good $s >out 2>err
  rc=$?
  [ $rc = 1 ] && grep -qx "cache-merge: $s: damaged (a page of the main db or the meta db, which opening the store reads: LMDB: MDB_CORRUPTED: .*): LMDB's reads of that page could crash the merge; nothing merged (cache-verify says more; merge the other stores without it)" err ||
    { echo "FAIL cache-merge $s: exit $rc"; cat err; fail=1; }
  [ -e "out-$s" ] && { echo "FAIL cache-merge $s: its output made"; fail=1; }
  "$FC_BIN/cache-config" $s >out 2>err
  rc=$?
  [ $rc -lt 128 ] && grep -q "^cache-config: $s: .*MDB_CORRUPTED" err ||
    { echo "FAIL cache-config $s: exit $rc"; cat err; fail=1; }
done
"$FC_BIN/cache-merge" -q -o m good && "$FC_BIN/cache-verify" -q m >/dev/null ||
  { echo "FAIL the sound store"; fail=1; }
exit $fail
