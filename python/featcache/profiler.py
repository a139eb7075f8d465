"""featcache.profiler: StepProfiler, the step profiler of libfeatcache for Python training loops.

A ctypes binding over the C profiler (include/featcache/fc_profiler.h), so the numbers, the
statistics and the verdict are exactly the ones `loader-bench` prints.

    from featcache.profiler import StepProfiler
    prof = StepProfiler()                       # data phase "data"; trace kept
    for batch in prof.iterate(loader):          # each item = one step; fetching it = "data"
        with prof.phase("h2d"):
            x = torch.from_numpy(batch.mels).to(device)  # a featcache.Loader batch
        with prof.phase("compute"):
            with prof.phase("forward"): loss = model(x)          # nested: not counted twice
            with prof.phase("backward"): loss.backward()
            with prof.phase("optimizer"): opt.step()
    print(prof.report())                         # table + verdict
    prof.save_trace("trace.json")                # open in https://ui.perfetto.dev

or with explicit steps: `with prof.step(): with prof.phase("data"): batch = next(it)`.

Rules (as in C): step time = wall time of the step; phase time = self time (the phase's wall time
minus the phases nested in it); "other" = step time minus the phases. A profiler belongs to one
thread.
"""

import contextlib
import ctypes
import json
import math
import os
import sys
import time
import warnings

__all__ = ["StepProfiler", "ProfilerError", "series_stats", "verdict", "load_library", "batch_items"]

FC_PROF_TRACE = 1
FC_ECONFIG, FC_EBADSTATE = -31902, -31912  # fc_base.h
TABLE, JSON, TRACE_JSON = 0, 1, 2


class ProfilerError(RuntimeError):
    """A C profiler call failed; .code is the featcache error code."""

    def __init__(self, code, what, lib=None, why=None):
        msg = "%s failed: %d" % (what, code)
        if lib is not None:
            try:
                msg = "%s: %s" % (what, lib.fc_strerror(code).decode())
            except Exception:  # pragma: no cover - strerror is always there
                pass
        if why:
            msg += " (%s)" % why
        super().__init__(msg)
        self.code = code

    def __reduce__(self):  # (pickled: its code and message as they are)
        from ._lib import _rebuilt_error  # noqa: PLC0415
        return _rebuilt_error, (type(self), self.code, str(self))


NAME_MAX, LABEL_MAX = 63, 127  # bytes: FC_PROF_NAME_MAX, and the label's


def _encode(what, name, limit):
    """name as UTF-8 bytes, or ValueError saying what is wrong with it (C would say only
    FC_ECONFIG)."""
    if not isinstance(name, str):
        raise TypeError("featcache: %s %r: want a str" % (what, name))
    try:
        b = name.encode()
    except UnicodeEncodeError:  # (a lone surrogate: bytes os.fsdecode could not decode)
        raise ValueError("featcache: %s %r: not UTF-8" % (what, name)) from None
    if len(b) > limit:
        shown = "" if what == "label" else " %r" % name
        raise ValueError("featcache: %s%s of %d bytes: at most %d" % (what, shown, len(b), limit))
    if not b and what != "label":
        raise ValueError("featcache: %s '': empty" % what)
    return b


class _Stats(ctypes.Structure):
    _fields_ = [
        ("n", ctypes.c_uint64),
        ("mean", ctypes.c_double), ("std", ctypes.c_double), ("min", ctypes.c_double),
        ("max", ctypes.c_double), ("p50", ctypes.c_double), ("p95", ctypes.c_double),
        ("p99", ctypes.c_double), ("sum", ctypes.c_double), ("variation_ratio", ctypes.c_double),
        ("acf_lag", ctypes.c_uint32), ("acf_coef", ctypes.c_double),
    ]


_LIB = None


def _candidates():
    from ._lib import _candidates as package_candidates
    return package_candidates()


