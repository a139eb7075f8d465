"""featcache.torch: zero-copy tensors, and fork safety with a multi-worker DataLoader.

The dataset's loader is opened (prefetch threads running) in the parent before the DataLoader
forks its workers: each worker must open its own, read its own share, and the union over workers
must be every utterance exactly once, with values equal to the records read through lmdb. The
dataset opens and checks its store when it is made, as featcache.Loader does."""

import itertools
import os
import re
import shutil
import sys
import tempfile
import warnings

import numpy as np
import pytest

try:
    import torch
    import lmdb
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

from featcache import testing as T
from featcache.torch import FeatcacheDataset

N = 40


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_loader_torch_")
    path = os.path.join(d, "s")
    rng = np.random.default_rng(2)
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(N):
            w.add_utterance("t%03d" % i, b"a%d" % i,
                            rng.standard_normal((100 + 7 * i, 80)).astype(np.float32), cfg)
    env = lmdb.open(path, max_dbs=8, readonly=True, lock=False)
    yield dict(path=path, cfg=cfg, env=env)
    env.close()
    shutil.rmtree(d)


def check(store, batch):
    for i, uid in enumerate(batch["ids"]):
        mel, _ = T.read_utterance(store["env"], uid, store["cfg"])
        n = int(batch["mel_lengths"][i])
        got = batch["mels"][i][:n] if torch.is_tensor(batch["mels"]) else batch["mels"][i]
        np.testing.assert_array_equal(got.numpy(), mel[:n], err_msg=uid)


def test_zero_copy_in_process(store):
    ds = FeatcacheDataset(store["path"], batch_size=8, padded=True)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    ids = []
    for batch in dl:
        assert batch["mels"].dtype == torch.float32 and batch["mels"].dim() == 3
        check(store, batch)
        ids += batch["ids"]
    assert sorted(ids) == ["t%03d" % i for i in range(N)]
    ds = FeatcacheDataset(store["path"], batch_size=8, padded=False)
    b = next(iter(ds))
    from featcache.loader import Loader
    raw = next(iter(Loader(store["path"], batch_size=8)))
    assert b["mels"][0].data_ptr() == raw.mels[0].__array_interface__["data"][0]


@pytest.mark.parametrize("kw", [dict(padded=True), dict(pad_to=120), dict(pad_multiple=16)])
def test_padded_batches_are_built_into_the_datasets_buffers(store, kw):
    # padded batches, whichever option asks for them, are built into the dataset's own torch
    # buffers (pinned for the GPU): pad_multiple alone had the loader's buffers copied instead
    import featcache.torch as ft
    ds = FeatcacheDataset(store["path"], batch_size=8, **kw)
    b = next(iter(ds))
    assert b["mels"].dim() == 3
    (ld,) = [v for v in ds._loaders.values()]
    assert ld.buffer_alloc in (ft._host_alloc, ft._pinned_alloc), kw


@pytest.mark.parametrize("padded", [True, False])
def test_fork_workers_partition(store, padded):
    ds = FeatcacheDataset(store["path"], batch_size=4, shuffle=True, seed=1, padded=padded,
                          shard="uneven", prefetch_threads=2)
    assert len(ds) == N // 4  # opens the loader in the parent: threads running before fork
    next(iter(ds))
    ctx = torch.multiprocessing.get_context("fork")
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=ctx)
    for epoch in range(2):
        ds.set_epoch(epoch)
        ids = []
        for batch in dl:
            check(store, batch)
            ids += batch["ids"]
        assert sorted(ids) == ["t%03d" % i for i in range(N)], epoch
    # the parent's loader still works after the children are gone
    assert sum(len(b["ids"]) for b in ds) == N


@pytest.mark.parametrize("shard", ["pad", "drop"])
def test_workers_of_one_process_read_each_utterance_once(store, shard):
    # no torch.distributed: one rank. Its DataLoader workers split it; pad (the default) made each
    # worker's share ceil(N / workers), so 3 workers served 42 utterances of 40 (two twice) and
    # drop left 1 out. A rank's share splits among its workers exactly, as num_workers=0 reads it
    ds = FeatcacheDataset(store["path"], batch_size=4, shuffle=True, seed=3, shard=shard)
    ctx = torch.multiprocessing.get_context("fork")
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=3,
                                     multiprocessing_context=ctx)
    for epoch in range(2):
        ds.set_epoch(epoch)
        ids = [u for b in dl for u in b["ids"]]
        assert sorted(ids) == ["t%03d" % i for i in range(N)], (epoch, len(ids))


