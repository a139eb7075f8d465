"""featcache.Loader against records read independently with Python's lmdb.

The fixture store is written with featcache.testing (python lmdb + xxhash, the documented
format, not the C library): 70 utterances of 150..700 hifigan frames with i16 tokens, plus a
short (2-frame) one that LMDB keeps inside a leaf page. Every batch of every mode — views and
padded, every order, with and without prefetch threads, crops, dynamic batching, ranks — is
compared value by value with the record read through lmdb.
"""

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

N = 70
TOK_JSON = '{"kind":"tokens","preset":null,"tokenizer":"chars"}'


def frames_of(i):
    return 150 + (i * 97) % 551


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_loader_py_")
    path = os.path.join(d, "s")
    rng = np.random.default_rng(1)
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        tcfg = w.add_config(TOK_JSON)
        for i in range(N + 1):
            fr = 2 if i == N else frames_of(i)
            mel = rng.standard_normal((fr, 80)).astype(np.float32)
            toks = rng.integers(0, 100, 5 + i % 13).astype(np.int16)
            w.add_utterance("u%03d" % i, b"audio %d" % i, mel, cfg, text="text %d" % i,
                            tokens=toks, tok_config=tcfg)
    env = lmdb.open(path, max_dbs=8, readonly=True, lock=False)
    yield dict(path=path, cfg=cfg, tcfg=tcfg, env=env, dir=d)
    env.close()
    shutil.rmtree(d)


def ref(store, uid):
    return T.read_utterance(store["env"], uid, store["cfg"], store["tcfg"])


def mapped_ranges(path):
    """Address ranges of mappings of path's data.mdb, from /proc/self/maps (by inode)."""
    ino = os.stat(os.path.join(path, "data.mdb")).st_ino
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and int(parts[4]) == ino:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


# the loader's default pad value: the silence of the hifigan config, ln(1e-5)
SILENCE = float(np.float32(np.log(1e-5)))


def check_batch(store, b, padded, pad_value=SILENCE, token_pad=0):
    for i, uid in enumerate(b.ids):
        mel, tok = ref(store, uid)
        n, s = int(b.mel_lengths[i]), int(b.mel_starts[i])
        want = mel[s:s + n]
        got = b.mels[i][:n] if padded else b.mels[i]
        assert got.shape == want.shape, (uid, got.shape, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=uid)
        if padded:
            assert np.all(b.mels[i][n:] == np.float32(pad_value)), uid
        if b.tokens is None:
            continue
        if padded:
            L = int(b.token_lengths[i])
            np.testing.assert_array_equal(b.tokens[i][:L], tok, err_msg=uid)
            assert np.all(b.tokens[i][L:] == token_pad)
        else:
            np.testing.assert_array_equal(b.tokens[i], tok, err_msg=uid)
        assert b.token_lengths[i] == len(tok)


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("order", ["sequential", "random", "bucket", "locality"])
@pytest.mark.parametrize("threads", [0, 2])
def test_every_batch_matches_lmdb(store, padded, order, threads):
    pads = dict(pad_value=-5.0, token_pad=-1) if padded else {}  # (views: a ValueError)
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=8, order=order, seed=3,
                          padded=padded, prefetch_threads=threads, **pads)
    seen = []
    for b in ld:
        check_batch(store, b, padded, -5.0, -1)
        if padded:
            assert b.mels.shape == (len(b), int(b.mel_lengths.max()), 80)
            assert b.mels.dtype == np.float32 and b.tokens.dtype == np.int16
        seen += b.ids
    assert sorted(seen) == ["u%03d" % i for i in range(N + 1)]
    if order == "sequential":
        assert seen == sorted(seen)


def test_views_point_into_the_map(store):
    ld = featcache.Loader(store["path"], batch_size=16, prefetch_threads=0)
    n_in = 0
    for b in ld:
        ranges = mapped_ranges(store["path"])
        assert ranges, "data.mdb is not mapped"
        for uid, m in zip(b.ids, b.mels):
            p = m.__array_interface__["data"][0]
            inside = any(lo <= p and p + m.nbytes <= hi for lo, hi in ranges)
            assert not m.flags.writeable
            if uid == "u%03d" % N:
                continue  # 640 bytes: a leaf-page value, copied (not 16-byte aligned)
            assert inside, uid
            assert p % 16 == 0, uid
            n_in += 1
    assert n_in == N


