#!/bin/bash
# cache-merge's conflict lines say what differs, so that the user can choose a winner, the
# first-named store's value first ("B: ... differs from A's: B's vs A's"; it was A's first):
#  - the same audio at the same path, stored with other mtimes (a shard rerun on a node whose copy
#    of the corpus has other file times): both times, not "PATH vs PATH";
#  - two long transcripts that differ past their first 60 bytes: the excerpt around the first
#    difference, not the same 60 bytes twice;
#  - a transcript holding a tab or a newline: C escapes, the line stays one line.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
expect_err() { # name exact-stderr
  if [ "$(cat err)" != "$2" ]; then echo "FAIL $1: stderr:"; cat err; echo "want:"; echo "$2"; fail=1; fi
}
make_corpus c 4 || exit 1

# the same files, other mtimes
head -1 c/metadata.csv >c/one.csv
touch -d '2020-01-02 03:04:05.5 UTC' c/wavs/LJ001-0001.wav
"$FC_BIN/featurize" -q -j1 -o a1 --manifest c/one.csv || fail=1
touch -d '2021-06-07 08:09:10 UTC' c/wavs/LJ001-0001.wav
"$FC_BIN/featurize" -q -j1 -o a2 --manifest c/one.csv || fail=1
digest=$("$PY" -c "
import lmdb; e=lmdb.open('a1',readonly=True,lock=False,max_dbs=8); t=e.begin()
print(bytes(t.get(b'LJ001-0001', db=e.open_db(b'audio',txn=t,create=False)))[:6].hex())")
"$M" -o m1 a1 a2 >out 2>err; check mtime 1 $?
expect_err mtime "cache-merge: a2: audio entry 'LJ001-0001' differs from a1's: same audio (digest $digest...) from the same source $T/c/wavs/LJ001-0001.wav, modified at other times: 2021-06-07 08:09:10.000000000 UTC vs 2020-01-02 03:04:05.500000000 UTC; refused
cache-merge: 1 id with differing entries; nothing merged (choose a winner with --prefer first|last|STORE)"

# long transcripts that differ near their end
"$FC_BIN/tokenize" -q --build-vocab --export-vocab vocab.txt -o v c/metadata.csv || fail=1
long="the quick brown fox jumps over the lazy dog while seven wise owls hum softly over a dog"
echo "LJ001-0001|$long|$long" >l1.csv
echo "LJ001-0001|${long% dog} fox|${long% dog} fox" >l2.csv
"$FC_BIN/tokenize" -q --vocab vocab.txt -o t1 l1.csv || fail=1
"$FC_BIN/tokenize" -q --vocab vocab.txt -o t2 l2.csv || fail=1
"$M" -o m2 t1 t2 >out 2>err; check long 1 $?
expect_err long "cache-merge: t2: text entry 'LJ001-0001' differs from t1's: different transcripts: \"...ver the lazy dog while seven wise owls hum softly over a fox\" vs \"...ver the lazy dog while seven wise owls hum softly over a dog\"; refused
cache-merge: 1 id with differing entries; nothing merged (choose a winner with --prefer first|last|STORE)"

# a tab and a newline in a transcript (JSON lines may hold them)
printf '{"id": "x", "audio_filepath": "x.wav", "text": "a\\tb"}\n' >j1.jsonl
printf '{"id": "x", "audio_filepath": "x.wav", "text": "a\\nb \\"c\\""}\n' >j2.jsonl
"$FC_BIN/tokenize" -q --vocab vocab.txt -o j1 j1.jsonl || fail=1
"$FC_BIN/tokenize" -q --vocab vocab.txt -o j2 j2.jsonl || fail=1
"$M" -o m3 j1 j2 >out 2>err; check escapes 1 $?
expect_err escapes "cache-merge: j2: text entry 'x' differs from j1's: different transcripts: \"a\\nb \\\"c\\\"\" vs \"a\\tb\"; refused
cache-merge: 1 id with differing entries; nothing merged (choose a winner with --prefer first|last|STORE)"

# stores named with a slash at the end (a pattern shards/s*/ gives them so): "j1's", not "j1/'s"
"$M" -q -o m4 --prefer last j1/ j2/ >out 2>err; check slash 0 $?
expect_err slash "cache-merge: j2/: text entry 'x' differs from j1's: different transcripts: \"a\\nb \\\"c\\\"\" vs \"a\\tb\"; kept j2's"

exit $fail
