#!/bin/bash
# cache-merge over many inputs (docs/scale-out.md sends thousands of shards to it) checks that no
# input is the output or given twice with one stat per input and a sort, not a stat pair per pair
# of inputs: 3,000 shards took 19 s of stat calls before the merge began. Counted here (never
# timed) with strace over 300 folders that are not stores: the stat calls stay a few per input
# (the pairwise check made 90,000), and the first folder is then said not to be a store.
set -u
command -v strace >/dev/null || { echo "skip: strace not installed"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "skip: strace cannot trace here (ptrace refused)"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
for i in $(seq 100 399); do mkdir d$i; done
# LeakSanitizer cannot run under ptrace (an ASan build): leaks are the other tests' to find
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -c -o counts "$FC_BIN/cache-merge" -q -o out d*/ >out.txt 2>err.txt
rc=$?
fail=0
[ $rc = 2 ] && [ "$(cat err.txt)" = "cache-merge: d100/: not a featcache store (no data.mdb)" ] ||
  { echo "FAIL: exit $rc: $(cat err.txt)"; fail=1; }
calls=$(awk '$NF ~ /stat/ && $NF !~ /statfs/ { n += $4 } END { print n + 0 }' counts) # stat, statx, newfstatat...
[ "$calls" -gt 0 ] && [ "$calls" -lt 3000 ] || { echo "FAIL: $calls stat calls for 300 inputs (want a few per input)"; cat counts; fail=1; }
exit $fail
