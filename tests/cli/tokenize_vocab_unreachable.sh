#!/usr/bin/env bash
# tokenize -t chars --vocab: a symbol the normalized text can never hold (an upper-case letter
# under --case fold, punctuation under --punct remove, white space other than one space under
# --whitespace collapse) keeps its id and is never produced, as a Hugging Face tokenizer with a
# Lowercase normalizer leaves its vocab alone. The run says so, naming the symbols and their
# lines (not with -q); the ids are the greedy match of the normalized text over the vocab as
# written (tests/reference/test_tokenize_chars.py checks them against Python). Phonemes: a mark
# under --punct remove, and a symbol with white space in it.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
expect_rc() { [ "$1" = "$2" ] || fail "$3: exit $1, want $2"; }

printf 'x1\tAb, Thb\n' > "$d/m.tsv"
printf '<pad>\n<unk>\n<bos>\n<eos>\n \nA\nB\na\nTh\n,\n\t\n' > "$d/v.txt"
# --case keep, --punct keep: only the tab (white space other than one space, collapsed) is dead
"$T" -o "$d/s0" --manifest "$d/m.tsv" --vocab "$d/v.txt" > /dev/null 2> "$d/err"
expect_rc $? 0 "case keep"
grep -q "v.txt: 1 symbol can never match" "$d/err" || fail "case keep: the tab is not named"
grep -qF "U+0009 (line 11, --whitespace collapse)" "$d/err" || fail "case keep: tab's line"
grep -qF "'A'" "$d/err" && fail "case keep: 'A' named, and the text keeps it"

"$T" -o "$d/s1" --manifest "$d/m.tsv" --vocab "$d/v.txt" --case fold --punct remove --json \
  > "$d/out" 2> "$d/err"
expect_rc $? 0 "case fold"
grep -q "v.txt: 5 symbols can never match the normalized text" "$d/err" ||
  fail "case fold: no line saying which symbols are dead"
for s in "'A' (line 6, --case fold)" "'B' (line 7, --case fold)" "'Th' (line 9, --case fold)" \
  "',' (line 10, --punct remove)" "U+0009 (line 11, --whitespace collapse)"; do
  grep -qF "$s" "$d/err" || fail "case fold: $s not named"
done
grep -qF "'a'" "$d/err" && fail "case fold: 'a' named, and the text holds it"
# "ab thb": a, unk (b), space, unk (t), unk (h), unk (b): the vocab is not folded
grep -q '"unknown":4,' "$d/out" || fail "case fold: want 4 unknown: $(cat "$d/out")"
# -q: no such line
"$T" -o "$d/s1" --manifest "$d/m.tsv" --vocab "$d/v.txt" --case fold -q > /dev/null 2> "$d/err"
expect_rc $? 0 "case fold -q"
[ -s "$d/err" ] && fail "-q: something printed"
# a vocab the normalization leaves whole: nothing said
printf '<pad>\n<unk>\n<bos>\n<eos>\n \na\nb\nth\n' > "$d/ok.txt"
"$T" -o "$d/s2" --manifest "$d/m.tsv" --vocab "$d/ok.txt" --case fold > /dev/null 2> "$d/err"
expect_rc $? 0 "lower-case vocab"
grep -q "can never match" "$d/err" && fail "lower-case vocab: a symbol called dead"
# a built vocab holds only what the normalized text holds
"$T" -o "$d/s3" --manifest "$d/m.tsv" --build-vocab --case fold > /dev/null 2> "$d/err"
expect_rc $? 0 "built vocab"
grep -q "can never match" "$d/err" && fail "built vocab: a symbol called dead"
# phonemes: the symbols are espeak-ng's, not the text's, but under --punct remove the text has
# no marks left to end a clause with, so a mark symbol is never produced either
printf 'p1\tHello there, world.\n' > "$d/p.tsv"
"$T" -o "$d/sp" --manifest "$d/p.tsv" -t phonemes --build-vocab --export-vocab "$d/pv.txt" -q \
  2> "$d/err" || fail "phonemes vocab: exit $?"
grep -qx ',' "$d/pv.txt" || fail "phonemes vocab without ','"
"$T" -o "$d/sp" --manifest "$d/p.tsv" -t phonemes --vocab "$d/pv.txt" > /dev/null 2> "$d/err"
expect_rc $? 0 "phonemes, --punct keep"
grep -q "can never match" "$d/err" && fail "phonemes, --punct keep: a symbol called dead"
"$T" -o "$d/sp" --manifest "$d/p.tsv" -t phonemes --vocab "$d/pv.txt" --punct remove --case fold \
  > /dev/null 2> "$d/err"
expect_rc $? 0 "phonemes, --punct remove"
grep -q "pv.txt: 2 symbols can never match" "$d/err" || fail "phonemes: the marks not named"
grep -qF "',' (line " "$d/err" || fail "phonemes: ',' not named"
# a phonemes symbol with a space in it (a trailing one an editor left: 'ə ') is never produced:
# espeak-ng's phonemes hold no white space (' ' is a symbol of its own); it was silent, each of
# its phonemes then <unk>
sed 's/^ə$/ə /' "$d/pv.txt" > "$d/pv2.txt"
n=$(grep -nx 'ə ' "$d/pv2.txt" | cut -d: -f1)
[ -n "$n" ] || fail "no 'ə' in the phonemes vocab: $(cat "$d/pv.txt")"
"$T" -o "$d/sp2" --manifest "$d/p.tsv" -t phonemes --vocab "$d/pv2.txt" > /dev/null 2> "$d/err"
expect_rc $? 0 "phonemes, 'ə '"
grep -qF "pv2.txt: 1 symbol can never match the normalized text (kept as written, as a Hugging Face tokenizer keeps its vocab: its id is never produced): 'ə ' (line $n, white space, which no phoneme holds)" "$d/err" ||
  fail "phonemes: 'ə ' not named"
echo ok