def load_library():
    """The shared library (FEATCACHE_LIBRARY, else beside the package, build/, the system)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    lib = shared = None
    try:  # share the package's library handle (featcache._lib) when it is there
        from . import _lib as _shared
        lib = _shared.lib()
    except Exception as e:
        lib, shared = None, e
    for path in ([] if lib is not None else _candidates()):
        if os.sep in path and not os.path.exists(path):
            continue
        try:  # (one the package refused for a loader symbol it lacks still has the profiler)
            lib = ctypes.CDLL(path)
            break
        except OSError:
            pass
    if lib is None:  # the package's message: what it tried, and how to point it at a library
        raise OSError(str(shared))
    P, I, D, C = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_char_p
    sig = {
        "fc_profiler_create": (I, [ctypes.c_uint, C, ctypes.POINTER(P)]),
        "fc_profiler_free": (None, [P]),
        "fc_profiler_reset": (None, [P]),
        "fc_profiler_step_begin": (I, [P]),
        "fc_profiler_step_end": (I, [P]),
        "fc_profiler_step_cancel": (I, [P]),
        "fc_profiler_phase_begin": (I, [P, C]),
        "fc_profiler_phase_end": (I, [P]),
        "fc_profiler_phase_add": (I, [P, C, D]),
        "fc_profiler_steps": (ctypes.c_uint64, [P]),
        "fc_profiler_num_phases": (I, [P]),
        "fc_profiler_phase_name": (C, [P, I]),
        "fc_profiler_series": (ctypes.POINTER(D), [P, I]),
        "fc_profiler_stats": (I, [P, I, ctypes.POINTER(_Stats), ctypes.POINTER(D)]),
        "fc_profiler_verdict": (I, [P, ctypes.POINTER(D), C, ctypes.c_size_t]),
        "fc_prof_verdict": (I, [D, D, C, ctypes.c_size_t]),
        "fc_prof_series_stats": (I, [ctypes.POINTER(D), ctypes.c_size_t, ctypes.POINTER(_Stats)]),
        "fc_profiler_report": (ctypes.c_long, [P, I, C, ctypes.c_size_t]),
        "fc_profiler_save": (I, [P, I, C]),
        "fc_strerror": (C, [I]),
        "fc_profiler_device_add": (I, [P, C, D]),
        "fc_profiler_set_gpu_busy": (I, [P, ctypes.POINTER(D), ctypes.c_size_t, D, C]),
        "fc_profiler_set_info": (I, [P, C, D]),
        "fc_profiler_step_items": (I, [P, D]),
        "fc_gpu_sampler_start": (I, [ctypes.c_uint, D, ctypes.POINTER(P), C, ctypes.c_size_t]),
        "fc_gpu_sampler_stop": (None, [P]),
        "fc_gpu_sampler_samples": (ctypes.c_size_t, [P, ctypes.POINTER(ctypes.POINTER(D))]),
        "fc_gpu_sampler_free": (None, [P]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _LIB = lib
    return lib


_CUDA = None


def _cuda_available():
    global _CUDA
    if _CUDA is None:
        try:
            import torch  # noqa: PLC0415
            _CUDA = torch.cuda.is_available()
        except Exception:
            _CUDA = False
    return _CUDA


def _nvml_uuid_index(prefix):
    """(NVML index, None) of the one GPU whose UUID starts with prefix (CUDA_VISIBLE_DEVICES takes
    a UUID's first digits too), else (None, why)."""
    try:
        nv = ctypes.CDLL("libnvidia-ml.so.1")
        init, shutdown = nv.nvmlInit_v2, nv.nvmlShutdown
        count, by_index, uuid = nv.nvmlDeviceGetCount_v2, nv.nvmlDeviceGetHandleByIndex_v2, \
            nv.nvmlDeviceGetUUID
    except (OSError, AttributeError) as e:
        return None, "NVML not available to find it: %s" % e
    if init():
        return None, "NVML not usable to find it: nvmlInit failed"
    try:
        n = ctypes.c_uint()
        if count(ctypes.byref(n)):
            return None, "NVML did not count its GPUs"
        found = []
        for i in range(n.value):
            h, buf = ctypes.c_void_p(), ctypes.create_string_buffer(96)
            if not by_index(i, ctypes.byref(h)) and not uuid(h, buf, 96):
                if buf.value.decode("ascii", "replace").lower().startswith(prefix.lower()):
                    found.append(i)
    finally:
        shutdown()
    if len(found) == 1:
        return found[0], None
    return None, ("no GPU of NVML's %d has that UUID" % n.value if not found else
                  "GPUs %s all have UUIDs starting so" % ", ".join(map(str, found)))


def _current_cuda_device():
    """The CUDA device this process's torch works on now (torch.cuda.current_device(): a DDP
    script's torch.cuda.set_device(local_rank)), 0 where torch is not imported or has not
    initialized CUDA. torch is not imported here, nor CUDA initialized: set_device initializes
    it, so before that the current device is 0, and asking current_device() then would make a
    CUDA context on GPU 0 in every rank (hundreds of MB of GPU 0's memory each)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    try:
        if not torch.cuda.is_initialized():  # (False too in a forked child of a CUDA parent)
            return 0
        return int(torch.cuda.current_device())
    except Exception:
        return 0


def _visible_gpu():
    """(NVML index, how it was found or None) of the GPU this process's CUDA device is (its
    current device, torch.cuda.current_device(); the entry of that place in CUDA_VISIBLE_DEVICES,
    an index or a GPU UUID, whole or its first digits), or (None, why) where that is not a GPU
    NVML samples."""
    k = _current_cuda_device()
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return k, ("cuda:%d" % k if k else None)
    entries = env.split(",")
    if k == 0:
        said = "CUDA_VISIBLE_DEVICES=%s%s" % (entries[0].strip(), ",..." if "," in env else "")
    else:
        said = "cuda:%d of CUDA_VISIBLE_DEVICES=%s" % (k, env)
        if k >= len(entries):
            return None, "%s: the list names no GPU %d (pass start_gpu_sampler(index), gpu_index=)" \
                % (said, k)
    first = entries[k].strip()
    if first.isdigit():
        return int(first), (said if k else None)
    if first.upper().startswith("MIG-"):
        return None, ("%s: a MIG instance, whose utilization NVML does not report (pass "
                      "start_gpu_sampler(index), gpu_index=, its GPU's index)" % said)
    if first.upper().startswith("GPU-"):
        index, why = _nvml_uuid_index(first)
        if index is None:
            return None, "%s: %s (pass start_gpu_sampler(index), gpu_index=)" % (said, why)
        return index, said
    return None, ("%s: this process sees no GPU (%s)" % (
        said, "%r is neither a GPU index nor a UUID" % first if first else "it names none"))


def _stats_dict(s, share=None):
    d = {"n": int(s.n), "mean": s.mean, "std": s.std, "min": s.min, "max": s.max, "p50": s.p50,
         "p95": s.p95, "p99": s.p99, "sum": s.sum, "variation_ratio": s.variation_ratio,
         "autocorr": {"lag": int(s.acf_lag), "coef": s.acf_coef}}
    if share is not None:
        d["share"] = share
    return d


def series_stats(values):
    """The C profiler's statistics of any sequence of numbers (dict; see fc_profiler.h)."""
    lib = load_library()
    vals = [float(v) for v in values]
    arr = (ctypes.c_double * max(len(vals), 1))(*vals)
    st = _Stats()
    rc = lib.fc_prof_series_stats(arr, len(vals), ctypes.byref(st))
    if rc == FC_ECONFIG:  # numpy's statistics of such a series are all nan
        raise ValueError("featcache: series_stats: %r is not a finite number"
                         % next(v for v in vals if not math.isfinite(v)))
    if rc:
        raise ProfilerError(rc, "fc_prof_series_stats", lib)
    return _stats_dict(st)


