"""featcache.Loader opens and checks its stores when it is made: a path that is no store, a preset
or token config the store lacks, raise FeatcacheError from the constructor (naming what is wrong),
not from the first batch; a good Loader still pickles (reopened at first use in the process that
unpickles it) and featcache.get() still opens for lookups only. The store is made by the real
featurize from espeak-ng speech."""

import ctypes
import os
import pickle
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import wave

import pytest

import featcache

BIN = os.environ.get("FC_BIN", "")
for need, found in (("$FC_BIN/featurize", os.path.exists(os.path.join(BIN, "featurize"))),
                    ("espeak-ng (scripts/setup installs it)", shutil.which("espeak-ng"))):
    if not found:
        print("FAIL: needs %s" % need)
        sys.exit(1)


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_loader_open_")
    wavs = []
    for i, t in enumerate(["One sentence.", "And another one, a little longer."]):
        w = os.path.join(d, "utt%d.wav" % i)
        subprocess.run(["espeak-ng", "-w", w, t], check=True)
        wavs.append(w)
    out = os.path.join(d, "cache")
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", out] + wavs,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    os.mkdir(os.path.join(d, "empty"))
    yield dict(path=out, dir=d)
    shutil.rmtree(d)


def raises_at_construction(match, *args, **kw):
    with pytest.raises(featcache.FeatcacheError, match=match):
        featcache.Loader(*args, **kw)


def test_missing_path(store):
    missing = os.path.join(store["dir"], "no-such-store")
    raises_at_construction(r"no-such-store", missing)


def test_folder_that_is_no_store(store):
    raises_at_construction(r"empty", os.path.join(store["dir"], "empty"))


def test_preset_not_in_store(store):
    raises_at_construction(r"no mel config named 'whisper'", store["path"], features="whisper")


def test_tokens_not_in_store(store):
    raises_at_construction(r"no tokens config named 'chars'", store["path"], tokens="chars")


def test_a_whisper_store_padded_without_pad_value_is_named(store):
    """The silence of a whisper config depends on each utterance: a padded Loader wants
    pad_value. The message did not say of which store (a training script opening several)."""
    path = os.path.join(store["dir"], "wh")
    wavs = [os.path.join(store["dir"], "utt%d.wav" % i) for i in range(2)]
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "--preset",
                        "whisper", "-o", path] + wavs, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader(path, features="whisper", pad_to=100)
    assert str(e.value) == (
        "featcache: %s: pad_value: the silence of a whisper config ((max(x, max - 8) + 4) / 4) "
        "depends on each utterance's maximum: give pad_value" % path), str(e.value)
    ld = featcache.Loader(path, features="whisper", pad_to=100, pad_value=-1.5)
    assert ld.info.pad_value == -1.5 and sum(len(b) for b in ld) == 2


def test_epochs_of_no_batch_warn(store):
    """Utterances, but no batch of them (drop_last with a batch larger than the rank's share; more
    ranks than utterances with shard='drop'): a loop over the Loader ran no step, without a word.
    Now a RuntimeWarning when it is made, as for epochs of no utterance."""
    for kw, why in [
        (dict(batch_size=8, drop_last=True), "2 utterances, fewer than batch_size 8, and "
                                             "drop_last drops the short batch"),
        (dict(batch_size=2, drop_last=True, rank=1, world_size=2),
         "rank 1 of 2's share: 1 utterance, fewer than batch_size 2, and drop_last drops the "
         "short batch"),
        (dict(batch_size=1, rank=2, world_size=3, shard="drop"),
         "rank 2 of 3's share: no utterance of the 2 (shard='drop')")]:
        with pytest.warns(RuntimeWarning) as caught:
            ld = featcache.Loader(store["path"], **kw)
        msgs = [str(w.message) for w in caught]
        assert msgs == ["featcache: %s: the epochs hold no batch (a loop over it runs no step): %s"
                        % (store["path"], why)], msgs
        assert len(ld) == 0 and list(ld) == []
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        featcache.Loader(store["path"], batch_size=2, drop_last=True)  # one batch: no word