def test_set_epoch_reaches_persistent_workers(store):
    # persistent workers keep the copy of the dataset they were started with: set_epoch in the
    # main process never reached them, and every epoch had epoch 0's order (no reshuffle, the
    # same random crops)
    kw = dict(batch_size=4, shuffle=True, seed=1, pad_to=120, crop="random")
    ctx = torch.multiprocessing.get_context("fork")
    runs = {}
    for persistent in (False, True):
        ds = FeatcacheDataset(store["path"], **kw)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         persistent_workers=persistent, multiprocessing_context=ctx)
        runs[persistent] = []
        for epoch in (0, 1, 2, 1):
            ds.set_epoch(epoch)
            runs[persistent].append(sorted((tuple(b["ids"]), tuple(b["mel_starts"].tolist()))
                                           for b in dl))
    assert runs[True] == runs[False]
    assert runs[True][0] != runs[True][1] != runs[True][2] and runs[True][1] == runs[True][3]


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("workers", [0, 1])
def test_bf16_store(tmp_path, padded, workers):
    # bf16 records are uint16 arrays in numpy, which torch.from_numpy refuses (torch 1.13): the
    # views path (and padded batches outside the hand-off, as in a worker) raised TypeError
    path = str(tmp_path / "bf16")
    rng = np.random.default_rng(5)
    want = {}
    cfg_json = T.mel_config_json("hifigan").replace('"dtype":"f32"', '"dtype":"bf16"').replace(
        '"preset":"hifigan"', '"preset":null')
    with T.StoreWriter(path) as w:
        cfg = w.add_config(cfg_json)
        for i in range(6):
            mel = rng.standard_normal((20 + 9 * i, 80)).astype(np.float32)
            bits = (mel.view(np.uint32) >> 16).astype(np.uint16)  # bf16 by truncation
            w.add_utterance("b%d" % i, b"b%d" % i, config=cfg,
                            raw_record=T.encode_record(bits, cfg, 3))
            want["b%d" % i] = (bits.astype(np.uint32) << 16).view(np.float32)
    ds = FeatcacheDataset(path, batch_size=4, padded=padded, features="hifigan")
    ctx = torch.multiprocessing.get_context("fork")
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                     multiprocessing_context=ctx if workers else None)
    seen = 0
    for b in dl:
        for i, uid in enumerate(b["ids"]):
            m = b["mels"][i]
            assert m.dtype == torch.bfloat16
            n = int(b["mel_lengths"][i])
            np.testing.assert_array_equal(m[:n].float().numpy(), want[uid], err_msg=uid)
            seen += 1
    assert seen == 6


def test_without_set_epoch_each_iteration_runs_the_next_epoch(store):
    # the dataset stayed at its epoch without set_epoch (as DistributedSampler), and Lightning
    # calls set_epoch on samplers only: every epoch had one order and one set of random crops
    # (a warning said so). Now it advances by itself as a Loader does; set_epoch still chooses
    import featcache
    kw = dict(max_frames=1200, shuffle=True, seed=4, crop_frames=350, crop="random")
    ep = [[(list(b.ids), b.mel_starts.tolist()) for b in featcache.Loader(store["path"],
                                                                          epoch=e, **kw)]
          for e in range(8)]
    assert len(set(len(e) for e in ep)) > 1  # (so len() is checked per epoch)

    def run(src, ds):
        n = len(src)
        got = [(list(b["ids"]), b["mel_starts"].tolist()) for b in src]
        assert n == len(got), (n, len(got))
        return got
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = FeatcacheDataset(store["path"], **kw)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
        assert [run(dl, ds) for _ in range(3)] == ep[:3]
        ds.set_epoch(5)  # chosen, then on from there
        assert [run(dl, ds) for _ in range(2)] == ep[5:7]
        ds.set_epoch(1)
        ds.set_epoch(2)  # (the last one chosen)
        assert run(ds, ds) == ep[2] and run(ds, ds) == ep[3]
        ds = FeatcacheDataset(store["path"], epoch=4, **kw)
        assert run(ds, ds) == ep[4] and run(ds, ds) == ep[5]


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_without_set_epoch_workers_run_the_next_epoch_together(store, ctx):
    # DataLoader workers, each in a process of its own (persistent ones keep theirs), begin each
    # iteration: the first to begin it chooses the epoch for the others
    import featcache
    kw = dict(batch_size=3, shuffle=True, seed=6, pad_to=150, crop="random")
    ep = [[(list(b.ids), b.mel_starts.tolist()) for b in featcache.Loader(store["path"],
                                                                          epoch=e, **kw)]
          for e in range(5)]
    mp = torch.multiprocessing.get_context(ctx)
    for persistent in (False, True):
        ds = FeatcacheDataset(store["path"], **kw)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         persistent_workers=persistent, multiprocessing_context=mp)
        runs = [[(list(b["ids"]), b["mel_starts"].tolist()) for b in dl] for _ in range(3)]
        assert runs == ep[:3], persistent
        ds.set_epoch(1)
        assert [(list(b["ids"]), b["mel_starts"].tolist()) for b in dl] == ep[1], persistent
        assert [(list(b["ids"]), b["mel_starts"].tolist()) for b in dl] == ep[2], persistent


