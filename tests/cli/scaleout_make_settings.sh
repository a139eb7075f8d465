#!/bin/bash
# The Makefile template's settings that name paths, checked before anything is made (exit 2, the


# and stamping '.done', exit 0; WORK= wrote the shards to /s0 ...; a path with a space was split
# in two by make, and a MANIFEST not there (the default metadata.csv run from another folder)
# said "No rule to make target 'shards/s0.of2.done'". TEXT= stays the way to leave tokens out,
# and `make clean` needs no manifest.
set -u
command -v make >/dev/null || { echo "skip: make not installed"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
mkdir w && cd w || exit 1 # make runs here; out, err beside it
mk() { make -j2 -f "$FC_SRC/scripts/scaleout/Makefile" MANIFEST=../c/metadata.csv SHARDS=2 BIN="$FC_BIN" "$@"; }
refused() { # NAME WANT-MESSAGE: make ... exit 2, the message, nothing made
  [ "$rc" = 2 ] || { echo "FAIL $1: exit $rc, want 2"; cat ../out ../err; fail=1; }
  grep -qF -- "$2" ../err || { echo "FAIL $1: message"; cat ../err; echo "want: $2"; fail=1; }
  [ -n "$(ls -A)" ] && { echo "FAIL $1: made $(ls -A | tr '\n' ' ')"; fail=1; }
  rm -rf ./* ./.[!.]*
}
mk CACHE= >../out 2>../err; rc=$?
refused CACHE= "CACHE='' names no path (an empty value: an unset variable?)"
mk WORK= >../out 2>../err; rc=$?
refused WORK= "WORK='' names no path (an empty value: an unset variable?)"
mk MANIFEST= >../out 2>../err; rc=$?
refused MANIFEST= "MANIFEST='' names no path (an empty value: an unset variable?)"
mk CACHE="my cache" >../out 2>../err; rc=$?
refused space "CACHE='my cache' holds a space: make takes it for two paths; use one without (a symbolic link to it), or parallel.sh"
mk MANIFEST=metadata.csv >../out 2>../err; rc=$?
refused missing "MANIFEST='metadata.csv': no such file (give MANIFEST=FILE, the corpus manifest)"
mk TEXT=text.tsv >../out 2>../err; rc=$?
refused missing-text "TEXT='text.tsv': no such file (give TEXT=FILE, or TEXT= for no tokens)"
# make clean needs no manifest; TEXT= still leaves tokenize out
mkdir shards && make -f "$FC_SRC/scripts/scaleout/Makefile" MANIFEST=gone.csv clean >../out 2>../err ||
  { echo "FAIL clean without a manifest"; cat ../out ../err; fail=1; }
[ -e shards ] && { echo "FAIL clean: shards left"; fail=1; }
mk TEXT= >../out 2>../err || { echo "FAIL TEXT="; cat ../out ../err; fail=1; }
grep -q tokenize ../out && { echo "FAIL TEXT= ran tokenize"; fail=1; }
[ -e cache/data.mdb ] || { echo "FAIL TEXT=: no cache"; fail=1; }
exit $fail
