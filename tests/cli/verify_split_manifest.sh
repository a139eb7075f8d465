#!/bin/bash
# cache-verify --manifest on a split store (its parts one dataset): manifest lines skipped (a
# duplicate id, a line without a text column, one of an empty id: named by no '(id )') are
# warnings, as on a plain store, and fail under --strict; a manifest id no part holds fails the dataset while every part is clean, and the done
# line says the dataset is not sound (not only "3 of 3 stores clean"); a part checked on its own,
# or under --separate, against its share of the manifest.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
V="$FC_BIN/cache-verify"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0

make_corpus c 12 || exit 1
"$FC_BIN/featurize" -q --device cpu --writers 3 -o sp --manifest c/metadata.csv || exit 1
"$FC_BIN/featurize" -q --device cpu --writers 1 -o plain --manifest c/metadata.csv || exit 1
first=$(head -n 1 c/metadata.csv | cut -d'|' -f1)
{ cat c/metadata.csv; echo "$first|Said again.|said again."; echo "no text column"; echo "|No id."; } >m.csv

# the plain store and the split store report the same skipped lines
"$V" --manifest m.csv plain >out 2>err; check plain 0 $?
grep -F ': warning: manifest' out | sed 's/^plain: //' >plain.w
"$V" --manifest m.csv sp >out 2>err; check split 0 $?
grep '^dataset: warning: manifest' out | sed 's/^dataset: //' >split.w
cat >want <<W
warning: manifest 13 (id $first): line skipped: duplicate id '$first'
warning: manifest 14: line skipped: missing text column (expected id|text[|normalized])
warning: manifest 15: line skipped: empty id
W
diff -u want plain.w || { echo "FAIL plain store's skipped lines"; fail=1; }
diff -u want split.w || { echo "FAIL split store's skipped lines"; cat out; fail=1; }
grep -q '^dataset of 3 stores: 0 errors, 3 warnings; 12 audio, 0 text entries; ' out ||
  { echo "FAIL split summary"; cat out; fail=1; }
[ "$(cat err)" = "cache-verify: done: 3 of 3 stores clean; one sound dataset" ] || { echo "FAIL split done line"; cat err; fail=1; }

"$V" --strict --manifest m.csv plain >out 2>err; check plain-strict 1 $?
"$V" --strict --manifest m.csv sp >out 2>err; check split-strict 1 $?
[ "$(cat err)" = "cache-verify: done: 3 of 3 stores clean; not one sound dataset (3 warnings under --strict)" ] ||
  { echo "FAIL split-strict done line"; cat err; fail=1; }
"$V" --strict --json -q --manifest m.csv plain >out 2>err; check plain-strict-json 1 $?
"$PY" -c '
import json, sys
d = json.loads(sys.stdin.read())
assert [(w["key"], w["id"]) for w in d["warnings"]] == [("13", sys.argv[1]), ("14", None), ("15", None)], d
' "$first" <out || { echo "FAIL plain-strict json: a line with an empty id has id null"; cat out; fail=1; }
"$V" --strict --json -q --manifest m.csv sp >out 2>err; check split-strict-json 1 $?
tail -n 1 out | "$PY" -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["ok"] is False and d["warning_count"] == 3, d
assert [(w["db"], w["key"], w["id"]) for w in d["warnings"]] == \
    [("manifest", "13", sys.argv[1]), ("manifest", "14", None), ("manifest", "15", None)], d["warnings"]
' "$first" || { echo "FAIL split-strict json"; cat out; fail=1; }

# every part clean, the dataset not: an id of the manifest that no part holds
{ cat c/metadata.csv; echo "LJ999-0001|Not featurized.|not featurized."; } >m2.csv
"$V" --manifest m2.csv sp >out 2>err; check missing-id 1 $?
grep -Fqx 'dataset: error: manifest LJ999-0001: missing: the manifest names it, no store has an audio entry' out ||
  { echo "FAIL missing-id finding"; cat out; fail=1; }
[ "$(cat err)" = "cache-verify: done: 3 of 3 stores clean; not one sound dataset (1 error)" ] ||
  { echo "FAIL missing-id done line"; cat err; fail=1; }
# a part beyond the marker's N (its records hidden): every part checked is clean, the split store
# is not, and the done line says so (not only "3 of 3 stores clean" under exit 1)
cp -r sp/part-1 sp/part-3
"$V" sp >out 2>err; check extra-part 1 $?
grep -q "^sp: error: part-3: a part beyond the marker's 3 parts" out ||
  { echo "FAIL extra-part finding"; cat out; fail=1; }
[ "$(cat err)" = "cache-verify: done: 3 of 3 stores clean; split store sp not sound (1 error)" ] ||
  { echo "FAIL extra-part done line"; cat err; fail=1; }
rm -rf sp/part-3
# a part checked on its own, or each part under --separate, answers for its share of the manifest
# (the ids fc_store_part_of_id puts in it): each part was checked against all of it, and every id
# of the other parts was an error
"$V" --separate --manifest c/metadata.csv sp >out 2>err; check separate 0 $?
"$V" --json -q --manifest c/metadata.csv sp/part-0 sp/part-1 sp/part-2 --separate >out 2>err
check parts-alone 0 $?
"$PY" -c '
import json, sys
n = [json.loads(l)["manifest_items"] for l in open("out")]
assert sum(n) == 12 and len(n) == 3 and all(0 < k < 12 for k in n), n
' || { echo "FAIL parts alone: the manifest's ids not shared out"; cat out; fail=1; }
# an id no part holds: the part it belongs in says so
"$V" --separate --manifest m2.csv sp >out 2>err; check separate-missing 1 $?
[ "$(grep -c ': error: audio LJ999-0001: missing: manifest line [0-9]* names it' out)" = 1 ] ||
  { echo "FAIL separate-missing: not said once, by its part"; cat out; fail=1; }
exit $fail
