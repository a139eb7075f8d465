#!/bin/bash
# cache-verify while a writer has the store open (make -j: featurize of a second preset, tokenize,
# cache-verify as another target): the check reads the store as its last commit left it, so what
# the run has not committed yet is missing — records of a config still being written are errors,
# and a store its first writer has not committed to yet is "empty". The note on them used to
# guess a run that stopped ("a featurize run under it stopped before it finished ... drop it
# (cache-config --drop ...)": dropping the config under a running featurize fails that run), and
# nothing said a writer was at work. Now cache-verify names the process that has the store open
# for writing (its writer lock) and says to check again when it has finished; with no writer the
# note is as before (cli/verify_missing_note). The writer is held open, not timed: tokenize
# stopped (FC_FAULT_STOP=tokenize_batch:1, SIGSTOP) with the store open.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
T=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
V="$FC_BIN/cache-verify"
make_corpus c 8 || exit 1
stopped() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ]; }
# hold_writer STORE: a tokenize into STORE stopped with it open for writing; its pid in $writer
hold_writer() {
  FC_FAULT_STOP=tokenize_batch:1 "$FC_BIN/tokenize" -q --build-vocab -o "$1" --manifest c/metadata.csv \
    >/dev/null 2>tok.err &
  writer=$!
  for _ in $(seq 400); do stopped "$writer" && break; sleep 0.05; done
  stopped "$writer" || { echo "FAIL: tokenize never stopped at its first batch"; cat tok.err; exit 1; }
}
let_go() {
  kill -CONT "$writer"
  wait "$writer" || { echo "FAIL: the held tokenize: exit $?"; cat tok.err; fail=1; }
}

"$FC_BIN/featurize" -q -o st --manifest c/metadata.csv || exit 1
head -n 3 c/metadata.csv >c/three.csv
"$FC_BIN/featurize" -q --preset kaldi -o st --manifest c/three.csv || exit 1 # kaldi on 3 of 8 so far
kaldi=$("$FC_BIN/cache-config" --json st | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["name"] == "kaldi"))')

hold_writer st
"$V" st >out 2>err; check "kaldi on 3 of 8, a writer at work" 1 $?
[ "$(grep -c "^st: error: feat .*: missing: no feature record for mel config kaldi $kaldi\$" out)" = 5 ] ||
  { echo "FAIL: the 5 error lines"; cat out; fail=1; }
note="st: note: 5 of 8 audio entries have no feature record of mel config kaldi $kaldi (the errors above): process $writer (tokenize) has the store open for writing: a run still writing it has not committed them yet? check the store again when it has finished"
[ "$(grep note: out)" = "$note" ] || { echo "FAIL: the note with a writer at work"; cat out; fail=1; }
grep -q 'cache-config --drop' out && { echo "FAIL: a drop advised under a running writer"; cat out; fail=1; }
# --json: "writer" names it (null with none, below), for a script to tell a store being written
"$V" --json st >out 2>err; check "--json, a writer at work" 1 $?
got=$("$PY" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["writer"])' out)
[ "$got" = "process $writer (tokenize)" ] || { echo "FAIL: --json writer: $got"; cat out; fail=1; }
let_go
# no writer now: the note of a run that stopped, as before
"$V" --json st >out 2>err; check "--json, no writer" 1 $?
got=$("$PY" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["writer"])' out)
[ "$got" = None ] || { echo "FAIL: --json writer with none: $got"; cat out; fail=1; }
"$V" st >out 2>err; check "kaldi on 3 of 8, no writer" 1 $?
grep -q "^st: note: 5 of 8 audio entries .*: a featurize run under it stopped before it finished, or a newer config replaced it? complete it (run that again) or drop it (cache-config --drop $kaldi st)\$" out ||
  { echo "FAIL: the note with no writer"; cat out; fail=1; }

# a store its first writer has not committed to yet (an empty environment): said, with the writer
# (its writer lock held as every writer holds it, docs/FORMAT.md "The writer lock": the window
# between LMDB making data.mdb and a tool's first commit is too short to hold a tool in)
mkdir e && "$PY" - e <<'PY' || exit 1
import sys, lmdb
lmdb.open(sys.argv[1]).close()  # data.mdb as LMDB makes it, nothing committed
PY
mkfifo go
"$PY" -c 'import fcntl, sys
f = open(sys.argv[1] + "/data.mdb", "rb"); fcntl.flock(f, fcntl.LOCK_SH)
print("held", flush=True); sys.stdin.read()' e <go >held &
holder=$!
exec 3>go
for _ in $(seq 400); do [ -s held ] && break; sleep 0.05; done
"$V" e >out 2>err; check "empty, a writer at work" 1 $?
grep -q "^e: error: meta format: an empty store" out || { echo "FAIL: the empty store"; cat out; fail=1; }
[ "$(grep note: out)" = "e: note: process $holder ($(cat /proc/$holder/comm)) has the store open for writing: this check read the store as its last commit left it, and what that run has not committed yet is not in it; check the store again when it has finished" ] ||
  { echo "FAIL: the writer's note on an empty store"; cat out; fail=1; }
exec 3>&-
wait "$holder"
"$V" e >out 2>err; check "e with no writer" 1 $?
grep -q note: out && { echo "FAIL: a note on e with no writer"; cat out; fail=1; }

# a split store whose part its writer has not committed to yet: said with the writer, not as one
# that stopped (a part made as above, its writer lock held)
"$FC_BIN/featurize" -q --writers 3 -o sp --manifest c/metadata.csv || exit 1
rm -rf sp/part-2 && mkdir sp/part-2 && "$PY" -c 'import lmdb, sys; lmdb.open(sys.argv[1]).close()' sp/part-2 || exit 1
rm -f held && mkfifo go2
"$PY" -c 'import fcntl, sys
f = open(sys.argv[1] + "/data.mdb", "rb"); fcntl.flock(f, fcntl.LOCK_SH)
print("held", flush=True); sys.stdin.read()' sp/part-2 <go2 >held &
holder=$!
exec 3>go2
for _ in $(seq 400); do [ -s held ] && break; sleep 0.05; done
"$V" sp >out 2>err; check "split, a part not yet committed to" 1 $?
grep -qx "sp: error: part-2: empty: nothing committed to it yet: process $holder ($(cat /proc/$holder/comm)) has it open for writing; check the store again when it has finished" out ||
  { echo "FAIL: the part its writer has not committed to"; cat out; fail=1; }
exec 3>&-
wait "$holder"
"$V" sp >out 2>err; check "split, a part empty, no writer" 1 $?
grep -q "^sp: error: part-2: empty: nothing was ever committed to it (its writer stopped before its first commit?)" out ||
  { echo "FAIL: the empty part with no writer"; cat out; fail=1; }

# a clean store with a writer at work: no note
hold_writer st2
let_go
"$FC_BIN/featurize" -q -o st2 --manifest c/metadata.csv || exit 1
hold_writer st2
"$V" st2 >out 2>err; check "clean, a writer at work" 0 $?
grep -q note: out && { echo "FAIL: a note on a clean store"; cat out; fail=1; }
let_go

[ $fail = 0 ] && echo "ok: cache-verify beside a writer names it and says to check again"
exit $fail
