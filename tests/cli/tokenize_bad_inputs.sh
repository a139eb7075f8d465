#!/usr/bin/env bash
# tokenize: bad inputs are reported as `tokenize: FILE:LINE: reason`, the rest is stored, exit 1
# with `done: N of M`; configuration errors exit 2 with nothing done; --strict stops at the first
# bad line; --help/--version; SIGTERM exits 143 and a rerun resumes.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
expect_rc() { [ "$1" = "$2" ] || fail "$3: exit $1, want $2"; }
expect_err() { grep -qF -- "$1" "$d/err" || fail "stderr lacks: $1"; }

m=$d/m.csv
{
  printf '\xEF\xBB\xBFbom1|First line after a BOM.\r\n'   # 1 BOM + CRLF
  printf 'crlf2|A CRLF line.\r\n'                         # 2
  printf 'bad3|Invalid \xC3\x28 UTF-8.\n'                  # 3 invalid UTF-8
  printf 'empty4|\n'                                      # 4 empty text
  printf 'empty5|   \n'                                   # 5 only spaces
  printf 'big6|'; head -c 1048576 /dev/zero | tr '\0' 'a'; printf '\n'   # 6 1 MiB line
  printf 'nocolumn7\n'                                    # 7 missing text column
  printf 'crlf2|A duplicate id.\n'                        # 8 duplicate id
  printf 'ok9|The last good line!\n'                      # 9
} > "$m"

"$T" -o "$d/s" --manifest "$m" --build-vocab --json > "$d/out" 2> "$d/err"
expect_rc $? 1 "bad inputs"
expect_err "tokenize: $m:3: "
grep -F "$m:3:" "$d/err" | grep -qi "utf-8" || fail "line 3 not named as invalid UTF-8"
expect_err "tokenize: $m:4: text is empty"
expect_err "tokenize: $m:5: text is only white space"
expect_err "tokenize: $m:6: line is 1048582 bytes, over the limit of 131072 a line may have" # unread
expect_err "tokenize: $m:7: "
expect_err "tokenize: $m:8: duplicate id"
expect_err "done: 3 of 9"
grep -q '"processed":3,"skipped_existing":0,"failed":6' "$d/out" || fail "json: $(cat "$d/out")"
# the good lines are stored with BOM and CR removed: rerun → nothing new
"$T" -o "$d/s" --manifest "$m" --build-vocab --json > "$d/out" 2> "$d/err"
expect_rc $? 1 "rerun"
grep -q '"processed":0,"skipped_existing":3,"failed":6' "$d/out" || fail "rerun json: $(cat "$d/out")"
# a larger limit lets the 1 MiB line through
"$T" -o "$d/s2" --manifest "$m" --vocab <(printf 'a\n') --max-text-bytes 2MiB --json > "$d/out" 2> "$d/err"
grep -q '"processed":1,.*"tokens":1048576,' "$d/out" || fail "1 MiB line with --max-text-bytes 2MiB: $(cat "$d/out")"

# a text that normalization leaves empty is said by what the line gave (each was "text is empty
# after normalization", said of an empty column too): nothing, white space, punctuation that
# --punct remove drops
printf 'a|Hi.\nb|\nc| \t \nd|!?\ne|! ?\n' > "$d/e.csv"
printf '{"id":"f","text":""}\n{"id":"g","text":"\\u3000"}\n' > "$d/e.jsonl"
"$T" -q -o "$d/sx" --manifest "$d/e.csv" --build-vocab --punct remove > /dev/null 2> "$d/err"
expect_rc $? 1 "empty texts"
cat > "$d/want" <<W
tokenize: $d/e.csv:2: text is empty
tokenize: $d/e.csv:3: text is only white space
tokenize: $d/e.csv:4: text is only punctuation, which --punct remove drops
tokenize: $d/e.csv:5: text is only punctuation (which --punct remove drops) and white space
W
grep -v 'done:' "$d/err" | diff -u "$d/want" - || fail "empty texts said"
"$T" -q -o "$d/sx2" --manifest "$d/e.jsonl" --build-vocab > /dev/null 2> "$d/err"
expect_rc $? 1 "empty JSON texts"
printf 'tokenize: %s:1: text is empty\ntokenize: %s:2: text is only white space\n' "$d/e.jsonl" "$d/e.jsonl" |
  diff -u - <(grep -v 'done:' "$d/err") || fail "empty JSON texts said"

# JSON lines: a text-only line names its utterance with "id"; one without says that is missing
printf '{"id":"j1","text":"Hello."}\n{"text":"No id here."}\n' > "$d/m.jsonl"
"$T" -o "$d/sj" --manifest "$d/m.jsonl" --build-vocab > /dev/null 2> "$d/err"
expect_rc $? 1 "a JSON line without an id"
grep -qx "tokenize: $d/m.jsonl:2: missing \"audio_filepath\" (a text-only line needs a string \"id\")" "$d/err" ||
  fail "a JSON line without an id: the reason does not name \"id\""

