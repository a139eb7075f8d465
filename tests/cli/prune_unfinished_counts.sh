#!/bin/bash
# cache-prune --manifest stopped part-way (Ctrl-C, SIGTERM) or failing part-way (a failed commit)
# ended its summary with 'N utterances stay', N counting the manifest's utterances only: what
# would stay once a rerun finished, not what the store held (the ids not yet removed stay too);
# --json's kept_ids said the same. Now the line says the utterances left in the store for now
# ('...; 36 utterances left in it for now'), and kept_ids counts them; a finished run and a dry
# run still say what stays. Skipped (77) in a build without the fault countdowns.
set -u
PY=${FC_PYTHON:-python3}
. "$FC_SRC/tests/cli/stop_site.bash"
CP="$FC_BIN/cache-prune"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
for i in $(seq 40); do echo "t$i|text number $i.|text number $i."; done >t.csv
head -10 t.csv >keep.csv
"$FC_BIN/tokenize" -q --manifest t.csv --build-vocab -o base || { echo "FAIL: tokenize"; exit 1; }
cp -r base probe
FC_FAULT=commit:1 "$CP" -q --batch 1 --manifest keep.csv probe >/dev/null 2>&1
if [ $? = 0 ]; then echo "skip: built without -DFC_FAULT_INJECTION=ON"; exit 77; fi
removed() { # N: the summary's beginning, N utterances removed
  echo "cache-prune: t: removed 0 orphan records (0 feat, 0 tok; 0.0 MB) and $1 utterance$([ "$1" = 1 ] || echo s) not in the manifest (0 audio, $1 text entries, 0 failure records; 0.0 MB)"
}
# the dry run: 30 to remove, 10 stay
"$CP" --dry-run --manifest keep.csv base >out 2>err || { echo "FAIL dry run"; cat err; fail=1; }
[ "$(cat err)" = "cache-prune: base: would remove 30 orphan records (0 feat, 30 tok; 0.0 MB) and 30 utterances not in the manifest (0 audio, 30 text entries, 0 failure records; 0.0 MB); 10 utterances stay" ] ||
  { echo "FAIL dry run: stderr"; cat err; fail=1; }
for sig in INT TERM; do
  rm -rf t && cp -r base t
  FC_FAULT_STOP=prune:5 sigint_default "$CP" --batch 1 --json --manifest keep.csv t >out 2>err &
  pid=$!
  stopped $pid || { echo "FAIL SIG$sig: never stopped"; kill -9 $pid; wait $pid; fail=1; continue; }
  kill -$sig $pid && kill -CONT $pid
  wait $pid
  rc=$?
  [ $rc = $([ $sig = INT ] && echo 130 || echo 143) ] || { echo "FAIL SIG$sig: exit $rc"; fail=1; }
  # four transactions committed, one id each: 36 utterances left
  [ "$(tail -1 err)" = "$(removed 4); 36 utterances left in it for now (pages freed in data.mdb, reused by later writes)" ] ||
    { echo "FAIL SIG$sig: summary"; cat err; fail=1; }
  "$PY" -c 'import json; o = json.load(open("out")); assert o["status"] == "interrupted" and o["kept_ids"] == 36 and o["dropped"]["ids"] == 4, o' ||
    { echo "FAIL SIG$sig: --json"; cat out; fail=1; }
  "$CP" --manifest keep.csv t >out 2>err || { echo "FAIL SIG$sig: the rerun"; cat err; fail=1; }
  [ "$(cat err)" = "cache-prune: t: removed 30 orphan records (0 feat, 30 tok; 0.0 MB) and 26 utterances not in the manifest (0 audio, 26 text entries, 0 failure records; 0.0 MB); 10 utterances stay (pages freed in data.mdb, reused by later writes)" ] ||
    { echo "FAIL SIG$sig: the rerun's summary"; cat err; fail=1; }
done
# a commit failing part-way: the same
rm -rf t && cp -r base t
FC_FAULT=commit:3 "$CP" --batch 1 --manifest keep.csv t >out 2>err
rc=$?
[ $rc = 1 ] && [ "$(tail -2 err)" = "$(removed 2); 38 utterances left in it for now (pages freed in data.mdb, reused by later writes)
cache-prune: done: 0 of 1 store pruned (1 failed)" ] ||
  { echo "FAIL commit: exit $rc"; cat err; fail=1; }
# a split store stopped in its first part: the parts not begun said so
. "$FC_SRC/tests/cli/scaleout.bash"
make_corpus c 12 || exit 1
"$FC_BIN/featurize" -q --writers 2 -o sp --manifest c/metadata.csv || { echo "FAIL: featurize"; exit 1; }
head -2 c/metadata.csv >keep2.csv
n0=$("$PY" -c 'import lmdb
e = lmdb.open("sp/part-0", readonly=True, lock=False, max_dbs=8)
with e.begin() as t: print(t.stat(e.open_db(b"audio", txn=t, create=False))["entries"])')
gone0=$("$PY" -c 'import lmdb
keep = {l.split("|")[0].encode() for l in open("keep2.csv")}
e = lmdb.open("sp/part-0", readonly=True, lock=False, max_dbs=8)
with e.begin() as t: print(sum(1 for k, _ in t.cursor(db=e.open_db(b"audio", txn=t, create=False)) if bytes(k) not in keep))')
[ "$gone0" -ge 2 ] || { echo "FAIL: want 2 ids to remove from part 0, not $gone0"; exit 1; }
FC_FAULT_STOP=prune:2 sigint_default "$CP" --batch 1 --manifest keep2.csv sp >out 2>err &
pid=$!
if stopped $pid; then
  interrupted $pid
  [ $rc = 130 ] && [ "$(tail -1 err)" = "cache-prune: sp: removed 0 orphan records (0 feat, 0 tok; 0.0 MB) and 1 utterance not in the manifest (1 audio, 0 text entries, 0 failure records; 0.0 MB); $((n0 - 1)) utterances left for now in the parts begun (1 part not begun) (pages freed in data.mdb, reused by later writes)" ] ||
    { echo "FAIL split: exit $rc"; cat err; fail=1; }
else
  echo "FAIL split: never stopped"; kill -9 $pid; wait $pid; fail=1
fi
exit $fail
