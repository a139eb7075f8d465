"""Two stores of the same audio compared record by record: a GPU-made store against the CPU's
(scripts/bench-gpu's parity step), as docs/ACCURACY.md holds them.

The stores are read through the library's store API (tests/fc_records.py: no py-lmdb needed, a
split store part by part). Records are paired through the audio entries — a record's key is the
digest of its audio and its config, so an f16 store's keys differ from an f32 store's."""

import os
import sys

from .build import ROOT


def _fc_records():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import fc_records
    return fc_records


def by_audio(store):
    """{audio digest: (header dict, payload bytes)} of a store's feature records."""
    fr = _fc_records()
    recs = fr.records(store)
    configs = {h["config"] for h, _ in recs.values()}
    out = {}
    for a in set(fr.audio_entries(store).values()):
        for c in configs:
            r = recs.get(fr.record_key(a, c))
            if r:
                out[a] = r
    return out


def compare_stores(ref, other, dtype="f32"):
    """One line: 'same: ...' when OTHER (of dtype f32 or f16) holds REF's (f32) utterances with
    the same frame counts and log values within 1e-4 — for f16 plus half an f16 step, the rounding
    of such a value — allowing, as the float32-FFT allowance does, values beyond that which are
    within 1e-6 of their frame's largest band in the linear domain; else 'DIFFERENT: ...'."""
    import numpy as np
    a, b = by_audio(ref), by_audio(other)
    bad = 0 if set(a) == set(b) else len(set(a) ^ set(b))
    worst, beyond_frac = 0.0, 0.0
    for k, (ha, pa) in a.items():
        if k not in b:
            continue
        hb, pb = b[k]
        if (ha["dim0"], ha["dim1"]) != (hb["dim0"], hb["dim1"]):
            bad += 1
            continue
        x = np.frombuffer(pa, "<f4").reshape(ha["dim0"], ha["dim1"]).astype(np.float64)
        y = np.frombuffer(pb, "<f2" if dtype == "f16" else "<f4").reshape(hb["dim0"], hb["dim1"])
        # f16: the step above |y| (the larger of the two beside it, so that a value rounded onto
        # a power of two from beyond it is allowed for; numpy's spacing is negative below zero)
        allow = 1e-4 + (np.spacing(np.abs(y.astype(np.float16))).astype(np.float64) / 2
                        if dtype == "f16" else 0)
        y = y.astype(np.float64)
        e = np.abs(x - y)
        within = e <= allow
        if within.any():
            worst = max(worst, float(e[within].max()))
        if not within.all():
            f = (np.abs(np.exp(y) - np.exp(x)) / np.exp(x).max(axis=1, keepdims=True))[~within]
            beyond_frac = max(beyond_frac, float(f.max()))
    ok = bad == 0 and beyond_frac <= 1e-6 and len(a) > 0
    return (f"{'same' if ok else 'DIFFERENT'}: {len(a)} records, utterances and frame counts "
            f"{'identical' if bad == 0 else f'{bad} differ'}, max error {worst:.1e} "
            f"(worst beyond the allowance: {beyond_frac:.1e} of its frame)")