def test_without_set_epoch_workers_seeded_alike_run_the_next_epoch(store):
    # the workers of an iteration know one another by torch's base seed for it: a loop that seeds
    # torch (or a DataLoader generator) alike before each epoch draws the same one again, and the
    # workers of the new iteration took it for the last one's (its epoch: one order for good)
    import featcache
    kw = dict(batch_size=3, shuffle=True, seed=6)
    ep = [[list(b.ids) for b in featcache.Loader(store["path"], epoch=e, **kw)] for e in range(4)]
    ds = FeatcacheDataset(store["path"], **kw)
    got = []
    for e in range(2):
        torch.manual_seed(0)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context="fork")
        got.append([list(b["ids"]) for b in dl])
    for e in range(2):
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context="fork",
                                         generator=torch.Generator().manual_seed(1))
        got.append([list(b["ids"]) for b in dl])
    assert got == ep


def test_relative_paths_after_chdir(store, monkeypatch):
    # a script that changes directory after making its Loader or dataset (into its run's output
    # folder): DataLoader workers, which open the store later, looked for a relative store (and
    # manifest) in the new directory and failed, as did a pickled Loader
    import pickle
    import featcache
    parent, name = os.path.split(store["path"])
    with open(os.path.join(parent, "split.txt"), "w") as f:
        f.write("".join("wavs/t%03d.wav\n" % i for i in range(10)))
    monkeypatch.chdir(parent)
    ld = featcache.Loader(name, manifest="split.txt", batch_size=4)
    ds = FeatcacheDataset(name, manifest="split.txt", batch_size=4)
    monkeypatch.chdir("/")
    want = ["t%03d" % i for i in range(10)]
    assert sorted(u for b in pickle.loads(pickle.dumps(ld)) for u in b.ids) == want
    for ctx in ("fork", "spawn"):
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context=ctx)
        assert sorted(u for b in dl for u in b["ids"]) == want, ctx


def test_ddp_ranks(store):
    seen = []
    for r in range(2):
        ds = FeatcacheDataset(store["path"], rank=r, world_size=2, batch_size=5, shuffle=True)
        seen.append([u for b in ds for u in b["ids"]])
    assert len(seen[0]) == len(seen[1]) == N // 2
    assert not set(seen[0]) & set(seen[1])


def test_spawned_workers_read_their_ranks_share(store, monkeypatch):
    # rank and world_size left to torch.distributed: a DataLoader worker started by spawn (or
    # forkserver) is a new interpreter where it is not initialized, so it took rank 0 of 1 and
    # every rank's workers read the whole dataset (and more batches than len()); the worker now
    # reads the share of the rank that started it (a fake process group: rank 1 of 2)
    import torch.distributed as dist
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    kw = dict(batch_size=3, shuffle=True, seed=8)
    want = [list(b["ids"]) for b in FeatcacheDataset(store["path"], rank=1, world_size=2, **kw)]
    ds = FeatcacheDataset(store["path"], **kw)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                     multiprocessing_context="spawn")
    assert len(dl) == len(want) == 7
    assert [list(b["ids"]) for b in dl] == want


