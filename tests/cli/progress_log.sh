#!/usr/bin/env bash
# --progress forced onto a stderr that is no terminal (a log file, as a Makefile or a batch job
# keeps one): every tool writes plain lines there — no carriage return, no escape code — each
# update a line of its own, at most one every few seconds after the first (a run of many batches
# is a few lines, not one per batch). The tools that redraw in place on a terminal (featurize,
# tokenize, cache-verify, cache-merge) and those that print a line per pass (cache-bench,
# loader-bench) alike.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# plain LOG PATTERN MAX: LOG holds no CR and no ESC, 1..MAX lines match PATTERN (each whole); a
# MAX of "rate" allows the first line and one per 5 s of the run since start (a slow machine, a
# sanitizer build)
start() { t0=$(date +%s); }
plain() {
  local log=$1 pat=$2 max=$3 n
  [ "$max" = rate ] && max=$((2 + ($(date +%s) - t0) / 5))
  if grep -q $'\r' "$log" || grep -q $'\033' "$log"; then
    fail "$log: a carriage return or an escape code in a log: $(head -c 300 "$log" | od -c | head -5)"
    return
  fi
  n=$(grep -cE "^$pat\$" "$log")
  [ "$n" -ge 1 ] && [ "$n" -le "$max" ] || fail "$log: $n lines of '$pat' (want 1..$max): $(head -c 600 "$log")"
}

"$PY" - <<'PY' || { echo "FAIL: cannot write WAVs"; exit 1; }
import math, struct, wave
for i in range(40):
    w = wave.open(f"u{i:02d}.wav", "wb")
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(3000 * math.sin(j * 0.01 * (i + 1)))) for j in range(4410)))
    w.close()
PY
for i in $(seq -w 0 39); do echo "u$i|text number $i, hello world"; done >m.csv

# featurize: 40 files in batches of 1 (40 commits, 40 updates)
start
"$B/featurize" --progress --device cpu -j1 --batch 1 -o st u*.wav >out 2>featurize.log ||
  fail "featurize: exit $?: $(cat featurize.log)"
plain featurize.log 'featurize: [0-9]+/40, [0-9]+ s of audio, [0-9]+x realtime' rate
# a rerun: its inputs already stored are counted, and no '0 s of audio, 0x realtime' of none computed
start
"$B/featurize" --progress --device cpu -j1 -o st u*.wav >out 2>rerun.log ||
  fail "featurize rerun: exit $?: $(cat rerun.log)"
plain rerun.log 'featurize: [0-9]+/40, [0-9]+ already stored' rate
grep -q 'realtime' rerun.log && fail "featurize rerun: a rate of nothing computed: $(cat rerun.log)"

# tokenize: 40 lines in batches of 1
start
"$B/tokenize" --progress -t chars --build-vocab --batch 1 --manifest m.csv -o st >out 2>tokenize.log ||
  fail "tokenize: exit $?: $(cat tokenize.log)"
plain tokenize.log 'tokenize: [0-9]+ lines? done' rate
head -n 1 tokenize.log | grep -qx 'tokenize: 1 line done' || fail "tokenize's first line: $(head -n 1 tokenize.log)"

# cache-verify: its progress comes every 0.1 s while it checks, and once at the end
start
"$B/cache-verify" --progress st >out 2>verify.log || fail "cache-verify: exit $?: $(cat verify.log)"
plain verify.log 'cache-verify: st: [0-9.]+ of [0-9.]+ GB checked, [0-9.]+ GB/s' rate

# cache-merge: batches of 1 record, after its first pass (which reads the inputs for conflicts)
start
"$B/cache-merge" --progress --batch 1 -o merged st >out 2>merge.log || fail "cache-merge: exit $?: $(cat merge.log)"
plain merge.log 'cache-merge: (reading the inputs for conflicts: [0-9]+ of [0-9]+ entries|[0-9]+ of [0-9]+ entries, [0-9.]+ MB written)' rate

# cache-bench and loader-bench: a line per pass or run, plain already
"$B/cache-bench" --progress --duration 0 -p sequential,random -s warm -b 2 st >out 2>bench.log ||
  fail "cache-bench: exit $?: $(cat bench.log)"
plain bench.log 'cache-bench: st: pass [0-9] of 4: .*' 4
"$B/loader-bench" --progress --source synthetic --synthetic-ms 1 --synthetic-items 64 --compute-ms 1 \
  --steps 4 --sweep batch=8 workers=1,2 >out 2>lb.log || fail "loader-bench: exit $?: $(cat lb.log)"
plain lb.log 'loader-bench: running .*' 2

if [ $fails -gt 0 ]; then echo "$fails case(s) failed"; exit 1; fi
echo "ok"
