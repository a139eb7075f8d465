"""featcache.torch: a PyTorch IterableDataset over featcache.Loader, with batches delivered on the GPU.

    from featcache.torch import FeatcacheDataset
    ds = FeatcacheDataset("cache/", features="hifigan", tokens="chars", batch_size=32,
                          shuffle=True, pad_to=800, crop="random", device="cuda")
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    for epoch in range(E):
        ds.set_epoch(epoch)        # (optional: without it each iteration runs the next epoch)
        for batch in dl:
            batch["mels"]          # [B, 800, n_mels] CUDA tensor, already on the GPU
            batch["mel_lengths"], batch["tokens"], batch["token_lengths"], batch["ids"]
            batch["mel_starts"], batch["src_frames"]   # where each crop starts, of how many frames

Each item the dataset yields is a whole batch (use batch_size=None in the DataLoader, and leave
the DataLoader's own pin_memory off: it would copy every batch once more).

Padded batches are handed off whole (featcache._torch_handoff, docs/loader.md "The hand-off"):
the loader's threads build each batch, lengths and ids included, into a buffer of the dataset's,
and the tensors over a buffer are made once and handed out again each time it comes back — one
ctypes call takes the batches already built, each made ready then, so next() steps through a
list. A buffer is reused only when nothing of its batch is held (the tensors, or any view of
them); batch["ids"] is a sequence of str decoded when first read (a list when copied or pickled).

device="cuda" (or "cuda:N"): padded batches are built by the loader's threads straight into
page-locked (pinned) host buffers allocated by torch, copied to the GPU on a side CUDA stream
`prefetch_to_device` batches (default 2) before the training loop asks for them, and ordered
with the loop's current stream by an event (no device-wide synchronisation). The tensors are
allocated by torch's caching allocator and marked with record_stream, so their memory is reused
only after the consumer's stream has passed the point where they were freed; a host buffer is
given back to the loader only after the copy out of it has completed (a CUDA event). The loop
must not use another thread's stream for them without its own synchronisation.

device="cpu" (default) with pin_memory=True: the batch's mels (padded) lie in pinned buffers the
loader fills directly (no extra copy), so the loop's own `.to("cuda", non_blocking=True)` is
asynchronous. Such a batch's buffer is reused only after an event recorded on the releasing
thread's current CUDA stream (when the batch is garbage collected) has passed: copies issued on
that stream (the usual case) are complete before it is overwritten. Tokens and lengths are small
and stay in ordinary memory.

Without pin_memory, tensors come from torch.from_numpy: no copy in this process. The loader's
own prefetch threads make DataLoader workers unnecessary (num_workers=0 keeps the zero copy;
workers pickle each batch into shared memory, one copy). With workers, each rank's epoch is
planned whole, as with num_workers=0, and dealt out by batch: worker w of W builds the batches
w, w + W, w + 2W, ... and torch takes one from each worker in turn, so the DataLoader yields the
very batches of num_workers=0 in their order: len() of them, one short batch at most (the
last), drop_last dropping that one only, and a resume (skip k batches) the same whatever
num_workers the interrupted run had. device="cuda" and pin_memory need num_workers=0.
rank/world_size come from torch.distributed when it is initialized, unless given. Under DDP,
call featcache.check_ranks(ds) once on every rank after making the dataset: ranks that opened
different snapshots of the stores (a featurize still writing) or got other options (seed) would
each read their share of another order, some utterances twice and others never; it raises on
every rank instead. A DataLoader worker that opens the stores and finds them changed since the
dataset was made raises FeatcacheError for the same reason.
Views (padded=False) are read-only memory: do not write into those tensors.
A batch whose records were all damaged (skipped under verify) is left out, as featcache.tf does:
no step gets zero utterances; a RuntimeWarning names them (on one rank of several, world_size > 1,
a FeatcacheError: the rank would take one step fewer than the others, and DDP wait for good). batch["errors"] names the utterances
skipped from a batch handed out ("id: reason", a tuple; () almost always).
Lengths are int32 tensors (torch has no uint32; same memory); token ids are int32 too: i16 and
u16 ids are widened (a copy of the small token array; nn.Embedding refuses int16), their pad
slots holding token_pad itself (-100 for cross_entropy's ignore_index: the loader pads u16 ids
with it wrapped, 65436).
bf16 stores give torch.bfloat16 tensors.
"""

import collections
import contextlib
import multiprocessing
import numbers
import os
import warnings
from multiprocessing import context as _mp_context

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ._batch import int32_tokens
from ._torch_handoff import Handoff, left_out
from ._lib import FC_ECONFIG, FeatcacheError
from .loader import _MAX64, Loader, _anchored, _cwd, _number, _view_changed

