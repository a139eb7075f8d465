#!/bin/bash
# A corpus that changes under the Makefile template (docs/scale-out.md "A corpus that changes"):
# an utterance dropped from the manifest and pruned from CACHE alone comes back with the next
# merge (its shard still holds it); pruned from the shards and CACHE it stays out, and the
# merge equals one plain run over the new manifest. A file replaced under its id: the merge
# into CACHE refuses the differing entry (make fails), make MERGE_OPTS="--prefer first" takes the
# shards' (the inputs win over OUT), and cache-prune removes the old record: the store then
# equals one plain run over the new audio. A config dropped from CACHE alone comes back with the
# next merge; dropped from the shards too, it stays out.
set -u
command -v make >/dev/null || { echo "skip: make not installed"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 24 || exit 1
mk() { make -j2 -f "$FC_SRC/scripts/scaleout/Makefile" MANIFEST=c/metadata.csv SHARDS=3 BIN="$FC_BIN" "$@"; }
mk >out 2>err || { echo "FAIL make"; cat out err; exit 1; }

# dropped: pruned from CACHE alone, it comes back; from the shards and CACHE, it stays out
sed -i '/^LJ001-0005|/d' c/metadata.csv
"$FC_BIN/cache-prune" -q --manifest c/metadata.csv cache >out 2>&1 || { echo "FAIL prune cache"; cat out; fail=1; }
mk >out 2>err || { echo "FAIL make after the drop"; cat out err; fail=1; }
"$FC_BIN/cache-verify" --manifest c/metadata.csv cache >out 2>&1
grep -q "^cache: note: 1 stored utterance is not in the manifest" out ||
  { echo "FAIL pruned from CACHE alone: the next merge did not bring it back (the page says it does)"; cat out; fail=1; }
"$FC_BIN/cache-prune" -q --manifest c/metadata.csv cache shards/s*/ >out 2>&1 || { echo "FAIL prune all"; cat out; fail=1; }
touch c/metadata.csv
mk >out 2>err || { echo "FAIL make after pruning all"; cat out err; fail=1; }
"$FC_BIN/featurize" -q -o ref --manifest c/metadata.csv && "$FC_BIN/tokenize" -q --build-vocab -o ref c/metadata.csv || exit 1
same_store ref cache >same.txt || { echo "FAIL pruned shards and CACHE: differs from one plain run"; cat same.txt; fail=1; }

# replaced under its id: the merge refuses, --prefer first takes the shards', prune the old record
cp c/wavs/LJ001-0009.wav c/wavs/LJ001-0008.wav
touch c/metadata.csv
mk >out 2>err && { echo "FAIL make merged a replaced file without a word"; fail=1; }
grep -q "^cache-merge: cache: audio entry 'LJ001-0008' differs from shards/s[0-2]'s: different audio: " err ||
  { echo "FAIL replaced: the conflict unsaid"; cat err; fail=1; }
mk MERGE_OPTS="--prefer first" >out 2>err || { echo "FAIL make MERGE_OPTS=\"--prefer first\""; cat out err; fail=1; }
grep -q -- "cache-merge -q --prefer first -o cache" out || { echo "FAIL MERGE_OPTS not passed to cache-merge"; cat out; fail=1; }
"$FC_BIN/cache-prune" -q cache shards/s*/ >out 2>&1 || { echo "FAIL prune orphans"; cat out; fail=1; }
mk >out 2>err || { echo "FAIL make after the fix"; cat out err; fail=1; }
rm -rf ref && "$FC_BIN/featurize" -q -o ref --manifest c/metadata.csv && "$FC_BIN/tokenize" -q --build-vocab -o ref c/metadata.csv || exit 1
same_store ref cache >same.txt || { echo "FAIL replaced: differs from one plain run"; cat same.txt; fail=1; }

# a config dropped from CACHE alone comes back with the next merge; from the shards too, it stays out
cfg=$("$FC_BIN/cache-config" --json cache | "$PY" -c 'import json, sys; print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"] == "tokens"][0])')
"$FC_BIN/cache-config" -q --drop "$cfg" cache || fail=1
"$FC_BIN/cache-merge" -q -o cache shards/s*/ || fail=1
"$FC_BIN/cache-config" cache | grep -q "^$cfg " || { echo "FAIL dropped from CACHE alone: not back (the page says it comes back)"; fail=1; }
for s in cache shards/s*/; do "$FC_BIN/cache-config" -q --drop "$cfg" "$s" || fail=1; done
"$FC_BIN/cache-merge" -q -o cache shards/s*/ || fail=1
"$FC_BIN/cache-config" cache | grep -q "^$cfg " && { echo "FAIL dropped from all: back"; fail=1; }
exit $fail
