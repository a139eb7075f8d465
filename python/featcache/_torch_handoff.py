"""The hand-off of whole batches to a PyTorch loop, with no tensor made per batch.

The loader's threads build each padded batch whole into a caller buffer (a torch uint8 tensor,
pinned for CUDA): the mels first, then the lengths, crop starts, padded tokens and id text
(libcache/loader, FC_DESC_LAYOUT). So a buffer holds every batch of one shape at the same
offsets, and the tensors over it — mels [B, T, n_mels], mel_lengths, mel_starts,
src_frames, tokens, token_lengths — are made once per (buffer, shape) and handed out again each
time that buffer comes back. One ctypes call (fc_loader_swap_descs) gives back the batches the
loop let go and takes the next with those already built after it; each batch it took is made
ready then (its entry looked up, its dict copied), so the next() calls until the following call
step through a list.

A buffer goes back to the loader once the loop no longer holds anything of its batch: no Python
reference to the tensors handed out (sys.getrefcount) and no other tensor over the buffer's
storage — views, slices, .detach(), .numpy() — (the storage's use count: torch's own counter,
read through torch._C._storage_Use_Count where torch has it, else from the storage object,
calibrated at import). It is checked at each next(), oldest first. So a batch stays valid as long
as anything of it is held, as with fresh tensors; a loop that keeps batches makes the set of
buffers grow (fc_loader_add_buffers) instead of waiting. Where the use count cannot be read
(an unknown torch build), the tensors are made per batch and released when collected.

device="cuda": each buffer has a twin on the GPU, made once; a batch is copied in one
asynchronous copy on a side stream `depth` batches ahead, its event (one per buffer, reused)
waited for by the loop's stream. A twin is written again only after the loop's stream has passed
an event recorded when the loop let the batch go, and the host buffer goes back to the loader
only once the copy out of it has completed. The same pipeline runs with a CPU device: the twin
is the host buffer itself (a device with copies of no cost), so its Python cost is measurable
without a GPU.
"""

import collections
import ctypes
import errno
import functools
import operator
import sys
import warnings
import weakref

import numpy as np
import torch

from . import _batch as _B
from . import _lib
from . import loader as _L

__all__ = ["Handoff", "left_out", "storage_counter"]

_getrefcount = sys.getrefcount


# ---- the storage's use count -----------------------------------------------------------------
def _cdata(t):
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t._storage()
    return st._cdata


_FromMemory = ctypes.pythonapi.PyMemoryView_FromMemory
_FromMemory.restype = ctypes.py_object
_FromMemory.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int]


def _memory_at(addr, n, write=False):
    """A memoryview of n bytes at addr (format "B"), read-only unless write."""
    return _FromMemory(addr, n, 0x200 if write else 0x100)  # PyBUF_WRITE / PyBUF_READ


def _counter_at(cdata, raw=True):
    """() -> the strong count of the c10::StorageImpl at cdata. raw: read it from the object (an
    intrusive_ptr_target: after its vtable pointer, the strong count — the low 32 bits of the
    word in every layout torch has used — checked by _probe()) through a memoryview, the
    cheapest read from Python; else torch's own torch._C._storage_Use_Count."""
    if raw:
        mv = _memory_at(cdata + ctypes.sizeof(ctypes.c_void_p), 4).cast("I")
        return functools.partial(mv.__getitem__, 0)
    return functools.partial(torch._C._storage_Use_Count, cdata)


def _probe(raw):
    """True when _counter_at(raw) counts the tensors over a storage: views, detach, numpy."""
    try:
        t = torch.zeros(64, dtype=torch.uint8)
        c = _counter_at(_cdata(t), raw)
        n0 = c()
        v = t[8:16].view(torch.int32)
        n1 = c()
        d = t.detach()
        n2 = c()
        a = t.numpy()
        n3 = c()
        del v, d, a
        n4 = c()
        return n1 == n0 + 1 and n2 == n0 + 2 and n3 > n2 and n4 == n0 and 0 < n0 < 1 << 20
    except Exception:
        return False


