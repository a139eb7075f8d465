"""Corrupt and missing records: a clear error naming the utterance, never a crash.

Cases written with featcache.testing: a record whose header checksum is wrong, one truncated
(value shorter than its header says), one with the wrong number of mel bins, one whose payload
was altered after it was written (header fine, payload checksum wrong: caught when its batch is
built, by default; served with verify=False), an audio entry without a feature record, and a text
without an audio entry."""

import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

try:
    import lmdb  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import testing as T


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_loader_bad_")
    path = os.path.join(d, "s")
    rng = np.random.default_rng(3)
    mel = lambda n: rng.standard_normal((n, 80)).astype(np.float32)  # noqa: E731
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(6):
            w.add_utterance("good%d" % i, b"g%d" % i, mel(50 + i), cfg)
        rec = bytearray(T.encode_record(mel(60), cfg))
        rec[9] ^= 0xFF
        w.add_utterance("bad_header", b"h", raw_record=bytes(rec), config=cfg)
        w.add_utterance("truncated", b"t", raw_record=T.encode_record(mel(60), cfg)[:-100],
                        config=cfg)
        w.add_utterance("wrong_bins", b"w", raw_record=T.encode_record(
            rng.standard_normal((60, 40)).astype(np.float32), cfg), config=cfg)
        rec = bytearray(T.encode_record(mel(70), cfg))
        rec[64 + 1000] ^= 0x01
        w.add_utterance("bad_payload", b"p", raw_record=bytes(rec), config=cfg)
        w.add_utterance("no_features", b"n", config=cfg)
        w.add_utterance("text_ok", b"x", mel(40), cfg, text="hello")
        with w.env.begin(write=True) as t:
            t.put(b"only_text", T.digest(b"orphan") + b"orphan", db=w.db["text"])
    yield path
    shutil.rmtree(d)


def test_problems_reported_and_skipped(store):
    ld = featcache.Loader(store, batch_size=4)
    probs = {p[0]: p[2] for p in ld.problems()}
    assert probs["bad_header"].startswith("corrupt feature record: ")
    assert "checksum" in probs["bad_header"]
    assert probs["truncated"].startswith("corrupt feature record: ")
    assert "[frames][80]" in probs["wrong_bins"]
    assert probs["no_features"].startswith("no features for config ")
    assert "bad_payload" not in probs  # header is fine: the batch's checksum sees it
    assert all(p[1] == store for p in ld.problems())
    batches = list(ld)
    ids = [u for b in batches for u in b.ids]
    assert sorted(ids) == sorted(["good%d" % i for i in range(6)] + ["text_ok"])
    errors = [e for b in batches for e in b.errors]
    assert len(errors) == 1 and errors[0].startswith("bad_payload: ") and "payload" in errors[0]
    # verify=False: the payload checksum is not computed, the damaged record is served
    ids = [u for b in featcache.Loader(store, batch_size=4, verify=False) for u in b.ids]
    assert sorted(ids) == sorted(["good%d" % i for i in range(6)] + ["bad_payload", "text_ok"])


@pytest.mark.parametrize("threads", [0, 2])
def test_verify_skips_bad_payload(store, threads):
    ld = featcache.Loader(store, batch_size=32, verify=True, prefetch_threads=threads, padded=True)
    batches = list(ld)
    assert len(batches) == 1
    b = batches[0]
    assert "bad_payload" not in b.ids and len(b) == 7
    assert len(b.errors) == 1 and b.errors[0].startswith("bad_payload: ")
    assert "payload" in b.errors[0]


