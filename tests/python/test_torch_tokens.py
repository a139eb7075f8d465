"""featcache.torch: token ids a training step can index with, whatever dtype the store holds.

tokenize stores ids as i16 when the vocabulary has fewer than 32768 entries (chars, phonemes:
the default), u16 below 65536, else i32 (docs/tokenize.md). torch indexes (nn.Embedding,
F.embedding, gather) with int32 or int64 only: an int16 tensor raised "Expected tensor for
argument #1 'indices' to have one of the following scalar types: Long, Int; but got
torch.ShortTensor" at the model's first layer. Every path of the adapter (the hand-off of padded
batches, views, the generic path, DataLoader workers, to_device) hands out int32 token ids,
equal to the stored ones, padded with token_pad."""

import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

try:
    import torch
    import lmdb
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import testing as T
from featcache.torch import FeatcacheDataset, to_device

N = 23
TOK_JSON = '{"kind":"tokens","preset":null,"tokenizer":"chars"}'


@pytest.fixture(scope="module", params=["int16", "uint16", "int32"])
def store(request):
    dt = np.dtype(request.param)
    d = tempfile.mkdtemp(prefix="fc_torch_tokens_")
    path = os.path.join(d, "s")
    rng = np.random.default_rng(5)
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        tcfg = w.add_config(TOK_JSON)
        for i in range(N):
            mel = rng.standard_normal((30 + 7 * i, 80)).astype(np.float32)
            toks = rng.integers(1, 120, 3 + i % 9).astype(dt)
            w.add_utterance("u%02d" % i, b"a%d" % i, mel, cfg, text="t%d" % i, tokens=toks,
                            tok_config=tcfg)
    env = lmdb.open(path, max_dbs=8, readonly=True, lock=False)
    refs = {"u%02d" % i: T.read_utterance(env, "u%02d" % i, cfg, tcfg)[1] for i in range(N)}
    env.close()
    assert all(r.dtype == dt for r in refs.values())
    yield dict(path=path, refs=refs)
    shutil.rmtree(d)


def check(store, batches, token_pad=0):
    emb = torch.nn.Embedding(128, 4)
    seen = []
    for b in batches:
        toks = b["tokens"]
        for i, uid in enumerate(b["ids"]):
            want = store["refs"][uid]
            t = toks[i]
            assert t.dtype == torch.int32, (uid, t.dtype)
            n = int(b["token_lengths"][i])
            assert n == len(want)
            np.testing.assert_array_equal(t[:n].numpy(), want.astype(np.int64), err_msg=uid)
            assert (t[n:] == token_pad).all(), uid
            seen.append(uid)
        emb(toks if torch.is_tensor(toks) else torch.nn.utils.rnn.pad_sequence(toks, True))
    assert sorted(seen) == sorted(store["refs"])


@pytest.mark.parametrize("kw", [dict(padded=True), dict(pad_to=64), dict(padded=False),
                                dict(padded=True, token_pad=127)])
def test_dataset_in_process(store, kw):
    ds = FeatcacheDataset(store["path"], tokens="chars", batch_size=4, shuffle=True, **kw)
    for epoch in range(2):  # the hand-off's tensors are made once per buffer: a second epoch
        ds.set_epoch(epoch)
        check(store, torch.utils.data.DataLoader(ds, batch_size=None),
              kw.get("token_pad", 0))


@pytest.mark.parametrize("padded", [True, False])
def test_dataset_workers(store, padded):
    ds = FeatcacheDataset(store["path"], tokens="chars", batch_size=4, padded=padded)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                     multiprocessing_context="fork")
    check(store, dl)


def test_to_device_cpu(store):
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=5, pad_to=48)
    check(store, to_device(ld, "cpu"))
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=5, pad_to=48)
    check(store, to_device(iter(ld), "cpu"))  # (not a Loader: the generic pipeline)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
