#!/bin/bash
# Try every code point in lines of the given shapes through the phonemes tokenizer, each in a child
# process of an ASan build (tests/fuzz/scan_espeak.c), and print the ranges that crash espeak-ng.
#   tests/fuzz/scan-espeak.sh [FORMAT...]    default formats: "x %s" "x a%s" "%s" "x %s%s" "x .%s"
#   FC_SCAN_RANGE="LO HI" (hex, default "80 2FFFF"), FC_SCAN_LANG (default en-us)
# Exit 0 when nothing crashes, 1 when something does (the ranges are on stdout), 77 without a C
# compiler with ASan. About 1 ms per code point and format when nothing crashes.
set -eu
cd "$(dirname "$0")/../.."
cc=${CC:-cc}
out=${FC_FUZZ_OUT:-build-fuzz}
mkdir -p "$out"
[ $# -gt 0 ] || set -- "x %s" "x a%s" "%s" "x %s%s" "x .%s"
"$cc" -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=address -fno-omit-frame-pointer -Iinclude -I. \
  tests/fuzz/scan_espeak.c libcache/text/tokenize/tok_espeak.c libcache/text/tokenize/tok_child.c libcache/text/tokenize/tok_util.c \
  libcache/text/tokenize/tok_normalize.c formats/utf8.c \
  $(pkg-config --libs espeak-ng libutf8proc) -lxxhash -lm -lpthread -o "$out/scan_espeak" ||
  { echo "scan-espeak: cannot build with -fsanitize=address" >&2; exit 77; }
read -r lo hi <<<"${FC_SCAN_RANGE:-80 2FFFF}"
rc=0
for fmt in "$@"; do
  echo "== $fmt"
  ASAN_OPTIONS=symbolize=0:detect_leaks=0 "$out/scan_espeak" "$fmt" "$lo" "$hi" "${FC_SCAN_LANG:-en-us}" || rc=1
done
exit $rc