@pytest.mark.parametrize("threads", [0, 2])
def test_errors_name_the_store_among_several(store, tmp_path, threads):
    """Read beside other stores (shards), a skipped record's line says which store holds it, the
    one to check (cache-verify) or make again; it said "bad_payload: ..." alone, and a loop over
    16 shards could not tell which. One store: "id: reason" as before."""
    other = str(tmp_path / "other")
    rng = np.random.default_rng(5)
    with T.StoreWriter(other) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(3):
            w.add_utterance("other%d" % i, b"o%d" % i,
                            rng.standard_normal((30, 80)).astype(np.float32), cfg)
    ld = featcache.Loader([other, store], batch_size=32, prefetch_threads=threads)
    errors = [e for b in ld for e in b.errors]
    assert len(errors) == 1, errors
    assert errors[0].startswith("bad_payload: ") and errors[0].endswith(" (in %s)" % store), errors


@pytest.mark.parametrize("threads", [0, 2])
def test_a_padded_batch_left_empty_is_still_padded(store, threads):
    """A padded batch left with no utterance (its one record's payload damaged) is a padded batch
    of none: mels [0, T, 80]; it was padded=False with mels [] (a list), on which a
    loop's torch.from_numpy(batch.mels) fails."""
    ld = featcache.Loader(store, ids=["bad_payload", "good0"], batch_size=1, pad_to=64,
                          prefetch_threads=threads)
    batches = list(ld)
    assert [b.ids for b in batches] == [[], ["good0"]], [b.ids for b in batches]
    empty, full = batches
    assert empty.errors[0].startswith("bad_payload: ")
    assert empty.padded and full.padded
    assert isinstance(empty.mels, np.ndarray) and empty.mels.shape == (0, 64, 80)
    assert empty.mels.dtype == full.mels.dtype and empty.mel_lengths.shape == (0,)


@pytest.mark.parametrize("threads", [0, 2])
def test_strict(store, threads):
    with pytest.raises(featcache.FeatcacheError, match=r"s: bad_header: corrupt feature record"):
        len(featcache.Loader(store, strict=True))
    # a store whose only problem is a corrupt payload: strict + verify fails in iteration
    d = tempfile.mkdtemp(prefix="fc_loader_bad2_")
    try:
        p = os.path.join(d, "s")
        with T.StoreWriter(p) as w:
            cfg = w.add_config(T.mel_config_json("hifigan"))
            w.add_utterance("a", b"a", np.zeros((30, 80), np.float32), cfg)
            rec = bytearray(T.encode_record(np.ones((40, 80), np.float32), cfg))
            rec[-1] ^= 1
            w.add_utterance("b", b"b", raw_record=bytes(rec), config=cfg)
        ld = featcache.Loader(p, batch_size=1, verify=True, strict=True, prefetch_threads=threads)
        it = iter(ld)
        assert next(it).ids == ["a"]
        with pytest.raises(featcache.FeatcacheError,
                           match=r"FC_ECHECKSUM.*/s: b: payload checksum"):
            next(it)
    finally:
        shutil.rmtree(d)


def test_get_checks_the_payload(store):
    """featcache.get handed out a record whose payload was altered after it was written (its
    header fine) as if it were sound, though the Loader skips it: a map-style dataset reading
    with get() trained on it silently. get() checks the payload checksum by default, as the
    Loader does (verify=False serves it unchecked)."""
    good = featcache.get(store, "good1")
    assert good.shape == (51, 80)
    with pytest.raises(featcache.FeatcacheError,
                       match=r"^get\('bad_payload'\): .*/s: bad_payload: payload checksum") as e:
        featcache.get(store, "bad_payload")
    assert e.value.code == featcache._lib.FC_ECHECKSUM
    assert featcache.get(store, "bad_payload", verify=False).shape == (70, 80)


def test_tokens_missing(store):
    ld = featcache.Loader(store, tokens=None)
    assert len(ld) == 1
    with pytest.raises(featcache.FeatcacheError) as e:  # (it said "it has: none", not what to do)
        len(featcache.Loader(store, tokens="chars"))
    assert ("%s: no tokens config named 'chars' in the store (it has none: no token ids were "
            "stored in it; tokenize --manifest FILE -o %s stores them)" % (store, store)
            ) in str(e.value), str(e.value)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
