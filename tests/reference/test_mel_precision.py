#!/usr/bin/env python3
"""Every preset's precision against the float64 truth, held to its reference's own float32 run.

For each preset (hifigan, tacotron2, librosa power and dB, whisper, kaldi) the reference recipe of
tests/reference/test_mel_reference.py (HiFi-GAN meldataset.py, NVIDIA tacotron2 TacotronSTFT,
librosa.feature.melspectrogram / power_to_db, whisper log_mel_spectrogram(padding=0),
torchaudio.compliance.kaldi.fbank with dither 0 and energy_floor 0) is run on the same float32
samples as featcache: on float64 input (the truth: that recipe's exact answer) and on float32 input
(the float32 reference: what the recipe's own users get). Two recipes' own float32 runs are no
float32 FFT -- librosa's FFT is numpy.fft, float64; tacotron2's STFT is a float32 DFT matrix
product -- so for those the recipe is also run with torch.stft's float32 FFT (window made in float64
and rounded once), and featcache is held to the weaker of the two float32 implementations.

Over the bands within 40 dB of their frame's loudest band (in the truth), errors in output units
(ln, log10, dB; relative for librosa's linear power), featcache must have
  1. max error <= 1e-4 (the project's target, docs/ACCURACY.md), and
  2. no more error than the float32 reference: rms <= RMS_SPREAD x the reference's rms, and max <=
     MAX_SPREAD x the reference's max. The factors are the measured spread between float32 FFT
     algorithms (see their comment): the largest error over a signal sits on a few quiet bands
     where each FFT algorithm rounds differently; the rms is a stable measure of precision.
For kaldi the truth multiplies by torchaudio's float32 filterbank, whose last bits at a few bins
come from this CPU's vectorised logf (torch's SLEEF build); featcache builds the same float32
arithmetic with ln correctly rounded. The effect of that difference on the truth (<= 3e-5 on a band
dominated by one such bin) is measured here and taken off each element before check 2; check 1 and
the printed maxima include it.

A precision regression of the size kernel version 2 fixed fails here, in any preset: the kaldi filterbank
computed in double, as before kernel version 2 (up to 1.5e-4 off in ln units, docs/ACCURACY.md), fails
both signals (over 1e-4, rms 1.9-2.0x the float32 reference's).

Inputs are made here: a synthesized speech-like signal (glottal pulses through per-syllable
formants, fricative noise, pauses 70 dB down; a fixed seed) at 22050 and 16000 Hz, and espeak-ng
speech generated at test time (16 kHz via librosa's soxr_hq, as featurize resamples). Without
espeak-ng the synthetic checks still run, then the test fails saying so.

Run: python test_mel_precision.py (env FEATCACHE_LIBRARY = path of libfeatcache.so.0). Fails when
the library or a reference package is missing (scripts/setup installs them all). Prints the
measured table (docs/ACCURACY.md).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The recipes, the ctypes mirror and the plan wrapper; importing it fails (exit 1) without the
# library or a reference package, and runs none of its checks.
import test_mel_reference as R  # noqa: E402

np, torch, torchaudio, librosa, soundfile = R.np, R.torch, R.torchaudio, R.librosa, R.soundfile

WITHIN_DB = 40.0
TARGET_TOL = 1e-4
# How far two float32 FFTs of the same frames differ in their errors, measured on these signals:
# FFTW's ESTIMATE, MEASURE and PATIENT plans and pocketfft put 5.8e-6, 2.3e-6, 0.66e-6 and 1.1e-6 on
# one band of one frame (tacotron2's framing, espeak-ng, frame 427, band 14), so the largest error
# over a signal is a draw from that spread: featcache's maximum measures up to 1.8x the better
# float32 reference's here (tacotron2, espeak-ng) and 0.1x elsewhere. The rms over ~10^4 bands is
# stable: FFTW's ESTIMATE plans measure up to 1.07x pocketfft's (librosa). The factors leave room
# for FFTW's codelets on other CPUs; the kaldi banks of before kernel version 2 still fail on both signals
# (over 1e-4, rms 1.9-2.0x; max 5x on the synthetic one).
MAX_SPREAD = 3.0
RMS_SPREAD = 1.25
LN10 = np.log(10.0)

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print(f"FAIL: {msg}")


def ref_kaldi(y, dt, banks=None):
    """torchaudio.compliance.kaldi.fbank(32768 x), Kaldi defaults, dither 0, energy_floor 0; with
    `banks`, fbank runs on those float32 mel banks instead of get_mel_banks' own."""
    w = torch.from_numpy(y).to(dt).unsqueeze(0) * 32768
    kaldi = torchaudio.compliance.kaldi
    own = kaldi.get_mel_banks
    if banks is not None:
        kaldi.get_mel_banks = lambda *args: (torch.from_numpy(banks), None)
    try:
        return kaldi.fbank(w, num_mel_bins=80, dither=0.0, energy_floor=0.0,
                           sample_frequency=16000).double().numpy()
    finally:
        kaldi.get_mel_banks = own


