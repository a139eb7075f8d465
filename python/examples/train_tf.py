#!/usr/bin/env python3
"""tf.data over featcache (runnable where TensorFlow is installed: python train_tf.py STORE)."""
import argparse

from featcache.tf import make_dataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--epochs", type=int, default=1)
    a = ap.parse_args()
    import tensorflow as tf
    for epoch in range(a.epochs):
        ds = make_dataset(a.store, epoch=epoch, batch_size=16, shuffle=True, order="bucket")
        ds = ds.prefetch(tf.data.AUTOTUNE)
        n = 0
        for mels, lengths in ds:
            n += int(tf.shape(mels)[0])
        print("epoch %d: %d utterances" % (epoch, n))


if __name__ == "__main__":
    main()
