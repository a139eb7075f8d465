#!/usr/bin/env bash
# featurize --manifest: each malformed line gets `featurize: MANIFEST:LINE: reason` (missing
# column, bad UTF-8 (its byte and column, and the conversion of a Latin-1 file), a byte-order
# mark that begins a line (files joined with cat), duplicate id, JSON that is no JSON lines
# (an array, objects over several lines: refused, exit 2), a comment line, id over 511 bytes, invalid JSON), a missing audio file gets
# `featurize: PATH: reason`; the good lines are stored under their manifest ids; exit 1.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ids() { # ids of the audio db, one per line
  "$PY" - "$1" <<'PY'
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin(db=env.open_db(b"audio", create=False)) as t:
    for k, _ in t.cursor():
        print(k.decode() if len(k) < 40 else f"<{len(k)} bytes>")
with env.begin(db=env.open_db(b"feat", create=False)) as t:
    print("feat records:", t.stat(env.open_db(b"feat", create=False))["entries"])
PY
}

mkdir -p wavs
espeak-ng -w wavs/LJ001.wav "good one" || { echo "FAIL: espeak-ng failed"; exit 1; }
espeak-ng -w wavs/LJ005.wav "the second one"
long=$(printf 'a%.0s' $(seq 600))
printf 'LJ001|Good one.|Good one.\nLJ002\nLJ\3773|bad utf8\nLJ001|duplicate\n%s|too long\nLJ004|missing audio\nLJ005|Second.\n' \
  "$long" >metadata.csv

"$FZ" -j 2 -o st --manifest metadata.csv >out 2>err
rc=$?
[ $rc = 1 ] || fail "ljspeech: exit $rc, want 1"
sort >want <<'TXT'
featurize: metadata.csv:2: missing text column (expected id|text[|normalized])
featurize: metadata.csv:3: invalid UTF-8 (byte 0xFF at column 3: Latin-1 or Windows-1252 text? convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)
featurize: metadata.csv:4: duplicate id 'LJ001'
featurize: metadata.csv:5: id is 600 bytes, longer than the 511 allowed
featurize: wavs/LJ004.wav: No such file or directory
TXT
head -n -1 err | sort | diff -u want - || fail "ljspeech: per-line messages differ"
[ "$(tail -n 1 err)" = "featurize: done: 2 of 7 (2 new, 0 already stored, 5 failed)" ] || fail "ljspeech summary: $(tail -n 1 err)"
printf 'LJ001\nLJ005\nfeat records: 2\n' | diff -u - <(ids st) || fail "ljspeech: stored ids differ"

# Kaldi wav.scp: an id of exactly 511 bytes is fine, 512 is not; a line without a path column.
id511=$(printf 'b%.0s' $(seq 511))
printf '%s wavs/LJ001.wav\n%sb wavs/LJ005.wav\nonlyid\nk3 wavs/LJ005.wav\n' "$id511" "$id511" >wav.scp
"$FZ" -j 1 -o st --manifest wav.scp >out 2>err
rc=$?
[ $rc = 1 ] || fail "kaldi: exit $rc, want 1"
cat >want <<'TXT'
featurize: wav.scp:2: id is 512 bytes, longer than the 511 allowed
featurize: wav.scp:3: missing path column (expected: id path)
featurize: done: 2 of 4 (2 new, 0 already stored, 2 failed)
TXT
diff -u want err || fail "kaldi: stderr differs"
# Same bytes as LJ001/LJ005: no new record, two new audio entries.
printf 'LJ001\nLJ005\n<511 bytes>\nk3\nfeat records: 2\n' | diff -u - <(ids st) || fail "kaldi: stored ids differ"

# JSON lines: missing audio_filepath, a line that is no JSON, a NUL in a string (jansson's own
# message named its JSON_ALLOW_NUL flag).
cat >m.jsonl <<'J'
{"audio_filepath": "wavs/LJ001.wav", "text": "x", "id": "j1"}
{"text": "no audio"}
{"audio_filepath": "wavs/LJ005.wav", "id": "j2"}
not json
{"audio_filepath": "wavs/LJ\u0000.wav"}
J
"$FZ" -j 1 -o st --manifest m.jsonl >out 2>err
rc=$?
[ $rc = 1 ] || fail "jsonl: exit $rc, want 1"
cat >want <<'TXT'
featurize: m.jsonl:2: missing "audio_filepath" (a text-only line needs a string "id")
featurize: m.jsonl:4: invalid JSON: '[' or '{' expected near 'not' (column 3)
featurize: m.jsonl:5: invalid JSON: a \u0000 (NUL) in a string, which no path, id or text may hold (column 38)
featurize: done: 2 of 5 (2 new, 0 already stored, 3 failed)
TXT
diff -u want err || fail "jsonl: stderr differs"

