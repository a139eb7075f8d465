#!/usr/bin/env bash
# A used-up disk quota reads as what it is. A quota cuts the write that passes it short, and LMDB
# takes any short write for EIO: featurize, tokenize and cache-merge said "Input/output error" for
# it, where the disk itself had room (statvfs shows the disk, not the quota). Now the store asks
# the file system for the failed batch's blocks beside data.mdb and says "Disk quota exceeded".
# The quota is tests/stub/quota_shim.c, preloaded (the kernel may have no quotas, and they do not
# bind root): FC_QUOTA_BYTES of writes to the files under FC_QUOTA_DIR. What was committed before
# stays, cache-verify passes, and a rerun with room completes.
set -uo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
shim=${FC_QUOTA_SHIM:?}
[ -f "$shim" ] || fail "no quota shim at $shim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
room="make room within your quota (quota -s says it), then run again (what was committed stays; the rerun stores only what is missing)"
# ASan wants its runtime first among the libraries: the shim comes before it in the sanitizer build
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
quota() { # BYTES DIR CMD...: CMD with a quota of BYTES on the files under DIR
  local bytes=$1 dir=$2
  shift 2
  FC_QUOTA_DIR="$tmp/$dir" FC_QUOTA_BYTES=$bytes LD_PRELOAD="$shim" "$@"
}
"$FC_PYTHON" - <<'PY' || fail "could not write the test WAVs"
import wave
import numpy as np
rng = np.random.default_rng(1)
for i in range(40):
    x = 0.2 * rng.standard_normal(22050 * 5)
    with wave.open("u%02d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((x * 32767).astype("<i2").tobytes())
PY
first=(u0*.wav)   # 10 files, ~1.4 MB of records
all=(u*.wav)

mkdir q
"$FC_BIN/featurize" --device cpu -q -o q/st "${first[@]}" || fail "the first 10 files"
out=$(quota 2000000 q "$FC_BIN/featurize" --device cpu -o q/st "${all[@]}" 2>&1); rc=$?
[ $rc = 1 ] || fail "featurize past the quota: exit $rc, want 1: $out"
grep -qx "featurize: q/st: cannot write to the store: Disk quota exceeded: $room" <<<"$out" ||
  fail "featurize: a used-up quota does not say so: $out"
grep -q "Input/output error" <<<"$out" && fail "featurize: a used-up quota reads as an I/O error: $out"
v=$("$FC_BIN/cache-verify" --json q/st) || fail "the store fails cache-verify after the quota ran out: $v"
n=$(sed -n 's/.*"ok":true,"records_checked":\([0-9]*\),.*/\1/p' <<<"$v")
[ -n "$n" ] && [ "$n" -ge 10 ] && [ "$n" -lt 40 ] ||
  fail "committed records lost, or the quota never ran out (want 10..39 checked): $v"
out=$("$FC_BIN/featurize" --device cpu -o q/st "${all[@]}" 2>&1) || fail "featurize rerun with room: $out"
v=$("$FC_BIN/cache-verify" --json q/st) || fail "the store fails cache-verify after the rerun: $v"
grep -q '"ok":true,"records_checked":40,' <<<"$v" || fail "the rerun did not complete the store: $v"

# tokenize: batches into a store that holds 100 lines (a bulk load into an empty store writes a
# spool file first, whose write says EDQUOT itself), the quota used up after the first batch
"$FC_PYTHON" -c 'print("\n".join("t%05d|word number %d, said again and again." % (i, i) for i in range(20000)))' >t.csv
head -n 100 t.csv >t100.csv
mkdir tq
"$FC_BIN/tokenize" -q --build-vocab --export-vocab v.txt -o tq/t t100.csv || fail "tokenize 100 lines"
out=$(quota 1000000 tq "$FC_BIN/tokenize" --vocab v.txt --batch 1000 -o tq/t t.csv 2>&1); rc=$?
[ $rc = 1 ] || fail "tokenize past the quota: exit $rc, want 1: $out"
grep -qx "tokenize: tq/t: Disk quota exceeded: $room" <<<"$out" ||
  fail "tokenize: a used-up quota does not say so: $out"
grep -q "Input/output error" <<<"$out" && fail "tokenize: a used-up quota reads as an I/O error: $out"
grep -q "^tokenize: done: [1-9][0-9]* of 20000 " <<<"$out" || fail "tokenize: no batch committed before the quota ran out: $out"
"$FC_BIN/cache-verify" -q tq/t >/dev/null || fail "tokenize's store fails cache-verify after the quota ran out"
"$FC_BIN/tokenize" -q --vocab v.txt -o tq/t t.csv || fail "tokenize rerun with room"
"$FC_BIN/cache-verify" -q tq/t >/dev/null || fail "tokenize's store fails cache-verify after the rerun"

# cache-merge: the first store's records fit, the second's do not
mkdir mq
out=$(quota 3000000 mq "$FC_BIN/cache-merge" -o mq/m q/st 2>&1); rc=$?
[ $rc = 1 ] || fail "cache-merge past the quota: exit $rc, want 1: $out"
grep -q "Disk quota exceeded" <<<"$out" || fail "cache-merge: a used-up quota does not say so: $out"
grep -q "Input/output error" <<<"$out" && fail "cache-merge: a used-up quota reads as an I/O error: $out"
if [ -e mq/m/data.mdb ]; then
  "$FC_BIN/cache-verify" -q mq/m >/dev/null || fail "cache-merge's output fails cache-verify after the quota ran out"
fi
"$FC_BIN/cache-merge" -q -o mq/m q/st || fail "cache-merge rerun with room"
v=$("$FC_BIN/cache-verify" --json mq/m) || fail "the merged store fails cache-verify: $v"
grep -q '"ok":true,"records_checked":40,' <<<"$v" || fail "the merge rerun did not complete: $v"
echo ok
