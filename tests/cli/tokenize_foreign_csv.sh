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
# 3. A header line that names a column after the text ('file_name<TAB>transcription<TAB>speaker_id',
#    'id|text|speaker'): it was skipped as the columns' names, but a TSV's text is the rest of its
#    line, so every transcript was stored with the speaker after it ('hello there<TAB>spk1'), and
#    LJSpeech's third column is the normalized text, so the speaker was stored as the transcript
#    ('spk1'); exit 0 both.
# 4. A TSV whose writer quoted its fields as CSV does (pandas' to_csv, Python's csv module: a field
#    that holds a quote is put in quotes, its quotes doubled): the text was stored as written, quotes
#    and all ('"He said ""hi"""'), exit 0. Such a line fails now, saying so; an LJSpeech line too.
# 5. An LJSpeech file written by Python's csv, a text holding a line break in quotes: each physical
#    line was read as a line of its own, the second stored under the id 'A second line"' (featurize
#    failed it for its missing audio), the first with half its text. The lines from the one that
#    opens the quote through the one that closes it fail now, in tokenize and featurize alike; a
#    quote that LJSpeech's own transcripts open and do not close is read as before.
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

# 3. a column after the text, named by the header
printf 'file_name\ttranscription\tspeaker_id\na.wav\thello there\tspk1\n' >sp.tsv
printf 'id|text|speaker\nLJ1|hello there|spk1\n' >sp.csv
"$TK" --build-vocab -o s9 sp.tsv >out 2>err
rc=$?
[ $rc = 2 ] || fail "a speaker column (TSV): exit $rc, want 2"
want="tokenize: sp.tsv: its first line names 3 columns (file_name, transcription, speaker_id), but a TSV's text is the rest of the line: each transcript would be stored with the columns after it; keep the id and the text: cut -f1,2 sp.tsv >NEW"
[ "$(cat err)" = "$want" ] || fail "a speaker column (TSV): $(cat err)"
"$TK" --build-vocab -o s9 sp.csv >out 2>err
rc=$?
[ $rc = 2 ] || fail "a speaker column (LJSpeech): exit $rc, want 2"
want="tokenize: sp.csv: its first line names the columns id|text|speaker, and the third is read as the normalized text, but 'speaker' is none: give --text-column 2 (the text), or keep the id and the text: cut -d'|' -f1,2 sp.csv >NEW"
[ "$(cat err)" = "$want" ] || fail "a speaker column (LJSpeech): $(cat err)"
[ -e s9 ] && fail "a speaker column: a store was made"
# the ways out said: the transcript alone stored
"$TK" -q --build-vocab --text-column 2 -o s10 sp.csv || fail "--text-column 2: exit $?"
cut -f1,2 sp.tsv >sp2.tsv
"$TK" -q --build-vocab -o s11 sp2.tsv || fail "the TSV cut: exit $?"
for st in s10 s11; do
  "${FC_PYTHON:-python3}" "$FC_SRC/docs/examples/read_tokens.py" $st chars | sed -n 2p >got
  [ "$(cat got)" = "$(printf '\thello there')" ] || fail "$st stored: $(cat got)"
done
# LJSpeech's own header (id|text|normalized_text) and a TSV header of two columns read as before
printf 'id|text|normalized_text\nLJ1|Mr. Smith|Mister Smith\n' >ok.csv
printf 'id\ttext\nu1\thello\tthere\n' >ok.tsv
"$TK" -q --build-vocab -o s12 ok.csv || fail "LJSpeech's header: exit $?"
"$TK" -q --build-vocab -o s13 ok.tsv || fail "a two-column TSV header: exit $?"
printf 'u1\tread the sentence aloud\tplease\n' >tab.tsv # a transcript with a tab, no header
"$TK" -q --build-vocab -o s14 tab.tsv || fail "a transcript with a tab: exit $?"

