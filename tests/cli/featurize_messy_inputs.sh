#!/usr/bin/env bash
# featurize given inputs a real corpus and a busy day produce: a Kaldi `text` file passed as the
# manifest (refused before the store is touched, saying what it is and what to pass), a socket
# (said to be one, not "No such device or address"), a folder given with or without trailing
# slashes (one id, "corpus", whatever the spelling), and two files of one id whose first fails (the
# id stays the first's; the second is said to be left out because of it, naming both files), and
# files that hold a Git LFS pointer, a downloaded HTML page or macOS metadata instead of audio
# (said so), a manifest's Windows paths (said so), and names in the other Unicode normal form (said so).
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
FZ() { timeout -s KILL 60 "$B/featurize" --device cpu "$@"; }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }

# 1. a Kaldi text file (utterance id, then its words) as the manifest: each line was read as a
# path that does not exist, one failure record per utterance
mkdir -p data/train
printf 'utt1 hello world\nutt2 good bye\n' >data/train/text
FZ -o s1 --manifest data/train/text >out 2>err
rc=$?
[ $rc = 2 ] || fail "kaldi text: exit $rc, want 2"
grep -qx "featurize: data/train/text: a Kaldi text file (utterance id, then its words), not a \
list of audio paths: featurize reads audio; give --manifest the wav.scp beside it (id path lines)" \
  err || fail "kaldi text: $(cat err)"
[ -e s1 ] && fail "kaldi text: a store was made"
# the same from a pipe, read whole
FZ -o s1 --manifest - <data/train/text >out 2>err
rc=$?
[ $rc = 2 ] || fail "kaldi text on stdin: exit $rc, want 2"
grep -q "^featurize: (stdin): a Kaldi text file" err || fail "kaldi text on stdin: $(cat err)"
# a path list of names with spaces is one still, forced or when its first file is there
printf 'a.wav\n' >list
cp a.wav 'my take'
printf 'my take\n' >takes
FZ -q -o s1b --manifest takes 2>err || fail "a list of a name with a space: $(cat err)"
FZ -q -o s1c --manifest-format list --manifest data/train/text >out 2>err
[ $? = 1 ] || fail "kaldi text forced as a list: $(cat err)"

# 2. a socket: said to be one (open's ENXIO read "No such device or address")
"$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' sock.wav ||
  { echo "FAIL: cannot make a socket"; exit 1; }
FZ -o s2 sock.wav a.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "socket: exit $rc, want 1"
grep -qx "featurize: sock.wav: not a regular file or a pipe (a socket)" err ||
  fail "socket: $(cat err)"
FZ -o s2m --manifest sock.wav >out 2>err
rc=$?
[ $rc = 2 ] || fail "socket manifest: exit $rc, want 2"
[ "$(cat err)" = "featurize: sock.wav: not a regular file or a pipe (a socket)" ] ||
  fail "socket manifest: $(cat err)"
[ -e s2m ] && fail "socket manifest: a store was made"

# 3. a folder: its id is its name, whatever slashes end it
mkdir corpus
for arg in corpus corpus/ corpus// ./corpus/ "$PWD/corpus/"; do
  rm -rf s3
  FZ -q --json -o s3 "$arg" >out 2>err
  grep -q '"failures":\[{"id":"corpus","source":"'"$arg"'",' out || fail "folder $arg: $(cat out)"
  "$B/cache-verify" --json s3 2>/dev/null | grep -q '"id":"corpus"' ||
    fail "folder $arg: failure record: $("$B/cache-verify" --json s3 2>&1)"
done

# a folder's line says how to give its files
FZ -o s3 corpus/ >out 2>err
grep -qx "featurize: corpus/: Is a directory (featurize reads files, not folders: find DIR -name \
'\*.wav' | featurize -o STORE -)" err || fail "folder: $(cat err)"

