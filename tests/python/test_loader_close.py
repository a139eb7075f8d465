"""featcache.Loader as a context manager, and what closing it does: `with featcache.Loader(...) as
ld:` closes the store's files (data.mdb, lock.mdb) when the block ends — at once, not at the next
garbage collection — unless an array of it is still held, which keeps its memory valid and the
files open until it goes; close() may be called again; a closed Loader refuses to be used
(ValueError) instead of opening the store again; featcache.get keeps a bounded number of stores
open. A plain script over a store written by
featcache.testing."""

import gc
import os
import shutil
import signal
import sys
import tempfile
import traceback

import numpy as np
import pytest

import featcache
from featcache import testing as T

N = 10


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_loader_close_")
    path = os.path.join(d, "s")
    rng = np.random.default_rng(3)
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(N):
            w.add_utterance("u%02d" % i, b"%d" % i, rng.standard_normal((40 + 3 * i, 80)).astype(
                np.float32), cfg)
    yield path
    shutil.rmtree(d)


@pytest.fixture(autouse=True)
def no_gc():
    """Closing must not wait for the cycle collector: it is off while a test runs."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def open_files(path):
    """This process's descriptors on the store's files."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if os.path.dirname(target) == os.path.realpath(path):
            out.append(target)
    return out


def test_with_closes_the_files_when_the_block_ends(store):
    assert open_files(store) == []
    with featcache.Loader(store, batch_size=4) as ld:
        assert isinstance(ld, featcache.Loader)
        assert open_files(store)
        assert sum(len(b) for b in ld) == N
    assert open_files(store) == []  # were open until the next gc.collect()


def test_close_and_del_close_the_files(store):
    ld = featcache.Loader(store, batch_size=4, padded=True)
    next(iter(ld))
    ld.close()
    assert open_files(store) == []
    ld = featcache.Loader(store, batch_size=4)
    assert open_files(store)
    del ld
    assert open_files(store) == []


def test_an_array_held_keeps_the_store_open_until_it_goes(store):
    for padded in (False, True):
        with featcache.Loader(store, batch_size=4, padded=padded) as ld:
            b = next(iter(ld))
            mel = b.mels[1]
            want = np.array(mel)
            del b
        assert open_files(store)  # the array is memory of the map (or of the batch's buffer)
        np.testing.assert_array_equal(mel, want)
        del mel
        assert open_files(store) == []


def test_get_arrays_are_not_closed_by_a_loader(store):
    path = store + ".get"  # get() keeps its handle of a store for the process: another store
    shutil.copytree(store, path)
    mel = featcache.get(path, "u03")
    with featcache.Loader(path, batch_size=4) as ld:
        list(ld)
    assert open_files(path)  # get()'s own handle
    np.testing.assert_array_equal(mel, featcache.get(path, "u03"))


def test_close_twice_and_use_after_close(store):
    ld = featcache.Loader(store, batch_size=4)
    ld.close()
    ld.close()
    for use in (iter, len, lambda x: x.__enter__(), lambda x: x.info, lambda x: x.problems(),
                lambda x: x.num_items):
        with pytest.raises(ValueError, match=r"^featcache: the Loader is closed$"):
            use(ld)


def test_an_iterator_left_unfinished_ends_with_its_loader(store):
    # an iterator kept past the end of the with block held the C loader: the store's files
    # stayed open, and next() went on yielding batches of the closed Loader
    for padded in (False, True):
        with featcache.Loader(store, batch_size=4, padded=padded) as ld:
            it = iter(ld)
            del next(it).mels
        assert open_files(store) == [], padded
        with pytest.raises(StopIteration):
            next(it)
        ld = featcache.Loader(store, batch_size=2, padded=padded)
        for i, b in enumerate(ld):  # closed inside the loop: the loop ends
            assert i == 0
            ld.close()
        del b
        assert open_files(store) == [], padded


