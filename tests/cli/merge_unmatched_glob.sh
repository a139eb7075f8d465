#!/bin/bash
# cache-merge -o cache shards/s*/ before any shard was made (or in the wrong folder): the shell
# passes the pattern as it is, and the merge said "shards/s*/: cannot open the store: No such file
# or directory". Now it says the pattern matched nothing; exit 2, --json status "error", nothing
# made. A store whose name holds a '*' is still merged.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
mkdir shards
"$M" --json -o cache 'shards/s*/' >out 2>err; check unmatched 2 $?
[ "$(cat err)" = "cache-merge: shards/s*/: no such store: a pattern that matched nothing (the shell passes it as it is: no store made there yet?); nothing merged" ] ||
  { echo "FAIL unmatched: message"; cat err; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "error", r' || { echo "FAIL unmatched: json"; cat out; fail=1; }
[ -e cache ] && { echo "FAIL unmatched: cache made"; fail=1; }
# a plain missing name is said as before
"$M" -o cache shards/s0 >out 2>err; check missing 2 $?
[ "$(cat err)" = "cache-merge: shards/s0: cannot open the store: No such file or directory" ] || { echo "FAIL missing: message"; cat err; fail=1; }
# a store named with a '*' merges
make_corpus c 3 || exit 1
"$FC_BIN/featurize" -q -o 'shards/s*' --manifest c/metadata.csv || exit 1
"$M" -q -o cache 'shards/s*' >out 2>err; check star-name 0 $?
exit $fail
