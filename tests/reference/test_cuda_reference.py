"""featurize --device cuda vs --device cpu, end to end through the tool, on speech-like audio.

For every preset: the same keys (same audio digest, same config digest), producer 2 on the GPU and
1 on the CPU, exactly the same frame counts, and values within 1e-4 (absolute on log outputs,
relative on linear ones), with the float32-FFT allowance of docs/ACCURACY.md for bands far below
their frame's peak (within 1e-6 of the frame's largest band in the linear domain, as
tests/unit/test_cuda_parity.c). One input is longer than the GPU's staging chunk (2 Mi samples)
at 22.05 kHz: under --device cuda it is computed on the CPU (producer 1), never failed, for the
presets at that rate; resampled to a 16 kHz preset's rate it fits, and the GPU computes it. For
hifigan also a ring of one small chunk, used several times, refilled early (FC_CUDA_RING=1x70K:early,
its next launch waiting for the writers) and late (1x70K:late, once its utterances are committed):
the same records, two more on the CPU. The
CPU side is held to the references (librosa, torch, torchaudio) by test_mel_reference.py.

The inputs are made here with numpy (voiced speech-like sound: a glottal pulse train through
formant resonances, with pauses) and read back through libfeatcache's store API
(tests/fc_records.py), so the test runs on a GPU machine without espeak-ng or py-lmdb. Without a
usable GPU, or without numpy: exit 77 (skipped) with the reason.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import shutil
import wave

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
try:
    import numpy as np
except ImportError as e:
    print(f"skip: {e}")
    sys.exit(77)
from fc_records import records  # noqa: E402

BIN = os.environ.get("FC_BIN", "")
LIB = os.environ.get("FEATCACHE_LIBRARY", os.path.join(BIN, "libfeatcache.so.0"))
STAGING = 2 << 20  # samples: featurize's default ring chunk (libcache/mel/featurize/featurize_device.c)


def cuda_reason():
    """None when a GPU is usable, else the reason."""
    try:
        lib = ctypes.CDLL(LIB)
    except OSError as e:
        return f"cannot load {LIB}: {e}"
    class Device(ctypes.Structure):  # fc_device (fc_featurize.h)
        _fields_ = [("kind", ctypes.c_int), ("index", ctypes.c_int)]
    want, got = Device(2, 0), Device()  # FC_DEVICE_CUDA, device 0
    why = ctypes.create_string_buffer(256)
    if lib.fc_device_resolve(ctypes.byref(want), ctypes.byref(got), why, ctypes.c_size_t(256)) != 0:
        return why.value.decode()
    return None


def speech_like(seconds, seed, sr=22050):
    """int16 samples: voiced segments (f0 90-220 Hz, 3 formants) separated by short pauses."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    out = np.zeros(n)
    pos = 0
    while pos < n:
        seg = min(n - pos, int(rng.uniform(0.15, 0.6) * sr))
        f0 = rng.uniform(90, 220) * (1 + 0.1 * np.sin(np.linspace(0, 3, seg)))
        phase = np.cumsum(f0 / sr)
        src = (np.diff(np.floor(phase), prepend=0) > 0).astype(float)  # one pulse per period
        x = src + 0.02 * rng.standard_normal(seg)
        for fc, bw in ((rng.uniform(300, 900), 80), (rng.uniform(900, 2500), 120), (2900, 200)):
            r = np.exp(-np.pi * bw / sr)  # two-pole resonator
            a1, a2 = 2 * r * np.cos(2 * np.pi * fc / sr), -r * r
            y = _resonate(x, a1, a2)
            x = y / (np.abs(y).max() + 1e-9)
        out[pos:pos + seg] = x * np.hanning(seg) * 0.6
        pos += seg + int(rng.uniform(0.05, 0.2) * sr)
    return (out * 20000).astype("<i2")


def _resonate(x, a1, a2):
    from scipy.signal import lfilter  # on the GPU machine too; main() falls back to the loop
    return lfilter([1.0], [1.0, -a1, -a2], x)


def _resonate_loop(x, a1, a2):
    y = np.zeros_like(x)
    y1 = y2 = 0.0
    for i, v in enumerate(x):
        y[i] = v + a1 * y1 + a2 * y2
        y2, y1 = y1, y[i]
    return y


def write_wav(path, samples, sr=22050):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(samples.tobytes())


def to_linear(preset, y):
    y = y.astype(np.float64)
    return {"hifigan": np.exp, "tacotron2": np.exp, "kaldi": np.exp,
            "whisper": lambda v: 10.0 ** (4 * v - 4),
            "librosa": np.abs}[preset](y)


