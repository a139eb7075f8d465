#!/usr/bin/env bash
# tokenize --strict into a split store (featurize --writers made it): the store's parts are run one
# after the other, so a bad line stops the run with the other parts' lines never begun. They are
# counted not started, as the lines after the bad one in its own part are, and the one bad line is
# the one failure ("done: 6 of 12 (6 new, 0 already stored, 1 failed, ...), 5 not started", --json
# failed 1, not_started 5). When the bad line was the last of its part's lines, the lines of the
# parts after it were counted failed, "5 lines not stored after the failure, counted as failed",
# as if a write had failed ("6 failed" for one bad line). The same for the check of a split store
# this user may only read (docs/tokenize.md "A store you may only read").
set -u
TK=${FC_BIN:?}/tokenize
FZ=$FC_BIN/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
. "$FC_SRC/tests/cli/as_owner.bash"

sox -n -r 22050 -b 16 a1.wav synth 0.3 sine 300 && sox -n -r 22050 -b 16 a2.wav synth 0.3 sine 600 ||
  { echo "FAIL: sox"; exit 1; }
"$FZ" -q --writers 2 --device cpu -o sp a1.wav a2.wav 2>err || { echo "FAIL: featurize: $(cat err)"; exit 1; }
cp -r sp sp2
# The part of an id is fc_store_part_of_id (docs/FORMAT.md "Split stores"): of 2 parts, id3 id6
# id7 id8 id9 id11 id12 go to part 0 (run first), id1 id2 id4 id5 id10 to part 1. The bad line is
# one over --max-text-bytes, which a check finds too (it tokenizes nothing).
printf '%s\n' '<pad>' '<unk>' '<bos>' '<eos>' ' ' 0 1 2 3 4 5 6 7 8 9 e t x >v.txt
for i in $(seq 1 11); do echo "id$i|text $i"; done >m.csv
echo "id12|text 12 too long" >>m.csv # the last of part 0's lines fails
sed -e 's/^id3|.*/id3|text 3 too long/' -e 's/^id12|.*/id12|text 12/' m.csv >m3.csv # the first
opts=(--strict --vocab v.txt --max-text-bytes 10)

# check NAME WANT_RC WANT_LAST_LINE WANT_JSON_COUNTS CMD...: the exit status, the last line of
# stderr, --json's counts (processed skipped_existing failed not_started not_stored lines)
check() {
  local name=$1 want_rc=$2 want_last=$3 want_counts=$4
  shift 4
  "$@" --json >out 2>err
  local rc=$?
  [ $rc = "$want_rc" ] || fail "$name: exit $rc, want $want_rc"
  [ "$(tail -n 1 err)" = "$want_last" ] || { fail "$name: stderr:"; cat err; echo "want last: $want_last"; }
  grep -q "not stored after the failure" err && fail "$name: a bad line said as a failed write"
  local got
  got=$("$PY" -c 'import json; r = json.load(open("out")); print(*(r[k] for k in ("processed", "skipped_existing", "failed", "not_started", "not_stored", "lines")), r["failures_listed"])')
  [ "$got" = "$want_counts" ] || fail "$name: counts '$got', want '$want_counts': $(cat out)"
}

check "bad line last of part 0" 1 \
  "tokenize: done: 6 of 12 (6 new, 0 already stored, 1 failed, 37 tokens), 5 not started" \
  "6 0 1 5 0 12 1" "$TK" "${opts[@]}" -o sp m.csv
check "bad line first of part 0" 1 \
  "tokenize: done: 0 of 12 (0 new, 0 already stored, 1 failed, 0 tokens), 11 not started" \
  "0 0 1 11 0 12 1" "$TK" "${opts[@]}" -o sp2 m3.csv

# the same store, this user may only read it: part 0's six lines found stored, id12 fails
chmod -R a-w sp
check "check, bad line last of part 0" 1 \
  "tokenize: sp: 6 of 12 stored, 1 failed; checked, nothing written (the store is read-only)" \
  "0 6 1 5 0 12 1" "${as_owner[@]}" "$TK" "${opts[@]}" -o sp m.csv

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