# --audio-dir and --manifest-format: a plain list of names relative to another folder.
printf 'LJ001.wav\nLJ005.wav\n' >list.txt
"$FZ" -j 1 -o st2 --manifest list.txt --manifest-format list --audio-dir wavs >out 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "featurize: done: 2 of 2 (2 new, 0 already stored, 0 failed)" ] || fail "list+audio-dir: exit $rc: $(cat err)"
printf 'LJ001\nLJ005\nfeat records: 2\n' | diff -u - <(ids st2) || fail "list: stored ids differ"

# A wav.scp whose columns a tab separates (Kaldi splits on any white space), under another name
# than *.scp: read as Kaldi, not as tokenize's id<TAB>text (every line failed, "u1: no audio
# path", and got a failure record).
printf 'u1\twavs/LJ001.wav\nu2\twavs/LJ005.wav\n' >wav_list.txt
"$FZ" -j 1 -o st3 --manifest wav_list.txt >out 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "featurize: done: 2 of 2 (2 new, 0 already stored, 0 failed)" ] ||
  fail "tab-separated wav.scp: exit $rc: $(cat err)"
# id<TAB>text (a transcript, tokenize's manifest) holds no audio: refused before the store is
# touched, exit 2, saying what to give, not a failure of every line.
printf 'u1\tHello there.\nu2\tGood bye.\n' >text.tsv
"$FZ" -j 1 -o st4 --manifest text.tsv >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e st4 ] || fail "id<TAB>text: exit $rc (want 2), store made: $(ls -d st4 2>&1)"
[ "$(cat err)" = "featurize: text.tsv: id<TAB>text lines name no audio (a transcript, tokenize's manifest); for id<TAB>path lines give --manifest-format kaldi" ] ||
  fail "id<TAB>text: $(cat err)"
"$FZ" -j 1 -o st4 --manifest text.tsv --manifest-format kaldi >out 2>err
grep -qx 'featurize: Hello there.: No such file or directory' err || fail "id<TAB>text as kaldi: $(cat err)"
# the same transcript as JSON lines, "id" and "text" without "audio_filepath" (tokenize's JSON
# lines): refused the same, exit 2, nothing made, from a file read as the job goes and from stdin;
# every line failed as "featurize: u1: no audio path", each with a failure record, exit 1
printf '{"id":"u1","text":"Hello there."}\n{"id":"u2","text":"Good bye."}\n' >text.jsonl
want_jt="JSON lines of \"id\" and \"text\" name no audio (a transcript, tokenize's manifest); featurize reads the audio file each line's \"audio_filepath\" names"
"$FZ" -j 1 --device cpu --writers 1 -o st5 --manifest text.jsonl >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e st5 ] && [ "$(cat err)" = "featurize: text.jsonl: $want_jt" ] ||
  fail "JSON lines transcript: exit $rc (want 2), store: $(ls -d st5 2>&1): $(cat err)"
"$FZ" -j 1 -o st5 --manifest - <text.jsonl >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e st5 ] && [ "$(cat err)" = "featurize: (stdin): $want_jt" ] ||
  fail "JSON lines transcript on stdin: exit $rc (want 2): $(cat err)"

# a text-only JSON line further down a manifest of audio lines (joined from a transcript):
# that line fails named as every bad manifest line is, FILE:LINE (it was named by its id alone,
# 'featurize: u9: no audio path', as if the id were a file), the rest stored
printf '{"audio_filepath":"wavs/LJ001.wav"}\n{"id":"u9","text":"Hello."}\n' >deep.jsonl
"$FZ" -j 1 -o st8 --manifest deep.jsonl >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx 'featurize: deep.jsonl:2: no audio path' err &&
  grep -q '^featurize: done: 1 of 2 (1 new, 0 already stored, 1 failed)' err ||
  fail "a deep text-only JSON line: exit $rc (want 1): $(cat err)"

# JSON lines whose audio is under another key than NeMo's "audio_filepath" ("path", "audio": a
# Hugging Face or Lhotse export): every line failed as 'missing "audio_filepath" (a text-only line
# needs a string "id")', each with a failure record, exit 1; refused at its first line, exit 2
printf '{"path":"wavs/LJ001.wav","text":"a"}\n{"path":"wavs/LJ005.wav","text":"b"}\n' >hf.jsonl
"$FZ" -j 1 -o st7 --manifest hf.jsonl >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e st7 ] && [ "$(cat err)" = "featurize: hf.jsonl:1: no \"audio_filepath\": featurize reads each line's audio file from it, NeMo's key (a manifest that names the file under another key, \"path\" or \"audio\" say, needs it renamed: jq -c '. + {audio_filepath: .path}')" ] ||
  fail "JSON lines without audio_filepath: exit $rc (want 2), store: $(ls -d st7 2>&1): $(cat err)"

