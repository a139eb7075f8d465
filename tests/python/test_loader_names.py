"""Store paths and utterance ids in the Loader's and get()'s messages are quoted as the tools quote
names (fc_quote_name): one that holds a control character, a quote, a backslash or a byte that is
not UTF-8 in double quotes with C escapes, a plain one as it is. They were printed raw in get()'s
'no such utterance' and failed-id reasons, a strict open's, a batch's and a config's: a newline in
a store's name split a message in two, an escape sequence in a name or an id reached the terminal.
The stores are written with featcache.testing; a split store by the real featurize."""

import os
import shutil
import subprocess
import sys
import tempfile
import wave

import numpy as np
import pytest

try:
    import lmdb  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import testing as T

BIN = os.environ.get("FC_BIN", "")
if not os.path.exists(os.path.join(BIN, "featurize")):
    print("FAIL: needs $FC_BIN/featurize")
    sys.exit(1)

ODD = "s\n\x1b[1m"  # a newline and an escape sequence
ODD_Q = r"s\n\033[1m"  # as a message shows them, inside the quotes


@pytest.fixture(scope="module")
def stores():
    d = os.path.realpath(tempfile.mkdtemp(prefix="fc_loader_names_"))
    odd = os.path.join(d, ODD)
    rng = np.random.default_rng(5)
    with T.StoreWriter(odd) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        w.add_utterance("u0", b"0", rng.standard_normal((40, 80)).astype(np.float32), cfg)
        w.add_utterance("nomel", b"1")  # an audio entry without its record
        rec = bytearray(T.encode_record(rng.standard_normal((50, 80)).astype(np.float32), cfg))
        rec[64 + 100] ^= 1  # its payload altered: the batch's checksum sees it
        w.add_utterance("bad\x1bpay", b"2", raw_record=bytes(rec), config=cfg)
    other = os.path.join(d, "k")
    with T.StoreWriter(other) as w:
        cfg = w.add_config(T.mel_config_json("kaldi"))
        w.add_utterance("k0", b"k", rng.standard_normal((40, 80)).astype(np.float32), cfg)
    yield dict(dir=d, odd=odd, q='"%s/%s"' % (d, ODD_Q), other=other)
    shutil.rmtree(d)


def one_line(msg):
    assert "\n" not in msg and "\x1b" not in msg, repr(msg)
    return msg


def test_get_names_the_store_and_the_id_quoted(stores):
    q = stores["q"]
    for uid, want in (("nope", "%s: nope: no such utterance" % q),
                      ("no\x1bpe", '%s: "no\\033pe": no such utterance' % q)):
        with pytest.raises(KeyError) as e:
            featcache.get(stores["odd"], uid)
        assert one_line(e.value.args[0]) == want
    with pytest.raises(KeyError) as e:
        featcache.get(stores["odd"], "nomel")
    assert one_line(e.value.args[0]).startswith("%s: nomel: no features for config " % q)


def test_get_of_a_damaged_record_names_the_store_and_the_id_quoted(stores):
    # the payload check is get()'s own (featcache.get in Python): its message named them raw
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.get(stores["odd"], "bad\x1bpay")
    assert one_line(str(e.value)).startswith(
        "get('bad\\x1bpay'): %s: \"bad\\033pay\": payload checksum" % stores["q"]), str(e.value)


def test_get_of_a_split_store_names_the_id_quoted(stores):
    # a split store is read as its parts: an id none holds is 'in any of the 2 stores'
    w = os.path.join(stores["dir"], "a.wav")
    with wave.open(w, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(22050)
        f.writeframes((np.sin(np.arange(11025) * 0.05) * 8000).astype("<i2").tobytes())
    split = os.path.join(stores["dir"], "split")
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "--writers", "2",
                        "-o", split, w], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with pytest.raises(KeyError) as e:
        featcache.get(split, "no\x1bpe")
    assert one_line(e.value.args[0]) == '"no\\033pe": no such utterance in any of the 2 stores'


def test_strict_open_names_the_store_quoted(stores):
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader(stores["odd"], strict=True)
    assert "%s: nomel: no features for config " % stores["q"] in one_line(str(e.value))


def test_a_batch_names_the_id_quoted(stores):
    ld = featcache.Loader(stores["odd"], batch_size=8, prefetch_threads=0)
    errors = [x for b in ld for x in b.errors]
    assert len(errors) == 1 and one_line(errors[0]).startswith('"bad\\033pay": '), errors
    # strict: the damaged record fails its batch (a store without 'nomel', which fails the open)
    d = os.path.join(stores["dir"], ODD + "2")
    rng = np.random.default_rng(6)
    with T.StoreWriter(d) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        w.add_utterance("u0", b"0", rng.standard_normal((40, 80)).astype(np.float32), cfg)
        rec = bytearray(T.encode_record(rng.standard_normal((50, 80)).astype(np.float32), cfg))
        rec[-1] ^= 1
        w.add_utterance("bad\x1bpay", b"2", raw_record=bytes(rec), config=cfg)
    with pytest.raises(featcache.FeatcacheError) as e:
        list(featcache.Loader(d, batch_size=8, prefetch_threads=0, strict=True))
    assert '"%s/%s2": "bad\\033pay": ' % (stores["dir"], ODD_Q) in one_line(str(e.value))