# an empty manifest (or one of blank lines): nothing to do, said as such, not "all 0 lines
# already stored"
: > "$d/empty.csv"
"$T" -o "$d/se" --manifest "$d/empty.csv" --build-vocab > /dev/null 2> "$d/err"
expect_rc $? 0 "an empty manifest"
[ "$(cat "$d/err")" = "tokenize: nothing to do: $d/empty.csv holds no lines" ] ||
  fail "an empty manifest: $(cat "$d/err")"
printf 'a|Hello.\n' > "$d/one.csv"   # (shard 2 of 3 holds a; 0 and 1 hold nothing)
"$T" -o "$d/se1" --manifest "$d/one.csv" --build-vocab --shard 0/3 > /dev/null 2> "$d/err"
expect_rc $? 0 "an empty shard"
[ "$(cat "$d/err")" = "tokenize: nothing to do: shard 0/3 of $d/one.csv holds no lines" ] ||
  fail "an empty shard: $(cat "$d/err")"

# --strict: the first bad line is fatal, the lines before it are committed
"$T" -o "$d/s3" --manifest "$m" --build-vocab --strict --json > "$d/out" 2> "$d/err"
expect_rc $? 1 "--strict"
expect_err "(--strict)"
grep -q '"processed":2,' "$d/out" || fail "strict json: $(cat "$d/out")"

# unknown symbols: unk by default, a failed line under --strict
printf '<pad>\n<unk>\na\nb\n \n' > "$d/v.txt"
printf 'u1|ab ba\nu2|abc\n' > "$d/u.csv"
"$T" -o "$d/s4" --manifest "$d/u.csv" --vocab "$d/v.txt" --json > "$d/out" 2> "$d/err"
expect_rc $? 0 "unk"
grep -q '"unknown":1' "$d/out" || fail "unk json: $(cat "$d/out")"
"$T" -o "$d/s5" --manifest "$d/u.csv" --vocab "$d/v.txt" --strict > /dev/null 2> "$d/err"
expect_rc $? 1 "unknown under --strict"
expect_err "$d/u.csv:2: symbol 'c' (U+0063) is not in the vocab"
# a control character is named by its number: no escape sequence reaches the terminal
printf 'u1|ab\033[31mba\n' > "$d/esc.csv"
"$T" -o "$d/s5esc" --manifest "$d/esc.csv" --vocab "$d/v.txt" --strict > /dev/null 2> "$d/err"
expect_rc $? 1 "a control character under --strict"
grep -q "$(printf '\033')" "$d/err" && fail "an escape character on stderr"
expect_err "$d/esc.csv:1: symbol U+001B (a control character) is not in the vocab"
# the same in a bpe tokenizer.json's words
. "$FC_SRC/tests/cli/scaleout.bash" # make_bpe_json
make_bpe_json "$d/tok.json"
printf 'u1|said \033 once\n' > "$d/escb.csv"
"$T" -q -t bpe --tokenizer-json "$d/tok.json" --strict -o "$d/s5bpe" --manifest "$d/escb.csv" 2> "$d/err"
expect_rc $? 1 "a control character under --strict, bpe"
grep -q "$(printf '\033')" "$d/err" && fail "bpe: an escape character on stderr"
expect_err "$d/escb.csv:1: U+001B (a control character) is not in the tokenizer.json's vocab (1 such character)"

