"""featurize reruns by the source's identity (docs/featurize.md "Reruns"): a file whose audio
entry names its path with its size and mtime is not read; a touched file is read and hashed, and
its entry takes the new mtime (so the rerun after it reads nothing); a file of another size is
featurized again; --rehash reads every file. The trade is shown as it is: bytes changed behind an
unchanged size and mtime are not seen without --rehash."""
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
    import pytest
    import soundfile as sf
except ImportError as e:  # pragma: no cover
    print(f"FAIL: {e} (scripts/setup installs it)")
    sys.exit(1)

from featcache.testing import digest, index_problems

FC_BIN = os.environ.get("FC_BIN", os.path.join(os.path.dirname(__file__), "../../build"))


def write_wav(path, seed, n=16000):
    rng = np.random.default_rng(seed)
    sf.write(path, (0.2 * rng.standard_normal(n)).astype(np.float32), 22050, subtype="PCM_16")


def featurize(store, files, *extra):
    p = subprocess.run([os.path.join(FC_BIN, "featurize"), "--json", "-q", "-o", store, *extra,
                        *files], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def entry(store, uid):
    """(digest, size, mtime_ns) of uid's audio entry."""
    env = lmdb.open(store, readonly=True, lock=False, max_dbs=8, subdir=True)
    with env.begin() as t:
        v = bytes(t.get(uid.encode(), db=env.open_db(b"audio", txn=t, create=False)))
    env.close()
    size, mtime = struct.unpack_from("<Qq", v, 32)
    return v[:16], size, mtime


@pytest.fixture()
def corpus():
    d = tempfile.mkdtemp(prefix="fc_rerun_")
    files = []
    for i in range(6):
        f = os.path.join(d, "r%d.wav" % i)
        write_wav(f, i)
        files.append(f)
    store = os.path.join(d, "st")
    s = featurize(store, files)
    assert s["processed"] == 6
    yield d, files, store
    shutil.rmtree(d)


def replace_keeping_identity(path, seed):
    """Other bytes, the same size and mtime: what only --rehash can see."""
    st = os.stat(path)
    write_wav(path, seed)
    assert os.path.getsize(path) == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_rerun_reads_nothing(corpus):
    d, files, store = corpus
    replace_keeping_identity(files[0], 100)
    s = featurize(store, files)
    assert s["processed"] == 0 and s["skipped_existing"] == 6
    assert s["stages"]["read"] == 0.0
    # the changed bytes went unseen: the entry still holds the old digest
    with open(files[0], "rb") as f:
        assert entry(store, "r0")[0] != digest(f.read())
    # --rehash reads every file: it sees them and stores the new features
    s = featurize(store, files, "--rehash")
    assert s["processed"] == 1 and s["skipped_existing"] == 5
    with open(files[0], "rb") as f:
        assert entry(store, "r0")[0] == digest(f.read())
    assert index_problems(store)[0] == []


def test_touched_file_rehashed_and_entry_updated(corpus):
    d, files, store = corpus
    old = entry(store, "r1")
    st = os.stat(files[1])
    os.utime(files[1], ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    s = featurize(store, files)
    assert s["processed"] == 0 and s["skipped_existing"] == 6  # the same bytes: nothing to do
    new = entry(store, "r1")
    assert new[0] == old[0] and new[1] == old[1]
    assert new[2] == os.stat(files[1]).st_mtime_ns != old[2]  # the entry names it as it is now
    # the next rerun takes it by its identity again: other bytes behind it go unseen
    replace_keeping_identity(files[1], 101)
    s = featurize(store, files)
    assert s["processed"] == 0 and s["stages"]["read"] == 0.0
    assert entry(store, "r1")[0] == old[0]


def test_changed_size_featurized_again(corpus):
    d, files, store = corpus
    write_wav(files[2], 102, n=20000)
    s = featurize(store, files)
    assert s["processed"] == 1 and s["skipped_existing"] == 5
    with open(files[2], "rb") as f:
        assert entry(store, "r2")[0] == digest(f.read())
    assert index_problems(store)[0] == []


def test_path_is_part_of_the_identity(corpus):
    d, files, store = corpus
    # the same files by another spelling of their paths (relative, with "."): the entries hold
    # paths made absolute, so this is the same identity and nothing is read
    rel = [os.path.join(".", os.path.relpath(f, d)) for f in files]
    p = subprocess.run([os.path.join(FC_BIN, "featurize"), "--json", "-q", "-o", "st", *rel],
                       cwd=d, capture_output=True, text=True)
    s = json.loads(p.stdout)
    assert p.returncode == 0 and s["skipped_existing"] == 6 and s["stages"]["read"] == 0.0, s
    # the same bytes under another path (a copy of the corpus): read, hashed, entries updated
    other = os.path.join(d, "copy")
    os.mkdir(other)
    copies = [shutil.copy2(f, other) for f in files]
    s = featurize(store, copies)
    assert s["skipped_existing"] == 6 and s["stages"]["read"] > 0, s
    assert featurize(store, copies)["stages"]["read"] == 0.0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