def test_padded_batch_is_one_buffer(store):
    ld = featcache.Loader(store["path"], batch_size=8, padded=True, pad_multiple=16,
                          prefetch_threads=1)
    b = next(iter(ld))
    assert b.mels.shape[1] % 16 == 0 and b.mels.flags.c_contiguous and b.mels.flags.writeable
    for i in range(len(b)):  # rows are slices of the one buffer
        assert b.mels[i].__array_interface__["data"][0] == \
            b.mels.__array_interface__["data"][0] + i * b.mels.strides[0]


def test_seeded_orders(store):
    def ids(seed, epoch, order="random"):
        ld = featcache.Loader(store["path"], batch_size=8, order=order, seed=seed, epoch=epoch)
        return [u for b in ld for u in b.ids]
    a = ids(7, 0)
    assert a == ids(7, 0)            # same seed and epoch: same order on every run
    assert a != ids(7, 1)            # the epoch changes it
    assert a != ids(8, 0)
    assert sorted(a) == sorted(ids(7, 1))
    ld = featcache.Loader(store["path"], batch_size=8, shuffle=True, seed=7)
    e0 = [u for b in ld for u in b.ids]
    e1 = [u for b in ld for u in b.ids]  # iterating advances the epoch
    assert e0 == a and e1 == ids(7, 1)


@pytest.mark.parametrize("shard", ["uneven", "pad", "drop"])
def test_ranks_partition(store, shard):
    per = []
    for r in range(3):
        ld = featcache.Loader(store["path"], batch_size=5, shuffle=True, seed=11, rank=r,
                              world_size=3, shard=shard)
        per.append([u for b in ld for u in b.ids])
    allids = sum(per, [])
    if shard == "uneven":
        assert sorted(allids) == sorted(set(allids)) and len(allids) == N + 1
    elif shard == "pad":
        assert len({len(p) for p in per}) == 1 and set(allids) == {"u%03d" % i for i in range(N + 1)}
    else:
        assert len({len(p) for p in per}) == 1 and len(set(allids)) == len(allids) == (N + 1) // 3 * 3


@pytest.mark.parametrize("shard", ["pad", "drop"])
@pytest.mark.parametrize("order", ["random", "bucket", "locality"])
def test_dynamic_batches_equal_on_every_rank(store, shard, order):
    # DDP steps every rank in lockstep: a rank with one batch more waits for the others for good.
    # With dynamic batching each rank cut its own share into batches, so the counts differed
    # (27 of 30 seeds and world sizes on a small store); pad now repeats a rank's first batches
    # up to the most any rank has, drop cuts to the fewest
    everyone = {"u%03d" % i for i in range(N + 1)}
    for seed, W in ((0, 2), (1, 3), (2, 4), (3, 3)):
        counts, seen = [], []
        for r in range(W):
            ld = featcache.Loader(store["path"], max_frames=1500, order=order, seed=seed, rank=r,
                                  world_size=W, shard=shard, padded=True, prefetch_threads=1)
            n = len(ld)
            got = []
            for b in ld:
                check_batch(store, b, True)
                assert len(b) == 1 or b.mels.shape[0] * b.mels.shape[1] <= 1500
                got.append(b.ids)
            assert len(got) == n
            counts.append(n)
            seen += [u for ids in got for u in ids]
        assert len(set(counts)) == 1, (seed, W, counts)
        if shard == "pad":
            assert set(seen) == everyone, (seed, W)
        else:
            assert len(seen) == len(set(seen)), (seed, W)


def test_buckets_reduce_padding(store):
    def pad_cells(order):
        ld = featcache.Loader(store["path"], batch_size=8, order=order, seed=2, bucket_batches=8)
        return sum(len(b) * int(b.mel_lengths.max()) - int(b.mel_lengths.sum()) for b in ld)
    assert pad_cells("bucket") < pad_cells("random") / 2


