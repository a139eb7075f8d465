#!/bin/bash
# Shards tokenized with different tokenizers (here -t phonemes given to one: a task of the job
# array run with other TOKENIZE_OPTS, or shards redone after a switch) merged into two token
# configs of other names that each hold the tokens of some ids only, without a word, exit 0:
# cache-verify then failed every text entry of the merged store ('missing: no token record for
# token config phonemes ...') and the loader's tokens="chars" skipped the other shard's ids. Mel
# configs held apart were said (docs/cache-merge.md "Configs held apart"); token configs of one
# name built apart too; these were not. Now said the same way before anything is written, merged
# (exit 0; --json token_configs_held_apart), or refused with --strict (exit 1, nothing written).
# Stores of one config, and a store without text entries beside them, are no finding.
set -u
M="$FC_BIN/cache-merge"
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
"$FC_BIN/tokenize" -q --build-vocab --shard 0/2 -o t0 c/metadata.csv &&
  "$FC_BIN/tokenize" -q -t phonemes --build-vocab --shard 1/2 -o p1 c/metadata.csv &&
  "$FC_BIN/tokenize" -q --build-vocab --shard 1/2 -o t1 c/metadata.csv || exit 1
digest() { "$FC_BIN/cache-config" --json "$1" | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"] == "tokens"))'; }
ch=$(digest t0) ph=$(digest p1)
said1="cache-merge: the stores hold 2 token configs that not every store holds: ${ch:0:12} (chars) in t0; ${ph:0:12} (phonemes: "
said2="cache-merge: the loader's tokens=\"chars\" takes ${ch:0:12} and skips the ids of p1 (not stored; cache-verify reports them missing)"

"$M" --json -o m t0 p1 >out 2>err; check apart 0 $?
[ "$(grep -c "^cache-merge: the stores hold 2 token configs" err)" = 1 ] && grep -qF "$said1" err &&
  grep -qF "in p1: merged, a config holds tokens only for the ids of the stores that hold it" err &&
  grep -qxF "$said2" err &&
  grep -qxF "cache-merge: merged all the same (--strict refuses): for one config, tokenize m with it over the whole manifest (what is stored is skipped), then drop the others (cache-config --drop DIGEST m)" err ||
  { echo "FAIL apart: stderr:"; cat err; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "done" and r["token_configs_held_apart"] == 2 and r["token_configs_apart"] == 0, r' ||
  { echo "FAIL apart json"; cat out; fail=1; }
# the fix it gives: the merged store tokenized with chars, phonemes dropped: cache-verify clean
"$FC_BIN/tokenize" -q --build-vocab -o m c/metadata.csv && "$FC_BIN/cache-config" -q --drop "$ph" m || fail=1
"$FC_BIN/cache-verify" -q --strict m >out 2>err ||
  { echo "FAIL fixed: cache-verify:"; cat out err; fail=1; }

# --strict: refused, nothing written
"$M" --strict --json -o m2 t0 p1 >out 2>err; check strict 1 $?
grep -qxF "cache-merge: tokenize the stores that lack a config with it (or drop it where it is: cache-config --drop DIGEST STORE), or merge without --strict and complete m2" err &&
  [ "$(tail -n 1 err)" = "cache-merge: nothing merged" ] || { echo "FAIL strict: stderr:"; cat err; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "refused" and r["token_configs_held_apart"] == 2, r' ||
  { echo "FAIL strict json"; cat out; fail=1; }
[ -e m2 ] && { echo "FAIL strict: a refused merge created its output"; fail=1; }

# one config in every shard, a featurize-only store beside them: nothing said
"$FC_BIN/featurize" -q -o f --manifest c/metadata.csv || fail=1
"$M" --strict -o m3 t0 t1 f >out 2>err; check same 0 $?
grep -q "token configs" err && { echo "FAIL same: stderr:"; cat err; fail=1; }
# two stores of one corpus, a tokenizer each: each config holds every id, nothing said
"$FC_BIN/tokenize" -q -t phonemes --build-vocab -o p c/metadata.csv || fail=1
"$M" --strict -o m4 m3 p >out 2>err; check corpus 0 $?
grep -q "token configs" err && { echo "FAIL corpus: stderr:"; cat err; fail=1; }
exit $fail
