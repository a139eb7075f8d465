"""The batch side of featcache.Loader: a C batch's descriptor (fc_loader_swap_descs) made into a
LoaderBatch of numpy arrays over the batch's memory and the store's map, and the span objects
that own a batch and give it back to the C loader when its last array is gone. loader.py holds
the store side (opening, options, iteration, featcache.get) and re-exports these names.

The handle a batch is made with (loader._Handle) is used only through .regions (the maps) and
.give_back(ptr, fence), and its .pid (a batch of another process is never given back).
"""

import ctypes
import os
import struct
import sys

import numpy as np

from . import _lib

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


# A span of C memory: a ctypes char array type far longer than any batch, made once. Instances
# are made with from_address (no copy, nothing touched) and serve as the buffer of numpy arrays
# made with np.ndarray(shape, dtype, span, offset): one fixed type for every size (a ctypes array
# type per byte count costs ~13 µs to create, and ctypes caches every one of them for good).
# 2**62 bytes on 64-bit: a batch's span starts at the lowest of its addresses (the block or the
# padded buffer) and reaches all of them, wherever malloc and mmap put them.
_SPAN_LEN = (1 << 62) if sys.maxsize > (1 << 32) else (1 << 30)
_Span = ctypes.c_char * _SPAN_LEN


class _BatchOwner(_Span):
    """A span starting at the lowest address of a C batch's memory (its block, or its padded
    buffer), and the batch's owner: numpy arrays made over it keep it alive, and the C batch is
    given back when the last of them (and the LoaderBatch) is gone."""

    def release(self, fence=None):
        d = self.__dict__
        ptr = d.get("ptr")
        if ptr is not None:
            d["ptr"] = None
            handle = d["handle"]
            if handle.pid == os.getpid():
                handle.give_back(ptr, fence)

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def _wrap(addr, nbytes, dtype, shape, owner, writeable=True):
    """numpy array over C memory at addr; its base (a span) keeps owner alive."""
    if not nbytes:
        return np.zeros(shape, dtype)
    buf = _Span.from_address(addr)
    buf._owner = owner
    a = np.ndarray(shape, dtype, buf, 0)
    if not writeable:
        a.flags.writeable = False
    return a


_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)
_ND = np.ndarray
_string_at = ctypes.string_at
_Desc = ctypes.c_uint64 * _lib.DESC_LEN
_unpack_desc = struct.Struct("%dQ" % _lib.DESC_LEN).unpack_from
(_D_BATCH, _D_EPOCH, _D_INDEX, _D_SIZE, _D_N_MELS, _D_MEL_DTYPE, _D_TOK_DTYPE, _D_FRAMES,
 _D_MAX_TOKENS, _D_IDS, _D_ITEMS, _D_MEL_LENGTHS, _D_MEL_STARTS, _D_SRC_FRAMES, _D_MELS,
 _D_MEL_DATA, _D_TOKEN_LENGTHS, _D_TOKENS, _D_TOK_DATA, _D_N_ERRORS, _D_ERRORS, _D_ID_TEXT,
 _D_ID_TEXT_LEN, _D_LAYOUT) = range(24)


def _ro(owner, B, dt, addr):
    """Read-only [B] array over the batch at addr (a lazily made field)."""
    a = _ND((B,), dt, owner, addr - owner.lo)
    a.setflags(write=False)
    return a