def kaldi_banks_portable(n_mels=80, n_fft=512, sr=16000.0, f_lo=20.0, f_hi=8000.0):
    """torchaudio's get_mel_banks (vtln off) operation by operation in float32, with ln rounded
    correctly from float64 where torch runs its vectorised logf (1 ulp off at a few bins, which
    bins depending on the CPU's SIMD). featcache builds its kaldi banks this way."""
    f32 = np.float32
    lo, hi = 1127.0 * np.log(1.0 + f_lo / 700.0), 1127.0 * np.log(1.0 + f_hi / 700.0)
    delta = f32((hi - lo) / (n_mels + 1))
    b = np.arange(n_mels, dtype=f32)[:, None]
    left, centre, right = (f32(lo) + (b + f32(i)) * delta for i in (0, 1, 2))
    f = f32(sr / n_fft) * np.arange(n_fft // 2, dtype=f32)
    mel = (f32(1127.0) * np.log((f32(1.0) + f / f32(700.0)).astype(np.float64)).astype(f32))[None, :]
    up, down = (mel - left) / (centre - left), (right - mel) / (right - centre)
    return np.maximum(f32(0.0), np.minimum(up, down))


def ref_float32_fft(center_pad, power, n_fft, hop, n_mels, fmax, log):
    """The recipe of a preset whose own float32 run is no float32 FFT (tacotron2: a float32 DFT
    matrix product; librosa: numpy.fft, float64), with torch.stft's float32 FFT instead. The window
    is the recipe's, made in float64 (scipy / librosa get_window) and rounded once: torch's own
    float32 hann_window carries absolute errors of ~3e-8, relative errors of 1e-3 at its ends."""
    def run(y, f64):
        dt = torch.float64 if f64 else torch.float32
        x = torch.from_numpy(y).to(dt)
        window = torch.hann_window(n_fft, dtype=torch.float64).to(dt)
        spec = torch.stft(x, n_fft, hop, window=window, center=True, pad_mode=center_pad,
                          return_complex=True).abs() ** power
        mel = R.librosa_mel(22050, n_fft, n_mels, 0.0, fmax, dt) @ spec
        return log(mel).T.double().numpy()
    return run


def torch_dtype(recipe):
    """A recipe(y, torch dtype) -> (values, native) as recipe(y, float64: bool) -> values."""
    return lambda y, f64: recipe(y, torch.float64 if f64 else torch.float32)[0]


def numpy_dtype(recipe):
    return lambda y, f64: recipe(y, np.float64 if f64 else np.float32)[0]


def db(mel):
    return torch.from_numpy(librosa.power_to_db(mel.numpy(), ref=1.0, amin=1e-10, top_db=80.0))


# name: (preset, overrides, recipe(y, float64) -> [frames][mels] float64, float32 references (the
#        recipe's own float32 run first, then a float32-FFT run where the recipe's is none), band
#        amplitude from the truth, d(output)/d(relative amplitude error); None for the linear
#        output, whose error is relative)
CASES = {
    "hifigan": ("hifigan", {}, torch_dtype(R.ref_hifigan), [], np.exp, 1.0),
    "tacotron2": ("tacotron2", {}, torch_dtype(R.ref_tacotron2),
                  [ref_float32_fft("reflect", 1, 1024, 256, 80, 8000.0,
                                   lambda m: torch.log(torch.clamp(m, min=1e-5)))], np.exp, 1.0),
    "librosa": ("librosa", {}, numpy_dtype(R.ref_librosa),
                [ref_float32_fft("constant", 2, 2048, 512, 128, None, lambda m: m)], np.sqrt, None),
    "librosa-db": ("librosa", {"log": R.FC_LOG_DB}, numpy_dtype(lambda y, dt: R.ref_librosa(y, dt, db=True)),
                   [ref_float32_fft("constant", 2, 2048, 512, 128, None, db)],
                   lambda r: np.sqrt(10.0 ** (r / 10)), 20 / LN10),
    "whisper": ("whisper", {}, torch_dtype(R.ref_whisper), [],
                lambda r: np.sqrt(10.0 ** (4 * r - 4)), 2 / (4 * LN10)),
    "kaldi": ("kaldi", {}, torch_dtype(lambda y, dt: (ref_kaldi(y, dt), True)), [], lambda r: np.sqrt(np.exp(r)), 2.0),
}


def synth_speech(sr, seconds=3.0, seed=18):
    """Speech-like test audio: syllables of a glottal pulse train (f0 gliding 90-230 Hz, -12 dB per
    octave source tilt) through four formant resonators chosen per syllable (a, e, i, o, u), raised-
    cosine envelopes, fricatives (high-passed noise) and pauses with noise 70 dB down. Made in
    float64 with a fixed seed, returned as float32 at peak 0.5."""
    from scipy.signal import butter, lfilter
    rng = np.random.default_rng(seed)
    vowels = [(730, 1090, 2440, 3400), (530, 1840, 2480, 3500), (270, 2290, 3010, 3700),
              (570, 840, 2410, 3300), (300, 870, 2240, 3400)]
    n = int(sr * seconds)
    y = 1e-3 * 10 ** (-70 / 20) * rng.standard_normal(n)  # the pauses' floor
    pos = int(0.05 * sr)
    while pos < n:
        kind = rng.choice(["vowel", "vowel", "fricative", "pause"])
        length = int(sr * rng.uniform(0.06, 0.12 if kind != "vowel" else 0.3))
        length = min(length, n - pos)
        if length < 32:
            break
        t = np.arange(length) / sr
        if kind == "vowel":
            f0 = rng.uniform(90, 230) * (1 + 0.25 * (t / t[-1] - 0.5) * rng.uniform(-1, 1))
            phase = np.cumsum(f0 / sr)
            src = (np.diff(np.floor(phase), prepend=0.0) > 0).astype(np.float64)
            src = lfilter([1.0], [1.0, -1.9, 0.9025], src)  # two poles at 0.95: the source tilt
            seg = np.zeros(length)
            for i, f in enumerate(vowels[rng.integers(len(vowels))]):
                r = np.exp(-np.pi * (60 + 40 * i) / sr)
                th = 2 * np.pi * f / sr
                seg += lfilter([1 - r], [1, -2 * r * np.cos(th), r * r], src) / (1 + i)
            seg *= rng.uniform(0.2, 1.0)
        elif kind == "fricative":
            b, a = butter(4, min(3500, 0.4 * sr) / (sr / 2), btype="high")
            seg = 0.05 * rng.uniform(0.2, 1.0) * lfilter(b, a, rng.standard_normal(length))
        else:
            seg = np.zeros(length)
        env = np.sin(np.pi * np.arange(length) / length) ** 2
        y[pos:pos + length] += seg * env
        pos += length
    return (0.5 * y / np.abs(y).max()).astype(np.float32)


def espeak_speech():
    """espeak-ng speech generated now at 22050 Hz, and librosa's soxr_hq resampling to 16 kHz;
    None without espeak-ng."""
    if not shutil.which("espeak-ng"):
        return None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "speech.wav")
        subprocess.run(["espeak-ng", "-w", path, "Printing, in the only sense with which we are at "
                        "present concerned, differs from most arts."], check=True)
        y22, sr = soundfile.read(path, dtype="float32")
    assert sr == 22050, sr
    y16 = librosa.resample(y22, orig_sr=22050, target_sr=16000, res_type="soxr_hq")
    return {22050: y22.astype(np.float32), 16000: np.ascontiguousarray(y16, dtype=np.float32)}


