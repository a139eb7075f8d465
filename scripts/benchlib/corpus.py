"""Corpora the benchmarks make. Each is deterministic given its seed — file i is the same file
whenever it is made — is made once in a work directory and reused there (extended when more is
asked for, remade when its parameters change), and comes back as a Corpus: the paths, the seconds
of audio, the directory's `list` (one path a line).

  speech(d, minutes)            espeak-ng sentences, 22.05 kHz 16-bit mono, in the LJSpeech layout:
                                d/wavs/ID.wav and d/metadata.csv (ID|text|text)
  signals(d, kind, minutes)     white noise, digital silence or steady tones (float32 WAVs)
  tones(d, n, seconds)          a steady tone and a little noise per file (16-bit)
  looped_speech(d, n, seconds)  an espeak-ng sentence per file looped to about SECONDS (16-bit)
  voiced(d, n, samples)         harmonics under formant bumps, with pauses (16-bit; numpy only)
  speech_like(d, hours)         voiced segments with formants and pauses, 2-12 s each (16-bit;
                                numpy + scipy, no espeak-ng), every file distinct bytes
  short_utterances(d, n)        N files of 0.3-1.0 s (tone over noise, 16-bit), LJSpeech layout,
                                for 10k-1M files (numpy only)
  mel_store(store, n)           no audio: a store of n hifigan mel records written by the py-lmdb
                                fixture writer of tests/reference (test_verify_store.py make)

A corpus asks for at least M minutes: it is the first files that reach them, so the same M gives
the same files whatever a work directory already holds. d/corpus.json keeps the parameters and
each file's seconds.
"""

import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import wave
from concurrent.futures import ThreadPoolExecutor

from .build import ROOT, die, python, say as _say

SR = 22050

# The vocabulary of the espeak-ng sentences (bench-codec, bench-featurize, bench-mel-ab).
WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at "
         "which but have an they you were her she there been one all we their has would when if "
         "printing press history book letter type paper ink century art craft early first made "
         "same form old new good great small large long short light dark water house voice "
         "morning evening river mountain city village garden window station journey question "
         "answer number people children teacher library museum machine engine railway").split()
# bench-loaderbench's: sentences about the printing press, as LJSpeech's first books.
PRESS_WORDS = ("the printing press changed how books were made and read across the whole of europe "
               "within a few decades of its invention while scribes kept copying manuscripts by "
               "hand for wealthy patrons who preferred the old style of writing on parchment and "
               "vellum").split()


class Corpus:
    """paths (in order), seconds (their total), dir, list (a file of the paths, one a line),
    manifest (d/metadata.csv, LJSpeech: speech only), ids and texts (speech only)."""

    def __init__(self, d, paths, seconds, ids=None, texts=None):
        self.dir, self.paths, self.seconds = d, paths, seconds
        self.ids, self.texts = ids, texts
        self.list = os.path.join(d, "list")
        self.manifest = os.path.join(d, "metadata.csv") if texts is not None else None
        with open(self.list, "w") as f:
            f.writelines(p + "\n" for p in paths)
        if texts is not None:
            with open(self.manifest, "w") as f:
                f.writelines(f"{i}|{t}|{t}\n" for i, t in zip(ids, texts))

    @property
    def minutes(self):
        return self.seconds / 60

    def __len__(self):
        return len(self.paths)


class _Stamp:
    """d/corpus.json: the parameters a corpus was made with and its files; files of other
    parameters are removed."""

    def __init__(self, d, params):
        self.d, self.path = d, os.path.join(d, "corpus.json")
        self.params = json.loads(json.dumps(params))  # tuples as lists, as read back
        self.files = []
        os.makedirs(d, exist_ok=True)
        try:
            with open(self.path) as f:
                old = json.load(f)
        except (OSError, ValueError):
            return
        if old.get("params") == self.params:
            self.files = old["files"]
            return
        for e in old.get("files", []):
            try:
                os.unlink(os.path.join(d, e["name"]))
            except OSError:
                pass

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"params": self.params, "files": self.files}, f)
        os.replace(tmp, self.path)

    def have(self, i):
        """File i is listed and on disk."""
        return i < len(self.files) and os.path.exists(os.path.join(self.d, self.files[i]["name"]))