_RAW = _probe(True)
_COUNTS = _RAW or (hasattr(torch._C, "_storage_Use_Count") and _probe(False))


def storage_counter(t):
    """A callable returning the number of tensors using t's storage, or None where it cannot be
    read on this torch."""
    return _counter_at(_cdata(t), _RAW) if _COUNTS else None


# ---- fences ----------------------------------------------------------------------------------
def left_out(b, rank=0, ranks=1, stores=()):
    """A batch the loop never gets (each of its utterances skipped: a damaged record): said as a
    RuntimeWarning, since its errors have no batch to go with. On one rank of several (ranks >
    1: data-parallel) a FeatcacheError instead: left out, it would give this rank one step fewer
    than the others, and DDP, which steps the ranks together, would wait for good."""
    if ranks > 1:
        raise _L._short_rank(b, rank, ranks, stores)
    warnings.warn("featcache: a batch left out, each of its utterances skipped: %s"
                  % "; ".join(b.errors), RuntimeWarning, stacklevel=3)


def _handed(e):
    """The dict an entry hands out: its template's, with no errors (a batch that has some, an
    utterance skipped, is a LoaderBatch's dict: _first). Not in the template: the hand-off
    counts the references to the template's objects, and () is everybody's."""
    d = e.template.copy()
    m = d["mels"]  # (the one floating tensor: the only one that can require grad)
    if m.requires_grad or m.grad is not None:  # a loop set them on an earlier batch of this
        m.grad = None                          # buffer (an input gradient: adversarial, saliency)
        m.requires_grad_(False)                # and the next one would add to its .grad
    d["errors"] = ()
    t = d.get("tokens")
    if t is not None and t.dtype == torch.int16:  # (i16 ids: torch's indexing takes int32 or
        d["tokens"] = t.int()                     # int64 only; after the copy, on its stream)
    return d


class _Done:
    """An event that has always passed (a CPU device: no asynchronous copies)."""

    def query(self):
        return True

    def synchronize(self):
        pass

    def record(self, stream=None):
        pass


_DONE = _Done()


class _Ids(collections.abc.Sequence):
    """The ids of a batch, decoded from the buffer when first read (an id is a Python string:
    decoding 32 of them per batch costs more than the rest of the hand-off)."""

    __slots__ = ("addr", "size", "_v", "__weakref__")

    def __init__(self, addr=(), size=None):
        if size is None:  # _Ids(iterable): generic code rebuilds a sequence as type(seq)(items)
            v = [str(i) for i in addr]  # (Lightning's apply_to_collection, moving a batch)
            self.addr, self.size, self._v = 0, len(v), v
            return
        self.addr, self.size, self._v = addr, size, None

    def _list(self):
        v = self._v
        if v is None:
            v, p = [], self.addr
            for _ in range(self.size):  # the ids back to back, each ending with a NUL
                b = ctypes.string_at(p)
                v.append(b.decode())
                p += len(b) + 1
            self._v = v
        return v

    def __getitem__(self, i):
        return self._list()[i]

    def __len__(self):
        return self.size

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other):
        if isinstance(other, (list, tuple, _Ids)):
            return list(self) == list(other)
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None

    def __repr__(self):
        return repr(self._list())

    def __reduce__(self):
        # copied or pickled (copy.deepcopy(batch), torch.save, a queue to a logging process):
        # the ids as a list, decoded now. The object itself reads the buffer it was made over,
        # which serves later batches (and another process not at all): a copy made before the
        # ids were read gave another batch's ids once read.
        return list, (self._list(),)


class _Buffer:
    """One caller buffer: its flat tensor, the count of tensors over its storage when only
    ours are, and (device) its twin."""

    __slots__ = ("flat", "count", "base", "twin", "twin_count", "twin_base")

    def __init__(self, flat):
        self.flat = flat
        self.count = storage_counter(flat)
        self.base = 0
        self.twin = self.twin_count = None
        self.twin_base = 0