def test_several_mel_configs_none_the_default(store):
    # no features= and no hifigan among the store's mel configs: the message said "no mel config
    # named 'hifigan'", a name the caller never gave
    path = os.path.join(store["dir"], "two_configs")
    wavs = [os.path.join(store["dir"], "utt%d.wav" % i) for i in range(2)]
    for preset in ("kaldi", "librosa"):
        r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "--preset",
                            preset, "-o", path] + wavs, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    raises_at_construction(r"two_configs: the store holds 2 mel configs and none is the default "
                           r"\(hifigan\): choose one with features \(it has: (kaldi, librosa|"
                           r"librosa, kaldi)\)$", path)
    assert featcache.Loader(path, features="kaldi").num_items == 2

def test_good_loader_iterates_and_pickles(store):
    ld = featcache.Loader(store["path"], features="hifigan", batch_size=1)
    assert ld._h is not None  # opened by the constructor
    assert ld.num_items == 2
    again = pickle.loads(pickle.dumps(ld))
    assert again._h is None  # reopened at first use by whoever unpickled it
    assert sorted(i for b in again for i in b.ids) == ["utt0", "utt1"]


def test_profiler_counts_a_batch_by_its_size(store):
    # StepProfiler.iterate counted a LoaderBatch's utterances by len(batch.ids), which decodes
    # every id of every batch (~7 us a step, in the profile's "(other)") for a number the batch holds
    from featcache.profiler import StepProfiler, batch_items
    prof = StepProfiler()
    sizes = []
    for batch in prof.iterate(featcache.Loader(store["path"], features="hifigan", batch_size=2)):
        assert not hasattr(batch, "_ids")  # counted, its ids not decoded
        sizes.append(batch_items(batch))
    assert prof.steps == 1 and sizes == [2], (prof.steps, sizes)


def test_configs_named_by_str_only(store):
    # features=/tokens= took anything through str(): a digest as 16 raw bytes (what
    # featcache.testing's add_config returns) was looked up as the name "b'\\xaf...'"; and
    # config() of anything but "features" answered with the token config (None here)
    ld = featcache.Loader(store["path"])
    for bad in (bytes(16), 7):
        for kw in ("features", "tokens"):
            with pytest.raises(TypeError, match=r"^featcache: %s=%s: a config's name or its "
                               r"32-hex digest \(a str\)$" % (kw, re.escape(repr(bad)))):
                featcache.Loader(store["path"], **{kw: bad})
    with pytest.raises(ValueError, match=r"^featcache: config\('mel'\): which is 'features' or "
                       r"'tokens'$"):
        ld.config("mel")
    assert '"kind":"mel"' in ld.config() and ld.config("tokens") is None


def test_problems_of_a_store_whose_path_is_not_utf8(store):
    # Loader.problems() decoded the store's path as UTF-8: a folder named in another encoding
    # (bytes a str path carries as surrogates, os.fsdecode) raised UnicodeDecodeError. The
    # store comes back as the str the caller gave.
    import numpy as np
    from featcache import testing as T
    plain = os.path.join(store["dir"], "latin1")
    with T.StoreWriter(plain) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        w.add_utterance("u0", b"0", np.zeros((30, 80), np.float32), cfg)
        w.add_utterance("nomel", b"1")  # an audio entry without its record: skipped, listed
    path = os.path.join(store["dir"], os.fsdecode(b"caf\xe9"))
    os.rename(plain, path)
    ld = featcache.Loader(path)
    assert ld.num_items == 1
    (uid, where, why), = ld.problems()
    assert (uid, where) == ("nomel", path) and why, ld.problems()


def test_get_still_works(store):
    mel = featcache.get(store["path"], "utt0")
    assert mel.ndim == 2 and mel.shape[1] == 80
    with pytest.raises(KeyError):
        featcache.get(store["path"], "nope")
    with pytest.raises(TypeError, match=r"^featcache: get\(1\): an utterance id is a str$"):
        featcache.get(store["path"], 1)  # was AttributeError: 'int' object has no attribute ...


def test_get_takes_the_store_paths_a_loader_takes(store):
    # a store path as bytes (os.listdir(b"."), a Latin-1 directory name) opens a Loader; get()
    # failed on it with TypeError "Can't mix strings and bytes in path components"
    import pathlib
    want = featcache.get(store["path"], "utt0")
    for path in (os.fsencode(store["path"]), pathlib.Path(store["path"])):
        assert featcache.Loader(path).num_items == featcache.Loader(store["path"]).num_items
        got = featcache.get(path, "utt0")
        assert got.shape == want.shape and (got == want).all()
        with pytest.raises(KeyError, match="nope: no such utterance"):
            featcache.get(path, "nope")


