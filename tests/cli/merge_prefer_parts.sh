#!/bin/bash
# --prefer SPLIT where the split store's parts are given one by one: the engine lets a range of
# inputs win, so a store given between two of the parts won too (as if one of them), silently.
# Now the parts, in any order, must be given one after another (the others' ids never sit there):
# else exit 2, nothing written. Given together (here after another store, part 2 first), each
# part wins where it holds the id.
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
make_corpus c 40 || exit 1
"$FC_BIN/tokenize" -q --build-vocab --export-vocab vocab.txt -o v c/metadata.csv || fail=1
"$FC_BIN/featurize" -q -j1 --writers 3 -o sp --manifest c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --vocab vocab.txt -o sp c/metadata.csv || fail=1
sed 's/|[^|]*|[^|]*$/|other words.|other words./' c/metadata.csv >other.csv
"$FC_BIN/tokenize" -q --vocab vocab.txt -o sx other.csv || fail=1
"$M" -q --prefer sp -o m4 sp/part-0 sx sp/part-1 sp/part-2 >out 2>err; check prefer-apart 2 $?
expect_err prefer-apart "cache-merge: --prefer sp: its parts are not given together (give sp itself, or its parts one after another)
Try 'cache-merge --help' for more information."
[ -e m4 ] && { echo "FAIL prefer-apart: a refused merge created its output"; fail=1; }
"$M" -q --prefer sp -o m5 sx sp/part-2 sp/part-0 sp/part-1 >out 2>err; check prefer-together 0 $?
[ "$(grep -c "; kept sp/part-[012]'s$" err)" = 40 ] || { echo "FAIL prefer-together: want 40 'kept' lines"; cat err; fail=1; }
"$PY" -c "
import lmdb; e=lmdb.open('m5',readonly=True,lock=False,max_dbs=8); t=e.begin()
db = e.open_db(b'text',txn=t,create=False)
assert not [k for k, v in t.cursor(db=db) if bytes(v)[16:] == b'other words.']" ||
  { echo "FAIL prefer-together: sx's transcripts kept"; fail=1; }
exit $fail
