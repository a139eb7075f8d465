#!/bin/bash
# The shards a store holds: featurize/tokenize --shard K/N record meta shard/K/N; cache-merge
# refuses shards that do not form complete sets (exit 2, the missing named, nothing created)
# unless --partial, says a shard given twice (not the featurize and tokenize stores of one shard
# kept apart), counts what the output holds, and merges stores
# without the keys as before; shards of two runs with another N (complete when every id is in
# one), a split shard, a store that took
# a plain run later, two merged corpora; cache-verify reads stores with the keys as before.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
expect_err() { # name exact-stderr
  if [ "$(cat err)" != "$2" ]; then echo "FAIL $1: stderr:"; cat err; echo "want:"; echo "$2"; fail=1; fi
}
shards_of() { # STORE: its meta shard/ keys, "K/N=VALUE" one a line
  "$PY" - "$1" <<'PY'
import sys, lmdb
e = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with e.begin() as t:
    for k, v in t.cursor(db=e.open_db(b"meta", txn=t, create=False)):
        if k.startswith(b"shard/"):
            print(f"{k[6:].decode()}={v.decode()}")
PY
}

make_corpus c 40 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest c/metadata.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref c/metadata.csv || exit 1
for k in 0 1 2 3; do
  "$FC_BIN/featurize" -q -j1 --shard $k/4 -o s$k --manifest c/metadata.csv || fail=1
  "$FC_BIN/tokenize" -q --build-vocab --shard $k/4 -o s$k c/metadata.csv || fail=1
done
# each shard records itself, once (featurize and tokenize agree); a plain run records nothing
for k in 0 1 2 3; do
  [ "$(shards_of s$k)" = "$k/4=$k/4" ] || { echo "FAIL s$k records: $(shards_of s$k)"; fail=1; }
done
[ -z "$(shards_of ref)" ] || { echo "FAIL a plain run records shards: $(shards_of ref)"; fail=1; }
"$FC_BIN/cache-verify" -q --strict s0 >out 2>&1 || { echo "FAIL cache-verify on a shard"; cat out; fail=1; }
# tokenize alone records it too
"$FC_BIN/tokenize" -q --build-vocab --shard 2/4 -o tk c/metadata.csv || fail=1
[ "$(shards_of tk)" = "2/4=2/4" ] || { echo "FAIL tokenize --shard records: $(shards_of tk)"; fail=1; }

# a shard left out: refused, named, nothing created
"$M" -o m s0 s1 s3 >out 2>err; check missing 2 $?
expect_err missing "cache-merge: incomplete set of shards: of 4 shards, 3 given: shard 2 missing; nothing merged (give the missing shards too, or --partial)"
[ -e m ] && { echo "FAIL a refused merge created its output"; fail=1; }
"$M" -q --json -o m s3 >out 2>err; check missing-json 2 $?
expect_err missing-json "cache-merge: incomplete set of shards: of 4 shards, 1 given: shards 0-2 missing; nothing merged (give the missing shards too, or --partial)"
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "refused" and r["shards_missing"] == 3 and r["total"] == 0, r' \
  || { echo "FAIL missing json"; cat out; fail=1; }
# --partial merges them; the output records what it holds, and a later merge of the rest into it
# is complete (the output's own count)
"$M" -q --partial -o m s0 s1 s3 >out 2>err; check partial 0 $?
[ "$(shards_of m | tr '\n' ' ')" = "0/4=0/4 1/4=1/4 3/4=3/4 " ] || { echo "FAIL partial merge records: $(shards_of m)"; fail=1; }
"$M" -q -o m s2 >out 2>err; check rest-into-partial 0 $?
same_store ref m >same.txt || { echo "FAIL merged in two goes differs from one plain run"; cat same.txt; fail=1; }
[ "$(shards_of m | wc -l)" = 4 ] || { echo "FAIL the whole merge records: $(shards_of m)"; fail=1; }
"$FC_BIN/cache-verify" -q --strict m >out 2>&1 || { echo "FAIL cache-verify on the merge"; cat out; fail=1; }

# all four: merged without a word about shards; a copy of one given beside them is said
"$M" -q -o m4 s0 s1 s2 s3 >out 2>err; check whole 0 $?
[ -s err ] && { echo "FAIL the whole set: stderr"; cat err; fail=1; }
cp -r s1 s1copy
"$M" -q -o m5 s0 s1 s2 s3 s1copy >out 2>err; check twice 0 $?
expect_err twice "cache-merge: s1copy: holds shard 1/4, as s1 does (a copy? its entries are stored once)"
same_store ref m5 >same.txt || { echo "FAIL with a copy beside: differs from one plain run"; cat same.txt; fail=1; }
# the featurize and the tokenize stores of each shard kept apart (faK utterances, taK
# transcripts): no shard is held twice (it said "taK: holds shard K/4, as faK does (a copy?
# ...)" of each); the
# merge is the plain run's
for k in 0 1 2 3; do
  "$FC_BIN/featurize" -q -j1 --shard $k/4 -o fa$k --manifest c/metadata.csv || fail=1
  "$FC_BIN/tokenize" -q --build-vocab --shard $k/4 -o ta$k c/metadata.csv || fail=1
