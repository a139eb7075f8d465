#!/usr/bin/env bash
# A --vocab file holds one symbol a line, its id the line's index. A table of symbols and numbers
# ('<unk> 1', 'h 5': Kaldi's words.txt or phones.txt, icefall's tokens.txt; 'h 1234', fairseq's
# dict.txt, a count) was read as symbols 'h 5', which no text holds: every line failed 'symbol
# 'h' (U+0068) is not in the vocab and there is no unk symbol' (the '<unk> 1' line is no unk), or,
# with a line '<unk>' of its own, every symbol became <unk>, exit 0. It is a configuration error
# now, exit 2, nothing made, saying what the file is and how to make a vocab of it.
set -u
T=${FC_BIN:?}/tokenize
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
printf 'a\thello\nb\thole\n' >m.tsv

# ids in order, a space or a tab between: cut them off
printf '<pad> 0\n<unk> 1\n<bos> 2\n<eos> 3\nh 4\ne 5\nl 6\no 7\n' >tokens.txt
printf '<pad>\t0\n<unk>\t1\nh\t2\ne\t3\nl\t4\no\t5\n' >tab.txt
for v in tokens.txt tab.txt; do
  "$T" --vocab "$v" -o s1 m.tsv >out 2>err
  rc=$?
  [ $rc = 2 ] || fail "$v: exit $rc, want 2"
  cut=$([ "$v" = tab.txt ] && echo "cut -f1" || echo "cut -d' ' -f1")
  want="tokenize: $v:1: every line is a symbol and a number ('<pad> 0'), the ids of a table such as Kaldi's words.txt or icefall's tokens.txt, but a vocab holds one symbol a line, its id the line's index: cut the numbers off with $cut"
  [ "$v" = tab.txt ] && want=${want/"'<pad> 0'"/'"<pad>\t0"'} # quoted as names are
  [ "$(cat err)" = "$want" ] || fail "$v: $(cat err)"
  [ -e s1 ] && fail "$v: a store was made"
done
# the cut said gives the vocab meant: the same ids
cut -d' ' -f1 tokens.txt >cut.txt
"$T" -q --vocab cut.txt -o s2 m.tsv || fail "the cut vocab: exit $?"
"$T" -t phonemes --vocab tokens.txt -o s1 m.tsv >out 2>err
[ $? = 2 ] || fail "phonemes: exit $?"
grep -q "every line is a symbol and a number" err || fail "phonemes: $(cat err)"
# numbers that are not the lines' indexes (fairseq's counts): the symbols in the order of their ids
printf 'h 1234\ne 999\nl 50\n<unk> 3\n' >dict.txt
"$T" --vocab dict.txt -o s1 m.tsv >out 2>err
[ $? = 2 ] || fail "dict.txt: exit $?"
want="tokenize: dict.txt:1: every line is a symbol and a number ('h 1234'), not the line's index (fairseq's dict.txt holds counts), but a vocab holds one symbol a line, its id the line's index: write the symbols one a line, in the order of their ids"
[ "$(cat err)" = "$want" ] || fail "dict.txt: $(cat err)"
# a vocab with some symbols that end in a number after a space, and others, is read as before
printf '<pad>\n<unk>\nh 1\ne\nl\no\n' >mixed.txt
"$T" -q --vocab mixed.txt -o s3 m.tsv || fail "a mixed vocab: exit $?"

[ $fails = 0 ] || exit 1
echo "tokenize_vocab_id_table: ok"
