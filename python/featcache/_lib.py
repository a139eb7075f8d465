"""ctypes declarations of libfeatcache's loader API (include/featcache/fc_loader.h).

Pure ctypes: nothing is compiled at install. The package calls only the core component of the
library, libfeatcache_core (store, loader, profiler: LMDB, xxHash, jansson), so that importing it
loads neither espeak-ng nor FFTW nor cuFFT. It is found, in this order:
  1. $FEATCACHE_LIBRARY (any of libfeatcache_core.so, or libfeatcache.so.0 for the whole library);
  2. beside the package (`cmake --install` puts a copy of the package in
     <libdir>/featcache/python/featcache and the library in <libdir>);
  3. the path recorded when the package was installed (featcache/_installed.py: `cmake --install`
     writes it into its copy; `pip install ./python` records the library that the source tree's
     last `cmake --install` put under its prefix, from build*/install_manifest.txt, or else the
     one pkg-config reports then);
  4. in a build tree next to the source tree (../../build*/libfeatcache_core.so, the newest);
  5. pkg-config's libdir for featcache now (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig);
  6. the Python environment's own prefix (cmake --install --prefix "$VIRTUAL_ENV");
  7. /usr/local/lib*, then the system's library search (ldconfig).
"""

import ctypes
import ctypes.util
import errno
import glob
import os
import sys

__all__ = ["lib", "find_library", "Options", "Batch", "Info", "Item", "FeatcacheError"]

# fc_loader.h enums
ORDERS = {"sequential": 0, "random": 1, "bucket": 2, "locality": 3}
OUTPUTS = {"views": 0, "padded": 1}
SHARDS = {"pad": 0, "drop": 1, "uneven": 2}
FLAG_NOLOCK, FLAG_NORDAHEAD, FLAG_VERIFY, FLAG_STRICT = 1, 2, 4, 8
FLAG_RANDOM_CROP, FLAG_NO_WILLNEED, FLAG_LOOKUP_ONLY, FLAG_WILLNEED = 16, 32, 64, 128
FLAG_CENTER_CROP, FLAG_NO_VERIFY, FLAG_PARTIAL, FLAG_CHECK_PAGES = 256, 512, 1024, 2048

# fc_base.h
# fc_loader_swap_descs: the packed batch descriptor (FC_DESC_* of fc_loader.h)
(DESC_BATCH, DESC_EPOCH, DESC_INDEX, DESC_SIZE, DESC_N_MELS, DESC_MEL_DTYPE, DESC_TOK_DTYPE,
 DESC_FRAMES, DESC_MAX_TOKENS, DESC_IDS, DESC_ITEMS, DESC_MEL_LENGTHS, DESC_MEL_STARTS,
 DESC_SRC_FRAMES, DESC_MELS, DESC_MEL_DATA, DESC_TOKEN_LENGTHS, DESC_TOKENS, DESC_TOK_DATA,
 DESC_N_ERRORS, DESC_ERRORS, DESC_ID_TEXT, DESC_ID_TEXT_LEN, DESC_LAYOUT) = range(24)
DESC_LEN = 24

FC_ENOTFOUND = -31908
FC_ECHECKSUM = -31901
FC_EBADSTATE = -31912
FC_EINTR = -31911
FC_ECONFIG = -31902
DTYPE_NAMES = {1: "f32", 2: "f16", 3: "bf16", 4: "i32", 5: "i16", 6: "u16", 7: "mq"}
DTYPE_MQ = 7  # the mel codec: stored coded, delivered as float32


