#!/usr/bin/env bash
# tokenize --max-failed N|P%: how many bad lines a run tolerates, as featurize --max-failed. Bad
# lines are reported and skipped either way; the exit status is 0 when they are within the
# tolerance (a count, or a percentage of the lines of this run — of the shard under --shard —
# rounded up), 1 beyond it; the `done:` line says which, --json reports "max_failed" and
# "failed_allowed"; bad values and --strict with --max-failed are usage errors (exit 2, nothing
# written); a failed write exits 1 whatever the tolerance.
set -u
T=${FC_BIN:?}/tokenize
PY=${FC_PYTHON:-python3}
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# five lines, two bad: only spaces (line 2) and invalid UTF-8 (line 3)
{
  printf 'a|Hello there.\n'
  printf 'b|   \n'
  printf 'c|Bad \xC3\x28 text.\n'
  printf 'd|Good again.\n'
  printf 'e|The last one.\n'
} >m.csv

# (the summary's tokens are those of the records this run wrote: 0 on a rerun)
# 1. No --max-failed: any bad line exits 1; --json says the tolerance is "0" and not met.
"$T" --build-vocab --json -o st m.csv >out 2>err
rc=$?
[ $rc = 1 ] || fail "no --max-failed: exit $rc, want 1: $(cat err)"
grep -qx 'tokenize: done: 3 of 5 (3 new, 0 already stored, 2 failed, 36 tokens)' err ||
  fail "no --max-failed: summary: $(tail -n 1 err)"
grep -qx 'tokenize: m.csv:2: text is only white space' err || fail "line 2 not reported: $(cat err)"
grep -qx 'tokenize: m.csv:3: invalid UTF-8 (byte 0xC3 at column 7: Latin-1 or Windows-1252 text? convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)' err || fail "line 3 not reported: $(cat err)"
"$PY" - out <<'PY' || fail "--json without --max-failed: $(cat out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed"] == 2 and r["processed"] == 3 and r["lines"] == 5, r
assert r["max_failed"] == "0" and r["failed_allowed"] is False, r
PY

# 2. N and P% decide the exit status; the same two lines fail again, the rest is stored.
mf() { # WANT_RC WANT_NOTE ARG
  "$T" --build-vocab -o st --max-failed "$3" m.csv >out 2>err
  local rc=$?
  [ $rc = "$1" ] &&
    grep -qx "tokenize: done: 3 of 5 (0 new, 3 already stored, 2 failed, $2 --max-failed $3, 0 tokens)" err ||
    fail "--max-failed $3: exit $rc (want $1): $(tail -n 1 err)"
  [ -s out ] && fail "--max-failed $3: stdout: $(cat out)"
  grep -qx 'tokenize: m.csv:3: invalid UTF-8 (byte 0xC3 at column 7: Latin-1 or Windows-1252 text? convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)' err || fail "--max-failed $3: line 3 not reported: $(cat err)"
}
mf 0 "allowed by" 2
mf 0 "allowed by" 3
mf 1 "more than" 1
mf 1 "more than" 0
mf 0 "allowed by" 40%   # of 5 lines: 2
mf 1 "more than" 20%    # 1
mf 0 "allowed by" 20.1% # rounded up: 2
mf 1 "more than" 0.1%   # rounded up: 1
mf 1 "more than" 0%
mf 0 "allowed by" 100%

# 3. -q: no progress line, but each bad line's reason and a run with failures' summary (as
#    featurize -q); --json reports the tolerance and that it was met.
"$T" -q --build-vocab --json -o st --max-failed 40% m.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "-q --max-failed 40%: exit $rc: $(cat err)"
[ "$(cat err)" = 'tokenize: m.csv:2: text is only white space
tokenize: m.csv:3: invalid UTF-8 (byte 0xC3 at column 7: Latin-1 or Windows-1252 text? convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)
tokenize: done: 3 of 5 (0 new, 3 already stored, 2 failed, allowed by --max-failed 40%, 0 tokens)' ] ||
  fail "-q --max-failed 40%: stderr: $(cat err)"
"$PY" - out <<'PY' || fail "--json with --max-failed 40%: $(cat out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed"] == 2 and r["skipped_existing"] == 3, r
assert r["max_failed"] == "40%" and r["failed_allowed"] is True, r
PY
"$T" -q --build-vocab --json -o st --max-failed 1 m.csv >out 2>err
rc=$?
[ $rc = 1 ] || fail "-q --max-failed 1: exit $rc"
grep -q '"max_failed":"1","failed_allowed":false' out || fail "--json with --max-failed 1: $(cat out)"

# 3b. tokenize records no failure: cache-verify --expect-tokens reports a tolerated line's id as a
#     text entry missing (docs/tokenize.md "Bad lines"), an error, exit 1.
"$FC_BIN/cache-verify" --manifest m.csv --expect-tokens=chars st >out 2>&1
rc=$?
[ $rc = 1 ] || fail "cache-verify --expect-tokens after a tolerated bad line: exit $rc, want 1"
grep -qx 'st: error: text b: missing: manifest line 2 names it, the store has no text entry (no tokens)' out ||
  fail "cache-verify --expect-tokens: $(cat out)"

