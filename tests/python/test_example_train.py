"""python/examples/train_conv.py runs both ways on a tiny generated corpus, on the CPU: from a
featcache store (featurize) and on the fly (torch mels in 2 DataLoader workers); both save
profiles that `loader-bench --compare-profiles` reads. The on-the-fly features are the store's
(the example's torch recipe against featcache's hifigan records), so the two runs train on the
same numbers. Needs python3, numpy and torch only (no pytest, soundfile or torchaudio: the WAVs
are written with the standard library's wave, and the example reads them with it where
soundfile is missing) — so it runs on a GPU machine as it is; a plain script."""
import json
import os
import subprocess
import sys
import tempfile
import shutil
import wave

try:
    import numpy as np
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("skip: %s" % e)
    sys.exit(77)

SRC = os.environ.get("FC_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("FC_BIN", os.path.join(SRC, "build"))
SCRIPT = os.path.join(SRC, "python", "examples", "train_conv.py")
sys.path.insert(0, os.path.dirname(SCRIPT))


def make_corpus(d):
    wavs = os.path.join(d, "wavs")
    os.makedirs(wavs)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(10):  # 0.6-1.6 s of chirps and noise, 22.05 kHz, 16-bit
        n = int(22050 * (0.6 + 0.1 * i))
        t = np.arange(n) / 22050
        f0 = 120 + 40 * i
        x = 0.3 * np.sin(2 * np.pi * (f0 * t + 200 * t ** 2)) + 0.02 * rng.standard_normal(n)
        p = os.path.join(wavs, "u%02d.wav" % i)
        with wave.open(p, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(22050)
            w.writeframes((np.clip(x, -1, 1) * 32767).round().astype("<i2").tobytes())
        paths.append(p)
    store = os.path.join(d, "store")
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--preset", "hifigan", "-o",
                        store] + paths, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def run(*args):
    # (FC_PYTHON: under the sanitizer build, the wrapper that preloads ASan)
    r = subprocess.run([os.environ.get("FC_PYTHON") or sys.executable, SCRIPT, "--device", "cpu",
                        "--threads", "1", "--batch", "4", "--frames", "48", "--hidden", "32",
                        "--warmup", "2", "--steps", "6", *args],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_on_the_fly_features_are_the_stores(corpus):
    import featcache
    import train_conv
    mel = train_conv.OnTheFlyMels()
    for i in (0, 7):
        want = featcache.get(os.path.join(corpus, "store"), "u%02d" % i)
        path = os.path.join(corpus, "wavs", "u%02d.wav" % i)
        got = mel(path).numpy()
        assert got.shape == want.shape
        # float32 STFTs of two implementations; log mels agree far within 1e-3
        assert np.max(np.abs(got - want)) < 1e-3, np.max(np.abs(got - want))
        # the standard library's reader (no soundfile) reads the same samples
        saved = sys.modules.get("soundfile")
        sys.modules["soundfile"] = None
        try:
            x, sr = train_conv.read_wav(path)
        finally:
            if saved is None:
                del sys.modules["soundfile"]
            else:
                sys.modules["soundfile"] = saved
        assert sr == 22050
        if saved is not None or _has_soundfile():
            import soundfile as sf
            y, _ = sf.read(path, dtype="float32")
            np.testing.assert_array_equal(x.numpy(), y)


def _has_soundfile():
    try:
        import soundfile  # noqa: F401
        return True
    except ImportError:
        return False


def test_both_runs_and_compare(corpus):
    after, before = (os.path.join(corpus, f) for f in ("after.json", "before.json"))
    out = run("--store", os.path.join(corpus, "store"), "--profile", after)
    assert "featcache, device=cpu: 6 steps" in out
    out = run("--on-the-fly", os.path.join(corpus, "wavs"), "--workers", "2", "--profile",
              before)
    assert "on the fly, 2 workers, device=cpu: 6 steps" in out
    for p in (after, before):
        with open(p) as f:
            d = json.load(f)
        assert d["steps"] == 6 and d["items_per_step"] == 4
        assert set(d["phases"]) >= {"data", "h2d", "compute"}
        assert d["gpu_busy"] == {"measured": False, "note": "the run is on the CPU"}
    r = subprocess.run([os.path.join(BIN, "loader-bench"), "--compare-profiles", before, after],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].endswith("(on the fly, 2 workers, device=cpu)")
    assert lines[1].endswith("(featcache, device=cpu)")
    assert lines[-2].startswith("shrink factor: ") and lines[-1].startswith("verdict: the data")
    j = subprocess.run([os.path.join(BIN, "loader-bench"), "--compare-profiles", "--json",
                        before, after], capture_output=True, text=True)
    d = json.loads(j.stdout)
    with open(before) as f:
        b = json.load(f)
    with open(after) as f:
        a = json.load(f)
    assert abs(d["shrink_factor"] - b["phases"]["data"]["mean"] / a["phases"]["data"]["mean"]) \
        <= 1e-6 * d["shrink_factor"]


def main():
    d = tempfile.mkdtemp(prefix="fc_example_train_")
    try:
        corpus = make_corpus(d)
        tests = [(k, v) for k, v in globals().items() if k.startswith("test_")]
        for name, fn in tests:
            fn(corpus)
            print("ok %s" % name)
        print("%d passed" % len(tests))
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
