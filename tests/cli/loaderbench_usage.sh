#!/usr/bin/env bash
# loader-bench: --help/--version and usage errors (exit 2, exact stderr, empty stdout).
set -u
LB=${FC_BIN:?}/loader-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
try="Try 'loader-bench --help' for more information."

# check NAME WANT_RC WANT_STDERR -- CMD...   (stdout must be empty)
check() {
  local name=$1 want_rc=$2 want_err=$3
  shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? err
  err=$(cat "$tmp/err")
  if [ "$rc" != "$want_rc" ] || [ "$err" != "$want_err" ] || [ -s "$tmp/out" ]; then
    echo "FAIL $name: exit $rc (want $want_rc)"
    echo "  stderr: $err"
    echo "  want:   $want_err"
    [ -s "$tmp/out" ] && echo "  unexpected stdout: $(cat "$tmp/out")"
    fails=$((fails + 1))
  fi
}

# --help: usage first, every option of the table, exit 0, nothing on stderr
"$LB" --help >"$tmp/help" 2>"$tmp/err"; rc=$?
if [ $rc != 0 ] || [ -s "$tmp/err" ] || [ "$(head -1 "$tmp/help")" != "Usage: loader-bench [options] [--manifest FILE] STORE..." ]; then
  echo "FAIL help: exit $rc"; head -3 "$tmp/help"; fails=$((fails + 1))
fi
for opt in --source --manifest --audio --compare --preset --features --views --pad-value --read-only --partial --batch --workers \
           --prefetch --steps --epochs --warmup --compute-ms --compute-mode --compute-matmul \
           --sweep --json --svg --trace --quiet --progress --help --version --manifest-format \
           --audio-dir --compare-profiles --synthetic-ms --synthetic-items; do
  grep -q -- "$opt" "$tmp/help" || { echo "FAIL help: $opt missing"; fails=$((fails + 1)); }
done
# the option table as fc_cli_help lays it out: an option line ("  -x, --long" or "      --long"),
# a section header ("Data source:") after a blank line, or a continuation of its help at column
# 31; none past 79 (a help string holding its own line breaks printed them raw, with its
# indentation dropped)
sed -n '/^Data source:/,/^Exit status/p' "$tmp/help" | sed '$d' | awk '
  length($0) > 79 { print "FAIL help layout (long): [" $0 "]"; bad = 1; next }
  blank && !/^[A-Z][A-Za-z ]*:$/ { print "FAIL help layout (after a blank line): [" $0 "]"; bad = 1 }
  { blank = ($0 == "") }
  /^  -[a-z], --|^      --|^[A-Z][A-Za-z ]*:$|^$|^                               [^ ]/ { next }
  { print "FAIL help layout: [" $0 "]"; bad = 1 }
  END { exit bad }' || fails=$((fails + 1))
# --manifest-format lists every format it takes (tsv was taken but not listed, in --help and the page)
for f in auto ljspeech kaldi jsonl list tsv; do
  grep -A1 -- '--manifest-format' "$tmp/help" | grep -qw "$f" ||
    { echo "FAIL help: --manifest-format does not list $f"; fails=$((fails + 1)); }
  grep -- '^| `--manifest-format F`' "$FC_SRC/docs/loader-bench.md" | grep -qw "$f" ||
    { echo "FAIL docs/loader-bench.md: --manifest-format does not list $f"; fails=$((fails + 1)); }
done
"$LB" --version >"$tmp/out" 2>&1; rc=$?
[ $rc = 0 ] && grep -q '^loader-bench (featcache) ' "$tmp/out" || { echo "FAIL version"; fails=$((fails + 1)); }

