"""Loader(check_pages=True): the stores' pages checked before they are opened, as cache-verify's
first step checks them. A leaf node given a flag no featcache db has (a flipped bit: LMDB then
follows a NULL pointer when it reads that node) raises FeatcacheError naming the page and the db,
instead of the loader's reads crashing the process; a sound store loads as without the check, and
a damaged free list (which no read touches) is no reason to refuse."""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

try:
    import lmdb  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import testing as T

PAGE = 4096


def nodes(data, page):
    lower = struct.unpack_from("<H", data, page * PAGE + 12)[0]
    for i in range((lower - 16) // 2):
        yield page * PAGE + struct.unpack_from("<H", data, page * PAGE + 16 + 2 * i)[0]


def newest_meta(data):
    return max((struct.unpack_from("<Q", data, p + 144)[0], p) for p in (0, PAGE))[1]


def audio_leaf(data):
    """The first leaf page of the audio db (LMDB 0.9's layout)."""
    main_root = struct.unpack_from("<Q", data, newest_meta(data) + 128)[0]
    for n in nodes(data, main_root):
        ksize = struct.unpack_from("<H", data, n + 6)[0]
        if bytes(data[n + 8:n + 8 + ksize]) == b"audio":
            page = struct.unpack_from("<Q", data, n + 8 + ksize + 40)[0]
    while struct.unpack_from("<H", data, page * PAGE + 10)[0] & 1:  # a branch: its first child
        n = next(nodes(data, page))
        page = struct.unpack_from("<H", data, n)[0] | struct.unpack_from("<H", data, n + 2)[0] << 16
    return page


@pytest.fixture(scope="module")
def stores():
    d = tempfile.mkdtemp(prefix="fc_check_pages_")
    rng = np.random.default_rng(5)
    sound = os.path.join(d, "sound")
    with T.StoreWriter(sound) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(40):
            w.add_utterance("u%03d" % i, b"a%d" % i, rng.standard_normal((30 + i, 80)).astype(
                np.float32), cfg)
    bad = os.path.join(d, "bad")
    shutil.copytree(sound, bad)
    data = bytearray(open(os.path.join(bad, "data.mdb"), "rb").read())
    page = audio_leaf(data)
    node = next(nodes(data, page))  # a duplicate-data node (flag 4), which featcache has none of
    struct.pack_into("<H", data, node + 4, struct.unpack_from("<H", data, node + 4)[0] | 4)
    open(os.path.join(bad, "data.mdb"), "r+b").write(data)
    yield sound, bad, page
    shutil.rmtree(d)


def ids_of(ld):
    return [i for b in ld for i in b.ids]


def test_sound_store_loads_the_same(stores):
    sound, _, _ = stores
    with featcache.Loader(sound, batch_size=8) as a, \
            featcache.Loader(sound, batch_size=8, check_pages=True) as b:
        assert ids_of(b) == ids_of(a)
        assert len(ids_of(a)) == 40


def test_damaged_page_refused(stores):
    _, bad, page = stores
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader(bad, batch_size=8, check_pages=True)
    msg = str(e.value)
    assert ("bad: damaged (B-tree damaged (page %d of the audio db: a node with flags no "
            "featcache db's entries have (node 0))" % page) in msg, msg
    assert "not opened (cache-verify says more)" in msg, msg
    assert e.value.code == -31900, e.value.code  # FC_EFORMAT


def test_the_finding_that_stopped_the_walk_is_said(stores, tmp_path):
    """The damaged page's number in its header changed too (a write's hazard, found first and
    sorted after the node's finding): the error names the node, which reads could crash on."""
    _, bad, page = stores
    two = str(tmp_path / "two")
    shutil.copytree(bad, two)
    data = bytearray(open(os.path.join(two, "data.mdb"), "rb").read())
    struct.pack_into("<Q", data, page * PAGE, page + 1000)
    open(os.path.join(two, "data.mdb"), "r+b").write(data)
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader(two, batch_size=8, check_pages=True)
    msg = str(e.value)
    assert ("two: damaged (B-tree damaged (page %d of the audio db: a node with flags no "
            "featcache db's entries have (node 0))" % page) in msg, msg


def test_without_the_check_the_read_is_unguarded(stores):
    """What the option is for: the same store opened without it, in a child process, is not
    refused at open: LMDB reads the node (the child crashes or fails; the parent goes on)."""
    _, bad, _ = stores
    code = ("import featcache, sys\n"
            "ld = featcache.Loader(sys.argv[1], batch_size=8)\n"
            "print(sum(len(b.ids) for b in ld))\n")
    r = subprocess.run([sys.executable, "-c", code, bad], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and "not opened (cache-verify says more)" not in r.stderr
    print("without check_pages: exit %d, %s" % (r.returncode, (r.stderr.strip().splitlines() or
                                                               ["no error"])[-1]))


def test_free_list_damage_is_no_reason(stores, tmp_path):
    """A free list naming a page a B-tree uses is a writer's danger (cache-verify reports it);
    a reader never reads the free list: check_pages opens such a store."""
    sound, _, _ = stores
    fl = str(tmp_path / "fl")
    shutil.copytree(sound, fl)
    env = lmdb.open(fl, max_dbs=8)
    meta = env.open_db(b"meta")
    with env.begin(write=True) as t:
        t.put(b"scratch", b"x" * 40000, db=meta)
    with env.begin(write=True) as t:
        t.delete(b"scratch", db=meta)
    env.close()
    data = bytearray(open(os.path.join(fl, "data.mdb"), "rb").read())
    meta_off = newest_meta(data)
    free_root = struct.unpack_from("<Q", data, meta_off + 80)[0]
    n = next(nodes(data, free_root))
    ids = n + 8 + struct.unpack_from("<H", data, n + 6)[0]
    struct.pack_into("<Q", data, ids + 8, audio_leaf(data))  # the free list names a live page
    open(os.path.join(fl, "data.mdb"), "r+b").write(data)
    r = subprocess.run([os.path.join(os.environ["FC_BIN"], "cache-verify"), fl],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "free list damaged" in r.stdout + r.stderr, r.stdout + r.stderr
    with featcache.Loader(fl, batch_size=8, check_pages=True) as ld:
        assert len(ids_of(ld)) == 40


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
