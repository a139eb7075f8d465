"""featcache.tf against featcache.Loader, with TensorFlow (scripts/setup installs tensorflow-cpu):
make_dataset's tf.data batches and batches()'s DLPack tensors are the loader's padded batches,
value for value — ids, tokens, crops (pad_to with centre and random crops; with_crops: where
each crop starts and of how many frames), sharding across ranks, epochs (a dataset iterated
again runs the next ones; two live iterators each get whole epochs; batches(loader) goes on
from the loader's epoch), a batch of damaged records only (left out), map_fn and
prefetch_to_device (onto the GPU where TensorFlow sees one, else the CPU) — and
batches()'s tensors are the loader's memory (no copy, but of arrays not 64-byte aligned, which
TensorFlow's ops abort on), intact while held over later batches.
Without TensorFlow: a failure saying so (scripts/setup installs it). A plain script."""

import os
import shutil
import sys
import tempfile
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
try:
    import tensorflow as tf
except ImportError as e:  # scripts/setup installs it: its absence is a failure, not a skip
    print("FAIL: tensorflow does not import (%s); scripts/setup installs tensorflow-cpu" % e)
    sys.exit(1)

import numpy as np

import featcache
from featcache import testing as T
from featcache.tf import batches, make_dataset

N = 26
TOK_JSON = '{"kind":"tokens","preset":null,"tokenizer":"chars"}'


def make_store(d):
    path = os.path.join(d, "s")
    rng = np.random.default_rng(4)
    with T.StoreWriter(path) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        tcfg = w.add_config(TOK_JSON)
        for i in range(N):
            mel = rng.standard_normal((20 + (i * 7) % 40, 80)).astype(np.float32)
            toks = rng.integers(1, 100, 3 + i % 9).astype(np.int32)
            w.add_utterance("x%02d" % i, b"%d" % i, mel, cfg, text="t %d" % i, tokens=toks,
                            tok_config=tcfg)
    return path


def loader_batches(path, **kw):
    out = []
    for b in featcache.Loader(path, padded=True, **kw):
        out.append((list(b.ids), b.mels.copy(), b.mel_lengths.copy(),
                    None if b.tokens is None else b.tokens.copy(),
                    None if b.token_lengths is None else b.token_lengths.copy()))
    return out


def same(got, want, with_ids=True, tokens=False):
    """got: tuples of tensors (make_dataset or batches); want: loader_batches."""
    assert len(got) == len(want), (len(got), len(want))
    for g, (ids, mels, lens, toks, tlens) in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g[0]), mels)
        np.testing.assert_array_equal(np.asarray(g[1]), lens.astype(np.int32))
        if tokens:
            np.testing.assert_array_equal(np.asarray(g[2]), toks)
            np.testing.assert_array_equal(np.asarray(g[3]), tlens.astype(np.int32))
        if with_ids:
            gi = g[-1]
            gi = [i.decode() for i in gi.numpy()] if tf.is_tensor(gi) else list(gi)
            assert gi == ids, (gi, ids)


def test_padded_batches_ids_tokens(path):
    kw = dict(tokens="chars", batch_size=4)
    want = loader_batches(path, **kw)
    same(list(make_dataset(path, with_ids=True, **kw)), want, tokens=True)
    same(list(batches(path, with_ids=True, **kw)), want, tokens=True)


def test_crops(path):
    for crop in ("center", "random"):
        kw = dict(batch_size=5, pad_to=32, crop=crop, shuffle=True, seed=9)
        want = loader_batches(path, **kw)
        assert all(w[1].shape[1] == 32 for w in want)
        same(list(make_dataset(path, with_ids=True, **kw)), want)
        same(list(batches(path, with_ids=True, **kw)), want)


