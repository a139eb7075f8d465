#!/usr/bin/env bash
# A writer killed after LMDB made data.mdb and before its first commit leaves an environment with
# nothing in it, which the next featurize, tokenize or cache-merge takes as a new store. cache-verify
# says so (an error still: nothing in it is verified), instead of "not a featcache store", which read
# as a store destroyed; so is a data.mdb of 0 bytes (a full disk as the store was made); an LMDB
# environment that holds something else is still not a featcache store.
set -u
F=${FC_BIN:?}/featurize
V=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
"$PY" -c 'import lmdb' 2>/dev/null || { echo "skip: $PY has no lmdb module (py-lmdb)"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$PY" - <<'PY' || exit 1
import lmdb
lmdb.open("empty").close()  # data.mdb and its meta pages, nothing committed
env = lmdb.open("foreign")
with env.begin(write=True) as t:
    t.put(b"key", b"value")
env.close()
PY
"$V" empty >out 2>err
rc=$?
[ $rc = 1 ] || fail "empty: exit $rc, want 1"
grep -qx "empty: error: meta format: an empty store: nothing was ever committed to it (its writer stopped before its first commit?); featurize, tokenize and cache-merge take it as new" out ||
  fail "empty: $(cat out err)"
"$V" foreign >out 2>err
rc=$?
[ $rc = 1 ] || fail "foreign: exit $rc, want 1"
grep -qx "foreign: error: meta format: not a featcache store: no meta db with format featcache/1" out ||
  fail "foreign: $(cat out err)"
# a data.mdb of 0 bytes: LMDB created the file and could not write its first pages (a full disk as
# featurize made the store; a writer killed in between); the writers take it as new too. Said so,
# not "not an LMDB environment (0 bytes; its meta pages are missing or damaged): Bad file
# descriptor", which read as a store destroyed
mkdir zero && : >zero/data.mdb
"$V" zero >out 2>err
rc=$?
[ $rc = 1 ] || fail "zero: exit $rc, want 1"
grep -qx "zero: error: env data.mdb: an empty file: LMDB never wrote its first pages (a full disk, or its writer stopped, as it made the store); featurize, tokenize and cache-merge take it as new" out ||
  fail "zero: $(cat out err)"
# and the writers do take the empty one as new
"$PY" - <<'PY' || exit 1
import math, struct, wave
with wave.open("a.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 5))) for i in range(11025)))
PY
"$F" -q -o empty a.wav 2>err || fail "featurize into the empty store: $(cat err)"
"$V" -q empty >out 2>err || fail "after featurize: $(cat out err)"
"$F" -q -o zero a.wav 2>err || fail "featurize into the empty file: $(cat err)"
"$V" -q zero >out 2>err || fail "zero after featurize: $(cat out err)"

[ $fails = 0 ] || exit 1
echo ok
