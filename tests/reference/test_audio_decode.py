"""fc_audio_decode (through ctypes on libfeatcache) against librosa.load(path, sr=target).

librosa.load = soundfile (sf_readf_float) -> to_mono (np.mean over channels) -> soxr_hq resample
-> fix_length. We make the same calls on the same bytes, so for lossless sources the expected
difference is 0 or float32 rounding; the only library that differs is libsndfile itself
(soundfile's wheel bundles its own build, the system one is what we link): this matters only for
lossy decoders (MP3 via mpg123, Vorbis, Opus), whose float output may differ between versions.
libfeatcache is loaded before soundfile: loaded after it, its libsndfile.so.1 would be bound to the
library soundfile's wheel bundles (the same soname, already in the process), and every comparison
would be of that one library with itself, not of what featurize links; the test checks that the
process holds two.
Every input is made here: espeak-ng speech, written by soundfile (its bundled libsndfile writes
OGG Vorbis, Opus and MP3) and by sox; all three come with scripts/setup, and an input that cannot
be made is a failure, not a format left out.
Run: python test_audio_decode.py (exit 0 pass, 1 fail).
"""
import ctypes
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def load_lib():
    path = os.environ.get("FEATCACHE_LIBRARY")
    if not path or not os.path.exists(path):
        bin_dir = os.environ.get("FC_BIN", "")
        path = os.path.join(bin_dir, "libfeatcache.so.0")
    if not os.path.exists(path):
        print(f"FAIL: no libfeatcache.so (FEATCACHE_LIBRARY={path})")
        sys.exit(1)
    return ctypes.CDLL(path)


LIB = load_lib()  # before soundfile: see the docstring

try:
    import librosa
    import numpy as np
    import soundfile as sf
except ImportError as e:  # pragma: no cover
    print(f"FAIL: {e} (scripts/setup installs it)")
    sys.exit(1)

# Tolerances (max abs error; signals peak near 0.8).
TOL_EXACT = 1e-6       # lossless source, any rate/channels: same libsndfile read, same numpy-order
#                        mix, same libsoxr recipe -> float32 rounding at most
TOL_LOSSY = 1e-4       # MP3/Vorbis/Opus: system libsndfile 1.2.0 vs soundfile's bundled 1.2.2 (and
#                        their mpg123/vorbis/opus builds); measured values are printed

FC_EDECODE, FC_EEMPTY, FC_ETOOLONG = -31903, -31904, -31905


class Info(ctypes.Structure):
    _fields_ = [("sample_rate", ctypes.c_uint32), ("channels", ctypes.c_uint32),
                ("frames", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("mtime_ns", ctypes.c_int64), ("format", ctypes.c_int)]


def declare(lib):
    lib.fc_audio_decode.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32,
                                    ctypes.c_double, ctypes.POINTER(ctypes.POINTER(ctypes.c_float)),
                                    ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(Info),
                                    ctypes.c_char_p, ctypes.c_size_t]
    lib.fc_audio_read_file.argtypes = [ctypes.c_char_p, ctypes.c_uint64,
                                       ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(Info)]
    lib.fc_strerror.restype = ctypes.c_char_p
    return lib


declare(LIB)
LIBC = ctypes.CDLL(None)
LIBC.free.argtypes = [ctypes.c_void_p]


def fc_load(path, target, max_seconds=0.0):
    """(rc, samples or None, info, why) via fc_audio_read_file + fc_audio_decode."""
    info = Info()
    buf, n = ctypes.c_void_p(), ctypes.c_size_t()
    rc = LIB.fc_audio_read_file(path.encode(), 0, ctypes.byref(buf), ctypes.byref(n),
                                ctypes.byref(info))
    if rc != 0:
        return rc, None, info, LIB.fc_strerror(rc).decode()
    out, count = ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t()
    why = ctypes.create_string_buffer(512)
    try:
        rc = LIB.fc_audio_decode(buf, n, target, max_seconds, ctypes.byref(out),
                                 ctypes.byref(count), ctypes.byref(info), why, len(why))
    finally:
        LIBC.free(buf)
    if rc != 0:
        return rc, None, info, why.value.decode(errors="replace")
    y = np.ctypeslib.as_array(out, shape=(count.value,)).copy() if count.value else np.zeros(0)
    LIBC.free(ctypes.cast(out, ctypes.c_void_p))
    return 0, y, info, ""