def test_len_is_the_epochs_batch_count(store):
    # dynamic batching: how many batches an epoch has depends on its order. len() is the count
    # of the epoch the next iteration runs (an LR schedule's total_steps, a progress bar's
    # total, DataLoader's len); it was epoch 0's for ever
    import featcache
    kw = dict(max_frames=1200, shuffle=True, seed=4, prefetch_threads=2)
    ld, ds = featcache.Loader(store["path"], **kw), FeatcacheDataset(store["path"], **kw)
    counts = []
    for epoch in range(6):
        n = len(ld)
        assert ld.info.epoch_batches == n
        got = [len(b) for b in ld]
        assert n == len(got), (epoch, n, len(got))
        counts.append(n)
        ds.set_epoch(epoch)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
        assert len(dl) == n and sum(1 for _ in dl) == n, epoch
    assert len(set(counts)) > 1, counts  # (else this test could not fail)
    # inside an epoch, the running one's; after a break, the next one's
    fresh = featcache.Loader(store["path"], epoch=3, **kw)
    for b in fresh:
        assert len(fresh) == counts[3]
        break
    assert fresh.epoch == 4 and len(fresh) == counts[4] == sum(1 for _ in fresh)
    # set_epoch with an older iterator kept (a peek): len() counted the kept one's epoch, not
    # the one the next iteration runs (a loop ending at len() cut it short or a torch warning);
    # now it is that epoch's, and the kept iterator, used again, raises (overtaken)
    ld = featcache.Loader(store["path"], **kw)
    kept = iter(ld)
    next(kept)
    ld.set_epoch(3)
    assert len(ld) == counts[3] == sum(1 for _ in ld)
    with pytest.raises(RuntimeError, match="overtaken"):
        next(kept)
    for workers in (0, 2):
        ds = FeatcacheDataset(store["path"], **kw)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                         multiprocessing_context="fork" if workers else None)
        kept = iter(dl)
        next(kept)
        ds.set_epoch(3)
        assert len(dl) == counts[3], workers
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (torch: "Length of IterableDataset ... was reported")
            assert sum(1 for _ in dl) == counts[3], workers
        del kept
    # an older iterator of the epoch let go while a newer one runs it: the epoch stays the
    # newer one's (the older one advanced it mid-way: len() then counted the next epoch)
    ld = featcache.Loader(store["path"], epoch=2, **kw)
    old = iter(ld)
    next(old)
    new = iter(ld)
    n = sum(1 for _ in itertools.islice(new, 1))
    del old
    assert len(ld) == counts[2]
    n += sum(1 for _ in new)
    assert n == counts[2] and ld.epoch == 3 and len(ld) == counts[3]
    # len() inside the loop (the hand-off's too) neither restarts nor replans the running epoch
    for padded in (False, True):
        ds = FeatcacheDataset(store["path"], padded=padded, **kw)
        ds.set_epoch(2)
        plain = [list(b["ids"]) for b in ds]
        got = []
        ds.set_epoch(2)
        for b in ds:
            assert len(ds) == counts[2]
            got.append(list(b["ids"]))
        assert got == plain, padded


WORKER_CASES = [dict(batch_size=3, shuffle=True, seed=2),
                dict(batch_size=3, shuffle=True, seed=2, drop_last=True, pad_to=150),
                dict(batch_size=0, max_frames=1200, order="bucket", seed=5, bucket_batches=2),
                dict(batch_size=3, shuffle=True, seed=2, padded=False, shard="drop")]


@pytest.mark.parametrize("kw", WORKER_CASES)
def test_workers_deal_out_the_ranks_batches(store, kw):
    # each (rank, worker) read its own share of utterances and ended on its own short batch: an
    # epoch had up to workers - 1 batches more than len() (Lightning, which ends an epoch at
    # len(), never trained on them), and drop_last dropped each worker's short batch (up to
    # workers x (batch_size - 1) utterances an epoch). Now the rank's epoch is planned whole and
    # worker w takes its batches w, w + W, ...: the batches of num_workers=0, in its order
    ctx = torch.multiprocessing.get_context("fork")
    for world in (1, 2):
        for rank in range(world):
            def epoch(workers, persistent=False):
                ds = FeatcacheDataset(store["path"], rank=rank, world_size=world, **kw)
                dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                                 persistent_workers=persistent,
                                                 multiprocessing_context=ctx if workers else None)
                got = []
                for e in (3, 4):
                    ds.set_epoch(e)
                    got.append((len(dl), [list(b["ids"]) for b in dl]))
                return got
            want = epoch(0)
            for n, batches in want:
                assert n == len(batches)
                sizes = [len(b) for b in batches]
                if "max_frames" not in kw:  # (one short batch at most, the last)
                    assert sizes[:-1] == [kw["batch_size"]] * (n - 1), sizes
            assert want[0] != want[1]
            for workers, persistent in ((2, False), (3, True)):
                assert epoch(workers, persistent) == want, (world, rank, workers)


@pytest.mark.parametrize("drop_last", [False, True])
def test_a_loop_ending_at_len_sees_the_whole_epoch(store, drop_last):
    # Lightning ends an epoch at len(dataloader): with workers it skipped the batches beyond it
    # (up to workers - 1 short ones an epoch, whose utterances were never trained on)
    ctx = torch.multiprocessing.get_context("fork")
    kw = dict(batch_size=3, shuffle=True, seed=7, drop_last=drop_last)
    for world in (1, 2):
        seen = []
        for rank in range(world):
            ds = FeatcacheDataset(store["path"], rank=rank, world_size=world, **kw)
            dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=3,
                                             multiprocessing_context=ctx)
            n = len(dl)
            it = iter(dl)
            for _ in range(n):
                seen += next(it)["ids"]
            assert next(it, None) is None  # (nothing left beyond len())
            del it
        per = N // world  # each rank's share, its short batch dropped under drop_last
        assert len(seen) == len(set(seen)) == world * (per - per % 3 if drop_last else per)
        if not drop_last:
            assert sorted(seen) == ["t%03d" % i for i in range(N)]