def verdict(data_share, variation_ratio=0.0):
    """The verdict string for a data share (0..1) and the data phase's std/mean; a share or ratio
    that is negative or not a finite number raises ValueError (no band holds it)."""
    data_share, variation_ratio = float(data_share), float(variation_ratio)
    if not (math.isfinite(data_share) and data_share >= 0):
        raise ValueError("featcache: verdict: data share %r: want a number >= 0" % data_share)
    if not (math.isfinite(variation_ratio) and variation_ratio >= 0):
        raise ValueError("featcache: verdict: variation ratio %r: want a number >= 0"
                         % variation_ratio)
    lib = load_library()
    buf = ctypes.create_string_buffer(64)
    lib.fc_prof_verdict(data_share, variation_ratio, buf, 64)
    return buf.value.decode()


class _Phase(contextlib.ContextDecorator):
    """A phase: `with prof.phase(name):`, or `@prof.phase(name)` on a function the step calls."""
    __slots__ = ("_p", "_name")

    def __init__(self, prof, name):
        self._p = prof
        self._name = name

    def __enter__(self):
        self._p.begin(self._name)
        return self

    def __exit__(self, *exc):
        self._p.end()
        return False


class _CudaPhase(contextlib.ContextDecorator):
    """A host phase with CUDA events around it: the device time goes to the device series. The
    events are recorded on the current stream of device (None: of the current device)."""
    __slots__ = ("_p", "_name", "_start", "_device")

    def _recreate_cm(self):  # as a decorator: one per call (a call inside another has its events)
        return _CudaPhase(self._p, self._name, self._device)

    def __init__(self, prof, name, device=None):
        self._p = prof
        self._name = name
        self._device = device

    def __enter__(self):
        import torch  # noqa: PLC0415 - only here when CUDA timing was asked for
        self._p.begin(self._name)
        self._start = torch.cuda.Event(enable_timing=True)
        self._start.record(torch.cuda.current_stream(self._device))
        return self

    def __exit__(self, etype, *exc):
        import torch  # noqa: PLC0415
        end = torch.cuda.Event(enable_timing=True)
        end.record(torch.cuda.current_stream(self._device))
        if etype is None:
            end.synchronize()  # inside the phase: its host time covers the device's work
            self._p.add_device(self._name, self._start.elapsed_time(end))
        self._p.end()
        return False


