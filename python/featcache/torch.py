"""featcache.torch: a PyTorch IterableDataset over featcache.Loader.

    from featcache.torch import FeatcacheDataset
    ds = FeatcacheDataset("cache/", features="hifigan", tokens="chars", batch_size=32,
                          shuffle=True, padded=True)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0, pin_memory=True)
    for epoch in range(E):
        ds.set_epoch(epoch)
        for batch in dl:
            batch["mels"]          # [B, T, n_mels] tensor (padded) or list of [T_i, n_mels]
            batch["mel_lengths"], batch["tokens"], batch["token_lengths"], batch["ids"]

Each item the dataset yields is a whole batch (use batch_size=None in the DataLoader).
Tensors come from torch.from_numpy: no copy in this process. The loader's own prefetch threads
make DataLoader workers unnecessary (num_workers=0 keeps the zero copy; workers pickle each
batch into shared memory, one copy). With workers, every (rank, worker) pair reads its own
share: the shard index is rank * num_workers + worker_id out of world_size * num_workers, so
each utterance is read by exactly one worker of one rank per epoch (shard="uneven"), or by one
plus a few repeats to equalize counts (shard="pad", the default, as DistributedSampler).
rank/world_size come from torch.distributed when it is initialized, unless given.
Views (padded=False) are read-only memory: do not write into those tensors.
Lengths are int32 tensors (torch has no uint32; same memory); u16 token ids become int32 (a copy).
bf16 stores give torch.bfloat16 tensors.
"""

import os
import warnings

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from .loader import Loader

__all__ = ["FeatcacheDataset", "batch_to_torch"]


def _tensor(a, bf16):
    t = torch.from_numpy(a)
    return t.view(torch.bfloat16) if bf16 else t


def _ints(a):
    # torch (1.13) has no uint32/uint16: lengths (< 2**31) are viewed as int32 (no copy); u16
    # token ids are widened to int32 (a copy, only for that dtype)
    if a.dtype == np.uint32:
        return torch.from_numpy(a.view(np.int32))
    if a.dtype == np.uint16:
        return torch.from_numpy(a.astype(np.int32))
    return torch.from_numpy(a)


def batch_to_torch(b, bf16=False):
    """A featcache LoaderBatch as a dict of tensors sharing its memory (plus "ids", a list)."""
    with warnings.catch_warnings():
        # views of the read-only map: torch warns that the array is not writable
        warnings.simplefilter("ignore", UserWarning)
        mels = _tensor(b.mels, bf16) if b.padded else [_tensor(m, bf16) for m in b.mels]
        out = {"ids": b.ids, "mels": mels, "mel_lengths": _ints(b.mel_lengths),
               "mel_starts": _ints(b.mel_starts)}
        if b.tokens is not None:
            out["tokens"] = _ints(b.tokens) if b.padded else [_ints(t) for t in b.tokens]
            out["token_lengths"] = _ints(b.token_lengths)
    return out  # torch.from_numpy keeps each array, and so the batch's memory, alive


class FeatcacheDataset(IterableDataset):
    """IterableDataset of whole batches; worker- and DDP-aware; opened lazily per process.

    Arguments are featcache.Loader's (paths, features, tokens, batch_size, shuffle, seed, order,
    padded, max_frames, drop_last, crops, prefetch...) plus rank/world_size (default: from
    torch.distributed when initialized, else 0/1)."""

    def __init__(self, paths, rank=None, world_size=None, **loader_kwargs):
        super().__init__()
        self.paths = paths
        self.rank, self.world_size = rank, world_size
        self.kwargs = loader_kwargs
        self.epoch = int(loader_kwargs.pop("epoch", 0))
        self._loaders = {}

    def set_epoch(self, epoch):
        """Call before each epoch (as DistributedSampler.set_epoch): workers are created anew
        each epoch (unless persistent) and read the epoch from here."""
        self.epoch = int(epoch)

    def _shard(self):
        rank, world = self.rank, self.world_size
        if rank is None or world is None:
            r, w = 0, 1
            try:
                import torch.distributed as dist
                if dist.is_available() and dist.is_initialized():
                    r, w = dist.get_rank(), dist.get_world_size()
            except Exception:
                pass
            rank = r if rank is None else rank
            world = w if world is None else world
        info = get_worker_info()
        if info is not None:
            return rank * info.num_workers + info.id, world * info.num_workers
        return rank, world

    def _loader(self):
        rank, world = self._shard()
        key = (os.getpid(), rank, world)
        ld = self._loaders.get(key)
        if ld is None:
            # loaders of another process (inherited over fork) are dropped, never closed here
            self._loaders = {k: v for k, v in self._loaders.items() if k[0] == os.getpid()}
            ld = Loader(self.paths, rank=rank, world_size=world, **self.kwargs)
            self._loaders[key] = ld
        return ld

    def __iter__(self):
        ld = self._loader()
        ld.set_epoch(self.epoch)
        bf16 = ld.info.mel_dtype == 3
        for b in ld:
            yield batch_to_torch(b, bf16)

    def __len__(self):
        return len(self._loader())

    def __getstate__(self):
        d = self.__dict__.copy()
        d["_loaders"] = {}
        return d
