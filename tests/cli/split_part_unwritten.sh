#!/bin/bash
# A split store (featurize --writers 3) whose job was stopped after the marker and before one
# writer's first commit leaves that part an LMDB environment nothing was ever committed to (or a
# data.mdb of 0 bytes), or the marker without the part. cache-config (even a plain listing),
# cache-config --drop and cache-prune refused the whole split store, exit 2 ('STORE/part-1: an
# empty store: nothing was ever committed to it ...; featurize, tokenize and cache-merge take it
# as new', 'STORE/part-2: cannot open the store: No such file or directory'), and cache-verify
# ended its dataset check with 'env STORE/part-1: FC_EFORMAT: not in the featcache format: the
# stores were not checked as one dataset'. Such a part holds nothing: the listing lists the other
# parts' configs, a drop and a prune work on the other parts, each saying the part and that
# featurize -o STORE again mends it (exit 0); a missing part, which may be one moved away that
# holds data, is listed so too, but a drop or a prune refuses it (exit 2), saying what to do;
# cache-verify names an empty part as it names a missing one (exit 1), and the Python loader,
# cache-merge and cache-bench, which read the parts as one dataset, refuse either saying what it
# is and what to do (the loader said 'STORE/part-1: FC_EFORMAT: not in the featcache format',
# 'STORE/part-2: No such file or directory'; cache-merge and cache-bench 'an empty store ...',
# 'cannot open ...: No such file or directory'). A rerun of featurize mends it, and then no tool
# says anything of it.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
CC="$FC_BIN/cache-config"
make_corpus c 12 || exit 1
"$FC_BIN/featurize" -q --writers 3 -o sp --manifest c/metadata.csv || { echo "FAIL: featurize"; exit 1; }
n_of() { "$CC" --json "$1" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["configs"][0]["records"])'; }
n0=$(n_of sp/part-0) n1=$(n_of sp/part-1) n2=$(n_of sp/part-2)
[ "$n0" -gt 0 ] && [ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] || { echo "FAIL: want entries in every part: $n0 $n1 $n2"; exit 1; }
# e: part-1 an environment nothing was committed to; z: part-1's data.mdb of 0 bytes; m: no part-2
cp -r sp e && rm -rf e/part-1 && "$PY" -c 'import lmdb; lmdb.open("e/part-1", max_dbs=8).close()' || exit 1
cp -r sp z && : >z/part-1/data.mdb || exit 1
cp -r sp m && rm -rf m/part-2 || exit 1
said() { # STORE K WHAT THEN: the line a tool says of an unwritten part
  if [ "$3" = empty ]; then
    w="an empty part: nothing was ever committed to it (its writer stopped before its first commit?)" v="mends it"
  else
    w="missing (its writer stopped before making it?)" v="makes it"
  fi
  echo "$TOOL: $1/part-$2: $w: its utterances are not stored; featurize (or tokenize) -o $1 again $v; $4"
}
expect_err() { # NAME WANT: stderr is WANT
  [ "$(cat err)" = "$2" ] || { echo "FAIL $1: stderr"; echo "--- got"; cat err; echo "--- want"; echo "$2"; fail=1; }
}
for s in e:1:empty:$((n0 + n2)) z:1:empty:$((n0 + n2)) m:2:missing:$((n0 + n1)); do
  IFS=: read -r st k what recs <<<"$s"
  TOOL=cache-config
  # the listing: the other parts' configs and records, the part said (a warning), exit 0
  "$CC" "$st" >out 2>err; check "$st: cache-config" 0 $?
  expect_err "$st: cache-config" "$(said "$st" "$k" "$what" "listed without it")"
  [ "$(head -1 out)" = "$st: 1 config" ] && grep -q "^[0-9a-f]\{32\}  mel     hifigan  *$recs  " out ||
    { echo "FAIL $st: cache-config: want hifigan with $recs records"; cat out; fail=1; }
  "$CC" --json "$st" >out 2>err; check "$st: cache-config --json" 0 $?
  "$PY" -c 'import json, sys