class _Step(contextlib.ContextDecorator):
    """A step: `with prof.step():`, or `@prof.step()` on the function that runs one."""
    __slots__ = ("_p",)

    def __init__(self, prof):
        self._p = prof

    def __enter__(self):
        self._p.begin_step()
        return self

    def __exit__(self, etype, *exc):
        if etype is None:
            self._p._end_or_drop()
        else:  # an exception inside the step: do not record a half step
            self._p.cancel_step()
        return False


def batch_items(batch):
    """Utterances in a batch as training loops hold them, or None when it cannot tell (the rule
    of docs/loader.md "Saving a profile"): a featcache Batch (its size: its ids are not decoded),
    a dict with "ids" (their number), a dict with "mels" (that value, as below), an array or
    tensor (its first dimension), a list or tuple of arrays: of different ranks, the tensors of
    one batch (the first one's first dimension); of one rank and different first dimensions, one
    utterance each, as a collate that keeps each mel gives them (their number); of one rank and
    one first dimension — one utterance's mel in a list, utterances of equal length, or tensors of
    one batch of one shape — None: nothing tells which (StepProfiler.iterate takes items=)."""
    return _count(batch, None)[0]


def _shapes(seq):
    """The shapes of a list's items when every one is an array of rank >= 1, else None."""
    shapes = [getattr(b, "shape", None) for b in seq]
    if all(s is not None and len(s) >= 1 for s in shapes):
        return [tuple(int(d) for d in s) for s in shapes]
    return None


def _count(batch, lists):
    """(utterances in batch or None, why): why names a list that may be utterances or a batch's
    tensors (iterate() warns of it), else None (a batch of no known kind: not counted, as the
    docs say). lists: the ranks of the lists of utterances an iterate() has met so far (a set it
    adds to), or None; a list of arrays of one rank and one first dimension is utterances where
    lists holds its rank (a short last batch of one, or of equal lengths, after lists of
    several)."""
    from ._batch import LoaderBatch  # (here: _batch imports this module)

    if isinstance(batch, LoaderBatch):  # its size: reading .ids would decode every id (~7 us a step)
        return len(batch), None
    ids = batch.get("ids") if isinstance(batch, dict) else getattr(batch, "ids", None)
    if ids is not None:
        return len(ids), None
    what = "a %s" % type(batch).__name__
    if isinstance(batch, dict):
        if "mels" not in batch:
            return None, None
        batch = batch["mels"]
        what = "its \"mels\", a %s" % type(batch).__name__
    if isinstance(batch, (tuple, list)) and batch:
        shapes = _shapes(batch)
        if shapes is None:  # (mels, ids as str), ([mel, mel], lengths): its first item
            first = batch[0]
            shape = getattr(first, "shape", None)
            if shape is not None and len(shape) >= 1:
                return int(shape[0]), None
            if isinstance(first, (tuple, list)):
                return len(first), None
            return None, None
        ranks = {len(s) for s in shapes}
        if len(ranks) > 1:  # mels [B, T, n], lengths [B]: the tensors of one batch
            return shapes[0][0], None
        rank = len(shapes[0])
        if len({s[0] for s in shapes}) > 1:  # [T_i, n] each: one per utterance
            if lists is not None:
                lists.add(rank)
            return len(batch), None
        if lists is not None and rank in lists:
            return len(batch), None
        n = len(batch)
        return None, "%s of %s of shape %s: %s, or the tensors of one batch of %d" % (
            what, "1 array" if n == 1 else "%d arrays" % n, shapes[0],
            "1 utterance" if n == 1 else "%d utterances of equal length" % n, shapes[0][0])
    shape = getattr(batch, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0]), None
    if isinstance(batch, (list, tuple)):
        return len(batch), None
    return None, None


