"""scripts/bench-adapter's TensorFlow rows (imported by it when TensorFlow is installed).

- tf_p50_ms: next() on featcache.tf.make_dataset's iterator in the loop that sleeps a step (the
  torch rows' loop); tf_batches_p50_ms: the same for featcache.tf.batches (DLPack, no copy).
- Per-batch cost with no step, on a batch already made (the loader's build rate not timed):
  tf.data's from_generator handing it over (what make_dataset does), DLPack (what batches()
  does), a copy (tf.constant), medians.
- A custom training loop: a tf.function step (three Conv1D layers, Adam, on [B, T, 80] mels),
  profiled with featcache's StepProfiler (the data phase = fetching the batch), fed before by a
  tf.data pipeline decoding the WAVs and computing log-mels with tf.signal on the fly (how
  TensorFlow TTS trainers do it: tf.io.read_file, tf.audio.decode_wav, a random crop,
  tf.signal.stft 1024/256, an 80-band mel matrix, log; parallel map, AUTOTUNE prefetch), and after
  by the cache through make_dataset and through batches(): steps/s, data share, data p50.
"""

import os
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _p(t):
    return float(np.percentile(t, 50)) / 1e6, float(np.percentile(t, 90)) / 1e6


def _model(tf, n_mels=80, hidden=32):
    """Three Conv1D layers (same padding) predicting the mels from themselves, Adam."""
    rng = tf.random.Generator.from_seed(0)
    shapes = [(3, n_mels, hidden), (3, hidden, hidden), (3, hidden, n_mels)]
    ws = [tf.Variable(rng.normal(s) * (1.0 / np.sqrt(s[0] * s[1]))) for s in shapes]
    opt = tf.keras.optimizers.Adam(1e-3)

    @tf.function
    def step(mels):
        with tf.GradientTape() as tape:
            x = mels
            for i, w in enumerate(ws):
                x = tf.nn.conv1d(x, w, 1, "SAME")
                if i < len(ws) - 1:
                    x = tf.nn.relu(x)
            loss = tf.reduce_mean(tf.square(x - mels))
        g = tape.gradient(loss, ws)
        opt.apply_gradients(zip(g, ws))
        return loss
    return step


def _on_the_fly(tf, wavs, B, T):
    """tf.data: WAV files → random crop of T frames' samples → log-mel [T, 80] → batches."""
    hop, n_fft, sr = 256, 1024, 22050
    need = (T - 1) * hop + n_fft
    mel_w = tf.signal.linear_to_mel_weight_matrix(80, n_fft // 2 + 1, sr, 0.0, 8000.0)
    files = sorted(os.path.join(wavs, f) for f in os.listdir(wavs))

    def load(path):
        audio, _ = tf.audio.decode_wav(tf.io.read_file(path), desired_channels=1)
        x = audio[:, 0]
        n = tf.shape(x)[0]
        x = tf.cond(n < need, lambda: tf.pad(x, [[0, need - n]]),
                    lambda: tf.image.random_crop(x, [need]))
        s = tf.abs(tf.signal.stft(x, n_fft, hop, n_fft, tf.signal.hann_window))
        return tf.math.log(tf.maximum(tf.matmul(s, mel_w), 1e-5))

    ds = tf.data.Dataset.from_tensor_slices(files).repeat().shuffle(len(files), seed=0)
    ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(B, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def _train(tf, step, source, steps, label, B):
    from featcache.profiler import StepProfiler
    prof = StepProfiler(label=label, items_per_step=B)
    it = iter(source)
    for _ in range(3):  # warm: tracing, the pipeline's first fill
        b = next(it)
        step(b[0] if isinstance(b, tuple) else b).numpy()
    n = 0
    for batch in prof.iterate(it):
        if n == steps:
            break
        mels = batch[0] if isinstance(batch, tuple) else batch
        with prof.phase("compute"):
            step(mels).numpy()
        n += 1
    j = prof.json()
    return {"steps_per_s": j["steps_per_s"], "data_share": j["data_share"],
            "data_p50_ms": j["phases"]["data"]["p50"], "step_p50_ms": j["step"]["p50"]}


def tf_rows(a, store, wavs, res, say):
    import tensorflow as tf
    import featcache
    from featcache.tf import batches, make_dataset
    tf.config.threading.set_inter_op_parallelism_threads(2)
    B, T = a.batch, a.frames
    kw = dict(batch_size=B, shuffle=True, pad_to=T, crop="random", drop_last=True)

    def forever_ds():  # one dataset over the epochs (epochs=None), as a trainer would
        return iter(make_dataset(store, epochs=None, **kw))

    def forever_batches():
        return batches(store, epochs=None, **kw)

    # the hand-off in the sleeping loop
    for name, gen in (("tf", forever_ds()), ("tf_batches", forever_batches())):
        t = []
        for i in range(a.steps // 2 + 10):
            t0 = time.perf_counter_ns()
            x = next(gen)
            t1 = time.perf_counter_ns()
            del x
            if i >= 10:
                t.append(t1 - t0)
            time.sleep(a.step_ms / 1000)
        res[name + "_p50_ms"], res[name + "_p90_ms"] = _p(t)
        if hasattr(gen, "close"):
            gen.close()
        say(a, "%-14s next() p50 %.4f ms  p90 %.4f ms" % (name, res[name + "_p50_ms"],
                                                         res[name + "_p90_ms"]))
    # per batch, no step, on a batch already made (so the loader's own rate is not what is
    # timed): tf.data's from_generator handing it over, DLPack, a copy (tf.constant)
    ld = featcache.Loader(store, padded=True, **kw)
    one = next(iter(ld))
    mels, lens = one.mels, one.mel_lengths.astype(np.int32)
    mels.setflags(write=True)

    def same_batch():
        while True:
            yield mels, lens
    sig = (tf.TensorSpec([None, None, mels.shape[2]], tf.float32), tf.TensorSpec([None], tf.int32))
    fg = iter(tf.data.Dataset.from_generator(same_batch, output_signature=sig))
    dl = tf.experimental.dlpack.from_dlpack
    for name, fn in (("from_generator", lambda: next(fg)),
                     ("dlpack", lambda: (dl(mels.__dlpack__()), dl(lens.__dlpack__()))),
                     ("copy", lambda: (tf.constant(mels), tf.constant(lens)))):
        for _ in range(5):
            fn()
        t = []
        for _ in range(60):
            t0 = time.perf_counter_ns()
            fn()
            t.append(time.perf_counter_ns() - t0)
        res["tf_%s_batch_ms" % name] = float(np.median(t)) / 1e6
        say(a, "%-14s per ready batch, no step: %.4f ms" % ("tf " + name,
                                                            res["tf_%s_batch_ms" % name]))
    del one, ld, fg
    # the training loop, before and after
    step = _model(tf)
    runs = (("before", _on_the_fly(tf, wavs, B, T)), ("after", forever_ds()),
            ("after_batches", forever_batches()))
    for name, src in runs:
        r = _train(tf, step, src, a.tf_steps, name, B)
        for k, v in r.items():
            res["tf_%s_%s" % (k, name)] = v
        say(a, "%-14s tf.function loop: %.2f steps/s, data share %.1f %%, data p50 %.3f ms, "
            "step p50 %.1f ms" % ("tf " + name, r["steps_per_s"], 100 * r["data_share"],
                                  r["data_p50_ms"], r["step_p50_ms"]))
