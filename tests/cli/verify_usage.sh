#!/bin/bash
# cache-verify: --help, --version, usage errors (exit 2, nothing done), stores that are not there.
set -u
V="$FC_BIN/cache-verify"
[ -x "$V" ] || { echo "FAIL: $V not built"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
check() { # name want_rc got_rc; stdout/stderr in $T/out $T/err
  if [ "$2" != "$3" ]; then echo "FAIL $1: exit $3, want $2"; cat "$T/out" "$T/err"; fail=1; fi
}
expect_err() { # name exact-stderr
  if [ "$(cat "$T/err")" != "$2" ]; then
    echo "FAIL $1: stderr:"; cat "$T/err"; echo "want:"; echo "$2"; fail=1; fi
}

"$V" --help >"$T/out" 2>"$T/err"; check help 0 $?
[ "$(head -1 "$T/out")" = "Usage: cache-verify [options] STORE..." ] || { echo "FAIL help: first line"; fail=1; }
for o in --expect-preset --expect-config --expect-tokens --manifest --finite --sources --rehash \
         --source-root --threads --max-errors --strict --json --status --quiet --progress --nolock; do
  grep -q -- "$o" "$T/out" || { echo "FAIL help lacks $o"; fail=1; }
done
[ -s "$T/err" ] && { echo "FAIL help wrote to stderr"; fail=1; }
# the exit codes as the page gives them: a report lost on stdout is 1, a reader gone 141
tr '\n' ' ' <"$T/out" | grep -q "1 problems found, or the report could not be written to stdout .*141 the report's reader went away" ||
  { echo "FAIL help: exit status of a lost report, 141"; fail=1; }

"$V" --version >"$T/out" 2>"$T/err"; check version 0 $?
grep -Eq '^cache-verify \(featcache\) [0-9]+\.[0-9]+\.[0-9]+$' "$T/out" || { echo "FAIL version"; cat "$T/out"; fail=1; }

"$V" >"$T/out" 2>"$T/err"; check no-store 2 $?
expect_err no-store "cache-verify: no STORE given
Try 'cache-verify --help' for more information."

"$V" --max-errors 0 s >"$T/out" 2>"$T/err"; check max-errors-0 2 $?
expect_err max-errors-0 "cache-verify: invalid value '0' for --max-errors (want an integer >= 1)
Try 'cache-verify --help' for more information."

"$V" -j 2x s >"$T/out" 2>"$T/err"; check threads-junk 2 $?
expect_err threads-junk "cache-verify: invalid value '2x' for --threads (want an integer in 1..1024)
Try 'cache-verify --help' for more information."

"$V" --expect-config abc s >"$T/out" 2>"$T/err"; check short-digest 2 $?
expect_err short-digest "cache-verify: invalid value 'abc' for --expect-config (want 32 hex chars)
Try 'cache-verify --help' for more information."
# 32 characters that are not hex: the same message (it said "unknown preset", naming the other option)
"$V" --expect-config ZZ91d23124bcd0edbbb0d68da5c3c859 s >"$T/out" 2>"$T/err"; check nonhex-digest 2 $?
expect_err nonhex-digest "cache-verify: invalid value 'ZZ91d23124bcd0edbbb0d68da5c3c859' for --expect-config (want 32 hex chars)
Try 'cache-verify --help' for more information."

"$V" "" >"$T/out" 2>"$T/err"; check empty-store 2 $?
expect_err empty-store "cache-verify: '' names no STORE (an empty path: an unset variable?)
Try 'cache-verify --help' for more information."

"$V" --manifest "" s >"$T/out" 2>"$T/err"; check empty-manifest 2 $?
expect_err empty-manifest "cache-verify: --manifest '' names no file (an empty path: an unset variable?)
Try 'cache-verify --help' for more information."

"$V" --json --status s >"$T/out" 2>"$T/err"; check json-status 2 $?

"$V" --bogus s >"$T/out" 2>"$T/err"; check bogus 2 $?

"$V" "$T/nope" >"$T/out" 2>"$T/err"; check missing-store 2 $?
expect_err missing-store "cache-verify: $T/nope: cannot open the store: No such file or directory
cache-verify: done: 0 of 1 stores clean (1 not checked)"
[ -s "$T/out" ] && { echo "FAIL missing-store wrote to stdout"; fail=1; }

mkdir "$T/empty"
"$V" --status "$T/empty" >"$T/out" 2>"$T/err"; check empty-dir 2 $?
[ -s "$T/out" ] || [ -s "$T/err" ] && { echo "FAIL --status printed something"; fail=1; }

# A folder that is not a store (the corpus's WAV folder given by mistake): said so.
mkdir "$T/wavs" && : >"$T/wavs/a.wav"
"$V" "$T/wavs" >"$T/out" 2>"$T/err"; check not-a-store 2 $?
expect_err not-a-store "cache-verify: $T/wavs: not a featcache store (no data.mdb)
cache-verify: done: 0 of 1 stores clean (1 not checked)"

"$V" --source-root "$T/wavs" "$T/wavs" >"$T/out" 2>"$T/err"; check source-root-alone 2 $?
expect_err source-root-alone "cache-verify: --source-root says where the sources are: give --sources or --rehash
Try 'cache-verify --help' for more information."
"$V" --sources --source-root "$T/nowhere" "$T/wavs" >"$T/out" 2>"$T/err"; check source-root-missing 2 $?
expect_err source-root-missing "cache-verify: --source-root $T/nowhere: not a directory
Try 'cache-verify --help' for more information."

# One store named twice (LMDB: one environment, one open per process): refused before any check.
"$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make "$T/s" --n 3 >/dev/null ||
  { echo "FAIL: the fixture writer (test_verify_store.py make) failed"; exit 1; }
"$V" "$T/s" "$T/./s/" >"$T/out" 2>"$T/err"; check twice 2 $?
expect_err twice "cache-verify: $T/./s/: given twice (also as $T/s)"
[ -s "$T/out" ] && { echo "FAIL twice wrote to stdout"; fail=1; }

# --expect-tokens takes its CONFIG attached: a bare --expect-tokens followed by a word that is no
# path (the CONFIG meant, 'chars') is a usage error saying so, not a store 'chars' that is missing
"$V" --expect-tokens chars "$T/s" >"$T/out" 2>"$T/err"; check expect-tokens-detached 2 $?
expect_err expect-tokens-detached "cache-verify: --expect-tokens takes its CONFIG as --expect-tokens=chars ('chars' is no store)
Try 'cache-verify --help' for more information."
[ -s "$T/out" ] && { echo "FAIL expect-tokens-detached checked a store"; fail=1; }
# the help shows the optional value attached, as it is typed; typed apart, '=chars' is said so
grep -q '^      --expect-tokens\[=CONFIG\] ' <("$V" --help) || { echo "FAIL help: --expect-tokens[=CONFIG]"; fail=1; }
"$V" --expect-tokens =chars "$T/s" >"$T/out" 2>"$T/err"; check expect-tokens-equals-apart 2 $?
expect_err expect-tokens-equals-apart "cache-verify: --expect-tokens takes its CONFIG as --expect-tokens=chars ('=chars' is no store)
Try 'cache-verify --help' for more information."
# ... while a bare --expect-tokens before a STORE that exists is that store
"$V" -q --expect-tokens "$T/s" >"$T/out" 2>"$T/err"; rc=$?
grep -q 'expect-tokens' "$T/err" && { echo "FAIL bare --expect-tokens STORE: $(cat "$T/err")"; fail=1; }
[ $rc = 0 ] || [ $rc = 1 ] || { echo "FAIL bare --expect-tokens STORE: exit $rc"; fail=1; }

# an empty CONFIG (--expect-tokens=$TOK with TOK unset) names no token config: a usage error, not
# a check run and failed (exit 1, "expected token config  is not in the store")
"$V" --expect-tokens= "$T/s" >"$T/out" 2>"$T/err"; check expect-tokens-empty 2 $?
expect_err expect-tokens-empty "cache-verify: --expect-tokens= names no token config (an empty value: an unset variable?); --expect-tokens alone checks every stored one
Try 'cache-verify --help' for more information."
[ -s "$T/out" ] && { echo "FAIL expect-tokens-empty checked a store"; fail=1; }
# an unknown preset (a typo) is told with the presets there are, as featurize tells it: a usage
# error, said once before any store is read (it was said for each store as the store's, and
# --json printed each store's object "ok":false with it as "fatal"), nothing on stdout
unknown="cache-verify: unknown preset 'hifigann' (want one of hifigan, tacotron2, librosa, whisper, kaldi; one stored in another dtype as cache-config lists it, 'kaldi (mq)'; or a 32-hex config digest)
Try 'cache-verify --help' for more information."
"$V" --expect-preset hifigann "$T/s" >"$T/out" 2>"$T/err"; check unknown-preset 2 $?
expect_err unknown-preset "$unknown"
cp -r "$T/s" "$T/s2"
"$V" --json --expect-preset hifigan --expect-preset hifigann "$T/s" "$T/s2" >"$T/out" 2>"$T/err"; check unknown-preset-json 2 $?
expect_err unknown-preset-json "$unknown"
[ -s "$T/out" ] && { echo "FAIL unknown-preset-json: stdout"; cat "$T/out"; fail=1; }
"$V" --expect-preset 'hifigan (f9)' "$T/s" >"$T/out" 2>"$T/err"; check unknown-listed 2 $?
expect_err unknown-listed "${unknown//\'hifigann\'/\'hifigan (f9)\'}"
# a preset's listed name and a digest given to --expect-preset are names: checked against the store
"$V" -q --expect-preset 'kaldi (mq)' "$T/s" >"$T/out" 2>"$T/err"; check listed-name 1 $?
grep -q "config mismatch: expected preset kaldi (mq) " "$T/out" || { echo "FAIL listed-name"; cat "$T/out"; fail=1; }
"$V" -q --expect-preset 0123456789abcdef0123456789abcdef "$T/s" >"$T/out" 2>"$T/err"; check digest-name 1 $?
grep -q "config mismatch: expected mel config 0123456789abcdef0123456789abcdef " "$T/out" || { echo "FAIL digest-name"; cat "$T/out"; fail=1; }

# option errors name the tool and what is wrong (getopt's own named the tool by its path), exit 2
try="Try 'cache-verify --help' for more information."
for c in "--bogus|cache-verify: unknown option '--bogus'" "-Z|cache-verify: unknown option '-Z'" \
  "-j|cache-verify: option '-j' needs a value" "--max-errors|cache-verify: option '--max-errors' needs a value" \
  "--json=1|cache-verify: option '--json' takes no value" \
  "--ex|cache-verify: option '--ex' is ambiguous (--expect-preset, --expect-config, --expect-tokens)"; do
  "$V" "$T/s" "${c%%|*}" >"$T/out" 2>"$T/err"; check "option ${c%%|*}" 2 $?
  expect_err "option ${c%%|*}" "${c#*|}
$try"
done
# stdout that cannot be written (a full disk, closed): the report lost is exit 1 with the reason,
# never a silent 0 (`cache-verify --json s > report.json && train` must not go ahead with no report)
if [ -w /dev/full ]; then
  for a in --help --version; do
    "$V" -q $a "$T/s" >/dev/full 2>"$T/err"; check "$a into a full disk" 1 $?
    expect_err "$a into a full disk" "cache-verify: stdout: cannot write: No space left on device"
  done
  for a in --json --separate; do # -q: exit 1 comes with its done line all the same
    "$V" -q $a "$T/s" >/dev/full 2>"$T/err"; check "$a into a full disk" 1 $?
    expect_err "$a into a full disk" "cache-verify: stdout: cannot write: No space left on device
cache-verify: done: 1 of 1 stores clean; the report not written (stdout)"
  done
  # without -q the done line follows: it must not read as a pass alone ("1 of 1 stores clean")
  "$V" "$T/s" >/dev/full 2>"$T/err"; check "a report into a full disk" 1 $?
  expect_err "a report into a full disk" "cache-verify: stdout: cannot write: No space left on device
cache-verify: done: 1 of 1 stores clean; the report not written (stdout)"
fi
"$V" -q --json "$T/s" >&- 2>"$T/err"; check "--json, stdout closed" 1 $?
expect_err "--json, stdout closed" "cache-verify: stdout: cannot write: Bad file descriptor
cache-verify: done: 1 of 1 stores clean; the report not written (stdout)"

# A manifest that names no utterance: the check asked for cannot be made, no pass over zero ids.
: >"$T/empty.csv"
"$V" --manifest "$T/empty.csv" "$T/s" >"$T/out" 2>"$T/err"; check empty-manifest 2 $?
expect_err empty-manifest "cache-verify: $T/empty.csv: names no utterance (it has no lines)"
printf 'just words\nmore words\n' >"$T/words.csv"
"$V" --manifest "$T/words.csv" --manifest-format ljspeech "$T/s" >"$T/out" 2>"$T/err"; check no-usable-id 2 $?
expect_err no-usable-id "cache-verify: $T/words.csv: names no utterance (2 lines, none with a usable id: missing text column (expected id|text[|normalized]))"
[ -s "$T/out" ] && { echo "FAIL no-usable-id wrote to stdout"; fail=1; }

"$V" --manifest "$T/no-manifest.csv" "$T/empty" >"$T/out" 2>"$T/err"; check no-manifest 2 $?
grep -q "^cache-verify: $T/no-manifest.csv: " "$T/err" || { echo "FAIL no-manifest message"; cat "$T/err"; fail=1; }

exit $fail