class LoaderBatch:
    """One batch. Attributes (numpy arrays sharing memory with the map or the batch buffer):

    ids            list of str (decoded on first read)
    mels           views: list of [T_i, n_mels] arrays in the map (read-only);
                   padded: one [B, T, n_mels] array over the batch buffer
    mel_lengths    [B] uint32 frames (after cropping)
    mel_starts     [B] uint32 first frame taken (crops)
    src_frames     [B] uint32 frames of each stored record (before cropping)
    tokens         views: list of [L_i] arrays; padded: one [B, L] array; None without tokens
    token_lengths  [B] uint32, or None
    items          [B] uint64 positions in the loader's index
    errors         list of "id: reason" for utterances skipped from this batch (a damaged record)
    epoch, index   epoch and batch number
    size           B (len(batch))

    ids, mel_starts, src_frames, items and errors are made when first read (next() makes only what a
    training step reads: mels, mel_lengths, tokens, token_lengths); read them before release().
    """

    __slots__ = ("mels", "mel_lengths", "tokens", "token_lengths", "padded", "size", "_owner",
                 "_d", "_ids", "_starts", "_items", "_errors", "_src")

    def __len__(self):
        return self.size

    @property
    def epoch(self):
        return self._d[_D_EPOCH]

    @property
    def index(self):
        return self._d[_D_INDEX]

    def _live(self, what):
        if self._owner.ptr is None:
            raise RuntimeError("featcache: batch.%s read after release()" % what)
        return self._owner

    @property
    def ids(self):
        try:
            return self._ids
        except AttributeError:
            d = self._d
            if d[_D_SIZE]:
                self._live("ids")
                ids = _string_at(d[_D_ID_TEXT], d[_D_ID_TEXT_LEN] - 1).decode().split("\0")
            else:
                ids = []
            self._ids = ids
            return ids

    @property
    def errors(self):
        try:
            return self._errors
        except AttributeError:
            d = self._d
            if d[_D_ERRORS]:
                self._live("errors")
                e = _string_at(d[_D_ERRORS]).decode("utf-8", "replace").splitlines()
            else:
                e = []
            self._errors = e
            return e

    @property
    def mel_starts(self):
        try:
            return self._starts
        except AttributeError:
            a = self._starts = _ro(self._live("mel_starts"), self.size, _U32,
                                   self._d[_D_MEL_STARTS])
            return a

    @property
    def src_frames(self):
        """[B] uint32 frames of each stored record (before cropping)."""
        try:
            return self._src
        except AttributeError:
            a = self._src = _ro(self._live("src_frames"), self.size, _U32,
                                self._d[_D_SRC_FRAMES])
            return a

    @property
    def items(self):
        try:
            return self._items
        except AttributeError:
            a = self._items = _ro(self._live("items"), self.size, _U64, self._d[_D_ITEMS])
            return a

    def release(self, fence=None):
        """Give the batch back now; its arrays must not be used afterwards (ids and errors
        stay readable). fence: an object with query() and synchronize() (e.g. a torch.cuda.Event
        recorded after an asynchronous copy from the batch): the loader reuses the batch's buffer
        only once fence.query() is true."""
        if self._owner.ptr is not None:
            self.ids, self.errors  # noqa: B018  (Python strings: decode them while they exist)
        self._owner.release(fence)

    def __repr__(self):
        return "<featcache batch %d of epoch %d: %d utterances>" % (self.index, self.epoch,
                                                                    self.size)


def fits(value, dtype):
    """value is one of dtype's (an integer dtype): a token_pad the batch holds as itself."""
    i = np.iinfo(dtype)
    return i.min <= value <= i.max


def int32_tokens(b):
    """A padded batch's tokens as int32 (the adapters' dtype): i16 and u16 ids widened (a copy of
    the small token array), int32 ones as they are. The loader pads in the stored dtype, where a
    token_pad it cannot hold wraps (-100, for cross_entropy's ignore_index, is 65436 in u16): the
    pad slots of the copy are set to the loader's token_pad itself."""
    t = b.tokens
    if t.dtype == np.int32:
        return t
    out = t.astype(np.int32)
    pad = b._owner.handle.token_pad if len(b) else 0
    if not fits(pad, t.dtype):
        out[np.arange(out.shape[1]) >= b.token_lengths[:, None]] = pad
    return out


