#!/usr/bin/env bash
# featurize with more workers than the open-file limit allows (-j 64 under ulimit -n 64: each worker
# holds its file open, each store part three descriptors): the inputs whose open met the limit
# failed, one line each — thousands of "Too many open files" lines and a job that stored a third
# of the corpus. Now featurize raises the soft limit as far as the hard one allows and, when that
# is not enough, runs as many workers as fit and says so; every input is stored.
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.1 sine 300 || { echo "FAIL: sox failed"; exit 1; }
for i in $(seq 1 300); do cp a.wav "u$i.wav"; printf '%s\n' "u$i.wav"; done >list

(ulimit -n 64 && exec "$FZ" -j 64 --writers 4 --device cpu -o s - <list) >out 2>err
rc=$?
[ $rc = 0 ] || fail "exit $rc, want 0: $(head -3 err)"
cat >want <<'TXT'
featurize: -j 64: 64 open files allowed (ulimit -n): running 36 workers (each holds its file open; the store's 4 parts 12 files)
featurize: done: 300 of 300 (300 new, 0 already stored, 0 failed)
TXT
diff -u want err || fail "stderr differs"
# -q: the same workers, nothing said
rm -rf s
(ulimit -n 64 && exec "$FZ" -q -j 64 --writers 4 --device cpu -o s - <list) 2>err || fail "-q: exit $?"
[ ! -s err ] || fail "-q said: $(head -3 err)"
# within the limit: the workers asked for, nothing said
rm -rf s
(ulimit -n 64 && exec "$FZ" -j 8 --device cpu -o s - <list) 2>err || fail "-j 8: exit $?"
grep -q 'workers' err && fail "-j 8 under 64 files: $(cat err)"

[ $fails = 0 ] || exit 1
echo "featurize_fd_jobs: ok"
