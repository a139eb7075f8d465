#!/usr/bin/env bash
# An output file in a folder this user may not write (a shared results folder, a read-only
# mount): cache-bench --svg, loader-bench --svg and --trace ran every pass or step first, then
# failed to write (exit 1: minutes of benchmark for nothing), and tokenize --export-vocab after the
# store was written. Now each is refused before anything runs, as a folder that is not there is:
# `TOOL: --svg ro/b.svg: cannot be written there: Permission denied`, exit 2, nothing run, no
# store made. The check makes and removes the temporary the write would make: nothing is left
# beside the file, a file already there is kept, and a FIFO (written in place) is not opened by it.
# A write that fails after all (a full disk) names the file and what it is: loader-bench said
# only 'loader-bench: t.json: No space left on device'; now '... cannot write the trace: ...'.
# As root the permissions bind no one: the runs drop the capabilities that let root past them.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
. "$FC_SRC/tests/cli/as_owner.bash"
B=${FC_BIN:?}
T=$(mktemp -d)
trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 4 || exit 1
"$B/featurize" -q --device cpu -o s --manifest c/metadata.csv || exit 1
mkdir ro ok && echo old >ro/b.svg && chmod 555 ro
# refused OPT FILE TOOL ARGS...: TOOL ARGS OPT FILE exits 2 before the run, with the one
# message, nothing on stdout
refused() {
  local opt=$1 file=$2 tool=$3 name="$3 $1"
  shift 3
  "${as_owner[@]}" "$B/$tool" "$@" "$opt" "$file" >out 2>err
  check "$name" 2 $?
  [ "$(cat err)" = "$tool: $opt $file: cannot be written there: Permission denied
Try '$tool --help' for more information." ] || { echo "FAIL $name: stderr:"; cat err; fail=1; }
  [ -s out ] && { echo "FAIL $name: it ran: $(head -3 out)"; fail=1; }
}
refused --svg ro/b.svg cache-bench -q -p sequential -s warm s
refused --dump-order ro/d.txt cache-bench -q -p sequential -s warm s
refused --trace ro/t.json loader-bench -q --steps 2 s
refused --svg ro/l.svg loader-bench -q --steps 2 s
refused --export-vocab ro/v.txt tokenize -q --build-vocab -o t c/metadata.csv
[ -e t ] && { echo "FAIL tokenize made its store before refusing"; fail=1; }
[ "$(cat ro/b.svg)" = old ] || { echo "FAIL ro/b.svg changed"; fail=1; }
[ "$(ls ro)" = b.svg ] || { echo "FAIL left in ro: $(ls ro)"; fail=1; }

# a folder that can be written: the runs write their files, and nothing else is left there
"${as_owner[@]}" "$B/loader-bench" -q --steps 2 --trace ok/t.json --svg ok/l.svg s >out 2>err
check "loader-bench into ok/" 0 $?
"${as_owner[@]}" "$B/tokenize" -q --build-vocab --export-vocab ok/v.txt -o t c/metadata.csv >out 2>err
check "tokenize into ok/" 0 $?
[ "$(ls ok | tr '\n' ' ')" = "l.svg t.json v.txt " ] || { echo "FAIL in ok/: $(ls ok)"; fail=1; }
# a FIFO is written in place: the check does not open it (it would wait for a reader)
mkfifo fifo
cat fifo >fifo.out &
reader=$!
timeout 60 "$B/loader-bench" -q --steps 2 --trace fifo s >out 2>err
check "loader-bench --trace FIFO" 0 $?
wait $reader
grep -q '"traceEvents"' fifo.out || { echo "FAIL the trace did not come through the FIFO"; fail=1; }
# a write that fails after the run (a full disk: /dev/full) says which file it was, exit 1
full() { # WANT TOOL ARGS...
  local want=$1 tool=$2
  shift 2
  "$B/$tool" "$@" >out 2>err
  check "$tool $* (a full disk)" 1 $?
  grep -qxF "$tool: /dev/full: $want: No space left on device" err || { echo "FAIL $tool $*: stderr:"; cat err; fail=1; }
}
full "cannot write the trace" loader-bench -q --steps 2 --trace /dev/full s
full "cannot write the chart" loader-bench -q --steps 2 --svg /dev/full s
full "cannot write the chart" cache-bench -q -p sequential -s warm --svg /dev/full s
full "cannot write the vocab" tokenize -q --build-vocab --export-vocab /dev/full -o t c/metadata.csv
exit $fail
