#!/usr/bin/env bash
# tokenize -t phonemes: --lang is recorded as the voice it selects, so de, de-DE and German (one
# espeak-ng voice) give one config; a canonical name (de, en-us) is recorded as given; an empty
# --lang, a voice variant without a language, or an MBROLA voice is a configuration error; a
# language espeak-ng reads with the voice of a related one (en-zz: en-gb) is said in a note.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
command -v espeak-ng > /dev/null || { echo "SKIP: espeak-ng missing"; exit 77; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }

printf 'g1|Guten Morgen.\n' > "$d/m.csv"
dg() { sed -n 's/.*"config_digest":"\([0-9a-f]*\)".*/\1/p' "$1"; }
for lang in de de-DE German; do
  "$T" -o "$d/s" --manifest "$d/m.csv" -t phonemes --lang "$lang" --build-vocab --json \
    > "$d/$lang.json" 2> "$d/err" || fail "--lang $lang: exit $?"
done
[ -n "$(dg "$d/de.json")" ] || fail "no config digest: $(cat "$d/de.json")"
for lang in de-DE German; do
  [ "$(dg "$d/$lang.json")" = "$(dg "$d/de.json")" ] || fail "--lang $lang: another config than de"
  grep -q '"processed":0,"skipped_existing":1' "$d/$lang.json" || fail "--lang $lang stored again"
done
# the config records the canonical name; en-us (the default) stays as it was
"$T" -o "$d/s" --manifest "$d/m.csv" -t phonemes --lang EN-US --build-vocab --json > "$d/en.json" \
  2> "$d/err" || fail "--lang EN-US: exit $?"
"$T" -o "$d/s" --manifest "$d/m.csv" -t phonemes --build-vocab --json > "$d/default.json" 2> "$d/err" ||
  fail "default lang: exit $?"
[ "$(dg "$d/en.json")" = "$(dg "$d/default.json")" ] || fail "EN-US and the default differ"
# an empty --lang (an unset variable) names no voice: a configuration error, nothing stored (it
# passed as the voice already selected, none, and espeak-ng crashed on the first line: exit 139)
"$T" -o "$d/s-empty" --manifest "$d/m.csv" -t phonemes --lang "" --build-vocab > /dev/null 2> "$d/err"
rc=$?
[ "$rc" = 2 ] || fail "--lang '': exit $rc, want 2"
grep -qF "espeak-ng has no voice ''" "$d/err" || fail "--lang '': no message naming the empty voice"
[ ! -e "$d/s-empty" ] || fail "--lang '': the store was made"
# a voice variant (espeak-ng-data's voices/!v) has no language: refused by name (espeak-ng 1.51, its
# command line too, crashed reading the first line with it: exit 139)
for v in variant '!v/m1'; do
  "$T" -o "$d/s-var" --manifest "$d/m.csv" -t phonemes --lang "$v" --build-vocab > /dev/null 2> "$d/err"
  rc=$?
  [ "$rc" = 2 ] || fail "--lang $v: exit $rc, want 2"
  [ ! -e "$d/s-var" ] || fail "--lang $v: the store was made"
done
"$T" -o "$d/s-var" --manifest "$d/m.csv" -t phonemes --lang variant --build-vocab > /dev/null 2> "$d/err"
grep -qF "espeak-ng voice 'variant' is a variant of a voice, with no language" "$d/err" ||
  fail "--lang variant: not said to be a variant"
"$T" -o "$d/s-var" --manifest "$d/m.csv" -t phonemes --lang en+m3 --build-vocab > /dev/null 2> "$d/err" ||
  fail "--lang en+m3 (a language with a variant): exit $?"
# a locale's name (en_US, pt_BR.UTF-8: $LANG's) is no espeak-ng voice; the message said only to
# list them, now the voice meant; a name that is no locale's says as before
for l in en_US:en-us pt_BR.UTF-8:pt-br; do
  "$T" -o "$d/s-loc" --manifest "$d/m.csv" -t phonemes --lang "${l%%:*}" --build-vocab > /dev/null 2> "$d/err"
  rc=$?
  [ "$rc" = 2 ] || fail "--lang ${l%%:*}: exit $rc, want 2"
  [ "$(cat "$d/err")" = "tokenize: espeak-ng has no voice '${l%%:*}' (a locale's name: espeak-ng's is ${l#*:})" ] ||
    fail "--lang ${l%%:*}: $(cat "$d/err")"
  [ ! -e "$d/s-loc" ] || fail "--lang ${l%%:*}: the store was made"
