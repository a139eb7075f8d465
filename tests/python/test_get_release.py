"""featcache.get's lookup handles let go (docs/loader.md, "Lifetimes and threads").

get() keeps a handle per store for its next calls, and with it the store open and a snapshot
pinned, for the life of the process. A notebook that once looked an utterance up had the store
open until its kernel was restarted: `cache-prune --compact` in a terminal was refused (`in use:
process N (python3) has it open ...`), and nothing in the package let the handle go (even
GET_HANDLES = 0 only evicts at the next open of another store). featcache.release_get_handles()
lets them go: the store closes once no array of it is held, and the compaction runs.
"""
import gc
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

import featcache

BIN = os.environ["FC_BIN"]


def make_wavs(d, n):
    paths = []
    for i in range(n):
        p = os.path.join(d, "g%02d.wav" % i)
        x = 0.3 * np.sin(2 * np.pi * (150 + 35 * i) * np.arange(6615) / 22050.0)
        with wave.open(p, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(22050)
            w.writeframes((x * 32767).astype("<i2").tobytes())
        paths.append(p)
    return paths


def compact(store):
    return subprocess.run([os.path.join(BIN, "cache-prune"), "--compact", store],
                          capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        wavs = make_wavs(d, 6)
        store, other = os.path.join(d, "st"), os.path.join(d, "other")
        for s in (store, other):
            r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "-o", s, *wavs],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
        # pages freed, so that a compaction has something to do
        keep = os.path.join(d, "keep.txt")
        with open(keep, "w") as f:
            f.write("".join(p + "\n" for p in wavs[:3]))
        r = subprocess.run([os.path.join(BIN, "cache-prune"), "--manifest", keep, store],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr

        m = featcache.get(store, "g01")
        featcache.get(other, "g01")
        del m
        gc.collect()
        r = compact(store)
        assert r.returncode == 1 and "in use: process %d" % os.getpid() in r.stderr, r.stderr
        print("a get() handle kept the store open: %s" % r.stderr.strip())

        # an array held: the store stays open until it goes, and reads on
        m = featcache.get(store, "g02")
        want = np.array(m)
        assert featcache.release_get_handles(store) == 1  # this store's only, not other's
        gc.collect()
        r = compact(store)
        assert r.returncode == 1, r.stderr
        assert (np.asarray(m) == want).all()
        del m
        gc.collect()
        r = compact(store)
        assert r.returncode == 0 and "compacted" in r.stderr, r.stderr
        print("released, the last array gone: %s" % r.stderr.strip())

        assert (featcache.get(store, "g02") == want).all()  # opened anew
        assert featcache.release_get_handles() == 2  # every store's
        assert featcache.release_get_handles() == 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