def test_locality_reads_forward(store):
    def forward(order):
        ld = featcache.Loader(store["path"], batch_size=8, order=order, seed=4, locality_run=24,
                              prefetch_threads=0)
        addr = [m.__array_interface__["data"][0] for b in ld for m in b.mels]
        return np.mean(np.diff(addr) > 0)
    assert forward("locality") >= 0.8
    assert forward("random") < 0.7


def test_dynamic_batches_and_crops(store):
    ld = featcache.Loader(store["path"], batch_size=0, max_frames=3000, padded=True,
                          order="bucket", seed=1)
    n = 0
    for b in ld:
        assert len(b) == 1 or b.mels.shape[0] * b.mels.shape[1] <= 3000
        check_batch(store, b, True)
        n += len(b)
    assert n == N + 1
    ld = featcache.Loader(store["path"], batch_size=8, padded=True, pad_to=128, random_crop=True,
                          seed=5)
    starts = []
    for b in ld:
        assert b.mels.shape[1] == 128
        check_batch(store, b, True)
        starts += list(b.mel_starts)
    assert sum(1 for s in starts if s) > N // 2


def test_get(store):
    mel, tok = ref(store, "u005")
    got = featcache.get(store["path"], "u005")
    np.testing.assert_array_equal(got, mel)
    assert not got.flags.writeable
    m2, t2 = featcache.get(store["path"], "u006", tokens="chars")
    np.testing.assert_array_equal(t2, ref(store, "u006")[1])
    with pytest.raises(KeyError):
        featcache.get(store["path"], "nope")


def test_batch_outlives_iteration_and_release(store):
    ld = featcache.Loader(store["path"], batch_size=4, padded=True, prefetch_threads=2)
    kept = [b.mels for b in ld]  # arrays keep their batches (and the loader) alive
    del ld
    assert sum(k.shape[0] for k in kept) == N + 1
    assert np.isfinite(kept[0]).all()
    ld = featcache.Loader(store["path"], batch_size=4, padded=True, prefetch_threads=0)
    for b in ld:
        b.release()


def test_config_errors(store):
    with pytest.raises(featcache.FeatcacheError, match="no mel config named 'whisper'"):
        len(featcache.Loader(store["path"], features="whisper"))
    with pytest.raises(featcache.FeatcacheError, match="no tokens config named 'bpe'"):
        len(featcache.Loader(store["path"], tokens="bpe"))
    with pytest.raises(featcache.FeatcacheError, match="No such file"):
        len(featcache.Loader(os.path.join(store["dir"], "missing")))
    ld = featcache.Loader(store["path"], features=store["cfg"].hex())
    assert len(ld) == (N + 1 + 31) // 32
    assert '"preset":"hifigan"' in ld.config()


def test_dtypes_f16_bf16():
    d = tempfile.mkdtemp(prefix="fc_loader_dt_")
    try:
        for name, code in (("f16", 2), ("bf16", 3)):
            path = os.path.join(d, name)
            js = T.mel_config_json("hifigan").replace('"dtype":"f32"', '"dtype":"%s"' % name)
            with T.StoreWriter(path) as w:
                cfg = w.add_config(js)
                x = np.linspace(-4, 4, 300 * 80, dtype=np.float32).reshape(300, 80)
                if code == 2:
                    arr = x.astype(np.float16)
                else:
                    arr = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncation: exact for bf16 values
                w.add_utterance("a", b"a", arr, cfg) if code == 2 else w.add_utterance(
                    "a", b"a", raw_record=T.encode_record(arr, cfg, dtype_code=3), config=cfg)
            b = next(iter(featcache.Loader(path, batch_size=1, padded=True)))
            if code == 2:
                assert b.mels.dtype == np.float16
                np.testing.assert_array_equal(b.mels[0], arr)
            else:
                assert b.mels.dtype == np.uint16
                np.testing.assert_array_equal(featcache.bf16_to_float32(b.mels[0]),
                                              (arr.astype(np.uint32) << 16).view(np.float32))
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