rows = []


def measure(case, label, y):
    pname, over, recipe, fft32, to_amp, unit = CASES[case]
    plan = R.Plan(R.preset(pname, **over))
    rc, ours = plan.compute(y)
    truth = recipe(y, True)
    check(rc == 0 and ours.shape == truth.shape,
          f"{case}/{label}: fc_mel_compute rc {rc}, shape {ours.shape}, truth {truth.shape}")
    if rc != 0 or ours.shape != truth.shape:
        return
    refs = [recipe(y, False)] + [r(y, False) for r in fft32]
    # The kaldi truth multiplies by torchaudio's float32 banks, whose last bits at a few bins come
    # from this CPU's vectorised logf; featcache (and any portable build) rounds ln correctly.
    # That part of the truth is no precision of ours to hold: its effect is allowed, per element.
    allow = (np.abs(ref_kaldi(y, torch.float64, kaldi_banks_portable()) - truth)
             if case == "kaldi" else np.zeros_like(truth))
    amp = to_amp(truth)
    peak = amp.max(axis=1, keepdims=True)
    ratio = peak / np.where(amp > 0, amp, np.inf)  # loudest band's amplitude / this band's
    mask = (amp > 0) & (ratio <= 10 ** (WITHIN_DB / 20))
    scale = np.where(mask, truth, 1) if unit is None else 1.0  # linear power: relative error
    err = (np.abs(ours.astype(np.float64) - truth) / scale)[mask]
    errs32 = [(np.abs(r - truth) / scale)[mask] for r in refs]
    held = np.maximum(err - (allow / scale)[mask], 0.0)  # what is ours to hold
    rms = lambda e: float(np.sqrt(np.mean(e ** 2)))
    rms32, max32 = max(rms(e) for e in errs32), max(e.max() for e in errs32)
    check(err.max() <= TARGET_TOL,
          f"{case}/{label}: max error {err.max():.3g} > {TARGET_TOL} on bands within {WITHIN_DB:g} dB "
          f"of their frame's peak")
    check(rms(held) <= RMS_SPREAD * rms32,
          f"{case}/{label}: rms error {rms(held):.3g} worse than the float32 reference's {rms32:.3g}")
    check(held.max() <= MAX_SPREAD * max32,
          f"{case}/{label}: max error {held.max():.3g} more than {MAX_SPREAD:g} x the float32 "
          f"reference's {max32:.3g}")
    rows.append((case, label, err.max(), [e.max() for e in errs32], held.max() / max32,
                 rms(err), [rms(e) for e in errs32], rms(held) / rms32, err.size))


