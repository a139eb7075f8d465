#!/usr/bin/env python3
"""featurize --preset whisper against Whisper's own input path: `log_mel_spectrogram(load_audio(
path), padding=0)`, where `load_audio` asks ffmpeg for 16 kHz mono 16-bit PCM (whisper/audio.py:
`ffmpeg -nostdin -threads 0 -i FILE -f s16le -ac 1 -acodec pcm_s16le -ar 16000 -`, then / 32768).

featurize decodes as librosa.load does (docs/ACCURACY.md, "Before the features"): for a 16-bit
16 kHz mono file those are ffmpeg's samples, and so the features are Whisper's, within
docs/ACCURACY.md's float32 bound. A file of more channels is not: ffmpeg mixes it to one and
rounds the mix to 16 bits, and for more than two channels weights them by its own downmix (5.1,
the layout it takes for six: centre 1, left and right 1/sqrt 2, surrounds 1/2, LFE 0, over their
sum), where featcache and librosa average. This holds the mono claim to the bound, a stereo
file's samples to ffmpeg's within half a 16-bit step (the rounding), and a 6-channel file's
ffmpeg samples to that downmix (the weights docs/presets.md states), and prints what each costs
in Whisper's units.

Run: python test_whisper_load_audio.py (FC_BIN = the build directory; exit 0 pass, 1 fail).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_featurize_presets as fp  # noqa: E402  (featurize, stored, within_bound)
import test_mel_reference as ref  # noqa: E402  (the recipe; fails itself if a package is missing)

import numpy as np  # noqa: E402
import librosa  # noqa: E402
import soundfile as sf  # noqa: E402

# ffmpeg's 5.1 downmix to mono, in the order of a WAV's channels (FL FR FC LFE BL BR)
DOWNMIX_51 = np.array([2 ** -0.5, 2 ** -0.5, 1.0, 0.0, 0.5, 0.5])
DOWNMIX_51 /= DOWNMIX_51.sum()


def load_audio(path):
    """whisper.audio.load_audio(path): ffmpeg's 16 kHz mono 16-bit samples, / 32768."""
    out = subprocess.run(["ffmpeg", "-nostdin", "-threads", "0", "-i", path, "-f", "s16le",
                          "-ac", "1", "-acodec", "pcm_s16le", "-ar", "16000", "-"],
                         capture_output=True, check=True).stdout
    return np.frombuffer(out, np.int16).flatten().astype(np.float32) / 32768.0


def main():
    if not os.path.exists(fp.FZ):
        ref.missing(f"no featurize at {fp.FZ}")
    for tool in ("espeak-ng", "ffmpeg"):
        if not shutil.which(tool):
            ref.missing(f"{tool} not installed (scripts/setup installs it)")
    _, _, to_amp, unit = fp.PRESETS["whisper"]
    tmp = tempfile.mkdtemp()
    try:
        os.chdir(tmp)
        subprocess.run(["espeak-ng", "-w", "s.wav", "Differs from most if not all the arts and "
                        "crafts represented in the exhibition."], check=True)
        x, sr0 = sf.read("s.wav", dtype="float64")
        y = librosa.resample(x / np.abs(x).max() * 0.8, orig_sr=sr0, target_sr=16000)
        rng = np.random.default_rng(3)
        # channels that differ: gains, delays and a little noise each
        chans = np.stack([np.roll(y, 29 * c) * (0.9 - 0.1 * c) + 0.01 * rng.standard_normal(len(y))
                          for c in range(6)], axis=1)
        sf.write("mono.wav", y, 16000, subtype="PCM_16")
        sf.write("stereo.wav", chans[:, :2], 16000, subtype="PCM_16")
        sf.write("six.wav", chans, 16000, subtype="PCM_16")
        files = ["mono.wav", "stereo.wav", "six.wav"]
        fp.featurize("st", "whisper", files)
        got = fp.stored("st")
        lines = []
        for f in files:
            mels = list(got.get(f[:-4], {}).values())
            fp.check(len(mels) == 1, f"{f}: {len(mels)} f32 records, want 1")
            if len(mels) != 1:
                continue
            theirs = load_audio(f)
            ours, _ = librosa.load(f, sr=16000)  # what featurize decodes
            fp.check(len(theirs) == len(ours), f"{f}: ffmpeg gives {len(theirs)} samples, "
                     f"librosa.load {len(ours)}")
            if len(theirs) != len(ours):
                continue
            want = ref.ref_whisper(theirs.astype(np.float64), ref.T64)[0]
            step = np.abs(theirs.astype(np.float64) - ours).max() * 32768
            if f == "mono.wav":  # the same samples: Whisper's features, to the float32 bound
                fp.check(step == 0, f"{f}: ffmpeg's samples differ from the file's by {step} steps")
                lines.append(f"{f:11s} samples {step:.2f} steps, "
                             + fp.within_bound(f, mels[0], want, to_amp, unit))
                continue
            if f == "stereo.wav":  # ffmpeg's (L + R) / 2, rounded to 16 bits
                fp.check(step <= 0.5, f"{f}: ffmpeg's samples {step:.3g} 16-bit steps from the "
                         f"channels' mean, more than its rounding (0.5)")
            else:  # ffmpeg's 5.1 downmix, rounded to 16 bits
                q, _ = sf.read(f, dtype="float64")
                mix = np.abs(theirs - q @ DOWNMIX_51).max() * 32768
                fp.check(mix <= 1.0, f"{f}: ffmpeg's samples {mix:.3g} 16-bit steps from the 5.1 "
                         f"downmix docs/presets.md states")
            err = np.abs(mels[0].astype(np.float64) - want)
            lines.append(f"{f:11s} samples {step:.2f} steps from the mean; features max "
                         f"{err.max():.2g} (99th percentile {np.percentile(err, 99):.2g}) "
                         f"(measured; docs/presets.md)")
        for line in lines:
            print(line)
    finally:
        os.chdir("/")
        shutil.rmtree(tmp, ignore_errors=True)
    if fp.fails:
        print(f"test_whisper_load_audio: {len(fp.fails)} failure(s)")
        return 1
    print("test_whisper_load_audio: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