def test_checked_when_made(store):
    import featcache
    d = os.path.dirname(store["path"])
    for match, args, kw in ((r"no-such-store", [os.path.join(d, "no-such-store")], {}),
                            (r"no mel config named 'whisper'", [store["path"]],
                             dict(features="whisper")),
                            (r"no tokens config named 'chars'", [store["path"]],
                             dict(tokens="chars"))):
        with pytest.raises(featcache.FeatcacheError, match=match):
            FeatcacheDataset(*args, batch_size=4, **kw)
    ds = FeatcacheDataset(store["path"], batch_size=4)
    made = next(iter(ds._loaders.values()))
    assert made._h is not None
    assert sum(len(b["ids"]) for b in ds) == N
    assert list(ds._loaders.values()) == [made]  # the loader opened when made is the one read
    # a shard chosen after the dataset was made, before it is read (torch.distributed
    # initialized in between): the loader opened for the old shard is closed, the new one read
    ds = FeatcacheDataset(store["path"], batch_size=4)
    made = next(iter(ds._loaders.values()))
    ds.rank, ds.world_size = 1, 2
    assert sum(len(b["ids"]) for b in ds) == N // 2
    assert made._h is None and len(ds._loaders) == 1


def test_closing_gives_back_no_batch_the_loop_holds(store):
    """When the loader closes, the hand-off gave back every batch it had lent, those whose
    tensors the loop still held too; the loader's threads run until it closes, and one of them
    could build the next batch into such a buffer, under the loop's tensors (seen as a kept
    tensor changing after its dataset was dropped). Only the batches the loop let go go back."""
    import gc

    class Recorder:
        def __init__(self, real):
            self.real, self.released = real, []

        def fc_loader_release(self, h, p):
            self.released.append(p)
            return self.real.fc_loader_release(h, p)

        def __getattr__(self, name):
            return getattr(self.real, name)

    gc.collect()
    gc.disable()
    try:
        ds = FeatcacheDataset(store["path"], batch_size=8, pad_to=64)
        it = iter(ds)
        kept = next(it)["mels"]
        dropped = next(it)
        ho = next(iter(ds._loaders.values()))._handle().handoff
        (held,) = [e for e in ho.out if e.template["mels"] is kept]
        (let_go,) = [e for e in ho.out if e.template["mels"] is dropped["mels"]]
        ptrs = held.ptr, let_go.ptr
        rec = ho.lib = Recorder(ho.lib)
        del dropped, held, let_go, ho, it, ds  # the loader closes
        assert ptrs[1] in rec.released and ptrs[0] not in rec.released, (ptrs, rec.released)
        assert kept.shape == (8, 64, 80)
    finally:
        gc.enable()


@pytest.mark.parametrize("value, error", [(0, ValueError), (2.5, TypeError), ("2", TypeError),
                                          (-1, ValueError)])
def test_prefetch_to_device_checked(store, value, error):
    # 2.5 and "2" were taken as 2 (int()), and 0 said "prefetch_to_device must be at least 1"
    # without naming the value; each is an error naming the option and its value, as the
    # Loader's options are
    with pytest.raises(error, match=r"^featcache: prefetch_to_device=%s: " % re.escape(repr(value))):
        FeatcacheDataset(store["path"], batch_size=4, prefetch_to_device=value)


@pytest.mark.parametrize("value, error", [(2.5, TypeError), ("2", TypeError), (-1, ValueError),
                                          (2 ** 64, ValueError)])
def test_set_epoch_checked(store, value, error):
    # 2.5 and "2" were taken as 2 (int()), as Loader.set_epoch and epoch= of a Loader refuse
    ds = FeatcacheDataset(store["path"], batch_size=4)
    with pytest.raises(error, match=r"^featcache: set_epoch\(%s\): " % re.escape(repr(value))):
        ds.set_epoch(value)
    with pytest.raises(error, match=r"^featcache: epoch=%s: " % re.escape(repr(value))):
        FeatcacheDataset(store["path"], batch_size=4, epoch=value)
    ds.set_epoch(np.int64(3))  # (an integer of numpy's is one)
    assert ds.epoch == 3


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_paths_given_as_an_iterator(store, ctx):
    # pathlib.Path("cache").glob("shard-*") is a generator: the dataset read it when made, and
    # DataLoader workers found it spent ('featcache: no store given'; spawn: cannot pickle it)
    ds = FeatcacheDataset(iter([store["path"]]), batch_size=8)
    assert sum(len(b["ids"]) for b in ds) == N
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                     multiprocessing_context=ctx)
    assert sorted(i for b in dl for i in b["ids"]) == ["t%03d" % i for i in range(N)]
    # ids too: the workers' loaders were made of the spent iterator, and said 'the stores
    # changed since the Loader was made ... a writer committed meanwhile'
    some = ["t%03d" % i for i in range(0, N, 3)]
    ds = FeatcacheDataset(store["path"], batch_size=4, ids=(i for i in some))
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                     multiprocessing_context=ctx)
    assert sorted(i for b in dl for i in b["ids"]) == some