o = json.load(open("out"))
assert o["parts"] == 3 and [c["name"] for c in o["configs"]] == ["hifigan"] and o["configs"][0]["records"] == int(sys.argv[1]), o
assert o["unwritten_parts"] == [int(sys.argv[2])], o' "$recs" "$k" ||
    { echo "FAIL $st: cache-config --json"; cat out; fail=1; }
  # cache-verify: an error, as a missing part is; the other parts checked
  "$FC_BIN/cache-verify" "$st" >out 2>err; check "$st: cache-verify" 1 $?
  if [ "$what" = empty ]; then
    want="$st: error: part-$k: empty: nothing was ever committed to it (its writer stopped before its first commit?): its ids are not stored; featurize (or tokenize) -o $st again mends it"
  else
    want="$st: error: part-$k: missing: the marker says 3 parts (a writer creates it; until then its ids are not stored)"
  fi
  [ "$(head -1 out)" = "$want" ] || { echo "FAIL $st: cache-verify: first line"; cat out; fail=1; }
  grep -q "not checked as one dataset\|FC_EFORMAT" out err && { echo "FAIL $st: cache-verify: the dataset"; cat out err; fail=1; }
  [ "$(tail -1 err)" = "cache-verify: done: 2 of 3 stores clean (1 not clean)" ] || { echo "FAIL $st: cache-verify: stderr"; cat err; fail=1; }
  # the loader refuses it (its utterances are not stored), saying what the part is and what to do
  "$PY" -c 'import sys, featcache
try:
    featcache.Loader(sys.argv[1])