FAILS = []
ROWS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg)


def compare(name, path, target, tol):
    ref, _ = librosa.load(path, sr=target)
    rc, y, info, why = fc_load(path, target)
    if rc != 0:
        check(False, f"{name}: fc_audio_decode failed rc={rc}: {why}")
        return
    if len(y) != len(ref):
        check(False, f"{name}: length {len(y)}, librosa {len(ref)}")
        return
    err = float(np.max(np.abs(y - ref))) if len(y) else 0.0
    ROWS.append((name, target, len(y), err, tol))
    check(err <= tol, f"{name} -> {target} Hz: max abs error {err:.3g} > {tol:g} "
          f"(check the mix order, soxr io/quality spec, libsndfile normalisation)")


def libsndfiles():
    """The libsndfile files mapped into this process: featcache's and soundfile's, two of them
    when libfeatcache was loaded first (the docstring)."""
    with open("/proc/self/maps") as f:
        names = {line.split()[-1] for line in f if "/" in line}
    return sorted(n for n in names if os.path.basename(n).startswith("libsndfile"))


# ---- fixtures -----------------------------------------------------------------------------------
def need(tool):
    if not shutil.which(tool):
        print(f"FAIL: {tool} not installed (scripts/setup installs it)")
        sys.exit(1)


def speech(tmp):
    """~2 s of espeak-ng speech at 22050 Hz mono float."""
    wav = os.path.join(tmp, "espeak.wav")
    subprocess.run(["espeak-ng", "-w", wav, "Featcache reads audio exactly like librosa."],
                   capture_output=True, check=True)
    x, sr = sf.read(wav, dtype="float64")
    assert len(x) > sr and sr == 22050, (len(x), sr)
    return x / max(1e-9, np.max(np.abs(x))) * 0.8, sr


def multichannel(x, channels, seed):
    """Different content per channel: the speech with per-channel gain, delay and noise."""
    rng = np.random.default_rng(seed)
    cols = []
    for c in range(channels):
        g = 0.9 - 0.1 * c
        d = np.roll(x, 37 * c) * g + 0.02 * rng.standard_normal(len(x))
        cols.append(np.clip(d, -0.99, 0.99))
    return np.stack(cols, axis=1)


def resample_to(x, sr, new_sr):
    return x if sr == new_sr else librosa.resample(x, orig_sr=sr, target_sr=new_sr, axis=0)


def main():
    tmp = tempfile.mkdtemp(prefix="fc_audio_")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'variant':<28} {'target':>6} {'samples':>8} {'max abs err':>12} {'tol':>7}")
    for name, target, n, err, tol in ROWS:
        print(f"{name:<28} {target:>6} {n:>8} {err:>12.3g} {tol:>7.0e}")
    print(f"libsndfile: soundfile bundles {sf.__libsndfile_version__}; the process maps "
          f"{', '.join(libsndfiles())}")
    if FAILS:
        print(f"{len(FAILS)} failure(s)")
        return 1
    print(f"ok: {len(ROWS)} comparisons")
    return 0