done
"$M" -q --json -o mft fa0 fa1 fa2 fa3 ta0 ta1 ta2 ta3 >out 2>err; check apart 0 $?
[ -s err ] && { echo "FAIL featurize and tokenize shards apart: stderr"; cat err; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["shards_twice"] == 0, r' ||
  { echo "FAIL apart: json"; cat out; fail=1; }
same_store ref mft >same.txt || { echo "FAIL apart: differs from one plain run"; cat same.txt; fail=1; }
# a copy beside an incomplete set: still refused
"$M" -q -o m6 s0 s1 s1copy >out 2>err; check twice-missing 2 $?
grep -q "^cache-merge: incomplete set of shards: of 4 shards, 2 given: shards 2-3 missing; " err || { echo "FAIL twice-missing"; cat err; fail=1; }

# shards of two runs with different N: what counts is whether every id is in some shard
"$FC_BIN/featurize" -q -j1 --shard 1/2 -o t1 --manifest c/metadata.csv && \
  "$FC_BIN/tokenize" -q --build-vocab --shard 1/2 -o t1 c/metadata.csv || fail=1
"$M" -q -o m7 s0 t1 >out 2>err; check other-n 2 $?
expect_err other-n "cache-merge: incomplete set of shards: shards of 2 and 4 given (the shards of several runs?): the ids of 1 of 4 in none; nothing merged (give the missing shards too, or --partial)"
"$M" -q -o m7 s0 s1 t1 >out 2>err; check other-n-covered 0 $?
[ -s err ] && { echo "FAIL shards of 4 and 2 that cover every id: stderr"; cat err; fail=1; }
same_store ref m7 >same.txt || { echo "FAIL shards of 4 and 2: differs from one plain run"; cat same.txt; fail=1; }

# two merged stores that each hold every shard (two corpora, or the same twice): no word
"$M" -q -o m8 m4 m5 >out 2>err; check two-merges 0 $?
[ -s err ] && { echo "FAIL two whole merges: stderr"; cat err; fail=1; }
# a merged store and a copy of one of its shards beside it: said
"$M" -q -o m9 m4 s1copy >out 2>err; check merge-and-shard 0 $?
expect_err merge-and-shard "cache-merge: s1copy: holds shard 1/4, as m4 does (a copy? its entries are stored once)"

# stores without the keys merge as before, beside shards or alone
"$M" -q -o m10 ref >out 2>err; check plain 0 $?
"$M" -q -o m11 s0 s1 s2 s3 ref >out 2>err; check plain-beside 0 $?

# a vocabulary built in each shard (each shard's tokenize read its own part of the corpus, one of
# them with a symbol the others lack): several 'chars' configs, each covering its shard's ids only.
# Refused, with the fix; the same stores made without --shard are merged, said all the same
for k in 0 1 2 3; do
  "$PY" - s$k c/metadata.csv >piece$k.csv <<'PY'
import sys, lmdb
e = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with e.begin() as t:
    ids = {bytes(k).decode() for k, _ in t.cursor(db=e.open_db(b"audio", txn=t, create=False))}
for line in open(sys.argv[2]):
    if line.split("|")[0] in ids:
        print(line, end="")
PY
done
sed -i '1s/\./ é./g' piece0.csv
for k in 0 1 2 3; do
  "$FC_BIN/featurize" -q -j1 --shard $k/4 -o v$k --manifest c/metadata.csv &&
    "$FC_BIN/tokenize" -q --build-vocab --shard $k/4 -o v$k piece$k.csv || fail=1
done
"$M" -q -o mv v0 v1 v2 v3 >out 2>err; check vocab-per-shard 1 $?
grep -Eq "^cache-merge: the inputs hold [2-4] different 'chars' token configs, in 4 stores \([0-9a-f]{12} in v[0-3][,;] .*\): a vocabulary built in each, so each config holds the tokens of its own stores' ids, and tokens=\"chars\" would not say which$" err \
  || { echo "FAIL vocab per shard: what"; cat err; fail=1; }
grep -qxF "cache-merge: build the vocabulary once (tokenize --build-vocab --export-vocab chars.txt -o SCRATCH MANIFEST, over the whole manifest), then in each shard drop its own (cache-config --drop chars SHARD) and tokenize it with --vocab chars.txt" err \
  || { echo "FAIL vocab per shard: the fix"; cat err; fail=1; }
[ "$(tail -1 err)" = "cache-merge: nothing merged" ] || { echo "FAIL vocab per shard: last line"; cat err; fail=1; }
[ -e mv ] && { echo "FAIL a merge refused for its vocabularies created its output"; fail=1; }
# the fix, as said: the merge is then one config, which the loader takes by name
cat piece?.csv >whole.csv
"$FC_BIN/tokenize" -q --build-vocab --export-vocab chars.txt -o scratch whole.csv || fail=1
for k in 0 1 2 3; do
  "$FC_BIN/cache-config" -q --drop chars v$k >out 2>&1 || { echo "FAIL drop in v$k"; cat out; fail=1; }
  "$FC_BIN/tokenize" -q --vocab chars.txt --shard $k/4 -o v$k piece$k.csv || fail=1
done
"$M" -q -o mv v0 v1 v2 v3 >out 2>err; check vocab-fixed 0 $?
[ -s err ] && { echo "FAIL vocab fixed: stderr"; cat err; fail=1; }
"$PY" -c "
import featcache
ds = featcache.Loader('mv', tokens='chars', batch_size=8)
assert sum(len(b) for b in ds) == 40" >out 2>&1 || { echo "FAIL the loader on the fixed merge"; cat out; fail=1; }
# stores built apart (no --shard): merged, and said
"$FC_BIN/tokenize" -q --build-vocab -o w0 piece0.csv && "$FC_BIN/tokenize" -q --build-vocab -o w1 piece1.csv || fail=1
"$M" -q -o mw w0 w1 >out 2>err; check vocab-apart 0 $?
grep -q "^cache-merge: the inputs hold 2 different 'chars' token configs, in 2 stores (" err &&
  grep -qxF "cache-merge: merged all the same (the stores record no shards): for one vocabulary, tokenize the merged store with --vocab FILE and drop the others (cache-config --drop)" err \
  || { echo "FAIL vocab apart"; cat err; fail=1; }

# a shard that later took a plain run (the whole list) holds everything: it merges alone
cp -r s3 s3plain
"$FC_BIN/featurize" -q -j2 -o s3plain --manifest c/metadata.csv || fail=1
[ "$(shards_of s3plain | tr '\n' ' ')" = "0/1=0/1 3/4=3/4 " ] || { echo "FAIL a plain run into a shard records: $(shards_of s3plain)"; fail=1; }
"$M" -q -o m12 s3plain >out 2>err; check shard-then-plain 0 $?

# a split shard (--writers 2): its part 0 records the shard, and the set is complete with it
"$FC_BIN/featurize" -q -j1 --writers 2 --shard 2/4 -o sp2 --manifest c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab --shard 2/4 -o sp2 c/metadata.csv || fail=1
[ "$(shards_of sp2/part-0)" = "2/4=2/4" ] || { echo "FAIL split shard part 0 records: $(shards_of sp2/part-0)"; fail=1; }
"$M" -q -o m13 s0 s1 sp2 s3 >out 2>err; check split-shard 0 $?
same_store ref m13 >same.txt || { echo "FAIL with a split shard: differs from one plain run"; cat same.txt; fail=1; }
# cache-verify over the shards as one dataset says the same, as warnings (--strict fails on them);
# one shard checked alone is no finding
V="$FC_BIN/cache-verify"
"$V" s0 s1 s3 >out 2>err; check verify-missing 0 $?
grep -qxF "dataset: warning: meta: incomplete set of shards: of 4 shards, 3 given: shard 2 missing (the dataset lacks their ids; cache-merge refuses them without --partial)" out \
  || { echo "FAIL verify: incomplete set"; cat out; fail=1; }
"$V" -q --strict s0 s1 s3 >out 2>err; check verify-missing-strict 1 $?
"$V" s0 s1 s2 s3 s1copy >out 2>err; check verify-twice 0 $?
grep -qxF "dataset: warning: meta: s1copy holds shard 1/4, as s1 does: the dataset reads its ids from the first" out \
  || { echo "FAIL verify: shard twice"; cat out; fail=1; }
for a in "s0 s1 s2 s3" s3 sp2 "s0 s1 sp2 s3"; do
  "$V" $a >out 2>err; check "verify $a" 0 $?
  grep -q ": warning:" out && { echo "FAIL verify $a: a whole set, or one shard alone, warned"; cat out; fail=1; }
done

exit $fail
