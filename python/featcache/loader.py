"""featcache.Loader: batches of mels (and token ids) as numpy arrays over the LMDB map.

See docs/loader.md. Lifetimes, in one paragraph: the arrays of a batch share memory with the
map (views, read-only) or with the batch's padded buffer; they stay valid as long as you hold
any of them — the batch is given back to the C loader when the last array (or the Batch object)
is garbage collected, or at once with batch.release(), after which its arrays must not be used.
The C loader itself is closed when the Loader and every array it produced are gone. A Loader is
opened lazily in each process that iterates it (so it can be built before DataLoader workers
fork); a handle inherited over fork is left alone, never closed, in the child.
"""

import ctypes
import os
import threading

import numpy as np

from . import _lib
from ._lib import FeatcacheError

__all__ = ["Loader", "LoaderBatch", "get", "bf16_to_float32", "numpy_dtype"]

_NP = {1: np.float32, 2: np.float16, 3: np.uint16, 4: np.int32, 5: np.int16, 6: np.uint16}
_DT = {k: np.dtype(v) for k, v in _NP.items()}


def numpy_dtype(code):
    """numpy dtype of a record dtype code. bf16 (3) has no numpy type: it is exposed as uint16
    holding the raw bits; convert with bf16_to_float32 (or use the torch adapter: torch.bfloat16)."""
    return np.dtype(_NP[code])


def bf16_to_float32(a):
    """float32 copy of a bf16 array exposed as uint16 (the raw bits)."""
    a = np.asarray(a)
    if a.dtype != np.uint16:
        raise TypeError("bf16 arrays are exposed as uint16; got %s" % a.dtype)
    return (a.astype(np.uint32) << 16).view(np.float32)


def _raise(code, what, handle=None):
    msg = "%s: %s" % (what, _lib.strerror(code))
    if handle is not None:
        detail = _lib.lib().fc_loader_error(handle).decode("utf-8", "replace")
        if detail:
            msg += " (%s)" % detail
    raise FeatcacheError(code, msg)


class _Handle:
    """Owns one fc_loader of one process. Closed when the last reference goes (arrays of the map
    and batch owners reference it), and only in the process that opened it."""

    def __init__(self, paths, opts):
        L = _lib.lib()
        arr = (ctypes.c_char_p * len(paths))(*[os.fsencode(p) for p in paths])
        h = ctypes.c_void_p()
        why = ctypes.create_string_buffer(1024)
        rc = L.fc_loader_open(arr, len(paths), ctypes.byref(opts), ctypes.byref(h), why, 1024)
        if rc:
            raise FeatcacheError(rc, "featcache: %s" % (why.value.decode("utf-8", "replace") or
                                                        _lib.strerror(rc)))
        self.h = h
        self.pid = os.getpid()
        self.lib = L
        info = _lib.Info()
        L.fc_loader_info_get(h, ctypes.byref(info))
        self.info = info
        self.regions = []  # (base, length, uint8 array over the map, read-only)
        for i in range(info.n_stores):
            base, ln = ctypes.c_void_p(), ctypes.c_size_t()
            if L.fc_loader_map_region(h, i, ctypes.byref(base), ctypes.byref(ln)) == 0:
                buf = (ctypes.c_char * ln.value).from_address(base.value)
                buf._owner = self  # the map stays while any view of it lives
                # views are np.ndarray(..., buffer=this read-only memoryview): read-only arrays
                # whose base keeps buf, and so this handle, alive
                self.regions.append((base.value, ln.value, memoryview(buf).toreadonly()))
        self.lock = threading.Lock()

    def __del__(self):
        try:
            if self.h and self.pid == os.getpid():
                self.lib.fc_loader_close(self.h)
        except Exception:  # interpreter shutdown
            pass
        self.h = None


class _BatchOwner:
    """Gives the C batch back when the last array that shares its memory is gone."""

    __slots__ = ("handle", "ptr", "__weakref__")

    def __init__(self, handle, ptr):
        self.handle = handle
        self.ptr = ptr

    def release(self):
        if self.ptr is not None and self.handle.pid == os.getpid():
            self.handle.lib.fc_loader_release(self.handle.h, self.ptr)
        self.ptr = None

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def _wrap(addr, nbytes, dtype, shape, owner, writeable=True):
    """numpy array over C memory at addr; its base (a ctypes array) keeps owner alive."""
    if not nbytes:
        return np.zeros(shape, dtype)
    buf = (ctypes.c_char * nbytes).from_address(addr)
    buf._owner = owner
    a = np.frombuffer(buf, dtype=dtype)
    if len(shape) > 1:
        a = a.reshape(shape)
    if not writeable:
        a.flags.writeable = False
    return a