check no-store 2 "loader-bench: missing STORE (the cache source reads one)
$try" -- "$LB"
check empty-store 2 "loader-bench: '' names no STORE (an empty path: an unset variable?)
$try" -- "$LB" ""
check empty-manifest 2 "loader-bench: --manifest '' names no file (an empty path: an unset variable?)
$try" -- "$LB" --source audio --manifest ""
check svg-nowhere 2 "loader-bench: --svg $tmp/no/s.svg: cannot be written there: No such file or directory
$try" -- "$LB" --source synthetic --svg "$tmp/no/s.svg"
# '-' wrote a file named '-' (stdout carries the report)
# one file for both, spelled two ways before it exists: the trace was renamed over the chart
check svg-trace-same 2 "loader-bench: --svg and --trace name the same file ($tmp/./s.out)
$try" -- "$LB" --source synthetic --svg "$tmp/s.out" --trace "$tmp/./s.out"
# a file of the STORE read: the chart (or trace) was renamed over its data.mdb after the run, the
# store lost
mkdir "$tmp/st" && echo "not touched" >"$tmp/st/data.mdb"
check svg-store-file 2 "loader-bench: --svg $tmp/st/data.mdb: the data.mdb of the store $tmp/st: written after the run, it would replace it; give another file
$try" -- "$LB" --svg "$tmp/st/data.mdb" "$tmp/st"
check trace-store-file 2 "loader-bench: --trace $tmp/st/lock.mdb: the lock.mdb of the store $tmp/st: written after the run, it would replace it; give another file
$try" -- "$LB" --trace "$tmp/st/lock.mdb" "$tmp/st"
[ "$(cat "$tmp/st/data.mdb")" = "not touched" ] && [ ! -e "$tmp/st/lock.mdb" ] ||
  { echo "FAIL a store file was written"; fails=$((fails + 1)); }
