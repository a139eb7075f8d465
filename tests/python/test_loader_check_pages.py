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
# (FC_PYTHON: under the sanitizer build, the wrapper that preloads ASan, which a bare
# sys.executable child lacks: it would die at start)
PY = os.environ.get("FC_PYTHON") or sys.executable


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
    r = subprocess.run([PY, "-c", code, bad], capture_output=True, text=True,
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


def test_a_set_stop_ends_the_check(stores):
    """fc_loader_opts.stop: a nonzero flag (a signal handler's) ends the check at its next page:
    the open returns FC_EINTR, nothing opened, naming the store (it opened the store unchecked:
    a big store's check from a cold disk reads for minutes, and Ctrl-C was not seen till the end)."""
    import ctypes
    from featcache import _lib
    sound, bad, _ = stores
    L = _lib.lib()
    for path, flag in ((sound, 1), (bad, 1), (sound, 0)):
        o = _lib.Options()
        L.fc_loader_opts_init(ctypes.byref(o))
        o.flags = _lib.FLAG_CHECK_PAGES
        stop = ctypes.c_int(flag)
        o.stop = ctypes.addressof(stop)
        h, why = ctypes.c_void_p(), ctypes.create_string_buffer(512)
        paths = (ctypes.c_char_p * 1)(path.encode())
        rc = L.fc_loader_open(paths, 1, ctypes.byref(o), ctypes.byref(h), why, 512)
        if h.value:
            L.fc_loader_close(h)
        if flag:
            assert rc == _lib.FC_EINTR and not h.value, (path, rc, why.value)
            assert why.value.decode() == ("%s: interrupted while checking its pages: not opened"
                                          % path), why.value
        else:
            assert rc == 0 and h.value, (rc, why.value)


CHILD = r"""
import featcache, gc, os, sys
from featcache import _lib
L, codes = _lib.lib(), []
real = L.fc_loader_open
def recorded(*a):  # what the C open returned (without the check: [] or [0], the signal
    # raised as it returns)
    codes.append(real(*a))
    return codes[-1]
L.fc_loader_open = recorded
try:
    featcache.Loader(sys.argv[1], batch_size=8, check_pages=sys.argv[2] == "1")
    print("opened")
except KeyboardInterrupt:
    print("KeyboardInterrupt")
gc.collect()
fds = []
for f in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink("/proc/self/fd/" + f))
    except OSError:
        pass
maps = {l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith(".mdb")}
print("left open:", sorted(f for f in fds if f.endswith(".mdb")), sorted(maps))
print("open returned:", codes)
"""


@pytest.mark.parametrize("check", [True, False])
def test_ctrl_c_during_the_open_leaves_nothing_open(stores, check):
    """Ctrl-C while a Loader opens its store (stopped at the open's first store open, SIGINT,
    SIGCONT): KeyboardInterrupt, and the store's files and map are not left open for the rest of
    the process (they were: the C open had finished and its loader was dropped unclosed, holding
    its snapshot too). With check_pages the signal ends the check (the C open returns FC_EINTR):
    it was seen only once the whole check had run (minutes on a big store from a cold disk)."""
    import signal
    import time
    cache = os.path.join(os.environ["FC_BIN"], "CMakeCache.txt")
    if "FC_FAULT_INJECTION:BOOL=ON" not in open(cache).read():
        pytest.skip("needs a build with fault hooks (-DFC_FAULT_INJECTION=ON)")
    sound, _, _ = stores
    # (FC_FAULT_WAIT: the check of so small a store waits for its stop flag, else it could end
    # before the waiting thread sets the flag, and the signal would be seen only after the open)
    env = dict(os.environ, FC_FAULT_STOP="store_open:1", FC_FAULT_WAIT="check_pages")
    p = subprocess.Popen([PY, "-c", CHILD, sound, "1" if check else "0"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(400):
            if open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()[0] == "T":
                break
            time.sleep(0.05)
        else:
            pytest.fail("the child never stopped at store_open:1")
        os.kill(p.pid, signal.SIGINT)
        os.kill(p.pid, signal.SIGCONT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert out.splitlines()[:2] == ["KeyboardInterrupt", "left open: [] []"], out + err
    if check:  # the signal stopped the check (FC_EINTR: not the walk run to its last page)
        assert out.splitlines()[2] == "open returned: [%d]" % featcache._lib.FC_EINTR, out + err

if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
