"""A corpus of speech-like WAVs for the featurize benchmarks (scripts/bench-gpu, scripts/bench-host).

make(corpus, hours) writes at least `hours` of 22.05 kHz 16-bit mono WAVs of 2-12 s each into the
directory `corpus` (voiced segments with formants and pauses, numpy + scipy; every file distinct
bytes, so nothing is deduplicated by content), with `corpus/list` (one path a line) and
`corpus/hours`. A corpus already there for the same hours is reused. Returns the list of paths.
"""
import multiprocessing as mp
import os
import time

import numpy as np

SR = 22050


def base_utterance(seed, seconds=12.0):
    from scipy.signal import lfilter
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    out = np.zeros(n)
    pos = 0
    while pos < n:
        seg = min(n - pos, int(rng.uniform(0.15, 0.6) * SR))
        f0 = rng.uniform(90, 220) * (1 + 0.1 * np.sin(np.linspace(0, 3, seg)))
        src = (np.diff(np.floor(np.cumsum(f0 / SR)), prepend=0) > 0).astype(float)
        x = src + 0.02 * rng.standard_normal(seg)
        for fc, bw in ((rng.uniform(300, 900), 80), (rng.uniform(900, 2500), 120), (2900, 200)):
            r = np.exp(-np.pi * bw / SR)
            x = lfilter([1.0], [1.0, -2 * r * np.cos(2 * np.pi * fc / SR), r * r], x)
            x = x / (np.abs(x).max() + 1e-9)
        out[pos:pos + seg] = x * np.hanning(seg) * 0.6
        pos += seg + int(rng.uniform(0.05, 0.2) * SR)
    return (out * 20000).astype(np.int16)


def _write_files(args):
    from scipy.io import wavfile
    corpus, bases, lo, lens = args
    rng = np.random.default_rng(lo)
    names, secs = [], 0.0
    for i, n in enumerate(lens, lo):
        b = bases[i % len(bases)]
        start = int(rng.integers(0, len(b) - n + 1))
        x = b[start:start + n].copy()
        x[:64] += rng.integers(-2, 3, 64).astype(np.int16)  # distinct bytes: nothing dedups
        x[0] = np.int16(i % 30000)
        name = os.path.join(corpus, f"u{i:07d}.wav")
        wavfile.write(name, SR, x)
        names.append(name)
        secs += n / SR
    return names, secs


def make(corpus, hours, say=print, ncpu=None):
    listing, stamp = os.path.join(corpus, "list"), os.path.join(corpus, "hours")
    os.makedirs(corpus, exist_ok=True)
    if os.path.exists(listing) and os.path.exists(stamp) and float(open(stamp).read()) == hours:
        return open(listing).read().split()
    say(f"making {hours} h of speech-like audio in {corpus}")
    t0 = time.time()
    for f in os.listdir(corpus):
        os.unlink(os.path.join(corpus, f))
    bases = [base_utterance(s) for s in range(64)]
    rng = np.random.default_rng(11)
    lens, total = [], 0
    while total < hours * 3600 * SR:  # 2-12 s each until the corpus holds at least H hours
        lens.append(int(rng.uniform(2, 12) * SR))
        total += lens[-1]
    ncpu = ncpu or os.cpu_count() or 1
    step = max(100, min(2000, len(lens) // (4 * ncpu) + 1))
    with mp.Pool(ncpu) as pool:
        parts = pool.map(_write_files,
                         [(corpus, bases, lo, lens[lo:lo + step]) for lo in range(0, len(lens), step)])
    names = [n for p in parts for n in p[0]]
    with open(listing, "w") as f:
        f.writelines(n + "\n" for n in names)
    open(stamp, "w").write(str(hours))
    say(f"{len(names)} files, {sum(p[1] for p in parts) / 3600:.1f} h in {time.time() - t0:.0f} s")
    return names
