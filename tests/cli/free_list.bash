# Sourced by the tests that damage LMDB's free list (cli/prune_usage, cli/config_drop_damaged,
# cli/verify_damage):
# pages freed in a store, then its free list damaged, as LMDB 0.9 lays pages out. Needs FC_PYTHON
# with the lmdb module.

# free_pages DIR: a value written, then deleted: the free list then names pages
free_pages() {
  "$FC_PYTHON" - "$1" <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=8)
meta = env.open_db(b"meta")
with env.begin(write=True) as t:
    t.put(b"scratch", b"x" * 40000, db=meta)
with env.begin(write=True) as t:
    t.delete(b"scratch", db=meta)
env.close()
PY
}

# free_list_damage DIR zero | live | past | twice: the free list's root page zeroed, or its first
# page number made the root page of the audio db (a flipped bit's worth: the next write is handed a
# live page), a page past the file's last (a high bit flipped), or the second's (one page twice)
free_list_damage() {
  "$FC_PYTHON" - "$@" <<'PY'
import struct, sys
path = sys.argv[1] + "/data.mdb"
data = bytearray(open(path, "rb").read())
meta = max((struct.unpack_from("<Q", data, p + 144)[0], p) for p in (0, 4096))[1]
root = struct.unpack_from("<Q", data, meta + 80)[0] * 4096
if sys.argv[2] == "zero":
    data[root:root + 4096] = bytes(4096)
else:
    def nodes(page):
        for i in range((struct.unpack_from("<H", data, page + 12)[0] - 16) // 2):
            n = page + struct.unpack_from("<H", data, page + 16 + 2 * i)[0]
            yield n, bytes(data[n + 8:n + 8 + struct.unpack_from("<H", data, n + 6)[0]])
    main = struct.unpack_from("<Q", data, meta + 128)[0] * 4096
    audio = [n + 8 + len(k) + 40 for n, k in nodes(main) if k == b"audio"][0]
    n, key = next(nodes(root))
    ids = n + 8 + len(key)
    if struct.unpack_from("<H", data, n + 4)[0] & 1:  # the ids on an overflow page
        ids = struct.unpack_from("<Q", data, ids)[0] * 4096 + 16
    if sys.argv[2] == "live":
        struct.pack_into("<Q", data, ids + 8, struct.unpack_from("<Q", data, audio)[0])
    elif sys.argv[2] == "past":
        struct.pack_into("<Q", data, ids + 8, struct.unpack_from("<Q", data, meta + 136)[0] + 100)
    else:  # twice
        assert struct.unpack_from("<Q", data, ids)[0] >= 2
        struct.pack_into("<Q", data, ids + 16, struct.unpack_from("<Q", data, ids + 8)[0])
open(path, "r+b").write(data)
PY
}