def test_crop_starts_and_source_lengths(path):
    """with_crops=True adds each row's mel_starts and src_frames (int32), as the Loader's batches
    and the torch batch dicts carry them, so a per-frame stream (audio, pitch) can be cut like
    the crop: the tuples had no way to say where a random crop started."""
    for crop in ("center", "random"):
        kw = dict(tokens="chars", batch_size=5, pad_to=32, crop=crop, shuffle=True, seed=9)
        want = []
        for b in featcache.Loader(path, padded=True, **kw):
            want.append((list(b.ids), b.mel_starts.copy(), b.src_frames.copy()))
        assert any(w[1].any() for w in want)  # some crops start past frame 0
        for name, got in (("make_dataset", list(make_dataset(path, with_crops=True, with_ids=True,
                                                             **kw))),
                          ("batches", list(batches(path, with_crops=True, with_ids=True, **kw)))):
            assert len(got) == len(want), name
            for g, (ids, starts, src) in zip(got, want):
                assert len(g) == 7, (name, len(g))  # mels, lengths, tokens, lengths, crops, ids
                gi = g[-1]
                gi = [i.decode() for i in gi.numpy()] if tf.is_tensor(gi) else list(gi)
                assert gi == ids, name
                for t, w in ((g[4], starts), (g[5], src)):
                    assert t.dtype == tf.int32, (name, t.dtype)
                    np.testing.assert_array_equal(np.asarray(t), w.astype(np.int32))
        # without tokens and ids: (mels, mel_lengths, mel_starts, src_frames)
        kw.pop("tokens")
        for got in (list(make_dataset(path, with_crops=True, **kw)),
                    list(batches(path, with_crops=True, **kw))):
            assert [len(g) for g in got] == [4] * len(want)
            for g, (_, starts, src) in zip(got, want):
                np.testing.assert_array_equal(np.asarray(g[2]), starts)
                np.testing.assert_array_equal(np.asarray(g[3]), src)


def test_sharding(path):
    seen = []
    for rank in range(3):
        kw = dict(batch_size=4, shuffle=True, seed=2, rank=rank, world_size=3, shard="uneven")
        want = loader_batches(path, **kw)
        got = list(make_dataset(path, with_ids=True, **kw))
        same(got, want)
        seen += [i.decode() for g in got for i in g[-1].numpy()]
    assert sorted(seen) == ["x%02d" % i for i in range(N)]  # each utterance on exactly one rank


def test_epochs(path):
    kw = dict(batch_size=6, shuffle=True, seed=5)
    orders = []
    for e in range(2):
        want = loader_batches(path, epoch=e, **kw)
        same(list(make_dataset(path, epoch=e, with_ids=True, **kw)), want)
        same(list(batches(path, epoch=e, with_ids=True, **kw)), want)
        orders.append([i for w in want for i in w[0]])
    assert orders[0] != orders[1] and sorted(orders[0]) == sorted(orders[1])
    # epochs=2: the two epochs one after the other over one loader
    want = loader_batches(path, epoch=0, **kw) + loader_batches(path, epoch=1, **kw)
    same(list(make_dataset(path, epoch=0, epochs=2, with_ids=True, **kw)), want)
    same(list(batches(path, epoch=0, epochs=2, with_ids=True, **kw)), want)


def test_each_iteration_runs_the_next_epoch(path):
    """Iterating one dataset again (Keras fit(epochs=N) does, once per epoch; so does repeat())
    runs the epochs after those run so far, in a new order, as tf.data's own shuffle does — it
    used to replay the first epoch's order every time."""
    kw = dict(batch_size=6, shuffle=True, seed=5)
    ep = [loader_batches(path, epoch=e, **kw) for e in range(5)]
    ds = make_dataset(path, epoch=0, with_ids=True, **kw)
    same(list(ds), ep[0])
    same(list(ds), ep[1])
    same(list(make_dataset(path, epoch=1, with_ids=True, **kw).repeat(2)), ep[1] + ep[2])
    ds = make_dataset(path, epoch=0, epochs=2, with_ids=True, **kw)
    same(list(ds), ep[0] + ep[1])
    same(list(ds), ep[2] + ep[3])
    # an iteration left in its epoch (a peek at the first batch): the next one runs the next
    ds = make_dataset(path, epoch=0, with_ids=True, prefetch=0, **kw)
    it = iter(ds)
    same([next(it)], ep[0][:1])
    del it
    same(list(ds), ep[1])