class _Entry:
    """A (buffer, shape): the tensors handed out for every batch of that shape in that buffer."""

    __slots__ = ("buf", "template", "objs", "base", "ids", "ptr", "held", "copied", "passed",
                 "src", "dst")

    def __init__(self):
        self.ptr = 0
        self.held = False  # in the device queue, not yet handed to the loop
        self.copied = self.passed = _DONE  # CUDA: the copy to the twin; the loop let it go
        self.src = self.dst = None  # CUDA: the used part of the buffer and of its twin

    def calibrate(self):
        """The reference counts of our own objects when the loop holds none of them (counted
        as free() counts them: the loop can only add references, so equal sums mean equal
        counts)."""
        self.base = sum(map(_getrefcount, self.objs))

    def free(self):
        """Nothing of the batch is held by the loop (and, on a GPU, its copy has completed)."""
        b = self.buf
        return (not self.held and b.count() == b.base and
                (b.twin_count is None or b.twin_count() == b.twin_base) and
                sum(map(_getrefcount, self.objs)) == self.base and
                (self.copied is _DONE or self.copied.query()))


# Entries kept at most: one per (buffer, shape) met, and batches padded to their longest (no
# pad_to; with tokens, their widths too) have a new shape almost every batch, so the entries of
# a long run grew without bound (about 5 KB each, an epoch's worth more every epoch). Past this,
# those whose batch is not lent out are dropped, the oldest first, down to half.
MAX_ENTRIES = 1024

_TORCH_DT = {1: torch.float32, 2: torch.float16, 3: torch.bfloat16, 4: torch.int32,
             5: torch.int16}


def _field(flat, off, nbytes, dtype, shape):
    return flat[off:off + nbytes].view(dtype).view(shape)