# 4. two files of one id, the first no audio: the second is not featurized either, and a line
# says why, naming both
mkdir d1 d2 && printf 'garbage' >d1/x.wav && cp a.wav d2/x.wav
FZ -o s4 d1/x.wav d2/x.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "duplicate of a failed input: exit $rc, want 1"
grep -qx "featurize: d2/x.wav: not featurized: its id 'x' is that of d1/x.wav, which failed \
(the first input of an id keeps it: fix or leave out d1/x.wav, or give one of them another id \
in a manifest)" err || fail "duplicate of a failed input: $(cat err)"
tail -n 1 err | grep -qx 'featurize: done: 0 of 2 (0 new, 0 already stored, 2 failed)' ||
  fail "duplicate of a failed input: the summary: $(cat err)"
# one file given twice: its own failure says it all
FZ -o s4b d1/x.wav d1/x.wav ./d1/x.wav >out 2>err
grep -q 'not featurized' err && fail "one bad file given twice: $(cat err)"
# the first stored: no such line
FZ -o s5 d2/x.wav d1/x.wav >out 2>err
grep -q 'not featurized' err && fail "duplicate of a stored input: $(cat err)"

# 5. an LJSpeech corpus whose wavs/ holds FLAC files: the audio's extension is taken from what
# wavs/ holds for the first id (every line failed as a missing .wav)
mkdir -p lj/wavs
sox a.wav lj/wavs/LJ1.flac && sox a.wav lj/wavs/LJ2.flac || { echo "FAIL: sox flac"; exit 1; }
printf 'LJ1|one|one\nLJ2|two|two\n' >lj/metadata.csv
FZ -v -o s6 --manifest lj/metadata.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "LJSpeech with FLAC: exit $rc: $(cat err)"
grep -qx 'featurize: lj/metadata.csv: its audio is FLAC: lj/wavs/LJ1.flac (no lj/wavs/LJ1.wav)' err ||
  fail "LJSpeech with FLAC: not said: $(cat err)"
grep -q 'stored as LJ2 ' err || fail "LJSpeech with FLAC: LJ2: $(cat err)"
# the same from a pipe, read whole
FZ -q -o s7 --manifest - --audio-dir lj/wavs <lj/metadata.csv >out 2>err ||
  fail "LJSpeech with FLAC on stdin: $(cat err)"
"$B/cache-verify" -q --manifest lj/metadata.csv s7 >out 2>&1 || fail "LJSpeech on stdin: $(cat out)"
# a .wav there is taken as it always was
sox a.wav lj/wavs/LJ1.wav
FZ -v -o s8 --manifest lj/metadata.csv >out 2>err
grep -q 'its audio is' err && fail "LJSpeech with a .wav: $(cat err)"
grep -qx 'featurize: lj/wavs/LJ2.wav: No such file or directory' err || fail "LJSpeech, .wav: $(cat err)"
# wavs/ of upper-case .WAV files (a corpus copied from Windows, as TIMIT's): every line failed as
# a missing .wav; taken as FLAC is
mkdir -p ljw/wavs && cp a.wav ljw/wavs/LJ1.WAV && cp a.wav ljw/wavs/LJ2.WAV
printf 'LJ1|one|one\nLJ2|two|two\n' >ljw/metadata.csv
FZ -v -o s8w --manifest ljw/metadata.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "LJSpeech with .WAV: exit $rc: $(cat err)"
grep -qx 'featurize: ljw/metadata.csv: its audio is WAV: ljw/wavs/LJ1.WAV (no ljw/wavs/LJ1.wav)' err ||
  fail "LJSpeech with .WAV: not said: $(cat err)"
grep -q 'stored as LJ2 ' err || fail "LJSpeech with .WAV: LJ2: $(cat err)"

# 6. a shell pattern that matched nothing (the shell passes 'data/*.wav' on as it is)
FZ -o s9 'nowhere/*.wav' a.wav >out 2>err
grep -qx "featurize: nowhere/\*.wav: No such file or directory (a shell pattern that matched no \
file? the shell passes one on as it is)" err || fail "unmatched pattern: $(cat err)"