def test_get_ids_no_store_can_hold(store):
    # an id with a NUL reached the C lookup cut at the NUL: get(store, "utt0\0x") gave utt0's
    # features; an empty or too long id (over 511 bytes) was a KeyError with no message (or the
    # message of an earlier lookup), one that UTF-8 cannot encode a UnicodeEncodeError
    for uid in ("utt0\0x", "utt0\n", "", "u" * 512):
        with pytest.raises(KeyError) as e:
            featcache.get(store["path"], uid)
        assert e.value.args[0] == "featcache: %r: no such utterance (no store holds such an id)" % (
            uid,), e.value.args
    with pytest.raises(KeyError) as e:  # (the id featurize made of such a name: test_loader_names)
        featcache.get(store["path"], "utt0\udc80")
    assert e.value.args[0].startswith(r"featcache: 'utt0\udc80': no such utterance (ids are UTF-8")
    assert featcache.get(store["path"], "utt0").shape[1] == 80


def test_get_of_an_utterance_featurize_failed_says_why(store):
    # featurize records why it failed an input (a file too short for one frame); the Loader's
    # problems() said so, get() said only "tiny: no such utterance"
    d = store["dir"]
    path = os.path.join(d, "failed")
    w = os.path.join(d, "tiny.wav")
    with wave.open(w, "wb") as f:  # 88 samples: no hifigan frame
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(22050)
        f.writeframes(b"\x01\x00" * 88)
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", path,
                        os.path.join(d, "utt0.wav"), w], capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    with pytest.raises(KeyError, match="tiny: not stored: featurize failed it: too short"):
        featcache.get(path, "tiny")
    with pytest.raises(KeyError, match="^'%s: nope: no such utterance'$" % re.escape(path)):
        featcache.get(path, "nope")
    assert featcache.get(path, "utt0").shape[1] == 80


def test_get_sees_utterances_stored_after_its_first_call(store):
    # get() keeps a lookup handle per store (a snapshot of it): an id stored later, by featurize
    # run again in a notebook or beside a long-running process, was a KeyError for good
    d = store["dir"]
    path = os.path.join(d, "grows")
    shutil.copytree(store["path"], path)
    w = os.path.join(d, "later.wav")
    subprocess.run(["espeak-ng", "-w", w, "Stored after the first lookup."], check=True)
    assert featcache.get(path, "utt1").shape[1] == 80
    with pytest.raises(KeyError):
        featcache.get(path, "later")
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", path, w],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    mel = featcache.get(path, "later")
    b = next(iter(featcache.Loader(path, batch_size=8)))
    assert mel.shape[0] > 10 and b.ids[0] == "later"
    assert (mel == b.mels[0]).all()
    with pytest.raises(KeyError):
        featcache.get(path, "still-not-there")


class OpenCounter:
    """Counts the opens of a file (inotify IN_OPEN, by any process): count() returns those since
    the last call."""

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        assert self.libc.inotify_add_watch(self.fd, os.fsencode(path), 0x20) >= 0  # IN_OPEN

    def count(self):
        n = 0
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return n
            off = 0
            while off < len(buf):
                _, mask, _, ln = struct.unpack_from("iIII", buf, off)
                n += bool(mask & 0x20)
                off += 16 + ln

    def close(self):
        os.close(self.fd)


def test_get_keeps_its_environment_while_a_writer_commits(store):
    # get() opened the store anew (data.mdb and lock.mdb opened, data.mdb mapped, the configs
    # read) at its first call after every commit of a writer, and at every id its snapshot
    # lacked: a loop of get() beside a featurize or tokenize run paid a whole open per commit,
    # and every KeyError one more. Its handle now moves to the latest snapshot in the
    # environment it has; a handle whose arrays are held is left to them, and a new one shares
    # the environment (no file opened either).
    d = store["dir"]
    path = os.path.join(d, "busy")
    shutil.copytree(store["path"], path)
    first = featcache.get(path, "utt0").copy()
    opens = OpenCounter(os.path.join(path, "data.mdb"))
    try:
        for i in range(3):
            w = os.path.join(d, "busy%d.wav" % i)
            subprocess.run(["espeak-ng", "-w", w, "Stored while get is called, %d." % i],
                           check=True)
            r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o",
                                path, w], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            opens.count()  # featurize's own
            assert (featcache.get(path, "utt0") == first).all()
            assert featcache.get(path, "busy%d" % i).shape[1] == 80  # the commit is seen
            with pytest.raises(KeyError):
                featcache.get(path, "never-stored")
            held = featcache.get(path, "utt0")
            assert opens.count() == 0, "get() opened data.mdb again after commit %d" % i
        b = list(featcache.Loader(path, batch_size=8))[0]
        assert sorted(b.ids) == ["busy0", "busy1", "busy2", "utt0", "utt1"]
        assert (held == first).all()
    finally:
        opens.close()


