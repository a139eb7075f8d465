#!/bin/bash
# cache-config --drop takes the start of a config's digest, 8 hex digits or more, when no other
# config's digest begins with them: cache-merge names the configs it merged apart by the first 12
# ('894e84450f94 (no preset: fmax 7600 ...)') and says 'cache-config --drop DIGEST m'; that digest
# given to --drop said 'nothing to drop: no config named ...' and exited 0, as a drop already
# done, so a Makefile's drop step passed with the config still there. A start that several
# digests share is a usage error naming them (exit 2); one no config has is nothing to drop
# (exit 0: the rerun of a finished drop); a name still wins over a digest's start.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
CC="$FC_BIN/cache-config"
make_corpus c 6 || exit 1
"$FC_BIN/featurize" -q --shard 0/2 -o s0 --manifest c/metadata.csv &&
  "$FC_BIN/featurize" -q --fmax 7600 --shard 1/2 -o s1 --manifest c/metadata.csv || exit 1
"$FC_BIN/cache-merge" -o m s0 s1 >out 2>err; check merge 0 $?
# the digest of the config without a name, as the merge names it
short=$(sed -n 's/^cache-merge: the stores hold 2 mel configs that not every store holds: .*; \([0-9a-f]\{12\}\) (no preset: fmax 7600 .*/\1/p' err)
[ ${#short} = 12 ] || { echo "FAIL: the merge's message names no 12-digit digest"; cat err; exit 1; }
full=$("$CC" --json m | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["name"] is None))')
hifigan=$("$CC" --json m | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["name"] == "hifigan"))')
[ "${full:0:12}" = "$short" ] || { echo "FAIL: $short is not the start of $full"; exit 1; }
cp -r m m2

# the merge's advice, as written: the config goes
"$CC" --drop "$short" m >out 2>err; check "drop $short" 0 $?
grep -qxE "cache-config: dropped config $full from m: 3 records, [0-9.]+ MB \(free pages in data.mdb, reused by later writes\)" err ||
  { echo "FAIL drop $short: stderr"; cat err; fail=1; }
[ "$("$CC" --no-count m | sed -n 's/^\([0-9a-f]\{32\}\) .*/\1/p')" = "$hifigan" ] ||
  { echo "FAIL drop $short: the store holds"; "$CC" m; fail=1; }
# run again: nothing to drop, exit 0
"$CC" --drop "$short" m >out 2>err; check "drop $short again" 0 $?
[ "$(cat err)" = "cache-config: m: nothing to drop: no config named '$short', nor one whose digest begins with it (it has: hifigan $hifigan)" ] ||
  { echo "FAIL drop $short again: stderr"; cat err; fail=1; }
# 8 digits, upper case: the same config
"$CC" -q --drop "$(echo "${full:0:8}" | tr a-f A-F)" m2 >out 2>err; check "drop 8 digits" 0 $?
[ -s err ] && { echo "FAIL drop 8 digits: stderr"; cat err; fail=1; }
[ "$("$CC" --no-count m2 | sed -n 's/^\([0-9a-f]\{32\}\) .*/\1/p')" = "$hifigan" ] ||
  { echo "FAIL drop 8 digits: the store holds"; "$CC" m2; fail=1; }

# two digests that begin alike (a config stored under a key that shares hifigan's first 10
# digits): the start they share is a usage error naming both, nothing dropped
cp -r s0 twin
"$PY" - twin "$hifigan" <<'PY' || exit 1
import sys, lmdb
e = lmdb.open(sys.argv[1], max_dbs=8)
h = sys.argv[2]
with e.begin(write=True) as t:
    meta = e.open_db(b"meta", txn=t)
    t.put(("cfg/" + h[:10] + "0" * 22).encode(), t.get(("cfg/" + h).encode(), db=meta), db=meta)
PY
sum=$(md5sum <twin/data.mdb)
"$CC" --drop "${hifigan:0:10}" twin >out 2>err; check "ambiguous" 2 $?
[ "$(cat err)" = "cache-config: twin: 2 configs' digests begin with '${hifigan:0:10}': give more of the digest (hifigan ${hifigan:0:10}0000000000000000000000, hifigan $hifigan)" ] ||
  { echo "FAIL ambiguous: stderr"; cat err; fail=1; }
[ "$(md5sum <twin/data.mdb)" = "$sum" ] || { echo "FAIL ambiguous: data.mdb changed"; fail=1; }
# 7 digits are no digest: a name no config has
"$CC" --drop "${full:0:7}" m2 >out 2>err; check "7 digits" 0 $?
grep -q "^cache-config: m2: nothing to drop: no config named '${full:0:7}' (it has: " err ||
  { echo "FAIL 7 digits: stderr"; cat err; fail=1; }
exit $fail
