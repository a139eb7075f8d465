"""featurize --device cuda vs --device cpu, end to end through the tool, on espeak-ng speech.

For every preset: the same keys (same audio digest, same config digest), producer 2 on the GPU and
1 on the CPU, exactly the same frame counts, and values within 1e-4 (absolute on log outputs,
relative on linear ones). The CPU side is held to the references (librosa, torch, torchaudio) by
test_mel_reference.py. Without a usable GPU: exit 77 (skipped) with the reason.
"""
import ctypes
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

BIN = os.environ.get("FC_BIN", "")
LIB = os.environ.get("FEATCACHE_LIBRARY", os.path.join(BIN, "libfeatcache.so"))


def cuda_reason():
    """None when a GPU is usable, else the reason."""
    try:
        lib = ctypes.CDLL(LIB)
    except OSError as e:
        return f"cannot load {LIB}: {e}"
    n = ctypes.c_int(0)
    why = ctypes.create_string_buffer(256)
    if lib.fc_cuda_device_count(ctypes.byref(n), why, ctypes.c_size_t(256)) != 0:
        return why.value.decode()
    return None


def records(store):
    import lmdb

    env = lmdb.open(store, readonly=True, lock=False, max_dbs=8)
    out = {}
    with env.begin(db=env.open_db(b"feat", create=False)) as t:
        for k, v in t.cursor():
            v = bytes(v)
            magic, hsize, dtype, ndim, d0, d1, pb = struct.unpack_from("<4sHBBIIQ", v)
            assert magic == b"FCR1" and dtype == 1 and len(v) == 64 + pb
            producer = struct.unpack_from("<I", v, 52)[0]
            out[bytes(k)] = (producer, np.frombuffer(v[64:], dtype="<f4").reshape(d0, d1))
    env.close()
    return out


def main():
    reason = cuda_reason()
    if reason is not None:
        print(reason)
        return 77
    if not shutil.which("espeak-ng"):
        print("espeak-ng missing")
        return 77
    fz = os.path.join(BIN, "featurize")
    tmp = tempfile.mkdtemp()
    bad = 0
    try:
        wavs = []
        for i, text in enumerate(["the quick brown fox jumps over the lazy dog",
                                  "a", "featcache computes log mel spectrograms on the GPU"]):
            p = os.path.join(tmp, f"u{i}.wav")
            subprocess.run(["espeak-ng", "-w", p, text], check=True)
            wavs.append(p)
        for preset in ["hifigan", "tacotron2", "librosa", "whisper", "kaldi"]:
            got = {}
            for dev in ["cpu", "cuda"]:
                st = os.path.join(tmp, f"{preset}-{dev}")
                subprocess.run([fz, "-q", "--device", dev, "--preset", preset, "-o", st] + wavs,
                               check=True)
                got[dev] = records(st)
            if set(got["cpu"]) != set(got["cuda"]):
                print(f"FAIL {preset}: different keys")
                bad += 1
                continue
            worst = 0.0
            for k, (prod_c, a) in got["cpu"].items():
                prod_g, b = got["cuda"][k]
                if (prod_c, prod_g) != (1, 2) or a.shape != b.shape:
                    print(f"FAIL {preset}: producers {prod_c}/{prod_g}, shapes {a.shape}/{b.shape}")
                    bad += 1
                    continue
                err = np.abs(b.astype(np.float64) - a)
                if preset == "librosa":  # linear power: relative
                    err = err / np.maximum(np.abs(a), 1e-30)
                worst = max(worst, float(err.max()))
            ok = worst <= 1e-4
            bad += not ok
            print(f"{'ok' if ok else 'FAIL'} {preset}: max error {worst:.2e} over {len(got['cpu'])} records")
    finally:
        shutil.rmtree(tmp)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