def test_exit_closes_on_an_exception_and_lets_it_through(store):
    with pytest.raises(KeyError, match="inside"):
        with featcache.Loader(store, batch_size=4) as ld:
            for b in ld:
                raise KeyError("inside")
    assert open_files(store)  # b, the batch in hand, is still held
    del b
    assert open_files(store) == []
    with pytest.raises(ValueError, match="closed"):
        len(ld)


class _Interrupt(Exception):
    pass


def test_an_interrupted_next_gives_its_batch_back(store):
    """Ctrl-C while next() waits in the library for its batch (where a loop waiting for data
    spends its time) is raised as the call returns: the batch the call took was never given back,
    its buffer held for good, and after a few such (an interrupted cell of a notebook run again)
    the loader failed 'all 3 caller buffers are held: release a batch first' (with its own
    buffers, their memory was lost). A SIGALRM handler that raises stands for Ctrl-C here; batches
    of 12.8 MB built in next() (no prefetch threads) make the call where it lands."""
    ld = featcache.Loader(store, batch_size=2, pad_to=20000, prefetch_threads=0,
                          buffer_alloc=lambda n: np.empty(n, np.uint8), n_buffers=3)

    def interrupt(*_):
        raise _Interrupt()

    old = signal.signal(signal.SIGALRM, interrupt)
    landed = 0
    try:
        for _ in range(20):
            try:
                signal.setitimer(signal.ITIMER_REAL, 0.001)
                for b in ld:
                    pass
                signal.setitimer(signal.ITIMER_REAL, 0)
            except _Interrupt as e:
                landed += traceback.extract_tb(e.__traceback__)[-2].name == "_iterate"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    b = None
    print("interrupts landed in next(): %d of 20" % landed)
    assert landed >= 3  # (else the loader's buffers were never at stake)
    assert sorted(i for b in ld for i in b.ids) == ["u%02d" % i for i in range(N)]
    ld.close()


def test_get_keeps_a_bounded_number_of_stores_open(store):
    """featcache.get kept a handle of every store it ever read, for the life of the process: a
    script reading one utterance from each of a few hundred shards ran out of open files (two
    descriptors a store; the usual soft limit is 1024). It keeps the most recently read ones,
    featcache.loader.GET_HANDLES of them; an array of a store let go stays valid."""
    import featcache.loader as L
    keep = getattr(L, "GET_HANDLES", 32)
    n = keep + 8
    paths = []
    for i in range(n):
        p = "%s.get%d" % (store, i)
        shutil.copytree(store, p)
        paths.append(p)
    first = featcache.get(paths[0], "u02")
    want = np.array(first)
    for p in paths:
        featcache.get(p, "u01")
    featcache.get(paths[-1], "u01")  # read again: still open
    held = [p for p in paths if open_files(p)]
    assert held[0] == paths[0]  # the array of it holds its map and files
    assert held[1:] == paths[-keep:], (len(held), held[:3])
    np.testing.assert_array_equal(first, want)
    del first
    assert open_files(paths[0]) == []
    for p in paths:
        shutil.rmtree(p)


def test_get_from_threads_while_stores_come_and_go(store, monkeypatch):
    """featcache.get from several threads, over more stores than it keeps open: the cache of
    handles was iterated (evicting the oldest, dropping another process's) while other threads
    changed it, which raised RuntimeError('dictionary changed size during iteration')."""
    import threading
    import featcache.loader as L
    paths = [store]
    for i in range(1, 12):
        p = "%s.thr%d" % (store, i)
        shutil.copytree(store, p)
        paths.append(p)
    monkeypatch.setattr(L, "GET_HANDLES", 3)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can
    errors = []

    def run(k):
        try:
            for i in range(800):
                m = featcache.get(paths[(i * 7 + k) % len(paths)], "u01")
                assert m.shape == (43, 80), m.shape
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    try:
        threads = [threading.Thread(target=run, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == [], errors[:3]
    assert len(L._GET_CACHE) <= 3
    for p in paths[1:]:
        shutil.rmtree(p)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