def test_configs_name_the_stores_quoted(stores):
    q = stores["q"]
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader(stores["odd"], features="kaldi")
    assert "%s: no mel config named 'kaldi' in the store" % q in one_line(str(e.value))
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader([stores["other"], stores["odd"]])
    assert "%s: its mel config is " % q in one_line(str(e.value))


def test_a_manifest_is_named_quoted(stores):
    with pytest.raises(featcache.FeatcacheError) as e:
        featcache.Loader(stores["odd"], manifest=os.path.join(stores["dir"], "m\x1b.csv"))
    assert 'manifest "%s/m\\033.csv": ' % stores["dir"] in one_line(str(e.value))


def test_python_quotes_names_as_the_library():
    # the names get() and a Loader's own messages hold, quoted by featcache as fc_quote_name
    # quotes them (tests/unit/test_format.c's cases: the same answers)
    from featcache import loader as L
    cases = [(b"a.wav", "a.wav"), (b"caf\xc3\xa9.wav", "caf\u00e9.wav"),
             (b"caf\xe9.wav", r'"caf\xe9.wav"'), (b"caf\\xe9.wav", r'"caf\\xe9.wav"'),
             (b'a\tb\n\x1b"', r'"a\tb\n\033\""'), (b"\xc3", r'"\xc3"'),
             (b"\xc3(\xc3\xa9", '"\\xc3(\u00e9"'), (b"\xc0\xaf", r'"\xc0\xaf"'),
             (b"\xed\xa0\x80", r'"\xed\xa0\x80"'), (b"\xf4\x90\x80\x80", r'"\xf4\x90\x80\x80"'),
             (b"\x7f\xff", r'"\177\xff"'), (b"a\xc2\x9b31m", r'"a\u009b31m"'),
             (b"a\xe2\x80\xa8b", r'"a\u2028b"'), (b"\xe2\x80\xaevaw.exe", r'"\u202evaw.exe"'),
             (b"\xe2\x81\xa6x\xe2\x81\xa9", r'"\u2066x\u2069"'),
             (b"\xef\xbb\xbfa.wav", r'"\ufeffa.wav"'),
             (b"\xc2\xa0\xe2\x80\x8d", "\u00a0\u200d"), (b"", "")]
    for raw, want in cases:
        assert L._quoted(raw) == want, (raw, L._quoted(raw), want)
        assert L._quoted(os.fsdecode(raw)) == want, raw


def test_an_id_that_is_not_utf8_says_how_featurize_stored_it(stores):
    """An id from a Latin-1 file name as Python reads it (os.listdir, os.fsdecode: the byte 0xe9
    as the surrogate U+DCE9) is the id featurize stored with that byte as the four characters
    \\xe9 (docs/FORMAT.md). Loader(ids=...) raised a bare UnicodeEncodeError ('utf-8' codec can't
    encode character '\\udce9' ...) that named neither the id nor the way out; get() said only
    that no store holds it."""
    d = os.path.join(stores["dir"], "latin1")
    with T.StoreWriter(d) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        w.add_utterance("caf\\xe9", b"0", np.zeros((40, 80), np.float32), cfg)
    name = os.fsdecode(b"caf\xe9")  # 'caf\udce9'
    # (the stored id is the 7 characters caf\xe9, which repr shows as 'caf\\xe9')
    hint = (r"ids are UTF-8: featurize stored the file name's byte 0xe9 as the characters \xe9, "
            r"its id is 'caf\\xe9'")
    with pytest.raises(ValueError) as e:
        featcache.Loader(d, ids=["u0", name])
    assert one_line(str(e.value)) == r"featcache: ids: 'caf\udce9' is not UTF-8 (%s)" % hint
    with pytest.raises(KeyError) as e:
        featcache.get(d, name)
    assert one_line(e.value.args[0]) == (r"featcache: 'caf\udce9': no such utterance (%s)"
                                         % hint), e.value.args[0]
    # the id it names is the stored one
    ld = featcache.Loader(d, ids=["caf\\xe9"], strict=True)
    assert [i for b in ld for i in b.ids] == ["caf\\xe9"]
    assert featcache.get(d, "caf\\xe9").shape == (40, 80)
    # a lone surrogate that no byte gave (not a file name): not UTF-8, nothing to suggest
    with pytest.raises(ValueError) as e:
        featcache.Loader(d, ids=["\ud800x"])
    assert str(e.value) == r"featcache: ids: '\ud800x' is not UTF-8 (ids are UTF-8)"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
