"""Readers beside a writer, and many readers at once (docs/RELIABILITY.md, Concurrency).

1. Loaders opened again and again while featurize writes the store: each sees a consistent
   snapshot — every utterance it indexes has its record (no problems, strict reads succeed), every
   mel has the frames its audio implies, and the counts only grow, up to the final store.
2. 64 reader processes at once, each with a default Loader (two prefetch threads, so several
   read transactions each), released together by a barrier: all read every utterance, none hits
   the reader table's limit.
3. A reader killed while it holds a read transaction leaves a stale reader slot: cache-verify
   reports it (--json stale_readers), `cache-verify --clear-stale-readers` clears it, and the
   live reader's slot stays.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

BIN = os.environ["FC_BIN"]
PY = sys.executable
N_BESIDE = 600  # 30 min of audio: about a second of featurize -j1, several loader snapshots


def make_wavs(d, n, seconds):
    rng = np.random.default_rng(3)
    paths = []
    for i in range(n):
        k = int(22050 * seconds * rng.uniform(0.5, 1.5))
        x = 0.25 * np.sin(2 * np.pi * rng.uniform(100, 2000) * np.arange(k) / 22050.0)
        x += 0.05 * rng.standard_normal(k)
        p = os.path.join(d, "c%04d.wav" % i)
        with wave.open(p, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(22050)
            w.writeframes((x * 32767).astype("<i2").tobytes())
        paths.append((p, k))
    return paths


def readers_beside_writer(d):
    import featcache
    featcache.library_version()  # load the library now, not in the first snapshot
    wavs = make_wavs(d, N_BESIDE, 3.0)
    frames_of = {os.path.splitext(os.path.basename(p))[0]: k // 256 for p, k in wavs}
    store = os.path.join(d, "st")
    w = subprocess.Popen([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-j", "1",
                          "-o", store, "-"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    w.stdin.write("".join(p + "\n" for p, _ in wavs).encode())
    w.stdin.close()
    opens, counts = 0, []
    while True:
        done = w.poll() is not None
        if os.path.exists(os.path.join(store, "data.mdb")):
            try:
                ld = featcache.Loader(store, features="hifigan", batch_size=16, strict=True)
                n = 0
                for b in ld:
                    for i, uid in enumerate(b.ids):
                        assert b.mels[i].shape == (frames_of[uid], 80), (uid, b.mels[i].shape)
                        assert np.isfinite(b.mels[i]).all(), uid
                    n += len(b)
            except featcache.FeatcacheError as e:
                # only before the first commit: an environment without our dbs yet, or without
                # the config; once a snapshot was seen, every later one must open and read
                assert not counts, "a snapshot after %s utterances failed: %s" % (counts[-1], e)
                assert not done, "the finished store does not open: %s" % e
                time.sleep(0.02)
                continue
            assert ld.problems() == [], ld.problems()
            assert n == ld.num_items
            ld.close()
            opens += 1
            counts.append(n)
        if done:
            break
        time.sleep(0.02)
    err = w.stderr.read().decode()
    assert w.returncode == 0, err
    assert counts == sorted(counts), "a later snapshot held fewer utterances: %s" % counts
    assert counts[-1] == N_BESIDE, counts[-1]
    mid = [c for c in counts if 0 < c < N_BESIDE]
    print("readers beside a writer: %d loader snapshots while featurize wrote, %d of them partial "
          "(%s ... %s utterances), all consistent" % (opens, len(mid), mid[:1], mid[-1:]))
    assert mid, "no loader ran while the job was half done: the test did not test concurrency"
    return store


READER = r'''
import os, sys, time, featcache
store, go = sys.argv[1], sys.argv[2]
ld = featcache.Loader(store, features="hifigan", batch_size=8, shuffle=True, seed=os.getpid())
while not os.path.exists(go):
    time.sleep(0.005)
n = 0
for epoch in range(2):
    for b in ld:
        n += len(b)
print(n)
'''


def many_readers(store, d):
    go = os.path.join(d, "go")
    ps = [subprocess.Popen([PY, "-c", READER, store, go], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE) for _ in range(64)]
    time.sleep(1.0)
    open(go, "w").close()
    bad = []
    for p in ps:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0 or out.decode().strip() != str(2 * N_BESIDE):
            bad.append((p.returncode, out.decode().strip(), err.decode()[-300:]))
    assert not bad, "%d of 64 readers failed: %s" % (len(bad), bad[:3])
    print("64 reader processes at once: all read 2 epochs of %d utterances" % N_BESIDE + "")


HOLDER = r'''
import sys, featcache
ld = featcache.Loader(sys.argv[1], features="hifigan", batch_size=8, prefetch_threads=0)
it = iter(ld)
b = next(it)          # a batch out: its read transaction is held
print("holding", flush=True)
sys.stdin.read()      # until killed
'''


def stale_readers(store):
    # LMDB resets its reader table when the first process opens the environment, so a stale slot
    # only shows while another process keeps it open: a live holder stays, a second one is killed.
    def holder():
        p = subprocess.Popen([PY, "-c", HOLDER, store], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert p.stdout.readline().decode().strip() == "holding"
        return p

    def report(*opts):
        r = subprocess.run([os.path.join(BIN, "cache-verify"), *opts, "--json", store],
                           capture_output=True)
        assert r.returncode == 0, r.stderr.decode()
        return json.loads(r.stdout.decode().splitlines()[0])

    live, killed = holder(), holder()
    try:
        base = report()["readers"]
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        rep = report()
        assert rep["stale_readers"] >= 1, rep
        print("a killed reader left %d stale reader slot(s) beside %d live: cache-verify reports them"
              % (rep["stale_readers"], base - rep["stale_readers"]))
        rep = report("--clear-stale-readers")
        assert rep["stale_cleared"] >= 1 and rep["stale_readers"] == 0, rep
        rep = report()
        assert rep["stale_readers"] == 0 and rep["readers"] >= 1, rep
        print("cache-verify --clear-stale-readers cleared them; the live reader's slot stays")
    finally:
        live.kill()
        live.wait()


def main():
    if os.environ.get("FC_SANITIZE") == "1":
        print("skipped: 64 Python processes over the sanitizer library", file=sys.stderr)
        return 77
    with tempfile.TemporaryDirectory() as d:
        store = readers_beside_writer(d)
        many_readers(store, d)
        stale_readers(store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
