#!/usr/bin/env bash
# tokenize given a manifest line far over --max-text-bytes (a transcript file that is one long
# line, a minified JSON): the line fails without being read into memory — kept are
# --max-text-bytes plus 64 KiB of it, the rest read and dropped — "FILE:LINE: line is N bytes,
# over the limit of M a line may have", and the job goes on with the rest. A text over
# --max-text-bytes within that slack fails as before ("text is N bytes, over the limit"). From a
# file (read as the run goes), stdin and a pipe (read whole) alike. Before, the whole line was
# read first: 886 MB of memory to fail a 300 MB line.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
x() { head -c "$1" /dev/zero | tr '\0' "$2"; }
{ printf 'a\t'; x 300000 x; printf '\nb\thello\nc\t'; x 2000 y; printf '\n'; } >t.tsv
{ printf '{"id": "a", "text": "'; x 300000 x; printf '"}\n{"id": "b", "text": "hello"}\n'; } >t.jsonl

check() { # NAME SOURCE-NAME: exit 1, the lines, b stored
  local name=$1 src=$2
  [ "$rc" = 1 ] || fail "$name: exit $rc, want 1"
  grep -qx "tokenize: $src:1: line is 300003 bytes, over the limit of 66536 a line may have" err ||
    { fail "$name: the long line"; cat err; }
  grep -qx "tokenize: $src:3: text is 2000 bytes, over the limit of 1000 (--max-text-bytes)" err ||
    { fail "$name: the text over the limit"; cat err; }
  grep -qx "tokenize: done: 1 of 3 (1 new, 0 already stored, 2 failed, 5 tokens)" err ||
    { fail "$name: done line"; cat err; }
}
"$B/tokenize" -q -t chars --build-vocab --max-text-bytes 1K -o s1 t.tsv >out 2>err
rc=$?
check "file" t.tsv
"$B/tokenize" -q -t chars --build-vocab --max-text-bytes 1K -o s2 - <t.tsv >out 2>err
rc=$?
check "stdin" "(stdin)"
"$B/tokenize" -q -t chars --build-vocab --max-text-bytes 1K -o s3 --manifest <(cat t.tsv) >out 2>err
rc=$?
grep -q "^tokenize: /dev/fd/[0-9]*:1: line is 300003 bytes, over the limit of 66536 a line may have$" err ||
  { fail "pipe: the long line (exit $rc)"; cat err; }
# a JSON line cut short: the failure is its length, not the JSON it no longer is
"$B/tokenize" -q -t chars --build-vocab --max-text-bytes 1K -o s4 t.jsonl >out 2>err
rc=$?
[ "$rc" = 1 ] && grep -qx "tokenize: t.jsonl:1: line is 300024 bytes, over the limit of 66536 a line may have" err ||
  { fail "jsonl: exit $rc"; cat err; }
# the default limit: 64 KiB of text and 64 KiB beside it
"$B/tokenize" -q -t chars --build-vocab -o s5 t.tsv >out 2>err
rc=$?
[ "$rc" = 1 ] && grep -qx "tokenize: t.tsv:1: line is 300003 bytes, over the limit of 131072 a line may have" err ||
  { fail "default limit: exit $rc"; cat err; }
"$B/cache-verify" -q s1 >/dev/null 2>&1 || fail "s1 does not verify"
# the memory: a 50 MB line costs tokenize no more than a short one (peak RSS of the child, as
# getrusage counts it; both runs measured alike, so a sanitizer's own memory cancels out)
peak_kb() {
  "${FC_PYTHON:-python3}" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
{ printf 'a\t'; x 50000000 x; printf '\nb\thello\n'; } >big.tsv
printf 'a\tx\nb\thello\n' >small.tsv
small=$(peak_kb "$B/tokenize" -q -t chars --build-vocab -o m1 small.tsv)
big=$(peak_kb "$B/tokenize" -q -t chars --build-vocab -o m2 big.tsv)
[ -n "$small" ] && [ -n "$big" ] && [ $((big - small)) -lt 20000 ] ||
  fail "memory: a 50 MB line took ${big:-?} KB at its peak, a short one ${small:-?} KB"

[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
