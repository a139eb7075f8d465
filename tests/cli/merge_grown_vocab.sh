#!/bin/bash
# cache-merge into an OUT made by a former merge of the same shards, after the manifest grew by a
# line with new symbols and the shards were tokenized again (the Makefile template's
# --build-vocab after `touch metadata.csv`): every shard then holds the old 'chars' config and
# the new one, OUT the old one only. The refusal said "a vocabulary built in each" (they agree),
# counted OUT among "the inputs", and told the user to drop 'chars' in each shard and tokenize
# it again with --vocab, which leaves OUT's config and the refusal as they were. Now it says
# what differs — OUT lacks the config that every input holds beside the one OUT holds — and the
# drops that leave one vocabulary, which then merge.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
cfgs_of() { # STORE: the digests of its token configs, one a line, sorted
  "$PY" - "$1" <<'PY'
import json, sys, lmdb
e = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with e.begin() as t:
    for k, v in t.cursor(db=e.open_db(b"meta", txn=t, create=False)):
        if k.startswith(b"cfg/") and json.loads(v)["kind"] == "tokens":
            print(k[4:].decode())
PY
}
make_corpus c 12 || exit 1
head -8 c/metadata.csv >c/first.csv
tok() { for k in 0 1; do "$FC_BIN/tokenize" -q --build-vocab --shard $k/2 -o s$k "$1" || fail=1; done; }
tok c/first.csv
"$M" -q -o m s0 s1 >out 2>err; check first 0 $?
old=$(cfgs_of m)
echo 'LJ009-0001|Quiz 42!|quiz 42!' >>c/metadata.csv # the manifest grew: new symbols
tok c/metadata.csv
new=$(cfgs_of s0 | grep -vx "$old")
[ -n "$new" ] && [ "$(cfgs_of s1 | sort | tr '\n' ' ')" = "$(printf '%s\n' "$old" "$new" | sort | tr '\n' ' ')" ] ||
  { echo "FAIL: fixture: configs $old / $(cfgs_of s0 | tr '\n' ' ')"; exit 1; }

"$M" --json -o m s0 s1 >out 2>err; check refused 1 $?
want="cache-merge: m lacks a 'chars' token config that every input holds: $new, beside $old, which m holds too (a vocabulary built again, over a manifest that grew or a line fixed?); merged, tokens=\"chars\" would not say which
cache-merge: for one vocabulary, drop $old from each input and from m (cache-config --drop $old STORE), then merge again
cache-merge: nothing merged"
[ "$(cat err)" = "$want" ] || { echo "FAIL refused: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "refused" and r["token_configs_apart"] == 1, r' ||
  { echo "FAIL refused json"; cat out; fail=1; }
[ "$(cfgs_of m)" = "$old" ] || { echo "FAIL refused: m changed"; fail=1; }

# the first fix it gives merges, and m holds the new vocabulary alone, every line under it
for s in s0 s1 m; do "$FC_BIN/cache-config" -q --drop "$old" $s || fail=1; done
"$M" -q -o m s0 s1 >out 2>err; check fixed 0 $?
[ "$(cfgs_of m)" = "$new" ] || { echo "FAIL fixed: configs $(cfgs_of m)"; fail=1; }
"$FC_BIN/cache-verify" -q --strict m >out 2>&1 && grep -q " 13 text entries; 0 mel, 1 token configs$" out ||
  { echo "FAIL fixed: cache-verify"; cat out; fail=1; }

# stores that record no shards (plain runs) merge, said all the same
"$FC_BIN/tokenize" -q --build-vocab -o p c/first.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab -o plain c/first.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab -o p c/metadata.csv || fail=1
"$M" -q -o plain p >out 2>err; check plain 0 $?
want="cache-merge: plain lacks a 'chars' token config that every input holds: $new, beside $old, which plain holds too (a vocabulary built again, over a manifest that grew or a line fixed?); merged, tokens=\"chars\" would not say which
cache-merge: merged all the same (the stores record no shards): for one vocabulary, drop $old from plain (cache-config --drop $old plain)"
[ "$(cat err)" = "$want" ] || { echo "FAIL plain: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
exit $fail
