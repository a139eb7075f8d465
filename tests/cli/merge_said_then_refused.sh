#!/bin/bash
# Stores whose configs differ (token configs of one name built apart, mel configs not every store
# holds) and which record no shards are said and merged all the same — unless something else
# refuses the merge: conflicting entries. Then the advice "merged all the same ... drop the
# others from OUT" was said before the conflicts and "nothing merged": a line saying the merge
# happened, and a fix for a store that was not made. That line now comes only when the merge
# went on (docs/cache-merge.md "Configs held apart", "Shards").
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
cp -r c d # the same corpus elsewhere: every audio entry names another source path
# half the ids, other transcripts
head -3 c/metadata.csv | sed 's/|\([^|]*\)|\([^|]*\)$/|\1 xyz 123|\2 xyz 123/' >d/metadata.csv
"$FC_BIN/featurize" -q -j1 -o a --manifest c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab -o a c/metadata.csv || fail=1
"$FC_BIN/featurize" -q -j1 --fmax 7600 -o b --manifest d/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab -o b d/metadata.csv || fail=1
"$M" -o m a b >out 2>err; check conflicts 1 $?
grep -q "^cache-merge: the inputs hold 2 different 'chars' token configs" err &&
  grep -q "^cache-merge: the stores hold 2 mel configs that not every store holds" err &&
  grep -q "differs from a's" err && grep -q "nothing merged" err ||
  { echo "FAIL conflicts: stderr:"; cat err; fail=1; }
grep -q "merged all the same" err && { echo "FAIL conflicts: 'merged all the same' of a refused merge:"; cat err; fail=1; }
[ -e m ] && { echo "FAIL conflicts: a refused merge created its output"; fail=1; }
# resolved, the merge goes on and the advice comes
"$M" --prefer first -o m a b >out 2>err; check prefer 0 $?
[ "$(grep -c "merged all the same" err)" = 2 ] || { echo "FAIL prefer: stderr:"; cat err; fail=1; }
exit $fail
