#!/usr/bin/env bash
# tokenize: the summary's unknown count says what happened to them (a bpe tokenizer.json without
# unk_token drops them: not "mapped to unk") and is singular for one.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }

printf 'u1|ab\n' > "$d/m.csv"
printf '<pad>\n<unk>\n<bos>\n<eos>\na\n' > "$d/v.txt"
"$T" -o "$d/s1" --manifest "$d/m.csv" --vocab "$d/v.txt" 2> "$d/err" || fail "chars: exit $?"
grep -qx "tokenize: 1 unknown symbol mapped to unk" "$d/err" || fail "chars: one unknown symbol"
printf '{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}' > "$d/tok.json"
"$T" -o "$d/s2" -t bpe --tokenizer-json "$d/tok.json" --manifest "$d/m.csv" 2> "$d/err" ||
  fail "bpe: exit $?"
grep -q "mapped to unk$" "$d/err" && fail "bpe without unk_token: said mapped to unk"
grep -qx "tokenize: 1 character not in the tokenizer.json's vocab (mapped to its unk_token, or dropped where it has none)" "$d/err" ||
  fail "bpe: the unknown character not said"
echo ok