def test_get_after_the_store_is_rebuilt_and_moved_into_place(store):
    # get()'s lookup handle kept the store it first opened: a store rebuilt elsewhere and moved
    # over the old one (rm -r cache && mv new cache) gave the old, deleted store's features for
    # the life of the process, while a Loader opened then read the new one
    d = store["dir"]
    path, new = os.path.join(d, "rebuilt"), os.path.join(d, "rebuilt.new")
    shutil.copytree(store["path"], path)
    old = featcache.get(path, "utt0").copy()
    os.mkdir(os.path.join(d, "swapped"))
    w = os.path.join(d, "swapped", "utt0.wav")  # utt0 is now the longer sentence
    shutil.copyfile(os.path.join(d, "utt1.wav"), w)
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", new, w],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(path)
    os.rename(new, path)
    mel = featcache.get(path, "utt0")
    b = next(iter(featcache.Loader(path, batch_size=8)))
    assert b.ids == ["utt0"] and b.mels[0].shape != old.shape
    assert mel.shape == b.mels[0].shape and (mel == b.mels[0]).all()


def test_get_after_data_mdb_is_copied_over_in_place(store):
    # cp new/data.mdb cache/data.mdb keeps the file (its inode): get()'s lookup handle read the new
    # file's pages through its old snapshot's page numbers, which gave the old features (the
    # old pages still lie in the new file) or whatever those pages now hold. get() now opens the
    # store anew when data.mdb's size, mtime or ctime changed, and reads the copy's snapshot.
    d = store["dir"]
    path, new = os.path.join(d, "inplace"), os.path.join(d, "inplace.new")
    shutil.copytree(store["path"], path)
    shutil.copytree(store["path"], new)
    old = featcache.get(path, "utt0").copy()
    os.mkdir(os.path.join(d, "inplace.wav"))
    w = os.path.join(d, "inplace.wav", "utt0.wav")  # utt0 is now the longer sentence
    shutil.copyfile(os.path.join(d, "utt1.wav"), w)
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", new, w],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ino = os.stat(os.path.join(path, "data.mdb")).st_ino
    shutil.copyfile(os.path.join(new, "data.mdb"), os.path.join(path, "data.mdb"))
    assert os.stat(os.path.join(path, "data.mdb")).st_ino == ino
    want = featcache.get(new, "utt0")
    assert want.shape != old.shape
    mel = featcache.get(path, "utt0")
    assert mel.shape == want.shape and (mel == want).all()


def test_get_of_a_split_store_replaced(store):
    # a split store (featurize --writers 2: STORE/featcache-split, part-0/, part-1/) has no
    # STORE/data.mdb: get() found no inode to compare and kept its first handle for good, so a
    # split store rebuilt and moved into place, or a part's data.mdb copied over in place, gave
    # the old features. utt0 lies in part 0, utt3 in part 1 (FORMAT.md "Split stores").
    d = store["dir"]
    src = os.path.join(d, "utt1.wav")  # the longer sentence

    def split_store(out, utt0_wav):
        wd = out + ".wav"
        os.mkdir(wd)
        shutil.copyfile(utt0_wav, os.path.join(wd, "utt0.wav"))
        shutil.copyfile(src, os.path.join(wd, "utt3.wav"))
        r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "--writers",
                            "2", "-o", out, os.path.join(wd, "utt0.wav"),
                            os.path.join(wd, "utt3.wav")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert os.path.exists(os.path.join(out, "part-1", "data.mdb"))

    path = os.path.join(d, "split")
    split_store(path, os.path.join(d, "utt0.wav"))
    old = featcache.get(path, "utt0").copy()
    assert featcache.get(path, "utt3").shape[1] == 80
    new = os.path.join(d, "split.new")
    split_store(new, src)
    want = featcache.get(new, "utt0").copy()
    assert want.shape != old.shape
    shutil.rmtree(path)
    os.rename(new, path)
    mel = featcache.get(path, "utt0")
    assert mel.shape == want.shape and (mel == want).all()
    # a part's data.mdb copied over in place (the same inode)
    again = os.path.join(d, "split.again")
    split_store(again, os.path.join(d, "utt0.wav"))
    shutil.copyfile(os.path.join(again, "part-0", "data.mdb"),
                    os.path.join(path, "part-0", "data.mdb"))
    mel = featcache.get(path, "utt0")
    assert mel.shape == old.shape and (mel == old).all()


