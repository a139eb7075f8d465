#!/usr/bin/env bash
# A full disk and a file-size limit read as what they are (featurize; tokenize and cache-merge on a
# full disk, cache-merge in its copy and in its failure-record pass; cache-config --drop and
# cache-prune, which must write before they free), lose nothing committed, and a rerun after space is
# freed completes (issue: "Input/output error" for a full disk). The full disk is a small tmpfs
# this test mounts (root; skipped without mount rights); the limit is RLIMIT_FSIZE (`ulimit -f`),
# which the tools turn into EFBIG rather than dying of SIGXFSZ.
set -uo pipefail
# what a failed write for want of room says to do, after the error (featurize, tokenize, cache-merge)
room="make room on the disk, then run again (what was committed stays; the rerun stores only what is missing)"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
mnt=$tmp/mnt
cleanup() { mountpoint -q "$mnt" && umount "$mnt"; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp" || exit 1
"$FC_PYTHON" - <<'PY' || fail "could not write the test WAVs"
import wave
import numpy as np
rng = np.random.default_rng(1)
for i in range(60):
    x = 0.2 * rng.standard_normal(22050 * 5)
    with wave.open("u%02d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((x * 32767).astype("<i2").tobytes())
PY
first=(u0*.wav u1*.wav)   # 20 files, ~2.8 MB of records
all=(u*.wav)

# RLIMIT_FSIZE: 1 MiB is less than one batch
out=$( (ulimit -f 1024; "$FC_BIN/featurize" --device cpu -o lim "${all[@]}") 2>&1); rc=$?
[ $rc = 1 ] || fail "featurize past RLIMIT_FSIZE: exit $rc, want 1: $out"
grep -qx "featurize: lim: cannot write to the store: File too large: raise the file-size limit (ulimit -f), then run again (what was committed stays; the rerun stores only what is missing)" <<<"$out" ||
  fail "no file-size message: $out"
"$FC_BIN/featurize" --device cpu -q -o lim "${all[@]}" || fail "rerun without the limit failed"
"$FC_BIN/cache-verify" -q lim || fail "store fails cache-verify after the limit was lifted"
# cache-prune and cache-config --drop past the file-size limit: they write before they free, so a
# limit below data.mdb's size stops them before anything is removed; each says to raise it (they
# said "File too large" alone, the drop "run again to finish", which failed the same way)
"$FC_PYTHON" -c 'print("\n".join("f%05d|word number %d, said." % (i, i) for i in range(6000)))' >f.csv
"$FC_BIN/tokenize" -q --build-vocab -o fl f.csv || fail "tokenize for the limit"
awk 'NR % 2' f.csv >fhalf.csv
out=$( (ulimit -f 200; "$FC_BIN/cache-prune" --manifest fhalf.csv fl) 2>&1); rc=$?
[ $rc = 1 ] && [ "$out" = "cache-prune: fl: File too large (nothing removed; a prune writes before it frees: raise the file-size limit (ulimit -f), then run again)
cache-prune: done: 0 of 1 store pruned (1 failed)" ] ||
  fail "cache-prune past RLIMIT_FSIZE: exit $rc: $out"
out=$( (ulimit -f 200; "$FC_BIN/cache-config" --drop chars fl) 2>&1); rc=$?
[ $rc = 1 ] && grep -qx "cache-config: fl: cannot drop config [0-9a-f]\{32\}: File too large (0 records removed; a drop writes before it frees: raise the file-size limit (ulimit -f), then run again)" <<<"$out" ||
  fail "cache-config --drop past RLIMIT_FSIZE: exit $rc: $out"
"$FC_BIN/cache-verify" -q fl >/dev/null || fail "the store after the prune and drop past the limit fails cache-verify"
"$FC_BIN/cache-prune" -q --manifest fhalf.csv fl && "$FC_BIN/cache-config" -q --drop chars fl ||
  fail "the prune and drop without the limit"

mkdir -p "$mnt"
if ! mount -t tmpfs -o size=6m tmpfs "$mnt" 2>/dev/null; then
  echo "skipped: cannot mount a tmpfs here (not root, or no mount rights); the file-size limit part passed" >&2
  exit 77
fi
"$FC_BIN/featurize" --device cpu -q -o "$mnt/st" "${first[@]}" || fail "the first 20 files did not fit 6 MB"
out=$("$FC_BIN/featurize" --device cpu -o "$mnt/st" "${all[@]}" 2>&1); rc=$?
[ $rc = 1 ] || fail "featurize on a full disk: exit $rc, want 1: $out"
grep -qx "featurize: $mnt/st: cannot write to the store: No space left on device: $room" <<<"$out" ||
  fail "a full disk does not say so: $out"
grep -q "Input/output error" <<<"$out" && fail "a full disk still reads as an I/O error: $out"
v=$("$FC_BIN/cache-verify" --json "$mnt/st") || fail "store fails cache-verify after the disk filled: $v"
# The 20 stored before are all there; how many of the rest fit before the disk filled depends on
# how the writer's time-bounded batches fell on this machine (a slow one commits smaller batches).
n=$(sed -n 's/.*"ok":true,"records_checked":\([0-9]*\),.*/\1/p' <<<"$v")
[ -n "$n" ] && [ "$n" -ge 20 ] && [ "$n" -lt 60 ] ||
  fail "committed records lost, or the disk never filled (want 20..59 checked): $v"
mount -o remount,size=64m "$mnt" || fail "remount"
out=$("$FC_BIN/featurize" --device cpu -o "$mnt/st" "${all[@]}" 2>&1) || fail "rerun after space was freed: $out"
v=$("$FC_BIN/cache-verify" --json "$mnt/st") || fail "store fails cache-verify after the rerun: $v"
grep -q '"ok":true,"records_checked":60,' <<<"$v" || fail "rerun did not complete the store: $v"

# cache-merge into a full disk: two shard stores of the 60 files (~8.4 MB) merged into 6 MB. It
# says "No space left on device" (LMDB's EIO explained, as the store's writes do), the output
# keeps what it committed and passes cache-verify, and a rerun with room completes it.
for k in 0 1; do
  "$FC_BIN/featurize" --device cpu -q --shard $k/2 -o "sh$k" "${all[@]}" || fail "shard $k"
done
umount "$mnt" && mount -t tmpfs -o size=6m tmpfs "$mnt" || fail "remount for the merge"
out=$("$FC_BIN/cache-merge" -o "$mnt/mg" sh0 sh1 2>&1); rc=$?
[ $rc = 1 ] || [ $rc = 2 ] || fail "cache-merge on a full disk: exit $rc, want 1 or 2: $out"
grep -q "No space left on device" <<<"$out" || fail "cache-merge: a full disk does not say so: $out"
grep -q "Input/output error" <<<"$out" && fail "cache-merge: a full disk reads as an I/O error: $out"
if [ -e "$mnt/mg/data.mdb" ]; then
  "$FC_BIN/cache-verify" -q "$mnt/mg" >/dev/null || fail "cache-merge's output fails cache-verify after the disk filled"
fi
mount -o remount,size=64m "$mnt" || fail "remount"
"$FC_BIN/cache-merge" -q -o "$mnt/mg" sh0 sh1 || fail "cache-merge rerun after space was freed"
v=$("$FC_BIN/cache-verify" --json "$mnt/mg") || fail "merged store fails cache-verify: $v"
grep -q '"ok":true,"records_checked":60,' <<<"$v" || fail "the merge rerun did not complete: $v"

# The same in cache-merge's failure-record pass, which comes after every entry is in: an input of
# 4 stored utterances and 2500 failure records of ~4 KB (~10 MB, added with Python's lmdb, the
# format of docs/FORMAT.md "Failure record") merged into 6 MB. The entries fit; the disk fills
# while the failure records are written, and that pass says so as the others do.
"$FC_BIN/featurize" --device cpu -q -o fr u00.wav u01.wav u02.wav u03.wav || fail "featurize fr"
"$FC_PYTHON" - fr <<'PY' || fail "could not add the failure records"
import struct, sys, lmdb
env = lmdb.open(sys.argv[1], max_dbs=8, map_size=256 << 20)
src = b"/corpus/bad.wav"
with env.begin(write=True) as t:
    db = env.open_db(b"failed", txn=t)
    for i in range(2500):
        when = (1700000000 + i) * 10**9
        t.put(b"bad%04d" % i, bytes(16) + struct.pack("<qiI", when, -31903, len(src)) + src +
              b"r" * 4000, db=db)
PY
nfailed() { # STORE: how many failure records it holds
  "$FC_PYTHON" - "$1" <<'PY'
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    print(t.stat(env.open_db(b"failed", txn=t, create=False))["entries"])
PY
}
umount "$mnt" && mount -t tmpfs -o size=6m tmpfs "$mnt" || fail "remount for the failure pass"
out=$("$FC_BIN/cache-merge" -o "$mnt/mf" fr 2>&1); rc=$?
[ $rc = 1 ] || fail "cache-merge, disk full in the failure pass: exit $rc, want 1: $out"
grep -qx "cache-merge: $mnt/mf: No space left on device: $room" <<<"$out" ||
  fail "cache-merge's failure pass: a full disk does not say so: $out"
grep -q "Input/output error" <<<"$out" &&
  fail "cache-merge's failure pass: a full disk reads as an I/O error: $out"
v=$("$FC_BIN/cache-verify" --json "$mnt/mf") || fail "failure pass: output fails cache-verify: $v"
grep -q '"ok":true,"records_checked":4,' <<<"$v" ||
  fail "the entries were not all in before the failure pass (the disk filled too early): $v"
n=$(nfailed "$mnt/mf")
[ "$n" -lt 2500 ] || fail "the disk never filled in the failure pass: $n of 2500 failure records"
mount -o remount,size=64m "$mnt" || fail "remount"
"$FC_BIN/cache-merge" -q -o "$mnt/mf" fr || fail "cache-merge rerun of the failure pass"
[ "$(nfailed "$mnt/mf")" = 2500 ] || fail "the failure pass's rerun did not complete: $(nfailed "$mnt/mf")"
# tokenize on a full disk, its manifest read as the run goes: the message, the committed lines
# kept, and every line of the manifest counted (`done: N of M` with M its lines, the ones never
# read counted as failed: the summary used to count only the lines read before the failure, and
# `done: 0 of 0` when the first write, the token config, failed).
"$FC_PYTHON" - <<'PY' || fail "could not write the transcripts"
import random
random.seed(5)
words = "the quick brown fox jumps over a lazy dog while seven ships sail north".split()
with open("t.csv", "w") as f:
    for i in range(30000):
        f.write("t%05d|%s %d.\n" % (i, " ".join(random.choices(words, k=random.randint(3, 25))), i))
PY
head -n 100 t.csv >t100.csv
umount "$mnt" && mount -t tmpfs -o size=2m tmpfs "$mnt" || fail "remount for tokenize"
"$FC_BIN/tokenize" -q --build-vocab --export-vocab v.txt -o "$mnt/t" t100.csv || fail "tokenize 100 lines"
cp -r "$mnt/t" "$mnt/t2"
# t's lock file as another LMDB program leaves it (py-lmdb: 126 reader slots, shorter than the
# tools' 1024, so their open grows it with holes that a full disk cannot fill)
rm "$mnt/t/lock.mdb" && "$FC_PYTHON" -c 'import lmdb, sys; lmdb.open(sys.argv[1], max_dbs=8).close()' "$mnt/t" ||
  fail "py-lmdb could not open the tokenized store"
dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null # the disk full before the new config's first batch
out=$("$FC_BIN/tokenize" -q --vocab v.txt -o "$mnt/t" t100.csv 2>&1) ||
  fail "tokenize with nothing to do on a full disk (a lock file LMDB wrote before): exit $?: $out"
out=$("$FC_BIN/tokenize" --vocab v.txt --case fold -o "$mnt/t2" t.csv 2>&1); rc=$?
[ $rc = 1 ] || fail "tokenize, disk full at its first write: exit $rc, want 1: $out"
grep -qx "tokenize: $mnt/t2: No space left on device: $room" <<<"$out" || fail "tokenize: a full disk does not say so: $out"
grep -q "tokenize: done: 0 of 30000 (0 new, 0 already stored, 30000 failed" <<<"$out" ||
  fail "tokenize, disk full at its first write: the lines are not all counted: $out"
# a new store on the full disk: LMDB writes its lock file's reader table through a map, and a page
# with no block behind it was SIGBUS (exit 135) instead of an error; now exit 2 naming the store
out=$("$FC_BIN/featurize" --device cpu -o "$mnt/new" u00.wav 2>&1); rc=$?
[ $rc = 2 ] && [ "$out" = "featurize: $mnt/new: cannot open the store: No space left on device" ] ||
  fail "featurize, a new store on a full disk: exit $rc, want 2 and the reason: $out"
out=$("$FC_BIN/tokenize" --vocab v.txt -o "$mnt/new2" t100.csv 2>&1); rc=$?
[ $rc = 2 ] && [ "$out" = "tokenize: $mnt/new2: cannot open the store: No space left on device" ] ||
  fail "tokenize, a new store on a full disk: exit $rc, want 2 and the reason: $out"
rm -r "$mnt/fill" "$mnt/t2"
"$FC_BIN/featurize" --device cpu -q -o "$mnt/new" u00.wav || fail "featurize into the new store once there is room"
"$FC_BIN/cache-verify" -q "$mnt/new" >/dev/null || fail "the store made once there was room fails cache-verify"
rm -r "$mnt/new" "$mnt/new2"
out=$("$FC_BIN/tokenize" --vocab v.txt --batch 1000 -o "$mnt/t" t.csv 2>&1); rc=$?
[ $rc = 1 ] || fail "tokenize on a full disk: exit $rc, want 1: $out"
grep -qx "tokenize: $mnt/t: No space left on device: $room" <<<"$out" || fail "tokenize: a full disk does not say so: $out"
sum=$(sed -n 's/^tokenize: done: \([0-9]*\) of \([0-9]*\) ([0-9]* new, [0-9]* already stored, \([0-9]*\) failed.*/\1 \2 \3/p' <<<"$out")
read -r ok total failed <<<"$sum"
[ "${total:-}" = 30000 ] && [ $((ok + failed)) = 30000 ] && [ "$ok" -ge 100 ] && [ "$ok" -lt 30000 ] ||
  fail "tokenize on a full disk: want done: N of 30000 with N + failed = 30000 (100 <= N < 30000): $out"
v=$("$FC_BIN/cache-verify" --json "$mnt/t") || fail "tokenize's store fails cache-verify after the disk filled: ${v:0:600}"
grep -q "\"ok\":true,\"records_checked\":$ok," <<<"$v" || fail "tokenize: committed lines lost (want $ok records): ${v:0:600}"
mount -o remount,size=64m "$mnt" || fail "remount"
out=$("$FC_BIN/tokenize" --vocab v.txt -o "$mnt/t" t.csv 2>&1) || fail "tokenize rerun after space was freed: $out"
grep -q "tokenize: done: 30000 of 30000 ($((30000 - ok)) new, $ok already stored, 0 failed" <<<"$out" ||
  fail "tokenize rerun: $out"
"$FC_BIN/cache-verify" -q "$mnt/t" >/dev/null || fail "tokenize's store fails cache-verify after the rerun"
# cache-config --drop on a disk with no byte free (what a featurize that filled it leaves): a drop
# writes pages before it frees any (inside data.mdb, which never shrinks), so it cannot start;
# it says so and what to do — "run again to finish" alone sent the user into the same failure
umount "$mnt" && mount -t tmpfs -o size=8m tmpfs "$mnt" || fail "remount for the drop"
"$FC_BIN/featurize" --device cpu -q -o "$mnt/d" "${first[@]}" || fail "featurize for the drop"
"$FC_BIN/featurize" --device cpu -q --preset kaldi -o "$mnt/d" u00.wav u01.wav || fail "featurize kaldi for the drop"
dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null
dd if=/dev/zero of="$mnt/fill2" bs=512 2>/dev/null
out=$("$FC_BIN/cache-config" --drop kaldi "$mnt/d" 2>&1); rc=$?
[ $rc = 1 ] && grep -qx "cache-config: $mnt/d: cannot drop config [0-9a-f]\{32\}: No space left on device (0 records removed; a drop writes before it frees, and frees pages inside data.mdb, which does not shrink: make room on the disk, then run again)" <<<"$out" ||
  fail "cache-config --drop on a full disk: exit $rc: $out"
"$FC_BIN/cache-config" "$mnt/d" | grep -q ' kaldi ' || fail "the drop that failed on a full disk dropped kaldi"
rm "$mnt/fill" "$mnt/fill2"
out=$("$FC_BIN/cache-config" -q --drop kaldi "$mnt/d" 2>&1) || fail "the drop once there is room: $out"
"$FC_BIN/cache-verify" -q "$mnt/d" >/dev/null || fail "the store after the drop fails cache-verify"
# cache-prune on a disk with no byte free: it too writes pages before it frees any, so it cannot
# start; it says so and what to do (it used to say "No space left on device" alone, and "run again
# to finish" once a transaction had gone through), the store stays sound, and once there is room
# the rerun removes what the manifest dropped
umount "$mnt" && mount -t tmpfs -o size=64m tmpfs "$mnt" || fail "remount for the prune"
"$FC_BIN/tokenize" -q --vocab v.txt -o "$mnt/p" t.csv || fail "tokenize for the prune"
awk 'NR % 2' t.csv >half.csv
dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null
dd if=/dev/zero of="$mnt/fill2" bs=512 2>/dev/null
out=$("$FC_BIN/cache-prune" --manifest half.csv "$mnt/p" 2>&1); rc=$?
[ $rc = 1 ] && [ "$out" = "cache-prune: $mnt/p: No space left on device (nothing removed; a prune writes before it frees, and frees pages inside data.mdb, which does not shrink: make room on the disk, then run again)
cache-prune: done: 0 of 1 store pruned (1 failed)" ] ||
  fail "cache-prune on a full disk: exit $rc: $out"
"$FC_BIN/cache-verify" -q "$mnt/p" >/dev/null || fail "the store after the prune that failed on a full disk fails cache-verify"
rm "$mnt/fill" "$mnt/fill2"
out=$("$FC_BIN/cache-prune" --manifest half.csv "$mnt/p" 2>&1) || fail "the prune once there is room: $out"
grep -q " and 15000 utterances not in the manifest (0 audio, 15000 text entries, " <<<"$out" ||
  fail "the prune once there is room: $out"
"$FC_BIN/cache-verify" -q --strict "$mnt/p" >/dev/null || fail "the store after the prune fails cache-verify --strict"
echo "ok: full disk and file-size limit said as such (featurize, tokenize, cache-merge and its failure pass, cache-config --drop, cache-prune), store intact, rerun completed"