def _views(handle, owner, ptrs, lens, shape_tail, dt, row):
    """Arrays of lens[i] rows at ptrs[i]: over the map's buffer (read-only) where the pointer lies
    in a store's map, else over the batch's span (short records copied into the block)."""
    regions = handle.regions
    if len(regions) == 1:
        base, _, rbuf = regions[0]
        if min(ptrs) >= base:  # (np.ndarray accepts negative offsets, but not ones past the end)
            try:  # the usual case: every view in the one map
                return [_ND((n,) + shape_tail, dt, rbuf, p - base) for p, n in zip(ptrs, lens)]
            except (TypeError, ValueError):
                pass
    lo = owner.lo
    out = []
    for p, n in zip(ptrs, lens):
        for base, ln, rbuf in regions:
            if base <= p and p + n * row <= base + ln:
                out.append(_ND((n,) + shape_tail, dt, rbuf, p - base))
                break
        else:  # copied into the batch block (not 16-byte aligned in the map), or a map that
            # could not be located: an array over the batch's span (keeps the batch alive)
            a = _ND((n,) + shape_tail, dt, owner, p - lo)
            a.setflags(write=False)
            out.append(a)
    return out


_new_batch = LoaderBatch.__new__
_owner_at = _BatchOwner.from_address


def _make_batch(handle, d, owner=None):
    """The LoaderBatch of descriptor d (fc_loader_next_desc). The padded path is the hot one:
    one span object, two or four arrays, one batch object. owner: the batch's owner, made
    already (its span at the lower of d's block and padded buffer, .handle, .ptr and .lo set)."""
    B = d[_D_SIZE]
    blk = d[_D_IDS]
    data = d[_D_MEL_DATA]
    # the batch's block holds ids, items, lengths, starts, the pointer arrays, token copies and
    # padded tokens (libcache/core/loader/loader_batch.c, build_batch); a padded batch's mels are in a pooled
    # (or caller) buffer elsewhere: the span starts at the lower of the two
    lo = data if data and data < blk else blk
    if owner is None:
        owner = _owner_at(lo)
        owner.handle = handle
        owner.ptr = d[_D_BATCH]
        owner.lo = lo
    out = _new_batch(LoaderBatch)
    out._owner = owner
    out._d = d
    out.size = B
    lens = _ND((B,), _U32, owner, d[_D_MEL_LENGTHS] - lo)
    lens.setflags(write=False)
    out.mel_lengths = lens
    mdt = _DT[d[_D_MEL_DTYPE]]
    if data:
        out.padded = True
        out.mels = _ND((B, d[_D_FRAMES], d[_D_N_MELS]), mdt, owner, data - lo)
    elif not B and handle.padded:  # every record of it damaged and skipped: padded, of none
        out.padded = True
        out.mels = np.zeros((0, d[_D_FRAMES], d[_D_N_MELS]), mdt)
    else:
        out.padded = False
        if B:
            nm = d[_D_N_MELS]
            ptrs = _ND((B,), _U64, owner, d[_D_MELS] - lo).tolist()
            out.mels = _views(handle, owner, ptrs, lens.tolist(), (nm,), mdt, nm * mdt.itemsize)
        else:
            out.mels = []
    tl = d[_D_TOKEN_LENGTHS]
    if tl:
        tdt = _DT[d[_D_TOK_DTYPE]]
        tlens = _ND((B,), _U32, owner, tl - lo)
        tlens.setflags(write=False)
        out.token_lengths = tlens
        tdata = d[_D_TOK_DATA]
        if tdata:
            out.tokens = _ND((B, d[_D_MAX_TOKENS]), tdt, owner, tdata - lo)
        elif out.padded and not B:
            out.tokens = np.zeros((0, d[_D_MAX_TOKENS]), tdt)
        elif B:
            ptrs = _ND((B,), _U64, owner, d[_D_TOKENS] - lo).tolist()
            out.tokens = _views(handle, owner, ptrs, tlens.tolist(), (), tdt, tdt.itemsize)
        else:
            out.tokens = []
    else:
        out.tokens = out.token_lengths = None
    return out
