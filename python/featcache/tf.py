"""featcache.tf: TensorFlow over featcache.Loader — a tf.data.Dataset factory, and an iterator of
tensors that share the loader's memory.

    from featcache.tf import make_dataset
    ds = make_dataset("cache/", features="hifigan", tokens="chars", batch_size=32,
                      shuffle=True, seed=0, epoch=0)
    for mels, mel_lengths, tokens, token_lengths in ds: ...

    from featcache.tf import batches             # a custom loop: no tf.data, no copy
    for mels, mel_lengths in batches("cache/", batch_size=32, shuffle=True, epoch=e,
                                     pad_to=800, crop="random"):
        loss = train_step(mels, mel_lengths)     # a tf.function

TensorFlow is imported only when these are called (featcache does not depend on it). Batches
are padded ([B, T, n_mels], the loader's padded output), built ahead by the loader's prefetch
threads straight from the map.

make_dataset hands them to tf.data through tf.data.Dataset.from_generator: its py_func copies
every array into a tensor of TensorFlow's (a tensor made by DLPack is copied there too), about
0.3-0.4 ms per 8 MB batch (scripts/bench-adapter): the price of a tf.data.Dataset (map, interleave,
tf.distribute, prefetch_to_device). batches() gives EagerTensors made with DLPack over the
batch's own memory (tf.experimental.dlpack.from_dlpack: a few µs, no copy; an array not 64-byte
aligned, as TensorFlow's kernels need, is copied: the small ones, lengths, crops, token ids, as
the batch holds them, and a caller buffer's mels where it is not so aligned); the batch goes back
to the loader when TensorFlow frees the last of them. For a custom loop (tf.function steps)
that iterates in Python anyway. Shard for multi-worker training with rank/world_size (e.g.
from tf.distribute's input context: input_pipeline_id / num_input_pipelines); there a batch
whose every record is damaged raises FeatcacheError (left out, it would leave that worker a step
short of the others, and their collective steps waiting for good), where alone it is left out.
Each call makes the dataset of one epoch (epochs=1), or of epochs epoch, epoch+1, ... one after
the other over one loader (epochs=N; None: for ever): its prefetch threads run on across
epochs, where a dataset per epoch opens the store and plans again. Iterating the dataset again
(Keras fit(epochs=...) does once per epoch, Dataset.repeat() once per repetition) runs the
epochs after the last one begun, in their own order, as tf.data's shuffle reshuffles each
iteration; an iteration beside a live one (two iterators at once) opens a loader of its own.
bf16 stores give tf.bfloat16 tensors.

device="/GPU:0": the dataset ends with tf.data.experimental.prefetch_to_device(device,
prefetch_to_device) (TensorFlow's own: tensors copied to the GPU ahead of the step; it must be the
last transformation, so apply your own maps before, e.g. through make_dataset(..., map_fn=f)).
Fixed-length training as with featcache.Loader: pad_to=800, crop="random" (pad_value: the
config's silence by default); with_crops=True adds each row's mel_starts and src_frames (int32)
before ids, to cut audio, pitch or durations like the crop (audio samples: start x hop).
"""

import threading
import warnings
import weakref

import numpy as np

from ._batch import fits, int32_tokens
from .loader import Loader, _short_rank

__all__ = ["make_dataset", "batches"]


def _skipped(b):
    """The utterances skipped from batch b (damaged records, b.errors) said as a RuntimeWarning:
    a TensorFlow batch has no field for them (a torch batch dict has "errors")."""
    if b.errors:
        warnings.warn("featcache: %s: %s" % ("utterances skipped from a batch" if len(b) else
                                             "a batch left out, each of its utterances skipped",
                                             "; ".join(b.errors)), RuntimeWarning, stacklevel=2)


