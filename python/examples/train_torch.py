#!/usr/bin/env python3
"""A minimal PyTorch training loop fed by featcache (runnable: python train_torch.py STORE).

    featurize --preset hifigan -o cache/ data/wavs/*.wav
    python python/examples/train_torch.py cache/ --epochs 2
"""
import argparse
import time

import torch

from featcache.torch import FeatcacheDataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--features", default=None, help="preset name or config digest")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    a = ap.parse_args()
    ds = FeatcacheDataset(a.store, features=a.features, batch_size=a.batch_size, shuffle=True,
                          seed=0, order="bucket", padded=True)  # pads with the config's silence
    # whole batches come from the dataset: batch_size=None; the loader prefetches by itself
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    model = torch.nn.Sequential(torch.nn.Linear(80, 256), torch.nn.ReLU(), torch.nn.Linear(256, 80))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    for epoch in range(a.epochs):
        ds.set_epoch(epoch)
        data_s, t = 0.0, time.perf_counter()
        for step, batch in enumerate(dl):
            data_s += time.perf_counter() - t
            mels, lengths = batch["mels"], batch["mel_lengths"].long()
            mask = torch.arange(mels.shape[1])[None, :] < lengths[:, None]
            loss = ((model(mels) - mels) ** 2)[mask].mean()  # a toy autoencoder
            opt.zero_grad()
            loss.backward()
            opt.step()
            t = time.perf_counter()
        print("epoch %d: %d steps, last loss %.4f, data phase %.2f ms in total" %
              (epoch, step + 1, loss.item(), data_s * 1e3))


if __name__ == "__main__":
    main()