def run(tmp):
    need("espeak-ng")
    need("sox")
    libs = libsndfiles()
    check(len(libs) == 2, f"featcache and soundfile do not use two libsndfiles here ({libs}): the "
          f"comparisons would hold libsndfile to itself (load libfeatcache before soundfile)")
    x, sr0 = speech(tmp)
    x = np.clip(x, -0.99, 0.99)

    # Integer and float WAV, mono, at the speech's own rate and resampled to the presets' rates.
    for subtype in ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"]:
        p = os.path.join(tmp, f"mono_{subtype}.wav")
        sf.write(p, x, sr0, subtype=subtype)
        for target in sorted({sr0, 16000, 22050, 44100}):
            compare(f"wav {subtype} 1ch {sr0}", p, target, TOL_EXACT)

    # 1..8 channels.
    for ch in range(1, 9):
        p = os.path.join(tmp, f"ch{ch}.wav")
        sf.write(p, multichannel(x, ch, ch), sr0, subtype="PCM_16")
        for target in [sr0, 16000]:
            compare(f"wav PCM_16 {ch}ch {sr0}", p, target, TOL_EXACT)
    p = os.path.join(tmp, "ch6_float.wav")
    sf.write(p, multichannel(x, 6, 9), sr0, subtype="FLOAT")
    compare("wav FLOAT 6ch", p, 22050, TOL_EXACT)

    # Source rates 8k..192k to 22050 and 16000 (and kept).
    for rate in [8000, 16000, 22050, 44100, 48000, 96000, 192000]:
        y = resample_to(x, sr0, rate)
        p = os.path.join(tmp, f"rate{rate}.wav")
        sf.write(p, multichannel(y, 2, rate), rate, subtype="PCM_16")
        for target in sorted({22050, 16000, rate}):
            compare(f"wav PCM_16 2ch {rate}", p, target, TOL_EXACT)
    # 24-bit stereo 48k, the usual studio master.
    p = os.path.join(tmp, "studio.wav")
    sf.write(p, multichannel(resample_to(x, sr0, 48000), 2, 5), 48000, subtype="PCM_24")
    compare("wav PCM_24 2ch 48000", p, 22050, TOL_EXACT)

    # 20 s: many decode blocks and several of python-soxr's 48000-output-frame chunks.
    long = np.tile(resample_to(x, sr0, 48000), int(np.ceil(20 * 48000 / (len(x) * 48000 / sr0))))
    p = os.path.join(tmp, "long.wav")
    sf.write(p, multichannel(long[: 20 * 48000], 2, 11), 48000, subtype="PCM_16")
    compare("wav PCM_16 2ch 48000 20 s", p, 16000, TOL_EXACT)

    # Odd lengths: 1 sample, fewer samples than soxr's delay, a block boundary.
    for n in [1, 2, 7, 8191, 8192, 8193]:
        p = os.path.join(tmp, f"len{n}.wav")
        sf.write(p, x[:n], sr0, subtype="PCM_16")
        compare(f"wav {n} samples", p, 16000, TOL_EXACT)

    # Lossless compressed.
    p = os.path.join(tmp, "flac16.flac")
    sf.write(p, multichannel(x, 2, 3), sr0, subtype="PCM_16")
    for target in [sr0, 16000]:
        compare("flac 16-bit 2ch", p, target, TOL_EXACT)
    p = os.path.join(tmp, "flac24.flac")
    sf.write(p, resample_to(x, sr0, 48000), 48000, subtype="PCM_24")
    compare("flac 24-bit 48000", p, 22050, TOL_EXACT)

    # Lossy: written with soundfile (the libsndfile its wheel bundles, pinned by scripts/setup).
    x48 = resample_to(x, sr0, 48000)
    lossy = [("ogg vorbis", "ogg", "OGG", "VORBIS", 44100),
             ("ogg opus", "opus", "OGG", "OPUS", 48000),
             ("mp3", "mp3", "MP3", "MPEG_LAYER_III", 44100)]
    for name, ext, fmt, subtype, rate in lossy:
        p = os.path.join(tmp, f"lossy.{ext}")
        sf.write(p, multichannel(resample_to(x48, 48000, rate), 2, 4), rate, format=fmt,
                 subtype=subtype)
        for target in [22050, 16000]:
            compare(name, p, target, TOL_LOSSY)

    # The other containers and encodings libsndfile reads (A-law and u-law WAV, WAVE_FORMAT_
    # EXTENSIBLE, RF64, W64, AIFF, AU, CAF, 8-bit FLAC), and float files louder than 1.0, which
    # are not clipped (librosa.load keeps them too).
    x44 = resample_to(x, sr0, 44100)
    for fmt, subtype, ch in [("WAV", "ALAW", 1), ("WAV", "ULAW", 2), ("WAVEX", "PCM_16", 1),
                             ("WAVEX", "PCM_24", 6), ("WAVEX", "FLOAT", 2), ("RF64", "PCM_16", 2),
                             ("W64", "PCM_24", 1), ("AIFF", "PCM_16", 2), ("AIFF", "FLOAT", 1),
                             ("AU", "PCM_24", 2), ("CAF", "PCM_16", 1), ("FLAC", "PCM_S8", 2)]:
        p = os.path.join(tmp, f"{fmt}_{subtype}_{ch}.{fmt.lower()}")
        sf.write(p, multichannel(x44, ch, 6) if ch > 1 else x44, 44100, format=fmt,
                 subtype=subtype)
        for target in [44100, 22050, 16000]:
            compare(f"{fmt.lower()} {subtype} {ch}ch 44100", p, target, TOL_EXACT)
    for subtype in ["FLOAT", "DOUBLE"]:
        p = os.path.join(tmp, f"loud_{subtype}.wav")
        sf.write(p, multichannel(x, 2, 7) * 3.5, sr0, subtype=subtype)
        for target in [sr0, 16000]:
            compare(f"wav {subtype} 2ch peak 3.5", p, target, TOL_EXACT)
    # Rates the list above skips, odd ones included (a device's 44056, 7999); more channels than
    # numpy's pairwise sum adds in one block (its mean's order).
    for rate in [7999, 11025, 24000, 32000, 44056]:
        p = os.path.join(tmp, f"rate{rate}.wav")
        sf.write(p, resample_to(x, sr0, rate), rate, subtype="PCM_16")
        for target in [16000, 22050, 24000]:
            compare(f"wav PCM_16 1ch {rate}", p, target, TOL_EXACT)
    for ch in [16, 129]:
        p = os.path.join(tmp, f"ch{ch}.wav")
        sf.write(p, multichannel(x[:20000], ch, ch), sr0, subtype="PCM_16")
        compare(f"wav PCM_16 {ch}ch", p, 16000, TOL_EXACT)
    wav_chunks(tmp, x, sr0)

    mp3_without_length_tag(tmp, x, sr0)

    # A WAV written by another program (sox's own resampler and 24-bit writer).
    p = os.path.join(tmp, "sox.wav")
    src = os.path.join(tmp, "mono_PCM_16.wav")
    subprocess.run(["sox", src, "-r", "44100", "-c", "2", "-b", "24", p], check=True)
    compare("sox wav 24-bit 2ch 44100", p, 22050, TOL_EXACT)

    broken(tmp, x, sr0)