done
"$T" -o "$d/s-loc" --manifest "$d/m.csv" -t phonemes --lang zz_ZZ --build-vocab > /dev/null 2> "$d/err"
[ "$(cat "$d/err")" = "tokenize: espeak-ng has no voice 'zz_ZZ' (espeak-ng --voices lists them)" ] ||
  fail "--lang zz_ZZ: $(cat "$d/err")"
# an MBROLA voice (mb-en1, by its file, name or identifier) is refused by name, with the voice
# espeak-ng has for its language; espeak-ng's own MBROLA errors (its mbrola program and voice file
# missing: seven lines) came first before, and the mbrola program would have spoken it where it is
for v in mb-en1 english-mb-en1 mb/mb-en1 mb-en1+m3; do
  "$T" -o "$d/s-mb" --manifest "$d/m.csv" -t phonemes --lang "$v" --build-vocab > /dev/null 2> "$d/err"
  rc=$?
  [ "$rc" = 2 ] || fail "--lang $v: exit $rc, want 2"
  [ "$(cat "$d/err")" = "tokenize: espeak-ng voice '$v' is an MBROLA voice (mb/mb-en1), which speaks through the mbrola program and its voice file; tokenize takes espeak-ng's own phonemes: give espeak-ng's voice for its language, --lang en-gb, or another (espeak-ng --voices=en lists them)" ] ||
    fail "--lang $v: $(cat "$d/err")"
  [ ! -e "$d/s-mb" ] || fail "--lang $v: the store was made"
done
# a language espeak-ng has no voice for, whose related language it has (en-zz: en-gb, de-AT: de),
# is read with that one, as espeak-ng -v and its voices.md do: it was silent, now a note says so
# (not with -q); the config records the voice read, and is --lang en-gb's
"$T" -o "$d/s-zz" --manifest "$d/m.csv" -t phonemes --lang en-zz --build-vocab --json > "$d/zz.json" 2> "$d/err" ||
  fail "--lang en-zz: exit $?"
[ "$(head -n 1 "$d/err")" = "tokenize: note: espeak-ng has no voice for 'en-zz': it reads it with en-gb, the voice it picks for a related language, as espeak-ng -v en-zz does (recorded as en-gb; espeak-ng --voices=en lists the voices of en)" ] ||
  fail "--lang en-zz: $(cat "$d/err")"
"$T" -o "$d/s-zz" --manifest "$d/m.csv" -t phonemes --lang en-gb --build-vocab --json > "$d/gb.json" 2> "$d/err" ||
  fail "--lang en-gb: exit $?"
grep -q note "$d/err" && fail "--lang en-gb: $(cat "$d/err")"
[ "$(dg "$d/zz.json")" = "$(dg "$d/gb.json")" ] || fail "--lang en-zz: another config than en-gb's"
"$T" -q -o "$d/s-zz" --manifest "$d/m.csv" -t phonemes --lang de-AT --build-vocab > /dev/null 2> "$d/err" ||
  fail "-q --lang de-AT: exit $?"
[ -s "$d/err" ] && fail "-q --lang de-AT: $(cat "$d/err")"
if [ -n "${FC_PYTHON:-}" ]; then
  for f in de en; do
    PYTHONPATH=${FC_SRC:?}/tests/reference "$FC_PYTHON" -c '
import sys; from test_tokenize_store import read_meta; import json
print(json.loads(read_meta(sys.argv[1], "cfg/" + sys.argv[2]))["lang"])' "$d/s" "$(dg "$d/$f.json")" \
      > "$d/lang" 2> "$d/err" || fail "reading the config"
    want=$([ $f = de ] && echo de || echo en-us)
    [ "$(cat "$d/lang")" = "$want" ] || fail "config lang $(cat "$d/lang"), want $want"
  done
fi
echo ok
