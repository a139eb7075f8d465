#!/bin/bash
# One preset featurized with different configs in different shards (here --fmax given to one; a
# node on another featcache version is the same: another kernel_version) merged into two configs
# that each hold the features of some ids only, without a word: the loader's features="hifigan"
# then skipped that shard's ids and cache-verify failed the store. cache-merge now says so before
# anything is written — the configs, what differs, their shards, what the loader will see — and
# merges (the merged store is where to complete it); --strict refuses, nothing written, exit 1
# (docs/cache-merge.md "Configs held apart"). Stores of one corpus, a config each, are no finding.
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
for k in 0 1 2; do "$FC_BIN/featurize" -q -j1 --shard $k/3 -o s$k --manifest c/metadata.csv || fail=1; done
"$FC_BIN/featurize" -q -j1 --shard 2/3 --fmax 7600 -o x2 --manifest c/metadata.csv || fail=1
hf=$("$FC_BIN/featurize" --print-config hifigan | "$PY" -c 'import sys, xxhash; h = xxhash.xxh3_128_intdigest(sys.stdin.buffer.read().rstrip(b"\n")); print(((h & (2**64-1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")).hex())')
fx=$("$FC_BIN/featurize" --print-config hifigan --fmax 7600 | "$PY" -c 'import sys, xxhash; h = xxhash.xxh3_128_intdigest(sys.stdin.buffer.read().rstrip(b"\n")); print(((h & (2**64-1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")).hex())')
said="cache-merge: the stores hold 2 mel configs that not every store holds: ${hf:0:12} (hifigan) in s0, s1; ${fx:0:12} (no preset: fmax 7600 where ${hf:0:12} has 8000) in x2: merged, a config holds features only for the ids of the stores that hold it
cache-merge: the loader's features=\"hifigan\" takes ${hf:0:12} and skips the ids of x2 (not stored; cache-verify reports them missing)"

# said, and merged
"$M" --json -o m s0 s1 x2 >out 2>err; check apart 0 $?
want="$said
cache-merge: merged all the same (--strict refuses): for one config, featurize m with it over the whole corpus (what is stored is skipped), then drop the others (cache-config --drop DIGEST m)"
[ "$(grep -v '^cache-merge: done: ' err)" = "$want" ] || { echo "FAIL apart: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "done" and r["mel_configs_apart"] == 2, r' ||
  { echo "FAIL apart json"; cat out; fail=1; }
# the fix it gives: the merged store completed, the other config dropped, cache-verify clean
"$FC_BIN/featurize" -q -j1 -o m --manifest c/metadata.csv || fail=1
"$FC_BIN/cache-config" -q --drop "$fx" m || fail=1
"$FC_BIN/cache-verify" -q m >out 2>err || { echo "FAIL fixed: cache-verify:"; cat out err; fail=1; }

# --strict: refused, nothing written
"$M" --strict --json -o m2 s0 s1 x2 >out 2>err; check strict 1 $?
want="$said
cache-merge: featurize the stores that lack a config with it (or drop it where it is: cache-config --drop DIGEST STORE), or merge without --strict and complete m2
cache-merge: nothing merged"
[ "$(cat err)" = "$want" ] || { echo "FAIL strict: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "refused" and r["mel_configs_apart"] == 2, r' ||
  { echo "FAIL strict json"; cat out; fail=1; }
[ -e m2 ] && { echo "FAIL strict: a refused merge created its output"; fail=1; }

# shards of one config, and a store that holds no utterances beside them (tokenize only): nothing said
"$FC_BIN/tokenize" -q --build-vocab -o t c/metadata.csv || fail=1
"$M" --strict -o m3 s0 s1 s2 t >out 2>err; check same 0 $?
grep -q "mel configs" err && { echo "FAIL same: stderr:"; cat err; fail=1; }
# two stores of one corpus, a config each: both configs hold every id, nothing said
"$FC_BIN/featurize" -q -j1 --fmax 7600 -o x --manifest c/metadata.csv || fail=1
"$M" --strict -o m4 m3 x >out 2>err; check corpus 0 $?
grep -q "mel configs" err && { echo "FAIL corpus: stderr:"; cat err; fail=1; }
# the whole corpus in hifigan beside a shard in another config: the loader's name has every id
"$M" -o m5 m3 x2 >out 2>err; check subset 0 $?
grep -qxF "cache-merge: the loader's features=\"hifigan\" takes ${hf:0:12}, which every id has; the others lack some (cache-verify reports them missing)" err ||
  { echo "FAIL subset: stderr:"; cat err; fail=1; }
# Ctrl-C while the check walks the ids (FC_FAULT_STOP=merge_ids:2 stops the process there; a
# large merge spends as long in that walk as in the first pass): it stops there, nothing said of
# the configs and nothing written, exit 130. Build without the fault hooks: the stop never comes.
FC_FAULT_STOP=merge_ids:2 sigint_default "$M" -o m6 s0 s1 x2 >out 2>err &
pid=$!
for _ in $(seq 200); do
  [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = T ] && break
  sleep 0.05
done
if [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = T ]; then
  kill -INT $pid
  kill -CONT $pid
  wait $pid; check interrupted 130 $?
  want="cache-merge: interrupted: stopping after the work in flight (interrupt again to stop at once)
cache-merge: interrupted: nothing written (the inputs were being read for conflicts); run again to merge"
  [ "$(cat err)" = "$want" ] || { echo "FAIL interrupted: stderr:"; cat err; echo "want:"; echo "$want"; fail=1; }
  [ -e m6 ] && { echo "FAIL interrupted: it created its output"; fail=1; }
else
  wait $pid
  echo "note: built without the fault hooks: Ctrl-C in the ids' walk not tried"
fi
exit $fail
