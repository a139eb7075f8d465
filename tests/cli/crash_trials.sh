#!/usr/bin/env bash
# A few seeded trials of each writing tool through scripts/crash-trials (its docstring says what a
# trial is): SIGKILL (the page cache survives: nothing committed before the kill may go) and power
# cuts on the FUSE layer scripts/powercut_fs.py (every unsynced write lost; a random subset of them
# kept, as a disk that reorders writes): nothing synced before the cut lost, every store passes
# cache-verify, every resume equals a clean run, and a cut right after a job's exit 0 loses
# nothing. The 100-trial runs are by hand, recorded in docs/RELIABILITY.md.
set -uo pipefail
if [ ! -c /dev/fuse ]; then
  echo "skipped: no /dev/fuse here (the power-cut layer is a FUSE file system)" >&2
  exit 77
fi
"$FC_PYTHON" -c 'import fusepy' 2>/dev/null || "$FC_PYTHON" -c 'import fuse' 2>/dev/null ||
  { echo "FAIL: no FUSE binding for Python (python3-fusepy: scripts/setup installs it)"; exit 1; }
probe=$(mktemp -d)
mkdir -p "$probe/b" "$probe/m" "$probe/s"
"$FC_PYTHON" "$FC_SRC/scripts/powercut_fs.py" "$probe/b" "$probe/m" "$probe/s" --cut keep 2>"$probe/err" &
pid=$!
for _ in $(seq 100); do mountpoint -q "$probe/m" && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
if ! mountpoint -q "$probe/m"; then
  kill $pid 2>/dev/null
  echo "skipped: this sandbox refuses a FUSE mount: $(tail -c 300 "$probe/err")" >&2
  rm -rf "$probe"
  exit 77
fi
fusermount -u "$probe/m"
wait $pid
rm -rf "$probe"
rc=0
for cut in kill drop subset; do
  "$FC_PYTHON" "$FC_SRC/scripts/crash-trials" --trials 4 --seed 7 --files 60 --cut $cut --bin "$FC_BIN" || rc=1
done
exit $rc
