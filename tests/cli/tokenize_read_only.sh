#!/usr/bin/env bash
# tokenize on a store this user may only read checks it instead of writing (docs/tokenize.md "A
# store you may only read"): exit 0 when it holds every line (its record and its id's text entry
# with that text), exit 2 naming the lines it lacks (a changed transcript, a new line), a bad line
# failed as a run fails it (exit 1 unless --max-failed allows it), --json's checked_read_only and
# not_stored, and not one byte of the store written; a split store alike.
set -u
TK=${FC_BIN:?}/tokenize
FZ=$FC_BIN/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# root may write anything: tokenize runs without the capabilities that let it (as_owner.bash)
. "$FC_SRC/tests/cli/as_owner.bash"
run=("${as_owner[@]}")

printf 'a1|hello world\na2|second line\n' >m.csv
"$TK" -q --build-vocab --export-vocab v.txt -o st m.csv 2>err || fail "first run: $(cat err)"
chmod -R a-w st
sum() { find "$1" -type f -exec md5sum {} + | sort | md5sum; }
before=$(sum st)

# every line stored: said, exit 0; -q: nothing said; a vocab built again from the same lines too
"${run[@]}" "$TK" --vocab v.txt -o st m.csv >out 2>err
rc=$?
cat >want <<'TXT'
tokenize: st: cannot write the store (Permission denied): checking that it holds every line instead, writing nothing
tokenize: st: every line is stored (2 checked; the store is read-only: nothing written)
TXT
[ $rc = 0 ] || fail "all stored: exit $rc, want 0"
diff -u want err || fail "all stored: stderr differs"
"${run[@]}" "$TK" -q --build-vocab -o st m.csv >out 2>err
rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "all stored, -q, --build-vocab: exit $rc, stderr: $(cat err)"

# a changed transcript, a new line, a bad line: named, exit 2
printf 'a1|hello world\na2|second line changed\na3|new\n|no id\n' >m2.csv
"${run[@]}" "$TK" --vocab v.txt -o st m2.csv >out 2>err
rc=$?
cat >want <<'TXT'
tokenize: st: cannot write the store (Permission denied): checking that it holds every line instead, writing nothing
tokenize: m2.csv:2: a2 not stored
tokenize: m2.csv:3: a3 not stored
tokenize: m2.csv:4: empty id
tokenize: st: 2 of 4 lines not stored, 1 failed, and the store cannot be written (Permission denied): tokenize them into a store you may write, or have its owner run tokenize
TXT
[ $rc = 2 ] || fail "missing: exit $rc, want 2"
diff -u want err || fail "missing: stderr differs"

# --json
"${run[@]}" "$TK" -q --json --vocab v.txt -o st m2.csv >out 2>err
rc=$?
[ $rc = 2 ] || fail "json: exit $rc, want 2"
"$PY" - out <<'PY' || fail "json: $(cat out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["checked_read_only"] is True and r["not_stored"] == 2, r
assert r["skipped_existing"] == 1 and r["processed"] == 0 and r["failed"] == 1 and r["lines"] == 4, r
PY

# a bad line alone: failed as a run fails it (exit 1), or allowed by --max-failed (exit 0)
printf 'a1|hello world\n|no id\n' >m3.csv
"${run[@]}" "$TK" --vocab v.txt -o st m3.csv >out 2>err
rc=$?
[ $rc = 1 ] || fail "bad line: exit $rc, want 1"
grep -qxF "tokenize: st: 1 of 2 stored, 1 failed; checked, nothing written (the store is read-only)" err ||
  fail "bad line: $(cat err)"
"${run[@]}" "$TK" -q --max-failed 1 --vocab v.txt -o st m3.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "bad line allowed: exit $rc, want 0: $(cat err)"

# a transcript a run fails before tokenizing it (empty, only white space) is a bad line too, not a
# line "not stored" that its owner's run would store (exit 2, "have its owner run tokenize")
printf 'a1|hello world\na2|\na3| \t \n' >m5.csv
"${run[@]}" "$TK" --vocab v.txt -o st m5.csv >out 2>err
rc=$?
[ $rc = 1 ] || fail "empty texts: exit $rc, want 1"
cat >want <<'TXT'
tokenize: st: cannot write the store (Permission denied): checking that it holds every line instead, writing nothing
tokenize: m5.csv:2: text is empty
tokenize: m5.csv:3: text is only white space
tokenize: st: 1 of 3 stored, 2 failed; checked, nothing written (the store is read-only)
TXT
diff -u want err || fail "empty texts: stderr differs"

