#!/usr/bin/env bash
# tokenize and the transcript files that other tools write, which LJSpeech's id|text and the TSV
# are not: each would have every line fail, or be stored under the wrong ids, so each is refused
# whole (exit 2, nothing made) with the command that converts it.
# 1. Hugging Face's audiofolder metadata.csv (file_name,transcription; comma-separated, a field
#    holding a comma quoted), read as LJSpeech by its name: every line failed 'missing text column
#    (expected id|text[|normalized])', exit 1. featurize refuses it the same way.
# 2. A TSV or LJSpeech file written by pandas' to_csv without index=False: its first column is the
#    index, its header line begins with the separator. The header failed as 'empty id' (exit 1),
#    but every other line was stored under the index's number (0, 1, ...), never to meet its
#    audio's id, its text the file's name and the transcript ('a.wav<TAB>hello there').
set -u
TK=${FC_BIN:?}/tokenize
FZ=$FC_BIN/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

mkdir hf
printf 'file_name,transcription\n0001.wav,"Hello, world"\n0002.wav,plain words\n' >hf/metadata.csv
"$TK" --build-vocab -o s1 hf/metadata.csv >out 2>err
rc=$?
[ $rc = 2 ] || fail "audiofolder metadata.csv: exit $rc, want 2"
conv="python3 -c 'import csv,json,sys; r=csv.reader(open(sys.argv[1],newline=\"\")); next(r); [print(json.dumps({\"audio_filepath\":l[0],\"text\":l[1]})) for l in r]'"
want="tokenize: hf/metadata.csv: comma-separated, not LJSpeech's id|text (Hugging Face's audiofolder metadata?): convert it to JSON lines, its first line (the columns' names) dropped, which featurize reads too: $conv hf/metadata.csv >NEW.jsonl"
[ "$(cat err)" = "$want" ] || fail "audiofolder metadata.csv: $(cat err)"
[ -e s1 ] && fail "audiofolder metadata.csv: a store was made"
# the command said converts it: the ids are the files' names, as featurize gives them, the quoted
# field's comma kept
eval "$conv hf/metadata.csv" >hf/m.jsonl || fail "the conversion said: exit $?"
"$TK" -q --build-vocab -o s1 hf/m.jsonl || fail "the converted manifest: exit $?"
"${FC_PYTHON:-python3}" "$FC_SRC/docs/examples/read_tokens.py" s1 chars >got 2>&1
printf '0001\tHello, world\n\tHello, world\n0002\tplain words\n\tplain words\n' | cmp -s - got ||
  fail "the converted manifest stored: $(cat got)"
# an LJSpeech file whose first line alone lacks its bar fails that line only, as before; so does
# one whose transcripts hold commas
printf 'LJ1,one\nLJ2|two\n' >comma1.csv
"$TK" --build-vocab -o s2 comma1.csv >out 2>err
[ $? = 1 ] || fail "one line without a bar: $(cat err)"
printf 'LJ1|one, two|one, two\nLJ2|three, four|three, four\n' >lj.csv
"$TK" -q --build-vocab -o s3 lj.csv || fail "LJSpeech with commas: exit $?"
# featurize says it of the same file (the message this one follows)
"$FZ" -o s4 --manifest hf/metadata.csv >out 2>err
[ $? = 2 ] || fail "featurize: $(cat err)"

# 2. pandas' index column, TSV and LJSpeech; with --manifest-format too; a header without it, and
# lines whose ids are numbers, are read as before
printf '\tfile_name\ttranscription\n0\ta.wav\thello there\n1\tb.wav\tgood bye\n' >pd.tsv
printf '|id|text\n17|LJ1|hello there\n18|LJ2|good bye\n' >pd.csv
for m in pd.tsv pd.csv "--manifest-format tsv pd.tsv"; do
  # shellcheck disable=SC2086 # the options and the file
  "$TK" --build-vocab -o s5 $m >out 2>err
  rc=$?
  [ $rc = 2 ] || fail "pandas' index ($m): exit $rc, want 2"
  f=${m##* }
  if [ "$f" = pd.tsv ]; then sep='a TAB' cut="cut -f2- pd.tsv"; else sep="'|'" cut="cut -d'|' -f2- pd.csv"; fi
  want="tokenize: $f: its first column is pandas' index (to_csv without index=False: its first line, the columns' names, begins with $sep, the next with a number): every line would be stored under that number, not its id; write it with to_csv(..., index=False), or drop the column: $cut >NEW"
  [ "$(cat err)" = "$want" ] || fail "pandas' index ($m): $(cat err)"
  [ -e s5 ] && fail "pandas' index ($m): a store was made"
done
cut -f2- pd.tsv >pd2.tsv
"$TK" -q --build-vocab -o s6 pd2.tsv || fail "the index cut off: exit $?"
"${FC_PYTHON:-python3}" "$FC_SRC/docs/examples/read_tokens.py" s6 chars >got 2>&1
printf 'a.wav\thello there\n\thello there\nb.wav\tgood bye\n\tgood bye\n' | cmp -s - got ||
  fail "the index cut off, stored: $(cat got)"
printf '0\thello there\n1\tgood bye\n' >num.tsv
"$TK" -q --build-vocab -o s7 num.tsv || fail "numbered ids: exit $?"
printf '\tno id here\n1\tgood bye\n' >noid.tsv # a first line with no id, but no header: that line fails
"$TK" --build-vocab -o s8 noid.tsv >out 2>err
[ $? = 1 ] || fail "a line without an id: $(cat err)"

[ $fails = 0 ] || exit 1
echo "tokenize_foreign_csv: ok"