# An LJSpeech manifest whose audio folder is not there (no wavs/ beside it: the audio is under
# another name): every input would fail, each with a failure record in the store. A configuration
# error, as a missing --audio-dir is: exit 2 before the store is touched, saying what to give.
mkdir -p elsewhere
printf 'LJ001|Good one.\nLJ005|Second.\n' >elsewhere/metadata.csv
rm -rf st6
"$FZ" -j 1 -o st6 --manifest elsewhere/metadata.csv >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e st6 ] || fail "no wavs/ beside metadata.csv: exit $rc (want 2), store made: $(ls -d st6 2>&1)"
[ "$(cat err)" = "featurize: elsewhere/wavs: the audio folder of elsewhere/metadata.csv (LJSpeech's wavs/ beside it): No such file or directory; give --audio-dir DIR" ] ||
  fail "no wavs/ beside metadata.csv: $(cat err)"
"$FZ" -j 1 -o st6 --manifest elsewhere/metadata.csv --audio-dir wavs >out 2>err ||
  fail "--audio-dir given: exit $?: $(cat err)"

# An audio file given as the manifest (`--manifest a.wav` for `a.wav`): its first line holds a NUL
# byte, as stdin's does when an audio file is redirected into a path list. No manifest at all:
# refused before the store is touched, exit 2, saying so once — every run of its bytes was a
# "line contains a NUL byte" failure of its own (thousands for a long recording), exit 1. Read as
# the job goes, read whole (a pipe), and with --shard (whose first line is shard 0's).
for how in file pipe shard; do
  rm -rf st5
  case $how in
  file) "$FZ" -j 1 -o st5 --manifest wavs/LJ005.wav >out 2>err ;;
  pipe) "$FZ" -j 1 -o st5 --manifest <(cat wavs/LJ005.wav) >out 2>err ;;
  shard) "$FZ" -j 1 -o st5 --shard 1/2 --manifest wavs/LJ005.wav >out 2>err ;;
  esac
  rc=$?
  [ $rc = 2 ] && [ ! -e st5 ] || fail "audio as the manifest ($how): exit $rc (want 2), store made: $(ls -d st5 2>&1)"
  [ "$(wc -l <err)" = 1 ] && grep -q "^featurize: .*: not a manifest: its first line holds a NUL byte (an audio file? give its path as AUDIO, not --manifest)$" err ||
    fail "audio as the manifest ($how): $(head -n 3 err)"
done

# A manifest saved as UTF-16 (a spreadsheet's "Unicode text"): NUL bytes too, but text: said so,
# with the conversion, rather than taken for an audio file.
printf 'LJ001|Good one.\nLJ005|Second.\n' | iconv -f UTF-8 -t UTF-16 >m16.csv
rm -rf st5
"$FZ" -j 1 -o st5 --manifest m16.csv >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e st5 ] || fail "UTF-16 manifest: exit $rc (want 2), store made: $(ls -d st5 2>&1)"
[ "$(cat err)" = "featurize: m16.csv: not a manifest in UTF-8: UTF-16 text (its byte-order mark FF FE); convert it: iconv -f UTF-16 -t UTF-8 m16.csv >NEW" ] ||
  fail "UTF-16 manifest: $(cat err)"

# Kaldi wav.scp entries that are no file: a piped command and an archive offset each fail with
# what to do instead (the piped one since the manifest is read, the offset when its file is opened:
# a FILE:OFFSET whose FILE is there); a name with a colon that is no such entry stays plain
printf 'xx' >feats.ark
printf 'u1 sox in.flac -t wav - |\nu2 feats.ark:1234\nu3 gone.ark:12\n' >k.scp
rm -rf st6
"$FZ" -j 1 -o st6 --manifest k.scp >out 2>err
rc=$?
cat >want <<'TXT'
featurize: k.scp:1: piped wav.scp entries are not supported: audio is read from files; write the command's output to one (sox in.flac -t wav - > u1.wav) and list that
featurize: feats.ark:1234: No such file or directory (a Kaldi archive entry, FILE:OFFSET? audio is read from files: extract it first, wav-copy feats.ark:1234 OUT.wav)
featurize: gone.ark:12: No such file or directory
featurize: done: 0 of 3 (0 new, 0 already stored, 3 failed)
TXT
[ $rc = 1 ] || fail "wav.scp entries that are no file: exit $rc, want 1"
diff -u want err || fail "wav.scp entries that are no file: stderr differs"

