#!/usr/bin/env bash
# featurize --manifest given a pipe: process substitution (<(grep ...)), /dev/stdin, a FIFO. A
# manifest file is read twice (its first items to choose the device and the writers, then as the
# job goes); a pipe gives its lines once, so the job read nothing — "0 of 0", exit 0, nothing
# stored — or, past the first read's buffer, only the lines after it. A manifest that is no
# regular file is read whole, once, as `--manifest -` is: every line is stored. tokenize
# --build-vocab read the corpus, then the run read it again: the same.
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
mkdir wavs
for i in 1 2 3; do
  sox -n -r 22050 -b 16 "wavs/LJ00$i.wav" synth 0.$i sine 300 || { echo "FAIL: sox"; exit 1; }
done
printf 'LJ001|one\nLJ002|two\nLJ003|three\n' >metadata.csv
want="featurize: done: 3 of 3 (3 new, 0 already stored, 0 failed)"

# -j 1 with --device auto and a new store: the first items are read to choose both
"$FZ" -j 1 -o s1 --manifest <(cat metadata.csv) --manifest-format ljspeech --audio-dir wavs 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "$want" ] || fail "<(cat metadata.csv): exit $rc: $(cat err)"
cat metadata.csv | "$FZ" -j 1 -o s2 --manifest /dev/stdin --manifest-format ljspeech \
  --audio-dir wavs 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "$want" ] || fail "/dev/stdin: exit $rc: $(cat err)"
# with the device named and --writers given only the first item is read first: lost the same way
mkfifo m.fifo
(cat metadata.csv >m.fifo) &
timeout -s KILL 30 "$FZ" -j 1 --device cpu --writers 1 -o s3 --manifest m.fifo \
  --manifest-format ljspeech --audio-dir wavs 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "$want" ] || fail "a FIFO: exit $rc: $(cat err)"
# a shard of a pipe: the ids of shard 2 of 3 (2 of the 3), as from the file
"$FZ" -j 1 --device cpu -o s4 --shard 2/3 --manifest metadata.csv --audio-dir wavs 2>want4
"$FZ" -j 1 --device cpu -o s5 --shard 2/3 --manifest <(cat metadata.csv) \
  --manifest-format ljspeech --audio-dir wavs 2>err
[ "$(cat want4)" = "featurize: done: 2 of 2 (2 new, 0 already stored, 0 failed)" ] ||
  fail "shard 2/3 of the file: $(cat want4)"
diff want4 err >/dev/null || fail "a shard of a pipe: $(cat err) (want: $(cat want4))"

# a path list in a pipe whose paths are relative to the working directory: the pipe's folder is
# /dev/fd, where no audio is, so every input would fail (and get a failure record): exit 2 before
# the store is touched, as for a manifest file; with --audio-dir . they are stored
printf 'wavs/LJ001.wav\nwavs/LJ002.wav\nwavs/LJ003.wav\n' >list.txt
"$FZ" -j 1 --device cpu -o s6 --manifest <(cat list.txt) >out 2>err
rc=$?
grep -qxE "featurize: /dev/fd/[0-9]+: its audio paths are relative to the working directory \(wavs/LJ001\.wav is there, /dev/fd/wavs/LJ001\.wav beside the manifest is not\): give --audio-dir \." err &&
  [ $rc = 2 ] && [ ! -e s6 ] || fail "a path list in a pipe, relative paths: exit $rc: $(cat err)"
"$FZ" -j 1 --device cpu -o s7 --manifest <(cat list.txt) --audio-dir . 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "$want" ] || fail "a path list in a pipe, --audio-dir .: exit $rc: $(cat err)"

# --manifest -: its lines are named (stdin), as tokenize names them and featurize names the lines
# of a path list on stdin; they were "-:2:" and "featurize: -: id<TAB>text lines ..."
printf 'LJ001|one\nno bar\n' | "$FZ" -j 1 --device cpu -o s8 --manifest - --audio-dir wavs 2>err
rc=$?
[ $rc = 1 ] && [ "$(head -1 err)" = "featurize: (stdin):2: missing text column (expected id|text[|normalized])" ] ||
  fail "--manifest -, a bad line: exit $rc: $(cat err)"
printf 'a\thello\n' | "$FZ" -j 1 --device cpu -o s9 --manifest - 2>err
rc=$?
[ $rc = 2 ] && [ "$(cat err)" = "featurize: (stdin): id<TAB>text lines name no audio (a transcript, tokenize's manifest); for id<TAB>path lines give --manifest-format kaldi" ] ||
  fail "--manifest -, a transcript: exit $rc: $(cat err)"

# tokenize: --build-vocab reads the corpus, then the run reads it again
"$FC_BIN/tokenize" --build-vocab -o t1 --manifest <(cat metadata.csv) 2>err
rc=$?
grep -q "^tokenize: done: 3 of 3 (3 new, " err && [ $rc = 0 ] ||
  fail "tokenize --manifest <(cat metadata.csv): exit $rc: $(cat err)"
cat metadata.csv | "$FC_BIN/tokenize" --build-vocab -o t2 --manifest /dev/stdin 2>err
rc=$?
grep -q "^tokenize: done: 3 of 3 (3 new, " err && [ $rc = 0 ] ||
  fail "tokenize --manifest /dev/stdin: exit $rc: $(cat err)"

[ $fails = 0 ] || exit 1
echo "featurize_manifest_pipe: ok"
