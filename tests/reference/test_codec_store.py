"""The mq codec end to end on real speech: espeak-ng utterances → featurize (hifigan, f32) and
featurize --codec mq into one store; then
- the two configs have different digests and both live in the store; the mq config says "mq";
- cache-verify passes; a payload damaged behind a re-sealed checksum is reported as not decoding;
- every record decodes, with numpy and the system libzstd following docs/FORMAT.md
  (featcache.testing.decode_mq, independent of the C decoder), to within 2^-8 of the f32 record;
- the Python loader (padded, views, cropped) and featcache.get return exactly those values;
- the store is at least 3x smaller than the f32 records' payloads (4x on the hour-long benchmark;
  a handful of short utterances carry more per-record overhead);
- featurize refuses --codec mq for a linear output and beside another --dtype (exit 2)."""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

try:
    import lmdb
    import xxhash
except ImportError as e:  # pragma: no cover
    print("skipped: %s" % e)
    sys.exit(77)

import featcache
from featcache import testing as T

BIN = os.environ.get("FC_BIN", "")
if not os.path.exists(os.path.join(BIN, "featurize")) or not shutil.which("espeak-ng"):
    print("skipped: needs $FC_BIN/featurize and espeak-ng")
    sys.exit(77)

TEXTS = ["The quick brown fox jumps over the lazy dog.",
         "Printing, in the only sense with which we are at present concerned, differs from most.",
         "Four.", "A river, a mountain, a village and a railway station in the morning light.",
         "Numbers like three hundred and forty two are read aloud."]


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_codec_")
    wavs = []
    for i, t in enumerate(TEXTS):
        w = os.path.join(d, "utt%d.wav" % i)
        subprocess.run(["espeak-ng", "-s", str(140 + 10 * i), "-w", w, t], check=True)
        wavs.append(w)
    out = os.path.join(d, "cache")
    fz = os.path.join(BIN, "featurize")
    for extra in ([], ["--codec", "mq"]):
        r = subprocess.run([fz, "-q", "-o", out] + extra + wavs, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    yield dict(path=out, wavs=wavs, dir=d)
    shutil.rmtree(d)


def configs(path):
    env = lmdb.open(path, max_dbs=8, readonly=True, lock=False)
    meta = env.open_db(b"meta", create=False)
    with env.begin() as t:
        cfgs = {bytes.fromhex(k[4:].decode()): v.decode() for k, v in t.cursor(db=meta)
                if k.startswith(b"cfg/")}
    env.close()
    return cfgs


def digest_of(cfgs, dtype):
    (d,) = [k for k, v in cfgs.items() if '"dtype":"%s"' % dtype in v]
    return d


def test_configs_differ(store):
    cfgs = configs(store["path"])
    assert len(cfgs) == 2
    d32, dmq = digest_of(cfgs, "f32"), digest_of(cfgs, "mq")
    assert d32 != dmq and T.digest(cfgs[dmq].encode()) == dmq
    # the mq config is the f32 one with dtype changed, nothing else
    assert cfgs[dmq].replace('"dtype":"mq"', '"dtype":"f32"').replace(
        '"preset":null', '"preset":"hifigan"') == cfgs[d32]


def test_values_within_bound_and_loader_equals_numpy_decode(store):
    cfgs = configs(store["path"])
    d32, dmq = digest_of(cfgs, "f32"), digest_of(cfgs, "mq")
    env = lmdb.open(store["path"], max_dbs=8, readonly=True, lock=False)
    ref, dec, f32_bytes, mq_bytes = {}, {}, 0, 0
    feat = env.open_db(b"feat", create=False)
    for i in range(len(TEXTS)):
        uid = "utt%d" % i
        ref[uid], _ = T.read_utterance(env, uid, d32)
        dec[uid], _ = T.read_utterance(env, uid, dmq)  # numpy + libzstd, from FORMAT.md
        assert dec[uid].shape == ref[uid].shape and dec[uid].dtype == np.float32
        err = np.abs(dec[uid].astype(np.float64) - ref[uid])
        assert err.max() <= 2.0 ** -8, (uid, err.max())
        assert (dec[uid] * 128 == np.rint(dec[uid] * 128)).all()
        with env.begin() as t:
            a = t.get(uid.encode(), db=env.open_db(b"audio", create=False))
            f32_bytes += len(t.get(T.record_key(a[:16], d32), db=feat)) - 64
            mq_bytes += len(t.get(T.record_key(a[:16], dmq), db=feat)) - 64
    env.close()
    assert f32_bytes / mq_bytes >= 3.0, (f32_bytes, mq_bytes)
    mq = dmq.hex()
    for kw in (dict(padded=True), dict(padded=False),
               dict(padded=True, crop_frames=50, random_crop=True, seed=3),
               dict(padded=False, crop_frames=33, random_crop=True, verify=True)):
        ld = featcache.Loader(store["path"], features=mq, batch_size=2, **kw)
        n = 0
        for b in ld:
            for j, uid in enumerate(b.ids):
                L, s = int(b.mel_lengths[j]), int(b.mel_starts[j])
                got = np.asarray(b.mels[j][:L])
                assert got.dtype == np.float32
                np.testing.assert_array_equal(got, dec[uid][s:s + L])
                if kw["padded"]:  # padded with the config's silence, ln(1e-5)
                    assert np.allclose(np.asarray(b.mels[j][L:]), np.log(1e-5), atol=1e-6)
                n += 1
        assert n == len(TEXTS)
        ld.close()
    for uid in dec:
        np.testing.assert_array_equal(featcache.get(store["path"], uid, features=mq), dec[uid])


def test_verify_passes_then_finds_an_undecodable_payload(store):
    cv = os.path.join(BIN, "cache-verify")
    r = subprocess.run([cv, store["path"]], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = os.path.join(store["dir"], "bad")
    shutil.copytree(store["path"], bad)
    cfgs = configs(bad)
    dmq = digest_of(cfgs, "mq")
    env = lmdb.open(bad, max_dbs=8)
    audio, feat = env.open_db(b"audio"), env.open_db(b"feat")
    with env.begin(write=True) as t:
        a = t.get(b"utt1", db=audio)
        k = T.record_key(a[:16], dmq)
        rec = bytearray(t.get(k, db=feat))
        rec[64 + 20 + 6] ^= 0xff  # inside the symbol frame's header: the frame no longer parses
        # re-seal the payload and header checksums: only the decode can tell
        rec[24:32] = xxhash.xxh3_64_intdigest(bytes(rec[64:])).to_bytes(8, "little")
        rec[56:64] = xxhash.xxh3_64_intdigest(bytes(rec[:56])).to_bytes(8, "little")
        t.put(k, bytes(rec), db=feat)
    env.close()
    r = subprocess.run([cv, bad], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "utt1" in r.stderr + r.stdout and "mq:" in r.stderr + r.stdout, r.stderr + r.stdout
    # the loader with verify=False fails the batch that holds it, naming the id
    ld = featcache.Loader(bad, features=dmq.hex(), batch_size=8, padded=True)
    with pytest.raises(featcache.FeatcacheError, match="utt1"):
        for _ in ld:
            pass
    ld.close()


def test_cache_bench_decodes_coded_records(store):
    """cache-bench reads the mixed store (f32 and mq records): stored MB/s counts the bytes read,
    decoded MB/s the float32 delivered; every record decodes (no bad records)."""
    import json
    r = subprocess.run([os.path.join(BIN, "cache-bench"), "--json", "-q", "-p", "sequential", "-t", "1", "-s",
                        "warm", "-b", "4", "--duration", "0", store["path"]], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    (p,) = [json.loads(l) for l in r.stdout.splitlines()
           if '"record":"pass"' in l and json.loads(l)["batch"] == 4]
    assert p["bad_records"] == 0 and p["records"] == 2 * len(TEXTS)
    # half the records are f32 (decoded = stored), half mq (decoded ~4x stored): in between
    assert 1.2 * p["mb_per_s"] < p["decoded_mb_per_s"] < 2.0 * p["mb_per_s"], p


def test_featurize_refuses_bad_codec_options(store):
    fz = os.path.join(BIN, "featurize")
    out = os.path.join(store["dir"], "other")
    for extra, msg in ((["--codec", "mq", "--log", "none"], "log output"),
                       (["--codec", "mq", "--dtype", "f16"], "drop --dtype f16"),
                       (["--codec", "zip"], "codec")):
        r = subprocess.run([fz, "-q", "-o", out] + extra + store["wavs"][:1], capture_output=True,
                           text=True)
        assert r.returncode == 2, (extra, r.stderr)
        assert msg in r.stderr, (extra, r.stderr)
        assert r.stderr.startswith("featurize: "), r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", "-rs"]))


@pytest.mark.parametrize("log,step", [("db", 5), ("log10", 8), ("whisper", 10)])
def test_other_log_units_code_at_their_step(store, log, step):
    """A config's log unit sets the step (fc_mq_step_log2): the payload says 2^-step, every value is
    on that grid and within 2^-(step+1) of the f32 record — 0.0045 nats or less in every unit."""
    out = os.path.join(store["dir"], "cache-" + log)
    fz = os.path.join(BIN, "featurize")
    preset = {"db": ["--preset", "librosa", "--log", "db"], "log10": ["--log", "log10"],
              "whisper": ["--preset", "whisper"]}[log]
    for extra in ([], ["--codec", "mq"]):
        r = subprocess.run([fz, "-q", "-o", out] + preset + extra + store["wavs"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    cfgs = configs(out)
    d32, dmq = digest_of(cfgs, "f32"), digest_of(cfgs, "mq")
    env = lmdb.open(out, max_dbs=8, readonly=True, lock=False)
    feat = env.open_db(b"feat", create=False)
    nats_per_unit = {"db": np.log(10) / 10, "log10": np.log(10), "whisper": 4 * np.log(10)}[log]
    for i in range(len(TEXTS)):
        uid = "utt%d" % i
        ref, _ = T.read_utterance(env, uid, d32)
        dec, _ = T.read_utterance(env, uid, dmq)
        with env.begin() as t:
            a = t.get(uid.encode(), db=env.open_db(b"audio", create=False))
            assert t.get(T.record_key(a[:16], dmq), db=feat)[64] == step
        err = np.abs(dec.astype(np.float64) - ref).max()
        assert err <= 2.0 ** -(step + 1), (uid, err)
        assert err * nats_per_unit <= 0.0045, (uid, err)
        assert (dec * 2 ** step == np.rint(dec * 2 ** step)).all()
        np.testing.assert_array_equal(featcache.get(out, uid, features=dmq.hex()), dec)
    env.close()
    r = subprocess.run([os.path.join(BIN, "cache-verify"), out], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