def test_two_iterations_at_once(path):
    """Two live iterators of one dataset (a peek with ds.take while the training iterator lives,
    Keras validating on the training dataset) each get a whole epoch of their own; they used to
    share one loader and split its batches between them, with repeats (20 distinct utterances
    of 26 in one, 2 batches in the other)."""
    kw = dict(batch_size=4, shuffle=True, seed=3)
    ep = [loader_batches(path, epoch=e, **kw) for e in range(2)]
    ds = make_dataset(path, with_ids=True, prefetch=0, **kw)
    it1 = iter(ds)
    a = [next(it1)]
    it2 = iter(ds)
    b = [next(it2)]
    a += list(it1)
    b += list(it2)
    same(a, ep[0])
    same(b, ep[1])
    same(list(ds), loader_batches(path, epoch=2, **kw))  # and on, one at a time
    ds = make_dataset(iter([path]), with_ids=True, prefetch=0, **kw)  # paths read once
    it1 = iter(ds)
    a = [next(it1)]
    same(list(ds), ep[1])
    same(a + list(it1), ep[0])
    # ids too (the second iteration's loader was made of the spent iterator: no utterance)
    some = ["x%02d" % i for i in range(0, N, 2)]
    ep = [loader_batches(path, epoch=e, ids=some, **kw) for e in range(2)]
    ds = make_dataset(path, with_ids=True, prefetch=0, ids=iter(some), **kw)
    it1 = iter(ds)
    a = [next(it1)]
    same(list(ds), ep[1])
    same(a + list(it1), ep[0])


def test_a_dataset_let_go_closes_its_store(path):
    """A dataset no longer held (made per epoch, or per run of a sweep) lets its loader go: its
    store's files closed, its prefetch threads gone. tf.data keeps the generator function of
    every from_generator dataset, and it held the loader: each make_dataset left one open for
    good, two more threads and its buffers each time (and a store's files, each other store)."""
    import gc
    d = tempfile.mkdtemp(prefix="fc_loader_tf_gc_")
    try:
        own = make_store(d)
        data = os.path.realpath(os.path.join(own, "data.mdb"))

        def open_files():
            out = []
            for fd in os.listdir("/proc/self/fd"):
                try:
                    out.append(os.readlink("/proc/self/fd/" + fd))
                except OSError:  # (the listing's own)
                    pass
            return out.count(data)

        def loaders():
            return sum(isinstance(o, featcache.Loader) and o.paths == [own]
                       for o in gc.get_objects())

        for e in range(3):
            ds = make_dataset(own, epoch=e, batch_size=8, shuffle=True)
            assert sum(int(tf.shape(m)[0]) for m, _ in ds) == N
            it = iter(make_dataset(own, batch_size=8).map(lambda m, n: (m, n)))
            gc.collect()
            assert loaders() == 2 and open_files() == 1  # (the two share the store)
            assert sum(int(tf.shape(m)[0]) for m, _ in it) == N  # its dataset let go: it runs
            del ds, it
            gc.collect()
            assert (loaders(), open_files()) == (0, 0), e
    finally:
        shutil.rmtree(d)


def test_batches_of_a_loader_go_on_from_its_epoch(path):
    """batches(loader) runs the loader's current epoch, and the loader goes on to the next, as
    iterating the loader itself does: a loop calling batches(ld) once per epoch gets a new order
    each time (it used to run epoch 0 on every call). epoch= still picks one."""
    kw = dict(batch_size=6, shuffle=True, seed=5)
    ep = [loader_batches(path, epoch=e, **kw) for e in range(4)]
    ld = featcache.Loader(path, padded=True, **kw)
    same(list(batches(ld, with_ids=True)), ep[0])
    same(list(batches(ld, with_ids=True)), ep[1])
    same(list(batches(ld, epoch=3, with_ids=True)), ep[3])
    same(list(batches(ld, with_ids=True)), loader_batches(path, epoch=4, **kw))
    ld = featcache.Loader(path, padded=True, epoch=2, **kw)
    same(list(batches(ld, with_ids=True)), ep[2])


