#!/bin/bash
# cache-verify of several stores as one dataset (a split store's parts, shards) when one of them
# is damaged: a truncated data.mdb is reported as for one store — no read past its end (that was
# a SIGBUS: exit 135, no report at all) — and so is a store of another format version; each is a
# finding (exit 1, not 2), and the dataset check says it did not run over them.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
V="$FC_BIN/cache-verify"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0

make_corpus c 12 || exit 1
"$FC_BIN/featurize" -q --device cpu --writers 3 -o sp --manifest c/metadata.csv || exit 1
"$FC_BIN/featurize" -q --device cpu --writers 1 -o plain --manifest c/metadata.csv || exit 1
cp -r plain other

# a part cut short (a copy that ran out of space)
size=$(stat -c %s sp/part-1/data.mdb)
truncate -s $((size / 2)) sp/part-1/data.mdb
"$V" --manifest c/metadata.csv sp >out 2>err; check truncated-part 1 $?
grep -q "^sp/part-1: error: env data.mdb: truncated: $((size / 2)) bytes, but the last committed page ([0-9]*) ends at byte [0-9]*; nothing else was read$" out ||
  { echo "FAIL truncated-part: no truncation finding"; cat out err; fail=1; }
grep -Fqx "dataset: error: env sp/part-1: data.mdb is truncated: the stores were not checked as one dataset" out ||
  { echo "FAIL truncated-part: no dataset finding"; cat out; fail=1; }
[ "$(cat err)" = "cache-verify: done: 2 of 3 stores clean (1 not clean); not one sound dataset (1 error)" ] ||
  { echo "FAIL truncated-part done line"; cat err; fail=1; }
"$V" --json -q plain sp >out 2>err; check truncated-json 1 $?
"$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 5 and lines[-1]["dataset"] and lines[-1]["ok"] is False, lines[-1]
' out || { echo "FAIL truncated-json"; cat out; fail=1; }

# a shard of another format version beside a sound one
"$PY" - <<'PY'
import lmdb
e = lmdb.open("other", max_dbs=20)
with e.begin(write=True) as t:
    t.put(b"format", b"featcache/2", db=e.open_db(b"meta", txn=t, create=False))
PY
"$V" plain other >out 2>err; check other-version 1 $?
grep -Fqx "other: error: meta format: a featcache store of a format version this build does not know (it says featcache/2; it reads featcache/1): made by a newer featcache?" out ||
  { echo "FAIL other-version: no finding"; cat out; fail=1; }
grep -Fqx "dataset: error: env other: FC_EVERSION: a store format version this build does not read (it reads featcache/1 stores, split or not: one made by a newer featcache?): the stores were not checked as one dataset" out ||
  { echo "FAIL other-version: no dataset finding"; cat out; fail=1; }
[ "$(cat err)" = "cache-verify: done: 1 of 2 stores clean (1 not clean); not one sound dataset (1 error)" ] ||
  { echo "FAIL other-version done line"; cat err; fail=1; }
exit $fail
