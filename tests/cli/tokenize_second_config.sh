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
[ $fail = 0 ] && echo "ok: a second token config of one name is said, once"
exit $fail
