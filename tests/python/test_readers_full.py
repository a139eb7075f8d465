"""A store's reader table filled by killed loaders (docs/RELIABILITY.md, Concurrency).

LMDB gives each read transaction a slot in lock.mdb's reader table (1024 slots) and frees it
when its process ends the transaction: a loader killed with SIGKILL (the OOM killer, `kill -9`
of a hung DataLoader, a job's time limit) leaves its slot, and while some process keeps the
store open (featurize still writing, a notebook's loader) the table is never reset. Once every
slot is taken, every tool and loader failed on the store: `MDB_READERS_FULL: Environment
maxreaders limit reached`, nothing said of what to do, featurize and tokenize included.

1. A process keeps the store open; killed loaders fill every other slot. A new Loader, featurize,
   tokenize and cache-verify then each work: the slots of dead processes are cleared when no
   slot is left (mdb_reader_check), the live holder's kept. cache-verify says the slots it
   cleared.
2. The table full of live readers (nothing to clear): the open fails saying that every slot is
   held by a live process, and what to do.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import wave

import numpy as np

BIN = os.environ["FC_BIN"]
PY = sys.executable

# Opens Loaders on the store until the reader table is full (each holds one read transaction:
# one slot), says how many it holds, then waits for its fate: killed (its slots left stale) or
# told to exit.
FILLER = r'''
import sys, featcache
lds, err = [], ""
while len(lds) < 1100:
    try:
        lds.append(featcache.Loader(sys.argv[1], features="hifigan", batch_size=4,
                                    prefetch_threads=0))
    except featcache.FeatcacheError as e:
        err = str(e)
        break
print(len(lds), flush=True)
print(err, flush=True)
sys.stdin.read()
'''

HOLDER = r'''
import sys, featcache
ld = featcache.Loader(sys.argv[1], features="hifigan", batch_size=4, prefetch_threads=0)
print("holding", flush=True)
sys.stdin.read()
'''

READ = r'''
import sys, featcache
try:
    ld = featcache.Loader(sys.argv[1], features="hifigan", batch_size=4)
    print(sum(len(b) for b in ld))
except featcache.FeatcacheError as e:
    print("FeatcacheError:", e)
'''


def make_wavs(d, n):
    paths = []
    for i in range(n):
        p = os.path.join(d, "r%02d.wav" % i)
        x = 0.3 * np.sin(2 * np.pi * (200 + 40 * i) * np.arange(4410) / 22050.0)
        with wave.open(p, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(22050)
            w.writeframes((x * 32767).astype("<i2").tobytes())
        paths.append(p)
    return paths


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, **kw)


def start(script, store):
    return subprocess.Popen([PY, "-c", script, store], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def fill(store):
    """A filler process holding every free slot: (process, slots held, the error that stopped it)."""
    p = start(FILLER, store)
    n = int(p.stdout.readline())
    return p, n, p.stdout.readline().strip()


def main():
    with tempfile.TemporaryDirectory() as d:
        wavs = make_wavs(d, 6)
        store = os.path.join(d, "st")
        r = run(os.path.join(BIN, "featurize"), "-q", "-o", store, *wavs[:4])
        assert r.returncode == 0, r.stderr
        tsv = os.path.join(d, "t.tsv")
        with open(tsv, "w") as f:
            f.write("r00\thello there\nr01\tgood morning\n")

        holder = start(HOLDER, store)  # keeps the environment open: the table is never reset
        try:
            assert holder.stdout.readline().strip() == "holding"

            # 1. killed loaders fill the table
            filler, held, err = fill(store)
            assert held >= 1000 and "MDB_READERS_FULL" in err, (held, err)
            filler.send_signal(signal.SIGKILL)
            filler.wait()
            print("a killed process left %d reader slots; the table was full (%s)" % (held, err))

            r = run(PY, "-c", READ, store)
            assert r.returncode == 0 and r.stdout.strip() == "4", (r.stdout, r.stderr)
            print("a new Loader after it: read all 4 utterances")

            filler, held, err = fill(store)  # full again, of dead processes
            filler.send_signal(signal.SIGKILL)
            filler.wait()
            r = run(os.path.join(BIN, "featurize"), "-o", store, *wavs)
            assert r.returncode == 0 and "2 new" in r.stderr, (r.returncode, r.stderr)
            filler, held, err = fill(store)
            filler.send_signal(signal.SIGKILL)
            filler.wait()
            r = run(os.path.join(BIN, "tokenize"), "--build-vocab", "-o", store, "--manifest", tsv)
            assert r.returncode == 0, (r.returncode, r.stderr)
            print("featurize and tokenize on a table full of dead processes' slots: exit 0")

            filler, held, err = fill(store)
            filler.send_signal(signal.SIGKILL)
            filler.wait()
            r = run(os.path.join(BIN, "cache-verify"), "--json", store)
            assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
            rep = json.loads(r.stdout.splitlines()[0])
            assert rep["ok"] and rep["entries"]["feat"] == 6, rep
            assert rep["stale_cleared"] == held and rep["stale_readers"] == 0, rep
            warn = [w["problem"] for w in rep["warnings"] if w["key"] == "lock.mdb"]
            assert warn == ["%d stale reader slots of 1 dead process (pid %d) cleared: the reader "
                            "table was full" % (held, filler.pid)], warn
            print("cache-verify on it: %s" % warn[0])

            # a few killed loaders' slots, cleared on request: said on a terminal too (it said
            # nothing there: only --json's stale_cleared)
            few = start(FILLER.replace("< 1100", "< 3"), store)
            n = int(few.stdout.readline())
            few.send_signal(signal.SIGKILL)
            few.wait()
            r = run(os.path.join(BIN, "cache-verify"), "--clear-stale-readers", store)
            note = "%s: note: %d stale reader slots of dead processes cleared " \
                   "(--clear-stale-readers)" % (store, n)
            assert r.returncode == 0 and note in r.stdout.splitlines(), (n, r.stdout, r.stderr)
            print("cache-verify --clear-stale-readers: %s" % note)

            # 2. full of live readers: nothing to clear, said so
            filler, held, err = fill(store)
            try:
                assert held >= 1000, (held, err)
                r = run(PY, "-c", READ, store)
                want = ("every reader slot of its lock.mdb is held by a live process (1024 in a "
                        "table featcache set up; fewer where another LMDB program opened the "
                        "store first): end some of the store's readers")
                assert want in r.stdout, r.stdout
                r = run(os.path.join(BIN, "featurize"), "-o", store, *wavs)
                assert r.returncode == 2 and want in r.stderr, (r.returncode, r.stderr)
                print("a table full of live readers: %s" % r.stderr.strip().splitlines()[0])
            finally:
                filler.stdin.close()
                filler.wait()
            r = run(PY, "-c", READ, store)
            assert r.stdout.strip() == "6", (r.stdout, r.stderr)
        finally:
            holder.stdin.close()
            holder.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