# many not stored: ten named, the rest counted
for i in $(seq 10 21); do echo "n$i|line $i"; done >m4.csv
"${run[@]}" "$TK" -q --vocab v.txt -o st m4.csv >out 2>err
rc=$?
[ $rc = 2 ] || fail "many: exit $rc, want 2"
[ "$(grep -c ' not stored$' err)" = 10 ] || fail "many: want 10 named: $(cat err)"
grep -qF "12 of 12 lines not stored (2 not named above)," err || fail "many: $(cat err)"

# --export-vocab: written when the check finds every line stored (exit 0), not when it lacks some
# (exit 2, nothing written: it was written all the same, and a Makefile rule whose recipe failed
# found its target new on the next make)
"${run[@]}" "$TK" -q --build-vocab --export-vocab ev.txt -o st m2.csv >out 2>err
rc=$?
[ $rc = 2 ] || fail "export, lines missing: exit $rc, want 2"
[ -e ev.txt ] && fail "export, lines missing: the vocab was written (exit 2, nothing written)"
"${run[@]}" "$TK" -q --build-vocab --export-vocab ev.txt -o st m.csv >out 2>err
rc=$?
[ $rc = 0 ] && cmp -s ev.txt v.txt || fail "export, every line stored: exit $rc, the vocab: $(cat err)"

[ "$(sum st)" = "$before" ] || fail "the store's files changed"

# a writable store: checked_read_only false, not_stored 0
"$TK" -q --json --vocab v.txt -o st2 m.csv >out 2>err || fail "writable: $(cat err)"
"$PY" -c 'import json,sys; r=json.load(open("out")); assert r["checked_read_only"] is False and r["not_stored"] == 0, r' ||
  fail "writable: $(cat out)"

# a split store (featurize --writers 2 made it): its parts checked alike
sox -n -r 22050 -b 16 a1.wav synth 0.3 sine 300 && sox -n -r 22050 -b 16 a2.wav synth 0.3 sine 600
"$FZ" -q --writers 2 -o sp a1.wav a2.wav 2>err || fail "split store: featurize: $(cat err)"
"$TK" -q --vocab v.txt -o sp m.csv 2>err || fail "split store: tokenize: $(cat err)"
chmod -R a-w sp
split_before=$(sum sp)
"${run[@]}" "$TK" -q --vocab v.txt -o sp m.csv >out 2>err
rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "split store: exit $rc, want 0: $(cat err)"
"${run[@]}" "$TK" -q --vocab v.txt -o sp m2.csv >out 2>err
rc=$?
[ $rc = 2 ] && grep -qF "2 of 4 lines not stored, 1 failed," err || fail "split store, m2: exit $rc: $(cat err)"
[ "$(sum sp)" = "$split_before" ] || fail "split store: its files changed"

# Ctrl-C during the check: how far it got, in a line of its own, and no run's lines: it said
# "N of M lines committed" and then "done: ... (0 new, ...)", though a check commits nothing
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  . "$FC_SRC/tests/cli/stop_site.bash"
  "$PY" -c 'print("".join("b%d|line number %d\n" % (i, i) for i in range(6000)), end="")' >>m.csv
  # stopped at its second store open (the check's: the first, for writing, was refused)
  FC_FAULT_STOP=store_open:2 sigint_default "${run[@]}" "$TK" --vocab v.txt -o st m.csv >out 2>err &
  pid=$!
  if stopped $pid 400; then
    interrupted $pid
    line=$(tail -n 1 err)
    [ $rc = 130 ] && "$PY" - "$line" <<'PY' || fail "interrupted check: exit $rc: $(cat err)"
import re, sys
m = re.fullmatch(r"tokenize: interrupted: (\d+) of 6002 lines checked \((\d+) stored, (\d+) not "
                 r"stored\), (\d+) not started; nothing written \(the store is read-only\)", sys.argv[1])
assert m, sys.argv[1]
checked, stored, missing, not_started = map(int, m.groups())
assert stored == 2 and checked == stored + missing and checked + not_started == 6002, m.groups()
PY
    grep -q 'committed\|done:' err && fail "interrupted check: a run's line: $(cat err)"
  else
    fail "interrupted check: not stopped: $(cat err)"
    kill -9 $pid
  fi
  [ "$(sum st)" = "$before" ] || fail "interrupted check: the store's files changed"
fi

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
