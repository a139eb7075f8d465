"""python/examples/train_conv.py runs both ways on a tiny generated corpus, on the CPU: from a
featcache store (featurize) and on the fly (torchaudio mels in 2 DataLoader workers); both save
profiles that `loader-bench --compare-profiles` reads. The on-the-fly features are the store's
(the example's torch recipe against featcache's hifigan records), so the two runs train on the
same numbers."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

try:
    import soundfile as sf
    import torch
    import torchaudio  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("skip: %s" % e)
    sys.exit(77)

SRC = os.environ.get("FC_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("FC_BIN", os.path.join(SRC, "build"))
SCRIPT = os.path.join(SRC, "python", "examples", "train_conv.py")
sys.path.insert(0, os.path.dirname(SCRIPT))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    wavs = d / "wavs"
    wavs.mkdir()
    rng = np.random.default_rng(0)
    for i in range(10):  # 0.6-1.6 s of chirps and noise, 22.05 kHz
        n = int(22050 * (0.6 + 0.1 * i))
        t = np.arange(n) / 22050
        f0 = 120 + 40 * i
        x = 0.3 * np.sin(2 * np.pi * (f0 * t + 200 * t ** 2)) + 0.02 * rng.standard_normal(n)
        sf.write(str(wavs / ("u%02d.wav" % i)), x.astype(np.float32), 22050, subtype="PCM_16")
    store = d / "store"
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--preset", "hifigan", "-o",
                        str(store)] + sorted(str(p) for p in wavs.iterdir()),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--threads", "1", "--batch",
                        "4", "--frames", "48", "--hidden", "32", "--warmup", "2", "--steps", "6",
                        *args], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_on_the_fly_features_are_the_stores(corpus):
    import featcache
    from train_conv import OnTheFlyMels
    mel = OnTheFlyMels()
    for i in (0, 7):
        want = featcache.get(str(corpus / "store"), "u%02d" % i)
        got = mel(str(corpus / "wavs" / ("u%02d.wav" % i))).numpy()
        assert got.shape == want.shape
        # float32 STFTs of two implementations; log mels agree far within 1e-3
        assert np.max(np.abs(got - want)) < 1e-3, np.max(np.abs(got - want))


def test_both_runs_and_compare(corpus):
    after, before = corpus / "after.json", corpus / "before.json"
    out = run("--store", str(corpus / "store"), "--profile", str(after))
    assert "featcache, device=cpu: 6 steps" in out
    out = run("--on-the-fly", str(corpus / "wavs"), "--workers", "2", "--profile", str(before))
    assert "on the fly, 2 workers, device=cpu: 6 steps" in out
    for p in (after, before):
        d = json.loads(p.read_text())
        assert d["steps"] == 6 and d["items_per_step"] == 4
        assert set(d["phases"]) >= {"data", "h2d", "compute"}
        assert d["gpu_busy"] == {"measured": False, "note": "the run is on the CPU"}
    r = subprocess.run([os.path.join(BIN, "loader-bench"), "--compare-profiles", str(before),
                        str(after)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].endswith("(on the fly, 2 workers, device=cpu)")
    assert lines[1].endswith("(featcache, device=cpu)")
    assert lines[-2].startswith("shrink factor: ") and lines[-1].startswith("verdict: the data")
    j = subprocess.run([os.path.join(BIN, "loader-bench"), "--compare-profiles", "--json",
                        str(before), str(after)], capture_output=True, text=True)
    d = json.loads(j.stdout)
    b, a = json.loads(before.read_text()), json.loads(after.read_text())
    assert abs(d["shrink_factor"] - b["phases"]["data"]["mean"] / a["phases"]["data"]["mean"]) \
        <= 1e-6 * d["shrink_factor"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
