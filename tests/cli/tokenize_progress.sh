#!/usr/bin/env bash
# tokenize --progress: a line after each batch, a bulk load's too (its batches go to sorted runs,
# stored by the merge at the end); "N lines done" while a manifest is read as it goes (its length
# is known at the end), "N of M lines" for a list read whole; never "of 0 lines". On a terminal,
# where each update is drawn (a log file gets a line every few seconds: progress_log.sh): the runs
# go through script(1).
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
command -v script >/dev/null || { echo "skip: script(1) (util-linux) not found"; exit 77; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
# tty CMD: run the shell command CMD on a terminal; $d/err gets what it showed (CRLF ends as LF)
tty() {
  script -qec "$1" /dev/null </dev/null | sed 's/\r$//' >"$d/err"
  return "${PIPESTATUS[0]}"
}
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && tr '\r' '\n' < "$d/err" | sed 's/^/  stderr: /' | head -20; exit 1; }
# the progress lines of stderr, one per line, without the line-clearing escape
lines() { tr '\r' '\n' < "$d/err" | sed 's/\x1b\[K//' | grep '^tokenize: [0-9]'; }

for i in $(seq 1 30); do echo "u$i|text number $i, hello world|text number $i, hello world"; done > "$d/m.csv"

# a first tokenize of 8 batches into a new store: a bulk load
tty "'$T' -o '$d/s' --manifest '$d/m.csv' -t chars --build-vocab --progress --batch 4 >/dev/null" ||
  fail "bulk load: exit $?"
[ -f "$d/s/data.mdb" ] || fail "no store written"
for n in 4 8 12 16 20 24 28 30; do
  lines | grep -qx "tokenize: $n lines done" || fail "bulk load: no progress line for $n lines"
done
[ "$(lines | grep -c .)" -ge 8 ] || fail "bulk load: fewer than 8 progress lines"
lines | grep -q ' of 0 lines' && fail "a progress line of 0 lines"
grep -q 'tokenize: done: 30 of 30 (30 new, 0 already stored, 0 failed' "$d/err" || fail "bulk load: no summary"

# a list read whole (stdin): its length is known from the start
tty "head -6 '$d/m.csv' | '$T' -o '$d/s2' -t chars --build-vocab --progress --batch 2 - >/dev/null" ||
  fail "list: exit $?"
for n in 2 4 6; do
  lines | grep -qx "tokenize: $n of 6 lines" || fail "list: no progress line '$n of 6 lines'"
done

# a rerun that stores nothing new goes batch by batch: a line each, the lines skipped counted
tty "'$T' -o '$d/s' --manifest '$d/m.csv' -t chars --build-vocab --progress --batch 8 >/dev/null" ||
  fail "rerun: exit $?"
lines | grep -qx "tokenize: 8 lines done" || fail "rerun: no progress line for 8 lines"
grep -q 'tokenize: nothing to do: all 30 lines already stored' "$d/err" || fail "rerun: no summary"
# a bad line's reason after a progress line: the progress line is cleared first, so the reason
# stands on a line of its own (on a terminal it was written after "3 lines done")
{ for i in 1 2 3 4 5; do echo "b$i|Line $i here."; done; echo "b6|"; echo "b7|ok"; } > "$d/b.csv"
tty "'$T' -o '$d/s3' --manifest '$d/b.csv' --build-vocab --progress --batch 3 >/dev/null"
[ $? = 1 ] || fail "a bad line with --progress: want exit 1"
tr '\r' '\n' < "$d/err" | sed 's/\x1b\[K//g' |
  grep -qx "tokenize: $d/b.csv:6: text is empty" ||
  fail "the bad line's reason shares a line with the progress line"
tail -n 1 "$d/err" | grep -qx 'tokenize: done: 6 of 7 (6 new, 0 already stored, 1 failed, [0-9]* tokens)' ||
  fail "the summary is not the last line of its own"
grep -qx '' "$d/err" && fail "an empty line on stderr"
echo "tokenize_progress: ok"