__all__ = ["FeatcacheDataset", "batch_to_torch", "to_device"]

_RECENT = 8  # iterations whose epochs a DataLoader worker beginning late finds (_begin)


def _tensor(a, bf16):
    # bf16 arrays are uint16 (the raw bits), which torch.from_numpy refuses: int16 is the same
    # bits, viewed as bfloat16 (no copy)
    if bf16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _ints(a):
    # torch (1.13) has no uint32/uint16: lengths (< 2**31) are viewed as int32 (no copy); 16-bit
    # token ids (u16, and i16: tokenize's dtype for vocabularies under 32768, which torch's
    # indexing — nn.Embedding, gather — refuses) are widened to int32 (a copy, for those only)
    if a.dtype == np.uint32:
        return torch.from_numpy(a.view(np.int32))
    if a.dtype == np.uint16 or a.dtype == np.int16:
        return torch.from_numpy(a.astype(np.int32))
    return torch.from_numpy(a)


def batch_to_torch(b, bf16=False):
    """A featcache LoaderBatch as a dict of tensors sharing its memory (plus "ids", a list, and
    "errors", a tuple of "id: reason" for the utterances skipped from it: damaged records)."""
    with warnings.catch_warnings():
        # views of the read-only map: torch warns that the array is not writable
        warnings.simplefilter("ignore", UserWarning)
        mels = _tensor(b.mels, bf16) if b.padded else [_tensor(m, bf16) for m in b.mels]
        out = {"ids": b.ids, "errors": tuple(b.errors), "mels": mels,
               "mel_lengths": _ints(b.mel_lengths),
               "mel_starts": _ints(b.mel_starts), "src_frames": _ints(b.src_frames)}
        if b.tokens is not None:
            out["tokens"] = (torch.from_numpy(int32_tokens(b)) if b.padded
                             else [_ints(t) for t in b.tokens])
            out["token_lengths"] = _ints(b.token_lengths)
    return out  # torch.from_numpy keeps each array, and so the batch's memory, alive


class _Done:
    """A fence that has always passed (copies to a CPU device are synchronous)."""

    def query(self):
        return True

    def synchronize(self):
        pass


# fields copied to the device: small ones first — a copy from pageable memory synchronizes the
# side stream, which then holds only earlier, finished copies — then the mels, from pinned memory
_SMALL = ("mel_lengths", "mel_starts", "src_frames", "token_lengths", "tokens")


def _handoff(ld, device=None, depth=2):
    """The loader's Handoff (one per loader and process), or None where batches cannot be handed
    off whole (views, u16 tokens, no caller buffers, a torch whose use counts cannot be read)."""
    if not ld.padded or not Handoff.usable(ld):
        return None
    h = ld._handle()
    ho = getattr(h, "handoff", None)
    want = (None if device is None else str(torch.device(device)), depth)
    if ho is None:
        ho = h.handoff = Handoff(ld, device, depth)
        ho.key = want
    return ho if ho.key == want else None


def to_device(host_batches, device, depth=2):
    """Yield the LoaderBatches of host_batches as dicts of tensors on device, each copied `depth`
    batches ahead of the one yielded (on a side stream for CUDA; the consumer's current stream
    waits for an event, and each host batch is given back once its copy has completed).

    A featcache.Loader with caller buffers (buffer_alloc) is handed off whole, its tensors made
    once per buffer (featcache._torch_handoff); with a CPU device that pipeline runs with copies of
    no cost (the tensors are the host buffer's). Any other iterable of batches: a CPU device runs
    the same pipeline with synchronous copies (the logic without CUDA)."""
    if isinstance(host_batches, Loader):
        ho = _handoff(host_batches, device, depth)
        if ho is not None:
            ld = host_batches
            epoch, h = ld.epoch, ld._handle()
            gen = h.gen + 1  # (the iteration below begins one)
            try:
                yield from ho.to_device(epoch, *_slow_device(torch.device(device)))
            finally:
                if ld.epoch == epoch and h.gen == gen:
                    # (only the newest iteration advances the epoch, as Loader's own do: one
                    # overtaken and let go while the newer one runs the epoch leaves it to it)
                    ld.epoch = epoch + 1
            return
    issue, take = _slow_device(torch.device(device))
    pending = collections.deque()
    ranks = ((host_batches.rank, host_batches.world_size, host_batches.paths)
             if isinstance(host_batches, Loader) else ())
    for b in host_batches:
        if not len(b):  # every record of it damaged and skipped: no step of zero utterances
            left_out(b, *ranks)
            continue
        if not b.padded:
            raise ValueError("featcache: device batches are padded: pass padded=True or pad_to")
        pending.append(issue(b))
        if len(pending) > depth:
            yield take(pending.popleft())
    while pending:
        yield take(pending.popleft())


