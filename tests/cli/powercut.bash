# Sourced by the tests that cut the power under a store (scripts/powercut_fs.py, a FUSE layer
# whose unmount applies the cut to the disk below it). Sourcing checks what the layer needs (a
# skip, exit 77, saying why, where /dev/fuse is missing; a failure where the Python binding is),
# makes a temporary directory, enters it and removes it at exit (the layer unmounted first).
# The caller defines fail MESSAGE (exits 1). Then:
#   powercut_mount  mounts a fresh layer (--cut drop: unsynced writes lost) of b/ on m/ (its
#                   report in s/), or skips (77) where this sandbox refuses a FUSE mount
#   powercut_cut    unmounts it: the cut applied to b/
[ -c /dev/fuse ] || { echo "skipped: no /dev/fuse here (the power-cut layer is a FUSE file system)" >&2; exit 77; }
"$FC_PYTHON" -c 'import fusepy' 2>/dev/null || "$FC_PYTHON" -c 'import fuse' 2>/dev/null ||
  fail "no FUSE binding for Python (python3-fusepy: scripts/setup installs it)"
tmp=$(mktemp -d)
lp=
powercut_cleanup() {
  mountpoint -q "$tmp/m" 2>/dev/null && fusermount -u -z "$tmp/m"
  [ -n "$lp" ] && kill "$lp" 2>/dev/null
  rm -rf "$tmp"
}
trap powercut_cleanup EXIT
cd "$tmp" || exit 1

powercut_mount() {
  mkdir -p b m s
  "$FC_PYTHON" "$FC_SRC/scripts/powercut_fs.py" b m s --cut drop 2>layer.err &
  lp=$!
  for _ in $(seq 200); do mountpoint -q m && return 0; kill -0 $lp 2>/dev/null || break; sleep 0.05; done
  if grep -qi "fuse: device not found\|permission denied\|operation not permitted" layer.err; then
    echo "skipped: this sandbox refuses a FUSE mount: $(tail -c 300 layer.err)" >&2
    exit 77
  fi
  fail "the power-cut layer did not mount: $(tail -c 300 layer.err)"
}

powercut_cut() {
  for _ in $(seq 100); do fusermount -u m 2>/dev/null && break; sleep 0.05; done
  mountpoint -q m && fusermount -u -z m
  wait "$lp"
  lp=
  [ -f s/report.json ] || fail "the layer ended without applying its cut: $(tail -c 500 layer.err)"
}
