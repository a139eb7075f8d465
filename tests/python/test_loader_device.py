"""Fixed-length batches, caller (page-lockable) buffers and batches delivered to a device.

Against records read independently of the loader — with Python's lmdb (featcache.testing)
where it is installed, else through the library's store API (tests/fc_records.py), which also
writes the store there: pad_to/crop modes with tokens, the default pad value (the config's
silence), caller buffers that the loader fills directly, fences that hold a released buffer
until an (asynchronous) copy out of it is done, a consumer that holds batches while the prefetch
threads run on (nothing it holds is overwritten), the torch hand-off (tensors reused, held
batches never overwritten), int16 and uint16 token ids delivered as int32 (a token_pad of -100
too), and the prefetch-to-device pipeline: with a CPU target here (its
logic), with CUDA where a GPU is (those tests are skipped, saying so, without one:
torch.cuda.is_available() is False). Needs python3, numpy and torch only (no pytest, py-lmdb or
xxhash), so it runs on a GPU machine as it is: a plain script."""

import contextlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

try:
    import torch
except ImportError as e:  # pragma: no cover
    print("skipped: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import featcache  # noqa: E402
from featcache.torch import FeatcacheDataset, to_device  # noqa: E402

try:  # an independent writer and reader (lmdb + xxhash), where installed
    import lmdb  # noqa: F401
    import xxhash  # noqa: F401
    from featcache import testing as T
except ImportError:  # the library's store API (tests/fc_records.py)
    T = None
    import fc_records as R

N = 45
TOK_JSON = '{"kind":"tokens","preset":null,"tokenizer":"chars"}'
SILENCE = np.float32(np.log(1e-5))  # ln of the hifigan config's log floor
CUDA = torch.cuda.is_available()


def needs_cuda(fn):
    fn.needs_cuda = True
    return fn


@contextlib.contextmanager
def raises(exc, match=None):
    try:
        yield
    except exc as e:
        assert match is None or re.search(match, str(e)), "%r does not match %r" % (str(e), match)
    else:
        raise AssertionError("%s not raised" % exc.__name__)


@contextlib.contextmanager
def warns(cat, match):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        yield
    assert any(issubclass(x.category, cat) and re.search(match, str(x.message)) for x in w), \
        [str(x.message) for x in w]


def frames_of(i):
    return 40 + (i * 53) % 230


def make_store(d):
    path = os.path.join(d, "s")
    rng = np.random.default_rng(3)
    writer = T.StoreWriter if T else R.StoreWriter
    mel_json = T.mel_config_json("hifigan") if T else R.mel_config_json("hifigan")
    with writer(path) as w:
        cfg = w.add_config(mel_json)
        tcfg = w.add_config(TOK_JSON)
        for i in range(N):
            mel = rng.standard_normal((frames_of(i), 80)).astype(np.float32)
            toks = rng.integers(1, 100, 5 + i % 11).astype(np.int32)
            w.add_utterance("u%03d" % i, b"audio %d" % i, mel, cfg, text="text %d" % i,
                            tokens=toks, tok_config=tcfg)
    # the records, read once before any loader opens the store
    if T:
        import lmdb
        env = lmdb.open(path, max_dbs=8, readonly=True, lock=False)
        ids = ["u%03d" % i for i in range(N)]
        refs = {u: T.read_utterance(env, u, cfg, tcfg) for u in ids}
        env.close()
    else:
        refs = R.read_all(path, cfg, tcfg)
    assert len(refs) == N
    return dict(path=path, cfg=cfg, tcfg=tcfg, refs=refs)


def ref(store, uid):
    return store["refs"][uid]


def check(store, ids, mels, lens, starts, tokens, tlens, T_, pad=SILENCE):
    """A padded batch (numpy arrays) against the records: crop window, padding, tokens."""
    assert mels.shape[1] == T_
    for i, uid in enumerate(ids):
        mel, tok = ref(store, uid)
        n, s = int(lens[i]), int(starts[i])
        assert n == min(len(mel), T_), uid
        np.testing.assert_array_equal(mels[i, :n], mel[s:s + n], err_msg=uid)
        assert np.all(mels[i, n:] == pad), uid
        L = int(tlens[i])
        np.testing.assert_array_equal(tokens[i, :L], tok, err_msg=uid)  # whole text, same item


def test_pad_to_pads_and_crops(store):
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=8, pad_to=120)
    assert ld.padded  # pad_to alone gives padded batches
    assert ld.info.pad_value == SILENCE
    short = long_ = 0
    for b in ld:
        check(store, b.ids, b.mels, b.mel_lengths, b.mel_starts, b.tokens, b.token_lengths, 120)
        assert np.all(b.mel_starts == 0)  # the default crop: from frame 0
        short += int(np.sum(b.src_frames < 120))
        long_ += int(np.sum(b.src_frames > 120))
    assert short and long_
    with raises(ValueError, match="pad_to=120 pads only padded batches"):
        featcache.Loader(store["path"], pad_to=120, padded=False)
    # pad_multiple beside a pad_to that is no multiple of it was ignored without a word
    with raises(ValueError, match="pad_to=120 is not a multiple of pad_multiple=64"):
        featcache.Loader(store["path"], pad_to=120, pad_multiple=64)
    assert featcache.Loader(store["path"], pad_to=120, pad_multiple=8).num_items
    # pad_multiple alone gave views (a list of arrays) without a word, the padding asked for not
    # done: it asks for padded batches, as pad_to does, and padded=False beside it is refused
    ld = featcache.Loader(store["path"], batch_size=4, pad_multiple=16)
    assert ld.padded
    for b in ld:
        assert b.mels.ndim == 3 and b.mels.shape[1] % 16 == 0 and b.mels.shape[1] >= max(b.mel_lengths)
    with raises(ValueError, match="pad_multiple=16 pads only padded batches"):
        featcache.Loader(store["path"], pad_multiple=16, padded=False)
    assert not featcache.Loader(store["path"], pad_multiple=1).padded  # (1: no rounding)
    for b in FeatcacheDataset(store["path"], batch_size=4, pad_multiple=16):
        assert b["mels"].dim() == 3 and b["mels"].shape[1] % 16 == 0


