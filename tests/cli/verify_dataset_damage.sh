#!/bin/bash
# cache-verify of several stores as one dataset (a split store's parts, shards) when one of them
# is damaged: a truncated data.mdb is reported as for one store — no read past its end (that was
# a SIGBUS: exit 135, no report at all) — and so is a store of another format version; each is a
# finding (exit 1, not 2), and the dataset check says it did not run over them; so does a store
# that could not be checked at all.
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

# a STORE that could not be checked at all (a shard's path mistyped) beside sound ones: over
# several stores the manifest is checked only as one dataset, which cannot be made without it;
# that was silent ("done: 4 of 5 stores clean (1 not checked)", no word that no manifest id was
# checked): now said on stdout, in --json (the dataset's object, "fatal") and in the done line
ids=$(grep -c . c/metadata.csv)
"$V" --manifest c/metadata.csv plain sp nope >out 2>err; check unread 1 $?
grep -Fqx "dataset of 5 stores: not checked as one dataset: nope could not be checked; the manifest's $ids ids not checked" out ||
  { echo "FAIL unread: the dataset check not said skipped"; cat out; fail=1; }
[ "$(tail -n 1 err)" = "cache-verify: done: 4 of 5 stores clean (1 not checked); not checked as one dataset" ] ||
  { echo "FAIL unread done line"; cat err; fail=1; }
"$V" --json --manifest c/metadata.csv plain sp nope >out 2>err; check unread-json 1 $?
"$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
d = lines[-1]
assert len(lines) == 6 and d["dataset"] == ["plain", "sp/part-0", "sp/part-1", "sp/part-2", "nope"], lines
assert d["ok"] is False and d["fatal"] == "not checked as one dataset: nope could not be checked; the manifest'"'"'s %s ids not checked" % sys.argv[2], d
' out "$ids" || { echo "FAIL unread-json"; cat out; fail=1; }
# a split store's part missing: the manifest's ids not checked either (the part is an error of its own)
rm -rf sp2 && cp -r sp sp2 && rm -rf sp2/part-2
"$V" --manifest c/metadata.csv sp2 >out 2>err; check part-missing 1 $?
grep -Fqx "dataset of 3 stores: not checked as one dataset: a split store has a part missing or unread; the manifest's $ids ids not checked" out ||
  { echo "FAIL part-missing: the dataset check not said skipped"; cat out; fail=1; }
rm -rf sp2

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
