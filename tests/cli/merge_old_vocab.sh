#!/bin/bash
# cache-merge into an OUT that holds an older 'chars' vocabulary (a former tokenize into it, over
# an older corpus) than the shards it is given, whose vocabulary is one: the cause is OUT's,
# and the refusal says so and how to fix it (drop OUT's config, or merge into a new store). It
# said "the inputs hold 2 different 'chars' token configs ...: a vocabulary built in each" and
# told the user to drop each shard's own and tokenize them again, which changes nothing: OUT's
# config stays (docs/cache-merge.md "Shards").
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
cfg_of() { # STORE: the digest of its one token config
  "$PY" - "$1" <<'PY'
import json, sys, lmdb
e = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with e.begin() as t:
    for k, v in t.cursor(db=e.open_db(b"meta", txn=t, create=False)):
        if k.startswith(b"cfg/") and json.loads(v)["kind"] == "tokens":
            print(k[4:].decode())
PY
}
make_corpus c 12 || exit 1
{ head -6 c/metadata.csv; echo 'LJ009-0001|Quiz 42!|quiz 42!'; } >c/old.csv # an utterance dropped since
"$FC_BIN/tokenize" -q --build-vocab -o m c/old.csv || fail=1
cp -r m plain
for k in 0 1; do "$FC_BIN/tokenize" -q --build-vocab --shard $k/2 -o s$k c/metadata.csv || fail=1; done
old=$(cfg_of m) new=$(cfg_of s0)
[ "$old" != "$new" ] && [ "$new" = "$(cfg_of s1)" ] || { echo "FAIL: fixture: configs $old $new"; exit 1; }
"$M" --json -o m s0 s1 >out 2>err; check refused 1 $?
want="cache-merge: m holds a 'chars' token config that no input holds (an older vocabulary?): $old, beside the inputs' $new; merged, tokens=\"chars\" would not say which
cache-merge: drop it from m first (cache-config --drop $old m), or merge into a new store
cache-merge: nothing merged"
[ "$(cat err)" = "$want" ] || { echo "FAIL refused: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "refused" and r["token_configs_apart"] == 1, r' ||
  { echo "FAIL refused json"; cat out; fail=1; }
# the fix it gives merges
"$FC_BIN/cache-config" -q --drop "$old" m || fail=1
"$M" -q -o m s0 s1 >out 2>err; check fixed 0 $?
[ "$(cfg_of m)" = "$new" ] || { echo "FAIL fixed: configs $(cfg_of m)"; fail=1; }
# stores that record no shards (a plain tokenize beside OUT) merge, said all the same
"$FC_BIN/tokenize" -q --build-vocab -o p c/metadata.csv || fail=1
"$M" -q -o plain p >out 2>err; check plain 0 $?
want="cache-merge: plain holds a 'chars' token config that no input holds (an older vocabulary?): $old, beside the inputs' $new; merged, tokens=\"chars\" would not say which
cache-merge: merged all the same (the stores record no shards): for one vocabulary, drop it from plain (cache-config --drop $old plain)"
[ "$(cat err)" = "$want" ] || { echo "FAIL plain: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
exit $fail