class Handoff:
    """Iterates a featcache.Loader whose padded batches go to caller buffers (torch tensors) and
    yields dicts of tensors made once per buffer and shape. device: None (the host tensors), a
    CPU device (the device pipeline with copies of no cost) or a CUDA device."""

    def __init__(self, ld, device=None, depth=2):
        # the loader's handle holds the hand-off (h.handoff, h.on_close), so the hand-off holds
        # it weakly: a cycle would keep the store open until a garbage collection. What closing
        # needs (the library, the C handle) is kept here.
        h = ld._handle()
        self._href = weakref.ref(h)
        self.ranks = (ld.rank, ld.world_size, ld.paths)  # (no DataLoader workers here)
        self.lib, self.hh = h.lib, h.h
        self.device = None if device is None else torch.device(device)
        self.cuda = self.device is not None and self.device.type == "cuda"
        self.depth = depth
        self.bufs = {}
        self.entries = {}
        self.out = collections.deque()  # entries whose batch the loader lent us, oldest first
        self.fenced = collections.deque()  # pinned host batches let go, behind their event
        self.live = {}  # id -> descriptors of generators running: batches taken, not handed out
        # host tensors in pinned memory: a batch the loop let go goes back to the loader once
        # the loop's CUDA stream has passed that point (its own copies from it are done)
        self.pinned = (self.device is None and torch.cuda.is_available() and
                       any(torch.is_tensor(o) and o.is_pinned() for o in h.buffers[:1]))
        self.stream = torch.cuda.Stream(device=self.device) if self.cuda else None
        self.swap = h.lib.fc_loader_swap_descs
        # batches taken a call (those already built, after the first): one call into the library
        # per `take` batches, the others handed out from the descriptors it filled
        kw = ld._kw
        self.take = max(1, min(int(kw["prefetch_depth"]), 8)) if kw["prefetch_threads"] else 1
        self.n_take = ctypes.c_size_t(self.take)
        self.on_side = torch.cuda.stream(self.stream) if self.cuda else None
        h.on_close.append(self.close)
        if self.device is not None and h.alloc is not None and h.buffers:
            # the batches in flight to the device (depth, and the one being copied) hold buffers
            # of their own: as many more, so the loader's threads keep theirs
            h.add_buffers([h.alloc(int(h.info.bound_batch_bytes)) for _ in range(depth + 1)])

    @property
    def h(self):
        return self._href()

    @staticmethod
    def usable(ld):
        """The loader's batches can be handed off this way (the use count can be read, tokens
        have a torch dtype, and i16 ones a token_pad that i16 holds: else the pad slots of the
        int32 copy are set by batch_to_torch)."""
        info = ld.info
        if info.tok_dtype == 5 and not _B.fits(ld._kw["token_pad"], np.int16):
            return False
        return _COUNTS and ld.buffer_alloc is not None and info.tok_dtype in (0, 4, 5)

    def close(self):
        """Give back every batch the loader lent (the loader is closing) but those whose tensors
        the loop still holds: the loader's threads run until it closes, and one could build a
        batch into the buffer of one given back, under the loop's tensors. (Those stay the
        loop's, their buffers the tensors' own; the loader's small record of each, a few
        hundred bytes, is not freed.)"""
        L, hh = self.lib, self.hh
        lent = list(self.out) + list(self.fenced)
        for e in lent:
            e.copied.synchronize()
            e.passed.synchronize()
        for descs in list(self.live.values()):
            self._untaken(descs)  # taken, never handed out (their dicts dropped with them)
        for e in lent:
            if e.ptr and not (not e.held and e in self.out and self._loop_holds(e)):
                L.fc_loader_release(hh, e.ptr)
            e.ptr = 0
        self.out.clear()
        self.fenced.clear()
        self.hh = None  # (a generator finishing later gives nothing back to a closed loader)

    @staticmethod
    def _loop_holds(e):
        """The loop holds a tensor of e's batch (host or twin): free() less the queue and copy."""
        b = e.buf
        return not (b.count() == b.base and
                    (b.twin_count is None or b.twin_count() == b.twin_base) and
                    sum(map(_getrefcount, e.objs)) == e.base)

    # -- buffers and entries -------------------------------------------------------------------
    def _buffer(self, idx):
        b = self.bufs.get(idx)
        if b is None:
            o = self.h.buffers[idx]
            flat = o if torch.is_tensor(o) else torch.from_numpy(_L.np.asarray(o))
            b = self.bufs[idx] = _Buffer(flat.view(torch.uint8).reshape(-1))
        return b

    def _entry(self, key, d):
        """The entry of layout key (desc d), made once."""
        h, info = self.h, self.h.info
        b = self._buffer((key >> 1) & 127)
        B, T, L = d[_B._D_SIZE], d[_B._D_FRAMES], d[_B._D_MAX_TOKENS]
        base = d[_B._D_MEL_DATA]
        mdt = _TORCH_DT[info.mel_dtype]
        nm = int(info.n_mels)
        esz = torch.empty(0, dtype=mdt).element_size()
        fields = {"mels": (0, B * T * nm * esz, mdt, (B, T, nm))}
        for k, i in (("mel_lengths", _B._D_MEL_LENGTHS), ("mel_starts", _B._D_MEL_STARTS),
                     ("src_frames", _B._D_SRC_FRAMES)):
            fields[k] = (d[i] - base, 4 * B, torch.int32, (B,))
        if d[_B._D_TOKEN_LENGTHS]:
            tdt = _TORCH_DT[info.tok_dtype]
            tsz = torch.empty(0, dtype=tdt).element_size()
            fields["token_lengths"] = (d[_B._D_TOKEN_LENGTHS] - base, 4 * B, torch.int32, (B,))
            fields["tokens"] = (d[_B._D_TOK_DATA] - base, B * L * tsz, tdt, (B, L))
        e = _Entry()
        e.buf = b
        n_copy = max(off + n for off, n, _, _ in fields.values())
        e.ids = _Ids(d[_B._D_ID_TEXT], B)
        e.template = t = {"ids": e.ids}
        if not self.cuda:
            t.update({k: _field(b.flat, *f) for k, f in fields.items()})
        else:
            if b.twin is None:
                b.twin = torch.empty(b.flat.numel(), dtype=torch.uint8, device=self.device)
                b.twin_count = storage_counter(b.twin)
            t.update({k: _field(b.twin, *f) for k, f in fields.items()})
            e.src, e.dst = b.flat[:n_copy], b.twin[:n_copy]
            e.copied = torch.cuda.Event()
        if self.cuda or self.pinned:
            e.passed = torch.cuda.Event()
        e.objs = tuple(t.values())
        if len(self.entries) >= MAX_ENTRIES:
            self._drop_entries()
        self.entries[key] = e
        # only ours now: the counts a free buffer shows (every entry over it made views)
        e.calibrate()
        b.base = b.count()
        if b.twin_count is not None:
            b.twin_base = b.twin_count()
        return e

    def _drop_entries(self):
        """Drop the oldest entries whose batch is not lent out (the loop holds none of their
        tensors: a batch goes back only then) down to half of MAX_ENTRIES. Their tensors over
        a buffer leave its use count: the base goes down by as much (measured, since the loop
        may hold tensors of the buffer's current batch)."""
        lent = {id(e) for e in self.out} | {id(e) for e in self.fenced}
        for key, e in list(self.entries.items()):
            if len(self.entries) <= MAX_ENTRIES // 2:
                break
            if id(e) in lent or e.held or e.ptr:
                continue
            b = e.buf
            c0 = b.count()
            t0 = b.twin_count() if b.twin_count is not None else 0
            del self.entries[key]
            e.template, e.objs, e.src, e.dst = None, (), None, None
            b.base -= c0 - b.count()
            if b.twin_count is not None:
                b.twin_base -= t0 - b.twin_count()

    # -- the hand-off --------------------------------------------------------------------------
    def _let_go_free(self, give):
        """Let go of every lent batch the loop no longer holds: their batches appended to give
        (pinned: behind a fence, given back later)."""
        out = self.out
        keep = []
        while out:
            e = out.popleft()
            if not e.free():
                keep.append(e)
                continue
            if self.cuda or self.pinned:
                e.passed.record(torch.cuda.current_stream(self.device))
            if self.pinned:
                self.fenced.append(e)
            else:
                give.append(e.ptr)
                e.ptr = 0
        out.extend(keep)

    def _give_back_extra(self):
        """Release every batch that is free now (the loop let several go at once)."""
        L, hh = self.lib, self.hh
        give = []
        self._let_go_free(give)
        with self.h.lock:
            for p in give:
                L.fc_loader_release(hh, p)
        return len(give)

    def _recover(self, rc, descs):
        """The call failed: ENOBUFS (every buffer lent out) → give back what is free, else add
        a buffer, and take again; returns the call's new rc."""
        h, L, hh = self.h, self.lib, self.hh
        dmv = descs.mv
        while rc == errno.ENOBUFS:
            if self.fenced:
                e = self.fenced.popleft()
                e.passed.synchronize()
                with h.lock:
                    L.fc_loader_release(hh, e.ptr)
                e.ptr = 0
            elif not self._give_back_extra():
                h.add_buffers([h.alloc(int(h.info.bound_batch_bytes))])
            for j in range(0, len(dmv), _L._lib.DESC_LEN):
                dmv[j] = 0
            with h.lock:
                rc = self.swap(hh, descs, self.n_take)
        return rc

    def _begin(self, epoch):
        """set_epoch; returns the descriptors the hand-off fills: the ctypes array passed to the
        library (take descriptors), its memoryview of uint64 (reads and writes cheaper than
        ctypes') as .mv."""
        h = self.h
        with h.lock:
            rc = h.lib.fc_loader_set_epoch(h.h, epoch)
            h.planned = epoch
        if rc:
            _L._raise(rc, "set_epoch(%d)" % epoch, h.h)
        h.running += 1  # (Loader.__len__ plans no other epoch under a running one)
        h.gen += 1
        descs = (ctypes.c_uint64 * (_L._lib.DESC_LEN * self.take))()
        descs.gen, descs.epoch = h.gen, epoch  # (an older iteration that goes on raises)
        descs.mv = _memory_at(ctypes.addressof(descs), ctypes.sizeof(descs), True).cast("Q")
        descs.ents, descs.it = [], iter(())
        self.live[id(descs)] = descs
        return descs

    def _refill(self, descs):
        """Give back what the loop let go (up to `take` batches with the call, the rest before
        it), take the next batches: True, or False at the end of the epoch."""
        dmv, n, give = descs.mv, self.take, []
        fenced = self.fenced
        while fenced and fenced[0].passed.query():
            e = fenced.popleft()
            give.append(e.ptr)
            e.ptr = 0
        if self.out:
            self._let_go_free(give)
        if len(give) > n:
            L, hh = self.lib, self.hh
            for p in give[n:]:
                L.fc_loader_release(hh, p)
            del give[n:]
        give.extend([0] * (n - len(give)))
        for j, p in enumerate(give):
            dmv[j * 24] = p
        # (no Python lock: the library serializes its own calls; a loader is driven by one
        # thread at a time, and a generator cannot run in two at once)
        rc = self.swap(self.hh, descs, self.n_take)
        if rc:
            rc = self._recover(rc, descs)
            if rc:
                _L._raise(rc, "next batch", self.hh)
        return dmv[0] != 0

    def _first(self, descs, j):
        """The entry of the batch of descriptor j whose layout has no entry yet (made now), or
        its LoaderBatch when it is not handed off whole."""
        d = _B._unpack_desc(descs, 8 * j)
        descs.mv[j] = 0  # (handed out)
        if not d[_B._D_LAYOUT] or d[_B._D_N_ERRORS]:  # (errors: a dict of its own, below)
            return _B._make_batch(self.h, d)
        # the tensors over a buffer are handed out again in every later epoch: made under
        # torch.inference_mode() (an evaluation pass first), they would be inference tensors,
        # and a training step on them raised "Inference tensors cannot be saved for backward"
        with torch.inference_mode(False):
            e = self._entry(d[_B._D_LAYOUT], d)
        e.ptr = d[_B._D_BATCH]
        e.ids._v = None
        self.out.append(e)
        return e

    def _take(self, descs, slow):
        """One call into the library (_refill), and everything a batch needs to be handed out
        done now for each batch it took: (an iterator of what is handed out, more). slow: for
        the host, slow(LoaderBatch) -> dict for the batches not handed off whole, and the items
        are the dicts (each its entry's template copied); None (the device pipeline): the items
        are the entries (held: on their way to the device) and LoaderBatches. more: False when
        the call said the epoch has no batch after these. The loop between two calls then only
        steps through a list. descs.ents, descs.it: the batches taken and the iterator handed
        out of (what is left in it is given back when the loop leaves early)."""
        ents = []
        more = self._refill(descs)
        if more:
            dmv, get, append, first = descs.mv, self.entries.get, self.out.append, self._first
            for j in range(0, 24 * self.take, 24):
                p = dmv[j]
                if not p:  # the call took fewer: the one after them says how many are left
                    more = dmv[j + 2] != 0
                    break
                e = get(dmv[j + 23]) if not dmv[j + 19] else None  # 19: errors (_D_N_ERRORS)
                if e is None:
                    e = first(descs, j)  # a layout not seen yet, or a batch not handed off whole
                else:
                    e.ptr = p
                    dmv[j] = 0  # (handed out)
                    e.ids._v = None
                    append(e)
                if e.__class__ is _Entry or e.size:  # (a batch of no utterance, each of its
                    ents.append(e)                    # records damaged: left out, as by tf)
                else:
                    left_out(e, *self.ranks)
        descs.ents = ents
        if slow is None:
            for e in ents:
                if e.__class__ is _Entry:
                    e.held = True
            items = ents
        else:
            items = [_handed(e) if e.__class__ is _Entry else slow(e) for e in ents]
        it = descs.it = iter(items)
        return it, more

    def _untaken(self, descs):
        """Give back the batches taken but not handed out (a descriptor's batch is 0 once
        turned into an entry or a LoaderBatch; what is left in descs.it was never handed out):
        the loop left the epoch early, or the loader closes."""
        self.live.pop(id(descs), None)
        dmv, L, hh = descs.mv, self.lib, self.hh
        for k in range(0, len(dmv), 24):
            p = dmv[k]
            if p and hh:
                dmv[k] = 0
                L.fc_loader_release(hh, p)
        ents, n = descs.ents, operator.length_hint(descs.it)
        descs.it = iter(())
        if not n:
            return
        for e in ents[len(ents) - n:]:
            if e.__class__ is not _Entry:
                continue  # a LoaderBatch: given back when collected
            e.held = False
            try:
                self.out.remove(e)
            except ValueError:
                continue  # given back already (the loader closed)
            p, e.ptr = e.ptr, 0
            if p and hh:
                L.fc_loader_release(hh, p)

    def untaken(self):
        """How many batches the generators running have taken from the loader and not handed
        out yet."""
        return sum(operator.length_hint(d.it) + sum(1 for p in d.mv[0::24] if p)
                   for d in self.live.values())

    def host(self, epoch, slow):
        """Dicts of host tensors; slow(LoaderBatch) -> dict for the batches not handed off.
        Per batch, the next of the dicts _take made (each step of a hand-off after a training
        step runs with cold caches, so fewer steps is what makes it cheap)."""
        descs = self._begin(epoch)
        take, more, href = self._take, True, self._href
        try:
            while more:
                h = href()  # (before taking: a take of an overtaken one takes the newer's)
                if h is not None and h.gen != descs.gen:
                    raise _L._overtaken(self.ranks[2], epoch)
                it, more = take(descs, slow)
                for d in it:
                    h = href()
                    if h is not None and h.gen != descs.gen:
                        raise _L._overtaken(self.ranks[2], epoch)
                    yield d
        finally:
            h = self.h
            if h is not None:
                h.running -= 1
            self._untaken(descs)

    def to_device(self, epoch, slow_issue, slow_take):
        """Dicts of device tensors, each copied `depth` batches ahead of the one yielded. (Per
        batch: the next entry _take made ready, its copy issued, and the entry `depth` batches
        back handed out.)"""
        descs = self._begin(epoch)
        take = self._take
        pending = collections.deque()
        push, pop = pending.append, pending.popleft
        depth, cuda, stream, dev, on_side = self.depth, self.cuda, self.stream, self.device, \
            self.on_side
        entry = _Entry
        it, more, href = iter(()), True, self._href
        try:
            while True:
                h = href()
                if h is not None and h.gen != descs.gen:
                    raise _L._overtaken(self.ranks[2], epoch)
                e = next(it, None)
                if e is None:
                    if more:
                        it, more = take(descs, None)
                        continue
                    if not pending:
                        return
                else:
                    if e.__class__ is not entry:
                        push((None, slow_issue(e)))
                    else:
                        if cuda:
                            with on_side:
                                stream.wait_event(e.passed)  # the loop is done with the twin
                                e.dst.copy_(e.src, non_blocking=True)
                                e.copied.record(stream)
                        push(e)
                    if len(pending) <= depth:
                        continue
                x = pop()
                if x.__class__ is entry:
                    if cuda:
                        torch.cuda.current_stream(dev).wait_event(x.copied)
                    out = _handed(x)
                    x.held = False
                    yield out
                else:
                    yield slow_take(x[1])
        finally:
            h = self.h
            if h is not None:
                h.running -= 1
            self._untaken(descs)
            for x in pending:  # copied, never handed to the loop: free to go back
                if x.__class__ is entry:
                    x.held = False