class FeatcacheError(RuntimeError):
    """A libfeatcache call failed: .code is the error code (fc_strerror names it). Made of a
    message alone (torch re-raises a DataLoader worker's exception as its type(message)), .code
    is None."""

    def __init__(self, code, message=None):
        if message is None:
            code, message = None, code
        if code == errno.EMFILE:  # the tools raise their limit, the library does not: say how
            import resource
            message += ("; each open store takes file descriptors, and this process met its soft "
                        "limit of open files (%d): raise it up to the hard limit (ulimit -Hn) with "
                        "resource.setrlimit(resource.RLIMIT_NOFILE, ...) (docs/scale-out.md)"
                        % resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        super().__init__(message)
        self.code = code

    def __reduce__(self):  # (pickled: its code and message as they are, not said again)
        return _rebuilt_error, (type(self), self.code, str(self))


def _rebuilt_error(cls, code, message):
    e = cls.__new__(cls)
    RuntimeError.__init__(e, message)
    e.code = code
    return e


class Options(ctypes.Structure):
    _fields_ = [
        ("features", ctypes.c_char_p), ("tokens", ctypes.c_char_p),
        ("flags", ctypes.c_uint32), ("order", ctypes.c_uint32), ("seed", ctypes.c_uint64),
        ("output", ctypes.c_uint32), ("batch_size", ctypes.c_uint32),
        ("max_frames", ctypes.c_uint64), ("drop_last", ctypes.c_uint32),
        ("rank", ctypes.c_uint32), ("world_size", ctypes.c_uint32), ("shard", ctypes.c_uint32),
        ("crop_frames", ctypes.c_uint32), ("pad_to", ctypes.c_uint32),
        ("pad_multiple", ctypes.c_uint32), ("pad_value", ctypes.c_float),
        ("token_pad", ctypes.c_int32), ("bucket_batches", ctypes.c_uint32),
        ("locality_run", ctypes.c_uint32), ("prefetch_threads", ctypes.c_uint32),
        ("prefetch_depth", ctypes.c_uint32),
        ("manifest", ctypes.c_char_p), ("ids", ctypes.POINTER(ctypes.c_char_p)),
        ("n_ids", ctypes.c_size_t), ("stop", ctypes.c_void_p),
        ("batch_stride", ctypes.c_uint32), ("batch_offset", ctypes.c_uint32),
    ]


class Batch(ctypes.Structure):
    _fields_ = [
        ("epoch", ctypes.c_uint64), ("index", ctypes.c_uint64), ("size", ctypes.c_uint32),
        ("n_mels", ctypes.c_uint32), ("mel_dtype", ctypes.c_int), ("tok_dtype", ctypes.c_int),
        # pointers as c_void_p: they read as plain ints (or None), the cheapest for the package
        ("ids", ctypes.c_void_p), ("items", ctypes.c_void_p),
        ("mel_lengths", ctypes.c_void_p), ("mel_starts", ctypes.c_void_p),
        ("src_frames", ctypes.c_void_p), ("mels", ctypes.c_void_p),
        ("frames", ctypes.c_uint32), ("mel_data", ctypes.c_void_p),
        ("token_lengths", ctypes.c_void_p), ("tokens", ctypes.c_void_p),
        ("max_tokens", ctypes.c_uint32), ("tok_data", ctypes.c_void_p),
        ("n_errors", ctypes.c_uint32), ("errors", ctypes.c_char_p),
        ("id_text", ctypes.c_void_p), ("id_text_len", ctypes.c_uint64),
    ]


class Info(ctypes.Structure):
    _fields_ = [
        ("items", ctypes.c_uint64), ("skipped", ctypes.c_uint64),
        ("epoch_items", ctypes.c_uint64), ("epoch_batches", ctypes.c_uint64),
        ("max_batch_bytes", ctypes.c_uint64), ("n_mels", ctypes.c_uint32),
        ("mel_dtype", ctypes.c_int), ("tok_dtype", ctypes.c_int),
        ("mel_config", ctypes.c_uint8 * 16), ("tok_config", ctypes.c_uint8 * 16),
        ("n_stores", ctypes.c_uint32), ("pad_value", ctypes.c_float),
        ("bound_batch_bytes", ctypes.c_uint64),
    ]


class Item(ctypes.Structure):
    _fields_ = [
        ("mel", ctypes.c_void_p), ("frames", ctypes.c_uint32), ("n_mels", ctypes.c_uint32),
        ("mel_dtype", ctypes.c_int), ("tokens", ctypes.c_void_p), ("n_tokens", ctypes.c_uint32),
        ("tok_dtype", ctypes.c_int), ("mel_bytes", ctypes.c_uint64),
    ]


CORE = "libfeatcache_core.so"


def _candidates():
    env = os.environ.get("FEATCACHE_LIBRARY")
    if env:
        yield env
        if os.path.basename(env) == "libfeatcache.so":  # the link-time name is an ld script:
            yield env + ".0"                             # the runtime name is the library
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, CORE)
    yield os.path.join(here, "..", "..", "..", CORE + ".0")  # <libdir>/featcache/python/featcache
    recorded = _installed_library()
    if recorded:
        yield recorded
    builds = glob.glob(os.path.join(here, "..", "..", "build*", CORE))
    builds.sort(key=lambda p: os.path.getmtime(p), reverse=True)
    yield from builds
    yield from _pkg_config_candidates()
    for d in _LIBDIRS:
        yield os.path.join(sys.prefix, d, CORE + ".0")
    for d in _LIBDIRS:
        yield os.path.join("/usr/local", d, CORE + ".0")  # cmake --install's default, before ldconfig
    found = ctypes.util.find_library("featcache_core")
    if found:
        yield found


