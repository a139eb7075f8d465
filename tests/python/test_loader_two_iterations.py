"""Two live iterations of one loader (an iterator kept from a peek or an epoch cut short, and a
new pass begun): the C loader runs one epoch at a time and the newer iteration restarted it, so
the older one, going on, took the newer one's batches: each got part of the epoch and one batch
came twice, silently. Now the newer iteration has the whole epoch and the older one raises
RuntimeError at its next batch, naming the store; an older iterator only kept (never used again)
changes nothing. For featcache.Loader (views, padded), FeatcacheDataset (the hand-off, views) and
to_device."""

import sys

import numpy as np
import pytest

try:
    import torch
    import lmdb  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

from featcache import Loader
from featcache import testing as T
from featcache.torch import FeatcacheDataset, to_device

N = 10
IDS = ["u%02d" % i for i in range(N)]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("two") / "s")
    with T.StoreWriter(p) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(N):
            w.add_utterance(IDS[i], b"%d" % i, np.full((20 + i, 80), i, np.float32), cfg)
    return p


def ids_of(b):
    return list(b["ids"] if isinstance(b, dict) else b.ids)


MAKERS = {
    "loader_views": lambda p: Loader(p, batch_size=2, shuffle=True),
    "loader_padded": lambda p: Loader(p, batch_size=2, shuffle=True, pad_to=32),
    "dataset_handoff": lambda p: FeatcacheDataset(p, batch_size=2, shuffle=True, pad_to=32),
    "dataset_views": lambda p: FeatcacheDataset(p, batch_size=2, shuffle=True, padded=False),
    "to_device": lambda p: (lambda ld: type("TD", (), {
        "__iter__": lambda self: to_device(ld, "cpu")})())(
        Loader(p, batch_size=2, shuffle=True, pad_to=32,
               buffer_alloc=lambda n: torch.empty(n, dtype=torch.uint8))),
}


@pytest.mark.parametrize("how", sorted(MAKERS))
def test_the_older_iteration_raises_the_newer_has_the_epoch(path, how):
    src = MAKERS[how](path)
    old = iter(src)
    first = ids_of(next(old))
    new = iter(src)
    got = [ids_of(next(new))]
    with pytest.raises(RuntimeError, match=r"s: this iteration \(epoch 0\) was overtaken by "
                                           r"another of the same loader begun since"):
        next(old)
    got += [ids_of(b) for b in new]
    flat = [i for b in got for i in b]
    assert sorted(flat) == IDS, got  # the whole epoch, each once
    assert len(first) == 2


@pytest.mark.parametrize("how", sorted(MAKERS))
def test_an_older_iterator_only_kept_changes_nothing(path, how):
    src = MAKERS[how](path)
    kept = iter(src)
    next(kept)
    flat = [i for b in src for i in ids_of(b)]
    assert sorted(flat) == IDS
    del kept


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", "-W", "ignore::UserWarning"]))
