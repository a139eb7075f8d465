"""cache-bench test fixtures: featcache stores written with py-lmdb straight from docs/FORMAT.md.

Imported by the other test_bench_*.py tests and by tests/cli/bench_*.sh (make_store, addresses);
run as a test it checks that cache-bench accepts these stores as the format says: every record
parses (bad_records 0), every key is read exactly once and the payload bytes add up.

The stores are written independently of the C library on purpose: the bench must agree with the
format, not with code it shares. Keys are random and inserted in random order, so key order
(`sequential`) and map order (`physical`) differ, as in a real store filled by featurize.
"""
import ctypes
import json
import mmap
import os
import random
import struct
import subprocess
import sys
import tempfile

import lmdb
import numpy as np
import xxhash

MEL_FRAMES, MEL_BINS = 500, 80  # 160,000 payload bytes: a ~5.8 s utterance at hop 256, 80 mels


def record(payload: bytes, dim0: int, dim1: int, cfg: bytes) -> bytes:
    """A record: the 64-byte header of docs/FORMAT.md, then the payload (f32)."""
    h = struct.pack("<4sHBBIIQQ16sII", b"FCR1", 64, 1, 2, dim0, dim1, len(payload),
                    xxhash.xxh3_64_intdigest(payload), cfg, 0, 1)
    assert len(h) == 56
    return h + struct.pack("<Q", xxhash.xxh3_64_intdigest(h)) + payload


def make_store(path, n, frames=MEL_FRAMES, mels=MEL_BINS, seed=0, per_txn=64):
    """Write a featcache store of n mel records of frames x mels f32 at path; returns the keys in
    insertion order."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    payload_bytes = frames * mels * 4
    map_size = n * (payload_bytes + 64 + 8192) + (8 << 20)
    env = lmdb.open(str(path), max_dbs=8, map_size=map_size, subdir=True)
    dbs = {name: env.open_db(name.encode()) for name in ("meta", "audio", "text", "feat", "tok")}
    cfg = bytes(rng.getrandbits(8) for _ in range(16))
    keys = [bytes(rng.getrandbits(8) for _ in range(16)) for _ in range(n)]
    with env.begin(write=True) as txn:
        txn.put(b"format", b"featcache/1", db=dbs["meta"])
        txn.put(b"cfg/" + cfg.hex().encode(), b'{"kind":"mel","preset":"hifigan"}', db=dbs["meta"])
    for s in range(0, n, per_txn):
        with env.begin(write=True) as txn:
            for k in keys[s:s + per_txn]:
                pl = nrng.standard_normal(frames * mels, dtype=np.float32).tobytes()
                txn.put(k, record(pl, frames, mels, cfg), db=dbs["feat"])
    env.sync(True)
    env.close()
    return keys


def make_empty_store(path):
    """A featcache store with its dbs but no records."""
    env = lmdb.open(str(path), max_dbs=8, map_size=1 << 20, subdir=True)
    meta = env.open_db(b"meta")
    for name in (b"audio", b"text", b"feat", b"tok"):
        env.open_db(name)
    with env.begin(write=True) as txn:
        txn.put(b"format", b"featcache/1", db=meta)
    env.close()


def make_foreign_env(path):
    """An LMDB environment that is not a featcache store."""
    env = lmdb.open(str(path), map_size=1 << 20, subdir=True)
    with env.begin(write=True) as txn:
        txn.put(b"hello", b"world")
    env.close()


def key_order(path):
    """Keys of db feat in key order (py-lmdb cursor)."""
    env = lmdb.open(str(path), max_dbs=8, readonly=True, lock=False, subdir=True)
    feat = env.open_db(b"feat", create=False)
    with env.begin(db=feat) as txn:
        keys = [bytes(k) for k, _ in txn.cursor()]
    env.close()
    return keys


def addresses(path):
    """{key: offset of its value in data.mdb}, found independently of the C library: py-lmdb
    hands out buffers into its map; their address minus the map's base (/proc/self/maps) is the
    offset in the file."""
    env = lmdb.open(str(path), max_dbs=8, readonly=True, lock=False, subdir=True)
    feat = env.open_db(b"feat", create=False)
    st = os.stat(os.path.join(str(path), "data.mdb"))
    base = None
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and int(parts[4]) == st.st_ino and int(parts[2], 16) == 0:
                base = int(parts[0].split("-")[0], 16)
                break
    assert base is not None, "data.mdb mapping not found"
    out = {}
    with env.begin(db=feat, buffers=True) as txn:
        for k, v in txn.cursor():
            out[bytes(k)] = np.frombuffer(v, dtype=np.uint8).__array_interface__["data"][0] - base
    env.close()
    return out


_libc = ctypes.CDLL(None, use_errno=True)


def resident_fraction(path):
    """mincore over a fresh mmap of the file: fraction of its pages in the page cache."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        m = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
        page = mmap.PAGESIZE
        npages = (size + page - 1) // page
        vec = (ctypes.c_ubyte * npages)()
        # ctypes cannot take the address of a read-only mmap directly: numpy can.
        a = np.frombuffer(m, dtype=np.uint8)
        ptr = a.__array_interface__["data"][0]
        _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        rc = _libc.mincore(ctypes.c_void_p(ptr), ctypes.c_size_t(size), vec)
        del a
        m.close()
        assert rc == 0, os.strerror(ctypes.get_errno())
        return sum(b & 1 for b in vec) / max(npages, 1)


def tool():
    return os.path.join(os.environ.get("FC_BIN", "build"), "cache-bench")


def run_bench(*args, check=True):
    """Run cache-bench; returns (rc, stdout, stderr)."""
    p = subprocess.run([tool(), *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"cache-bench {args} exited {p.returncode}: {p.stderr}")
    return p.returncode, p.stdout, p.stderr


def json_lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def require_tool():
    if not os.access(tool(), os.X_OK):
        print(f"FAIL: {tool()} not built", file=sys.stderr)
        sys.exit(1)


def test_fixture_store_reads_whole():
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "s")
        keys = make_store(store, 24)
        _, out, _ = run_bench("--json", "-q", "-p", "sequential", "-s", "warm", "-b", "5", store)
        objs = json_lines(out)
        passes = [o for o in objs if o["record"] == "pass"]
        assert [p["batch"] for p in passes] == [1, 5]
        for p in passes:
            assert p["bad_records"] == 0, p
            assert p["records"] == 24, p
            assert p["bytes"] == 24 * MEL_FRAMES * MEL_BINS * 4, p
            assert p["stopped"] == "complete", p
        summary = [o for o in objs if o["record"] == "summary"][0]
        assert summary["records"] == 24 and summary["payload_bytes"] == 24 * 160000
        assert sorted(keys) == key_order(store)
        assert set(addresses(store)) == set(keys)


if __name__ == "__main__":
    require_tool()
    import pytest
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