def _slow_device(device):
    """(issue, take) of to_device's generic pipeline, for the batches a Handoff does not take."""
    cuda = device.type == "cuda"
    stream = torch.cuda.Stream(device=device) if cuda else None

    def issue(b):
        if not b.padded:
            raise ValueError("featcache: device batches are padded: pass padded=True or pad_to")
        src = batch_to_torch(b, b.mels.dtype == np.uint16)
        out = {"ids": src["ids"], "errors": src["errors"]}
        if cuda:
            with torch.cuda.stream(stream):
                for k in _SMALL + ("mels",):
                    if k in src:
                        out[k] = src[k].to(device, non_blocking=True)
                copied = torch.cuda.Event()
                copied.record(stream)
        else:
            for k in _SMALL + ("mels",):
                if k in src:
                    out[k] = src[k].clone()
            copied = _Done()
        del src
        b.release(fence=copied)
        return out, copied

    def take(item):
        out, copied = item
        if cuda:
            cur = torch.cuda.current_stream(device)
            cur.wait_event(copied)
            for t in out.values():
                if torch.is_tensor(t):
                    t.record_stream(cur)
        return out

    return issue, take


def _host_alloc(nbytes):
    return torch.empty(nbytes, dtype=torch.uint8)


def _pinned_alloc(nbytes):
    return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)


def _stream_fence():
    ev = torch.cuda.Event()
    ev.record(torch.cuda.current_stream())
    return ev


