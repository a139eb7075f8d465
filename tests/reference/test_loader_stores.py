"""Several stores as one dataset, against the records read with Python's lmdb.

Shards computed on different machines (or a re-run on an overlapping list of files) can hold the
same id twice. The dataset has that utterance once: the loader reads it once per epoch, from the
first store given that holds it (as fc_loader_lookup does, and as cache-verify's "several stores"
check assumes), in every order, on every rank. The stores are written with featcache.testing
(python lmdb + xxhash, the documented format, not the C library).
"""

import collections
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

try:
    import lmdb  # noqa: F401
    import xxhash  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import testing as T

# store 0: a000..a029 and s000..s009; store 1: s000..s009 again (other mels), b000..b019;
# store 2: a005 and b007 again, c000..c004
LAYOUT = [["a%03d" % i for i in range(30)] + ["s%03d" % i for i in range(10)],
          ["s%03d" % i for i in range(10)] + ["b%03d" % i for i in range(20)],
          ["a005", "b007"] + ["c%03d" % i for i in range(5)]]
UNIQUE = sorted(set(u for ids in LAYOUT for u in ids))


@pytest.fixture(scope="module")
def stores():
    d = tempfile.mkdtemp(prefix="fc_loader_stores_")
    paths, first = [], {}
    cfg = None
    for k, ids in enumerate(LAYOUT):
        p = os.path.join(d, "s%d" % k)
        rng = np.random.default_rng(k)
        with T.StoreWriter(p) as w:
            cfg = w.add_config(T.mel_config_json("hifigan"))
            for uid in ids:
                mel = rng.standard_normal((20 + len(uid) * k + rng.integers(0, 50), 80))
                mel = mel.astype(np.float32)
                # a different sound under the same id in each store: the records differ
                w.add_utterance(uid, ("%s in store %d" % (uid, k)).encode(), mel, cfg)
                first.setdefault(uid, (k, mel))
        paths.append(p)
    yield dict(paths=paths, first=first, cfg=cfg)
    shutil.rmtree(d)


def check_first_store(stores, b):
    for i, uid in enumerate(b.ids):
        n, s = int(b.mel_lengths[i]), int(b.mel_starts[i])
        mel = stores["first"][uid][1]
        assert int(b.src_frames[i]) == len(mel), uid
        row = b.mels[i][:n] if b.padded else b.mels[i]
        np.testing.assert_array_equal(row, mel[s:s + n], err_msg=uid)


@pytest.mark.parametrize("order", ["sequential", "random", "bucket", "locality"])
@pytest.mark.parametrize("padded", [False, True])
def test_an_id_in_several_stores_is_read_once(stores, order, padded):
    ld = featcache.Loader(stores["paths"], batch_size=7, order=order, seed=2, padded=padded)
    assert ld.num_items == len(UNIQUE)
    for epoch in range(2):
        seen = collections.Counter()
        for b in ld:
            check_first_store(stores, b)
            seen.update(b.ids)
        assert sorted(seen) == UNIQUE and set(seen.values()) == {1}, epoch
    if order == "sequential":  # stores in the order given, ids in byte order within each
        want = [u for k, ids in enumerate(LAYOUT) for u in sorted(ids)
                if stores["first"][u][0] == k]
        ld.set_epoch(0)
        assert [u for b in ld for u in b.ids] == want


