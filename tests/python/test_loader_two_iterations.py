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


@pytest.mark.parametrize("how", ["loader_views", "loader_padded", "to_device"])
def test_an_older_iterator_let_go_leaves_the_epoch_to_the_newer(path, how):
    """An older iterator of the epoch let go while a newer one runs it advanced the epoch mid-way:
    under dynamic batching len() in the newer loop then planned the next epoch, which overtook
    the newer iteration itself (RuntimeError at its next batch)."""
    kw = dict(max_frames=55, shuffle=True, seed=2)
    counts = [len(Loader(path, epoch=e, **kw)) for e in range(8)]
    e = next(e for e in range(7) if counts[e] != counts[e + 1])
    if how == "to_device":
        ld = Loader(path, epoch=e, padded=True,
                    buffer_alloc=lambda n: torch.empty(n, dtype=torch.uint8), **kw)
        src = type("TD", (), {"__iter__": lambda self: to_device(ld, "cpu")})()
    else:
        ld = src = Loader(path, epoch=e, padded=how == "loader_padded", **kw)
    old = iter(src)
    next(old)
    new = iter(src)
    got = [ids_of(next(new))]
    del old
    assert len(ld) == counts[e]
    got += [ids_of(b) for b in new]
    assert sorted(i for b in got for i in b) == IDS and len(got) == counts[e]
    assert ld.epoch == e + 1 and len(ld) == counts[e + 1]


class Fetcher:
    """Lightning's fit-loop fetcher, by hand (_PrefetchDataFetcher over a CombinedLoader): each
    iter() makes the new iterator before it drops the old one, and takes one batch ahead."""

    def __init__(self, iterable):
        self.iterable, self.iterator, self.ahead = iterable, None, []

    def __iter__(self):
        self.iterator = iter(self.iterable)
        self.ahead = [next(self.iterator, None)]
        return self

    def __next__(self):
        b = self.ahead.pop()
        if b is None:
            raise StopIteration
        self.ahead.append(next(self.iterator, None))
        return b


@pytest.mark.parametrize("how", ["loader_padded", "dataset_handoff", "dataset_views",
                                 "dataloader", "dataloader_workers"])
@pytest.mark.parametrize("limit", [None, 2])
@pytest.mark.parametrize("set_epoch", [True, False])
def test_a_lightning_fit_loop_raises_nothing_and_runs_each_epoch(path, how, limit, set_epoch):
    """A sanity pass of 2 validation batches, then epochs cut at limit_train_batches, a validation
    pass mid-epoch over a second loader of the same store, len() each epoch: no older iterator
    is used again, so nothing raises, and epoch e's batches are epoch e's (an iterator dropped
    unfinished still advances the epoch). Lightning calls set_epoch on samplers only: a dataset
    nobody calls set_epoch on runs epoch e's batches too (it advances by itself)."""
    if how == "loader_padded" and not set_epoch:
        pytest.skip("a Loader advances by itself: no set_epoch to leave out")

    def make(**kw):
        if how == "loader_padded":
            return Loader(path, batch_size=2, pad_to=32, **kw), None
        ds = FeatcacheDataset(path, batch_size=2, padded=how != "dataset_views",
                              pad_to=0 if how == "dataset_views" else 32, **kw)
        if how.startswith("dataloader"):
            workers = 2 if how == "dataloader_workers" else 0
            return torch.utils.data.DataLoader(
                ds, batch_size=None, num_workers=workers,
                multiprocessing_context="fork" if workers else None), ds
        return ds, ds
    train, tds = make(shuffle=True, seed=4)
    val, _ = make()
    n = len(train)
    sanity = iter(Fetcher(val))
    assert len(ids_of(next(sanity))) == 2 and len(ids_of(next(sanity))) == 2
    fetch = Fetcher(train)
    for epoch in range(3):
        if tds is not None and set_epoch:
            tds.set_epoch(epoch)
        assert len(train) == n
        iter(fetch)  # (once: Lightning then calls next(), not iter() again)
        got = []
        for k in range(N):
            b = next(fetch, None)
            if b is None:
                break
            got.append(ids_of(b))
            if k == 1:  # validation mid-epoch (val_check_interval); a progress bar's len()
                assert len(train) == n
                assert sorted(i for vb in iter(Fetcher(val)) for i in ids_of(vb)) == IDS
            if limit and k + 1 == limit:
                break
        want = [ids_of(b) for b in Loader(path, batch_size=2, pad_to=32, shuffle=True, seed=4,
                                          epoch=epoch)][:limit or N]
        assert got == want, (epoch, got, want)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", "-W", "ignore::UserWarning"]))
