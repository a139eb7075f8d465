"""The loader on a store written by the real tools: espeak-ng speech → featurize (hifigan)
→ tokenize chars, then every batch against librosa-free ground truth:
the records read with Python's lmdb, and the frame count hifigan gives (N // 256)."""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

try:
    import lmdb
    import soundfile as sf
except ImportError as e:  # pragma: no cover
    print("FAIL: %s (scripts/setup installs it)" % e)
    sys.exit(1)

import featcache
from featcache import testing as T

BIN = os.environ.get("FC_BIN", "")
for need, found in (("$FC_BIN/featurize", os.path.exists(os.path.join(BIN, "featurize"))),
                    ("$FC_BIN/tokenize", os.path.exists(os.path.join(BIN, "tokenize"))),
                    ("espeak-ng (scripts/setup installs it)", shutil.which("espeak-ng"))):
    if not found:
        print("FAIL: needs %s" % need)
        sys.exit(1)

TEXTS = ["The quick brown fox.", "Jumps over the lazy dog.", "A third, somewhat longer sentence here.",
         "Four.", "Printing, in the only sense with which we are at present concerned."]


@pytest.fixture(scope="module")
def store():
    d = tempfile.mkdtemp(prefix="fc_loader_feat_")
    wavs = []
    with open(os.path.join(d, "metadata.csv"), "w") as m:
        for i, t in enumerate(TEXTS):
            w = os.path.join(d, "utt%d.wav" % i)
            subprocess.run(["espeak-ng", "-w", w, t], check=True)
            wavs.append(w)
            m.write("utt%d|%s\n" % (i, t))
    out = os.path.join(d, "cache")
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "-o", out] + wavs,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([os.path.join(BIN, "tokenize"), "-q", "--manifest",
                        os.path.join(d, "metadata.csv"), "--tokenizer", "chars", "--build-vocab",
                        "-o", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    yield dict(path=out, wavs=wavs, dir=d)
    shutil.rmtree(d)


def test_batches_match_store(store):
    ld = featcache.Loader(store["path"], features="hifigan", batch_size=2, padded=True)
    cfg = T.digest(ld.config().encode())
    env = lmdb.open(store["path"], max_dbs=8, readonly=True, lock=False)
    n = 0
    for b in ld:
        for i, uid in enumerate(b.ids):
            mel, _ = T.read_utterance(env, uid, cfg)
            L = int(b.mel_lengths[i])
            np.testing.assert_array_equal(b.mels[i][:L], mel)
            samples = sf.info(os.path.join(store["dir"], uid + ".wav")).frames
            assert L == samples // 256, (uid, L, samples)  # 22050 Hz speech, hifigan framing
            n += 1
    env.close()
    assert n == len(TEXTS)
    v = featcache.get(store["path"], "utt0")
    assert v.shape[1] == 80 and np.isfinite(v).all() and v.min() >= np.log(1e-5) - 1e-6


def test_tokens_from_tokenize(store):
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=8, padded=True, token_pad=-1)
    cfg, tcfg = T.digest(ld.config().encode()), T.digest(ld.config("tokens").encode())
    env = lmdb.open(store["path"], max_dbs=8, readonly=True, lock=False)
    b = next(iter(ld))
    assert len(b) == len(TEXTS)
    for i, uid in enumerate(b.ids):
        _, tok = T.read_utterance(env, uid, cfg, tcfg)
        L = int(b.token_lengths[i])
        assert L == len(TEXTS[int(uid[3:])])  # chars: one id per character
        np.testing.assert_array_equal(b.tokens[i][:L], tok)
        assert (b.tokens[i][L:] == -1).all()
    env.close()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", "-rs"]))