class LoaderBatch:
    """One batch. Attributes (numpy arrays sharing memory with the map or the batch buffer):

    ids            list of str
    mels           views: list of [T_i, n_mels] arrays in the map (read-only);
                   padded: one [B, T, n_mels] array over the batch buffer
    mel_lengths    [B] uint32 frames (after cropping)
    mel_starts     [B] uint32 first frame taken (crops)
    tokens         views: list of [L_i] arrays; padded: one [B, L] array; None without tokens
    token_lengths  [B] uint32, or None
    items          [B] uint64 positions in the loader's index
    errors         list of "id: reason" for utterances skipped from this batch (verify=True)
    epoch, index   epoch and batch number
    """

    __slots__ = ("ids", "mels", "mel_lengths", "mel_starts", "tokens", "token_lengths", "items",
                 "errors", "epoch", "index", "padded", "_owner")

    def __len__(self):
        return len(self.ids)

    def release(self):
        """Give the batch back now; its arrays must not be used afterwards."""
        self._owner.release()

    def __repr__(self):
        return "<featcache batch %d of epoch %d: %d utterances>" % (self.index, self.epoch,
                                                                    len(self.ids))


def _make_batch(handle, bp):
    b = bp.contents
    owner = _BatchOwner(handle, bp)
    out = LoaderBatch()
    out._owner = owner
    B = b.size
    out.epoch, out.index = b.epoch, b.index
    out.ids = [x.decode("utf-8") for x in b.ids[:B]]
    out.mel_lengths = lens = _wrap(b.mel_lengths, 4 * B, np.uint32, (B,), owner, False)
    out.mel_starts = _wrap(b.mel_starts, 4 * B, np.uint32, (B,), owner, False)
    out.items = _wrap(b.items, 8 * B, np.uint64, (B,), owner, False)
    mdt = _DT[b.mel_dtype]
    nm = b.n_mels
    out.padded = bool(b.mel_data)
    if b.mel_data:
        out.mels = _wrap(b.mel_data, B * b.frames * nm * mdt.itemsize, mdt, (B, b.frames, nm), owner)
    else:
        mels = []
        row = nm * mdt.itemsize
        regions = handle.regions
        base, ln, rbuf = regions[0] if len(regions) == 1 else (0, 0, None)
        for p, n in zip(b.mels[:B], lens.tolist()):
            off = p - base
            if rbuf is not None and 0 <= off and off + n * row <= ln:
                mels.append(np.ndarray((n, nm), mdt, rbuf, off))  # read-only: the map's buffer
                continue
            for base2, ln2, rbuf2 in regions:
                if base2 <= p and p + n * row <= base2 + ln2:
                    mels.append(np.ndarray((n, nm), mdt, rbuf2, p - base2))
                    break
            else:  # a short record copied into the batch (not 16-byte aligned in the map)
                mels.append(_wrap(p, n * row, mdt, (n, nm), owner, False))
        out.mels = mels
    if b.token_lengths:
        tdt = _DT[b.tok_dtype]
        out.token_lengths = _wrap(b.token_lengths, 4 * B, np.uint32, (B,), owner, False)
        if b.tok_data:
            L = b.max_tokens
            out.tokens = _wrap(b.tok_data, B * L * tdt.itemsize, tdt, (B, L), owner)
        else:
            out.tokens = [_wrap(p, n * tdt.itemsize, tdt, (n,), owner, False)
                          for p, n in zip(b.tokens[:B], out.token_lengths.tolist())]
    else:
        out.tokens = out.token_lengths = None
    out.errors = b.errors.decode("utf-8", "replace").splitlines() if b.errors else []
    return out