def _log_page_checks(_worker_id):
    """worker_init_fn: each open of the worker's loader logged, with whether it checks pages."""
    import featcache._lib as L
    real = L.open_loader

    def logged(*a):
        with open(os.environ["FC_TEST_OPEN_LOG"], "a") as f:
            f.write("%d\n" % bool(a[3].flags & L.FLAG_CHECK_PAGES))
        return real(*a)
    L.open_loader = logged


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_workers_do_not_check_pages_again(store, ctx, tmp_path, monkeypatch):
    # check_pages: the process that makes the dataset checks; its DataLoader workers, whose
    # loaders read the same stores (the view compared), checked every page again, each of them
    # every epoch (docs/loader.md: they do not)
    log = tmp_path / "opens"
    monkeypatch.setenv("FC_TEST_OPEN_LOG", str(log))
    ds = FeatcacheDataset(store["path"], batch_size=8, check_pages=True)
    # (spawned workers cost seconds each: one epoch of workers that are not persistent there)
    runs = ((False, 2), (True, 2)) if ctx == "fork" else ((False, 1),)
    for persistent, epochs in runs:
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context=ctx,
                                         worker_init_fn=_log_page_checks,
                                         persistent_workers=persistent)
        for e in range(epochs):
            ds.set_epoch(e)
            assert sorted(i for b in dl for i in b["ids"]) == ["t%03d" % i for i in range(N)]
        del dl
    want = 6 if ctx == "fork" else 2
    assert log.read_text().split() == ["0"] * want, log.read_text()


def test_a_batch_cap_beyond_the_dataset(store):
    """batch_size above the utterances (one batch of everything, e.g. for evaluation): the bound
    a caller buffer must hold was the cap times the longest length, so a padded dataset's 14
    buffers asked for 14 x 25 GB here (batch_size=100000, pad_to=800) and failed; no batch
    can hold more than the utterances."""
    from featcache.loader import Loader
    bound = Loader(store["path"], batch_size=100000, pad_to=800).info.bound_batch_bytes
    assert N * 800 * 80 * 4 <= bound <= N * 800 * 80 * 4 + (1 << 16), bound
    for kw in (dict(batch_size=100000), dict(batch_size=100000, max_frames=10 ** 9),
               dict(batch_size=2 ** 32 - 1)):
        ds = FeatcacheDataset(store["path"], pad_to=800, **kw)
        got = [b["mels"].shape for b in ds]
        assert got == [(N, 800, 80)], (kw, got)


def test_a_dataset_let_go_closes_its_store(store):
    """A FeatcacheDataset dropped (or left after a partial epoch) closes its store's files at
    once: the hand-off of padded batches and its loader referred to each other, so they stayed
    open until the next garbage collection (off here). A tensor kept stays valid."""
    import gc

    def files():
        n = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                n += os.path.dirname(os.readlink("/proc/self/fd/" + fd)) == store["path"]
            except OSError:
                pass
        return n

    gc.collect()
    gc.disable()
    try:
        base = files()  # (the fixture's own lmdb handle)
        for kw in (dict(padded=False), dict(pad_to=64), dict(pad_to=64, prefetch_threads=0)):
            ds = FeatcacheDataset(store["path"], batch_size=8, **kw)
            assert files() > base
            assert sum(len(b["ids"]) for b in ds) == N
            it = iter(ds)
            kept = next(it)["mels"]
            want = kept.clone() if torch.is_tensor(kept) else [m.clone() for m in kept]
            del it, ds
            if not kw.get("padded", True):
                assert files() > base  # views of the map: it stays while they do
                del kept
                kept = want
            assert files() == base, kw
            if torch.is_tensor(kept):
                assert torch.equal(kept, want)
    finally:
        gc.enable()


def _damaged_store(tmp_path, n, damaged, seed):
    """A store of utterances u0..u<n-1>, the records of those in damaged with a payload byte
    altered (the batch's checksum sees it); its path."""
    path = str(tmp_path / "dmg")
    rng = np.random.default_rng(seed)
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(n):
            rec = bytearray(T.encode_record(rng.standard_normal((40 + i, 80)).astype(np.float32),
                                            cfg))
            if i in damaged:
                rec[64 + 100] ^= 1
            w.add_utterance("u%d" % i, b"%d" % i, raw_record=bytes(rec), config=cfg)
    return path


