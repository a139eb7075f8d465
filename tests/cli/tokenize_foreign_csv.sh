#!/usr/bin/env bash
# tokenize and the transcript files that other tools write, which LJSpeech's id|text and the TSV
# are not: each would have every line fail, or be stored under the wrong ids, so each is refused
# whole (exit 2, nothing made) with the command that converts it.
# 1. Hugging Face's audiofolder metadata.csv (file_name,transcription; comma-separated, a field
#    holding a comma quoted), read as LJSpeech by its name: every line failed 'missing text column
#    (expected id|text[|normalized])', exit 1. featurize refuses it the same way.
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

[ $fails = 0 ] || exit 1
echo "tokenize_foreign_csv: ok"
