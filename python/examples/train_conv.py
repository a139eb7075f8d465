#!/usr/bin/env python3
"""Train a small convolutional model on fixed-length log-mel segments, with the step profiler on,
fed either from a featcache store or on the fly — and save a profile of each run to compare.

    # the cache: batches of 32 x 800 frames, random crops, delivered on the GPU ahead of time
    python train_conv.py --store cache/ --profile after.json
    # the same model and loop, mels computed on the fly with torch in 14 DataLoader workers
    python train_conv.py --on-the-fly data/wavs/ --workers 14 --profile before.json
    # the model alone, on random batches already on the device: its compute-only rate
    python train_conv.py --synthetic --profile compute.json
    loader-bench --compare-profiles before.json after.json

The device is CUDA when torch sees one (--device cuda|cpu forces it). Each step has the phases
"data" (waiting for the next batch), "h2d" (moving it to the device: nothing left to do when
featcache already delivered it there) and "compute" (forward, backward, optimizer step), timed on
the GPU with CUDA events when it runs there; GPU utilization is sampled through NVML while the
loop runs (where the NVIDIA driver is). The features on the fly are the hifigan preset's (jik876/
hifi-gan meldataset.py: 22.05 kHz, n_fft 1024, hop 256, reflect padding, magnitude, slaney mels
0-8000 Hz, ln(max(x, 1e-5))), so both runs train on the same numbers; WAVs are read with
soundfile, or the standard library's wave without it (no torchaudio.load: torchaudio 2.9+ hands
it to TorchCodec), and the mel filterbank is computed here.
"""
import argparse
import glob
import math
import os
import sys
import time

import torch

from featcache.profiler import StepProfiler

SR, N_FFT, HOP, N_MELS, FMAX = 22050, 1024, 256, 80, 8000.0
SILENCE = math.log(1e-5)  # ln of the hifigan log floor: the value of a silent (padded) frame


class ConvNet(torch.nn.Module):
    """A small 1-D conv stack over [B, n_mels, T] that reconstructs its input from a version with
    the middle band of frames masked (a toy self-supervised objective with a real cost profile)."""

    def __init__(self, n_mels=N_MELS, hidden=256, layers=4):
        super().__init__()
        mods, c = [], n_mels
        for _ in range(layers):
            mods += [torch.nn.Conv1d(c, hidden, 5, padding=2), torch.nn.GELU()]
            c = hidden
        mods.append(torch.nn.Conv1d(c, n_mels, 5, padding=2))
        self.net = torch.nn.Sequential(*mods)

    def forward(self, x):  # x: [B, T, n_mels]
        return self.net(x.transpose(1, 2)).transpose(1, 2)


# ---- on the fly: what users run today --------------------------------------------------------
def slaney_mel_fbanks(n_freqs, f_min, f_max, n_mels, sr):
    """[n_freqs, n_mels] triangles on the Slaney mel scale, Slaney-normalized (area 1): the
    filterbank of librosa.filters.mel(htk=False, norm="slaney") and hifi-gan's meldataset.py."""
    def hz_to_mel(f):
        f = torch.as_tensor(f, dtype=torch.float64)
        lin = f / (200.0 / 3)
        log = 15.0 + torch.log(torch.clamp(f, min=1e-10) / 1000.0) / (math.log(6.4) / 27.0)
        return torch.where(f >= 1000.0, log, lin)

    def mel_to_hz(m):
        lin = m * (200.0 / 3)
        log = 1000.0 * torch.exp((math.log(6.4) / 27.0) * (m - 15.0))
        return torch.where(m >= 15.0, log, lin)

    freqs = torch.linspace(0, sr / 2, n_freqs, dtype=torch.float64)
    pts = mel_to_hz(torch.linspace(float(hz_to_mel(f_min)), float(hz_to_mel(f_max)), n_mels + 2,
                                   dtype=torch.float64))
    lower = (freqs[:, None] - pts[None, :-2]) / (pts[1:-1] - pts[:-2])[None, :]
    upper = (pts[None, 2:] - freqs[:, None]) / (pts[2:] - pts[1:-1])[None, :]
    fb = torch.clamp(torch.minimum(lower, upper), min=0)
    return (fb * (2.0 / (pts[2:] - pts[:-2]))[None, :]).float()


