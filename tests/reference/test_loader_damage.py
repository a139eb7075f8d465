"""A damaged record is never handed to training silently: stores made by featurize in f32, f16
and mq, one payload byte of one record altered at a time (behind its valid header), at many
positions. The Loader's default reads each such store: the damaged utterance is skipped and
named in its batch's errors (or, for an mq payload whose coded header the index checks, in the
loader's problems at open) every time, every other utterance is served with the clean store's
values; strict=True raises naming it; verify=False serves it (the switch the default replaces).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

try:
    import lmdb
    import soundfile as sf
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache

FLIPS = 24  # positions per dtype: first and last payload byte, the rest spread between


@pytest.fixture(scope="module")
def corpus():
    d = tempfile.mkdtemp(prefix="fc_loader_damage_")
    rng = np.random.default_rng(8)
    paths = []
    for i in range(6):
        n = int(rng.integers(11025, 33075))
        t = np.arange(n) / 22050
        x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * t) + 0.05 * rng.standard_normal(n)
        p = os.path.join(d, "u%d.wav" % i)
        sf.write(p, x.astype(np.float32), 22050, subtype="PCM_16")
        paths.append(p)
    yield d, paths
    shutil.rmtree(d)


def featurize(d, paths, dtype):
    store = os.path.join(d, "s-" + dtype)
    subprocess.run([os.path.join(os.environ["FC_BIN"], "featurize"), "-q", "--device", "cpu",
                    "--dtype", dtype, "-o", store] + paths, check=True)
    return store


def read_all(store, **kw):
    """{id: mel} served, and the "id: reason" of each utterance skipped: at open (an mq payload
    header the index checks) or in its batch (the payload checksum)."""
    ld = featcache.Loader(store, batch_size=4, prefetch_threads=0, **kw)
    got, errors = {}, ["%s: %s" % (p[0], p[2]) for p in ld.problems()]
    for b in ld:
        for i, u in enumerate(b.ids):
            got[u] = np.array(b.mels[i], dtype=np.float32)
        errors += list(b.errors)
    return got, errors


def put_value(store, key, val):
    """Write one feat value in a child process: this process has the store open through the
    Loader, and LMDB must not open one environment twice in a process."""
    code = ("import lmdb, sys\n"
            "env = lmdb.open(sys.argv[1], max_dbs=8)\n"
            "with env.begin(write=True) as t:\n"
            "    t.put(bytes.fromhex(sys.argv[2]), sys.stdin.buffer.read(), db=env.open_db(b'feat', txn=t))\n")
    subprocess.run([sys.executable, "-c", code, store, key.hex()], input=val, check=True)


def id_of_key(store):
    """{feat key: id} through the audio entries (digest) and the config digest."""
    import xxhash
    env = lmdb.open(store, max_dbs=8, readonly=True, lock=False)
    out = {}
    with env.begin() as t:
        cfgs = [bytes(k)[4:] for k, _ in t.cursor(db=env.open_db(b"meta", txn=t, create=False))
                if bytes(k).startswith(b"cfg/")]
        assert len(cfgs) == 1
        cd = bytes.fromhex(cfgs[0].decode())
        for k, v in t.cursor(db=env.open_db(b"audio", txn=t, create=False)):
            h = xxhash.xxh3_128_intdigest(bytes(v)[:16] + cd)
            key = (h & (2**64 - 1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")
            out[key] = bytes(k).decode()
    env.close()
    return out


@pytest.mark.parametrize("dtype", ["f32", "f16", "mq"])
def test_default_read_detects_every_damaged_payload(corpus, dtype):
    d, paths = corpus
    store = featurize(d, paths, dtype)
    ids = id_of_key(store)  # py-lmdb first: no Loader of this store is open yet
    assert len(ids) == len(paths)
    keys = sorted(ids)
    env = lmdb.open(store, max_dbs=8, readonly=True, lock=False)
    with env.begin() as t:
        vals = {k: bytes(t.get(k, db=env.open_db(b"feat", txn=t, create=False))) for k in keys}
    env.close()
    clean, errors = read_all(store)
    assert errors == [] and len(clean) == len(paths)
    detected = 0
    for j in range(FLIPS):
        key = keys[j % len(keys)]
        orig = vals[key]
        n = len(orig) - 64
        pos = 0 if j == 0 else n - 1 if j == 1 else int((j * 7919) % n)
        bad = bytearray(orig)
        bad[64 + pos] ^= 0x10
        put_value(store, key, bytes(bad))
        try:
            uid = ids[key]
            got, errors = read_all(store)
            assert uid not in got, "%s: byte %d of %s's payload altered, served by default" % (
                dtype, pos, uid)
            assert len(errors) == 1 and errors[0].startswith(uid + ": ") and \
                ("payload" in errors[0] or "mq" in errors[0]), errors
            for u, m in got.items():
                np.testing.assert_array_equal(m, clean[u])
            with pytest.raises(featcache.FeatcacheError, match=r"%s: (payload checksum|.*mq)" % uid):
                for _ in featcache.Loader(store, batch_size=4, prefetch_threads=0, strict=True):
                    pass
            if dtype != "mq":  # an altered mq payload may not decode: its batch fails instead
                got, errors = read_all(store, verify=False)
                assert uid in got and errors == []
            detected += 1
        finally:
            put_value(store, key, orig)
    assert detected == FLIPS
    print("%s: %d of %d altered payloads detected by the default read" % (dtype, detected, FLIPS))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
