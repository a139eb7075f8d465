"""featcache.torch: token ids a training step can index with, whatever dtype the store holds.

tokenize stores ids as i16 when the vocabulary has fewer than 32768 entries (chars, phonemes:
the default), u16 below 65536, else i32 (docs/tokenize.md). torch indexes (nn.Embedding,
F.embedding, gather) with int32 or int64 only: an int16 tensor raised "Expected tensor for
argument #1 'indices' to have one of the following scalar types: Long, Int; but got
torch.ShortTensor" at the model's first layer. Every path of the adapter (the hand-off of padded
batches, views, the generic path, DataLoader workers, to_device) hands out int32 token ids,
equal to the stored ones, padded with token_pad. A token_pad the stored dtype cannot hold (-100,
cross_entropy's ignore_index, in u16 ids; 40000 in i16 ones) is padded wrapped by the loader
(65436) and was handed out so: the int32 ids hold the token_pad itself, and cross_entropy with
ignore_index=token_pad ignores exactly the pad slots."""

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
        toks = toks if torch.is_tensor(toks) else torch.nn.utils.rnn.pad_sequence(toks, True)
        emb(toks.masked_fill(toks == token_pad, 0) if token_pad else toks)
    assert sorted(seen) == sorted(store["refs"])


@pytest.mark.parametrize("kw", [dict(padded=True), dict(pad_to=64), dict(padded=False),
                                dict(padded=True, token_pad=127),
                                dict(padded=True, token_pad=-100), dict(pad_to=64, token_pad=-100),
                                dict(padded=True, token_pad=40000)])
def test_dataset_in_process(store, kw):
    ds = FeatcacheDataset(store["path"], tokens="chars", batch_size=4, shuffle=True, **kw)
    for epoch in range(2):  # the hand-off's tensors are made once per buffer: a second epoch
        ds.set_epoch(epoch)
        check(store, torch.utils.data.DataLoader(ds, batch_size=None),
              kw.get("token_pad", 0))


@pytest.mark.parametrize("padded,token_pad", [(True, 0), (False, 0), (True, -100)])
def test_dataset_workers(store, padded, token_pad):
    ds = FeatcacheDataset(store["path"], tokens="chars", batch_size=4, padded=padded,
                          token_pad=token_pad)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                     multiprocessing_context="fork")
    check(store, dl, token_pad)


@pytest.mark.parametrize("token_pad", [0, -100])
def test_to_device_cpu(store, token_pad):
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=5, pad_to=48,
                          token_pad=token_pad)
    check(store, to_device(ld, "cpu"), token_pad)
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=5, pad_to=48,
                          token_pad=token_pad)
    check(store, to_device(iter(ld), "cpu"), token_pad)  # (not a Loader: the generic pipeline)


def test_cross_entropy_ignores_the_pad(store):
    """The loss over a padded batch with ignore_index=token_pad is the loss over its real ids."""
    ds = FeatcacheDataset(store["path"], tokens="chars", batch_size=6, padded=True,
                          token_pad=-100)
    torch.manual_seed(0)
    for b in ds:
        toks = b["tokens"].long()
        logits = torch.randn(toks.shape + (128,))
        got = torch.nn.functional.cross_entropy(logits.transpose(1, 2), toks, ignore_index=-100)
        n = b["token_lengths"].tolist()
        real = torch.cat([toks[i, :k] for i, k in enumerate(n)])
        want = torch.nn.functional.cross_entropy(
            torch.cat([logits[i, :k] for i, k in enumerate(n)]), real)
        torch.testing.assert_close(got, want)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
