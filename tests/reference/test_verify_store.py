"""Stores for cache-verify's tests and benchmark, written independently of the C store code (py-lmdb
+ python-xxhash + struct, from docs/FORMAT.md), and checks of cache-verify on them.

  python test_verify_store.py                 run the checks (exit 0 pass, 1 fail)
  python test_verify_store.py make DIR [opts] write a clean store (used by tests/cli/verify_*.sh
                                              and scripts/bench-verify); see --help

The mel config JSON and the frame counts come from libfeatcache (fc_mel_preset, fc_mel_config_json,
fc_mel_num_frames, fc_resampled_length) through ctypes, so a record here has exactly the shape the
C verifier expects; everything else (keys, headers, checksums, entries) is computed here.
"""
import argparse
import ctypes
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import lmdb
    import numpy as np
    import xxhash
except ImportError as e:  # pragma: no cover
    print(f"FAIL: {e} (scripts/setup installs it)")
    sys.exit(1)

F32, F16, BF16, I32, I16, U16 = 1, 2, 3, 4, 5, 6


def d128(b):
    """XXH3-128 in stored order: low 64 bits LE, then high 64 bits LE."""
    return xxhash.xxh3_128_intdigest(b).to_bytes(16, "little")


def h64(b):
    return xxhash.xxh3_64_intdigest(b)


def record(payload, dtype, dim0, dim1, ndim, cfg_digest, producer=1, flags=0):
    head = struct.pack("<4sHBBIIQQ16sII", b"FCR1", 64, dtype, ndim, dim0, dim1, len(payload),
                       h64(payload), cfg_digest, flags, producer)
    return head + struct.pack("<Q", h64(head)) + payload


def audio_entry(digest, sr, channels, frames, size, mtime_ns, path):
    return digest + struct.pack("<IIQQq", sr, channels, frames, size, mtime_ns) + path.encode()


def load_lib():
    path = os.environ.get("FEATCACHE_LIBRARY") or os.path.join(os.environ.get("FC_BIN", ""),
                                                               "libfeatcache.so.0")
    if not os.path.exists(path):
        return None
    lib = ctypes.CDLL(path)
    lib.fc_mel_num_frames.restype = ctypes.c_uint64
    lib.fc_mel_num_frames.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.fc_resampled_length.restype = ctypes.c_uint64
    lib.fc_resampled_length.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32]
    lib.fc_mel_config_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    return lib


class Mel:
    """A preset as libfeatcache defines it (the struct is opaque here: 4 KiB is ample)."""

    def __init__(self, lib, preset):
        self.lib = lib
        self.buf = ctypes.create_string_buffer(4096)
        if lib.fc_mel_preset(preset.encode(), self.buf) != 0:
            raise ValueError(f"unknown preset {preset}")
        out = ctypes.create_string_buffer(1024)
        n = lib.fc_mel_config_json(self.buf, out, 1024)
        self.json = out.raw[:n]
        self.digest = d128(self.json)
        cfg = json.loads(self.json)
        self.sr, self.n_mels = cfg["sample_rate"], cfg["n_mels"]
        self.dtype = {"f32": F32, "f16": F16, "bf16": BF16}[cfg["dtype"]]

    def frames(self, n, sr):
        return self.lib.fc_mel_num_frames(self.buf, self.lib.fc_resampled_length(n, sr, self.sr))


TOKEN_JSON = b'{"dtype":"i16","kind":"tokens","tokenizer":"chars","version":1}'