class Loader:
    """Iterate batches of a featcache store (or several, read as one dataset).

    Loader(paths, features=None, tokens=None, batch_size=32, shuffle=False, seed=0, ...)

    paths         a store directory or a list of them
    features      mel config: preset name ('hifigan') or 32-hex digest; None: the store's only
                  mel config, else 'hifigan'
    tokens        token config (digest or name, e.g. 'chars'); None: no tokens
    batch_size    utterances per batch (with max_frames: the cap, 0 = none)
    shuffle       True: order='random' unless order is given
    order         'sequential' | 'random' | 'bucket' | 'locality'
    seed, epoch   the order of epoch e is a function of (seed, e); iterating the loader runs the
                  current epoch and then advances it by one (set_epoch(e) to choose)
    padded        False: mels are views into the map (list of arrays); True: one padded
                  [B, T, n_mels] array per batch
    max_frames    > 0: dynamic batching, B x T <= max_frames
    drop_last, crop_frames, pad_to, pad_multiple, pad_value, token_pad, random_crop
    rank, world_size, shard ('pad' | 'drop' | 'uneven'); None: from torch.distributed when it is
                  initialized, else 0 and 1
    bucket_batches, locality_run, prefetch_threads, prefetch_depth
    verify        check payload checksums when batches are built; strict: fail on any missing or
                  corrupt record instead of skipping it (skipped ones: .problems())
    nolock, nordahead, willneed   LMDB / madvise switches (docs/loader.md)
    """

    def __init__(self, paths, features=None, tokens=None, batch_size=32, shuffle=False, seed=0,
                 order=None, padded=False, max_frames=0, drop_last=False, rank=None,
                 world_size=None, shard="pad", crop_frames=0, pad_to=0, pad_multiple=0,
                 pad_value=0.0, token_pad=0, random_crop=False, bucket_batches=64,
                 locality_run=0, prefetch_threads=2, prefetch_depth=4, verify=False,
                 strict=False, nolock=False, nordahead=False, willneed=True, epoch=0):
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(p) for p in paths]
        if order is None:
            order = "random" if shuffle else "sequential"
        if order not in _lib.ORDERS:
            raise ValueError("order must be one of %s" % ", ".join(_lib.ORDERS))
        if shard not in _lib.SHARDS:
            raise ValueError("shard must be one of %s" % ", ".join(_lib.SHARDS))
        if rank is None or world_size is None:
            r, w = _dist_rank_world()
            rank = r if rank is None else rank
            world_size = w if world_size is None else world_size
        self.features, self.tokens = features, tokens
        self.batch_size, self.order, self.seed, self.padded = batch_size, order, seed, padded
        self.rank, self.world_size = rank, world_size
        self._kw = dict(max_frames=max_frames, drop_last=drop_last, shard=shard,
                        crop_frames=crop_frames, pad_to=pad_to, pad_multiple=pad_multiple,
                        pad_value=pad_value, token_pad=token_pad, random_crop=random_crop,
                        bucket_batches=bucket_batches, locality_run=locality_run,
                        prefetch_threads=prefetch_threads, prefetch_depth=prefetch_depth,
                        verify=verify, strict=strict, nolock=nolock, nordahead=nordahead,
                        willneed=willneed)
        self.epoch = epoch
        self._h = None

    # -- options and lazy per-process opening --------------------------------------------------
    def _options(self, lookup_only=False):
        L = _lib.lib()
        o = _lib.Options()
        L.fc_loader_options_init(ctypes.byref(o))
        k = self._kw
        self._keep = [None if self.features is None else str(self.features).encode(),
                      None if self.tokens is None else str(self.tokens).encode()]
        o.features, o.tokens = self._keep
        flags = 0
        if k["nolock"]: flags |= _lib.FLAG_NOLOCK
        if k["nordahead"]: flags |= _lib.FLAG_NORDAHEAD
        if k["verify"]: flags |= _lib.FLAG_VERIFY
        if k["strict"]: flags |= _lib.FLAG_STRICT
        if k["random_crop"]: flags |= _lib.FLAG_RANDOM_CROP
        if not k["willneed"]: flags |= _lib.FLAG_NO_WILLNEED
        if lookup_only: flags |= _lib.FLAG_LOOKUP_ONLY
        o.flags = flags
        o.order = _lib.ORDERS[self.order]
        o.seed = self.seed & 0xFFFFFFFFFFFFFFFF
        o.output = _lib.OUTPUTS["padded" if self.padded else "views"]
        o.batch_size = self.batch_size
        o.max_frames = k["max_frames"]
        o.drop_last = 1 if k["drop_last"] else 0
        o.rank, o.world_size = self.rank, self.world_size
        o.shard = _lib.SHARDS[k["shard"]]
        o.crop_frames, o.pad_to, o.pad_multiple = k["crop_frames"], k["pad_to"], k["pad_multiple"]
        o.pad_value, o.token_pad = k["pad_value"], k["token_pad"]
        o.bucket_batches, o.locality_run = k["bucket_batches"], k["locality_run"]
        o.prefetch_threads, o.prefetch_depth = k["prefetch_threads"], k["prefetch_depth"]
        return o

    def _handle(self):
        h = self._h
        if h is None or h.pid != os.getpid():
            # a handle inherited over fork is dropped, not closed (_Handle.__del__ checks the pid)
            self._h = h = _Handle(self.paths, self._options())
        return h

    def __getstate__(self):  # picklable for spawn-started workers: reopened on first use
        d = self.__dict__.copy()
        d["_h"] = None
        d.pop("_keep", None)
        return d

    # -- facts ---------------------------------------------------------------------------------
    @property
    def info(self):
        return self._handle().info

    def __len__(self):
        """Batches per epoch on this rank."""
        return int(self._handle().info.epoch_batches)

    @property
    def num_items(self):
        """Utterances in the index (all ranks)."""
        return int(self._handle().info.items)

    def problems(self):
        """Skipped utterances: list of (id, store, reason)."""
        h = self._handle()
        out = []
        a, b, c = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
        i = 0
        while h.lib.fc_loader_problem(h.h, i, ctypes.byref(a), ctypes.byref(b), ctypes.byref(c)) == 0:
            out.append((a.value.decode(), b.value.decode(), c.value.decode()))
            i += 1
        return out

    def config(self, which="features"):
        """Canonical JSON (str) of the chosen feature or token config."""
        h = self._handle()
        s = h.lib.fc_loader_config_json(h.h, 0 if which == "features" else 1)
        return s.decode() if s else None

    @property
    def wait_seconds(self):
        """Time this process spent blocked waiting for prefetched batches."""
        h = self._handle()
        return h.lib.fc_loader_wait_ns(h.h) / 1e9

    # -- iteration -------------------------------------------------------------------------------
    def set_epoch(self, epoch):
        """Choose the epoch the next iteration runs (torch DistributedSampler style)."""
        self.epoch = int(epoch)

    def __iter__(self):
        h = self._handle()
        L = h.lib
        epoch = self.epoch
        with h.lock:
            rc = L.fc_loader_set_epoch(h.h, epoch)
        if rc:
            _raise(rc, "set_epoch(%d)" % epoch, h.h)
        bp = ctypes.POINTER(_lib.Batch)()
        try:
            while True:
                with h.lock:
                    rc = L.fc_loader_next(h.h, ctypes.byref(bp))
                if rc:
                    _raise(rc, "next batch", h.h)
                if not bp:
                    break
                yield _make_batch(h, bp)
                bp = ctypes.POINTER(_lib.Batch)()
        finally:
            if self.epoch == epoch:
                self.epoch = epoch + 1

    def close(self):
        """Drop this process's handle (closed once no array of it remains)."""
        self._h = None


