#!/usr/bin/env bash
# A mistyped option (a letter swapped or left out, '_' for '-', one dash for two) was said only
# "unknown option '--dryrun'"; every tool now names the option it most likely meant, the one its
# page gives as the example (exit 2, nothing done). A word near no option (--bogus) is said as
# before, and featurize's reference names (--hop-length) keep their own hint.
# -o=cache (argparse's and click's spelling of -o cache) gave getopt's -o the value '=cache': the
# store was made as '=cache', exit 0, and the next step looked for 'cache'. Now a usage error
# saying so; ./=cache still names such a store.
# -json where -j takes a number read as -j son: "invalid value 'son' for --jobs" alone; now the
# message says how it was read and what was meant (-batch, -workers likewise).
set -u
B=${FC_BIN:?}
S=${FC_SRC:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
# typo TOOL WANT ARGS...: exit 2, the first line of stderr WANT, nothing on stdout
typo() {
  local tool=$1 want=$2
  shift 2
  "$B/$tool" "$@" >out 2>err
  local rc=$?
  [ $rc = 2 ] || { echo "FAIL $tool $*: exit $rc, want 2"; fail=1; }
  [ "$(head -1 err)" = "$tool: $want" ] || { echo "FAIL $tool $*: got: $(head -1 err)"; echo "want: $tool: $want"; fail=1; }
  [ "$(sed -n 2p err)" = "Try '$tool --help' for more information." ] || { echo "FAIL $tool $*: no --help hint"; fail=1; }
  [ -s out ] && { echo "FAIL $tool $*: stdout: $(cat out)"; fail=1; }
}
# the example each page gives: it is what the tool says
page() { # TOOL TYPO RIGHT
  local line="$1: unknown option '$2': did you mean '$3'?"
  grep -qF -- "$line" "$S/docs/$1.md" || { echo "FAIL docs/$1.md lacks: $line"; fail=1; }
  typo "$1" "unknown option '$2': did you mean '$3'?" "$2" st
}
page cache-bench --jsn --json
page cache-config --nocount --no-count
page cache-merge --prefr --prefer
page cache-prune --dryrun --dry-run
page cache-verify --max_errors --max-errors
page loader-bench --stpes --steps
page featurize --jsno --json
page tokenize --bulid-vocab --build-vocab
typo cache-verify "unknown option '--max_errors=3': did you mean '--max-errors'?" --max_errors=3 st
typo cache-verify "unknown option '--JSON': did you mean '--json'?" --JSON st
typo cache-prune "unknown option '-d' in '-dry-run': did you mean '--dry-run'?" -dry-run st
typo cache-config "unknown option '-u' in '-quiet': did you mean '--quiet'?" -quiet st
typo cache-config "unknown option '-u' in '-quiet': did you mean '--quiet'?" st -quiet
typo cache-merge "unknown option '--bogus'" --bogus -o x st
typo cache-config "unknown option '--nope'" --nope st
typo cache-verify "unknown option '-Z'" -Z st
typo cache-verify "unknown option '-Z'" -qZ st
typo featurize "unknown option '--hop-length': featurize's is --hop" --hop-length 256 -o x a.wav
typo featurize "invalid value 'son' for --jobs: -json reads as -j son: did you mean '--json'?" -json -o x a.wav
typo tokenize "invalid value 'son' for --threads: -json reads as -j son: did you mean '--json'?" -json -o x m.csv
typo cache-verify "invalid value 'son' for --threads: -json reads as -j son: did you mean '--json'?" -json st
typo loader-bench "invalid value 'atch' for --batch: -batch reads as -b atch: did you mean '--batch'?" -batch 4 st
typo loader-bench "invalid value 'orkers' for --workers: -workers reads as -w orkers: did you mean '--workers'?" -workers 2 st
typo cache-bench "invalid value 'atch' for --batch: -batch reads as -b atch: did you mean '--batch'?" -batch 4 st
typo featurize "invalid value 'abc' for --jobs (want an integer in 1..256)" -j abc -o x a.wav
for tool in featurize tokenize cache-merge; do
  case $tool in
    featurize) args=(--device cpu a.wav) ;;
    tokenize) args=(--build-vocab m.csv) ;;
    cache-merge) args=(st) ;;
  esac
  typo $tool "-o =cache: a store name that begins with '=' (-o=cache gives -o the value '=cache'): write -o cache (or --output=cache), or ./=cache for a store named so" -o=cache "${args[@]}"
  [ -e =cache ] && { echo "FAIL $tool -o=cache made '=cache'"; fail=1; }
done
sox -n -r 22050 -b 16 a.wav synth 0.3 sine 300 || { echo "FAIL: sox failed"; exit 1; }
"$B/featurize" -q --device cpu -o ./=cache a.wav || { echo "FAIL featurize -o ./=cache: exit $?"; fail=1; }
[ -e =cache/data.mdb ] || { echo "FAIL featurize -o ./=cache made no store there"; fail=1; }
exit $fail
