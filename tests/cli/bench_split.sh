#!/bin/bash
# cache-bench over a split store (featurize --writers N, the default of a large job): its parts are
# one cache, benched and reported as the STORE given — alone, among other stores as one dataset,
# and with --separate, where each STORE given (not each part) is benched on its own, as the
# option is for (one cache on an HDD and on an SSD, side by side).
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 8 || exit 1
"$FC_BIN/featurize" -q --writers 2 -o sp --manifest c/metadata.csv || exit 1
"$FC_BIN/featurize" -q -o s --manifest c/metadata.csv || exit 1
[ -e sp/part-1/data.mdb ] || { echo "FAIL: no split store of 2 parts"; exit 1; }
bench() { "$FC_BIN/cache-bench" -q --json --duration 0 -p sequential -s warm -b 2 --no-probe "$@" >out 2>err; }
summary() { # the summary records: store, records, stores
  "$PY" -c '
import json, sys
for l in open("out"):
    r = json.loads(l)
    if r["record"] == "summary":
        print(r["store"], r["records"], ",".join(r["stores"]))'
}
bench sp; check "a split store alone" 0 $?
[ "$(summary)" = "sp 8 sp/part-0,sp/part-1" ] || { echo "FAIL a split store alone: $(summary)"; fail=1; }
bench --separate sp s; check "--separate, a split store and a plain one" 0 $?
[ "$(summary | tr '\n' ';')" = "sp 8 sp/part-0,sp/part-1;s 8 s;" ] ||
  { echo "FAIL --separate sp s: $(summary | tr '\n' ';')"; fail=1; }
[ "$(grep -c '"record":"pass"' out)" = 4 ] || { echo "FAIL --separate sp s: want 2 passes of 2 stores"; cat out; fail=1; }
"$FC_BIN/featurize" -q --writers 2 -o sp2 --manifest c/metadata.csv || exit 1
bench sp sp2; check "two split stores as one dataset" 0 $?
[ "$(summary)" = "sp + sp2 8 sp/part-0,sp/part-1,sp2/part-0,sp2/part-1" ] || { echo "FAIL sp sp2: $(summary)"; fail=1; }
# the table names the store given too
"$FC_BIN/cache-bench" -q --duration 0 -p sequential -s warm -b 2 --no-probe --separate sp s >out 2>err
check "--separate, the table" 0 $?
grep -q "^\[1\] store: sp  (a split store of 2 parts: 8 records" out && grep -q "^\[2\] store: s  (8 records" out && ! grep -q "\[3\]" out ||
  { echo "FAIL --separate sp s, the table:"; cat out; fail=1; }
grep -q "^verdict: sp keeps up" out || { echo "FAIL --separate sp s: no verdict for sp"; cat out; fail=1; }
# the table of a dataset says what it was given: a split store's parts, stores in parts (it said
# "one dataset of 2 stores" of one split store, of 2 parts)
"$FC_BIN/cache-bench" -q --duration 0 -p sequential -s warm -b 2 --no-probe sp s sp2 >out 2>err
check "sp s sp2, the table" 0 $?
grep -q "^store: sp + s + sp2  (one dataset of 3 stores in 5 parts: 8 records" out ||
  { echo "FAIL sp s sp2, the table:"; cat out; fail=1; }
# a split store without records: said of the STORE given, exit 2, alone or under --separate
"$FC_BIN/featurize" -q --writers 2 -o empty </dev/null || exit 1
for args in "empty" "--separate empty s"; do
  # shellcheck disable=SC2086 # the words of $args
  "$FC_BIN/cache-bench" -q -s warm --no-probe $args >out 2>err
  rc=$?
  [ $rc = 2 ] && [ "$(cat err)" = "cache-bench: empty: no part of the split store has feature records (db feat is empty): nothing to bench" ] ||
    { echo "FAIL cache-bench $args (an empty split store): exit $rc: $(cat err)"; fail=1; }
done
exit $fail
