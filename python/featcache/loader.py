"""featcache.Loader: batches of mels (and token ids) as numpy arrays over the LMDB map.

See docs/loader.md. Lifetimes, in one paragraph: the arrays of a batch share memory with the
map (views, read-only) or with the batch's padded buffer; they stay valid as long as you hold
any of them — the batch is given back to the C loader when the last array (or the Batch object)
is garbage collected, or at once with batch.release(), after which its arrays must not be used.
The C loader itself is closed when the Loader and every array it produced are gone, or once
ld.close() (the end of `with Loader(...) as ld:`) and the last array are. A Loader is
opened lazily in each process that iterates it (so it can be built before DataLoader workers
fork); a handle inherited over fork is left alone, never closed, in the child.

This module is the store side (options, opening, iteration, featcache.get); _batch.py makes each
C batch into a LoaderBatch of arrays.
"""

import ctypes
import errno
import math
import operator
import os
import re
import sys
import threading
import warnings
import weakref

import numpy as np

from . import _lib
# the batch side (a descriptor made into numpy arrays over the batch): its names stay reachable
# here, where they were before it had a module of its own
from ._batch import (  # noqa: F401
    _DT, _NP, _BatchOwner, _Desc, _make_batch, _Span, _unpack_desc, _wrap)
from ._batch import LoaderBatch, bf16_to_float32, numpy_dtype
from ._lib import FeatcacheError

__all__ = ["Loader", "LoaderBatch", "get", "bf16_to_float32", "numpy_dtype"]


def _raise(code, what, handle=None):
    """FeatcacheError "what: reason", the reason said once: when the loader's own reason holds the
    code's message ("Cannot allocate memory", "planning epoch 0: Cannot allocate memory"), or says
    out of memory for ENOMEM ("s: a: mq: symbol frame: out of memory"), it is the reason; else the
    code's message comes first and the loader's follows in parentheses."""
    reason = _lib.strerror(code)
    detail = ""
    if handle is not None:
        detail = _lib.lib().fc_loader_error(handle).decode("utf-8", "replace")
    if detail and (reason in detail or (code == errno.ENOMEM and "out of memory" in detail)):
        msg = "%s: %s" % (what, detail)
    elif detail:
        msg = "%s: %s (%s)" % (what, reason, detail)
    else:
        msg = "%s: %s" % (what, reason)
    raise FeatcacheError(code, msg)


def _quoted_special(c):
    return (c < 0x20 or 0x7F <= c <= 0x9F or c in (0x22, 0x5C, 0x200E, 0x200F, 0xFEFF)
            or 0x2028 <= c <= 0x202E or 0x2066 <= c <= 0x2069
            or 0xDC80 <= c <= 0xDCFF)  # (a byte that is no part of a UTF-8 character)


def _quoted(name):
    """A store's path or an id as the library's messages show names (fc_quote_name): as it is, or,
    when it holds a control character, a double quote, a backslash, a byte that is no part of a
    UTF-8 character or a character that hides or reorders text, in double quotes with C escapes,
    so that a message stays one line and sends no escape sequence to a terminal."""
    if isinstance(name, str):
        try:
            name = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            name = name.encode("utf-8", "surrogatepass")
    s = bytes(name).decode("utf-8", "surrogateescape")
    if not any(_quoted_special(ord(ch)) for ch in s):
        return s
    out = []
    for ch in s:
        c = ord(ch)
        if not _quoted_special(c):
            out.append(ch)
        elif 0xDC80 <= c <= 0xDCFF:
            out.append("\\x%02x" % (c - 0xDC00))
        elif c >= 0x80:
            out.append("\\u%04x" % c)
        elif 7 <= c <= 13:
            out.append("\\" + "abtnvfr"[c - 7])
        elif c < 0x20 or c == 0x7F:
            out.append("\\%03o" % c)
        else:
            out.append("\\" + ch)
    return '"%s"' % "".join(out)


def _not_utf8(uid):
    try:
        uid.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _utf8_hint(uid):
    """Why an id that is not UTF-8 (a Latin-1 file name as os.fsdecode gives it: its bytes as
    surrogates) names no stored utterance, and the id featurize made of such a name
    (formats/manifest_items.c): each byte that is no part of a UTF-8 character as the four
    characters \\xNN, a backslash that x and two hex digits follow as \\x5c (docs/FORMAT.md)."""
    if any(0xD800 <= ord(ch) <= 0xDFFF and not 0xDC80 <= ord(ch) <= 0xDCFF for ch in uid):
        return "ids are UTF-8"  # (a surrogate that stands for no byte of a name)
    stored = re.sub(r"\\(?=x[0-9A-Fa-f]{2})", r"\\x5c", uid)
    stored = "".join("\\x%02x" % (ord(ch) - 0xDC00) if 0xDC80 <= ord(ch) <= 0xDCFF
                     else ch for ch in stored)
    bad = sorted({ord(ch) - 0xDC00 for ch in uid if 0xDC80 <= ord(ch) <= 0xDCFF})
    return ("ids are UTF-8: featurize stored the file name's byte%s %s as the characters %s, "
            "its id is %r" % ("s" if len(bad) > 1 else "", ", ".join("0x%02x" % b for b in bad),
                              ", ".join("\\x%02x" % b for b in bad), stored))


_MAX32, _MAX64 = (1 << 32) - 1, (1 << 64) - 1


def _number(name, value, hi=_MAX32, lo=0, what=None):
    """value as an int for a C field of the range lo..hi. ctypes would store it modulo the field's
    width without a word (pad_to=-5 as 4294967291 frames), so anything else is an error naming
    the option."""
    what = what or "%s=%r" % (name, value)
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("featcache: %s: not an integer" % what) from None
    if not lo <= v <= hi:
        raise ValueError("featcache: %s: must be an integer from %d to %d" % (what, lo, hi))
    return v