@pytest.mark.parametrize("shard", ["pad", "drop", "uneven"])
def test_ranks_split_the_dataset_not_the_copies(stores, shard):
    W = 3
    got = collections.Counter()
    for r in range(W):
        ld = featcache.Loader(stores["paths"], batch_size=5, shuffle=True, seed=9, rank=r,
                              world_size=W, shard=shard)
        for b in ld:
            check_first_store(stores, b)
            got.update(b.ids)
    n = len(UNIQUE)
    if shard == "uneven":
        assert sorted(got) == UNIQUE and set(got.values()) == {1}
    elif shard == "pad":
        assert sorted(got) == UNIQUE and sum(got.values()) == -(-n // W) * W
    else:
        assert sum(got.values()) == n // W * W and set(got.values()) == {1}


def test_the_first_store_given_wins(stores):
    p = stores["paths"]
    ld = featcache.Loader([p[1], p[0]], batch_size=64)
    ids = [u for b in ld for u in b.ids]
    assert sorted(ids) == sorted(set(LAYOUT[0] + LAYOUT[1])) and len(ids) == len(set(ids))
    # s000..s009 come from p[1] now: its records, in its place (first in the sequential order)
    assert ids[:30] == sorted(LAYOUT[1])
    env = lmdb.open(p[1], max_dbs=8, readonly=True, lock=False)
    ld.set_epoch(0)
    for b in ld:
        for i, uid in enumerate(b.ids):
            if uid.startswith("s"):
                mel, _ = T.read_utterance(env, uid, stores["cfg"])
                np.testing.assert_array_equal(b.mels[i], mel)
    env.close()


def test_a_problem_another_store_serves_is_not_listed(stores):
    # x000 has no features in the first store but has them in the second: it is served (from the
    # second), so problems() (the skipped utterances) must not list it; x001 has none anywhere
    d = os.path.dirname(stores["paths"][0])
    p0, p1 = os.path.join(d, "gap0"), os.path.join(d, "gap1")
    mel = np.arange(40 * 80, dtype=np.float32).reshape(40, 80)
    with T.StoreWriter(p0) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        w.add_utterance("x000", b"x0 here", None, cfg)  # an audio entry, no record
        w.add_utterance("x001", b"x1 here", None, cfg)
        w.add_utterance("x002", b"x2 here", mel, cfg)
    with T.StoreWriter(p1) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        w.add_utterance("x000", b"x0 there", mel + 1, cfg)
    ld = featcache.Loader([p0, p1], batch_size=8)
    b = next(iter(ld))
    assert b.ids == ["x002", "x000"]
    np.testing.assert_array_equal(b.mels[1], mel + 1)
    assert [(u, s) for u, s, _ in ld.problems()] == [("x001", p0)]
    assert ld.info.skipped == 1
    # and fc_loader_lookup answers as the index serves: from the store that has the record
    import ctypes
    from featcache import _lib
    h = ld._handle()
    it = _lib.Item()
    assert h.lib.fc_loader_lookup(h.h, b"x000", ctypes.byref(it)) == 0 and it.frames == 40
    got = np.ctypeslib.as_array(ctypes.cast(it.mel, ctypes.POINTER(ctypes.c_float)), (40, 80))
    np.testing.assert_array_equal(got, mel + 1)
    assert h.lib.fc_loader_lookup(h.h, b"x001", ctypes.byref(it)) == _lib.FC_ENOTFOUND
    assert "x001: no features for config" in h.lib.fc_loader_error(h.h).decode()

def test_stores_of_different_configs_are_named(stores):
    # the message said "its mel config differs from ...'s: give a digest", which helps only when
    # the second store holds the first one's config too
    d = os.path.dirname(stores["paths"][0])
    mel = np.zeros((30, 80), np.float32)
    kaldi, both = os.path.join(d, "kaldi"), os.path.join(d, "both")
    for path, presets in ((kaldi, ["kaldi"]), (both, ["kaldi", "hifigan"])):
        with T.StoreWriter(path) as w:
            for p in presets:
                cfg = w.add_config(T.mel_config_json(p))
                w.add_utterance("k000", b"k", mel, cfg)
    hx = {p: T.digest(T.mel_config_json(p).encode()).hex() for p in ("kaldi", "hifigan")}
    s0 = stores["paths"][0]
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader([s0, kaldi])
    assert str(e.value) == (
        "featcache: %s: its mel config is %s, %s's is %s, which it does not hold: stores read as "
        "one dataset need the same mel config" % (kaldi, hx["kaldi"], s0, hx["hifigan"]))
    # kaldi's only config, then "both" (default: hifigan of its two): it holds kaldi's too
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader([kaldi, both])
    assert str(e.value) == (
        "featcache: %s: its mel config is %s, %s's is %s, which it holds too: choose it by digest "
        "(features %s)" % (both, hx["hifigan"], kaldi, hx["kaldi"], hx["kaldi"]))
    assert featcache.Loader([kaldi, both], features=hx["kaldi"]).num_items == 1

if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
