"""The stores a Loader reads as one dataset, checked as a set, and the view the ranks compare.

Shards of one `featurize --shard K/N` run given with one missing, one store given twice (under
another spelling), or one shard in two stores (a rerun into another directory, a copy) are
refused at open, naming them, unless partial=True; stores of other configs are refused naming the
store. A Loader's view (fc_loader_view_digest) changes when a writer commits between two opens;
check_ranks compares the ranks' views and options and raises on a difference; a process that
reopens a Loader made elsewhere (a forked DataLoader worker) and sees another view raises too.
The stores are made by the real featurize from espeak-ng speech."""

import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import pytest

import featcache

BIN = os.environ.get("FC_BIN", "")
for need, found in (("$FC_BIN/featurize", os.path.exists(os.path.join(BIN, "featurize"))),
                    ("espeak-ng (scripts/setup installs it)", shutil.which("espeak-ng"))):
    if not found:
        print("FAIL: needs %s" % need)
        sys.exit(1)

TEXTS = ["One.", "Two words.", "Three words here.", "A fourth one.", "The fifth line.",
         "And the sixth.", "Seven.", "Eight is late."]


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
    refused(r"incomplete set of shards: of 3 shards, 2 given: shard 1 missing.*partial=True",
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


def test_the_view_changes_when_a_writer_commits(corpus):
    d = os.path.join(corpus["dir"], "grow")
    featurize(d, corpus["wavs"][:6])
    a, b = featcache.Loader(d), featcache.Loader(d, shuffle=True, seed=3)
    assert len(a.view) == 32 and a.view == b.view  # options are not the view
    assert featcache.check_ranks(a, gather=lambda mine: [mine]) == a.view
    featurize(d, corpus["wavs"][6:7])
    c = featcache.Loader(d)
    assert c.num_items == a.num_items + 1 and c.view != a.view


def test_the_locality_view_sees_where_records_lie(corpus):
    # ranks reading copies of one store laid out otherwise (mdb_copy -c, for HDDs) plan other
    # locality epochs from the same index: their views differ for that order only
    mdb_copy = shutil.which("mdb_copy")
    if not mdb_copy:
        pytest.skip("no mdb_copy (lmdb-utils)")
    d = os.path.join(corpus["dir"], "layout")
    featurize(d, corpus["wavs"])
    c = os.path.join(corpus["dir"], "layout-c")
    os.mkdir(c)
    subprocess.run([mdb_copy, "-c", d, c], check=True)
    kw = dict(order="locality", batch_size=1, locality_run=1, seed=1)
    a, b = featcache.Loader(d, **kw), featcache.Loader(c, **kw)
    order = [[i for bt in ld for i in bt.ids] for ld in (a, b)]
    assert order[0] != order[1]  # the premise: a compact copy lies otherwise
    assert a.view != b.view
    assert featcache.Loader(d).view == featcache.Loader(c).view  # other orders: the index alone
    assert featcache.Loader(d, **kw).view == a.view


def fake_ranks(*loaders):
    """check_ranks over loaders as ranks 0..n-1 of one run, every rank's answer (or error)."""
    mine = []
    for r, ld in enumerate(loaders):
        ld.rank = r
    # gather each rank's own record, then let each rank compare the whole list
    for ld in loaders:
        featcache.check_ranks(ld, gather=lambda m: mine.append(m) or [m])
    out = []
    for ld in loaders:
        try:
            out.append(featcache.check_ranks(ld, gather=lambda m: list(mine)))
        except featcache.FeatcacheError as e:
            out.append(e)
    return out


def test_check_ranks_names_the_ranks_that_differ(corpus):
    d = os.path.join(corpus["dir"], "ranks")
    featurize(d, corpus["wavs"][:5])
    r0 = featcache.Loader(d, shuffle=True, world_size=2, rank=0)
    featurize(d, corpus["wavs"][5:6])  # a writer commits between the ranks' opens
    r1 = featcache.Loader(d, shuffle=True, world_size=2, rank=1)
    for e in fake_ranks(r0, r1):
        assert isinstance(e, featcache.FeatcacheError)
        assert "rank 1 sees 6 utterances" in str(e) and "rank 0 sees 5" in str(e), str(e)
    r0 = featcache.Loader(d, shuffle=True, world_size=2, rank=0, seed=1)
    r1 = featcache.Loader(d, shuffle=True, world_size=2, rank=1, seed=2)
    for e in fake_ranks(r0, r1):
        assert isinstance(e, featcache.FeatcacheError) and "rank 1 has seed=2, rank 0 seed=1" in str(e)
    r1 = featcache.Loader(d, shuffle=True, world_size=2, rank=1, seed=1)
    assert fake_ranks(r0, r1) == [r0.view, r0.view]


def test_a_loader_made_before_torch_distributed_is_caught(corpus, monkeypatch):
    # rank and world_size left to torch.distributed, the Loader made before init_process_group:
    # it took rank 0 of world_size 1, so every rank read the whole dataset, the same batches,
    # and check_ranks (all views and options equal) passed without a word
    d = os.path.join(corpus["dir"], "before")
    featurize(d, corpus["wavs"][:4])
    two = [featcache.Loader(d, shuffle=True) for _ in range(2)]  # ranks 0 and 1, before init
    mine = []
    for ld in two:
        featcache.check_ranks(ld, gather=lambda m: mine.append(m) or [m])
    for ld in two:
        with pytest.raises(featcache.FeatcacheError) as e:
            featcache.check_ranks(ld, gather=lambda m: list(mine))
        assert ("check_ranks: the Loaders of ranks 0, 1 were made before torch.distributed was "
                "initialized: each took rank 0 of world_size 1 and reads every utterance, not "
                "its share of the 2 ranks'") in str(e.value), str(e.value)
    # rank=0, world_size=1 given: every rank reads the same batches on purpose
    same = [featcache.Loader(d, shuffle=True, rank=0, world_size=1) for _ in range(2)]
    mine = []
    for ld in same:
        featcache.check_ranks(ld, gather=lambda m: mine.append(m) or [m])
    for ld in same:
        assert featcache.check_ranks(ld, gather=lambda m: list(mine)) == ld.view
    # without check_ranks: iterating it in a process group of 2 warns, once
    monkeypatch.setattr(featcache.loader, "_dist_rank_world", lambda: (1, 2))
    with pytest.warns(RuntimeWarning, match="the Loader of rank 1 was made before "
                      "torch.distributed was initialized: it took rank 0 of world_size 1"):
        assert sum(len(b) for b in two[0]) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sum(len(b) for b in two[0]) == 4
        assert sum(len(b) for b in same[0]) == 4


def test_a_process_reopening_a_changed_store_raises(corpus):
    d = os.path.join(corpus["dir"], "fork")
    featurize(d, corpus["wavs"][:5])
    ld = featcache.Loader(d, shuffle=True)
    same = os.fork()
    if same == 0:  # the store as it was: the child reads it
        try:
            os._exit(0 if sum(len(b.ids) for b in ld) == 5 else 3)
        except BaseException:
            os._exit(4)
    assert os.waitpid(same, 0)[1] == 0
    featurize(d, corpus["wavs"][5:6])
    pid = os.fork()
    if pid == 0:
        try:
            for _ in ld:
                pass
            os._exit(2)
        except featcache.FeatcacheError as e:
            os._exit(0 if "the stores changed since the Loader was made" in str(e)
                     and "saw 5 utterances" in str(e) and "sees 6" in str(e) else 3)
        except BaseException:
            os._exit(4)
    assert os.waitpid(pid, 0)[1] == 0
    assert sum(len(b.ids) for b in ld) == 5  # the maker's own snapshot: unchanged



def test_a_dataloader_worker_of_a_changed_store_raises(corpus):
    torch = pytest.importorskip("torch")
    from featcache.torch import FeatcacheDataset
    d = os.path.join(corpus["dir"], "workers")
    featurize(d, corpus["wavs"][:5])
    ds = FeatcacheDataset(d, batch_size=2)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1)
    assert sum(len(b["ids"]) for b in dl) == 5
    featurize(d, corpus["wavs"][5:6])  # the workers of the next epoch open the store anew
    # (a FeatcacheError, as the docs say: torch re-raises a worker's exception as its type made
    # of the message alone, which FeatcacheError(code, message) refused: a RuntimeError came)
    with pytest.raises(featcache.FeatcacheError, match="the stores changed since the Loader was"):
        for _ in dl:
            pass


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