def make_store(lib, path, n=100, min_samples=2048, max_samples=8192, preset="hifigan",
               sources=None, tokens=False, manifest=None, seed=1, map_size=None):
    """Write a clean store of n utterances; returns a dict of what was written."""
    mel = Mel(lib, preset)
    rng = np.random.default_rng(seed)
    pool = rng.standard_normal(1 << 22).astype(np.float32)  # payloads are slices of this
    os.makedirs(path, exist_ok=True)
    est = n * (max_samples // 256 + 4) * mel.n_mels * 4 + n * 4096
    env = lmdb.open(path, max_dbs=8, map_size=map_size or max(64 << 20, int(est * 1.6)),
                    sync=False)
    dbs = {k: env.open_db(k.encode()) for k in ("meta", "audio", "text", "feat", "tok")}
    tok_digest = d128(TOKEN_JSON)
    ids, feat_keys = [], {}
    txn = env.begin(write=True)
    txn.put(b"format", b"featcache/1", db=dbs["meta"])
    txn.put(b"cfg/" + mel.digest.hex().encode(), mel.json, db=dbs["meta"])
    if tokens:
        txn.put(b"cfg/" + tok_digest.hex().encode(), TOKEN_JSON, db=dbs["meta"])
    for i in range(n):
        uid = f"utt{i:05d}"
        samples = int(rng.integers(min_samples, max_samples + 1))
        if sources:
            os.makedirs(sources, exist_ok=True)
            src = os.path.join(sources, uid + ".wav")
            with open(src, "wb") as f:
                f.write(b"RIFF" + struct.pack("<I", samples) + rng.bytes(64))
            data = open(src, "rb").read()
            st = os.stat(src)
            digest, size, mtime = d128(data), st.st_size, st.st_mtime_ns
        else:
            src = f"/nonexistent/{uid}.wav"
            digest, size, mtime = d128(f"audio {i} {seed}".encode()), 1000 + i, 1700000000 * 10**9
        txn.put(uid.encode(), audio_entry(digest, 22050, 1, samples, size, mtime, src),
                db=dbs["audio"])
        frames = mel.frames(samples, 22050)
        off = int(rng.integers(0, len(pool) - frames * mel.n_mels))
        payload = pool[off:off + frames * mel.n_mels].tobytes()
        key = d128(digest + mel.digest)
        txn.put(key, record(payload, F32, frames, mel.n_mels, 2, mel.digest), db=dbs["feat"])
        feat_keys[uid] = key
        if tokens:
            text = f"text number {i}".encode()
            tdig = d128(text)
            txn.put(uid.encode(), tdig + text, db=dbs["text"])
            ids16 = np.frombuffer(text, dtype=np.uint8).astype(np.int16).tobytes()
            txn.put(d128(tdig + tok_digest), record(ids16, I16, len(text), 1, 1, tok_digest),
                    db=dbs["tok"])
        ids.append(uid)
        if i % 2000 == 1999:
            txn.commit()
            txn = env.begin(write=True)
    txn.commit()
    env.sync(True)
    env.close()
    if manifest:
        with open(manifest, "w") as f:
            for i, uid in enumerate(ids):  # the text stored with tokens: cache-verify compares
                f.write(f"{uid}|text number {i}|text number {i}\n")
    return {"mel": mel, "ids": ids, "feat_keys": feat_keys, "tok_digest": tok_digest}


# ---- checks ---------------------------------------------------------------------------------------

def run_verify(args):
    exe = os.path.join(os.environ.get("FC_BIN", ""), "cache-verify")
    p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check_clean_and_rewritten_values(lib, tmp):
    """A clean py-written store verifies; values rewritten through lmdb are caught exactly."""
    store = os.path.join(tmp, "s")
    info = make_store(lib, store, n=300, tokens=True)
    rc, out, err = run_verify(["--json", "--finite", "-q", store])
    rep = json.loads(out)
    assert rc == 0 and rep["ok"] and rep["records_checked"] == 600, (rc, out, err)
    assert rep["errors"] == [] and rep["warnings"] == [], out

    mel = info["mel"]
    key = info["feat_keys"]["utt00007"]
    env = lmdb.open(store, max_dbs=8, subdir=True)
    feat = env.open_db(b"feat")
    with env.begin(write=True) as txn:
        v = bytearray(txn.get(key, db=feat))
        frames = struct.unpack_from("<I", v, 8)[0]
        # NaN at frame 2, bin 5, with both checksums valid
        pay = bytearray(v[64:])
        struct.pack_into("<f", pay, (2 * mel.n_mels + 5) * 4, float("nan"))
        txn.put(key, record(bytes(pay), F32, frames, mel.n_mels, 2, mel.digest), db=feat)
        # a header claiming a huge shape, with a valid header checksum
        key2 = info["feat_keys"]["utt00011"]
        v2 = txn.get(key2, db=feat)
        head = bytearray(v2[:56])
        struct.pack_into("<II", head, 8, 0x7fffffff, 80)
        struct.pack_into("<Q", head, 16, 0x7fffffff * 80 * 4)
        txn.put(key2, bytes(head) + struct.pack("<Q", h64(bytes(head))) + v2[64:], db=feat)
    env.close()
    rc, out, err = run_verify(["--json", "--finite", "-q", store])
    rep = json.loads(out)
    probs = {(e["id"], e["db"], e["key"]): e["problem"] for e in rep["errors"]}
    assert rc == 1 and not rep["ok"], (rc, out)
    assert probs == {
        ("utt00007", "feat", key.hex()): "payload holds NaN at element 165 (frame 2, bin 5)",
        ("utt00011", "feat", info["feat_keys"]["utt00011"].hex()):
            f"header says {0x7fffffff * 80 * 4} payload bytes, value holds "
            f"{len(v2) - 64}: cache-prune --damaged removes it, and featurize run again "
            "stores it anew",
    }, probs
    # without --finite the NaN record is sound (its checksums match)
    rc, out, _ = run_verify(["--json", "-q", store])
    assert rc == 1 and len(json.loads(out)["errors"]) == 1, out
    print("ok: clean py-lmdb store verifies; NaN and huge-shape values found by id")


def check_stale_reader(lib, tmp):
    """A reader slot left by a killed process is reported (not cleared: the store is not written).
    LMDB resets its reader table when the first process opens the lock file, so a stale slot only
    exists while some live process keeps the environment open: the holder below does."""
    store = os.path.join(tmp, "r")
    make_store(lib, store, n=20)
    hold = ("import lmdb,sys; e=lmdb.open(sys.argv[1], max_dbs=8, readonly=True); "
            "print('ready', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", hold, store], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        code = ("import lmdb,os,sys; e=lmdb.open(sys.argv[1], max_dbs=8, readonly=True); "
                "t=e.begin(); print(os.getpid(), flush=True); os._exit(0)")
        p = subprocess.run([sys.executable, "-c", code, store], capture_output=True, text=True)
        pid = p.stdout.strip()
        for _ in range(2):  # reported both times: verify never clears the slot
            rc, out, err = run_verify(["--json", "-q", store])
            rep = json.loads(out)
            assert rc == 0 and rep["stale_readers"] == 1, out
            assert rep["warnings"] == [{"id": None, "key": "lock.mdb", "db": "env", "problem":
                                        f"1 stale reader slot (dead pid {pid}): old pages stay "
                                        "pinned and the file grows; clear them with cache-verify --clear-stale-readers"}
                                       ], out
        rc, out, err = run_verify(["--strict", "--status", store])
        assert rc == 1 and out == "" and err == "", (rc, out, err)
    finally:
        holder.stdin.close()
        holder.wait()
    print("ok: stale reader slot reported, not cleared; --strict fails on it")


def check_featurize_store(tmp):
    """A store made by the real featurize tool verifies clean."""
    fz = os.path.join(os.environ.get("FC_BIN", ""), "featurize")
    assert os.path.exists(fz), f"{fz} not built"
    assert shutil.which("espeak-ng"), "espeak-ng not installed (scripts/setup installs it)"
    wavs = os.path.join(tmp, "wavs")
    os.makedirs(wavs)
    for i, text in enumerate(["hello world", "the quick brown fox", "verify me"]):
        subprocess.run(["espeak-ng", "-w", os.path.join(wavs, f"u{i}.wav"), text], check=True)
    store = os.path.join(tmp, "fz")
    paths = "\n".join(os.path.join(wavs, f"u{i}.wav") for i in range(3)) + "\n"
    p = subprocess.run([fz, "--preset", "hifigan", "-q", "-o", store, "-"], input=paths,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"featurize failed ({p.returncode}): {p.stderr.strip()[:500]}"
    rc, out, err = run_verify(["--json", "--finite", "--sources", "--rehash",
                               "--expect-preset", "hifigan", "-q", store])
    rep = json.loads(out)
    assert rc == 0 and rep["ok"] and rep["records_checked"] >= 3, out
    print("ok: featurize-made store verifies clean with --finite --sources --rehash")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "make":
        ap = argparse.ArgumentParser(prog="test_verify_store.py make")
        ap.add_argument("dir")
        ap.add_argument("--n", type=int, default=100)
        ap.add_argument("--min-samples", type=int, default=2048)
        ap.add_argument("--max-samples", type=int, default=8192)
        ap.add_argument("--preset", default="hifigan")
        ap.add_argument("--sources", help="write fake source files here and record them")
        ap.add_argument("--tokens", action="store_true", help="text entries and tok records too")
        ap.add_argument("--manifest", help="write an LJSpeech manifest of the ids here")
        ap.add_argument("--seed", type=int, default=1)
        a = ap.parse_args(sys.argv[2:])
        lib = load_lib()
        if lib is None:
            print("no libfeatcache.so (set FEATCACHE_LIBRARY or FC_BIN)", file=sys.stderr)
            return 2
        info = make_store(lib, a.dir, a.n, a.min_samples, a.max_samples, a.preset, a.sources,
                          a.tokens, a.manifest, a.seed)
        for uid in info["ids"]:
            print(uid, info["feat_keys"][uid].hex())
        return 0
    lib = load_lib()
    exe = os.path.join(os.environ.get("FC_BIN", ""), "cache-verify")
    if lib is None or not os.path.exists(exe):
        print("FAIL: libfeatcache.so or cache-verify not built (FC_BIN)")
        return 1
    tmp = tempfile.mkdtemp(prefix="fc-verify-py.")
    try:
        check_clean_and_rewritten_values(lib, tmp)
        check_stale_reader(lib, tmp)
        check_featurize_store(tmp)
    except AssertionError as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
