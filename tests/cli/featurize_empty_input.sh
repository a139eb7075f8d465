#!/usr/bin/env bash
# featurize given no inputs at all (an empty path list, an empty manifest, a shard that holds none
# of them) says so, naming what was empty, as tokenize does ("nothing to do: FILE holds no lines"),
# and exits 0; it said "done: 0 of 0 (0 new, 0 already stored, 0 failed)", the same line as a job
# that did its work. -q silences it; --json still counts 0.
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
: >empty.csv
echo "$PWD/a.wav" >one.txt

# check NAME WANT CMD...: stdin from /dev/null, exit 0, stderr exactly WANT, stdout empty
check() {
  local name=$1 want=$2
  shift 2
  "$@" </dev/null >out 2>err
  local rc=$?
  [ $rc = 0 ] || fail "$name: exit $rc, want 0"
  [ "$(cat err)" = "$want" ] || fail "$name: stderr: $(cat err) (want: $want)"
  [ -s out ] && fail "$name: stdout: $(cat out)"
}
check stdin "featurize: nothing to do: (stdin) holds no paths" "$FZ" --device cpu -o s1 -
check no-arg "featurize: nothing to do: (stdin) holds no paths" "$FZ" --device cpu -o s1
check manifest "featurize: nothing to do: empty.csv holds no lines" \
  "$FZ" --device cpu -o s2 --manifest empty.csv
check manifest-stdin "featurize: nothing to do: (stdin) holds no lines" \
  "$FZ" --device cpu -o s3 --manifest -
# one.txt's only id (a) is in shard 2 of 3: shard 0 has none
check shard-manifest "featurize: nothing to do: shard 0/3 of one.txt holds no lines" \
  "$FZ" --device cpu -o s4 --manifest one.txt --shard 0/3
check shard-paths "featurize: nothing to do: shard 0/3 holds none of the 1 path given" \
  "$FZ" --device cpu -o s5 --shard 0/3 a.wav
check quiet "" "$FZ" -q --device cpu -o s6 --manifest empty.csv
"$FZ" --json --device cpu -o s7 - </dev/null >out 2>/dev/null || fail "--json: exit $?"
grep -q '"processed":0,"skipped_existing":0,"failed":0,"not_started":0,"total":0,' out ||
  fail "--json: $(cat out)"
# a shard that holds the input does its work as before
"$FZ" --device cpu -o s8 --manifest one.txt --shard 2/3 2>err || fail "shard 2/3: exit $?"
[ "$(cat err)" = "featurize: done: 1 of 1 (1 new, 0 already stored, 0 failed)" ] ||
  fail "shard 2/3: $(cat err)"

[ $fails = 0 ] || exit 1
echo "featurize_empty_input: ok"
