#!/bin/bash
# cache-merge's progress: the first pass, which reads every key of every input for conflicts
# before anything is written (minutes on a large merge from a cold disk), says so and how far it
# is ("reading the inputs for conflicts: N of M entries"), as the copy after it does ("N of M
# entries, X MB written"); it said nothing until the first batch was committed. -q silences
# both, and --json's stdout holds the summary alone (docs/cache-merge.md "Output").
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
for k in 0 1; do
  "$FC_BIN/featurize" -q -j1 --shard $k/2 -o s$k --manifest c/metadata.csv || fail=1
  "$FC_BIN/tokenize" -q --build-vocab --shard $k/2 -o s$k c/metadata.csv || fail=1
done
# entries the first pass reads: every key of every db of both shards
n=$("$PY" - s0 s1 <<'PY'
import sys, lmdb
t = 0
for p in sys.argv[1:]:
    e = lmdb.open(p, readonly=True, lock=False, max_dbs=8)
    with e.begin() as x:
        for d in (b"meta", b"audio", b"text", b"feat", b"tok"):
            t += x.stat(e.open_db(d, txn=x, create=False))["entries"]
print(t)
PY
)
# onto a log: plain lines, the first pass's first, at once
"$M" --progress -o m s0 s1 >out 2>err; check progress 0 $?
[ "$(head -n 1 err)" = "cache-merge: reading the inputs for conflicts: 0 of $n entries" ] ||
  { echo "FAIL progress: the first line is not the first pass's (want 0 of $n entries):"; cat err; fail=1; }
grep -qE '^cache-merge: done: ' err || { echo "FAIL progress: no summary"; cat err; fail=1; }
# -q: no progress, no summary
rm -rf m
"$M" -q --progress -o m s0 s1 >out 2>err; check quiet 0 $?
[ -s err ] && { echo "FAIL quiet: stderr:"; cat err; fail=1; }
# --json: progress on stderr, stdout the summary alone
rm -rf m
"$M" --json --progress -o m s0 s1 >out 2>err; check json 0 $?
"$PY" -c 'import json, sys; r = json.load(open("out")); assert r["status"] == "done", r' ||
  { echo "FAIL json: stdout:"; cat out; fail=1; }
grep -q '^cache-merge: reading the inputs for conflicts: ' err || { echo "FAIL json: stderr:"; cat err; fail=1; }
exit $fail