def test_map_fn_and_prefetch_to_device(path):
    dev = "/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"
    kw = dict(batch_size=4, pad_to=24, crop="center")
    want = loader_batches(path, **kw)
    ds = make_dataset(path, device=dev, prefetch_to_device=3,
                      map_fn=lambda m, n: (m * 2.0, n + 1), **kw)
    got = list(ds)
    assert len(got) == len(want)
    for (m, n), w in zip(got, want):
        assert dev.lower().lstrip("/") in m.device.lower(), (m.device, dev)
        np.testing.assert_array_equal(m.numpy(), w[1] * 2.0)
        np.testing.assert_array_equal(n.numpy(), w[2].astype(np.int32) + 1)


def test_batch_of_damaged_records_only(path):
    """A batch whose every record is damaged is empty (the loader skips them under verify, the
    default, and names them in .errors): both adapters go on with the next batch — make_dataset
    used to stop the iteration with an InvalidArgumentError (an element of shape (0,))."""
    bad = os.path.join(os.path.dirname(path), "damaged")
    rng = np.random.default_rng(6)
    with T.StoreWriter(bad) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(3):
            w.add_utterance("g%d" % i, b"g%d" % i, rng.standard_normal((30 + i, 80)).astype(
                np.float32), cfg)
        rec = bytearray(T.encode_record(rng.standard_normal((70, 80)).astype(np.float32), cfg))
        rec[64 + 1000] ^= 0x01  # the payload checksum no longer matches
        w.add_utterance("z_bad", b"z", raw_record=bytes(rec), config=cfg)
    kw = dict(batch_size=1)
    assert [len(b) for b in featcache.Loader(bad, padded=True, **kw)] == [1, 1, 1, 0]
    want = [w for w in loader_batches(bad, **kw) if w[0]]
    assert len(want) == 3
    for run in (lambda: list(make_dataset(bad, with_ids=True, **kw)),
                lambda: list(make_dataset(bad, with_ids=True, prefetch=0, **kw)),
                lambda: list(batches(bad, with_ids=True, **kw))):
        # the batch left out is said (a tf batch has no field for its errors): it was not
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            same(run(), want)
        said = [str(x.message) for x in caught if issubclass(x.category, RuntimeWarning)]
        assert said == ["featcache: a batch left out, each of its utterances skipped: z_bad: "
                        "payload checksum mismatch"], said
    # one skipped from a batch that keeps others: said too
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = list(batches(bad, with_ids=True, batch_size=4))
    assert sum(len(g[-1]) for g in got) == 3
    said = [str(x.message) for x in caught if issubclass(x.category, RuntimeWarning)]
    assert said == ["featcache: utterances skipped from a batch: z_bad: payload checksum "
                    "mismatch"], said


