"""featcache.tf: the tf.data factory gives the loader's padded batches. TensorFlow is optional
and not installed on the reference machine: the test is skipped (exit 77) when it is missing."""

import os
import shutil
import sys
import tempfile

try:
    import tensorflow as tf
except ImportError:
    print("skipped: tensorflow is not installed (featcache.tf imports it only when used)")
    sys.exit(77)

import numpy as np

import featcache
from featcache import testing as T
from featcache.tf import make_dataset


def main():
    d = tempfile.mkdtemp(prefix="fc_loader_tf_")
    try:
        path = os.path.join(d, "s")
        rng = np.random.default_rng(4)
        with T.StoreWriter(path) as w:
            cfg = w.add_config(T.mel_config_json("hifigan"))
            for i in range(10):
                w.add_utterance("x%d" % i, b"%d" % i,
                                rng.standard_normal((30 + i, 80)).astype(np.float32), cfg)
        ds = make_dataset(path, batch_size=4, with_ids=True)
        ref = list(featcache.Loader(path, batch_size=4, padded=True))
        got = list(ds)
        assert len(got) == len(ref)
        for (mels, lens, ids), r in zip(got, ref):
            np.testing.assert_array_equal(mels.numpy(), r.mels)
            np.testing.assert_array_equal(lens.numpy(), r.mel_lengths)
            assert [i.decode() for i in ids.numpy()] == r.ids
        # fixed length and prefetch_to_device: on the GPU where TensorFlow sees one, else the CPU
        dev = "/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"
        ref = list(featcache.Loader(path, batch_size=4, pad_to=32, crop="center"))
        got = list(make_dataset(path, batch_size=4, pad_to=32, crop="center", device=dev))
        assert len(got) == len(ref)
        for (mels, lens), r in zip(got, ref):
            assert mels.shape[1] == 32
            np.testing.assert_array_equal(mels.numpy(), r.mels)
            np.testing.assert_array_equal(lens.numpy(), r.mel_lengths)
        print("ok (prefetch_to_device %s)" % dev)
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