@pytest.mark.parametrize("how", ["padded", "views", "to_device", "to_device_buffers", "workers"])
@pytest.mark.filterwarnings("ignore:featcache. a batch left out")
def test_a_batch_whose_records_are_all_damaged_is_left_out(tmp_path, how):
    """A batch left with no utterance (each of its records damaged: skipped under verify, the
    default) is left out, as featcache.tf leaves it out, rather than hand a step zero utterances:
    the padded one was a dict whose "mels" was [] (not a tensor), and to_device (device="cuda")
    raised 'device batches are padded: pass padded=True or pad_to' with padded=True given."""
    from featcache import Loader
    from featcache.torch import to_device
    path = _damaged_store(tmp_path, 4, (1, 2), 4)
    assert [len(b) for b in Loader(path, batch_size=1)] == [1, 0, 0, 1]  # (the loader's own)
    if how in ("padded", "views", "workers"):
        ds = FeatcacheDataset(path, batch_size=1, **({"padded": False} if how == "views" else
                                                     {"pad_to": 64}))
        batches = list(torch.utils.data.DataLoader(ds, batch_size=None,
                                                    num_workers=2 if how == "workers" else 0))
    else:
        kw = {"buffer_alloc": lambda n: torch.empty(n, dtype=torch.uint8)}
        batches = list(to_device(Loader(path, batch_size=1, pad_to=64,
                                        **(kw if how == "to_device_buffers" else {})), "cpu"))
    assert sorted(i for b in batches for i in b["ids"]) == ["u0", "u3"]
    for b in batches:
        assert len(b["ids"]) == 1 and (how == "views" or torch.is_tensor(b["mels"]))
        assert tuple(b["errors"]) == ()  # (a tuple; a DataLoader makes it a list)


@pytest.mark.parametrize("how", ["padded", "views", "to_device", "to_device_buffers", "workers"])
def test_batch_errors_name_the_skipped_utterances(tmp_path, how):
    """Each batch dict says which utterances were skipped from it ("errors": "id: reason", a
    damaged record), as LoaderBatch.errors does: the dicts had no such key, and a training loop
    on torch could not tell. A batch left with none (every record damaged) is left out with a
    RuntimeWarning naming them (its errors have no batch to go with; in a DataLoader worker the
    warning is the worker's)."""
    from featcache import Loader
    from featcache.torch import to_device
    path = _damaged_store(tmp_path, 6, (1, 4, 5), 5)
    kw = {"batch_size": 2, "shuffle": False}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if how in ("padded", "views", "workers"):
            ds = FeatcacheDataset(path, **kw, **({"padded": False} if how == "views" else
                                                 {"pad_to": 64}))
            batches = list(torch.utils.data.DataLoader(
                ds, batch_size=None, num_workers=2 if how == "workers" else 0))
        else:
            bk = {"buffer_alloc": lambda n: torch.empty(n, dtype=torch.uint8)}
            batches = list(to_device(Loader(path, pad_to=64, **kw,
                                            **(bk if how == "to_device_buffers" else {})), "cpu"))
    got = sorted((tuple(b["ids"]), tuple(b["errors"])) for b in batches)
    assert sorted(i for ids, _ in got for i in ids) == ["u0", "u2", "u3"], got
    errors = [e for _, errs in got for e in errs]
    assert all(e.split(": ")[0] in ("u1", "u4", "u5") and e.endswith("payload checksum mismatch")
               for e in errors), errors
    if how == "workers":  # each worker its share of the utterances: batches of other members
        return
    assert got == [(("u0",), ("u1: payload checksum mismatch",)), (("u2", "u3"), ())], got
    left = [str(x.message) for x in caught if issubclass(x.category, RuntimeWarning)]
    assert left == ["featcache: a batch left out, each of its utterances skipped: u4: payload "
                    "checksum mismatch; u5: payload checksum mismatch"], left


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


@pytest.mark.parametrize("padded,workers,crop", [(True, 0, True), (False, 0, True),
                                                 (True, 2, True), (True, 0, False)])
def test_src_frames_with_crops(store, padded, workers, crop):
    """Each batch dict gives src_frames (the record's length) next to mel_starts, as the C and
    Python loaders do: a random crop of a per-frame stream (audio, pitch) needs both."""
    kw = dict(crop_frames=120, crop="random") if not padded else dict(pad_to=120, crop="random")
    kw = kw if crop else {}
    ds = FeatcacheDataset(store["path"], batch_size=8, padded=padded, **kw)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    seen = 0
    for batch in dl:
        want = [100 + 7 * int(u[1:]) for u in batch["ids"]]
        assert batch["src_frames"].tolist() == want
        assert (batch["mel_starts"] + batch["mel_lengths"] <= batch["src_frames"]).all()
        seen += len(want)
    assert seen == N


