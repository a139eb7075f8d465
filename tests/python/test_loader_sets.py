"""The stores a Loader reads as one dataset, checked as a set.

Shards of one `featurize --shard K/N` run given with one missing, one store given twice (under
another spelling), or one shard in two stores (a rerun into another directory, a copy) are
refused at open, naming them, unless partial=True; stores of other configs are refused naming the
store. The stores are made by the real featurize from espeak-ng speech."""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import featcache

BIN = os.environ.get("FC_BIN", "")
for need, found in (("$FC_BIN/featurize", os.path.exists(os.path.join(BIN, "featurize"))),
                    ("espeak-ng (scripts/setup installs it)", shutil.which("espeak-ng"))):
    if not found:
        print("FAIL: needs %s" % need)
        sys.exit(1)

TEXTS = ["One.", "Two words.", "Three words here.", "A fourth one.", "The fifth line.",
         "And the sixth."]


def featurize(out, wavs, *args):
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", out] +
                       list(args) + wavs, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def corpus():
    d = tempfile.mkdtemp(prefix="fc_loader_sets_")
    wavs = []
    for i, t in enumerate(TEXTS):
        w = os.path.join(d, "utt%d.wav" % i)
        subprocess.run(["espeak-ng", "-w", w, t], check=True)
        wavs.append(w)
    for k in range(3):
        featurize(os.path.join(d, "s%d" % k), wavs[:6], "--shard", "%d/3" % k)
    featurize(os.path.join(d, "k2"), wavs[:6], "--shard", "2/3", "--preset", "kaldi")
    yield dict(dir=d, wavs=wavs, s=[os.path.join(d, "s%d" % k) for k in range(3)])
    shutil.rmtree(d)


def refused(match, paths, **kw):
    with pytest.raises(featcache.FeatcacheError, match=match):
        featcache.Loader(paths, **kw)


def test_a_whole_set_opens(corpus):
    assert featcache.Loader(corpus["s"]).num_items == 6


def test_a_missing_shard_is_refused(corpus):
    s = corpus["s"]
    refused(r"incomplete set of shards: of 3 shards, 2 given: 1 missing.*partial=True",
            [s[0], s[2]])
    n = featcache.Loader([s[0], s[2]], partial=True).num_items
    assert n == 6 - featcache.Loader([s[1]]).num_items


def test_one_shard_alone_is_read(corpus):
    # as cache-verify: a store recording its shard, alone, is a part read on purpose
    featcache.Loader([corpus["s"][1]])


def test_a_store_given_twice_is_refused(corpus):
    s = corpus["s"]
    refused(r"s0/\.: the same store as .*s0, given twice", [s[0], s[1], s[2], s[0] + "/."])
    refused(r"given twice", [s[0], s[1], s[2], s[0] + "/."], partial=True)


def test_a_shard_in_two_stores_is_refused(corpus):
    s = corpus["s"]
    copy = os.path.join(corpus["dir"], "s0-copy")
    shutil.copytree(s[0], copy)
    try:
        refused(r"s0-copy: holds shard 0/3, as .*s0 does", s + [copy])
        assert featcache.Loader(s + [copy], partial=True).num_items == 6
    finally:
        shutil.rmtree(copy)


def test_a_member_of_another_config_is_refused(corpus):
    s = corpus["s"]
    refused(r"k2: its mel config is [0-9a-f]{32}, .*s0's is", [s[0], s[1],
                                                               os.path.join(corpus["dir"], "k2")])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
