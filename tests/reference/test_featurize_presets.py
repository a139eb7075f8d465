#!/usr/bin/env python3
"""featurize (the tool) with the kaldi (snip edges on and off), whisper and librosa presets, against
their references.

test_featurize_store.py holds hifigan and tacotron2 records to their recipes through the tool; this
does the same for the other presets, whose input path has its own switches (kaldi's 16-bit scaling,
DC removal and pre-emphasis; whisper's utterance maximum; librosa's linear output), on the files a
user has: 16-bit 16 kHz mono, 24-bit 48 kHz stereo, float 22.05 kHz, 16-bit 8 kHz.

  * numbers: each record against the preset's recipe (test_mel_reference.py's, in float64) run on
    librosa.load(path, sr=16000 or 22050) — what featurize decodes (docs/ACCURACY.md) — within
    docs/ACCURACY.md's bound: 1e-4 + the float32 FFT allowance for log outputs, 1e-4 of the
    frame's maximum for librosa's power; frame counts exactly;
  * inputs: a 16-bit WAV and its 24-bit, 32-bit float and 64-bit float copies (the same values)
    give the same payload byte for byte, for every preset (kaldi scales samples by 32768 first).

Run: python test_featurize_presets.py (FC_BIN = the build directory; exit 0 pass, 1 fail).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import test_mel_reference as ref  # noqa: E402  (the recipes; fails itself if a package is missing)
from fc_records import audio_entries, record_key, records  # noqa: E402

import numpy as np  # noqa: E402
import librosa  # noqa: E402
import soundfile as sf  # noqa: E402

FZ = os.path.join(os.environ.get("FC_BIN", ""), "featurize")
# preset (and options): (sample rate, reference recipe, amplitude of a log output or None,
# d(out)/d(rel amp))
PRESETS = {
    "kaldi": (16000, ref.ref_kaldi, lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi --snip-edges false": (16000, ref.ref_kaldi_unsnipped, lambda r: np.sqrt(np.exp(r)),
                                 2.0),
    "whisper": (16000, ref.ref_whisper, lambda r: np.sqrt(10.0 ** (4 * r - 4)),
                2 / (4 * np.log(10.0))),
    "librosa": (22050, ref.ref_librosa, None, None),
    # power_to_db without its clamp (top_db=None): the quiet frames keep their values
    "librosa --log db --top-db 0": (22050,
                                    lambda y, dt: ref.ref_librosa(y, np.float64, db=True,
                                                                  top_db=None),
                                    lambda r: np.sqrt(10.0 ** (r / 10)), 20 / np.log(10.0)),
}
fails = []


def check(cond, msg):
    if not cond:
        fails.append(msg)
        print(f"FAIL: {msg}")


def featurize(store, preset, files):
    p = subprocess.run([FZ, "-q", "--device", "cpu", "--preset"] + preset.split() + ["-o", store]
                       + files, capture_output=True, text=True)
    check(p.returncode == 0, f"featurize --preset {preset}: exit {p.returncode}: {p.stderr}")


def stored(store):
    """{utterance id: {config digest: float32 [frames][bins]}}."""
    recs, out = records(store), {}
    for uid, digest in audio_entries(store).items():
        for key, (h, payload) in recs.items():
            if record_key(digest, h["config"]) == key and h["dtype"] == 1:
                out.setdefault(uid, {})[h["config"]] = np.frombuffer(payload, "<f4").reshape(
                    h["dim0"], h["dim1"])
    return out


def within_bound(name, got, want, to_amp, unit):
    if got.shape != want.shape:
        check(False, f"{name}: shape {got.shape}, reference {want.shape}")
        return ""
    got = got.astype(np.float64)
    if to_amp is None:  # linear: per frame, relative to the frame's maximum
        scale = np.abs(want).max(axis=1, keepdims=True)
        rel = (np.abs(got - want) / np.where(scale > 0, scale, 1)).max()
        check(rel <= ref.LIN_TOL, f"{name}: per-frame relative error {rel:.3g} > {ref.LIN_TOL}")
        return f"per-frame rel {rel:.2e}"
    amp = to_amp(want)
    ratio = amp.max(axis=1, keepdims=True) / np.maximum(amp, 1e-300)
    bound = ref.LOG_TOL + ref.F32_K * ref.EPS32 * ratio * unit
    over = (np.abs(got - want) / bound).max()
    check(over <= 1, f"{name}: error {over:.3g} x the bound (1e-4 + float32 FFT allowance)")
    return f"max abs {np.abs(got - want).max():.2e}  err/bound {over:.2f}"


def main():
    if not os.path.exists(FZ):
        ref.missing(f"no featurize at {FZ}")
    if not shutil.which("espeak-ng"):
        ref.missing("espeak-ng not installed (scripts/setup installs it)")
    tmp = tempfile.mkdtemp()
    try:
        os.chdir(tmp)
        subprocess.run(["espeak-ng", "-w", "s.wav", "Differs from most if not all the arts and "
                        "crafts represented in the exhibition."], check=True)
        x, sr0 = sf.read("s.wav", dtype="float64")
        y16 = librosa.resample(x, orig_sr=sr0, target_sr=16000)
        y48 = librosa.resample(x, orig_sr=sr0, target_sr=48000)
        y8 = librosa.resample(x, orig_sr=sr0, target_sr=8000)
        sf.write("m16.wav", y16, 16000, subtype="PCM_16")
        sf.write("st48.wav", np.stack([y48, 0.5 * y48[::-1]], axis=1), 48000, subtype="PCM_24")
        sf.write("f22.wav", x, sr0, subtype="FLOAT")
        sf.write("m8.wav", y8, 8000, subtype="PCM_16")
        # The same values in other containers: 16-bit samples are exact in all of them.
        q16, _ = sf.read("m16.wav", dtype="float64")
        sf.write("m16_24.wav", q16, 16000, subtype="PCM_24")
        sf.write("m16_f32.wav", q16, 16000, subtype="FLOAT")
        sf.write("m16_f64.wav", q16, 16000, subtype="DOUBLE")
        files = ["m16.wav", "st48.wav", "f22.wav", "m8.wav"]
        copies = ["m16_24.wav", "m16_f32.wav", "m16_f64.wav"]
        lines = []
        for preset, (rate, recipe, to_amp, unit) in PRESETS.items():
            store = "st_" + preset.replace(" ", "_")
            featurize(store, preset, files + copies)
            got = stored(store)
            for f in files:
                uid = f[:-4]
                mels = list(got.get(uid, {}).values())
                check(len(mels) == 1, f"{preset} {f}: {len(mels)} f32 records, want 1")
                if len(mels) != 1:
                    continue
                y, _ = librosa.load(f, sr=rate)  # what featurize decodes
                want = recipe(y, ref.T64 if to_amp is not None else np.float64)[0]
                lines.append(f"{preset:24s} {f:9s} "
                             + within_bound(f"{preset} {f}", mels[0], want, to_amp, unit))
            base = list(got.get("m16", {}).values())
            for f in copies:
                other = list(got.get(f[:-4], {}).values())
                same = len(base) == len(other) == 1 and base[0].tobytes() == other[0].tobytes()
                check(same, f"{preset}: {f} (the values of m16.wav) stores another payload")
        for line in lines:
            print(line)
    finally:
        os.chdir("/")
        shutil.rmtree(tmp, ignore_errors=True)
    if fails:
        print(f"test_featurize_presets: {len(fails)} failure(s)")
        return 1
    print("test_featurize_presets: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