@pytest.mark.parametrize("how", ["dataset", "to_device"])
def test_a_pass_under_inference_mode_first_leaves_tensors_to_train_on(store, how):
    """An evaluation pass under torch.inference_mode() (a first validation, Lightning's sanity
    check) and then training on the same dataset: the hand-off makes the tensors over a buffer
    once and hands them out again every epoch, and those made in the evaluation pass were
    inference tensors, so the first training step raised 'Inference tensors cannot be saved for
    backward'."""
    from featcache.torch import to_device
    import featcache
    model = torch.nn.Linear(80, 1)
    if how == "dataset":
        ds = FeatcacheDataset(store["path"], batch_size=8, shuffle=True, pad_to=64)

        def epoch(e):
            ds.set_epoch(e)
            return ds
    else:
        ld = featcache.Loader(store["path"], batch_size=8, shuffle=True, pad_to=64,
                              buffer_alloc=lambda n: torch.empty(n, dtype=torch.uint8),
                              n_buffers=16)

        def epoch(e):
            ld.set_epoch(e)
            return to_device(ld, "cpu")
    seen = 0
    with torch.inference_mode():
        for b in epoch(0):
            model(b["mels"]).sum()
            seen += len(b["ids"])
    assert seen == N
    for e in (1, 2):
        seen = 0
        for b in epoch(e):
            assert not any(t.is_inference() for t in b.values() if torch.is_tensor(t))
            model(b["mels"]).sum().backward()
            seen += len(b["ids"])
        assert seen == N


@pytest.mark.parametrize("how", ["dataset", "to_device"])
def test_an_input_gradient_of_one_batch_is_not_carried_to_the_next(store, how):
    """A loop that takes the gradient of its input (an adversarial step, a saliency map:
    mels.requires_grad_(), backward, mels.grad): the hand-off hands the same tensor out again
    when its buffer's next batch comes, and it came with requires_grad set and the old batch's
    .grad, to which the next backward added (a silently wrong gradient). Each batch's mels come
    without either, as fresh tensors do."""
    from featcache.torch import to_device
    import featcache
    if how == "dataset":
        it = lambda e: (ds.set_epoch(e), ds)[1]  # noqa: E731
        ds = FeatcacheDataset(store["path"], batch_size=8, pad_to=64)
    else:
        ld = featcache.Loader(store["path"], batch_size=8, pad_to=64,
                              buffer_alloc=lambda n: torch.empty(n, dtype=torch.uint8),
                              n_buffers=16)
        it = lambda e: (ld.set_epoch(e), to_device(ld, "cpu"))[1]  # noqa: E731
    handed = set()
    for e in range(3):
        for b in it(e):
            m = b["mels"]
            assert not m.requires_grad and m.grad is None, (e, id(m))
            handed.add(id(m))
            m.requires_grad_()
            (m * 2).sum().backward()
            assert torch.equal(m.grad, torch.full_like(m, 2.0))  # this batch's alone
            del m, b
    assert len(handed) < 3 * ((N + 7) // 8), "no tensor was handed out twice: nothing tested"


def test_entries_of_batches_padded_to_their_longest_are_bounded(store, monkeypatch):
    """Batches padded to their longest (no pad_to) have a new shape almost every batch, and the
    hand-off kept the tensors it made for each (buffer, shape) for good: a long run grew by an
    epoch's worth of them every epoch. Past MAX_ENTRIES those whose batch is not lent out are
    dropped; the batches stay the loader's, value for value, with some held across epochs."""
    import featcache
    from featcache import _torch_handoff as H
    monkeypatch.setattr(H, "MAX_ENTRIES", 8, raising=False)
    kw = dict(batch_size=3, shuffle=True, seed=4, padded=True)
    ds = FeatcacheDataset(store["path"], **kw)
    ld = featcache.Loader(store["path"], **kw)
    kept = []
    for e in range(4):
        ds.set_epoch(e)
        ld.set_epoch(e)
        n = 0
        for got, want in zip(ds, ld):
            assert list(got["ids"]) == list(want.ids)
            np.testing.assert_array_equal(got["mels"].numpy(), want.mels)
            np.testing.assert_array_equal(got["mel_lengths"].numpy(), want.mel_lengths)
            if n % 5 == 0:
                kept.append((got["mels"], want.mels.copy()))
            n += 1
        ho = ds._loader()._handle().handoff
        assert n == len(ld) and len(ho.entries) <= 8 + len(ho.out)  # (those lent: kept)
    for t, a in kept:  # held across the drops: intact
        np.testing.assert_array_equal(t.numpy(), a)