check svg-dash 2 "loader-bench: --svg -: '-' would be stdout, which carries the report; give a file name (./- for a file named so)
$try" -- "$LB" --source synthetic --svg -
check trace-dash 2 "loader-bench: --trace -: '-' would be stdout, which carries the report; give a file name (./- for a file named so)
$try" -- "$LB" --source synthetic --trace -
check trace-empty 2 "loader-bench: --trace '' names no file (an empty path: an unset variable?)
$try" -- "$LB" --source synthetic --trace ""
check bad-source 2 "loader-bench: invalid value 'disk' for --source (want cache, audio or synthetic)
$try" -- "$LB" --source disk st
check audio-no-manifest 2 "loader-bench: --source audio and --compare need --manifest FILE
$try" -- "$LB" --source audio st
check compare-no-store 2 "loader-bench: missing STORE (the cache source reads one)
$try" -- "$LB" --compare --manifest m.csv
check bad-batch 2 "loader-bench: invalid value '0' for --batch (want an integer in 1..65536)
$try" -- "$LB" -b 0 st
check junk-steps 2 "loader-bench: invalid value '10x' for --steps (want an integer in 1..100000000)
$try" -- "$LB" --steps 10x st
check steps-epochs 2 "loader-bench: --steps and --epochs exclude each other
$try" -- "$LB" --steps 3 --epochs 1 st
check compute-mode 2 "loader-bench: invalid value 'spin' for --compute-mode (want sleep or busy)
$try" -- "$LB" --compute-mode spin st
check two-stores 2 "loader-bench: a: No such file or directory" -- "$LB" a b
check sweep-compare 2 "loader-bench: --compare and --sweep exclude each other
$try" -- "$LB" --compare --sweep --manifest m.csv st
# --svg beside --sweep: no chart was written and nothing said so (exit 0); the chart is of one
# run's steps, and a sweep draws none
check sweep-svg 2 "loader-bench: --svg draws the steps of one run: a sweep draws no chart (its cells are the table's rows); leave --svg out, or chart one cell without --sweep
$try" -- "$LB" --source synthetic --sweep batch=8,16 --svg "$tmp/sweep.svg"
[ -e "$tmp/sweep.svg" ] && { echo "FAIL sweep-svg: a chart was written"; fails=$((fails + 1)); }
check sweep-axis 2 "loader-bench: invalid value 'x' for --workers (want an integer in 0..256)
$try" -- "$LB" --source synthetic --sweep workers=1,x
# a sweep's values are held to the bounds of -w and --prefetch (workers=1000 started 1000 threads)
check sweep-workers 2 "loader-bench: invalid value '1000' for --workers (want an integer in 0..256)
$try" -- "$LB" --source synthetic --sweep workers=1,1000
# the cache source's loader bounds (64 threads, 1024 batches ahead), checked before any run: the
# loader's own refusal named the store ("st: prefetch_threads 256 > 64") and, in a sweep, came at
# that cell, the cells measured before it unreported (exit 2)
check cache-workers 2 "loader-bench: --workers 65: the cache source's loader runs at most 64 prefetch threads
$try" -- "$LB" -w 65 st
check cache-depth 2 "loader-bench: --workers 17 with --prefetch 64: 1088 batches ahead; the cache source's loader keeps at most 1024
$try" -- "$LB" -w 17 --prefetch 64 st
check sweep-cache-workers 2 "loader-bench: workers=256: the cache source's loader runs at most 64 prefetch threads
$try" -- "$LB" --sweep workers=1,256 st
check compare-depth 2 "loader-bench: --workers 64 with --prefetch 64: 4096 batches ahead; the cache source's loader keeps at most 1024
$try" -- "$LB" --compare --manifest m.csv -w 64 --prefetch 64 st
check sweep-prefetch 2 "loader-bench: invalid value '100' for --prefetch (want an integer in 1..64)
$try" -- "$LB" --source synthetic --sweep prefetch=100
check sweep-prefetch0 2 "loader-bench: invalid value '0' for --prefetch (want an integer in 1..64)
$try" -- "$LB" --source synthetic --sweep prefetch=0
check sweep-empty-item 2 "loader-bench: invalid value '1,,2' for --workers (an empty item in the list)
$try" -- "$LB" --source synthetic --sweep workers=1,,2
check sweep-empty-list 2 "loader-bench: invalid value '' for --prefetch (an empty list)
$try" -- "$LB" --source synthetic --sweep prefetch=
check sweep-batch0 2 "loader-bench: invalid value '0' for --batch (want an integer in 1..65536)
$try" -- "$LB" --source synthetic --sweep batch=0
# the synthetic source reads no store and no manifest: one given is refused, not silently left
# unread (the run measured a sleep, not the store named)
check synthetic-store 2 "loader-bench: --source synthetic reads no STORE and no --manifest (each utterance costs --synthetic-ms): leave them out, or use --source cache or audio
$try" -- "$LB" --source synthetic "$tmp/none"
check synthetic-manifest 2 "loader-bench: --source synthetic reads no STORE and no --manifest (each utterance costs --synthetic-ms): leave them out, or use --source cache or audio
$try" -- "$LB" --source synthetic --manifest m.csv
# the compute stand-in is one of them: the last of --compute-mode and --compute-matmul won, and
# --compute-ms beside a matmul was dropped, silently
check matmul-mode 2 "loader-bench: --compute-matmul and --compute-mode exclude each other (the matmul is the compute)
$try" -- "$LB" --source synthetic --compute-matmul 64 --compute-mode busy
check mode-matmul 2 "loader-bench: --compute-matmul and --compute-mode exclude each other (the matmul is the compute)
$try" -- "$LB" --source synthetic --compute-mode sleep --compute-matmul 64
check matmul-ms 2 "loader-bench: --compute-matmul and --compute-ms exclude each other (the matmul takes what it takes)
$try" -- "$LB" --source synthetic --compute-ms 30 --compute-matmul 64
# an option of a source that does not run is refused, not dropped: --preset beside the cache
# source (which reads the store's config) benched hifigan mels as if they were whisper's
mkdir -p "$tmp/st"
check preset-cache 2 "loader-bench: --preset: only --source audio without a STORE computes features by a preset; the cache source reads the store's (--features selects one)
$try" -- "$LB" --preset whisper "$tmp/st"
check synthetic-ms-cache 2 "loader-bench: --synthetic-ms applies to --source synthetic only
$try" -- "$LB" --synthetic-ms 5 "$tmp/st"
check synthetic-items-audio 2 "loader-bench: --synthetic-items applies to --source synthetic only
$try" -- "$LB" --source audio --manifest m.csv --synthetic-items 5
check views-synthetic 2 "loader-bench: --views applies to the cache source only
$try" -- "$LB" --source synthetic --views
check features-synthetic 2 "loader-bench: --features selects a STORE's mel config: no STORE is read here
$try" -- "$LB" --source synthetic --features whisper
# an axis given twice is refused (the second list silently replaced the first); an axis word
# without --sweep says so (it was taken for a STORE: 'batch=16,32: No such file or directory')
check sweep-axis-twice 2 "loader-bench: batch= given twice (one list per axis: batch=1,2)
$try" -- "$LB" --source synthetic --sweep batch=1 batch=2
check axis-no-sweep 2 "loader-bench: batch=16,32: a sweep's axis without --sweep
$try" -- "$LB" batch=16,32 "$tmp/st"
# --svg and --trace into one file: the trace silently replaced the chart
check svg-trace-same 2 "loader-bench: --svg and --trace name the same file ($tmp/out.x)
$try" -- "$LB" --source synthetic --svg "$tmp/out.x" --trace "$tmp/out.x"
: >"$tmp/o.y" # (spelled two ways: the same file found by its inode)
check svg-trace-same-file 2 "loader-bench: --svg and --trace name the same file ($tmp/./o.y)
$try" -- "$LB" --source synthetic --svg "$tmp/o.y" --trace "$tmp/./o.y"
# options about a manifest or a store, with none to apply to
check format-no-manifest 2 "loader-bench: --manifest-format applies to a --manifest: none is given
$try" -- "$LB" --manifest-format kaldi "$tmp/st"
check audio-dir-no-manifest 2 "loader-bench: --audio-dir applies to a --manifest: none is given
$try" -- "$LB" --audio-dir "$tmp" "$tmp/st"
check read-only-no-store 2 "loader-bench: --read-only applies to a STORE: no STORE is read here
$try" -- "$LB" --source synthetic --read-only
check partial-no-store 2 "loader-bench: --partial applies to a STORE: no STORE is read here
$try" -- "$LB" --source audio --manifest m.csv --partial
check unknown-preset 2 "loader-bench: unknown preset 'nope'
$try" -- "$LB" --source audio --manifest m.csv --preset nope
check no-such-store 2 "loader-bench: $tmp/none: No such file or directory" -- "$LB" "$tmp/none"
# a store named twice (another spelling of one directory): refused before anything is opened, as
# cache-bench and cache-verify do (the loader read it once, --compare's audio run twice)
mkdir -p "$tmp/d"
check store-twice 2 "loader-bench: $tmp/d/: given twice (also as $tmp/d)" -- "$LB" "$tmp/d" "$tmp/d/"
mkdir -p "$tmp/wavs" && : >"$tmp/wavs/a.wav"
check not-a-store 2 "loader-bench: $tmp/wavs: not a featcache store (no data.mdb)" -- "$LB" "$tmp/wavs"

