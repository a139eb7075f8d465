#!/bin/bash
# cache-merge of shards whose token configs of one name differ in an option, not in their
# vocabulary (one task of the run given --add-bos, or --case fold): the refusal said "a vocabulary
# built in each" and told the user to build the vocabulary once and tokenize every shard with
# --vocab, which leaves the option as it was and the refusal too. Now it names the field that
# differs and says to tokenize the shards with the same options. Plain stores (no shards) merge
# and say it. A vocabulary built in each shard is still said as such (cli/merge_partial_vocab).
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
cfg_of() { # STORE: the digest of its one token config
  "$FC_BIN/cache-config" --json "$1" | "$PY" -c 'import json, sys; print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"] == "tokens"][0])'
}
"$FC_BIN/tokenize" -q --build-vocab --shard 0/3 -o s0 c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab --shard 1/3 -o s1 c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab --add-bos --shard 2/3 -o s2 c/metadata.csv || fail=1
a=$(cfg_of s0) b=$(cfg_of s2)
[ "$a" = "$(cfg_of s1)" ] && [ "$a" != "$b" ] || { echo "FAIL: fixture: $a $b"; exit 1; }

"$M" --json -o m s0 s1 s2 >out 2>err; check refused 1 $?
want="cache-merge: the inputs hold 2 different 'chars' token configs, in 3 stores (${a:0:12} in s0, s1; ${b:0:12} in s2), tokenized with other options (${b:0:12}: add_bos true where ${a:0:12} has false): each config holds the tokens of its own stores' ids, and tokens=\"chars\" would not say which
cache-merge: tokenize every shard with the same options: drop the other config from the shards that hold it (cache-config --drop DIGEST SHARD) and tokenize them again
cache-merge: nothing merged"
[ "$(cat err)" = "$want" ] || { echo "FAIL refused: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "refused" and r["token_configs_apart"] == 1, r' ||
  { echo "FAIL refused json"; cat out; fail=1; }
[ -e m ] && { echo "FAIL refused: m made"; fail=1; }

# the fix it gives merges
"$FC_BIN/cache-config" -q --drop "$b" s2 || fail=1
"$FC_BIN/tokenize" -q --build-vocab --shard 2/3 -o s2 c/metadata.csv || fail=1
"$M" -q -o m s0 s1 s2 >out 2>err; check fixed 0 $?

# stores that record no shards: merged, said
"$FC_BIN/tokenize" -q --build-vocab -o p c/metadata.csv || fail=1
"$FC_BIN/tokenize" -q --build-vocab --case fold -o q c/metadata.csv || fail=1
"$M" -q -o pq p q >out 2>err; check plain 0 $?
grep -q "^cache-merge: the inputs hold 2 different 'chars' token configs, in 2 stores (.*), tokenized with other options (.*casefold true where .* has false.*)" err &&
  grep -qx "cache-merge: merged all the same (the stores record no shards): for one config, tokenize the merged store with the options you want and drop the others (cache-config --drop)" err ||
  { echo "FAIL plain: stderr:"; cat err; fail=1; }
exit $fail
