"""featcache.Loader(manifest=..., ids=...): one store made for a whole corpus serves a train / dev
split. The epochs hold exactly the ids of the manifest (and of the ids list), with the same
features as the whole store's epoch; an id no store holds is a problem ('not stored', or the
failure featurize recorded for it), or raises under strict; problems of ids outside the split
are not listed. Checked through the stores' indexes, without them (dropped with py-lmdb, as a
store made before indexes), over two shards read as one dataset, and through the PyTorch
adapter. The store is made by the real featurize and tokenize."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

try:
    import lmdb
    import numpy as np
    import pytest
    import soundfile as sf
    import torch  # noqa: F401  (the adapter below)
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache.torch import FeatcacheDataset

BIN = os.environ.get("FC_BIN", os.path.join(os.path.dirname(__file__), "../../build"))
N = 12
TRAIN = ["u%02d" % i for i in range(N) if i % 3]
DEV = ["u%02d" % i for i in range(N) if i % 3 == 0]


def run(tool, *args, ok=(0,)):
    p = subprocess.run([os.path.join(BIN, tool), *map(str, args)], capture_output=True, text=True)
    assert p.returncode in ok, "%s %s -> %d\n%s" % (tool, args, p.returncode, p.stderr)
    return p


def write_manifest(path, ids):
    with open(path, "w") as m:
        for i in ids:
            m.write("%s|Sentence %s.|Sentence %s\n" % (i, i, i))


@pytest.fixture(scope="module")
def corpus():
    d = tempfile.mkdtemp(prefix="fc_loader_subset_")
    rng = np.random.default_rng(7)
    os.makedirs(os.path.join(d, "wavs"))
    for i in range(N):
        n = int(rng.integers(6000, 20000))
        x = 0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * np.arange(n) / 22050)
        sf.write(os.path.join(d, "wavs", "u%02d.wav" % i), x.astype(np.float32), 22050,
                 subtype="PCM_16")
    open(os.path.join(d, "wavs", "bad.wav"), "wb").close()  # empty: featurize records a failure
    write_manifest(os.path.join(d, "metadata.csv"), ["u%02d" % i for i in range(N)] + ["bad"])
    write_manifest(os.path.join(d, "train.csv"), TRAIN)
    write_manifest(os.path.join(d, "dev.csv"), DEV + ["bad", "gone"])
    store = os.path.join(d, "cache")
    meta = os.path.join(d, "metadata.csv")
    run("featurize", "-q", "--device", "cpu", "--manifest", meta, "--max-failed", "1", "-o", store)
    run("tokenize", "-q", "--manifest", meta, "--build-vocab", "-o", store)
    shards = [os.path.join(d, "s%d" % k) for k in range(2)]
    for k, s in enumerate(shards):
        run("featurize", "-q", "--device", "cpu", "--manifest", meta, "--shard", "%d/2" % k,
            "--max-failed", "1", "-o", s, ok=(0, 1))
    old = os.path.join(d, "old")
    shutil.copytree(store, old)
    env = lmdb.open(old, max_dbs=256, subdir=True)
    with env.begin(write=True) as t:
        for name in [bytes(k) for k, _ in t.cursor() if bytes(k).startswith(b"index/")]:
            t.drop(env.open_db(name, txn=t, create=False), delete=True)
    env.close()
    yield dict(dir=d, store=store, old=old, shards=shards)
    shutil.rmtree(d)


def epoch(paths, **kw):
    out = {}
    with featcache.Loader(paths, batch_size=4, padded=True, **kw) as ld:
        for b in ld:
            assert not b.errors
            for i, uid in enumerate(b.ids):
                n = int(b.mel_lengths[i])
                out[uid] = np.array(b.mels[i][:n])
    return out


@pytest.mark.parametrize("which", ["store", "old", "shards"])
def test_manifest_split(corpus, which):
    paths = corpus[which]
    whole = epoch(paths)
    assert sorted(whole) == ["u%02d" % i for i in range(N)]
    train = epoch(paths, manifest=os.path.join(corpus["dir"], "train.csv"))
    assert sorted(train) == TRAIN
    for uid, mel in train.items():
        assert np.array_equal(mel, whole[uid])
    with featcache.Loader(paths, manifest=os.path.join(corpus["dir"], "train.csv")) as ld:
        assert ld.num_items == len(TRAIN)
        assert ld.problems() == []


@pytest.mark.parametrize("which", ["store", "old"])
def test_missing_and_failed_ids_are_problems(corpus, which):
    dev = os.path.join(corpus["dir"], "dev.csv")
    with featcache.Loader(corpus[which], manifest=dev, tokens="chars") as ld:
        assert ld.num_items == len(DEV)
        probs = {p[0]: p[2] for p in ld.problems()}
        assert sorted(probs) == ["bad", "gone"], probs
        assert probs["gone"] == "not stored: in the manifest, in none of the stores"
        # tokenize stored its text: an utterance with a text entry and no audio entry
        assert probs["bad"].startswith("text without audio entry: featurize failed it: "), probs
        assert sorted(u for b in ld for u in b.ids) == DEV
    with featcache.Loader(corpus[which], manifest=dev) as ld:
        probs = {p[0]: p[2] for p in ld.problems()}
        assert sorted(probs) == ["bad", "gone"], probs
        assert probs["bad"].startswith("not stored: featurize failed it: "), probs["bad"]
    # STRICT names the store with the id, as its other refusals do ("featcache: bad: not
    # stored: ..." named no store)
    with pytest.raises(featcache.FeatcacheError, match=r"^featcache: %s: bad: not stored: "
                       r"featurize failed it: " % re.escape(corpus[which])):
        featcache.Loader(corpus[which], manifest=dev, strict=True)
    with pytest.raises(featcache.FeatcacheError, match=r"^featcache: %s: gone: not stored: "
                       r"asked for, in none of the stores$" % re.escape(corpus[which])):
        featcache.Loader(corpus[which], ids=["u01", "gone"], strict=True)


def test_strict_names_the_store_that_recorded_the_failure(corpus):
    """Among shards, the one whose featurize recorded the failure (as problems() names it)."""
    with featcache.Loader(corpus["shards"], ids=["u01", "bad"]) as ld:
        (uid, store, why), = ld.problems()
        assert uid == "bad" and why.startswith("not stored: featurize failed it: "), why
    with pytest.raises(featcache.FeatcacheError, match=r"^featcache: %s: bad: not stored: "
                       r"featurize failed it: " % re.escape(store)):
        featcache.Loader(corpus["shards"], ids=["u01", "bad"], strict=True)


def test_ids_list_and_union_with_manifest(corpus):
    # a repeated id is in the epoch once, and said (a list repeating ids to oversample them got
    # each once, without a word)
    with pytest.warns(RuntimeWarning) as caught:
        assert sorted(epoch(corpus["store"], ids=["u04", "u01", "u04"])) == ["u01", "u04"]
    assert [str(w.message) for w in caught] == [
        "featcache: ids: 1 of the 3 ids repeats one given before ('u04'): an epoch holds each "
        "utterance once (a repeated id does not oversample it)"]
    with pytest.warns(RuntimeWarning, match=r"ids: 3 of the 5 ids repeat one given before "
                      r"\('u01', \.\.\.\)"):
        featcache.Loader(corpus["store"], ids=["u01", "u01", "u04", "u04", "u01"]).close()
    both = epoch(corpus["store"], ids=["u00"], manifest=os.path.join(corpus["dir"], "train.csv"))
    assert sorted(both) == sorted(TRAIN + ["u00"])
    # an id that no store holds is said as where it was named: a manifest given beside the ids
    # made every one "in the manifest", those of the ids too
    for manifest, ids, want in (
            ("train.csv", ["u00", "nope"], {"nope": "asked for"}),
            ("dev.csv", ["u00", "nope"], {"nope": "asked for", "gone": "in the manifest"}),
            ("dev.csv", ["gone"], {"gone": "asked for"}),
            (None, ["nope"], {"nope": "asked for"})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # (no utterance: the last)
            with featcache.Loader(corpus["store"], ids=ids, manifest=manifest and os.path.join(
                    corpus["dir"], manifest)) as ld:
                got = {p[0]: p[2] for p in ld.problems() if p[0] != "bad"}
        assert got == {k: "not stored: %s, in none of the stores" % v for k, v in want.items()}, \
            (manifest, ids, got)
    with pytest.warns(RuntimeWarning, match=r"ids=\[\] names no utterance"):
        assert epoch(corpus["store"], ids=[]) == {}


def test_a_split_holding_no_utterance_warns(corpus):
    # a split none of whose ids is stored (a manifest of another corpus, ids spelled otherwise):
    # the Loader opened, and a loop over it ran no step, without a word
    with pytest.warns(RuntimeWarning, match=r"cache: the epochs hold no utterance: none of the "
                      r"utterances ids=\[...\] names is stored \(problems\(\) lists the 2 "
                      r"skipped\)"):
        ld = featcache.Loader(corpus["store"], ids=["nope1", "nope2"])
    assert ld.num_items == 0 and len(ld.problems()) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with featcache.Loader(corpus["store"], ids=["u01"]) as ld:
            assert ld.num_items == 1


def test_whole_store_problems_outside_the_split_not_listed(corpus):
    # the whole store has a text entry for "bad" (tokenize stored it) and no audio entry: the
    # whole store's loader lists it with tokens; the train split does not hold it
    with featcache.Loader(corpus["old"], tokens="chars") as ld:
        assert [p[0] for p in ld.problems()] == ["bad"]
    with featcache.Loader(corpus["old"], tokens="chars",
                          manifest=os.path.join(corpus["dir"], "train.csv"), strict=True) as ld:
        assert ld.num_items == len(TRAIN) and ld.problems() == []


def test_refused_manifest_lines_are_problems(corpus):
    """A manifest line featurize refuses though it names an id (a "duration" that is no number, a
    negative "offset") is not read, whatever the store holds under that id (featurize before
    the check stored the whole file), and problems() says so: no utterance dropped unsaid."""
    m = os.path.join(corpus["dir"], "refused.jsonl")
    wav = os.path.join(corpus["dir"], "wavs", "%s.wav")
    with open(m, "w") as f:
        f.write('{"audio_filepath": "%s", "duration": 0.5, "text": "a"}\n' % (wav % "u01"))
        f.write('{"audio_filepath": "%s", "duration": "3.2s", "text": "b"}\n' % (wav % "u02"))
        f.write('{"audio_filepath": "%s", "offset": -1, "text": "c"}\n' % (wav % "u04"))
        f.write('{"audio_filepath": "%s", "text": "a again"}\n' % (wav % "u01"))  # a duplicate
    with featcache.Loader(corpus["store"], manifest=m) as ld:
        assert sorted(u for b in ld for u in b.ids) == ["u01"]
        probs = {p[0]: p[2] for p in ld.problems()}
        assert sorted(probs) == ["u02", "u04"], probs
        assert probs["u02"].startswith("not read: manifest line 2 skipped: "), probs["u02"]
        assert '"duration"' in probs["u02"] and '"offset"' in probs["u04"], probs
    with pytest.raises(featcache.FeatcacheError, match=r"^featcache: %s: u02: not read: manifest "
                       r"line 2 skipped: " % re.escape(corpus["store"])):
        featcache.Loader(corpus["store"], manifest=m, strict=True)


def test_bad_arguments(corpus):
    with pytest.raises(TypeError, match="a list of ids"):
        featcache.Loader(corpus["store"], ids="u01")
    with pytest.raises(ValueError, match="is not an id"):
        featcache.Loader(corpus["store"], ids=["u01", ""])
    missing = os.path.join(corpus["dir"], "no-such.csv")
    with pytest.raises(featcache.FeatcacheError, match="manifest .*no-such.csv: "):
        featcache.Loader(corpus["store"], manifest=missing)


def test_torch_dataset_takes_the_split(corpus):
    ds = FeatcacheDataset(corpus["store"], manifest=os.path.join(corpus["dir"], "train.csv"),
                          batch_size=4)
    seen = [u for b in ds for u in b["ids"]]
    assert sorted(seen) == TRAIN


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
