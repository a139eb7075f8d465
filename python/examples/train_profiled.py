#!/usr/bin/env python3
"""A tiny PyTorch training loop on the CPU, profiled with featcache's StepProfiler.

    python train_profiled.py STORE            # batches from a featcache store (featcache.Loader)
    python train_profiled.py --on-the-fly DIR # the baseline: a DataLoader decoding WAVs of DIR and
                                              # computing hifigan-like mels with torchaudio
    python train_profiled.py                  # no data at hand: random mels (synthetic)

Each step: "data" (the next batch), "h2d" (numpy → torch tensor, .to(device)), and "compute" with
"forward", "backward" and "optimizer" nested in it (nested phases are not counted twice). At the
end: the profiler's table and verdict, and --trace FILE writes a Chrome trace for Perfetto.
"""
import argparse
import glob
import os
import sys

import numpy as np
import torch

from featcache.profiler import StepProfiler


class TinyModel(torch.nn.Module):
    """mels [B, T, 80] → a per-frame prediction of the next frame (a toy objective)."""

    def __init__(self, n_mels=80, hidden=128):
        super().__init__()
        self.conv = torch.nn.Conv1d(n_mels, hidden, 5, padding=2)
        self.out = torch.nn.Conv1d(hidden, n_mels, 5, padding=2)

    def forward(self, x):  # x: [B, T, n_mels]
        h = torch.relu(self.conv(x.transpose(1, 2)))
        return self.out(h).transpose(1, 2)


def store_batches(store, batch_size):
    import featcache
    loader = featcache.Loader(store, batch_size=batch_size, shuffle=True, padded=True)
    while True:
        for b in loader:
            yield b.mels  # [B, T, n_mels] float32, filled straight from the map


def on_the_fly_batches(wav_dir, batch_size, workers):
    import torchaudio

    paths = sorted(glob.glob(os.path.join(wav_dir, "*.wav")))
    mel = torchaudio.transforms.MelSpectrogram(sample_rate=22050, n_fft=1024, hop_length=256,
                                               n_mels=80, f_min=0, f_max=8000, norm="slaney",
                                               mel_scale="slaney")

    class Wavs(torch.utils.data.Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, i):
            w, sr = torchaudio.load(paths[i])
            return torch.log(torch.clamp(mel(w.mean(0)), min=1e-5)).T  # [T, 80]

    def collate(items):
        return torch.nn.utils.rnn.pad_sequence(items, batch_first=True)

    dl = torch.utils.data.DataLoader(Wavs(), batch_size=batch_size, shuffle=True,
                                     num_workers=workers, collate_fn=collate)
    while True:
        yield from dl


def synthetic_batches(batch_size, frames=400, n_mels=80):
    rng = np.random.default_rng(0)
    while True:
        yield rng.standard_normal((batch_size, frames, n_mels), dtype=np.float32)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", nargs="?", help="a featcache store (else synthetic data)")
    ap.add_argument("--on-the-fly", metavar="DIR", help="decode the WAVs of DIR on the fly")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--trace", metavar="FILE", help="write a Chrome trace (Perfetto)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device("cpu")

    if args.on_the_fly:
        batches = on_the_fly_batches(args.on_the_fly, args.batch, args.workers)
    elif args.store:
        batches = store_batches(args.store, args.batch)
    else:
        batches = synthetic_batches(args.batch)

    model = TinyModel().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    prof = StepProfiler()
    for step, mels in enumerate(prof.iterate(batches)):  # fetching a batch = phase "data"
        if step == args.steps:  # a step ends when the next batch is asked for: stop here
            break
        with prof.phase("h2d"):
            x = torch.as_tensor(np.asarray(mels) if not torch.is_tensor(mels) else mels)
            x = x.to(device, non_blocking=True)
        with prof.phase("compute"):
            with prof.phase("forward"):
                loss = torch.nn.functional.mse_loss(model(x[:, :-1]), x[:, 1:])
            with prof.phase("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with prof.phase("optimizer"):
                opt.step()
    if args.json:
        import json
        print(json.dumps(prof.json(), indent=1))
    else:
        print(prof.report(), end="")
    if args.trace:
        prof.save_trace(args.trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
