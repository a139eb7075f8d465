#!/bin/bash
# cache-merge -o SPLIT: a split store cannot be merged into (docs/cache-merge.md: exit 2, FC_ESPLIT).
# It was found only when the output was created, after the inputs were read: the shards check or
# the conflicts were said first (exit 2 or 1 for another reason, the user fixed that and met this),
# and the reason said 'cannot create the output store: ... open it as its parts', which merging
# into a part then refuses. Now said first, nothing read or written, pointing at a plain store.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
expect_err() { # name exact-stderr
  if [ "$(cat err)" != "$2" ]; then echo "FAIL $1: stderr:"; cat err; echo "want:"; echo "$2"; fail=1; fi
}
make_corpus c 6 || exit 1
"$FC_BIN/featurize" -q -j1 --writers 3 -o sp --manifest c/metadata.csv || fail=1
"$FC_BIN/featurize" -q -j1 --shard 0/2 -o s0 --manifest c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab --export-vocab vocab.txt -o v c/metadata.csv || fail=1
sed 's/|[^|]*|[^|]*$/|other words.|other words./' c/metadata.csv >other.csv
"$FC_BIN/tokenize" -q --vocab vocab.txt -o t1 c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --vocab vocab.txt -o t2 other.csv || fail=1
before=$(cd sp && find . -type f -exec md5sum {} + | sort)
want="cache-merge: sp: cannot open the output store: FC_ESPLIT: a split store of 3 parts; merge into a plain store"
"$M" -o sp t1 >out 2>err; check plain-input 2 $?
expect_err plain-input "$want"
"$M" -o sp s0 >out 2>err; check shard-input 2 $?
expect_err shard-input "$want"
"$M" -o sp t1 t2 >out 2>err; check conflicting-inputs 2 $?
expect_err conflicting-inputs "$want"
"$M" --json -o sp/ t1 >out 2>err; check json 2 $?
expect_err json "cache-merge: sp/: cannot open the output store: FC_ESPLIT: a split store of 3 parts; merge into a plain store"
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "error" and r["total"] == 0, r' ||
  { echo "FAIL json"; cat out; fail=1; }
[ "$before" = "$(cd sp && find . -type f -exec md5sum {} + | sort)" ] || { echo "FAIL the split store was written"; fail=1; }
exit $fail
