#!/usr/bin/env bash
# cache-bench: --help from the option table (stdout, exit 0), --version, usage errors (exit 2).
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT

"$bin" --help >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 0 ] || fail "--help exit $rc"
[ -s "$t/err" ] && fail "--help wrote to stderr"
head -1 "$t/out" | grep -qx 'Usage: cache-bench \[options\] STORE\.\.\.' || fail "usage line: $(head -1 "$t/out")"
for opt in --patterns --states --threads --batch --duration --bytes --seed --run --direct \
           --no-hint --nordahead --read-only --separate --step-ms --gpus --no-probe --json --svg --dump-order --progress \
           --quiet --help --version; do
  grep -q -- "$opt" "$t/out" || fail "--help does not list $opt"
done
"$bin" -h | cmp -s - "$t/out" || fail "-h differs from --help"
# what -q silences and what exit 1 also means, as the man page says: --help said "no progress,
# no summary line" (the not-cold warnings went unsaid, and the done line stays after a failed
# pass) and "1 a pass failed" (a report or chart that could not be written is exit 1 too)
tr '\n' ' ' <"$t/out" | tr -s ' ' >"$t/flat"
grep -q -- "-q, --quiet no progress, no warnings about not-cold passes or other devices, no done line (kept when a pass failed) " "$t/flat" ||
  fail "--help -q: $(grep -A1 -- '--quiet' "$t/out")"
grep -q "Exit status: 0 all passes ran; 1 a pass failed, or the report or the chart could not be written; 2 " "$t/flat" ||
  fail "--help exit status: $(grep -A1 'Exit status' "$t/out")"
tail -1 "$t/out" | grep -qx 'Manual: man cache-bench.' || fail "--help does not name the man page: $(tail -1 "$t/out")"

"$bin" --version >"$t/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "--version exit $rc"
grep -qE '^cache-bench \(featcache\) [0-9]+\.[0-9]+\.[0-9]+$' "$t/out" || fail "version: $(cat "$t/out")"