def make_dataset(paths, epoch=0, with_ids=False, device=None, prefetch_to_device=2, map_fn=None,
                 epochs=1, prefetch=2, with_crops=False, **loader_kwargs):
    """tf.data.Dataset of (mels, mel_lengths[, tokens, token_lengths][, mel_starts,
    src_frames][, ids]) batches of epochs epochs from epoch (each further iteration: the next
    ones); with_crops: where each row's crop starts and the frames of its record (int32), to cut
    another per-frame stream like the crop. loader_kwargs are
    featcache.Loader's (padded is forced on). device (e.g. "/GPU:0"): batches prefetched onto
    it (prefetch_to_device batches ahead); map_fn: applied before.
    prefetch: without device, the dataset ends with .prefetch(prefetch) (0: not), so the
    from_generator copy runs in tf.data's thread, not in the loop's next()."""
    import tensorflow as tf  # noqa: PLC0415 - optional dependency, imported on use

    if loader_kwargs.get("padded") is False:
        raise ValueError("featcache.tf: batches are padded; leave padded=False out")
    loader_kwargs["padded"] = True
    ids = loader_kwargs.get("ids")
    if ids is not None and not isinstance(ids, (str, bytes)):
        loader_kwargs["ids"] = tuple(ids)  # (read once: an iteration beside a live one reopens)
    ld = Loader(paths, **loader_kwargs)
    info = ld.info
    has_tok = loader_kwargs.get("tokens") is not None
    bf16 = info.mel_dtype == 3
    mel_dt = {1: tf.float32, 2: tf.float16, 3: tf.bfloat16}[info.mel_dtype]
    wide = _widened(info.tok_dtype, ld._kw["token_pad"])
    tok_dt = tf.int32 if wide else {4: tf.int32, 5: tf.int16}.get(info.tok_dtype, tf.int32)
    n_mels = int(info.n_mels)

    # Each iteration of the dataset (Keras fit runs one per epoch; repeat() one per repetition)
    # begins with the epoch after the last one begun, so that its order is new, as tf.data's own
    # shuffle(reshuffle_each_iteration=True) does.
    begun = [epoch - 1]
    lock, busy = threading.Lock(), [False]
    # The generator holds the loader weakly: tf.data keeps the generator function (its py_func
    # registered for good) after the dataset is gone, and with it the loader — its prefetch
    # threads, buffers and the stores' files — one more for each dataset made. The dataset
    # holds it (below), and so does every dataset made from it and each iterator of them.
    paths, held = ld.paths, weakref.ref(ld)  # (paths may have been an iterator: read once)

    def gen():
        # One iteration at a time uses the loader opened here; one beside it (a second live
        # iterator) opens its own: sharing one loader would split its batches between them.
        with lock:
            first = begun[0] + 1
            begun[0] = first
            src = None if busy[0] else held()
            own = src is None
            busy[0] = busy[0] or not own
        if own:
            src = Loader(paths, **loader_kwargs)
        try:
            yield from _batches(src, first)
        finally:
            if not own:
                busy[0] = False

    def _batches(src, first):
        for b in _epochs(src, first, epochs, begun):
            if not len(b) and src.world_size > 1:  # (one step short of the other workers)
                raise _short_rank(b, src.rank, src.world_size, src.paths)
            _skipped(b)
            if not len(b):  # every record of it damaged and skipped (named in b.errors)
                continue
            mels = b.mels
            if bf16:  # raw bits → float32 → bfloat16 in TF (numpy has no bfloat16)
                mels = (mels.astype(np.uint32) << 16).view(np.float32)
            out = [mels, b.mel_lengths.astype(np.int32)]
            if has_tok:
                toks = int32_tokens(b) if wide else b.tokens
                out += [toks, b.token_lengths.astype(np.int32)]
            if with_crops:
                out += [b.mel_starts.astype(np.int32), b.src_frames.astype(np.int32)]
            if with_ids:
                out.append(np.array(b.ids, dtype=object))
            yield tuple(out)

    sig = [tf.TensorSpec([None, None, n_mels], tf.float32 if bf16 else mel_dt),
           tf.TensorSpec([None], tf.int32)]
    if has_tok:
        sig += [tf.TensorSpec([None, None], tok_dt), tf.TensorSpec([None], tf.int32)]
    if with_crops:
        sig += [tf.TensorSpec([None], tf.int32)] * 2
    if with_ids:
        sig.append(tf.TensorSpec([None], tf.string))
    ds = tf.data.Dataset.from_generator(gen, output_signature=tuple(sig))
    ds._featcache_loader = ld  # (gen's, held weakly: above)
    del ld
    if bf16:
        ds = ds.map(lambda m, *rest: (tf.cast(m, tf.bfloat16),) + tuple(rest))
    if map_fn is not None:
        ds = ds.map(map_fn)
    if device:
        ds = ds.apply(tf.data.experimental.prefetch_to_device(device, prefetch_to_device))
    elif prefetch:
        ds = ds.prefetch(prefetch)
    return ds


