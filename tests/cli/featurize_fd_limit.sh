#!/usr/bin/env bash
# featurize out of file descriptors (ulimit -n too low for -j, EMFILE; ENFILE is the system's): the
# open of an input fails for a reason of the process, not of the file. It was recorded as the
# input's failure ("featurize failed it: Too many open files"), as a damaged file is, and
# cache-verify --manifest listed a sound file as bad; now it is reported (exit 1) and not recorded,
# as out of memory is: the next run tries it as new. The open's EMFILE is injected (FC_FAULT=emfile:1,
# the first input's open), since a real limit that lets the store open and fails an input depends
# on the order the workers open their files in.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
sox -n -r 22050 -b 16 b.wav synth 0.5 sine 400
nfailed() { # STORE: its failure records
  "$PY" - "$1" <<'PY'
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    print(t.stat(env.open_db(b"failed", txn=t, create=False))["entries"])
PY
}

FC_FAULT=emfile:1 "$FZ" -j 1 --device cpu -o s a.wav b.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1"
cat >want <<'TXT'
featurize: a.wav: Too many open files (the limit of this process: ulimit -n)
featurize: done: 1 of 2 (1 new, 0 already stored, 1 failed)
TXT
diff -u want err || fail "stderr differs"
[ "$(nfailed s)" = 0 ] || fail "the input's failure was recorded"
"$FZ" -j 1 --device cpu -o s a.wav b.wav 2>err || fail "the rerun: exit $?: $(cat err)"
grep -qx "featurize: done: 2 of 2 (1 new, 1 already stored, 0 failed)" err || fail "the rerun: $(cat err)"

[ $fails = 0 ] || exit 1
echo "featurize_fd_limit: ok"
