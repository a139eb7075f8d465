#!/usr/bin/env bash
# cache-prune through a power cut (scripts/powercut_fs.py, `--cut drop`: every write not synced is
# lost, and every change to a directory's entries not followed by an fsync of that directory).
# `--compact` writes a copy of data.mdb, syncs it and renames it over the store, then syncs the
# directory: the copy must be on the disk before its name is, or a cut after the rename leaves a
# data.mdb of pages never written — every record of the store gone; and the rename must be, or a
# cut after the job said "compacted" finds the old data.mdb back, none of the space given back.
# Cut (1) with the copy renamed in and the process killed there (FC_FAULT_STOP=compact:2: the
# directory not yet synced: the old file or the copy), (2) right after `--compact` exited 0 (the
# copy), (3) right after a plain prune exited 0 (its removals synced: they stay removed), (4) a
# plain prune killed before its second write transaction (FC_FAULT_STOP=prune:2), the first
# committed. Each time the store on the disk passes cache-verify and holds what it held before
# (1), after (2, 3), or one of the two (4). The copy without its fsync, or the directory without
# its (libcache/core/store/compact.c), fails (2). Needs /dev/fuse and a FUSE binding for Python;
# else skipped (77), saying why.
set -uo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$FC_SRC/tests/cli/powercut.bash" # tmp, powercut_mount, powercut_cut
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID

layer() { # STORE: a fresh layer (drop) over a disk holding a copy of STORE as st, mounted on m
  rm -rf b m s && mkdir b m s && cp -r "$1" b/st || fail "layer: copy"
  powercut_mount
}
cut() { powercut_cut; } # unmount: the cut applied to b/
keys() { # STORE: every key and value of the five dbs, one line each (hex), sorted
  "$FC_PYTHON" - "$1" <<'PY'
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=16)
with env.begin() as t:
    for name in (b"meta", b"audio", b"text", b"feat", b"tok"):
        try:
            db = env.open_db(name, txn=t, create=False)
        except lmdb.NotFoundError:
            continue
        for k, v in t.cursor(db=db):
            if name == b"meta" and k.startswith(b"created/"):
                continue
            print(name.decode(), k.hex(), v.hex())
PY
}
same() { # NAME STORE WANT_KEYS_FILE: cache-verify passes and the keys are those
  "$FC_BIN/cache-verify" -q "$2" >vout 2>&1 || fail "$1: the store fails cache-verify after the cut: $(tail -c 400 vout)"
  keys "$2" >got || fail "$1: cannot read the store's keys"
  cmp -s got "$3" || fail "$1: the store's keys after the cut are not what they were ($(wc -l <got) lines, want $(wc -l <"$3"))"
}

"$FC_PYTHON" - <<'PY' || fail "could not write the test WAVs"
import wave
import numpy as np
rng = np.random.default_rng(3)
with open("m.csv", "w") as m:
    for i in range(24):
        x = 0.2 * rng.standard_normal(int(22050 * rng.uniform(0.5, 1.5)))
        with wave.open("u%02d.wav" % i, "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
            w.writeframes((x * 32767).astype("<i2").tobytes())
        m.write("u%02d|word %d, said.|word %d, said.\n" % (i, i, i))
PY
head -n 8 m.csv >keep.csv
"$FC_BIN/featurize" -q --device cpu --audio-dir . --manifest m.csv -o full || fail "featurize"
"$FC_BIN/tokenize" -q --build-vocab --manifest m.csv -o full || fail "tokenize"
# pruned: 16 utterances' records freed, the file as long as before (what --compact gives back)
cp -r full pruned && "$FC_BIN/cache-prune" -q --manifest keep.csv pruned || fail "prune"
keys full >full.keys && keys pruned >pruned.keys || fail "keys"
cmp -s full.keys pruned.keys && fail "the prune removed nothing"

# (1) the copy renamed over data.mdb, the process killed before its end, the power cut
layer pruned
FC_FAULT_STOP=compact:2 "$FC_BIN/cache-prune" -q --compact m/st 2>err &
p=$!
stopped $p || { kill -9 $p; fail "cache-prune --compact never reached its stop after the rename: $(cat err)"; }
kill -9 $p
wait $p 2>/dev/null
cut
same "killed after the rename" b/st pruned.keys

# (2) a cut right after --compact exited 0
layer pruned
"$FC_BIN/cache-prune" -q --compact m/st || fail "cache-prune --compact on the layer"
cut
same "a cut right after --compact exited 0" b/st pruned.keys
[ "$(stat -c %s b/st/data.mdb)" -lt "$(stat -c %s pruned/data.mdb)" ] ||
  fail "a cut right after --compact exited 0: data.mdb is the old file, not the compact copy ($(ls b/st | tr '\n' ' '))"

# (3) a cut right after a plain prune exited 0: what it removed stays removed
layer full
"$FC_BIN/cache-prune" -q --manifest keep.csv m/st || fail "cache-prune on the layer"
cut
same "a cut right after a prune exited 0" b/st pruned.keys

# (4) a prune killed between its write transactions (the first committed), then the cut: the store
# as it was before or after what was committed, and a rerun finishes it
layer full
FC_FAULT_STOP=prune:2 "$FC_BIN/cache-prune" -q --manifest keep.csv m/st 2>err &
p=$!
if stopped $p 100; then
  kill -9 $p
  wait $p 2>/dev/null
  cut
  "$FC_BIN/cache-verify" -q b/st >vout 2>&1 || fail "a prune killed mid-way: the store fails cache-verify: $(tail -c 400 vout)"
  "$FC_BIN/cache-prune" -q --manifest keep.csv b/st || fail "a prune killed mid-way: the rerun"
  same "a prune killed mid-way, run again" b/st pruned.keys
else
  wait $p || fail "cache-prune with a stop at its second transaction: $(cat err)"
  cut
  echo "note: the prune made one write transaction; (4) checked as (3)"
  same "a prune of one transaction" b/st pruned.keys
fi
echo ok
