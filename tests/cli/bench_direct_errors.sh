#!/usr/bin/env bash
# cache-bench --direct: a cold pass that fails says what failed. Any EINVAL of it read "O_DIRECT
# is not supported on this filesystem", but EINVAL comes from two places: the open of data.mdb
# with O_DIRECT (the filesystem does not do direct I/O) and an O_DIRECT read (a buffer, offset or
# length the device cannot take, on a filesystem that does). Each is now said as what it is, with
# the file (a dataset's store) and, for a read, the range asked for; the probe's note in the
# verdict too. Both come through fault sites (FC_FAULT=directopen:N, directread:N: EINVAL).
set -u
bin=${FC_BIN:?}/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
t=$(mktemp -d "$PWD/bench_direct_errors.XXXXXX") # the build tree: a disk
trap 'rm -rf "$t"' EXIT
for s in 0 1; do
  "$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s$s', 12, frames=100, seed=$s)" ||
    fail "fixture s$s"
done
if ! dd if="$t/s0/data.mdb" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then
  echo "skipped: the build tree's filesystem does not do O_DIRECT"
  exit 77
fi
run() { "$bin" --no-probe --direct -p random -s cold -b 4 --duration 0 "$@" >"$t/out" 2>"$t/err"; }

# the open refused: the filesystem's doing, said so; the pass fails, exit 1, the done line counts it
FC_FAULT=directopen:1 run "$t/s0"; rc=$?
[ $rc = 1 ] || fail "directopen: exit $rc: $(cat "$t/err")"
grep -qx "cache-bench: $t/s0: random cold pass failed: data.mdb cannot be opened with O_DIRECT: the filesystem does not do direct I/O (Invalid argument)" "$t/err" ||
  fail "directopen: $(cat "$t/err")"
[ "$(tail -n 1 "$t/err")" = "cache-bench: done: 1 of 2 passes (1 failed)" ] || fail "directopen: done line: $(cat "$t/err")"

# a read refused: not the filesystem; the read's range and the buffer's alignment said
FC_FAULT=directread:2 run "$t/s0"; rc=$?
[ $rc = 1 ] || fail "directread: exit $rc: $(cat "$t/err")"
grep -qE "^cache-bench: $t/s0: random cold pass failed: an O_DIRECT read of data.mdb failed: Invalid argument \([0-9]+ bytes at offset [0-9]+, into a buffer aligned to 4096 bytes: the device or filesystem wants another alignment\)$" "$t/err" ||
  fail "directread: $(cat "$t/err")"
grep -q "not supported" "$t/err" && fail "directread: said as the filesystem's: $(cat "$t/err")"
# the range is the aligned one the read asked for
"$FC_PYTHON" - "$t/err" <<'PY' || fail "directread: range: $(cat "$t/err")"
import re, sys
m = re.search(r"\((\d+) bytes at offset (\d+),", open(sys.argv[1]).read())
n, off = int(m.group(1)), int(m.group(2))
assert n > 0 and n % 4096 == 0 and off % 4096 == 0, (n, off)
PY

# several stores: whose data.mdb (the second store's open, the 2nd call of the batch-1 pass)
FC_FAULT=directopen:2 run "$t/s0" "$t/s1"; rc=$?
[ $rc = 1 ] || fail "dataset: exit $rc: $(cat "$t/err")"
grep -qx "cache-bench: $t/s0 + $t/s1: random cold pass failed: $t/s1/data.mdb cannot be opened with O_DIRECT: the filesystem does not do direct I/O (Invalid argument)" "$t/err" ||
  fail "dataset: $(cat "$t/err")"

# the probe (O_DIRECT always): its note in the verdict says which of the two it met
for c in "directopen:1|data.mdb cannot be opened with O_DIRECT: the filesystem does not do direct I/O (Invalid argument)" \
         "directread:1|an O_DIRECT read of data.mdb failed: Invalid argument ("; do
  FC_FAULT=${c%%|*} "$bin" -q --json -p random -s warm -b 4 --duration 0 "$t/s0" >"$t/out" 2>"$t/err" ||
    fail "probe ${c%%|*}: exit $?: $(cat "$t/err")"
  grep -qF "HDD or SSD not measured (${c#*|}" "$t/out" || fail "probe ${c%%|*}: $(grep summary "$t/out")"
done

# without a fault: both passes run, nothing said
run "$t/s0" || fail "clean: exit $?: $(cat "$t/err")"
[ "$(cat "$t/err")" = "cache-bench: done: 2 of 2 passes" ] || fail "clean: $(cat "$t/err")"
echo ok