# 3c. A line that fails now, stored by an earlier run, keeps its old text entry (the docs say so).
printf 'a|\n' >a-empty.csv
"$T" -q --build-vocab --max-failed 1 -o st a-empty.csv 2>err || fail "a emptied: $(cat err)"
"$PY" - st <<'PY' || fail "a's old text entry is gone"
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    v = t.get(b"a", db=env.open_db(b"text", txn=t, create=False))
assert v is not None and bytes(v)[16:] == b"Hello there.", v
PY

# 4. Nothing failed: exit 0, the summary without a note, failed_allowed true.
head -n 1 m.csv >good.csv
"$T" --build-vocab --json -o st2 --max-failed 1 good.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "a clean run with --max-failed: exit $rc: $(cat err)"
grep -qx 'tokenize: done: 1 of 1 (1 new, 0 already stored, 0 failed, 12 tokens)' err ||
  fail "a clean run with --max-failed: $(cat err)"
grep -q '"max_failed":"1","failed_allowed":true' out || fail "--json of a clean run: $(cat out)"

# 5. Under --shard the percentage is of the shard's lines: shard 0/2 gets 5 lines here, two of
#    them bad, among 20 lines in all. 20% of 5 is 1 (more than); 20% of 20 would be 4.
for i in $(seq 1 40); do echo "id$i|Line number $i."; done >all.csv
"$T" -q --build-vocab --shard 0/2 -o probe all.csv 2>err || fail "probe: $(cat err)"
"$PY" - probe >s0.ids <<'PY' || fail "cannot read the probe store"
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    for k, _ in t.cursor(db=env.open_db(b"text", txn=t, create=False)):
        print(bytes(k).decode())
PY
[ "$(wc -l <s0.ids)" -ge 5 ] || fail "fewer than 5 ids in shard 0: $(cat s0.ids)"
{
  head -n 3 s0.ids | sed 's/.*/&|Good line &./'
  sed -n 4,5p s0.ids | sed 's/$/|/'   # empty text: two bad lines of shard 0
  grep -vxFf s0.ids <(seq 1 40 | sed 's/^/id/') | head -n 15 | sed 's/$/|Another shard./'
} >sh.csv
[ "$(wc -l <sh.csv)" = 20 ] || fail "the shard manifest has $(wc -l <sh.csv) lines, want 20"
"$T" -q --build-vocab --shard 0/2 -o shst --max-failed 20% sh.csv >out 2>err
rc=$?
[ $rc = 1 ] && grep -q '^tokenize: done: 3 of 5 (3 new, 0 already stored, 2 failed, more than --max-failed 20%, ' err ||
  fail "--shard 0/2 --max-failed 20%: exit $rc (want 1): $(cat err)"
"$T" -q --build-vocab --shard 0/2 -o shst --max-failed 40% sh.csv >out 2>err
rc=$?
[ $rc = 0 ] && grep -q '^tokenize: done: 3 of 5 (0 new, 3 already stored, 2 failed, allowed by --max-failed 40%, ' err ||
  fail "--shard 0/2 --max-failed 40%: exit $rc (want 0): $(cat err)"

# 6. --strict still stops at the first bad line (the line before it committed), exit 1.
"$T" --build-vocab --strict --json -o st3 m.csv >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx 'tokenize: stopped at the first bad line (--strict)' err ||
  fail "--strict: exit $rc: $(cat err)"
grep -q '"processed":1,' out || fail "--strict json: $(cat out)"

# 7. A failed write (here the file-size limit) exits 1 whatever the tolerance.
for i in $(seq 1 3000); do echo "x$i|Sentence number $i is spoken here."; done >big.csv
out=$( (ulimit -f 200; "$T" --build-vocab --batch 500 --max-failed 100% -o lim big.csv) 2>&1)
rc=$?
[ $rc = 1 ] || fail "a failed write under --max-failed 100%: exit $rc, want 1: $out"
grep -qx 'tokenize: lim: File too large: raise the file-size limit (ulimit -f), then run again (what was committed stays; the rerun stores only what is missing)' <<<"$out" || fail "a failed write: $out"
grep -q 'allowed by' <<<"$out" && fail "a failed write said 'allowed by': $out"

# 8. Bad values and --strict with --max-failed: usage errors, exit 2, nothing written.
try="Try 'tokenize --help' for more information."
for v in -1 101% 100.5% x 3x '' % 1e1% 0x10% inf% 5.5.5% ' 1' 1.5; do
  "$T" --build-vocab --max-failed "$v" -o bad m.csv >out 2>err
  rc=$?
  [ $rc = 2 ] && [ "$(cat err)" = "tokenize: invalid value '$v' for --max-failed (want a count, or a percentage such as 1%)
$try" ] && [ ! -s out ] && [ ! -e bad ] || fail "--max-failed '$v': exit $rc (want 2): $(cat err)"
  rm -rf bad
done
"$T" --build-vocab --strict --max-failed 2% -o bad m.csv >out 2>err
rc=$?
[ $rc = 2 ] && [ "$(cat err)" = "tokenize: --strict stops at the first failure: drop --max-failed 2%
$try" ] && [ ! -e bad ] || fail "--strict --max-failed 2%: exit $rc (want 2): $(cat err)"

# 9. --help lists it (from the option table) and says what the exit status is.
"$T" --help >help 2>err || fail "--help"
grep -qE '^      --max-failed N\|P% +exit 0 when at most N \(or P % of the\) lines' help ||
  fail "--help lacks --max-failed: $(grep -A1 max-failed help)"
tr '\n' ' ' <help | grep -q 'within --max-failed' || fail "--help's exit status does not name --max-failed"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