# ctypes stores a Python int into a C uint32/uint64 field modulo 2**32 (2**64) without a word: a
# negative or too large number became another option entirely (pad_to=-5: batches of 4294967291
# frames, "out of memory" at the first batch; batch_size=2**32: "batch_size 0 without
# max_frames"). Each is a ValueError naming the option and its value, before anything opens. The
# float pad_value too: 1e40 padded with inf, "x" was "must be real number, not str".
@pytest.mark.parametrize("kw", [
    dict(batch_size=-1), dict(batch_size=2 ** 32), dict(pad_to=-5), dict(crop_frames=-1),
    dict(max_frames=-1), dict(max_frames=2 ** 64), dict(rank=-1, world_size=2),
    dict(world_size=-2), dict(pad_multiple=-16), dict(prefetch_threads=-1),
    dict(prefetch_depth=-4), dict(bucket_batches=-1), dict(locality_run=2 ** 40),
    dict(token_pad=2 ** 31), dict(epoch=-1), dict(batch_size=8.5), dict(pad_to="800"),
    dict(n_buffers=-1), dict(pad_value=1e40, pad_to=8), dict(pad_value="x", pad_to=8)])
def test_bad_numbers_are_named(store, kw):
    name, value = next(iter(kw.items()))
    with pytest.raises((ValueError, TypeError)) as e:
        featcache.Loader(store["path"], **kw)
    assert str(e.value).startswith("featcache: %s=%r" % (name, value)), str(e.value)


@pytest.mark.parametrize("kw, message", [
    (dict(order="shuffle"), "featcache: order='shuffle': must be one of sequential, random, "
                            "bucket, locality"),
    (dict(shard="PAD"), "featcache: shard='PAD': must be one of pad, drop, uneven"),
    (dict(crop="middle", crop_frames=10), "featcache: crop='middle': must be one of start, "
                                          "center, random"),
    (dict(random_crop=True, crop="center", crop_frames=10),
     "featcache: random_crop=True and crop='center' exclude each other"),
    # (was read in file order without a word: order won)
    (dict(shuffle=True, order="sequential"),
     "featcache: shuffle=True and order='sequential' exclude each other"),
    (dict(pad_to=800, padded=False), "featcache: pad_to=800 pads only padded batches: pass "
                                     "padded=True (or leave padded out), or crop_frames=800 to crop "
                                     "views")])
def test_bad_choices_are_named(store, kw, message):
    # these said "order must be one of ..." without the value given, or without "featcache:"
    with pytest.raises(ValueError) as e:
        featcache.Loader(store["path"], **kw)
    assert str(e.value) == message

@pytest.mark.parametrize("kw, said", [
    (dict(pad_value=-4.0), "pad_value=-4.0 pads"), (dict(pad_value=0, padded=False), "pad_value=0.0 pads"),
    (dict(token_pad=-100), "token_pad=-100 pads"),
    (dict(pad_value=-1, token_pad=7, padded=False), "pad_value=-1.0 and token_pad=7 pad"),
    (dict(pad_value=-1, crop_frames=10), "pad_value=-1.0 pads")])
def test_pad_values_with_views_are_refused(store, kw, said):
    """pad_value and token_pad with views (never padded: each utterance's own mel and tokens)
    were taken and did nothing: a loop that asked for token_pad=-100 (cross_entropy's
    ignore_index) got views, and padded them itself with 0. A ValueError names them."""
    with pytest.raises(ValueError) as e:
        featcache.Loader(store["path"], **kw)
    want = ("featcache: %s only padded batches (views are never padded: the batch's mels and "
            "tokens are each utterance's own): pass padded=True or pad_to, or leave %s out"
            % (said, "them" if " and " in said else "it"))
    assert str(e.value) == want, str(e.value)
    # the adapters pass the options on: said when the dataset is made, not in a worker
    from featcache.torch import FeatcacheDataset
    with pytest.raises(ValueError) as e:
        FeatcacheDataset(store["path"], **kw)
    assert str(e.value) == want, str(e.value)


