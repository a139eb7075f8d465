"""tokenize's writes in key order: a job of several batches into a store without text entries or
token records is a bulk load (sorted runs in a temporary file, appended in key order at the end);
any other job commits each batch with its puts sorted by key. Both give the store a job of one
batch gives — the same text entries, token records and index, byte for byte, read with py-lmdb —
and the same counts, texts repeated across batches included; a job added to a store that holds
half of them (the per-batch path) too; and nothing is left beside the store. A bulk load killed
before its merge leaves the store as it was; one stopped by SIGTERM merges the batches it did; the
rerun of either ends with the same store."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import lmdb
    import pytest
except ImportError as e:  # pragma: no cover
    print(f"FAIL: {e} (scripts/setup installs it)")
    sys.exit(1)

from featcache.testing import index_problems

FC_BIN = os.environ.get("FC_BIN", os.path.join(os.path.dirname(__file__), "../../build"))


def tokenize(store, manifest, *extra):
    p = subprocess.run([os.path.join(FC_BIN, "tokenize"), "--json", "-q", "--tokenizer", "chars",
                        "--vocab", os.path.join(os.path.dirname(manifest), "vocab.txt"),
                        "--manifest", manifest, "-o", store, *extra],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def tables(store):
    """Every named db but meta: {name: {key: value}}."""
    env = lmdb.open(store, readonly=True, lock=False, max_dbs=256, subdir=True)
    out = {}
    with env.begin() as t:
        for name in [bytes(k) for k, _ in t.cursor()]:
            if name == b"meta":
                continue
            db = env.open_db(name, txn=t, create=False)
            out[name] = {bytes(k): bytes(v) for k, v in t.cursor(db=db)}
    env.close()
    return out


@pytest.fixture(scope="module")
def corpus():
    d = tempfile.mkdtemp(prefix="fc_tok_bulk_")
    rng = random.Random(4)
    words = "the of and to in was he that it for his on with as had by at which not be".split()
    lines = []
    for i in range(3000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        if i % 53 == 0:
            text = "said twice, in batches far apart"  # one record for many lines
        lines.append("L%05d|%s|%s" % (i, text, text))
    rng.shuffle(lines)  # ids out of order: the runs sort them
    with open(os.path.join(d, "all.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(d, "half.csv"), "w") as f:
        f.write("\n".join(lines[:1500]) + "\n")
    with open(os.path.join(d, "vocab.txt"), "w") as f:
        f.write("\n".join(["<pad>", "<unk>", "<bos>", "<eos>"] +
                          sorted(set("".join(x.split("|")[1] for x in lines)))) + "\n")
    yield d
    shutil.rmtree(d)


def test_bulk_and_batches_store_the_same_bytes(corpus):
    man = os.path.join(corpus, "all.csv")
    one, bulk, half = (os.path.join(corpus, n) for n in ("one", "bulk", "half"))
    s_one = tokenize(one, man, "--batch", "100000")  # one batch: no bulk load
    s_bulk = tokenize(bulk, man, "--batch", "256")  # 12 batches into an empty store: bulk
    tokenize(half, os.path.join(corpus, "half.csv"), "--batch", "256")
    s_rest = tokenize(half, man, "--batch", "256")  # a store that holds half: batch by batch
    keys = ("processed", "skipped_existing", "failed", "tokens", "unknown")
    assert [s_one[k] for k in keys] == [s_bulk[k] for k in keys]
    assert s_one["processed"] < 3000 and s_one["skipped_existing"] > 0  # the repeated text
    assert s_rest["processed"] + s_rest["skipped_existing"] == 3000
    t_one = tables(one)
    assert len(t_one[b"text"]) == 3000 and len(t_one[b"tok"]) == s_one["processed"]
    assert tables(bulk) == t_one
    assert tables(half) == t_one
    for st in (one, bulk, half):
        assert index_problems(st)[0] == []
        assert sorted(os.listdir(st)) == ["data.mdb", "lock.mdb"]  # no spill file left


def test_rerun_after_bulk_is_a_no_op(corpus):
    man = os.path.join(corpus, "all.csv")
    st = os.path.join(corpus, "again")
    tokenize(st, man, "--batch", "256")
    s = tokenize(st, man, "--batch", "256")
    assert s["processed"] == 0 and s["skipped_existing"] == 3000


def spilled(pid, store):
    """Bytes in the job's unnamed spill file in STORE (0 while there is none)."""
    fds = "/proc/%d/fd" % pid
    try:
        for fd in os.listdir(fds):
            link = os.readlink(os.path.join(fds, fd))
            if link.startswith(store + "/") and link.endswith("(deleted)"):
                return os.stat(os.path.join(fds, fd)).st_size
    except OSError:
        pass
    return 0


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_bulk_load_stopped(corpus, sig):
    """A bulk load killed before its merge leaves the store as it was; stopped by SIGTERM it merges
    the batches done (exit 143); either way the rerun ends with the store a whole run makes."""
    if not shutil.which("espeak-ng"):
        pytest.fail("espeak-ng not installed (scripts/setup installs it)")
    man = os.path.join(corpus, "all.csv")
    pv = os.path.join(corpus, "pv.txt")
    with open(pv, "w") as f:
        f.write("<pad>\n<unk>\n \n")
    args = ["-q", "--json", "-t", "phonemes", "--vocab", pv, "--manifest", man, "-j", "1"]
    ref = os.path.join(corpus, "ph-ref-%d" % sig)
    st = os.path.join(corpus, "ph-%d" % sig)
    tk = os.path.join(FC_BIN, "tokenize")
    subprocess.run([tk, *args, "-o", ref, "--batch", "100000"], check=True, capture_output=True)
    os.makedirs(st)
    p = subprocess.Popen([tk, *args, "-o", st, "--batch", "20"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    while p.poll() is None and spilled(p.pid, st) == 0:  # a batch is in the runs
        time.sleep(0.01)
    assert p.poll() is None, "the job ended before a batch was spilled: %s" % p.stderr.read()
    p.send_signal(sig)
    out, err = p.communicate()
    if sig == signal.SIGKILL:
        assert p.returncode == -signal.SIGKILL
        t = tables(st)
        assert not t.get(b"tok") and not t.get(b"text"), "a killed bulk load wrote to the store"
    else:
        assert p.returncode == 143, err
        s = json.loads(out)
        t = tables(st)
        assert 0 < len(t[b"tok"]) < len(tables(ref)[b"tok"])
        assert len(t[b"text"]) == s["processed"] + s["skipped_existing"]
        assert index_problems(st)[0] == []
    assert sorted(os.listdir(st)) == ["data.mdb", "lock.mdb"]
    subprocess.run([tk, *args, "-o", st, "--batch", "20"], check=True, capture_output=True)
    assert tables(st) == tables(ref)
    assert index_problems(st)[0] == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
