#!/usr/bin/env bash
# tokenize writes its token config (meta cfg/, vocab/ or tokenizer/) with the first batch that
# stores something, not before the run: a run that stores nothing leaves the store without it, as
# featurize leaves its mel config. A manifest without a line (an empty file, a `grep` in a Makefile
# that matched nothing, a header alone) said "nothing to do: FILE holds no lines", exit 0, and
# stored a 'chars' config with --build-vocab's vocab of the four specials alone; with the real
# transcripts tokenized after it, the store held two 'chars' configs and cache-verify failed on
# every text entry ("missing: no token record for token config chars ..." of the empty one). The
# same for a manifest whose every line failed, as a run batch by batch and as a bulk load.
set -u
TK=${FC_BIN:?}/tokenize
CC=$FC_BIN/cache-config
CV=$FC_BIN/cache-verify
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# configs STORE WANT: how many configs cache-config lists
configs() {
  local got
  got=$("$CC" "$1" 2>&1 | sed -n "s/^$1: \([0-9]*\) configs\{0,1\}$/\1/p")
  [ "$got" = "$2" ] || { fail "$1: $got configs, want $2:"; "$CC" "$1"; }
}

: >empty.csv
printf 'id|text\n' >header.csv
printf 'a|hello there\nb|good evening\n' >m.csv
printf 'x|\ny|\xff\nz|   \n' >bad.csv # empty, not UTF-8, blank: every line fails

"$TK" --build-vocab -o s1 empty.csv 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "tokenize: nothing to do: empty.csv holds no lines" ] ||
  fail "empty: exit $rc: $(cat err)"
configs s1 0
"$TK" -q --build-vocab -o s1 header.csv || fail "header alone: exit $?"
configs s1 0
"$TK" -q --build-vocab -o s1 m.csv || fail "m.csv: exit $?"
configs s1 1
"$CV" --strict s1 >out 2>&1 || { fail "s1: cache-verify --strict:"; cat out; }
# and into a store that holds the config already: nothing more
"$TK" -q --build-vocab -o s1 empty.csv || fail "empty again: exit $?"
configs s1 1
printf '' | "$TK" -q --build-vocab -o s1 - || fail "empty stdin: exit $?"
configs s1 1

# every line fails: exit 1, no config; batch by batch and as a bulk load (--batch 1)
for batch in 4096 1; do
  "$TK" -q --build-vocab --batch $batch -o s2-$batch bad.csv 2>err
  rc=$?
  [ $rc = 1 ] && grep -qF "done: 0 of 3 (0 new, 0 already stored, 3 failed, 0 tokens)" err ||
    fail "bad lines, --batch $batch: exit $rc: $(cat err)"
  configs s2-$batch 0
  "$TK" -q --build-vocab --batch $batch -o s2-$batch m.csv || fail "m.csv after bad.csv: exit $?"
  configs s2-$batch 1
  "$CV" --strict s2-$batch >out 2>&1 || { fail "s2-$batch: cache-verify --strict:"; cat out; }
done

# a run that stores something still writes the config with its records: a bulk load too
"$TK" -q --build-vocab --batch 1 -o s3 m.csv || fail "bulk: exit $?"
configs s3 1
"$CV" --strict s3 >out 2>&1 || { fail "s3: cache-verify --strict:"; cat out; }

[ $fails = 0 ] || exit 1
echo ok