def _float32(name, value):
    """value as a float for a C float field: a finite value beyond float32's range would be
    stored as inf without a word (pad_value=1e40 padded with inf), so it is an error naming the
    option; inf and nan given as such pass."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError("featcache: %s=%r: not a number" % (name, value)) from None
    if math.isfinite(v) and abs(v) > _FLT_MAX:
        raise ValueError("featcache: %s=%r: beyond float32's range (it would be inf)"
                         % (name, value))
    return v


_FLT_MAX = float(np.finfo(np.float32).max)


def _cwd():
    try:
        return os.getcwd()
    except OSError:  # (a directory removed under the process)
        return None


def _anchored(path, cwd):
    """path as given, or, once the process has left cwd (the directory it was given in: a script
    that chdirs after making its Loader or dataset, whose workers open the stores later), joined
    to it."""
    if path is None or cwd is None or os.path.isabs(path):
        return path
    here = _cwd()
    if isinstance(path, bytes):
        cwd, here = os.fsencode(cwd), here and os.fsencode(here)
    return path if here == cwd else os.path.join(cwd, path)


class _CLoader:
    """The fc_loader of one process, closed (only in that process) when the last reference goes:
    its _Handle's, and those of the buffers over its maps (every view of the map holds one). It
    holds nothing that refers back to it, so no cycle keeps it: the store's files close when its
    last user goes, not at some later garbage collection. keep: the caller buffers the C loader
    writes into, which must outlive it."""

    __slots__ = ("h", "pid", "lib", "keep")

    def __init__(self, h, lib):
        self.h, self.pid, self.lib, self.keep = h, os.getpid(), lib, []

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
        self.h = None

    def close(self):
        if self.h and self.pid == os.getpid():
            self.lib.fc_loader_close(self.h)
        self.h = None


class _Handle:
    """Uses one fc_loader of one process (a _CLoader, which closes it). Batch owners reference the
    handle, arrays of the map its _CLoader: once the handle goes, the batches given back (and
    those a binding holds, on_close), the C loader closes when the last array of the map goes."""

    def __init__(self, paths, opts):
        L = _lib.lib()
        arr = (ctypes.c_char_p * len(paths))(*[os.fsencode(p) for p in paths])
        h = ctypes.c_void_p()
        why = ctypes.create_string_buffer(1024)
        self.c = _CLoader(h, L)  # (first: it closes what the open puts in h, whatever fails after)
        try:
            rc = _lib.open_loader(L, arr, len(paths), opts, h, why, 1024)
        except BaseException:  # Ctrl-C, raised as the open returns: the store is not left open
            self.c.close()
            raise
        if rc:
            raise FeatcacheError(rc, "featcache: %s" % (why.value.decode("utf-8", "replace") or
                                                        _lib.strerror(rc)))
        self.h = h
        self.padded = opts.output == _lib.OUTPUTS["padded"]  # (a batch of none has no buffer)
        self.token_pad = opts.token_pad  # (padded tokens: the adapters' int32 copies hold it)
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
                buf._owner = self.c  # the map stays while any view of it lives
                # views are np.ndarray(..., buffer=this read-only memoryview): read-only arrays
                # whose base keeps buf, and so this handle, alive
                self.regions.append((base.value, ln.value, memoryview(buf).toreadonly()))
        self.lock = threading.Lock()
        self.buffers = self.c.keep  # caller buffers (kept alive while the C loader lives)
        self.fence = None      # callable -> fence (.query(), .synchronize()): deferred release
        self.pending = []      # [(fence, batch address)] released once the fence has passed
        self.pending_lock = threading.RLock()  # give_back may run from a GC inside drain
        self.on_close = []     # callables run before the loader closes
        self.alloc = None      # callable(nbytes) -> a caller buffer (Loader's buffer_alloc)
        self.planned = 0       # the epoch the C loader has planned (fc_loader_set_epoch)
        self.info_epoch = 0    # the epoch self.info's per-epoch fields are of
        self.running = 0       # iterations of this handle under way
        self.gen = 0           # iterations begun: the newest one owns the C loader's epoch

    def view(self):
        """fc_loader_view_digest as 32 hex digits (computed once per handle)."""
        v = self.__dict__.get("_view")
        if v is None:
            out = ctypes.create_string_buffer(16)
            rc = self.lib.fc_loader_view_digest(self.h, out)
            if rc:
                _raise(rc, "view", self.h)
            v = self._view = out.raw.hex()
        return v

    def set_buffers(self, objs):
        """Hand objects exposing writable memory of info.bound_batch_bytes each to the C loader
        as its padded-batch buffers (fc_loader_set_buffers)."""
        nbytes = int(self.info.bound_batch_bytes)
        addrs = []
        for o in objs:
            a, n = _address(o)
            if n < nbytes:
                raise ValueError("featcache: a caller buffer of %d bytes, batches need %d" % (n, nbytes))
            addrs.append(a)
        arr = (ctypes.c_void_p * len(addrs))(*addrs)
        rc = self.lib.fc_loader_set_buffers(self.h, arr, len(addrs), nbytes)
        if rc:
            _raise(rc, "set_buffers", self.h)
        self.buffers[:] = objs

    def add_buffers(self, objs):
        """More caller buffers, at any time (fc_loader_add_buffers): for a consumer that keeps
        more batches than there were buffers."""
        nbytes = int(self.info.bound_batch_bytes)
        addrs = []
        for o in objs:
            a, n = _address(o)
            if n < nbytes:
                raise ValueError("featcache: a caller buffer of %d bytes, batches need %d" % (n, nbytes))
            addrs.append(a)
        arr = (ctypes.c_void_p * len(addrs))(*addrs)
        rc = self.lib.fc_loader_add_buffers(self.h, arr, len(addrs), nbytes)
        if rc:
            _raise(rc, "add_buffers", self.h)
        self.buffers.extend(objs)

    def give_back(self, ptr, fence=None):
        """fc_loader_release now, or once fence (or self.fence()) has passed."""
        if fence is None and self.fence is not None:
            fence = self.fence()
        if fence is None:
            self.lib.fc_loader_release(self.h, ptr)
            return
        with self.pending_lock:
            self.pending.append((fence, ptr))

    def drain(self, wait_one=False):
        """Release the batches whose fences have passed, oldest first, up to the first that has
        not; wait_one: wait for the oldest first. (A batch collected meanwhile — give_back from a
        garbage collection inside this call — lands in the fresh list.)"""
        if not self.pending:
            return
        with self.pending_lock:
            cur, self.pending = self.pending, []
        if wait_one:
            cur[0][0].synchronize()
        i = 0
        while i < len(cur) and cur[i][0].query():
            self.lib.fc_loader_release(self.h, cur[i][1])
            i += 1
        with self.pending_lock:
            self.pending[:0] = cur[i:]

    def __del__(self):
        # no batch of ours is left (each holds the handle): give back those released behind a
        # fence and those a binding holds (featcache.torch); self.c closes the loader once no
        # array of the map is left either
        try:
            if self.h and self.pid == os.getpid():
                for f, ptr in self.pending:  # nothing may still read a batch when it goes back
                    f.synchronize()
                    self.lib.fc_loader_release(self.h, ptr)
                for close in self.on_close:
                    close()
        except Exception:  # interpreter shutdown
            pass
        self.h = None


def _address(obj):
    """(address, bytes) of an object's writable memory: a torch tensor (data_ptr), or anything with
    the buffer protocol (a numpy array, bytearray, mmap)."""
    if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):
        if not obj.is_contiguous():
            raise ValueError("featcache: a caller buffer must be contiguous")
        return obj.data_ptr(), obj.numel() * obj.element_size()
    a = np.asarray(obj)
    if not a.flags.writeable or not a.flags.c_contiguous:
        raise ValueError("featcache: a caller buffer must be writable and contiguous")
    return a.__array_interface__["data"][0], a.nbytes




class Loader:
    """Iterate batches of a featcache store (or several, read as one dataset).

    Loader(paths, features=None, tokens=None, batch_size=32, shuffle=False, seed=0, ...)

    The stores are opened and checked when the Loader is made: a path that is not a store, a
    preset or token config the store does not hold, or an option the store cannot serve raises
    FeatcacheError there, not at the first batch. (A process that inherits the Loader over fork,
    or unpickles it, opens its own handle at first use.) `with Loader(...) as ld:` closes it when
    the block ends (close()).

    paths         a store directory or a list of them
    features      mel config: preset name ('hifigan') or 32-hex digest; None: the store's only
                  mel config, else 'hifigan'
    tokens        token config (digest or name, e.g. 'chars'); None: no tokens
    manifest, ids the utterances the epochs hold (a train / dev split of one store): a manifest's
                  path (any format featurize reads) and/or a list of ids; None (default): every
                  utterance of the stores. An id no store holds is listed by .problems() ('not
                  stored', or the failure featurize recorded), or raises under strict
    batch_size    utterances per batch (with max_frames: the cap, 0 = none)
    shuffle       True: order='random' unless order is given (not 'sequential')
    order         'sequential' | 'random' | 'bucket' | 'locality'
    seed, epoch   the order of epoch e is a function of (seed, e); iterating the loader runs the
                  current epoch and then advances it by one (set_epoch(e) to choose)
    padded        False: mels are views into the map (list of arrays); True: one padded
                  [B, T, n_mels] array per batch; None (default): True when pad_to (or a
                  pad_multiple > 1) is given
    max_frames    > 0: dynamic batching, B x T <= max_frames
    Fixed-length training (docs/loader.md, "Fixed-length training"):
    pad_to        > 0: every padded batch has exactly T = pad_to frames: longer mels cropped,
                  shorter ones padded (needs padded batches; with padded=False: ValueError)
    crop_frames   > 0: mels longer than this are cropped (views too)
    crop          where crops start: 'start' (frame 0, the default), 'center', or 'random'
                  (seeded by (seed, epoch, utterance); random_crop=True is the same); the batch's
                  mel_starts say where, src_frames how long each record is
    pad_value     value of padded frames; None (default): the silence of the store's mel
                  config — ln(1e-5) = -11.5129 for hifigan/tacotron2, ln(FLT_EPSILON) for
                  kaldi, 0 for linear mels; whisper and dB-with-top_db configs have none (it
                  depends on each utterance): opening fails asking for a value.
                  .info.pad_value is the value used
    pad_multiple, token_pad, drop_last   (pad_value and a token_pad other than 0 pad padded
                  batches only: with views, a ValueError naming them)
    rank, world_size, shard ('pad' | 'drop' | 'uneven'); None: from torch.distributed when it is
                  initialized, else 0 and 1
    bucket_batches, locality_run, prefetch_threads, prefetch_depth
    verify        check payload checksums when batches are built (the default; a damaged record
                  is skipped and reported in the batch's .errors, or raises under strict;
                  verify=False serves payloads unchecked, docs/BENCHMARKS.md has the cost);
                  strict: fail on any missing or corrupt record instead of skipping it
                  (skipped ones: .problems())
    partial       read stores whose recorded shards (featurize --shard) are not a whole set, or
                  hold one shard twice (refused otherwise: FeatcacheError naming them)
    check_pages   before the stores are opened (once, in the process that makes the Loader),
                  check every page their B-trees use as cache-verify's first step does: a page
                  LMDB's reads could crash on (a flipped bit) raises FeatcacheError naming it,
                  instead of crashing the training run at its first read (docs/loader.md; costs
                  a read of their branch and leaf pages, not of their records; Ctrl-C ends it)
    nolock, nordahead, willneed   LMDB / madvise switches (docs/loader.md); willneed None (the
                  default) hints only with nordahead, True/False force them on/off
    buffer_alloc  callable(nbytes) -> object with writable memory (a torch tensor, e.g.
                  torch.empty(n, dtype=torch.uint8, pin_memory=True), or a numpy array): padded
                  batches are built straight into n_buffers such buffers (default
                  prefetch_depth + 2) of .info.bound_batch_bytes each, allocated once per process
    release_fence callable() -> fence (query(), synchronize()), e.g. a torch.cuda.Event recorded
                  on the current stream: a released batch's buffer is reused only once its fence
                  has passed (so an asynchronous copy from it finishes first)
    """

    def __init__(self, paths, features=None, tokens=None, batch_size=32, shuffle=False, seed=0,
                 order=None, padded=None, max_frames=0, drop_last=False, rank=None,
                 world_size=None, shard="pad", crop_frames=0, pad_to=0, pad_multiple=0,
                 pad_value=None, token_pad=0, random_crop=False, crop=None, bucket_batches=64,
                 locality_run=0, prefetch_threads=2, prefetch_depth=4, verify=True,
                 strict=False, nolock=False, nordahead=False, willneed=None, epoch=0,
                 buffer_alloc=None, n_buffers=0, release_fence=None, manifest=None, ids=None, *,
                 partial=False, check_pages=False, _batches=None, _open=True):
        batch_size, max_frames = _number("batch_size", batch_size), _number("max_frames", max_frames,
                                                                            _MAX64)
        if rank is not None:
            rank = _number("rank", rank)
        if world_size is not None:
            world_size = _number("world_size", world_size)
        crop_frames, pad_to = _number("crop_frames", crop_frames), _number("pad_to", pad_to)
        pad_multiple = _number("pad_multiple", pad_multiple)
        token_pad = _number("token_pad", token_pad, (1 << 31) - 1, -(1 << 31))
        bucket_batches = _number("bucket_batches", bucket_batches)
        locality_run = _number("locality_run", locality_run)
        prefetch_threads = _number("prefetch_threads", prefetch_threads)
        prefetch_depth = _number("prefetch_depth", prefetch_depth)
        epoch, n_buffers = _number("epoch", epoch, _MAX64), _number("n_buffers", n_buffers)
        seed = _number("seed", seed, _MAX64, -(1 << 63))  # a negative seed: its two's complement
        if pad_value is not None:
            pad_value = _float32("pad_value", pad_value)
        for name, sel in (("features", features), ("tokens", tokens)):
            if sel is not None and not isinstance(sel, str):
                raise TypeError("featcache: %s=%r: a config's name or its 32-hex digest (a str)"
                                % (name, sel))
        if manifest is not None:
            manifest = os.fspath(manifest)
        if ids is not None:
            if isinstance(ids, (str, bytes)):
                raise TypeError("featcache: ids=%r: a list of ids (str), not one" % (ids,))
            ids = tuple(ids)
            bad = next((i for i in ids if not isinstance(i, str) or not i or "\0" in i), None)
            if bad is not None:
                raise ValueError("featcache: ids: %r is not an id (a non-empty str without NUL)"
                                 % (bad,))
            bad = next((i for i in ids if _not_utf8(i)), None)
            if bad is not None:
                raise ValueError("featcache: ids: %r is not UTF-8 (%s)" % (bad, _utf8_hint(bad)))
            seen = set()
            again = [i for i in ids if i in seen or seen.add(i)]
            if again:  # a list repeating ids to oversample them got each once, without a word
                warnings.warn("featcache: ids: %d of the %d ids repeat%s one given before (%r%s): "
                              "an epoch holds each utterance once (a repeated id does not "
                              "oversample it)" % (len(again), len(ids), "s" if len(again) == 1
                                                  else "", again[0], ", ..." if len(again) > 1
                                                  else ""), RuntimeWarning, stacklevel=2)
        self.manifest, self.ids = manifest, ids
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(p) for p in paths]
        self._cwd = _cwd()  # relative paths are of this directory, in every process that opens
        if order is None:
            order = "random" if shuffle else "sequential"
        elif shuffle and order == "sequential":
            raise ValueError("featcache: shuffle=True and order='sequential' exclude each other")
        if order not in _lib.ORDERS:
            raise ValueError("featcache: order=%r: must be one of %s" % (order, ", ".join(_lib.ORDERS)))
        if shard not in _lib.SHARDS:
            raise ValueError("featcache: shard=%r: must be one of %s" % (shard, ", ".join(_lib.SHARDS)))
        if padded is None:
            padded = bool(pad_to) or pad_multiple > 1
        if pad_to and pad_multiple > 1 and pad_to % pad_multiple:
            raise ValueError("featcache: pad_to=%d is not a multiple of pad_multiple=%d (pad_to fixes "
                             "the padded frame count: give one of them)" % (pad_to, pad_multiple))
        if pad_to and not padded:
            raise ValueError("featcache: pad_to=%d pads only padded batches: pass padded=True (or leave padded "
                             "out), or crop_frames=%d to crop views" % (pad_to, pad_to))
        if pad_multiple > 1 and not padded:
            raise ValueError("featcache: pad_multiple=%d pads only padded batches (views cannot be padded): "
                             "pass padded=True (or leave padded out)" % pad_multiple)
        if not padded:  # a value asked for that views, never padded, would not use: said, not ignored
            asked = []  # (None or nan, 0: the defaults, which ask for nothing)
            if pad_value is not None and not math.isnan(pad_value):
                asked.append("pad_value=%r" % pad_value)
            if token_pad:
                asked.append("token_pad=%d" % token_pad)
            if asked:
                raise ValueError("featcache: %s pad%s only padded batches (views are never padded: "
                                 "the batch's mels and tokens are each utterance's own): pass "
                                 "padded=True or pad_to, or leave %s out"
                                 % (" and ".join(asked), "" if len(asked) > 1 else "s",
                                    "them" if len(asked) > 1 else "it"))
        if crop is None:
            crop = "random" if random_crop else "start"
        elif random_crop and crop != "random":
            raise ValueError("featcache: random_crop=True and crop=%r exclude each other" % crop)
        if crop not in ("start", "center", "random"):
            raise ValueError("featcache: crop=%r: must be one of start, center, random" % (crop,))
        if buffer_alloc is not None and not padded:
            raise ValueError("featcache: buffer_alloc: caller buffers hold padded batches: pass "
                             "padded=True")
        # rank/world_size left to torch.distributed before it was initialized: rank 0 of 1, the
        # whole dataset, on every rank of a run initialized after (check_ranks and __iter__ say so)
        self._before_dist = (rank is None or world_size is None) and not _dist_initialized()
        if rank is None or world_size is None:
            r, w = _dist_rank_world()
            rank = r if rank is None else rank
            world_size = w if world_size is None else world_size
        self.features, self.tokens = features, tokens
        self.batch_size, self.order, self.seed, self.padded = batch_size, order, seed, padded
        self.rank, self.world_size = rank, world_size
        self._kw = dict(max_frames=max_frames, drop_last=drop_last, shard=shard,
                        crop_frames=crop_frames, pad_to=pad_to, pad_multiple=pad_multiple,
                        pad_value=pad_value, token_pad=token_pad, crop=crop,
                        bucket_batches=bucket_batches, locality_run=locality_run,
                        prefetch_threads=prefetch_threads, prefetch_depth=prefetch_depth,
                        verify=verify, strict=strict, nolock=nolock, nordahead=nordahead,
                        willneed=willneed, partial=partial, check_pages=bool(check_pages))
        # (batch_stride, batch_offset): this loader takes batches offset, offset + stride, ... of
        # the rank's epoch (a DataLoader worker's part of it, featcache.torch); None: every one
        self._batches = None if _batches is None else tuple(_batches)
        self.buffer_alloc, self.release_fence = buffer_alloc, release_fence
        self.n_buffers = n_buffers or (prefetch_depth + 2)
        self.epoch = epoch
        self._h = None
        self._closed = False
        if _open:  # a wrong path, preset or token config raises here, not at the first batch
            self._handle()

    # -- options and lazy per-process opening --------------------------------------------------
    def _options(self, lookup_only=False):
        L = _lib.lib()
        o = _lib.Options()
        L.fc_loader_opts_init(ctypes.byref(o))
        k = self._kw
        self._keep = [None if self.features is None else self.features.encode(),
                      None if self.tokens is None else self.tokens.encode()]
        o.features, o.tokens = self._keep
        if self.manifest is not None:
            self._keep.append(os.fsencode(_anchored(self.manifest, self.__dict__.get("_cwd"))))
            o.manifest = self._keep[-1]
        if self.ids is not None:
            arr = (ctypes.c_char_p * max(len(self.ids), 1))(*[i.encode() for i in self.ids])
            self._keep.append(arr)
            o.ids, o.n_ids = arr, len(self.ids)
        flags = 0
        if k["nolock"]: flags |= _lib.FLAG_NOLOCK
        if k["nordahead"]: flags |= _lib.FLAG_NORDAHEAD
        flags |= _lib.FLAG_VERIFY if k["verify"] else _lib.FLAG_NO_VERIFY
        if k["strict"]: flags |= _lib.FLAG_STRICT
        if k.get("partial"): flags |= _lib.FLAG_PARTIAL
        if k.get("check_pages") and self.__dict__.get("_seen_view") is None:  # the first open
            flags |= _lib.FLAG_CHECK_PAGES
        if k["crop"] == "random": flags |= _lib.FLAG_RANDOM_CROP
        if k["crop"] == "center": flags |= _lib.FLAG_CENTER_CROP
        if k["willneed"] is not None:
            flags |= _lib.FLAG_WILLNEED if k["willneed"] else _lib.FLAG_NO_WILLNEED
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
        o.pad_value = float("nan") if k["pad_value"] is None else k["pad_value"]
        o.token_pad = k["token_pad"]
        o.bucket_batches, o.locality_run = k["bucket_batches"], k["locality_run"]
        o.prefetch_threads, o.prefetch_depth = k["prefetch_threads"], k["prefetch_depth"]
        o.batch_stride, o.batch_offset = self.__dict__.get("_batches") or (0, 0)
        return o

    def _handle(self):
        h = self._h
        if h is None or h.pid != os.getpid():
            if self._closed:
                raise ValueError("featcache: the Loader is closed")
            # a handle inherited over fork is dropped, not closed (_Handle.__del__ checks the pid)
            cwd = self.__dict__.get("_cwd")
            h = _Handle([_anchored(p, cwd) for p in self.paths], self._options())
            if self.buffer_alloc is not None:
                n = int(h.info.bound_batch_bytes)
                h.set_buffers([self.buffer_alloc(max(n, 1)) for _ in range(self.n_buffers)])
                h.alloc = self.buffer_alloc
            h.fence = self.release_fence
            self._h = h
            seen = self.__dict__.get("_seen_view")
            if seen is None:
                self._seen_view = (os.getpid(), h.view(), int(h.info.items))
                if not h.info.items:  # (a loop over it ran no step, without a word)
                    warnings.warn(self._empty_message(), RuntimeWarning, stacklevel=3)
                elif not h.info.epoch_batches and not self.__dict__.get("_batches"):
                    # (utterances, but no batch of them: the same; a DataLoader worker's part of
                    # the rank's batches may be none of them)
                    warnings.warn(self._no_batch_message(h.info), RuntimeWarning, stacklevel=3)
            elif seen[0] != os.getpid() and seen[1] != h.view():
                self._h = None
                raise FeatcacheError(_lib.FC_ECONFIG, _view_changed(self.paths, seen, h))
        return h

    def _empty_message(self):
        n = len(self.problems())
        what = " and ".join(w for w in (
            None if self.manifest is None else "manifest %s" % _quoted(self.manifest),
            None if self.ids is None else "ids=%s" % ("[]" if not self.ids else "[...]")) if w)
        if not what:
            why = "no utterance of the stores has its features stored"
        elif n:
            why = "none of the utterances %s names is stored" % what
        else:
            why = "%s names no utterance" % what
        return ("featcache: %s: the epochs hold no utterance: %s%s"
                % (", ".join(_quoted(p) for p in self.paths), why,
                   " (problems() lists the %d skipped)" % n if n else ""))

    def _no_batch_message(self, info):
        share = ("rank %d of %d's share: " % (self.rank, self.world_size)
                 if self.world_size > 1 else "")
        if not info.epoch_items:
            why = "%sno utterance of the %d (shard=%r)" % (share, info.items, self._kw["shard"])
        else:
            why = ("%s%d utterance%s, fewer than batch_size %d, and drop_last drops the short "
                   "batch" % (share, info.epoch_items, "" if info.epoch_items == 1 else "s",
                              self.batch_size))
        return ("featcache: %s: the epochs hold no batch (a loop over it runs no step): %s"
                % (", ".join(_quoted(p) for p in self.paths), why))

    @property
    def view(self):
        """32 hex digits: the digest of the dataset this process's loader sees (its configs and
        every utterance of its index, in order; fc_loader_view_digest). Equal on two ranks exactly
        when their snapshots hold the same utterances (check_ranks compares them)."""
        return self._handle().view()

    def __getstate__(self):  # picklable for spawn-started workers: reopened on first use
        d = self.__dict__.copy()
        if d.get("buffer_alloc") is not None or d.get("release_fence") is not None:
            raise TypeError("featcache: a Loader with caller buffers cannot be pickled (use it in "
                            "the process that made it)")
        d["_h"] = None
        d.pop("_keep", None)
        d.pop("_iters", None)
        return d

    # -- facts ---------------------------------------------------------------------------------
    @property
    def info(self):
        """fc_loader_info: the dataset's facts, and those of the epoch the C loader has planned
        (epoch_items, epoch_batches, max_batch_bytes: the last iterated, or the one len() read)."""
        h = self._handle()
        if h.info_epoch != h.planned:
            with h.lock:
                h.lib.fc_loader_info_get(h.h, ctypes.byref(h.info))
                h.info_epoch = h.planned
        return h.info

    def __len__(self):
        """Batches on this rank of the epoch the next iteration runs (during an iteration: of the
        running one). With dynamic batching (max_frames) the count depends on the epoch's
        order, so it can differ from one epoch to the next."""
        h = self._handle()
        with h.lock:
            # an iteration still live is of another epoch only when set_epoch chose another
            # since it began (an iterator kept from a peek): with dynamic batching that epoch's
            # count needs its plan, and planning it overtakes the older iteration (it raises if
            # used again, as when a newer one begins); every epoch has the count of any other
            # under count batching: nothing planned then
            if self.epoch != h.planned and (not h.running or self._kw["max_frames"]):
                # plans it (keeping what the threads prefetched of it) as __iter__ will
                rc = h.lib.fc_loader_set_epoch(h.h, self.epoch)
                if rc:
                    _raise(rc, "set_epoch(%d)" % self.epoch, h.h)
                if h.running:
                    h.gen += 1
                h.planned = self.epoch
        return int(self.info.epoch_batches)  # (read again only when the plan changed)

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
            # (the store as the str path given, whatever its encoding; a reason may name it)
            out.append((a.value.decode("utf-8", "replace"), os.fsdecode(b.value),
                        c.value.decode("utf-8", "replace")))
            i += 1
        return out

    def config(self, which="features"):
        """Canonical JSON (str) of the chosen feature or token config."""
        if which not in ("features", "tokens"):
            raise ValueError("featcache: config(%r): which is 'features' or 'tokens'" % (which,))
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
        self.epoch = _number("epoch", epoch, _MAX64, what="set_epoch(%r)" % (epoch,))

    def __iter__(self):
        it = self._iterate(self._handle())  # (a closed Loader raises here, not at next())
        d = self.__dict__
        if d.get("_before_dist") and not d.get("_warned_before_dist"):
            rank, world = _dist_rank_world()
            if world > 1:
                self._warned_before_dist = True
                warnings.warn(_before_dist_message([rank], world), RuntimeWarning, stacklevel=2)
        iters = self.__dict__.get("_iters")
        if iters is None:
            iters = self._iters = weakref.WeakSet()
        iters.add(it)  # close() ends it: its frame holds the C loader open
        return it

    def _iterate(self, h):
        L = h.lib
        epoch = self.epoch
        with h.lock:
            rc = L.fc_loader_set_epoch(h.h, epoch)
            h.planned = epoch
        if rc:
            _raise(rc, "set_epoch(%d)" % epoch, h.h)
        h.running += 1
        h.gen += 1
        gen = h.gen
        # the hot loop: one ctypes call (no argtypes to convert) filling a descriptor made once,
        # one unpack of it, then _make_batch
        desc = _Desc()
        nxt, lock, hh, unpack, make = L.fc_loader_swap_descs, h.lock, h.h, _unpack_desc, _make_batch
        owner_at = _BatchOwner.from_address
        one = ctypes.c_size_t(1)
        ENOBUFS = errno.ENOBUFS
        try:
            while True:
                if h.gen != gen:
                    raise _overtaken(self.paths, epoch)
                if h.pending:
                    h.drain()
                desc[0] = 0  # (gives none back: batches go back when collected)
                owner = None
                try:
                    with lock:
                        rc = nxt(hh, desc, one)
                    if rc == ENOBUFS and h.pending:  # every caller buffer held: wait for a fence
                        h.drain(wait_one=True)
                        with lock:
                            rc = nxt(hh, desc, one)
                    if rc:
                        _raise(rc, "next batch", hh)
                    d = unpack(desc)
                    if not d[0]:
                        break
                    # the batch's owner (it gives the batch back when collected), made here: no
                    # call between its making and its taking the batch, where Ctrl-C could land
                    blk, data = d[9], d[15]  # (its span: the lower of its block and padded buffer)
                    lo = data if data and data < blk else blk
                    owner = owner_at(lo)
                    owner.handle, owner.ptr, owner.lo = h, d[0], lo
                    b = make(h, d, owner)
                except BaseException:
                    # Ctrl-C, raised as the call returned (a loop waiting for data waits there):
                    # the batch it took was never given back, its buffer held for good (after a
                    # few, 'all N caller buffers are held: release a batch first')
                    if owner is None and desc[0]:
                        with lock:
                            L.fc_loader_release(hh, desc[0])
                    raise
                if not d[3]:  # every record of it damaged and skipped
                    if self.world_size > 1:  # (a step of zero utterances, or one short if skipped)
                        raise _short_rank(b, self.rank, self.world_size, self.paths)
                yield b
                if self._closed:  # (close() from another thread while this one ran)
                    raise ValueError("featcache: the Loader is closed")
        finally:
            h.running -= 1
            if self.epoch == epoch and h.gen == gen:
                # (an iteration overtaken, let go while the newer one of the same epoch runs,
                # leaves the epoch to it: the newer one's len() and end go on counting it)
                self.epoch = epoch + 1

    def close(self):
        """Close the Loader: its stores' files and maps are let go at once, or, while arrays of
        its batches (or of the map) are held, when the last of them goes — they stay valid till
        then; an unfinished iterator of it ends (next() stops). Calling it again does nothing;
        any other use of a closed Loader is a ValueError.
        `with Loader(...) as ld:` closes it when the block ends."""
        self._closed = True
        self._h = None
        # an iterator left unfinished holds the C loader: ended here (a loop over it, inside
        # which close() was called, too), so that the files close now; next() on it stops
        for it in list(self.__dict__.get("_iters") or ()):
            if not it.gi_running:
                it.close()

    def __enter__(self):
        self._handle()  # (a closed Loader cannot be entered again)
        return self

    def __exit__(self, *exc):
        self.close()


def _view_changed(paths, seen, h):
    return ("featcache: %s: the stores changed since the Loader was made (process %d saw %d "
            "utterances, view %s; this process sees %d, view %s): a writer committed meanwhile, "
            "so this process would cut its share of another order than the others and read some "
            "utterances twice and others never; make the Loader once the stores are finished "
            "(docs/loader.md, \"Shard a store no one is writing\")"
            % (", ".join(_quoted(p) for p in paths), seen[0], seen[2], seen[1][:12],
               int(h.info.items), h.view()[:12]))


# the options that shape an epoch's global order and batches: every rank must hold the same
_ORDER_KEYS = ("order", "seed", "batch_size", "padded", "world_size")
_ORDER_KW = ("max_frames", "drop_last", "shard", "crop_frames", "pad_to", "pad_multiple", "crop",
             "bucket_batches", "locality_run")


def check_ranks(loader, gather=None, group=None):
    """Check that every rank of a data-parallel run sees the same dataset with the same options,
    once after opening (a collective: every rank must call it). Each rank cuts its share of its
    own epoch order, so ranks whose snapshots differ (a featurize still writing, a rerun between
    their starts) or whose options differ (seed, batch_size, ...) read some utterances twice and
    others never, without a word; this raises FeatcacheError on every rank instead, naming the
    ranks and what differs. loader: a Loader or a featcache.torch.FeatcacheDataset. gather:
    callable(obj) -> list of every rank's obj, in rank order (default:
    torch.distributed.all_gather_object over group). Returns the view (32 hex digits)."""
    ld = loader._loader() if hasattr(loader, "_loader") else loader
    h = ld._handle()
    mine = dict(rank=ld.rank, view=h.view(), items=int(h.info.items),
                options=[(k, getattr(ld, k)) for k in _ORDER_KEYS] +
                        [(k, ld._kw.get(k)) for k in _ORDER_KW],
                before_dist=bool(ld.__dict__.get("_before_dist")))
    if gather is None:
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            return mine["view"]
        out = [None] * dist.get_world_size(group)
        dist.all_gather_object(out, mine, group=group)
        everyone = out
    else:
        everyone = list(gather(mine))
    before = [i for i, o in enumerate(everyone) if o.get("before_dist")]
    if len(everyone) > 1 and before:
        raise FeatcacheError(_lib.FC_ECONFIG, "featcache: check_ranks: " +
                             _before_dist_message(before, len(everyone))[len("featcache: "):])
    first = everyone[0]
    for other in everyone[1:]:
        if other["view"] != first["view"]:
            raise FeatcacheError(_lib.FC_ECONFIG, (
                "featcache: check_ranks: rank %s sees %d utterances (view %s), rank %s sees %d "
                "(view %s): the ranks opened different snapshots of the stores (a writer "
                "committed between their opens) or were given other stores, configs or splits; "
                "each would cut its share of another order (docs/loader.md, \"Shard a store no "
                "one is writing\")" % (other["rank"], other["items"], other["view"][:12],
                                         first["rank"], first["items"], first["view"][:12])))
        diff = [(k, a, b) for (k, a), (_, b) in zip(other["options"], first["options"]) if a != b]
        if diff:
            raise FeatcacheError(_lib.FC_ECONFIG, (
                "featcache: check_ranks: rank %s has %s, rank %s %s: the ranks would plan other "
                "epochs" % (other["rank"], ", ".join("%s=%r" % (k, a) for k, a, _ in diff),
                            first["rank"], ", ".join("%s=%r" % (k, b) for k, _, b in diff))))
    return mine["view"]


def _overtaken(paths, epoch):
    """The error of an iteration used after another of the same loader began: the C loader runs
    one epoch at a time, and the newer iteration restarted it (the older one would take the
    newer one's batches, each side getting part of the epoch, silently)."""
    return RuntimeError(
        "featcache: %s: this iteration (epoch %d) was overtaken by another of the same loader "
        "begun since, which now has the loader's batches: a loader runs one iteration at a "
        "time; finish or drop the older iterator first, or make a second Loader (or dataset) "
        "for a second pass at once" % (", ".join(_quoted(p) for p in paths), epoch))


def _short_rank(b, rank, ranks, paths):
    """The FeatcacheError for a batch left with no utterance (each of its records damaged) on
    one rank of several: an adapter that left it out would give that rank one step fewer than
    the others, and DDP (tf.distribute) would wait for it for good."""
    where = " ".join(_quoted(p) for p in paths) or "STORE"
    return FeatcacheError(_lib.FC_ECHECKSUM, (
        "featcache: rank %d of %d: a batch left with no utterance, each of its records damaged "
        "(%s): left out, this rank would take one step fewer than the others and DDP would wait "
        "for it for good; cache-prune --damaged %s removes the damaged records (cache-verify %s "
        "lists them), then start again" % (rank, ranks, "; ".join(b.errors), where, where)))


def _before_dist_message(ranks, world):
    many = len(ranks) > 1
    return ("featcache: the Loader%s of rank%s %s %s made before torch.distributed was "
            "initialized: %s took rank 0 of world_size 1 and reads every utterance, not its share "
            "of the %d ranks' (where every rank's Loader was so made, each rank reads the same "
            "batches: each utterance %d times an epoch); make the Loader after "
            "init_process_group, or pass rank= and world_size= (rank=0, world_size=1 if every "
            "rank is to read the same batches)"
            % ("s" if many else "", "s" if many else "", ", ".join(map(str, ranks)),
               "were" if many else "was", "each" if many else "it", world, world))


def _dist_initialized():
    dist = sys.modules.get("torch.distributed")  # (never imported here: see below)
    try:
        return dist is not None and dist.is_available() and dist.is_initialized()
    except Exception:
        return False


def _dist_rank_world():
    # A process group can only be initialized where torch.distributed was imported: never import
    # torch here (seconds of start-up for a user who does not use it).
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return 0, 1
    try:
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    return 0, 1


_GET_CACHE = {}  # (pid, store, features, tokens) -> Loader holding a lookup handle, oldest first
GET_HANDLES = 32  # stores featcache.get keeps open (two descriptors and a map each)
_GET_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a child forked while another thread held it
    os.register_at_fork(after_in_child=lambda: globals().update(_GET_LOCK=threading.Lock()))
_ID_MAX = 511  # bytes of an utterance id (docs/FORMAT.md)


def _decode_mq(h, it):
    """A coded (mq) payload decoded into a new float32 [frames, n_mels] array (read-only)."""
    out = np.empty((it.frames, it.n_mels), np.float32)
    why = ctypes.create_string_buffer(256)
    rc = h.lib.fc_mq_decode(None, it.mel, it.mel_bytes, it.frames, it.n_mels, 0, it.frames,
                            out.ctypes.data, why, len(why))
    if rc:
        raise FeatcacheError(rc, "decode: %s" % why.value.decode("utf-8", "replace"))
    out.setflags(write=False)
    return out


def _store_ident(path, parts=None):
    """What tells the store at path from another one under that path: (stat facts, parts).
    A store replaced (rebuilt and moved into place) has the same path, not the same inodes; a
    data.mdb copied over in place (cp new/data.mdb cache/) the same inode, but the snapshot of a
    handle opened before names pages of the old file: its size or times changed (ctime: even
    cp -p). So does every commit of a writer, after which a new handle sees a newer snapshot. A
    split store (docs/FORMAT.md) has no data.mdb of its own: its marker and those of its parts
    (parts: their number, read from the marker when not given)."""
    def facts(p):
        st = os.stat(p)
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
    try:
        top = os.stat(path)
        out = [(top.st_dev, top.st_ino)]
        try:
            out.append(facts(os.path.join(path, "data.mdb")))
            parts = 0
        except FileNotFoundError:
            marker = os.path.join(path, "featcache-split")
            out.append(facts(marker))
            if parts is None:
                with open(marker, "rb") as f:
                    word = f.read(64).split()[-1:]
                parts = int(word[0]) if word and word[0].isdigit() else 0
            for k in range(min(parts, 64)):
                out.append(facts(os.path.join(path, "part-%d" % k, "data.mdb")))
    except OSError:
        return None, parts
    return tuple(out), parts


def _check_payload(h, payload, nbytes, what):
    """FeatcacheError unless the record whose payload of nbytes lies at payload (its 64-byte
    header before it, in the map) has a sound header and the payload its checksum says."""
    why = ctypes.create_string_buffer(256)
    hdr, out = ctypes.create_string_buffer(128), ctypes.c_void_p()
    rc = h.lib.fc_record_verify(payload - 64, 64 + nbytes, hdr, ctypes.byref(out), why, len(why))
    if rc:
        raise FeatcacheError(rc, "%s: %s" % (what, why.value.decode("utf-8", "replace")))


def get(store, id, features=None, tokens=None, verify=True, nolock=False):
    """The features of one utterance: a read-only [frames, n_mels] array in the map, of the
    stored dtype (float32, float16, or uint16 holding bfloat16's bits: bf16_to_float32 converts)
    (and with tokens=..., a tuple (mels, tokens)); for a coded (mq) config a decoded float32 copy.
    The array keeps the snapshot it was read from: valid as long as it is held. Raises
    KeyError when the store has no such id, FeatcacheError when its record is damaged: the
    payload's checksum is checked (verify=False: not), as the Loader does. nolock=True reads a
    store on read-only media or one this user cannot write, as Loader(nolock=True) (no one may
    write it meanwhile). The lookup handles of the GET_HANDLES stores read last are kept for the
    next calls."""
    if not isinstance(id, str):
        raise TypeError("featcache: get(%r): an utterance id is a str" % (id,))
    if _not_utf8(id):
        raise KeyError("featcache: %r: no such utterance (%s)" % (id, _utf8_hint(id)))
    uid = id.encode("utf-8")
    if not 0 < len(uid) <= _ID_MAX or b"\0" in uid or b"\n" in uid or b"\r" in uid:
        # (the C lookup would see an id cut at a NUL: another utterance's)
        raise KeyError("featcache: %r: no such utterance (no store holds such an id)" % (id,))
    store = os.fsdecode(os.fspath(store))  # (a bytes path as the Loader takes it: the same bytes)
    key = (os.getpid(), os.path.realpath(store), features, tokens, bool(nolock))
    # (the cache is changed and walked under _GET_LOCK: get() may run in several threads; the
    # stores are opened, and handles let go, outside it)
    with _GET_LOCK:
        ld = _GET_CACHE.get(key)
    ident = _store_ident(key[1], None if ld is None else ld._ident[1])
    if ld is not None:
        # a writer committed (data.mdb's size or times changed, the same files): the handle
        # moves to the latest snapshot in the environment it has; a store replaced (other files),
        # or a handle that cannot move, is opened anew
        if ld._ident != ident and not (_same_files(ld._ident, ident) and _refresh(ld, ident)):
            ld = None
        else:
            with _GET_LOCK:
                if _GET_CACHE.get(key) is ld:
                    _GET_CACHE[key] = _GET_CACHE.pop(key)  # the most recently read go last
    it = _lib.Item()
    opened = False
    for retry in (False, True):
        if ld is None:
            ld, opened = _get_open(store, key, features, tokens, nolock, ident), True
        h = ld._h
        with h.lock:  # (no refresh between the lookup and the arrays that hold its snapshot)
            rc = h.lib.fc_loader_lookup(h.h, uid, ctypes.byref(it))
            if not rc:
                mq = it.mel_dtype == _lib.DTYPE_MQ
                mdt = np.dtype(np.uint8 if mq else _NP[it.mel_dtype])
                mel = _wrap(it.mel, it.mel_bytes if mq else it.frames * it.n_mels * mdt.itemsize,
                            mdt, (it.mel_bytes,) if mq else (it.frames, it.n_mels), h, False)
                tok = None
                if tokens is not None:
                    tdt = np.dtype(_NP[it.tok_dtype])
                    tok = _wrap(it.tokens, it.n_tokens * tdt.itemsize, tdt, (it.n_tokens,), h,
                                False)
        # a handle reads the store as it was when it opened or last moved on: an id it lacks
        # may have been stored since (in the same second, data.mdb's times unchanged), which the
        # latest snapshot shows
        if retry or opened or rc not in (_lib.FC_ENOTFOUND, _lib.FC_EBADSTATE):
            break
        # (FC_EBADSTATE: another thread's refresh of this handle failed, which replaces it)
        h = None
        if rc == _lib.FC_EBADSTATE or not _refresh(ld, ident):
            ld = None
    if rc == _lib.FC_ENOTFOUND:
        raise KeyError(h.lib.fc_loader_error(h.h).decode("utf-8", "replace"))
    if rc:
        _raise(rc, "get(%r)" % id, h.h)
    if verify:
        what = "get(%r): %s: %s" % (id, _quoted(os.fspath(store)), _quoted(id))
        _check_payload(h, it.mel, it.mel_bytes, what)
        if tok is not None and it.tokens:
            _check_payload(h, it.tokens, it.n_tokens * _DT[it.tok_dtype].itemsize,
                           what + ": tokens")
    if mq:
        mel = _decode_mq(h, it)  # (while the payload's array holds the snapshot)
    if tokens is None:
        return mel
    return mel, tok


def release_get_handles(store=None):
    """Let go of the lookup handles get() keeps for its next calls: of store (any features,
    tokens, nolock), or of every store. Each store closes (its files, its map, the snapshot it
    held) once no array get() returned from it is held; the next get() opens it anew. A process
    that keeps a handle (a notebook that looked an utterance up) has the store open: cache-prune
    --compact is refused meanwhile, and the snapshot it holds keeps the pages writers freed
    since from being reused. Returns how many handles were let go."""
    path = None if store is None else os.path.realpath(os.fsdecode(os.fspath(store)))
    with _GET_LOCK:
        gone = [_GET_CACHE.pop(k) for k in [k for k in _GET_CACHE if path in (None, k[1])]]
    n = len(gone)
    gone = None  # (closed outside the lock; those of a parent process are dropped, not closed)
    return n


def _get_open(store, key, features, tokens, nolock, ident):
    """A new lookup handle for get(), in the cache under key: the one there before (if any) let
    go first, so that a store replaced is read in a new environment (its files closed with the
    old handle, unless arrays of it live on)."""
    with _GET_LOCK:
        gone = _GET_CACHE.pop(key, None)
    gone = None
    ld = Loader(store, features=features, tokens=tokens, nolock=nolock, _open=False)
    ld._h = _Handle(ld.paths, ld._options(lookup_only=True))
    ld._ident = ident
    ld._unheld = _refs(ld)  # (no array of it yet)
    with _GET_LOCK:
        # handles of a parent process are dropped, not closed; the stores read longest ago are
        # let go
        gone = [_GET_CACHE.pop(k) for k in [k for k in _GET_CACHE if k[0] != key[0]]]
        _GET_CACHE[key] = ld
        while len(_GET_CACHE) > GET_HANDLES:
            gone.append(_GET_CACHE.pop(next(iter(_GET_CACHE))))
    gone = None
    return ld


def _same_files(a, b):
    """Whether two _store_ident facts name the same directory and data.mdb files (dev, inode)."""
    return (a[0] is not None and b[0] is not None and a[1] == b[1] and len(a[0]) == len(b[0])
            and all(x[:2] == y[:2] for x, y in zip(a[0], b[0])))


def _refs(ld):
    """References to get()'s lookup handle: each array of its lookups holds one."""
    return sys.getrefcount(ld._h)


def _refresh(ld, ident):
    """Move get()'s lookup handle to the store's latest snapshot (fc_loader_refresh), in the
    environment it has: no file opened or mapped again. Only while no array of its lookups is
    held (they point into the snapshot it has, whose pages writers may reuse once it moves):
    False then, or when the library refuses (a map grown while another handle of the process
    holds it, a data.mdb written over in place), and the caller opens a new handle."""
    with ld._h.lock:
        if _refs(ld) > ld._unheld:
            return False
        h = ld._h
        if h.lib.fc_loader_refresh(h.h):
            return False  # (the handle refuses lookups from now on: it is replaced)
        h.regions = []  # (the maps of batches: a lookup handle makes none, and a map may move)
        ld._ident = ident
    return True