class FeatcacheDataset(IterableDataset):
    """IterableDataset of whole batches; worker- and DDP-aware.

    The stores are opened and checked when the dataset is made, as featcache.Loader does: a path
    that is not a store, a preset or token config it does not hold, or an option it cannot serve
    raises FeatcacheError there, not at the first batch. A DataLoader worker (or a process that
    unpickles the dataset) opens its own loader at first use; the one opened here serves the
    process that made it.

    Arguments are featcache.Loader's (paths, features, tokens, batch_size, shuffle, seed, order,
    padded, max_frames, drop_last, pad_to, crop_frames, crop, pad_value, prefetch...) plus
    rank/world_size (default: from torch.distributed when initialized, else 0/1) and

    device            "cpu" (default), "cuda" or "cuda:N": where the tensors are delivered
    pin_memory        device "cpu": mels in page-locked buffers filled by the loader (for the
                      loop's own .to(..., non_blocking=True)); needs CUDA (without it: a warning,
                      ordinary memory)
    prefetch_to_device  device "cuda": batches copied ahead (default 2)
    """

    def __init__(self, paths, rank=None, world_size=None, device="cpu", pin_memory=False,
                 prefetch_to_device=2, **loader_kwargs):
        super().__init__()
        if not isinstance(paths, (str, bytes, os.PathLike)):
            paths = list(paths)  # (a generator, Path.glob's: read once, each worker reads them)
        self.paths = paths
        ids = loader_kwargs.get("ids")
        if ids is not None and not isinstance(ids, (str, bytes)):
            loader_kwargs["ids"] = tuple(ids)  # (the same: each process makes a loader of them)
        self._cwd = _cwd()  # relative paths (stores, manifest) are of this directory in workers too
        self.rank, self.world_size = rank, world_size
        self.kwargs = loader_kwargs
        # the epoch lives in shared memory: DataLoader workers (persistent ones too, which keep
        # the copy of the dataset they started with) read the one set_epoch set last
        self._epoch_box = multiprocessing.RawValue("Q", 0)
        # how iterations begin, shared the same way (_begin): [an iteration has begun,
        # set_epoch called since, iterations recorded, then (token, epoch, workers begun) of the
        # last _RECENT]
        self._seen_box = multiprocessing.RawArray("Q", 3 + 3 * _RECENT)
        # (a spawn context's lock: shared with forked workers and spawned ones alike)
        self._seen_lock = multiprocessing.get_context("spawn").Lock()
        self.epoch = _number("epoch", loader_kwargs.pop("epoch", 0), _MAX64)
        self.device = torch.device(device)
        self.depth = _number("prefetch_to_device", prefetch_to_device, lo=1)
        self.pin = bool(pin_memory) or self.device.type == "cuda"
        if self.pin or self.device.type == "cuda":
            padded = loader_kwargs.get("padded")
            if padded is False:
                raise ValueError("featcache: device=%r / pin_memory=True deliver padded batches: "
                                 "leave padded=False out" % str(device))
            loader_kwargs["padded"] = True
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("featcache: device=%r but torch.cuda.is_available() is False"
                               % str(device))
        if self.pin and not torch.cuda.is_available():
            warnings.warn("featcache: pin_memory=True without CUDA (torch.cuda.is_available() is "
                          "False): batches are in ordinary memory")
            self.pin = False
        self._loaders = {}
        self._eager = None
        if get_worker_info() is None:  # a wrong path or config raises here
            ld = self._loader()
            self._eager = next(iter(self._loaders))
            # what a DataLoader worker (or a process the dataset is pickled to) must see too
            self._seen_view = ld._seen_view

    @property
    def epoch(self):
        box = self.__dict__.get("_epoch_box")
        return self.__dict__["_epoch"] if box is None else box.value

    @epoch.setter
    def epoch(self, epoch):
        epoch = _number("epoch", epoch, _MAX64, what="set_epoch(%r)" % (epoch,))
        box = self.__dict__.get("_epoch_box")
        if box is None:
            self.__dict__["_epoch"] = epoch
        else:
            box.value = epoch

    def set_epoch(self, epoch):
        """Choose the epoch the next iteration runs (as DistributedSampler.set_epoch). Without a
        call since the last iteration began, an iteration runs the next epoch (as a Loader
        does). DataLoader workers, persistent ones too, read it when an epoch begins (it is
        kept in shared memory)."""
        with self._locked():
            self.epoch = epoch
            self._seen()[1] = 1

    def _seen(self):
        """[an iteration has begun, set_epoch called since, iterations recorded, then (token,
        epoch, workers begun) triples]: shared with the DataLoader workers (a copy pickled
        outside one keeps its own)."""
        d = self.__dict__
        seen = d.get("_seen_box")
        return d.setdefault("_seen", [0] * (3 + 3 * _RECENT)) if seen is None else seen

    def _locked(self):
        lock = self.__dict__.get("_seen_lock")
        return contextlib.nullcontext() if lock is None else lock

    def _begin(self):
        """The epoch an iteration that begins now runs: the one set_epoch chose, or, without a
        call since the last iteration began, the next one (the dataset advances by itself, as a
        Loader does: Lightning calls set_epoch on samplers only, and a loop without it trained on
        one order for good). The DataLoader workers of one iteration each begin it, in their own
        processes: they share a token (the iteration's base seed, torch's worker seed less the
        worker id, and how many iterations the process began: persistent workers begin one
        each epoch), and the first of them to begin chooses the epoch for all of them. A worker
        whose id already began the token's iteration begins another one (a base seed drawn
        again alike: torch.manual_seed, or a generator seeded alike, before each epoch)."""
        d = self.__dict__
        n = d["_begun_here"] = d.get("_begun_here", 0) + 1
        info = get_worker_info()
        # (ints only: a str's hash differs from one spawned process to another)
        key = (0, os.getpid(), n) if info is None else (1, info.seed - info.id, n)
        token = (hash(key) & _MAX64) or 1
        bit = 1 << (0 if info is None else info.id % 64)
        with self._locked():
            seen = self._seen()
            k = next((k for k in range(_RECENT) if seen[3 + 3 * k] == token), None)
            if k is not None and not seen[5 + 3 * k] & bit:
                seen[5 + 3 * k] |= bit  # (a worker of an iteration another worker began)
                return seen[4 + 3 * k]
            epoch = self.epoch
            if seen[0] and not seen[1]:
                epoch = self.epoch = (epoch + 1) & _MAX64
            seen[0], seen[1] = 1, 0
            if k is None:
                k = seen[2] % _RECENT
                seen[2] += 1
            seen[3 + 3 * k], seen[4 + 3 * k], seen[5 + 3 * k] = token, epoch, bit
        return epoch

    def _ranks(self):
        """(rank, world_size): those given, else torch.distributed's (0 and 1 before it is
        initialized)."""
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
        return rank, world

    def _shard(self):
        rank, world = self._ranks()
        info = get_worker_info()
        if info is not None and self.pin:
            raise RuntimeError("featcache: pin_memory / device='cuda' need num_workers=0 (the "
                               "loader's own threads prefetch)")
        return rank, world

    def _loader(self):
        rank, world = self._shard()
        key = (os.getpid(), rank, world)
        ld = self._loaders.get(key)
        if ld is not None and key == self._eager:
            self._eager = None  # the process that made the dataset reads it: kept
        info = get_worker_info()  # workers pickle batches anyway: loader-made buffers there
        if ld is None:
            # loaders of another process (inherited over fork) are dropped, never closed here;
            # the one opened when the dataset was made, for a shard this process no longer
            # reads (torch.distributed initialized after), is closed
            if self._eager is not None:
                eager = self._loaders.pop(self._eager, None)
                if eager is not None and self._eager[0] == os.getpid():
                    eager.close()
                self._eager = None
            self._loaders = {k: v for k, v in self._loaders.items() if k[0] == os.getpid()}
            kw = dict(self.kwargs)
            if info is not None and info.num_workers > 1:
                # the rank's epoch planned whole, as without workers, and dealt out by batch:
                # worker w takes batches w, w + W, ... (torch takes one from each worker in turn:
                # the epoch's batches in their order, len() of them, one short batch at most)
                kw["_batches"] = (info.num_workers, info.id)
            padded = kw.get("padded")
            if padded is None:  # as the Loader decides it: pad_to, or a pad_multiple over 1
                pm = kw.get("pad_multiple")
                padded = bool(kw.get("pad_to")) or (isinstance(pm, numbers.Real) and pm > 1)
            if padded and info is None:
                # padded batches are built whole into buffers of ours (pinned for the GPU), so
                # their tensors are made once per buffer: the loader's prefetch depth, the
                # batches the hand-off took and has not handed out yet (Handoff.take less one),
                # those the loop let go and the hand-off has not given back yet (as many), the
                # two the loop holds (the device pipeline adds those in flight to the device;
                # more are added if the loop keeps batches)
                depth = kw.get("prefetch_depth", 4)
                take = min(depth, 8) if kw.get("prefetch_threads", 2) else 1
                kw.update(buffer_alloc=_pinned_alloc if self.pin else _host_alloc,
                          n_buffers=depth + 2 * take + 2)
                if self.pin and self.device.type == "cpu":
                    kw["release_fence"] = _stream_fence
            cwd = self.__dict__.get("_cwd")
            paths = self.paths
            if isinstance(paths, (str, bytes, os.PathLike)):
                paths = [paths]
            paths = [_anchored(os.fspath(p), cwd) for p in paths]
            if kw.get("manifest") is not None:
                kw["manifest"] = _anchored(os.fspath(kw["manifest"]), cwd)
            seen = self.__dict__.get("_seen_view")
            if seen is not None and seen[0] != os.getpid():
                # the stores' pages were checked where the dataset was made; this process reads
                # the same stores (their view is compared below): not checked again
                kw["check_pages"] = False
            ld = Loader(paths, rank=rank, world_size=world, **kw)
            if seen is not None and seen[0] != os.getpid() and seen[1] != ld.view:
                msg = _view_changed(paths, seen, ld._handle())
                ld.close()
                raise FeatcacheError(FC_ECONFIG, msg)
            self._loaders[key] = ld
        return ld

    def __iter__(self):
        ld = self._loader()
        return self._batches(ld, self._begin())  # (the epoch chosen when iter() is called)

    def _batches(self, ld, epoch):
        ld.set_epoch(epoch)
        if self.device.type != "cpu":
            yield from to_device(ld, self.device, self.depth)
            return
        bf16 = ld.info.mel_dtype == 3
        ho = _handoff(ld)
        if ho is not None:
            try:
                yield from ho.host(epoch, lambda b: batch_to_torch(b, bf16))
            finally:
                if ld.epoch == epoch:
                    ld.epoch = epoch + 1
            return
        for b in ld:
            if len(b):
                yield batch_to_torch(b, bf16)
            else:  # (a batch whose records were all damaged and skipped is left out)
                left_out(b, ld.rank, ld.world_size, ld.paths)

    def __len__(self):
        """Batches of the epoch the next iteration runs: the one set_epoch chose, else the one
        after the last iteration's (while an iteration runs in this process: its own)."""
        ld = self._loader()
        seen, epoch = self._seen(), self.epoch
        if seen[0] and not seen[1] and not ld._handle().running:
            epoch = (epoch + 1) & _MAX64
        ld.set_epoch(epoch)
        return len(ld)

    def __getstate__(self):
        d = self.__dict__.copy()
        d["_loaders"] = {}
        d["_eager"] = None
        if _mp_context.get_spawning_popen() is None:
            # an ordinary pickle (not a worker being started): the epoch's value, not shared
            d["_epoch"], d["_epoch_box"], d["_seen_lock"] = self.epoch, None, None
            seen = d.pop("_seen_box", None)
            if seen is not None:
                d["_seen"] = list(seen)
        else:
            # a DataLoader worker being spawned (forkserver, spawn): torch.distributed is not
            # initialized there, so it would take rank 0 of 1 and every rank's workers read the
            # whole dataset; it reads this process's rank's share
            d["rank"], d["world_size"] = self._ranks()
        return d