# 7. a Kaldi wav.scp whose relative paths are the recipe's (the working directory's, as Kaldi
# reads them), not its folder's: refused before the store is touched, saying what to give
mkdir -p db kaldi/train && cp a.wav db/u1.wav
printf 'u1 db/u1.wav\n' >kaldi/train/wav.scp
FZ -o s10 --manifest kaldi/train/wav.scp >out 2>err
rc=$?
[ $rc = 2 ] || fail "cwd-relative wav.scp: exit $rc, want 2"
grep -qx "featurize: kaldi/train/wav.scp: its audio paths are relative to the working directory \
(db/u1.wav is there, kaldi/train/db/u1.wav beside the manifest is not): give --audio-dir ." err ||
  fail "cwd-relative wav.scp: $(cat err)"
[ -e s10 ] && fail "cwd-relative wav.scp: a store was made"
FZ -q -o s10 --audio-dir . --manifest kaldi/train/wav.scp 2>err || fail "--audio-dir .: $(cat err)"
# paths beside the manifest, and absolute ones, are read as they were
cp a.wav kaldi/train/u2.wav
printf 'u2 u2.wav\nu1 %s\n' "$PWD/db/u1.wav" >kaldi/train/wav.scp
FZ -q -o s11 --manifest kaldi/train/wav.scp 2>err || fail "wav.scp beside: $(cat err)"
printf 'u1 %s\n' "$PWD/db/gone.wav" >kaldi/train/wav.scp
FZ -q -o s12 --manifest kaldi/train/wav.scp 2>err
[ $? = 1 ] || fail "an absolute path missing: $(cat err)"

# 8. an LJSpeech manifest with a header line (pandas' to_csv writes one): its line was an input
# 'id' whose wavs/id.wav is nowhere, failed with a failure record on every run
printf 'id|text|normalized_text\nLJ1|one|one\n' >lj/head.csv
rm -f lj/wavs/LJ1.wav
FZ -o s13 --manifest lj/head.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "a header line: exit $rc: $(cat err)"
"$B/cache-verify" -q --manifest lj/head.csv s13 >out 2>&1 || fail "a header line: verify: $(cat out)"

# 9. a manifest piped to '-' (a list of paths): each line failed as a file of that whole name, with
# a failure record under an id made of it; refused, saying to give it as --manifest -
printf 'u1 %s/a.wav\n' "$PWD" >piped.scp
printf 'LJ1|one|one\n' >piped.csv
printf '{"audio_filepath": "a.wav", "text": "x"}\n' >piped.jsonl
for f in piped.scp:'a Kaldi wav.scp (id path)' piped.csv:'an LJSpeech manifest (id|text)' \
  piped.jsonl:'a JSON lines manifest'; do
  FZ -o s14 - <"${f%%:*}" >out 2>err
  rc=$?
  [ $rc = 2 ] || fail "${f%%:*} on stdin as paths: exit $rc, want 2"
  grep -qx "featurize: (stdin): not a list of paths: its first line is one of ${f#*:}; give it \
as --manifest -" err || fail "${f%%:*} on stdin as paths: $(cat err)"
  [ -e s14 ] && fail "${f%%:*} on stdin as paths: a store was made"
done
FZ -o s14 - <data/train/text >out 2>err
rc=$?
[ $rc = 2 ] || fail "kaldi text on stdin as paths: exit $rc, want 2"
grep -q "^featurize: (stdin): a Kaldi text file" err || fail "kaldi text on stdin as paths: $(cat err)"
printf 'a.wav\n' | FZ -q -o s15 - 2>err || fail "a path list on stdin: $(cat err)"
printf 'my gone.wav\na.wav\n' | FZ -q -o s16 - >out 2>err
[ $? = 1 ] || fail "a path list on stdin, its first file missing: $(cat err)"