def test_pad_value_explicit_and_crop_modes(store):
    ld = featcache.Loader(store["path"], tokens="chars", batch_size=8, pad_to=100, crop="center",
                          pad_value=-4.0)
    assert ld.info.pad_value == -4.0
    for b in ld:
        check(store, b.ids, b.mels, b.mel_lengths, b.mel_starts, b.tokens, b.token_lengths, 100,
              pad=-4.0)
        want = np.where(b.src_frames > 100, (b.src_frames - 100) // 2, 0)
        np.testing.assert_array_equal(b.mel_starts, want)
    runs = []
    for _ in range(2):
        ld = featcache.Loader(store["path"], tokens="chars", batch_size=8, pad_to=100,
                              crop="random", seed=7, shuffle=True)
        starts = {}
        for b in ld:
            check(store, b.ids, b.mels, b.mel_lengths, b.mel_starts, b.tokens, b.token_lengths,
                  100)
            starts.update(zip(b.ids, b.mel_starts.tolist()))
        runs.append(starts)
    assert runs[0] == runs[1]  # seeded: the same crops on every run
    assert sum(1 for v in runs[0].values() if v) > N // 3
    with raises(ValueError):
        featcache.Loader(store["path"], pad_to=100, crop="middle")


def reference_batches(store, **kw):
    out = []
    for b in featcache.Loader(store["path"], tokens="chars", **kw):
        out.append((list(b.ids), b.mels.copy(), b.mel_lengths.copy(), b.tokens.copy()))
    return out


def page_buffers(made):
    def alloc(n):
        a = np.empty(n, np.uint8)
        made.append(a)
        return a
    return alloc


def buffer_of(made, arr):
    """The caller buffer arr lies in, and arr's offset in it (AssertionError when in none)."""
    addr = arr.__array_interface__["data"][0]
    for m in made:
        lo = m.__array_interface__["data"][0]
        if lo <= addr and addr + arr.nbytes <= lo + m.nbytes:
            return m, addr - lo
    raise AssertionError("the batch is not in a caller buffer")


def test_caller_buffers_filled_in_place(store):
    kw = dict(batch_size=6, shuffle=True, seed=2, pad_to=150, crop="random")
    want = reference_batches(store, **kw)
    made = []
    ld = featcache.Loader(store["path"], tokens="chars", buffer_alloc=page_buffers(made),
                          n_buffers=3, **kw)
    n = 0
    for b, (ids, mels, lens, toks) in zip(ld, want):
        m, _ = buffer_of(made, b.mels)  # built straight into a caller buffer: no copy
        for a in (b.mel_lengths, b.mel_starts, b.tokens, b.token_lengths):
            assert buffer_of(made, a)[0] is m  # the whole batch: its arrays after the mels
        assert b.ids == ids
        np.testing.assert_array_equal(b.mels, mels)
        np.testing.assert_array_equal(b.tokens, toks)
        n += 1
    assert n == len(want)
    assert len(made) == 3 and all(a.nbytes == ld.info.bound_batch_bytes for a in made)
    # the mels, then room for the batch's lengths, starts, padded tokens and ids
    assert 6 * 150 * 80 * 4 < ld.info.bound_batch_bytes < 6 * 150 * 80 * 4 + 2048


class Fence:
    """A fence the test opens by hand (a stand-in for a CUDA event not yet passed)."""

    def __init__(self):
        self.passed = False
        self.waited = 0

    def query(self):
        return self.passed

    def synchronize(self):
        self.waited += 1
        self.passed = True


def test_fence_holds_the_buffer_until_it_passes(store):
    kw = dict(batch_size=5, pad_to=90)
    want = reference_batches(store, **kw)
    made, fences = [], []

    def fence():
        f = Fence()
        fences.append(f)
        return f

    ld = featcache.Loader(store["path"], tokens="chars", buffer_alloc=page_buffers(made),
                          n_buffers=3, release_fence=fence, prefetch_threads=2, prefetch_depth=2,
                          **kw)
    it = iter(ld)
    b0 = next(it)
    m, off = buffer_of(made, b0.mels)
    raw = np.ndarray(b0.mels.shape, np.float32, buffer=m, offset=off)
    b0.release()  # released, but behind an unpassed fence: its buffer must not be reused
    assert len(fences) == 1
    for k in range(1, 5):
        b = next(it)
        assert b.ids == want[k][0]
        np.testing.assert_array_equal(b.mels, want[k][1])
        if not fences[0].passed:
            np.testing.assert_array_equal(raw, want[0][1])  # batch 0's memory untouched
        b.release()
    # 3 buffers: batches 0 and 1 fenced, 2 held → the loader waited for the oldest fence
    # (synchronize, as on a CUDA event) instead of overwriting it
    assert fences[0].waited == 1 and fences[0].passed
    for f in fences:
        f.passed = True
    rest = [b.ids for b in it]
    assert [w[0] for w in want[5:]] == rest
    assert not np.array_equal(raw, want[0][1])  # once passed, the buffer was reused


def test_delayed_consumer_sees_its_batches_intact(store):
    """The consumer holds each batch over two slow steps while the prefetch threads build on into
    the caller buffers: what it holds never changes."""
    kw = dict(batch_size=4, shuffle=True, seed=11, pad_to=200, crop="random")
    want = {tuple(ids): (m, t) for ids, m, _, t in reference_batches(store, **kw)}
    made = []
    ld = featcache.Loader(store["path"], tokens="chars", buffer_alloc=page_buffers(made),
                          n_buffers=4, prefetch_threads=3, prefetch_depth=3, **kw)
    held = []
    n = 0
    for b in ld:
        held.append(b)
        time.sleep(0.01)  # a slow step: the threads run on
        if len(held) == 2:
            old = held.pop(0)
            m, t = want[tuple(old.ids)]
            np.testing.assert_array_equal(old.mels, m)
            np.testing.assert_array_equal(old.tokens, t)
            old.release()
            n += 1
    assert n + len(held) == len(want)


def test_to_device_pipeline_cpu_target(store):
    """The prefetch-to-device pipeline, run with a CPU target (synchronous copies): the same
    batches, ids and values, as the plain path, host buffers recycled through it."""
    kw = dict(batch_size=7, shuffle=True, seed=4, pad_to=160, crop="random")
    want = reference_batches(store, **kw)
    made = []
    ld = featcache.Loader(store["path"], tokens="chars", buffer_alloc=page_buffers(made),
                          n_buffers=3, prefetch_depth=2, **kw)
    got = list(to_device(ld, "cpu", depth=2))
    assert len(got) == len(want)
    for g, (ids, mels, lens, toks) in zip(got, want):
        assert g["ids"] == ids
        assert torch.equal(g["mels"], torch.from_numpy(mels))
        assert torch.equal(g["mel_lengths"], torch.from_numpy(lens.view(np.int32)))
        assert torch.equal(g["tokens"], torch.from_numpy(toks))


def test_handoff_reuses_tensors_and_never_overwrites_a_held_batch(store):
    """Padded batches are handed off whole: the tensors of a buffer are made once and handed out
    again (far fewer tensor objects than batches), and a buffer goes back to the loader only when
    nothing of its batch is held — not the tensors, nor a slice, a .detach(), a .numpy() view or
    the ids; a loop that keeps every batch (list()) gets the buffers it needs."""
    kw = dict(batch_size=5, shuffle=True, seed=1, pad_to=120, crop="random", drop_last=True)
    want = {}
    for e in range(3):
        ld = featcache.Loader(store["path"], tokens="chars", epoch=e, **kw)
        for b in ld:
            want[(e, tuple(b.ids))] = (b.mels.copy(), b.mel_lengths.copy(), b.tokens.copy())
    ds = FeatcacheDataset(store["path"], tokens="chars", **kw)
    objs, widths, kept, n = set(), set(), [], 0
    for e in range(3):
        ds.set_epoch(e)
        for k, b in enumerate(ds):
            key = (e, tuple(b["ids"]))
            m, lens, toks = want[key]
            assert torch.equal(b["mels"], torch.from_numpy(m))
            assert torch.equal(b["mel_lengths"], torch.from_numpy(lens.view(np.int32)))
            assert torch.equal(b["tokens"], torch.from_numpy(toks))
            objs.add(id(b["mels"]))
            widths.add(b["tokens"].shape[1])
            n += 1
            # keep something of every fourth batch, each time another way, for the rest of the run
            if n % 4 == 0:
                how = ("slice", "detach", "numpy", "ids", "lengths")[(n // 4) % 5]
                x = {"slice": lambda: b["mels"][1:3], "detach": lambda: b["mels"].detach(),
                     "numpy": lambda: b["mels"].numpy(), "ids": lambda: b["ids"],
                     "lengths": lambda: b["mel_lengths"]}[how]()
                kept.append((key, how, x))
    ld = ds._loader()
    # tensors reused: one set per buffer and shape (here the token width varies), fewer than
    # batches
    assert len(objs) <= len(ld._handle().buffers) * len(widths) and len(objs) < n
    for key, how, x in kept:  # nothing kept was overwritten
        m, lens, _ = want[key]
        if how == "slice":
            assert torch.equal(x, torch.from_numpy(m[1:3])), key
        elif how == "detach":
            assert torch.equal(x, torch.from_numpy(m)), key
        elif how == "numpy":
            np.testing.assert_array_equal(x, m, err_msg=str(key))
        elif how == "ids":
            assert list(x) == list(key[1]) and x == list(key[1]), key
        else:
            assert torch.equal(x, torch.from_numpy(lens.view(np.int32))), key
    held = len(ld._handle().buffers)
    kept.clear()
    # every batch of an epoch kept: more buffers, the same values
    ds.set_epoch(0)
    got = list(ds)
    assert len(ld._handle().buffers) >= len(got)
    for b in got:
        m, _, toks = want[(0, tuple(b["ids"]))]
        assert torch.equal(b["mels"], torch.from_numpy(m))
        assert torch.equal(b["tokens"], torch.from_numpy(toks))
    assert held <= len(ld._handle().buffers)


def test_handoff_ids_copied_or_pickled_are_their_batchs(store):
    """batch["ids"] copied (copy.deepcopy of the batch, its ids pickled to another process)
    before they were read: the copy reads the ids of its own batch, as a list (it read the
    buffer it was made over when first read, by then a later batch's: other ids, silently)."""
    import copy
    import pickle
    ds = FeatcacheDataset(store["path"], batch_size=4, pad_to=64)
    it = iter(ds)
    b = next(it)
    deep, shallow = copy.deepcopy(b), copy.copy(b["ids"])
    sent = pickle.dumps(b["ids"])
    want = list(b["ids"])
    del b
    later = [list(x["ids"]) for x in it]  # the buffers serve the later batches
    assert want == ["u%03d" % i for i in range(4)] and later, (want, later)
    for got in (deep["ids"], shallow, pickle.loads(sent)):
        assert type(got) is list and got == want, (got, want)
    # rebuilt as generic code rebuilds a sequence, type(seq)(items) (Lightning's
    # apply_to_collection moving a batch to its device): it raised TypeError (no size given)
    ids = next(iter(ds))["ids"]
    again = type(ids)(x for x in ids)
    assert again == list(ids) and len(again) == 4 and list(again) == list(ids), again


def test_handoff_takes_several_a_call_and_gives_back_what_it_left(store):
    """With the loader's threads ahead (the loop sleeps a step), one call into the library hands
    over several batches (fewer calls than batches); a loop that leaves an epoch early — the
    iterator closed, or dropped — gives back the batches taken and not handed out: the set of
    buffers does not grow, and the next epoch is whole and right, on the host and through the
    device pipeline."""
    from featcache.torch import _handoff
    kw = dict(batch_size=5, shuffle=True, seed=2, pad_to=120, crop="random", drop_last=True)
    want = {}
    for e in (0, 40):
        for b in featcache.Loader(store["path"], tokens="chars", epoch=e, **kw):
            want[(e, tuple(b.ids))] = b.mels.copy()
    for device in (None, "cpu"):
        ds = FeatcacheDataset(store["path"], tokens="chars", **kw)
        ld = ds._loader()
        h = ld._handle()
        ho = _handoff(ld, device)
        calls, real = [0], ho.swap

        def counting(*a):
            calls[0] += 1
            return real(*a)
        ho.swap = counting

        def epoch(e):
            ld.set_epoch(e)
            ds.set_epoch(e)
            return iter(ds) if device is None else to_device(ld, device, 2)
        def stepped(e):  # the batches of epoch e, in a loop sleeping a step; the calls it made
            c0, n = calls[0], 0
            for b in epoch(e):
                assert torch.equal(b["mels"], torch.from_numpy(want[(e, tuple(b["ids"]))]))
                n += 1
                time.sleep(0.03)
            assert n == len(ds)
            return calls[0] - c0
        c = stepped(0)
        assert c < len(ds), (c, len(ds))
        buffers, left = len(h.buffers), 0
        for e in range(1, 40):
            it = epoch(e)
            next(it)
            time.sleep(0.03)
            next(it)
            # (batches taken, not handed out: what leaving gives back)
            left += ho.untaken()
            if e % 2:
                it.close()
            else:
                del it
        assert left and len(h.buffers) == buffers, (left, len(h.buffers), buffers)
        # every buffer back: the threads go ahead again, a call takes several
        c = stepped(40)
        assert c < len(ds), (c, len(ds))


def test_dataset_options(store):
    with raises(ValueError, match="padded"):
        FeatcacheDataset(store["path"], pin_memory=True, padded=False)
    if not CUDA:
        with raises(RuntimeError, match="torch.cuda.is_available"):
            FeatcacheDataset(store["path"], device="cuda", pad_to=100)
        with warns(UserWarning, match="pin_memory=True without CUDA"):
            ds = FeatcacheDataset(store["path"], pin_memory=True, pad_to=100, batch_size=8)
        b = next(iter(ds))
        assert b["mels"].shape[1:] == (100, 80) and not b["mels"].is_pinned()


def small_id_stores(d):
    """Stores whose token ids are int16 and uint16, as tokenize stores them below 32768 and 65536
    symbols (uint16 ids past 32767, which an int16 reading would make negative); torch indexes
    with int32 or int64 only, so the adapter widens them: {dtype: (path, {id: ids})}."""
    out = {}
    rng = np.random.default_rng(11)
    writer = T.StoreWriter if T else R.StoreWriter
    mel_json = T.mel_config_json("hifigan") if T else R.mel_config_json("hifigan")
    for dt, top in (("int16", 32767), ("uint16", 65535)):
        path = os.path.join(d, "ids_" + dt)
        refs = {}
        with writer(path) as w:
            cfg = w.add_config(mel_json)
            tcfg = w.add_config(TOK_JSON)
            for i in range(13):
                toks = rng.integers(top - 2000, top, 3 + i % 7).astype(dt)
                refs["v%02d" % i] = toks
                w.add_utterance("v%02d" % i, b"ids %s %d" % (dt.encode(), i),
                                rng.standard_normal((30 + i, 80)).astype(np.float32), cfg,
                                text="t%d" % i, tokens=toks, tok_config=tcfg)
        out[dt] = (path, refs)
    return out


def small_ids_widened(dev):
    """On dev, every path that delivers there (the dataset, to_device of a Loader) hands out int32
    token ids equal to the stored ones, padded with token_pad."""
    d = tempfile.mkdtemp(prefix="fc_loader_ids_")
    try:
        for dt, (path, refs) in small_id_stores(d).items():
            for token_pad in (0, -100):
                kw = dict(tokens="chars", batch_size=5, pad_to=64, token_pad=token_pad)
                runs = [to_device(featcache.Loader(path, **kw), dev)]
                if dev != "cpu":
                    runs.append(FeatcacheDataset(path, device=dev, **kw))
                for batches in runs:
                    seen = []
                    for b in batches:
                        toks = b["tokens"]
                        assert toks.dtype == torch.int32, (dt, toks.dtype)
                        assert toks.device.type == torch.device(dev).type, (dt, toks.device)
                        toks = toks.cpu()
                        for i, uid in enumerate(b["ids"]):
                            n = int(b["token_lengths"][i])
                            np.testing.assert_array_equal(toks[i, :n].numpy(),
                                                          refs[uid].astype(np.int64),
                                                          err_msg="%s %s" % (dt, uid))
                            assert (toks[i, n:] == token_pad).all(), (dt, uid, token_pad)
                            seen.append(uid)
                    assert sorted(seen) == sorted(refs), dt
    finally:
        shutil.rmtree(d)


def test_small_ids_widened_cpu_target(store):
    small_ids_widened("cpu")


# ---- CUDA (skipped without a GPU) -------------------------------------------------------------
@needs_cuda
def test_cuda_small_ids_widened(store):
    small_ids_widened("cuda")


@needs_cuda
def test_cuda_yields_the_cpu_batches(store):
    kw = dict(tokens="chars", batch_size=8, shuffle=True, seed=3, pad_to=128, crop="random")
    cpu = list(FeatcacheDataset(store["path"], **kw))
    for dev in ("cuda", "cuda:0"):
        gpu = list(FeatcacheDataset(store["path"], device=dev, **kw))
        assert len(gpu) == len(cpu)
        for g, c in zip(gpu, cpu):
            assert g["ids"] == c["ids"]
            assert g["mels"].is_cuda
            for k in ("mels", "mel_lengths", "tokens", "token_lengths", "mel_starts"):
                assert torch.equal(g[k].cpu(), c[k]), k


@needs_cuda
def test_cuda_slow_consumer_not_overwritten(store):
    kw = dict(tokens="chars", batch_size=4, shuffle=True, seed=5, pad_to=200, crop="random")
    want = {tuple(b["ids"]): b["mels"].clone() for b in FeatcacheDataset(store["path"], **kw)}
    ds = FeatcacheDataset(store["path"], device="cuda", prefetch_to_device=3, **kw)
    held = []
    for b in ds:
        torch.cuda._sleep(20_000_000)  # the consumer's stream is busy: copies run beside it
        held.append(b)
        if len(held) == 3:
            old = held.pop(0)
            assert torch.equal(old["mels"].cpu(), want[tuple(old["ids"])])
    for old in held:
        assert torch.equal(old["mels"].cpu(), want[tuple(old["ids"])])


@needs_cuda
def test_pinned_cpu_batches(store):
    ds = FeatcacheDataset(store["path"], pin_memory=True, batch_size=8, pad_to=100)
    n = 0
    for b in ds:
        assert b["mels"].is_pinned()
        x = b["mels"].to("cuda", non_blocking=True)
        assert torch.equal(x.cpu(), b["mels"])
        n += 1
    assert n == len(ds)


def main():
    d = tempfile.mkdtemp(prefix="fc_loader_dev_")
    try:
        store = make_store(d)
        ran = skipped = 0
        for name, fn in [(k, v) for k, v in globals().items() if k.startswith("test_")]:
            if getattr(fn, "needs_cuda", False) and not CUDA:
                print("skipped %s: no CUDA device (torch.cuda.is_available() is False): the GPU "
                      "path cannot run here" % name)
                skipped += 1
                continue
            fn(store)
            print("ok %s" % name)
            ran += 1
        print("%d passed, %d skipped (CUDA)" % (ran, skipped))
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
