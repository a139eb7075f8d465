"""The Python loader's batch path and prefetch across epochs.

Fixture (featcache.testing, python lmdb): 45 utterances of 30..250 frames with i16 tokens, and
two of 1 and 2 frames that LMDB keeps inside leaf pages (where a record that is not 16-byte
aligned is copied by the C loader into the batch block, so views come from two places). Checks:
- iterating a Loader epoch after epoch (prefetch crosses the boundary) yields, batch by batch,
  what a fresh loader without threads yields for that epoch — ids, items, lengths, crops, data;
- ids (decoded from the batch's id_text), lengths, starts and items agree with each other and
  with the records read through lmdb; views of large records are read-only slices of the map,
  short ones not 16-byte aligned there are copies in the batch block (tokens, here); padded
  tokens and mels are one array each; with data.mdb mapped twice in the process (the fixture's
  Python lmdb env too), views still come from the loader's own map region;
- every array of a batch keeps the C batch alive, which goes back when the last one is dropped;
- padded batches of different sizes share one ctypes type (no type made, and cached forever, per
  byte count).
"""

import ctypes
import gc
import os
import shutil
import sys
import tempfile
import weakref

import numpy as np
import pytest

try:
    import lmdb
    import xxhash  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import loader as L
from featcache import testing as T

TOK_JSON = '{"kind":"tokens","preset":null,"tokenizer":"chars"}'
N = 47


def frames_of(i):
    return 1 if i == 45 else 2 if i == 46 else 30 + (i * 53) % 221


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_fastpath_")
    path = os.path.join(d, "s")
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        tcfg = w.add_config(TOK_JSON)
        for i in range(N):
            f = frames_of(i)
            mel = (i * 1000 + np.arange(f * 80, dtype=np.float32).reshape(f, 80) / 8).astype(np.float32)
            toks = (np.arange(3 + i % 7) + 100 * i).astype(np.int16)
            w.add_utterance("f%03d" % i, b"audio%d" % i, mel=mel, config=cfg, text="t%d" % i,
                            tokens=toks, tok_config=tcfg)
    env = lmdb.open(path, max_dbs=8, readonly=True, lock=False)
    yield {"path": path, "env": env, "cfg": cfg, "tcfg": tcfg}
    env.close()
    shutil.rmtree(d)


def ref(store, uid):
    return T.read_utterance(store["env"], uid, store["cfg"], store["tcfg"])


def summary(b):
    return (b.epoch, b.index, tuple(b.ids), tuple(b.items.tolist()), tuple(b.mel_lengths.tolist()),
            tuple(b.mel_starts.tolist()))


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("order", ["random", "bucket", "locality"])
def test_epochs_back_to_back_match_fresh_loaders(store, padded, order):
    kw = dict(tokens="chars", batch_size=6, order=order, padded=padded, seed=3, crop_frames=120,
              random_crop=True, bucket_batches=2, locality_run=8)
    ld = featcache.Loader(store["path"], prefetch_threads=2, prefetch_depth=3, **kw)
    for e in range(4):
        got = []
        for b in ld:  # runs epoch e, then advances to e + 1
            got.append(summary(b))
            for i, uid in enumerate(b.ids):
                mel, tok = ref(store, uid)
                s, n = int(b.mel_starts[i]), int(b.mel_lengths[i])
                m = b.mels[i][:n] if padded else b.mels[i]
                np.testing.assert_array_equal(m, mel[s:s + n])
                t = b.tokens[i][:int(b.token_lengths[i])]
                np.testing.assert_array_equal(t, tok)
        fresh = featcache.Loader(store["path"], prefetch_threads=0, epoch=e, **kw)
        want = [summary(b) for b in fresh]
        assert [g[0] for g in got] == [e] * len(got)
        assert got == want, "epoch %d differs from a fresh loader's" % e
    assert ld.epoch == 4


def mapped(path):
    with open("/proc/self/maps") as f:
        for line in f:
            if line.rstrip().endswith(os.path.join(os.path.realpath(path), "data.mdb")):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                yield lo, hi


def test_views_ids_and_copies(store):
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=8)
    seen = set()
    copies = 0
    ranges = None
    for b in ld:
        ranges = ranges or list(mapped(store["path"]))
        assert len(b) == len(b.ids) == len(b.items) == len(b.mel_lengths) == len(b.mels)
        for i, uid in enumerate(b.ids):
            mel, tok = ref(store, uid)
            assert b.mel_lengths[i] == mel.shape[0] and b.token_lengths[i] == tok.shape[0]
            np.testing.assert_array_equal(b.mels[i], mel)
            np.testing.assert_array_equal(b.tokens[i], tok)
            assert not b.mels[i].flags.writeable and not b.tokens[i].flags.writeable
            for a, small in ((b.mels[i], mel.shape[0] <= 2), (b.tokens[i], True)):
                addr = a.__array_interface__["data"][0]
                in_map = any(lo <= addr < hi for lo, hi in ranges)
                if not small:
                    assert in_map, "%s: a view of a large record is not in the map" % uid
                    # a slice of the loader's map region (data.mdb is mapped twice here: the
                    # fixture's lmdb env too; fc_loader_map_region must give the loader's own)
                    assert not isinstance(a.base, L._Span), uid
                if not in_map:  # copied into the batch block (not 16-byte aligned in the map)
                    # an array over the batch's own span, which keeps the batch
                    assert small and isinstance(a.base, L._BatchOwner), uid
                    copies += 1
            seen.add(uid)
        for a in (b.mel_lengths, b.mel_starts, b.items, b.token_lengths):
            assert isinstance(a.base, L._BatchOwner) and not a.flags.writeable
    assert seen == {"f%03d" % i for i in range(N)}
    assert copies > 0  # the copy path ran (short token arrays in leaf pages)