def test_pad_defaults_with_views_are_taken(store):
    # the defaults ask for nothing: None or nan (the config's silence), token_pad 0
    for kw in (dict(pad_value=None, token_pad=0), dict(pad_value=float("nan"), padded=False)):
        ld = featcache.Loader(store["path"], batch_size=2, **kw)
        (b,) = list(ld)
        assert not b.padded and len(b) == 2
    ld = featcache.Loader(store["path"], batch_size=2, padded=True, pad_value=-4, token_pad=-100)
    (b,) = list(ld)
    assert b.padded and ld.info.pad_value == -4.0


def test_numbers_in_range_are_taken(store):
    ld = featcache.Loader(store["path"], batch_size=2 ** 32 - 1, max_frames=2 ** 64 - 1,
                          token_pad=-1, seed=-1, pad_to=800, epoch=3)
    assert len(ld) == 1 and ld.epoch == 3
    with pytest.raises(ValueError, match=r"featcache: set_epoch\(-1\)"):
        ld.set_epoch(-1)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


def test_store_nothing_was_committed_to(store):
    # an LMDB environment nothing was ever committed to (its writer killed before its first
    # commit), and a data.mdb of 0 bytes (a full disk as the store was made): the loader said
    # "FC_EFORMAT: not in the featcache format", where every tool says "an empty store"
    lmdb = pytest.importorskip("lmdb")
    never = os.path.join(store["dir"], "never_committed")
    lmdb.open(never, max_dbs=8).close()
    zero = os.path.join(store["dir"], "zero_bytes")
    os.mkdir(zero)
    open(os.path.join(zero, "data.mdb"), "wb").close()
    for path in (never, zero):
        raises_at_construction(re.escape(
            "featcache: %s: an empty store: nothing was ever committed to it (its writer stopped "
            "before its first commit?): it holds no utterance; featurize (or tokenize) -o %s "
            "stores them" % (path, path)) + "$", path)


def test_store_without_features(store):
    # a store featurize has made but not yet committed to (a training run started too early), and
    # a store of token ids only: the message said "the store holds no mel config" and no more
    empty = os.path.join(store["dir"], "not_yet")
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "-o", empty, "-"], input="",
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    raises_at_construction(r"not_yet: the store holds no mel config: no features were stored in "
                           r"it yet \(a featurize still running on it stores its config with its "
                           r"first commit: wait for it to finish\)$", empty)
    tok = os.path.join(store["dir"], "tokens_only")
    manifest = os.path.join(store["dir"], "metadata.csv")
    with open(manifest, "w") as f:
        f.write("utt0|One sentence.|One sentence.\n")
    r = subprocess.run([os.path.join(BIN, "tokenize"), "-q", "--manifest", manifest,
                        "--build-vocab", "-o", tok], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    raises_at_construction(r"tokens_only: the store holds no mel config: token ids only "
                           r"\(tokenize's\), no features \(featurize -o \S*tokens_only stores "
                           r"them into it: the loader reads each utterance's features from the "
                           r"store that holds it, not from another given beside it\)$", tok)
    # given beside a store of features for the same ids, it is refused all the same (its
    # message said to give one beside it)
    raises_at_construction(r"tokens_only: the store holds no mel config: token ids only",
                           [tok, store["path"]])


def test_store_damaged_or_foreign(store):
    # a data.mdb of other bytes (damaged, or a file copied in its place) and another program's
    # LMDB environment: the loader said "FC_EFORMAT: not in the featcache format" and no more
    lmdb = pytest.importorskip("lmdb")
    junk = os.path.join(store["dir"], "junk")
    os.mkdir(junk)
    with open(os.path.join(junk, "data.mdb"), "wb") as f:
        f.write(bytes(range(256)) * 400)
    foreign = os.path.join(store["dir"], "foreign")
    with lmdb.open(foreign) as env, env.begin(write=True) as t:
        t.put(b"key", b"value")
    for path in (junk, foreign):
        raises_at_construction(re.escape(
            "featcache: %s: FC_EFORMAT: not a featcache store (not an LMDB environment with "
            "featcache/1 meta: damaged, or another program's); cache-verify %s says what it "
            "holds" % (path, path)) + "$", path)
