#!/usr/bin/env bash
# featurize memory bound (docs/featurize.md "Memory"): peak anonymous memory does not grow with
# the number of files (1,000 vs 10,000 short files), and one 1-hour file stays within the bound
#   32 MiB + 2 x 64 MiB (queue + batch) + jobs x (file + 4 B x samples + 2 x record)
# which for the 1-hour 22.05 kHz 16-bit mono file below (159 MB, 79 M samples, 99 MB record) is
# about 600 MB; it measures ~460 MB. Run with --device cpu: the bound is the CPU path's (the GPU
# path adds its fixed pinned staging and device buffers, docs/cuda.md), on a GPU machine too.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
if [ "${FC_SANITIZE:-0}" = 1 ]; then
  echo "skip: RSS under AddressSanitizer (shadow memory, quarantine) says nothing about the bound"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

"$PY" - "$FZ" <<'PY'
import os, resource, struct, subprocess, sys, time
import numpy as np
fz = sys.argv[1]

def wav_bytes(samples):  # 16-bit mono 22050 Hz RIFF WAVE
    data = samples.astype("<i2").tobytes()
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, 1, 22050, 44100, 2, 16) + b"data" +
            struct.pack("<I", len(data)) + data)

rng = np.random.default_rng(1)
base = (3000 * rng.standard_normal(2205)).astype(np.int16)  # 0.1 s
os.makedirs("short")
for i in range(10000):  # distinct bytes, so nothing dedups
    x = base.copy()
    x[i % 2205] += 1 + i // 2205
    with open(f"short/{i:05d}.wav", "wb") as f:
        f.write(wav_bytes(x))
with open("list1k", "w") as f:
    f.writelines(f"short/{i:05d}.wav\n" for i in range(1000))
with open("list10k", "w") as f:
    f.writelines(f"short/{i:05d}.wav\n" for i in range(10000))
second = (8000 * np.sin(2 * np.pi * 440 * np.arange(22050) / 22050)).astype(np.int16)
with open("long.wav", "wb") as f:  # one hour, 159 MB
    f.write(wav_bytes(np.tile(second, 3600)))
PY
[ $? = 0 ] || exit 1

# Measured from a separate small process: a child's ru_maxrss starts at its parent's RSS at fork.
"$PY" - "$FZ" <<'PY'
import subprocess, sys, time
fz = sys.argv[1]

def peak_rss_mb(args):
    """(peak anonymous MB sampled every 5 ms from /proc, ru_maxrss MB, seconds, stderr).
    ru_maxrss also counts the store's mapped pages (page cache: clean, shared, reclaimable), which
    grow with the store, so the bound is checked on the process's anonymous memory."""
    t = time.time()
    p = subprocess.Popen(args, stderr=subprocess.PIPE)
    anon = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        anon = max(anon, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError):
            pass
        time.sleep(0.005)
    err = p.stderr.read().decode()
    if p.returncode != 0:
        sys.exit(f"FAIL {' '.join(args)}: exit {p.returncode}: {err}")
    return anon / 1024, time.time() - t, err.strip()

fails = 0
r1k, t1k, e1 = peak_rss_mb([fz, "--device", "cpu", "-j", "2", "-o", "st1k", "--manifest", "list1k"])
r10k, t10k, e10 = peak_rss_mb([fz, "--device", "cpu", "-j", "2", "-o", "st10k", "--manifest", "list10k"])
print(f"1,000 short files: {r1k:.0f} MB peak anonymous RSS, {t1k:.1f} s ({e1})")
print(f"10,000 short files: {r10k:.0f} MB peak anonymous RSS, {t10k:.1f} s ({e10})")
if e10 != "featurize: done: 10000 of 10000 (10000 new, 0 already stored, 0 failed)":
    fails += 1; print("FAIL 10k: not all stored")
if r10k > 64:
    fails += 1; print(f"FAIL 10k: {r10k:.0f} MB above the 64 MB bound")
# 10x the files: only the item list grows (~200 B per input).
if r10k - r1k > 8:
    fails += 1; print(f"FAIL RSS grew by {r10k - r1k:.0f} MB from 1,000 to 10,000 files")

rh, th, eh = peak_rss_mb([fz, "--device", "cpu", "-j", "2", "-o", "sthour", "long.wav"])
print(f"one 1-hour file: {rh:.0f} MB peak anonymous RSS, {th:.1f} s ({eh})")
if eh != "featurize: done: 1 of 1 (1 new, 0 already stored, 0 failed)":
    fails += 1; print("FAIL hour: not stored")
if rh > 600:
    fails += 1; print(f"FAIL hour: {rh:.0f} MB above the 600 MB bound")
sys.exit(1 if fails else 0)
PY
