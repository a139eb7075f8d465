#!/bin/bash
# cache-merge --partial over shards whose vocabularies were built apart (each tokenize read its
# own part of the corpus): the token configs refuse the merge, exit 1 and "nothing merged" as
# without --partial (docs/cache-merge.md "Shards"). With a shard missing as well, the tool took the
# refusal for the shards' — which --partial had waived — and said "cache-merge: ; nothing merged
# (give the missing shards too, or --partial)", exit 2, --json status refused all the same.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
head -6 c/metadata.csv >c/h1.csv
tail -6 c/metadata.csv | sed 's/|\([^|]*\)|\([^|]*\)$/|\1 xyz 123|\2 xyz 123/' >c/h2.csv
"$FC_BIN/tokenize" -q --build-vocab --shard 0/3 -o v0 c/h1.csv || fail=1
# shard 1 of the whole corpus, its texts changed: h2.csv's six lines hold none of its ids, and a
# run that stores nothing stores no config either
sed 's/|\([^|]*\)|\([^|]*\)$/|\1 xyz 123|\2 xyz 123/' c/metadata.csv >c/h3.csv
"$FC_BIN/tokenize" -q --build-vocab --shard 1/3 -o v1 c/h3.csv || fail=1
"$M" --partial --json -o m v0 v1 >out 2>err; check partial-vocab 1 $?
[ "$(sed -n 3p err)" = "cache-merge: nothing merged" ] && [ "$(wc -l <err)" = 3 ] &&
  grep -q "^cache-merge: the inputs hold 2 different 'chars' token configs, in 2 stores " err ||
  { echo "FAIL partial-vocab: stderr:"; cat err; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "refused" and r["token_configs_apart"] == 1 and r["shards_missing"] == 1, r' ||
  { echo "FAIL partial-vocab json"; cat out; fail=1; }
[ -e m ] && { echo "FAIL partial-vocab: a refused merge created its output"; fail=1; }
# without --partial the missing shard is said first, exit 2, as before
"$M" -o m v0 v1 >out 2>err; check missing 2 $?
[ "$(cat err)" = "cache-merge: incomplete set of shards: of 3 shards, 2 given: shard 2 missing; nothing merged (give the missing shards too, or --partial)" ] ||
  { echo "FAIL missing: stderr:"; cat err; fail=1; }
# each config with every store that holds it (up to 3, then "and N more"): the line named the
# first holder of each only, so a vocabulary two stores share read as one store's
"$FC_BIN/tokenize" -q --build-vocab --export-vocab v.txt -o w0 c/h1.csv || fail=1
"$FC_BIN/tokenize" -q --vocab v.txt -o w1 c/h2.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab -o w2 c/h2.csv || fail=1
"$M" -o m2 w0 w1 w2 >out 2>err
a=$("$FC_BIN/cache-config" --json w0 | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["configs"][0]["digest"][:12])')
b=$("$FC_BIN/cache-config" --json w2 | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["configs"][0]["digest"][:12])')
grep -q "^cache-merge: the inputs hold 2 different 'chars' token configs, in 3 stores ($(printf '%s\n' "$a in w0, w1" "$b in w2" | sort | paste -sd ';' | sed 's/;/; /'))" err ||
  { echo "FAIL holders: stderr ($a, $b):"; cat err; fail=1; }
exit $fail
