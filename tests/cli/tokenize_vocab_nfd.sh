#!/usr/bin/env bash
# tokenize: a --vocab file's symbols are normalized as the text is (NFKC by default), so a vocab
# written in NFD (decomposed accents) matches the NFC/NFKC text; the config digest of an
# already-normalized vocab is unchanged; two symbols that normalize to one are a duplicate.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
expect_rc() { [ "$1" = "$2" ] || fail "$3: exit $1, want $2"; }

printf 'u1|caf\xC3\xA9 \xC3\xA9t\xC3\xA9\n' > "$d/m.csv"                     # café été (NFC)
nfc='\xC3\xA9'; nfd='e\xCC\x81'
for form in nfc nfd; do
  printf '<pad>\n<unk>\n<bos>\n<eos>\n \na\nc\nf\nt\n%b\n' "${!form}" > "$d/$form.txt"
  "$T" -o "$d/s-$form" --manifest "$d/m.csv" --vocab "$d/$form.txt" --json > "$d/$form.json" 2> "$d/err"
  expect_rc $? 0 "$form vocab"
  grep -q '"unknown":0,' "$d/$form.json" || fail "$form vocab: unknown symbols: $(cat "$d/$form.json")"
done
dg() { sed -n 's/.*"config_digest":"\([0-9a-f]*\)".*/\1/p' "$1"; }
[ -n "$(dg "$d/nfc.json")" ] && [ "$(dg "$d/nfc.json")" = "$(dg "$d/nfd.json")" ] ||
  fail "NFC and NFD vocabs give different configs: $(dg "$d/nfc.json") $(dg "$d/nfd.json")"
# the NFC vocab's config is the one an exported built vocab gives (stable for normalized vocabs)
"$T" -o "$d/s-nfc" --manifest "$d/m.csv" --build-vocab --export-vocab "$d/built.txt" > /dev/null 2>&1
"$T" -o "$d/s-b" --manifest "$d/m.csv" --vocab "$d/built.txt" --json > "$d/b.json" 2> "$d/err"
expect_rc $? 0 "built vocab"
cmp -s "$d/built.txt" "$d/nfc.txt" || fail "built vocab differs from the NFC one"
[ "$(dg "$d/b.json")" = "$(dg "$d/nfc.json")" ] || fail "built and NFC vocab configs differ"
# é written both ways is one symbol twice: a configuration error naming both lines
printf '<pad>\n<unk>\n<bos>\n<eos>\n%b\n%b\n' "$nfc" "$nfd" > "$d/dup.txt"
"$T" -o "$d/s-dup" --manifest "$d/m.csv" --vocab "$d/dup.txt" > /dev/null 2> "$d/err"
expect_rc $? 2 "NFC and NFD duplicate"
grep -qF "dup.txt:6: duplicate symbol" "$d/err" || fail "duplicate not named at line 6"
grep -qF "first at line 5" "$d/err" || fail "duplicate's first line not named"
grep -qF "NFKC" "$d/err" || fail "duplicate does not say it is one under NFKC"
# --unicode none keeps the symbols as written: both are kept, and NFD é does not match
"$T" -o "$d/s-none" --manifest "$d/m.csv" --vocab "$d/dup.txt" --unicode none > /dev/null 2> "$d/err" ||
  true
grep -qF "duplicate" "$d/err" && fail "--unicode none: the two spellings are duplicates"
echo ok