# 10. a NeMo manifest of segments (offset, duration into one recording): each line stored the
# whole recording's features under the segment's id, exit 0; refused before the store is touched
sox -n -r 22050 -b 16 long.wav synth 4 sine 300
printf '{"audio_filepath": "long.wav", "offset": 0, "duration": 2.0, "text": "a", "id": "s1"}\n' >segs.jsonl
printf '{"audio_filepath": "long.wav", "duration": 2.0, "offset": 2.5, "text": "b", "id": "s2"}\n' >>segs.jsonl
FZ -o s17 --manifest segs.jsonl >out 2>err
rc=$?
[ $rc = 2 ] || fail "segments: exit $rc, want 2"
grep -qx "featurize: segs.jsonl:2: \"offset\": 2.5: a segment of its audio file (NeMo's offset and \
duration), but featurize stores whole files; cut each segment into a file of its own (sox IN OUT \
trim OFFSET DURATION) and list those" err || fail "segments: $(cat err)"
[ -e s17 ] && fail "segments: a store was made"
# "offset": 0 on every line: whole files
printf '{"audio_filepath": "a.wav", "offset": 0.0, "duration": null, "text": "a"}\n' >whole.jsonl
FZ -q -o s18 --manifest whole.jsonl 2>err || fail "offset 0: $(cat err)"
# "offset": 0 and a "duration" shorter than the file: the segment [0, 2) of a 4 s file stored the
# whole file under its id, exit 0; the line fails (recorded), the others are stored, exit 1. A
# duration within 0.1 s of the file's length (rounded) is the whole file.
printf '{"audio_filepath": "long.wav", "offset": 0, "duration": 2.0, "text": "a", "id": "d1"}\n' >dur.jsonl
printf '{"audio_filepath": "long.wav", "duration": 3.95, "text": "b", "id": "d2"}\n' >>dur.jsonl
printf '{"audio_filepath": "a.wav", "duration": 0.5, "offset": 0, "text": "c", "id": "d3"}\n' >>dur.jsonl
FZ -o s19 --manifest dur.jsonl >out 2>err
rc=$?
[ $rc = 1 ] || fail "a short duration: exit $rc, want 1: $(cat err)"
[ "$(cat err)" = "featurize: long.wav: \"duration\": 2 (line 1) of a 4.00 s file: a segment of its audio \
file (NeMo's offset and duration), but featurize stores whole files; cut each segment into a file of \
its own (sox IN OUT trim OFFSET DURATION) and list those
featurize: done: 2 of 3 (2 new, 0 already stored, 1 failed)" ] || fail "a short duration: $(cat err)"
# an offset on a line past the first 1000 (not looked at before the run) fails that line alike
"$PY" -c 'for i in range(1000): print("{\"audio_filepath\": \"a.wav\", \"offset\": 0, \"id\": \"o%d\"}" % i)' >late.jsonl
printf '{"audio_filepath": "long.wav", "offset": 2.5, "duration": 1.5, "id": "late"}\n' >>late.jsonl
FZ -j 2 -o s20 --manifest late.jsonl >out 2>err
rc=$?
[ $rc = 1 ] || fail "an offset on line 1001: exit $rc, want 1: $(cat err)"
[ "$(cat err)" = "featurize: long.wav: \"offset\": 2.5 (line 1001): a segment of its audio file (NeMo's \
offset and duration), but featurize stores whole files; cut each segment into a file of its own (sox \
IN OUT trim OFFSET DURATION) and list those
featurize: done: 1000 of 1001 (1000 new, 0 already stored, 1 failed)" ] ||
  fail "an offset on line 1001: $(cat err)"
# the same from a pipe (jq's filter in <(...), cat | --manifest -) or a file on stdin, whose lines
# were not looked at: every segment stored the whole recording, exit 0
seg_said() { # NAME: the refusal, naming the manifest as NAME
  printf '%s\n' "featurize: $1:2: \"offset\": 2.5: a segment of its audio file (NeMo's offset and \
duration), but featurize stores whole files; cut each segment into a file of its own (sox IN OUT \
trim OFFSET DURATION) and list those"
}
cat segs.jsonl | FZ -o s30 --manifest - >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s30 ] && diff <(seg_said "(stdin)") err >/dev/null ||
  fail "segments from a pipe on stdin: exit $rc: $(cat err)"
FZ -o s30 --manifest - <segs.jsonl >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s30 ] && diff <(seg_said "(stdin)") err >/dev/null ||
  fail "segments from a file on stdin: exit $rc: $(cat err)"
cat segs.jsonl | FZ -o s30 --manifest /dev/stdin --audio-dir . >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s30 ] && diff <(seg_said /dev/stdin) err >/dev/null ||
  fail "segments from /dev/stdin: exit $rc: $(cat err)"
