#!/bin/bash
# Shards tokenized again with another vocabulary (make's template after the manifest grew by a
# line: --build-vocab in each shard, under -q) each hold both 'chars' configs, every id under each;
# merged into a new store, the store held two 'chars' configs without a word, and the loader's
# tokens="chars" then refused the name. Now the merge says it, once, with the digests and the drop
# that leaves one (exit 0: each config is whole); a config an older tokenize made is marked out of
# date. And a shard whose input had no lines (tokenize --shard over a manifest none of whose ids
# fall in it, tokenize over an empty part of a manifest split by hand) is a store like any other:
# the merge of all the shards goes through (docs/cache-merge.md "Shards"). A shard tokenized before
# an upgrade beside one after it is said as such, not as shards tokenized with other options.
set -u
M="$FC_BIN/cache-merge"
TK="$FC_BIN/tokenize"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
records() { # STORE: "name records" of each config
  "$FC_BIN/cache-config" --json "$1" | "$FC_PYTHON" -c 'import json, sys
print(" ".join("%s %d" % (c["name"], c["records"]) for c in json.load(sys.stdin)["configs"]))'
}
printf 'a|hello world\nb|good day\nc|fine\n' >m.csv
for k in 0 1; do "$TK" -q --build-vocab --shard $k/2 -o s$k m.csv || fail=1; done
# one config of the name: nothing said
"$M" -o one s0 s1 2>err || { echo "FAIL: the first merge"; cat err; fail=1; }
grep -q 'token configs' err && { echo "FAIL: one config said"; cat err; fail=1; }
old=$("$FC_BIN/cache-config" --json one | "$FC_PYTHON" -c 'import json, sys
print(json.load(sys.stdin)["configs"][0]["digest"])')
echo 'd|quiz' >>m.csv # a new symbol: another vocabulary, every shard tokenized again
for k in 0 1; do "$TK" -q --build-vocab --shard $k/2 -o s$k m.csv || fail=1; done
"$M" -o m s0 s1 2>err || { echo "FAIL: the merge: exit $?"; cat err; fail=1; }
new=$("$FC_BIN/cache-config" --json m | "$FC_PYTHON" -c 'import json, sys
print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["digest"] != sys.argv[1]][0])' "$old")
pair="$old, $new"
[ "$old" \< "$new" ] || pair="$new, $old"
want="cache-merge: m holds 2 'chars' token configs, every one of them in every store (each tokenized again, with another vocabulary?): $pair; the loader's tokens=\"chars\" would not say which (it wants a digest): keep one, dropping the others (cache-config --drop DIGEST m)"
[ "$(head -n 1 err)" = "$want" ] || { echo "FAIL: the line"; cat err; echo "want: $want"; fail=1; }
grep -q '^cache-merge: done: ' err || { echo "FAIL: no done line"; cat err; fail=1; }
# the drop it names leaves one config, whole: every id's tokens
"$FC_BIN/cache-config" -q --drop "$old" m || { echo "FAIL: the drop"; fail=1; }
[ "$(records m)" = "chars 4" ] || { echo "FAIL: after the drop: $(records m)"; fail=1; }
# a config an older tokenize made is marked out of date
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  for k in 0 1; do
    FC_FAULT_TOKENIZER_VERSION=0 "$TK" -q -t phonemes --build-vocab --shard $k/2 -o p$k m.csv || fail=1
    "$TK" -q -t phonemes --build-vocab --shard $k/2 -o p$k m.csv || fail=1
  done
  "$M" -o pm p0 p1 2>err || { echo "FAIL: phonemes: exit $?"; cat err; fail=1; }
  grep -q "^cache-merge: pm holds 2 'phonemes' token configs, .*[0-9a-f]\{32\} (made by an older tokenize, tokenizer_version 0: out of date)" err ||
    { echo "FAIL: phonemes: the old one not marked"; cat err; fail=1; }
  # a shard tokenized before an upgrade beside one after it: refused as options given apart
  # ("tokenized with other options ...: tokenize every shard with the same options"), though the
  # options were the same; now said as a config an older tokenize made, and its drop and rerun
  for k in 0 1; do rm -rf v$k; done
  FC_FAULT_TOKENIZER_VERSION=0 "$TK" -q -t phonemes --build-vocab --shard 0/2 -o v0 m.csv || fail=1
  "$TK" -q -t phonemes --build-vocab --shard 1/2 -o v1 m.csv || fail=1
  stale=$("$FC_BIN/cache-config" --json v0 | "$FC_PYTHON" -c 'import json, sys
print(json.load(sys.stdin)["configs"][0]["digest"])')
  "$M" -o vm v0 v1 2>err; rc=$?
  [ $rc = 1 ] || { echo "FAIL: versions: exit $rc, want 1"; cat err; fail=1; }
  grep -q "^cache-merge: the inputs hold 2 different 'phonemes' token configs, in 2 stores (.*): $stale was made by an older tokenize (tokenizer_version 0, where this one's is [0-9]*): its ids are out of date, and tokens=\"phonemes\" would not say which$" err ||
    { echo "FAIL: versions: the first line"; cat err; fail=1; }
  grep -qxF "cache-merge: tokenize the stores that hold it again with this tokenize: drop it from them (cache-config --drop $stale STORE) and run their tokenize again" err ||
    { echo "FAIL: versions: the fix"; cat err; fail=1; }
  "$FC_BIN/cache-config" -q --drop "$stale" v0 && "$TK" -q -t phonemes --build-vocab --shard 0/2 -o v0 m.csv &&
    "$M" -q -o vm v0 v1 || { echo "FAIL: versions: the fix it gives"; fail=1; }
  [ "$(records vm)" = "phonemes 4" ] || { echo "FAIL: versions: $(records vm)"; fail=1; }
fi
# shards whose input had no lines: merged with the others, exit 0
printf 'a|hello world\n' >a.csv
: >empty.csv
for k in 0 1 2 3; do "$TK" -q --build-vocab --shard $k/4 -o e$k a.csv || fail=1; done
"$TK" -q --build-vocab -o hand0 empty.csv || fail=1
"$TK" -q --build-vocab -o hand1 a.csv || fail=1
"$M" -q -o em e0 e1 e2 e3 2>err || { echo "FAIL: shards with no lines: exit $?"; cat err; fail=1; }
"$M" -q -o hm hand0 hand1 2>err || { echo "FAIL: an empty part of a manifest: exit $?"; cat err; fail=1; }
for s in em hm; do [ "$(records $s)" = "chars 1" ] || { echo "FAIL: $s: $(records $s)"; fail=1; }; done
[ $fail = 0 ] && echo "ok: token configs of one name in every store are said; empty shards merge"
exit $fail