def _first(files, seconds):
    """The first files that hold at least SECONDS of audio."""
    out, total = [], 0.0
    for e in files:
        if total >= seconds:
            break
        out.append(e)
        total += e["seconds"]
    return out, total


def wav_seconds(path):
    """Duration of a PCM WAV (the standard library's wave)."""
    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


def write_wav(path, x, sr=SR, float32=False):
    """Mono WAV of float samples: 16-bit PCM of x clipped to [-1, 1] (the standard library's wave),
    or float32 as they are (WAVE_FORMAT_IEEE_FLOAT). Written to a temporary name and renamed, so a
    killed run never leaves half a file that a later run takes as made."""
    import numpy as np
    tmp = path + ".tmp"
    if float32:
        data = np.asarray(x, "<f4").tobytes()
        fmt = struct.pack("<HHIIHHH", 3, 1, sr, sr * 4, 4, 32, 0)
        body = (b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
                + b"fact" + struct.pack("<II", 4, len(data) // 4)
                + b"data" + struct.pack("<I", len(data)) + data)
        with open(tmp, "wb") as f:
            f.write(b"RIFF" + struct.pack("<I", len(body)) + body)
    else:
        pcm = (np.clip(np.asarray(x, np.float64), -1, 1) * 32767).round().astype("<i2")
        with wave.open(tmp, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(sr)
            w.writeframes(pcm.tobytes())
    os.replace(tmp, path)


def speech(d, minutes, seed=1, words=WORDS, n_words=(12, 40), rate=(140, 190), prefix="s",
           capitalize=False, say=_say):
    """At least MINUTES of espeak-ng sentences in d/wavs: sentence i is N_WORDS (a range) words
    drawn from WORDS by random.Random(SEED), spoken at a rate drawn from RATE words per minute
    (None: espeak-ng's default, no draw); ids PREFIX00000, PREFIX00001, ..."""
    espeak = shutil.which("espeak-ng") or die("espeak-ng not installed (scripts/setup)")
    version = subprocess.run([espeak, "--version"], capture_output=True,
                             text=True).stdout.split(" Data")[0].strip()
    params = {"kind": "espeak-ng speech", "seed": seed,
              "words": hashlib.sha1(" ".join(words).encode()).hexdigest()[:16],
              "n_words": n_words, "rate": rate, "prefix": prefix, "capitalize": capitalize,
              "espeak": version}
    stamp = _Stamp(d, params)
    os.makedirs(os.path.join(d, "wavs"), exist_ok=True)
    rng = random.Random(seed)

    def sentence():
        text = " ".join(rng.choice(words) for _ in range(rng.randint(*n_words)))
        text = (text.capitalize() if capitalize else text) + "."
        return text, (rng.randint(*rate) if rate else None)

    def make(e):
        path = os.path.join(d, e["name"])
        args = [espeak] + (["-s", str(e["rate"])] if e["rate"] else [])
        subprocess.run(args + ["-w", path + ".tmp", e["text"]], check=True)
        os.replace(path + ".tmp", path)
        e["seconds"] = wav_seconds(path)

    files, todo = [], []
    for i in range(len(stamp.files)):  # the cached ones: the same draws, so the same sentences
        text, r = sentence()
        e = stamp.files[i]
        if (e["text"], e["rate"]) != (text, r):
            break
        files.append(e)
        if not stamp.have(i):
            todo.append(e)
    total = sum(e["seconds"] for e in files)
    ncpu = os.cpu_count() or 1
    if total < minutes * 60 or todo:
        say(f"making {minutes:g} min of espeak-ng speech in {d}")
    with ThreadPoolExecutor(ncpu) as ex:
        list(ex.map(make, todo))
        while total < minutes * 60:  # a few at a time, one espeak-ng per core
            batch = []
            for _ in range(ncpu):
                text, r = sentence()
                batch.append({"name": f"wavs/{prefix}{len(files) + len(batch):05d}.wav",
                              "text": text, "rate": r})
            list(ex.map(make, batch))
            files += batch
            total += sum(e["seconds"] for e in batch)
            stamp.files = files
            stamp.save()
    stamp.files = files
    stamp.save()
    chosen, seconds = _first(files, minutes * 60)
    return Corpus(d, [os.path.join(d, e["name"]) for e in chosen], seconds,
                  ids=[os.path.basename(e["name"])[:-4] for e in chosen],
                  texts=[e["text"] for e in chosen])


def signals(d, kind, minutes=10, secs=10, seed=7):
    """MINUTES of float32 WAVs of about SECS s each: `noise` (white, 0.3 peak), `silence` (zeros) or
    `tones` (two or three steady sines per file, 80-7000 Hz); file i is 100 i samples longer than
    SECS, so no two are identical (identical files would be stored once)."""
    import numpy as np
    if kind not in ("noise", "silence", "tones"):
        raise ValueError(kind)
    stamp = _Stamp(d, {"kind": kind, "seed": seed, "minutes": minutes, "secs": secs, "sr": SR})
    rng = np.random.default_rng(seed)
    files = []
    for i in range(int(minutes * 60 / secs)):
        n = secs * SR + 100 * i
        draw = (rng.uniform(-1, 1, n) if kind == "noise"
                else rng.uniform(80, 7000, 3) if kind == "tones" else None)
        e = {"name": f"{kind}{i:03d}.wav", "seconds": n / SR}
        if not stamp.have(i):
            t = np.arange(n) / SR
            if kind == "noise":
                x = 0.3 * draw
            elif kind == "silence":
                x = np.zeros(n)
            else:
                x = sum(0.25 * np.sin(2 * np.pi * f * t) for f in draw[: 2 + i % 2])
            write_wav(os.path.join(d, e["name"]), x, float32=True)
        files.append(e)
    stamp.files = files
    stamp.save()
    return Corpus(d, [os.path.join(d, e["name"]) for e in files], sum(e["seconds"] for e in files))


def tones(d, n, seconds, seed=3, freq=(100, 3000)):
    """N 16-bit WAVs of SECONDS s: a sine of a frequency drawn from FREQ (0.3 peak) plus white
    noise (0.05 standard deviation)."""
    import numpy as np
    stamp = _Stamp(d, {"kind": "tones", "seed": seed, "n": n, "seconds": seconds, "freq": freq,
                       "sr": SR})
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    files = []
    for i in range(n):
        f, noise = rng.uniform(*freq), rng.standard_normal(t.size)
        e = {"name": f"u{i:05d}.wav", "seconds": t.size / SR}
        if not stamp.have(i):
            write_wav(os.path.join(d, e["name"]), 0.3 * np.sin(2 * np.pi * f * t) + 0.05 * noise)
        files.append(e)
    stamp.files = files
    stamp.save()
    return Corpus(d, [os.path.join(d, e["name"]) for e in files], sum(e["seconds"] for e in files))


def looped_speech(d, n, seconds, seed=0, say=_say):
    """N 16-bit WAVs utt00.wav, utt01.wav, ... of SECONDS x 0.9-1.1 (drawn from SEED) each: an
    espeak-ng sentence naming the file's number, looped to that length; a sine (110 + 5 i Hz) and
    noise where espeak-ng is not installed (said, and a corpus of its own)."""
    import numpy as np
    espeak = shutil.which("espeak-ng")
    version = subprocess.run([espeak, "--version"], capture_output=True,
                             text=True).stdout.split(" Data")[0].strip() if espeak else None
    if not espeak:
        say("espeak-ng not installed: the utterances are tones and noise")
    stamp = _Stamp(d, {"kind": "looped speech", "n": n, "seconds": seconds, "seed": seed,
                       "espeak": version, "sr": SR})
    rng = np.random.default_rng(seed)
    files = []
    for i in range(n):
        want = int(SR * seconds * (0.9 + 0.2 * rng.random()))
        noise = None if espeak else rng.standard_normal(want)
        e = {"name": "utt%02d.wav" % i, "seconds": want / SR}
        path = os.path.join(d, e["name"])
        if not stamp.have(i):
            if espeak:
                tmp = path + ".say.wav"
                subprocess.run([espeak, "-w", tmp, "Sentence number %d of the benchmark, read "
                                "aloud by a synthetic voice for timing." % i], check=True)
                with wave.open(tmp) as w:
                    y = np.frombuffer(w.readframes(w.getnframes()), "<i2") / np.float32(32768)
                os.unlink(tmp)
                x = np.resize(y, want)  # the speech looped to the length
            else:
                t = np.arange(want) / SR
                x = 0.3 * np.sin(2 * np.pi * (110 + 5 * i) * t) + 0.05 * noise
            write_wav(path, x)
        files.append(e)
    stamp.files = files
    stamp.save()
    return Corpus(d, [os.path.join(d, e["name"]) for e in files], sum(e["seconds"] for e in files))


def _voiced_utterance(n, rng):
    """Voiced segments (f0 90-220 Hz, harmonics under three formant bumps) with pauses."""
    import numpy as np
    out = np.zeros(n)
    pos = 0
    while pos < n:
        seg = min(n - pos, int(rng.uniform(0.2, 0.7) * SR))
        t = np.arange(seg) / SR
        f0 = rng.uniform(90, 220)
        x = np.zeros(seg)
        for k in range(1, 30):
            f = k * f0
            if f > SR / 2:
                break
            amp = sum(np.exp(-((f - fc) / bw) ** 2) for fc, bw in ((500, 200), (1500, 300),
                                                                  (2500, 400))) / k
            x += amp * np.sin(2 * np.pi * f * t + rng.uniform(0, 6.3))
        x *= np.hanning(seg)
        out[pos:pos + seg] = 0.3 * x / (np.max(np.abs(x)) + 1e-9)
        pos += seg + int(rng.uniform(0.05, 0.2) * SR)
    return out + 0.003 * rng.standard_normal(n)


def voiced(d, n, samples, spread=(0.75, 1.5), seed=0):
    """N 16-bit WAVs in d/wavs (nothing else there) of SAMPLES x a factor drawn from SPREAD each:
    voiced segments (harmonics of an f0 under three formant bumps) with pauses and a little noise
    (numpy only). One generator draws the lengths and the audio in turn, so a missing file
    remakes them all."""
    import numpy as np
    stamp = _Stamp(d, {"kind": "voiced", "n": n, "samples": samples, "spread": spread,
                       "seed": seed, "sr": SR})
    os.makedirs(os.path.join(d, "wavs"), exist_ok=True)
    if len(stamp.files) != n or not all(stamp.have(i) for i in range(n)):
        rng = np.random.default_rng(seed)
        stamp.files = []
        for i in range(n):
            ns = int(samples * rng.uniform(*spread))
            e = {"name": "wavs/u%04d.wav" % i, "seconds": ns / SR}
            write_wav(os.path.join(d, e["name"]), _voiced_utterance(ns, rng))
            stamp.files.append(e)
        stamp.save()
    files = stamp.files
    return Corpus(d, [os.path.join(d, e["name"]) for e in files], sum(e["seconds"] for e in files))


# ---- many short utterances (bench-scale: 10k to 1M files) --------------------------------------
SHORT_BLOCK = 10000  # files drawn per generator: file i depends on SEED and i // SHORT_BLOCK only


def _short_block(seed, b):
    """Block b of short_utterances: (lengths, noise offsets, tone frequencies, texts)."""
    import numpy as np
    rng = np.random.default_rng([seed, b])
    n = SHORT_BLOCK
    lens = rng.integers(int(0.3 * SR), SR + 1, n)
    offs = rng.integers(0, 60 * SR - SR, n)
    freqs = rng.uniform(90, 3000, n)
    counts = rng.integers(6, 16, n)
    picks = rng.integers(0, len(WORDS), int(counts.sum()))
    texts, k = [], 0
    for i in range(n):
        words = [WORDS[j] for j in picks[k:k + counts[i]]]
        k += counts[i]
        texts.append(" ".join(words).capitalize() + ", %d." % (b * n + i))
    return lens, offs, freqs, texts


def short_utterances(d, n, seed=11, say=_say):
    """N short utterances in the LJSpeech layout: d/wavs/S0000000.wav... (0.3-1.0 s, 22.05 kHz
    16-bit mono: a tone of 90-3000 Hz over a slice of one minute of noise; the first sample is the
    file's number, so every file's bytes differ) and d/metadata.csv (ID|text|text, 6-15 words and
    the number: ~60-100 characters). For 10k to 1M files: written with a bare 44-byte header (no
    wave module), the stamp keeps the count made, not each file; a larger N extends a smaller one
    (the same first files)."""
    import time
    import numpy as np
    params = {"kind": "short utterances", "seed": seed, "sr": SR, "block": SHORT_BLOCK}
    stamp = os.path.join(d, "corpus.json")
    wavs = os.path.join(d, "wavs")
    made = 0
    try:
        with open(stamp) as f:
            old = json.load(f)
        if old.get("params") == params:
            made = old["made"]
    except (OSError, ValueError, KeyError):
        pass
    if made == 0 and os.path.isdir(wavs):
        shutil.rmtree(wavs)
    os.makedirs(wavs, exist_ok=True)
    noise = (np.random.default_rng(seed).standard_normal(60 * SR) * 900).astype(np.int32)
    t = np.arange(SR) / SR
    ids, texts, paths, seconds = [], [], [], 0.0
    t0 = time.time()
    if made < n:
        say(f"making short utterances {made} to {n} in {wavs}")
    for b in range((n + SHORT_BLOCK - 1) // SHORT_BLOCK):
        lens, offs, freqs, btexts = _short_block(seed, b)
        for i in range(min(SHORT_BLOCK, n - b * SHORT_BLOCK)):
            k = b * SHORT_BLOCK + i
            uid = "S%07d" % k
            path = os.path.join(wavs, uid + ".wav")
            m = int(lens[i])
            if k >= made:
                x = noise[offs[i]:offs[i] + m].copy()
                x += (np.sin(2 * np.pi * freqs[i] * t[:m]) * 6000).astype(np.int32)
                x[0] = k & 0x7FFF
                data = np.clip(x, -32768, 32767).astype("<i2").tobytes()
                hdr = (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " +
                       struct.pack("<IHHIIHH", 16, 1, 1, SR, 2 * SR, 2, 16) + b"data" +
                       struct.pack("<I", len(data)))
                with open(path, "wb") as f:
                    f.write(hdr + data)
            ids.append(uid)
            texts.append(btexts[i])
            paths.append(path)
            seconds += m / SR
        if made < n and b * SHORT_BLOCK + SHORT_BLOCK > made:  # a block at a time: resumable
            with open(stamp + ".tmp", "w") as f:
                json.dump({"params": params, "made": max(made, min(n, (b + 1) * SHORT_BLOCK))}, f)
            os.replace(stamp + ".tmp", stamp)
    if made < n:
        say(f"{n - made} files in {time.time() - t0:.0f} s")
    return Corpus(d, paths, seconds, ids, texts)


# ---- speech-like audio without espeak-ng (the featurize-on-a-GPU benchmarks' 40 h) --------------
def _base_utterance(seed, seconds=12.0):
    import numpy as np
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


def _write_speech_like(args):
    import numpy as np
    from scipy.io import wavfile
    d, bases, lo, lens = args
    rng = np.random.default_rng(lo)
    names = []
    for i, n in enumerate(lens, lo):
        b = bases[i % len(bases)]
        start = int(rng.integers(0, len(b) - n + 1))
        x = b[start:start + n].copy()
        x[:64] += rng.integers(-2, 3, 64).astype(np.int16)  # distinct bytes: nothing dedups
        x[0] = np.int16(i % 30000)
        name = f"u{i:07d}.wav"
        wavfile.write(os.path.join(d, name), SR, x)
        names.append({"name": name, "seconds": n / SR})
    return names


def speech_like(d, hours, say=_say, ncpu=None):
    """At least HOURS of speech-like 16-bit WAVs of 2-12 s in d itself (cut from 64 synthetic
    12 s utterances: voiced segments, three formants, pauses), made by NCPU processes."""
    import multiprocessing as mp
    import time
    import numpy as np
    stamp = _Stamp(d, {"kind": "speech-like", "hours": hours, "sr": SR})
    if stamp.files and all(stamp.have(i) for i in range(len(stamp.files))):
        files = stamp.files
    else:
        say(f"making {hours} h of speech-like audio in {d}")
        t0 = time.time()
        for f in os.listdir(d):
            if f.endswith(".wav"):
                os.unlink(os.path.join(d, f))
        bases = [_base_utterance(s) for s in range(64)]
        rng = np.random.default_rng(11)
        lens, total = [], 0
        while total < hours * 3600 * SR:  # 2-12 s each until the corpus holds at least H hours
            lens.append(int(rng.uniform(2, 12) * SR))
            total += lens[-1]
        ncpu = ncpu or os.cpu_count() or 1
        step = max(100, min(2000, len(lens) // (4 * ncpu) + 1))
        with mp.Pool(ncpu) as pool:
            parts = pool.map(_write_speech_like,
                             [(d, bases, lo, lens[lo:lo + step])
                              for lo in range(0, len(lens), step)])
        files = [e for p in parts for e in p]
        stamp.files = files
        stamp.save()
        say(f"{len(files)} files, {sum(e['seconds'] for e in files) / 3600:.1f} h "
            f"in {time.time() - t0:.0f} s")
    return Corpus(d, [os.path.join(d, e["name"]) for e in files], sum(e["seconds"] for e in files))


def mel_store(store, n, min_samples=118000, max_samples=124000, tokens=False, lib=None,
              say=_say):
    """A store of N hifigan f32 mel records of audio lengths drawn from [MIN_SAMPLES, MAX_SAMPLES]
    (~5.5 s: ~150 KB each), with text entries and token records when TOKENS, written by
    tests/reference/test_verify_store.py (py-lmdb, independent of the C store) through LIB (the
    library that gives it the config and frame counts). Reused while n and the rest match
    (store + '.json'). Returns the seconds it took to write, 0 when reused."""
    import time
    params = {"kind": "mel records", "n": n, "min_samples": min_samples,
              "max_samples": max_samples, "tokens": tokens}
    stamp = store.rstrip("/") + ".json"
    try:
        with open(stamp) as f:
            if json.load(f) == params and os.path.exists(os.path.join(store, "data.mdb")):
                return 0.0
    except (OSError, ValueError):
        pass
    shutil.rmtree(store, ignore_errors=True)
    env = dict(os.environ)
    if lib:
        env["FEATCACHE_LIBRARY"] = lib
    say(f"writing {n} mel records into {store}")
    t0 = time.perf_counter()
    subprocess.run([python(), os.path.join(ROOT, "tests", "reference", "test_verify_store.py"),
                    "make", store, "--n", str(n), "--min-samples", str(min_samples),
                    "--max-samples", str(max_samples)] + (["--tokens"] if tokens else []),
                   check=True, env=env, stdout=subprocess.DEVNULL)
    with open(stamp, "w") as f:
        json.dump(params, f)
    return time.perf_counter() - t0