FZ -o s30 --manifest <(cat segs.jsonl) --audio-dir . >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s30 ] && grep -qxE "featurize: /dev/fd/[0-9]+:2: \"offset\": 2\.5: a segment .*" err ||
  fail "segments from <(...): exit $rc: $(cat err)"
# a pipe of whole files, longer than the lines looked at (1000): every line reaches the job
"$PY" -c 'for i in range(1500): print("{\"audio_filepath\": \"a.wav\", \"offset\": 0, \"id\": \"w%d\"}" % i)' >many.jsonl
for how in pipe file subst devstdin; do
  rm -rf s31
  case $how in
  pipe) cat many.jsonl | FZ -q -o s31 --manifest - --audio-dir . >out 2>err ;;
  file) FZ -q -o s31 --manifest - --audio-dir . <many.jsonl >out 2>err ;;
  subst) FZ -q -o s31 --manifest <(cat many.jsonl) --audio-dir . >out 2>err ;;
  devstdin) cat many.jsonl | FZ -q -o s31 --manifest /dev/stdin --audio-dir . >out 2>err ;;
  esac
  rc=$?
  FZ -o s31 --manifest many.jsonl --json >out 2>err2
  [ $rc = 0 ] && grep -q '"skipped_existing":1500,"failed":0,"not_started":0,"total":1500,' out ||
    fail "whole files from a $how: exit $rc: $(cat err) then $(cat out err2)"
done

# a folder given as the manifest: the corpus's folder (LJSpeech-1.1/, its metadata.csv inside) or
# a folder of audio; said what to give, where "is a directory" was all; exit 2, nothing made
mkdir -p LJSpeech-1.1/wavs audio && cp a.wav audio/ && printf 'a|x\n' >LJSpeech-1.1/metadata.csv
FZ -o s32 --manifest LJSpeech-1.1/ >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s32 ] && [ "$(cat err)" = "featurize: LJSpeech-1.1/: is a directory (its manifest: --manifest LJSpeech-1.1/metadata.csv)" ] ||
  fail "a corpus folder as the manifest: exit $rc: $(cat err)"
FZ -o s32 --manifest audio >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s32 ] && [ "$(cat err)" = "featurize: audio: is a directory (--manifest reads a file; a folder of audio: find audio -name '*.wav' | featurize -o STORE -)" ] ||
  fail "a folder of audio as the manifest: exit $rc: $(cat err)"

# 11. a URL (a dataset's remote manifest) and a ~ no shell expanded (a quoted path, a manifest's):
# said, where "No such file or directory" named a file that seems to be there
printf '{"audio_filepath": "https://example.org/a.wav", "text": "a"}\n' >remote.jsonl
printf '~/corpus/a.wav\n' >tilde.txt
FZ -o s19 --manifest remote.jsonl >out 2>err
grep -qx "featurize: https://example.org/a.wav: No such file or directory (a URL? featurize reads \
files: download it first)" err || fail "URL: $(cat err)"
FZ -o s19 --manifest tilde.txt >out 2>err
grep -qx "featurize: ~/corpus/a.wav: No such file or directory (a ~ that no shell expanded: give \
the path from / or \$HOME)" err || fail "tilde: $(cat err)"
# a $VARIABLE no shell expanded (a manifest written with "$DATA/wavs/a.wav" or "${DATA}/...", read
# as it is): said, where "No such file or directory" named a path that reads as a good one
printf '$DATA/a.wav\n${CORPUS_ROOT}/b.wav\n' >vars.txt
FZ -o s19 --manifest vars.txt --audio-dir . >out 2>err
grep -qx "featurize: \$DATA/a.wav: No such file or directory (a \$VARIABLE that no shell expanded: \
manifests are read as they are; expand it first: envsubst <MANIFEST >NEW)" err &&
  grep -qx "featurize: \${CORPUS_ROOT}/b.wav: No such file or directory (a \$VARIABLE that no shell \
expanded: manifests are read as they are; expand it first: envsubst <MANIFEST >NEW)" err ||
  fail "\$VARIABLE: $(cat err)"

