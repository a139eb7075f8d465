"""The Python loader's error messages say their reason once (golden messages).

featcache.loader._raise builds FeatcacheError's message from the code's message (fc_strerror)
and the loader's own reason (fc_loader_error). The loader's reason is often the code's message
itself ("Cannot allocate memory" when a batch could not be allocated), or holds it ("planning
epoch 0: Cannot allocate memory"): the message used to repeat it, "next batch: Cannot allocate
memory (Cannot allocate memory)". These run the real _raise and the real fc_strerror with the
loader's reason given by a stand-in for fc_loader_error; tests/cli/fault_sites.sh checks the
messages of real failures (out of memory injected at every allocation of a loader's run)."""

import errno
import os
import sys

import pytest

import featcache
from featcache import _lib
from featcache import loader as L


class _Reason:
    """A library whose fc_loader_error returns a fixed reason; everything else is the real one."""

    def __init__(self, real, reason):
        self.real, self.reason = real, reason

    def fc_loader_error(self, handle):
        return self.reason.encode()

    def __getattr__(self, name):
        return getattr(self.real, name)


def message(monkeypatch, code, what, reason):
    real = _lib.lib()
    monkeypatch.setattr(_lib, "lib", lambda: _Reason(real, reason))
    with pytest.raises(featcache.FeatcacheError) as e:
        L._raise(code, what, handle=object() if reason is not None else None)
    assert e.value.code == code
    return str(e.value)


def test_reason_is_the_code_message(monkeypatch):
    nomem = _lib.strerror(errno.ENOMEM)
    assert message(monkeypatch, errno.ENOMEM, "next batch", nomem) == "next batch: " + nomem


def test_reason_holds_the_code_message(monkeypatch):
    nomem = _lib.strerror(errno.ENOMEM)
    got = message(monkeypatch, errno.ENOMEM, "set_epoch(0)", "planning epoch 0: " + nomem)
    assert got == "set_epoch(0): planning epoch 0: " + nomem
    assert got.count(nomem) == 1


def test_reason_says_out_of_memory(monkeypatch):
    got = message(monkeypatch, errno.ENOMEM, "next batch", "s: a: mq: symbol frame: out of memory")
    assert got == "next batch: s: a: mq: symbol frame: out of memory"


def test_reason_of_its_own(monkeypatch):
    code = _lib.FC_EBADSTATE
    reason = "loader opened in another process: open it again after fork"
    got = message(monkeypatch, code, "next batch", reason)
    assert got == "next batch: %s (%s)" % (_lib.strerror(code), reason)


def test_no_reason(monkeypatch):
    assert message(monkeypatch, errno.ENOMEM, "next batch", "") == \
        "next batch: " + _lib.strerror(errno.ENOMEM)
    assert message(monkeypatch, errno.EIO, "get('a')", None) == \
        "get('a'): " + _lib.strerror(errno.EIO)


def test_too_many_open_files_says_what_to_do(tmp_path):
    # each open store takes file descriptors: a loader over many stores met the soft limit with
    # only "STORE: Too many open files"; the library does not raise the limit (the tools do), so
    # the message says how (docs/scale-out.md)
    import subprocess
    code = r"""
import os, resource, sys, numpy as np, featcache
from featcache import testing as T
paths = []
for i in range(40):
    p = os.path.join(sys.argv[1], "s%02d" % i)
    with T.StoreWriter(p) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        w.add_utterance("u%02d" % i, b"a%d" % i, np.zeros((20, 80), np.float32), cfg)
    paths.append(p)
resource.setrlimit(resource.RLIMIT_NOFILE, (48, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    featcache.Loader(paths, batch_size=4)
except featcache.FeatcacheError as e:
    print(e)
"""
    # (FC_PYTHON: under the sanitizer build, the wrapper that preloads ASan)
    r = subprocess.run([os.environ.get("FC_PYTHON") or sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip()
    assert "Too many open files" in out
    assert "soft limit of open files (48)" in out and "RLIMIT_NOFILE" in out, out


def test_padded_buffer_out_of_memory_says_why(tmp_path):
    # one long utterance among short ones: every padded buffer holds the epoch's largest batch
    # (batch_size x the long one's frames x n_mels), and the failed allocation said only "next
    # batch: Cannot allocate memory", naming neither the size nor what bounds it
    import subprocess
    code = r"""
import resource, sys, numpy as np, featcache
from featcache import testing as T
with T.StoreWriter(sys.argv[1]) as w:
    cfg = w.add_config(T.mel_config_json("hifigan"))
    for i in range(63):
        w.add_utterance("u%02d" % i, b"a%d" % i, np.zeros((20, 80), np.float32), cfg)
    w.add_utterance("long", b"long", np.zeros((200000, 80), np.float32), cfg)
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
try:
    for b in featcache.Loader(sys.argv[1], batch_size=64, padded=True, prefetch_threads=0):
        pass
except featcache.FeatcacheError as e:
    print(e)
"""
    if os.environ.get("FC_SANITIZE") == "1":
        pytest.skip("ASan reserves terabytes of shadow memory: no RLIMIT_AS can be set under it")
    r = subprocess.run([os.environ.get("FC_PYTHON") or sys.executable, "-c", code,
                        str(tmp_path / "s")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "next batch: out of memory for a padded batch buffer of 4.10 GB (each holds the epoch's "
        "largest batch: its utterances x its longest one's frames x n_mels): crop_frames, "
        "max_frames, a smaller batch_size or views (not padded) bound it"), r.stdout


def test_an_error_crosses_processes():
    """A FeatcacheError pickles (a multiprocessing pool, concurrent.futures: its code and message
    kept) and can be made of its message alone (torch re-raises a DataLoader worker's exception
    as type(message)); both raised TypeError, and the worker's error came as a RuntimeError."""
    import pickle
    e = featcache.FeatcacheError(errno.EMFILE, "open: too many")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is featcache.FeatcacheError
    assert (back.code, str(back)) == (e.code, str(e)) and str(e).count("soft limit") == 1
    e = featcache.FeatcacheError("Caught FeatcacheError in DataLoader worker process 0. ...")
    assert e.code is None and str(e).startswith("Caught FeatcacheError")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