def test_padded_arrays(store):
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=5, padded=True, pad_value=-1,
                          token_pad=-7, prefetch_threads=2)
    types = set()
    for b in ld:
        B = len(b)
        assert b.mels.shape == (B, int(b.mel_lengths.max()), 80) and b.mels.flags.writeable
        assert b.tokens.shape == (B, int(b.token_lengths.max()))
        types.add(type(b.mels.base))
        assert b.mels.base is b.mel_lengths.base is b.tokens.base  # one span per batch
        for i, uid in enumerate(b.ids):
            mel, tok = ref(store, uid)
            n, t = mel.shape[0], tok.shape[0]
            np.testing.assert_array_equal(b.mels[i, :n], mel)
            assert (b.mels[i, n:] == -1).all()
            np.testing.assert_array_equal(b.tokens[i, :t], tok)
            assert (b.tokens[i, t:] == -7).all()
    assert types == {L._BatchOwner}, types


def test_lazy_fields_and_release(store):
    """ids, errors, mel_starts, items are made on first read; release() keeps ids and errors
    (decoded then) and refuses the arrays not made before it."""
    ld = featcache.Loader(store["path"], batch_size=4, padded=True, prefetch_threads=0)
    it = iter(ld)
    b = next(it)
    ref_ids = ["f%03d" % i for i in range(4)]
    assert b.epoch == 0 and b.index == 0 and len(b) == 4
    starts = b.mel_starts
    assert b.ids == ref_ids and b.ids is b.ids and b.errors == []
    assert list(starts) == [0, 0, 0, 0] and list(b.items) == [0, 1, 2, 3]
    b2 = next(it)
    b2.release()
    assert b2.ids == ["f%03d" % i for i in range(4, 8)] and b2.errors == []
    with pytest.raises(RuntimeError, match="read after release"):
        b2.mel_starts  # noqa: B018
    assert repr(b2) == "<featcache batch 1 of epoch 0: 4 utterances>"


def test_desc_matches_batch(store):
    """fc_loader_swap_descs packs exactly the fields of the fc_batch it returns."""
    Lb = featcache._lib.lib()
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=3, padded=True,
                          prefetch_threads=0)
    h = ld._handle()
    assert Lb.fc_loader_set_epoch(h.h, 0) == 0
    desc = L._Desc()
    names = ["epoch", "index", "size", "n_mels", "mel_dtype", "tok_dtype", "frames",
             "max_tokens", "ids", "items", "mel_lengths", "mel_starts", "src_frames", "mels",
             "mel_data", "token_lengths", "tokens", "tok_data", "n_errors", "errors", "id_text",
             "id_text_len"]
    n = 0
    while True:
        desc[0] = 0  # (gives none back)
        assert Lb.fc_loader_swap_descs(h.h, desc, ctypes.c_size_t(1)) == 0
        d = list(desc)
        if not d[0]:
            assert d == [0] * featcache._lib.DESC_LEN
            break
        b = featcache._lib.Batch.from_address(d[0])
        got = dict(zip(names, d[1:23]))
        for k in names:
            v = getattr(b, k)
            v = 0 if v is None else v
            if isinstance(v, bytes):  # errors (c_char_p): compare addresses instead
                continue
            assert got[k] == v, k
        assert d[23] == 0
        Lb.fc_loader_release(h.h, d[0])
        n += 1
    assert n == len(ld)


def test_any_array_keeps_the_batch(store):
    ld = featcache.Loader(store["path"], batch_size=4, padded=True, prefetch_threads=0)
    b = next(iter(ld))
    lens, mels, uid = b.mel_lengths, b.mels, b.ids[0]
    owner = weakref.ref(lens.base)
    del b
    gc.collect()
    assert owner() is not None and owner().ptr is not None  # arrays hold the batch
    mel, _ = ref(store, uid)
    np.testing.assert_array_equal(mels[0, :int(lens[0])], mel)
    del lens
    gc.collect()
    assert owner() is not None  # the padded array still does (through its span)
    del mels
    gc.collect()
    assert owner() is None  # the last array gone: the batch went back to the C loader
    b = next(iter(ld))
    b.release()
    assert b._owner.ptr is None


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