_LIBDIRS = ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu")


def _installed_library():
    """The library path recorded when this copy of the package was installed, or None."""
    try:
        from . import _installed
    except ImportError:
        return None
    return getattr(_installed, "LIBRARY", None)


def _pkg_config_candidates():
    """libfeatcache_core.so.0 in the libdir that pkg-config reports for featcache (PKG_CONFIG_PATH
    names a prefix outside the usual paths): how an installed package finds an installed library."""
    import shutil
    import subprocess
    exe = shutil.which("pkg-config") or shutil.which("pkgconf")
    if not exe:
        return
    try:
        out = subprocess.run([exe, "--variable=libdir", "featcache"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return
    libdir = out.stdout.strip()
    if out.returncode == 0 and libdir:
        yield os.path.join(os.path.normpath(libdir), CORE + ".0")


def find_library():
    """Path of the shared library that would be loaded, or None."""
    for p in _candidates():
        if os.path.sep not in p or os.path.exists(p):
            return p
    return None


_LIB = None


def _declare(lib):
    P, V, C = ctypes.POINTER, ctypes.c_void_p, ctypes.c_char_p
    sig = {
        "fc_strerror": (C, [ctypes.c_int]),
        "fc_version": (C, []),
        "fc_loader_opts_init": (None, [P(Options)]),
        "fc_loader_open": (ctypes.c_int, [P(C), ctypes.c_size_t, P(Options), P(V), C,
                                          ctypes.c_size_t]),
        "fc_loader_close": (None, [V]),
        "fc_loader_info_get": (ctypes.c_int, [V, P(Info)]),
        "fc_loader_problem": (ctypes.c_int, [V, ctypes.c_uint64, P(C), P(C), P(C)]),
        "fc_loader_map_region": (ctypes.c_int, [V, ctypes.c_uint32, P(V), P(ctypes.c_size_t)]),
        "fc_loader_config_json": (C, [V, ctypes.c_int]),
        "fc_loader_view_digest": (ctypes.c_int, [V, C]),
        "fc_loader_set_epoch": (ctypes.c_int, [V, ctypes.c_uint64]),
        # batches travel as plain addresses (int): the package reads them with Batch.from_address
        "fc_loader_next": (ctypes.c_int, [V, P(V)]),
        "fc_loader_release": (None, [V, V]),
        "fc_loader_error": (C, [V]),
        "fc_loader_set_buffers": (ctypes.c_int, [V, P(V), ctypes.c_size_t, ctypes.c_size_t]),
        "fc_loader_add_buffers": (ctypes.c_int, [V, P(V), ctypes.c_size_t, ctypes.c_size_t]),
        "fc_loader_wait_ns": (ctypes.c_uint64, [V]),
        "fc_loader_lookup": (ctypes.c_int, [V, C, P(Item)]),
        "fc_loader_refresh": (ctypes.c_int, [V]),
        # (record value, its length, a header out: 128 bytes hold it, payload out, why)
        "fc_record_verify": (ctypes.c_int, [V, ctypes.c_size_t, V, P(V), ctypes.c_char_p,
                                            ctypes.c_size_t]),
        "fc_mq_decode": (ctypes.c_int, [V, V, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint32,
                                        ctypes.c_uint32, ctypes.c_uint32, V, ctypes.c_char_p,
                                        ctypes.c_size_t]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    # the hand-off's call: no argtypes, so ctypes converts nothing — the package passes the handle
    # as a c_void_p, the descriptors as a (c_uint64 * (DESC_LEN * n)) array and n as a
    # c_size_t, all made once
    lib.fc_loader_swap_descs.restype = ctypes.c_int
    lib.fc_loader_swap_descs.argtypes = None
    return lib


def lib():
    """The loaded library (loaded once per process)."""
    global _LIB
    if _LIB is None:
        errors = []
        for p in _candidates():
            try:
                _LIB = _declare(ctypes.CDLL(p))
                break
            except (OSError, AttributeError) as e:
                errors.append("%s: %s" % (p, e))
        if _LIB is None:
            raise OSError(_not_found_message(errors))
    return _LIB


def _not_found_message(errors):
    """What to set, when no candidate loaded: the two ways to point at an installed library."""
    import shutil
    pc = shutil.which("pkg-config") or shutil.which("pkgconf")
    how = ("featcache: cannot load %s.0. If featcache is installed under a prefix P "
           "(cmake --install build --prefix P), set PKG_CONFIG_PATH=P/lib/pkgconfig%s, or "
           "FEATCACHE_LIBRARY=P/lib/%s.0; a build tree's library works too "
           "(FEATCACHE_LIBRARY=build/%s)." % (CORE, "" if pc else
                                                " (and install pkg-config)", CORE, CORE))
    return how + " Tried: " + ("; ".join(errors) or "nothing")


def open_loader(L, paths, n, opts, h, why, why_len):
    """fc_loader_open(paths, n, &opts, &h, why, why_len), its code returned. With
    FLAG_CHECK_PAGES (a read of every branch and leaf page, one at a time: minutes on a big store
    from a cold disk) the call runs in a thread of its own while this one waits, so that Ctrl-C is
    seen while the check runs: it sets opts.stop's flag, the check ends at its next page (the call
    returns FC_EINTR) and the KeyboardInterrupt goes on once the call has returned. The caller
    closes h when anything interrupts this call (what the call opened is in h by then)."""
    if not opts.flags & FLAG_CHECK_PAGES:
        return L.fc_loader_open(paths, n, ctypes.byref(opts), ctypes.byref(h), why, why_len)
    import signal
    import threading
    import time
    stop = ctypes.c_int(0)
    opts.stop = ctypes.addressof(stop)
    done, cancel, go, fin = [], [], threading.Event(), threading.Event()

    def run():  # opens only once told to: an interrupted start() leaves nothing to wait for
        # Ctrl-C goes to the waiting thread, which wakes at once (the loader's threads, started
        # from this one, block it too)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        go.wait()
        try:
            if not cancel:
                done.append(L.fc_loader_open(paths, n, ctypes.byref(opts), ctypes.byref(h), why,
                                             why_len))
        finally:
            fin.set()

    t = threading.Thread(target=run, name="fc-check-pages", daemon=True)
    try:
        t.start()
        go.set()
        while not fin.wait(0.1):  # (a timeout: a signal another thread took is handled too)
            pass
    except BaseException:
        if not go.is_set():  # the thread, if it started, opens nothing
            cancel.append(1)
            go.set()
            raise
        stop.value = 1
        while not fin.is_set():  # the check ends at its next page read; h is the caller's then
            try:
                time.sleep(0.005)  # (no lock taken: this may follow an interrupted wait)
            except KeyboardInterrupt:  # (a second Ctrl-C)
                pass
        raise
    return done[0] if done else FC_EINTR


def strerror(code):
    return lib().fc_strerror(code).decode("utf-8", "replace")