# 12. a Kaldi data folder whose segments file cuts the wav.scp's recordings into utterances: the
# recordings are stored whole under their own ids, as asked, with a line that says so
mkdir -p seg && cp a.wav seg/rec1.wav
printf 'rec1 rec1.wav\n' >seg/wav.scp
printf 'utt1 rec1 0.00 0.20\nutt2 rec1 0.20 0.50\n' >seg/segments
FZ -o s20 --manifest seg/wav.scp >out 2>err
rc=$?
[ $rc = 0 ] || fail "segments beside wav.scp: exit $rc: $(cat err)"
grep -qx "featurize: seg/segments: cuts the recordings of seg/wav.scp into utterances, but \
featurize stores whole files, under the recordings' ids (cut each segment into a file of its own \
first: Kaldi's extract-segments, or sox IN OUT trim START =END)" err ||
  fail "segments beside wav.scp: $(cat err)"

# 13. a comma-separated metadata.csv (Hugging Face's audiofolder: file_name,transcription), read
# as LJSpeech by its name: every line failed 'missing text column'; refused before the store is
# touched. An LJSpeech file whose first line alone lacks its bar fails that line only, as before.
mkdir -p hf && cp a.wav hf/0001.wav
printf 'file_name,transcription\n0001.wav,hello there\n' >hf/metadata.csv
FZ -o s21 --manifest hf/metadata.csv >out 2>err
rc=$?
[ $rc = 2 ] || fail "comma csv: exit $rc, want 2"
grep -qx "featurize: hf/metadata.csv: comma-separated, not LJSpeech's id|text (Hugging Face's \
audiofolder metadata?): give its audio files as paths (find DIR -name '\*.wav' | featurize -o \
STORE -), or a wav.scp or JSON lines manifest" err || fail "comma csv: $(cat err)"
[ -e s21 ] && fail "comma csv: a store was made"
printf 'LJ1,one\nLJ2|two\n' >lj/comma1.csv
FZ -o s22 --manifest lj/comma1.csv >out 2>err
[ $? = 1 ] || fail "one line without a bar: $(cat err)"

# 14. an LJSpeech manifest whose id column holds the file's name with its extension (a.wav|text):
# its audio was looked for at wavs/a.wav.wav; the id stays as the manifest gives it
mkdir -p ext/wavs && cp a.wav ext/wavs/b1.wav
printf 'b1.wav|one|one\n' >ext/metadata.csv
FZ -v -o s23 --manifest ext/metadata.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "an id with its extension: exit $rc: $(cat err)"
grep -qx 'featurize: ext/wavs/b1.wav: stored as b1.wav (43 frames, 0.50 s)' err ||
  fail "an id with its extension: $(cat err)"

