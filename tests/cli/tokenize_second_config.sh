#!/bin/bash
# A tokenize run whose vocab differs from the one the store's token config of that name was made
# with — --build-vocab again after a bad line was fixed, or another --vocab — stores its lines
# under a second config of the same name, which the loader's tokens="chars" cannot choose between
# and whose old twin cache-verify then fails for the lines it lacks. That was silent (exit 0, a
# done line); now one line says it, with the drop of the old one. Not said on a rerun of the same
# vocab, under -q, or for a config of another name.
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
TK="$FC_BIN/tokenize"
printf 'a|hello world\nb|good day\nc|caf\303\251 now\n' >one.csv
printf 'a|hello world\nb|good day\nc|cafe now\nd|xyz\n' >two.csv # line c fixed, d added
"$TK" -q --build-vocab -o st --manifest one.csv || exit 1
old=$("$FC_BIN/cache-config" --json st | "$FC_PYTHON" -c 'import json, sys
print(json.load(sys.stdin)["configs"][0]["digest"])')
"$TK" --build-vocab -o st --manifest two.csv 2>err || { echo "FAIL: the second run: exit $?"; cat err; fail=1; }
new=$("$FC_BIN/cache-config" --json st | "$FC_PYTHON" -c 'import json, sys
print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["digest"] != sys.argv[1]][0])' "$old")
want="tokenize: st: this run's token config chars $new is a second one named 'chars' beside $old (another vocab: built from other text, or another --vocab): the loader's tokens=\"chars\" cannot tell them apart, and cache-verify fails the lines the old one lacks; drop the old one once it is not needed (cache-config --drop $old st)"
[ "$(head -n 1 err)" = "$want" ] || { echo "FAIL: the line"; cat err; fail=1; }
grep -q '^tokenize: done: 4 of 4 (4 new' err || { echo "FAIL: the done line"; cat err; fail=1; }
# the same vocab again: nothing said (the config is not new)
"$TK" --build-vocab -o st --manifest two.csv 2>err || fail=1
grep -q 'second one' err && { echo "FAIL: said on a rerun"; cat err; fail=1; }
# -q: silent
rm -rf q && "$TK" -q --build-vocab -o q --manifest one.csv && "$TK" -q --build-vocab -o q --manifest two.csv 2>err
[ -s err ] && { echo "FAIL: -q: something said"; cat err; fail=1; }
# the way out it gives: the store then has one chars config, and cache-verify passes
"$FC_BIN/cache-config" -q --drop "$old" st || { echo "FAIL: the drop"; fail=1; }
"$FC_BIN/cache-verify" -q st >out 2>&1 || { echo "FAIL: cache-verify after the drop"; cat out; fail=1; }
# another --vocab of the same tokenizer: said too
"$TK" -q --build-vocab --export-vocab v.txt -o vv --manifest two.csv || fail=1
echo q >>v.txt # the same symbols and one more
"$TK" --vocab v.txt -o st --manifest two.csv 2>err
grep -q "second one named 'chars' beside $new" err || { echo "FAIL: --vocab: not said"; cat err; fail=1; }
# a config made another on purpose says what made it so, and how the loader picks it (it said
# 'another vocab: built from other text, or another --vocab' of each): --case fold, as the
# Examples of docs/tokenize.md add one; another --lang; another tokenizer.json; another --dtype
second() { # STORE: the digests of its configs, the new one (not $2) last
  "$FC_BIN/cache-config" --json "$1" | "$FC_PYTHON" -c 'import json, sys
print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["digest"] != sys.argv[1]][0])' "$2"
}
digest() { "$FC_BIN/cache-config" --json "$1" | "$FC_PYTHON" -c 'import json, sys
print(json.load(sys.stdin)["configs"][0]["digest"])'; }
expect() { # STORE OLD WHY: the line said in err
  local new
  new=$(second "$1" "$2")
  local w="tokenize: $1: this run's token config $4 $new is a second one named '$4' beside $2 ($3): the loader's tokens=\"$4\" cannot tell them apart (give it a digest: tokens=\"$new\" for this one), and cache-verify fails the lines the old one lacks; drop the old one once it is not needed (cache-config --drop $2 $1)"
  [ "$(head -n 1 err)" = "$w" ] || { echo "FAIL: $3: the line"; cat err; fail=1; }
}
"$TK" -q --build-vocab -o cf --manifest two.csv || fail=1
o=$(digest cf)
"$TK" --build-vocab --case fold -o cf --manifest two.csv 2>err || fail=1
expect cf "$o" "another normalization: --case fold, where the old one has keep" chars
"$TK" -q -t phonemes --build-vocab -o ph --manifest two.csv || fail=1
o=$(digest ph)
"$TK" -t phonemes --lang en-gb --build-vocab -o ph --manifest two.csv 2>err || fail=1
expect ph "$o" "another --lang: en-gb, where the old one has en-us" phonemes
"$TK" -q --vocab v.txt -o dt --manifest two.csv || fail=1
o=$(digest dt)
"$TK" --vocab v.txt --dtype i32 -o dt --manifest two.csv 2>err || fail=1
expect dt "$o" "another --dtype: i32, where the old one has i16" chars
"$FC_PYTHON" - <<'PY' || fail=1
from tokenizers import Tokenizer, models, pre_tokenizers
for name, extra in (("t1.json", {}), ("t2.json", {"zz": 99})):
    vocab = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}
    vocab.update(extra)
    vocab["[UNK]"] = len(vocab)
    t = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.save(name)