except featcache.FeatcacheError as e:
    print(e)' "$st" >out 2>&1
  if [ "$what" = empty ]; then
    want="featcache: $st/part-$k: an empty part of a split store: nothing was ever committed to it (its writer stopped before its first commit?): its utterances are not stored; featurize (or tokenize) -o $st again mends it"
  else
    want="featcache: $st/part-$k: a missing part of a split store (its writer stopped before making it?): its utterances are not stored; featurize (or tokenize) -o $st again makes it"
  fi
  [ "$(cat out)" = "$want" ] || { echo "FAIL $st: the loader"; cat out; fail=1; }
  # cache-merge and cache-bench, which read the parts as one dataset, refuse it the same way
  if [ "$what" = empty ]; then
    w="an empty part: nothing was ever committed to it (its writer stopped before its first commit?): its utterances are not stored; featurize (or tokenize) -o $st again mends it"
  else
    w="missing (its writer stopped before making it?): featurize (or tokenize) -o $st again makes it, or put back the part that was moved away"
  fi
  "$FC_BIN/cache-merge" -o merged "$st" >out 2>err; check "$st: cache-merge" 2 $?
  expect_err "$st: cache-merge" "cache-merge: $st/part-$k: $w; nothing merged"
  [ -e merged ] && { echo "FAIL $st: cache-merge made its output"; rm -rf merged; fail=1; }
  "$FC_BIN/cache-bench" "$st" >out 2>err; check "$st: cache-bench" 2 $?
  expect_err "$st: cache-bench" "cache-bench: $st/part-$k: $w; nothing run"
  cp -r "$st" p
  head -4 c/metadata.csv >keep.csv
  if [ "$what" = missing ]; then
    # a missing part may be one moved away, holding data: a prune or a drop refuses it, saying
    # what to do, and changes no part
    sum=$(md5sum p/part-*/data.mdb)
    why="cache-TOOL: p/part-$k: missing (its writer stopped before making it?): featurize (or tokenize) -o p again makes it, or put back the part that was moved away"
    "$FC_BIN/cache-prune" --manifest keep.csv p >out 2>err; check "$st: cache-prune" 2 $?
    expect_err "$st: cache-prune" "${why/TOOL/prune}; nothing removed from any STORE"
    "$CC" --drop hifigan p >out 2>err; check "$st: cache-config --drop" 2 $?
    expect_err "$st: cache-config --drop" "${why/TOOL/config}; nothing dropped"
    [ "$sum" = "$(md5sum p/part-*/data.mdb)" ] || { echo "FAIL $st: a refused prune or drop changed a part"; fail=1; }
  else
    TOOL=cache-prune
    "$FC_BIN/cache-prune" --dry-run --manifest keep.csv p >out 2>err; check "$st: cache-prune --dry-run" 0 $?
    [ "$(head -1 err)" = "$(said p "$k" "$what" "nothing in it to prune: the other parts are pruned")" ] ||
      { echo "FAIL $st: cache-prune --dry-run: stderr"; cat err; fail=1; }
    "$FC_BIN/cache-prune" --json --manifest keep.csv p >out 2>err; check "$st: cache-prune" 0 $?
    [ "$(head -1 err)" = "$(said p "$k" "$what" "nothing in it to prune: the other parts are pruned")" ] &&
      grep -q "^cache-prune: p: removed .* utterances stay (pages freed" err ||
      { echo "FAIL $st: cache-prune: stderr"; cat err; fail=1; }
    "$PY" -c 'import json, sys; o = json.load(open("out")); assert o["parts"] == 3 and o["status"] == "done" and o["unwritten_parts"] == [int(sys.argv[1])], o' "$k" ||
      { echo "FAIL $st: cache-prune --json"; cat out; fail=1; }
    left=$("$CC" --json p 2>/dev/null | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["configs"][0]["records"])')
    want=$(for p in p/part-*; do "$PY" - "$p" <<'PY'; done | awk '{s += $1} END {print s}'
import csv, os, sys, lmdb
p = sys.argv[1]
if not os.path.exists(p + "/data.mdb") or os.path.getsize(p + "/data.mdb") <= 8192: print(0); sys.exit()
keep = {l.split("|")[0] for l in open("keep.csv")}
env = lmdb.open(p, readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    db = env.open_db(b"audio", txn=t, create=False)
    print(sum(1 for k, _ in t.cursor(db=db)))
    assert all(bytes(k).decode() in keep for k, _ in t.cursor(db=db)), p
PY
)
    [ "$left" = "$want" ] && [ "$left" -le 4 ] || { echo "FAIL $st: cache-prune: $left records left, $want entries"; fail=1; }
    # cache-config --drop: from the other parts
    TOOL=cache-config
    "$CC" --drop hifigan p >out 2>err; check "$st: cache-config --drop" 0 $?
    [ "$(head -1 err)" = "$(said p "$k" "$what" "no config in it to drop")" ] &&
      grep -q "^cache-config: dropped config [0-9a-f]* from p: $left records" err ||
      { echo "FAIL $st: cache-config --drop: stderr"; cat err; fail=1; }
    "$CC" p >out 2>/dev/null
    [ "$(head -1 out)" = "p: 0 configs" ] || { echo "FAIL $st: the drop left"; cat out; fail=1; }
  fi
  rm -rf p
  # featurize again mends it: nothing said of it after
  "$FC_BIN/featurize" -q -o "$st" --manifest c/metadata.csv >out 2>err; check "$st: featurize again" 0 $?
  "$CC" "$st" >out 2>err; check "$st: mended: cache-config" 0 $?
  expect_err "$st: mended: cache-config" ""
  grep -q "^[0-9a-f]\{32\}  mel     hifigan  *$((n0 + n1 + n2))  " out || { echo "FAIL $st: mended: records"; cat out; fail=1; }
  "$CC" --json "$st" >out 2>err && "$PY" -c 'import json; o = json.load(open("out")); assert "unwritten_parts" not in o, o' ||
    { echo "FAIL $st: mended: cache-config --json"; cat out err; fail=1; }
  "$FC_BIN/cache-verify" -q "$st" >out 2>err; check "$st: mended: cache-verify" 0 $?
done
exit $fail
