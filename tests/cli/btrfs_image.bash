# Sourced by the tests of a store on btrfs: a 160 MB btrfs image in a temporary directory $t,
# mounted on $t/mnt (unmounted and removed at exit); a skip (exit 77, saying why) without
# mkfs.btrfs, or where root and a loop device are not there to mount it.
t=$(mktemp -d)
btrfs_image_cleanup() { mountpoint -q "$t/mnt" 2>/dev/null && umount "$t/mnt"; rm -rf "$t"; }
trap btrfs_image_cleanup EXIT
command -v mkfs.btrfs >/dev/null || { echo "skipped: no mkfs.btrfs (apt-get install btrfs-progs)"; exit 77; }
truncate -s 160M "$t/img" && mkfs.btrfs -q "$t/img" >/dev/null 2>"$t/merr" || {
  echo "skipped: mkfs.btrfs failed: $(head -1 "$t/merr")"
  exit 77
}
mkdir "$t/mnt"
mount -o loop "$t/img" "$t/mnt" 2>"$t/merr" || {
  echo "skipped: cannot mount a btrfs image here (root and a loop device needed): $(head -1 "$t/merr")"
  exit 77
}

# btrfs_test_wavs N DIGITS: N WAVs of 2 s of noise (22.05 kHz, 16-bit mono) named u%0DIGITSd.wav,
# in the current directory (the same bytes for the same N, seeded)
btrfs_test_wavs() {
  "$FC_PYTHON" - "$1" "$2" <<'PY'
import sys, wave
import numpy as np
n, digits = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
for i in range(n):
    x = 0.2 * rng.standard_normal(22050 * 2)
    with wave.open("u%0*d.wav" % (digits, i), "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((x * 32767).astype("<i2").tobytes())
PY
}