def _ms(call, value, unit, end=")"):
    """value as a float >= 0, or ValueError naming it as the argument of call (C would say only
    FC_ECONFIG)."""
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise ValueError("featcache: %s%g%s: want a number%s >= 0" % (call, v, end, unit))
    return v


class StepProfiler:
    """Named phases per training step over libfeatcache's C profiler.

    data_phase: the phase the verdict and the autocorrelation look at ("data").
    trace: keep every phase occurrence for save_trace() (24 bytes each).
    """

    def __init__(self, data_phase="data", trace=True, label=None, items_per_step=None,
                 gpu_busy=False, gpu_index=None, gpu_period_ms=50.0):
        self._handle = ctypes.c_void_p()
        self._step_t0, self._added = None, 0.0  # the open step's start (monotonic ns), its adds
        self._lib = load_library()
        rc = self._lib.fc_profiler_create(FC_PROF_TRACE if trace else 0,
                                          _encode("data_phase", data_phase, NAME_MAX),
                                          ctypes.byref(self._handle))
        if rc:
            raise ProfilerError(rc, "fc_profiler_create", self._lib)
        self.data_phase = data_phase
        self._names = {}
        self._sampler = None
        self._gpu_note = None
        self.set_info(label, items_per_step)
        if gpu_busy:
            self.start_gpu_sampler(gpu_index, gpu_period_ms)

    def set_info(self, label=None, items_per_step=None):
        """The run's label and items (utterances) per step, for the JSON profile."""
        label = _encode("label", label or "", LABEL_MAX)
        self._check(self._lib.fc_profiler_set_info(self._h, label, float(items_per_step or 0)),
                    "set_info")

    # ---- GPU utilization (NVML, loaded at run time by the C library) ---------------------------
    def start_gpu_sampler(self, index=None, period_ms=50.0):
        """Sample the GPU's utilization every period_ms through NVML until stop_gpu_sampler() or
        close(): each report(), json() or save() holds the samples taken until then.
        index: the NVML index (default: the GPU that is this process's current CUDA device,
        torch.cuda.current_device() — a DDP rank's torch.cuda.set_device(local_rank), so start
        the sampler after it — taken through CUDA_VISIBLE_DEVICES where that is set (its entry
        there: an index, or a GPU UUID found through NVML); a MIG instance there, or an entry
        that names no GPU, is not sampled: pass the index). Without NVML (no NVIDIA driver) nothing is sampled and the report says why.
        A sampler already running (gpu_busy=True) is stopped first: its samples are dropped.
        Returns True when sampling; a period out of 1 .. 60000 ms raises ValueError."""
        if self._own_sampler():
            self._lib.fc_gpu_sampler_free(self._sampler)
            self._sampler = None
        how = None
        if index is None:
            index, how = _visible_gpu()
            if index is None:
                self._gpu_note = how
                self._lib.fc_profiler_set_gpu_busy(self._h, None, 0, 0.0, how.encode())
                return False
        h, why = ctypes.c_void_p(), ctypes.create_string_buffer(512)
        rc = self._lib.fc_gpu_sampler_start(int(index), float(period_ms), ctypes.byref(h), why,
                                            512)
        if rc == FC_ECONFIG:  # the period: the caller's mistake, not a missing driver
            raise ValueError("featcache: " + why.value.decode("utf-8", "replace"))
        if rc:
            self._gpu_note = why.value.decode("utf-8", "replace") or self._lib.fc_strerror(rc).decode()
            self._lib.fc_profiler_set_gpu_busy(self._h, None, 0, 0.0, self._gpu_note.encode())
            return False
        self._sampler, self._sampler_pid = h, os.getpid()
        self._gpu_period = float(period_ms)
        self._gpu_note = "NVML GPU %d" % index + (" (%s)" % how if how else "")
        return True

    def gpu_not_measured(self, reason):
        """Record in the profile that GPU utilization was not measured, and why."""
        self._lib.fc_profiler_set_gpu_busy(self._h, None, 0, 0.0, reason.encode())

    def _own_sampler(self):
        """True when a sampler runs in this process. One inherited over fork is dropped: its
        thread is the parent's (stopping it here would wait for ever), and so are its samples."""
        if self._sampler and self._sampler_pid != os.getpid():
            self._sampler = None
            self._lib.fc_profiler_set_gpu_busy(self._h, None, 0, 0.0,
                                               b"sampled in another process (this one was forked)")
        return bool(self._sampler)

    def stop_gpu_sampler(self):
        """Stop sampling and put the samples into the profile: what follows (evaluation, saving
        checkpoints) is left out of the GPU busy figure."""
        if not self._own_sampler():
            return
        self._lib.fc_gpu_sampler_stop(self._sampler)
        self._gpu_samples()
        self._lib.fc_gpu_sampler_free(self._sampler)
        self._sampler = None

    def _gpu_samples(self):
        """Put the samples taken so far into the profile; the sampler goes on."""
        arr = ctypes.POINTER(ctypes.c_double)()
        n = self._lib.fc_gpu_sampler_samples(self._sampler, ctypes.byref(arr))
        self._lib.fc_profiler_set_gpu_busy(self._h, arr, n, self._gpu_period,
                                           self._gpu_note.encode())

    def _finish(self):
        # a loop that reports every N steps gets, each time, the GPU busy of the run until then
        if self._own_sampler():
            self._gpu_samples()

    def close(self):
        """Free the C profiler (also at the end of `with StepProfiler() as prof:`): read the
        results first; a closed profiler raises ValueError."""
        if self._handle and self._own_sampler():
            self._lib.fc_gpu_sampler_free(self._sampler)
        self._sampler = None
        if self._handle:
            self._lib.fc_profiler_free(self._handle)
            self._handle = ctypes.c_void_p()

    @property
    def _h(self):
        """The C profiler; a closed one raises rather than hand C a NULL handle."""
        h = self._handle
        if not h:
            raise ValueError("featcache: the StepProfiler is closed (close(), or the end of its "
                             "with block, freed it): read its results (report(), json(), save()) "
                             "before it closes")
        return h

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _check(self, rc, what, state=None):
        """state: what FC_EBADSTATE means for this call, said instead of the code's own text
        ('handle unusable after an earlier failure': of sticky errors, which the profiler has
        none of)."""
        if rc == FC_EBADSTATE and state:
            e = ProfilerError(rc, what)
            e.args = ("%s: FC_EBADSTATE: %s" % (what, state),)
            raise e
        if rc:
            raise ProfilerError(rc, what, self._lib)

    # ---- marking -------------------------------------------------------------------------------
    def begin_step(self):
        t0 = time.monotonic_ns()  # (before C's own: the step is never older than it says here)
        self._check(self._lib.fc_profiler_step_begin(self._h), "step begin",
                    "a step is already open: end_step() or cancel_step() first")
        self._step_t0, self._added = t0, 0.0

    def end_step(self):
        self._check(self._lib.fc_profiler_step_end(self._h), "step end",
                    "no step is open, or a phase in it is still open")
        self._step_t0 = None

    def _end_or_drop(self):
        """End the step a context manager or iterate() opened; one it cannot end (a phase the
        loop left open) is dropped, as a step left by an exception, before the error is raised:
        else it stayed open and every later step of the profiler failed."""
        try:
            self.end_step()
        except ProfilerError:
            self.cancel_step()
            raise

    def cancel_step(self):
        self._lib.fc_profiler_step_cancel(self._h)
        self._step_t0 = None

    def begin(self, name):
        b = self._names.get(name)
        if b is None:
            b = self._names[name] = _encode("phase name", name, NAME_MAX)
        self._check(self._lib.fc_profiler_phase_begin(self._h, b), "phase begin %r" % name,
                    "no step is open, or phases nest deeper than 32")

    def end(self):
        self._check(self._lib.fc_profiler_phase_end(self._h), "phase end", "no phase is open")

    def add(self, name, ms):
        """Add ms milliseconds that this step spent in phase name, timed by other means than a
        phase (e.g. a wait a callee measured, outside any timed phase: the time is not taken from
        the phases open around the call, so one that a timed phase covered counts twice). The
        step's phases add up to its wall time, so what the adds of a step total may not exceed
        the time the step has lasted so far: more (microseconds passed as ms, another thread's
        time that overlapped the step) raises ValueError naming both, as does a time that is
        not a number >= 0. Device times go to add_device()."""
        h = self._h
        ms = _ms("add(%r, " % (name,), ms, " of ms")
        t0 = self._step_t0
        if t0 is not None:
            lasted = (time.monotonic_ns() - t0) / 1e6
            if self._added + ms > lasted:
                raise ValueError(
                    "featcache: add(%r, %g ms): the open step has lasted %.3f ms, %g ms of it "
                    "already added: add() takes milliseconds spent in this step (not seconds "
                    "or microseconds, not time that overlapped it in another thread)"
                    % (name, ms, lasted, self._added))
        self._check(self._lib.fc_profiler_phase_add(h, _encode("phase name", name, NAME_MAX), ms),
                    "phase add %r" % name, "no step is open")
        if t0 is not None:
            self._added += ms

    def add_device(self, name, ms):
        """Add a device time (ms) to the device series name of the open step (not a phase: it
        is reported beside them, see fc_profiler_device_add)."""
        h = self._h
        ms = _ms("add_device(%r, " % (name,), ms, " of ms")
        self._check(self._lib.fc_profiler_device_add(h, _encode("device name", name, NAME_MAX),
                                                     ms),
                    "device add %r" % name, "no step is open")

    def count(self, n):
        """n items (utterances) delivered in the open step: the profile's utterances/s is then
        what the loop received (a short last batch counts as what it holds), not steps x
        items_per_step. iterate() counts each batch by itself."""
        h = self._h
        self._check(self._lib.fc_profiler_step_items(h, _ms("count(", n, "")), "count",
                    "no step is open")

    def step(self):
        """Context manager (or decorator: `@prof.step()` on a function that runs one): one
        training step."""
        return _Step(self)

    def phase(self, name, cuda=False):
        """Context manager: a named phase inside the open step (phases nest); or a decorator,
        `@prof.phase("forward")` on a function: each call of it is that phase.

        cuda=True (and torch.cuda available): CUDA events are recorded on the current stream at
        its start and end, and their elapsed time becomes the device series `name` ("name
        [device]" in the table, "device_phases" in JSON). The phase waits for the end event
        before it ends, so its host time, and the step's, include the GPU work: the step time is
        the real one and the data share is the share of a real step (the cost: the host cannot
        queue the next step's kernels before this one's finish). Without a CUDA device it is an
        ordinary phase.

        cuda=DEVICE (an index, "cuda:1", a torch.device): the events go on that device's current
        stream instead of the current device's: a loop that moved its model with
        .to("cuda:%d" % rank) without torch.cuda.set_device(rank) has cuda:0 current on every
        rank, and events there time none of the step's kernels."""
        if cuda is False or cuda is None or not _cuda_available():
            return _Phase(self, name)
        if cuda is True:
            return _CudaPhase(self, name)
        import torch  # noqa: PLC0415
        try:
            device = torch.device("cuda", cuda) if isinstance(cuda, int) else torch.device(cuda)
        except (TypeError, ValueError, RuntimeError):
            device = None
        if device is None or device.type != "cuda":
            raise ValueError("featcache: phase(%r, cuda=%r): want True (the current CUDA device) "
                             "or a CUDA device (an index, 'cuda:1', a torch.device)"
                             % (name, cuda))
        return _CudaPhase(self, name, device)

    def iterate(self, iterable, phase=None, items=None):
        """Yield the items of iterable, one step each; fetching an item is timed as the data phase
        (or `phase`). The step ends when the next item is asked for; a step left by `break` or
        an exception is dropped, not recorded (docs/loader.md).

        items: how many utterances each yielded batch holds, counted into the profile (count()):
        None (default) reads it off the batch as batch_items() does — a featcache Batch (its
        size), a dict with "ids" (their length), a tensor or array (its first dimension), a list or
        tuple of arrays of different ranks (the first one's first dimension) or of one rank and
        different first dimensions (a list of utterances: their number; a later list of arrays of
        that rank, a short last batch of one, is then a list of utterances too); a batch it cannot
        tell (a list of one mel, or of arrays of one shape, before any list of utterances) is not
        counted, and a RuntimeWarning says so once; a callable(batch) -> int; False: not counted
        (utterances/s is then steps x items_per_step)."""
        phase = phase or self.data_phase
        lists, warned = set(), False
        if items is None:
            def size(batch):
                nonlocal warned
                n, why = _count(batch, lists)
                if why and not warned:
                    warned = True
                    warnings.warn(
                        "featcache: StepProfiler.iterate: step %d: cannot tell how many utterances "
                        "the batch holds (%s): it is not counted, and the profile's utterances/s "
                        "is estimated as steps x items_per_step; pass items=len (a list of "
                        "utterances) or items=lambda b: len(b[0]) (the tensors of one batch), or "
                        "prof.count(n) in the step" % (self.steps + 1, why),
                        RuntimeWarning, stacklevel=3)
                return n
        else:
            size = items
        if size is not False and not callable(size):
            raise TypeError("StepProfiler.iterate: items=%r: None (read off the batch), False "
                            "(not counted) or a callable(batch) -> int" % (items,))
        if self._step_t0 is not None and self._handle:
            raise ValueError(
                "featcache: StepProfiler.iterate: a step of this profiler is already open: an "
                "earlier iterate() of it is not finished (an iterator kept after next(it): run it "
                "to its end, or let it go: it.close() or del it), or the loop is inside "
                "prof.step() (iterate makes each step itself)")
        it = iter(iterable)
        while True:
            self.begin_step()
            try:  # whatever fails before the yield drops the step: later steps must still begin
                self.begin(phase)
                try:
                    item = next(it)
                except StopIteration:
                    self.cancel_step()
                    return
                self.end()
                if size:
                    n = size(item)
                    if n is not None:
                        self.count(n)
            except BaseException:
                self.cancel_step()
                raise
            try:
                yield item
            except BaseException:
                self.cancel_step()
                raise
            self._end_or_drop()

    # ---- results -------------------------------------------------------------------------------
    @property
    def steps(self):
        return int(self._lib.fc_profiler_steps(self._h))

    def phases(self):
        """Phase names in order of first appearance."""
        n = self._lib.fc_profiler_num_phases(self._h)
        return [self._lib.fc_profiler_phase_name(self._h, i).decode() for i in range(n)]

    _TOTALS = {"(step)": -1, "(other)": -2, "step": -1, "other": -2}

    def _index(self, name):
        # a phase of that name first (a phase may be called "step"), then the table's totals
        names = self.phases()
        if name in names:
            return names.index(name)
        if name in self._TOTALS:
            return self._TOTALS[name]
        raise KeyError(name)

    def series(self, name):
        """Per-step ms of a phase (self time), of "(step)" (the step's wall time) or "(other)"
        (the time in no phase), as a list; "step" and "other" name them too unless a phase has
        that name."""
        i = self._index(name)
        n = self.steps
        ptr = self._lib.fc_profiler_series(self._h, i)
        return [ptr[k] for k in range(n)] if n else []

    def stats(self, name):
        """Statistics (ms) of a phase, "(step)" or "(other)" (see series()), with its share of
        the step time."""
        st, share = _Stats(), ctypes.c_double()
        self._check(self._lib.fc_profiler_stats(self._h, self._index(name), ctypes.byref(st),
                                                ctypes.byref(share)), "stats")
        return _stats_dict(st, share.value)

    def verdict(self):
        """(data share 0..1, verdict string)."""
        share, buf = ctypes.c_double(), ctypes.create_string_buffer(64)
        self._lib.fc_profiler_verdict(self._h, ctypes.byref(share), buf, 64)
        return share.value, buf.value.decode()

    def _report(self, fmt):
        # Rendered once into a buffer that usually suffices: each rendering takes the statistics
        # of every series again (a sort and an FFT of each).
        size = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(size)
            n = self._lib.fc_profiler_report(self._h, fmt, buf, size)
            if n < 0:
                raise ProfilerError(int(n), "report", self._lib)
            if n < size:
                return buf.raw[:n].decode()
            size = n + 1

    def report(self):
        """The table: one row per phase, "(other)", "(step)", device rows, GPU busy, then the
        verdict."""
        self._finish()
        return self._report(TABLE)

    def json(self):
        """The profile as a dict (the JSON that save() writes and loader-bench reads)."""
        self._finish()
        return json.loads(self._report(JSON))

    def save(self, path):
        """Write the JSON profile of the run to path: `loader-bench --compare-profiles BEFORE
        AFTER` prints two of them side by side."""
        self._finish()
        rc = self._lib.fc_profiler_save(self._h, JSON, os.fsencode(path))
        if rc:
            raise OSError(rc, os.strerror(rc) if rc > 0 else "profiler", path)

    def trace(self):
        """The Chrome trace-event JSON (a str)."""
        return self._report(TRACE_JSON)

    def save_trace(self, path):
        """Write the Chrome trace-event JSON of every step's phases to path (Perfetto opens it)."""
        rc = self._lib.fc_profiler_save(self._h, TRACE_JSON, os.fsencode(path))
        if rc:
            raise OSError(rc, os.strerror(rc) if rc > 0 else "profiler", path)

    def reset(self):
        self._lib.fc_profiler_reset(self._h)
        self._step_t0 = None