def read_wav(path):
    """(float32 mono samples, sample rate): soundfile where it is installed (any format it
    reads), else the standard library's wave (16-bit PCM WAV) — no torchaudio/TorchCodec."""
    try:
        import soundfile as sf  # noqa: PLC0415
    except ImportError:
        sf = None
    if sf is not None:
        x, sr = sf.read(path, dtype="float32", always_2d=True)
        return torch.from_numpy(x.mean(1)), sr
    import wave  # noqa: PLC0415
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError("%s: not 16-bit PCM (install soundfile to read it)" % path)
        raw, ch, sr = w.readframes(w.getnframes()), w.getnchannels(), w.getframerate()
    x = torch.frombuffer(bytearray(raw), dtype=torch.int16).float() / 32768
    return x.view(-1, ch).mean(1), sr


class OnTheFlyMels:
    """hifigan log-mels of a WAV, computed with torch (the reference recipe)."""

    def __init__(self):
        self.fb = slaney_mel_fbanks(N_FFT // 2 + 1, 0.0, FMAX, N_MELS, SR)
        self.window = torch.hann_window(N_FFT)

    def __call__(self, path):
        w, sr = read_wav(path)
        if sr != SR:
            import torchaudio.functional as F  # noqa: PLC0415 - only for other rates
            w = F.resample(w, sr, SR)
        pad = (N_FFT - HOP) // 2
        w = torch.nn.functional.pad(w[None, None], (pad, pad), mode="reflect")[0, 0]
        spec = torch.stft(w, N_FFT, HOP, N_FFT, self.window, center=False, return_complex=True)
        mag = torch.sqrt(spec.real ** 2 + spec.imag ** 2 + 1e-9)  # [freq, frames]
        return torch.log(torch.clamp(self.fb.T @ mag, min=1e-5)).T.contiguous()  # [frames, 80]


class WavSegments(torch.utils.data.Dataset):
    """One random `frames`-long segment of each file's log-mels (padded with silence)."""

    def __init__(self, paths, frames, seed=0):
        self.paths, self.frames, self.seed, self.mel = paths, frames, seed, None

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        if self.mel is None:
            self.mel = OnTheFlyMels()  # per worker process
        m = self.mel(self.paths[i])
        n = m.shape[0]
        out = torch.full((self.frames, N_MELS), SILENCE)
        if n > self.frames:
            s = int(torch.randint(0, n - self.frames + 1, ()))
            m, n = m[s:s + self.frames], self.frames
        out[:n] = m
        return out, n


def wav_paths(src):
    if os.path.isdir(src):
        return sorted(glob.glob(os.path.join(src, "**", "*.wav"), recursive=True))
    with open(src) as f:  # a list of paths, one per line
        return [line.strip() for line in f if line.strip()]


def on_the_fly_batches(src, batch, frames, workers, pin):
    paths = wav_paths(src)
    if not paths:
        sys.exit("train_conv: %s: no WAV files" % src)
    ds = WavSegments(paths, frames)

    def collate(items):
        return torch.stack([m for m, _ in items]), torch.tensor([n for _, n in items])

    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True,
                                     num_workers=workers, collate_fn=collate, pin_memory=pin,
                                     persistent_workers=workers > 0)
    while True:
        for mels, lens in dl:
            yield mels, lens


# ---- the cache -------------------------------------------------------------------------------
def store_batches(store, batch, frames, device, pin):
    from featcache.torch import FeatcacheDataset  # noqa: PLC0415
    # fixed-length training: random 800-frame crops, shorter mels padded with the config's silence
    ds = FeatcacheDataset(store, batch_size=batch, shuffle=True, seed=0, pad_to=frames,
                          crop="random", drop_last=True, device=device,
                          pin_memory=pin and device.type == "cpu")
    epoch = 0
    while True:
        ds.set_epoch(epoch)
        n = 0
        for b in ds:  # no DataLoader needed: the loader's threads prefetch
            n += 1
            yield b["mels"], b["mel_lengths"]
        if n == 0:
            sys.exit("train_conv: %s: fewer utterances than one batch" % store)
        epoch += 1


def synthetic_batches(batch, frames, device):
    x = torch.randn(batch, frames, N_MELS, device=device)
    lens = torch.full((batch,), frames, device=device)
    while True:
        yield x, lens


