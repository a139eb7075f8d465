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