PY
"$TK" -q -t bpe --tokenizer-json t1.json -o bp --manifest two.csv || fail=1
o=$(digest bp)
"$TK" -t bpe --tokenizer-json t2.json -o bp --manifest two.csv 2>err || fail=1
expect bp "$o" "another --tokenizer-json file" bpe
# two runs at once (make -j: train and dev transcripts, each --build-vocab): neither found the
# other's config at its start, and both ended silent, the store left with two 'chars' configs
# that the loader then refuses to choose between. Held, not timed: run A stopped (SIGSTOP) before
# its first write (FC_FAULT_STOP=tokenize_batch:1), run B stores its config and ends, A goes on:
# A says the twin another run stored meanwhile, and that one of them is to be dropped.
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  stopped() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ]; }
  rm -rf mj && "$TK" -q --build-vocab -o mj --manifest one.csv && "$FC_BIN/cache-config" -q --drop \
    "$(digest mj)" mj || { echo "FAIL: make -j: the store"; fail=1; } # a store with no token config
  FC_FAULT_STOP=tokenize_batch:1 "$TK" --build-vocab -o mj --manifest one.csv 2>errA &
  a=$!
  for _ in $(seq 400); do stopped $a && break; sleep 0.05; done
  stopped $a || { echo "FAIL: make -j: run A never stopped"; fail=1; }
  "$TK" --build-vocab -o mj --manifest two.csv 2>errB || { echo "FAIL: make -j: run B"; cat errB; fail=1; }
  b_cfg=$(digest mj) # run B's, the store's only config now
  kill -CONT $a
  wait $a || { echo "FAIL: make -j: run A: exit $?"; cat errA; fail=1; }
  a_cfg=$(second mj "$b_cfg")
  grep -q 'second one' errB && { echo "FAIL: make -j: run B said a twin it never saw"; cat errB; fail=1; }
  line=$(grep 'second one' errA)
  want="tokenize: mj: this run's token config chars $a_cfg is a second one named 'chars' beside $b_cfg, which another run stored meanwhile (another vocab: built from other text, or another --vocab): the loader's tokens=\"chars\" cannot tell them apart, and cache-verify fails the lines each lacks; keep one (cache-config --drop $b_cfg mj, or --drop $a_cfg mj)"
  [ "$line" = "$want" ] || { echo "FAIL: make -j: run A's line"; cat errA; echo "want: $want"; fail=1; }
fi
[ $fail = 0 ] && echo "ok: a second token config of one name is said, once"
exit $fail