# 15. files that hold no audio but what a download or a clone left in their place: a Git LFS
# pointer (a dataset repository cloned without git-lfs: every file of the corpus is one), an HTML
# page (a sign-in or error page saved under the file's name), a storage service's XML error. Each
# said what it is and what to do, where "not an audio file (libsndfile: Format not recognised.)"
# was all; a text file that is none of them stays so.
mkdir -p lfs
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%064d\nsize 44144\n' 0 >lfs/p1.wav
printf '\n<!DOCTYPE html>\n<html><head><title>Sign in</title></head></html>\n' >lfs/p2.wav
printf '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code></Error>\n' >lfs/p3.wav
printf 'hello, I am text\n' >lfs/p4.wav
FZ -j 1 -o s24 lfs/p1.wav lfs/p2.wav lfs/p3.wav lfs/p4.wav a.wav >out 2>err
rc=$?
cat >want <<'TXT'
featurize: lfs/p1.wav: not an audio file: a Git LFS pointer (its repository was cloned without the LFS files: git lfs pull)
featurize: lfs/p2.wav: not an audio file: an HTML page (a download that got a sign-in or error page?)
featurize: lfs/p3.wav: not an audio file: an XML document (a download that got a storage service's error reply?)
featurize: lfs/p4.wav: not an audio file (libsndfile: Format not recognised.)
featurize: done: 1 of 5 (1 new, 0 already stored, 4 failed)
TXT
[ $rc = 1 ] || fail "no audio but a pointer, a page: exit $rc, want 1"
diff -u want err || fail "no audio but a pointer, a page: stderr differs"

# 16. macOS's AppleDouble files (._NAME beside each NAME, which a Mac's tar or zip leaves in a
# corpus, and find -name '*.wav' lists): said what they are and how to leave them out
printf '\0\5\26\7\0\2\0\0Mac OS X        \0\2' >lfs/._a.wav
FZ -j 1 -o s24 lfs/._a.wav a.wav >out 2>err
rc=$?
cat >want <<'TXT'
featurize: lfs/._a.wav: not an audio file: macOS metadata (an AppleDouble ._ file a Mac's archive left beside the audio: leave them out, find DIR -name '*.wav' ! -name '._*')
featurize: done: 1 of 2 (0 new, 1 already stored, 1 failed)
TXT
[ $rc = 1 ] || fail "AppleDouble: exit $rc, want 1"
diff -u want err || fail "AppleDouble: stderr differs"

# 17. a manifest written on Windows: its paths' separators are backslashes (wavs\a.wav), or a drive
# letter begins them (C:\corpus\a.wav). Each failed as "No such file or directory" of a path that
# reads as right; said what it is, and for the first that with / it names a file that is there.
mkdir -p win/wavs && cp a.wav win/wavs/w1.wav
printf '{"audio_filepath": "wavs\\\\w1.wav"}\n{"audio_filepath": "C:\\\\corpus\\\\w2.wav"}\n' >win/m.jsonl
FZ -j 1 -o s25 --manifest win/m.jsonl >out 2>err
rc=$?
cat >want <<'TXT'
featurize: "win/wavs\\w1.wav": No such file or directory (a Windows path? with / for each \ it names win/wavs/w1.wav, which is there: convert the manifest's separators, sed 's#\\#/#g')
featurize: "win/C:\\corpus\\w2.wav": No such file or directory (a Windows path: give the files' paths on this machine)
featurize: done: 0 of 2 (0 new, 0 already stored, 2 failed)
TXT
[ $rc = 1 ] || fail "Windows paths: exit $rc, want 1"
diff -u want err || fail "Windows paths: stderr differs"
sed 's#\\#/#g' win/m.jsonl | head -n 1 >win/fixed.jsonl # the command said
FZ -q -j 1 -o s25 --manifest win/fixed.jsonl || fail "the converted Windows manifest: exit $?"

# 18. a name in the other Unicode normal form: a corpus copied from macOS (names decomposed, NFD)
# and a manifest written composed (NFC), or the reverse. Each failed as "No such file or directory"
# of a name that reads as the one ls lists; said so (not read for it: the stored path would be
# another name), and the way out. A name only one form has (ASCII) is not looked at.
mkdir -p nf/wavs
nfc=$(printf 'caf\xc3\xa9') nfd=$(printf 'cafe\xcc\x81') # café, composed and decomposed
nfc2=$(printf 'na\xc3\xafve') nfd2=$(printf 'nai\xcc\x88ve') # naïve
cp a.wav "nf/wavs/$nfd.wav" && cp a.wav "nf/wavs/$nfc2.wav"
printf '%s|one\n%s|two\n' "$nfc" "$nfd2" >nf/metadata.csv
FZ -j 1 -o s26 --manifest nf/metadata.csv >out 2>err
rc=$?
cat >want <<TXT
featurize: nf/wavs/$nfc.wav: No such file or directory (a file is there whose name is this one in Unicode NFD, decomposed, as macOS writes names; it is not read for it: rename the files to NFC, convmv -r -f utf8 -t utf8 --nfc --notest DIR)
featurize: nf/wavs/$nfd2.wav: No such file or directory (a file is there whose name is this one in Unicode NFC; it is not read for it: the name given is decomposed (NFD, as macOS writes names): convert the manifest to NFC, uconv -x any-nfc IN >OUT)
featurize: done: 0 of 2 (0 new, 0 already stored, 2 failed)
TXT
[ $rc = 1 ] || fail "normal forms: exit $rc, want 1"
diff -u want err || fail "normal forms: stderr differs"

[ $fails = 0 ] || exit 1
echo "featurize_messy_inputs: ok"
