"""A batch left with no utterance (every record of it damaged, skipped under verify) on one rank
of a data-parallel run: the adapters leave such a batch out rather than hand a step zero
utterances, which on one rank of several gave it one step fewer than the others — DDP's
collectives then pair one rank's step with another's next one, and the last rank waits at the
end for good, without a word. With other ranks (world_size > 1) it is a FeatcacheError naming
the utterances and what to do; alone (world_size 1, DataLoader workers or not) still a warning.
A plain featcache.Loader yielded the empty batch on a rank of several too (a loop's step of zero
utterances, or one step short if it skipped it): the same FeatcacheError now; alone it yields
it, its errors naming them."""

import os
import sys
import warnings

import numpy as np
import pytest

try:
    import torch
    import lmdb  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

from featcache import FeatcacheError, Loader
from featcache import testing as T
from featcache.torch import FeatcacheDataset, to_device


@pytest.fixture
def path(tmp_path):
    """u0..u3, the records of u1 and u2 damaged (a payload byte altered)."""
    p = str(tmp_path / "dmg")
    rng = np.random.default_rng(4)
    with T.StoreWriter(p) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(4):
            rec = bytearray(T.encode_record(rng.standard_normal((40 + i, 80)).astype(np.float32),
                                            cfg))
            if i in (1, 2):
                rec[64 + 100] ^= 1
            w.add_utterance("u%d" % i, b"%d" % i, raw_record=bytes(rec), config=cfg)
    return p


def steps(path, how, **kw):
    if how in ("padded", "views", "workers"):
        ds = FeatcacheDataset(path, batch_size=1, **kw,
                              **({"padded": False} if how == "views" else {"pad_to": 64}))
        return [list(b["ids"]) for b in torch.utils.data.DataLoader(
            ds, batch_size=None, num_workers=2 if how == "workers" else 0,
            **({"multiprocessing_context": "fork"} if how == "workers" else {}))]
    bk = {"buffer_alloc": lambda n: torch.empty(n, dtype=torch.uint8)}
    return [list(b["ids"]) for b in to_device(Loader(
        path, batch_size=1, pad_to=64, **kw, **(bk if how == "to_device_buffers" else {})), "cpu")]


HOWS = ["padded", "views", "workers", "to_device", "to_device_buffers"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("rank", [0, 1])
def test_a_rank_short_of_a_step_raises(path, how, rank):
    # rank 0 reads u0, u2; rank 1 u1, u3: each has a batch of damaged records only
    with pytest.raises(FeatcacheError) as e:
        steps(path, how, rank=rank, world_size=2)
    msg = str(e.value)
    assert "u1: payload checksum mismatch" in msg or "u2: payload checksum mismatch" in msg, msg
    assert "rank %d of 2" % rank in msg and "cache-prune --damaged" in msg, msg


@pytest.mark.parametrize("how", HOWS)
def test_alone_it_is_left_out_with_a_warning(path, how):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = steps(path, how, rank=0, world_size=1)
    assert sorted(i for ids in got for i in ids) == ["u0", "u3"]
    if how != "workers":  # (a worker's warning is the worker's)
        assert any("a batch left out" in str(w.message) for w in caught)


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("rank", [0, 1])
def test_a_plain_loader_on_a_rank_raises_too(path, padded, rank):
    ld = Loader(path, batch_size=1, rank=rank, world_size=2, padded=padded)
    got = []
    with pytest.raises(FeatcacheError) as e:
        for b in ld:
            got.append(list(b.ids))
    msg = str(e.value)
    assert "rank %d of 2: a batch left with no utterance" % rank in msg, msg
    assert "u%d: payload checksum mismatch" % (2 - rank) in msg, msg  # rank 0's 2nd, rank 1's 1st
    assert "cache-prune --damaged" in msg, msg
    assert got == ([["u0"]] if rank == 0 else []), got


def test_a_plain_loader_alone_yields_the_empty_batch(path):
    got = [(list(b.ids), [e.split(":")[0] for e in b.errors])
           for b in Loader(path, batch_size=1)]
    assert got == [(["u0"], []), ([], ["u1"]), ([], ["u2"]), (["u3"], [])], got


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