def compare(preset, a, b):
    """(worst error within 1e-4, values beyond 1e-4, worst beyond as a fraction of its frame)."""
    err = np.abs(b.astype(np.float64) - a)
    if preset == "librosa":  # linear power: relative
        err = err / np.maximum(np.abs(a), 1e-30)
    beyond = err > 1e-4
    frame_max = np.maximum(to_linear(preset, a).max(axis=1, keepdims=True), 1e-30)  # silence
    frac = np.abs(to_linear(preset, b) - to_linear(preset, a)) / frame_max
    worst_in = float(err[~beyond].max()) if (~beyond).any() else 0.0
    worst_frac = float(frac[beyond].max()) if beyond.any() else 0.0
    return worst_in, int(beyond.sum()), worst_frac


def compare_run(preset, dev, cpu, gpu, n, long_ids):
    """The failures of one GPU run's store against the CPU's (0 or 1), its line printed."""
    if set(cpu) != set(gpu):
        print(f"FAIL {preset} {dev}: different keys")
        return 1
    bad = 0
    producers = sorted(h["producer"] for h, _ in gpu.values())
    want = sorted([1] * len(long_ids) + [2] * (n - len(long_ids)))
    if producers != want:
        print(f"FAIL {preset} {dev}: GPU-run producers {producers}, want {want} (the long file "
              "on the CPU)")
        bad = 1
    worst = frac = 0.0
    beyond = 0
    for k, (hc, pc) in cpu.items():
        hg, pg = gpu[k]
        if hc["producer"] != 1 or (hc["dim0"], hc["dim1"]) != (hg["dim0"], hg["dim1"]):
            print(f"FAIL {preset} {dev}: producer {hc['producer']}, shapes "
                  f"{hc['dim0']}x{hc['dim1']} / {hg['dim0']}x{hg['dim1']}")
            return 1
        a = np.frombuffer(pc, "<f4").reshape(hc["dim0"], hc["dim1"])
        b = np.frombuffer(pg, "<f4").reshape(hg["dim0"], hg["dim1"])
        w, m, f = compare(preset, a, b)
        worst, beyond, frac = max(worst, w), beyond + m, max(frac, f)
    ok = frac <= 1e-6
    print(f"{'ok' if ok else 'FAIL'} {preset} {dev}: max error {worst:.2e} over {len(cpu)} "
          f"records; {beyond} values beyond 1e-4, the worst {frac:.1e} of its frame")
    return 1 if bad or not ok else 0


def main():
    reason = cuda_reason()
    if reason is not None:
        print(reason)
        return 77
    global _resonate
    try:
        import scipy.signal  # noqa: F401
    except ImportError:
        _resonate = _resonate_loop
    fz = os.path.join(BIN, "featurize")
    tmp = tempfile.mkdtemp()
    bad = 0
    try:
        wavs, seconds = [], [3.1, 0.05, 7.3, 1.0, STAGING / 22050 + 10]
        for i, sec in enumerate(seconds):
            p = os.path.join(tmp, f"u{i}.wav")
            write_wav(p, speech_like(sec, i))
            wavs.append(p)
        for preset in ["hifigan", "tacotron2", "librosa", "whisper", "kaldi"]:
            # the files whose samples at the preset's rate (after resampling) exceed the staging
            rate = json.loads(subprocess.run([fz, "--print-config", preset], check=True,
                                             capture_output=True, text=True).stdout)["sample_rate"]
            # the GPU runs: the default ring, and for hifigan one chunk of 70 Ki samples refilled
            # as soon as the GPU is done with it (FC_CUDA_RING's :early, the default refill: its
            # next launch waits for the writers) and once its utterances are committed (:late):
            # u0 (68,355 samples) cannot share it with u3 (22,050), so it is used at least twice;
            # u2 and u4 do not fit it and are computed on the CPU
            runs = [("cuda", STAGING, None)]
            if preset == "hifigan":
                runs += [("cuda-early", 70 << 10, "1x70K:early"), ("cuda-late", 70 << 10, "1x70K:late")]
            got = {}
            for dev, _, ring in [("cpu", 0, None)] + runs:
                st = os.path.join(tmp, f"{preset}-{dev}")
                env = dict(os.environ, FC_CUDA_RING=ring) if ring else None
                subprocess.run([fz, "-q", "--device", dev.split("-")[0], "--preset", preset, "-o",
                                st] + wavs, check=True, env=env)
                got[dev] = records(st, ctypes.CDLL(LIB))
            for dev, cap, _ in runs:
                bad += compare_run(preset, dev, got["cpu"], got[dev], len(wavs),
                                   {f"u{i}" for i, sec in enumerate(seconds)
                                    if round(sec * rate) > cap})
    finally:
        shutil.rmtree(tmp)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