# configuration errors: exit 2, nothing stored
printf 'a\nb\n \na\n' > "$d/dup.txt"
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/dup.txt" 2> "$d/err"
expect_rc $? 2 "vocab with duplicates"
expect_err "dup.txt:4: duplicate symbol 'a' (first at line 1)"
# a duplicate symbol holding a control character: named with C escapes, no escape on stderr
printf 'a\n\033[2J\nb\n\033[2J\n' > "$d/dupesc.txt"
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/dupesc.txt" 2> "$d/err"
expect_rc $? 2 "vocab with a duplicate control character"
grep -q "$(printf '\033')" "$d/err" && fail "duplicate symbol: an escape character on stderr"
expect_err 'dupesc.txt:4: duplicate symbol "\033[2J" (first at line 2)'
[ ! -e "$d/s6" ] || fail "a configuration error created the store"
printf 'a\n\nb\n' > "$d/empty.txt"
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/empty.txt" 2> "$d/err"
expect_rc $? 2 "vocab with an empty line"
expect_err "empty.txt:2: empty line"
# a byte-order mark at the start of a later line (a file saved with one, joined after line 1:
# cat a.txt b.txt) was taken as part of that line's symbol, which no text then matched (its
# letter went to <unk>, or failed the line, silently): refused, naming the line; the file's own
# BOM (line 1) is read past, and a line of U+FEFF alone is that symbol (a built vocab's)
printf '\xEF\xBB\xBF<pad>\n<unk>\n<bos>\n<eos>\n \na\n\xEF\xBB\xBF\nb\n' > "$d/bom1.txt"
"$T" -o "$d/sb1" --manifest "$m" --vocab "$d/bom1.txt" > "$d/out" 2> "$d/err"
expect_rc $? 1 "a vocab with a byte-order mark at its start (some lines fail as bad input)"
grep -q "bom1.txt" "$d/err" && fail "a vocab with a byte-order mark at its start: refused"
printf '<pad>\n<unk>\n<bos>\n<eos>\n \na\n\xEF\xBB\xBFb\n' > "$d/bom7.txt"
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/bom7.txt" 2> "$d/err"
expect_rc $? 2 "a vocab with a byte-order mark on line 7"
expect_err "tokenize: $d/bom7.txt:7: begins with a byte-order mark (EF BB BF) before its symbol 'b' (a file saved with one, joined to the vocab after its first line?): remove it: sed -i 's/^\xEF\xBB\xBF//' FILE"
[ ! -e "$d/s6" ] || fail "a vocab with a byte-order mark on line 7: the store was made"
# a vocab saved as UTF-16 or UTF-32 (with or without a byte-order mark): said as such, with the
# iconv that converts it ('1: invalid UTF-8' before, which the file's editor showed as fine)
printf 'a\nb\n' | iconv -f UTF-8 -t UTF-16 > "$d/v16.txt"
printf 'a\nb\n' | iconv -f UTF-8 -t UTF-32 > "$d/v32.txt"
printf 'a\nb\n' | iconv -f UTF-8 -t UTF-16LE > "$d/v16le.txt"
for v in v16 v32 v16le; do
  "$T" -o "$d/s6" --manifest "$m" --vocab "$d/$v.txt" 2> "$d/err"
  expect_rc $? 2 "a vocab in $v"