# 4. a CSV-quoted TSV field fails its line; quotes in a transcript as such are read as before
printf 'a\t"He said ""hi"" twice"\nb\t"Stop!" she said.\nc\t"Quoted whole."\nd\tplain\ne\t"a\ttab"\n' >qt.tsv
"$TK" --build-vocab -o s15 qt.tsv >out 2>err
rc=$?
[ $rc = 1 ] || fail "a quoted field: exit $rc, want 1"
want="tokenize: qt.tsv:1: a text quoted as CSV quotes it (in quotes, its quotes doubled: pandas' to_csv, Python's csv), but a TSV's fields are not quoted: write it with quoting=csv.QUOTE_NONE, or as JSON lines"
[ "$(head -n 1 err)" = "$want" ] || fail "a quoted field: $(cat err)"
grep -q "done: 3 of 5 (3 new, 0 already stored, 2 failed" err || fail "a quoted field: $(cat err)"
grep -q "^tokenize: qt.tsv:5: a text quoted as CSV quotes it" err || fail "a quoted field with a tab: $(cat err)"
# and an LJSpeech file so written (pandas' to_csv(sep='|'), Python's csv with delimiter='|'): it
# was stored quotes and all too; featurize fails the same line (the ids the tools store agree)
printf 'a|"He said ""hi"" twice"|"He said ""hi"" twice"\nb|"Stop!" she said.\nc|"Quoted whole."\nd|plain\n' >qt.csv
"$TK" --build-vocab -o s15b qt.csv >out 2>err
rc=$?
[ $rc = 1 ] || fail "a quoted LJSpeech field: exit $rc, want 1"
want="tokenize: qt.csv:1: a text quoted as CSV quotes it (in quotes, its quotes doubled: pandas' to_csv, Python's csv), but LJSpeech's fields are not quoted: write it with quoting=csv.QUOTE_NONE, or as JSON lines"
[ "$(head -n 1 err)" = "$want" ] || fail "a quoted LJSpeech field: $(cat err)"
grep -q "done: 3 of 4 (3 new, 0 already stored, 1 failed" err || fail "a quoted LJSpeech field: $(cat err)"

# 5. a quoted text holding a line break
printf 'LJ1|one|one\nLJ2|"in being modern.\nA second line"|"in being modern.\nA second line"\n' >br.csv
printf 'LJ3|"The rules were|"The rules were\nLJ4|strict, he said."|strict, he said."\n' >>br.csv
"$TK" --build-vocab -o s16 br.csv >out 2>err
rc=$?
[ $rc = 1 ] || fail "a quoted line break: exit $rc, want 1"
cat >want <<'EOF'
tokenize: br.csv:2: its text opens a quote that line 4 closes: CSV quoting (pandas' to_csv, Python's csv) of a text with a line break, read as separate lines; LJSpeech's fields are not quoted: write them with quoting=csv.QUOTE_NONE, no line breaks, or as JSON lines
tokenize: br.csv:3: continues line 2's quoted text (CSV quoting of a text with a line break): not a line of its own
tokenize: br.csv:4: continues line 2's quoted text (CSV quoting of a text with a line break): not a line of its own
tokenize: done: 3 of 6 (3 new, 0 already stored, 3 failed, 35 tokens)
EOF
cmp -s want err || fail "a quoted line break: $(cat err)"
"${FC_PYTHON:-python3}" "$FC_SRC/docs/examples/read_tokens.py" s16 chars | grep -v "^$(printf '\t')" >got
printf 'LJ1\tone\nLJ3\t"The rules were\nLJ4\tstrict, he said."\n' | cmp -s - got ||
  fail "a quoted line break, stored: $(cat got)"
# featurize reads the same lines: the same ones fail, the same ids are stored
mkdir -p wavs
for i in 1 2 3 4; do sox -n -r 22050 -b 16 wavs/LJ$i.wav synth 0.2 sine 440 || fail "sox"; done
"$FZ" -j 1 -o s16 --manifest br.csv >out 2>err
[ $? = 1 ] || fail "featurize, a quoted line break: $(cat err)"
sed -n 's/^featurize: br.csv:\([0-9]*\): \(.*\)/\1: \2/p' err >got
sed -n 's/^tokenize: br.csv:\([0-9]*\): \(.*\)/\1: \2/p' want | cmp -s - got ||
  fail "featurize, a quoted line break: $(cat err)"
grep -q "done: 3 of 6 (3 new, 0 already stored, 3 failed" err || fail "featurize: $(cat err)"

[ $fails = 0 ] || exit 1
echo "tokenize_foreign_csv: ok"
