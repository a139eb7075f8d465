#!/usr/bin/env bash
# '-' names stdin or stdout for tokenize's other files too, as it does for the manifest: --vocab -
# and --tokenizer-json - read stdin, --export-vocab - writes the vocab to stdout. Two of them on
# one stream (the manifest and the vocab on stdin, the vocab and --json on stdout) are a usage
# error, exit 2, nothing made. (Each was taken as a file named '-': --export-vocab - wrote ./-
# without a word, --vocab - said '-: No such file or directory'.)
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
cd "$d" || exit 1
printf 'a\thello\nb\tworld\n' >m.tsv
printf '%s\n' '<pad>' '<unk>' '<bos>' '<eos>' h e l o w r d >v.txt

# --export-vocab -: the vocab on stdout, the same bytes as a file gets; no file named '-'
"$T" --build-vocab --export-vocab - -o s1 m.tsv 2>err | cat >out
[ "${PIPESTATUS[0]}" = 0 ] || fail "--export-vocab -: exit ${PIPESTATUS[0]}"
"$T" --build-vocab --export-vocab file.txt -o s2 m.tsv 2>err || fail "--export-vocab file.txt: exit $?"
cmp -s out file.txt || fail "--export-vocab - wrote '$(head -c 200 out)', not the vocab"
[ -e ./- ] && fail "--export-vocab - made a file named '-'"
# A path that names an open descriptor is written through it, a regular file too (as '-' is when
# stdout is one): the file beside it that a plain path gets cannot be made in /proc (it failed
# after the work, exit 1; /dev/stdout's was made in /dev, as root, and renamed over it), and an
# append keeps what the file held.
for p in /dev/fd/3 /proc/self/fd/3; do
  echo "kept" >fd.txt
  "$T" --build-vocab --export-vocab "$p" -o s1 m.tsv 2>err 3>>fd.txt || fail "--export-vocab $p: exit $?"
  { echo kept; cat file.txt; } | cmp -s - fd.txt || fail "--export-vocab $p 3>>fd.txt: $(head -c 300 fd.txt)"
done
"$T" --build-vocab --export-vocab /dev/fd/7 -o s1 m.tsv 2>err
[ $? = 1 ] || fail "--export-vocab /dev/fd/7, not open: exit $?, want 1"
grep -qx "tokenize: /dev/fd/7: cannot write the vocab: Bad file descriptor" err ||
  fail "--export-vocab /dev/fd/7, not open: the message"
# a closed stdout (given /dev/null for reading, as every tool does): Bad file descriptor, exit 1
"$T" --build-vocab --export-vocab - -o s1 m.tsv 2>err >&-
[ $? = 1 ] || fail "--export-vocab - with stdout closed: exit $?, want 1"
grep -qx "tokenize: /dev/stdout: cannot write the vocab: Bad file descriptor" err ||
  fail "--export-vocab - with stdout closed: the message (it said 'Invalid argument')"

# --vocab -: read from stdin, the config the file gives
"$T" --vocab - -o s3 m.tsv <v.txt --json >out 2>err || fail "--vocab -: exit $?"
"$T" --vocab v.txt -o s4 m.tsv --json >out2 2>err || fail "--vocab v.txt: exit $?"
c1=$(sed -n 's/.*"config_digest":"\([0-9a-f]*\)".*/\1/p' out)
c2=$(sed -n 's/.*"config_digest":"\([0-9a-f]*\)".*/\1/p' out2)
[ -n "$c1" ] && [ "$c1" = "$c2" ] || fail "--vocab - gave config '$c1', the file '$c2'"

# --tokenizer-json -: read from stdin
cat >tok.json <<'EOF'
{"model":{"type":"BPE","vocab":{"h":0,"e":1,"l":2,"o":3,"w":4,"r":5,"d":6,"he":7},"merges":["h e"]}}
EOF
"$T" -t bpe --tokenizer-json - -o s5 m.tsv <tok.json 2>err || fail "--tokenizer-json -: exit $?"
grep -qx "tokenize: done: 2 of 2 (2 new, 0 already stored, 0 failed, 9 tokens)" err ||
  fail "--tokenizer-json -: the summary"
# -t bpe --export-vocab: the tokenizer.json's bytes, as docs/tokenize.md says
"$T" -q -t bpe --tokenizer-json tok.json --export-vocab tok-out.json -o s5 m.tsv 2>err ||
  fail "-t bpe --export-vocab: exit $?"
cmp -s tok.json tok-out.json || fail "-t bpe --export-vocab wrote '$(head -c 200 tok-out.json)'"

# two of them on one stream: a usage error, nothing made
"$T" --vocab - -o s6 - <v.txt >out 2>err
[ $? = 2 ] || fail "--vocab - with the manifest on stdin: exit $?, want 2"
grep -qx "tokenize: --vocab - and the manifest '-' would both read stdin: give one of them as a file" err ||
  fail "--vocab - with the manifest on stdin: the message"
"$T" -t bpe --tokenizer-json - -o s6 --manifest - <tok.json >out 2>err
[ $? = 2 ] || fail "--tokenizer-json - with the manifest on stdin: exit $?, want 2"
"$T" --build-vocab --export-vocab - --json -o s6 m.tsv >out 2>err
[ $? = 2 ] || fail "--export-vocab - with --json: exit $?, want 2"
grep -qx "tokenize: --export-vocab - and --json would both write to stdout: give the vocab a file" err ||
  fail "--export-vocab - with --json: the message"
[ -e s6 ] && fail "a usage error made the store"
echo ok