def cpu_seconds():
    """User + system CPU seconds of this process, its reaped children and its live ones (the
    DataLoader workers), from /proc where it exists."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    me, hz = os.getpid(), os.sysconf("SC_CLK_TCK")
    try:
        pids = os.listdir("/proc")
    except OSError:
        return total
    for p in pids:
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(st[1]) == me:  # ppid: a live worker
            total += (int(st[11]) + int(st[12])) / hz  # utime, stime
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--store", help="a featcache store")
    src.add_argument("--on-the-fly", metavar="SRC", help="a directory of WAVs (or a list of paths)")
    src.add_argument("--synthetic", action="store_true", help="random batches already on the device")
    ap.add_argument("--device", default="auto", help="auto (cuda when available), cuda, cuda:N, cpu")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--frames", type=int, default=800, help="segment length in frames")
    ap.add_argument("--steps", type=int, default=200, help="measured steps")
    ap.add_argument("--warmup", type=int, default=10, help="steps run before measuring")
    ap.add_argument("--workers", type=int, default=7, help="DataLoader workers (--on-the-fly)")
    ap.add_argument("--feed", choices=("device", "pinned"), default="device",
                    help="--store on CUDA: batches delivered on the GPU (device), or in pinned "
                    "host memory moved by the loop's own .to(device, non_blocking=True)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4, help="hidden conv layers (fewer: a shorter step)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--profile", metavar="FILE", help="save the JSON profile of the run")
    ap.add_argument("--trace", metavar="FILE", help="save a Chrome trace (Perfetto)")
    ap.add_argument("--label", help="the run's label in the profile")
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = a.device
    if dev == "auto":
        dev = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(dev)
    cuda = device.type == "cuda"
    torch.manual_seed(0)

    if a.store:
        feed = device if a.feed == "device" else torch.device("cpu")
        batches = store_batches(a.store, a.batch, a.frames, feed, pin=cuda)
        label = a.label or ("featcache, device=%s" % dev if a.feed == "device" or not cuda
                            else "featcache, pinned, .to(%s) in the loop" % dev)
    elif a.on_the_fly:
        batches = on_the_fly_batches(a.on_the_fly, a.batch, a.frames, a.workers, pin=cuda)
        label = a.label or "on the fly, %d workers, device=%s" % (a.workers, dev)
    else:
        batches = synthetic_batches(a.batch, a.frames, device)
        label = a.label or "synthetic batches on the device, device=%s" % dev

    model = ConvNet(hidden=a.hidden, layers=a.layers).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lo, hi = a.frames * 3 // 8, a.frames * 5 // 8  # the masked band

    def step(mels, lens):
        with prof.phase("h2d"):
            x = mels.to(device, non_blocking=True)
            n = lens.to(device, non_blocking=True)
        with prof.phase("compute", cuda=cuda):
            valid = (torch.arange(x.shape[1], device=device)[None, :] < n[:, None]).float()
            inp = x.clone()
            inp[:, lo:hi] = SILENCE
            err = (model(inp) - x) ** 2 * valid[:, :, None]
            loss = err.sum() / (valid.sum() * x.shape[2]).clamp(min=1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return loss

    # warm-up: workers start, cuDNN picks its kernels, the cache's prefetch fills (not measured)
    prof = StepProfiler(label=label, items_per_step=a.batch)
    it = iter(batches)
    for _ in range(a.warmup):
        with prof.step():
            step(*next(it))
    prof = StepProfiler(label=label, items_per_step=a.batch, gpu_busy=cuda, trace=bool(a.trace))
    if not cuda:
        prof.gpu_not_measured("the run is on the CPU")
    t0, c0 = time.perf_counter(), cpu_seconds()
    for k, (mels, lens) in enumerate(prof.iterate(it)):  # fetching a batch = the data phase
        if k == a.steps:  # a step ends when the next batch is asked for: stop here
            break
        loss = step(mels, lens)
    wall = time.perf_counter() - t0
    cores = (cpu_seconds() - c0) / wall
    last = float(loss)
    prof.stop_gpu_sampler()
    print(prof.report(), end="")
    share, verdict = prof.verdict()
    print("%s: %d steps in %.2f s, %.1f utterances/s, last loss %.4f, %.2f CPU cores used" %
          (label, prof.steps, wall, prof.steps * a.batch / wall, last, cores))
    if a.profile:
        prof.save(a.profile)
    if a.trace:
        prof.save_trace(a.trace)
    if not math.isfinite(last):
        sys.exit("train_conv: the loss is not finite")
    return 0


if __name__ == "__main__":
    sys.exit(main())