def _dist_rank_world():
    try:
        import torch.distributed as dist  # noqa: PLC0415
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    return 0, 1


_GET_CACHE = {}


def get(store, id, features=None, tokens=None):
    """The features of one utterance: a read-only [frames, n_mels] array in the map (and with
    tokens=..., a tuple (mels, tokens)). Raises KeyError when the store has no such id."""
    key = (os.getpid(), os.path.realpath(os.fspath(store)), features, tokens)
    ld = _GET_CACHE.get(key)
    if ld is None:
        for k in [k for k in _GET_CACHE if k[0] != os.getpid()]:
            del _GET_CACHE[k]  # handles of a parent process are dropped, not closed
        ld = Loader(store, features=features, tokens=tokens)
        ld._h = _Handle(ld.paths, ld._options(lookup_only=True))
        _GET_CACHE[key] = ld
    h = ld._h
    it = _lib.Item()
    rc = h.lib.fc_loader_lookup(h.h, id.encode("utf-8"), ctypes.byref(it))
    if rc == _lib.FC_ENOTFOUND:
        raise KeyError(h.lib.fc_loader_error(h.h).decode("utf-8", "replace"))
    if rc:
        _raise(rc, "get(%r)" % id, h.h)
    mdt = np.dtype(_NP[it.mel_dtype])
    mel = _wrap(it.mel, it.frames * it.n_mels * mdt.itemsize, mdt, (it.frames, it.n_mels), h,
                False)
    if tokens is None:
        return mel
    tdt = np.dtype(_NP[it.tok_dtype])
    tok = _wrap(it.tokens, it.n_tokens * tdt.itemsize, tdt, (it.n_tokens,), h, False)
    return mel, tok