_TF_ALIGN = 64  # bytes: TensorFlow's tensors (its allocator's alignment, Eigen's with AVX-512)


def _widened(tok_dtype, token_pad):
    """Whether token ids of tok_dtype are handed out as int32 copies: u16 ids, and i16 ones where
    token_pad is no int16 (the loader pads in the stored dtype: 40000 would read -25536); their
    pad slots hold token_pad itself."""
    return tok_dtype == 6 or (tok_dtype == 5 and not fits(token_pad, np.int16))


def _epochs(ld, epoch, epochs, begun=None):
    """The batches of epochs epoch, epoch+1, ... (epochs of them; None: for ever); begun[0]: the
    last epoch begun."""
    e = epoch
    while epochs is None or e < epoch + epochs:
        ld.set_epoch(e)
        if begun is not None:
            begun[0] = max(begun[0], e)
        yield from ld
        e += 1


def batches(paths, epoch=None, with_ids=False, epochs=1, with_crops=False, **loader_kwargs):
    """Iterator of the batches of one epoch (or of epochs of them, as make_dataset) as tuples
    (mels, mel_lengths[, tokens, token_lengths][, mel_starts, src_frames][, ids]) of CPU
    EagerTensors sharing the loader's memory (DLPack: no copy; with_crops as make_dataset). A
    batch's memory goes back to the loader when TensorFlow has freed all of its tensors, so keep
    them as long as needed. paths: store(s), with loader_kwargs
    featcache.Loader's (padded is forced on), or a padded featcache.Loader. epoch: the first
    epoch; None (default): 0 for stores, and a Loader's current epoch, which it then advances as
    iterating it does (one call per epoch: a new order each time). ids is a list of str. Lengths
    are int32, u16 token ids int32 (a copy; i16 ones too where token_pad is no int16), bf16 mels
    tf.bfloat16 (a bitcast)."""
    import tensorflow as tf  # noqa: PLC0415 - optional dependency, imported on use

    if isinstance(paths, Loader):
        ld = paths
        if not ld.padded or loader_kwargs:
            raise ValueError("featcache.tf: batches(loader) takes a padded Loader, no options")
        if epoch is None:
            epoch = ld.epoch
    else:
        if loader_kwargs.get("padded") is False:
            raise ValueError("featcache.tf: batches are padded; leave padded=False out")
        loader_kwargs["padded"] = True
        ld = Loader(paths, **loader_kwargs)
        if epoch is None:
            epoch = 0
    dl = tf.experimental.dlpack.from_dlpack
    bf16 = ld.info.mel_dtype == 3
    wide = _widened(ld.info.tok_dtype, ld._kw["token_pad"])

    def tensor(a, dtype=None):
        if a.ctypes.data % _TF_ALIGN:
            # TensorFlow's kernels take a tensor's memory to be 64-byte aligned: one made over
            # memory that is not (a batch's lengths, crops and tokens lie 16-byte aligned after
            # its mels; a caller buffer's mels) aborted the process at its first op
            # ("Check failed: IsAligned()": tf.sequence_mask of the lengths): a copy of it
            return tf.constant(a if dtype is None else a.view(dtype))
        a.setflags(write=True)  # (batch memory the loader marks read-only; DLPack refuses that)
        return dl((a if dtype is None else a.view(dtype)).__dlpack__())

    for b in _epochs(ld, epoch, epochs):
        if not len(b) and ld.world_size > 1:  # (one step short of the other workers)
            raise _short_rank(b, ld.rank, ld.world_size, ld.paths)
        _skipped(b)
        if not len(b):  # every record of it damaged and skipped (named in b.errors)
            continue
        mels = tensor(b.mels)
        if bf16:
            mels = tf.bitcast(mels, tf.bfloat16)
        out = [mels, tensor(b.mel_lengths, np.int32)]
        if b.tokens is not None:
            toks = b.tokens
            out += [tf.constant(int32_tokens(b)) if wide else tensor(toks),
                    tensor(b.token_lengths, np.int32)]
        if with_crops:
            out += [tensor(b.mel_starts, np.int32), tensor(b.src_frames, np.int32)]
        if with_ids:
            out.append(b.ids)
        yield tuple(out)