done
expect_err "v16le.txt:1: a NUL byte: UTF-16 or UTF-32 text without a byte-order mark? A vocab is UTF-8: convert it with iconv -f UTF-16LE (or UTF-16BE, UTF-32LE, UTF-32BE) -t UTF-8"
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/v16.txt" 2> "$d/err"
expect_err "v16.txt:1: UTF-16 text (its byte-order mark FF FE), not UTF-8: convert it with iconv -f UTF-16 -t UTF-8"
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/v32.txt" 2> "$d/err"
expect_err "v32.txt:1: UTF-32 text (its byte-order mark FF FE 00 00), not UTF-8: convert it with iconv -f UTF-32 -t UTF-8"
# and a tokenizer.json so saved (jansson said '1:0: unable to decode byte 0xff')
printf '{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}' | iconv -f UTF-8 -t UTF-16 > "$d/tok16.json"
printf '{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}' | iconv -f UTF-8 -t UTF-16LE > "$d/tok16le.json"
"$T" -o "$d/s6" --manifest "$m" -t bpe --tokenizer-json "$d/tok16.json" 2> "$d/err"
expect_rc $? 2 "a tokenizer.json in UTF-16"
expect_err "tok16.json: UTF-16 text (its byte-order mark FF FE), not UTF-8: convert it with iconv -f UTF-16 -t UTF-8"
"$T" -o "$d/s6" --manifest "$m" -t bpe --tokenizer-json "$d/tok16le.json" 2> "$d/err"
expect_rc $? 2 "a tokenizer.json in UTF-16LE"
expect_err "tok16le.json: a NUL byte: UTF-16 or UTF-32 text without a byte-order mark? A tokenizer.json is UTF-8"
# a tokenizer.json in UTF-8 with a byte-order mark (Notepad, PowerShell 5's Out-File), which JSON
# does not allow and Hugging Face tokenizers refuses: said, with the fix (jansson's "1:1: '[' or
# '{' expected near '<the invisible mark>'" before); nothing stored
printf '\xEF\xBB\xBF{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}' > "$d/tokbom.json"
"$T" -o "$d/s6" --manifest "$m" -t bpe --tokenizer-json "$d/tokbom.json" 2> "$d/err"
expect_rc $? 2 "a tokenizer.json with a UTF-8 byte-order mark"
expect_err "tokbom.json: UTF-8 with a byte-order mark (EF BB BF), which JSON does not allow (Hugging Face tokenizers refuses it too): remove it: sed -i '1s/^\xEF\xBB\xBF//' FILE"
[ -e "$d/s6" ] && fail "a tokenizer.json with a byte-order mark: the store was made"
"$T" -o "$d/s6" --manifest "$m" --vocab "" 2> "$d/err"
expect_rc $? 2 "an empty --vocab"
expect_err "tokenize: --vocab '' names no file (an empty path: an unset variable?)"
"$T" -o "$d/s6" --manifest "" --build-vocab 2> "$d/err"
expect_rc $? 2 "an empty --manifest"
expect_err "tokenize: --manifest '' names no file (an empty path: an unset variable?)"
"$T" -o "$d/s6" --build-vocab "" 2> "$d/err"
expect_rc $? 2 "an empty manifest argument"
expect_err "tokenize: '' names no manifest (an empty path: an unset variable?)"
"$T" -o "$d/s6" --manifest "$m" --build-vocab --export-vocab "$d/no/v.txt" 2> "$d/err"
expect_rc $? 2 "--export-vocab into a missing folder"
expect_err "tokenize: --export-vocab $d/no/v.txt: cannot be written there: No such file or directory"
[ ! -e "$d/s6" ] || fail "--export-vocab into a missing folder: the store was made (the run went ahead)"
# a directory as the FILE: refused before the run too (it used to tokenize everything, then fail
# the export with 'Is a directory', exit 1)
mkdir -p "$d/vdir"
"$T" -o "$d/s6" --manifest "$m" --build-vocab --export-vocab "$d/vdir" 2> "$d/err"
expect_rc $? 2 "--export-vocab a directory"
expect_err "tokenize: --export-vocab $d/vdir: cannot be written there: Is a directory"
[ ! -e "$d/s6" ] || fail "--export-vocab a directory: the store was made (the run went ahead)"
# a directory as --vocab or --tokenizer-json: said so (it was 'Input/output error')
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/vdir" 2> "$d/err"
expect_rc $? 2 "--vocab a directory"
expect_err "tokenize: $d/vdir: Is a directory"
"$T" -o "$d/s6" --manifest "$m" -t bpe --tokenizer-json "$d/vdir" 2> "$d/err"
expect_rc $? 2 "--tokenizer-json a directory"
expect_err "tokenize: $d/vdir: Is a directory"
[ ! -e "$d/s6" ] || fail "a directory as --vocab: the store was made"
"$T" -o "" --manifest "$m" --build-vocab 2> "$d/err"
expect_rc $? 2 "an empty -o"
expect_err "tokenize: -o '' names no store (an empty path: an unset variable?)"
"$T" -o "$d/s6" --manifest "$m" 2> "$d/err"
expect_rc $? 2 "chars without a vocab"
"$T" -o "$d/s6" --manifest "$m" --vocab "$d/v.txt" --tokenizer words 2> "$d/err"
expect_rc $? 2 "unknown tokenizer"
expect_err "Try 'tokenize --help'"
"$T" -o "$d/s6" --manifest "$d/missing.csv" --build-vocab 2> "$d/err"
expect_rc $? 2 "missing manifest"
"$T" -o "$d/s6" --manifest "$m" --build-vocab --threads 2x 2> "$d/err"
expect_rc $? 2 "bad number"
"$T" -o "$d/s6" -t bpe --tokenizer-json "$d/v.txt" --manifest "$m" 2> "$d/err"
expect_rc $? 2 "corrupt tokenizer.json"
expect_err "v.txt: "
# a tokenizer.json whose strings hold a control character (a type, a vocab key in a merge): named
# with octal escapes, no escape sequence on stderr
printf '{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"normalizer":{"type":"X\\u001b[2J"}}' > "$d/escn.json"
printf '{"model":{"type":"BPE","vocab":{"a":0,"b\\u001b[2J":1},"merges":["a b\\u001b[2J"]}}' > "$d/escm.json"
for c in 'escn|normalizer X\033[2J is not supported' 'escm|merge 0: "ab\033[2J" is not in the vocab'; do
  "$T" -o "$d/s6" -t bpe --tokenizer-json "$d/${c%%|*}.json" --manifest "$m" 2> "$d/err"
  expect_rc $? 2 "tokenizer.json ${c%%|*}"
  grep -q "$(printf '\033')" "$d/err" && fail "tokenizer.json ${c%%|*}: an escape character on stderr"
  expect_err "${c%%|*}.json: ${c#*|}"
done

# help and version
"$T" --help > "$d/help" || fail "--help exit"
for o in --tokenizer --vocab --build-vocab --export-vocab --tokenizer-json --lang --strict --json -q; do
  grep -qF -- "$o" "$d/help" || fail "--help lacks $o"
done
head -1 "$d/help" | grep -q '^Usage: tokenize' || fail "usage line"

# a non-empty directory that is not a store (the corpus folder given as -o): refused, nothing
# written; --force-new-store creates the store there
mkdir -p "$d/corpus" && printf 'a|Hello.\n' > "$d/corpus/metadata.csv"
"$T" -o "$d/corpus" --build-vocab "$d/corpus/metadata.csv" > /dev/null 2> "$d/err"
expect_rc $? 2 "non-empty directory"
grep -qx "tokenize: $d/corpus: not a featcache store, and not empty (1 entry, e.g. metadata.csv): a new store goes into a new or empty directory; --force-new-store creates it here" "$d/err" ||
  fail "non-empty directory: $(cat "$d/err")"