# A manifest saved as Latin-1 or Windows-1252 (an old corpus, a spreadsheet's CSV): each line with
# an accent failed as "invalid UTF-8", saying neither where nor why; now the byte, its column and
# the conversion. The same for tokenize, which reads it too.
printf 'LJ001|Caf\xe9 one.\nLJ005|\x93Quoted\x94 na\xefve.\n' >latin1.csv
rm -rf st7
"$FZ" -j 1 -o st7 --manifest latin1.csv >out 2>err
rc=$?
cat >want <<'TXT'
featurize: latin1.csv:1: invalid UTF-8 (byte 0xE9 at column 10: Latin-1 or Windows-1252 text? convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)
featurize: latin1.csv:2: invalid UTF-8 (byte 0x93 at column 7: Latin-1 or Windows-1252 text? convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)
featurize: done: 0 of 2 (0 new, 0 already stored, 2 failed)
TXT
[ $rc = 1 ] || fail "Latin-1 manifest: exit $rc, want 1"
diff -u want err || fail "Latin-1 manifest: stderr differs"
"$FC_BIN/tokenize" --build-vocab -o st7 latin1.csv >out 2>err
sed 's/^featurize: /tokenize: /; s/(0 new, 0 already stored, 2 failed)/(0 new, 0 already stored, 2 failed, 0 tokens)/' want |
  diff -u - err || fail "Latin-1 manifest, tokenize: stderr differs"
iconv -f WINDOWS-1252 -t UTF-8 latin1.csv >utf8.csv &&
  "$FZ" -q -j 1 -o st7 --manifest utf8.csv || fail "the converted manifest: exit $?"

# Two manifests joined with cat, the second saved with a byte-order mark (a Windows editor's): the
# BOM began its first line's id, and the utterance was stored silently under an id with an
# invisible U+FEFF in front (featurize from a wav.scp, tokenize from any manifest), never to meet
# its audio or text. The line fails, saying so and how to remove it.
printf '\xef\xbb\xbfLJ001 wavs/LJ001.wav\n' >p1.scp
printf '\xef\xbb\xbfLJ005 wavs/LJ005.wav\n' >p2.scp
cat p1.scp p2.scp >joined.scp
rm -rf st8
"$FZ" -j 1 -o st8 --manifest joined.scp >out 2>err
rc=$?
bom="a byte-order mark (U+FEFF) begins the line: a file joined after another (cat a.csv b.csv keeps b.csv's)? remove them: sed 's/^\\xEF\\xBB\\xBF//'"
cat >want <<TXT
featurize: joined.scp:2: $bom
featurize: done: 1 of 2 (1 new, 0 already stored, 1 failed)
TXT
[ $rc = 1 ] || fail "joined wav.scp: exit $rc, want 1"
diff -u want err || fail "joined wav.scp: stderr differs"
printf '\xef\xbb\xbfLJ001|Good one.\n' >t1.csv
printf '\xef\xbb\xbfLJ005|Second.\n' >t2.csv
cat t1.csv t2.csv >tjoined.csv
"$FC_BIN/tokenize" --build-vocab -o st8 tjoined.csv >out 2>err
rc=$?
printf 'tokenize: tjoined.csv:2: %s\ntokenize: done: 1 of 2 (1 new, 0 already stored, 1 failed, 9 tokens)\n' "$bom" >want
[ $rc = 1 ] || fail "joined transcripts: exit $rc, want 1"
diff -u want err || fail "joined transcripts: stderr differs"
sed 's/^\xEF\xBB\xBF//' joined.scp >fixed.scp && "$FZ" -q -j 1 -o st8 --manifest fixed.scp ||
  fail "the wav.scp without its BOMs: exit $?"

