#!/usr/bin/env bash
# cache-verify and featurize's failure records: a manifest id featurize failed (and recorded) is a
# "recorded failure", reported apart from errors, failing only under --strict; an id nobody
# explained stays an error; a feature record missing for the config its record names is no error
# either; a damaged failure record is an error; a split store (one dataset) says the same. Then
# --source-root: the corpus moved, the stored absolute paths are found under the new root.
set -u
FZ=${FC_BIN:?}/featurize
V=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

mkdir -p corpus/wavs
espeak-ng -w corpus/wavs/a.wav "the first file" || { echo "FAIL: espeak-ng failed"; exit 1; }
espeak-ng -w corpus/wavs/b.wav "the second file"
: >corpus/wavs/empty.wav
printf '%s\n' 'a|First.' 'b|Second.' 'empty|Empty.' 'nowav|No file.' >corpus/metadata.csv
"$FZ" -q -j1 --device cpu --manifest corpus/metadata.csv -o st --max-failed 2 2>err || fail "featurize: $(cat err)"

# 1. Two recorded failures, nothing else: exit 0, listed apart; --strict exit 1.
"$V" --manifest corpus/metadata.csv --expect-preset hifigan st >out 2>err
rc=$?
[ $rc = 0 ] || fail "recorded failures only: exit $rc: $(cat out err)"
grep -Eqx "st: recorded failure: empty: featurize failed it: empty file \(source $tmp/corpus/wavs/empty.wav; config hifigan [0-9a-f]{32}; [0-9-]{10} [0-9:]{8} UTC\)" out ||
  fail "empty's line: $(grep empty out)"
grep -Eqx "st: recorded failure: nowav: featurize failed it: No such file or directory \(source $tmp/corpus/wavs/nowav.wav; .*\)" out ||
  fail "nowav's line: $(grep nowav out)"
grep -q '^st: 0 errors, 0 warnings, 2 recorded failures; ' out || fail "summary: $(tail -n 1 out)"
"$V" --strict --manifest corpus/metadata.csv st >out 2>err
[ $? = 1 ] || fail "--strict does not fail on recorded failures"
"$V" --json --manifest corpus/metadata.csv st >out 2>err
"$PY" - out <<'PY' || fail "--json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] and r["error_count"] == 0 and r["failure_count"] == 2, r
assert r["failures_explaining"] == 2, r
assert [f["id"] for f in r["failures"]] == ["empty", "nowav"], r["failures"]
assert all(f["db"] == "failed" for f in r["failures"]), r["failures"]
PY

# 2. An id the manifest names that nobody explains is still an error.
cp corpus/metadata.csv m2.csv
echo 'ghost|Never featurized.' >>m2.csv
"$V" --manifest m2.csv st >out 2>err
[ $? = 1 ] && grep -q '^st: error: audio ghost: missing: manifest line 5 names it' out ||
  fail "unexplained id: $(cat out)"

# 3. A config that failed where another succeeded: a and b have hifigan features; the tacotron2
#    run fails them (--max-seconds) and records it: their missing tacotron2 records are recorded
#    failures, no errors.
"$FZ" -q -j1 --device cpu --preset tacotron2 --max-seconds 0.1 --manifest corpus/metadata.csv -o st \
  --max-failed 100% 2>err || fail "tacotron2: $(cat err)"
"$V" --manifest corpus/metadata.csv --expect-preset hifigan --expect-preset tacotron2 st >out 2>err
rc=$?
[ $rc = 0 ] || fail "two configs: exit $rc: $(grep error out)"
grep -q '^st: recorded failure: a: featurize failed it: .* over the 0.1 s limit (source .*; config tacotron2 ' out ||
  fail "a under tacotron2: $(grep ' a: ' out)"

# 4. A damaged failure record is an error (db failed).
cp -r st st.bad
"$PY" - st.bad <<'PY'
import sys, lmdb
env = lmdb.open(sys.argv[1], max_dbs=8)
with env.begin(write=True) as t:
    t.put(b"empty", b"short", db=env.open_db(b"failed", txn=t))
PY
"$V" --manifest corpus/metadata.csv st.bad >out 2>err
[ $? = 1 ] && grep -q '^st.bad: error: failed empty: failure record of 5 bytes does not decode' out ||
  fail "damaged record: $(cat out)"

# 5. A split store: each part lists its own records; the dataset's manifest check counts them.
"$FZ" -q -j1 --device cpu --writers 2 --manifest corpus/metadata.csv -o sp --max-failed 2 2>err ||
  fail "split: $(cat err)"
"$V" --manifest corpus/metadata.csv sp >out 2>err
rc=$?
[ $rc = 0 ] && [ "$(grep -c ': recorded failure: ' out)" = 2 ] &&
  grep -q '^dataset of 2 stores: 0 errors; .*; 4 manifest ids, 2 of them recorded failures$' out ||
  fail "split store: exit $rc: $(cat out)"

# 6. A store made before failure records (no failed db): verifies as before.
"$PY" - old <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=8)
with env.begin(write=True) as t:
    t.put(b"format", b"featcache/1", db=env.open_db(b"meta", txn=t))
    for n in (b"audio", b"text", b"feat", b"tok"):
        env.open_db(n, txn=t)
PY
"$V" old >out 2>err || fail "old store: $(cat out err)"

# 7. The corpus moves (mv keeps mtimes): the stored absolute paths are gone, --source-root finds
#    the files under the new root by the tail of their path; a wrong root names each source.
"$V" --sources st >out 2>err || fail "--sources before the move: $(grep error out)"
mkdir -p new/place && mv corpus new/place/
"$V" --sources st >out 2>err
[ $? = 1 ] && grep -q "^st: error: audio a: source $tmp/corpus/wavs/a.wav: No such file or directory" out ||
  fail "after the move: $(cat out)"
for root in new/place/corpus "$tmp/new/place" new/place/corpus/wavs; do
  "$V" --sources --source-root "$root" st >out 2>err || fail "--source-root $root: $(grep error out)"
done
"$V" --rehash --source-root new/place st >out 2>err || fail "--rehash --source-root: $(grep error out)"
"$V" --sources --source-root "$tmp" st >out 2>err
[ $? = 1 ] && grep -q "^st: error: audio b: source $tmp/corpus/wavs/b.wav: not under --source-root $tmp (no tail of its path is there)" out ||
  fail "wrong root: $(cat out)"

# 8. A file damaged after it was stored: the rerun fails it and records it, its features stay.
head -c 1000 new/place/corpus/wavs/b.wav >b.tmp && mv b.tmp new/place/corpus/wavs/b.wav
"$FZ" -q -j1 --device cpu --manifest new/place/corpus/metadata.csv -o st --max-failed 3 2>err ||
  fail "rerun after the damage: $(cat err)"
"$V" --manifest new/place/corpus/metadata.csv --expect-preset hifigan st >out 2>err ||
  fail "after the damage: $(grep error out)"
grep -q '^st: recorded failure: b: featurize failed it: .*; its features stored before are kept$' out ||
  fail "b's features kept: $(grep ' b: ' out)"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