def wav_chunks(tmp, x, sr0):
    """16-bit mono WAVs as recorders and editors write them: chunks before, between and after
    fmt and data (LIST INFO, BWF's bext, cue points, JUNK, an odd-sized chunk and its pad byte),
    the fmt of 18 bytes, WAVE_FORMAT_EXTENSIBLE, a RIFF size of 0 (a writer to a pipe), a data
    size that states fewer bytes than follow (the rest is not audio). At the file's rate the first
    kinds take featcache's own 16-bit path, at another libsndfile: both as librosa.load reads them.
    """
    def chunk(cid, body):
        return cid + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")

    def fmt(tag=1, extra=b""):
        return chunk(b"fmt ", struct.pack("<HHIIHH", tag, 1, sr0, 2 * sr0, 2, 16) + extra)

    def riff(chunks, size=None):
        body = b"WAVE" + b"".join(chunks)
        return b"RIFF" + struct.pack("<I", len(body) if size is None else size) + body

    pcm = np.round(x * 32767).astype("<i2").tobytes()
    data = chunk(b"data", pcm)
    info = chunk(b"LIST", b"INFO" + chunk(b"INAM", b"a name\0") + chunk(b"ISFT", b"Lavf\0"))
    bext = chunk(b"bext", b"a description".ljust(602, b"\0"))
    cue = chunk(b"cue ", struct.pack("<I", 1) + struct.pack("<II4sIII", 1, 0, b"data", 0, 0, 99))
    odd = chunk(b"abcd", b"1234567")
    extensible = struct.pack("<HHI", 22, 16, 4) + bytes.fromhex("0100000000001000800000aa00389b71")
    variants = {
        "LIST first": riff([info, fmt(), data]),
        "LIST between": riff([fmt(), info, data]),
        "LIST last": riff([fmt(), data, info]),
        "bext, JUNK, cue": riff([chunk(b"JUNK", bytes(28)), bext, fmt(), cue, data]),
        "odd chunk padded": riff([fmt(), odd, data]),
        "fmt of 18 bytes": riff([fmt(extra=b"\0\0"), data]),
        "extensible": riff([fmt(0xFFFE, extensible), data]),
        "RIFF size 0": riff([fmt(), data], size=0),
        "data states half": riff([fmt(), b"data" + struct.pack("<I", len(pcm) // 2) + pcm]),
    }
    for name, b in variants.items():
        p = os.path.join(tmp, "chunks.wav")
        with open(p, "wb") as f:
            f.write(b)
        for target in [sr0, 16000]:
            compare(f"wav {name}", p, target, TOL_EXACT)


def mp3_without_length_tag(tmp, x, sr0):
    """A VBR MP3 without a Xing/Info tag states no length: mpg123 estimates it from the file size
    and the first frame's size, and libsndfile reports that estimate as the frame count and reads no
    further. A loud first second then quiet speech (large frames, then small ones) is estimated
    far too short: librosa.load returns its first 1.9 s of 6 (its bug, not the file's); silence
    then noise far too long (8.1 s), past a limit the file is within. featcache reads such a file
    to its end, and a length limit counts what decodes, not the estimate."""
    need("ffmpeg")
    rate = 44100
    rng = np.random.default_rng(8)
    quiet = np.tile(resample_to(x, sr0, rate) * 0.03, 3)[: 5 * rate]
    loud = np.clip(0.5 * rng.standard_normal(rate), -0.99, 0.99)
    for name, y in [("loud first", np.concatenate([loud, quiet])),
                    ("silent first", np.concatenate([np.zeros(5 * rate), loud]))]:
        wav, mp3 = os.path.join(tmp, "vbr.wav"), os.path.join(tmp, "vbr.mp3")
        sf.write(wav, y, rate, subtype="PCM_16")
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", wav, "-c:a",
                        "libmp3lame", "-q:a", "2", "-write_xing", "0", mp3], check=True)
        ref, _ = librosa.load(mp3, sr=rate)
        rc, got, info, why = fc_load(mp3, rate, max_seconds=6.5)
        if rc != 0:
            check(False, f"mp3 without a length tag, {name}: rc {rc} ({why}); 6.0 s of audio, "
                  f"under a 6.5 s limit")
            continue
        # all of it: the encoder's delay and the last frame's padding, less than two frames, more
        ok = len(y) <= len(got) <= len(y) + 2 * 1152 and info.frames == len(got)
        check(ok, f"mp3 without a length tag, {name}: {len(got)} samples ({info.frames} frames), "
              f"the file holds {len(y)} and less than two MPEG frames more")
        head = min(len(ref), len(got))
        err = float(np.max(np.abs(got[:head] - ref[:head]))) if head else 0.0
        ROWS.append((f"mp3 no tag, {name}", rate, len(got), err, TOL_LOSSY))
        check(err <= TOL_LOSSY, f"mp3 without a length tag, {name}: {err:.3g} from librosa.load's "
              f"samples where both have them")
        print(f"mp3 without a length tag, {name}: {len(got)} samples; librosa.load {len(ref)}")


def broken(tmp, x, sr0):
    def expect(name, path, want_rc, want_why=None, **kw):
        rc, y, _, why = fc_load(path, 22050, **kw)
        check(rc == want_rc, f"{name}: rc {rc} ({why}), expected {want_rc}")
        if want_why:
            check(want_why in why, f"{name}: reason '{why}' lacks '{want_why}'")
        print(f"{name}: rc={rc} why={why!r}")

    import errno
    expect("missing", os.path.join(tmp, "nope.wav"), errno.ENOENT)
    expect("directory", tmp, errno.EISDIR)
    p = os.path.join(tmp, "empty.wav")
    open(p, "wb").close()
    expect("empty file", p, FC_EEMPTY)
    p = os.path.join(tmp, "text.wav")
    with open(p, "w") as f:
        f.write("this is not audio, just some text saved as .wav\n" * 20)
    expect("text named .wav", p, FC_EDECODE, "not an audio file")
    p = os.path.join(tmp, "zero.wav")
    sf.write(p, np.zeros(0), sr0, subtype="PCM_16")
    expect("0 samples", p, FC_EEMPTY, "no samples")
    full = os.path.join(tmp, "full.wav")
    sf.write(full, x, sr0, subtype="PCM_16")
    data = open(full, "rb").read()
    p = os.path.join(tmp, "truncated.wav")
    with open(p, "wb") as f:
        f.write(data[: len(data) // 2])
    held = (len(data) // 2 - 44) // 2
    expect("truncated wav", p, FC_EDECODE, f"truncated: header says {len(x)} frames, "
           f"file holds {held}")
    p = os.path.join(tmp, "header_only.wav")
    with open(p, "wb") as f:
        f.write(data[:30])
    expect("cut inside the header", p, FC_EDECODE, "WAV")
    expect("over max_seconds", full, FC_ETOOLONG, "limit", max_seconds=0.5)
    rc, y, info, why = fc_load(full, 0, max_seconds=60)
    check(rc == 0 and info.frames == len(x) and info.sample_rate == sr0 and info.channels == 1
          and info.size == len(data), f"info of full.wav: {rc} {why} frames {info.frames} "
          f"sr {info.sample_rate} ch {info.channels} size {info.size}")
    # Truncated FLAC: the frame count in STREAMINFO is exact.
    flac = os.path.join(tmp, "full.flac")
    sf.write(flac, x, sr0, subtype="PCM_16")
    fdata = open(flac, "rb").read()
    p = os.path.join(tmp, "truncated.flac")
    with open(p, "wb") as f:
        f.write(fdata[: len(fdata) // 2])
    expect("truncated flac", p, FC_EDECODE, "damaged or cut short: header says")
    # Two Ogg files joined with cat (a chained stream): libsndfile, librosa.load with it, reads the
    # first and states its length as the file's; ffmpeg reads both. Refused, not cut to the first.
    for ext, fmt, sub in [("ogg", "OGG", "VORBIS"), ("opus", "OGG", "OPUS")]:
        parts = []
        for i, y in enumerate([x[: len(x) // 2], x[len(x) // 2:]]):
            q = os.path.join(tmp, f"part{i}.{ext}")
            sf.write(q, y, 48000 if sub == "OPUS" else sr0, format=fmt, subtype=sub)
            parts.append(open(q, "rb").read())
        p = os.path.join(tmp, f"chained.{ext}")
        with open(p, "wb") as f:
            f.write(parts[0] + parts[1])
        expect(f"chained {ext}", p, FC_EDECODE, "a chained Ogg file (one stream after another")
        rc, _, _, why = fc_load(os.path.join(tmp, f"part1.{ext}"), 22050)
        check(rc == 0, f"one {ext} stream: rc {rc} ({why})")
    # Two MP3 files joined so: the first one's Xing/Info tag states its frames, and libsndfile
    # reads that many (half the file) without a word.
    parts = []
    for i, y in enumerate([x[: len(x) // 2], x[len(x) // 2:]]):
        q = os.path.join(tmp, f"part{i}.mp3")
        sf.write(q, y, sr0, format="MP3")
        parts.append(open(q, "rb").read())
    p = os.path.join(tmp, "joined.mp3")
    with open(p, "wb") as f:
        f.write(parts[0] + parts[1])
    expect("joined mp3", p, FC_EDECODE, "MP3 streams one after another (files joined with cat?)")
    rc, _, _, why = fc_load(os.path.join(tmp, "part1.mp3"), 22050)
    check(rc == 0, f"one mp3 stream: rc {rc} ({why})")
    # Two WAV files joined so: 16-bit mono at the target rate (read without libsndfile) was stored
    # as the first file alone; libsndfile refused the others as damaged ("No 'RIFF' chunk
    # marker"). Refused, naming where the second begins; sox's 24-bit WAVE_FORMAT_EXTENSIBLE too.
    for subtype, rate, ch in [("PCM_16", 22050, 1), ("PCM_16", 44100, 2), ("PCM_24", 22050, 1),
                              ("FLOAT", 16000, 1), ("PCM_U8", 22050, 1), ("sox", 48000, 2)]:
        parts = []
        for i, y in enumerate([x[: len(x) // 2 + 1], x[len(x) // 2:]]):
            q = os.path.join(tmp, f"part{i}.wav")
            y = multichannel(resample_to(y, sr0, rate), ch, 3) if rate != sr0 or ch > 1 else y
            if subtype == "sox":
                sf.write(q + ".flac", y, rate, subtype="PCM_24")
                subprocess.run(["sox", q + ".flac", "-b", "24", q], check=True)
            else:
                sf.write(q, y, rate, subtype=subtype)
            parts.append(open(q, "rb").read())
        p = os.path.join(tmp, "joined.wav")
        with open(p, "wb") as f:
            f.write(parts[0] + parts[1])
        expect(f"joined wav {subtype} {rate} Hz {ch} ch", p, FC_EDECODE,
               f"WAV files one after another (files joined with cat?): a second RIFF WAVE header "
               f"at byte {len(parts[0])}, after the first one's data")
        rc, _, _, why = fc_load(os.path.join(tmp, "part0.wav"), 22050)
        check(rc == 0, f"one wav {subtype} {rate} Hz {ch} ch: rc {rc} ({why})")
    # FLAC (libsndfile read the first file's STREAMINFO count, the rest left out without a word;
    # also one whose STREAMINFO states no count, ffmpeg's to a pipe), AU (the same, by its data
    # size) and AIFF (refused as damaged) joined so: refused alike.
    for kind, ext, header, make in [
            ("FLAC", "flac", "FLAC", lambda q, y: sf.write(q, y, sr0, subtype="PCM_16")),
            ("FLAC", "flac", "FLAC", lambda q, y: open(q, "wb").write(subprocess.run(
                ["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", q + ".wav", "-f", "flac",
                 "-"], check=True, capture_output=True).stdout)),
            ("AU", "au", ".snd", lambda q, y: sf.write(q, y, sr0, format="AU", subtype="PCM_16")),
            ("AIFF", "aiff", "FORM", lambda q, y: sf.write(q, y, sr0, subtype="PCM_16"))]:
        parts = []
        for i, y in enumerate([x[: len(x) // 2 + 1], x[len(x) // 2:]]):
            q = os.path.join(tmp, f"part{i}.{ext}")
            sf.write(q + ".wav", y, sr0, subtype="PCM_16")
            make(q, y)
            parts.append(open(q, "rb").read())
        p = os.path.join(tmp, f"joined.{ext}")
        with open(p, "wb") as f:
            f.write(parts[0] + parts[1])
        expect(f"joined {ext}", p, FC_EDECODE,
               f"{kind} files one after another (files joined with cat?): a second {header} "
               f"header at byte {len(parts[0])}, after the first one's data")
        rc, _, _, why = fc_load(os.path.join(tmp, f"part0.{ext}"), 22050)
        check(rc == 0, f"one {ext}: rc {rc} ({why})")


if __name__ == "__main__":
    sys.exit(main())