# A JSON manifest that is no JSON lines: an array (json.dump of a list) or objects spread over lines
# (indent=2). Every line failed as invalid JSON, and a line that held a whole object was stored
# (1 of 4); refused before the store is touched, with the jq that converts it, by both tools.
printf '[\n  {"audio_filepath": "wavs/LJ001.wav", "text": "one"},\n  {"audio_filepath": "wavs/LJ005.wav", "text": "two"}\n]\n' >arr.json
printf '{\n  "audio_filepath": "wavs/LJ001.wav",\n  "text": "one"\n}\n' >pretty.json
printf '[{"audio_filepath": "wavs/LJ001.wav", "text": "one"}]\n' >flat.json
rm -rf st9
for t in featurize tokenize; do
  for m in arr.json pretty.json flat.json; do
    case $m in
    pretty.json) want="$t: $m: JSON objects spread over lines, not JSON lines (one object a line, as NeMo's manifests): convert it: jq -c . $m >NEW.jsonl" ;;
    *) want="$t: $m: a JSON array, not JSON lines (one object a line, as NeMo's manifests): convert it: jq -c '.[]' $m >NEW.jsonl" ;;
    esac
    rm -rf st9
    if [ $t = featurize ]; then "$FZ" -j 1 -o st9 --manifest $m >out 2>err; else
      "$FC_BIN/tokenize" --build-vocab -o st9 $m >out 2>err; fi
    rc=$?
    [ $rc = 2 ] && [ ! -e st9 ] || fail "$t $m: exit $rc (want 2), store made: $(ls -d st9 2>&1)"
    [ "$(cat err)" = "$want" ] || fail "$t $m: $(cat err)"
  done
done
# the same through a pipe or on stdin, where no name says JSON: featurize read each line as an audio
# path ("[: No such file or directory", exit 1, a failure recorded for each line)
for how in stdin-manifest pipe-manifest stdin-list; do
  rm -rf st9
  case $how in
  stdin-manifest) "$FZ" -j 1 -o st9 --manifest - <arr.json >out 2>err; rc=$? n='(stdin)' ;;
  pipe-manifest) "$FZ" -j 1 -o st9 --manifest <(cat arr.json) >out 2>err; rc=$? n='/dev/fd/*' ;;
  stdin-list) "$FZ" -j 1 -o st9 - <arr.json >out 2>err; rc=$? n='(stdin)' ;;
  esac
  [ $rc = 2 ] && [ ! -e st9 ] || fail "featurize, a JSON array ($how): exit $rc (want 2), store made: $(ls -d st9 2>&1): $(cat err)"
  # shellcheck disable=SC2053 # the name of a pipe is a pattern
  [[ "$(cat err)" == "featurize: "$n": a JSON array, not JSON lines (one object a line, as NeMo's manifests): convert it: jq -c '.[]' FILE >NEW.jsonl" ]] ||
    fail "featurize, a JSON array ($how): $(cat err)"
done
"$PY" -c "import json; [print(json.dumps(o)) for o in json.load(open('arr.json'))]" >arr.jsonl &&
  "$FZ" -q -j 1 -o st9 --manifest arr.jsonl ||
  fail "the converted manifest: exit $?"

# A hand-written manifest with a comment line: tokenize stored it as an utterance ('# speaker one'
# with the text after its bar, its characters in the built vocab), featurize failed a wav.scp's as
# the file 'utterances of speaker 1' with a failure record under the id '#', and refused a path
# list whose first line it was as "a Kaldi text file". The line fails, said as a comment, with no
# failure record; the rest is read as before. A file whose name begins with '#' is a path still.
cmt="a comment ('#' begins the line): manifests hold none; remove it: grep -v '^#'"
printf '# utterances of speaker 1\nLJ001 wavs/LJ001.wav\n' >c.scp
printf '# my list\nwavs/LJ001.wav\n#1.wav\n' >c.txt
cp wavs/LJ001.wav '#1.wav'
printf '# speaker one|recorded 2019\nLJ001|Good one.\n' >c.csv
for m in c.scp c.txt -; do
  rm -rf st10
  if [ $m = - ]; then "$FZ" -j 1 -o st10 - <c.txt >out 2>err; else
    "$FZ" -j 1 -o st10 --manifest $m >out 2>err; fi
  rc=$?
  name=$m
  [ $m = - ] && name="(stdin)"
  n=1
  [ $m = c.scp ] || n=2
  printf 'featurize: %s:1: %s\nfeaturize: done: %s of %s (%s new, 0 already stored, 1 failed)\n' \
    "$name" "$cmt" $n $((n + 1)) $n >want
  [ $rc = 1 ] || fail "comment in $m: exit $rc, want 1"
  diff -u want err || fail "comment in $m: stderr differs"
  "$FC_BIN/cache-verify" -q st10 >out 2>&1 || fail "comment in $m: cache-verify: $(cat out)"
done
rm -rf st10
"$FC_BIN/tokenize" --build-vocab -o st10 c.csv >out 2>err
rc=$?
printf 'tokenize: c.csv:1: %s\ntokenize: done: 1 of 2 (1 new, 0 already stored, 1 failed, 9 tokens)\n' "$cmt" >want
[ $rc = 1 ] || fail "comment, tokenize: exit $rc, want 1"
diff -u want err || fail "comment, tokenize: stderr differs"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