def check_kaldi_banks():
    """featcache's kaldi banks are get_mel_banks' float32 arithmetic, bit for bit (ln correctly
    rounded); torchaudio's own differ only where this CPU's logf is off by an ulp."""
    fb = R.Plan(R.preset("kaldi")).filterbank()
    want = kaldi_banks_portable()
    check(np.array_equal(fb[:, :256], want) and not fb[:, 256:].any(),
          f"kaldi banks differ from get_mel_banks' float32 arithmetic at "
          f"{int((fb[:, :256] != want).sum())} weights, by up to {np.abs(fb[:, :256] - want).max():.3g}")
    ta = torchaudio.compliance.kaldi.get_mel_banks(80, 512, 16000.0, 20.0, 0.0, 100.0, -500.0,
                                                    1.0)[0].numpy()
    diff = np.abs(ta - want)
    # One ulp of 1127 ln(1 + f/700) (< 2.5e-4 mel) over a band's half-width (~34 mel): < 1e-5.
    check(diff.max() < 1e-5, f"torchaudio's get_mel_banks differs from its float32 arithmetic by "
          f"{diff.max():.3g}: more than its logf's last bit can explain")
    print(f"kaldi banks: featcache = get_mel_banks' float32 arithmetic; torchaudio here differs at "
          f"{int((diff > 0).sum())} of {int((want > 0).sum())} weights, by up to {diff.max():.2e}")


def main():
    started = __import__("time").monotonic()
    signals = {sr: [("synthetic", synth_speech(sr))] for sr in (22050, 16000)}
    speech = espeak_speech()
    if speech:
        for sr in signals:
            signals[sr].append(("espeak-ng", speech[sr]))
    check_kaldi_banks()
    for case, (pname, *_rest) in CASES.items():
        sr = R.preset(pname).sample_rate
        for label, y in signals[sr]:
            measure(case, label, y)
    print(f"bands within {WITHIN_DB:g} dB of their frame's peak; error vs the float64 truth "
          f"(output units; relative for librosa power)")
    print(f"{'preset':11s} {'signal':10s} {'n':>6s} | max: {'featcache':>9s} {'f32 ref':>8s} "
          f"{'f32 FFT':>8s} {'ratio':>5s} | rms: {'featcache':>9s} {'f32 ref':>8s} {'f32 FFT':>8s} "
          f"{'ratio':>5s}")
    for case, label, mx, mx32, mratio, rm, rm32, rratio, n in rows:
        pad = lambda v: f"{v[1]:8.2e}" if len(v) > 1 else f"{'':8s}"
        print(f"{case:11s} {label:10s} {n:6d} |      {mx:9.2e} {mx32[0]:8.2e} {pad(mx32)} {mratio:5.2f} "
              f"|      {rm:9.2e} {rm32[0]:8.2e} {pad(rm32)} {rratio:5.2f}")
    print(f"({__import__('time').monotonic() - started:.1f} s)")
    if failures:
        print(f"test_mel_precision: {len(failures)} failure(s)")
        return 1
    if not speech:
        print("FAIL: espeak-ng not installed (scripts/setup installs it): the synthetic signals "
              "passed, the speech ones did not run")
        return 1
    print("test_mel_precision: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
