#!/usr/bin/env python3
"""tf.data over featcache (runnable where TensorFlow is installed: python train_tf.py STORE).

One dataset for the whole run: each iteration of it (each epoch here; Keras fit(epochs=N) does
the same) runs the next epoch in its own order, over one loader whose threads prefetch across
the boundary. A dataset made per epoch would open the store and plan again each time."""
import argparse

from featcache.tf import make_dataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--epochs", type=int, default=1)
    a = ap.parse_args()
    import tensorflow as tf
    ds = make_dataset(a.store, batch_size=16, shuffle=True, order="bucket")  # ends in prefetch(2)
    for epoch in range(a.epochs):
        n = 0
        for mels, lengths in ds:
            n += int(tf.shape(mels)[0])
        print("epoch %d: %d utterances" % (epoch, n))


if __name__ == "__main__":
    main()