[ ! -e "$d/corpus/data.mdb" ] || fail "a store was made in the corpus folder"
"$T" -q --force-new-store -o "$d/corpus" --build-vocab "$d/corpus/metadata.csv" 2> "$d/err" ||
  fail "--force-new-store: $(cat "$d/err")"
[ -e "$d/corpus/data.mdb" ] || fail "--force-new-store made no store"
"$T" --version | grep -q '^tokenize (featcache)' || fail "--version"

# option errors name the tool and what is wrong (getopt's own named the tool by its path), exit 2
try="Try 'tokenize --help' for more information."
for c in "--bogus|tokenize: unknown option '--bogus'" "-Z|tokenize: unknown option '-Z'" \
  "-o|tokenize: option '-o' needs a value" "--batch|tokenize: option '--batch' needs a value" \
  "--json=1|tokenize: option '--json' takes no value" \
  "--man|tokenize: option '--man' is ambiguous (--manifest, --manifest-format)"; do
  "$T" --build-vocab "$m" "${c%%|*}" > "$d/out" 2> "$d/err"
  expect_rc $? 2 "option error ${c%%|*}"
  [ "$(cat "$d/err")" = "${c#*|}
$try" ] || fail "option error ${c%%|*}: want '${c#*|}'"
done
# an option of another tokenizer (-t forgotten): a usage error, not a chars store without it
make_bpe_json "$d/tokopt.json"
for c in "--lang de|--lang is the espeak-ng voice of -t phonemes, and the tokenizer is chars (add -t phonemes)" \
  "--tokenizer-json $d/tokopt.json|--tokenizer-json is the tokenizer of -t bpe, and the tokenizer is chars (add -t bpe)" \
  "-t phonemes --tokenizer-json $d/tokopt.json|--tokenizer-json is the tokenizer of -t bpe, and the tokenizer is phonemes (add -t bpe)" \
  "-t bpe --tokenizer-json $d/tokopt.json --lang de|--lang is the espeak-ng voice of -t phonemes, and the tokenizer is bpe (add -t phonemes)"; do
  # shellcheck disable=SC2086 # the options, split on purpose
  "$T" -o "$d/sopt" --build-vocab "$m" ${c%%|*} > "$d/out" 2> "$d/err"
  expect_rc $? 2 "${c%%|*} for another tokenizer"
  [ "$(cat "$d/err")" = "tokenize: ${c#*|}
$try" ] || fail "${c%%|*}: want '${c#*|}', got '$(cat "$d/err")'"
  [ ! -e "$d/sopt" ] || fail "${c%%|*}: a store was made"
done
# bpe's ids and special tokens are the tokenizer.json's: a vocab, --add-bos or a special symbol
# (--unk [UNK] was ignored, exit 0) is a configuration error, nothing written
for o in "--build-vocab" "--add-eos" "--unk [UNK]" "--pad <p>" "--bos <s>" "--eos </s>"; do
  # shellcheck disable=SC2086 # the options, split on purpose
  "$T" -o "$d/sbo" -t bpe --tokenizer-json "$d/tokopt.json" $o "$m" > "$d/out" 2> "$d/err"
  expect_rc $? 2 "-t bpe $o"
  expect_err "tokenize: bpe takes --tokenizer-json FILE and neither a vocab, --add-bos/--add-eos nor --pad/--unk/--bos/--eos (its special tokens are the tokenizer.json's)"
  [ ! -e "$d/sbo" ] || fail "-t bpe $o: a store was made"
done
# --text-column picks an LJSpeech column: with a TSV (whose text is the rest of the line, tabs
# and all) or JSON lines manifest it was ignored, and a TSV's 'id<TAB>raw<TAB>normalized' stored
# both columns; now a usage error, nothing written
printf 'a\tRaw one\tNorm one\n' > "$d/three.tsv"
printf '{"id":"a","text":"x"}\n' > "$d/tc.jsonl"
for c in "three.tsv|tsv|" "three.tsv|tsv|--manifest-format tsv" "tc.jsonl|JSON lines|"; do
  IFS='|' read -r f k extra <<< "$c"
  # shellcheck disable=SC2086 # the options, split on purpose
  "$T" -o "$d/stc" --build-vocab --text-column 3 $extra "$d/$f" > "$d/out" 2> "$d/err"
  expect_rc $? 2 "--text-column with $f $extra"
  expect_err "tokenize: --text-column picks a column of an LJSpeech manifest (id|raw|normalized), and $d/$f reads as $k"
  [ ! -e "$d/stc" ] || fail "--text-column with $f: a store was made"
done
# stdout that cannot be written: the --json summary (or --help) lost is exit 1 with the reason
if [ -w /dev/full ]; then
  "$T" -q --json -o "$d/sf" --build-vocab "$d/corpus/metadata.csv" > /dev/full 2> "$d/err"
  expect_rc $? 1 "--json into a full disk"
  expect_err "tokenize: stdout: cannot write: No space left on device"
  "$T" --help > /dev/full 2> "$d/err"
  expect_rc $? 1 "--help into a full disk"
fi

# a manifest that reads as a wav.scp or a list of paths (a Kaldi text file: id, space, words)
# holds no transcripts: every line would fail alike, so it is refused whole, saying what to give
# (it was exit 1 with "no text" for each line); --manifest-format tsv reads it as asked; stdin too
tl="holds no transcripts: it reads as a list of audio paths; tokenize reads LJSpeech (id|text), TSV (id<TAB>text) and JSON lines with \"text\" (--manifest-format ljspeech, tsv, jsonl); a Kaldi text file (an id, a space, the words) is TSV after sed 's/ /\\t/'"
printf 'LJ001-0001 printing in the only sense\nLJ001-0002 in being comparatively modern\n' > "$d/text"
"$T" -o "$d/s8" --build-vocab "$d/text" > "$d/out" 2> "$d/err"
expect_rc $? 2 "a Kaldi text file"
[ "$(cat "$d/err")" = "tokenize: $d/text: $tl" ] || fail "a Kaldi text file: $(cat "$d/err")"
[ -e "$d/s8" ] && fail "a Kaldi text file: a store was made"
"$T" -o "$d/s8" --build-vocab - < "$d/text" > "$d/out" 2> "$d/err"
expect_rc $? 2 "a Kaldi text file on stdin"
[ "$(cat "$d/err")" = "tokenize: (stdin): $tl" ] || fail "stdin: $(cat "$d/err")"
# a JSON array (json.dump of a list) through a pipe or on stdin, no .json name to tell it: refused
# as a file of it is, with the jq that converts it (it was "holds no transcripts: it reads as a
# list of audio paths"); an array spread over lines too
printf '[{"id": "a", "text": "hi"}]\n' > "$d/arr.json"
ja="a JSON array, not JSON lines (one object a line, as NeMo's manifests): convert it: jq -c '.[]' FILE >NEW.jsonl"
"$T" -o "$d/s8" --build-vocab --manifest <(cat "$d/arr.json") > "$d/out" 2> "$d/err"
expect_rc $? 2 "a JSON array through a pipe"
[ "$(sed 's|^tokenize: /dev/fd/[0-9]*: |tokenize: PIPE: |' "$d/err")" = "tokenize: PIPE: $ja" ] || fail "a JSON array through a pipe: $(cat "$d/err")"
printf '[\n  {"id": "a", "text": "hi"}\n]\n' | "$T" -o "$d/s8" --build-vocab - > "$d/out" 2> "$d/err"
expect_rc $? 2 "a JSON array on stdin"
[ "$(cat "$d/err")" = "tokenize: (stdin): $ja" ] || fail "a JSON array on stdin: $(cat "$d/err")"
[ -e "$d/s8" ] && fail "a JSON array: a store was made"
# stdin is "(stdin)" in every message, as featurize names it (some said "-": "tokenize: -: ...")
printf 'a|ab\n' | "$T" -o "$d/s9" --build-vocab --pad a --shard 0/2 - > "$d/out" 2> "$d/err"
expect_rc $? 2 "--pad a, --shard, stdin"
grep -q "^tokenize: (stdin): --pad 'a' is also a symbol of the text" "$d/err" ||
  fail "--pad a, --shard, stdin: $(cat "$d/err")"
printf 'a\tb\n' | "$T" -o "$d/s9" --build-vocab --text-column 3 - > "$d/out" 2> "$d/err"
expect_rc $? 2 "--text-column, tsv on stdin"
grep -qF "tokenize: --text-column picks a column of an LJSpeech manifest (id|raw|normalized), and (stdin) reads as tsv" "$d/err" ||
  fail "--text-column, tsv on stdin: $(cat "$d/err")"
# a pipe (read whole, once, before the run) is refused up front as well, nothing made
"$T" -o "$d/s8" --build-vocab --manifest <(cat "$d/text") > "$d/out" 2> "$d/err"
expect_rc $? 2 "a Kaldi text file through a pipe"
[ "$(sed 's|^tokenize: /dev/fd/[0-9]*: |tokenize: PIPE: |' "$d/err")" = "tokenize: PIPE: $tl" ] || fail "a pipe: $(cat "$d/err")"
[ -e "$d/s8" ] && fail "a Kaldi text file through a pipe: a store was made"
printf 'LJ001-0001 wavs/LJ001-0001.wav\n' > "$d/wav.scp"
"$T" -o "$d/s8" --build-vocab "$d/wav.scp" > "$d/out" 2> "$d/err"
expect_rc $? 2 "a wav.scp"
expect_err "tokenize: $d/wav.scp: holds no transcripts: it reads as a Kaldi wav.scp (id path); "
"$T" -o "$d/s8" --build-vocab --manifest-format tsv "$d/text" > "$d/out" 2> "$d/err"
expect_rc $? 1 "--manifest-format tsv"
expect_err "tokenize: $d/text:1: missing text column (expected id<TAB>text)"

# a manifest saved as UTF-16 (a spreadsheet's "Unicode text"), or an audio file given as the
# manifest: NUL bytes in its first line, every line would fail alike (exit 1, a store of failure
# records); refused whole before the store is made, UTF-16 said with the iconv that converts it
printf 'LJ001|Good one.\nLJ005|Second.\n' | iconv -f UTF-8 -t UTF-16 > "$d/m16.csv"
"$T" -o "$d/s9" --build-vocab "$d/m16.csv" > "$d/out" 2> "$d/err"
expect_rc $? 2 "a UTF-16 manifest"
[ "$(cat "$d/err")" = "tokenize: $d/m16.csv: not a manifest in UTF-8: UTF-16 text (its byte-order mark FF FE); convert it: iconv -f UTF-16 -t UTF-8 $d/m16.csv >NEW" ] ||
  fail "a UTF-16 manifest: $(cat "$d/err")"
[ -e "$d/s9" ] && fail "a UTF-16 manifest: a store was made"
# UTF-32 (its mark FF FE 00 00 begins with UTF-16's), and UTF-16 or UTF-32 saved without a mark:
# each said with the iconv that converts it (UTF-32 was said to be UTF-16, and its iconv gave a
# file of NULs; a file without a mark was 'an audio file?')
for enc in UTF-32 UTF-16LE UTF-16BE UTF-32LE UTF-32BE; do
  printf 'LJ001|Good one.\nLJ005|Second.\n' | iconv -f UTF-8 -t "$enc" > "$d/m-$enc.csv"
  mark="no byte-order mark"
  [ "$enc" = UTF-32 ] && mark="its byte-order mark $(od -An -tx1 -N4 "$d/m-$enc.csv" | tr a-f A-F | sed 's/^ //')"
  "$T" -o "$d/s9" --build-vocab "$d/m-$enc.csv" > "$d/out" 2> "$d/err"
  expect_rc $? 2 "a $enc manifest"
  [ "$(cat "$d/err")" = "tokenize: $d/m-$enc.csv: not a manifest in UTF-8: $enc text ($mark); convert it: iconv -f $enc -t UTF-8 $d/m-$enc.csv >NEW" ] ||
    fail "a $enc manifest: $(cat "$d/err")"
  iconv -f "$enc" -t UTF-8 "$d/m-$enc.csv" | cmp -s - <(printf 'LJ001|Good one.\nLJ005|Second.\n') ||
    fail "a $enc manifest: the iconv said does not convert it"
  [ -e "$d/s9" ] && fail "a $enc manifest: a store was made"
done
printf 'RIFF\044\0\0\0WAVEfmt \020\0\0\0' > "$d/a.wav"
for src in "$d/a.wav" -; do
  "$T" -o "$d/s9" --build-vocab --manifest "$src" < "$d/a.wav" > "$d/out" 2> "$d/err"
  expect_rc $? 2 "an audio file as the manifest ($src)"
  name=$([ "$src" = - ] && echo "(stdin)" || echo "$src")
  [ "$(cat "$d/err")" = "tokenize: $name: not a manifest: its first line holds a NUL byte (an audio file? tokenize reads transcripts: LJSpeech, TSV or JSON lines)" ] ||
    fail "an audio file as the manifest ($src): $(cat "$d/err")"
  [ -e "$d/s9" ] && fail "an audio file as the manifest ($src): a store was made"
done

# SIGTERM: exit 143, committed batches kept, a rerun resumes. The store holds a line already, so
# the job commits batch by batch (into an empty store it would be a bulk load, committed at the end)
for i in $(seq 1 20000); do printf 'x%d|Sentence number %d is spoken, then another one follows.\n' "$i" "$i"; done > "$d/long.csv"
printf '<pad>\n<unk>\n \n' > "$d/pv.txt"
printf 'x0|Before the rest.\n' > "$d/first.csv"
"$T" -o "$d/s7" --manifest "$d/first.csv" -t phonemes --vocab "$d/pv.txt" -q || fail "first line"
"$T" -o "$d/s7" --manifest "$d/long.csv" -t phonemes --vocab "$d/pv.txt" --batch 20 -j 1 -q --json > "$d/out" 2> "$d/err" &
pid=$!
# signal it once a batch is committed (polled: a fixed sleep is too short on a loaded machine)
for _ in $(seq 1 100); do
  n=$(mdb_stat -s tok "$d/s7" 2>/dev/null | sed -n 's/^ *Entries: //p')
  [ "${n:-0}" -gt 1 ] && break
  sleep 0.1
done
kill -TERM $pid
wait $pid
expect_rc $? 143 "SIGTERM"
n=$(grep -o '"processed":[0-9]*' "$d/out" | cut -d: -f2)
[ "${n:-0}" -gt 0 ] && [ "$n" -lt 20000 ] || fail "processed before SIGTERM: ${n:-none}"
head -$((n)) "$d/long.csv" > "$d/head.csv"
"$T" -o "$d/s7" --manifest "$d/head.csv" -t phonemes --vocab "$d/pv.txt" --json > "$d/out" 2> "$d/err"
grep -q "\"processed\":0,\"skipped_existing\":$n," "$d/out" || fail "resume: $(cat "$d/out")"
printf 'a\t\xf0\xa0\x80\x80\xf0\xa0\x80\x81\n' > "$d/cjk.tsv"
# neither a vocab nor --build-vocab: said in the options' names (the library names its fields)
"$T" -o "$d/s10" "$d/cjk.tsv" 2> "$d/err"
expect_rc $? 2 "no vocab"
expect_err "tokenize: chars takes exactly one of --vocab FILE and --build-vocab"
# an empty special (--pad "$PAD", PAD unset) is said as such; one holding a CR, which no vocab line
# can hold, cannot be one line (it was taken, and found in no vocab)
"$T" -o "$d/s10" --build-vocab --pad '' "$d/cjk.tsv" 2> "$d/err"
expect_rc $? 2 "--pad ''"
expect_err "tokenize: the pad symbol is empty (--pad '': an unset variable?)"
"$T" -o "$d/s10" --build-vocab --eos $'<eos>\r' "$d/cjk.tsv" 2> "$d/err"
expect_rc $? 2 "--eos with a CR"
expect_err "tokenize: the eos symbol must be one line of UTF-8"
# --dtype too narrow for the vocab: exit 2, the message names the dtypes that hold it (i16 said
# 'use i32' of a vocab that u16 holds)
"${FC_PYTHON:-python3}" -c 'print("\n".join(["<pad>", "<unk>"] + [chr(0x20000 + i) for i in range(40000)]))' > "$d/v40k.txt"
"$T" -o "$d/s10" --vocab "$d/v40k.txt" --dtype i16 "$d/cjk.tsv" > "$d/out" 2> "$d/err"
expect_rc $? 2 "--dtype i16 of 40002 ids"
[ "$(cat "$d/err")" = "tokenize: dtype i16 cannot hold 40002 ids (use u16 or i32)" ] ||
  fail "--dtype i16 of 40002 ids: $(cat "$d/err")"
"$T" -o "$d/s10" --vocab "$d/v40k.txt" --dtype u16 "$d/cjk.tsv" --json > "$d/out" 2> "$d/err" ||
  fail "--dtype u16 of 40002 ids: exit $?"
grep -q '"processed":1,' "$d/out" || fail "--dtype u16 of 40002 ids: $(cat "$d/out")"
# a special symbol that is also one of the text's (--pad a over "banana."): every 'a' of the text
# became <unk>, exit 0, with only "3 unknown symbols mapped to unk" said. Refused now, exit 2,
# before a line is stored; the same with --shard (its vocab is built first) and a split store
printf 'b1|banana.|banana.\n' > "$d/b.csv"
for how in "" "--shard 0/1" "--writers 2"; do
  rm -rf "$d/sp"
  if [ "$how" = "--writers 2" ]; then "$FC_BIN/featurize" -q --writers 2 -o "$d/sp" - </dev/null || fail "split store"; how=; fi
  # shellcheck disable=SC2086 # the option or nothing
  "$T" -o "$d/sp" --manifest "$d/b.csv" --build-vocab --pad a $how > "$d/out" 2> "$d/err"
  expect_rc $? 2 "--pad a ${how:-(plain)}"
  [ "$(cat "$d/err")" = "tokenize: $d/b.csv: --pad 'a' is also a symbol of the text: each of its occurrences would become <unk>; nothing stored (choose a symbol the text does not hold, or leave the option out)" ] ||
    fail "--pad a ${how:-(plain)}: stderr"
  [ ! -e "$d/sp/data.mdb" ] || "$FC_PYTHON" -c 'import lmdb, sys
e = lmdb.open(sys.argv[1], max_dbs=200, readonly=True, lock=False)
with e.begin() as t:
    for n in (b"text", b"tok"):
        d = e.open_db(n, txn=t, create=False) if t.get(n) is not None else None
        assert d is None or t.stat(d)["entries"] == 0, n' "$d/sp" || fail "--pad a: something stored"
done
"$T" -o "$d/sp2" --manifest "$d/b.csv" --build-vocab --pad a --eos n > "$d/out" 2> "$d/err"
expect_rc $? 2 "--pad a --eos n"
expect_err "tokenize: $d/b.csv: one of --pad 'a', --eos 'n' is also a symbol of the text"
"$T" -o "$d/sp3" --manifest "$d/b.csv" --build-vocab --pad '<p>' > "$d/out" 2> "$d/err" ||
  fail "--pad '<p>' (no collision): exit $?"
echo "ok: tokenize bad inputs, config errors, --strict, help, SIGTERM"
