"""Resuming mid-epoch (docs/loader.md "Resuming mid-epoch"): a run restarted from a checkpoint
saved after step k of epoch e starts epoch e and skips k batches; what follows must be exactly
the batches k, k+1, ... the interrupted run would have had: the same utterances in the same
order, the same crops, the same values. Checked in a new process (a resumed run is one), for
every order, dynamic batching, random crops, views, and a DataLoader with workers (any
number of them: the same batches as without)."""

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

try:
    import torch
    import lmdb  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import testing as T

N = 41

CASES = [dict(batch_size=5, shuffle=True, seed=1),
         dict(batch_size=5, shuffle=True, seed=1, pad_to=48, crop="random"),
         dict(batch_size=0, max_frames=600, order="bucket", seed=2, padded=True, bucket_batches=2),
         dict(batch_size=4, order="locality", seed=3, padded=True, locality_run=8),
         dict(batch_size=4, shuffle=True, seed=4, drop_last=True, rank=1, world_size=2)]


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_loader_resume_")
    path = os.path.join(d, "s")
    rng = np.random.default_rng(7)
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(N):
            w.add_utterance("r%02d" % i, b"a%d" % i,
                            rng.standard_normal((20 + (i * 37) % 90, 80)).astype(np.float32), cfg)
    yield path
    shutil.rmtree(d)


def sig(b):
    """A batch as what a step sees: its ids, crop starts and the digest of its mels."""
    if isinstance(b, dict):
        ids, mels, starts = list(b["ids"]), b["mels"], b["mel_starts"].tolist()
        mels = mels.numpy() if torch.is_tensor(mels) else [m.numpy() for m in mels]
    else:
        ids, mels, starts = list(b.ids), b.mels, b.mel_starts.tolist()
    arrs = mels if isinstance(mels, list) else [mels]
    return [ids, starts, T.digest(b"".join(np.ascontiguousarray(a).tobytes() for a in arrs)).hex()]


def loader_epoch(path, kw, epoch, skip=0):
    return [sig(b) for b in itertools.islice(featcache.Loader(path, epoch=epoch, **kw), skip, None)]


def resumed(path, kw, epoch, skip):
    """The batches from skip on, in a new process (the resumed run)."""
    code = ("import json, sys; sys.path.insert(0, %r); import test_loader_resume as t; "
            "print(json.dumps(t.loader_epoch(%r, %r, %d, %d)))"
            % (os.path.dirname(os.path.abspath(__file__)), path, kw, epoch, skip))
    # (FC_PYTHON: under the sanitizer build, the wrapper that preloads ASan, which a bare
    # sys.executable child lacks: it would die at start)
    r = subprocess.run([os.environ.get("FC_PYTHON") or sys.executable, "-c", code],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("kw", CASES)
def test_loader_skip_gives_the_rest(store, kw):
    full = loader_epoch(store, kw, 2)
    assert len(full) >= 4
    assert full != loader_epoch(store, kw, 3)  # (another epoch, another order)
    for k in (1, len(full) // 2, len(full) - 1):
        assert loader_epoch(store, kw, 2, k) == full[k:], k
    k = len(full) // 2
    assert resumed(store, kw, 2, k) == json.loads(json.dumps(full[k:]))


@pytest.mark.parametrize("kw", [CASES[1], dict(batch_size=4, shuffle=True, padded=False),
                                CASES[2], CASES[4]])
@pytest.mark.parametrize("workers", [0, 2, 3])
def test_dataloader_skip_gives_the_rest(store, kw, workers):
    # the rest whatever num_workers the interrupted run had: the workers deal out the rank's
    # batches (worker w: w, w + W, ...) and torch takes them in turn, so an epoch is the same
    # batches in the same order with any number of workers (each (rank, worker) cut a share of
    # its own before, and a resume needed the same num_workers)
    from featcache.torch import FeatcacheDataset

    def epoch(e, skip=0, workers=workers):
        ds = FeatcacheDataset(store, **kw)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                         **({"multiprocessing_context": "fork"} if workers
                                            else {}))
        ds.set_epoch(e)
        return [sig(b) for b in itertools.islice(dl, skip, None)]
    full = epoch(1, workers=0)
    assert len(full) >= 4
    for k in (0, 1, 3, len(full) - 1):
        assert epoch(1, k) == full[k:], k


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
