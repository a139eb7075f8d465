"""The index (docs/FORMAT.md "Index") as the tools leave it, checked with featcache.testing's
Python reading of the format: featurize under two presets and tokenize under two tokenizers
into one store (the second config of each kind indexes ids whose entries were already there);
the loader reads the same batches through the indexes as from the same store without them (its
index dbs dropped with py-lmdb, as a store made before indexes); a later featurize into that
old store keeps reading it without indexes; cache-merge of it gives a store with exact indexes;
cache-config --drop empties the dropped config's index, and storing the config again indexes it
anew."""
import os
import shutil
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

import featcache
from featcache.testing import index_problems

FC_BIN = os.environ.get("FC_BIN", os.path.join(os.path.dirname(__file__), "../../build"))


def run(tool, *args):
    p = subprocess.run([os.path.join(FC_BIN, tool), *map(str, args)], capture_output=True,
                       text=True)
    assert p.returncode == 0, f"{tool} {args} -> {p.returncode}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def corpus():
    d = tempfile.mkdtemp(prefix="fc_index_tools_")
    rng = np.random.default_rng(5)
    os.makedirs(os.path.join(d, "wavs"))
    with open(os.path.join(d, "metadata.csv"), "w") as m:
        for i in range(24):
            n = int(rng.integers(8000, 30000))
            x = 0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * np.arange(n) / 22050)
            sf.write(os.path.join(d, "wavs", "u%02d.wav" % i), x.astype(np.float32), 22050,
                     subtype="PCM_16")
            m.write("u%02d|Sentence %d, said twice.|Sentence %d said twice\n" % (i, i, i))
    yield d
    shutil.rmtree(d)


def drop_indexes(store):
    env = lmdb.open(store, max_dbs=256, subdir=True)
    with env.begin(write=True) as t:
        for name in [bytes(k) for k, _ in t.cursor() if bytes(k).startswith(b"index/")]:
            t.drop(env.open_db(name, txn=t, create=False), delete=True)
    env.close()


def epoch(store, **kw):
    out = []
    for b in featcache.Loader(store, batch_size=5, padded=True, **kw):
        assert not b.errors
        for i, uid in enumerate(b.ids):
            n = b.mel_lengths[i]
            t = None if b.tokens is None else b.tokens[i][:b.token_lengths[i]].tolist()
            out.append((uid, int(n), float(np.asarray(b.mels[i][:n], np.float64).sum()), t))
    return out


def test_two_configs_of_each_kind_indexed(corpus):
    st = os.path.join(corpus, "st")
    man = os.path.join(corpus, "metadata.csv")
    run("featurize", "-q", "--manifest", man, "-o", st)
    run("featurize", "-q", "--preset", "tacotron2", "--manifest", man, "-o", st)
    run("tokenize", "-q", "--manifest", man, "--tokenizer", "chars", "--build-vocab", "-o", st)
    run("tokenize", "-q", "--manifest", man, "--tokenizer", "chars", "--build-vocab",
        "--case", "fold", "--add-eos", "-o", st)  # the same texts under another config
    problems, counts = index_problems(st)
    assert problems == []
    assert sorted(counts.values()) == [24, 24, 24, 24], counts
    # cache-verify agrees: no findings, four indexes of 24 ids
    p = run("cache-verify", "--json", st)
    assert '"indexed_configs":4' in p.stdout and '"index_entries":96' in p.stdout, p.stdout


def test_loader_same_without_indexes_and_old_store_stays_old(corpus):
    man = os.path.join(corpus, "metadata.csv")
    st, old = os.path.join(corpus, "l_new"), os.path.join(corpus, "l_old")
    run("featurize", "-q", "--manifest", man, "-o", st)
    run("tokenize", "-q", "--manifest", man, "--tokenizer", "chars", "--build-vocab", "-o", st)
    shutil.copytree(st, old)
    drop_indexes(old)
    for kw in (dict(), dict(tokens="chars"), dict(tokens="chars", shuffle=True, seed=3)):
        a, b = epoch(st, **kw), epoch(old, **kw)
        assert a == b and len(a) == 24, kw
    # a second featurize into the old store: its config keeps no index, the loader reads it
    run("featurize", "-q", "--manifest", man, "-o", old)
    assert index_problems(old)[1] == {}
    # merged into a new store: indexes for every config, exact
    merged = os.path.join(corpus, "l_merged")
    run("cache-merge", "-q", "-o", merged, old)
    problems, counts = index_problems(merged)
    assert problems == [] and sorted(counts.values()) == [24, 24], (problems, counts)
    assert epoch(merged, tokens="chars") == epoch(st, tokens="chars")


def test_drop_and_store_again(corpus):
    man = os.path.join(corpus, "metadata.csv")
    st = os.path.join(corpus, "d")
    run("featurize", "-q", "--manifest", man, "-o", st)
    run("tokenize", "-q", "--manifest", man, "--tokenizer", "chars", "--build-vocab", "-o", st)
    run("cache-config", "--drop", "chars", st)
    problems, counts = index_problems(st)
    assert problems == [] and sorted(counts.values()) == [24], counts
    env = lmdb.open(st, readonly=True, lock=False, max_dbs=256, subdir=True)
    with env.begin() as t:  # the dropped config's index: emptied, never stale
        names = [bytes(k) for k, _ in t.cursor() if bytes(k).startswith(b"index/")]
        sizes = [t.stat(env.open_db(n, txn=t, create=False))["entries"] for n in names]
    env.close()
    assert sorted(sizes) == [0, 24], sizes
    assert len(epoch(st)) == 24
    run("tokenize", "-q", "--manifest", man, "--tokenizer", "chars", "--build-vocab", "-o", st)
    problems, counts = index_problems(st)
    assert problems == [] and sorted(counts.values()) == [24, 24], counts
    assert len(epoch(st, tokens="chars")) == 24


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
