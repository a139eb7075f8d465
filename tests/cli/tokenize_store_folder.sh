#!/bin/bash
# tokenize -o STORE in a folder that is not there (-o shards/s0 before mkdir shards, as
# docs/scale-out.md warns): said as featurize says it, naming the folder and the mkdir -p (it said
# "cannot open the store: No such file or directory"); exit 2, nothing made.
set -u
TK="$FC_BIN/tokenize"
[ -x "$TK" ] || { echo "skip: $TK not built"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
printf 'u1|Hello there.|hello there.\n' >m.csv
"$TK" -q --build-vocab --shard 0/2 -o shards/s0 m.csv >out 2>err; rc=$?
[ $rc = 2 ] || { echo "FAIL exit $rc, want 2"; fail=1; }
[ "$(cat err)" = "tokenize: shards/s0: cannot create the store: its folder shards does not exist (a new store is made in an existing folder: mkdir -p it)" ] ||
  { echo "FAIL message:"; cat err; fail=1; }
[ -e shards ] && { echo "FAIL something made"; fail=1; }
# the same store, its folder made: stored
mkdir shards && "$TK" -q --build-vocab --shard 0/2 -o shards/s0 m.csv >out 2>err || { echo "FAIL after mkdir"; cat err; fail=1; }
exit $fail