# option errors say what is wrong as loader-bench: ... (getopt's own named the tool by its path)
check bogus 2 "loader-bench: unknown option '--bogus'
$try" -- "$LB" --bogus st
check short 2 "loader-bench: unknown option '-Z'
$try" -- "$LB" -Z st
check needs-value 2 "loader-bench: option '--steps' needs a value
$try" -- "$LB" st --steps
check flag-value 2 "loader-bench: option '--json' takes no value
$try" -- "$LB" --json=1 st
check ambiguous 2 "loader-bench: option '--sy' is ambiguous (--synthetic-ms, --synthetic-items)
$try" -- "$LB" --sy 1 st

# what stdout was to carry lost (a full disk, stdout closed): exit 1 with the reason, not 0
if [ -w /dev/full ]; then
  for a in --help --version "--json --source synthetic --synthetic-items 64 --steps 2"; do
    # shellcheck disable=SC2086 # the words of $a
    "$LB" -q $a >/dev/full 2>"$tmp/err"; rc=$?
    [ $rc = 1 ] && grep -qx "loader-bench: stdout: cannot write: No space left on device" "$tmp/err" ||
      { echo "FAIL '$a' into a full disk: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
  done
fi
"$LB" -q --source synthetic --synthetic-items 64 --steps 2 >&- 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && grep -qx "loader-bench: stdout: cannot write: Bad file descriptor" "$tmp/err" ||
  { echo "FAIL report, stdout closed: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }

# -q as --help and the page say it: nothing on stderr for a run that went well; one that failed
# keeps its failures and its done: line (exit 1 comes with it)
mkdir "$tmp/q" && sox -n -r 22050 -b 16 "$tmp/q/a.wav" synth 0.3 sine 300 || { echo "FAIL: sox"; exit 1; }
printf 'a.wav\nmissing.wav\n' >"$tmp/q/bad.txt"
printf 'a.wav\n' >"$tmp/q/good.txt"
grep -qE -- "--quiet +no progress, no summary line unless a run failed$" "$tmp/help" ||
  { echo "FAIL help: -q: $(grep -- --quiet "$tmp/help")"; fails=$((fails + 1)); }
"$LB" -q --source audio --manifest "$tmp/q/good.txt" --steps 1 -b 1 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/err" ] || { echo "FAIL -q, a good run: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
"$LB" -q --source audio --manifest "$tmp/q/bad.txt" --steps 1 -b 2 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && [ "$(cat "$tmp/err")" = "loader-bench: $tmp/q/missing.wav: No such file or directory
loader-bench: done: 1 of 1 steps (1 utterance failed)" ] || { echo "FAIL -q, a failed run: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }

[ $fails = 0 ] && echo "ok" || exit 1