expect_usage() { # expected-first-stderr-line args...
  local want=$1; shift
  "$bin" "$@" >"$t/out" 2>"$t/err"; local rc=$?
  [ $rc -eq 2 ] || fail "$* → exit $rc, want 2"
  [ -s "$t/out" ] && fail "$* wrote to stdout"
  [ "$(head -1 "$t/err")" = "$want" ] || fail "$*: stderr '$(head -1 "$t/err")', want '$want'"
  grep -qx "Try 'cache-bench --help' for more information." "$t/err" || fail "$*: no --help hint"
}
expect_usage "cache-bench: no STORE given"
# an option that changes no pass it runs is refused, not dropped: --direct with warm passes only
# ran them through the map, exit 0, as if O_DIRECT had been measured; --run without locality
expect_usage "cache-bench: --direct applies to cold passes: -s warm runs none (warm passes read through the map)" --direct -s warm x
expect_usage "cache-bench: --run applies to the locality order: the patterns given (-p) do not include it" -p random,sequential --run 4 x
# an output the run could not write is said before the passes run (they take minutes), not after
expect_usage "cache-bench: --svg '' names no file (an empty path: an unset variable?)" --svg "" x
expect_usage "cache-bench: --svg $t/no/such/dir/b.svg: cannot be written there: No such file or directory" --svg "$t/no/such/dir/b.svg" x
expect_usage "cache-bench: --dump-order $t/no/o.txt: cannot be written there: No such file or directory" --dump-order "$t/no/o.txt" x
# one file for both: the dump was renamed over the chart (or the chart over it) after the run, exit
# 0, one of them lost; loader-bench refuses --svg and --trace naming one file the same way
expect_usage "cache-bench: --svg and --dump-order name the same file ($t/b.out)" --svg "$t/b.out" --dump-order "$t/b.out" x
expect_usage "cache-bench: --svg and --dump-order name the same file ($t/./b.out)" --svg "$t/b.out" --dump-order "$t/./b.out" x
touch "$t/c.out" && ln -s c.out "$t/c.link"
expect_usage "cache-bench: --svg and --dump-order name the same file ($t/c.link)" --svg "$t/c.out" --dump-order "$t/c.link" x
# a file of the STORE benched: the chart was renamed over its data.mdb after the run, exit 0, the
# store lost (cache-verify: not an LMDB environment)
mkdir "$t/st" && echo "not touched" >"$t/st/data.mdb"
expect_usage "cache-bench: --svg $t/st/data.mdb: the data.mdb of the store $t/st: written after the run, it would replace it; give another file" --svg "$t/st/data.mdb" "$t/st"
ln -s st/data.mdb "$t/link"
expect_usage "cache-bench: --dump-order $t/link: the data.mdb of the store $t/st: written after the run, it would replace it; give another file" --dump-order "$t/link" "$t/st"
expect_usage "cache-bench: --svg $t/st/lock.mdb: the lock.mdb of the store $t/st: written after the run, it would replace it; give another file" --svg "$t/st/lock.mdb" "$t/st"
[ "$(cat "$t/st/data.mdb")" = "not touched" ] && [ ! -e "$t/st/lock.mdb" ] || fail "a store file was written"
# '-' wrote a file named '-' (stdout carries the report)
expect_usage "cache-bench: --svg -: '-' would be stdout, which carries the report; give a file name (./- for a file named so)" --svg - x
expect_usage "cache-bench: --dump-order -: '-' would be stdout, which carries the report; give a file name (./- for a file named so)" --dump-order - x
expect_usage "cache-bench: '' names no STORE (an empty path: an unset variable?)" ""
expect_usage "cache-bench: invalid value 'zigzag' for --patterns (want sequential, physical, random, locality or all)" -p zigzag x
expect_usage "cache-bench: invalid value 'hot' for --states (want cold or warm)" -s cold,hot x
expect_usage "cache-bench: invalid value '0' for --threads (want an integer in 1..256)" -t 1,0 x
# an empty item in a list option is refused, not skipped: -t 1,,2 (a typo, or an unset variable in
# -t 1,$T,2) must not run another set of passes than the one asked for
expect_usage "cache-bench: invalid value '1,,2' for --threads (an empty item in the list)" -t 1,,2 x
expect_usage "cache-bench: invalid value ',warm' for --states (an empty item in the list)" -s ,warm x
expect_usage "cache-bench: invalid value 'random,' for --patterns (an empty item in the list)" -p random, x
expect_usage "cache-bench: invalid value '' for --threads (an empty list)" -t '' x
expect_usage "cache-bench: invalid value '32x' for --batch (want an integer in 1..4096)" -b 32x x
expect_usage "cache-bench: invalid value '-1' for --step-ms (want a number in 0.001..1e+07)" --step-ms -1 x
expect_usage "cache-bench: invalid value '1Q' for --bytes (want a size, e.g. 256MiB)" --bytes 1Q x
# option errors say what is wrong as cache-bench: ... (getopt's own named the tool by its path)
expect_usage "cache-bench: unknown option '--bogus'" --bogus x
expect_usage "cache-bench: unknown option '-Z'" -Z x
expect_usage "cache-bench: option '-b' needs a value" x -b
expect_usage "cache-bench: option '--seed' needs a value" x --seed
expect_usage "cache-bench: option '--json' takes no value" --json=1 x
expect_usage "cache-bench: option '--st' is ambiguous (--states, --step-ms)" --st 1 x
# --help / --version into a full disk or a closed stdout: exit 1 with the reason, not 0
if [ -w /dev/full ]; then
  for a in --help --version; do
    "$bin" $a >/dev/full 2>"$t/err"; rc=$?
    [ $rc -eq 1 ] && [ "$(cat "$t/err")" = "cache-bench: stdout: cannot write: No space left on device" ] ||
      fail "$a into a full disk: exit $rc: $(cat "$t/err")"
  done
fi
"$bin" --help >&- 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && [ "$(cat "$t/err")" = "cache-bench: stdout: cannot write: Bad file descriptor" ] ||
  fail "--help, stdout closed: exit $rc: $(cat "$t/err")"
echo ok