def test_example_runs(path):
    """python/examples/train_tf.py, as loader.md points to it: one dataset, iterated once per
    epoch, every utterance in each."""
    import subprocess
    ex = os.path.join(os.path.dirname(__file__), "..", "..", "python", "examples", "train_tf.py")
    # (FC_PYTHON: under the sanitizer build, the wrapper that preloads ASan)
    r = subprocess.run([os.environ.get("FC_PYTHON") or sys.executable, ex, path, "--epochs", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["epoch 0: %d utterances" % N, "epoch 1: %d utterances" % N], \
        r.stdout


class _Capsule:
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return tf.experimental.dlpack.to_dlpack(self.t)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def aligned(n, off=0):
    """n bytes of a numpy buffer whose address is off bytes past a 64-byte boundary."""
    raw = np.empty(n + 128, np.uint8)
    k = (off - raw.ctypes.data) % 64
    return raw[k:k + n]


def test_batches_share_memory_and_stay_valid(path):
    """batches(): the tensors are the loader's memory — each batch's mels, and its lengths and
    tokens where they lie 64-byte aligned (else a copy: test_batches_tensors_are_aligned), lie
    in the caller buffer the loader built it into (a copy would not) — and every tensor of an
    epoch held to the end keeps its values while the threads build on."""
    kw = dict(tokens="chars", batch_size=3, shuffle=True, seed=1, pad_to=40, crop="random")
    want = loader_batches(path, **kw)
    made = []

    def alloc(n):
        made.append(aligned(n))
        return made[-1]

    ld = featcache.Loader(path, padded=True, buffer_alloc=alloc, n_buffers=len(want) + 2, **kw)
    held = list(batches(ld, with_ids=True))  # all held
    same(held, want, tokens=True)
    spans = [(m.ctypes.data, m.ctypes.data + m.nbytes) for m in made]
    used = set()
    for g in held:
        where = []
        for t in g[:4]:
            a = np.from_dlpack(_Capsule(t)).ctypes.data
            where.append([i for i, (lo, hi) in enumerate(spans) if lo <= a < hi])
        assert len(where[0]) == 1, where  # the mels: in one caller buffer
        # the others there too, or (not 64-byte aligned) copied
        assert all(w in (where[0], []) for w in where), where
        where = set(where[0])
        used |= where
    assert len(used) == len(held)  # each held batch in its own buffer


_ALIGNED_OPS = r"""
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np, tensorflow as tf, featcache
from featcache.tf import batches
path, off = sys.argv[1], int(sys.argv[2])
kw = dict(tokens="chars", batch_size=5, pad_to=40, crop="random", shuffle=True)
if off >= 0:  # caller buffers off bytes past a 64-byte boundary
    def alloc(n):
        raw = np.empty(n + 128, np.uint8)
        k = (off - raw.ctypes.data) % 64
        return raw[k:k + n]
    src = featcache.Loader(path, padded=True, buffer_alloc=alloc, **kw)
    kw = {}
else:
    src = path
n = 0
for e in range(3):
    for g in batches(src, with_crops=True, epoch=e, **kw):
        mels, lens, toks, tlens, starts, frames = g
        mask = tf.sequence_mask(lens, tf.shape(mels)[1])
        n += int(tf.reduce_sum(tf.cast(mask, tf.int32))) - int(tf.reduce_sum(lens))
        n += int(tf.reduce_max(tlens)) - int(tf.shape(toks)[1]) + int(tf.reduce_sum(toks) * 0)
        n += int(tf.reduce_min(frames - starts) < 0) + int(tf.math.is_nan(tf.reduce_mean(mels)))
print("ok", n)
"""


def test_batches_tensors_are_aligned(path):
    """batches() made its tensors over the batch's memory as it lay: the lengths, crops and tokens
    lie 16-byte aligned after the mels (a caller buffer's mels where it gives them so), and
    TensorFlow's kernels take tensors to be 64-byte aligned: tf.sequence_mask of the lengths,
    the first op of most steps, aborted the process ("Check failed: IsAligned()"). Every tensor
    it yields now serves TensorFlow's ops, those of caller buffers of any alignment too."""
    import subprocess
    for off in (-1, 0, 16, 32):
        r = subprocess.run([os.environ.get("FC_PYTHON") or sys.executable, "-c", _ALIGNED_OPS,
                            path, str(off)], capture_output=True, text=True)
        assert r.returncode == 0 and "ok 0" in r.stdout, (off, r.returncode, r.stdout,
                                                          r.stderr[-2000:])


def main():
    d = tempfile.mkdtemp(prefix="fc_loader_tf_")
    try:
        path = make_store(d)
        tests = [(k, v) for k, v in globals().items() if k.startswith("test_")]
        for name, fn in tests:
            fn(path)
            print("ok %s" % name)
        print("%d passed" % len(tests))
    finally:
        shutil.rmtree(d)



def test_a_worker_short_of_a_step_raises(path):
    """On one worker of several (world_size > 1: tf.distribute's input pipelines), a batch whose
    every record is damaged was left out too: that worker took one step fewer than the others,
    and the collective steps waited for it for good. Now a FeatcacheError naming them."""
    bad = os.path.join(os.path.dirname(path), "damaged_ranks")
    rng = np.random.default_rng(7)
    with T.StoreWriter(bad) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(4):
            rec = bytearray(T.encode_record(rng.standard_normal((30 + i, 80)).astype(np.float32),
                                            cfg))
            if i == 1:
                rec[64 + 100] ^= 0x01
            w.add_utterance("r%d" % i, b"r%d" % i, raw_record=bytes(rec), config=cfg)
    kw = dict(batch_size=1, rank=1, world_size=2)  # rank 1 reads r1 and r3
    for run in (lambda: list(make_dataset(bad, **kw)), lambda: list(batches(bad, **kw))):
        try:
            run()
        except (featcache.FeatcacheError, tf.errors.InvalidArgumentError,
                tf.errors.UnknownError) as e:  # (tf.data's py_func wraps it)
            assert ("rank 1 of 2: a batch left with no utterance, each of its records damaged "
                    "(r1: payload checksum mismatch)") in str(e), str(e)
            assert "cache-prune --damaged" in str(e), str(e)
        else:
            raise AssertionError("no error")
    assert len(list(batches(bad, batch_size=1, rank=0, world_size=2))) == 2  # (r0, r2: intact)


def test_u16_ids_padded_with_a_negative_token_pad(path):
    """u16 ids are widened to int32; a token_pad u16 cannot hold (-100, the usual ignore_index)
    was padded wrapped, 65436, and stayed so: now the pad slots hold -100."""
    u16 = os.path.join(os.path.dirname(path), "u16")
    with T.StoreWriter(u16) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        tcfg = w.add_config(TOK_JSON)
        for i in range(5):
            w.add_utterance("u%d" % i, b"u%d" % i, np.zeros((20, 80), np.float32), cfg,
                            text="t %d" % i, tokens=np.arange(1, 3 + i, dtype=np.uint16),
                            tok_config=tcfg)
    kw = dict(tokens="chars", batch_size=5, token_pad=-100)
    for got in (list(make_dataset(u16, **kw)), list(batches(u16, **kw))):
        toks = np.asarray(got[0][2])
        assert toks.dtype == np.int32, toks.dtype
        want = np.full((5, 6), -100, np.int32)
        for i in range(5):
            want[i, :2 + i] = np.arange(1, 3 + i)
        np.testing.assert_array_equal(toks, want)



def test_i16_ids_padded_with_a_token_pad_int16_cannot_hold(path):
    """i16 ids (tokenize's for vocabularies under 32768) were handed out as they are, padded in
    int16: a token_pad beyond it (40000, -40000) read -25536 and 25536 in the pad slots, without
    a word. Those are int32 now, the pad slots holding token_pad; one int16 holds stays int16."""
    i16 = os.path.join(os.path.dirname(path), "i16")
    with T.StoreWriter(i16) as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        tcfg = w.add_config(TOK_JSON)
        for i in range(5):
            w.add_utterance("u%d" % i, b"u%d" % i, np.zeros((20, 80), np.float32), cfg,
                            text="t %d" % i, tokens=np.arange(1, 3 + i, dtype=np.int16),
                            tok_config=tcfg)
    for pad, dtype in ((40000, np.int32), (-40000, np.int32), (-100, np.int16)):
        kw = dict(tokens="chars", batch_size=5, token_pad=pad)
        for got in (list(make_dataset(i16, **kw)), list(batches(i16, **kw))):
            toks = np.asarray(got[0][2])
            assert toks.dtype == dtype, (pad, toks.dtype)
            want = np.full((5, 6), pad, dtype)
            for i in range(5):
                want[i, :2 + i] = np.arange(1, 3 + i)
            np.testing.assert_array_equal(toks, want)

if __name__ == "__main__":
    main()
